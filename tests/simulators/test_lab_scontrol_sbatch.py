"""sbatch and scontrol against the real Slurm 22.05.8 transcripts of slurm-lab.md §7.

Each test replays one exchange of the lab on a simulator whose clock starts where the lab's
did, and asserts the bytes and exit status the real commands printed (times normalised only
where the lab's scheduler timing is not modelled to the second)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dispatch_core import VirtualClock
from simulators.slurm import SlurmConfig, SlurmSim

LAB_EPOCH = 1_796_046_327  # 2026-11-30T13:45:27Z, the lab's first submission
JOB_SH = "#!/bin/bash\n# the lab's job.sh: prints its environment, sleeps $1 seconds\nsleep $1\n"


@pytest.fixture
def job_sh(tmp_path: Path) -> str:
    path = tmp_path / "job.sh"
    path.write_text(JOB_SH)
    return str(path)


def lab(**config: object) -> SlurmSim:
    settings = {"max_job_id": 20, "min_job_age": 2, **config}
    return SlurmSim(SlurmConfig(**settings), clock=VirtualClock(LAB_EPOCH))  # type: ignore[arg-type]


def run(sim: SlurmSim, *argv: str, stdin: str | None = None) -> tuple[str, int]:
    done = sim.run(list(argv), stdin=stdin)
    return done.stdout + done.stderr, done.returncode


def show(sim: SlurmSim, job_id: int) -> dict[str, str]:
    out, rc = run(sim, "scontrol", "show", "job", "-o", str(job_id))
    assert rc == 0, out
    return dict(field.split("=", 1) for field in out.split() if "=" in field)


def submit(sim: SlurmSim, job_sh: str, *options: str, seconds: str = "600") -> int:
    out, rc = run(sim, "sbatch", "--parsable", *options, job_sh, seconds)
    assert rc == 0, out
    return int(out)


# -- §7.6 requeue ----------------------------------------------------------------------------


def test_requeue_of_a_running_job(job_sh: str) -> None:
    """§7.6a: RestartCnt rises at once while COMPLETING; then PENDING/BeginTime with SubmitTime
    the requeue time and EligibleTime 121 s later."""
    sim = lab()
    job = submit(sim, job_sh, "--job-name=dj-REQRUN", "--comment=dispatch:s=1;a=0")
    sim.advance(3)
    assert show(sim, job)["JobState"] == "RUNNING"
    requeued_at = sim.controller.now
    assert run(sim, "scontrol", "requeue", str(job)) == ("", 0)
    during = show(sim, job)
    assert (during["JobState"], during["Restarts"]) == ("COMPLETING", "1")
    assert during["SubmitTime"] == "2026-11-30T13:45:27"  # still the old one
    sim.advance(5)
    after = show(sim, job)
    assert (after["JobState"], after["Reason"], after["Restarts"]) == ("PENDING", "BeginTime", "1")
    assert after["SubmitTime"] == "2026-11-30T13:45:30" == _iso(requeued_at)
    assert after["EligibleTime"] == _iso(requeued_at + 121)
    assert after["Requeue"] == "1"


def test_pending_jobs_cannot_be_requeued(job_sh: str) -> None:
    """§7.6b: held or waiting on a BeginTime, requeue and requeuehold fail and change nothing."""
    sim = lab()
    held = submit(sim, job_sh, "--hold", "--job-name=dj-REQHELD", seconds="30")
    later = submit(sim, job_sh, "--begin=now+1hour", "--job-name=dj-REQPEND", seconds="30")
    for job in (held, later):
        before = show(sim, job)
        for verb in ("requeue", "requeuehold"):
            assert run(sim, "scontrol", verb, str(job)) == (
                f"Job is pending execution for job {job}\n",
                1,
            )
        assert show(sim, job) == before
    assert show(sim, held)["Reason"] == "JobHeldUser"
    assert show(sim, held)["EligibleTime"] == "Unknown"


def test_requeuehold_then_release(job_sh: str) -> None:
    """§7.6c: requeuehold gives PENDING, Priority 0, job_requeued_in_held_state; release clears
    the hold (Reason None) but the +121 s still applies."""
    sim = lab()
    job = submit(sim, job_sh, "--job-name=dj-REQHOLDRUN")
    sim.advance(3)
    assert run(sim, "scontrol", "requeuehold", str(job)) == ("", 0)
    sim.advance(4)
    held = show(sim, job)
    assert (held["JobState"], held["Reason"], held["Priority"]) == (
        "PENDING",
        "job_requeued_in_held_state",
        "0",
    )
    assert held["Restarts"] == "1"
    assert run(sim, "scontrol", "release", str(job)) == ("", 0)
    released = show(sim, job)
    assert (released["JobState"], released["Reason"]) == ("PENDING", "None")
    assert released["EligibleTime"] == held["EligibleTime"]


def test_requeuehold_special_exit(job_sh: str) -> None:
    sim = lab()
    job = submit(sim, job_sh, "--job-name=dj-REQSPECIAL")
    sim.advance(3)
    assert run(sim, "scontrol", "requeuehold", "State=SpecialExit", str(job)) == ("", 0)
    sim.advance(200)
    assert show(sim, job)["JobState"] == "SPECIAL_EXIT"  # still held after its BeginTime


def test_a_completed_job_still_in_squeue_can_be_requeued(job_sh: str) -> None:
    """§7.6g: back to PENDING with RestartCnt 1, Reason None, Eligible +121 s."""
    sim = lab(min_job_age=300)
    job = submit(sim, job_sh, "--job-name=dj-DONEREQ", seconds="1")
    sim.advance(3)
    sim.finish(job)
    sim.advance(1)
    now = sim.controller.now
    assert run(sim, "scontrol", "requeue", str(job)) == ("", 0)
    after = show(sim, job)
    assert (after["JobState"], after["Reason"], after["Restarts"]) == ("PENDING", "None", "1")
    assert after["SubmitTime"] == _iso(now) and after["EligibleTime"] == _iso(now + 121)


def test_no_requeue_jobs_refuse_until_the_flag_is_raised(job_sh: str) -> None:
    """§7.6h and §7.6i."""
    sim = lab()
    yes = submit(sim, job_sh, "--requeue", "--job-name=dj-RQYES")
    no = submit(sim, job_sh, "--no-requeue", "--job-name=dj-RQNO")
    sim.advance(2)
    assert (show(sim, yes)["Requeue"], show(sim, no)["Requeue"]) == ("1", "0")
    assert run(sim, "scontrol", "requeue", str(no)) == (
        f"Requested operation is presently disabled for job {no}\n",
        1,
    )
    assert run(sim, "scontrol", "update", f"JobId={no}", "Requeue=1") == ("", 0)
    assert show(sim, no)["Requeue"] == "1"
    assert run(sim, "scontrol", "requeue", str(no)) == ("", 0)
    sim.advance(3)
    assert (show(sim, no)["JobState"], show(sim, no)["Restarts"]) == ("PENDING", "1")


def test_node_failure_requeues_only_requeueable_jobs(job_sh: str) -> None:
    """§7.6h: the --no-requeue job ends NODE_FAIL (NodeDown); the other is requeued."""
    sim = lab(min_job_age=300)
    yes = submit(sim, job_sh, "--requeue", "--job-name=dj-RQYES")
    no = submit(sim, job_sh, "--no-requeue", "--job-name=dj-RQNO")
    sim.advance(3)
    failed_at = sim.controller.now
    sim.controller.node_failure("vm")
    assert (show(sim, no)["JobState"], show(sim, no)["Reason"]) == ("NODE_FAIL", "NodeDown")
    requeued = show(sim, yes)
    assert (requeued["JobState"], requeued["Reason"], requeued["Restarts"]) == (
        "PENDING",
        "BeginTime",
        "1",
    )
    assert requeued["SubmitTime"] == _iso(failed_at)
    assert requeued["EligibleTime"] == _iso(failed_at + 121)


# -- §7.7 holds through StartTime -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("2030-01-01T12:34:56", "2030-01-01T12:34:56"),
        ("2038-01-19T03:14:08", "2038-01-19T03:14:08"),
        ("9999-12-31T23:59:59", "9999-12-31T23:59:59"),
        ("uts2111407759", "2036-11-27T14:09:19"),
        ("uts4294967293", "2106-02-07T06:28:13"),
        ("uts4294967294", "None"),
        ("uts4294967295", "Unknown"),
        ("uts4294967296", "2106-02-07T06:28:16"),
        ("uts253402300800", "10000-01-01T00:00:00"),
    ],
)
def test_start_time_values(job_sh: str, value: str, shown: str) -> None:
    sim = lab()
    job = submit(sim, job_sh, "--begin=now+1hour", "--job-name=dj-HOLDD", seconds="30")
    assert run(sim, "scontrol", "update", f"jobid={job}", f"StartTime={value}") == ("", 0)
    assert show(sim, job)["EligibleTime"] == shown


@pytest.mark.parametrize(
    ("value", "pos"), [("10000-01-01T00:00:00", 2), ("uts0", 0), ("uts999999", 0)]
)
def test_invalid_start_times_change_nothing(job_sh: str, value: str, pos: int) -> None:
    sim = lab()
    job = submit(sim, job_sh, "--begin=now+1hour", "--job-name=dj-HOLDD", seconds="30")
    before = show(sim, job)
    assert run(sim, "scontrol", "update", f"jobid={job}", f"StartTime={value}") == (
        f"Invalid time specification (pos={pos}): {value}\nNo changes specified\n",
        1,
    )
    assert show(sim, job) == before


def test_a_start_time_in_the_past_reads_back_as_the_submit_time(job_sh: str) -> None:
    sim = lab()
    job = submit(sim, job_sh, "--begin=now+1hour", "--job-name=dj-HOLDD", seconds="30")
    submitted = show(sim, job)["SubmitTime"]
    sim.advance(10)
    assert run(sim, "scontrol", "update", f"jobid={job}", "StartTime=2026-01-01T00:00:00") == (
        "",
        0,
    )
    assert show(sim, job)["EligibleTime"] == submitted
    sim.advance(2)
    assert show(sim, job)["JobState"] == "RUNNING"


def test_start_time_of_a_running_job_is_refused(job_sh: str) -> None:
    sim = lab()
    job = submit(sim, job_sh, "--job-name=dj-HOLDD", seconds="30")
    sim.advance(2)
    assert run(sim, "scontrol", "update", f"jobid={job}", "StartTime=2100-01-01T00:00:00") == (
        f"Job is no longer pending execution for job {job}\n",
        1,
    )


def test_a_far_start_time_holds_and_start_time_now_releases(job_sh: str) -> None:
    """The dispatch hold: StartTime=uts<submit + HoldBase + k>, read back from EligibleTime;
    release with StartTime=now; the job then runs."""
    sim = lab()
    job = submit(sim, job_sh, "--begin=now+1hour", "--job-name=dj-HOLDE", seconds="30")
    submit_epoch = sim.job(job).submit_time
    target = submit_epoch + 315_576_000 + 7
    assert run(sim, "scontrol", "update", f"JobId={job}", f"StartTime=uts{target}") == ("", 0)
    assert sim.job(job).begin_time == target
    assert show(sim, job)["Reason"] == "None"  # just after an update
    sim.advance(60)
    assert show(sim, job)["Reason"] == "BeginTime"
    assert run(sim, "scontrol", "update", f"JobId={job}", "StartTime=now") == ("", 0)
    released = show(sim, job)
    assert released["EligibleTime"] == _iso(sim.controller.now)
    sim.advance(3)
    assert show(sim, job)["JobState"] == "RUNNING"


def test_priority_holds_and_start_time_holds_are_independent(job_sh: str) -> None:
    """§7.7 job 11."""
    sim = lab()
    job = submit(sim, job_sh, "--hold", "--job-name=dj-HOLDH", seconds="30")
    assert (show(sim, job)["Reason"], show(sim, job)["Priority"]) == ("JobHeldUser", "0")
    run(sim, "scontrol", "update", f"jobid={job}", "StartTime=2100-01-01T00:00:00")
    assert show(sim, job)["Reason"] == "JobHeldUser"
    assert run(sim, "scontrol", "release", str(job)) == ("", 0)
    assert show(sim, job)["Reason"] == "BeginTime"
    assert run(sim, "scontrol", "hold", str(job)) == ("", 0)
    assert show(sim, job)["Reason"] == "JobHeldAdmin"
    assert run(sim, "scontrol", "uhold", str(job)) == ("", 0)
    assert show(sim, job)["Reason"] == "JobHeldUser"
    run(sim, "scontrol", "update", f"jobid={job}", "StartTime=now")
    assert show(sim, job)["Reason"] == "JobHeldUser"
    run(sim, "scontrol", "release", str(job))
    sim.advance(2)
    assert show(sim, job)["JobState"] == "RUNNING"
    assert run(sim, "scontrol", "hold", str(job)) == ("", 0)  # on a running job: rc 0
    running = show(sim, job)
    assert (running["JobState"], running["Reason"], running["Priority"]) == (
        "RUNNING",
        "JobHeldAdmin",
        "0",
    )


# -- §7.8 comments, §7.5 ids, §7.11 unknown ids -------------------------------------------------


def test_comment_rewrite_and_after_the_end(job_sh: str) -> None:
    sim = lab()
    job = submit(sim, job_sh, "--job-name=dj-CMT", "--comment=dispatch:s=1;a=0", seconds="4")
    sim.advance(2)
    assert run(sim, "scontrol", "update", f"jobid={job}", "Comment=dispatch:s=1;a=1") == ("", 0)
    assert show(sim, job)["Comment"] == "dispatch:s=1;a=1"
    sim.finish(job)
    assert run(sim, "scontrol", "update", f"jobid={job}", "Comment=after-end") == (
        f"Job has already finished for job {job}\n",
        1,
    )
    assert sim.controller.records(job)[-1].comment == "dispatch:s=1;a=1"


def test_comment_length_limit(job_sh: str) -> None:
    sim = lab()
    assert run(sim, "sbatch", "--parsable", "--hold", "--comment=" + "c" * 1024, job_sh)[1] == 0
    assert run(sim, "sbatch", "--parsable", "--hold", "--comment=" + "c" * 1025, job_sh) == (
        "sbatch: error: Batch job submission failed: "
        "Pathname of a file, directory or other parameter too long\n",
        1,
    )


def test_comment_reaches_accounting_only_at_the_end_and_only_with_the_flag(job_sh: str) -> None:
    for flag in (True, False):
        sim = lab(job_comment=flag)
        job = submit(sim, job_sh, "--comment=dispatch:s=2;a=1", seconds="3")
        sim.advance(2)
        assert sim.controller.records(job)[-1].comment is None
        sim.finish(job)
        assert sim.controller.records(job)[-1].comment == ("dispatch:s=2;a=1" if flag else None)


def test_ids_wrap_before_max_job_id_and_skip_ids_in_memory(job_sh: str) -> None:
    """§7.5 with MaxJobId=5: ids 1..4; the wrap skips the held job's id."""
    sim = lab(max_job_id=5)
    first = submit(sim, job_sh, "--job-name=dj-A", seconds="1")
    sim.advance(2)
    sim.finish(first)
    held = submit(sim, job_sh, "--hold", "--job-name=dj-HELD", seconds="5")
    x = submit(sim, job_sh, "--job-name=dj-X", seconds="1")
    y = submit(sim, job_sh, "--job-name=dj-Y", seconds="1")
    assert (held, x, y) == (2, 3, 4)
    sim.advance(2)
    sim.finish(x)
    sim.finish(y)
    sim.advance(3)
    assert submit(sim, job_sh, "--job-name=dj-Z") == 1
    assert submit(sim, job_sh, "--job-name=dj-W") == 3


def test_a_full_id_space_makes_sbatch_retry_until_an_id_is_purged(job_sh: str) -> None:
    """§7.5 with MaxJobId=2: the second sbatch retries (1, 2, 3, ... s) until job A is purged."""
    sim = lab(max_job_id=2)
    first = submit(sim, job_sh, "--job-name=dj-REUSEA", "--comment=first", seconds="5")
    sim.advance(2)
    sim.finish(first)
    ended = sim.controller.now
    second = sim.run(["sbatch", "--parsable", "--job-name=dj-REUSEB", job_sh, "5"])
    assert second.stderr == (
        "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n"
    )
    assert (second.stdout, second.returncode) == ("1\n", 0)
    assert sim.controller.now == ended + 3  # slept 1 s, then 2 s; job A left after MinJobAge
    started = sim.controller.now
    done = sim.run(["sbatch", "--parsable", "--job-name=dj-REUSEC", job_sh, "5"])
    assert done.stderr == (
        "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n"
        "sbatch: error: Batch job submission failed: Resource temporarily unavailable\n"
    )
    assert done.returncode == 1
    assert sim.controller.now == started + sum(range(1, 16))  # 15 retries, up to 120 s


def test_unknown_ids(job_sh: str) -> None:
    """§7.11: scontrol on an id no longer in memory."""
    sim = lab()
    assert run(sim, "scontrol", "show", "job", "19") == (
        "slurm_load_jobs error: Invalid job id specified\n",
        1,
    )
    assert run(sim, "scontrol", "update", "jobid=19", "StartTime=now") == (
        "Invalid job id specified for job 19\n",
        1,
    )
    assert run(sim, "scontrol", "requeue", "19") == ("Invalid job id specified for job 19\n", 1)
    for verb in ("hold", "release"):
        assert run(sim, "scontrol", verb, "19") == (
            "Invalid job id specified for job 19\nslurm_suspend error: Invalid job id specified\n",
            1,
        )


def test_show_config_reports_the_knobs_a_preflight_reads() -> None:
    out, rc = run(lab(job_comment=False), "scontrol", "show", "config")
    assert rc == 0
    assert "AccountingStoreFlags    = (null)\n" in out
    assert "MaxJobId                = 20\n" in out
    assert "JobRequeue              = 1\n" in out
    out, _ = run(lab(), "scontrol", "show", "config")
    assert "AccountingStoreFlags    = job_comment\n" in out


def test_sbatch_errors() -> None:
    sim = lab()
    assert run(sim, "sbatch", "--bogus") == (  # exit(-1) (fidelity scenario bad-input)
        "sbatch: unrecognized option '--bogus'\nTry \"sbatch --help\" for more information\n",
        255,
    )
    assert run(sim, "sbatch", "/nonexistent/job.sh") == (
        "sbatch: error: Unable to open file /nonexistent/job.sh\n",
        1,
    )
    assert run(sim, "sbatch", stdin="echo no shebang\n")[1] == 1
    assert run(sim, "sbatch", "--parsable", stdin="#!/bin/sh\ntrue\n") == ("1\n", 0)
    assert run(sim, "sbatch", stdin="#!/bin/sh\ntrue\n") == ("Submitted batch job 2\n", 0)


def test_sbatch_directives_and_command_line() -> None:
    sim = lab()
    script = "#!/bin/sh\n#SBATCH --job-name=from-script\n#SBATCH -N 2\n#SBATCH --comment=c\ntrue\n"
    out, rc = run(sim, "sbatch", "--parsable", "-J", "from-cli", stdin=script)
    assert rc == 1 and "Node count specification invalid" in out  # the lab has one node
    sim = lab(nodes=("n1", "n2"))
    out, rc = run(sim, "sbatch", "--parsable", "-J", "from-cli", stdin=script)
    fields = show(sim, int(out))
    assert (fields["JobName"], fields["NumNodes"], fields["Comment"]) == ("from-cli", "2", "c")


def _iso(epoch: int) -> str:
    from simulators.slurm.timefmt import format_time

    return format_time(epoch)
