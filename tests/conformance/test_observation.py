"""Observation before injection: with a harness that offers the scheduler's own listing and no
fault at all, the suite still fails an adapter whose stop returns before the job ended, one
that reports a pending job as running, one that loses ended jobs from find, and one that starts
a second object for the same submission; and a correct adapter passes every check it runs."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from adapters.memory import MemoryBackend
from adapters.memory.testing.broken import (
    FindDropsEnded,
    PendingShownRunning,
    StartNotIdempotent,
    StopReturnsBeforeTheEnd,
)
from adapters.memory.testing.harness import SLURM_SHAPE, MemoryHarness
from conformance import Harness, Listed, Outcome, checks, run_check
from conformance.checks import Result
from conformance.powers import POWERS, lacking
from conformance.runner import known_needs
from dispatch_core import Clock, VirtualClock


class ListingOnly(Harness[MemoryBackend]):
    """The memory adapter (or a broken one) with a harness that keeps the required contract and
    offers nothing more: no power of conformance.powers, so no fault, no executions, no paths.
    Its listing is the memory harness's own (the cluster's view, read without the adapter)."""

    identity = SLURM_SHAPE

    def __init__(self, backend: type[MemoryBackend] = MemoryBackend) -> None:
        self.backend_type = backend
        self.name = f"listing-only-{backend.__name__}"
        self.scheduler = MemoryHarness("slurm")

    def new_backend(self) -> MemoryBackend:
        return self.backend_type("slurm", clock=VirtualClock(), **self.scheduler.cluster)

    def reopen(self, backend: MemoryBackend) -> MemoryBackend:
        return type(backend)(**backend.init_options, cluster=backend.cluster)

    def clock(self, backend: MemoryBackend) -> Clock:
        return backend.cluster.clock

    def listing(self, backend: MemoryBackend) -> Mapping[str, Listed]:
        return self.scheduler.listing(backend)


def test_the_listing_harness_offers_no_power() -> None:
    harness = ListingOnly()
    assert not [power for power in POWERS if isinstance(harness, power)]
    assert all(lacking(harness, need) for need in known_needs())


def run_all(backend: type[MemoryBackend]) -> list[Result]:
    return [run_check(check, ListingOnly(backend), seed=0) for check in checks("standard")]


def killers(results: list[Result]) -> set[str]:
    return {
        r.check.id
        for r in results
        if r.outcome is Outcome.FAILED and f"rule: {r.check.rule}" in r.reason
    }


@pytest.mark.parametrize(
    ("backend", "caught_by"),
    [
        (StopReturnsBeforeTheEnd, "OBS-001"),
        (PendingShownRunning, "OBS-002"),
        (FindDropsEnded, "OBS-003"),
        (StartNotIdempotent, "OBS-004"),
    ],
)
def test_a_fault_free_harness_that_lists_catches_it(
    backend: type[MemoryBackend], caught_by: str
) -> None:
    results = run_all(backend)
    assert caught_by in killers(results), [(r.check.id, r.outcome, r.reason) for r in results]
    assert all(r.outcome is not Outcome.ERROR for r in results)


def test_stop_returning_early_passes_the_adapter_s_own_word_but_not_the_scheduler_s() -> None:
    results = {r.check.id: r for r in run_all(StopReturnsBeforeTheEnd)}
    assert results["IDENT-013"].outcome is Outcome.PASSED  # its own open says cancelled
    said = results["OBS-001"].adapter
    assert "but the scheduler's own listing shows" in said and "pending" in said


def test_a_correct_adapter_passes_every_check_a_listing_harness_runs() -> None:
    results = run_all(MemoryBackend)
    assert {r.outcome for r in results} <= {Outcome.PASSED, Outcome.SKIPPED}, [
        (r.check.id, r.reason) for r in results if r.outcome is Outcome.ERROR
    ]
    assert {r.check.id for r in results if r.outcome is Outcome.PASSED} >= {
        "OBS-001", "OBS-002", "OBS-003", "OBS-004", "IDENT-001", "IDENT-006", "IDENT-013"
    }  # fmt: skip
