"""The Slurm harnesses keep their obligations (conformance.Harness, FaultInjector): fresh
clusters, reopen on the same cluster, each fault observable through the adapter, the
environment of every rank of every execution; slurm-local skips with its reason when there is
no Slurm, and works against the simulator's PATH shims when they stand in for one.

Every registered check runs on slurm-sim and slurm-sim-nocomment; a check that fails there but
passes on memory-slurm is a harness, adapter or simulator bug (KNOWN lists the open ones).
Nothing here sleeps for real: the clusters run on virtual clocks."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.slurm import SlurmBackend
from conformance import CannotInject, HarnessUnavailable, Outcome, Tier, checks, run_check
from conformance.checks import Check, Context
from conformance.harnesses import load_harness
from conformance.harnesses.slurm import (
    SimFaults,
    SlurmLocalHarness,
    SlurmSimHarness,
)
from dispatch_core import (
    Cause,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    OutcomeUnknown,
    Rejected,
    State,
    make_plan,
    with_job,
)
from simulators.slurm.shim_client import stop

ROOT = Path(__file__).resolve().parents[2]


def probe_check() -> Check:
    """A check value for a hand-made Context (the tests below drive the harness directly)."""
    return Check("TEST-000", "the harness keeps its obligations", "test", "test", Tier.SMOKE, print)


class Cluster:
    """One backend of a Slurm sim harness, with its faults and a context to plan jobs in."""

    def __init__(self, job_comment: bool = True) -> None:
        self.harness = SlurmSimHarness(job_comment=job_comment)
        self.ctx = Context(self.harness, probe_check(), seed=7)
        self.backend = self.ctx.backend
        assert isinstance(self.backend, SlurmBackend)
        self.faults = self.harness.faults(self.backend)
        assert isinstance(self.faults, SimFaults)
        self.cluster = self.faults.cluster
        self.sim = self.cluster.sim

    def start(self, spec: JobSpec | None = None) -> ObjectRef:
        return self.ctx.start(self.ctx.plan(spec))

    def slurm_state(self, ref: ObjectRef) -> str:
        return str(self.sim.job(int(ref.id)).state)


@pytest.fixture
def c() -> Cluster:
    return Cluster()


# -- registration and the cluster each backend gets ---------------------------------------------------


def test_the_three_harnesses_are_registered() -> None:
    sim, nocomment, local = (
        load_harness(n) for n in ("slurm-sim", "slurm-sim-nocomment", "slurm-local")
    )
    assert isinstance(sim, SlurmSimHarness) and sim.job_comment and sim.name == "slurm-sim"
    assert isinstance(nocomment, SlurmSimHarness) and not nocomment.job_comment
    assert nocomment.name == "slurm-sim-nocomment"
    assert isinstance(local, SlurmLocalHarness) and local.name == "slurm-local"


def test_new_backend_gives_independent_clusters_on_a_wall_time_virtual_clock() -> None:
    harness = SlurmSimHarness()
    first, second = harness.new_backend(), harness.new_backend()
    assert harness.clock(first) is not harness.clock(second)
    assert abs(harness.clock(first).now() - time.time()) < 60
    spec = JobSpec(command=("true",))
    plan = make_plan(first, spec)
    ref = first.start(plan, 1, 1)
    assert [o.ref for o in first.find(plan.job)] == [ref]
    assert second.find(plan.job) == []
    with pytest.raises(NotFound):
        second.open(ref)  # the same id names nothing there
    config = harness.faults(first).cluster.sim.config  # type: ignore[attr-defined]
    assert (config.max_job_id, config.min_job_age, config.job_comment) == (60, 30, True)
    assert (config.nodes, config.cpus_per_node) == (("n1", "n2"), 4)


def test_reopen_shares_the_cluster_and_nothing_else(c: Cluster) -> None:
    ref = c.start()
    other = c.harness.reopen(c.backend)
    assert other is not c.backend and isinstance(other, SlurmBackend)
    assert c.harness.clock(other) is c.harness.clock(c.backend)
    assert other.open(ref).ref == ref
    number = c.backend.hold(ref)
    assert other.open(ref).hold == number
    other.release(ref, number)
    assert c.backend.open(ref).hold is None


def test_the_nocomment_harness_tells_the_adapter() -> None:
    harness = SlurmSimHarness(job_comment=False)
    backend = harness.new_backend()
    assert isinstance(backend, SlurmBackend) and backend.job_comment is False
    assert harness.faults(backend).cluster.sim.config.job_comment is False  # type: ignore[attr-defined]


# -- faults, each seen through the adapter -------------------------------------------------------------


def test_jobs_wait_for_let_run_and_let_run_starts_them(c: Cluster) -> None:
    ref = c.start()
    assert c.backend.open(ref).state is State.QUEUED
    c.faults.let_run(ref)
    assert c.backend.open(ref).state is State.RUNNING
    c.faults.let_run(ref)  # already running: nothing to do


def test_let_run_refuses_a_held_job(c: Cluster) -> None:
    ref = c.start()
    c.backend.hold(ref)
    with pytest.raises(Rejected, match="held"):
        c.faults.let_run(ref)


@pytest.mark.parametrize(
    ("code", "state", "cause"),
    [(0, State.SUCCEEDED, Cause.NONE), (3, State.FAILED, Cause.EXIT_CODE)],
)
def test_finish_ends_the_job_with_its_exit_code(
    c: Cluster, code: int, state: State, cause: Cause
) -> None:
    ref = c.start()
    c.faults.let_run(ref)
    c.faults.finish(ref, code)
    seen = c.backend.open(ref)
    assert (seen.state, seen.cause) == (state, cause)
    c.faults.purge(ref)  # from accounting, the exit code too
    seen = c.backend.open(ref)
    assert (seen.state, seen.exit_code) == (state, code)


def test_requeue_underneath_keeps_the_ref_valid_and_moves_submit_on(c: Cluster) -> None:
    ref = c.start()
    c.faults.let_run(ref)
    c.faults.requeue_underneath(ref)
    seen = c.backend.open(ref)
    assert (seen.state, seen.cause, seen.restart_count) == (State.QUEUED, Cause.REQUEUED, 1)
    assert seen.ref.submit > ref.submit
    number = c.backend.hold(ref)  # a write through the old ref still works
    assert c.backend.open(ref).hold == number
    assert c.slurm_state(ref) == "PENDING"


def test_purge_leaves_history_only(c: Cluster) -> None:
    ref = c.start()
    c.faults.purge(ref)  # ends it first (an administrator's scancel)
    assert int(ref.id) not in c.sim.controller.jobs
    seen = c.backend.open(ref)
    assert seen.state is State.CANCELLED and "accounting" in seen.detail


def test_purge_of_a_running_job_and_find_from_accounting(c: Cluster) -> None:
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.faults.let_run(ref)
    c.faults.finish(ref)
    c.faults.purge(ref)
    [seen] = c.backend.find(plan.job)
    assert (seen.ref.id, seen.state, seen.submission, seen.foreign) == (
        ref.id,
        State.SUCCEEDED,
        1,
        False,
    )


def test_reuse_id_gives_the_id_to_a_foreign_job_and_writes_act_on_nothing(c: Cluster) -> None:
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.faults.let_run(ref)
    c.faults.finish(ref)
    c.faults.reuse_id(ref)
    occupant = c.sim.job(int(ref.id))
    assert occupant.name != ref.uid and occupant.user != c.sim.config.user
    c.backend.stop(ref)  # succeeds, cancels nothing
    assert c.sim.job(int(ref.id)).state == "PENDING"
    for write in (c.backend.hold, c.backend.requeue, lambda r: c.backend.release(r, 1)):
        with pytest.raises(NotFound):
            write(ref)
    [seen] = c.backend.find(plan.job)  # the old job, from accounting
    assert seen.ref == ref and seen.state is State.SUCCEEDED


def test_reuse_id_next_hands_the_id_to_the_next_submission(c: Cluster) -> None:
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.start()  # another job holds the next id
    c.faults.reuse_id_next(ref)  # ends (cancels) the job, purges it, drives the counter
    again = c.ctx.start(make_plan(c.backend, plan.spec, None, with_job(plan.job)), submission=2)
    assert (again.id, again.uid) == (ref.id, ref.uid)
    assert again.submit > ref.submit  # never in the second the old job was submitted
    with pytest.raises(NotFound):
        c.backend.open(ref)
    with pytest.raises(NotFound):
        c.backend.hold(ref)
    assert c.backend.open(again).submission == 2


def test_lose_comments_is_the_nocomment_cluster_s_configuration() -> None:
    with pytest.raises(CannotInject, match="lose_comments"):
        Cluster(job_comment=True).faults.lose_comments()
    c = Cluster(job_comment=False)
    c.faults.lose_comments()
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.faults.let_run(ref)
    c.faults.finish(ref)
    c.faults.purge(ref)
    [seen] = c.backend.find(plan.job)
    assert seen.ref == ref and not seen.foreign
    assert (seen.submission, seen.attempt) == (None, None)  # unknown, not foreign


def test_lose_node_fails_a_job_that_may_not_be_requeued(c: Cluster) -> None:
    bystander = c.start()
    ref = c.start()
    c.faults.let_run(ref)
    assert c.backend.open(bystander).state is State.RUNNING  # on the same node
    c.faults.lose_node(ref)
    seen = c.backend.open(ref)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.NODE_LOST)
    assert c.backend.open(bystander).state is State.RUNNING  # the fault hit one object


@pytest.mark.parametrize("alone", [True, False])
def test_lose_node_requeues_a_requeueable_job(c: Cluster, alone: bool) -> None:
    ref = c.start()
    if not alone:
        c.start()
    c.faults.let_run(ref)
    # The adapter submits --no-requeue (it compiles no native rule); an adapter requeue or an
    # administrator raises the flag.
    c.cluster.admin("scontrol", "update", f"JobId={ref.id}", "Requeue=1")
    c.faults.lose_node(ref)
    seen = c.backend.open(ref)
    assert (seen.state, seen.cause, seen.restart_count) == (State.QUEUED, Cause.REQUEUED, 1)
    assert c.sim.controller.records(int(ref.id))[0].state == "NODE_FAIL"


def test_a_lost_sbatch_reply_is_resolved_by_the_adapter(c: Cluster) -> None:
    c.faults.lose_next_reply("start")
    plan = c.ctx.plan()
    before = c.harness.clock(c.backend).now()
    ref = c.ctx.start(plan)  # sbatch took effect; the adapter finds the job it made
    assert c.harness.clock(c.backend).now() >= before + 60  # the reply was awaited in vain
    assert [o.ref for o in c.backend.find(plan.job)] == [ref]
    assert len(c.sim.controller.named(ref.uid)) == 1
    assert any(r.get("name") == "lose_reply" for r in c.sim.trace.records)


def test_lost_replies_of_each_write(c: Cluster) -> None:
    ref = c.start()
    c.faults.lose_next_reply("hold")
    with pytest.raises(OutcomeUnknown):
        c.backend.hold(ref)
    number = c.backend.open(ref).hold
    assert number is not None  # it took effect
    c.faults.lose_next_reply("release")
    with pytest.raises(OutcomeUnknown):
        c.backend.release(ref, number)
    assert c.backend.open(ref).hold is None
    c.faults.let_run(ref)
    c.faults.lose_next_reply("requeue")
    with pytest.raises(OutcomeUnknown):
        c.backend.requeue(ref)
    assert c.sim.job(int(ref.id)).restart_count == 1
    c.faults.let_run(ref)
    c.faults.lose_next_reply("stop")
    c.backend.stop(ref)  # the adapter reads the end back
    assert c.backend.open(ref).state is State.CANCELLED
    with pytest.raises(CannotInject, match=r"lose_next_reply\(restart\)"):
        c.faults.lose_next_reply("restart")


def test_inject_named_makes_look_alikes_the_adapter_tells_apart(c: Cluster) -> None:
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    name = plan.job.discovery_name()
    variant = c.faults.inject_named(plan.job, name.lower(), "dispatch:s=1;a=1")
    comma = c.faults.inject_named(plan.job, f"{name},dj-OTHER", "dispatch:s=1;a=1")
    garbage = c.faults.inject_named(plan.job, name, "dispatch:s=01;a=1")
    assert c.sim.job(int(variant)).name == name.lower()
    assert c.sim.job(int(comma)).name == f"{name},dj-OTHER"
    found = {o.ref.id: o for o in c.backend.find(plan.job)}
    assert set(found) == {ref.id, garbage}
    assert found[garbage].foreign and not found[ref.id].foreign


# -- executions ----------------------------------------------------------------------------------------


def test_executions_give_every_rank_of_every_execution(c: Cluster) -> None:
    spec = JobSpec(command=("true",), nodes=2, procs_per_node=2, env={"MINE": "x"})
    plan = c.ctx.plan(spec)
    ref = c.ctx.start(plan)
    assert c.harness.executions(c.backend, ref) == []
    c.faults.let_run(ref)
    c.backend.requeue(ref)
    c.faults.let_run(ref)
    runs = c.harness.executions(c.backend, ref)
    assert len(runs) == 2 and all(len(ranks) == 4 for ranks in runs)
    for restart, ranks in enumerate(runs):
        for procid, env in enumerate(ranks):
            assert env["SLURM_PROCID"] == str(procid)
            assert env["DISPATCH_JOB"] == str(plan.job)
            assert env["DISPATCH_SUBMISSION"] == "1"
            assert env["DISPATCH_ATTEMPT"] == f"1-{ref.id}-{restart}"
            assert env["DISPATCH_EPOCH"] == str(1_000_000 + restart)
            assert env["MINE"] == "x"
    # Another submission of the same job, on the same id: its executions are its own.
    c.faults.reuse_id_next(ref)
    again = c.ctx.start(make_plan(c.backend, spec, None, with_job(plan.job)), submission=2)
    c.faults.let_run(again)
    assert again.id == ref.id
    assert len(c.harness.executions(c.backend, ref)) == 2
    [ranks] = c.harness.executions(c.backend, again)
    assert {env["DISPATCH_ATTEMPT"] for env in ranks} == {f"2-{ref.id}-0"}


def test_scratch_is_the_login_directory_and_goes_with_the_cluster() -> None:
    harness = SlurmSimHarness()
    backend = harness.new_backend()
    faults = harness.faults(backend)
    ref = backend.start(make_plan(backend, JobSpec(command=("true",))), 1, 1)
    faults.let_run(ref)
    assert isinstance(faults, SimFaults)
    scratch = faults.cluster.scratch
    assert (scratch / f"slurm-{ref.id}.out").exists()  # not in the host's home directory
    del backend, faults
    gc.collect()
    assert not scratch.exists()


# -- every registered check ---------------------------------------------------------------------------

SIM_HARNESSES = ("slurm-sim", "slurm-sim-nocomment")
CANNOT = {
    # The faults and probes each harness cannot provide, by design (the skip it must give).
    "slurm-sim": ("lose_comments",),
    "slurm-sim-nocomment": (),
}
KNOWN: dict[tuple[str, str], str] = {}
"""(check id, harness) -> the open adapter or simulator bug that makes it fail there."""


@pytest.mark.parametrize("harness_name", SIM_HARNESSES)
@pytest.mark.parametrize("check", checks(), ids=lambda check: check.id)
def test_every_registered_check_on_the_simulated_clusters(check: Check, harness_name: str) -> None:
    result = run_check(check, load_harness(harness_name), seed=0)
    if result.outcome is Outcome.SKIPPED and result.reason.startswith("harness cannot inject"):
        fault = result.reason.removeprefix("harness cannot inject ")
        assert fault.startswith(CANNOT[harness_name]), f"{check.id}: {result.reason}"
    if result.outcome is not Outcome.FAILED:
        return
    if (check.id, harness_name) in KNOWN:
        pytest.xfail(KNOWN[check.id, harness_name])
    on_memory = run_check(check, load_harness("memory-slurm"), seed=0)
    if on_memory.outcome is Outcome.FAILED:
        pytest.skip(
            f"{check.id} fails on memory-slurm too (a suite or core matter): {on_memory.reason}"
        )
    pytest.fail(
        f"{check.id} fails on {harness_name} but not on memory-slurm: a harness, adapter or "
        f"simulator bug\n{result.reason}"
    )


# -- adapter bugs the harness showed (now fixed) ------------------------------------------------------------


@pytest.mark.parametrize("job_comment", [True, False])
def test_a_job_cancelled_after_a_requeue_reads_back_cancelled_once_purged(
    job_comment: bool,
) -> None:
    c = Cluster(job_comment=job_comment)
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.faults.let_run(ref)
    c.backend.requeue(ref)
    c.sim.advance(2)  # back in the queue, eligible in 121 s
    c.backend.stop(ref)
    assert c.backend.open(ref).state is State.CANCELLED
    c.faults.purge(ref)
    assert c.backend.open(ref).state is State.CANCELLED
    assert [o.state for o in c.backend.find(plan.job)] == [State.CANCELLED]


# -- slurm-local ---------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def not_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests see slurm-local as a developer does (CI exports CI=true)."""
    monkeypatch.delenv("CI", raising=False)


def test_under_ci_a_missing_slurm_fails_every_check_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    harness = SlurmLocalHarness()
    with pytest.raises(HarnessUnavailable, match="needs a real Slurm under CI=true"):
        harness.new_backend()
    result = run_check(checks()[0], harness)
    assert result.outcome is Outcome.FAILED
    assert result.reason == (
        "harness slurm-local unavailable: slurm-local needs a real Slurm under CI=true "
        "(start it with ci/slurm-up.sh): no sbatch on PATH"
    )


def test_slurm_local_without_slurm_skips_every_check_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    harness = SlurmLocalHarness()
    with pytest.raises(CannotInject, match="a real Slurm: no sbatch on PATH"):
        harness.new_backend()
    for check in checks()[:3]:
        result = run_check(check, harness)
        assert result.outcome is Outcome.SKIPPED
        assert result.reason == "harness cannot inject a real Slurm: no sbatch on PATH"


def test_slurm_local_when_slurmctld_does_not_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for program, text in (
        ("sbatch", "exit 1"),
        (
            "scontrol",
            "echo 'slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)' >&2; exit 1",
        ),
    ):
        (tmp_path / program).write_text(f"#!/bin/sh\n{text}\n")
        (tmp_path / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin:/bin")
    with pytest.raises(CannotInject, match="Unable to contact slurm controller"):
        SlurmLocalHarness().new_backend()


class ShimClock:
    """The shims' virtual clock: waiting advances the simulated cluster, never sleeps."""

    def __init__(self, state: Path) -> None:
        self.state = state

    def _ctl(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "simulators.slurm.shims", *args, "--state-dir", str(self.state)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=True,
            timeout=60,
        )
        return done.stdout

    def now(self) -> float:
        return float(self._ctl("now").split()[0])

    def sleep(self, seconds: float) -> None:
        self._ctl("advance", str(seconds))


def test_slurm_local_against_the_simulator_s_path_shims(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    subprocess.run(
        [sys.executable, "-m", "simulators.slurm.shims", "install", "--state-dir", str(state),
         "--bin-dir", str(bin_dir), "--start", str(int(time.time())), "--min-job-age", "2",
         "--cluster-name", "shimmed"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    # The shims run no job command: a started job records no tasks, so do not wait for them.
    harness = SlurmLocalHarness(clock=ShimClock(state), bound=30, task_bound=0)
    backend = harness.new_backend()
    assert isinstance(backend, SlurmBackend)
    assert (backend.name, backend.job_comment) == ("shimmed", True)
    faults = harness.faults(backend)
    plan = make_plan(backend, JobSpec(command=("true",)), None, with_job(JobID.new()))
    ref = backend.start(plan, 1, 1)
    faults.let_run(ref)
    assert backend.open(ref).state is State.RUNNING
    faults.requeue_underneath(ref)
    seen = backend.open(ref)
    assert (seen.state, seen.restart_count) == (State.QUEUED, 1)
    garbage = faults.inject_named(plan.job, plan.job.discovery_name(), "not-dispatch")
    assert {o.ref.id: o.foreign for o in backend.find(plan.job)} == {ref.id: False, garbage: True}
    faults.lose_next_reply("hold")
    with pytest.raises(OutcomeUnknown):
        backend.hold(ref)
    assert backend.open(ref).hold is not None
    other = backend.start(make_plan(backend, JobSpec(command=("true",))), 1, 1)
    faults.let_run(other)
    faults.purge(other)  # cancelled, then MinJobAge waited for on the cluster's clock
    assert backend.open(other).state is State.CANCELLED
    assert "accounting" in backend.open(other).detail
    with pytest.raises(Rejected, match="held"):
        faults.let_run(ref)  # held through StartTime: told at once, not waited for
    third = backend.start(make_plan(backend, JobSpec(command=("true",))), 1, 1)
    for fault, call in (
        ("finish", lambda: faults.finish(third, 1)),  # it runs ``true``, not the job command
        ("lose_node", lambda: faults.lose_node(ref)),
        ("lose_comments", faults.lose_comments),
    ):
        with pytest.raises(CannotInject, match=fault):
            call()
    assert harness.executions(backend, ref) == []  # nothing ran the harness's job command
    harness.close()  # cancels every job of the check, and removes its control directory
    seen = harness.command(["squeue", "-h", "-t", "all", "-o", "%i %T"]).stdout.split("\n")
    assert {f"{garbage} CANCELLED", f"{ref.id} CANCELLED"} <= set(seen)
    stop(str(state))  # the cluster's server, which the first shim call started


def test_commands_run_but_are_never_waited_on(c: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    echo = c.start(JobSpec(command=("echo", "marker"), extensions={"dispatch.Output": str(out)}))
    c.faults.let_run(echo)
    assert out.read_text() == "marker\n"  # the command ran, its output where asked
    started = time.monotonic()
    ref = c.start(JobSpec(command=("sleep", "3600"), nodes=2))
    c.faults.let_run(ref)
    assert time.monotonic() - started < 5  # not waited on: it runs in the background
    assert c.backend.open(ref).state is State.RUNNING
    [ranks] = c.harness.executions(c.backend, ref)
    assert [env["SLURM_PROCID"] for env in ranks] == ["0", "1"]  # both recorded up front
    assert all(env["DISPATCH_ATTEMPT"] == f"1-{ref.id}-0" for env in ranks)
    process = c.cluster.execute.running[int(ref.id)].process
    assert process.poll() is None
    c.backend.stop(ref)  # the job ends: its command is killed, as slurmd would
    assert process.poll() is not None and int(ref.id) not in c.cluster.execute.running


def test_a_dropped_cluster_kills_the_commands_still_running() -> None:
    harness = SlurmSimHarness()
    backend = harness.new_backend()
    faults = harness.faults(backend)
    assert isinstance(faults, SimFaults)
    ref = backend.start(make_plan(backend, JobSpec(command=("sleep", "3600"))), 1, 1)
    faults.let_run(ref)
    process = faults.cluster.execute.running[int(ref.id)].process
    del backend, faults
    gc.collect()
    assert process.wait(timeout=5) is not None


# -- the harness in docs/writing-a-harness.md ------------------------------------------------------------


def test_the_documented_harness_runs_every_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (ROOT / "docs" / "writing-a-harness.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "mypkg_doc_harness.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    harness = load_harness("mypkg_doc_harness:make")
    assert harness.name == "mypkg-memory"
    outcomes = {c.id: run_check(c, harness) for c in checks()}
    failed = {i: r.reason for i, r in outcomes.items() if r.outcome is Outcome.FAILED}
    assert not failed
    assert sum(r.outcome is Outcome.PASSED for r in outcomes.values()) >= len(outcomes) // 2
    skipped = [r.reason for r in outcomes.values() if r.outcome is Outcome.SKIPPED]
    assert any(reason.startswith("harness cannot inject") for reason in skipped)


# -- slurm-local's job command, run here as srun would run each task -----------------------------


def run_task(
    harness: SlurmLocalHarness, job: str, name: str, rank: int, restart: int | None
) -> int:
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": job, "SLURM_JOB_NAME": name}
    env["SLURM_PROCID"] = str(rank)
    if restart is not None:
        env["SLURM_RESTART_COUNT"] = str(restart)
    done = subprocess.run(list(harness.job_command()), env=env, timeout=30, check=False)
    return done.returncode


def test_the_job_command_records_every_task_and_exits_with_the_code_finish_wrote() -> None:
    harness = SlurmLocalHarness()
    ref = ObjectRef(backend="lab", uid="dj-x", id="7", submit=datetime(2026, 11, 30, tzinfo=UTC))
    control = Path(harness.control_dir())
    try:
        # finish wrote the code before the tasks started: they record themselves, then exit.
        for restart, code in ((None, 3), (1, 0)):
            run = control / f"7.dj-x.{restart or 0}"
            run.mkdir()
            (run / "exit").write_text(f"{code}\n")
            assert [run_task(harness, "7", "dj-x", rank, restart) for rank in (1, 0)] == [code] * 2
        other = ObjectRef(
            backend="lab", uid="dj-y", id="7", submit=datetime(2026, 11, 30, tzinfo=UTC)
        )
        executions = [tasks for _, tasks in harness.runs(ref)]
        assert [[env["SLURM_PROCID"] for env in tasks] for tasks in executions] == [["0", "1"]] * 2
        assert [tasks[0].get("SLURM_RESTART_COUNT") for tasks in executions] == [None, "1"]
        assert harness.runs(other) == []  # another job that had the id records apart
        harness.forget(ref)
        assert harness.runs(ref) == []
    finally:
        harness.close()
    assert not control.exists()
