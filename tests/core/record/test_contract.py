"""The RecordStore contract, written against the protocol and run on every store factory
(conftest.py): gapless seq, conditional appends, lease exclusivity and expiry on the caller's
clock, the record's grammar, unfinished(), and durability across a reopen."""

from __future__ import annotations

import math

import pytest

from dispatch_core import Cause, Conflict, JobID, Rejected, State
from dispatch_core.record import (
    REDACTED,
    HeaderRecord,
    InvalidRecord,
    Lease,
    LeaseConflict,
    Record,
    RecordStore,
    SeqConflict,
)

from .conftest import Factory
from .records import header, intent, observation, observed, terminal, transition

T0 = 1_767_225_600.0
TTL = 30.0


def started(store: RecordStore, owner: str = "sup-a", now: float = T0) -> tuple[JobID, Lease]:
    """A new job with its header and first intent, under ``owner``'s lease."""
    job = JobID()
    lease = store.acquire(job, owner, now, TTL)
    store.append(job, 0, header(job), lease, now)
    store.append(job, 1, intent(job), lease, now)
    return job, lease


def test_the_store_is_a_record_store(store: RecordStore) -> None:
    assert isinstance(store, RecordStore)


def test_entries_have_a_gapless_seq_from_zero(store: RecordStore) -> None:
    job, lease = started(store)
    records: list[Record] = [observed(job), observation(job), transition(), terminal()]
    for seq, record in enumerate(records, start=2):
        entry = store.append(job, seq, record, lease, T0 + seq)
        assert (entry.job, entry.seq, entry.at, entry.writer, entry.token) == (
            job,
            seq,
            T0 + seq,
            "sup-a",
            lease.token,
        )
    entries = store.records(job)
    assert [e.seq for e in entries] == list(range(6))
    assert [e.record for e in entries[2:]] == records
    assert [e.record.kind for e in entries] == [
        "header",
        "intent",
        "observed",
        "observation",
        "transition",
        "terminal",
    ]
    assert store.next_seq(job) == 6
    assert [e.seq for e in store.records(job, start=4)] == [4, 5]
    assert store.records(JobID()) == [] and store.next_seq(JobID()) == 0


def test_every_kind_reads_back_as_written(store: RecordStore) -> None:
    job = JobID()
    lease = store.acquire(job, "sup-a", T0, TTL)
    records: list[Record] = [
        header(job),
        intent(job),
        observed(job),
        observation(job),
        transition(),
    ]
    records.append(terminal(State.FAILED, Cause.OUT_OF_MEMORY))
    returned = [store.append(job, i, r, lease, T0) for i, r in enumerate(records)]
    assert [e.record for e in returned] == records
    assert store.records(job) == returned


def test_an_append_at_a_stale_seq_is_a_conflict_and_writes_nothing(factory: Factory) -> None:
    first = factory.new()
    second = factory.other(first)
    job, lease = started(first)
    first.append(job, 2, observed(job), lease, T0)
    with pytest.raises(SeqConflict) as raised:
        second.append(job, 2, observation(job), lease, T0)
    assert (raised.value.expected, raised.value.actual) == (2, 3)
    assert isinstance(raised.value, Conflict)
    with pytest.raises(SeqConflict):
        second.append(job, 4, observation(job), lease, T0)
    assert second.next_seq(job) == 3 and first.next_seq(job) == 3
    assert second.append(job, 3, observation(job), lease, T0).seq == 3
    assert [e.seq for e in first.records(job)] == [0, 1, 2, 3]


def test_an_append_needs_the_jobs_current_live_lease(factory: Factory) -> None:
    store = factory.new()
    job, lease = started(store)
    other_job, other_lease = started(store, owner="sup-b")
    with pytest.raises(LeaseConflict):
        store.append(job, 2, observed(job), other_lease, T0)
    forged = Lease(job=job, owner="sup-a", token=lease.token + 1, expires=math.inf)
    with pytest.raises(LeaseConflict):
        store.append(job, 2, observed(job), forged, T0)
    impostor = Lease(job=job, owner="sup-b", token=lease.token, expires=lease.expires)
    with pytest.raises(LeaseConflict):
        store.append(job, 2, observed(job), impostor, T0)
    with pytest.raises(LeaseConflict, match="expired"):
        store.append(job, 2, observed(job), lease, lease.expires)  # expiry is at, not after
    assert store.append(job, 2, observed(job), lease, lease.expires - 0.001).seq == 2
    assert store.next_seq(job) == 3 and store.next_seq(other_job) == 2


def test_a_new_job_needs_a_lease_too(store: RecordStore) -> None:
    job = JobID()
    stray = Lease(job=job, owner="sup-a", token=1, expires=T0 + TTL)
    with pytest.raises(LeaseConflict):
        store.append(job, 0, header(job), stray, T0)
    assert store.jobs() == [] and store.records(job) == []


def test_lease_exclusivity_and_expiry_on_the_callers_clock(factory: Factory) -> None:
    first = factory.new()
    second = factory.other(first)
    job = JobID()
    a = first.acquire(job, "sup-a", T0, TTL)
    assert (a.job, a.owner, a.expires) == (job, "sup-a", T0 + TTL) and a.live(T0)
    with pytest.raises(LeaseConflict):
        second.acquire(job, "sup-b", T0 + TTL - 1, TTL)
    assert second.lease(job) == a
    b = second.acquire(job, "sup-b", T0 + TTL, TTL)  # expired at its expiry time
    assert b.token > a.token and second.lease(job) == b == first.lease(job)
    first_job_lease = first.acquire(JobID(), "sup-a", T0, TTL)  # leases are per job
    assert first_job_lease.owner == "sup-a"
    with pytest.raises(LeaseConflict):  # a's lease was taken over: fenced off
        first.append(job, 0, header(job), a, T0 + TTL)
    assert second.append(job, 0, header(job), b, T0 + TTL).seq == 0


def test_an_owner_acquiring_again_fences_its_older_lease(store: RecordStore) -> None:
    job, old = started(store)
    new = store.acquire(job, "sup-a", T0 + 1, TTL)
    assert new.token == old.token + 1
    with pytest.raises(LeaseConflict):
        store.append(job, 2, observed(job), old, T0 + 1)
    store.append(job, 2, observed(job), new, T0 + 1)


def test_renew_extends_a_live_lease_and_keeps_its_token(store: RecordStore) -> None:
    job, lease = started(store)
    renewed = store.renew(lease, T0 + TTL - 1, TTL)
    assert (renewed.token, renewed.expires) == (lease.token, T0 + 2 * TTL - 1)
    assert store.lease(job) == renewed
    store.append(job, 2, observed(job), lease, T0 + TTL + 1)  # the token is what counts
    with pytest.raises(LeaseConflict):
        store.renew(renewed, renewed.expires, TTL)  # an expired lease is gone
    taker = store.acquire(job, "sup-b", renewed.expires, TTL)
    with pytest.raises(LeaseConflict):
        store.renew(renewed, renewed.expires - 1, TTL)  # and a taken one too
    assert store.lease(job) == taker


def test_release_frees_the_lease_once(factory: Factory) -> None:
    store = factory.new()
    job, lease = started(store)
    assert store.release(lease) is True
    assert store.lease(job) is None
    assert store.release(lease) is False
    with pytest.raises(LeaseConflict):
        store.append(job, 2, observed(job), lease, T0)
    with pytest.raises(LeaseConflict):
        store.renew(lease, T0, TTL)
    taker = store.acquire(job, "sup-b", T0 + 1, TTL)  # at once, before the old expiry
    assert taker.token > lease.token
    assert store.release(lease) is False and store.lease(job) == taker  # stale: no effect
    assert factory.other(store).lease(job) == taker


def test_unfinished_is_the_jobs_without_a_terminal_record(store: RecordStore) -> None:
    jobs = [started(store) for _ in range(6)]
    for job, lease in jobs[::2]:
        store.append(job, 2, terminal(State.CANCELLED, Cause.CANCELLED), lease, T0)
    lone = JobID()
    store.acquire(lone, "sup-a", T0, TTL)  # a lease alone makes no job
    assert store.unfinished() == sorted((j for j, _ in jobs[1::2]), key=str)
    assert store.jobs() == sorted((j for j, _ in jobs), key=str)
    job, lease = jobs[1]
    store.append(job, 2, terminal(State.FAILED, Cause.EVIDENCE_LOST), lease, T0)
    assert job not in store.unfinished() and job in store.jobs()


@pytest.mark.parametrize(
    ("name", "build", "why"),
    [
        ("no header first", lambda j: [intent(j)], "header is the first"),
        ("a second header", lambda j: [header(j), header(j)], "only the first"),
        ("submission 2 first", lambda j: [header(j), intent(j, 2, 1)], "is submission 1"),
        ("a repeated submission", lambda j: [header(j), intent(j), intent(j)], "submission 2"),
        ("attempt 2 first", lambda j: [header(j), intent(j, 1, 2)], "attempt"),
        ("attempt skips", lambda j: [header(j), intent(j), intent(j, 2, 3)], "attempt"),
        (
            "attempt goes back",
            lambda j: [header(j), intent(j, 1, 1), intent(j, 2, 2), intent(j, 3, 1)],
            "attempt",
        ),
        ("observed before intent", lambda j: [header(j), observed(j)], "observed"),
        ("observed twice", lambda j: [header(j), intent(j), observed(j), observed(j)], "observed"),
        (
            "observed for an older one",
            lambda j: [header(j), intent(j), intent(j, 2, 1), observed(j, 1)],
            "observed",
        ),
        ("after the terminal", lambda j: [header(j), terminal(), observation(j)], "terminal"),
    ],
)
def test_a_record_that_does_not_fit_is_refused_and_writes_nothing(
    store: RecordStore, name: str, build: object, why: str
) -> None:
    job = JobID()
    lease = store.acquire(job, "sup-a", T0, TTL)
    records = build(job)  # type: ignore[operator]
    for seq, record in enumerate(records[:-1]):
        store.append(job, seq, record, lease, T0)
    before = store.records(job)
    with pytest.raises(InvalidRecord, match=why) as raised:
        store.append(job, len(records) - 1, records[-1], lease, T0)
    assert isinstance(raised.value, Rejected)
    assert store.records(job) == before and store.next_seq(job) == len(before)


def test_a_launch_retry_keeps_the_attempt_and_a_resubmit_takes_the_next(
    store: RecordStore,
) -> None:
    job, lease = started(store)
    store.append(job, 2, intent(job, 2, 1), lease, T0)  # launch retry
    store.append(job, 3, observed(job, 2), lease, T0)
    store.append(job, 4, intent(job, 3, 2), lease, T0)  # resubmit
    store.append(job, 5, observed(job, 3), lease, T0)
    kinds = [(e.record.kind, getattr(e.record, "submission", None)) for e in store.records(job)]
    assert kinds[1:] == [
        ("intent", 1),
        ("intent", 2),
        ("observed", 2),
        ("intent", 3),
        ("observed", 3),
    ]


def test_what_is_stored_is_redacted_and_is_what_append_returns(store: RecordStore) -> None:
    job, lease = started(store)
    detail = "pulled https://bot:hunter2hunter2@registry.example/app?sig=abcdef1234 ok"
    entry = store.append(job, 2, observation(job, detail=detail), lease, T0)
    said = entry.record.observation.detail  # type: ignore[union-attr]
    assert "hunter2hunter2" not in said and "abcdef1234" not in said
    assert said == f"pulled https://registry.example/app?sig={REDACTED} ok"
    assert store.records(job, start=2) == [entry]


def test_times_and_ttls_must_be_finite(store: RecordStore) -> None:
    job, lease = started(store)
    for bad in (math.nan, math.inf, "1"):
        with pytest.raises(ValueError):
            store.append(job, 2, observed(job), lease, bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            store.acquire(JobID(), "x", bad, TTL)  # type: ignore[arg-type]
    for ttl in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError):
            store.acquire(JobID(), "x", T0, ttl)
        with pytest.raises(ValueError):
            store.renew(lease, T0, ttl)
    assert store.next_seq(job) == 2


def test_the_record_survives_a_reopen(factory: Factory) -> None:
    store = factory.new()
    job, lease = started(store)
    store.append(job, 2, observed(job), lease, T0 + 1)
    done, done_lease = started(store, owner="sup-b")
    store.append(done, 2, terminal(), done_lease, T0)
    entries, leases = store.records(job), (store.lease(job), store.lease(done))
    again = factory.reopen(store)
    assert again.records(job) == entries
    assert (again.lease(job), again.lease(done)) == leases
    assert again.unfinished() == [job] and again.jobs() == sorted([job, done], key=str)
    assert again.next_seq(job) == 3
    again.append(job, 3, observation(job), lease, T0 + 2)  # the grammar state survives too
    with pytest.raises(InvalidRecord):
        again.append(job, 4, observed(job), lease, T0 + 2)
    assert isinstance(again.records(job)[0].record, HeaderRecord)
