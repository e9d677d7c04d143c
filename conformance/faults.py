"""The powers of a check's harness on the check's backend, as the suites call them
(``ctx.faults.purge(ref)``): each call finds its power by type on the harness, hands it the
backend, and goes through the runner's guard, so that what the harness raises is marked as the
harness's (or blamed on the adapter's answer it was given:
:func:`~conformance.checks.wrong_answer`).

A check reaches a power only after the runner met its needs, so the :class:`CannotInject`
raised here for a power the harness lacks means a check that did not declare the need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from conformance.harness import (
    CannotInject,
    Fault,
    Harness,
    LookAlike,
    Race,
    ReplyLoss,
    look_alike_need,
)
from conformance.powers import (
    DisablesHistory,
    Evicts,
    FailsBeforeEffect,
    FailsBetweenSteps,
    FailsEveryTry,
    IgnoresStops,
    IgnoresWrites,
    KillsForMemory,
    LagsHistory,
    LosesIdentityHistory,
    LosesNodes,
    LosesReplies,
    MakesLookAlikes,
    MovesToHoldEdges,
    Preempts,
    Purges,
    RacesWrites,
    Recreates,
    RequeuesUnderneath,
    ReusesIds,
    ReusesIdsNext,
    RunsJobs,
    StallsTeardown,
    TakesIdsAhead,
    TakesQuota,
    TellsUnfired,
    VanishesBeforeReadBack,
    WritesNearHolds,
    power_of,
)
from dispatch_core import Backend, JobID, ObjectRef

T = TypeVar("T")


class Guard(Protocol):
    """How a call into the harness is made: ``guard(call, action, refs)`` runs ``action`` and
    marks what it raises with ``call`` and the refs it was given."""

    def __call__(self, call: str, action: Callable[[], T], refs: Iterable[object] = ()) -> T: ...


def unguarded(call: str, action: Callable[[], T], refs: Iterable[object] = ()) -> T:
    """A :class:`Guard` that marks nothing (a harness used outside the runner)."""
    return action()


def missing_power(need: str) -> CannotInject:
    """What a call into a power the harness lacks raises (a check that did not declare it)."""
    return CannotInject(need, why=f"implement conformance.powers.{power_of(need).__name__}")


class Faults:
    """``harness``'s powers on ``backend``; every method is the power's method of the same
    name, the backend given. A power the harness lacks raises :class:`CannotInject`."""

    def __init__(self, harness: Harness[Any], backend: Backend, guard: Guard = unguarded) -> None:
        self._harness = harness
        self._backend = backend
        self._guard = guard

    # -- the scheduler runs the jobs --------------------------------------------------------------

    def let_run(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, RunsJobs):
            raise missing_power(Fault.LET_RUN)
        self._guard("let_run()", lambda: h.let_run(self._backend, ref), [ref])

    def finish(self, ref: ObjectRef, exit_code: int = 0) -> None:
        h = self._harness
        if not isinstance(h, RunsJobs):
            raise missing_power(Fault.FINISH)
        self._guard("finish()", lambda: h.finish(self._backend, ref, exit_code), [ref])

    # -- someone acts underneath the adapter ----------------------------------------------------

    def requeue_underneath(
        self, ref: ObjectRef, *, in_flight: bool = False, held: bool = False
    ) -> None:
        h = self._harness
        if not isinstance(h, RequeuesUnderneath):
            raise missing_power(Fault.REQUEUE_UNDERNEATH)
        self._guard(
            "requeue_underneath()",
            lambda: h.requeue_underneath(self._backend, ref, in_flight=in_flight, held=held),
            [ref],
        )

    def purge(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, Purges):
            raise missing_power(Fault.PURGE)
        self._guard("purge()", lambda: h.purge(self._backend, ref), [ref])

    def reuse_id(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, ReusesIds):
            raise missing_power(Fault.REUSE_ID)
        self._guard("reuse_id()", lambda: h.reuse_id(self._backend, ref), [ref])

    def reuse_id_next(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, ReusesIdsNext):
            raise missing_power(Fault.REUSE_ID_NEXT)
        self._guard("reuse_id_next()", lambda: h.reuse_id_next(self._backend, ref), [ref])

    def recreate(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, Recreates):
            raise missing_power(Fault.RECREATE)
        self._guard("recreate()", lambda: h.recreate(self._backend, ref), [ref])

    def take_id_ahead(self, job: JobID, submission: int) -> str:
        h = self._harness
        if not isinstance(h, TakesIdsAhead):
            raise missing_power(Fault.TAKE_ID_AHEAD)
        taken: str = self._guard(
            "take_id_ahead()", lambda: h.take_id_ahead(self._backend, job, submission)
        )
        return taken

    def take_quota(self) -> None:
        h = self._harness
        if not isinstance(h, TakesQuota):
            raise missing_power(Fault.TAKE_QUOTA)
        self._guard("take_quota()", lambda: h.take_quota(self._backend))

    def give_quota_back(self) -> None:
        h = self._harness
        if not isinstance(h, TakesQuota):
            raise missing_power(Fault.TAKE_QUOTA)
        self._guard("give_quota_back()", lambda: h.give_quota_back(self._backend))

    def lose_node(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, LosesNodes):
            raise missing_power(Fault.LOSE_NODE)
        self._guard("lose_node()", lambda: h.lose_node(self._backend, ref), [ref])

    def oom_kill(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, KillsForMemory):
            raise missing_power(Fault.OOM_KILL)
        self._guard("oom_kill()", lambda: h.oom_kill(self._backend, ref), [ref])

    def evict(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, Evicts):
            raise missing_power(Fault.EVICT)
        self._guard("evict()", lambda: h.evict(self._backend, ref), [ref])

    def preempt(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, Preempts):
            raise missing_power(Fault.PREEMPT)
        self._guard("preempt()", lambda: h.preempt(self._backend, ref), [ref])

    def stall_teardown(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, StallsTeardown):
            raise missing_power(Fault.STALL_TEARDOWN)
        self._guard("stall_teardown()", lambda: h.stall_teardown(self._backend, ref), [ref])

    def end_stall(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, StallsTeardown):
            raise missing_power(Fault.STALL_TEARDOWN)
        self._guard("end_stall()", lambda: h.end_stall(self._backend, ref), [ref])

    # -- history --------------------------------------------------------------------------------

    def lag_history(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, LagsHistory):
            raise missing_power(Fault.LAG_HISTORY)
        self._guard("lag_history()", lambda: h.lag_history(self._backend, ref), [ref])

    def disable_history(self) -> None:
        h = self._harness
        if not isinstance(h, DisablesHistory):
            raise missing_power(Fault.DISABLE_HISTORY)
        self._guard("disable_history()", lambda: h.disable_history(self._backend))

    def lose_identity_history(self) -> None:
        h = self._harness
        if not isinstance(h, LosesIdentityHistory):
            raise missing_power(Fault.LOSE_IDENTITY_HISTORY)
        self._guard("lose_identity_history()", lambda: h.lose_identity_history(self._backend))

    # -- the adapter's calls meet trouble -------------------------------------------------------

    def lose_next_reply(self, operation: str, form: ReplyLoss = ReplyLoss.TIMEOUT) -> None:
        h = self._harness
        if not isinstance(h, LosesReplies):
            raise missing_power(Fault.LOSE_NEXT_REPLY)
        self._guard("lose_next_reply()", lambda: h.lose_next_reply(self._backend, operation, form))

    def fail_before_effect(self, operation: str) -> None:
        h = self._harness
        if not isinstance(h, FailsBeforeEffect):
            raise missing_power(Fault.FAIL_BEFORE_EFFECT)
        self._guard("fail_before_effect()", lambda: h.fail_before_effect(self._backend, operation))

    def fail_every_try(self, operation: str) -> None:
        h = self._harness
        if not isinstance(h, FailsEveryTry):
            raise missing_power(Fault.FAIL_EVERY_TRY)
        self._guard("fail_every_try()", lambda: h.fail_every_try(self._backend, operation))

    def vanish_before_read_back(
        self, operation: str, *, reuse_id: bool = False, early: bool = False
    ) -> None:
        h = self._harness
        if not isinstance(h, VanishesBeforeReadBack):
            raise missing_power(Fault.VANISH_BEFORE_READ_BACK)
        self._guard(
            "vanish_before_read_back()",
            lambda: h.vanish_before_read_back(
                self._backend, operation, reuse_id=reuse_id, early=early
            ),
        )

    def ignore_next_stop(self, ref: ObjectRef) -> None:
        h = self._harness
        if not isinstance(h, IgnoresStops):
            raise missing_power(Fault.IGNORE_NEXT_STOP)
        self._guard("ignore_next_stop()", lambda: h.ignore_next_stop(self._backend, ref), [ref])

    def ignore_next_write(self, operation: str) -> None:
        h = self._harness
        if not isinstance(h, IgnoresWrites):
            raise missing_power(Fault.IGNORE_NEXT_WRITE)
        self._guard("ignore_next_write()", lambda: h.ignore_next_write(self._backend, operation))

    def race_next_write(self, operation: str, race: Race) -> None:
        h = self._harness
        if not isinstance(h, RacesWrites):
            raise missing_power(Fault.RACE_NEXT_WRITE)
        self._guard("race_next_write()", lambda: h.race_next_write(self._backend, operation, race))

    def fail_between_steps(self, operation: str) -> None:
        h = self._harness
        if not isinstance(h, FailsBetweenSteps):
            raise missing_power(Fault.FAIL_BETWEEN_STEPS)
        self._guard("fail_between_steps()", lambda: h.fail_between_steps(self._backend, operation))

    def unfired(self) -> Sequence[str] | None:
        """The call faults armed and not fired yet, or None when the harness cannot tell (it
        implements no :class:`~conformance.powers.TellsUnfired`)."""
        h = self._harness
        if not isinstance(h, TellsUnfired):
            return None
        return self._guard("unfired()", lambda: h.unfired(self._backend))

    # -- look-alikes ----------------------------------------------------------------------------

    def look_alike_forms(self, kind: LookAlike) -> int:
        h = self._lookalikes(kind)
        return self._guard("look_alike_forms()", lambda: h.look_alike_forms(kind))

    def inject_look_alike(
        self,
        job_id: JobID,
        kind: LookAlike,
        variant: int = 0,
        *,
        other: JobID | None = None,
        requeued: bool = False,
    ) -> str:
        h = self._lookalikes(kind)
        return self._guard(
            "inject_look_alike()",
            lambda: h.inject_look_alike(
                self._backend, job_id, kind, variant, other=other, requeued=requeued
            ),
        )

    def describe_look_alike(self, kind: LookAlike, variant: int = 0) -> str:
        h = self._lookalikes(kind)
        return self._guard("describe_look_alike()", lambda: h.describe_look_alike(kind, variant))

    def _lookalikes(self, kind: LookAlike) -> MakesLookAlikes[Any]:
        h = self._harness
        if not isinstance(h, MakesLookAlikes):
            raise missing_power(look_alike_need(kind))
        return h

    # -- holds ----------------------------------------------------------------------------------

    def near_hold_forms(self) -> int:
        h = self._harness
        if not isinstance(h, WritesNearHolds):
            raise missing_power(Fault.NEAR_HOLD)
        return self._guard("near_hold_forms()", h.near_hold_forms)

    def near_hold(self, ref: ObjectRef, variant: int = 0) -> str:
        h = self._harness
        if not isinstance(h, WritesNearHolds):
            raise missing_power(Fault.NEAR_HOLD)
        return self._guard("near_hold()", lambda: h.near_hold(self._backend, ref, variant), [ref])

    def hold_edges(self) -> int:
        h = self._harness
        if not isinstance(h, MovesToHoldEdges):
            raise missing_power(Fault.HOLD_EDGE)
        return self._guard("hold_edges()", h.hold_edges)

    def hold_edge(self, variant: int = 0) -> str:
        h = self._harness
        if not isinstance(h, MovesToHoldEdges):
            raise missing_power(Fault.HOLD_EDGE)
        return self._guard("hold_edge()", lambda: h.hold_edge(self._backend, variant))


__all__ = ["Faults", "Guard", "missing_power", "unguarded"]
