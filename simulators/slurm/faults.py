"""Named faults of a simulated Slurm cluster, each callable on its own and each recorded in the
trace, and a seeded schedule that draws them at virtual times.

``sim.faults`` (a :class:`Faults`) offers:

- ``requeue_underneath(job_id, hold=False)``: an administrator requeues the job (no identity
  check: nobody asks the adapter);
- ``preempt(job_id, mode="requeue"|"cancel")``: the running job is preempted; its accounting
  row reads PREEMPTED; requeued when it may be (``--requeue``), else it ends PREEMPTED;
- ``node_failure(node)``: the node's running jobs are requeued when requeueable, else end
  NODE_FAIL;
- ``purge_now(job_id=None)``: finished jobs leave slurmctld's memory now (MinJobAge elapsed);
- ``reuse_id(job_id, name=..., user=..., uid=...)``: the finished job is purged, the id counter
  is driven to its id, and a new, foreign job (another name, another user) takes it;
- ``rewrite_comment(job_id, comment)`` and ``rename_job(job_id, name)``: the owner changes the
  fields an adapter may identify its jobs by;
- ``timeout_before(command=None, args=(), wait=None)``: the next matching call times out before
  it takes effect; ``lose_reply(...)``: the next matching call takes effect and its reply is
  lost. Both raise ``subprocess.TimeoutExpired`` from ``SlurmSim.run`` after ``wait`` virtual
  seconds (default: the call's ``timeout``), as a transport would;
- ``slurmctld_down(seconds)``: the controller does not answer for ``seconds``; commands fail
  with their connect-failure messages (sacct still answers: it talks to slurmdbd).

A fault's arguments are checked before anything happens (:func:`check_arguments`, then the
target job exists, the node is the cluster's): a refused argument raises (``FaultError``, or
``SlurmError`` for an unknown job id, as before) and leaves no record. A fault that is aimed
right but cannot hit (the job is not running, requeue is disabled, ...) is recorded with its
``error``, as the trace documents.

``schedule(seed, count=..., within=..., kinds=...)`` draws faults at virtual times from
``random.Random(seed)``: the same seed gives the same schedule. A drawn fault picks its target
when it fires, among the jobs it can hit then (by id order, with the drawn ``pick``), and is
recorded as skipped when there is none.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import random
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, TypeVar

from simulators.slurm.controller import (
    INVALID_JOB_ID,
    HoldKind,
    JobState,
    SlurmError,
    Submission,
)
from simulators.slurm.trace import Record, command_argv

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

P = ParamSpec("P")
R = TypeVar("R")

COMMANDS: Final = ("sbatch", "squeue", "sacct", "scancel", "scontrol")
FOREIGN_SCRIPT: Final = "#!/bin/sh\n# a job of another user that took a reused id\nsleep 3600\n"


class FaultError(Exception):
    """A fault that cannot hit what it was aimed at (its ``text`` is recorded in the trace)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@dataclass
class Armed:
    """A one-shot fault waiting for the next call that matches it."""

    kind: str  # "before" or "reply-lost"
    command: str | None = None
    args: tuple[str, ...] = ()
    wait: float | None = None

    def matches(self, argv: Sequence[str]) -> bool:
        words = command_argv(argv)
        if not words:
            return False
        if self.command is not None and words[0].rsplit("/", 1)[-1] != self.command:
            return False
        return all(arg in words[1:] for arg in self.args)


@dataclass(frozen=True)
class PlannedFault:
    """One fault of a schedule: when, which, the target pick and its drawn arguments."""

    at: int
    name: str
    pick: int
    args: dict[str, Any] = field(default_factory=dict)


FAULTS: dict[str, str] = {}
"""Every named fault: its name and the first line of its description."""

PREEMPT_MODES: Final = ("requeue", "cancel")
JOB_FAULTS: Final = frozenset({"requeue_underneath", "preempt", "rewrite_comment", "rename_job"})
"""The faults that act on a job in slurmctld's memory (an unknown id is refused, unrecorded)."""


def check_arguments(name: str, args: Mapping[str, Any]) -> None:
    """Refuse, with a :class:`FaultError` naming the argument, what fault ``name`` can never
    accept whatever the cluster holds: the wrong type, a number that is not finite or out of
    range, an unknown command or mode. ``args`` holds the arguments by name (those given)."""
    if name not in FAULTS:
        raise FaultError(f"unknown fault {name!r}; known: {', '.join(FAULTS)}")

    def number(key: str, minimum: float, strict: bool = False) -> None:
        value = args.get(key)
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FaultError(f"{name}: {key} must be a number, not {value!r}")
        low = value <= minimum if strict else value < minimum
        if not math.isfinite(value) or low:
            bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
            raise FaultError(f"{name}: {key} must be a finite number {bound}, not {value!r}")

    for key in ("job_id", "uid", "run_for"):
        value = args.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise FaultError(f"{name}: {key} must be an integer, not {value!r}")
    number("job_id", 1)
    number("uid", 0)
    number("run_for", 0)
    number("wait", 0)
    if name == "slurmctld_down":
        if "seconds" not in args:
            raise FaultError("slurmctld_down needs seconds")
        number("seconds", 0, strict=True)
    if name == "preempt" and args.get("mode", "requeue") not in PREEMPT_MODES:
        raise FaultError(f"preemption mode {args.get('mode')!r} is neither 'requeue' nor 'cancel'")
    if name in ("timeout_before", "lose_reply"):
        command = args.get("command")
        if command is not None and command not in COMMANDS:
            raise FaultError(
                f"{name}: command {command!r} is not one of {', '.join(COMMANDS)} (or none)"
            )
        words = args.get("args", ())
        if isinstance(words, str) or not all(isinstance(word, str) for word in words):
            raise FaultError(f"{name}: args must be a list of words, not {words!r}")
    if "hold" in args and not isinstance(args["hold"], bool):
        raise FaultError(f"{name}: hold must be true or false, not {args['hold']!r}")
    for key in ("name", "user", "comment", "node"):
        if key in args and not isinstance(args[key], str):
            raise FaultError(f"{name}: {key} must be a string, not {args[key]!r}")


def _check_target(sim: SlurmSim, name: str, args: Mapping[str, Any]) -> None:
    """Refuse a target this cluster does not have (an unknown job id, node or id range)."""
    controller, config = sim.controller, sim.config
    job_id: Any = args.get("job_id")
    if name in JOB_FAULTS and job_id not in controller.jobs:
        raise SlurmError(INVALID_JOB_ID)
    if name == "node_failure" and args["node"] not in config.nodes:
        raise FaultError(f"the cluster has no node {args['node']!r}")
    if name == "reuse_id" and not config.first_job_id <= job_id < config.max_job_id:
        raise FaultError(
            f"job id {job_id} is outside FirstJobId..MaxJobId-1 "
            f"({config.first_job_id}..{config.max_job_id - 1})"
        )
    if name == "purge_now" and job_id is not None and not _ever_issued(sim, job_id):
        # An id already purged is fine (nothing to do: the harness purges idempotently); an id
        # this cluster never gave out is a mistake.
        raise FaultError(f"purge_now: the cluster never had a job {job_id}")


def _ever_issued(sim: SlurmSim, job_id: int) -> bool:
    controller = sim.controller
    if job_id in controller.jobs or job_id in controller.acct_by_id:
        return True
    if sim.config.accounting:
        return False
    # Without accounting, only slurmctld's log remembers a purged job (a scan, on this path
    # alone: a fault aimed at a job that is not in memory, on a cluster without accounting).
    suffix = f" submit {job_id}"
    return any(line.endswith(suffix) for line in controller.log)


def _fault(method: Callable[Concatenate[Faults, P], R]) -> Callable[Concatenate[Faults, P], R]:
    """Make a method a named fault: it sees the cluster up to now, its arguments and target are
    checked (a refusal leaves no record), and what it did is recorded."""
    name = method.__name__
    signature = inspect.signature(method)
    FAULTS[name] = (method.__doc__ or "").strip().split("\n")[0]

    def recorded(self: Faults, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        params = {key: value for key, value in bound.arguments.items() if key != "self"}
        check_arguments(name, params)
        sim = self.sim
        if self.firing:
            now: float = sim.controller.now
        else:
            sim.controller.sync()
            now = sim.clock.now()
        _check_target(sim, name, params)
        try:
            result = method(self, *args, **kwargs)
        except (SlurmError, FaultError) as error:
            sim.trace.fault(now, name, params, scheduled=self.firing, error=error.text)
            raise
        sim.trace.fault(now, name, params, scheduled=self.firing, result=result)
        return result

    recorded.__name__ = name
    recorded.__doc__ = method.__doc__
    recorded.__wrapped__ = method  # type: ignore[attr-defined]
    return recorded


class Faults:
    """The faults of one simulator (``sim.faults``)."""

    def __init__(self, sim: SlurmSim) -> None:
        self.sim = sim
        self.armed: list[Armed] = []
        self.plans: list[PlannedFault] = []
        self.firing = False  # a scheduled fault is firing (inside the controller's sync)

    # -- faults on jobs ------------------------------------------------------------------------

    @_fault
    def requeue_underneath(self, job_id: int, hold: bool = False) -> None:
        """An administrator requeues the job (``scontrol requeue[hold]``, no identity check)."""
        controller = self.sim.controller
        controller.requeue(controller.get(job_id), HoldKind.REQUEUE if hold else None)

    @_fault
    def preempt(self, job_id: int, mode: str = "requeue") -> str:
        """The running job is preempted: requeued when it may be, else ended; PREEMPTED row."""
        controller = self.sim.controller
        job = controller.get(job_id)
        if job.state is not JobState.RUNNING:
            raise FaultError(f"job {job_id} is {job.state}, not RUNNING")
        if mode == "requeue" and job.requeue:
            controller._requeue(job, JobState.PREEMPTED, None, False, completing=True)
            return "requeued"
        controller.end(job, JobState.PREEMPTED, "None")
        return "ended"

    @_fault
    def node_failure(self, node: str) -> list[int]:
        """The node fails: its jobs are requeued when requeueable, else end NODE_FAIL."""
        return self.sim.controller.node_failure(node)

    @_fault
    def purge_now(self, job_id: int | None = None) -> list[int]:
        """Finished jobs (or the one given) leave slurmctld's memory now."""
        return self.sim.controller.purge_now(job_id)

    @_fault
    def reuse_id(
        self,
        job_id: int,
        name: str = "foreign-job",
        user: str = "other",
        uid: int = 1001,
        hold: bool = False,
        run_for: int | None = 60,
    ) -> int:
        """A foreign job takes the id of a finished job (purged first; the counter then runs on
        from there, as after a wrap-around)."""
        controller = self.sim.controller
        old = controller.jobs.get(job_id)
        if old is not None:
            if not old.state.finished:
                raise FaultError(f"job {job_id} is {old.state}: a live id cannot be reused")
            controller.purge_now(job_id)
        try:
            controller.set_next_job_id(job_id)
        except ValueError as error:
            raise FaultError(str(error)) from None
        job = controller.submit(
            Submission(script=FOREIGN_SCRIPT, name=name, hold=hold, work_dir=f"/home/{user}")
        )
        if job.job_id != job_id:  # pragma: no cover - the id was free, so this cannot happen
            raise FaultError(f"the foreign job got id {job.job_id}, not {job_id}")
        controller.set_owner(job, user, uid)
        if run_for is not None:
            controller.set_run_time(job, run_for)
        return job.job_id

    @_fault
    def rewrite_comment(self, job_id: int, comment: str) -> None:
        """The owner rewrites the job's comment (``scontrol update Comment=``)."""
        controller = self.sim.controller
        controller.set_comment(controller.get(job_id), comment)

    @_fault
    def rename_job(self, job_id: int, name: str) -> None:
        """The owner renames the job (``scontrol update JobName=``)."""
        controller = self.sim.controller
        controller.set_name(controller.get(job_id), name)

    # -- faults on calls -----------------------------------------------------------------------

    @_fault
    def timeout_before(
        self, command: str | None = None, args: Sequence[str] = (), wait: float | None = None
    ) -> None:
        """The next matching call times out before it takes effect."""
        self.armed.append(Armed("before", command, tuple(args), wait))

    @_fault
    def lose_reply(
        self, command: str | None = None, args: Sequence[str] = (), wait: float | None = None
    ) -> None:
        """The next matching call takes effect, and its reply is lost."""
        self.armed.append(Armed("reply-lost", command, tuple(args), wait))

    @_fault
    def slurmctld_down(self, seconds: float) -> int:
        """slurmctld does not answer for ``seconds``; returns when it is back."""
        controller = self.sim.controller
        until = controller.now + math.ceil(seconds)
        controller.down_until = max(controller.down_until, until)
        # Back up, slurmctld runs a scheduler pass for the jobs that became eligible meanwhile.
        controller.at(until, "slurmctld up", controller._schedule)
        return until

    # -- what SlurmSim.run asks ----------------------------------------------------------------

    def before(self, argv: Sequence[str], call: Record) -> None:
        """Raise ``TimeoutExpired`` if a timeout-before fault is armed for this call."""
        armed = self._take("before", argv)
        if armed is not None:
            raise self.sim.trace.timed_out(call, "before", self._wait(armed, call))

    def after(
        self, argv: Sequence[str], call: Record, completed: subprocess.CompletedProcess[str]
    ) -> None:
        """Raise ``TimeoutExpired`` if a lost-reply fault is armed for this (completed) call."""
        armed = self._take("reply-lost", argv)
        if armed is not None:
            raise self.sim.trace.timed_out(call, "reply-lost", self._wait(armed, call), completed)

    def _take(self, kind: str, argv: Sequence[str]) -> Armed | None:
        for index, armed in enumerate(self.armed):
            if armed.kind == kind and armed.matches(argv):
                return self.armed.pop(index)
        return None

    def _wait(self, armed: Armed, call: Record) -> float:
        """Let the caller's wait pass on the cluster's clock; return how long it was."""
        wait = armed.wait if armed.wait is not None else call.get("limit") or 0.0
        if wait > 0 and hasattr(self.sim.clock, "advance"):
            self.sim.advance(wait)
        return float(wait)

    # -- the seeded schedule -------------------------------------------------------------------

    def schedule(
        self,
        seed: int,
        count: int = 10,
        within: float = 3600.0,
        start: float | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[PlannedFault]:
        """Draw ``count`` faults of ``kinds`` (default: all) at virtual times in the ``within``
        seconds from ``start`` (default: now) and arm them; the same seed gives the same plan."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise FaultError(f"schedule: count must be an integer >= 0, not {count!r}")
        for key, value in (("within", within), ("start", start)):
            bad = isinstance(value, bool) or not isinstance(value, int | float)
            if value is not None and (bad or not math.isfinite(value) or value < 0):
                raise FaultError(f"schedule: {key} must be a finite number >= 0, not {value!r}")
        if isinstance(kinds, str):
            raise FaultError(f"schedule: kinds must be a list of fault names, not {kinds!r}")
        chosen = list(kinds) if kinds is not None else list(FAULTS)
        unknown = [kind for kind in chosen if kind not in FAULTS]
        if unknown or not chosen:
            raise FaultError(f"unknown fault kinds: {unknown or 'none given'}")
        sim = self.sim
        sim.controller.sync()
        now = sim.clock.now()
        rng = random.Random(seed)
        begin = sim.controller.now if start is None else math.ceil(start)
        plan = []
        for _ in range(count):
            at = begin + rng.randrange(int(within) + 1)
            name = rng.choice(chosen)
            pick = rng.randrange(1 << 30)
            plan.append(PlannedFault(at, name, pick, self._draw(name, pick, rng)))
        plan.sort(key=lambda planned: planned.at)
        for planned in plan:
            sim.controller.at(
                planned.at, f"fault {planned.name}", functools.partial(self._fire, planned)
            )
        self.plans.extend(plan)
        args = {"count": count, "within": within, "start": start, "kinds": kinds}
        sim.trace.schedule(now, seed, args, [asdict(planned) for planned in plan])
        return plan

    def _draw(self, name: str, pick: int, rng: random.Random) -> dict[str, Any]:
        if name == "preempt":
            return {"mode": rng.choice(["requeue", "cancel"])}
        if name == "node_failure":
            return {"node": rng.choice(self.sim.config.nodes)}
        if name == "rewrite_comment":
            return {"comment": f"rewritten-{pick}"}
        if name == "rename_job":
            return {"name": f"renamed-{pick}"}
        if name in ("timeout_before", "lose_reply"):
            return {"command": rng.choice(COMMANDS)}
        if name == "slurmctld_down":
            return {"seconds": rng.randint(5, 300)}
        return {}

    def _fire(self, planned: PlannedFault) -> None:
        args = dict(planned.args)
        targets = self._targets(planned.name)
        self.firing = True
        try:
            if targets is not None:
                if not targets:
                    self.sim.trace.fault(
                        self.sim.controller.now,
                        planned.name,
                        args,
                        scheduled=True,
                        skipped="no job to hit",
                    )
                    return
                args["job_id"] = targets[planned.pick % len(targets)]
            with contextlib.suppress(SlurmError, FaultError):  # recorded with its error
                getattr(self, planned.name)(**args)
        finally:
            self.firing = False

    def _targets(self, name: str) -> list[int] | None:
        """The ids a job fault can hit now, in id order (None: the fault takes no job)."""
        jobs = sorted(self.sim.controller.jobs.values(), key=lambda job: job.job_id)
        if name == "requeue_underneath":
            return [j.job_id for j in jobs if j.state is JobState.RUNNING and j.requeue]
        if name == "preempt":
            return [j.job_id for j in jobs if j.state is JobState.RUNNING]
        if name in ("rewrite_comment", "rename_job"):
            return [j.job_id for j in jobs if not j.state.finished]
        if name == "reuse_id":
            finished = [j.job_id for j in jobs if j.state.finished]
            if finished:
                return finished
            live = self.sim.controller.jobs
            return sorted(i for i in self.sim.controller.acct_by_id if i not in live)
        return None
