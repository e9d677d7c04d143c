"""Core (``CORE-``): seed 000's rules and seed 004's definition of done, run through the real
supervisor (:mod:`dispatch_core.supervise`) on whatever harness the run selects, with a
:class:`~dispatch_core.record.MemoryRecordStore` (DESIGN §12).

Every check drives the supervisor as a host would (``submit``, ``step``, ``cancel``), plays
the scheduler through the harness's fault intents (``let_run``, ``finish``, ``purge``), and
judges by the record and by what ``backend.find`` shows of the job's objects, never by the
supervisor's word alone.

Two seams are the kit's own, since the fault vocabulary names neither:

- a **crash** (:class:`Crash`) is raised by a wrapper of the store and the backend at the k-th
  write (append, lease, start, stop, requeue, restart, hold, release), before or after it took
  effect; the supervisor is then discarded and a new one (another owner) recovers from the
  same store through a reopened backend once the lease has expired;
- a **launch failure** (the object ended before its execution started) is stopped on the
  scheduler, and read back by a wrapper of the backend as ``failed`` with cause
  ``launch_failed`` (no harness offers a neutral "fail the launch" fault yet).

A harness that implements :class:`~conformance.powers.SuppliesSupervisor` has the suite run
its supervisor (the real :class:`Supervisor` otherwise): the project's tests run the suite
against deliberately broken ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Final

from conformance.checks import CheckFailed, Context, Needs, Skip, SkippedFor, check
from conformance.harness import Fault, Probe
from conformance.suites.clauses import SEED_000
from dispatch_core import (
    Backend,
    Cause,
    Clock,
    DispatchError,
    Enforcer,
    JobID,
    JobSpec,
    NativePolicyCompiler,
    NotFound,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    Policy,
    Requeuer,
    Rule,
    RuleKind,
    State,
    Tristate,
    with_job,
)
from dispatch_core.clock import pause
from dispatch_core.record import MemoryRecordStore
from dispatch_core.record.store import RecordStore
from dispatch_core.record.types import (
    Action,
    Entry,
    HeaderRecord,
    IntentRecord,
    TerminalRecord,
    TransitionRecord,
)
from dispatch_core.supervise import Backoff, Supervisor

SEED_000_RULES: Final = f"{SEED_000}, Rule support"
SEED_004: Final = "seed 004, a runner's definition of done"
DESIGN_12: Final = "DESIGN §12, the record and the supervisor"

LEASE_TTL: Final = 30.0
BACKOFF: Final = Backoff(base=5.0, factor=2.0, cap=60.0)
MAX_STEPS: Final = 60
"""Steps a check's job gets to reach a terminal record (or a hold for a person)."""

RUN: Final = (Fault.LET_RUN.value, Fault.FINISH.value)
"""The faults every check here needs: the scheduler starts an object, its command exits."""

WRITES: Final = frozenset(
    {"append", "acquire", "renew", "release", "start", "stop", "requeue", "restart", "hold"}
)
"""The calls a crash may interrupt: every write to the store or the scheduler."""


class Crash(Exception):
    """The supervisor's process dies here (raised by :class:`Crashing`)."""


class Crashing:
    """Counts the writes of the objects it wraps (shared between a store and a backend) and
    raises :class:`Crash` at write number ``at``, ``before`` or after it took effect."""

    def __init__(
        self, at: int | None = None, *, before: bool = True, on: str | None = None
    ) -> None:
        self.at = at
        self.before = before
        self.on = on
        """Crash at the first write of this name instead (``at`` is then ignored)."""
        self.count = 0
        self.log: list[str] = []

    def wrap(self, inner: Any) -> Any:
        return _Wrapped(inner, self)

    def call(self, name: str, action: Callable[[], Any]) -> Any:
        self.count += 1
        self.log.append(name)
        if self.on is not None and name == self.on:
            self.at, self.on = self.count, None
        if self.count == self.at and self.before:
            raise Crash(f"crash before write {self.count} ({name})")
        result = action()
        if self.count == self.at:
            raise Crash(f"crash after write {self.count} ({name})")
        return result


class _Wrapped:
    def __init__(self, inner: Any, crashing: Crashing) -> None:
        self._inner = inner
        self._crashing = crashing

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name not in WRITES or not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._crashing.call(name, lambda: value(*args, **kwargs))

        return call


class LaunchFailing:
    """The backend, except that the objects :meth:`fail_launch` was told of read as ended
    before their execution started (``failed``, ``launch_failed``), and so do the first
    ``launches`` objects it starts: each is stopped as soon as it is made, before anyone
    observed it (so a real scheduler, which may start an object within a second, cannot run
    it first and make its end a failure of a started execution)."""

    def __init__(self, inner: Backend, launches: int = 0) -> None:
        self._inner = inner
        self.failed: set[tuple[str, str]] = set()
        self.launches = launches

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        ref = self._inner.start(plan, submission, attempt)
        if self.launches > 0:
            self.launches -= 1
            self.fail_launch(ref)
        return ref

    def fail_launch(self, ref: ObjectRef) -> None:
        """The object's launch fails: it is stopped on the scheduler, and reads as such."""
        self._inner.stop(ref)
        self.failed.add((ref.uid, ref.id))

    def _as_failed(self, seen: Observation) -> Observation:
        if (seen.ref.uid, seen.ref.id) not in self.failed or seen.foreign:
            return seen
        return seen.model_copy(
            update={"state": State.FAILED, "cause": Cause.LAUNCH_FAILED, "exit_code": None}
        )

    def open(self, ref: ObjectRef) -> Observation:
        try:
            return self._as_failed(self._inner.open(ref))
        except NotFound:
            # A scheduler whose stop removes the object (a Kubernetes delete) has nothing left
            # to read: the launch failure still reads as such, as the wrapper promises.
            if (ref.uid, ref.id) not in self.failed:
                raise
            return Observation(ref=ref, state=State.FAILED, cause=Cause.LAUNCH_FAILED)

    def find(self, job: JobID) -> list[Observation]:
        return [self._as_failed(seen) for seen in self._inner.find(job)]


class Run:
    """One supervised world of a check: a backend of the harness, its clock and faults, a
    memory record store, and the supervisors made over it (a new one after each crash)."""

    def __init__(self, ctx: Context, backend: Backend | None = None, **options: Any) -> None:
        self.ctx = ctx
        self.raw: Backend = backend if backend is not None else ctx.backend
        self.clock: Clock = ctx.harness.clock(self.raw)
        self.faults = ctx.harness.faults(self.raw)
        self.store: RecordStore = MemoryRecordStore()
        self.options: dict[str, Any] = {
            "lease_ttl": LEASE_TTL,
            "backoff": BACKOFF,
            "launch_retries": 2,
            "shutdown_budget": 60.0,
            **options,
        }
        self.made = 0
        self.backend: Any = self.raw
        self.sup = self.supervisor(self.raw, self.store)
        self.counts: dict[tuple[str, int], int] = {}
        """The most objects ``find`` ever showed at once for (job, submission)."""
        self.jobs: list[JobID] = []
        ctx.track("stop every live object of the check's jobs", self.stop_all)

    def supervisor(self, backend: Any, store: Any) -> Supervisor:
        self.made += 1
        factory = self.ctx.harness.supervisor_type()
        made: Supervisor = factory(
            backend, store, self.clock, owner=f"core-{self.made}", **self.options
        )
        self.backend = backend
        return made

    def submit(self, policy: Policy | None = None, job: JobID | None = None) -> JobID:
        job = job or self.ctx.job_id()
        if job not in self.jobs:
            self.jobs.append(job)
        self.sup.submit(self.spec(), policy, with_job(job))
        return job

    def spec(self) -> JobSpec:
        return self.ctx.spec()

    # -- the record ---------------------------------------------------------------------------

    def entries(self, job: JobID) -> list[Entry]:
        return self.store.records(job)

    def intents(self, job: JobID) -> list[tuple[int, int]]:
        return [
            (e.record.submission, e.record.attempt)
            for e in self.entries(job)
            if isinstance(e.record, IntentRecord)
        ]

    def transitions(self, job: JobID, action: Action | None = None) -> list[TransitionRecord]:
        found = [e.record for e in self.entries(job) if isinstance(e.record, TransitionRecord)]
        return [t for t in found if action is None or t.action is action]

    def terminal(self, job: JobID) -> TerminalRecord | None:
        last = self.entries(job)[-1:] if self.entries(job) else []
        record = last[0].record if last else None
        return record if isinstance(record, TerminalRecord) else None

    def header(self, job: JobID) -> HeaderRecord:
        record = self.entries(job)[0].record
        assert isinstance(record, HeaderRecord)
        return record

    def describe(self, job: JobID) -> str:
        return "; ".join(
            f"{e.seq}:{e.record.kind}"
            + (f"({e.record.action.value})" if isinstance(e.record, TransitionRecord) else "")
            + (
                f"(N={e.record.submission},A={e.record.attempt})"
                if isinstance(e.record, IntentRecord)
                else ""
            )
            for e in self.entries(job)
        )

    # -- the scheduler's truth ----------------------------------------------------------------

    def objects(self, job: JobID) -> list[Observation]:
        """The job's own objects as the adapter's find shows them (the crash wrapper aside)."""
        found = list(self.raw.find(job))
        return [o for o in found if not o.foreign]

    def count(self, job: JobID) -> None:
        """Record how many objects find shows per submission; fail at once on a second."""
        per = Counter(o.submission for o in self.objects(job) if o.submission is not None)
        for submission, n in per.items():
            key = (str(job), submission)
            self.counts[key] = max(self.counts.get(key, 0), n)
            if n > 1:
                self.ctx.fail(
                    f"find shows {n} objects of job {job} for submission {submission} (one "
                    f"submission, one object: never started twice); record: {self.describe(job)}"
                )

    def current(self, job: JobID) -> ObjectRef | None:
        with suppress(DispatchError):
            return self.sup.status(job).ref
        return None

    def play(self, job: JobID, code: Callable[[int], int | None]) -> None:
        """As the scheduler: let the current object run; end a running one with
        ``code(submission)`` (None: leave it running)."""
        try:
            status = self.sup.status(job)
        except DispatchError:
            return
        if status.finished or status.ref is None:
            return
        try:
            seen = self.raw.open(status.ref)
        except DispatchError:
            return
        if seen.state is State.QUEUED and seen.hold is None:
            with suppress(DispatchError, KeyError):
                self.faults.let_run(status.ref)
        elif seen.state is State.RUNNING:
            exit_code = code(status.submission)
            if exit_code is not None:
                with suppress(DispatchError, KeyError):
                    self.faults.finish(status.ref, exit_code)

    def settled(self, job: JobID) -> bool:
        try:
            status = self.sup.status(job)
        except DispatchError:
            return False
        return status.finished or status.waiting_for_person

    def drive(
        self,
        job: JobID,
        code: Callable[[int], int | None] = lambda n: 0,
        steps: int = MAX_STEPS,
        recover: Callable[[], None] | None = None,
    ) -> None:
        """Play the scheduler and step until the job is terminal or held for a person; fail if
        it is not within ``steps``. A :class:`Crash` out of a step calls ``recover``."""
        for _ in range(steps):
            self.count(job)
            if self.entries(job) and self.settled(job):
                return
            self.play(job, code)
            try:
                acted = self.sup.step()
            except Crash:
                if recover is None:
                    raise
                recover()
                continue
            self.count(job)
            if acted == 0:
                pause(self.clock, 5.0)
        self.ctx.fail(
            f"job {job} reached no terminal record within {steps} steps; record: "
            f"{self.describe(job)}"
        )

    def stop_all(self) -> None:
        for job in self.jobs:
            for seen in self.objects(job):
                if not seen.state.ended:
                    with suppress(OutcomeUnknown):
                        self.raw.stop(seen.ref)


def fail_always(submission: int) -> int:
    return 3


def expect_record(run: Run, job: JobID, ok: bool, did: str) -> None:
    if not ok:
        raise CheckFailed(f"{did}; record: {run.describe(job)}")


# -- the enforcer ---------------------------------------------------------------------------------


@check(
    "CORE-001",
    clause=f"{SEED_000_RULES}: one enforcer per rule",
    needs=Needs(interfaces=(NativePolicyCompiler,), faults=RUN),
)
def backend_rule_never_retried(ctx: Context) -> None:
    """A rule make_plan gave the backend is never also retried by the supervisor."""
    backend = ctx.backend
    assert isinstance(backend, NativePolicyCompiler)
    kinds = [RuleKind.RESUBMIT, RuleKind.REQUEUE, RuleKind.RESTART]
    answers = backend.native(Policy(rules=tuple(Rule(kind=k) for k in kinds)))
    native = [k for k, a in zip(kinds, answers, strict=True) if a.value is Tristate.YES]
    if not native:
        raise Skip("the backend enforces no retrying rule kind natively")
    run = Run(ctx)
    policy = Policy(rules=(Rule(kind=native[0], budget=3),))
    job = run.submit(policy)
    enforcers = run.header(job).enforcers
    ctx.expect(
        enforcers == (Enforcer.BACKEND,),
        f"the plan gave rule 0 ({native[0].value}) to {enforcers}, not to the backend",
    )
    run.drive(job, lambda n: 3 if n == 1 else 0)
    spent = [t for t in run.transitions(job) if t.rule == 0]
    expect_record(
        run,
        job,
        not spent and [n for n, _ in run.intents(job)] == [1],
        f"the supervisor spent the backend's rule 0 ({native[0].value}): "
        f"{[t.action.value for t in spent]}, intents {run.intents(job)}",
    )


@check(
    "CORE-002",
    clause=f"{SEED_000_RULES}; {DESIGN_12}: resubmit is N+1 and A+1 after real backoff",
    needs=Needs(faults=RUN),
)
def resubmit_after_backoff(ctx: Context) -> None:
    """A supervisor-enforced resubmit makes submission N+1 of attempt A+1, after its backoff."""
    run = Run(ctx)
    job = run.submit(Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=1),)))
    ctx.expect(
        run.header(job).enforcers == (Enforcer.SUPERVISOR,),
        f"the plan gave the resubmit to {run.header(job).enforcers}, not to the supervisor",
    )
    for _ in range(MAX_STEPS):
        if run.transitions(job, Action.RESUBMIT) or run.terminal(job):
            break
        run.play(job, fail_always)
        run.sup.step()
    resubmits = run.transitions(job, Action.RESUBMIT)
    expect_record(
        run, job, len(resubmits) == 1, "the failure of submission 1 made no resubmit transition"
    )
    due = resubmits[0].not_before
    ctx.expect(due is not None, "the resubmit transition has no not_before (no backoff)")
    assert due is not None
    wait = due - run.clock.now()
    ctx.expect(
        wait >= BACKOFF.delay(1) - 1.0,
        f"the resubmission is due {wait:.1f} s after the failure, not after the backoff "
        f"({BACKOFF.delay(1):g} s)",
    )
    pause(run.clock, max(wait - 1.0, 0.0))
    run.sup.step()
    expect_record(
        run,
        job,
        run.intents(job) == [(1, 1)],
        f"a new submission was made before the backoff had passed: {run.intents(job)}",
    )
    pause(run.clock, 1.0)
    run.drive(job)
    expect_record(
        run,
        job,
        run.intents(job) == [(1, 1), (2, 2)],
        f"the resubmission made intents {run.intents(job)}, not [(1, 1), (2, 2)]",
    )
    terminal = run.terminal(job)
    expect_record(
        run,
        job,
        terminal is not None and terminal.state is State.SUCCEEDED,
        "submission 2 succeeded but the job did not end succeeded",
    )


@check(
    "CORE-003",
    clause=f"{SEED_000_RULES}: a rule spends at most its budget, rules in order",
    needs=Needs(faults=RUN),
)
def budgets_never_exceeded(ctx: Context) -> None:
    """No rule is used beyond its budget; the first matching rule with budget left answers.

    A failure no rule has budget left for ends the job failed with its cause."""
    run = Run(ctx)
    policy = Policy(
        rules=(
            Rule(kind=RuleKind.RESUBMIT, budget=1, causes=(Cause.NODE_LOST,)),
            Rule(kind=RuleKind.RESUBMIT, budget=2),
        )
    )
    job = run.submit(policy)
    run.drive(job, fail_always, steps=MAX_STEPS * 2)
    uses = Counter(t.rule for t in run.transitions(job) if t.rule is not None)
    terminal = run.terminal(job)
    expect_record(
        run,
        job,
        uses == Counter({1: 2})
        and run.intents(job) == [(1, 1), (2, 2), (3, 3)]
        and terminal is not None
        and (terminal.state, terminal.cause) == (State.FAILED, Cause.EXIT_CODE),
        f"rule uses {dict(uses)} (budgets: rule 0 node_lost x1, rule 1 x2), intents "
        f"{run.intents(job)}, terminal {terminal and (terminal.state, terminal.cause)}",
    )


@check(
    "CORE-004",
    clause=f"{SEED_004}: escalate",
    needs=Needs(faults=RUN),
)
def escalate_ends_failed(ctx: Context) -> None:
    """An escalate rule ends the job failed with the failure's cause, making no submission."""
    run = Run(ctx)
    job = run.submit(Policy(rules=(Rule(kind=RuleKind.ESCALATE, budget=1),)))
    run.drive(job, fail_always)
    terminal = run.terminal(job)
    expect_record(
        run,
        job,
        terminal is not None
        and (terminal.state, terminal.cause) == (State.FAILED, Cause.EXIT_CODE)
        and [t.action for t in run.transitions(job)] == [Action.ESCALATE]
        and run.intents(job) == [(1, 1)],
        "the escalate did not end the job failed (exit_code) after one submission",
    )


@check(
    "CORE-005",
    clause=f"{SEED_000_RULES}, shared checkpoint",
    needs=Needs(faults=RUN),
)
def shared_checkpoint_holds(ctx: Context) -> None:
    """Under a shared checkpoint every rule becomes a hold for a person: nothing reruns alone."""
    run = Run(ctx)
    policy = Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=3),), shared_checkpoint=True)
    job = run.submit(policy)
    run.drive(job, fail_always)
    status = run.sup.status(job)
    # Past the longest backoff: a resubmission the hold did not stop would be due by now (on a
    # real cluster's wall clock this is a minute, not the hour a person may take).
    pause(run.clock, BACKOFF.cap + 1.0)
    run.sup.step()
    actions = [t.action for t in run.transitions(job)]
    expect_record(
        run,
        job,
        status.waiting_for_person
        and actions == [Action.HOLD]
        and run.intents(job) == [(1, 1)]
        and run.terminal(job) is None,
        f"after a failure under a shared checkpoint the job is {status.state} "
        f"(waiting for a person: {status.waiting_for_person}), transitions "
        f"{[a.value for a in actions]}, intents {run.intents(job)}",
    )


@check(
    "CORE-006",
    clause=f"{DESIGN_12}: two budgets; {SEED_004}",
    needs=Needs(faults=RUN),
)
def launch_retries_keep_the_attempt(ctx: Context) -> None:
    """A failure before the execution started spends a launch retry (N+1, same A), not a rule.

    Once the launch retries are spent, the job fails with the launch cause."""
    wrapped = LaunchFailing(ctx.backend, launches=3)
    run = Run(ctx, launch_retries=2)
    run.sup = run.supervisor(wrapped, run.store)
    job = run.submit(Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=3),)))
    for _ in range(MAX_STEPS):
        if run.terminal(job):
            break
        run.count(job)
        if run.sup.step() == 0:
            pause(run.clock, 5.0)
    terminal = run.terminal(job)
    retries = run.transitions(job, Action.LAUNCH_RETRY)
    expect_record(
        run,
        job,
        run.intents(job) == [(1, 1), (2, 1), (3, 1)]
        and len(retries) == 2
        and all(t.rule is None for t in retries)
        and not run.transitions(job, Action.RESUBMIT)
        and terminal is not None
        and (terminal.state, terminal.cause) == (State.FAILED, Cause.LAUNCH_FAILED),
        f"three launch failures under launch_retries=2 made intents {run.intents(job)} "
        f"(want [(1, 1), (2, 1), (3, 1)]), launch retries {len(retries)}, terminal "
        f"{terminal and (terminal.state, terminal.cause)}",
    )


@check(
    "CORE-007",
    clause=f"{SEED_004}: an end whose result cannot be read is never success",
    needs=Needs(faults=(*RUN, Fault.PURGE.value)),
)
def evidence_lost_is_not_success(ctx: Context) -> None:
    """An ended object whose result cannot be read is a failure (evidence_lost), never success."""
    run = Run(ctx)
    if ctx.identity.history_outlives_live:
        if ctx.harness.lacking(Fault.DISABLE_HISTORY.value):
            raise Skip(
                "the target keeps history and the harness cannot disable it",
                SkippedFor.HARNESS,
                lacking=(Fault.DISABLE_HISTORY.value,),
            )
        run.faults.disable_history()
    job = run.submit()
    ref = run.current(job)
    assert ref is not None
    run.faults.let_run(ref)
    run.faults.finish(ref, 0)
    run.faults.purge(ref)
    run.drive(job)
    terminal = run.terminal(job)
    expect_record(
        run,
        job,
        terminal is not None
        and (terminal.state, terminal.cause) == (State.FAILED, Cause.EVIDENCE_LOST),
        f"an object whose end cannot be read ended the job "
        f"{terminal and (terminal.state.value, terminal.cause.value)}, not failed "
        "(evidence_lost)",
    )


@check(
    "CORE-008",
    clause=f"{SEED_004}: cancel stops every live object",
    needs=Needs(faults=RUN),
)
def cancel_stops_every_live_object(ctx: Context) -> None:
    """cancel stops every live object of the job, then records it cancelled.

    That includes an object whose start landed but whose supervisor crashed before recording
    it: a new supervisor finds it."""
    run = Run(ctx)
    job = run.submit()
    ref = run.current(job)
    assert ref is not None
    run.faults.let_run(ref)
    run.sup.step()
    # A second job whose start landed but whose observed record was never written.
    crashing = Crashing(on="start", before=False)
    run.sup = run.supervisor(crashing.wrap(run.raw), crashing.wrap(run.store))
    other = ctx.job_id()
    run.jobs.append(other)
    with suppress(Crash):
        run.sup.submit(run.spec(), None, with_job(other))
    if crashing.at is None or crashing.log[crashing.at - 1] != "start":
        raise CheckFailed(f"the submit of job {other} made no start ({crashing.log})")
    pause(run.clock, LEASE_TTL + 1)
    run.sup = run.supervisor(ctx.reopen(), run.store)
    for each in (job, other):
        status = run.sup.cancel(each)
        live = [o for o in run.objects(each) if not o.state.ended]
        ctx.expect(
            status.state is State.CANCELLED and not live,
            f"cancel({each}) left {status.state.value} with live objects "
            f"{[o.ref.id for o in live]}; record: {run.describe(each)}",
        )


def crash_points(ctx: Context) -> list[tuple[int, bool]]:
    """Every write of the scenario, crashed before and after it took effect (or as many of
    them as the harness allows, chosen by the run's seed)."""
    crashing = Crashing()
    scenario(ctx, crashing)
    every = [(at, before) for at in range(1, crashing.count + 1) for before in (True, False)]
    allowed = ctx.harness.crash_points
    if allowed is None or allowed >= len(every):
        return every
    return sorted(ctx.rng.sample(every, max(allowed, 1)))


def scenario(ctx: Context, crashing: Crashing) -> Run:
    """Submission 1 fails, the resubmit's submission 2 succeeds; a crash (if armed) is
    recovered by a new supervisor over the same store, through a reopened backend."""
    backend = ctx.harness.new_backend()
    run = Run(ctx, backend)
    run.sup = run.supervisor(crashing.wrap(run.raw), crashing.wrap(run.store))
    policy = Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=1),))
    job = ctx.job_id()
    run.jobs.append(job)

    def recover() -> None:
        pause(run.clock, LEASE_TTL + 1)
        run.sup = run.supervisor(ctx.harness.reopen(run.raw), run.store)
        if not run.entries(job):  # the crash came before the header: the host submits again
            run.sup.submit(run.spec(), policy, with_job(job))

    try:
        run.sup.submit(run.spec(), policy, with_job(job))
    except Crash:
        recover()
    run.drive(job, lambda n: 3 if n == 1 else 0, recover=recover)
    return run


@check(
    "CORE-009",
    clause=f"{DESIGN_12}: idempotent on (job, submission); {SEED_004}",
    needs=Needs(faults=RUN),
)
def crash_at_every_write_then_recovery(ctx: Context) -> None:
    """After a crash at any write and recovery, one object per (job, submission), and an end.

    The crash comes before or after each write of a scenario (a failure, its resubmission,
    a success) in turn; a new supervisor (another owner) recovers over the same store, through
    a reopened backend, once the lease has expired."""
    for at, before in crash_points(ctx):
        crashing = Crashing(at, before=before)
        where = f"a crash {'before' if before else 'after'} write {at}"
        try:
            run = scenario(ctx, crashing)
        except CheckFailed as failed:
            raise CheckFailed(f"after {where}: {failed}") from None
        job = run.jobs[-1]
        terminal = run.terminal(job)
        where += f" ({crashing.log[at - 1] if at <= len(crashing.log) else '?'})"
        expect_record(
            run,
            job,
            terminal is not None and terminal.state is State.SUCCEEDED,
            f"after {where} the job ended {terminal and terminal.state.value}, not succeeded",
        )
        submissions = sorted(n for n, _ in run.intents(job))
        seen = sorted(n for (j, n), c in run.counts.items() if j == str(job) and c >= 1)
        expect_record(
            run,
            job,
            seen == submissions and max(run.counts.values()) == 1,
            f"after {where} find showed objects for submissions {seen}; the record's intents "
            f"are {submissions} (one object each)",
        )


@check(
    "CORE-010",
    clause=f"{SEED_000_RULES}: requeue, as the supervisor enforces it",
    needs=Needs(interfaces=(Requeuer,), faults=RUN, probes=(Probe.EXECUTIONS,)),
)
def requeue_reruns_the_same_object(ctx: Context) -> None:
    """A supervisor-enforced requeue reruns the same object (same N, A), with a new attempt id.

    Each execution sees its own DISPATCH_ATTEMPT and a higher DISPATCH_EPOCH."""
    supports = ctx.backend.rules(Policy(rules=(Rule(kind=RuleKind.REQUEUE),)))
    if supports[0].perform.value is not Tristate.YES:
        raise Skip(f"adapter declares requeue {supports[0].perform.value}")
    run = Run(ctx)
    job = run.submit(Policy(rules=(Rule(kind=RuleKind.REQUEUE, budget=1),)))
    run.drive(job, lambda n: 3 if not run.transitions(job, Action.REQUEUE) else 0, MAX_STEPS * 2)
    terminal = run.terminal(job)
    ref = run.current(job)
    assert ref is not None
    runs = ctx.executions(ref)
    attempts = [ranks[0].get("DISPATCH_ATTEMPT") for ranks in runs if ranks]
    epochs = [int(ranks[0].get("DISPATCH_EPOCH", "0")) for ranks in runs if ranks]
    expect_record(
        run,
        job,
        terminal is not None
        and terminal.state is State.SUCCEEDED
        and run.intents(job) == [(1, 1)]
        and len(run.transitions(job, Action.REQUEUE)) == 1
        and len(runs) == 2
        and len(set(attempts)) == 2
        and epochs == sorted(set(epochs)),
        f"requeue then success: intents {run.intents(job)}, executions' attempts {attempts} "
        f"and epochs {epochs}, terminal {terminal and terminal.state.value}",
    )


__all__ = ["Crash", "Crashing", "LaunchFailing", "Run"]
