"""The Slurm adapter against SlurmSim: it never acts on the wrong Slurm job (seed 001).

Id reuse, requeue underneath, comment loss, purge, lost replies, foreign jobs, names that
differ only in case, names with commas; holds across reopen and requeue; stop that verifies
the end; the identity every rank of every execution sees."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from adapters.slurm import SlurmBackend
from dispatch_core import (
    Cause,
    Conflict,
    JobSpec,
    NotFound,
    ObjectRef,
    OutcomeUnknown,
    Plan,
    Rejected,
    State,
    VirtualClock,
    make_plan,
    with_job,
)
from simulators.slurm import SlurmConfig, SlurmSim
from simulators.slurm.execute import ExecuteMode


class Lossy:
    """A transport over the simulator that loses the reply of, or times out before, the next
    call of a given command."""

    def __init__(self, sim: SlurmSim) -> None:
        self.sim = sim
        self.lose_reply: set[str] = set()
        self.time_out: set[str] = set()

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        program = next(a for a in argv if a in ("sbatch", "squeue", "sacct", "scancel", "scontrol"))
        if program in self.time_out:
            self.time_out.discard(program)
            raise subprocess.TimeoutExpired(list(argv), timeout or 0)
        done = self.sim.run(argv, stdin=stdin)
        if program in self.lose_reply:
            self.lose_reply.discard(program)
            raise subprocess.TimeoutExpired(list(argv), timeout or 0)
        return done


def cluster(**config: object) -> tuple[SlurmSim, Lossy, SlurmBackend]:
    settings = {"max_job_id": 50, "min_job_age": 30, **config}
    # The cluster's clock reads about the time job ids are made at (find bounds sacct by it).
    sim = SlurmSim(SlurmConfig(**settings), clock=VirtualClock(int(time.time())))  # type: ignore[arg-type]
    transport = Lossy(sim)
    backend = SlurmBackend(
        transport, "lab", clock=sim.clock, job_comment=bool(settings.get("job_comment", True))
    )
    return sim, transport, backend


def planned(backend: SlurmBackend, **spec: object) -> Plan:
    return make_plan(backend, JobSpec(command=("train",), **spec))  # type: ignore[arg-type]


def foreign_job(sim: SlurmSim, name: str, comment: str) -> int:
    done = sim.run(
        ["sbatch", "--parsable", f"--job-name={name}", f"--comment={comment}"],
        stdin="#!/bin/sh\ntrue\n",
    )
    return int(done.stdout)


# -- start and find -------------------------------------------------------------------------


def test_start_makes_one_job_and_find_sees_exactly_it() -> None:
    sim, _, backend = cluster()
    plan = planned(backend)
    ref = backend.start(plan, 1, 1)
    assert ref.uid == plan.job.discovery_name()
    assert ref.submit_epoch == int(sim.clock.now())
    assert backend.calls["sbatch"] == 1
    [seen] = backend.find(plan.job)
    assert (seen.ref, seen.submission, seen.attempt, seen.foreign) == (ref, 1, 1, False)
    assert backend.start(plan, 1, 1) == ref  # idempotent per (job, submission)
    assert backend.calls["sbatch"] == 1


@pytest.mark.parametrize("failure", ["lose_reply", "time_out"])
def test_a_lost_sbatch_reply_never_makes_two_jobs(failure: str) -> None:
    sim, transport, backend = cluster()
    plan = planned(backend)
    getattr(transport, failure).add("sbatch")
    if failure == "lose_reply":
        ref = backend.start(plan, 1, 1)  # resolved by find
        assert [o.ref for o in backend.find(plan.job)] == [ref]
    else:
        with pytest.raises(OutcomeUnknown, match="find again"):
            backend.start(plan, 1, 1)
        assert backend.find(plan.job) == []
        backend.start(plan, 1, 1)
    assert len(sim.controller.named(plan.job.discovery_name())) == 1


def test_find_ignores_case_variants_and_comma_names_and_reports_foreign_jobs() -> None:
    sim, _, backend = cluster()
    plan = planned(backend)
    ref = backend.start(plan, 1, 1)
    name = plan.job.discovery_name()
    foreign_job(sim, name.lower(), "dispatch:s=1;a=1")
    foreign_job(sim, f"{name},dj-OTHER", "dispatch:s=1;a=1")
    garbage = foreign_job(sim, name, "dispatch:s=01;a=1")
    found = {o.ref.id: o for o in backend.find(plan.job)}
    assert set(found) == {ref.id, str(garbage)}
    assert found[str(garbage)].foreign and found[str(garbage)].submission is None
    assert not found[ref.id].foreign


@pytest.mark.parametrize("job_comment", [True, False])
def test_a_comment_lost_from_history_is_unknown_not_foreign(job_comment: bool) -> None:
    sim, _, backend = cluster(job_comment=job_comment, min_job_age=2)
    plan = planned(backend)
    ref = backend.start(plan, 1, 1)
    sim.advance(2)
    sim.finish(int(ref.id))
    sim.advance(10)  # purged from squeue
    [seen] = backend.find(plan.job)
    assert seen.state is State.SUCCEEDED and not seen.foreign
    assert (seen.submission, seen.attempt) == ((1, 1) if job_comment else (None, None))
    assert backend.open(ref).state is State.SUCCEEDED


# -- the identity check ------------------------------------------------------------------------------


def ended_purged(sim: SlurmSim, ref: ObjectRef) -> None:
    sim.advance(2)
    sim.finish(int(ref.id))
    sim.advance(40)
    assert int(ref.id) not in sim.controller.jobs


def reuse_by_foreign(sim: SlurmSim, backend: SlurmBackend) -> tuple[ObjectRef, int]:
    ref = backend.start(planned(backend), 1, 1)
    ended_purged(sim, ref)
    sim.controller.set_next_job_id(int(ref.id))
    return ref, foreign_job(sim, "someone-else", "theirs")


def reuse_by_same_job(sim: SlurmSim, backend: SlurmBackend) -> tuple[ObjectRef, int]:
    plan = planned(backend)
    ref = backend.start(plan, 1, 1)
    ended_purged(sim, ref)
    sim.controller.set_next_job_id(int(ref.id))
    later = backend.start(plan, 2, 1)
    assert (later.id, later.uid) == (ref.id, ref.uid) and later.submit > ref.submit
    return ref, int(later.id)


@pytest.mark.parametrize("reuse", [reuse_by_foreign, reuse_by_same_job])
def test_after_id_reuse_every_write_acts_on_nothing(reuse) -> None:  # type: ignore[no-untyped-def]
    sim, _, backend = cluster()
    ref, occupant_id = reuse(sim, backend)
    assert int(ref.id) == occupant_id
    sim.advance(2)
    before = sim.run(["scontrol", "show", "job", "-o", ref.id]).stdout
    backend.stop(ref)  # succeeds, cancels nothing
    for write in (backend.hold, backend.requeue, lambda r: backend.release(r, 1), backend.open):
        with pytest.raises(NotFound):
            write(ref)
    assert sim.run(["scontrol", "show", "job", "-o", ref.id]).stdout == before
    assert backend.calls["scancel"] == 0


def test_requeue_underneath_keeps_the_ref_valid() -> None:
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    # An administrator: the adapter submits --no-requeue, so the flag is raised first (§7.6i).
    assert sim.run(["scontrol", "update", f"JobId={ref.id}", "Requeue=1"]).returncode == 0
    assert sim.run(["scontrol", "requeue", ref.id]).returncode == 0
    sim.advance(2)
    seen = backend.open(ref)
    assert (seen.state, seen.cause, seen.restart_count) == (State.QUEUED, Cause.REQUEUED, 1)
    assert seen.ref.submit > ref.submit
    number = backend.hold(ref)
    assert backend.open(ref).hold == number


def test_a_renamed_job_is_not_the_ref_s() -> None:
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.run(["scontrol", "update", f"JobId={ref.id}", f"JobName={ref.uid.lower()}"])
    with pytest.raises(NotFound, match=r"is not the ref.s"):
        backend.hold(ref)
    backend.stop(ref)
    assert sim.job(int(ref.id)).state in ("PENDING", "RUNNING")  # not cancelled


# -- holds ------------------------------------------------------------------------------------------


def test_holds_are_numbered_survive_reopen_and_refuse_another_number() -> None:
    sim, _, backend = cluster()
    plan = planned(backend)
    ref = backend.start(plan, 1, 1)
    number = backend.hold(ref)
    sim.advance(5)
    seen = backend.reopen().open(ref)
    assert (seen.state, seen.hold) == (State.HELD, number)
    assert sim.job(int(ref.id)).state == "PENDING"
    with pytest.raises(Conflict, match=f"carries hold {number}"):
        backend.release(ref, number + 1)
    backend.reopen().release(ref, number)
    with pytest.raises(Conflict, match="no hold"):
        backend.release(ref, number)
    sim.advance(3)
    assert backend.open(ref).state is State.RUNNING


def test_only_a_pending_job_is_held() -> None:
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    with pytest.raises(Rejected, match="only a pending job"):
        backend.hold(ref)


def test_a_hold_placed_before_a_requeue_is_not_that_instance_s() -> None:
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    number = backend.hold(ref)
    backend.release(ref, number)
    sim.advance(3)
    backend.requeue(ref)
    sim.advance(2)
    with pytest.raises(Conflict):
        backend.release(ref, number)
    second = backend.hold(ref)
    assert second != number


# -- requeue and stop ----------------------------------------------------------------------------------


def test_requeue_is_two_steps_and_a_crash_between_is_outcome_unknown() -> None:
    sim, transport, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    transport.time_out.add("scontrol")
    with pytest.raises(OutcomeUnknown):
        backend.requeue(ref)
    assert sim.job(int(ref.id)).restart_count == 0
    backend.requeue(ref)
    assert sim.job(int(ref.id)).restart_count == 1


def test_stop_verifies_that_the_job_ended() -> None:
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    backend.stop(ref)
    assert backend.open(ref).state is State.CANCELLED
    backend.stop(ref)  # nothing left to cancel


def test_stop_during_a_requeue_waits_it_out_then_cancels() -> None:
    """A COMPLETING job on its way back to the queue survives a cancel: stop waits until it is
    back (or ended), then cancels it, and returns only once it has ended."""
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    sim.run(["scontrol", "update", f"JobId={ref.id}", "Requeue=1"])
    sim.run(["scontrol", "requeue", ref.id])  # COMPLETING now, PENDING in a second
    assert sim.job(int(ref.id)).state == "COMPLETING"
    backend.stop(ref)
    assert sim.job(int(ref.id)).state == "CANCELLED"
    assert backend.open(ref).state is State.CANCELLED


def test_stop_right_after_the_adapter_s_own_requeue() -> None:
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    backend.requeue(ref)  # returns once the restart count rose, still COMPLETING
    backend.stop(ref)
    assert backend.open(ref).state is State.CANCELLED


def test_stop_of_a_job_that_survives_its_cancel_is_outcome_unknown() -> None:
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    sim.controller.cancel = lambda job, by: None  # type: ignore[method-assign]
    with pytest.raises(OutcomeUnknown, match="did not come to end"):
        backend.stop(ref)


@pytest.mark.parametrize(
    ("slurm_state", "cause"),
    [
        ("OUT_OF_MEMORY", Cause.OUT_OF_MEMORY),
        ("TIMEOUT", Cause.TIMEOUT),
        ("NODE_FAIL", Cause.NODE_LOST),
        ("PREEMPTED", Cause.PREEMPTED),
        ("DEADLINE", Cause.DEADLINE),
        ("BOOT_FAIL", Cause.NODE_LOST),
    ],
)
def test_failures_keep_their_cause(slurm_state: str, cause: Cause) -> None:
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    sim.fail(int(ref.id), slurm_state)
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.FAILED, cause)


# -- execution identity ------------------------------------------------------------------------------


def test_every_rank_of_every_execution_sees_its_identity(tmp_path: Path) -> None:
    sim, _, backend = cluster(nodes=("n1", "n2"), cpus_per_node=4, requeue_delay=5)
    ExecuteMode(sim, default_run=100)
    printer = tmp_path / "printer.py"
    printer.write_text(
        "import os\nprint(os.environ['SLURM_PROCID'], os.environ['DISPATCH_ATTEMPT'], "
        "os.environ['DISPATCH_EPOCH'])\n"
    )
    spec = JobSpec(
        command=(sys.executable, str(printer)),
        nodes=2,
        procs_per_node=2,
        work_dir=str(tmp_path),
        extensions={"dispatch.Output": str(tmp_path / "out.txt")},
    )
    plan = make_plan(backend, spec)
    ref = backend.start(plan, 1, 1)
    sim.advance(2)
    backend.requeue(ref)
    sim.advance(130)
    second = backend.start(make_plan(backend, spec, None, with_job(plan.job)), 2, 1)
    sim.advance(2)
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert lines == [
        f"0 1-{ref.id}-0 1000000",
        f"1 1-{ref.id}-0 1000000",
        f"2 1-{ref.id}-0 1000000",
        f"3 1-{ref.id}-0 1000000",
        f"0 1-{ref.id}-1 1000001",
        f"1 1-{ref.id}-1 1000001",
        f"2 1-{ref.id}-1 1000001",
        f"3 1-{ref.id}-1 1000001",
        f"0 2-{second.id}-0 2000000",
        f"1 2-{second.id}-0 2000000",
        f"2 2-{second.id}-0 2000000",
        f"3 2-{second.id}-0 2000000",
    ]


def test_a_new_hold_in_the_same_second_takes_a_new_number() -> None:
    """A stale release of the first hold must not free the second (hold, release, hold)."""
    _, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    first = backend.hold(ref)
    backend.release(ref, first)
    second = backend.hold(ref)
    assert second != first
    with pytest.raises(Conflict):
        backend.release(ref, first)
    assert backend.open(ref).hold == second


@pytest.mark.parametrize("user", [None, "root"])
def test_find_sees_another_user_s_job_in_accounting_only_without_a_user(user: str | None) -> None:
    """squeue --me hides another user's job; sacct run as root shows it, so the adapter reads
    accounting for its ``user`` when a site names one (DESIGN seed 001: find sees only your
    own jobs)."""
    sim, transport, _ = cluster()
    backend = SlurmBackend(transport, "lab", clock=sim.clock, job_comment=True, user=user)
    plan = planned(backend)
    other = foreign_job(sim, plan.job.discovery_name(), "dispatch:s=1;a=1")
    sim.controller.set_owner(sim.job(other), "someone-else", 1001)
    sim.advance(2)  # eligible and running: accounting has its row
    seen = [o.ref.id for o in backend.find(plan.job)]
    assert seen == ([str(other)] if user is None else [])


class Rewriting(Lossy):
    """A transport over the simulator that rewrites the replies of one command."""

    def __init__(self, sim: SlurmSim, program: str, rewrite: object) -> None:
        super().__init__(sim)
        self.program = program
        self.rewrite = rewrite

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = super().run(argv, stdin, timeout)
        if self.program in argv:
            return self.rewrite(done)  # type: ignore[operator,no-any-return]
        return done


@pytest.mark.parametrize(
    ("stderr", "answers"),
    [
        ("sacct: error: Slurm accounting storage is disabled\n", True),
        ("sacct: error: slurmdbd: Connection refused\n", False),
        ("sacct: error: Problem talking to the database: Connection refused\n", False),
    ],
)
def test_only_a_cluster_without_accounting_has_no_history(stderr: str, answers: bool) -> None:
    """An accounting daemon that does not answer is no answer: find would miss an ended
    object, and whoever resolves an intent through find would submit it again."""
    sim, _, backend = cluster()
    plan = planned(backend)
    ref = backend.start(plan, 1, 1)
    failing = Rewriting(
        sim, "sacct", lambda done: subprocess.CompletedProcess(done.args, 1, "", stderr)
    )
    backend.transport = failing
    if answers:
        assert [seen.ref for seen in backend.find(plan.job)] == [ref]
    else:
        with pytest.raises(OutcomeUnknown, match="sacct failed"):
            backend.find(plan.job)


def test_a_live_job_that_failed_to_launch_is_a_launch_failure() -> None:
    """squeue's FAILED with reason JobLaunchFailure: the execution never started (a launch
    retry, not a rule's), whatever exit code squeue does not show."""
    sim, _, backend = cluster()
    ref = backend.start(planned(backend), 1, 1)
    sim.advance(2)
    sim.fail(int(ref.id), "FAILED", exit_code=1)
    backend.transport = Rewriting(
        sim,
        "squeue",
        lambda done: subprocess.CompletedProcess(
            done.args, done.returncode, done.stdout.replace("NonZeroExitCode", "JobLaunchFailure")
        ),
    )
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.LAUNCH_FAILED)
