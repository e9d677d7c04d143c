"""The worlds the supervisor tests run in: a harness's backend on its own cluster, its clock
and fault injector, a SQLite record, and helpers that play the scheduler and read the
cluster's own ground truth (never only what the adapter says)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.memory.testing.harness import MemoryHarness
from adapters.slurm.identity import parse_slurm_comment
from adapters.slurm.testing.sim import SlurmSimHarness, sim_cluster
from conformance.faults import Faults
from dispatch_core import JobID, ObjectRef, State, VirtualClock
from dispatch_core.record import SqliteRecordStore, TransitionRecord
from dispatch_core.record.types import Action
from dispatch_core.supervise import Supervisor

HARNESSES = ("memory-slurm", "slurm-sim")


class Crash(Exception):
    """Raised from a seam to stand for the process dying there."""


class World:
    """One harness's backend, clock, faults and a record store at ``path``."""

    def __init__(self, name: str, path: Path, **config: Any) -> None:
        self.name = name
        if name == "memory-slurm":
            self.harness: Any = MemoryHarness("slurm", **config)
        elif name == "memory-kubeflow":
            self.harness = MemoryHarness("kubeflow", **config)
        else:
            self.harness = SlurmSimHarness(**config)
        self.backend = self.harness.new_backend()
        self.clock = self.harness.clock(self.backend)
        assert isinstance(self.clock, VirtualClock)
        self.faults = Faults(self.harness, self.backend)
        self.path = path
        self.store = SqliteRecordStore(str(path))
        self.lines: list[str] = []
        self.sim_submitted: list[tuple[str, str]] = []  # (name, comment) of every sbatch
        if name.startswith("slurm"):
            sim_cluster(self.backend).sim.controller.observe(self._on_sim_event)

    def _on_sim_event(self, event: str, job: Any) -> None:
        if event == "submit":
            self.sim_submitted.append((job.name, str(job.comment)))

    def supervisor(self, backend: Any = None, owner: str = "one", **options: Any) -> Supervisor:
        return Supervisor(
            backend if backend is not None else self.backend,
            self.store,
            self.clock,
            owner=owner,
            progress=self.lines.append,
            **options,
        )

    # -- playing the scheduler ------------------------------------------------------------------

    def ref(self, sup: Supervisor, job: JobID) -> ObjectRef:
        ref = sup.status(job).ref
        assert ref is not None
        return ref

    def run(self, ref: ObjectRef) -> None:
        self.faults.let_run(ref)

    def finish(self, ref: ObjectRef, code: int = 0) -> None:
        self.faults.finish(ref, code)

    def driver(
        self, sup: Supervisor, job: JobID, codes: dict[int, int] | Callable[[int], int]
    ) -> Callable[[], None]:
        """Before each step: let the current object run, then end it with ``codes[N]``."""

        def between() -> None:
            entries = self.store.records(job)
            if not entries:
                return
            status = sup.status(job)
            if status.finished or status.ref is None:
                return
            seen = self.backend.open(status.ref)
            code = codes(status.submission) if callable(codes) else codes.get(status.submission, 0)
            if seen.state is State.QUEUED:
                self.run(status.ref)
            elif seen.state is State.RUNNING:
                self.finish(status.ref, code)

        return between

    # -- ground truth -----------------------------------------------------------------------------

    def submissions(self, job: JobID) -> list[int]:
        """The submission number of every object the cluster ever made for ``job``."""
        name = job.discovery_name()
        if self.name.startswith("memory"):
            cluster = self.backend.cluster
            seen = {j.serial: j for j in [*cluster.history, *cluster.jobs.values()] if j.job == job}
            numbers = []
            for made in seen.values():
                if made.comment is not None:
                    numbers.append(parse_slurm_comment(made.comment).submission)
                else:
                    numbers.append(int(made.annotations["dispatch/submission"]))
            return sorted(numbers)
        return sorted(
            parse_slurm_comment(comment).submission
            for made_name, comment in self.sim_submitted
            if made_name == name
        )

    def transitions(self, job: JobID, action: Action | None = None) -> list[TransitionRecord]:
        found = [
            e.record for e in self.store.records(job) if isinstance(e.record, TransitionRecord)
        ]
        return [t for t in found if action is None or t.action is action]


@pytest.fixture(params=HARNESSES)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    made = World(request.param, tmp_path / "record.sqlite")
    yield made
    made.store.close()


@pytest.fixture
def make_world(tmp_path: Path) -> Iterator[Callable[..., World]]:
    made: list[World] = []

    def make(name: str = "memory-slurm", **config: Any) -> World:
        w = World(name, tmp_path / f"record-{len(made)}.sqlite", **config)
        made.append(w)
        return w

    yield make
    for w in made:
        w.store.close()
