"""Preflight probes, output reading, SSH quoting, and the calls each operation costs."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from adapters.slurm import LocalTransport, SlurmBackend, SshTransport
from dispatch_core import (
    Capability,
    JobSpec,
    NotFound,
    Preflight,
    PreflightOptions,
    Source,
    Tristate,
    VirtualClock,
    make_plan,
)
from simulators.slurm import SlurmConfig, SlurmSim
from simulators.slurm.execute import ExecuteMode

SLURM = ("sbatch", "squeue", "sacct", "scancel", "scontrol")


class Routing:
    """Slurm commands to the simulator, everything else (cat, tail, rm) to this host: the
    filesystem the simulated jobs write to is this host's, as on a login node."""

    def __init__(self, sim: SlurmSim) -> None:
        self.sim = sim
        self.local = LocalTransport()

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        if any(word in SLURM for word in argv[:6]):
            return self.sim.run(argv, stdin=stdin)
        return self.local.run(argv, stdin=stdin, timeout=timeout)


def executing_cluster(**config: object) -> tuple[SlurmSim, SlurmBackend]:
    settings = {"min_job_age": 10, "nodes": ("n1",), "cpus_per_node": 4, **config}
    sim = SlurmSim(SlurmConfig(**settings), clock=VirtualClock(int(time.time())))  # type: ignore[arg-type]
    ExecuteMode(sim)
    return sim, SlurmBackend(Routing(sim), "lab", clock=sim.clock)


@pytest.mark.parametrize("job_comment", [True, False])
def test_preflight_probes_the_cluster(tmp_path: Path, job_comment: bool) -> None:
    sim, backend = executing_cluster(job_comment=job_comment)
    from adapters.slurm.preflight import run_preflight

    lines: list[str] = []
    answers = run_preflight(backend, probe_dir=str(tmp_path), progress=lines.append)
    assert all(a.source is Source.PROBED and a.reason for a in answers.values())
    expected = {
        Capability.ACCOUNTING_HISTORY: Tristate.YES if job_comment else Tristate.NO,
        Capability.NATIVE_REQUEUE: Tristate.YES,
        Capability.WORKING_DIRECTORY: Tristate.YES,
        Capability.PROCS_PER_NODE: Tristate.YES,
        Capability.OUTPUT_PATH: Tristate.YES,
        Capability.OUTPUT_READ: Tristate.YES,
        Capability.OUTPUT_FOLLOW: Tristate.YES,
        Capability.OUTPUT_RETAINED: Tristate.YES,
        Capability.CONTAINER_IMAGE: Tristate.NO,
        Capability.PRE_TERMINATION_SIGNAL: Tristate.YES,
    }
    assert {c: answers[c].value for c in expected} == expected
    assert backend.job_comment is job_comment
    assert lines and lines[0] == "reading scontrol show config"
    assert list(tmp_path.iterdir()) == []  # the probe's output was removed
    assert all(j.state.finished for j in sim.controller.jobs.values())


def test_preflight_without_accounting_or_visible_output(tmp_path: Path) -> None:
    sim = SlurmSim(SlurmConfig(accounting=False, job_requeue=False, run_time=2))
    backend = SlurmBackend(sim, "lab", clock=sim.clock)  # no filesystem through this transport
    answers = backend.preflight()
    assert answers[Capability.ACCOUNTING_HISTORY].value is Tristate.NO
    assert answers[Capability.NATIVE_REQUEUE].value is Tristate.NO
    assert answers[Capability.OUTPUT_READ].value is Tristate.NO
    assert "not readable" in answers[Capability.OUTPUT_READ].reason
    assert answers[Capability.PRE_TERMINATION_SIGNAL].value is Tristate.UNKNOWN
    assert backend.capabilities(None)[Capability.OUTPUT_READ].source is Source.PROBED


def test_preflight_takes_its_options_through_the_spi(tmp_path: Path) -> None:
    """Preflight.preflight(options): the probe directory, the bound and the progress come in
    PreflightOptions, so a caller needs to know nothing of the Slurm adapter."""
    _sim, backend = executing_cluster()
    assert isinstance(backend, Preflight)
    lines: list[str] = []
    options = PreflightOptions(probe_dir=str(tmp_path), bound=60.0, progress=lines.append)
    answers = backend.preflight(options)
    assert answers[Capability.WORKING_DIRECTORY].value is Tristate.YES
    assert str(tmp_path) in answers[Capability.OUTPUT_PATH].reason  # the probe wrote there
    assert lines[0] == "reading scontrol show config"
    assert list(tmp_path.iterdir()) == []


def test_a_signal_that_never_comes_is_probed_no(tmp_path: Path) -> None:
    """A cluster whose jobs get no pre-termination signal: the probe job runs to its limit."""
    sim, backend = executing_cluster()
    sim.controller.signal = lambda job, number, scope: None  # type: ignore[method-assign]
    from adapters.slurm.preflight import run_preflight

    answers = run_preflight(backend, probe_dir=str(tmp_path))
    assert answers[Capability.PRE_TERMINATION_SIGNAL].value is Tristate.NO


def test_a_probe_job_that_never_ends_is_unknown_and_cleaned_up(tmp_path: Path) -> None:
    sim = SlurmSim(SlurmConfig(nodes=("n1",), cpus_per_node=4))
    backend = SlurmBackend(sim, "lab", clock=sim.clock)
    from adapters.slurm.preflight import run_preflight

    answers = run_preflight(backend, probe_dir=str(tmp_path), bound=30)
    assert answers[Capability.ACCOUNTING_HISTORY].value is Tristate.UNKNOWN
    assert all(j.state.finished for j in sim.controller.jobs.values())  # cancelled


def test_output_is_read_and_followed_through_the_transport(tmp_path: Path) -> None:
    sim, backend = executing_cluster()
    spec = JobSpec(
        command=(
            sys.executable,
            "-c",
            "print('hello from', __import__('os').environ['SLURM_PROCID'])",
        ),
        extensions={"dispatch.Output": str(tmp_path / "out.txt")},
    )
    ref = backend.start(make_plan(backend, spec), 1, 1)
    sim.advance(2)
    assert backend.read_output(ref) == b"hello from 0\n"
    assert backend.read_output(ref, 6) == b"from 0\n"
    assert b"".join(backend.follow_output(ref)) == b"hello from 0\n"
    (tmp_path / "out.txt").unlink()
    with pytest.raises(NotFound, match="gone"):
        backend.read_output(ref)


def test_ssh_quotes_every_argument_for_the_remote_shell() -> None:
    transport = SshTransport("login.example", user="alice", port=2222)
    argv = ["scontrol", "update", "JobId=1", "Comment=a b; rm -rf / $(x) `y` 'q' \"d\"\nz"]
    command = transport.command(argv)
    assert command[:2] == ["ssh", "-o"] and "BatchMode=yes" in command
    assert command[-2] == "alice@login.example" and command[-3] == "--"
    # What the remote shell runs, with the program swapped for one that prints its arguments.
    remote_line = command[-1].replace("scontrol", "printf '%s\\0'", 1)
    remote = subprocess.run(
        ["sh", "-c", remote_line],
        capture_output=True,
        text=True,
        check=True,
    )
    assert remote.stdout.split("\0")[:-1] == argv[1:]


def test_a_bad_host_is_refused() -> None:
    with pytest.raises(ValueError):
        SshTransport("-oProxyCommand=evil")


def test_calls_per_operation() -> None:
    """DESIGN §8: a write costs one identity read, the write, and one read-back."""
    sim = SlurmSim(SlurmConfig(), clock=VirtualClock(int(time.time())))
    backend = SlurmBackend(sim, "lab", clock=sim.clock)
    plan = make_plan(backend, JobSpec(command=("true",)))

    def cost(operation) -> int:  # type: ignore[no-untyped-def]
        before = sum(backend.calls.values())
        operation()
        return sum(backend.calls.values()) - before

    ref = None

    def start() -> None:
        nonlocal ref
        ref = backend.start(plan, 1, 1)

    assert cost(start) == 3
    assert ref is not None
    assert cost(lambda: backend.find(plan.job)) == 2
    assert cost(lambda: backend.open(ref)) == 1
    number = 0

    def hold() -> None:
        nonlocal number
        number = backend.hold(ref)

    assert cost(hold) == 3
    assert cost(lambda: backend.release(ref, number)) == 3
    sim.advance(2)
    assert cost(lambda: backend.requeue(ref)) == 4
    sim.advance(2)  # back in the queue (a COMPLETING job would survive the cancel)
    assert cost(lambda: backend.stop(ref)) == 3
    assert cost(lambda: backend.stop(ref)) == 1
