"""The memory adapter's Slurm shape reproduces Slurm's identity hazards, and never acts on the
wrong job (seed 001: the identity check before every write)."""

from __future__ import annotations

import pytest

from adapters.memory import MemoryBackend
from adapters.slurm.identity import HoldBase
from dispatch_core import (
    Cause,
    Conflict,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    OutcomeUnknown,
    Plan,
    Rejected,
    State,
    Unsupported,
    make_plan,
    parse_execution_env,
    with_job,
)


def submitted(
    backend: MemoryBackend, submission: int = 1, job: JobID | None = None, **spec: object
):
    """Plan and start one job; return the plan and the ref."""
    options = [with_job(job)] if job is not None else []
    plan = make_plan(backend, JobSpec(command=("train",), **spec), None, *options)  # type: ignore[arg-type]
    return plan, backend.start(plan, submission, 1)


def ended_and_purged(backend: MemoryBackend, ref: ObjectRef) -> None:
    backend.cluster.let_run(ref.id)
    backend.cluster.finish(ref.id, 0)
    backend.cluster.purge(ref.id)


# -- ids -------------------------------------------------------------------------------------


def test_ids_wrap_and_skip_ids_still_in_memory() -> None:
    backend = MemoryBackend(first_job_id=10, max_job_id=12)
    refs = [submitted(backend)[1] for _ in range(3)]
    assert [r.id for r in refs] == ["10", "11", "12"]
    with pytest.raises(Rejected, match="every job id"):
        submitted(backend)
    backend.stop(refs[1])
    backend.cluster.purge()
    assert submitted(backend)[1].id == "11"


def test_purge_happens_min_job_age_after_the_end_in_virtual_time() -> None:
    backend = MemoryBackend(min_job_age=300)
    _plan, ref = submitted(backend)
    backend.stop(ref)
    backend.clock.advance(299)
    assert backend.open(ref).detail == ""  # still in squeue
    backend.clock.advance(1)
    seen = backend.open(ref)
    assert seen.detail == "from accounting" and seen.state is State.CANCELLED


# -- the identity check --------------------------------------------------------------------------


def reused_by_a_foreign_job(backend: MemoryBackend) -> ObjectRef:
    _plan, ref = submitted(backend)
    ended_and_purged(backend, ref)
    foreign = backend.cluster.reuse_id(ref.id)
    assert foreign.native_id == ref.id
    return ref


def reused_by_a_later_submission(backend: MemoryBackend) -> ObjectRef:
    """The same id and the same name: only the submit time tells them apart."""
    plan, ref = submitted(backend)
    ended_and_purged(backend, ref)
    backend.clock.advance(5)
    backend.cluster.set_next_id(int(ref.id))
    later = backend.start(plan, 2, 1)
    assert (later.id, later.uid) == (ref.id, ref.uid) and later.submit > ref.submit
    return ref


@pytest.mark.parametrize("reuse", [reused_by_a_foreign_job, reused_by_a_later_submission])
def test_after_id_reuse_every_write_acts_on_nothing(reuse) -> None:
    backend = MemoryBackend(max_job_id=3)
    ref = reuse(backend)
    occupant = backend.cluster.live(ref.id)
    assert occupant is not None and occupant.state is State.QUEUED
    backend.stop(ref)  # succeeds, cancels nothing
    assert occupant.state is State.QUEUED
    for write in (backend.hold, backend.requeue, lambda r: backend.release(r, 1)):
        with pytest.raises(NotFound):
            write(ref)
    assert occupant.state is State.QUEUED and occupant.holds_placed == 0
    assert not occupant.requeue_flag


def test_a_renamed_job_is_not_the_ref_s() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.cluster.rename(ref.id, ref.uid.lower())
    with pytest.raises(NotFound, match="is 'dj-"):
        backend.open(ref)
    backend.stop(ref)
    assert backend.cluster.live(ref.id).state is State.QUEUED


def test_requeue_keeps_the_ref_valid_and_moves_submit_forward() -> None:
    backend = MemoryBackend(requeue_delay=120)
    _plan, ref = submitted(backend)
    backend.cluster.let_run(ref.id)
    backend.requeue(ref)
    seen = backend.open(ref)
    assert seen.state is State.QUEUED and seen.cause is Cause.REQUEUED
    assert seen.restart_count == 1
    assert seen.ref.submit_epoch == ref.submit_epoch + 1  # same second: strictly later
    job = backend.cluster.live(ref.id)
    assert job.eligible == backend.cluster.now() + 121
    # Both refs name the object: the original (restart count > 0, later submit) and the new one.
    assert backend.open(seen.ref).ref == seen.ref
    backend.hold(ref)


def test_requeue_of_a_pending_job_is_refused() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    with pytest.raises(Rejected, match="pending"):
        backend.requeue(ref)


def test_requeue_keeps_a_begin_time_already_in_the_future() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.cluster.let_run(ref.id)
    job = backend.cluster.live(ref.id)
    job.eligible = backend.cluster.now() + 10_000
    backend.requeue(ref)
    assert job.eligible == backend.cluster.now() + 10_000


def test_a_crash_between_the_requeue_steps_is_outcome_unknown() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.cluster.let_run(ref.id)
    backend.cluster.fault(ref.id, "crash-requeue")
    with pytest.raises(OutcomeUnknown, match="requeueable"):
        backend.requeue(ref)
    job = backend.cluster.live(ref.id)
    assert job.requeue_flag and job.restart_count == 0 and job.state is State.RUNNING


def test_stop_verifies_that_the_job_ended() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.cluster.ignore_next_cancel(ref.id)
    with pytest.raises(OutcomeUnknown, match="has not ended"):
        backend.stop(ref)
    backend.stop(ref)
    assert backend.open(ref).state is State.CANCELLED
    backend.stop(ref)  # nothing left to cancel: still a success


# -- submission ------------------------------------------------------------------------------------


def test_a_lost_sbatch_reply_never_makes_two_jobs() -> None:
    backend = MemoryBackend()
    plan = make_plan(backend, JobSpec(command=("train",)))
    backend.cluster.fault("*", "lose-reply-start")
    with pytest.raises(OutcomeUnknown):
        backend.start(plan, 1, 1)
    ref = backend.start(plan, 1, 1)
    assert [o.ref for o in backend.find(plan.job)] == [ref]


def test_a_start_that_timed_out_took_no_effect() -> None:
    backend = MemoryBackend()
    plan = make_plan(backend, JobSpec(command=("train",)))
    backend.cluster.fault("*", "timeout-start")
    with pytest.raises(OutcomeUnknown):
        backend.start(plan, 1, 1)
    assert backend.find(plan.job) == []
    backend.start(plan, 1, 1)
    assert len(backend.find(plan.job)) == 1


def test_start_refuses_another_namespace_and_another_backend_s_plan() -> None:
    backend = MemoryBackend()
    plan = make_plan(backend, JobSpec(command=("x",), extensions={"slurm.Partition": "gpu"}))
    with pytest.raises(Unsupported, match=r"slurm\.Partition"):
        backend.start(plan, 1, 1)
    other: Plan = make_plan(MemoryBackend(name="elsewhere"), JobSpec(command=("x",)))
    with pytest.raises(Rejected, match="elsewhere"):
        backend.start(other, 1, 1)


@pytest.mark.parametrize(("submission", "attempt"), [(0, 1), (1, 0), (1_000_000, 1)])
def test_start_refuses_numbers_outside_the_bounds(submission: int, attempt: int) -> None:
    backend = MemoryBackend()
    plan = make_plan(backend, JobSpec(command=("x",)))
    with pytest.raises(Rejected):
        backend.start(plan, submission, attempt)


# -- find ----------------------------------------------------------------------------------------


def test_find_matches_the_name_exactly_and_reports_foreign_jobs() -> None:
    backend = MemoryBackend()
    plan, ref = submitted(backend)
    name = plan.job.discovery_name()
    backend.cluster.submit(name.lower(), "dispatch:s=1;a=1", None, None)
    backend.cluster.submit(f"{name},other", "dispatch:s=1;a=1", None, None)
    backend.cluster.submit(name, "dispatch:s=01;a=1", None, None)
    backend.cluster.submit(name, "dispatch:s=9;a=1", None, None, owner="someone-else")
    found = backend.find(plan.job)
    assert [(o.ref.id, o.foreign, o.submission) for o in found] == [
        (ref.id, False, 1),
        ("4", True, None),
    ]


@pytest.mark.parametrize("job_comment", [True, False])
def test_a_comment_lost_from_history_is_unknown_not_foreign(job_comment: bool) -> None:
    backend = MemoryBackend(job_comment=job_comment)
    plan, ref = submitted(backend)
    ended_and_purged(backend, ref)
    [seen] = backend.find(plan.job)
    assert seen.foreign is False
    assert seen.state is State.SUCCEEDED
    assert (seen.submission, seen.attempt) == ((1, 1) if job_comment else (None, None))


def test_without_accounting_a_purged_job_is_gone() -> None:
    backend = MemoryBackend(accounting=False)
    plan, ref = submitted(backend)
    ended_and_purged(backend, ref)
    assert backend.find(plan.job) == []
    with pytest.raises(NotFound):
        backend.open(ref)


# -- holds ---------------------------------------------------------------------------------------


def test_a_hold_is_a_far_future_start_time_read_back_from_eligible_time() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    assert backend.hold(ref) == 1
    job = backend.cluster.live(ref.id)
    assert job.eligible == ref.submit_epoch + HoldBase + 1
    assert backend.hold(ref) == 2  # a new hold takes the next number
    with pytest.raises(Conflict, match="carries hold 2, not 1"):
        backend.release(ref, 1)
    backend.reopen().release(ref, 2)
    assert job.eligible == backend.cluster.now()
    with pytest.raises(Conflict, match="no hold"):
        backend.release(ref, 2)


def test_only_a_pending_job_is_held() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.cluster.let_run(ref.id)
    with pytest.raises(Rejected, match="only a pending job"):
        backend.hold(ref)


def test_a_hold_placed_before_a_requeue_does_not_decode_to_its_instance() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    number = backend.hold(ref)
    backend.release(ref, number)
    backend.cluster.let_run(ref.id)
    backend.requeue(ref)
    with pytest.raises(Conflict):
        backend.release(ref, number)


def test_a_held_job_does_not_run() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.hold(ref)
    with pytest.raises(Rejected):
        backend.cluster.let_run(ref.id)


# -- executions ------------------------------------------------------------------------------------


def test_every_rank_of_every_execution_sees_its_identity() -> None:
    backend = MemoryBackend(requeue_delay=0)
    plan, ref = submitted(backend, nodes=3, procs_per_node=2, env={"USER_VAR": "x"})
    backend.cluster.let_run(ref.id)
    backend.requeue(ref)
    backend.clock.advance(1)
    backend.cluster.let_run(ref.id)
    backend.cluster.finish(ref.id, 1)
    second = backend.start(plan, 2, 2)
    backend.cluster.let_run(second.id)

    executions = backend.executions(ref) + backend.executions(second)
    assert [len(e.ranks) for e in executions] == [6, 6, 6]
    identities = []
    for execution in executions:
        seen = {parse_execution_env(env) for env in execution.ranks}
        assert len(seen) == 1  # every rank of one execution sees the same identity
        assert all(env["USER_VAR"] == "x" for env in execution.ranks)
        identities.append(seen.pop())
    assert [i.attempt for i in identities] == [f"1-{ref.id}-0", f"1-{ref.id}-1", f"2-{second.id}-0"]
    epochs = [i.epoch for i in identities]
    assert epochs == sorted(epochs) and len(set(epochs)) == 3


def test_a_lost_node_ends_the_job_in_virtual_time() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.cluster.let_run(ref.id)
    backend.cluster.lose_node(ref.id, after=60)
    backend.clock.advance(59)
    assert backend.open(ref).state is State.RUNNING
    backend.clock.advance(1)
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.NODE_LOST)


def test_a_lost_node_requeues_a_requeueable_job() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.cluster.let_run(ref.id)
    backend.cluster.live(ref.id).requeue_flag = True
    backend.cluster.lose_node(ref.id)
    seen = backend.open(ref)
    assert (seen.state, seen.cause, seen.restart_count) == (State.QUEUED, Cause.REQUEUED, 1)


def test_the_trace_records_every_fault() -> None:
    backend = MemoryBackend()
    _plan, ref = submitted(backend)
    backend.cluster.let_run(ref.id)
    backend.cluster.requeue_underneath(ref.id)
    assert any("admin requeue" in line for line in backend.cluster.trace)
