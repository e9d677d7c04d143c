"""The harness an adapter author implements: how the suites reach the adapter under test.

A harness is small (the Go CDK ``drivertest`` idea): it makes fresh backends on its target,
re-opens one as a new process would, gives the suites its clock, and, where it can, a fault
injector and the environment each rank of each execution saw. Every obligation is in the
docstrings; a check that needs something the harness cannot provide is skipped with the
reason "harness cannot inject <fault>", never passed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from dispatch_core import Backend, Clock, JobID, ObjectRef


class CannotInject(Exception):
    """Raised by a harness or its fault injector for a fault or a probe it cannot provide.

    A harness whose whole target is absent (no cluster answers) says what is missing in
    ``missing``, in words a site's administrator reads (``dispatch-conformance preflight``
    prints it); the message stays ``harness cannot inject <fault>`` for the checks."""

    def __init__(self, fault: str, *, missing: str = "") -> None:
        super().__init__(f"harness cannot inject {fault}")
        self.fault = fault
        self.missing = missing


class HarnessUnavailable(Exception):
    """Raised by a harness whose target is missing where it must not be skipped (a real
    cluster under ``CI=true``): every check fails with this reason instead of skipping.
    ``missing`` is as for :class:`CannotInject`."""

    def __init__(self, message: str, *, missing: str = "") -> None:
        super().__init__(message)
        self.missing = missing


class FaultInjector:
    """The faults a harness can cause on its target, each acting on one object, as the
    scheduler or an administrator would (never through the adapter under test).

    Every method here raises :class:`CannotInject` until a harness overrides it; a check that
    needs a fault the harness lacks is skipped with that reason."""

    def let_run(self, ref: ObjectRef) -> None:
        """The scheduler starts the (queued, eligible) object now, and its execution begins."""
        raise CannotInject("let_run")

    def finish(self, ref: ObjectRef, exit_code: int = 0) -> None:
        """The running object's command exits with ``exit_code``."""
        raise CannotInject("finish")

    def requeue_underneath(self, ref: ObjectRef) -> None:
        """An administrator requeues the started object without asking the adapter."""
        raise CannotInject("requeue_underneath")

    def purge(self, ref: ObjectRef) -> None:
        """The ended object leaves the scheduler's live view (its history, if kept, stays)."""
        raise CannotInject("purge")

    def reuse_id(self, ref: ObjectRef) -> None:
        """The ended object is purged and its native id is taken by a new object that is not
        the ref's (another name, or another submission of the same job, as the harness can)."""
        raise CannotInject("reuse_id")

    def reuse_id_next(self, ref: ObjectRef) -> None:
        """The ended object is purged and its native id becomes the next one the scheduler
        hands out, so the next submission (of any job, this one included) takes it."""
        raise CannotInject("reuse_id_next")

    def lose_comments(self) -> None:
        """From now on, history keeps no comments (Slurm without job_comment)."""
        raise CannotInject("lose_comments")

    def lose_node(self, ref: ObjectRef) -> None:
        """The node under the running object is lost."""
        raise CannotInject("lose_node")

    def lose_next_reply(self, operation: str) -> None:
        """The next ``operation`` (start, stop, hold, release, requeue) takes effect but its
        reply is lost: the adapter sees a timeout."""
        raise CannotInject(f"lose_next_reply({operation})")

    def inject_named(self, job_id: JobID, name: str, comment: str) -> str:
        """A job of the adapter's user named ``name`` (e.g. a case variant or a comma name of
        ``job_id``'s discovery name) carrying ``comment``; returns its native id."""
        raise CannotInject("inject_named")


class Harness(ABC):
    """What an adapter author writes to run the suites against an adapter.

    One harness value serves a whole run; the suites call :meth:`new_backend` once per check
    (a stateful check, once per generated program, so that each starts on a clean target) and
    never share a backend between checks. :meth:`close` is called once at the end."""

    name: str = "unnamed"
    schedule_within: float = 30.0
    """Seconds (on the harness clock) within which the scheduler starts a queued, eligible
    object when it has room: how long a check watches a held object to see it does not."""
    stateful_examples: int | None = None
    """How many programs each stateful check generates (None: the suite's own number); a
    harness whose every step takes real seconds lowers it, and says so in its docs."""
    stateful_steps: int | None = None
    """How many steps each generated program takes at most (None: the suite's own number)."""

    @abstractmethod
    def new_backend(self) -> Backend:
        """A fresh backend on a clean target (a new cluster for a simulator), ready to use.
        Called once per check, or once per program of a stateful check."""

    @abstractmethod
    def reopen(self, backend: Backend) -> Backend:
        """A second adapter instance on the same cluster as ``backend``, as after a process
        restart: it shares nothing with ``backend`` but the scheduler."""

    @abstractmethod
    def clock(self, backend: Backend) -> Clock:
        """The clock ``backend``'s cluster runs on; every wait in a check goes through it (a
        virtual clock makes waits free)."""

    def job_command(self) -> tuple[str, ...]:
        """The command of the checks' jobs when a check names none. The default, ``true``,
        suits a harness whose scheduler decides when a job ends (a simulator); a harness on a
        real scheduler returns a command that runs until its fault injector's ``finish`` or a
        stop ends it, so that a started object stays running as the checks expect."""
        return ("true",)

    def faults(self, backend: Backend) -> FaultInjector:
        """The fault injector of ``backend``'s cluster. The default injects nothing."""
        return FaultInjector()

    def executions(self, backend: Backend, ref: ObjectRef) -> Sequence[Sequence[Mapping[str, str]]]:
        """For each execution of the object ``ref`` names, in order, the environment each rank
        saw. Raise :class:`CannotInject` ("executions") when the harness cannot see them."""
        raise CannotInject("executions")

    def close(self) -> None:  # noqa: B027  (optional: most harnesses hold nothing)
        """Release what the harness holds (called once, after the last check)."""
