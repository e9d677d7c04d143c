"""How controllers run: level-based reconcilers over work queues, in a fixed order, on one lock.

A controller names its primary resource and the resources it watches; every committed event
enqueues the keys its ``keys_for`` maps the event to (by default: the object itself when it is
of the primary resource, and the controlling owner when that owner is of the primary resource).
``Runner.settle()`` drains the queues: controller by controller in the order given, keys sorted,
until nothing is queued or due. ``reconcile(namespace, name)`` reads the current state and moves
it one step towards the desired one; it returns the virtual time it wants to be called again at
(a container that exits later, a back-off that ends), or None. Nothing here reads the wall clock.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dispatch_core import VirtualClock
from simulators.kubernetes.objects import controller_of, meta
from simulators.kubernetes.resources import ResourceType
from simulators.kubernetes.store import Event, Key, Store

MAX_ROUNDS = 200
"""Rounds of settle() before it gives up: a controller that never settles is a simulator bug."""


@dataclass
class Cluster:
    """What every controller may use: the store, the clock, the seeded generator, the settings."""

    store: Store
    clock: VirtualClock
    rng: random.Random
    config: Any
    """The simulator's KubeConfig (typed Any here to keep this module below the simulator)."""
    behaviours: Any = None
    """How containers behave (simulators.kubernetes.behaviour.Behaviours)."""
    extras: dict[str, Any] = field(default_factory=dict)

    def now(self) -> float:
        return self.clock.now()


class Controller:
    """A level-based reconciler of one primary resource."""

    name: ClassVar[str] = "controller"
    primary: ClassVar[ResourceType]
    watches: ClassVar[tuple[ResourceType, ...]] = ()
    """Other resources whose events may enqueue primary keys (through ``keys_for``)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.store = cluster.store

    def keys_for(self, event: Event) -> Iterable[Key]:
        """The primary keys an event concerns: the object itself, or its controlling owner."""
        m = meta(event.object)
        if event.resource is self.primary:
            return [(str(m.get("namespace", "")), str(m.get("name", "")))]
        owner = controller_of(event.object)
        if owner is not None and owner.get("kind") == self.primary.kind:
            namespace = str(m.get("namespace", "")) if self.primary.namespaced else ""
            return [(namespace, str(owner.get("name", "")))]
        return []

    def interests(self) -> tuple[ResourceType, ...]:
        """The resources whose events this controller is shown."""
        return (self.primary, *self.watches)

    def all_keys(self) -> list[Key]:
        """Every key this controller could reconcile (a full resync)."""
        return self.store.keys(self.primary)

    def reconcile(self, namespace: str, name: str) -> float | None:
        """Move one object one step towards what it should be; maybe ask to be called again."""
        raise NotImplementedError


class Runner:
    """Runs controllers in a fixed order until the cluster settles, and on clock advances."""

    def __init__(self, cluster: Cluster, controllers: Sequence[Controller]) -> None:
        self.cluster = cluster
        self.controllers = list(controllers)
        self._queues: list[set[Key]] = [set() for _ in self.controllers]
        self._timers: list[tuple[float, int, int, Key]] = []
        self._due: dict[tuple[int, Key], float] = {}
        self._seq = 0
        self._interest: dict[tuple[str, str], list[int]] = {}
        for index, controller in enumerate(self.controllers):
            for resource in controller.interests():
                self._interest.setdefault(resource.key, []).append(index)
        cluster.store.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        reaction = self._reaction()
        for index in self._interest.get(event.resource.key, ()):
            keys = self.controllers[index].keys_for(event)
            if reaction <= 0:
                self._queues[index].update(keys)
                continue
            when = self.cluster.now() + reaction
            for key in keys:
                self._schedule(index, key, when)

    def _reaction(self) -> float:
        config = self.cluster.config  # None: a controller's unit test, with no KubeConfig
        return 0.0 if config is None else float(getattr(config, "reaction_seconds", 0.0))

    def enqueue(self, controller: Controller, key: Key) -> None:
        self._queues[self.controllers.index(controller)].add(key)

    def enqueue_all(self) -> None:
        """Queue every object of every controller's primary resource (after a fault, a restart)."""
        for index, controller in enumerate(self.controllers):
            self._queues[index].update(controller.all_keys())

    def _schedule(self, index: int, key: Key, when: float) -> None:
        current = self._due.get((index, key))
        if current is not None and current <= when:
            return
        self._due[(index, key)] = when
        self._seq += 1
        heapq.heappush(self._timers, (when, self._seq, index, key))

    def next_due(self) -> float | None:
        """The earliest virtual time a controller asked to be called at."""
        while self._timers:
            when, _, index, key = self._timers[0]
            if self._due.get((index, key)) == when:
                return when
            heapq.heappop(self._timers)
        return None

    def _fire_due(self) -> None:
        now = self.cluster.now()
        while self._timers and self._timers[0][0] <= now:
            when, _, index, key = heapq.heappop(self._timers)
            if self._due.get((index, key)) == when:
                del self._due[(index, key)]
                self._queues[index].add(key)

    def settle(self) -> None:
        """Reconcile until no controller has queued or due work."""
        for _ in range(MAX_ROUNDS):
            self._fire_due()
            if not any(self._queues):
                return
            for index, controller in enumerate(self.controllers):
                keys = sorted(self._queues[index])
                self._queues[index].clear()
                for namespace, name in keys:
                    again = controller.reconcile(namespace, name)
                    if again is not None:
                        self._schedule(index, (namespace, name), max(again, self.cluster.now()))
        raise RuntimeError(
            f"the simulated controllers did not settle in {MAX_ROUNDS} rounds: {self._busy()}"
        )

    def _busy(self) -> list[str]:
        return [c.name for c, q in zip(self.controllers, self._queues, strict=True) if q]

    def advance(self, seconds: float) -> float:
        """Move the virtual clock forward, stopping at every due time on the way to reconcile."""
        clock = self.cluster.clock
        target = clock.now() + seconds
        self.settle()
        while True:
            due = self.next_due()
            if due is None or due > target:
                break
            if due > clock.now():
                clock.advance(due - clock.now())
            self.settle()
        if target > clock.now():
            clock.advance(target - clock.now())
        self.settle()
        return clock.now()
