"""Every rule kind through the real supervisor, on memory-slurm and slurm-sim: resubmit with
its backoff on the virtual clock, requeue, hold for a person then release, escalate, no
matching rule, budgets never exceeded, and a shared checkpoint turning every rule into a hold.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dispatch_core import Cause, DispatchError, JobSpec, Policy, Rule, RuleKind, State
from dispatch_core.record import IntentRecord, TerminalRecord
from dispatch_core.record.types import Action

from .conftest import World

SPEC = JobSpec(command=("true",))


def intents(world: World, job: object) -> list[tuple[int, int]]:
    return [
        (e.record.submission, e.record.attempt)
        for e in world.store.records(job)  # type: ignore[arg-type]
        if isinstance(e.record, IntentRecord)
    ]


def test_a_success_needs_one_submission(world: World) -> None:
    sup = world.supervisor()
    job = sup.submit(SPEC)
    assert sup.run_until_idle(50, between=world.driver(sup, job, {1: 0}))
    status = sup.status(job)
    assert (status.state, status.cause, status.submission, status.attempt) == (
        State.SUCCEEDED,
        Cause.NONE,
        1,
        1,
    )
    assert status.finished and world.submissions(job) == [1]
    kinds = [e.record.kind for e in world.store.records(job)]
    assert kinds[:3] == ["header", "intent", "observed"] and kinds[-1] == "terminal"


def test_resubmit_is_n_plus_one_and_a_plus_one_after_its_backoff(world: World) -> None:
    sup = world.supervisor()
    job = sup.submit(SPEC, Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=2),)))
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()
    world.finish(ref, 3)
    failed_at = world.clock.now()
    sup.step()
    (resubmit,) = world.transitions(job, Action.RESUBMIT)
    assert resubmit.rule == 0 and resubmit.cause is Cause.EXIT_CODE
    assert resubmit.not_before == pytest.approx(failed_at + 10.0)
    # Before the backoff has passed nothing is submitted, however often it steps.
    world.clock.advance(9)
    sup.step()
    assert intents(world, job) == [(1, 1)]
    world.clock.advance(1)
    sup.step()
    assert intents(world, job) == [(1, 1), (2, 2)]
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()
    world.finish(ref, 4)
    second_failure = world.clock.now()
    sup.step()
    second = world.transitions(job, Action.RESUBMIT)[1]
    assert second.not_before == pytest.approx(second_failure + 20.0)  # base * factor
    assert sup.run_until_idle(100, between=world.driver(sup, job, {3: 5}))
    status = sup.status(job)
    # The budget (2) is spent: the third failure ends the job with its cause.
    assert (status.state, status.cause, status.submission, status.attempt) == (
        State.FAILED,
        Cause.EXIT_CODE,
        3,
        3,
    )
    assert len(world.transitions(job, Action.RESUBMIT)) == 2
    assert world.submissions(job) == [1, 2, 3]


def test_slurm_refuses_a_requeue_rule_a_finished_job_could_not_honour(
    make_world: Callable[..., World],
) -> None:
    """Real Slurm 22.05 requeues no finished job submitted with --no-requeue, and refuses
    Requeue=1 on one ('Job has already finished'): a requeue rule, which answers a failure,
    is refused at submit, before anything is recorded or made."""
    world = make_world("slurm-sim")
    sup = world.supervisor()
    with pytest.raises(DispatchError, match="a failed job has finished"):
        sup.submit(SPEC, Policy(rules=(Rule(kind=RuleKind.REQUEUE, budget=1),)))


@pytest.mark.parametrize("name", ["memory-slurm"])
def test_requeue_reruns_the_same_object(make_world: Callable[..., World], name: str) -> None:
    config = {"rules": {RuleKind.REQUEUE: "yes"}}
    world = make_world(name, **config)
    sup = world.supervisor()
    job = sup.submit(SPEC, Policy(rules=(Rule(kind=RuleKind.REQUEUE, budget=1),)))
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()
    world.finish(ref, 3)
    sup.step()
    assert [t.action for t in world.transitions(job)] == [Action.REQUEUE]
    seen = world.backend.open(ref)
    assert seen.state in (State.QUEUED, State.RUNNING) and seen.restart_count == 1
    assert sup.run_until_idle(300, between=world.driver(sup, job, {1: 0}))
    status = sup.status(job)
    assert (status.state, status.submission, status.attempt) == (State.SUCCEEDED, 1, 1)
    assert world.submissions(job) == [1]  # the same object, run again
    runs = world.harness.executions(world.backend, ref)
    attempts = {ranks[0]["DISPATCH_ATTEMPT"] for ranks in runs}
    assert len(runs) == 2 and len(attempts) == 2  # each execution has its own identity


def test_hold_waits_for_a_person_then_release_runs_attempt_a_plus_one(world: World) -> None:
    sup = world.supervisor()
    job = sup.submit(SPEC, Policy(rules=(Rule(kind=RuleKind.HOLD, budget=1),)))
    ref = world.ref(sup, job)
    world.run(ref)
    sup.step()
    world.finish(ref, 3)
    assert sup.run_until_idle(20)  # idle: the job waits for a person
    status = sup.status(job)
    assert status.state is State.HELD and status.waiting_for_person and not status.finished
    assert status.cause is Cause.EXIT_CODE
    world.clock.advance(3600)
    sup.step()
    assert intents(world, job) == [(1, 1)]  # nothing happens on its own
    sup.release(job)
    sup.step()
    assert intents(world, job) == [(1, 1), (2, 2)]
    # The hold's budget is spent: the next failure ends the job.
    assert sup.run_until_idle(100, between=world.driver(sup, job, {2: 7}))
    status = sup.status(job)
    assert (status.state, status.cause, status.attempt) == (State.FAILED, Cause.EXIT_CODE, 2)
    assert len(world.transitions(job, Action.HOLD)) == 1


def test_escalate_ends_the_job_naming_the_escalation(world: World) -> None:
    sup = world.supervisor()
    policy = Policy(rules=(Rule(kind=RuleKind.ESCALATE, causes=(Cause.EXIT_CODE,)),))
    job = sup.submit(SPEC, policy)
    assert sup.run_until_idle(50, between=world.driver(sup, job, {1: 9}))
    status = sup.status(job)
    assert (status.state, status.cause) == (State.FAILED, Cause.EXIT_CODE)
    assert "escalated by rule 0" in status.detail
    assert [t.action for t in world.transitions(job)] == [Action.ESCALATE]
    assert world.submissions(job) == [1]


def test_no_matching_rule_fails_with_the_cause(world: World) -> None:
    sup = world.supervisor()
    policy = Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=3, causes=(Cause.NODE_LOST,)),))
    job = sup.submit(SPEC, policy)
    assert sup.run_until_idle(50, between=world.driver(sup, job, {1: 2}))
    status = sup.status(job)
    assert (status.state, status.cause, status.submission) == (State.FAILED, Cause.EXIT_CODE, 1)
    assert world.transitions(job) == []
    assert world.submissions(job) == [1]


def test_rules_apply_in_order_and_no_budget_is_exceeded(world: World) -> None:
    sup = world.supervisor(backoff=None)
    policy = Policy(
        rules=(
            Rule(kind=RuleKind.RESUBMIT, budget=2, causes=(Cause.EXIT_CODE,)),
            Rule(kind=RuleKind.HOLD, budget=1),
            Rule(kind=RuleKind.RESUBMIT, budget=0),
        )
    )
    job = sup.submit(SPEC, policy)
    always_fail = world.driver(sup, job, lambda n: 1)
    assert sup.run_until_idle(200, between=always_fail)
    assert sup.status(job).state is State.HELD  # rule 0 spent twice, then rule 1
    sup.release(job)
    assert sup.run_until_idle(200, between=always_fail)
    status = sup.status(job)
    assert status.state is State.FAILED and status.finished
    uses = [t.rule for t in world.transitions(job) if t.rule is not None]
    assert uses == [0, 0, 1]  # rule 2 has budget 0: never used
    assert world.submissions(job) == [1, 2, 3, 4]
    terminal = world.store.records(job)[-1].record
    assert isinstance(terminal, TerminalRecord) and terminal.attempt == 4


def test_a_shared_checkpoint_makes_every_rule_a_hold(world: World) -> None:
    sup = world.supervisor()
    policy = Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=3),), shared_checkpoint=True)
    job = sup.submit(SPEC, policy)
    assert sup.run_until_idle(50, between=world.driver(sup, job, {1: 3}))
    status = sup.status(job)
    assert status.state is State.HELD and status.waiting_for_person
    assert "shared checkpoint" in status.detail
    (hold,) = world.transitions(job)
    assert (hold.action, hold.rule) == (Action.HOLD, 0)
    assert world.submissions(job) == [1]
