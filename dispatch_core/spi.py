"""The adapter SPI: what a backend adapter implements.

``Backend`` is required. The other protocols are optional: the core detects them with
``isinstance`` (they are ``runtime_checkable``), as the Go original uses type assertions.
Every write an adapter performs is preceded by the identity check of seed 001; a write whose
outcome is uncertain raises :class:`~dispatch_core.errors.OutcomeUnknown`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from dispatch_core.model import (
    Capability,
    JobID,
    JobSpec,
    NativeOffer,
    ObjectRef,
    Observation,
    Plan,
    Policy,
    RuleSupport,
    Support,
)


@runtime_checkable
class Backend(Protocol):
    """A scheduler adapter: answers for capabilities and rules, starts, finds, opens and stops."""

    @property
    def name(self) -> str:
        """The adapter instance's cluster name; every ObjectRef it makes carries it."""
        ...

    def capabilities(self, spec: JobSpec | None) -> Mapping[Capability, Support]:
        """What this cluster can do for ``spec`` (or in general when ``spec`` is None).
        A capability left out is ``unknown``."""
        ...

    def rules(self, policy: Policy) -> Sequence[RuleSupport]:
        """One answer per rule of ``policy``, in policy order."""
        ...

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        """Submit ``plan.job`` as scheduler-submission ``submission`` of user attempt ``attempt``.
        Idempotent per (job, submission): a retry after a lost reply never makes a second object."""
        ...

    def find(self, job_id: JobID) -> Sequence[Observation]:
        """Every scheduler object named for ``job_id``, exact matches only; foreign ones are
        reported with ``foreign`` set, never dropped."""
        ...

    def open(self, ref: ObjectRef) -> Observation:
        """The object ``ref`` names, after the identity check; ``NotFound`` when it fails."""
        ...

    def stop(self, ref: ObjectRef) -> None:
        """Cancel the object ``ref`` names; succeeds when there is nothing (left) to cancel, and
        verifies afterwards that it ended."""
        ...


@runtime_checkable
class Holder(Protocol):
    """Numbered holds that survive a reopen and refuse a release naming another instance."""

    def hold(self, ref: ObjectRef) -> int:
        """Place a hold on the object and return its number (the next one for that object)."""
        ...

    def release(self, ref: ObjectRef, hold: int) -> None:
        """Release hold number ``hold``; ``Conflict`` when the object carries another or none."""
        ...


@runtime_checkable
class Requeuer(Protocol):
    """Put an object back in the queue under the same native handle."""

    def requeue(self, ref: ObjectRef) -> None: ...


@runtime_checkable
class Restarter(Protocol):
    """Restart a started object in place (the scheduler reruns it under the same native handle,
    its restart count raised, so the new execution has its own identity)."""

    def restart(self, ref: ObjectRef) -> None: ...


@runtime_checkable
class OwnRetries(Protocol):
    """An adapter whose scheduler may rerun a job on its own, unasked and outside any rule a
    plan pushed down (a Slurm job left requeueable, a runtime's JobSet ``maxRestarts``)."""

    def own_retries(self, spec: JobSpec) -> str:
        """Why the scheduler would rerun ``spec``'s job on its own, or "" when it would not.
        A supervisor that enforces any rule of the job refuses the submit when this is not ""
        (one failure would otherwise be retried twice: a duplicate execution)."""
        ...


@runtime_checkable
class NativePolicyCompiler(Protocol):
    """Enforces some recovery rules in the scheduler itself."""

    def native(self, policy: Policy) -> Sequence[Support]:
        """One answer per rule, in policy order: would the scheduler enforce it itself."""
        ...

    def compile(self, policy: Policy) -> NativeOffer:
        """Given the whole policy with every rule's full budget, the rules compiled natively."""
        ...


@runtime_checkable
class IdentityWeakener(Protocol):
    """An adapter that may rerun part of an execution under the identity it already had."""

    def identity_weakened(self, spec: JobSpec) -> str:
        """Why ``spec`` would not keep execution identity intact, or "" when it does."""
        ...


@runtime_checkable
class OutputReader(Protocol):
    """Read and follow a submission's output."""

    def read_output(self, ref: ObjectRef, offset: int = 0) -> bytes:
        """The output written so far, from byte ``offset``; ``NotFound`` when it is gone."""
        ...

    def follow_output(self, ref: ObjectRef) -> Iterator[bytes]:
        """The output as it is written, until the execution ends."""
        ...


@dataclass(frozen=True)
class PreflightOptions:
    """How a preflight probes: where on the cluster it may write its probe files, how long
    each probe may take (seconds of the backend's clock), and where it tells its progress (one
    line per step). The caller needs to know nothing of the adapter to pass them."""

    probe_dir: str = "/tmp"
    bound: float = 180.0
    progress: Callable[[str], None] | None = None


@runtime_checkable
class Preflight(Protocol):
    """Probes that decide capabilities on the live cluster."""

    def preflight(self, options: PreflightOptions | None = None) -> dict[Capability, Support]:
        """The probed answers, each with source ``probed`` and a reason; bounded by
        ``options.bound`` per probe, and removing whatever it submitted or wrote."""
        ...


__all__ = [
    "Backend",
    "Holder",
    "IdentityWeakener",
    "NativePolicyCompiler",
    "OutputReader",
    "OwnRetries",
    "Preflight",
    "PreflightOptions",
    "Requeuer",
    "Restarter",
]
