"""The trace: same seed and same calls give byte-identical output; a recorded session replays
with no difference; a changed configuration shows its differences."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from simulators.slurm import SlurmConfig, SlurmSim, trace
from simulators.slurm.replay import rebuild, replay
from simulators.slurm.trace import command_argv, config_from, env_subset, load

JOB_SH = "#!/bin/sh\n#SBATCH --time=10\nsleep 600\n"
CONFIG = SlurmConfig(max_job_id=12, min_job_age=5, cpus_per_node=2)


def session(sim: SlurmSim, scratch: Path) -> list[tuple[str, str, int] | str]:
    """A session touching every kind of record: calls (from stdin and from a file), drives,
    faults (direct, armed and scheduled), time, id wrap-around; returns what a caller saw."""
    seen: list[tuple[str, str, int] | str] = []

    def call(*argv: str, stdin: str | None = None, timeout: float | None = None) -> None:
        env = {"SLURM_TIME_FORMAT": "%s", "PWD": str(scratch), "SECRET_TOKEN": "x"}
        try:
            done = sim.run(list(argv), stdin=stdin, env=env, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            seen.append(f"timeout after {expired.timeout}")
            return
        seen.append((done.stdout, done.stderr, done.returncode))

    script = scratch / "job.sh"
    script.write_text(JOB_SH)
    sim.faults.schedule(11, count=6, within=900)
    for i in range(3):
        call("sbatch", "--parsable", f"--job-name=dj-{i}", "--comment=c", stdin=JOB_SH)
    call("sbatch", "--parsable", str(script), "30")
    script.unlink()  # a replay must not need the file any more
    sim.advance(5)
    call("squeue", "-h", "-o", "%i|%j|%T|%V")
    sim.finish(1)
    sim.run_for(2, 20, exit_code=3)
    sim.faults.lose_reply("scancel", wait=7)
    call("scancel", "3", timeout=30)
    sim.faults.timeout_before("sbatch")
    call("sbatch", "--parsable", "--hold", stdin=JOB_SH, timeout=12)
    for step in range(12):
        sim.advance(75)
        call("sbatch", "--parsable", f"--job-name=dj-late-{step}", stdin=JOB_SH)
        call("scontrol", "show", "job", "-o", str(step % 11 + 1))
        call("scancel", "--name=dj-late-" + str(step - 1))
    if sim.controller.jobs:
        sim.faults.purge_now()
    call("scontrol", "show", "job")
    return seen


def test_same_seed_same_calls_byte_identical(tmp_path: Path) -> None:
    outputs, traces = [], []
    for _ in range(2):
        sim = SlurmSim(CONFIG, seed=5)
        outputs.append(session(sim, tmp_path))
        traces.append(sim.trace.dumps().encode())
    assert outputs[0] == outputs[1]
    assert traces[0] == traces[1]
    assert len(traces[0].splitlines()) > 40


def test_a_recorded_session_replays_with_no_difference(tmp_path: Path) -> None:
    sim = SlurmSim(CONFIG, seed=5)
    session(sim, tmp_path)
    path = tmp_path / "trace.jsonl"
    sim.trace.write(path)
    report = replay(path)
    assert report.ok, str(report)
    assert [r["kind"] for r in load(path)] == [r["kind"] for r in report.records]
    kinds = {r["kind"] for r in report.records}
    assert kinds == {"header", "call", "drive", "fault", "schedule"}
    assert any(r.get("timeout") == "reply-lost" for r in report.records)
    assert any(r.get("timeout") == "before" for r in report.records)
    assert any(r["kind"] == "fault" and r["scheduled"] for r in report.records)
    assert str(report).endswith("no difference")


def test_replay_from_lines_with_the_headers_config(tmp_path: Path) -> None:
    sim = SlurmSim(CONFIG, seed=5)
    session(sim, tmp_path)
    lines = sim.trace.lines()
    assert config_from(load(lines)[0]) == CONFIG
    assert replay(lines).ok


def test_a_changed_config_shows_differences(tmp_path: Path) -> None:
    sim = SlurmSim(CONFIG, seed=5)
    session(sim, tmp_path)
    report = replay(sim.trace.lines(), config=SlurmConfig(first_job_id=100, max_job_id=200))
    assert not report.ok
    first = report.differences[0]
    assert (first.kind, first.field) == (
        "call sbatch --parsable --job-name=dj-0 --comment=c",
        "stdout",
    )
    assert (first.expected, first.actual) == ("1\n", "100\n")
    assert "difference(s):" in str(report)


def test_the_trace_keeps_only_slurms_environment() -> None:
    sim = SlurmSim(CONFIG)
    sim.run(["squeue"], env={"SLURM_TIME_FORMAT": "%s", "HOME": "/root", "AWS_SECRET": "s"})
    assert sim.trace.records[-1]["env"] == {"SLURM_TIME_FORMAT": "%s"}
    assert env_subset({"TZ": "UTC", "PWD": "/x", "SBATCH_PARTITION": "p", "PATH": "/bin"}) == {
        "PWD": "/x",
        "SBATCH_PARTITION": "p",
        "TZ": "UTC",
    }


def test_a_call_record_holds_what_the_caller_saw() -> None:
    sim = SlurmSim(CONFIG)
    sim.run(["sbatch", "--parsable", "--job-name=dj-T"], stdin=JOB_SH)
    assert sim.trace.records[-1] == {
        "kind": "call",
        "t": sim.clock.now(),
        "argv": ["sbatch", "--parsable", "--job-name=dj-T"],
        "stdin": JOB_SH,
        "env": {},
        "stdout": "1\n",
        "stderr": "",
        "returncode": 0,
    }


def test_recording_can_be_switched_off() -> None:
    sim = SlurmSim(CONFIG)
    sim.trace.enabled = False
    sim.run(["sbatch", "--parsable"], stdin=JOB_SH)
    sim.faults.purge_now()
    assert [r["kind"] for r in sim.trace.records] == ["header"]


def test_a_trace_must_start_with_its_header() -> None:
    with pytest.raises(ValueError, match="header"):
        load(['{"kind":"call"}'])


def test_a_rebuild_without_the_reads_reaches_the_same_state(tmp_path: Path) -> None:
    """What the PATH shims rely on: skipping squeue/sacct/scontrol show changes nothing."""
    sim = SlurmSim(CONFIG, seed=5)
    session(sim, tmp_path)
    records = list(sim.trace.records)
    full, lean = rebuild(records), rebuild(records, skip_reads=True)
    assert len(lean.trace.records) < len(full.trace.records) == len(records)
    answers = []
    for probe in (sim, full, lean):
        probe.advance(50)
        seen = [probe.run(["sbatch", "--parsable"], stdin=JOB_SH).stdout]
        probe.advance(200)
        seen.append(probe.run(["squeue", "-t", "all", "-h", "-o", "%i|%j|%T|%r"]).stdout)
        seen.append(probe.run(["scontrol", "show", "job", "-o"]).stdout)
        answers.append((seen, probe.controller.now, sorted(probe.controller.jobs)))
    assert answers[0] == answers[1] == answers[2]


def test_recording_imports_nothing_that_replays() -> None:
    """Replay imports the recording, never the other way round: ``trace`` (the format and the
    recording) names neither ``replay`` nor what replay drives (the simulator, its faults)
    outside type annotations."""
    tree = ast.parse(Path(trace.__file__).read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in ast.walk(block)
    }
    imported = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    forbidden = {"simulators.slurm.replay", "simulators.slurm.sim", "simulators.slurm.faults"}
    assert imported & forbidden == set()
    assert "simulators.slurm.config" in imported  # the walk sees the module's imports
    # what the conformance harness imports from the trace module stays there
    assert command_argv(["env", "TZ=UTC", "squeue", "-h"]) == ["squeue", "-h"]
