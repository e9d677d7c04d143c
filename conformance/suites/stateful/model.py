"""The stateful suite's model: the invariant a check holds the machine to (its focus), the
rules each focus draws from, and what a program knows of the objects it started."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Final

from conformance.harness import LookAlike
from dispatch_core import JobID, ObjectRef

MAX_OBJECTS: Final = 8
"""Submissions per example: enough for reuse within and across jobs, few enough to stay fast."""

MAX_LOOK_ALIKES: Final = 6

REQUEUE_SETTLE: Final = 10.0
"""Seconds (on the harness clock) a requeued object may show its old submit time."""

EXAMPLES: Final = 15
STEPS: Final = 20
SHRINK_SECONDS: Final = 4.0
"""Wall time Hypothesis may spend shrinking a failing program (its default is minutes)."""


class Focus(StrEnum):
    """The invariant a check holds the machine to."""

    WRITES = "writes"
    HOLDS = "holds"
    EXECUTIONS = "executions"
    FIND = "find"
    ANCHOR = "anchor"
    STARTS = "starts"


_EVERYWHERE: Final = frozenset({"submit", "stop", "let_run", "advance", "reopen"})
USES: Final[dict[Focus, frozenset[str]]] = {
    Focus.WRITES: _EVERYWHERE
    | {
        "hold",
        "release",
        "requeue",
        "finish",
        "requeue_underneath",
        "end_and_reuse",
        "stale_write",
        "lose_reply",
        "run_requeue_run",
    },
    Focus.HOLDS: _EVERYWHERE
    | {
        "hold",
        "release",
        "hold_cycle",
        "requeue",
        "finish",
        "requeue_underneath",
        "end_and_reuse",
        "lose_reply",
        "run_requeue_run",
    },
    Focus.EXECUTIONS: _EVERYWHERE
    | {
        "requeue",
        "finish",
        "requeue_underneath",
        "lose_node",
        "end_and_reuse",
        "lose_reply",
        "run_requeue_run",
    },
    Focus.FIND: _EVERYWHERE
    | {
        "find",
        "finish",
        "end_and_reuse",
        "look_alike",
        "lose_identity_history",
        "requeue_underneath",
    },
    Focus.ANCHOR: _EVERYWHERE
    | {
        "hold",
        "release",
        "requeue",
        "finish",
        "requeue_underneath",
        "lose_node",
        "lose_reply",
        "run_requeue_run",
    },
    Focus.STARTS: _EVERYWHERE | {"find", "lose_reply", "end_and_reuse"},
}
"""The rules each focus draws from: only those that can matter to its invariant."""


@dataclass(eq=False)
class Tracked:
    """One object we started, and what the program knows of it."""

    label: str
    letter: str
    job: JobID
    submission: int
    ref: ObjectRef
    gone: str | None = None
    occupant: Tracked | None = None
    hold: int | None = None
    lingering: int | None = None
    submit: datetime | None = None
    restarts: int | None = None
    executions: list[list[dict[str, str]]] = field(default_factory=list)


@dataclass(frozen=True)
class Injected:
    """A look-alike the harness injected: an object that is not the job's."""

    native_id: str
    letter: str
    kind: LookAlike
    form: str
    """The harness's description of the form it made (for failure messages)."""

    @property
    def foreign(self) -> bool:
        """Whether find must report it as foreign (it has the job's exact key and an identity
        that does not parse, or none, or one under a native id it does not imply), rather than
        not at all."""
        return self.kind.foreign


ObjectState = tuple[bool, int | None, int | None]
"""What a write could change on an object: cancelled or not, its hold, its restart count."""


def changed(before: ObjectState, after: ObjectState) -> bool:
    """Whether a write landed on an object that was live (its restart count known): cancelled
    since, another hold, or another restart count. An object already out of the live view is
    left out (no write can land on it, and an adapter may read an earlier incarnation's record
    of it from history), and so is a cancelled object that no longer reads cancelled."""
    if before[2] is None:
        return False
    if (after[0] and not before[0]) or before[1] != after[1]:
        return True
    return after[2] is not None and before[2] != after[2]


def state_text(shot: ObjectState) -> str:
    cancelled, hold, restarts = shot
    return f"(cancelled {cancelled}, hold {hold}, restart count {restarts})"
