"""Deliberately broken Slurm adapters, on the simulated cluster: the proof that the checks of
what only a real adapter does (a batch script's options, a preflight's probe jobs) have teeth.

Each entry of :data:`CATALOGUE` is :class:`~adapters.slurm.SlurmBackend` wrong in exactly one
way, on the ``slurm-sim`` cluster, with a harness factory of the same name, so that any of them
can be named where a harness is expected::

    dispatch-conformance run --harness adapters.slurm.testing.broken:signal_dropped

They live beside the Slurm adapter, not in :mod:`adapters.memory.testing.broken`: the memory
adapter has no batch script and no preflight, so these bugs can only be made in the real
adapter. ``tests/conformance/test_kill_rate.py`` runs the standard tier against each (the full
tier's long stateful programs take minutes per adapter on the simulator) and checks that the
check each was written for, alone, catches it.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from adapters.slurm import SlurmBackend
from adapters.slurm.testing.sim import SimCluster, SlurmSimHarness, sim_cluster
from dispatch_core import ObjectRef, Plan

# -- broken adapters ----------------------------------------------------------------------------


class SignalDropped(SlurmBackend):
    """The batch submission leaves out the pre-termination signal the spec asks for
    (``slurm.Signal`` never becomes ``sbatch --signal``), though PreTerminationSignal is
    declared yes: the job is killed at its time limit without warning."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if op == "sbatch":
            argv = [arg for arg in argv if not arg.startswith("--signal")]
        return super().command(op, argv, stdin)


class PreflightLeavesProbeJobs(SlurmBackend):
    """preflight never cancels its probe jobs: one that has not ended within its bound stays
    queued or running on the cluster after preflight returned."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if op == "preflight" and "scancel" in argv:
            return subprocess.CompletedProcess(list(argv), 0, "", "")
        return super().command(op, argv, stdin)


class EnvDoubleQuoted(SlurmBackend):
    """The batch script exports the spec's env values in double quotes instead of through
    ``shlex.quote``: a ``$(...)``, a backtick or a ``"`` in a value is the shell's."""

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        self._env = dict(plan.spec.env)
        return super().start(plan, submission, attempt)

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if op == "sbatch" and stdin is not None:
            for name, value in getattr(self, "_env", {}).items():
                quoted = f"export {name}={shlex.quote(value)}"
                stdin = stdin.replace(quoted, f'export {name}="{value}"')
        return super().command(op, argv, stdin)


class WorkDirCdInScript(SlurmBackend):
    """The work directory is entered by a ``cd`` in the batch script, its path unquoted,
    instead of through ``sbatch --chdir``: a space, a quote or a ``$`` in it is the shell's."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        chdir = [arg for arg in argv if arg.startswith("--chdir=")]
        if op == "sbatch" and stdin is not None and chdir:
            argv = [arg for arg in argv if not arg.startswith("--chdir=")]
            first, _, rest = stdin.partition("\n")
            stdin = f"{first}\ncd {chdir[0].removeprefix('--chdir=')}\n{rest}"
        return super().command(op, argv, stdin)


# -- the catalogue and its harnesses ---------------------------------------------------------------


@dataclass(frozen=True)
class Broken:
    """One broken Slurm adapter: its name, the one thing wrong with it, its class, and the
    checks that alone catch it (the checks it was written for)."""

    name: str
    fault: str
    backend: type[SlurmBackend]
    only: tuple[str, ...] = ()

    def harness(self) -> BrokenSimHarness:
        return BrokenSimHarness(self)


class BrokenSimHarness(SlurmSimHarness):
    """The ``slurm-sim`` harness (accounting with ``job_comment``) around one broken adapter;
    reopen keeps it broken."""

    def __init__(self, broken: Broken) -> None:
        super().__init__(job_comment=True)
        self.broken = broken
        self.name = f"{__name__}:{broken.name}"

    def new_backend(self) -> SlurmBackend:
        cluster = SimCluster(self.config)
        return self.broken.backend(
            cluster,
            self.config.cluster_name,
            clock=cluster.sim.clock,
            job_comment=self.job_comment,
            user=self.config.user,
        )

    def reopen(self, backend: SlurmBackend) -> SlurmBackend:
        return self.broken.backend(
            sim_cluster(backend),
            backend.cluster,
            clock=backend.clock,
            job_comment=backend.job_comment,
            job_requeue=backend.job_requeue,
            user=backend.user,
            timeout=backend.timeout,
            settle=backend.settle,
        )


CATALOGUE: Final[Sequence[Broken]] = (
    Broken("env_double_quoted", EnvDoubleQuoted.__doc__ or "", EnvDoubleQuoted, only=("SAFE-001",)),
    Broken(
        "work_dir_cd_in_script",
        WorkDirCdInScript.__doc__ or "",
        WorkDirCdInScript,
        only=("SAFE-001",),
    ),
    Broken("signal_dropped", SignalDropped.__doc__ or "", SignalDropped, only=("CAP-018",)),
    Broken(
        "preflight_leaves_probe_jobs",
        PreflightLeavesProbeJobs.__doc__ or "",
        PreflightLeavesProbeJobs,
        only=("CAP-019",),
    ),
)
"""Every broken Slurm adapter, each wrong in exactly one way."""

BY_NAME: Final = {broken.name: broken for broken in CATALOGUE}


def _factory(name: str) -> Callable[[], BrokenSimHarness]:
    def factory() -> BrokenSimHarness:
        return BY_NAME[name].harness()

    factory.__name__ = name
    factory.__doc__ = f"The harness of the broken Slurm adapter {name}: {BY_NAME[name].fault}"
    return factory


signal_dropped = _factory("signal_dropped")
preflight_leaves_probe_jobs = _factory("preflight_leaves_probe_jobs")
env_double_quoted = _factory("env_double_quoted")
work_dir_cd_in_script = _factory("work_dir_cd_in_script")


__all__ = ["BY_NAME", "CATALOGUE", "Broken", "BrokenSimHarness", *BY_NAME]
