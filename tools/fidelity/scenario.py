"""The scenario model: a :class:`Scenario` is a named list of steps (:class:`Run`,
:class:`Runs`, :class:`WaitState`, :class:`Sleep`, :class:`LoseNode`, :class:`BringBack`),
built by :func:`run`, :func:`runs`, :func:`wait_state`, :func:`sleep`, :func:`lose_node`,
:func:`bring_back` and :func:`submit` (see :mod:`tools.fidelity`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tools.fidelity.cluster import ClusterInfo, FidelityError

MODES: Final = ("comment", "nocomment")
GONE: Final = "GONE"
"""The pseudo-state of :func:`wait_state` for a job squeue no longer knows (purged)."""
LONG_RUN: Final = 300
"""What a job runs that :func:`runs` gives no end: ``sleep 300``, cancelled by the scenario."""
NAME_PREFIX: Final = "fid-"
"""Every job a scenario or the runner submits is named ``fid-...``; the runner cancels only
those."""


@dataclass(frozen=True)
class Run:
    """One Slurm command; ``capture`` binds the id an ``sbatch --parsable`` printed."""

    argv: tuple[str, ...]
    stdin: str | None = None
    capture: str | None = None
    time_format: str = "%s"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "run",
            "argv": list(self.argv),
            "stdin": self.stdin,
            "capture": self.capture,
            "time_format": self.time_format,
        }


@dataclass(frozen=True)
class Runs:
    """Job ``job``'s script runs ``seconds`` once started (None: until it is cancelled)."""

    job: str
    seconds: int | None

    def to_json(self) -> dict[str, Any]:
        return {"kind": "runs", "job": self.job, "seconds": self.seconds}


@dataclass(frozen=True)
class WaitState:
    """Poll squeue until job ``job`` is in one of ``states`` (or ``bound`` seconds pass)."""

    job: str
    states: tuple[str, ...]
    bound: float = 30.0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "wait_state",
            "job": self.job,
            "states": list(self.states),
            "bound": self.bound,
        }


@dataclass(frozen=True)
class Sleep:
    """Let ``seconds`` pass."""

    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"kind": "sleep", "seconds": self.seconds}


@dataclass(frozen=True)
class LoseNode:
    """Node ``node``'s machine is lost: the step ends once slurmctld has marked the node down
    (and so acted on its jobs). On a real cluster its container is stopped; on the simulator
    it is a node failure, at the time the real cluster noticed it when the simulator follows
    a real run (the end of this step there: see :func:`~tools.fidelity.transcript.execute`)."""

    node: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": "lose_node", "node": self.node}


@dataclass(frozen=True)
class BringBack:
    """Lost node ``node`` comes back: the step ends once it is back in the partition. On a
    real cluster its container is started again; the simulator's nodes never go down."""

    node: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": "bring_back", "node": self.node}


Step = Run | Runs | WaitState | Sleep | LoseNode | BringBack


def run(
    *argv: str, stdin: str | None = None, capture: str | None = None, time_format: str = "%s"
) -> Run:
    """A command step (see :class:`Run`)."""
    if not argv:
        raise ValueError("a run step needs a command")
    return Run(tuple(argv), stdin, capture, time_format)


def runs(job: str, seconds: int | None) -> Runs:
    return Runs(job, seconds)


def wait_state(job: str, states: str | Sequence[str], bound: float = 30.0) -> WaitState:
    wanted = (states,) if isinstance(states, str) else tuple(states)
    return WaitState(job, wanted, bound)


def sleep(seconds: float) -> Sleep:
    return Sleep(seconds)


def lose_node(node: str) -> LoseNode:
    return LoseNode(node)


def bring_back(node: str) -> BringBack:
    return BringBack(node)


def step_from_json(data: Mapping[str, Any]) -> Step:
    kind = data.get("kind")
    if kind == "run":
        return Run(
            tuple(data["argv"]),
            data.get("stdin"),
            data.get("capture"),
            data.get("time_format", "%s"),
        )
    if kind == "runs":
        return Runs(data["job"], data["seconds"])
    if kind == "wait_state":
        return WaitState(data["job"], tuple(data["states"]), float(data["bound"]))
    if kind == "sleep":
        return Sleep(float(data["seconds"]))
    if kind == "lose_node":
        return LoseNode(str(data["node"]))
    if kind == "bring_back":
        return BringBack(str(data["node"]))
    raise FidelityError(f"unknown step kind {kind!r}")


def script(seconds: int | None) -> str:
    """The batch script of a scenario's job: ``sleep N`` (or :data:`LONG_RUN`)."""
    return f"#!/bin/sh\nsleep {LONG_RUN if seconds is None else seconds}\n"


def submit(
    label: str, name: str, *options: str, seconds: int | None = None, hold: bool = False
) -> list[Step]:
    """``sbatch --parsable`` of a ``sleep`` job named ``name`` (output to /dev/null), its id
    bound to ``label``, and the matching :func:`runs` step."""
    if not name.startswith(NAME_PREFIX):
        raise ValueError(f"scenario jobs are named {NAME_PREFIX}...: {name!r}")
    argv = ["sbatch", "--parsable", f"--job-name={name}", "--output=/dev/null", *options]
    if hold:
        argv.append("--hold")
    return [run(*argv, stdin=script(seconds), capture=label), runs(label, seconds)]


@dataclass(frozen=True)
class Scenario:
    """A named, scripted exchange with a Slurm cluster.

    ``build`` gives the steps for a cluster (most ignore it); ``job_comment`` is the
    accounting mode the scenario needs (None: either, and it is recorded in both, or in
    one of them when ``mode_free``);
    ``requires`` returns why a cluster cannot run it (None: it can); ``start_id`` asks the
    runner to drive the real id counter there first (unrecorded filler jobs); ``loses_nodes``
    declares a :class:`LoseNode` step."""

    name: str
    description: str
    build: Callable[[ClusterInfo], Sequence[Step]]
    job_comment: bool | None = None
    start_id: Callable[[ClusterInfo], int | None] | None = None
    requires: Callable[[ClusterInfo], str | None] | None = None
    tolerance: int = 2
    mode_free: bool = False
    loses_nodes: bool = False
    """Whether a step loses a node (:class:`LoseNode`): only a target that can
    (``can_lose_nodes``: the cluster in containers, the simulator) runs it."""

    def steps(self, info: ClusterInfo) -> list[Step]:
        return list(self.build(info))

    def skip_reason(self, info: ClusterInfo, can_lose_nodes: bool = False) -> str | None:
        """Why this scenario cannot run on the cluster ``info`` describes (None: it can);
        ``can_lose_nodes`` says whether the target can lose a node for real."""
        if self.loses_nodes and not can_lose_nodes:
            return (
                "loses a node, which only a cluster of its own can (the Slurm in containers: "
                "tests/containers records it)"
            )
        if self.job_comment is not None and self.job_comment != info.job_comment:
            want = "with" if self.job_comment else "without"
            switch = "" if self.job_comment else " --no-job-comment"
            return (
                f"needs AccountingStoreFlags {want} job_comment; the cluster is in "
                f"{info.mode} mode (switch with ci/slurm-up.sh --cred-expire 5{switch})"
            )
        return self.requires(info) if self.requires is not None else None

    def modes(self) -> tuple[str, ...]:
        if self.job_comment is None:
            return MODES
        return ("comment",) if self.job_comment else ("nocomment",)
