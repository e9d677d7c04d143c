"""A Hypothesis state machine over appends and leases, on every store, against a model.

Two jobs, three owners and a clock that only goes forward: owners acquire, renew and release
leases and append records of every kind, at the right seq or a stale or early one, with the
right submission and attempt numbers or wrong ones, each owner through its own handle on the
store (its own SQLite connection), and stores are reopened. The model says
what each call must do (which error, or what it returns); after every step the store's records,
unfinished jobs and leases must be the model's."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from dispatch_core import JobID
from dispatch_core.record import (
    InvalidRecord,
    Lease,
    LeaseConflict,
    MemoryRecordStore,
    Record,
    RecordStore,
    SeqConflict,
    SqliteRecordStore,
)

from .records import header, intent, observation, observed, terminal, transition

T0 = 1_767_225_600.0
JOBS = [JobID("01KDG" + "0" * 20 + str(i)) for i in range(2)]
OWNERS = ["a", "b", "c"]
KINDS = ["header", "intent", "observed", "observation", "transition", "terminal"]


@dataclass
class JobModel:
    kinds: list[str] = field(default_factory=list)
    submission: int = 0
    attempt: int = 0
    observed: int = 0
    finished: bool = False
    lease: tuple[str, int, float] | None = None  # owner, token, expires
    tokens: int = 0


def fits(model: JobModel, kind: str, number: int, attempt: int) -> bool:
    """The record's grammar, written again from the docs (not from the code)."""
    if model.finished:
        return False
    if not model.kinds or kind == "header":
        return not model.kinds and kind == "header"
    if kind == "intent":
        return number == model.submission + 1 and (
            attempt == max(model.attempt, 1) or attempt == model.attempt + 1
        )
    if kind == "observed":
        return number == model.submission and model.observed < number
    return True


class Stores(RuleBasedStateMachine):
    make: Callable[[str], RecordStore] = staticmethod(lambda directory: MemoryRecordStore())
    reopens = False

    def __init__(self) -> None:
        super().__init__()
        # in memory where there is a tmpfs: the machine checks logic, not the disk
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.directory = tempfile.mkdtemp(prefix="record-machine-", dir=shm)
        self.store = self.make(self.directory)
        # each owner writes through its own handle (another connection, as another supervisor
        # process has); the invariant reads through the first
        self.handles = {owner: self.other() for owner in OWNERS}
        self.now = T0
        self.models = {job: JobModel() for job in JOBS}
        self.held: dict[tuple[JobID, str], Lease] = {}

    def other(self) -> RecordStore:
        return self.make(self.directory) if self.reopens else self.store

    def teardown(self) -> None:
        self.store.close()
        if self.reopens:
            for handle in self.handles.values():
                handle.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def live(self, job: JobID, owner: str) -> bool:
        """Whether ``owner``'s last lease on ``job`` is the current one and live now."""
        lease, current = self.held.get((job, owner)), self.models[job].lease
        return (
            lease is not None
            and current is not None
            and current[:2] == (owner, lease.token)
            and self.now < current[2]
        )

    @initialize(owners=st.lists(st.sampled_from(OWNERS), min_size=len(JOBS), max_size=len(JOBS)))
    def leases(self, owners: list[str]) -> None:
        for job, owner in zip(JOBS, owners, strict=True):
            self.acquire(job, owner, 60)

    @rule(seconds=st.sampled_from([0, 0.5, 1, 1, 5, 31]))
    def tick(self, seconds: float) -> None:
        self.now += seconds

    @rule(
        job=st.sampled_from(JOBS), owner=st.sampled_from(OWNERS), ttl=st.sampled_from([1, 10, 30])
    )
    def acquire(self, job: JobID, owner: str, ttl: float) -> None:
        model = self.models[job]
        current = model.lease
        if current is None or self.now >= current[2] or current[0] == owner:
            lease = self.handles[owner].acquire(job, owner, self.now, ttl)
            model.tokens += 1
            assert (lease.owner, lease.token, lease.expires) == (
                owner,
                model.tokens,
                self.now + ttl,
            )
            model.lease = (owner, lease.token, lease.expires)
            self.held[job, owner] = lease
        else:
            with pytest.raises(LeaseConflict):
                self.handles[owner].acquire(job, owner, self.now, ttl)

    @rule(
        job=st.sampled_from(JOBS),
        owner=st.sampled_from(OWNERS),
        ttl=st.sampled_from([1, 30]),
        give_up=st.booleans(),
    )
    def renew_or_release(self, job: JobID, owner: str, ttl: float, give_up: bool) -> None:
        if give_up:
            self.release(job, owner)
        else:
            self.renew(job, owner, ttl)

    def renew(self, job: JobID, owner: str, ttl: float) -> None:
        lease = self.held.get((job, owner))
        if lease is None:
            return
        if self.live(job, owner):
            renewed = self.handles[owner].renew(lease, self.now, ttl)
            assert (renewed.token, renewed.expires) == (lease.token, self.now + ttl)
            self.models[job].lease = (owner, lease.token, renewed.expires)
        else:
            with pytest.raises(LeaseConflict):
                self.handles[owner].renew(lease, self.now, ttl)

    def release(self, job: JobID, owner: str) -> None:
        lease, model = self.held.get((job, owner)), self.models[job]
        if lease is None:
            return
        current = model.lease is not None and model.lease[:2] == (owner, lease.token)
        assert self.handles[owner].release(lease) is current
        if current:
            model.lease = None

    @rule(job=st.sampled_from(JOBS), data=st.data())
    def append(self, job: JobID, data: st.DataObject) -> None:
        # Mostly the lease's holder, at the right seq, a record that fits: deep records; and
        # every way of being wrong often enough to be tried at every depth.
        model = self.models[job]
        holder = [model.lease[0]] * 4 if model.lease else []
        owner = data.draw(st.sampled_from(holder + OWNERS), label="owner")
        likely = ["header"] * 4 if not model.kinds else ["intent", "observed"] * 2 + KINDS[3:5]
        kind = data.draw(st.sampled_from(likely + KINDS), label="kind")
        seq_off = data.draw(st.sampled_from([0, 0, 0, 0, -1, 1]), label="seq offset")
        number_off = data.draw(st.sampled_from([1, 1, 1, 0, 2, -1]), label="number offset")
        attempt_off = data.draw(st.sampled_from([0, 0, 1, 1, 2, -1]), label="attempt offset")
        # an owner that never acquired this job's lease writes under a forged one
        lease = self.held.get((job, owner)) or Lease(job=job, owner=owner, token=99, expires=1e12)
        seq = max(len(model.kinds) + seq_off, 0)
        # an offset of 1 is right: the next submission for an intent, the latest for observed
        number = max(model.submission + number_off - (kind == "observed"), 1)
        attempt = max(model.attempt + attempt_off, 1)
        builders: dict[str, Callable[[], Record]] = {
            "header": lambda: header(job),
            "intent": lambda: intent(job, number, attempt),
            "observed": lambda: observed(job, number),
            "observation": lambda: observation(job),
            "transition": transition,
            "terminal": terminal,
        }
        record = builders[kind]()
        outcome = (
            "lease conflict"
            if not self.live(job, owner)
            else "seq conflict"
            if seq != len(model.kinds)
            else "invalid"
            if not fits(model, kind, number, attempt)
            else "appended"
        )
        event(f"{kind}: {outcome}")
        if outcome == "appended":
            event(f"records: {len(model.kinds) + 1}")
        if not self.live(job, owner):
            with pytest.raises(LeaseConflict):
                self.handles[owner].append(job, seq, record, lease, self.now)
        elif seq != len(model.kinds):
            with pytest.raises(SeqConflict):
                self.handles[owner].append(job, seq, record, lease, self.now)
        elif not fits(model, kind, number, attempt):
            with pytest.raises(InvalidRecord):
                self.handles[owner].append(job, seq, record, lease, self.now)
        else:
            entry = self.handles[owner].append(job, seq, record, lease, self.now)
            assert (entry.seq, entry.record, entry.token) == (seq, record, lease.token)
            model.kinds.append(kind)
            if kind == "intent":
                model.submission, model.attempt = number, attempt
            elif kind == "observed":
                model.observed = number
            elif kind == "terminal":
                model.finished = True

    @rule(job=st.sampled_from(JOBS), data=st.data())
    def append_more(self, job: JobID, data: st.DataObject) -> None:
        self.append(job, data)

    @rule()
    def reopen(self) -> None:
        if self.reopens:
            for handle in [self.store, *self.handles.values()]:
                handle.close()
            self.store = self.make(self.directory)
            self.handles = {owner: self.other() for owner in OWNERS}

    @invariant()
    def the_store_is_the_model(self) -> None:
        for job, model in self.models.items():
            entries = self.store.records(job)
            assert [e.seq for e in entries] == list(range(len(model.kinds)))
            assert [e.record.kind for e in entries] == model.kinds
            assert self.store.next_seq(job) == len(model.kinds)
            lease = self.store.lease(job)
            assert (lease and (lease.owner, lease.token, lease.expires)) == model.lease
        known = [j for j in JOBS if self.models[j].kinds]
        assert self.store.jobs() == sorted(known, key=str)
        assert self.store.unfinished() == sorted(
            (j for j in known if not self.models[j].finished), key=str
        )


class SqliteStores(Stores):
    make = staticmethod(lambda directory: SqliteRecordStore(f"{directory}/record.db"))
    reopens = True


SETTINGS = settings(
    max_examples=50,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.parametrize("machine", [Stores, SqliteStores], ids=["memory", "sqlite"])
def test_appends_and_leases_follow_the_model(machine: type[Stores]) -> None:
    run_state_machine_as_test(machine, settings=SETTINGS)
