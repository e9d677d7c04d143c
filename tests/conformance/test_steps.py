"""The shared steps: the judgement of a write through a stale ref (the occupant's only change
allowed is the one a real scheduler makes on its own: it starts a queued object, and no write
can make that change), and ``run`` of an object the scheduler has already started."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.memory import MemoryBackend
from adapters.memory.testing.harness import MemoryHarness
from conformance.checks import Context
from conformance.steps import run, started_meanwhile
from dispatch_core import ObjectRef, State
from tests.conformance.test_slurm_harness import probe_check

STATES = st.sampled_from(list(State))
RESTARTS = st.sampled_from(["unknown", "0", "1", "2"])
HOLDS = st.sampled_from(["none", "1", "7"])


def shown(state: State, restarts: str, hold: str) -> str:
    return f"{state}, restart count {restarts}, hold {hold}"


def test_a_queued_object_the_scheduler_started_is_not_a_write_s_doing() -> None:
    before = shown(State.QUEUED, "0", "none")
    assert started_meanwhile(before, shown(State.RUNNING, "0", "none"))
    assert not started_meanwhile(before, shown(State.HELD, "0", "1"))  # a stale hold landed
    assert not started_meanwhile(before, shown(State.RUNNING, "1", "none"))  # requeued and rerun
    assert not started_meanwhile(shown(State.HELD, "0", "1"), shown(State.RUNNING, "0", "none"))
    assert not started_meanwhile(None, before) and not started_meanwhile(before, None)


@given(STATES, RESTARTS, HOLDS, STATES, RESTARTS, HOLDS)
def test_only_queued_to_running_with_all_else_kept_is_allowed(
    s1: State, r1: str, h1: str, s2: State, r2: str, h2: str
) -> None:
    allowed = started_meanwhile(shown(s1, r1, h1), shown(s2, r2, h2))
    assert allowed == ((s1, s2) == (State.QUEUED, State.RUNNING) and (r1, h1) == (r2, h2))


class RanksStartLate(MemoryHarness):
    """The memory target with a real cluster's moment between the scheduler's start and its
    ranks': no execution shows until ``let_run`` has waited for the ranks."""

    def __init__(self, **cluster: Any) -> None:
        super().__init__("slurm", **cluster)
        self.awaited: set[str] = set()

    def let_run(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        super().let_run(backend, ref)
        self.awaited.add(ref.id)

    def executions(
        self, backend: MemoryBackend, ref: ObjectRef
    ) -> Sequence[Sequence[Mapping[str, str]]]:
        shown = super().executions(backend, ref)
        return shown if ref.id in self.awaited else []


def test_run_waits_for_the_ranks_of_an_object_the_scheduler_started_by_itself() -> None:
    # CI saw IDENT-014 on a real Slurm stop a job the scheduler had started a moment before
    # its ranks had, and read no execution of it.
    harness = RanksStartLate()
    ctx = Context(harness, probe_check(), seed=7)
    ref = ctx.start(ctx.plan())
    backend = ctx.backend
    assert isinstance(backend, MemoryBackend)
    backend.cluster.let_run(ref.id)  # the scheduler, on its own
    assert run(ctx, ref).state is State.RUNNING
    assert ref.id in harness.awaited
    assert len(ctx.executions(ref)) == 1
    run(ctx, ref)  # again: let_run on a running object starts nothing
    assert len(ctx.executions(ref)) == 1
