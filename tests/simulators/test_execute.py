"""Execute mode runs the real batch script with Slurm's environment and an srun per task."""

from __future__ import annotations

from pathlib import Path

from simulators.slurm import SlurmConfig, SlurmSim
from simulators.slurm.execute import ExecuteMode

SCRIPT = """#!/bin/sh
echo "start SLURM_JOB_ID=$SLURM_JOB_ID SLURM_RESTART_COUNT=${SLURM_RESTART_COUNT-unset}"
srun sh -c 'echo "rank $SLURM_PROCID of $SLURM_NTASKS local $SLURM_LOCALID node $SLURM_NODEID x=$X"'
exit "$1"
"""


def submit(sim: SlurmSim, tmp: Path, *options: str, code: str = "0") -> int:
    script = tmp / "job.sh"
    script.write_text(SCRIPT)
    done = sim.run(
        [
            "sbatch",
            "--parsable",
            f"--chdir={tmp}",
            "--output=%x-%j.out",
            *options,
            str(script),
            code,
        ],
        env={"X": "from-submit", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_every_rank_runs_and_the_first_run_has_no_restart_count(tmp_path: Path) -> None:
    sim = SlurmSim(SlurmConfig(nodes=("n1", "n2"), cpus_per_node=4))
    ExecuteMode(sim)
    job = submit(sim, tmp_path, "--job-name=dj-EXEC", "--nodes=2", "--ntasks-per-node=2")
    sim.advance(1)
    output = (tmp_path / f"dj-EXEC-{job}.out").read_text().splitlines()
    assert output == [
        f"start SLURM_JOB_ID={job} SLURM_RESTART_COUNT=unset",
        "rank 0 of 4 local 0 node 0 x=from-submit",
        "rank 1 of 4 local 1 node 0 x=from-submit",
        "rank 2 of 4 local 0 node 1 x=from-submit",
        "rank 3 of 4 local 1 node 1 x=from-submit",
    ]
    sim.advance(1)
    assert sim.job(job).state == "COMPLETED"


def test_a_requeued_run_sees_the_restart_count_and_truncates_the_output(tmp_path: Path) -> None:
    sim = SlurmSim(SlurmConfig(requeue_delay=5))
    ExecuteMode(sim, default_run=100)
    job = submit(sim, tmp_path, "--job-name=dj-RQ")
    sim.advance(1)
    assert sim.run(["scontrol", "requeue", str(job)]).returncode == 0
    sim.advance(120)
    lines = (tmp_path / f"dj-RQ-{job}.out").read_text().splitlines()
    assert lines[0] == f"start SLURM_JOB_ID={job} SLURM_RESTART_COUNT=1"
    assert len(lines) == 2  # the first run's lines are gone


def test_the_script_s_exit_status_ends_the_job(tmp_path: Path) -> None:
    sim = SlurmSim()
    ExecuteMode(sim)
    job = submit(sim, tmp_path, "--job-name=dj-FAIL", code="3")
    sim.advance(5)
    record = sim.controller.records(job)[-1]
    assert (record.state, record.exit_code) == ("FAILED", 3)


SIGNALLED = """#!/bin/sh
trap 'echo "got USR1 at $SLURM_JOB_ID"; exit 0' USR1
i=0
while [ "$i" -lt 30 ]; do sleep 1; i=$((i + 1)); done
echo never
"""


def test_a_pre_termination_signal_reaches_the_batch_shell(tmp_path: Path) -> None:
    """slurm-lab §7.9: --signal=B:USR1@30 arrived 60 s before the kill."""
    sim = SlurmSim()
    ExecuteMode(sim)
    script = tmp_path / "sig.sh"
    script.write_text(SIGNALLED)
    done = sim.run(
        [
            "sbatch",
            "--parsable",
            f"--chdir={tmp_path}",
            "--output=sig.out",
            "--time=2",
            "--signal=B:USR1@30",
            str(script),
        ],
    )
    job = int(done.stdout)
    sim.advance(1)
    started = sim.job(job).start_time
    sim.advance(59)
    assert sim.job(job).signals == []
    sim.advance(2)
    assert sim.job(job).signals == [(started + 60, 10, "batch")]
    assert (tmp_path / "sig.out").read_text() == f"got USR1 at {job}\n"
    sim.advance(2)
    assert sim.controller.records(job)[-1].state == "COMPLETED"


def test_rank_environments_are_recorded_per_execution(tmp_path: Path) -> None:
    sim = SlurmSim(SlurmConfig(nodes=("n1", "n2"), cpus_per_node=4, requeue_delay=5))
    mode = ExecuteMode(sim, default_run=100, rank_env_dir=tmp_path / "ranks")
    job = submit(sim, tmp_path, "--job-name=dj-ENV", "--nodes=2", "--ntasks-per-node=2")
    sim.advance(1)
    assert sim.run(["scontrol", "requeue", str(job)]).returncode == 0
    sim.advance(130)
    assert [(r.job_id, r.restart_count) for r in mode.recorded] == [(job, 0), (job, 1)]
    assert mode.recorded[0].seq == mode.recorded[1].seq == sim.job(job).seq
    first, second = (record.ranks() for record in mode.recorded)
    assert [env["SLURM_PROCID"] for env in first] == ["0", "1", "2", "3"]
    assert [env["SLURM_NODEID"] for env in first] == ["0", "0", "1", "1"]
    assert all(env["X"] == "from-submit" and env["SLURM_JOB_ID"] == str(job) for env in first)
    assert "SLURM_RESTART_COUNT" not in first[0] and second[0]["SLURM_RESTART_COUNT"] == "1"
    assert all("SLURMSIM_RANK_ENV_DIR" not in env for env in first + second)
    # The tasks themselves ran as before.
    output = (tmp_path / f"dj-ENV-{job}.out").read_text()
    assert "rank 3 of 4" in output


def test_a_value_with_a_newline_survives_the_record(tmp_path: Path) -> None:
    sim = SlurmSim()
    mode = ExecuteMode(sim, rank_env_dir=tmp_path / "ranks")
    script = tmp_path / "nl.sh"
    script.write_text("#!/bin/sh\nexport Y='a\nb=c'\nsrun true\n")
    done = sim.run(["sbatch", "--parsable", f"--chdir={tmp_path}", str(script)])
    sim.advance(1)
    [record] = mode.recorded
    assert record.job_id == int(done.stdout)
    assert record.ranks()[0]["Y"] == "a\nb=c"


def test_an_output_file_that_cannot_be_opened_fails_the_job(tmp_path: Path) -> None:
    """The batch step cannot start: the job fails, the simulator does not."""
    sim = SlurmSim()
    ExecuteMode(sim)
    job = submit(sim, tmp_path, "--job-name=dj-NOOUT", "--output=/nonexistent-dir/%j.out")
    sim.advance(5)
    record = sim.controller.records(job)[-1]
    assert (record.state, record.exit_code) == ("FAILED", 1)
    assert any("launch failed" in line for line in sim.controller.log)
