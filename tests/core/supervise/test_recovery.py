"""Crash recovery and leases. A crash is an exception raised from a seam (the backend's calls,
the store's appends) at every point of a job's life; a new Supervisor over the same store then
finishes the job with exactly one object per (job, submission), checked on the cluster itself.
Two supervisors on one store never both write a job's record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dispatch_core import Cause, JobID, JobSpec, Policy, Rule, RuleKind, State
from dispatch_core.record import Entry, Lease, Record, TerminalRecord
from dispatch_core.record.types import Action
from dispatch_core.supervise import Supervisor

from .conftest import Crash, World

SPEC = JobSpec(command=("true",))
POLICY = Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=1),))
WRITES = ("start", "stop", "requeue")
APPENDS = 12
"""How many records the job's life appends (header, intent, observed, running, failed,
resubmit, intent, observed, queued, running, succeeded, terminal): a crash at each."""


class CrashingBackend:
    """The backend, crashing at its ``at``-th write: before it reaches the scheduler, or after
    it took effect and before its caller sees the reply."""

    def __init__(self, backend: Any, at: int, after: bool) -> None:
        self._backend, self._at, self._after, self.writes = backend, at, after, 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._backend, name)
        if name not in WRITES:
            return real

        def write(*args: Any) -> Any:
            self.writes += 1
            if self.writes == self._at and not self._after:
                raise Crash(f"before {name}")
            result = real(*args)
            if self.writes == self._at:
                raise Crash(f"after {name}")
            return result

        return write

    @property
    def name(self) -> str:
        return str(self._backend.name)


class CrashingStore:
    """The store, crashing at its ``at``-th append: before it is written or after."""

    def __init__(self, store: Any, at: int, after: bool) -> None:
        self._store, self._at, self._after, self.appends = store, at, after, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def append(self, job: JobID, expected: int, record: Record, lease: Lease, now: float) -> Entry:
        self.appends += 1
        if self.appends == self._at and not self._after:
            raise Crash(f"before appending {record.kind}")
        entry = self._store.append(job, expected, record, lease, now)
        if self.appends == self._at:
            raise Crash(f"after appending {record.kind}")
        return entry


def life(world: World, sup: Supervisor, job: JobID | None) -> None:
    """The job's life: submission 1 fails (exit 3), the resubmission succeeds."""
    if job is None:
        job = sup.submit(SPEC, POLICY)
    sup.run_until_idle(200, between=world.driver(sup, job, {1: 3, 2: 0}))


def crash_then_recover(
    world: World, crashing: Callable[[Supervisor], None], *, must_crash: bool = True
) -> JobID | None:
    """Run until the crash; then a new supervisor (another owner, once the lease expired) on
    the same store and cluster finishes the job. Returns the job (None: none was recorded)."""
    crashed = False
    try:
        crashing(world.supervisor(owner="crashed"))
    except Crash:
        crashed = True
    assert crashed or not must_crash, "the seam was never reached"
    jobs = world.store.jobs()
    if not jobs:
        assert crashed
        return None
    (job,) = jobs
    world.clock.advance(61)  # the crashed supervisor's lease expires
    after = world.supervisor(owner="recovered")
    life(world, after, job)
    return job


def check_finished(world: World, job: JobID) -> None:
    status = world.supervisor(owner="reader").status(job)
    assert status.finished and status.state is State.SUCCEEDED, status
    numbers = world.submissions(job)
    assert numbers == sorted(set(numbers)), f"two objects for one submission: {numbers}"
    assert numbers == list(range(1, status.submission + 1))
    resubmits = [t for t in world.transitions(job) if t.action is Action.RESUBMIT]
    assert len(resubmits) <= POLICY.rules[0].budget  # no budget exceeded across the crash


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
@pytest.mark.parametrize("at", range(1, 3))
def test_a_crash_at_any_backend_write(world: World, at: int, after: bool) -> None:
    def crashing(sup: Supervisor) -> None:
        sup.backend = CrashingBackend(world.backend, at, after)  # type: ignore[assignment]
        life(world, sup, None)

    job = crash_then_recover(world, crashing)
    assert job is not None
    check_finished(world, job)


@pytest.mark.parametrize("after", [False, True], ids=["before", "after"])
@pytest.mark.parametrize("at", range(1, APPENDS + 1))
def test_a_crash_at_any_append(make_world: Callable[..., World], at: int, after: bool) -> None:
    world = make_world("memory-slurm")

    def crashing(sup: Supervisor) -> None:
        sup.store = CrashingStore(world.store, at, after)  # type: ignore[assignment]
        life(world, sup, None)

    job = crash_then_recover(world, crashing)
    if job is None:
        assert world.backend.cluster.jobs == {}  # crashed before the header: nothing started
        return
    check_finished(world, job)


def test_the_intent_is_durable_before_start(world: World) -> None:
    seen: list[list[str]] = []
    real = world.backend.start

    def start(plan: Any, submission: int, attempt: int) -> Any:
        seen.append([e.record.kind for e in world.store.records(plan.job)])
        return real(plan, submission, attempt)

    world.backend.start = start
    sup = world.supervisor()
    job = sup.submit(SPEC, POLICY)
    life(world, sup, job)
    assert seen[0] == ["header", "intent"]
    assert seen[1][-1] == "intent" and len(seen) == 2


def test_an_intent_without_observed_adopts_the_object_find_shows(world: World) -> None:
    def crashing(sup: Supervisor) -> None:
        sup.backend = CrashingBackend(world.backend, 1, after=True)  # type: ignore[assignment]
        sup.submit(SPEC, POLICY)

    job = crash_then_recover(world, crashing)
    assert job is not None
    check_finished(world, job)
    kinds = [e.record.kind for e in world.store.records(job)]
    assert kinds[:3] == ["header", "intent", "observed"]
    assert world.store.records(job)[2].writer == "recovered"  # adopted through find


def test_a_crash_between_requeue_and_its_record_requeues_once(
    make_world: Callable[..., World],
) -> None:
    world = make_world("memory-slurm", rules={RuleKind.REQUEUE: "yes"})
    policy = Policy(rules=(Rule(kind=RuleKind.REQUEUE, budget=3),))
    crasher = CrashingBackend(world.backend, 2, after=True)  # start, then the requeue

    sup = world.supervisor(owner="crashed")
    sup.backend = crasher  # type: ignore[assignment]
    job = sup.submit(SPEC, policy)
    with pytest.raises(Crash):
        sup.run_until_idle(50, between=world.driver(sup, job, {1: 3}))
    ref = world.ref(sup, job)
    assert world.backend.open(ref).restart_count == 1
    world.clock.advance(61)
    after = world.supervisor(owner="recovered")
    after.run_until_idle(300, between=world.driver(after, job, {1: 0}))
    status = after.status(job)
    assert status.state is State.SUCCEEDED
    assert world.backend.open(ref).restart_count == 1  # requeued once, not twice
    assert len(world.transitions(job, Action.REQUEUE)) == 1


def test_a_redacted_spec_is_never_started_from_the_record(
    make_world: Callable[..., World],
) -> None:
    world = make_world("memory-slurm")
    spec = JobSpec(command=("train",), env={"API_TOKEN": "hunter2-secret"})

    def crashing(sup: Supervisor) -> None:
        sup.backend = CrashingBackend(world.backend, 1, after=False)  # type: ignore[assignment]
        sup.submit(spec)

    with pytest.raises(Crash):
        crashing(world.supervisor(owner="crashed"))
    (job,) = world.store.jobs()
    world.clock.advance(61)
    after = world.supervisor(owner="recovered")
    assert after.run_until_idle(20)
    status = after.status(job)
    assert status.state is State.HELD and status.waiting_for_person
    assert "redacted" in status.detail and "API_TOKEN" in status.detail
    assert world.backend.cluster.jobs == {}
    with pytest.raises(Exception, match="not the spec"):
        after.provide(job, JobSpec(command=("other",)))
    after.provide(job, spec)  # the host supplies it again: released
    after.run_until_idle(50, between=world.driver(after, job, {1: 0}))
    assert after.status(job).state is State.SUCCEEDED
    assert world.submissions(job) == [1]
    assert [o.spec.env for o in world.backend.cluster.jobs.values()] == [spec.env]


def test_specs_given_to_a_new_supervisor_are_used(make_world: Callable[..., World]) -> None:
    world = make_world("memory-slurm")
    spec = JobSpec(command=("train",), env={"DB_PASSWORD": "pw-secret"})
    first = world.supervisor(owner="crashed")
    first.backend = CrashingBackend(world.backend, 1, after=False)  # type: ignore[assignment]
    with pytest.raises(Crash):
        first.submit(spec)
    (job,) = world.store.jobs()
    world.clock.advance(61)
    after = world.supervisor(owner="recovered", specs={job: spec})
    after.run_until_idle(50, between=world.driver(after, job, {1: 0}))
    assert after.status(job).state is State.SUCCEEDED


def test_two_supervisors_never_both_act_on_one_job(world: World) -> None:
    a = world.supervisor(owner="a")
    b = world.supervisor(owner="b")
    job = a.submit(SPEC, POLICY)
    assert b.step() == 0  # a holds the lease
    assert all(e.writer == "a" for e in world.store.records(job))
    driver = world.driver(a, job, {1: 3, 2: 0})
    for round_ in range(60):
        driver()
        (a if round_ % 2 == 0 else b).step()
        b.step() if round_ % 2 == 0 else a.step()
        world.clock.advance(7 if round_ % 5 else 70)  # now and then a lease expires
    entries = world.store.records(job)
    assert isinstance(entries[-1].record, TerminalRecord)
    assert {e.writer for e in entries} == {"a", "b"}  # the job changed hands
    # Writers change only with a new lease: tokens never go back, and one token, one writer.
    tokens = [e.token for e in entries]
    assert tokens == sorted(tokens)
    by_token: dict[int, set[str]] = {}
    for e in entries:
        by_token.setdefault(e.token, set()).add(e.writer)
    assert all(len(w) == 1 for w in by_token.values())
    assert world.submissions(job) == [1, 2]


def test_a_supervisor_that_lost_its_lease_drops_the_job(make_world: Callable[..., World]) -> None:
    world = make_world("memory-slurm")
    a = world.supervisor(owner="a")
    job = a.submit(SPEC, POLICY)
    world.clock.advance(61)
    b = world.supervisor(owner="b")
    b.step()  # b takes the expired lease
    ref = world.ref(b, job)
    world.run(ref)
    world.finish(ref, 3)
    before = len(world.store.records(job))
    a.step()  # a's lease is gone: it appends nothing
    assert all(e.writer == "b" for e in world.store.records(job)[3:])
    assert len(world.store.records(job)) == before
    b.run_until_idle(50, between=world.driver(b, job, {2: 0}))
    status = b.status(job)
    assert (status.state, status.cause) == (State.SUCCEEDED, Cause.NONE)


def test_a_supervisor_leaves_another_clusters_jobs_alone(tmp_path: Any) -> None:
    from adapters.memory import MemoryBackend
    from dispatch_core.record import SqliteRecordStore

    store = SqliteRecordStore(str(tmp_path / "shared.sqlite"))
    here, there = MemoryBackend(name="cluster-a"), MemoryBackend(name="cluster-b")
    a = Supervisor(here, store, here.clock, owner="a")
    b = Supervisor(there, store, there.clock, owner="b")
    job_a, job_b = a.submit(SPEC), b.submit(SPEC)
    b.close()  # b's lease given up: a could take job_b, and must not
    there.clock.advance(3600)  # type: ignore[attr-defined]
    here.clock.advance(3600)  # type: ignore[attr-defined]
    a.step()
    assert all(e.writer == "b" for e in store.records(job_b))
    assert not a.status(job_b).finished
    assert {e.writer for e in store.records(job_a)} == {"a"}
    store.close()
