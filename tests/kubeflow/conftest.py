"""Fixtures: a KubeSim served over HTTP, the official client, and a KubeflowBackend on it.

The adapter's clock is the simulator's: its bounded waits advance virtual time (and, with
Kueue, let the readmission gate make a pass), so no test sleeps for real.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import config

from adapters.kubeflow import KubeflowBackend
from dispatch_core import JobID, JobSpec, Plan
from simulators.kubernetes import KubeSim
from simulators.kubernetes.config import KubeConfig, QueueConfig
from simulators.kubernetes.server import Server

NS = "default"
QUEUE = "user-queue"


class SimClock:
    """The simulator's time; a wait advances it (and lets the gate pass, when there is one)."""

    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self.gate: Any = None

    def now(self) -> float:
        return self.sim.clock.now()

    def sleep(self, seconds: float) -> None:
        self.sim.advance(seconds)
        if self.gate is not None:
            self.gate.sync()
            self.sim.settle()


@dataclass
class World:
    sim: KubeSim
    server: Server
    api: Any
    backend: KubeflowBackend
    clock: SimClock
    kueue: bool
    made: list[Any] = field(default_factory=list)

    def advance(self, seconds: float) -> None:
        """Move time on in one-second steps (the gate passes after each)."""
        for _ in range(int(seconds)):
            self.clock.sleep(1.0)

    def new_backend(self, **kwargs: Any) -> KubeflowBackend:
        args: dict[str, Any] = {"queue": QUEUE if self.kueue else None, "clock": self.clock}
        args.update(kwargs)
        return KubeflowBackend(self.api, NS, "kf", **args)

    def plan(self, spec: JobSpec | None = None, backend: KubeflowBackend | None = None) -> Plan:
        spec = spec if spec is not None else JobSpec(command=("train", "--epochs", "1"))
        return Plan(job=JobID(), backend="kf", spec=spec)


def _world(kueue: bool, gate: bool = True) -> Iterator[World]:
    queue = QueueConfig(admission_checks=("dispatch-readmission",) if gate else ())
    sim = KubeSim(KubeConfig(kueue=kueue, queue=queue, default_run_seconds=None), seed=7)
    with sim.serve() as server:
        api: Any = config.new_client_from_config(config_file=server.kubeconfig)  # type: ignore[no-untyped-call]
        clock = SimClock(sim)
        if kueue and gate:
            from adapters.kubeflow.admission import ReadmissionGate

            clock.gate = ReadmissionGate(api, namespace=NS, clock=clock)
        backend = KubeflowBackend(api, NS, "kf", queue=QUEUE if kueue else None, clock=clock)
        yield World(sim, server, api, backend, clock, kueue)
        api.close()


@pytest.fixture
def plain() -> Iterator[World]:
    """Without Kueue."""
    yield from _world(False)


@pytest.fixture
def queued() -> Iterator[World]:
    """With Kueue and the readmission gate on the ClusterQueue."""
    yield from _world(True)


@pytest.fixture(params=["plain", "kueue"])
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    """Both."""
    yield from _world(request.param == "kueue")
