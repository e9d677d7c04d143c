"""The record store: its protocol, its errors, and the rules every store applies alike.

Every store keeps, per job, entries with a gapless ``seq`` from 0, and one lease. The rules
here are pure functions, so that every store (SQLite, in memory, PostgreSQL later) decides the
same way:

- :func:`check_lease`: an append is made under the job's current lease (same token, same owner)
  and before it expires on the writer's clock;
- :func:`advance`: the grammar of a job's record (header first and only first; submission
  numbers from 1 without a gap or a repeat; an attempt that stays or grows by one; one
  observed record per submission, for the latest; nothing after the terminal record);
- :func:`encode` and :func:`decode`: a record's stored text, every string in it redacted
  (:func:`~dispatch_core.record.redact.scrub`), so no record type can carry a credential.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from dispatch_core.errors import Conflict, DispatchError, Rejected
from dispatch_core.model import JobID
from dispatch_core.record.redact import canonical_json, scrub
from dispatch_core.record.types import (
    RECORD,
    Entry,
    HeaderRecord,
    IntentRecord,
    Lease,
    ObservedRecord,
    Record,
    TerminalRecord,
)


class SeqConflict(Conflict):
    """An append named another ``seq`` than the job's next one: another writer appended first
    (or the caller's view is stale). Re-read the records before deciding again."""

    def __init__(self, job: JobID, expected: int, actual: int) -> None:
        super().__init__(
            f"job {job}: append expected seq {expected}, but the record's next seq is {actual}"
        )
        self.job, self.expected, self.actual = job, expected, actual


class LeaseConflict(Conflict):
    """The lease is held by another writer, or the caller's lease is no longer the job's
    current one (released, expired on the clock, or taken over)."""


class InvalidRecord(Rejected):
    """The record does not fit the job's record (a second header, a gap in submissions, a
    record after the terminal one, ...); nothing was written."""


class StoreError(DispatchError):
    """The store's file cannot be used: written by a newer version, or not a record store."""


@dataclass(frozen=True)
class JobSummary:
    """What the grammar needs to know of a job's record, kept beside it by every store."""

    next_seq: int = 0
    finished: bool = False
    submission: int = 0
    """The highest submission number an intent names (0: none yet)."""
    attempt: int = 0
    """The attempt that intent names."""
    observed: int = 0
    """The highest submission with an observed record (0: none yet)."""


def advance(job: JobID, summary: JobSummary, record: Record) -> JobSummary:
    """``summary`` after ``record`` is appended, or :class:`InvalidRecord`."""
    if summary.finished:
        raise InvalidRecord(f"job {job} has its terminal record: nothing follows it")
    first = summary.next_seq == 0
    if first != isinstance(record, HeaderRecord):
        raise InvalidRecord(
            f"job {job}: the header is the first record and only the first (seq "
            f"{summary.next_seq} cannot be a {record.kind} record)"
        )
    after = replace(summary, next_seq=summary.next_seq + 1)
    if isinstance(record, IntentRecord):
        if record.submission != summary.submission + 1:
            raise InvalidRecord(
                f"job {job}: the next intent is submission {summary.submission + 1}, "
                f"not {record.submission}"
            )
        if record.attempt not in (max(summary.attempt, 1), summary.attempt + 1):
            raise InvalidRecord(
                f"job {job}: submission {record.submission} must keep attempt "
                f"{summary.attempt} or take {summary.attempt + 1}, not {record.attempt}"
            )
        return replace(after, submission=record.submission, attempt=record.attempt)
    if isinstance(record, ObservedRecord):
        if record.submission != summary.submission or summary.observed >= record.submission:
            raise InvalidRecord(
                f"job {job}: an observed record is for the latest intent without one "
                f"(submission {summary.submission}, observed {summary.observed}), "
                f"not submission {record.submission}"
            )
        return replace(after, observed=record.submission)
    if isinstance(record, TerminalRecord):
        return replace(after, finished=True)
    return after


def summarise(job: JobID, records: Sequence[Record]) -> JobSummary:
    """The summary of a whole record, checking its grammar on the way."""
    summary = JobSummary()
    for record in records:
        summary = advance(job, summary, record)
    return summary


def check_time(now: float, ttl: float | None = None) -> None:
    """Refuse a clock time or a lease duration that is not a finite number (a ttl above 0)."""
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise ValueError(f"a clock time is a finite number of seconds, not {now!r}")
    if ttl is not None and (
        isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf
    ):
        raise ValueError(f"a lease's ttl is a finite number of seconds above 0, not {ttl!r}")


def check_lease(job: JobID, current: Lease | None, lease: Lease, now: float) -> None:
    """Refuse (:class:`LeaseConflict`) a write under ``lease`` unless it is ``job``'s current
    lease (``current``, as stored: same token and owner) and still live at ``now``."""
    if lease.job != job:
        raise LeaseConflict(f"the lease is for job {lease.job}, not {job}")
    if current is None or current.token != lease.token or current.owner != lease.owner:
        holder = "nobody" if current is None else f"{current.owner} (token {current.token})"
        raise LeaseConflict(
            f"job {job}: lease token {lease.token} of {lease.owner} is not the current one; "
            f"held by {holder}"
        )
    if not current.live(now):
        raise LeaseConflict(
            f"job {job}: the lease of {lease.owner} expired at {current.expires} (now {now})"
        )


def encode(record: Record) -> str:
    """The stored text of ``record``: its JSON, every string in it redacted."""
    return canonical_json(scrub(record.model_dump(mode="json")))


def decode(text: str) -> Record:
    """The record whose stored text is ``text``."""
    return RECORD.validate_json(text)


@runtime_checkable
class RecordStore(Protocol):
    """Where a supervisor writes ahead and reads back. One writer per job at a time: the holder
    of the job's lease, whose every append is conditional on the ``seq`` it expects.

    Times are seconds on the caller's clock (:class:`~dispatch_core.clock.Clock`): the store
    never reads the wall clock to decide a lease."""

    def append(
        self, job: JobID, expected_seq: int, record: Record, lease: Lease, now: float
    ) -> Entry:
        """Append ``record`` as entry ``expected_seq`` of ``job``, atomically: it is written
        whole or not at all. ``expected_seq`` is the number of entries the writer saw (0 for a
        new job's header). Raises :class:`SeqConflict` when that is not the next seq,
        :class:`LeaseConflict` when ``lease`` is not the job's live lease at ``now``, and
        :class:`InvalidRecord` when the record does not fit. Returns the entry as stored (the
        record as redacted)."""
        ...

    def records(self, job: JobID, start: int = 0) -> list[Entry]:
        """``job``'s entries from seq ``start``, in order (empty for an unknown job)."""
        ...

    def next_seq(self, job: JobID) -> int:
        """How many entries ``job`` has: the seq its next record takes."""
        ...

    def jobs(self) -> list[JobID]:
        """Every job with a record, in id order."""
        ...

    def unfinished(self) -> list[JobID]:
        """The jobs with no terminal record, in id order, read without reading finished jobs."""
        ...

    def lease(self, job: JobID) -> Lease | None:
        """``job``'s current lease as stored, live or expired; ``None`` when none is held."""
        ...

    def acquire(self, job: JobID, owner: str, now: float, ttl: float) -> Lease:
        """Take ``job``'s lease for ``ttl`` seconds from ``now``, with a new token, when nobody
        else holds it live (it is free, expired at ``now``, or ``owner``'s own); otherwise
        :class:`LeaseConflict`. The job need not have a record yet."""
        ...

    def renew(self, lease: Lease, now: float, ttl: float) -> Lease:
        """Extend a live ``lease`` to ``now + ttl``, keeping its token; :class:`LeaseConflict`
        when it expired or is no longer current (an expired lease is gone: acquire again)."""
        ...

    def release(self, lease: Lease) -> bool:
        """Give ``lease`` up; ``False`` when it was no longer current (nothing changes)."""
        ...

    def close(self) -> None:
        """Close the store; it is not used after."""
        ...


__all__ = [
    "InvalidRecord",
    "JobSummary",
    "LeaseConflict",
    "RecordStore",
    "SeqConflict",
    "StoreError",
    "advance",
    "check_lease",
    "check_time",
    "decode",
    "encode",
    "summarise",
]
