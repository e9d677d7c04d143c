"""The API server's storage: objects with resourceVersions, uids, namespaces, indexes and events.

Rules (as kube-apiserver over etcd behaves, k8s.io/apiserver/pkg/registry/generic/registry):

- One global counter gives every write a new ``resourceVersion``; an object's is the counter at
  its last write. A write that changes nothing writes nothing (no new version, no event).
- ``metadata.uid`` comes from the seeded generator and is never reused; ``creationTimestamp`` is
  the virtual time of the create, in whole seconds; ``generation`` starts at 1 and grows when
  anything outside ``metadata`` and ``status`` changes. ``managedFields`` are not kept.
- An update that carries a ``resourceVersion`` other than the stored one is a 409 Conflict; a
  custom resource's update must carry one (422), a built-in's may omit it.
- With a ``status`` subresource, a write of the main resource keeps the stored status and a write
  of ``status`` keeps everything else.
- Deleting an object with finalizers marks it (``deletionTimestamp``) and it goes when its last
  finalizer is removed; ``Foreground`` and ``Orphan`` propagation add the ``foregroundDeletion``
  and ``orphan`` finalizers that the garbage collector honours. A bound, running pod is deleted
  gracefully: marked, and removed by its kubelet after the grace period.
- Admission plugins see every write (clients' and controllers' alike), in order, and may mutate
  the object or refuse it with an :class:`~simulators.kubernetes.errors.ApiError`.
- Every change is an event (ADDED, MODIFIED, DELETED) kept per resource in a bounded window, for
  watches that resume from a ``resourceVersion``; older than the window is 410 Gone.
- Lists are sorted by namespace and name; label selectors use an index of (key, value) pairs so
  that a selective list does not scan every object.
"""

from __future__ import annotations

import base64
import binascii
import json
import marshal
import random
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from simulators.kubernetes import errors
from simulators.kubernetes.errors import ApiError, Cause
from simulators.kubernetes.objects import (
    JSON,
    clone,
    labels_of,
    meta,
    owner_references,
    timestamp,
)
from simulators.kubernetes.resources import NAMESPACES, PODS, RESOURCES, ResourceType
from simulators.kubernetes.selectors import FieldSelector, LabelSelector
from simulators.kubernetes.validation import is_dns1123_subdomain

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Operation = Literal["CREATE", "UPDATE", "DELETE"]
Propagation = Literal["Background", "Foreground", "Orphan"]

FIRST_RESOURCE_VERSION: Final = 1000
FOREGROUND: Final = "foregroundDeletion"
ORPHAN: Final = "orphan"
GENERATE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
"""k8s.io/apimachinery/pkg/util/rand: the letters generateName suffixes are drawn from."""
SERVER_FIELDS: Final = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
FIELD_SELECTABLE: Final = frozenset({"metadata.name", "metadata.namespace"})
POD_FIELD_SELECTABLE: Final = FIELD_SELECTABLE | {
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
}
"""pkg/registry/core/pod/strategy.go ``ToSelectableFields`` (v1.32)."""
EVENT_FIELD_SELECTABLE: Final = FIELD_SELECTABLE | {
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
}
"""pkg/registry/core/event/strategy.go ``ToSelectableFields`` (what ``kubectl describe`` sends)."""
NODE_FIELD_SELECTABLE: Final = FIELD_SELECTABLE | {"spec.unschedulable"}
"""pkg/registry/core/node/strategy.go ``NodeToSelectableFields``."""
NAMESPACE_FIELD_SELECTABLE: Final = FIELD_SELECTABLE | {"status.phase", "name"}
"""pkg/registry/core/namespace/strategy.go ``NamespaceToSelectableFields`` (``name`` is legacy)."""
JOB_FIELD_SELECTABLE: Final = FIELD_SELECTABLE | {"status.successful"}
"""pkg/registry/batch/job/strategy.go ``JobToSelectableFields``."""
FIELD_SOURCES: Final[dict[str, tuple[str, str]]] = {
    "spec.hostNetwork": ("spec.hostNetwork", "false"),
    "spec.unschedulable": ("spec.unschedulable", "false"),
    "status.successful": ("status.succeeded", "0"),
    "source": ("source.component", ""),
    "name": ("metadata.name", ""),
}
"""Selectable fields whose value is read elsewhere, or has a default when absent:
field -> (dotted path in the object, the text of an absent value), as the strategies build them
(``strconv.FormatBool``, ``strconv.Itoa(int(job.Status.Succeeded))``, ``event.Source.Component``).
"""
DEFAULT_ORPHAN: Final = frozenset({("batch", "jobs")})
"""batch/v1 Jobs orphan their pods when a client names no propagation policy.

(pkg/registry/batch/job/strategy.go, DefaultGarbageCollectionPolicy: OrphanDependents for batch/v1.)
"""

Key = tuple[str, str]  # (namespace, name)
Dependents = list[tuple[ResourceType, JSON]]
Objects = list[JSON]
KeyList = list[Key]


@dataclass(frozen=True)
class Event:
    """One change to one object: ``object`` after it (before it for DELETED), ``old`` before."""

    resource_version: int
    type: EventType
    resource: ResourceType
    object: JSON
    old: JSON | None


EventList = list[Event]
Kept = bytes | JSON
"""A version as the event window keeps it: its ``marshal`` encoding (bytes hold no reference
the garbage collector traverses, and a superseded version is freed at once), or the tree
itself when it holds more than plain JSON types."""


def _keep(obj: JSON) -> Kept:
    try:
        return marshal.dumps(obj, 2)
    except ValueError:
        return obj


def _unkept(kept: Kept) -> JSON:
    if isinstance(kept, bytes):
        return marshal.loads(kept)  # type: ignore[no-any-return]
    return kept


@dataclass(slots=True)
class _Current:
    """A stored object with what is kept of it while it is the stored version."""

    object: JSON
    kept: Kept
    """Its form in the event window (an event's ``old`` once it is replaced)."""
    encoding: bytes | None = None
    """What :meth:`Store.encoding` made of it (once: the object is never changed)."""


@dataclass(frozen=True, slots=True)
class _KeptEvent:
    """An event in the window: the versions kept (:data:`Kept`), decoded when read."""

    resource_version: int
    type: EventType
    object: Kept
    old: Kept | None


@dataclass
class Request:
    """What an admission plugin is shown: the operation, the new object and the stored one."""

    operation: Operation
    resource: ResourceType
    object: JSON
    old: JSON | None
    subresource: str = ""
    internal: bool = False
    """True for writes of the simulator's own controllers (webhooks still see them)."""
    causes: list[Cause] = field(default_factory=list)
    """The API server's own field errors on the object (its ``metadata.name``), left for the
    plugin that checks the resource's CRD rules to report with its own (see
    :attr:`Store.crd_rules`); empty otherwise."""


class Admission(Protocol):
    """A mutating or validating webhook: may change ``request.object`` or raise ApiError.

    ``request.old`` is the stored object itself: a plugin reads it and never changes it. On a
    ``status`` write only the object's ``status`` is its own (the rest is the stored object's,
    shared, not copied: the write keeps it), so a plugin changes nothing else there (a real
    API server's status strategy resets everything else from the stored object anyway).
    """

    def admit(self, request: Request) -> None: ...


@dataclass
class Page:
    """One list answer: the items, the list's resourceVersion and the continue token."""

    items: list[JSON]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


@dataclass
class _Table:
    """The objects of one resource, with their indexes and event window."""

    resource: ResourceType
    window: int
    objects: dict[Key, JSON] = field(default_factory=dict)
    by_label: dict[tuple[str, str], set[Key]] = field(default_factory=dict)
    by_label_key: dict[str, set[Key]] = field(default_factory=dict)
    by_namespace: dict[str, set[Key]] = field(default_factory=dict)
    events: deque[_KeptEvent] = field(default_factory=deque)
    evicted_through: int = FIRST_RESOURCE_VERSION
    """The newest resourceVersion whose event left the window; until one has, the store's
    first version (a real watch cache starts from the list it made at startup: nothing
    older can be resumed from)."""
    current: dict[Key, _Current] = field(default_factory=dict)
    """Each stored object with its kept form (an event's ``old`` is the version the last event
    of its key kept, not encoded twice) and its encoding once asked for."""

    def index(self, key: Key, obj: JSON) -> None:
        self.by_namespace.setdefault(key[0], set()).add(key)
        for k, v in labels_of(obj).items():
            self.by_label.setdefault((k, str(v)), set()).add(key)
            self.by_label_key.setdefault(k, set()).add(key)

    def unindex(self, key: Key, obj: JSON) -> None:
        spaced = self.by_namespace.get(key[0])
        if spaced is not None:
            spaced.discard(key)
        for k, v in labels_of(obj).items():
            pairs = self.by_label.get((k, str(v)))
            if pairs is not None:
                pairs.discard(key)
                if not pairs:
                    del self.by_label[(k, str(v))]
            keys = self.by_label_key.get(k)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_label_key[k]

    def record(self, key: Key, event: Event) -> None:
        """Keep the event in the window, its versions encoded (:data:`Kept`): the window holds
        no live object (the stored ones are replaced, never changed, at every write)."""
        kept = _keep(event.object)
        old: Kept | None = None
        if event.old is not None:
            last = self.current.get(key)
            old = last.kept if last is not None and last.object is event.old else _keep(event.old)
        if event.type == "DELETED":
            self.current.pop(key, None)
        else:
            self.current[key] = _Current(event.object, kept)
        self.events.append(_KeptEvent(event.resource_version, event.type, kept, old))
        while len(self.events) > self.window:
            self.evicted_through = self.events.popleft().resource_version

    def since(self, resource_version: int) -> EventList:
        """The events after ``resource_version`` in the window, each version a new copy."""
        return [
            Event(
                e.resource_version,
                e.type,
                self.resource,
                _unkept(e.object),
                None if e.old is None else _unkept(e.old),
            )
            for e in self.events
            if e.resource_version > resource_version
        ]


class Store:
    """Every object of the simulated cluster; callers hold ``lock`` around each call."""

    def __init__(
        self,
        *,
        rng: random.Random,
        now: Callable[[], float],
        lock: threading.RLock | None = None,
        window: int = 10_000,
        resources: Iterable[ResourceType] = RESOURCES,
    ) -> None:
        self.rng = rng
        self.now = now
        self.lock = lock if lock is not None else threading.RLock()
        self.changed = threading.Condition(self.lock)
        """Notified after every committed change (watch streams wait on it)."""
        self.revision = FIRST_RESOURCE_VERSION
        self.admission: list[Admission] = []
        self.crd_rules: set[tuple[str, str]] = set()
        """The resources (``ResourceType.key``) whose CRD ``x-kubernetes-validations`` an admission
        plugin checks. apiextensions-apiserver's customResourceStrategy.Validate runs them even
        after ValidateObjectMetaAccessor found the name invalid (an Invalid error does not block
        them), and answers one 422 with the name's causes first: such a resource's name errors go
        to that plugin in :attr:`Request.causes` instead of being raised here."""
        self.listeners: list[Callable[[Event], None]] = []
        """Called after each committed event (the controllers' work queues)."""
        self._uids: set[str] = set()
        self._dependents: dict[str, set[tuple[ResourceType, Key]]] = {}
        """owner uid -> the objects whose ownerReferences name it (garbage collection)."""
        self._tables: dict[tuple[str, str], _Table] = {r.key: _Table(r, window) for r in resources}

    # -- identity ----------------------------------------------------------------------------

    def new_uid(self) -> str:
        """A uid from the seeded generator, never one given before."""
        while True:
            uid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            if uid not in self._uids:
                self._uids.add(uid)
                return uid

    def random_suffix(self, length: int = 5) -> str:
        return "".join(self.rng.choice(GENERATE_ALPHABET) for _ in range(length))

    def table(self, resource: ResourceType) -> _Table:
        try:
            return self._tables[resource.key]
        except KeyError:
            raise errors.route_not_found() from None

    # -- reads -------------------------------------------------------------------------------

    def get(self, resource: ResourceType, namespace: str, name: str) -> JSON:
        """A copy of the object, or 404 NotFound."""
        return clone(self._stored(resource, namespace, name))

    def stored(self, resource: ResourceType, namespace: str, name: str) -> JSON:
        """The stored object itself (callers must not mutate it), or 404 NotFound: what
        :meth:`get` answers, without the copy (for an answer encoded under the lock)."""
        return self._stored(resource, namespace, name)

    def encoding(self, resource: ResourceType, obj: JSON, encode: Callable[[JSON], bytes]) -> bytes:
        """``encode(obj)``, made once per stored version: ``obj`` is a stored object (from
        :meth:`stored`, :meth:`list` without copies, a write with ``copy=False``), which nothing
        changes; anything else is encoded every time. One ``encode`` per store (the answers'
        JSON): what it made is kept with the version and goes with it."""
        m = meta(obj)
        key = (self._scope(resource, str(m.get("namespace", ""))), str(m.get("name", "")))
        current = self.table(resource).current.get(key)
        if current is None or current.object is not obj:
            return encode(obj)
        if current.encoding is None:
            current.encoding = encode(obj)
        return current.encoding

    def peek(self, resource: ResourceType, namespace: str, name: str) -> JSON | None:
        """The stored object itself (callers must not mutate it), or None."""
        return self.table(resource).objects.get((self._scope(resource, namespace), name))

    def keys(self, resource: ResourceType, namespace: str | None = None) -> KeyList:
        """The (namespace, name) of every object, sorted; one namespace's when given."""
        table = self.table(resource)
        if namespace is None or not resource.namespaced:
            return sorted(table.objects)
        return sorted(table.by_namespace.get(namespace, ()))

    def select(
        self,
        resource: ResourceType,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
    ) -> Objects:
        """The stored objects (not copies) that match, sorted by namespace and name."""
        table = self.table(resource)
        candidates: set[Key] | None = None
        if fields is not None:
            name = fields.exact("metadata.name")
            spaced = fields.exact("metadata.namespace")
            if spaced is not None and namespace is None:
                namespace = spaced
            if name is not None:
                candidates = (
                    {k for k in table.objects if k[1] == name}
                    if namespace is None
                    else ({(self._scope(resource, namespace), name)})
                )
        if labels is not None:
            for label, values in labels.index_hint():
                found: set[Key]
                if values is None:
                    found = table.by_label_key.get(label, set())
                else:
                    found = set()
                    for value in values:
                        found |= table.by_label.get((label, value), set())
                candidates = set(found) if candidates is None else candidates & found
        if namespace is not None and resource.namespaced:
            spaced_keys = table.by_namespace.get(namespace, set())
            candidates = set(spaced_keys) if candidates is None else candidates & spaced_keys
        keys = sorted(candidates) if candidates is not None else sorted(table.objects)
        out: Objects = []
        for key in keys:
            obj = table.objects.get(key)
            if obj is None:
                continue
            if labels is not None and not labels.matches(labels_of(obj)):
                continue
            if fields is not None and not fields.matches(obj):
                continue
            out.append(obj)
        return out

    def list(
        self,
        resource: ResourceType,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        limit: int | None = None,
        continue_token: str = "",
        *,
        copies: bool = True,
    ) -> Page:
        """A page of copies; ``continue_token`` resumes after the last key of the page before.

        ``copies=False``: the stored objects themselves (not to be mutated: for an answer
        encoded under the lock)."""
        if namespace is not None and resource.namespaced:
            self._require_namespace(namespace)
        matched = self.select(resource, namespace, labels, fields)
        if continue_token:
            after = _decode_continue(continue_token)
            matched = [o for o in matched if _key(o) > after]
        token = ""
        remaining: int | None = None
        if limit is not None and limit > 0 and len(matched) > limit:
            remaining = len(matched) - limit
            matched = matched[:limit]
            token = _encode_continue(_key(matched[-1]), self.revision)
        items = [clone(o) for o in matched] if copies else matched
        return Page(items, str(self.revision), token, remaining)

    def events_since(self, resource: ResourceType, resource_version: int) -> EventList:
        """The events of ``resource`` after ``resource_version`` (410 Gone when some are lost)."""
        table = self.table(resource)
        # apiserver storage/cacher/watch_cache.go getAllEventsSinceLocked: the oldest version
        # a watch can resume from is the list's (nothing evicted yet) or the oldest kept
        # event's, less one; anything older is "too old resource version: RV (OLDEST-1)".
        oldest = table.evicted_through
        if table.events and table.evicted_through > FIRST_RESOURCE_VERSION:
            oldest = table.events[0].resource_version - 1
        if resource_version < oldest:
            raise errors.gone(f"too old resource version: {resource_version} ({oldest})")
        return table.since(resource_version)

    # -- writes ------------------------------------------------------------------------------

    def create(
        self,
        resource: ResourceType,
        namespace: str,
        obj: JSON,
        *,
        internal: bool = False,
        owned: bool = False,
        copy: bool = True,
    ) -> JSON:
        """Store a new object; returns a copy as stored (201 Created).

        ``owned``: the caller hands ``obj`` over (it keeps no reference), so it is not copied.
        ``copy=False``: returns the stored object itself (not to be mutated: for a caller that
        drops the answer or encodes it under the lock).
        """
        if not owned:
            obj = clone(obj)
        m = meta(obj)
        namespace = self._scope(resource, namespace)
        given = m.get("namespace")
        if resource.namespaced:
            if given not in (None, "", namespace):
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            self._require_namespace(namespace, creating=True)
            m["namespace"] = namespace
        else:
            m.pop("namespace", None)
        if m.get("resourceVersion"):
            raise errors.internal("resourceVersion should not be set on objects to be created")
        if not m.get("name") and m.get("generateName"):
            m["name"] = f"{m['generateName']}{self.random_suffix()}"
        name = str(m.get("name") or "")
        name_causes = _name_causes(resource, name)
        if name_causes and resource.key not in self.crd_rules:
            raise errors.invalid(resource.kind, resource.group, name, name_causes)
        obj["apiVersion"] = resource.api_version
        obj["kind"] = resource.kind
        if "status" in resource.subresources:
            obj.pop("status", None)
        if resource is NAMESPACES:
            # pkg/registry/core/namespace/strategy.go PrepareForCreate: the kubernetes finalizer
            # and phase Active, whatever the client sent
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
            meta(obj).setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        for server_field in SERVER_FIELDS:
            m.pop(server_field, None)
        m.pop("managedFields", None)
        m.pop("generation", None)
        self._admit(Request("CREATE", resource, obj, None, internal=internal, causes=name_causes))
        if name_causes:  # no plugin reported them
            raise errors.invalid(resource.kind, resource.group, name, name_causes)
        table = self.table(resource)
        key = (namespace, str(meta(obj).get("name")))
        if key in table.objects:
            raise errors.already_exists(resource.plural, resource.group, key[1])
        m = meta(obj)
        m["uid"] = self.new_uid()
        m["creationTimestamp"] = timestamp(self.now())
        m["generation"] = 1
        made = self._commit(table, key, obj, None, "ADDED")
        return clone(made) if copy else made

    def update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        obj: JSON,
        *,
        subresource: str = "",
        internal: bool = False,
        owned: bool = False,
        copy: bool = True,
    ) -> JSON:
        """Replace the object (PUT); returns a copy as stored.

        ``owned``: the caller hands ``obj`` over (it keeps no reference), so it is not copied.
        ``copy=False``: returns the stored object itself (see :meth:`create`).
        """
        namespace = self._scope(resource, namespace)
        table = self.table(resource)
        key = (namespace, name)
        old = table.objects.get(key)
        if old is None:
            raise errors.not_found(resource.plural, resource.group, name)
        if not owned:
            obj = clone(obj)
        m = meta(obj)
        if m.get("name") not in (None, name):
            raise errors.bad_request(
                f"the name of the object ({m.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        if resource.namespaced and m.get("namespace") not in (None, "", namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        self._check_version(resource, old, m, subresource)
        new = self._merge_update(resource, old, obj, subresource)
        # admission plugins read ``old`` and never change it: it is the stored object itself
        self._admit(Request("UPDATE", resource, new, old, subresource, internal))
        done = self._write(table, key, old, new)
        return clone(done) if copy else done

    def mutate(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        change: Callable[[JSON], None],
        *,
        subresource: str = "",
        internal: bool = True,
        copy: bool = True,
    ) -> JSON:
        """Read, change a copy with ``change``, and write it back at the version read
        (``copy=False``: answers the stored object itself, see :meth:`create`)."""
        current = self.get(resource, namespace, name)
        change(current)
        return self.update(
            resource,
            namespace,
            name,
            current,
            subresource=subresource,
            internal=internal,
            owned=True,
            copy=copy,
        )

    def delete(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation: Propagation | None = None,
        grace_seconds: int | None = None,
        internal: bool = False,
        copy: bool = True,
    ) -> JSON:
        """Delete (or mark for deletion) the object; returns it as it last stood (a copy; with
        ``copy=False`` not one, see :meth:`create`)."""
        done = self._delete(
            resource, namespace, name, uid, resource_version, propagation, grace_seconds, internal
        )
        return clone(done) if copy else done

    def _delete(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        uid: str | None,
        resource_version: str | None,
        propagation: Propagation | None,
        grace_seconds: int | None,
        internal: bool,
    ) -> JSON:
        """:meth:`delete`, answering the stored object (or the removed one's last form)."""
        namespace = self._scope(resource, namespace)
        table = self.table(resource)
        key = (namespace, name)
        old = table.objects.get(key)
        if old is None:
            raise errors.not_found(resource.plural, resource.group, name)
        m = meta(old)
        if uid is not None and uid != m.get("uid"):
            raise errors.conflict(
                resource.plural,
                resource.group,
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{m.get('uid')}",
            )
        if resource_version is not None and resource_version != m.get("resourceVersion"):
            raise errors.conflict(
                resource.plural,
                resource.group,
                name,
                "Precondition failed: ResourceVersion in precondition: "
                f"{resource_version}, ResourceVersion in object meta: {m.get('resourceVersion')}",
            )
        self._admit(Request("DELETE", resource, clone(old), old, internal=internal))
        if resource is NAMESPACES and old.get("spec", {}).get("finalizers"):
            return self._terminate_namespace(table, key, old)
        if propagation is None:
            propagation = "Orphan" if resource.key in DEFAULT_ORPHAN else "Background"
        # only metadata changes: the rest is shared with the stored object, which nothing
        # changes in place (a write replaces it)
        nm = dict(meta(old))
        new = {**old, "metadata": nm}
        finalizers = list(nm.get("finalizers") or [])
        if propagation == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if propagation == "Orphan" and ORPHAN not in finalizers and self._has_dependents(old):
            finalizers.append(ORPHAN)
        graceful = self._grace(resource, old, grace_seconds)
        if not finalizers and graceful == 0:
            return self._remove(table, key, old)
        if finalizers:
            nm["finalizers"] = finalizers
        if "deletionTimestamp" not in nm or graceful < int(
            nm.get("deletionGracePeriodSeconds", graceful)
        ):
            nm["deletionTimestamp"] = timestamp(self.now() + graceful)
            nm["deletionGracePeriodSeconds"] = graceful
        if graceful == 0 and not finalizers:
            return self._remove(table, key, old)
        return self._write(table, key, old, new)

    def finish_deletion(self, resource: ResourceType, namespace: str, name: str) -> None:
        """Remove a marked object whose finalizers are gone (its kubelet's last step for a pod)."""
        table = self.table(resource)
        key = (self._scope(resource, namespace), name)
        old = table.objects.get(key)
        if old is not None and not meta(old).get("finalizers"):
            self._remove(table, key, old)

    # -- internals ---------------------------------------------------------------------------

    def _scope(self, resource: ResourceType, namespace: str) -> str:
        return namespace if resource.namespaced else ""

    def _stored(self, resource: ResourceType, namespace: str, name: str) -> JSON:
        obj = self.table(resource).objects.get((self._scope(resource, namespace), name))
        if obj is None:
            raise errors.not_found(resource.plural, resource.group, name)
        return obj

    def _require_namespace(self, namespace: str, creating: bool = False) -> None:
        found = self.table(NAMESPACES).objects.get(("", namespace))
        if found is None:
            raise errors.not_found("namespaces", "", namespace)
        if creating and meta(found).get("deletionTimestamp"):
            raise ApiError(
                403,
                "Forbidden",
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                {"name": namespace, "kind": "namespaces"},
            )

    def _terminate_namespace(self, table: _Table, key: Key, old: JSON) -> JSON:
        """A namespace with spec finalizers is marked Terminating; the namespace controller
        deletes what it holds, then finalizes it (pkg/controller/namespace)."""
        new = clone(old)
        m = meta(new)
        if "deletionTimestamp" not in m:
            m["deletionTimestamp"] = timestamp(self.now())
            m["deletionGracePeriodSeconds"] = 0
        new.setdefault("status", {})["phase"] = "Terminating"
        return self._write(table, key, old, new)

    def finalize_namespace(self, name: str) -> None:
        """Remove a terminating namespace once it holds nothing (its ``finalize`` step)."""
        table = self.table(NAMESPACES)
        old = table.objects.get(("", name))
        if old is None or not meta(old).get("deletionTimestamp"):
            return
        if any(t.resource.namespaced and t.by_namespace.get(name) for t in self._tables.values()):
            return
        self._remove(table, ("", name), old)

    def _admit(self, request: Request) -> None:
        for plugin in self.admission:
            plugin.admit(request)

    def _check_version(self, resource: ResourceType, old: JSON, m: JSON, subresource: str) -> None:
        given = m.get("resourceVersion")
        stored = meta(old).get("resourceVersion")
        if given:
            if given != stored:
                raise errors.conflict(
                    resource.plural, resource.group, meta(old)["name"], errors.STALE
                )
        elif not resource.builtin:
            raise errors.invalid(
                resource.kind,
                resource.group,
                str(meta(old)["name"]),
                [
                    Cause(
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )
                ],
            )
        given_uid = m.get("uid")
        if given_uid and given_uid != meta(old).get("uid"):
            raise errors.conflict(
                resource.plural,
                resource.group,
                str(meta(old)["name"]),
                f"Precondition failed: UID in precondition: {given_uid}, UID in object meta: "
                f"{meta(old).get('uid')}",
            )
        del subresource

    def _merge_update(self, resource: ResourceType, old: JSON, obj: JSON, subresource: str) -> JSON:
        has_status = "status" in resource.subresources
        if subresource == "status":
            # everything but the status is the stored object's: shared, not copied (nothing
            # changes a stored object in place; _write sets the metadata's own fields only)
            new = dict(old)
            new["metadata"] = dict(meta(old))
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            return new
        if subresource:
            raise errors.method_not_allowed()
        new = obj
        new["apiVersion"] = resource.api_version
        new["kind"] = resource.kind
        m = meta(new)
        om = meta(old)
        for server_field in SERVER_FIELDS:
            if server_field in om:
                m[server_field] = om[server_field]
            else:
                m.pop(server_field, None)
        if resource.namespaced:
            m["namespace"] = om["namespace"]
        m["name"] = om["name"]
        m.pop("managedFields", None)
        m["generation"] = om.get("generation", 1)
        if has_status:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        return new

    def _write(self, table: _Table, key: Key, old: JSON, new: JSON) -> JSON:
        m = meta(new)
        m["resourceVersion"] = meta(old).get("resourceVersion")
        if _spec_of(new) != _spec_of(old):
            m["generation"] = int(meta(old).get("generation", 1)) + 1
        if new == old:
            return old
        if (
            m.get("deletionTimestamp")
            and not m.get("finalizers")
            and not self._grace_pending(table.resource, new)
            and not (table.resource is NAMESPACES and new.get("spec", {}).get("finalizers"))
        ):
            return self._remove(table, key, old)
        return self._commit(table, key, new, old, "MODIFIED")

    def namespaced_in(self, namespace: str) -> Dependents:
        """Every stored object in ``namespace``, resource by resource."""
        out: Dependents = []
        for table in self._tables.values():
            if table.resource.namespaced:
                for key in sorted(table.by_namespace.get(namespace, ())):
                    out.append((table.resource, table.objects[key]))
        return out

    def _commit(
        self, table: _Table, key: Key, obj: JSON, old: JSON | None, kind: EventType
    ) -> JSON:
        self.revision += 1
        meta(obj)["resourceVersion"] = str(self.revision)
        # an update that keeps the labels (or the owners) leaves their index as it is
        relabel = old is None or not _same_labels(labels_of(old), labels_of(obj))
        reown = old is None or _owner_uids(old) != _owner_uids(obj)
        if old is not None:
            if relabel:
                table.unindex(key, old)
            if reown:
                self._unindex_owners(table.resource, key, old)
        table.objects[key] = obj
        if relabel:
            table.index(key, obj)
        if reown:
            self._index_owners(table.resource, key, obj)
        self._emit(table, key, Event(self.revision, kind, table.resource, obj, old))
        return obj

    def _remove(self, table: _Table, key: Key, old: JSON) -> JSON:
        self.revision += 1
        # a new version of the metadata; the rest is shared with ``old``, which is never changed
        gone = {**old, "metadata": {**meta(old), "resourceVersion": str(self.revision)}}
        table.unindex(key, old)
        self._unindex_owners(table.resource, key, old)
        del table.objects[key]
        self._emit(table, key, Event(self.revision, "DELETED", table.resource, gone, old))
        return gone

    def _emit(self, table: _Table, key: Key, event: Event) -> None:
        table.record(key, event)
        for listener in self.listeners:
            listener(event)
        with self.changed:
            self.changed.notify_all()

    def _has_dependents(self, owner: JSON) -> bool:
        return bool(self._dependents.get(str(meta(owner).get("uid"))))

    def _index_owners(self, resource: ResourceType, key: Key, obj: JSON) -> None:
        for ref in owner_references(obj):
            self._dependents.setdefault(str(ref.get("uid")), set()).add((resource, key))

    def _unindex_owners(self, resource: ResourceType, key: Key, obj: JSON) -> None:
        for ref in owner_references(obj):
            uid = str(ref.get("uid"))
            found = self._dependents.get(uid)
            if found is not None:
                found.discard((resource, key))
                if not found:
                    del self._dependents[uid]

    def dependents(self, owner_uid: str) -> Dependents:
        """The stored objects whose ownerReferences name ``owner_uid``, in a stable order."""
        out: Dependents = []
        for resource, key in sorted(
            self._dependents.get(owner_uid, ()), key=lambda rk: (rk[0].group, rk[0].plural, rk[1])
        ):
            obj = self.table(resource).objects.get(key)
            if obj is not None:
                out.append((resource, obj))
        return out

    def exists_uid(self, resource: ResourceType, namespace: str, name: str, uid: str) -> bool:
        """Whether the object stored under that name is the one with that uid."""
        obj = self.peek(resource, namespace, name)
        return obj is not None and meta(obj).get("uid") == uid

    def _grace(self, resource: ResourceType, obj: JSON, grace_seconds: int | None) -> int:
        """Seconds of graceful deletion: only a bound pod that has not ended gets any."""
        if resource is not PODS:
            return 0
        spec = obj.get("spec", {})
        phase = obj.get("status", {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if grace_seconds is None:
            grace_seconds = int(spec.get("terminationGracePeriodSeconds", 30))
        return max(0, grace_seconds)

    def _grace_pending(self, resource: ResourceType, obj: JSON) -> bool:
        return resource is PODS and int(meta(obj).get("deletionGracePeriodSeconds", 0)) > 0

    def all_objects(self) -> Iterator[tuple[ResourceType, JSON]]:
        """Every stored object (not copies), resource by resource in catalogue order."""
        for table in self._tables.values():
            for key in sorted(table.objects):
                yield table.resource, table.objects[key]


def _same_labels(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two label maps index the same (key, str(value)) pairs: equal, value types too
    (``1 == True`` but they are indexed as "1" and "True")."""
    return a == b and all(type(v) is type(b[k]) for k, v in a.items())


def _owner_uids(obj: JSON) -> list[str]:
    """The owner uids the dependents' index keeps for ``obj``, in order."""
    return [str(ref.get("uid")) for ref in owner_references(obj)]


def _spec_of(obj: JSON) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _key(obj: JSON) -> Key:
    m = meta(obj)
    return (str(m.get("namespace", "")), str(m.get("name", "")))


def _encode_continue(after: Key, revision: int) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": list(after)})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> Key:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        start = data["start"]
        if not (
            isinstance(start, list) and len(start) == 2 and all(isinstance(s, str) for s in start)
        ):
            raise ValueError(start)
        return (start[0], start[1])
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise errors.bad_request(f"invalid continue token: {token!r}") from None


def _name_causes(resource: ResourceType, name: str) -> list[Cause]:
    """ValidateObjectMetaAccessor's name errors: a name is required and must be a DNS subdomain
    (validation.IsDNS1123Subdomain). A missing name is raised at once: a Required error blocks a
    CRD's rules (customresource strategy.go hasBlockingErr)."""
    if not name:
        raise errors.invalid(
            resource.kind,
            resource.group,
            "",
            [
                Cause(
                    "metadata.name",
                    "Required value: name or generateName is required",
                    "FieldValueRequired",
                )
            ],
        )
    return [
        Cause("metadata.name", f'Invalid value: "{name}": {p}') for p in is_dns1123_subdomain(name)
    ]


_FIELD_SELECTABLE_BY_KIND: Final[dict[tuple[str, str], frozenset[str]]] = {
    ("", "Pod"): POD_FIELD_SELECTABLE,
    ("", "Event"): EVENT_FIELD_SELECTABLE,
    ("", "Node"): NODE_FIELD_SELECTABLE,
    ("", "Namespace"): NAMESPACE_FIELD_SELECTABLE,
    ("batch", "Job"): JOB_FIELD_SELECTABLE,
}


def field_selectable(resource: ResourceType) -> frozenset[str]:
    """The fields a field selector may name for ``resource`` (metadata's only for CRDs)."""
    return _FIELD_SELECTABLE_BY_KIND.get((resource.group, resource.kind), FIELD_SELECTABLE)


def decode_body(body: bytes) -> Any:
    """Parse a JSON request body (400 BadRequest, as the API server words it, when it is not)."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, "BadRequest", f"error decoding request body: {exc}") from None
