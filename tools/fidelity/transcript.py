"""Transcripts: a scenario's run on one target (:class:`Transcript`, one
:class:`StepResult` per step), how the steps are executed (:func:`execute`), the runs on the
real cluster (:func:`run_real`) and on the simulator (:func:`run_on_sim`,
:func:`replay_on_sim`), the cluster lock, and the fixture files transcripts are kept in."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from adapters.slurm.parse import parse_sbatch_id
from tools.fidelity.cluster import ClusterInfo, FidelityError, Foreign
from tools.fidelity.scenario import (
    GONE,
    BringBack,
    LoseNode,
    Run,
    Runs,
    Scenario,
    Step,
    WaitState,
    step_from_json,
)
from tools.fidelity.targets import RealSlurm, SimSlurm, Target

FORMAT_VERSION: Final = 1
DEFAULT_LOCK: Final = "/tmp/slurm-cluster.lock"
_PLACEHOLDER: Final = re.compile(r"\{([A-Z][A-Za-z0-9_]*)\}")


@dataclass
class StepResult:
    """What one step did on one target; ``t`` is its start in seconds after the scenario's."""

    index: int
    step: Step
    t: float = 0.0
    elapsed: float = 0.0
    argv: list[str] | None = None
    stdin: str | None = None
    rc: int | None = None
    stdout: str = ""
    stderr: str = ""
    captured: str | None = None
    reached: str | None = None
    polls: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"index": self.index, "step": self.step.to_json()}
        data["t"] = round(self.t, 3)
        data["elapsed"] = round(self.elapsed, 3)
        if isinstance(self.step, Run):
            data.update(
                argv=self.argv, stdin=self.stdin, rc=self.rc, stdout=self.stdout, stderr=self.stderr
            )
            if self.step.capture is not None:
                data["captured"] = self.captured
        elif isinstance(self.step, WaitState):
            data.update(reached=self.reached, polls=self.polls)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepResult:
        return cls(
            index=int(data["index"]),
            step=step_from_json(data["step"]),
            t=float(data.get("t", 0.0)),
            elapsed=float(data.get("elapsed", 0.0)),
            argv=data.get("argv"),
            stdin=data.get("stdin"),
            rc=data.get("rc"),
            stdout=data.get("stdout", ""),
            stderr=data.get("stderr", ""),
            captured=data.get("captured"),
            reached=data.get("reached"),
            polls=int(data.get("polls", 0)),
        )


@dataclass
class Transcript:
    """One scenario's run on one target."""

    scenario: str
    target: str
    cluster: ClusterInfo
    start: float
    next_job_id: int | None
    scratch: str
    steps: list[StepResult] = field(default_factory=list)
    next_priority: int | None = None
    foreign: list[Foreign] = field(default_factory=list)
    bindings: dict[str, str] = field(default_factory=dict)
    description: str = ""
    tolerance: int = 2
    recorded: str = ""
    wall: float = 0.0
    setup: float = 0.0
    """Seconds the real runner spent between taking the lock and the first step."""

    @property
    def mode(self) -> str:
        return self.cluster.mode

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "scenario": self.scenario,
            "mode": self.mode,
            "description": self.description,
            "target": self.target,
            "recorded": self.recorded,
            "cluster": self.cluster.to_json(),
            "start": self.start,
            "next_job_id": self.next_job_id,
            "next_priority": self.next_priority,
            "foreign": [job.to_json() for job in self.foreign],
            "scratch": self.scratch,
            "tolerance": self.tolerance,
            "wall": round(self.wall, 3),
            "setup": round(self.setup, 3),
            "bindings": self.bindings,
            "steps": [step.to_json() for step in self.steps],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Transcript:
        if data.get("format") != FORMAT_VERSION:
            raise FidelityError(f"unknown transcript format {data.get('format')!r}")
        return cls(
            scenario=data["scenario"],
            target=data.get("target", "real"),
            cluster=ClusterInfo.from_json(data["cluster"]),
            start=float(data["start"]),
            next_job_id=data.get("next_job_id"),
            next_priority=data.get("next_priority"),
            foreign=[Foreign.from_json(job) for job in data.get("foreign", [])],
            scratch=data.get("scratch", ""),
            steps=[StepResult.from_json(step) for step in data["steps"]],
            bindings=dict(data.get("bindings", {})),
            description=data.get("description", ""),
            tolerance=int(data.get("tolerance", 2)),
            recorded=data.get("recorded", ""),
            wall=float(data.get("wall", 0.0)),
            setup=float(data.get("setup", 0.0)),
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Transcript:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _resolve(text: str, bindings: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in bindings:
            raise KeyError(name)
        return bindings[name]

    return _PLACEHOLDER.sub(value, text)


def execute(
    steps: Sequence[Step],
    target: Target,
    start: float,
    times: Sequence[float] | None = None,
) -> tuple[list[StepResult], dict[str, str]]:
    """Run ``steps`` on ``target``; with ``times`` (each step's start, seconds after
    ``start``, from another run), the target's time is first moved there (the simulator
    following a real run)."""
    bindings: dict[str, str] = {"START": iso(start)}
    results: list[StepResult] = []
    for index, step in enumerate(steps):
        if times is not None and index < len(times):
            # A lost node acts when the real cluster noticed it: when its step ended there.
            at = index + 1 if isinstance(step, LoseNode) and index + 1 < len(times) else index
            target.align(start + times[at])
        if isinstance(step, Run):
            target.steady()
        began = target.now()
        result = StepResult(index, step, t=began - start)
        try:
            _do(step, target, bindings, result)
        except KeyError as unbound:
            result.rc = None
            result.stderr = f"fidelity: unbound placeholder {{{unbound.args[0]}}}\n"
        result.elapsed = target.now() - began
        results.append(result)
    del bindings["START"]
    return results, bindings


def _do(step: Step, target: Target, bindings: dict[str, str], result: StepResult) -> None:
    if isinstance(step, Run):
        argv = [_resolve(word, bindings) for word in step.argv]
        stdin = _resolve(step.stdin, bindings) if step.stdin is not None else None
        full = ["env", "TZ=UTC", "LC_ALL=C", f"SLURM_TIME_FORMAT={step.time_format}", *argv]
        result.argv, result.stdin = full, stdin
        done = target.command(full, stdin)
        result.rc, result.stdout, result.stderr = done.returncode, done.stdout, done.stderr
        if step.capture is not None:
            captured = parse_sbatch_id(done.stdout)
            if done.returncode == 0 and captured is not None:
                bindings[step.capture] = result.captured = captured
    elif isinstance(step, Runs):
        target.runs(bindings[step.job], step.seconds)
    elif isinstance(step, LoseNode):
        target.lose_node(step.node)
    elif isinstance(step, BringBack):
        target.bring_back(step.node)
    elif isinstance(step, WaitState):
        job_id = bindings[step.job]
        began = target.now()
        while True:
            state = _state(target, job_id)
            result.polls += 1
            if state in step.states:
                result.reached = state
                return
            if target.now() - began >= step.bound:
                result.reached = f"timeout (last {state})"
                return
            target.pause(target.poll_interval)
    else:
        target.pause(step.seconds)


def _state(target: Target, job_id: str) -> str:
    done = target.command(["squeue", "-t", "all", "-h", "-j", job_id, "-o", "%T"], None)
    state = done.stdout.strip()
    if not state and (done.returncode == 0 or "Invalid job id" in done.stderr):
        return GONE
    return state or f"rc={done.returncode}"


def run_real(scenario: Scenario, real: RealSlurm, lock: str | None = None) -> Transcript:
    """Run ``scenario`` on the real cluster (under ``lock``, an exclusive ``flock`` on that
    file, as ``flock(1)`` takes it): an empty cluster, the id counter known, the steps, then
    this runner's jobs cancelled."""
    info = real.info()
    reason = scenario.skip_reason(info, real.can_lose_nodes)
    if reason is not None:
        raise FidelityError(f"{scenario.name}: {reason}")
    with cluster_lock(lock):
        locked = real.now()
        real.forget_info()  # the cluster may have been reconfigured while we waited
        info = real.info()
        reason = scenario.skip_reason(info, real.can_lose_nodes)
        if reason is not None:
            raise FidelityError(f"{scenario.name}: {reason}")
        start_id = scenario.start_id(info) if scenario.start_id is not None else None
        next_job_id = real.prepare(start_id)
        info = dataclasses.replace(info, alloc_node=real.alloc_node, pending_mem=real.pending_mem)
        steps = scenario.steps(info)
        start = real.now()
        try:
            results, bindings = execute(steps, real, start)
        finally:
            real.cleanup()
        wall = real.now() - start
    return Transcript(
        setup=start - locked,
        scenario=scenario.name,
        target="real",
        cluster=info,
        start=start,
        next_job_id=next_job_id,
        next_priority=real.next_priority,
        foreign=list(real.foreign),
        scratch=real.scratch,
        steps=results,
        bindings=bindings,
        description=scenario.description,
        tolerance=scenario.tolerance,
        recorded=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        wall=wall,
    )


def run_on_sim(
    scenario: Scenario,
    info: ClusterInfo,
    start: float = 1_796_040_000.0,
    next_job_id: int | None = None,
    seed: int = 0,
) -> Transcript:
    """``scenario`` on a simulator of ``info`` alone (its own clock; ids from ``next_job_id``,
    else from ``start_id`` or FirstJobId)."""
    if next_job_id is None and scenario.start_id is not None:
        next_job_id = scenario.start_id(info)
    target = SimSlurm.for_cluster(info, start, next_job_id, seed=seed)
    results, bindings = execute(scenario.steps(info), target, start)
    return Transcript(
        scenario=scenario.name,
        target="sim",
        cluster=info,
        start=start,
        next_job_id=next_job_id,
        scratch=target.scratch,
        steps=results,
        bindings=bindings,
        description=scenario.description,
        tolerance=scenario.tolerance,
        wall=target.now() - start,
    )


def replay_on_sim(real: Transcript, seed: int = 0) -> Transcript:
    """The real transcript's steps on a fresh simulator that follows the real run's clock."""
    target = SimSlurm.for_cluster(
        real.cluster, real.start, real.next_job_id, real.next_priority, seed, real.foreign
    )
    steps = [result.step for result in real.steps]
    times = [result.t for result in real.steps]
    results, bindings = execute(steps, target, real.start, times)
    return Transcript(
        scenario=real.scenario,
        target="sim",
        cluster=real.cluster,
        start=real.start,
        next_job_id=real.next_job_id,
        next_priority=real.next_priority,
        foreign=list(real.foreign),
        scratch=target.scratch,
        steps=results,
        bindings=bindings,
        description=real.description,
        tolerance=real.tolerance,
        wall=target.now() - real.start,
    )


@contextlib.contextmanager
def cluster_lock(path: str | None) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (the one ``flock(1)`` takes), or nothing."""
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# -- fixtures ----------------------------------------------------------------------------------


def fixture_path(directory: str | os.PathLike[str], scenario: str, mode: str) -> Path:
    return Path(directory) / f"{scenario}.{mode}.json"


def fixtures(directory: str | os.PathLike[str]) -> list[Path]:
    """The recorded transcripts in ``directory`` (``<scenario>.<mode>.json``), sorted."""
    return sorted(Path(directory).glob("*.json"))
