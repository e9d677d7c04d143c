"""The memory adapter's Kubeflow shape: UIDs never reused, names reused after delete."""

from __future__ import annotations

import pytest

from adapters.memory import MemoryBackend
from dispatch_core import (
    Conflict,
    JobSpec,
    NotFound,
    State,
    Unsupported,
    make_plan,
    parse_execution_env,
)


def test_an_object_is_namespace_slash_name_with_a_uid() -> None:
    backend = MemoryBackend("kubeflow", namespace="team-a")
    plan = make_plan(backend, JobSpec(command=("x",)))
    ref = backend.start(plan, 3, 1)
    assert ref.id == f"team-a/{plan.job.discovery_name().lower()}-3"
    assert len(ref.uid) == 36 and ref.uid != ref.id


def test_uids_come_from_the_seed() -> None:
    def first_uid(seed: int) -> str:
        backend = MemoryBackend("kubeflow", seed=seed)
        return backend.start(make_plan(backend, JobSpec(command=("x",))), 1, 1).uid

    assert first_uid(1) == first_uid(1) != first_uid(2)


def test_a_name_reused_after_delete_is_another_object() -> None:
    backend = MemoryBackend("kubeflow")
    plan = make_plan(backend, JobSpec(command=("x",)))
    first = backend.start(plan, 1, 1)
    backend.cluster.delete(first.id)
    second = backend.start(plan, 1, 1)
    assert second.id == first.id and second.uid != first.uid
    with pytest.raises(NotFound):
        backend.open(first)
    with pytest.raises(NotFound):
        backend.hold(first)
    backend.stop(first)  # acts on nothing
    assert backend.open(second).state is State.QUEUED
    assert [o.ref.uid for o in backend.find(plan.job)] == [second.uid]


def test_working_directory_is_refused_at_plan_time() -> None:
    with pytest.raises(Unsupported, match="WorkingDirectory"):
        make_plan(MemoryBackend("kubeflow"), JobSpec(command=("x",), work_dir="/w"))


def test_holds_are_numbered_and_survive_reopen() -> None:
    backend = MemoryBackend("kubeflow")
    ref = backend.start(make_plan(backend, JobSpec(command=("x",))), 1, 1)
    number = backend.hold(ref)
    seen = backend.reopen().open(ref)
    assert (seen.state, seen.hold) == (State.HELD, number)
    with pytest.raises(Conflict):
        backend.release(ref, number + 1)
    backend.release(ref, number)
    assert backend.open(ref).state is State.QUEUED


def test_a_requeue_keeps_the_uid_and_raises_the_epoch() -> None:
    backend = MemoryBackend("kubeflow")
    ref = backend.start(make_plan(backend, JobSpec(command=("x",), nodes=2)), 1, 1)
    backend.cluster.let_run(ref.id)
    backend.requeue(ref)
    backend.cluster.let_run(ref.id)
    identities = [parse_execution_env(e.ranks[0]) for e in backend.executions(ref)]
    assert [i.native_id for i in identities] == [ref.uid, ref.uid]
    assert [i.restart for i in identities] == [0, 1]
    assert identities[0].epoch < identities[1].epoch
    assert backend.open(ref).ref.submit == ref.submit  # creationTimestamp never moves


def test_ended_objects_leave_no_history() -> None:
    backend = MemoryBackend("kubeflow", min_job_age=60)
    plan = make_plan(backend, JobSpec(command=("x",)))
    ref = backend.start(plan, 1, 1)
    backend.stop(ref)
    backend.clock.advance(60)
    assert backend.find(plan.job) == []
    with pytest.raises(NotFound):
        backend.open(ref)


def test_identity_is_a_label_and_two_annotations_never_a_comment() -> None:
    backend = MemoryBackend("kubeflow")
    plan = make_plan(backend, JobSpec(command=("x",)))
    ref = backend.start(plan, 2, 3)
    job = backend.cluster.require(ref.id)
    assert job.comment is None
    assert job.labels == {"dispatch/job": str(plan.job).lower()}
    assert job.annotations == {"dispatch/submission": "2", "dispatch/attempt": "3"}
    seen = backend.open(ref)
    assert (seen.submission, seen.attempt, seen.foreign) == (2, 3, False)


@pytest.mark.parametrize(
    ("labels", "annotations", "found", "foreign"),
    [
        (
            {"dispatch/job": "LABEL"},
            {"dispatch/submission": "1", "dispatch/attempt": "1"},
            False,
            False,
        ),
        (
            {"dispatch/job": "label"},
            {"dispatch/submission": "01", "dispatch/attempt": "1"},
            True,
            True,
        ),
        ({"dispatch/job": "label"}, {"dispatch/submission": "1"}, True, True),
        ({"dispatch/job": "label"}, {}, True, True),
        ({}, {"dispatch/submission": "1", "dispatch/attempt": "1"}, False, False),
    ],
)
def test_find_selects_the_exact_label_and_reports_bad_annotations_foreign(
    labels: dict[str, str], annotations: dict[str, str], found: bool, foreign: bool
) -> None:
    backend = MemoryBackend("kubeflow")
    plan = make_plan(backend, JobSpec(command=("x",)))
    label = str(plan.job).lower()
    labels = {k: (label.upper() if v == "LABEL" else label) for k, v in labels.items()}
    other = backend.cluster.submit(
        "someone", None, None, None, labels=labels, annotations=annotations
    )
    seen = {o.ref.id: o for o in backend.find(plan.job)}
    assert (other.native_id in seen) is found
    if found:
        assert seen[other.native_id].foreign is foreign
        assert seen[other.native_id].submission is None


def test_another_namespace_is_not_listed() -> None:
    backend = MemoryBackend("kubeflow")
    plan = make_plan(backend, JobSpec(command=("x",)))
    backend.cluster.submit(
        "theirs",
        None,
        None,
        None,
        owner="someone-else",
        labels={"dispatch/job": str(plan.job).lower()},
        annotations={"dispatch/submission": "1", "dispatch/attempt": "1"},
        namespace="someone-else",
    )
    assert backend.find(plan.job) == []
