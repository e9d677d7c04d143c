"""A record store in memory: the same rules as SQLite, nothing durable. For tests and for
simulators that run many supervisors against one store in one process."""

from __future__ import annotations

from dataclasses import dataclass, field

from dispatch_core.model import JobID
from dispatch_core.record.store import (
    JobSummary,
    LeaseConflict,
    SeqConflict,
    advance,
    check_lease,
    check_time,
    decode,
    encode,
)
from dispatch_core.record.types import Entry, Lease, Record


@dataclass
class _Job:
    summary: JobSummary = field(default_factory=JobSummary)
    texts: list[tuple[float, str, int, str]] = field(default_factory=list)
    """Per entry: at, writer, token, and the record's stored text (as SQLite keeps it)."""


class MemoryRecordStore:
    """A :class:`~dispatch_core.record.store.RecordStore` in memory."""

    def __init__(self) -> None:
        self._jobs: dict[JobID, _Job] = {}
        self._leases: dict[JobID, Lease] = {}
        self._tokens: dict[JobID, int] = {}

    def append(
        self, job: JobID, expected_seq: int, record: Record, lease: Lease, now: float
    ) -> Entry:
        check_time(now)
        check_lease(job, self._leases.get(job), lease, now)
        state = self._jobs.get(job, _Job())
        if expected_seq != state.summary.next_seq:
            raise SeqConflict(job, expected_seq, state.summary.next_seq)
        text = encode(record)
        stored = decode(text)
        summary = advance(job, state.summary, stored)
        state.texts.append((float(now), lease.owner, lease.token, text))
        state.summary = summary
        self._jobs[job] = state
        return Entry(
            job=job, seq=expected_seq, at=now, writer=lease.owner, token=lease.token, record=stored
        )

    def records(self, job: JobID, start: int = 0) -> list[Entry]:
        state = self._jobs.get(job)
        if state is None:
            return []
        return [
            Entry(job=job, seq=seq, at=at, writer=writer, token=token, record=decode(text))
            for seq, (at, writer, token, text) in enumerate(state.texts)
            if seq >= start
        ]

    def next_seq(self, job: JobID) -> int:
        state = self._jobs.get(job)
        return 0 if state is None else state.summary.next_seq

    def jobs(self) -> list[JobID]:
        return sorted(self._jobs, key=str)

    def unfinished(self) -> list[JobID]:
        return sorted((j for j, s in self._jobs.items() if not s.summary.finished), key=str)

    def lease(self, job: JobID) -> Lease | None:
        return self._leases.get(job)

    def acquire(self, job: JobID, owner: str, now: float, ttl: float) -> Lease:
        check_time(now, ttl)
        current = self._leases.get(job)
        if current is not None and current.live(now) and current.owner != owner:
            raise LeaseConflict(
                f"job {job}: the lease is held by {current.owner} until {current.expires}"
            )
        token = self._tokens.get(job, 0) + 1
        lease = Lease(job=job, owner=owner, token=token, expires=now + ttl)
        self._tokens[job] = token
        self._leases[job] = lease
        return lease

    def renew(self, lease: Lease, now: float, ttl: float) -> Lease:
        check_time(now, ttl)
        check_lease(lease.job, self._leases.get(lease.job), lease, now)
        renewed = Lease(job=lease.job, owner=lease.owner, token=lease.token, expires=now + ttl)
        self._leases[lease.job] = renewed
        return renewed

    def release(self, lease: Lease) -> bool:
        current = self._leases.get(lease.job)
        if current is None or current.token != lease.token or current.owner != lease.owner:
            return False
        del self._leases[lease.job]
        return True

    def close(self) -> None:
        pass


__all__ = ["MemoryRecordStore"]
