"""scancel against the real Slurm 22.05.8 transcripts (slurm-lab §7.10, §7.11) and its source
(``src/scancel`` at slurm-22-05-8-1): ids, ``--name``, filters, signals, errors, exit codes."""

from __future__ import annotations

import pytest

from dispatch_core import VirtualClock
from simulators.slurm import SlurmConfig, SlurmSim

LAB_EPOCH = 1_796_046_327
NAME = "dj-ABCDEFGHIJKLMNOPQRSTUVWXYZ"
JOB_SH = "#!/bin/bash\n# the lab's job.sh\nsleep $1\n"
PLUGINS = [
    "scancel: select/cons_tres: common_init: select/cons_tres loaded",
    "scancel: select/cray_aries: init: Cray/Aries node selection plugin loaded",
    "scancel: select/linear: init: Linear node selection plugin loaded with argument 4",
    "scancel: select/cons_res: common_init: select/cons_res loaded",
]


def lab(**config: object) -> SlurmSim:
    settings = {"max_job_id": 20, "min_job_age": 2, **config}
    return SlurmSim(SlurmConfig(**settings), clock=VirtualClock(LAB_EPOCH))  # type: ignore[arg-type]


def run(sim: SlurmSim, *argv: str, stdin: str | None = None) -> tuple[str, int]:
    """stdout and stderr, as ``2>&1`` shows them (scancel writes only one of them at a time)."""
    done = sim.run(list(argv), stdin=stdin)
    return done.stdout + done.stderr, done.returncode


def submit(sim: SlurmSim, *options: str) -> int:
    out, rc = run(sim, "sbatch", "--parsable", *options, stdin=JOB_SH)
    assert rc == 0, out
    return int(out)


def state(sim: SlurmSim, job: int) -> str:
    out, rc = run(sim, "scontrol", "show", "job", "-o", str(job))
    assert rc == 0, out
    return dict(f.split("=", 1) for f in out.split() if "=" in f)["JobState"]


@pytest.fixture
def cluster() -> SlurmSim:
    """§7.10's cluster: job 14 (dj-SIGNAL) running, 15 and 16 held, both named NAME."""
    sim = lab()
    sim.controller.set_next_job_id(14)
    assert submit(sim, "--job-name=dj-SIGNAL") == 14
    sim.advance(3)
    assert state(sim, 14) == "RUNNING"
    assert submit(sim, "--hold", f"--job-name={NAME}") == 15
    assert submit(sim, "--hold", f"--job-name={NAME}") == 16
    return sim


# -- §7.10, verbatim ---------------------------------------------------------------------------


def test_lab_7_10_scancel_by_name_and_by_id(cluster: SlurmSim) -> None:
    sim = cluster
    listing = ("squeue", f"--name={NAME}", "-h", "-o", "%i|%j|%T")
    both = f"16|{NAME}|PENDING\n15|{NAME}|PENDING\n"
    assert run(sim, *listing) == (both, 0)
    # wrong name + id; lower-case name + id: nothing cancelled, silent, rc 0
    assert run(sim, "scancel", "--name=dj-OTHER", "15") == ("", 0)
    assert run(sim, "scancel", "--name=dj-abcdefghijklmnopqrstuvwxyz", "15") == ("", 0)
    assert run(sim, *listing) == (both, 0)
    # right name + id
    assert run(sim, "scancel", f"--name={NAME}", "15") == ("", 0)
    assert run(sim, *listing) == (f"16|{NAME}|PENDING\n", 0)
    # same again: the job is finished (and, MinJobAge later, gone)
    invalid = "scancel: error: Kill job error on job id 15: Invalid job id specified\n"
    assert run(sim, "scancel", f"--name={NAME}", "15") == (invalid, 1)
    assert run(sim, "scancel", "15") == ("", 0)
    sim.advance(5)
    assert run(sim, "scancel", f"--name={NAME}", "15") == (invalid, 1)
    assert run(sim, "scancel", "15") == ("", 0)
    assert run(sim, "scancel", "19") == ("", 0)
    # name only: every job with that exact name
    assert run(sim, "scancel", f"--name={NAME}") == ("", 0)
    assert run(sim, *listing) == ("", 0)
    out, rc = run(sim, "scancel", "-v", f"--name={NAME}", "16")
    assert out.splitlines()[:5] == [
        *PLUGINS,
        "scancel: error: Kill job error on job id 16: Invalid job id specified",
    ]
    assert rc == 1
    # the second block of §7.10, run right after
    assert run(sim, "scancel", "19") == ("", 0)
    out, rc = run(sim, "scancel", "-v", "19")
    assert (out, rc) == (
        "scancel: Terminating job 19\n"
        "scancel: error: Kill job error on job id 19: Invalid job id specified\n",
        0,
    )
    assert run(sim, "scancel", "999") == ("", 0)
    out, rc = run(sim, "scancel", "-v", "--name=dj-OTHER", "16")
    assert [line for line in out.splitlines() if "plugin" not in line and "loaded" not in line] == [
        "scancel: error: Kill job error on job id 16: Invalid job id specified",
        "scancel: error: No active jobs match ALL job filters, including: job_name=dj-OTHER ",
    ]
    assert rc == 1
    assert run(sim, "squeue", "-t", "all", "-h", "-o", "%i|%j|%T") == (
        f"16|{NAME}|CANCELLED\n14|dj-SIGNAL|RUNNING\n",
        0,
    )


def test_an_active_job_whose_name_differs_is_left_silently(cluster: SlurmSim) -> None:
    sim = cluster
    assert run(sim, "scancel", "--name=dj-OTHER", "14") == ("", 0)
    out, rc = run(sim, "scancel", "-v", "--name=dj-OTHER", "14")
    assert out == "".join(line + "\n" for line in PLUGINS) + (
        "scancel: error: No active jobs match ALL job filters, including: job_name=dj-OTHER \n"
    )
    assert rc == 0
    assert state(sim, 14) == "RUNNING"


def test_a_finished_id_with_verbose_says_already_done(cluster: SlurmSim) -> None:
    sim = cluster
    assert run(sim, "scancel", "15") == ("", 0)
    assert state(sim, 15) == "CANCELLED"
    assert run(sim, "scancel", "-v", "15") == (
        "scancel: Terminating job 15\n"
        "scancel: error: Kill job error on job id 15: Job/step already completing or completed\n",
        0,
    )


def test_ids_comma_or_space_separated(cluster: SlurmSim) -> None:
    sim = cluster
    assert run(sim, "scancel", "15,16", "14") == ("", 0)
    assert [state(sim, j) for j in (14, 15, 16)] == ["CANCELLED"] * 3
    assert sim.controller.get(15).cancelled_by == 0


def test_quiet_hides_the_invalid_id_but_not_the_status(cluster: SlurmSim) -> None:
    assert run(cluster, "scancel", "-Q", "--name=" + NAME, "19") == ("", 1)


# -- filters -------------------------------------------------------------------------------------


def test_state_filter_cancels_only_pending_jobs(cluster: SlurmSim) -> None:
    sim = cluster
    assert run(sim, "scancel", "--state=PD") == ("", 0)
    assert [state(sim, j) for j in (14, 15, 16)] == ["RUNNING", "CANCELLED", "CANCELLED"]
    out, rc = run(sim, "scancel", "-v", "-t", "SUSPENDED")
    assert out.endswith(
        "scancel: error: No active jobs match ALL job filters, including: state=SUSPENDED \n"
    )
    assert rc == 0


def test_me_and_user_filters(cluster: SlurmSim) -> None:
    sim = cluster
    assert run(sim, "scancel", "--me", "-n", "dj-SIGNAL") == ("", 0)
    assert state(sim, 14) == "CANCELLED"
    assert run(sim, "scancel", "-u", "root", "15") == ("", 0)
    assert state(sim, 15) == "CANCELLED"
    assert run(sim, "scancel", "-u", "nobody-here", "16") == (
        "scancel: error: Invalid user name: nobody-here\n",
        1,
    )
    assert state(sim, 16) == "PENDING"


def test_verbose_lines_of_a_filtered_cancel_pending_first(cluster: SlurmSim) -> None:
    out, rc = run(cluster, "scancel", "-v", "--me")
    assert out.splitlines()[4:] == [
        "scancel: Terminating job 15",
        "scancel: Terminating job 16",
        "scancel: Terminating job 14",
    ]
    assert rc == 0


# -- signals -------------------------------------------------------------------------------------


def test_a_signal_is_delivered_not_a_cancel(cluster: SlurmSim) -> None:
    sim = cluster
    assert run(sim, "scancel", "--signal=USR1", "14") == ("", 0)
    assert run(sim, "scancel", "-b", "-s", "SIGTERM", "14") == ("", 0)
    out, rc = run(sim, "scancel", "-v", "-s", "2", "--full", "14")
    assert out.splitlines()[-1] == "scancel: Signal 2 to full job 14"
    assert rc == 0
    assert state(sim, 14) == "RUNNING"
    now = sim.controller.now
    assert [line for line in sim.controller.log if " signal " in line] == [
        f"t={now} signal 10 14 steps",
        f"t={now} signal 15 14 batch",
        f"t={now} signal 2 14 full",
    ]


def test_a_pending_job_cannot_take_a_signal(cluster: SlurmSim) -> None:
    """slurmctld answers ESLURM_TRANSITION_STATE_NO_UPDATE; scancel retries 10 times, sleeping
    5..14 s, then exits with 2020 % 256."""
    sim = cluster
    before = sim.controller.now
    out, rc = run(sim, "scancel", "-s", "USR1", "15")
    assert out == (
        "scancel: error: Kill job error on job id 15: Job can not be altered now, try again later\n"
    )
    assert rc == 2020 % 256
    assert sim.controller.now == before + sum(range(5, 15))
    assert state(sim, 15) == "PENDING"


def test_batch_kill_ends_the_running_job(cluster: SlurmSim) -> None:
    sim = cluster
    out, rc = run(sim, "scancel", "-v", "--batch", "14")
    assert out.splitlines()[-1] == "scancel: Terminating batch job 14"
    assert rc == 0
    assert state(sim, 14) == "FAILED"


def test_explicit_kill_signal_cancels(cluster: SlurmSim) -> None:
    sim = cluster
    out, rc = run(sim, "scancel", "-v", "-s", "KILL", "14")
    assert (out.splitlines()[-1], rc) == ("scancel: Signal 9 to job 14", 0)
    assert state(sim, 14) == "CANCELLED"


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), "scancel: error: No job identification provided\n"),
        (
            ("--bogus", "15"),
            "scancel: unrecognized option '--bogus'\nTry \"scancel --help\" for more information\n",
        ),
        (
            ("-x", "15"),
            "scancel: invalid option -- 'x'\nTry \"scancel --help\" for more information\n",
        ),
        (("15,abc",), "scancel: error: Invalid job id abc\n"),
        (("0",), "scancel: error: Invalid job id 0\n"),
        (("15.batch",), "scancel: error: Invalid job id 15.batch\n"),
        (("-s", "FOO", "15"), "Unknown job signal: FOO\n"),
        (
            ("-t", "XX", "15"),
            "Invalid job state specified: XX\nValid job states are PENDING, RUNNING, and SUSPENDED\n",
        ),
        (
            ("-M", "elsewhere", "15"),
            "scancel: error: 'elsewhere' can't be reached now, or it is an invalid entry for "
            "--cluster.  Use 'sacctmgr list clusters' to see available clusters.\n",
        ),
    ],
)
def test_refusals(cluster: SlurmSim, argv: tuple[str, ...], expected: str) -> None:
    assert run(cluster, "scancel", *argv) == (expected, 1)
    assert state(cluster, 15) == "PENDING"


def test_version_and_usage(cluster: SlurmSim) -> None:
    assert run(cluster, "scancel", "-V") == ("slurm 22.05.8\n", 0)
    out, rc = run(cluster, "scancel", "--usage")
    assert out.startswith("Usage: scancel [-A account] [--batch]") and rc == 0


def test_slurmctld_unavailable(cluster: SlurmSim) -> None:
    """Without filters the kill RPC fails (exit 1800 % 256); with one, loading the jobs does."""
    sim = cluster
    sim.controller.down_until = sim.controller.now + 60
    assert run(sim, "scancel", "15") == (
        "scancel: error: Kill job error on job id 15: "
        "Unable to contact slurm controller (connect failure)\n",
        1800 % 256,
    )
    assert run(sim, "scancel", "--name=" + NAME, "15") == (
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
        1,
    )
    sim.advance(60)
    assert run(sim, "scancel", "15") == ("", 0)
    assert state(sim, 15) == "CANCELLED"


def test_another_users_job_when_not_root() -> None:
    sim = lab(user="alice", uid=1000)
    own = submit(sim, "--job-name=mine")
    assert run(sim, "scancel", str(own)) == ("", 0)
    sim.advance(5)
    foreign = sim.faults.reuse_id(own, name="theirs")
    assert run(sim, "scancel", str(foreign)) == (
        f"scancel: error: Kill job error on job id {foreign}: Access/permission denied\n",
        2002 % 256,
    )
    assert run(sim, "scancel", "--me") == ("", 0)
    assert state(sim, foreign) in ("PENDING", "RUNNING")


def test_a_job_completing_into_a_requeue_survives(cluster: SlurmSim) -> None:
    sim = cluster
    assert run(sim, "scontrol", "requeue", "14") == ("", 0)
    assert state(sim, 14) == "COMPLETING"
    out, rc = run(sim, "scancel", "-v", "14")
    assert out.splitlines()[-1] == (
        "scancel: error: Kill job error on job id 14: Job/step already completing or completed"
    )
    assert rc == 0
    sim.advance(2)
    assert state(sim, 14) == "PENDING"


def test_interactive_asks_on_stdout_and_reads_stdin(cluster: SlurmSim) -> None:
    sim = cluster
    out, rc = run(sim, "scancel", "-i", "-n", NAME, stdin="n\ny\n")
    prompt = "Cancel job_id={} name=" + NAME + " partition=debug [y/n]? "
    assert (out, rc) == (prompt.format(15) + prompt.format(16), 0)
    assert [state(sim, j) for j in (15, 16)] == ["PENDING", "CANCELLED"]
