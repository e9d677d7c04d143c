"""Named faults of the simulated cluster, each one call, each recorded in ``sim.faults.fired``.

Faults of the API itself, consulted by the HTTP server for every request:

- ``refuse_next(verb, resource, name, code)``: the next matching request is answered 409
  Conflict or 500 InternalError *before* it takes effect;
- ``lose_next_reply(verb, resource, name)``: the next matching request takes effect, and the
  server then closes the connection without answering (the client sees the connection drop);
- ``cut_watches()``: every open watch stream ends now (clients resume from their last version).

Faults of the cluster (node loss, eviction, OOM kill, image pull failure, unschedulable, Kueue
preemption, an administrator deleting or suspending an object) act through the controllers'
own functions and are added beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from simulators.kubernetes.sim import KubeSim

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


class FaultError(ValueError):
    """A fault aimed at nothing it can hit, or with arguments it cannot take."""


@dataclass(frozen=True)
class Armed:
    """A one-shot API fault waiting for the next request that matches it."""

    kind: Literal["refuse", "lose_reply"]
    verb: str | None = None
    resource: str | None = None
    name: str | None = None
    code: int = 500

    def matches(self, verb: str, resource: str, name: str) -> bool:
        return (
            (self.verb is None or self.verb == verb)
            and (self.resource is None or self.resource == resource)
            and (self.name is None or self.name == name)
        )


@dataclass
class Fired:
    """What a fault did, for the test that asked for it and for its failure message."""

    fault: str
    target: str
    detail: str = ""


@dataclass
class _State:
    armed: list[Armed] = field(default_factory=list)
    fired: list[Fired] = field(default_factory=list)
    watch_epoch: int = 0


class Faults:
    """``sim.faults``: what a real cluster does to an adapter, one named call each."""

    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self._state = _State()

    @property
    def fired(self) -> list[Fired]:
        return list(self._state.fired)

    @property
    def watch_epoch(self) -> int:
        """Grows by one at each ``cut_watches``; a stream opened in an older epoch ends."""
        return self._state.watch_epoch

    def _check(self, verb: str | None) -> None:
        if verb is not None and verb not in VERBS:
            raise FaultError(f"unknown verb {verb!r}; one of {', '.join(VERBS)}")

    def refuse_next(
        self,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        code: int = 500,
    ) -> None:
        """The next matching request is refused with ``code`` (409 or 500) before it applies."""
        self._check(verb)
        if code not in (409, 500):
            raise FaultError(f"a refusal is 409 or 500, not {code}")
        with self.sim.lock:
            self._state.armed.append(Armed("refuse", verb, resource, name, code))

    def lose_next_reply(
        self, verb: str | None = None, resource: str | None = None, name: str | None = None
    ) -> None:
        """The next matching request applies, and its reply never reaches the client."""
        self._check(verb)
        with self.sim.lock:
            self._state.armed.append(Armed("lose_reply", verb, resource, name))

    def cut_watches(self) -> None:
        """Every open watch stream ends now."""
        with self.sim.lock:
            self._state.watch_epoch += 1
            self._state.fired.append(Fired("cut_watches", "*"))
            self.sim.store.changed.notify_all()

    def take(self, verb: str, resource: str, name: str) -> Armed | None:
        """The armed API fault this request triggers, disarmed (the server calls this)."""
        with self.sim.lock:
            for index, armed in enumerate(self._state.armed):
                if armed.matches(verb, resource, name):
                    del self._state.armed[index]
                    self._state.fired.append(
                        Fired(armed.kind, f"{verb} {resource}/{name}".rstrip("/"), str(armed.code))
                    )
                    return armed
            return None

    def record(self, fault: str, target: str, detail: str = "") -> None:
        """Note a cluster fault that fired (the controllers' fault functions call this)."""
        self._state.fired.append(Fired(fault, target, detail))
