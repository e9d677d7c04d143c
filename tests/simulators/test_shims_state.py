"""The shims' state: the server's cluster in memory is exactly what a replay of the trace gives,
after any calls; a crash (a killed server, a torn last line) loses nothing that was answered;
the server restarts on its own when the trace changes under it; a call does not replay the
history; ``--execute`` runs the scripts once and replays their outcomes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulators.slurm import SlurmSim, shims
from simulators.slurm.replay import rebuild, replay
from simulators.slurm.shim_client import stop
from simulators.slurm.shims import STATE_FILE, Server
from simulators.slurm.trace import load

SCRIPT = "#!/bin/sh\nsleep 600\n"


def install(state: Path, bin_dir: Path, *options: str) -> None:
    argv = ["install", "--state-dir", str(state), "--bin-dir", str(bin_dir), *options]
    assert shims.main(argv) == 0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    install(state, bin_dir, "--max-job-id", "30", "--min-job-age", "20", "--cpus-per-node", "4")
    yield state, bin_dir
    stop(str(state))


def shell(bin_dir: Path, script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(cwd)},
        timeout=60,
        check=False,
    )


def slurm(program: str, *args: str, stdin: str | None = None, cwd: str = "/") -> dict[str, Any]:
    message: dict[str, Any] = {
        "kind": "slurm",
        "program": program,
        "args": list(args),
        "env": {"PATH": "/bin", "SECRET": "x"},
        "cwd": cwd,
    }
    if stdin is not None:
        message["stdin"] = stdin
    return message


def manage(op: str, **args: Any) -> dict[str, Any]:
    return {"kind": "manage", "op": op, **args}


def random_request(rng: random.Random) -> dict[str, Any]:
    """One call a program or a test might make, any of them, right or wrong."""
    job = str(rng.randint(1, 12))
    choice = rng.randrange(16)
    if choice < 4:
        options = rng.sample(["--hold", "--nodes=2", "--time=1", "--no-requeue", "-J dj-R"], 2)
        return slurm("sbatch", "--parsable", *" ".join(options).split(), stdin=SCRIPT)
    if choice == 4:
        return slurm("squeue", "-t", "all", "-h", "-o", "%i|%j|%T|%r|%V")
    if choice == 5:
        return slurm("scancel", job)
    if choice == 6:
        verb = rng.choice(["hold", "release", "requeue", "requeuehold", "uhold"])
        return slurm("scontrol", verb, job)
    if choice == 7:
        return slurm("sacct", "-j", job, "-X", "-D", "-P", "-n", "-o", "JobID,State,ExitCode")
    if choice == 8:
        return slurm("scontrol", "show", "job", "-o", job)
    if choice in (9, 10):
        return manage("advance", seconds=rng.choice([0.5, 1.0, 7.0, 30.0, 125.0]))
    if choice == 11:
        op = rng.choice(["finish", "fail", "run_for"])
        args: dict[str, Any] = {"job": int(job), "code": rng.choice([0, 3])}
        if op == "fail":
            args["state"] = rng.choice(["FAILED", "NODE_FAIL", "TIMEOUT"])
        if op == "run_for":
            args["seconds"] = rng.randint(0, 90)
        return manage(op, **args)
    if choice == 12:
        name = rng.choice(["preempt", "requeue_underneath", "rename_job", "purge_now"])
        fault_args: dict[str, Any] = {"job_id": int(job)}
        if name == "rename_job":
            fault_args["name"] = f"renamed-{job}"
        return manage("fault", name=name, args=fault_args)
    if choice == 13:
        name = rng.choice(["lose_reply", "timeout_before"])
        return manage("fault", name=name, args={"command": rng.choice(["sbatch", "scancel"])})
    if choice == 14 and rng.random() < 0.3:
        return manage("fault", name="slurmctld_down", args={"seconds": 40.0})
    if choice == 14:
        return manage("fault", name="reuse_id", args={"job_id": int(job), "name": "other"})
    if rng.random() < 0.3:
        return manage("schedule", seed=rng.randrange(100), count=3, within=600.0, kinds=None)
    return manage("advance", seconds=3.0)


def probe(sim: SlurmSim) -> list[str]:
    """What the cluster shows now, and after its pending events have happened."""
    shown = [repr(sim.faults.armed)]
    sim.faults.armed.clear()  # so that the probe's own calls take effect and answer
    for step in (0, 400):
        sim.advance(step)
        for argv in (
            ["squeue", "-t", "all", "-h", "-o", "%i|%j|%T|%r|%V|%S|%Q"],
            ["sacct", "-X", "-D", "-P", "-n", "-o", "JobID,JobName,State,ExitCode,Submit,End"],
            ["scontrol", "show", "job", "-o"],
            ["sbatch", "--parsable"],
        ):
            try:
                done = sim.run(argv, stdin=SCRIPT)
            except subprocess.TimeoutExpired:  # a scheduled fault armed one meanwhile
                shown.append("timed out")
                continue
            shown.append(done.stdout + done.stderr)
    shown.append(f"{sim.clock.now()} {sim.controller._next_id} {sorted(sim.controller.jobs)}")
    return shown


def test_after_random_calls_the_server_state_is_a_full_replay(cluster: tuple[Path, Path]) -> None:
    state, _ = cluster
    server = Server(state)
    rng = random.Random(2024)
    statuses = set()
    for _ in range(400):
        statuses.add(server.handle(random_request(rng))["status"])
    assert {0, 1} <= statuses  # some were refused, and the refusals wrote what they should
    server.close()
    report = replay(state / STATE_FILE)  # every recorded answer, given again by a fresh run
    assert report.ok, str(report)
    full = rebuild(load(state / STATE_FILE))  # the whole trace, reads included
    again = Server(state)  # what the next server starts from (the trace without its reads)
    assert probe(server.sim) == probe(full) == probe(again.sim)
    again.close()


def test_a_call_does_not_replay_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    install(state, tmp_path / "bin")
    server = Server(state)

    def no_replay(*args: object, **kwargs: object) -> None:
        raise AssertionError("a call replayed the trace")

    monkeypatch.setattr(shims, "rebuild", no_replay)
    for i in range(50):
        assert server.handle(slurm("sbatch", "--parsable", stdin=SCRIPT))["stdout"] == f"{i + 1}\n"
        assert server.handle(manage("advance", seconds=1.0))["status"] == 0
        # the history is in the file: memory keeps the header only, whatever its length
        assert len(server.sim.trace.records) == 1
    assert server.offset == (state / STATE_FILE).stat().st_size
    server.close()


def test_refused_requests_leave_no_record(cluster: tuple[Path, Path]) -> None:
    state, _ = cluster
    server = Server(state)
    before = (state / STATE_FILE).read_bytes()
    for request in (
        manage("advance", seconds=1e300),
        manage("finish", job=5, code=0),
        manage("fault", name="lose_reply", args={"command": "operation=nope"}),
        manage("fault", name="purge_now", args={"job_id": 9999}),
        manage("fault", name="preempt", args={"job_id": 3}),
        manage("bogus"),
        {"kind": "bogus"},
    ):
        assert server.handle(request)["status"] in (1, 2)
    assert (state / STATE_FILE).read_bytes() == before
    server.close()


def test_a_killed_server_loses_nothing_that_was_answered(
    cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    state, bin_dir = cluster
    first = shell(bin_dir, "sbatch --parsable -J dj-K <<< '#!/bin/sh'", tmp_path)
    assert first.stdout == "1\n"
    pid = int((state / "server.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    # the next call finds the socket dead, starts a server, which rebuilds from the trace
    again = shell(
        bin_dir, "sbatch --parsable -J dj-K <<< '#!/bin/sh'; squeue -h -o '%i|%j'", tmp_path
    )
    assert (again.stdout, again.stderr) == ("2\n1|dj-K\n2|dj-K\n", "")
    assert int((state / "server.pid").read_text()) != pid
    assert replay(state / STATE_FILE).ok


def test_a_torn_last_line_is_dropped(cluster: tuple[Path, Path], tmp_path: Path) -> None:
    state, bin_dir = cluster
    assert shell(bin_dir, "sbatch --parsable <<< '#!/bin/sh'", tmp_path).stdout == "1\n"
    stop(str(state))
    trace = state / STATE_FILE
    whole = trace.read_bytes()
    with open(trace, "ab") as handle:  # a crash in the middle of writing a call's record
        handle.write(b'{"argv":["sbatch","--parsable"],"env":{},"kind":"call","std')
    done = shell(bin_dir, "sbatch --parsable <<< '#!/bin/sh'", tmp_path)
    assert (done.stdout, done.stderr) == ("2\n", "")
    assert trace.read_bytes().startswith(whole)
    assert b'"std\n' not in trace.read_bytes() and b'"std{' not in trace.read_bytes()
    assert replay(trace).ok
    assert "dropping the torn last line" in (state / "server.log").read_text()


def test_the_server_restarts_when_the_trace_is_replaced(
    cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    state, bin_dir = cluster
    other_state, other_bin = tmp_path / "other", tmp_path / "other-bin"
    install(other_state, other_bin, "--first-job-id", "100")
    assert shell(other_bin, "sbatch --parsable <<< '#!/bin/sh'", tmp_path).stdout == "100\n"
    stop(str(other_state))
    assert shell(bin_dir, "sbatch --parsable <<< '#!/bin/sh'", tmp_path).stdout == "1\n"
    (state / STATE_FILE).write_bytes((other_state / STATE_FILE).read_bytes())  # a server runs
    done = shell(bin_dir, "squeue -h -o %i", tmp_path)
    assert (done.stdout, done.stderr) == ("100\n", "")
    assert "restarting" in (state / "server.log").read_text()


def test_reset_replaces_the_cluster_under_a_running_server(
    cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    state, bin_dir = cluster
    assert shell(bin_dir, "sbatch --parsable <<< '#!/bin/sh'", tmp_path).stdout == "1\n"
    install(state, bin_dir, "--reset", "--first-job-id", "7")
    done = shell(bin_dir, "squeue -h -o %i; sbatch --parsable <<< '#!/bin/sh'", tmp_path)
    assert (done.stdout, done.stderr) == ("7\n", "")


def test_install_prints_the_path_line_and_says_scripts_do_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    install(state, bin_dir)
    try:
        _path_line(state, bin_dir, tmp_path, capsys)
    finally:
        stop(str(state))


def _path_line(
    state: Path, bin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = capsys.readouterr()
    assert out == f'export PATH={bin_dir}:"$PATH"\n'
    assert err == (
        f"dispatch-slurm-shims: a simulated cluster in {state}: nodes n1,n2, 2 CPUs each; "
        "batch scripts are not run (see --execute)\n"
    )
    done = shell(
        bin_dir,
        f'eval "$({_ctl()} install --state-dir {state} --bin-dir {bin_dir} 2>/dev/null)"; command -v sbatch',
        tmp_path,
    )
    assert done.stdout == f"{bin_dir}/sbatch\n"
    two = shell(bin_dir, "sbatch --parsable --nodes=2 <<< '#!/bin/sh'", tmp_path)
    assert (two.stdout, two.stderr, two.returncode) == ("1\n", "", 0)


def _ctl() -> str:
    import shlex
    import sys

    root = Path(__file__).resolve().parents[2]
    return f"PYTHONPATH={shlex.quote(str(root))} {shlex.quote(sys.executable)} -m simulators.slurm.shims"


def test_help_documents_every_install_option_and_the_execute_switch() -> None:
    text = shims._parser()._subparsers._group_actions[0].choices["install"].format_help()  # type: ignore[union-attr]
    from dataclasses import fields

    from simulators.slurm.config import SlurmConfig

    for item in fields(SlurmConfig):
        assert f"--{item.name.replace('_', '-')}" in text, item.name
    for option in ("--seed", "--start", "--execute", "--execute-timeout", "--idle-exit", "--reset"):
        assert option in text
    assert "Batch scripts are not executed unless --execute is given" in text
    top = shims._parser().format_help()
    assert "Batch scripts are NOT executed unless the cluster is installed with --execute" in top
    assert "Exit statuses: 0 done; 1" in top


# -- execute mode ------------------------------------------------------------------------------

JOB = """#!/bin/sh
#SBATCH --job-name=dj-EXEC
echo "ran $SLURM_JOB_ID on $SLURM_JOB_NODELIST" >> ran.txt
exit 3
"""


def test_execute_runs_each_script_once_and_replays_its_outcome(tmp_path: Path) -> None:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    install(state, bin_dir, "--execute", "--nodes", "vm")
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.sh").write_text(JOB)
    sd = ["--state-dir", str(state)]
    try:
        assert shell(bin_dir, "sbatch --parsable job.sh", work).stdout == "1\n"
        assert shims.main(["advance", *sd, "5"]) == 0  # it starts, and its script runs
        assert (work / "ran.txt").read_text() == "ran 1 on vm\n"
        listing = shell(
            bin_dir, "squeue -t all -h -o '%i|%T'; sacct -X -n -P -o State,ExitCode", work
        )
        assert listing.stdout == "1|FAILED\nFAILED|3:0\n"
        stop(str(state))
        (work / "ran.txt").unlink()
        again = shell(bin_dir, "squeue -t all -h -o '%i|%T'", work)  # a new server, from the trace
        assert again.stdout == "1|FAILED\n"
        assert not (work / "ran.txt").exists()  # the replay did not run the script again
        records = load(state / STATE_FILE)
        assert [r["exit_code"] for r in records if r["kind"] == "execution"] == [3]
        assert replay(state / STATE_FILE).ok
    finally:
        stop(str(state))


def test_without_execute_no_script_runs(cluster: tuple[Path, Path], tmp_path: Path) -> None:
    _, bin_dir = cluster
    (tmp_path / "job.sh").write_text(JOB)
    assert shell(bin_dir, "sbatch --parsable job.sh", tmp_path).stdout == "1\n"
    assert shims.main(["advance", "--state-dir", str(cluster[0]), "60"]) == 0
    listing = shell(bin_dir, "squeue -t all -h -o '%i|%T'", tmp_path)
    assert listing.stdout == "1|RUNNING\n"
    assert not (tmp_path / "ran.txt").exists()


SIGNALLED = """#!/bin/sh
#SBATCH --signal=B:USR1@60
#SBATCH --time=3
trap 'echo got USR1 >> sig.txt; exit 7' USR1
echo started >> sig.txt
while :; do sleep 0.1; done
"""


def test_execute_delivers_a_signal_calls_later(tmp_path: Path) -> None:
    """The server outlives the call that started the script: a later call's clock signals it."""
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    install(state, bin_dir, "--execute", "--nodes", "1")
    (tmp_path / "job.sh").write_text(SIGNALLED)
    sd = ["--state-dir", str(state)]
    try:
        assert shell(bin_dir, "sbatch --parsable job.sh", tmp_path).stdout == "1\n"
        assert shims.main(["advance", *sd, "2"]) == 0  # it starts, and waits for its signal
        assert shell(bin_dir, "squeue -h -o '%i|%T'", tmp_path).stdout == "1|RUNNING\n"
        assert shims.main(["advance", *sd, "125"]) == 0  # 60 s before its 3-minute limit
        listing = shell(bin_dir, "sacct -X -n -P -o JobID,State,ExitCode", tmp_path)
        assert listing.stdout == "1|FAILED|7:0\n"
        assert (tmp_path / "sig.txt").read_text() == "started\ngot USR1\n"
        assert replay(state / STATE_FILE).ok
    finally:
        stop(str(state))
