"""The launch-retry budget, the launch bound, the time bound, evidence lost, cancel, the
refusals at submit, a backend-enforced rule, and identity_weakened in Status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from adapters.memory import MemoryBackend
from adapters.slurm.testing.sim import sim_cluster
from dispatch_core import (
    Cause,
    Enforcer,
    JobSpec,
    ObjectRef,
    OutcomeUnknown,
    Policy,
    Rejected,
    Rule,
    RuleKind,
    State,
)
from dispatch_core.record import IntentRecord, MemoryRecordStore
from dispatch_core.record.types import Action
from dispatch_core.supervise import Supervisor

from .conftest import World

SPEC = JobSpec(command=("true",))
RESUBMIT = Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=5),))


def intents(world: World, job: Any) -> list[tuple[int, int]]:
    return [
        (e.record.submission, e.record.attempt)
        for e in world.store.records(job)
        if isinstance(e.record, IntentRecord)
    ]


def fail_launch(world: World, ref: ObjectRef) -> None:
    """The object ends before its execution started: the launch failed."""
    cluster = world.backend.cluster
    cluster.end(cluster.require(ref.id), State.FAILED, Cause.LAUNCH_FAILED)


def stuck(world: World, ref: ObjectRef, cause: Cause) -> None:
    """The object stays queued with a known-fatal launch cause."""
    if world.name.startswith("memory"):
        world.backend.cluster.require(ref.id).cause = cause
        return
    assert cause is Cause.UNSCHEDULABLE
    job = sim_cluster(world.backend).sim.controller.jobs[int(ref.id)]
    job.reason = "BadConstraints"
    job.begin_time = job.submit_time + 10**6  # never started while it is stuck


def test_launch_retries_keep_the_attempt_and_spend_no_rule(
    make_world: Callable[..., World],
) -> None:
    world = make_world("memory-slurm")
    sup = world.supervisor(launch_retries=2)
    job = sup.submit(SPEC, RESUBMIT)
    for _ in range(3):
        fail_launch(world, world.ref(sup, job))
        sup.step()
    status = sup.status(job)
    assert (status.state, status.cause) == (State.FAILED, Cause.LAUNCH_FAILED)
    assert intents(world, job) == [(1, 1), (2, 1), (3, 1)]
    retries = world.transitions(job, Action.LAUNCH_RETRY)
    assert len(retries) == 2 and all(t.rule is None for t in retries)
    assert world.transitions(job, Action.RESUBMIT) == []  # the policy's budget is untouched
    assert world.submissions(job) == [1, 2, 3]


def test_a_launch_failure_after_the_execution_was_seen_spends_the_policy(
    make_world: Callable[..., World],
) -> None:
    world = make_world("memory-slurm")
    sup = world.supervisor()
    job = sup.submit(SPEC, RESUBMIT)
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()  # seen running
    world.backend.cluster.fail(ref.id, Cause.LAUNCH_FAILED)
    sup.step()
    assert [t.action for t in world.transitions(job)] == [Action.RESUBMIT]


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("memory-slurm", Cause.IMAGE_PULL),
        ("memory-slurm", Cause.UNSCHEDULABLE),
        ("slurm-sim", Cause.UNSCHEDULABLE),
    ],
)
def test_the_launch_bound_stops_an_object_stuck_in_the_queue(
    make_world: Callable[..., World], name: str, cause: Cause
) -> None:
    world = make_world(name)
    sup = world.supervisor(launch_bound=60.0)
    job = sup.submit(SPEC, RESUBMIT)
    ref = world.ref(sup, job)
    # The scheduler keeps giving the fatal reason (the simulator's pass rewrites it: again).
    stuck(world, ref, cause)
    sup.step()
    world.clock.advance(59)
    stuck(world, ref, cause)
    sup.step()
    assert world.transitions(job) == []  # within the bound: it waits
    world.clock.advance(2)
    stuck(world, ref, cause)
    sup.step()
    actions = [t.action for t in world.transitions(job)]
    assert actions[:2] == [Action.STOP, Action.LAUNCH_RETRY]
    assert world.transitions(job, Action.STOP)[0].cause is cause
    assert world.backend.open(ref).state.ended  # the supervisor stopped it itself
    assert intents(world, job) == [(1, 1), (2, 1)]  # a launch retry keeps the attempt


def test_run_until_idle_sleeps_until_the_launch_bound(make_world: Callable[..., World]) -> None:
    world = make_world("memory-slurm")
    sup = world.supervisor(launch_retries=0, launch_bound=60.0)
    job = sup.submit(SPEC)
    stuck(world, world.ref(sup, job), Cause.IMAGE_PULL)
    start = world.clock.now()
    assert sup.run_until_idle(20)
    status = sup.status(job)
    assert (status.state, status.cause) == (State.FAILED, Cause.IMAGE_PULL)
    assert 60 <= world.clock.now() - start <= 70


def test_the_time_bound_stops_a_hung_execution_as_a_timeout(world: World) -> None:
    sup = world.supervisor()
    job = sup.submit(SPEC, RESUBMIT, time_bound=100.0)
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()
    world.clock.advance(99)
    sup.step()
    assert world.transitions(job, Action.STOP) == []
    world.clock.advance(1)
    sup.step()
    stop, resubmit = world.transitions(job)[0:2]
    assert (stop.action, stop.cause) == (Action.STOP, Cause.TIMEOUT)
    assert (resubmit.action, resubmit.cause) == (Action.RESUBMIT, Cause.TIMEOUT)
    assert world.backend.open(ref).state.ended


def test_the_time_bound_survives_a_new_supervisor(make_world: Callable[..., World]) -> None:
    world = make_world("memory-slurm")
    job = world.supervisor(owner="a").submit(SPEC, time_bound=30.0)
    world.run(world.backend.find(job)[0].ref)
    sup = world.supervisor(owner="b")
    world.clock.advance(61)  # a's lease expired
    assert sup.run_until_idle(20)
    status = sup.status(job)
    assert (status.state, status.cause) == (State.FAILED, Cause.TIMEOUT)


def test_an_ended_object_whose_result_is_gone_is_evidence_lost_not_success(
    make_world: Callable[..., World],
) -> None:
    world = make_world("memory-slurm", accounting=False)
    sup = world.supervisor()
    job = sup.submit(SPEC)
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()
    world.finish(ref, 0)
    world.backend.cluster.purge(ref.id)  # no accounting: nothing can be read of its end
    sup.step()
    status = sup.status(job)
    assert (status.state, status.cause) == (State.FAILED, Cause.EVIDENCE_LOST)


def test_evidence_lost_is_a_failure_the_policy_answers(make_world: Callable[..., World]) -> None:
    world = make_world("memory-slurm", accounting=False)
    sup = world.supervisor()
    policy = Policy(rules=(Rule(kind=RuleKind.RESUBMIT, causes=(Cause.EVIDENCE_LOST,)),))
    job = sup.submit(SPEC, policy)
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()
    world.finish(ref, 0)
    world.backend.cluster.purge(ref.id)
    sup.step()
    assert [(t.action, t.cause) for t in world.transitions(job)] == [
        (Action.RESUBMIT, Cause.EVIDENCE_LOST)
    ]


def test_cancel_stops_every_live_object(world: World) -> None:
    sup = world.supervisor()
    job = sup.submit(SPEC, RESUBMIT)
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()
    status = sup.cancel(job)
    assert (status.state, status.cause, status.finished) == (State.CANCELLED, Cause.CANCELLED, True)
    assert world.backend.open(ref).state.ended
    assert [t.action for t in world.transitions(job)] == [Action.CANCEL]
    assert sup.step() == 0 and sup.run_until_idle(3)


def test_cancel_within_the_shutdown_budget_or_it_says_so(make_world: Callable[..., World]) -> None:
    world = make_world("memory-slurm")
    sup = world.supervisor(shutdown_budget=5.0)
    job = sup.submit(SPEC)
    ref = world.ref(sup, job)
    world.run(ref)
    backend = world.backend
    backend.stop = lambda ref: None  # type: ignore[method-assign]  # every cancel ignored
    start = world.clock.now()
    with pytest.raises(OutcomeUnknown, match="shutdown budget"):
        sup.cancel(job)
    assert world.clock.now() - start == pytest.approx(5.0)
    assert not sup.status(job).finished
    del backend.stop  # the scheduler ends it now
    sup.step()  # the cancel goes on
    assert sup.status(job).state is State.CANCELLED


class Rerunning(MemoryBackend):
    """A memory backend whose scheduler reruns a job on its own (OwnRetries)."""

    def own_retries(self, spec: JobSpec) -> str:
        return "the job is left requeueable, and the scheduler requeues it after a node failure"


def test_a_backend_that_retries_on_its_own_is_refused_with_the_rationale() -> None:
    backend = Rerunning("slurm")
    store = MemoryRecordStore()
    sup = Supervisor(backend, store, backend.clock)
    with pytest.raises(Rejected, match="duplicate execution") as refused:
        sup.submit(SPEC, RESUBMIT)
    assert "requeueable" in str(refused.value)
    assert store.jobs() == [] and backend.cluster.jobs == {}
    assert sup.submit(SPEC)  # no rule for the supervisor: nothing is retried twice


def test_a_rule_the_supervisor_cannot_carry_out_is_refused_at_submit() -> None:
    backend = MemoryBackend("slurm", rules={RuleKind.RESTART: "yes"})
    store = MemoryRecordStore()
    sup = Supervisor(backend, store, backend.clock)
    with pytest.raises(Rejected, match="no in-place restart"):
        sup.submit(SPEC, Policy(rules=(Rule(kind=RuleKind.RESTART),)))
    assert store.jobs() == []


def test_a_rule_the_backend_enforces_is_never_retried_by_the_supervisor(
    make_world: Callable[..., World],
) -> None:
    world = make_world("memory-slurm", rules={RuleKind.REQUEUE: "yes"}, native=[RuleKind.REQUEUE])
    calls: list[str] = []
    backend = world.backend
    real = backend.requeue
    backend.requeue = lambda ref: (calls.append(ref.id), real(ref))  # type: ignore[method-assign]
    sup = world.supervisor()
    policy = Policy(rules=(Rule(kind=RuleKind.REQUEUE, budget=3),))
    job = sup.submit(SPEC, policy)
    assert world.store.records(job)[0].record.enforcers == (Enforcer.BACKEND,)  # type: ignore[union-attr]
    assert sup.run_until_idle(50, between=world.driver(sup, job, {1: 3}))
    status = sup.status(job)
    assert (status.state, status.cause) == (State.FAILED, Cause.EXIT_CODE)
    assert calls == [] and world.transitions(job) == []
    assert world.submissions(job) == [1]


def test_status_shows_identity_weakened(make_world: Callable[..., World]) -> None:
    weak = make_world("memory-kubeflow", identity_weakened="ranks restart under one identity")
    sup = weak.supervisor()
    job = sup.submit(SPEC)
    assert sup.status(job).identity_weakened() == "ranks restart under one identity"
    plain = make_world("memory-slurm")
    sup = plain.supervisor()
    assert sup.status(sup.submit(SPEC)).identity_weakened() == ""


class Restarting(MemoryBackend):
    """A memory backend with an in-place restart (Restarter): the scheduler reruns the object
    under its native id, its restart count raised."""

    restarted: ClassVar[list[str]] = []

    def restart(self, ref: ObjectRef) -> None:
        self.restarted.append(ref.id)
        self.cluster.requeue(self.cluster.require(ref.id))


def test_restart_reruns_the_object_in_place() -> None:
    backend = Restarting("slurm", rules={RuleKind.RESTART: "yes"})
    sup = Supervisor(backend, MemoryRecordStore(), backend.clock, owner="one")
    job = sup.submit(SPEC, Policy(rules=(Rule(kind=RuleKind.RESTART, budget=1),)))
    ref = sup.status(job).ref
    assert ref is not None
    backend.cluster.let_run(ref.id)
    sup.step()
    backend.cluster.finish(ref.id, 3)
    sup.step()
    assert backend.restarted == [ref.id]
    assert backend.open(ref).restart_count == 1
    backend.cluster.clock.advance(200)  # type: ignore[attr-defined]
    backend.cluster.tick()
    backend.cluster.let_run(ref.id)
    backend.cluster.finish(ref.id, 3)
    sup.step()
    status = sup.status(job)
    assert (status.state, status.cause, status.submission) == (State.FAILED, Cause.EXIT_CODE, 1)
    assert backend.restarted == [ref.id]  # its budget of one is spent


@pytest.mark.parametrize("fault", ["lose_next_reply", "fail_before_effect"])
def test_an_uncertain_start_is_looked_up_never_repeated_blind(world: World, fault: str) -> None:
    getattr(world.faults, fault)("start")
    sup = world.supervisor()
    job = sup.submit(SPEC)
    if world.name.startswith("memory"):  # (the Slurm adapter resolves a lost reply itself)
        assert sup.status(job).ref is None  # the outcome is unknown: nothing observed yet
    assert sup.run_until_idle(50, between=world.driver(sup, job, {1: 0}))
    assert sup.status(job).state is State.SUCCEEDED
    assert world.submissions(job) == [1]
