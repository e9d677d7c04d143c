"""What a host shows of a job: its :class:`Status`, read from the record alone, and one line
per record for progress. Everything here is made from what the store returned (every text
already redacted by the store), and redacted once more on the way out: no credential reaches a
status, a table or a progress line."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dispatch_core.model import Cause, JobID, ObjectRef, State
from dispatch_core.record.redact import redact_text
from dispatch_core.record.types import (
    Entry,
    HeaderRecord,
    IntentRecord,
    ObservationRecord,
    ObservedRecord,
    TerminalRecord,
    TransitionRecord,
)
from dispatch_core.supervise.view import JobView


@dataclass(frozen=True)
class Status:
    """A job as its record tells it: its state and cause, its latest submission and attempt,
    its current object, a detail for people, and whether it is finished or waits for a person.

    ``state`` is the terminal state once the job ended; ``held`` while it waits for a person;
    ``queued`` while a submission is due or not yet observed; else the latest observation's."""

    job: JobID
    state: State
    cause: Cause
    submission: int
    attempt: int
    detail: str = ""
    ref: ObjectRef | None = None
    finished: bool = False
    waiting_for_person: bool = False
    weakened: str = ""

    def identity_weakened(self) -> str:
        """Why this job's executions may not each have their own identity (the plan's answer,
        seed 000 "Execution identity"); "" when the adapter keeps it."""
        return self.weakened

    def as_dict(self) -> dict[str, Any]:
        """The status as JSON-ready data (``dispatch status --json``)."""
        return {
            "job": str(self.job),
            "state": self.state.value,
            "cause": self.cause.value,
            "submission": self.submission,
            "attempt": self.attempt,
            "detail": self.detail,
            "object": None if self.ref is None else self.ref.id,
            "finished": self.finished,
            "waiting_for_person": self.waiting_for_person,
            "identity_weakened": self.weakened,
        }


def status_of(view: JobView) -> Status:
    """The status of the job ``view`` was rebuilt for."""
    weakened = redact_text(view.header.identity_weakened or "")
    common: dict[str, Any] = {
        "job": view.job,
        "submission": view.submission,
        "attempt": view.attempt,
        "ref": view.ref,
        "weakened": weakened,
    }
    if view.terminal is not None:
        terminal = view.terminal
        return Status(
            state=terminal.state,
            cause=terminal.cause,
            detail=redact_text(terminal.detail),
            finished=True,
            **common,
        )
    if view.held is not None:
        return Status(
            state=State.HELD,
            cause=view.held.cause,
            detail=redact_text(view.held.detail),
            waiting_for_person=True,
            **common,
        )
    if view.cancelling is not None:
        return Status(
            state=view.last.state if view.last is not None else State.QUEUED,
            cause=Cause.CANCELLED,
            detail="cancelling: stopping every live object of the job",
            **common,
        )
    if view.pending is not None:
        when = view.pending.not_before
        after = "" if when is None else f" not before {_time(when)}"
        cause = view.last_transition.cause if view.last_transition is not None else Cause.NONE
        return Status(
            state=State.QUEUED,
            cause=cause,
            detail=f"submission {view.submission + 1} (attempt {view.pending.attempt}) due{after}",
            **common,
        )
    if view.unobserved or view.last is None:
        return Status(state=State.QUEUED, cause=Cause.NONE, detail="submitted", **common)
    return Status(
        state=view.last.state,
        cause=view.last.cause,
        detail=redact_text(view.last.detail),
        **common,
    )


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(entry: Entry) -> str:
    """One progress line for one record: the job, the seq, and what it says."""
    record = entry.record
    head = f"{entry.job} #{entry.seq}"
    if isinstance(record, HeaderRecord):
        text = f"header: on {record.backend}, {len(record.policy.rules)} rule(s)"
    elif isinstance(record, IntentRecord):
        text = f"intent: submission {record.submission}, attempt {record.attempt}"
    elif isinstance(record, ObservedRecord):
        text = f"observed: submission {record.submission} is {record.ref.id}"
    elif isinstance(record, ObservationRecord):
        seen = record.observation
        text = f"observation: {seen.ref.id} {seen.state.value}/{seen.cause.value}"
    elif isinstance(record, TransitionRecord):
        rule = "" if record.rule is None else f" (rule {record.rule})"
        when = "" if record.not_before is None else f", not before {_time(record.not_before)}"
        detail = f": {record.detail}" if record.detail else ""
        text = f"{record.action.value}{rule} on {record.cause.value}{when}{detail}"
    else:
        assert isinstance(record, TerminalRecord)
        detail = f": {record.detail}" if record.detail else ""
        text = f"terminal: {record.state.value}/{record.cause.value}{detail}"
    return redact_text(f"{head} {text}")


__all__ = ["Status", "describe", "status_of"]
