"""The batch script carries any text to the program exactly, and never executes it.

Each example runs the generated script with bash, as slurmd would, under a stand-in ``srun``
that starts the command once; the program is Python printing its argv, its working directory
and its environment as JSON. Hostile text (quotes, ``$()``, backticks, newlines, unicode) must
arrive byte for byte, and a marker file that the text tries to create must never appear."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.slurm import LocalTransport, SlurmBackend
from adapters.slurm.script import batch_submission, slurm_options
from dispatch_core import (
    JobID,
    JobSpec,
    Unsupported,
    make_plan,
    parse_execution_env,
    with_job,
)

BACKEND = SlurmBackend(LocalTransport(), "lab")  # planning asks it nothing over the transport
SRUN = '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n'
PRINTER = (
    "import json, os, sys\n"
    "print(json.dumps({'argv': sys.argv[1:], 'cwd': os.getcwd(), 'env': dict(os.environ)}))\n"
)

hostile = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=40,
) | st.sampled_from(
    [
        "$(touch PWNED)",
        "`touch PWNED`",
        "'; touch PWNED; '",
        '"; touch PWNED; "',
        "\n touch PWNED \n",
        "${IFS}touch${IFS}PWNED",
        "-n",
        "--",
        "é \u2028 ☃",
        "$SLURM_JOB_ID",
    ]
)
env_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: not n.startswith("DISPATCH_") and n not in ("PATH", "PWD", "SHLVL", "OLDPWD", "_")
)


def run_script(script: str, workdir: Path, env_extra: dict[str, str]) -> dict[str, object]:
    bin_dir = workdir / "bin"
    bin_dir.mkdir(exist_ok=True)
    srun = bin_dir / "srun"
    srun.write_text(SRUN)
    srun.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_JOB_ID": "4242",
        **env_extra,
    }
    done = subprocess.run(
        ["bash", "-s"],
        input=script,
        capture_output=True,
        text=True,
        cwd=workdir,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    args=st.lists(hostile, max_size=4),
    env=st.dictionaries(env_names, hostile, max_size=3),
)
def test_text_reaches_the_program_exactly_and_never_executes(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    program = tmp_path / "printer.py"
    program.write_text(PRINTER)
    spec = JobSpec(command=(sys.executable, str(program), *args), env=env, nodes=1)
    job = JobID.new()
    plan = make_plan(BACKEND, spec, None, with_job(job))
    batch = batch_submission(plan, 3, 1)
    seen = run_script(batch.script, tmp_path, {})
    assert seen["argv"] == args
    seen_env = seen["env"]
    assert isinstance(seen_env, dict)
    for name, value in env.items():
        assert seen_env[name] == value
    identity = parse_execution_env(seen_env)
    assert (identity.job, identity.submission, identity.native_id, identity.restart) == (
        job,
        3,
        "4242",
        0,
    )
    assert not (tmp_path / "PWNED").exists()


def test_a_restarted_execution_gets_the_next_epoch(tmp_path: Path) -> None:
    program = tmp_path / "printer.py"
    program.write_text(PRINTER)
    spec = JobSpec(command=(sys.executable, str(program)))
    batch = batch_submission(make_plan(BACKEND, spec), 2, 1)
    first = parse_execution_env(run_script(batch.script, tmp_path, {})["env"])  # type: ignore[arg-type]
    again = parse_execution_env(
        run_script(batch.script, tmp_path, {"SLURM_RESTART_COUNT": "1"})["env"]  # type: ignore[arg-type]
    )
    assert (first.attempt, again.attempt) == ("2-4242-0", "2-4242-1")
    assert again.epoch == first.epoch + 1


@pytest.mark.parametrize("restart", ["", "x", "-1", "1000000"])
def test_a_bad_restart_count_stops_the_script(tmp_path: Path, restart: str) -> None:
    spec = JobSpec(command=("true",))
    script = batch_submission(make_plan(BACKEND, spec), 1, 1).script
    done = subprocess.run(
        ["bash", "-s"],
        input=script,
        capture_output=True,
        text=True,
        env={"SLURM_RESTART_COUNT": restart, "SLURM_JOB_ID": "1", "PATH": os.environ["PATH"]},
        check=False,
    )
    if restart == "":
        return  # unset-or-empty defaults to 0 through ${SLURM_RESTART_COUNT:-0}
    assert done.returncode == 97


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(work_dir=hostile.filter(lambda s: s.strip() != "" and "\n" not in s))
def test_work_dir_and_output_travel_as_single_argv_elements(tmp_path: Path, work_dir: str) -> None:
    spec = JobSpec(
        command=("true",),
        work_dir="/scratch/" + work_dir,
        extensions={"dispatch.Output": "/out/" + work_dir},
    )
    argv = batch_submission(make_plan(BACKEND, spec), 1, 1).argv
    assert f"--chdir=/scratch/{work_dir}" in argv
    assert f"--output=/out/{work_dir}" in argv


def test_the_sbatch_call() -> None:
    job = JobID.parse("01JZ8Q2N5V0000000000000000")
    spec = JobSpec(
        command=("train",), nodes=2, procs_per_node=4, extensions={"slurm.Partition": "gpu"}
    )
    batch = batch_submission(make_plan(BACKEND, spec, None, with_job(job)), 7, 2)
    assert batch.argv == (
        "sbatch",
        "--parsable",
        "--job-name=dj-01JZ8Q2N5V0000000000000000",
        "--comment=dispatch:s=7;a=2",
        "--no-requeue",
        "--partition=gpu",
    )
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n" in batch.script
    assert batch.script.endswith("exec srun --export=ALL -- train\n")


@pytest.mark.parametrize(
    "extensions",
    [
        {"slurm.Partition": "gpu; rm -rf /"},
        {"slurm.TimeLimit": "forever"},
        {"slurm.Nope": "x"},
        {"kubeflow.Runtime": "torch"},
    ],
)
def test_extensions_are_validated_or_refused(extensions: dict[str, str]) -> None:
    with pytest.raises(Unsupported):
        slurm_options(extensions)
