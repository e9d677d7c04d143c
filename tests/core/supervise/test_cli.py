"""The host CLI ``dispatch``: submit, status, supervise, release and cancel with a
temporary record, the default record path under the user's data directory, and bad input
(one line on stderr, exit status 2, never a traceback)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from adapters.memory.testing.harness import MemoryHarness
from dispatch_core import JobSpec, VirtualClock
from dispatch_core.record import SqliteRecordStore
from dispatch_core.supervise import Supervisor, cli

SECRET = "Zq9sup3rSecretValue"


def dispatch(
    *args: str, home: Path, record: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DISPATCH_RECORD"}
    env["XDG_DATA_HOME"] = str(home)
    argv = [sys.executable, "-m", "dispatch_core.supervise.cli", *args]
    if record is not None:
        argv[3:3] = []  # the record is given per command below
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_submit_then_status_on_the_default_record(tmp_path: Path) -> None:
    done = dispatch("submit", "--harness", "memory-slurm", "--", "echo", "hi", home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "intent: submission 1, attempt 1" in done.stdout
    assert "terminal: succeeded" in done.stdout
    assert (tmp_path / "dispatch" / "record.sqlite").is_file()
    job = next(line.split()[1] for line in done.stdout.splitlines() if line.startswith("submitted"))
    table = dispatch("status", home=tmp_path)
    assert table.returncode == 0, table.stderr
    head, row = table.stdout.splitlines()
    assert head.split()[:5] == ["JOB", "STATE", "CAUSE", "SUB", "ATTEMPT"]
    assert row.split()[:5] == [job, "succeeded", "none", "1", "1"]
    one = dispatch("status", job, "--json", home=tmp_path)
    assert one.returncode == 0
    data = json.loads(one.stdout)
    assert (data["job"], data["state"], data["finished"]) == (job, "succeeded", True)
    assert data["identity_weakened"] == ""


def test_submit_on_slurm_sim_with_a_toml_policy_and_a_seed(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rules]]\nkind = "resubmit"\nbudget = 3\n')
    record = tmp_path / "r.sqlite"
    done = dispatch(
        "submit", "--harness", "slurm-sim", "--policy", str(policy), "--record", str(record),
        "--seed", "4", "--env", f"API_TOKEN={SECRET}", "--secret-env", "API_TOKEN",
        "--", "sh", "-c", f"curl https://bob:{SECRET}@example.org/x",
        home=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "resubmit (rule 0) on exit_code" in done.stdout  # seed 4 fails the first execution
    assert "intent: submission 2, attempt 2" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("r.sqlite"))
    assert SECRET.encode() not in stored and b"example.org" in stored


def test_supervise_finishes_what_a_submit_left(tmp_path: Path) -> None:
    record = tmp_path / "r.sqlite"
    left = dispatch(
        "submit", "--harness", "memory-slurm", "--record", str(record), "--max-steps", "1",
        "--", "true", home=tmp_path,
    )  # fmt: skip
    assert left.returncode == 3, left.stderr  # not finished
    # An in-process cluster ends with its process: the next one cannot read the object, so its
    # end is evidence lost, never a success.
    done = dispatch(
        "supervise", "--harness", "memory-slurm", "--record", str(record), home=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert "terminal: failed/evidence_lost" in done.stdout
    again = dispatch(
        "supervise", "--harness", "memory-slurm", "--record", str(record), home=tmp_path
    )
    assert again.returncode == 0 and "no unfinished jobs" in again.stdout


def _held(record: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A job of memory-slurm held for a person after a failed execution (seed 1 fails the
    first execution the in-process scheduler runs)."""
    policy = record.parent / "hold.json"
    policy.write_text('{"rules": [{"kind": "hold"}]}')
    argv = ["submit", "--harness", "memory-slurm", "--record", str(record), "--seed", "1"]
    assert cli.main([*argv, "--policy", str(policy), "--", "true"]) == 3  # waits for a person
    out = capsys.readouterr().out
    assert "hold (rule 0) on exit_code" in out
    return next(line.split()[1] for line in out.splitlines() if line.startswith("submitted"))


def test_a_person_releases_a_held_job_and_it_runs_as_its_next_submission(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "r.sqlite"
    job = _held(record, capsys)
    argv = ["release", job, "--harness", "memory-slurm", "--record", str(record)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"released {job}" in out
    assert "release on exit_code: released by a person" in out
    assert "intent: submission 2, attempt 2" in out and "terminal: succeeded" in out
    # Released once: a second release is refused, one line, exit 2.
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == f"dispatch: job {job} is not held for a person\n"


def test_a_person_cancels_a_held_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = tmp_path / "r.sqlite"
    job = _held(record, capsys)
    assert cli.main(["cancel", job, "--harness", "memory-slurm", "--record", str(record)]) == 1
    out = capsys.readouterr().out
    assert f"cancelled {job}" in out and "terminal: cancelled/cancelled" in out
    assert cli.main(["status", job, "--json", "--record", str(record)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["state"], data["finished"]) == ("cancelled", True)
    argv = ["release", job, "--harness", "memory-slurm", "--record", str(record)]
    assert cli.main(argv) == 2  # a cancelled job is held no more


def test_a_harness_given_as_module_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    harness = "adapters.memory.testing.harness:memory_slurm"
    record = str(tmp_path / "r.sqlite")
    assert cli.main(["submit", "--harness", harness, "--record", record, "--", "true"]) == 0
    assert "terminal: succeeded" in capsys.readouterr().out


def test_bad_input_through_a_subprocess_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = dispatch("submit", "--harness", "no-such-harness", "--", "true", home=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "no harness named 'no-such-harness' (known: " in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["submit", "--harness", "memory-slurm"],
        ["submit", "--harness", "memory-slurm", "--"],
        ["submit", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--nodes", "0", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--nodes", "two", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--env", "NOEQUALS", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--env", "DISPATCH_JOB=1", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--secret-env", "UNSET", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--policy", "MISSING", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--policy", "BADJSON", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--policy", "BADRULE", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--policy", "BINARY", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--policy", "REQUEUE", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--time-bound", "-1", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--detach", "--", "true"],
        ["status", "not-a-job"],
        ["status", "01ARZ3NDEKTSV4RRFFQ69G5FAV"],
        ["supervise"],
        ["status", "--record", "DIR"],
        ["status", "--record", ""],
        ["submit", "--harness", "memory-slurm", "--record", "", "--", "true"],
        ["submit", "--harness", "memory-slurm", "--max-steps", "-1", "--", "true"],
        ["supervise", "--harness", "memory-slurm", "--max-steps", "-1"],
        ["submit", "--harness", "memory-slurm", "--seed", "-1", "--", "true"],
        ["supervise", "--harness", "memory-slurm", "--seed", "-3"],
        ["submit", "--harness", "memory-slurm", "--policy", "YESCHECKPOINT", "--", "true"],
        ["release"],
        ["release", "not-a-job", "--harness", "memory-slurm"],
        ["release", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--harness", "memory-slurm"],
        ["release", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--harness", "memory-slurm", "--seed", "-1"],
        ["cancel", "01ARZ3NDEKTSV4RRFFQ69G5FAV"],
        ["cancel", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--harness", "memory-slurm"],
        ["submit", "--harness", ":memory_slurm", "--", "true"],
        ["submit", "--harness", "no.such.module:harness", "--", "true"],
        ["submit", "--harness", "adapters.memory.testing.harness:nosuch", "--", "true"],
        ["submit", "--harness", "os:getcwd", "--", "true"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("DISPATCH_RECORD", raising=False)
    files = {
        "MISSING": tmp_path / "missing.json",
        "BADJSON": tmp_path / "bad.json",
        "BADRULE": tmp_path / "rule.json",
        "REQUEUE": tmp_path / "requeue.json",
        "DIR": tmp_path,
        "BINARY": tmp_path / "binary.json",
        "YESCHECKPOINT": tmp_path / "checkpoint.json",
    }
    files["BINARY"].write_bytes(b"\xff\xfe{}")
    files["BADJSON"].write_text("{rules: ")
    files["BADRULE"].write_text('{"rules": [{"kind": "teleport"}]}')
    files["REQUEUE"].write_text('{"rules": [{"kind": "requeue"}]}')  # memory cannot requeue
    files["YESCHECKPOINT"].write_text('{"shared_checkpoint": "yes"}')  # a boolean, not text
    argv = [str(files[a]) if a in files else a for a in argv]
    assert cli.main(argv) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dispatch: "), out.err
    assert "Traceback" not in out.err


@pytest.mark.parametrize("command", ["submit", "status", "supervise", "release", "cancel"])
def test_help_answers_every_option(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    sub = next(
        a
        for a in cli.parser()._subparsers._group_actions[0].choices.items()
        if a[0] == command  # type: ignore[union-attr]
    )[1]
    for action in sub._actions:
        for option in action.option_strings:
            assert option in text
        if action.help is not None and action.option_strings:
            assert action.help.split()[0] in text


def test_status_of_a_record_that_is_not_there_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo" / "record.sqlite"
    assert cli.main(["status", "--record", str(missing)]) == 0
    assert capsys.readouterr().out == f"no jobs in the record (there is none at {missing})\n"
    assert cli.main(["status", "--json", "--record", str(missing)]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert cli.main(["status", "--record", str(missing), "01ARZ3NDEKTSV4RRFFQ69G5FAV"]) == 2
    assert "there is no record at" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_closed_stdout_does_not_cut_the_supervision_short(tmp_path: Path) -> None:
    """``dispatch submit ... | head -0``: the job is still supervised to its end, and its
    status (not 'bad input') is the exit status."""
    record = tmp_path / "record.sqlite"
    argv = [sys.executable, "-m", "dispatch_core.supervise.cli", "submit", "--harness"]
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [*argv, "memory-slurm", "--record", str(record), "--", "true"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, "")
    assert cli.main(["status", "--record", str(record)]) == 0


class ClosingHarness(MemoryHarness):
    """memory-slurm that counts its closes (kubeflow-sim's close stops its HTTP server: left to
    the interpreter's exit, the server's shutdown waited for a thread already gone, for ever)."""

    closed: ClassVar[list[str]] = []

    def close(self) -> None:
        ClosingHarness.closed.append("closed")


def closing_harness() -> ClosingHarness:
    return ClosingHarness("slurm")


@pytest.mark.parametrize(
    "argv",
    [
        ["submit", "--", "true"],
        ["submit", "--policy", "REQUEUE", "--", "true"],  # refused once the harness is made
        ["supervise"],
    ],
)
def test_the_cli_closes_an_in_process_harness(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ClosingHarness.closed = []
    requeue = tmp_path / "requeue.json"
    requeue.write_text('{"rules": [{"kind": "requeue"}]}')
    argv = [str(requeue) if a == "REQUEUE" else a for a in argv]
    harness = ["--harness", f"{__name__}:closing_harness", "--record", str(tmp_path / "r")]
    cli.main([argv[0], *harness, *argv[1:]])
    assert ClosingHarness.closed == ["closed"], capsys.readouterr()


def test_supervise_takes_over_the_job_of_a_killed_dispatch_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``dispatch submit`` killed mid-supervision leaves its lease in the record; every
    process's virtual clock starts at one instant, so that lease looked live to every later
    process and ``dispatch supervise`` left the job alone for ever (exit 3, no word why).
    A lease whose owner is a process of this host that is gone is released; a live one's
    is not."""
    record = tmp_path / "r.sqlite"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    owners = {
        "gone": f"{socket.gethostname()}:{int(gone.stdout)}:dead0001",
        "alive": f"{socket.gethostname()}:{os.getppid()}:live0001",
    }
    jobs = {}
    for name, owner in owners.items():
        backend = MemoryHarness("slurm").new_backend()
        store = SqliteRecordStore(str(record))
        jobs[name] = Supervisor(backend, store, backend.clock, owner=owner).submit(
            JobSpec(command=("true",))
        )
        store.close()  # the process dies: no close(), its lease stays
    assert cli.main(["supervise", "--harness", "memory-slurm", "--record", str(record)]) == 1
    out = capsys.readouterr().out
    assert f"{jobs['gone']}: released the lease of {owners['gone']}" in out
    assert f"{jobs['alive']}: left alone, supervised by {owners['alive']}" in out
    # its in-process cluster died with it: the object is gone, evidence lost (never success)
    assert cli.main(["status", "--json", "--record", str(record), str(jobs["gone"])]) == 1
    assert json.loads(capsys.readouterr().out)["cause"] == "evidence_lost"
    assert cli.main(["status", "--json", "--record", str(record), str(jobs["alive"])]) == 3
    assert json.loads(capsys.readouterr().out)["finished"] is False


class Unreachable(MemoryHarness):
    """A harness whose cluster is not there, as kubeflow-remote without a kubeconfig or
    slurm-local without sbatch: its own exception (conformance's CannotInject), not the kit's."""

    def new_backend(self) -> Any:
        raise LookupError("harness cannot inject a real Slurm: no sbatch on PATH")


def unreachable() -> Unreachable:
    return Unreachable("slurm")


@pytest.mark.parametrize("command", [["submit", "--", "true"], ["supervise"]])
def test_a_harness_without_its_cluster_is_one_line_and_exit_2(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    harness = ["--harness", f"{__name__}:unreachable", "--record", str(tmp_path / "r")]
    assert cli.main([command[0], *harness, *command[1:]]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"dispatch: harness {__name__}:unreachable has no backend to give: harness cannot "
        "inject a real Slurm: no sbatch on PATH\n"
    )


def test_supervise_says_it_left_another_clusters_job_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dispatch supervise --harness slurm-sim`` on a record whose unfinished job is
    memory-slurm's showed it queued, exit 3, and no word that it was not its to supervise."""
    record = str(tmp_path / "r.sqlite")
    argv = ["--record", record, "--max-steps", "0"]
    assert cli.main(["submit", "--harness", "memory-slurm", *argv, "--", "true"]) == 3
    job = next(line.split()[1] for line in capsys.readouterr().out.splitlines()
               if line.startswith("submitted"))  # fmt: skip
    assert cli.main(["supervise", "--harness", "slurm-sim", "--record", record]) == 3
    out = capsys.readouterr().out
    assert f"{job}: left alone, it is a job of memory-slurm, not of lab" in out


def test_a_running_dispatch_process_keeps_its_job_whatever_the_clocks_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every ``dispatch`` process has its own virtual clock: one whose clock ran ahead (its
    backoffs) saw the lease of another, still running, as expired, took its job and found its
    object lost (seen with ten ``dispatch submit`` at once on one record). A lease a running
    process of this host holds is never taken."""
    record = tmp_path / "r.sqlite"
    owner = f"{socket.gethostname()}:{os.getppid()}:live0002"
    backend = MemoryHarness("slurm").new_backend()
    earlier = VirtualClock(backend.clock.now() - 1_000)  # its lease expired on our clock
    store = SqliteRecordStore(str(record))
    job = Supervisor(backend, store, earlier, owner=owner).submit(JobSpec(command=("true",)))
    store.close()
    assert cli.main(["supervise", "--harness", "memory-slurm", "--record", str(record)]) == 3
    assert f"{job}: left alone, supervised by {owner}" in capsys.readouterr().out
    assert cli.main(["status", "--json", "--record", str(record), str(job)]) == 3
    status = json.loads(capsys.readouterr().out)
    assert (status["state"], status["cause"], status["finished"]) == ("queued", "none", False)
