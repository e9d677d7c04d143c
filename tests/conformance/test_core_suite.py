"""The CORE- suite: it passes on every correct built-in harness, and each check fails on a
supervisor (or an adapter) broken in the way the check is about."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.memory import MemoryBackend
from adapters.memory.testing.broken import StartNotIdempotent
from adapters.memory.testing.harness import MemoryHarness
from conformance.checks import Outcome, Result, checks, run_check
from conformance.powers import SuppliesSupervisor
from dispatch_core import Cause, Enforcer, Observation, RuleKind, State, VirtualClock
from dispatch_core.supervise import LAUNCH_CAUSES, Supervisor
from dispatch_core.supervise.view import JobView
from tools.interleave.broken import StartsWithoutFind

CORE = {c.id: c for c in checks(ids=["CORE-"])}


def result(check_id: str, harness: Any) -> Result:
    return run_check(CORE[check_id], harness, 0)


@pytest.mark.parametrize("name", ["memory-slurm", "memory-kubeflow"])
def test_every_check_passes_or_skips_with_a_reason(name: str) -> None:
    harness = MemoryHarness(name.removeprefix("memory-"))  # type: ignore[arg-type]
    for check_id in CORE:
        outcome = result(check_id, harness)
        assert outcome.outcome in (Outcome.PASSED, Outcome.SKIPPED), outcome.reason
        if outcome.outcome is Outcome.SKIPPED:
            assert outcome.reason


# -- broken supervisors -------------------------------------------------------------------------


class RetriesTheBackendsRules(Supervisor):
    """Retries every rule, whoever make_plan gave it to."""

    def _failed(self, view: JobView, seen: Observation, cause: Cause) -> bool:
        every = (Enforcer.SUPERVISOR,) * len(view.header.enforcers)
        view.header = view.header.model_copy(update={"enforcers": every})
        return super()._failed(view, seen, cause)


class IgnoresTheSharedCheckpoint(Supervisor):
    def _failed(self, view: JobView, seen: Observation, cause: Cause) -> bool:
        policy = view.header.policy.model_copy(update={"shared_checkpoint": False})
        view.header = view.header.model_copy(update={"policy": policy})
        return super()._failed(view, seen, cause)


class LaunchFailuresSpendTheRule(Supervisor):
    def _failed(self, view: JobView, seen: Observation, cause: Cause) -> bool:
        return super()._failed(view, seen, Cause.EXIT_CODE if cause in LAUNCH_CAUSES else cause)


class IgnoresBudgets(Supervisor):
    def _failed(self, view: JobView, seen: Observation, cause: Cause) -> bool:
        view.uses.clear()
        return super()._failed(view, seen, cause)


class UnreadableIsSuccess(Supervisor):
    def _decide(self, view: JobView, seen: Observation, now: float) -> bool:
        if seen.state is State.UNKNOWN:
            seen = seen.model_copy(update={"state": State.SUCCEEDED})
        return super()._decide(view, seen, now)


class NoBackoff(Supervisor):
    def _failed(self, view: JobView, seen: Observation, cause: Cause) -> bool:
        went = super()._failed(view, seen, cause)
        if view.pending is not None:
            view.pending = type(view.pending)(view.pending.attempt, None, view.pending.action)
        return went


class CancelsOnlyWhatItRecorded(Supervisor):
    def _drive_cancel(self, view: JobView) -> bool:
        find = self.backend.find
        self.backend.find = lambda job: []  # type: ignore[method-assign]
        try:
            return super()._drive_cancel(view)
        finally:
            self.backend.find = find  # type: ignore[method-assign]


class ResubmitsInstead(Supervisor):
    """Answers every rule with a resubmission, whatever its kind."""

    def _failed(self, view: JobView, seen: Observation, cause: Cause) -> bool:
        rules = tuple(
            r.model_copy(update={"kind": RuleKind.RESUBMIT}) for r in view.header.policy.rules
        )
        policy = view.header.policy.model_copy(update={"rules": rules})
        view.header = view.header.model_copy(update={"policy": policy})
        return super()._failed(view, seen, cause)


class Blind(MemoryHarness):
    """memory-slurm whose start submits again when retried (only find-first saves it)."""

    def new_backend(self) -> MemoryBackend:
        return StartNotIdempotent("slurm", clock=VirtualClock(), **self.cluster)

    def reopen(self, backend: MemoryBackend) -> MemoryBackend:
        return StartNotIdempotent("slurm", cluster=backend.cluster)


class Supplies(MemoryHarness, SuppliesSupervisor):
    """memory-slurm whose core suite runs ``supervisor`` (the harness supplies it)."""

    supervisor: type[Supervisor] = Supervisor

    def supervisor_type(self) -> type[Supervisor]:
        return self.supervisor


class SuppliesBlind(Supplies, Blind):
    """:class:`Blind`, supplying its supervisor."""


def harness(
    supervisor: type[Supervisor] | None, base: type[MemoryHarness] = MemoryHarness, **cluster: Any
) -> MemoryHarness:
    """``base`` as it is (the reference supervisor) when ``supervisor`` is None, else the same
    harness supplying ``supervisor``."""
    if supervisor is None:
        return base("slurm", **cluster)
    made = (SuppliesBlind if base is Blind else Supplies)("slurm", **cluster)
    made.supervisor = supervisor
    return made


NATIVE = {"native": [RuleKind.RESUBMIT]}
REQUEUE = {"rules": {RuleKind.REQUEUE: "yes"}}

CASES = [
    ("CORE-001", RetriesTheBackendsRules, MemoryHarness, NATIVE),
    ("CORE-002", NoBackoff, MemoryHarness, {}),
    ("CORE-003", IgnoresBudgets, MemoryHarness, {}),
    ("CORE-005", IgnoresTheSharedCheckpoint, MemoryHarness, {}),
    ("CORE-006", LaunchFailuresSpendTheRule, MemoryHarness, {}),
    ("CORE-007", UnreadableIsSuccess, MemoryHarness, {}),
    ("CORE-008", CancelsOnlyWhatItRecorded, MemoryHarness, {}),
    ("CORE-009", StartsWithoutFind, Blind, {}),
    ("CORE-010", ResubmitsInstead, MemoryHarness, REQUEUE),
]


@pytest.mark.parametrize(("check_id", "broken", "base", "cluster"), CASES)
def test_each_check_fails_on_its_broken_supervisor_and_passes_on_the_real_one(
    check_id: str, broken: type[Supervisor], base: type[MemoryHarness], cluster: dict[str, Any]
) -> None:
    good = result(check_id, harness(None, base, **cluster))
    assert good.outcome is Outcome.PASSED, good.reason
    bad = result(check_id, harness(broken, base, **cluster))
    assert bad.outcome is Outcome.FAILED, bad.reason
    assert check_id in bad.reason and "replay:" in bad.reason


def test_escalate_is_judged_by_the_record() -> None:
    assert result("CORE-004", harness(None)).outcome is Outcome.PASSED
    assert result("CORE-004", harness(ResubmitsInstead)).outcome is Outcome.FAILED


class Counting(MemoryHarness):
    """The memory harness, counting the backends CORE-009 makes (one per scenario)."""

    def __init__(self, crash_points: int | None) -> None:
        super().__init__("slurm")
        self.crash_points = crash_points
        self.made = 0

    def new_backend(self) -> MemoryBackend:
        self.made += 1
        return super().new_backend()


def test_core_009_tries_as_many_crash_points_as_the_harness_allows() -> None:
    every = Counting(None)
    assert result("CORE-009", every).outcome is Outcome.PASSED
    assert every.made >= 5  # the scenario once, then one per crash point (before, after)
    two = Counting(2)
    assert result("CORE-009", two).outcome is Outcome.PASSED
    assert two.made < every.made / 4  # two scenarios of the crash points, not every one
