"""The simulator's own endpoints under ``/sim/v1/`` (not Kubernetes): drive the virtual clock.

``CONTROL`` maps ``(method, name)`` to a handler taking the simulator and the JSON body and
returning the JSON answer; add entries (faults, say) by extending the table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simulators.kubernetes import errors

if TYPE_CHECKING:
    from simulators.kubernetes.sim import KubeSim

Handler = Callable[["KubeSim", Any], dict[str, Any]]


def _advance(sim: KubeSim, body: Any) -> dict[str, Any]:
    seconds = body.get("seconds") if isinstance(body, dict) else None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise errors.bad_request('advance needs {"seconds": N} with N a number >= 0')
    return {"now": sim.advance(float(seconds))}


def _now(sim: KubeSim, body: Any) -> dict[str, Any]:
    del body
    return {"now": sim.clock.now()}


CONTROL: dict[tuple[str, str], Handler] = {
    ("POST", "advance"): _advance,
    ("GET", "now"): _now,
}
