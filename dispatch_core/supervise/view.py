"""A job as its record tells it: what the supervisor rebuilds after a crash, and keeps up to
date as it appends. Everything a decision needs is here, and all of it comes from the record:
budgets (uses per rule, launch retries, resubmissions) are counted from the transitions, so
they hold across crashes and supervisors.

The transitions and what they leave pending:

- ``launch_retry`` / ``resubmit`` / ``release`` (of a failure's hold): a new submission is due
  (the same attempt for a launch retry, the next one otherwise), ``not_before`` the backoff; the
  next intent clears it;
- ``hold``: the job waits for a person until ``release``;
- ``stop`` (the supervisor stopped the current object at its time bound or launch bound): the
  object's end is read with the transition's cause (``timeout``, or the launch cause), not as
  the cancel it shows; a decision consumes it;
- ``requeue`` / ``restart``: the act on the current object is pending until the object is seen
  to have left the ended observation the decision was made on (another restart count, or not
  ended);
- ``cancel``: the job's objects are being stopped; the terminal record follows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from dispatch_core.model import JobID, ObjectRef, Observation, State
from dispatch_core.record.types import (
    Action,
    Entry,
    HeaderRecord,
    IntentRecord,
    ObservationRecord,
    ObservedRecord,
    TerminalRecord,
    TransitionRecord,
)

DECISIONS: Final = frozenset(
    {
        Action.LAUNCH_RETRY,
        Action.RESUBMIT,
        Action.REQUEUE,
        Action.RESTART,
        Action.HOLD,
        Action.ESCALATE,
    }
)


@dataclass(frozen=True)
class Pending:
    """A submission that is due: its attempt, and the time before which it is not made."""

    attempt: int
    not_before: float | None
    action: Action


def same_object(a: ObjectRef, b: ObjectRef) -> bool:
    """Whether two refs name one object (a requeue may move its submit time on)."""
    return a.backend == b.backend and a.uid == b.uid and a.id == b.id


@dataclass
class JobView:
    """One job, rebuilt from its records (see the module docstring)."""

    job: JobID
    header: HeaderRecord
    next_seq: int = 1
    submission: int = 0
    attempt: int = 0
    intents: dict[int, IntentRecord] = field(default_factory=dict)
    refs: dict[int, ObjectRef] = field(default_factory=dict)
    observed_at: dict[int, float] = field(default_factory=dict)
    last: Observation | None = None
    """The latest observation of the current submission's object."""
    last_at: float | None = None
    seen_running: bool = False
    running_since: float | None = None
    stop: TransitionRecord | None = None
    pending: Pending | None = None
    held: TransitionRecord | None = None
    rework: TransitionRecord | None = None
    rework_on: Observation | None = None
    cancelling: TransitionRecord | None = None
    terminal: TerminalRecord | None = None
    uses: Counter[int] = field(default_factory=Counter)
    launch_retries: int = 0
    resubmits: int = 0
    last_transition: TransitionRecord | None = None

    @property
    def time_bound(self) -> float | None:
        """Seconds an execution may run before the supervisor stops it (the header's)."""
        return self.header.time_bound

    @property
    def unobserved(self) -> bool:
        """An intent without its observed record: resolved through ``find`` (adopt or start)."""
        return self.submission > 0 and self.submission not in self.refs

    @property
    def ref(self) -> ObjectRef | None:
        """The current submission's object, once observed."""
        return self.refs.get(self.submission)

    def apply(self, entry: Entry) -> None:
        """Take one more entry (the next seq) into the view."""
        if entry.seq != self.next_seq:
            raise ValueError(f"job {self.job}: entry {entry.seq} follows {self.next_seq - 1}")
        self.next_seq += 1
        record = entry.record
        if isinstance(record, IntentRecord):
            self.submission, self.attempt = record.submission, record.attempt
            self.intents[record.submission] = record
            self.pending = self.stop = self.rework = self.rework_on = None
            self.last = self.last_at = self.running_since = None
            self.seen_running = False
        elif isinstance(record, ObservedRecord):
            self.refs[record.submission] = record.ref
            self.observed_at[record.submission] = entry.at
        elif isinstance(record, ObservationRecord):
            self._observation(record.observation, entry.at)
        elif isinstance(record, TransitionRecord):
            self._transition(record)
        elif isinstance(record, TerminalRecord):
            self.terminal = record

    def _observation(self, seen: Observation, at: float) -> None:
        current = self.ref
        if current is None or not same_object(current, seen.ref):
            return  # an older object (seen while cancelling), not the current one
        self.last, self.last_at = seen, at
        if seen.state is State.RUNNING:
            self.seen_running = True
            if self.running_since is None:
                self.running_since = at
        else:
            self.running_since = None
        if self.rework is not None and self.rework_on is not None:
            before = self.rework_on
            if not seen.state.ended or seen.restart_count != before.restart_count:
                self.rework = self.rework_on = None

    def _transition(self, record: TransitionRecord) -> None:
        self.last_transition = record
        action = record.action
        if action in DECISIONS:
            self.stop = None
            if record.rule is not None:
                self.uses[record.rule] += 1
        if action is Action.LAUNCH_RETRY:
            self.launch_retries += 1
            self.pending = Pending(self.attempt, record.not_before, action)
        elif action is Action.RESUBMIT:
            self.resubmits += 1
            self.pending = Pending(self.attempt + 1, record.not_before, action)
        elif action in (Action.REQUEUE, Action.RESTART):
            self.rework, self.rework_on = record, self.last
        elif action is Action.HOLD:
            self.held = record
        elif action is Action.RELEASE:
            if self.held is not None and self.held.rule is not None:
                # A failure's hold released: the person lets the job run again, as attempt A+1.
                self.pending = Pending(self.attempt + 1, record.not_before, action)
            self.held = None
        elif action is Action.STOP:
            self.stop = record
        elif action is Action.CANCEL:
            self.cancelling = record


def rebuild(job: JobID, entries: Iterable[Entry]) -> JobView:
    """The view of ``job`` from its entries (seq 0 is the header)."""
    entries = list(entries)
    if not entries or not isinstance(entries[0].record, HeaderRecord):
        raise ValueError(f"job {job} has no header record")
    view = JobView(job=job, header=entries[0].record)
    for entry in entries[1:]:
        view.apply(entry)
    return view


__all__ = [
    "DECISIONS",
    "JobView",
    "Pending",
    "rebuild",
    "same_object",
]
