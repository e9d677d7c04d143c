"""Watch streams: the store's events, filtered per request, as newline-terminated JSON events.

Rules (k8s.io/apiserver/pkg/storage/cacher, v1.32):

- ``resourceVersion`` unset or ``"0"``: a synthetic ADDED for every current match first
  (cacher.go: "Get State and Start at Most Recent"; kubectl's ``get NAME -w`` drops the first
  event it sees); any other version resumes after it, with no replay.
- A version older than the event window: the answer is still 200, and the stream's only event
  is an ERROR carrying the 410 Expired Status (cacher.go ``Watch``: "other errors must fail with
  a watch event of type ERROR, rather than a directly returned error" -> ``newErrWatcher``).
- An object that stops matching the selectors is sent as DELETED (its previous content at the
  event's version), one that starts matching as ADDED (cache_watcher.go ``convertToWatchEvent``).
- BOOKMARK only when ``allowWatchBookmarks=true``: one per minute of virtual time, carrying only
  the kind and ``metadata.resourceVersion`` (the cacher's bookmark frequency is a minute); with
  ``sendInitialEvents=true`` a bookmark annotated ``k8s.io/initial-events-end`` ends the
  synthetic ADDEDs.
- ``timeoutSeconds`` counts **virtual** seconds (the stream ends once the clock passed it); in
  realtime mode the clock follows the wall clock, so these are wall seconds there.
- A stream waits on ``store.changed`` (no polling) and ends when ``faults.watch_epoch`` grows
  (``cut_watches``) or the server stops, once the events committed before that are written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from simulators.kubernetes import errors
from simulators.kubernetes.objects import JSON, clone, labels_of, meta, namespace_of
from simulators.kubernetes.resources import ResourceType
from simulators.kubernetes.selectors import FieldSelector, LabelSelector
from simulators.kubernetes.store import Event

if TYPE_CHECKING:
    from simulators.kubernetes.sim import KubeSim

BOOKMARK_SECONDS: Final = 60.0
INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"


def encode(event_type: str, obj: Any) -> bytes:
    """One wire event: compact JSON and a newline (the Python client needs the newline)."""
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


class WatchStream:
    """One open watch; ``next_batch()`` blocks until it has events, or returns None at its end."""

    def __init__(
        self,
        sim: KubeSim,
        resource: ResourceType,
        namespace: str | None,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
        resource_version: str,
        *,
        timeout_seconds: float | None,
        bookmarks: bool,
        send_initial: bool,
        render: Callable[[JSON], JSON],
        stopped: Callable[[], bool],
    ) -> None:
        """Open the stream; call under ``sim.lock`` (the synthetic ADDEDs are read here)."""
        self.sim = sim
        self.resource = resource
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.bookmarks = bookmarks
        self.render = render
        self.stopped = stopped
        self.epoch = sim.faults.watch_epoch
        now = sim.clock.now()
        self.deadline = None if timeout_seconds is None else now + timeout_seconds
        self.last_bookmark = now
        self.pending: list[bytes] = []
        self.done = False
        store = sim.store
        if resource_version in ("", "0") or send_initial:
            for obj in store.select(resource, namespace, labels, fields):
                self.pending.append(encode("ADDED", self.render(clone(obj))))
            self.position = store.revision
            if send_initial and bookmarks:
                self.pending.append(self._bookmark(initial_end=True))
            return
        try:
            self.position = int(resource_version)
        except ValueError:
            raise errors.bad_request(f'invalid resource version "{resource_version}"') from None
        self._collect()

    def _matches(self, obj: JSON) -> bool:
        spaced = self.namespace is not None and self.resource.namespaced
        if spaced and namespace_of(obj) != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(labels_of(obj)):
            return False
        return self.fields is None or self.fields.matches(obj)

    def _bookmark(self, initial_end: bool = False) -> bytes:
        m: JSON = {"resourceVersion": str(self.sim.store.revision)}
        if initial_end:
            m["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self.resource.kind, "apiVersion": self.resource.api_version, "metadata": m}
        return encode("BOOKMARK", obj)

    def _translate(self, event: Event) -> tuple[str, JSON] | None:
        now_in = self._matches(event.object)
        if event.type == "ADDED":
            return ("ADDED", event.object) if now_in else None
        if event.type == "DELETED":
            return ("DELETED", event.object) if now_in else None
        was_in = event.old is not None and self._matches(event.old)
        if now_in and was_in:
            return ("MODIFIED", event.object)
        if now_in:
            return ("ADDED", event.object)
        if was_in and event.old is not None:
            gone = clone(event.old)
            meta(gone)["resourceVersion"] = str(event.resource_version)
            return ("DELETED", gone)
        return None

    def _collect(self) -> None:
        try:
            events = self.sim.store.events_since(self.resource, self.position)
        except errors.ApiError as exc:
            self.pending.append(encode("ERROR", exc.status()))
            self.done = True
            return
        for event in events:
            self.position = event.resource_version
            found = self._translate(event)
            if found is not None:
                self.pending.append(encode(found[0], self.render(clone(found[1]))))

    def _ended(self) -> bool:
        return (
            self.stopped()
            or self.sim.faults.watch_epoch != self.epoch
            or (self.deadline is not None and self.sim.clock.now() >= self.deadline)
        )

    def next_batch(self) -> list[bytes] | None:
        """The next events to write (waits under ``sim.lock``); None when the stream ends."""
        with self.sim.lock:
            while True:
                if self.pending:
                    batch, self.pending = self.pending, []
                    return batch
                if self.done:
                    return None
                self._collect()  # what was committed before a cut or the timeout still goes out
                if self.pending:
                    continue
                if self._ended():
                    return None
                now = self.sim.clock.now()
                if self.bookmarks and now - self.last_bookmark >= BOOKMARK_SECONDS:
                    self.last_bookmark = self.sim.clock.now()
                    self.pending.append(self._bookmark())
                    continue
                self.sim.store.changed.wait()
