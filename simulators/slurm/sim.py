"""SlurmSim: one simulated Slurm 22.05 cluster behind the command-line facade adapters call.

``SlurmSim.run(argv, stdin=None, env=None)`` takes the argv of ``sbatch``, ``squeue``,
``sacct``, ``scancel`` or ``scontrol`` and returns a ``subprocess.CompletedProcess`` with the
stdout, stderr and exit status real Slurm 22.05 gives. Nothing reads the wall clock: the
cluster's time is ``sim.clock`` (a :class:`~dispatch_core.VirtualClock` unless one is given),
and every call first replays what happened up to the clock's time.

Faults (see :mod:`simulators.slurm.faults`) can make a call time out before it takes effect or
lose its reply after, both surfacing as ``subprocess.TimeoutExpired``, as from a transport.
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from dispatch_core import Clock, VirtualClock
from simulators.slurm.config import SlurmConfig
from simulators.slurm.controller import Controller, Job, JobState
from simulators.slurm.faults import Faults
from simulators.slurm.trace import Trace, split_env_prefix


@dataclass
class Output:
    """What a command printed and its exit status."""

    stdout: str = ""
    stderr: str = ""
    returncode: int = 0

    def out(self, line: str) -> None:
        self.stdout += line + "\n"

    def err(self, line: str) -> None:
        self.stderr += line + "\n"


class Command(Protocol):
    """One Slurm command: parse ``args`` (argv without the program) and act on ``sim``."""

    def __call__(
        self, sim: SlurmSim, args: list[str], stdin: str | None, env: Mapping[str, str]
    ) -> Output: ...


COMMANDS: dict[str, Command] = {}


def command(name: str) -> Callable[[Command], Command]:
    """Register the implementation of one Slurm command."""

    def register(implementation: Command) -> Command:
        COMMANDS[name] = implementation
        return implementation

    return register


class SlurmSim:
    """A deterministic Slurm cluster: the same seed and the same calls give the same bytes."""

    def __init__(
        self, config: SlurmConfig | None = None, seed: int = 0, clock: Clock | None = None
    ) -> None:
        self.config = config if config is not None else SlurmConfig()
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self.controller = Controller(self.config, self.clock)
        self.trace = Trace(self.config, seed, self.clock.now())
        self.faults = Faults(self)

    # -- the facade -----------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run one Slurm command as real Slurm would, on the simulated cluster."""
        from simulators.slurm import commands  # noqa: F401  (registers every command)

        argv = list(argv)
        env = dict(env or {})
        call = self.trace.begin(self.clock.now(), argv, stdin, env, timeout)
        assignments, command_argv = split_env_prefix(argv)
        env.update(assignments)
        if not command_argv:
            raise ValueError("argv names no command")
        program = command_argv[0].rsplit("/", 1)[-1]
        self.faults.before(command_argv, call)
        self.controller.sync()
        implementation = COMMANDS.get(program)
        if implementation is None:
            result = Output(stderr=f"{program}: command not found\n", returncode=127)
        else:
            result = implementation(self, command_argv[1:], stdin, env)
        completed = subprocess.CompletedProcess(
            argv, result.returncode, result.stdout, result.stderr
        )
        self.faults.after(command_argv, call, completed)
        self.trace.end(call, completed)
        return completed

    # -- what a test decides ----------------------------------------------------------------------

    def job(self, job_id: int) -> Job:
        """The live job record (a KeyError-free lookup raises SlurmError for unknown ids)."""
        self.controller.sync()
        return self.controller.get(job_id)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass on the cluster."""
        advance = getattr(self.clock, "advance", None)
        if advance is None:
            raise TypeError("the simulator's clock cannot be advanced")
        advance(seconds)
        self.controller.sync()

    def finish(self, job_id: int, exit_code: int = 0) -> None:
        """The running job's script exits with ``exit_code``."""
        self.controller.sync()
        self.controller.finish(job_id, exit_code)
        self.trace.drive(self.clock.now(), "finish", job_id=job_id, exit_code=exit_code)

    def fail(self, job_id: int, state: JobState | str, exit_code: int = 0) -> None:
        """The running job ends in ``state``: FAILED, OUT_OF_MEMORY, TIMEOUT, DEADLINE,
        PREEMPTED, BOOT_FAIL or NODE_FAIL."""
        self.controller.sync()
        state = JobState(state)
        reasons = {
            JobState.FAILED: "NonZeroExitCode",
            JobState.TIMEOUT: "TimeLimit",
            JobState.NODE_FAIL: "NodeDown",
            JobState.OUT_OF_MEMORY: "OutOfMemory",
        }
        self.controller.fail(job_id, state, reasons.get(state, "None"), exit_code)
        self.trace.drive(self.clock.now(), "fail", job_id=job_id, state=state, exit_code=exit_code)

    def run_for(self, job_id: int, seconds: int, exit_code: int = 0) -> None:
        """The job's script runs ``seconds`` once started (its current run, if running), then
        exits with ``exit_code``."""
        self.controller.sync()
        self.controller.set_run_time(self.controller.get(job_id), seconds, exit_code)
        self.trace.drive(
            self.clock.now(), "run_for", job_id=job_id, seconds=seconds, exit_code=exit_code
        )
