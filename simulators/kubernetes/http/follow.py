"""``pods/log?follow=true`` in realtime mode: the log as it grows, until the container stops.

As the kubelet serves it (pkg/kubelet/kuberuntime/logs ``ReadLogs`` with ``Follow``): what
exists first (``tailLines`` applied), then each new line as it is written, and the stream ends
when the container is no longer running, the pod is gone, or the server stops. The clock moves
by itself only in realtime mode; with a virtual clock the answer stays whole and immediate
(docs/kube-fidelity.md: nothing more would come until someone advances the clock).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.resources import PODS

if TYPE_CHECKING:
    from simulators.kubernetes.sim import KubeSim

POLL_SECONDS: Final = 0.2
"""How often (wall seconds) a followed log is read again; the realtime clock ticks as often."""

Read = Callable[[int | None], str]
"""tail_lines -> the container's log text now."""


class LogFollow:
    """The ``next_batch()`` stream ``server.py`` writes chunked."""

    def __init__(
        self,
        sim: KubeSim,
        namespace: str,
        pod: str,
        container: str,
        read: Read,
        tail_lines: int | None,
        stopped: Callable[[], bool],
    ) -> None:
        """Read the first part under ``sim.lock`` (errors reach the client as a Status)."""
        self.sim = sim
        self.namespace = namespace
        self.pod = pod
        self.container = container
        self.read = read
        self.stopped = stopped
        self.sent = len(read(None))
        first = read(tail_lines) if tail_lines is not None else read(None)
        self.pending = [first.encode()] if first else []
        self.done = False

    def _running(self) -> bool:
        obj = self.sim.store.peek(PODS, self.namespace, self.pod)
        if obj is None:
            return False
        for c in obj.get("status", {}).get("containerStatuses", []) or []:
            if c.get("name") == self.container:
                return "running" in (c.get("state") or {})
        return False

    def _collect(self) -> None:
        try:
            text = self.read(None)
        except ApiError:
            self.done = True
            return
        if len(text) > self.sent:
            self.pending.append(text[self.sent :].encode())
            self.sent = len(text)
        elif len(text) < self.sent:  # a new run: the kubelet's log of the previous one ended
            self.done = True

    def next_batch(self) -> list[bytes] | None:
        """New log text (waits, polling every ``POLL_SECONDS``); None once the container ended."""
        with self.sim.lock:
            while True:
                if self.pending:
                    batch, self.pending = self.pending, []
                    return batch
                if self.done or self.stopped():
                    return None
                running = self._running()
                self._collect()
                if self.pending:
                    continue
                if not running:
                    return None
                self.sim.store.changed.wait(POLL_SECONDS)
