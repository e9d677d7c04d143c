"""The supervisor: it applies a job's recovery policy through any adapter, writing ahead.

Every act on the scheduler is preceded by the record that says it is about to happen, appended
under the job's lease (DESIGN §12, seed 004):

- a submission: the intent (job, N, A, ...) is durably appended **before** ``backend.start``,
  the observed record (uid, id, submit) after it. After a crash an intent without an observed
  record is resolved through ``backend.find``: the job's non-foreign object carrying
  submission N is adopted, else the submission is started again (``start`` is idempotent per
  (job, submission)). An ``OutcomeUnknown`` from ``start`` is resolved the same way at the next
  step: never a second start for the same N without looking first;
- a stop (a hung execution at its time bound; an object queued with a known-fatal launch cause
  beyond the launch bound): the ``stop`` transition, then ``backend.stop``;
- a requeue or a restart: its transition, then the act; after a crash the act is made again
  only while the object still shows the ended observation the decision was made on;
- a cancel: the ``cancel`` transition, then every live object stopped, then the terminal record.

Two budgets, counted from the record (so they hold across crashes and supervisors): a failure
before the execution started spends ``launch_retries`` (submission N+1, same attempt A); a
failure after start spends the policy (:mod:`.classify`): resubmit (N+1, A+1, after the
backoff), requeue, restart, hold for a person, escalate. A rule the backend enforces is never
also retried here; under a shared checkpoint every rule is a hold for a person.

A ``LeaseConflict`` or ``SeqConflict`` on an append means another supervisor has the job: it is
dropped from this one at once, and nothing more is written under the lost lease.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import uuid
from collections.abc import Callable, Mapping
from typing import Final

from dispatch_core.clock import Clock, pause
from dispatch_core.errors import (
    Conflict,
    DispatchError,
    NotFound,
    OutcomeUnknown,
    Rejected,
    Unsupported,
)
from dispatch_core.model import (
    Cause,
    Enforcer,
    JobID,
    JobSpec,
    ObjectRef,
    Observation,
    Plan,
    Policy,
    RuleKind,
    State,
)
from dispatch_core.plan import PlanOption, make_plan, with_supervisor
from dispatch_core.record.redact import redact_text
from dispatch_core.record.store import LeaseConflict, RecordStore, SeqConflict
from dispatch_core.record.types import (
    Action,
    Entry,
    HeaderRecord,
    IntentRecord,
    Lease,
    ObservationRecord,
    ObservedRecord,
    Record,
    RecordedSpec,
    TerminalRecord,
    TransitionRecord,
    tool_version,
)
from dispatch_core.spi import Backend, OwnRetries, Requeuer, Restarter
from dispatch_core.supervise.backoff import Backoff
from dispatch_core.supervise.classify import before_start, choose_rule, fatal_while_queued
from dispatch_core.supervise.status import Status, describe, status_of
from dispatch_core.supervise.view import JobView, rebuild, same_object

ROUNDS_PER_STEP: Final = 8
"""How many decisions one step may take for one job in a row (a launch retry, then its
submission, then its first observation, ...) before it goes on to the next job."""


class _Lost(Exception):
    """Another supervisor has the job: it was dropped from this one."""


def default_owner() -> str:
    """A lease owner unique to this supervisor: host, process, and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _adapter_name(backend: Backend) -> str:
    module = type(backend).__module__.split(".")
    if len(module) > 1 and module[0] == "adapters":
        return module[1]
    return type(backend).__name__


def _seconds(name: str, value: float, *, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} is a finite number of seconds, not {value!r}")
    if value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be {'0 or more' if zero else 'above 0'}, not {value}")
    return float(value)


class Supervisor:
    """Applies recovery policies through ``backend``, writing ahead to ``store``, on ``clock``.

    ``owner`` names this supervisor in the leases it takes (unique by default);
    ``launch_retries`` is the budget of failures before the execution started, per job;
    ``launch_bound`` how long (seconds on the clock since the observed record) an object may
    stay queued with a known-fatal launch cause before it is stopped and counted as such a
    failure; ``backoff`` the wait before each resubmission; ``lease_ttl`` how long a lease
    lasts unrenewed; ``shutdown_budget`` how long :meth:`cancel` waits for the job's objects to
    end. ``specs`` gives the specs of recorded jobs whose recorded spec is redacted (it is
    never submitted from the record); ``adapter`` the adapter's entry point name for the intent
    records (from the backend's module by default); ``poll`` how long
    :meth:`run_until_idle` waits when nothing is due sooner; ``progress`` gets one line per
    record appended."""

    def __init__(
        self,
        backend: Backend,
        store: RecordStore,
        clock: Clock,
        *,
        owner: str | None = None,
        launch_retries: int = 2,
        launch_bound: float = 60.0,
        backoff: Backoff | None = None,
        lease_ttl: float = 60.0,
        shutdown_budget: float = 30.0,
        specs: Mapping[JobID, JobSpec] | None = None,
        adapter: str | None = None,
        poll: float = 10.0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        if isinstance(launch_retries, bool) or not isinstance(launch_retries, int):
            raise ValueError(f"launch_retries is a count, not {launch_retries!r}")
        if launch_retries < 0:
            raise ValueError(f"launch_retries must be 0 or more, not {launch_retries}")
        if owner is not None and not owner:
            raise ValueError("owner must not be empty")
        self.backend = backend
        self.store = store
        self.clock = clock
        self.owner = owner or default_owner()
        self.launch_retries = launch_retries
        self.launch_bound = _seconds("launch_bound", launch_bound)
        self.backoff = backoff if backoff is not None else Backoff()
        self.lease_ttl = _seconds("lease_ttl", lease_ttl)
        self.shutdown_budget = _seconds("shutdown_budget", shutdown_budget, zero=True)
        self.poll = _seconds("poll", poll)
        self.adapter = adapter or _adapter_name(backend)
        self.progress = progress
        self._specs: dict[JobID, JobSpec] = dict(specs or {})
        self._views: dict[JobID, JobView] = {}
        self._leases: dict[JobID, Lease] = {}
        self._due: dict[JobID, float] = {}
        self._elsewhere: set[JobID] = set()
        self._acted = 0

    # -- the host's calls -------------------------------------------------------------------------

    def submit(
        self,
        spec: JobSpec,
        policy: Policy | None = None,
        *options: PlanOption,
        time_bound: float | None = None,
    ) -> JobID:
        """Plan ``spec`` under ``policy`` with this supervisor (``make_plan`` with
        ``with_supervisor()``), append the header, and make submission 1 of attempt 1: its
        intent durably appended before ``backend.start``, its observed record after.

        Refused (``Rejected``, nothing recorded) when the backend would rerun the job on its own
        while the supervisor enforces a rule (a duplicate execution), or a rule the supervisor
        enforces needs an act the backend lacks. ``time_bound``: seconds an execution may run
        before it is stopped and counted as a failure with cause ``timeout``."""
        bound = None if time_bound is None else _seconds("time_bound", time_bound)
        plan = make_plan(self.backend, spec, policy, *options, with_supervisor())
        self._refuse(plan)
        job = plan.job
        now = self.clock.now()
        self._leases[job] = self.store.acquire(job, self.owner, now, self.lease_ttl)
        self._specs[job] = spec
        try:
            entry = self._append_first(job, HeaderRecord.of(plan, time_bound=bound))
            assert isinstance(entry.record, HeaderRecord)
            view = JobView(job=job, header=entry.record)
            self._views[job] = view
            self._submit_next(view, 1)
        except _Lost:
            raise Conflict(
                f"job {job}: another supervisor took the job while it was submitted"
            ) from None
        return job

    def step(self) -> int:
        """One pass over every unfinished job of this backend's cluster (its header names
        ``backend.name``) that this supervisor holds or can take the lease of:
        renew or take the lease, observe the current object, record what changed, decide, act.
        Returns how many actions (records other than observations, and writes to the
        scheduler) it took."""
        before = self._acted
        for job in self.store.unfinished():
            view = self._claim(job)
            if view is None:
                continue
            with contextlib.suppress(_Lost):
                self._advance(view)
        return self._acted - before

    def run_until_idle(
        self, max_steps: int = 10_000, *, between: Callable[[], None] | None = None
    ) -> bool:
        """Step until every job is terminal or waits for a person (True), or ``max_steps``
        steps were taken (False). When a step takes no action it waits on the clock
        (:func:`~dispatch_core.clock.pause`) until the next due time (a backoff, a bound) or
        ``poll`` seconds. ``between`` runs before each step (a host's, or a test's, hook)."""
        for _ in range(max_steps):
            if between is not None:
                between()
            acted = self.step()
            if self.idle():
                return True
            if acted == 0:
                now = self.clock.now()
                due = [t for t in self._due.values() if t > now]
                wait = min(min(due) - now, self.poll) if due else self.poll
                pause(self.clock, max(wait, 0.001))
        return self.idle()

    def idle(self) -> bool:
        """Whether nothing is left for this supervisor: every unfinished job is held for a
        person, or another supervisor holds its live lease, or it is another cluster's."""
        now = self.clock.now()
        for job in self.store.unfinished():
            if job in self._elsewhere:
                continue
            view = self._views.get(job)
            if view is None:
                lease = self.store.lease(job)
                if lease is not None and lease.owner != self.owner and lease.live(now):
                    continue
                return False
            if view.held is None:
                return False
        return True

    def cancel(self, job: JobID) -> Status:
        """Stop every live object of ``job`` within the shutdown budget, then record it
        cancelled. ``OutcomeUnknown`` when an object has not ended within the budget (the
        cancel is recorded and goes on at the next step)."""
        view = self._take(job)
        try:
            if view.terminal is None:
                if view.cancelling is None:
                    self._append(
                        view,
                        TransitionRecord(
                            action=Action.CANCEL,
                            state=view.last.state if view.last is not None else State.QUEUED,
                            cause=Cause.CANCELLED,
                            submission=view.submission or None,
                            attempt=view.attempt or None,
                            detail="cancelled by the host",
                        ),
                    )
                deadline = self.clock.now() + self.shutdown_budget
                # every stop is made under a live lease: renewed before each round of the wait
                while self._keep_lease(job) and not self._drive_cancel(view):
                    remaining = deadline - self.clock.now()
                    if remaining <= 0:
                        raise OutcomeUnknown(
                            f"job {job}: an object has not ended within the shutdown budget "
                            f"({self.shutdown_budget:g} s); the cancel goes on at the next step"
                        )
                    pause(self.clock, min(1.0, remaining))
        except _Lost:
            raise Conflict(
                f"job {job}: another supervisor took the job during its cancel"
            ) from None
        return self.status(job)

    def release(self, job: JobID) -> Status:
        """Release ``job`` from its hold for a person. A failure's hold lets the job run again
        (submission N+1 of attempt A+1); a hold for want of the spec needs the spec supplied
        first (:meth:`provide`)."""
        view = self._take(job)
        held = view.held
        if held is None:
            raise Rejected(f"job {job} is not held for a person")
        if held.rule is None and self._spec_for(view) is None:
            raise Rejected(
                f"job {job} is held because its recorded spec is redacted: supply the spec "
                "with provide(job, spec) first"
            )
        try:
            self._append(
                view,
                TransitionRecord(
                    action=Action.RELEASE,
                    state=State.QUEUED,
                    cause=held.cause,
                    submission=view.submission or None,
                    attempt=view.attempt or None,
                    detail="released by a person",
                ),
            )
        except _Lost:
            raise Conflict(
                f"job {job}: another supervisor took the job during its release"
            ) from None
        return self.status(job)

    def provide(self, job: JobID, spec: JobSpec) -> None:
        """Supply ``job``'s spec again (its recorded spec is redacted): it must be the spec the
        job was submitted with (the same fingerprint). A job held for want of it is released."""
        header = self._header(job)
        if RecordedSpec.of(spec).fingerprint() != header.spec_fingerprint:
            raise Rejected(f"job {job}: that is not the spec the job was submitted with")
        self._specs[job] = spec
        view = self._views.get(job)
        if view is not None and view.held is not None and view.held.rule is None:
            self.release(job)

    def close(self) -> None:
        """Give up every lease this supervisor holds (a clean stop), so that another can take
        its jobs over at once instead of after the leases expire. The store stays open."""
        for job, lease in list(self._leases.items()):
            with contextlib.suppress(DispatchError):
                self.store.release(lease)
            self._drop(job)

    def status(self, job: JobID) -> Status:
        """``job``'s status, read from the record."""
        entries = self.store.records(job)
        if not entries:
            raise NotFound(f"no job {job} in the record")
        return status_of(rebuild(job, entries))

    def jobs(self) -> list[JobID]:
        """Every job in the record, in id order."""
        return self.store.jobs()

    # -- leases and the record --------------------------------------------------------------------

    def _header(self, job: JobID) -> HeaderRecord:
        view = self._views.get(job)
        if view is not None:
            return view.header
        entries = self.store.records(job, 0)
        if not entries or not isinstance(entries[0].record, HeaderRecord):
            raise NotFound(f"no job {job} in the record")
        return entries[0].record

    def _claim(self, job: JobID) -> JobView | None:
        """The job's view under a live lease of this supervisor, or None when another has it."""
        now = self.clock.now()
        lease = self._leases.get(job)
        if lease is not None and lease.live(now) and job in self._views:
            if lease.expires - now < self.lease_ttl / 2:
                try:
                    self._leases[job] = self.store.renew(lease, now, self.lease_ttl)
                except LeaseConflict:
                    self._drop(job)
                    return None
            return self._views[job]
        if job in self._elsewhere:
            return None
        if job not in self._views:
            # A job of another cluster (its header names another backend) is never touched:
            # this backend would find none of its objects and call its end evidence lost.
            first = self.store.records(job, 0)[:1]
            if not first:
                return None
            header = first[0].record
            if isinstance(header, HeaderRecord) and header.backend != self.backend.name:
                self._elsewhere.add(job)
                return None
        try:
            self._leases[job] = self.store.acquire(job, self.owner, now, self.lease_ttl)
        except LeaseConflict:
            self._drop(job)
            return None
        entries = self.store.records(job)
        if not entries:
            self._drop(job)
            return None
        view = rebuild(job, entries)
        self._views[job] = view
        return view

    def _take(self, job: JobID) -> JobView:
        view = self._claim(job)
        if view is None:
            if not self.store.records(job):
                raise NotFound(f"no job {job} in the record")
            lease = self.store.lease(job)
            holder = "another supervisor" if lease is None else lease.owner
            raise Conflict(f"job {job} is supervised by {holder}: its lease is not free")
        return view

    def _drop(self, job: JobID) -> None:
        self._views.pop(job, None)
        self._leases.pop(job, None)
        self._due.pop(job, None)

    def _append_first(self, job: JobID, record: Record) -> Entry:
        try:
            entry = self.store.append(job, 0, record, self._leases[job], self.clock.now())
        except (LeaseConflict, SeqConflict):
            self._drop(job)
            raise _Lost() from None
        self._acted += 1
        self._tell(entry)
        return entry

    def _keep_lease(self, job: JobID) -> Lease:
        """This supervisor's live lease of ``job``, renewed when half spent. A lease that
        expired during a long call (a scheduler's timeout) is taken again only when nobody
        holds it (an append then checks that nobody wrote meanwhile); ``_Lost`` otherwise."""
        now = self.clock.now()
        lease = self._leases.get(job)
        if lease is None:
            self._drop(job)
            raise _Lost()
        try:
            if not lease.live(now):
                lease = self.store.acquire(job, self.owner, now, self.lease_ttl)
            elif lease.expires - now < self.lease_ttl / 2:
                lease = self.store.renew(lease, now, self.lease_ttl)
        except LeaseConflict:
            self._drop(job)
            raise _Lost() from None
        self._leases[job] = lease
        return lease

    def _append(self, view: JobView, record: Record) -> Entry:
        """Append under this supervisor's lease, as the next seq (the seq this supervisor's
        view expects: the append is refused if anyone else wrote); drop the job on a conflict.
        A lease that expired during a long call is taken again when nobody else holds it."""
        job = view.job
        lease = self._keep_lease(job)
        try:
            entry = self.store.append(job, view.next_seq, record, lease, self.clock.now())
        except (LeaseConflict, SeqConflict):
            self._drop(job)
            raise _Lost() from None
        view.apply(entry)
        if not isinstance(record, ObservationRecord):
            self._acted += 1
        self._tell(entry)
        if isinstance(record, TerminalRecord):
            self.store.release(lease)
            self._drop(job)
        return entry

    def _tell(self, entry: Entry) -> None:
        if self.progress is not None:
            self.progress(describe(entry))

    # -- deciding ---------------------------------------------------------------------------------

    def _advance(self, view: JobView) -> None:
        self._due.pop(view.job, None)
        for _ in range(ROUNDS_PER_STEP):
            if not self._round(view):
                return

    def _round(self, view: JobView) -> bool:
        """One decision for the job; True when another may follow at once."""
        if view.terminal is not None:
            return False
        if view.cancelling is not None:
            self._drive_cancel(view)
            return False
        if view.held is not None:
            return False
        now = self.clock.now()
        if view.pending is not None or view.submission == 0:
            attempt = view.pending.attempt if view.pending is not None else 1
            not_before = view.pending.not_before if view.pending is not None else None
            if not_before is not None and now < not_before:
                self._due[view.job] = not_before
                return False
            self._submit_next(view, attempt)
            return view.ref is not None
        if view.unobserved:
            self._resolve(view)
            return view.ref is not None
        ref = view.ref
        assert ref is not None
        try:
            seen = self.backend.open(ref)
        except NotFound as error:
            seen = Observation(
                ref=ref,
                state=State.UNKNOWN,
                cause=Cause.EVIDENCE_LOST,
                submission=view.submission,
                attempt=view.attempt,
                detail=f"the object can no longer be read: {error}",
            )
        except OutcomeUnknown:
            return False
        if seen != view.last:
            self._append(view, ObservationRecord(observation=seen))
        return self._decide(view, seen, now)

    def _decide(self, view: JobView, seen: Observation, now: float) -> bool:
        ref = view.ref
        assert ref is not None
        if view.rework is not None:
            # The requeue or restart decided on this very observation has not shown: again.
            self._rework(view)
            return False
        state = seen.state
        if state is State.SUCCEEDED:
            self._terminal(view, State.SUCCEEDED, Cause.NONE, "the execution succeeded")
            return False
        if state.ended or state is State.UNKNOWN:
            if view.stop is not None:
                cause = view.stop.cause
            elif state is State.UNKNOWN:
                cause = Cause.EVIDENCE_LOST  # an end whose result cannot be read: never success
            else:
                cause = seen.cause if seen.cause is not Cause.NONE else Cause.EVIDENCE_LOST
            return self._failed(view, seen, cause)
        if view.stop is not None:
            self._stop(ref)  # stopped, not ended yet: stop again
            return False
        if fatal_while_queued(state, seen.cause) and not view.seen_running:
            deadline = view.observed_at[view.submission] + self.launch_bound
            if now >= deadline:
                self._append(
                    view,
                    TransitionRecord(
                        action=Action.STOP,
                        state=state,
                        cause=seen.cause,
                        submission=view.submission,
                        attempt=view.attempt,
                        detail=(
                            f"queued with {seen.cause.value} for more than the launch bound "
                            f"({self.launch_bound:g} s)"
                        ),
                    ),
                )
                return self._stop(ref)
            self._due[view.job] = deadline
            return False
        if state is State.RUNNING and view.time_bound is not None:
            since = view.running_since if view.running_since is not None else now
            deadline = since + view.time_bound
            if now >= deadline:
                self._append(
                    view,
                    TransitionRecord(
                        action=Action.STOP,
                        state=state,
                        cause=Cause.TIMEOUT,
                        submission=view.submission,
                        attempt=view.attempt,
                        detail=f"running for more than its time bound ({view.time_bound:g} s)",
                    ),
                )
                return self._stop(ref)
            self._due[view.job] = deadline
        return False

    def _failed(self, view: JobView, seen: Observation, cause: Cause) -> bool:
        """Spend a budget on a failure with ``cause``, or end the job."""
        now = self.clock.now()
        common = {
            "state": seen.state,
            "cause": cause,
            "submission": view.submission,
            "attempt": view.attempt,
        }
        if before_start(cause, view.seen_running):
            if view.launch_retries < self.launch_retries:
                k = view.launch_retries + 1
                self._append(
                    view,
                    TransitionRecord(
                        action=Action.LAUNCH_RETRY,
                        detail=f"failed before it started; launch retry {k} of "
                        f"{self.launch_retries}, keeping attempt {view.attempt}",
                        **common,
                    ),
                )
                return True
            self._terminal(
                view,
                State.FAILED,
                cause,
                f"failed before it started ({cause.value}); the {self.launch_retries} launch "
                "retries are spent",
            )
            return False
        header = view.header
        choice = choose_rule(header.policy, header.enforcers, cause, view.uses)
        if choice is None:
            self._terminal(
                view,
                State.FAILED,
                cause,
                f"no rule of the policy the supervisor enforces answers {cause.value} with "
                "budget left",
            )
            return False
        index, kind = choice.index, choice.kind
        shared = " (a shared checkpoint: every rule is a hold for a person)"
        if kind is RuleKind.RESUBMIT:
            k = view.resubmits + 1
            wait = self.backoff.delay(k)
            self._append(
                view,
                TransitionRecord(
                    action=Action.RESUBMIT,
                    rule=index,
                    not_before=now + wait,
                    detail=f"resubmission {k}, as attempt {view.attempt + 1}, after {wait:g} s",
                    **common,
                ),
            )
            return True
        if kind in (RuleKind.REQUEUE, RuleKind.RESTART):
            action = Action.REQUEUE if kind is RuleKind.REQUEUE else Action.RESTART
            self._append(
                view,
                TransitionRecord(
                    action=action,
                    rule=index,
                    detail=f"{kind.value} of {view.ref.id if view.ref else '?'} in place",
                    **common,
                ),
            )
            self._rework(view)
            return False
        if kind is RuleKind.HOLD:
            self._append(
                view,
                TransitionRecord(
                    action=Action.HOLD,
                    rule=index,
                    detail=f"held for a person by rule {index}"
                    + (shared if header.policy.shared_checkpoint else "")
                    + "; release(job) lets it run again",
                    **common,
                ),
            )
            return False
        self._append(
            view,
            TransitionRecord(
                action=Action.ESCALATE,
                rule=index,
                detail=f"escalated by rule {index}",
                **common,
            ),
        )
        self._terminal(view, State.FAILED, cause, f"{cause.value}, escalated by rule {index}")
        return False

    def _terminal(self, view: JobView, state: State, cause: Cause, detail: str) -> None:
        self._append(
            view,
            TerminalRecord(
                state=state,
                cause=cause,
                submission=view.submission or None,
                attempt=view.attempt or None,
                detail=detail,
            ),
        )

    # -- acting -----------------------------------------------------------------------------------

    def _spec_for(self, view: JobView) -> JobSpec | None:
        """The spec to start: the host's, else the recorded one unless it is redacted."""
        spec = self._specs.get(view.job)
        if spec is not None:
            return spec
        recorded = view.header.spec
        if recorded.redacted:
            return None
        return JobSpec(
            command=recorded.command,
            env=dict(recorded.env),
            work_dir=recorded.work_dir,
            nodes=recorded.nodes,
            procs_per_node=recorded.procs_per_node,
            extensions=dict(recorded.extensions),
        )

    def _plan(self, view: JobView, spec: JobSpec) -> Plan:
        header = view.header
        return Plan(
            job=view.job,
            backend=header.backend,
            spec=spec,
            policy=header.policy,
            capabilities=header.capabilities,
            unverified=header.unverified,
            enforcers=header.enforcers,
            unverified_rules=header.unverified_rules,
            native=header.native,
            identity_weakened=header.identity_weakened,
        )

    def _hold_for_spec(self, view: JobView) -> None:
        withheld = ", ".join(view.header.spec.withheld_env)
        what = f" (env {withheld} withheld)" if withheld else ""
        self._append(
            view,
            TransitionRecord(
                action=Action.HOLD,
                state=State.HELD,
                submission=view.submission or None,
                attempt=view.attempt or None,
                detail=(
                    f"the recorded spec is redacted{what}, and a submission is never made from "
                    "it: supply the spec with provide(job, spec), or Supervisor(specs=...)"
                ),
            ),
        )

    def _submit_next(self, view: JobView, attempt: int) -> None:
        """Intent N+1 of ``attempt``, appended before the start; then start and observe."""
        spec = self._spec_for(view)
        if spec is None:
            self._hold_for_spec(view)
            return
        submission = view.submission + 1
        self._append(
            view,
            IntentRecord(
                submission=submission,
                attempt=attempt,
                spec_fingerprint=view.header.spec_fingerprint,
                adapter=self.adapter,
                cluster=view.header.backend,
                tool_version=tool_version(),
                object_name=view.job.discovery_name(),
            ),
        )
        self._launch(view, spec)

    def _launch(self, view: JobView, spec: JobSpec) -> None:
        try:
            ref = self.backend.start(self._plan(view, spec), view.submission, view.attempt)
        except OutcomeUnknown:
            return  # resolved through find at the next step, never started blind
        except (Rejected, Unsupported) as error:
            self._acted += 1
            self._terminal(
                view,
                State.FAILED,
                Cause.LAUNCH_FAILED,
                f"the scheduler refused submission {view.submission}: {error}",
            )
            return
        self._acted += 1
        self._observed(view, ref)

    def _observed(self, view: JobView, ref: ObjectRef) -> None:
        self._append(view, ObservedRecord(submission=view.submission, ref=ref))

    def _resolve(self, view: JobView) -> None:
        """An intent without an observed record: adopt its object if ``find`` shows it, else
        start it (``start`` is idempotent per (job, submission))."""
        try:
            seen = self.backend.find(view.job)
        except OutcomeUnknown:
            return
        mine = [o for o in seen if not o.foreign and o.submission == view.submission]
        if mine:
            self._observed(view, mine[0].ref)
            return
        spec = self._spec_for(view)
        if spec is None:
            self._hold_for_spec(view)
            return
        self._launch(view, spec)

    def _stop(self, ref: ObjectRef) -> bool:
        """Stop the object; True when the stop returned (the end can be observed at once)."""
        try:
            self.backend.stop(ref)
        except (OutcomeUnknown, NotFound):
            self._acted += 1
            return False
        self._acted += 1
        return True

    def _rework(self, view: JobView) -> None:
        """The requeue or restart the latest such transition decided, on the current object."""
        decided = view.rework
        ref = view.ref
        assert decided is not None and ref is not None
        try:
            if decided.action is Action.REQUEUE:
                if not isinstance(self.backend, Requeuer):
                    raise Unsupported(f"{self.backend.name} implements no Requeuer")
                self.backend.requeue(ref)
            else:
                if not isinstance(self.backend, Restarter):
                    raise Unsupported(f"{self.backend.name} implements no Restarter")
                self.backend.restart(ref)
        except OutcomeUnknown:
            self._acted += 1
            return  # re-observed at the next step
        except DispatchError as error:
            self._terminal(
                view,
                State.FAILED,
                decided.cause,
                f"the {decided.action.value} of rule {decided.rule} could not be made: "
                f"{redact_text(str(error))}",
            )
            return
        self._acted += 1

    def _drive_cancel(self, view: JobView) -> bool:
        """One pass of a cancel: stop every live object of the job; record the job cancelled
        once none is left. True when it is."""
        live = False
        refs: list[ObjectRef] = list(view.refs.values())
        try:
            for seen in self.backend.find(view.job):
                if not seen.foreign and not any(same_object(seen.ref, r) for r in refs):
                    refs.append(seen.ref)
        except OutcomeUnknown:
            live = True
        for ref in refs:
            try:
                if self._ended(ref):
                    continue
                self.backend.stop(ref)
                self._acted += 1
                if not self._ended(ref):
                    live = True
            except OutcomeUnknown:
                live = True
        if live:
            return False
        self._terminal(view, State.CANCELLED, Cause.CANCELLED, "cancelled by the host")
        return True

    def _ended(self, ref: ObjectRef) -> bool:
        try:
            seen = self.backend.open(ref)
        except NotFound:
            return True
        return seen.state.ended

    # -- refusals at submit -----------------------------------------------------------------------

    def _refuse(self, plan: Plan) -> None:
        policy = plan.policy
        supervised = [i for i, e in enumerate(plan.enforcers) if e is Enforcer.SUPERVISOR]
        if supervised and isinstance(self.backend, OwnRetries):
            reason = self.backend.own_retries(plan.spec)
            if not isinstance(reason, str):
                raise Rejected(f"{self.backend.name}: own_retries must answer a str")
            if reason:
                index = supervised[0]
                raise Rejected(
                    f"{self.backend.name} would rerun this job on its own ({reason}), and the "
                    f"supervisor enforces rule {index} ({policy.rules[index].kind.value}): "
                    "refused, because both would retry one failure, so the job could run as "
                    "two executions at once (a duplicate execution) and more often than the "
                    "policy allows; let one of them retry (leave the rule to the scheduler, or "
                    "submit the job so that the scheduler does not rerun it)"
                )
        if policy.shared_checkpoint:
            return  # every rule is a hold for a person: nothing is asked of the backend
        for index in supervised:
            kind = policy.rules[index].kind
            if kind is RuleKind.REQUEUE and not isinstance(self.backend, Requeuer):
                raise Rejected(
                    f"rule {index} (requeue) is the supervisor's to enforce, but "
                    f"{self.backend.name} has no requeue it can ask for (no Requeuer)"
                )
            if kind is RuleKind.RESTART and not isinstance(self.backend, Restarter):
                raise Rejected(
                    f"rule {index} (restart) is the supervisor's to enforce, but "
                    f"{self.backend.name} has no in-place restart it can ask for (no "
                    "Restarter): the rule could never be carried out"
                )


__all__ = ["Supervisor", "default_owner"]
