"""The built-in harnesses of the memory adapter: ``memory-slurm`` and ``memory-kubeflow``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from adapters.memory import MemoryBackend, Shape
from conformance.harness import CannotInject, FaultInjector, Harness
from dispatch_core import Backend, Clock, JobID, ObjectRef, VirtualClock


class MemoryFaults(FaultInjector):
    """Every fault the memory scheduler models, on one backend's cluster."""

    def __init__(self, backend: MemoryBackend) -> None:
        self.backend = backend
        self.cluster = backend.cluster

    def let_run(self, ref: ObjectRef) -> None:
        job = self.cluster.require(ref.id)
        wait = job.eligible - self.cluster.now()
        clock = self.cluster.clock
        if wait > 0 and isinstance(clock, VirtualClock):
            clock.advance(wait)
        self.cluster.tick()
        self.cluster.let_run(ref.id)

    def finish(self, ref: ObjectRef, exit_code: int = 0) -> None:
        self.cluster.finish(ref.id, exit_code)

    def requeue_underneath(self, ref: ObjectRef) -> None:
        self.cluster.requeue_underneath(ref.id)

    def purge(self, ref: ObjectRef) -> None:
        self.cluster.purge(ref.id)

    def reuse_id(self, ref: ObjectRef) -> None:
        if self.cluster.shape != "slurm":
            raise CannotInject("reuse_id (Kubernetes never reuses a UID)")
        self.cluster.reuse_id(ref.id)

    def reuse_id_next(self, ref: ObjectRef) -> None:
        if self.cluster.shape != "slurm":
            raise CannotInject("reuse_id_next (Kubernetes never reuses a UID)")
        job = self.cluster.live(ref.id)
        if job is not None:
            self.cluster.purge(ref.id)
        self.cluster._next_id = int(ref.id)

    def lose_comments(self) -> None:
        if self.cluster.shape != "slurm":
            raise CannotInject("lose_comments (no accounting history on Kubernetes)")
        self.cluster.job_comment = False

    def lose_node(self, ref: ObjectRef) -> None:
        self.cluster.lose_node(ref.id)

    def lose_next_reply(self, operation: str) -> None:
        self.cluster.fault("*", f"lose-reply-{operation}")

    def inject_named(self, job_id: JobID, name: str, comment: str) -> str:
        if self.cluster.shape == "kubeflow":
            if name != job_id.discovery_name():
                raise CannotInject("inject_named (Kubernetes finds objects by label, not name)")
            name = f"{name.lower()}-foreign-{len(self.cluster.jobs)}"
        return self.cluster.submit(name, comment, None, job_id).native_id


class MemoryHarness(Harness):
    """The memory adapter, on a fresh in-memory cluster with a virtual clock per check."""

    def __init__(self, shape: Shape = "slurm", **cluster: object) -> None:
        self.shape = shape
        self.name = f"memory-{shape}"
        self.cluster = {"max_job_id": 50, "min_job_age": 60.0, **cluster}

    def new_backend(self) -> Backend:
        return MemoryBackend(self.shape, clock=VirtualClock(), **self.cluster)  # type: ignore[arg-type]

    def reopen(self, backend: Backend) -> Backend:
        return _memory(backend).reopen()

    def clock(self, backend: Backend) -> Clock:
        return _memory(backend).cluster.clock

    def faults(self, backend: Backend) -> FaultInjector:
        return MemoryFaults(_memory(backend))

    def executions(self, backend: Backend, ref: ObjectRef) -> Sequence[Sequence[Mapping[str, str]]]:
        return [e.ranks for e in _memory(backend).executions(ref)]


def _memory(backend: Backend) -> MemoryBackend:
    if not isinstance(backend, MemoryBackend):
        raise TypeError(f"the memory harness was given {type(backend).__name__}")
    return backend


def memory_slurm() -> MemoryHarness:
    return MemoryHarness("slurm")


def memory_kubeflow() -> MemoryHarness:
    return MemoryHarness("kubeflow")
