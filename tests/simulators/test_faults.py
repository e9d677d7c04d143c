"""Every named fault, seen from the outside (scontrol, squeue, sacct, or the TimeoutExpired a
transport sees), recorded in the trace; and the seeded schedule."""

from __future__ import annotations

import subprocess

import pytest

from simulators.slurm import SlurmConfig, SlurmError, SlurmSim
from simulators.slurm.faults import FAULTS, FaultError
from simulators.slurm.sim import COMMANDS

JOB_SH = "#!/bin/sh\nsleep 600\n"


def sim_for(**config: object) -> SlurmSim:
    settings = {"max_job_id": 50, "min_job_age": 10, **config}
    return SlurmSim(SlurmConfig(**settings))  # type: ignore[arg-type]


def run(sim: SlurmSim, *argv: str, stdin: str | None = None) -> tuple[str, int]:
    done = sim.run(list(argv), stdin=stdin)
    return done.stdout + done.stderr, done.returncode


def submit(sim: SlurmSim, *options: str) -> int:
    out, rc = run(sim, "sbatch", "--parsable", *options, stdin=JOB_SH)
    assert rc == 0, out
    return int(out)


def show(sim: SlurmSim, job: int) -> dict[str, str]:
    out, rc = run(sim, "scontrol", "show", "job", "-o", str(job))
    assert rc == 0, out
    return dict(f.split("=", 1) for f in out.split() if "=" in f)


def rows(sim: SlurmSim, job: int) -> list[str]:
    """The job's accounting rows, ``state`` each: through sacct once it exists."""
    if "sacct" in COMMANDS:
        out, rc = run(sim, "sacct", "-j", str(job), "-X", "-D", "-n", "-P", "-o", "State")
        assert rc == 0, out
        return [line.split(" by ")[0] for line in out.splitlines()]
    return [record.state.value for record in sim.controller.records(job)]


def last_fault(sim: SlurmSim) -> dict[str, object]:
    return next(r for r in reversed(sim.trace.records) if r["kind"] == "fault")


def running(sim: SlurmSim, *options: str) -> int:
    job = submit(sim, *options)
    sim.advance(2)
    assert show(sim, job)["JobState"] == "RUNNING"
    return job


def test_every_fault_is_named() -> None:
    assert set(FAULTS) == {
        "requeue_underneath",
        "preempt",
        "node_failure",
        "purge_now",
        "reuse_id",
        "rewrite_comment",
        "rename_job",
        "timeout_before",
        "lose_reply",
        "slurmctld_down",
    }


def test_requeue_underneath() -> None:
    sim = sim_for()
    job = running(sim, "--job-name=dj-A")
    sim.faults.requeue_underneath(job)
    during = show(sim, job)
    assert (during["JobState"], during["Restarts"]) == ("COMPLETING", "1")
    sim.advance(2)
    after = show(sim, job)
    assert (after["JobState"], after["Reason"]) == ("PENDING", "BeginTime")
    assert rows(sim, job) == ["REQUEUED", "PENDING"]
    assert last_fault(sim) == {
        "kind": "fault",
        "t": sim.clock.now() - 2,
        "name": "requeue_underneath",
        "args": {"job_id": job, "hold": False},
        "scheduled": False,
        "result": None,
    }


def test_requeue_underneath_obeys_no_requeue() -> None:
    sim = sim_for()
    job = running(sim, "--no-requeue")
    with pytest.raises(SlurmError, match="presently disabled"):
        sim.faults.requeue_underneath(job)
    assert last_fault(sim)["error"] == "Requested operation is presently disabled"
    assert show(sim, job)["JobState"] == "RUNNING"


def test_preempt_requeue_and_cancel() -> None:
    sim = sim_for()
    first = running(sim)
    second = running(sim, "--no-requeue")
    assert sim.faults.preempt(first) == "requeued"
    assert sim.faults.preempt(second, mode="requeue") == "ended"
    sim.advance(2)
    assert show(sim, first)["JobState"] == "PENDING"
    assert show(sim, first)["Restarts"] == "1"
    assert rows(sim, first)[0] == "PREEMPTED"
    assert show(sim, second)["JobState"] == "PREEMPTED"
    out, _ = run(sim, "squeue", "-t", "all", "-h", "-o", "%i|%T")
    assert f"{second}|PREEMPTED" in out.splitlines()
    with pytest.raises(FaultError, match="not RUNNING"):
        sim.faults.preempt(first, mode="cancel")


def test_node_failure_requeues_or_fails() -> None:
    sim = sim_for(cpus_per_node=4)
    requeueable = running(sim)
    not_requeueable = running(sim, "--no-requeue")
    assert sim.faults.node_failure("vm") == [requeueable, not_requeueable]
    sim.advance(2)
    assert (show(sim, requeueable)["JobState"], show(sim, requeueable)["Restarts"]) == (
        "PENDING",
        "1",
    )
    assert rows(sim, requeueable)[0] == "NODE_FAIL"
    assert show(sim, not_requeueable)["JobState"] == "NODE_FAIL"
    with pytest.raises(FaultError, match="no node"):
        sim.faults.node_failure("elsewhere")


def test_purge_now() -> None:
    sim = sim_for(min_job_age=300)
    job = running(sim)
    sim.finish(job)
    assert show(sim, job)["JobState"] == "COMPLETED"
    assert sim.faults.purge_now() == [job]
    assert run(sim, "scontrol", "show", "job", str(job)) == (
        "slurm_load_jobs error: Invalid job id specified\n",
        1,
    )
    assert rows(sim, job) == ["COMPLETED"]


def test_reuse_id_gives_a_finished_jobs_id_to_a_foreign_job() -> None:
    sim = sim_for(min_job_age=300)
    job = running(sim, "--job-name=dj-MINE")
    sim.finish(job)
    later = submit(sim, "--job-name=dj-LATER")
    assert sim.faults.reuse_id(job) == job
    fields = show(sim, job)
    assert (fields["JobName"], fields["UserId"]) == ("foreign-job", "other(1001)")
    assert rows(sim, job) == ["COMPLETED", "PENDING"]
    # the counter runs on from the reused id, skipping ids still in memory
    assert later == job + 1
    assert submit(sim) == later + 1
    with pytest.raises(FaultError, match="live id"):
        sim.faults.reuse_id(later)


def test_rewrite_comment_and_rename_job() -> None:
    sim = sim_for()
    job = submit(sim, "--job-name=dj-X", "--comment=dispatch:a")
    sim.faults.rewrite_comment(job, "owner:b")
    sim.faults.rename_job(job, "renamed")
    fields = show(sim, job)
    assert (fields["JobName"], fields["Comment"]) == ("renamed", "owner:b")
    assert run(sim, "squeue", "--name=dj-X", "-h", "-o", "%i") == ("", 0)
    assert run(sim, "squeue", "--name=renamed", "-h", "-o", "%i") == (f"{job}\n", 0)


def test_timeout_before_the_command_takes_effect() -> None:
    sim = sim_for()
    sim.faults.timeout_before("sbatch", wait=30)
    start = sim.clock.now()
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        sim.run(["sbatch", "--parsable"], stdin=JOB_SH, timeout=5)
    assert raised.value.timeout == 30
    assert sim.clock.now() == start + 30
    assert sim.controller.jobs == {}
    assert submit(sim) == 1  # nothing was submitted; the fault was one-shot
    call = sim.trace.records[-2]
    assert (call["timeout"], call["waited"], "stdout" in call) == ("before", 30.0, False)


def test_reply_lost_after_the_command_took_effect() -> None:
    sim = sim_for(min_job_age=300)
    job = submit(sim, "--job-name=dj-LOST")
    sim.faults.lose_reply("scancel", args=[str(job)])
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        sim.run(["scancel", str(job)], timeout=10)
    assert raised.value.timeout == 10
    assert show(sim, job)["JobState"] == "CANCELLED"
    call = sim.trace.records[-2]
    assert (call["timeout"], call["returncode"]) == ("reply-lost", 0)


def test_an_armed_fault_waits_for_a_matching_call() -> None:
    sim = sim_for()
    sim.faults.lose_reply("scontrol", args=["requeue"])
    job = running(sim)
    assert run(sim, "scontrol", "show", "job", str(job))[1] == 0
    with pytest.raises(subprocess.TimeoutExpired):
        sim.run(["env", "SLURM_TIME_FORMAT=%s", "scontrol", "requeue", str(job)])
    assert sim.faults.armed == []


def test_slurmctld_down_for_a_while() -> None:
    sim = sim_for()
    job = submit(sim, "--job-name=dj-DOWN")
    until = sim.faults.slurmctld_down(120)
    assert until == sim.controller.now + 120
    unavailable = "Unable to contact slurm controller (connect failure)"
    assert run(sim, "sbatch", "--parsable", stdin=JOB_SH) == (
        f"sbatch: error: Batch job submission failed: {unavailable}\n",
        1,
    )
    assert run(sim, "scontrol", "show", "job", str(job)) == (
        f"slurm_load_jobs error: {unavailable}\n",
        1,
    )
    assert run(sim, "scancel", "-n", "dj-DOWN") == (f"slurm_load_jobs error: {unavailable}\n", 1)
    assert sim.controller.jobs[job].state.value == "PENDING"  # nothing starts meanwhile
    sim.advance(120)
    assert show(sim, job)["JobState"] == "RUNNING"  # the scheduler runs when it is back
    assert submit(sim) == job + 1


def test_schedule_same_seed_same_plan() -> None:
    one, two, other = sim_for(), sim_for(), sim_for()
    plan = one.faults.schedule(7, count=8, within=600)
    assert plan == two.faults.schedule(7, count=8, within=600)
    assert plan != other.faults.schedule(8, count=8, within=600)
    assert [p.at for p in plan] == sorted(p.at for p in plan)
    assert one.trace.records[-1]["kind"] == "schedule"


def test_scheduled_faults_fire_and_are_recorded() -> None:
    sim = sim_for(cpus_per_node=8)
    jobs = [running(sim, f"--job-name=dj-{i}") for i in range(4)]
    plan = sim.faults.schedule(3, count=12, within=300)
    sim.advance(301)
    for job in jobs:
        run(sim, "scontrol", "show", "job", str(job))
    fired = [r for r in sim.trace.records if r["kind"] == "fault" and r["scheduled"]]
    assert [r["name"] for r in fired] == [p.name for p in plan]
    assert [r["t"] for r in fired] == [p.at for p in plan]
    assert all(("result" in r) or ("error" in r) or ("skipped" in r) for r in fired)


def test_a_scheduled_fault_with_no_target_is_skipped() -> None:
    sim = sim_for()
    sim.faults.schedule(1, count=1, within=0, kinds=["preempt"])
    sim.advance(1)
    assert sim.trace.records[-1] == {
        "kind": "fault",
        "t": sim.controller.now - 1,
        "name": "preempt",
        "args": sim.faults.plans[0].args,
        "scheduled": True,
        "skipped": "no job to hit",
    }
