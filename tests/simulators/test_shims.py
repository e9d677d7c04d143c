"""PATH shims end to end: a real bash script drives sbatch, squeue and scancel against a
simulated cluster whose state lives in a directory; invocations serialise under a lock."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulators.slurm.replay import replay
from simulators.slurm.shim_client import stop
from simulators.slurm.shims import SLURM_COMMANDS, STATE_FILE
from simulators.slurm.trace import load

ROOT = Path(__file__).resolve().parents[2]
CTL = [sys.executable, "-m", "simulators.slurm.shims"]
BASH = shutil.which("bash")

pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


def ctl(*args: str) -> subprocess.CompletedProcess[str]:
    """``dispatch-slurm-shims ARGS`` (through ``python -m``, installed or not)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*CTL, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


@pytest.fixture
def shims(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    done = ctl(
        "install", "--state-dir", str(state), "--bin-dir", str(bin_dir), "--max-job-id", "20",
        "--min-job-age", "30", "--nodes", "vm",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == f'export PATH={bin_dir}:"$PATH"\n'
    yield state, bin_dir
    stop(str(state))  # the cluster's server, if a call started one


def shell(bin_dir: Path, script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    assert BASH is not None
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    return subprocess.run(
        [BASH, "-c", script],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": path, "HOME": str(cwd), **env},
        timeout=120,
        check=False,
    )


def test_install_creates_executables_and_state(shims: tuple[Path, Path]) -> None:
    state, bin_dir = shims
    for command in SLURM_COMMANDS:
        path = bin_dir / command
        assert os.access(path, os.X_OK)
        assert f"--state-dir {state} {command}" in path.read_text()
    header = load(state / STATE_FILE)[0]
    assert header["config"]["max_job_id"] == 20


def test_the_console_script_is_declared() -> None:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        scripts = tomllib.load(handle)["project"]["scripts"]
    assert scripts["dispatch-slurm-shims"] == "simulators.slurm.shims:main"


def test_a_bash_script_submits_reads_and_cancels(shims: tuple[Path, Path], tmp_path: Path) -> None:
    state, bin_dir = shims
    script = r"""
set -u
id=$(sbatch --parsable --job-name=dj-E2E <<'EOF'
#!/bin/sh
echo hello
EOF
)
echo "submitted=$id"
squeue --me --name=dj-E2E -h -o '%i|%j|%T'
"$PY" -m simulators.slurm.shims advance --state-dir "$STATE" 5
squeue --me --name=dj-E2E -h -o '%i|%j|%T'
scancel "$id"; echo "scancel=$?"
squeue --me --name=dj-E2E -h -o '%i|%j|%T' -t all
scancel "$id"; echo "again=$?"
scancel --name=dj-E2E "$id" 2>&1; echo "filtered=$?"
scontrol show job "$id" | head -1
"""
    done = shell(
        bin_dir, script, tmp_path, PY=sys.executable, STATE=str(state), PYTHONPATH=str(ROOT)
    )
    assert done.stderr == ""
    assert done.stdout == (
        "submitted=1\n"
        "1|dj-E2E|PENDING\n"
        "1|dj-E2E|RUNNING\n"
        "scancel=0\n"
        "1|dj-E2E|CANCELLED\n"
        "again=0\n"
        "scancel: error: Kill job error on job id 1: Invalid job id specified\n"
        "filtered=1\n"
        "JobId=1 JobName=dj-E2E\n"
    )
    assert replay(state / STATE_FILE).ok


def test_concurrent_invocations_serialise(shims: tuple[Path, Path], tmp_path: Path) -> None:
    _, bin_dir = shims
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    runs = [
        subprocess.Popen(
            [str(bin_dir / "sbatch"), "--parsable", f"--job-name=dj-P{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        for i in range(6)
    ]
    outputs = [process.communicate("#!/bin/sh\ntrue\n", timeout=120) for process in runs]
    assert [process.returncode for process in runs] == [0] * 6
    assert sorted(int(out) for out, _ in outputs) == [1, 2, 3, 4, 5, 6]
    listing = shell(bin_dir, "squeue -h -o '%i|%j' | sort -n", tmp_path)
    names = {line.split("|")[0]: line.split("|")[1] for line in listing.stdout.split()}
    assert sorted(names.values()) == [f"dj-P{i}" for i in range(6)]


def test_a_script_file_survives_between_invocations(
    shims: tuple[Path, Path], tmp_path: Path
) -> None:
    _, bin_dir = shims
    (tmp_path / "job.sh").write_text("#!/bin/sh\n#SBATCH --job-name=dj-FILE\nsleep 1\n")
    done = shell(
        bin_dir,
        "sbatch job.sh 30 && rm job.sh && squeue -h -o '%i|%j|%T' && "
        "scontrol show job 1 | grep -o 'WorkDir=[^ ]*'",
        tmp_path,
    )
    assert (done.stdout, done.stderr) == (
        f"Submitted batch job 1\n1|dj-FILE|PENDING\nWorkDir={tmp_path}\n",
        "",
    )


def test_the_clock_jobs_and_faults_are_driven_from_outside(
    shims: tuple[Path, Path], tmp_path: Path
) -> None:
    state, bin_dir = shims
    sd = ["--state-dir", str(state)]
    start = int(ctl("now", *sd).stdout)
    submitted = shell(bin_dir, "sbatch --parsable --job-name=dj-A <<< '#!/bin/sh'", tmp_path)
    assert submitted.stdout == "1\n"
    assert ctl("advance", *sd, "10").returncode == 0
    assert int(ctl("now", *sd).stdout) == start + 10
    assert ctl("finish", *sd, "1", "3").returncode == 0
    listing = shell(bin_dir, "squeue -t all -h -o '%i|%T'", tmp_path)
    assert listing.stdout == "1|FAILED\n"

    # a lost reply: the command took effect, the caller saw a timeout (exit 124)
    assert ctl("fault", *sd, "lose-reply", "sbatch").returncode == 0
    lost = shell(bin_dir, "sbatch --parsable <<< '#!/bin/sh'; echo rc=$?", tmp_path)
    assert lost.stdout == "rc=124\n"
    assert lost.stderr == (
        "dispatch-slurm-shims: sbatch timed out (simulated: its reply was lost)\n"
    )
    assert shell(bin_dir, "squeue -h -o %i", tmp_path).stdout == "2\n"

    # slurmctld down for a minute, then back
    assert ctl("fault", *sd, "slurmctld-down", "seconds=60").stdout == f"{start + 70}\n"
    down = shell(bin_dir, "scontrol show job 2; echo rc=$?", tmp_path)
    assert (
        down.stderr
        == "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
    )
    assert ctl("advance", *sd, "60").returncode == 0
    assert shell(bin_dir, "squeue -h -o '%i|%T'", tmp_path).stdout == "2|RUNNING\n"

    # the id of a finished job taken by a foreign job
    assert ctl("fault", *sd, "reuse-id", "1", "name=intruder").stdout == "1\n"
    listing = shell(bin_dir, "squeue -h -o '%i|%j|%u'", tmp_path)
    assert listing.stdout == "1|intruder|other\n2|sbatch|root\n"

    refused = ctl("fault", *sd, "preempt", "99")
    assert (refused.returncode, refused.stderr) == (
        1,
        "dispatch-slurm-shims: Invalid job id specified\n",
    )
    assert ctl("fault", *sd, "no-such-fault").returncode == 2
    plan = ctl("schedule", *sd, "4", "--count", "3", "--kinds", "purge-now,rename-job")
    assert len(plan.stdout.splitlines()) == 3
    assert replay(state / STATE_FILE).ok
