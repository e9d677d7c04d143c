"""CAP-017 (an end read late), CAP-018 (a pre-termination signal, and time to act on it, before
the kill) and CAP-019 (preflight bounded, leaving nothing behind, answering probed): where they
pass, where they skip and why, what each catches; and the harness hooks they use
(``pre_termination_spec`` and ``signals``, ``inventory``) on the simulated cluster."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from adapters.memory.testing.harness import MemoryHarness
from adapters.slurm import SlurmBackend
from adapters.slurm.testing.broken import Broken, BrokenSimHarness
from adapters.slurm.testing.local import SlurmLocalHarness
from adapters.slurm.testing.sim import SlurmSimHarness, sim_cluster
from conformance.checks import Check, Outcome, checks, run_check
from conformance.harness import CannotInject, Probe, Signalled
from conformance.harnesses import load_harness
from conformance.powers import lacking
from dispatch_core import (
    Backend,
    Capability,
    Cause,
    JobID,
    JobSpec,
    ObjectRef,
    PreflightOptions,
    Source,
    State,
    Support,
    Tristate,
    make_plan,
    with_job,
)


def check_named(check_id: str) -> Check:
    (found,) = checks("full", [check_id])
    return found


# -- CAP-017: an end read late ------------------------------------------------------------------


def test_an_end_read_late_passes_where_history_is_declared_and_kept() -> None:
    for harness in (
        load_harness("slurm-sim"),
        MemoryHarness("slurm", capabilities={Capability.ACCOUNTING_HISTORY: Tristate.YES}),
    ):
        result = run_check(check_named("CAP-017"), harness)
        assert result.outcome is Outcome.PASSED, result.reason


def test_an_end_read_late_skips_where_history_is_declared_no() -> None:
    result = run_check(check_named("CAP-017"), load_harness("slurm-sim-nocomment"))
    assert result.outcome is Outcome.SKIPPED
    assert result.reason.startswith("adapter declares AccountingHistory no: accounting has no")


def test_a_history_yes_where_the_scheduler_keeps_none_fails() -> None:
    """The kubeflow shape deletes an ended object outright: a yes there is contradicted."""
    harness = MemoryHarness("kubeflow", capabilities={Capability.ACCOUNTING_HISTORY: "yes"})
    result = run_check(check_named("CAP-017"), harness)
    assert result.outcome is Outcome.FAILED
    assert "declares AccountingHistory yes, but open() of the object" in result.reason
    assert "raised NotFound" in result.reason and "cannot be read late" in result.reason


def test_a_history_that_lost_the_identity_fails_find() -> None:
    harness = MemoryHarness(
        "slurm", job_comment=False, capabilities={Capability.ACCOUNTING_HISTORY: "yes"}
    )
    result = run_check(check_named("CAP-017"), harness)
    assert result.outcome is Outcome.FAILED
    assert "with submission None and attempt None, not the submission 2" in result.reason


# -- CAP-018: the pre-termination signal ------------------------------------------------------------


def test_the_simulated_cluster_signals_before_the_time_limit_and_records_both() -> None:
    harness = SlurmSimHarness()
    backend = harness.new_backend()
    spec = harness.pre_termination_spec(JobSpec(command=("true",)), 120, 600)
    assert spec.extensions == {"slurm.TimeLimit": "10", "slurm.Signal": "USR1@120"}
    ref = backend.start(make_plan(backend, spec, None, with_job(JobID.new())), 1, 1)
    harness.let_run(backend, ref)
    clock = harness.clock(backend)
    started = clock.now()
    assert harness.signals(backend, ref) == Signalled(received=(), ended=None)
    assert harness.inventory(backend) == [ref.id]
    clock.sleep(700)  # the command ended at once in real time: the job runs to its limit
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.TIMEOUT)
    assert harness.signals(backend, ref) == Signalled(
        received=(started + 480,), ended=started + 600
    )
    assert harness.inventory(backend) == []


def test_a_script_that_traps_its_signal_acts_on_it_and_the_job_runs_to_its_limit(
    tmp_path: Path,
) -> None:
    harness = SlurmSimHarness()
    backend = harness.new_backend()
    seen_by_trap = tmp_path / "trapped"
    waits = ("sh", "-c", 'trap "echo USR1 > $0; exit 0" USR1; while :; do sleep 0.05; done')
    spec = harness.pre_termination_spec(JobSpec(command=(*waits, str(seen_by_trap))), 60, 300)
    ref = backend.start(make_plan(backend, spec, None, with_job(JobID.new())), 1, 1)
    harness.let_run(backend, ref)
    harness.clock(backend).sleep(300)
    seen = backend.open(ref)  # the cluster catches up with its clock
    assert (seen.state, seen.cause) == (State.FAILED, Cause.TIMEOUT)
    assert seen_by_trap.read_text() == "USR1\n"  # delivered, and acted on, before time went on
    signalled = harness.signals(backend, ref)
    assert signalled.ended is not None and signalled.ended - signalled.received[0] == 60


@pytest.mark.parametrize(("lead", "limit"), [(30, 90), (600, 600), (0, 600)])
def test_the_simulated_cluster_cannot_say_every_limit_and_lead(lead: int, limit: int) -> None:
    with pytest.raises(CannotInject, match="signals"):
        SlurmSimHarness().pre_termination_spec(JobSpec(command=("true",)), lead, limit)


class LateSignal(SlurmSimHarness):
    """The simulated cluster, reporting the signal 10 s before the kill."""

    def signals(self, backend: SlurmBackend, ref: ObjectRef) -> Signalled:
        seen = super().signals(backend, ref)
        assert seen.ended is not None
        return Signalled(received=(seen.ended - 10,), ended=seen.ended)


def test_a_signal_just_before_the_kill_fails() -> None:
    result = run_check(check_named("CAP-018"), LateSignal())
    assert result.outcome is Outcome.FAILED
    assert "got their first signal only 10 s before they ended" in result.reason


def test_a_harness_whose_signals_raise_is_the_harness_s_error() -> None:
    class Broken(SlurmSimHarness):
        def signals(self, backend: SlurmBackend, ref: ObjectRef) -> Signalled:
            raise RuntimeError("no record")

    result = run_check(check_named("CAP-018"), Broken())
    assert result.outcome is Outcome.ERROR
    assert "signals() raised RuntimeError: no record" in result.reason


def test_where_the_signal_check_skips_and_why() -> None:
    for name in ("memory-slurm", "memory-kubeflow"):
        result = run_check(check_named("CAP-018"), load_harness(name))
        assert (result.outcome, result.reason) == (
            Outcome.SKIPPED,
            "harness offers no signals (the memory scheduler models no time limit and no "
            "signal: its adapter declares PreTerminationSignal no): implement "
            "conformance.powers.ObservesSignals to offer it",
        )
    local = SlurmLocalHarness()
    said = lacking(local, Probe.SIGNALS) or ""
    assert "(a real Slurm's time limits are whole minutes" in said
    result = run_check(check_named("CAP-018"), local)  # before any backend: no cluster needed
    assert result.outcome is Outcome.SKIPPED and result.reason == said


# -- CAP-019: preflight ---------------------------------------------------------------------------


def test_preflight_on_the_simulated_cluster_probes_the_signal_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """The signal probe's script traps USR1 and exits: on the simulated cluster that ends its
    job, so the probe sees the signal; every probe job is gone afterwards."""
    harness = SlurmSimHarness()
    backend = harness.new_backend()
    answers = backend.preflight(PreflightOptions(probe_dir=str(tmp_path)))
    assert answers[Capability.PRE_TERMINATION_SIGNAL].value is Tristate.YES
    assert answers[Capability.ACCOUNTING_HISTORY].value is Tristate.YES
    assert harness.inventory(backend) == []
    assert list(tmp_path.iterdir()) == []


def test_preflight_passes_on_both_simulated_clusters_and_skips_elsewhere() -> None:
    for name in ("slurm-sim", "slurm-sim-nocomment"):
        result = run_check(check_named("CAP-019"), load_harness(name))
        assert result.outcome is Outcome.PASSED, result.reason
    for name in ("memory-slurm", "memory-kubeflow"):
        result = run_check(check_named("CAP-019"), load_harness(name))
        assert (result.outcome, result.reason) == (
            Outcome.SKIPPED,
            "adapter implements no Preflight (MemoryBackend is not one)",
        )
    local = SlurmLocalHarness()
    result = run_check(check_named("CAP-019"), local)  # before any backend: no cluster needed
    assert result.outcome is Outcome.SKIPPED
    assert result.reason.startswith("harness offers no preflight (on a real cluster")


class DeclaredAnswers(SlurmBackend):
    def preflight(self, options: PreflightOptions | None = None) -> dict[Capability, Support]:
        probed = super().preflight(options)
        return {c: a.model_copy(update={"source": Source.DECLARED}) for c, a in probed.items()}


class IgnoresBound(SlurmBackend):
    def preflight(self, options: PreflightOptions | None = None) -> dict[Capability, Support]:
        given = options if options is not None else PreflightOptions()
        return super().preflight(dataclasses.replace(given, bound=180.0))


class ForgetsItsAnswers(SlurmBackend):
    def preflight(self, options: PreflightOptions | None = None) -> dict[Capability, Support]:
        probed = super().preflight(options)
        self._probed = {}
        return probed


@pytest.mark.parametrize(
    ("backend", "says"),
    [
        (DeclaredAnswers, "with source declared: each of its answers is probed"),
        (IgnoresBound, "more than its bound per probe allows (55 s"),
        (ForgetsItsAnswers, "AccountingHistory yes (declared), not the probed unknown"),
    ],
)
def test_what_the_preflight_check_catches(backend: type[SlurmBackend], says: str) -> None:
    harness = BrokenSimHarness(Broken(backend.__name__, "", backend))
    result = run_check(check_named("CAP-019"), harness)
    assert result.outcome is Outcome.FAILED, result.reason
    assert says in result.reason


def test_the_inventory_is_the_user_s_unfinished_objects() -> None:
    harness = MemoryHarness("slurm")
    backend = harness.new_backend()
    ref = backend.start(make_plan(backend, JobSpec(command=("x",))), 1, 1)
    assert list(harness.inventory(backend)) == [ref.id]
    from conformance.harness import LookAlike

    theirs = harness.inject_look_alike(backend, JobID.new(), LookAlike.OTHER_USER)
    assert theirs not in harness.inventory(backend)  # another user's
    backend.stop(ref)
    assert list(harness.inventory(backend)) == []
    sim = SlurmSimHarness()
    made: Backend = sim.new_backend()
    assert isinstance(made, SlurmBackend)
    other = sim.inject_look_alike(made, JobID.new(), LookAlike.OTHER_USER)
    assert sim.inventory(made) == [] and other in {
        str(j.job_id) for j in sim_cluster(made).sim.controller.jobs.values()
    }
