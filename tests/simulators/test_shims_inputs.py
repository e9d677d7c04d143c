"""Every bad input to ``dispatch-slurm-shims`` and its shims: one line on stderr naming the
problem, the documented exit status (2 bad usage, 1 refused by the cluster, 3 an unusable state
directory), no traceback, and nothing written: the trace is byte for byte what it was, and the
cluster still answers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulators.slurm import shim_client, shims
from simulators.slurm.shim_client import stop
from simulators.slurm.shims import STATE_FILE

ROOT = Path(__file__).resolve().parents[2]
PROG = "dispatch-slurm-shims"
FAULTS = (
    "requeue_underneath, preempt, node_failure, purge_now, reuse_id, rewrite_comment, "
    "rename_job, timeout_before, lose_reply, slurmctld_down"
)

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """One cluster with a running job 1 and a held job 2, shared by the module's tests."""
    root = tmp_path_factory.mktemp("inputs")
    state, bin_dir = root / "state", root / "bin"
    assert shims.main(["install", "--state-dir", str(state), "--bin-dir", str(bin_dir)]) == 0
    for option in ("--nodes=2", "--hold"):
        done = shell(bin_dir, f"sbatch --parsable {option} <<< '#!/bin/sh'", root)
        assert done.returncode == 0, done.stderr
    assert shims.main(["advance", "--state-dir", str(state), "5"]) == 0
    yield state, bin_dir
    stop(str(state))


def shell(bin_dir: Path, script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": path, "HOME": str(cwd)},
        timeout=60,
        check=False,
    )


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """Run ``dispatch-slurm-shims ARGS`` in this process: its status and its one stderr line."""
    status = shims.main(list(args))
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    return status, err.rstrip("\n")


def usage(action: str, text: str) -> str:
    return f"{PROG}: {action}: {text} (see '{PROG} {action} --help')"


# fmt: off
BAD_USAGE = [
    # bad numbers
    (["advance", "-5"], usage("advance", "argument SECONDS: wants a finite number of seconds >= 0, not '-5'")),
    (["advance", "nan"], usage("advance", "argument SECONDS: wants a finite number of seconds >= 0, not 'nan'")),
    (["advance", "inf"], usage("advance", "argument SECONDS: wants a finite number of seconds >= 0, not 'inf'")),
    (["advance", "-inf"], usage("advance", "argument SECONDS: wants a finite number of seconds >= 0, not '-inf'")),
    (["advance", "-1e3"], usage("advance", "argument SECONDS: wants a finite number of seconds >= 0, not '-1e3'")),
    (["advance", "ten"], usage("advance", "argument SECONDS: wants a number of seconds, not 'ten'")),
    (["advance"], usage("advance", "the following arguments are required: SECONDS")),
    (["advance", "5", "6"], f"{PROG}: usage: unrecognized arguments: 6 (see '{PROG} --help')"),
    (["run-for", "1", "-5"], usage("run-for", "argument SECONDS: wants an integer >= 0 and <= 253402300799, not '-5'")),
    (["run-for", "1", "1.5"], usage("run-for", "argument SECONDS: wants an integer, not '1.5'")),
    (["finish", "0"], usage("finish", "argument JOB: wants an integer >= 1, not '0'")),
    (["finish", "x"], usage("finish", "argument JOB: wants an integer, not 'x'")),
    (["finish", "1", "256"], usage("finish", "argument CODE: wants an integer >= 0 and <= 255, not '256'")),
    (["finish", "1", "-1"], usage("finish", "argument CODE: wants an integer >= 0 and <= 255, not '-1'")),
    (["fail", "1", "COMPLETED"], usage("fail", "argument STATE: wants one of FAILED, OUT_OF_MEMORY, TIMEOUT, DEADLINE, PREEMPTED, BOOT_FAIL, NODE_FAIL, not 'COMPLETED'")),
    (["schedule", "1", "--count", "-1"], usage("schedule", "argument --count: wants an integer >= 0 and <= 100000, not '-1'")),
    (["schedule", "1", "--within", "nan"], usage("schedule", "argument --within: wants a finite number of seconds >= 0, not 'nan'")),
    (["schedule", "x"], usage("schedule", "argument SEED: wants an integer, not 'x'")),
    (["schedule", "1", "--kinds", "preempt,nope"], f"{PROG}: schedule: unknown fault kinds nope; known: {FAULTS}"),
    # faults: unknown, bad KEY=VALUE, bad values
    (["fault", "no-such-fault"], f"{PROG}: unknown fault 'no-such-fault'; known: {FAULTS}"),
    (["fault", "lose_reply", "operation=nope"], f"{PROG}: fault lose_reply has no argument 'operation' (its arguments: command, args, wait)"),
    (["fault", "lose-reply", "nope"], f"{PROG}: fault lose_reply: command 'nope' is not one of sbatch, squeue, sacct, scancel, scontrol (or none)"),
    (["fault", "lose-reply", "wait=nan"], f"{PROG}: fault lose_reply: wait must be a finite number >= 0, not nan"),
    (["fault", "timeout-before", "sbatch", "wait=-1"], f"{PROG}: fault timeout_before: wait must be a finite number >= 0, not -1.0"),
    (["fault", "slurmctld-down", "inf"], f"{PROG}: fault slurmctld_down: seconds must be a finite number > 0, not inf"),
    (["fault", "slurmctld-down", "0"], f"{PROG}: fault slurmctld_down: seconds must be a finite number > 0, not 0.0"),
    (["fault", "purge-now", "abc"], f"{PROG}: fault purge_now: job_id wants an integer, not 'abc'"),
    (["fault", "purge-now", "0"], f"{PROG}: fault purge_now: job_id must be a finite number >= 1, not 0"),
    (["fault", "preempt"], f"{PROG}: fault preempt needs job_id"),
    (["fault", "preempt", "1", "mode=x"], f"{PROG}: fault preempt: preemption mode 'x' is neither 'requeue' nor 'cancel'"),
    (["fault", "preempt", "1", "requeue", "3"], f"{PROG}: fault preempt: too many arguments ('3')"),
    (["fault", "preempt", "1", "job_id=1"], f"{PROG}: fault preempt: job_id given twice"),
    (["fault", "requeue-underneath", "1", "hold=maybe"], f"{PROG}: fault requeue_underneath: hold wants true or false, not 'maybe'"),
    (["fault", "rename-job", "1", "nmae=x"], f"{PROG}: fault rename_job has no argument 'nmae' (its arguments: job_id, name)"),
    (["fault", "rename-job", "name=x"], f"{PROG}: fault rename_job needs job_id"),
    # actions and options
    (["bogus"], f"{PROG}: usage: argument ACTION: invalid choice: 'bogus' (choose from 'install', 'advance', 'finish', 'fail', 'run-for', 'now', 'fault', 'schedule', 'stop') (see '{PROG} --help')"),
    (["now", "--bogus"], f"{PROG}: usage: unrecognized arguments: --bogus (see '{PROG} --help')"),
]
# fmt: on


@pytest.mark.parametrize(
    ("args", "line"),
    BAD_USAGE,
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_bad_usage_is_one_line_exit_2_and_writes_nothing(
    cluster: tuple[Path, Path], capsys: pytest.CaptureFixture[str], args: list[str], line: str
) -> None:
    state, _ = cluster
    before = (state / STATE_FILE).read_bytes()
    action, rest = args[0], args[1:]
    status, err = refused(capsys, action, "--state-dir", str(state), *rest)
    assert (status, err) == (2, line)
    assert (state / STATE_FILE).read_bytes() == before


def test_the_bin_dirs_dispatch_slurm_shims_says_the_same(
    cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    """BIN/dispatch-slurm-shims sends the action to the server, which parses it the same way."""
    state, bin_dir = cluster
    before = (state / STATE_FILE).read_bytes()
    for args, line in BAD_USAGE:
        argv = [str(bin_dir / PROG), args[0], "--state-dir", str(state), *args[1:]]
        done = subprocess.run(
            argv, capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False
        )
        assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n"), args
    assert (state / STATE_FILE).read_bytes() == before
    done = subprocess.run(
        [str(bin_dir / PROG), "now", "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "") and int(done.stdout) > 1_767_225_600
    done = subprocess.run(
        [str(bin_dir / PROG), "now", "--state-dir", str(tmp_path / "no")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        3,
        f"{PROG}: no simulated cluster in {tmp_path / 'no'}: no such directory\n",
    )


# fmt: off
REFUSED_BY_THE_CLUSTER = [
    (["fault", "purge_now", "9999"], f"{PROG}: purge_now: the cluster never had a job 9999"),
    (["fault", "preempt", "99"], f"{PROG}: Invalid job id specified"),
    (["fault", "rename-job", "99", "x"], f"{PROG}: Invalid job id specified"),
    (["fault", "node-failure", "zz"], f"{PROG}: the cluster has no node 'zz'"),
    (["fault", "reuse-id", "99999999"], f"{PROG}: job id 99999999 is outside FirstJobId..MaxJobId-1 (1..67043327)"),
    (["finish", "99"], f"{PROG}: Invalid job id specified"),
    (["finish", "2"], f"{PROG}: job 2 is PENDING, not RUNNING"),
    (["fail", "2", "failed"], f"{PROG}: job 2 is PENDING, not RUNNING"),
    (["run-for", "99", "5"], f"{PROG}: Invalid job id specified"),
    (["advance", "1e300"], f"{PROG}: advance: 1e+300 s would take the clock past 9999-12-31"),
]
# fmt: on


@pytest.mark.parametrize(
    ("args", "line"),
    REFUSED_BY_THE_CLUSTER,
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_a_refused_target_is_one_line_and_writes_nothing(
    cluster: tuple[Path, Path], capsys: pytest.CaptureFixture[str], args: list[str], line: str
) -> None:
    state, _ = cluster
    before = (state / STATE_FILE).read_bytes()
    action, rest = args[0], args[1:]
    status, err = refused(capsys, action, "--state-dir", str(state), *rest)
    expected = 2 if action == "advance" else 1
    assert (status, err) == (expected, line)
    assert (state / STATE_FILE).read_bytes() == before


def test_a_fault_aimed_right_that_cannot_hit_is_refused_and_recorded(
    cluster: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """As in the Python API, a fault whose target exists but cannot be hit is in the trace."""
    state, _ = cluster
    before = (state / STATE_FILE).read_bytes()
    status, err = refused(capsys, "fault", "--state-dir", str(state), "preempt", "2")
    assert (status, err) == (1, f"{PROG}: job 2 is PENDING, not RUNNING")
    added = (state / STATE_FILE).read_bytes()[len(before) :].decode()
    assert '"error":"job 2 is PENDING, not RUNNING"' in added and added.count("\n") == 1


def test_after_every_refusal_the_cluster_still_answers(
    cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    state, bin_dir = cluster
    done = shell(bin_dir, "squeue -h -o '%i|%T|%D' && scontrol show job 1 | head -1", tmp_path)
    assert (done.stdout, done.stderr, done.returncode) == (
        "2|PENDING|1\n1|RUNNING|2\nJobId=1 JobName=sbatch\n",
        "",
        0,
    )
    from simulators.slurm.replay import replay

    assert replay(state / STATE_FILE).ok


# -- the state directory -----------------------------------------------------------------------


def test_a_missing_state_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    where = tmp_path / "nowhere"
    status, err = refused(capsys, "now", "--state-dir", str(where))
    assert (status, err) == (3, f"{PROG}: no simulated cluster in {where}: no such directory")
    assert shim_client.main(["--state-dir", str(where), "squeue"]) == 3
    assert (
        capsys.readouterr().err == f"{PROG}: no simulated cluster in {where}: no such directory\n"
    )
    assert not where.exists()


def test_a_state_dir_without_a_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, err = refused(capsys, "advance", "--state-dir", str(tmp_path), "5")
    assert (status, err) == (
        3,
        f"{PROG}: no simulated cluster in {tmp_path}: no {STATE_FILE} "
        f"(run '{PROG} install --state-dir {tmp_path} --bin-dir BIN')",
    )
    assert shim_client.main(["--state-dir", str(tmp_path), "sbatch"]) == 3
    assert capsys.readouterr().err == (
        f"{PROG}: no simulated cluster in {tmp_path}: no {STATE_FILE} "
        f"(run '{PROG} install --state-dir {tmp_path} --bin-dir BIN')\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_state_dir_that_is_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    status, err = refused(capsys, "now", "--state-dir", str(file))
    assert (status, err) == (3, f"{PROG}: state dir {file} is not a directory")
    assert shim_client.main(["--state-dir", str(file), "squeue"]) == 3
    assert capsys.readouterr().err == f"{PROG}: state dir {file} is not a directory\n"
    status, err = refused(capsys, "install", "--state-dir", str(file), "--bin-dir", str(tmp_path))
    assert (status, err) == (3, f"{PROG}: state dir {file} is not a directory")
    status, err = refused(
        capsys, "install", "--state-dir", str(tmp_path / "s"), "--bin-dir", str(file)
    )
    assert (status, err) == (3, f"{PROG}: bin dir {file} is not a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    assert file.read_text() == "x"


def test_a_shim_run_without_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert shim_client.main(["--state-dir", "x"]) == 2
    assert capsys.readouterr().err == f"{PROG}: a shim runs '--state-dir DIR PROGRAM [ARGS...]'\n"


def test_no_action(capsys: pytest.CaptureFixture[str]) -> None:
    status, err = refused(capsys)
    assert (status, err) == (
        2,
        f"{PROG}: no action given (one of install, advance, finish, fail, run-for, fault, "
        f"schedule, now, stop; see '{PROG} --help')",
    )
    status, err = refused(capsys, "now")
    assert (status, err) == (2, usage("now", "the following arguments are required: --state-dir"))


# -- install -----------------------------------------------------------------------------------

# fmt: off
BAD_INSTALLS = [
    (["--max-job-id", "1"], usage("install", "argument --max-job-id: wants an integer >= 2 and <= 67043328, not '1'")),
    (["--first-job-id", "10", "--max-job-id", "5"], f"{PROG}: install: MaxJobId must exceed FirstJobId (MaxJobId itself is never issued)"),
    (["--nodes", ""], usage("install", "argument --nodes: wants a name without spaces, commas or '|': ''")),
    (["--nodes", "0"], usage("install", "argument --nodes: wants 1..4096 nodes, not '0'")),
    (["--nodes", "a,a"], usage("install", "argument --nodes: names a node twice: 'a,a'")),
    (["--nodes", "-1"], usage("install", "argument --nodes: wants 1..4096 nodes, not '-1'")),
    (["--partitions", "a,b", "--partition", "c"], f"{PROG}: install: the default partition c is not one of the partitions (a,b): every submission without -p would be refused"),
    (["--cpus-per-node", "0"], usage("install", "argument --cpus-per-node: wants an integer >= 1 and <= 4096, not '0'")),
    (["--sched-interval", "0"], usage("install", "argument --sched-interval: wants an integer >= 1, not '0'")),
    (["--start", "nan"], usage("install", "argument --start: wants a finite number of seconds >= 0, not 'nan'")),
    (["--start", "1e20"], f"{PROG}: install: --start 1e+20 is past 9999-12-31"),
    (["--seed", "x"], usage("install", "argument --seed: wants an integer, not 'x'")),
    (["--set", "foo=1"], f"{PROG}: install: --set wants FIELD=VALUE with a SlurmConfig field (nodes, cpus_per_node, partition, partitions, first_job_id, max_job_id, max_job_count, min_job_age, job_comment, job_requeue, accounting, requeue_delay, run_time, sched_latency, sched_interval, kill_wait, cluster_name, user, uid, account, submit_host, alloc_node, pending_mem, version), not 'foo=1'"),
    (["--set", "max_job_id=abc"], f"{PROG}: install: --set max_job_id: wants an integer, not 'abc'"),
    (["--set", "job_comment=maybe"], f"{PROG}: install: --set job_comment: wants true or false, not 'maybe'"),
    (["--partition", "a b"], usage("install", "argument --partition: wants a name without spaces, commas or '|': 'a b'")),
    (["--idle-exit", "-1"], usage("install", "argument --idle-exit: wants a finite number of seconds >= 0, not '-1'")),
]
# fmt: on


@pytest.mark.parametrize(
    ("args", "line"),
    BAD_INSTALLS,
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_a_bad_install_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], line: str
) -> None:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    status, err = refused(
        capsys, "install", "--state-dir", str(state), "--bin-dir", str(bin_dir), *args
    )
    assert (status, err) == (2, line)
    assert list(tmp_path.iterdir()) == []


def test_an_install_whose_bin_dir_cannot_be_made_leaves_no_state_dir(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    state, bin_dir = tmp_path / "a" / "state", tmp_path / "file" / "bin"
    status, err = refused(capsys, "install", "--state-dir", str(state), "--bin-dir", str(bin_dir))
    assert status == 3 and err.startswith(f"{PROG}: cannot install in "), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_install_over_another_cluster_needs_reset(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    base = ["install", "--state-dir", str(state), "--bin-dir", str(bin_dir)]
    assert shims.main([*base, "--max-job-id", "20"]) == 0
    capsys.readouterr()
    before = (state / STATE_FILE).read_bytes()
    status, err = refused(capsys, *base, "--max-job-id", "30", "--seed", "4")
    assert (status, err) == (
        2,
        f"{PROG}: install: {state} already holds a cluster with max_job_id=20 (asked 30), "
        "seed=0 (asked 4); add --reset to replace it",
    )
    assert (state / STATE_FILE).read_bytes() == before
    assert shims.main([*base, "--max-job-id", "20"]) == 0  # the same settings: kept as it is
    assert shims.main([*base]) == 0
    assert (state / STATE_FILE).read_bytes() == before
    assert shims.main([*base, "--max-job-id", "30", "--reset"]) == 0
    assert b'"max_job_id":30' in (state / STATE_FILE).read_bytes()


# -- a damaged trace ---------------------------------------------------------------------------

HEADER = (
    '{"config":{"nodes":["vm"]},"kind":"header","seed":0,"shims":{"execute":false},'
    '"start":1767225600.0,"version":1}'
)
# fmt: off
DAMAGES = [
    ([HEADER, '{"args":{"seconds":-5},"kind":"drive","op":"advance","t":1767225600.0}'], "line 2: drive advance seconds must be a finite number >= 0: -5"),
    ([HEADER, '{"args":{"seconds":NaN},"kind":"drive","op":"advance","t":1767225600.0}'], "line 2: drive advance seconds must be a finite number >= 0: nan"),
    ([HEADER, '{"args":{"command":"operation=nope"},"kind":"fault","name":"lose_reply","scheduled":false,"t":1767225600.0}'], "line 2: fault lose_reply: command 'operation=nope' is not one of sbatch, squeue, sacct, scancel, scontrol (or none)"),
    ([HEADER, '{"args":{},"kind":"fault","name":"meteor","scheduled":false,"t":1767225600.0}'], "line 2: unknown fault 'meteor'"),
    ([HEADER, "garbage"], "line 2: not JSON (Expecting value: line 1 column 1 (char 0))"),
    ([HEADER, "[1, 2]"], "line 2: not a JSON object"),
    ([HEADER, '{"kind":"call","t":1767225600.0}'], "line 2: call argv is not a list of words: None"),
    ([HEADER, HEADER], "line 2: a trace starts with its header line, and has only one"),
    (['{"kind":"header","version":1,"config":{"nodes":[]},"seed":0,"start":0}'], "line 1: header config: a cluster needs at least one node with one CPU"),
    (['{"kind":"header","version":1,"config":{"moons":2},"seed":0,"start":0}'], "line 1: header config: SlurmConfig.__init__() got an unexpected keyword argument 'moons'"),
    (['{"kind":"header","version":7,"config":{},"seed":0,"start":0}'], "line 1: trace version 7"),
    ([], "empty (no header line)"),
]
# fmt: on


@pytest.mark.parametrize(
    ("lines", "why"),
    DAMAGES,
    ids=[why.split(":")[0] + f"-{i}" for i, (_, why) in enumerate(DAMAGES)],
)
def test_a_damaged_trace_is_named_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: list[str], why: str
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    trace = state / STATE_FILE
    trace.write_text("".join(line + "\n" for line in lines))
    before = trace.read_bytes()
    line = (
        f"{PROG}: damaged trace {trace}: {why} (mend or remove the line, or start again with "
        f"'{PROG} install --reset')"
    )
    assert shim_client.main(["--state-dir", str(state), "squeue"]) == 3
    assert capsys.readouterr() == ("", line + "\n")
    status, err = refused(capsys, "advance", "--state-dir", str(state), "5")
    assert (status, err) == (3, line)
    assert trace.read_bytes() == before


def test_a_trace_that_does_not_replay_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / STATE_FILE).write_text(
        HEADER
        + "\n"
        + '{"kind":"schedule","t":1767225600.0,"seed":1,"args":{"count":"x"},"plan":[]}\n'
    )
    status, err = refused(capsys, "now", "--state-dir", str(state))
    assert status == 3
    assert err.startswith(f"{PROG}: damaged trace {state / STATE_FILE}: it does not replay (")


# -- commands that are not simulated -----------------------------------------------------------


def test_unsimulated_commands_are_refused_and_never_reach_a_real_slurm(
    cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    _, bin_dir = cluster
    for command in shim_client.REFUSED:
        assert os.access(bin_dir / command, os.X_OK)
    line = (
        f"{PROG}: sinfo is not simulated; this simulated cluster answers sbatch, squeue, sacct, "
        "scancel and scontrol only\n"
    )
    done = shell(bin_dir, "sinfo -h -o %T", tmp_path)
    assert (done.stdout, done.stderr, done.returncode) == ("", line, 1)
    done = shell(bin_dir, "srun hostname", tmp_path)
    assert (done.stderr.split(";")[0], done.returncode) == (f"{PROG}: srun is not simulated", 1)
    # what the simulated scontrol does not answer, it refuses itself
    for argv in (
        "scontrol show node",
        "scontrol -o show node n1",
        "scontrol show partition",
        "scontrol ping",
    ):
        done = shell(bin_dir, argv, tmp_path)
        assert done.stdout == "" and done.returncode == 1, argv
        assert done.stderr.startswith("scontrol: error: ") and done.stderr.endswith(
            " is not supported by this simulator\n"
        ), argv
    assert shims.main(["--state-dir", str(cluster[0]), "sinfo"]) == 1


def test_the_shims_run_no_other_program(cluster: tuple[Path, Path]) -> None:
    """A served shim runs only this interpreter; a refusing one only sh builtins."""
    _, bin_dir = cluster
    for command in (*shim_client.SERVED, PROG):
        text = (bin_dir / command).read_text()
        assert f"exec {sys.executable} -I -S -c " in text
    for command in shim_client.REFUSED:
        lines = (bin_dir / command).read_text().splitlines()
        assert lines[0] == "#!/bin/sh" and lines[2].startswith("echo ") and lines[3] == "exit 1"


def test_the_server_is_started_with_this_checkout(cluster: tuple[Path, Path]) -> None:
    assert Path(shim_client.ROOT) == ROOT


def test_install_never_replaces_a_file_that_is_not_a_shim(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--bin-dir /usr/bin`` must not replace the real Slurm's commands."""
    real = tmp_path / "bin"
    real.mkdir()
    (real / "sbatch").write_text("#!/bin/sh\necho real\n")
    argv = ["install", "--state-dir", str(tmp_path / "state"), "--bin-dir", str(real)]
    status, err = refused(capsys, *argv)
    assert (status, err) == (
        2,
        f"{PROG}: install: {real / 'sbatch'} exists and is not a shim of {PROG}: refusing to "
        "replace it (choose another --bin-dir)",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]
    assert [p.name for p in real.iterdir()] == ["sbatch"]
    assert (real / "sbatch").read_text() == "#!/bin/sh\necho real\n"


def test_an_empty_directory_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, err = refused(capsys, "install", "--state-dir", "", "--bin-dir", str(tmp_path))
    assert (status, err) == (2, f"{PROG}: install: --state-dir is empty")
    status, err = refused(capsys, "install", "--state-dir", str(tmp_path), "--bin-dir", "")
    assert (status, err) == (2, f"{PROG}: install: --bin-dir is empty")
    status, err = refused(capsys, "advance", "--state-dir", "", "5")
    assert (status, err) == (2, f"{PROG}: advance: --state-dir is empty")
    assert list(tmp_path.iterdir()) == []


def test_directories_with_spaces_and_quotes(tmp_path: Path) -> None:
    state, bin_dir = tmp_path / "it's a state", tmp_path / 'b "in" x'
    assert shims.main(["install", "--state-dir", str(state), "--bin-dir", str(bin_dir)]) == 0
    try:
        done = shell(bin_dir, "sbatch --parsable <<< '#!/bin/sh'; squeue -h -o %i", tmp_path)
        assert (done.stdout, done.stderr) == ("1\n1\n", "")
        ctl = subprocess.run(
            [str(bin_dir / PROG), "now", "--state-dir", str(state)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert (ctl.returncode, ctl.stdout) == (0, "1767225600\n")
    finally:
        stop(str(state))


@pytest.mark.parametrize("name", ["start.lock", "lock"])
def test_a_lock_file_that_cannot_be_opened_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    assert shims.main(["install", "--state-dir", str(state), "--bin-dir", str(bin_dir)]) == 0
    stop(str(state))
    (state / name).unlink(missing_ok=True)
    (state / name).mkdir()
    capsys.readouterr()
    status, err = refused(capsys, "now", "--state-dir", str(state))
    assert status == 3, err
    assert err == f"{PROG}: cannot use state dir {state}: {state / name}: Is a directory"


def test_a_shim_whose_stdout_is_closed_exits_141_without_a_traceback(
    cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    """``squeue | head -0``: the status a shell gives a real squeue killed by SIGPIPE."""
    _, bin_dir = cluster
    read, write = os.pipe()
    os.close(read)  # the reader is gone before squeue prints
    try:
        done = subprocess.run(
            [str(bin_dir / "squeue")],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.parametrize("action", ["install", "now"])
def test_a_state_dir_whose_name_is_too_long_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, action: str
) -> None:
    state = tmp_path / ("a" * 300)
    more = ["--bin-dir", str(tmp_path / "bin")] if action == "install" else []
    status, err = refused(capsys, action, "--state-dir", str(state), *more)
    assert (status, err) == (3, f"{PROG}: cannot use {state}: File name too long")
    assert list(tmp_path.iterdir()) == []


def test_a_state_dir_given_before_the_action_says_where_it_goes(
    capsys: pytest.CaptureFixture[str], cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    says = (
        f"{PROG}: usage: the action comes first, then its options: '{PROG} ACTION --state-dir "
        f"DIR ...' (see '{PROG} --help')"
    )
    status, err = refused(capsys, "--state-dir", str(tmp_path), "advance", "5")
    assert (status, err) == (2, says)
    state, bin_dir = cluster
    done = shell(bin_dir, f"dispatch-slurm-shims --state-dir {state} advance 5", tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", says + "\n")
