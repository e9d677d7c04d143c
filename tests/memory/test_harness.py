"""The memory adapter's harnesses (``adapters.memory.testing``): the identity model each shape
declares, the powers it offers and those its shape declines (with the reasons), the look-alike
intents in each shape's encoding (Slurm names and comments; Kubernetes labels, annotations and
namespaces), the call faults, and every registered check on both shapes: nothing fails, nothing
errs, and the kubeflow shape skips only what Kubernetes cannot have or the adapter declares
no."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.memory import MemoryBackend
from adapters.memory.kube import ANNOTATION_ATTEMPT, ANNOTATION_SUBMISSION, LABEL_JOB, job_label
from adapters.memory.testing import MemoryFaults, MemoryHarness, memory_kubeflow, memory_slurm
from adapters.memory.testing.harness import (
    KUBE_REFUSED,
    OTHER_NAMESPACE,
    REFUSED,
    SLURM_NO_EVICT,
    SLURM_NO_MISNAMED,
    SLURM_NO_RECREATE,
    SLURM_NO_TAKE_AHEAD,
    UNPARSABLE_ANNOTATIONS,
)
from adapters.slurm.testing.lookalikes import NEAR_HOLDS, UNPARSABLE_COMMENTS
from conformance import CannotInject, Outcome, checks, run_check
from conformance.faults import Faults
from conformance.harness import (
    OPERATIONS,
    Fault,
    Harness,
    IdentityModel,
    LocalHost,
    LookAlike,
    Lookup,
    Probe,
    fault_needs,
    look_alike_need,
)
from conformance.harnesses import load_harness
from conformance.powers import (
    POWER_OF,
    AsksBeyondCapacity,
    AsksUnpullableImage,
    FailsEveryTry,
    MovesToHoldEdges,
    ObservesImages,
    ObservesSignals,
    OpensOtherTargets,
    RerunsFailures,
    RunsCommands,
    StallsTeardown,
    TakesQuota,
    WeakensIdentity,
    WritesRankOutput,
)
from conformance.powers import lacking as lacking_of
from conformance.runner import known_needs
from dispatch_core import Cause, JobID, JobSpec, OutcomeUnknown, State, make_plan, with_job

JOB = JobID("01JZ8Q2N5V0000000000000000")


def kube() -> tuple[MemoryBackend, Faults]:
    harness = memory_kubeflow()
    backend = harness.new_backend()
    return backend, Faults(harness, backend)


def test_the_registered_harnesses() -> None:
    slurm, kubeflow = load_harness("memory-slurm"), load_harness("memory-kubeflow")
    assert isinstance(slurm, MemoryHarness) and slurm.shape == "slurm"
    assert isinstance(kubeflow, MemoryHarness) and kubeflow.shape == "kubeflow"


def test_each_shape_declares_its_scheduler_s_identity_model() -> None:
    assert memory_slurm().identity == IdentityModel(
        lookup=Lookup.NAME, reuses_ids=True, requeue_moves_submit=True, history_outlives_live=True
    )
    assert memory_kubeflow().identity == IdentityModel(
        lookup=Lookup.LABEL,
        reuses_ids=True,
        requeue_moves_submit=False,
        history_outlives_live=False,
    )


def test_the_identity_model_is_what_the_kubeflow_shape_does() -> None:
    """Label lookup, a uid never reused, a requeue keeps the creation time, no history."""
    backend, faults = kube()
    plan = make_plan(backend, JobSpec(command=("x",)), None, with_job(JOB))
    ref = backend.start(plan, 1, 1)
    job = backend.cluster.require(ref.id)
    assert job.comment is None and job.labels == {LABEL_JOB: job_label(JOB)}
    assert job.annotations == {ANNOTATION_SUBMISSION: "1", ANNOTATION_ATTEMPT: "1"}
    faults.let_run(ref)
    faults.requeue_underneath(ref)
    assert backend.open(ref).ref.submit == ref.submit
    faults.let_run(ref)
    faults.finish(ref)
    faults.purge(ref)
    assert backend.find(JOB) == []  # no history once deleted
    again = backend.start(plan, 1, 1)
    assert again.id == ref.id and again.uid != ref.uid  # the name again, never the uid


UNIMPLEMENTED: dict[str, type] = {
    Probe.COMMANDS: RunsCommands,
    Probe.SIGNALS: ObservesSignals,
    Probe.IMAGES: ObservesImages,
    Probe.SELF_RESTARTS: RerunsFailures,
    Probe.RUNTIMES: WeakensIdentity,
    Probe.RANK_OUTPUT: WritesRankOutput,
    Probe.OTHER_TARGETS: OpensOtherTargets,
    Probe.BEYOND_CAPACITY: AsksBeyondCapacity,
    Probe.UNPULLABLE_IMAGE: AsksUnpullableImage,
    "take_quota": TakesQuota,
    "stall_teardown": StallsTeardown,
    "hold_edge": MovesToHoldEdges,
    "fail_every_try": FailsEveryTry,
}
"""The powers the memory harness does not implement, in either shape."""


def lacking(harness: Harness[Any], need: str) -> str | None:
    return lacking_of(harness, need)


def test_the_harness_implements_the_union_of_both_shapes_powers() -> None:
    """One class for both shapes: every power either shape offers is implemented (both shapes'
    harnesses are the same type), and none the memory scheduler cannot model."""
    slurm, kubeflow = memory_slurm(), memory_kubeflow()
    assert type(slurm) is type(kubeflow) and isinstance(slurm, MemoryFaults)
    unimplemented = {n for n in known_needs() if not isinstance(slurm, POWER_OF[n])}
    assert unimplemented == set(UNIMPLEMENTED)
    assert all(not isinstance(slurm, power) for power in UNIMPLEMENTED.values())


def test_what_each_shape_offers_and_declines() -> None:
    known = set(known_needs())
    assert known == set(fault_needs()) | {p.value for p in Probe}
    slurm, kubeflow = memory_slurm(), memory_kubeflow()

    def unmet(why: str, need: str) -> str:
        if need in UNIMPLEMENTED:
            return (
                f"harness offers no {need} ({why}): implement "
                f"conformance.powers.{UNIMPLEMENTED[need].__name__} to offer it"
            )
        return f"harness cannot inject {need} ({why})"

    refused = {n: unmet(why, n) for n, why in REFUSED.items()}
    assert {n: lacking(slurm, n) for n in known if lacking(slurm, n)} == refused | {
        "recreate": unmet(SLURM_NO_RECREATE, "recreate"),
        "take_id_ahead": unmet(SLURM_NO_TAKE_AHEAD, "take_id_ahead"),
        "look_alike:misnamed": unmet(SLURM_NO_MISNAMED, "look_alike:misnamed"),
        "evict": unmet(SLURM_NO_EVICT, "evict"),
    }
    assert {n: slurm.declines(n) for n in known if slurm.declines(n)} == dict(REFUSED) | {
        "recreate": SLURM_NO_RECREATE,
        "take_id_ahead": SLURM_NO_TAKE_AHEAD,
        "look_alike:misnamed": SLURM_NO_MISNAMED,
        "evict": SLURM_NO_EVICT,
    }
    assert refused == {
        "commands": "harness offers no commands (the memory scheduler runs no command: it "
        "records each execution's ranks and their environment): implement "
        "conformance.powers.RunsCommands to offer it",
        "signals": "harness offers no signals (the memory scheduler models no time limit "
        "and no signal: its adapter declares PreTerminationSignal no): implement "
        "conformance.powers.ObservesSignals to offer it",
        "images": "harness offers no images (the memory scheduler runs no container: its "
        "adapter declares ContainerImage no): implement conformance.powers.ObservesImages to "
        "offer it",
        "self_restarts": "harness offers no self_restarts (the memory scheduler never "
        "reruns a failed object by itself: its adapter declares the restart rule no): "
        "implement conformance.powers.RerunsFailures to offer it",
        "runtimes": "harness offers no runtimes (a memory job's spec names no runtime: whether "
        "the memory adapter weakens identity is its identity_weakened setting (a text, or a "
        "function of the spec), no runtime's): implement conformance.powers.WeakensIdentity to "
        "offer it",
        "beyond_capacity": "harness offers no beyond_capacity (the memory scheduler models no "
        "capacity: every job it is given fits, and runs when let_run says): implement "
        "conformance.powers.AsksBeyondCapacity to offer it",
        "unpullable_image": "harness offers no unpullable_image (the memory scheduler pulls no "
        "image: its adapter declares ContainerImage no): implement "
        "conformance.powers.AsksUnpullableImage to offer it",
        "take_quota": "harness offers no take_quota (the memory scheduler meters no quota: "
        "nothing another user runs holds a job back): implement conformance.powers.TakesQuota "
        "to offer it",
        "other_targets": "harness offers no other_targets (a memory adapter's answers are its "
        "settings, given when it is made: it reads nothing of its target that another target "
        "could hold otherwise): implement conformance.powers.OpensOtherTargets to offer it",
        "rank_output": "harness offers no rank_output (the memory scheduler runs no command and "
        "keeps no output: its adapter declares OutputRead no): implement "
        "conformance.powers.WritesRankOutput to offer it",
        "stall_teardown": "harness offers no stall_teardown (the memory scheduler takes an "
        "ended object's run down at once: no requeue waits for it): implement "
        "conformance.powers.StallsTeardown to offer it",
        "hold_edge": "harness offers no hold_edge (the memory adapter numbers an object's "
        "holds by their count, not from a clock: no clock reaches an edge of its numbering): "
        "implement conformance.powers.MovesToHoldEdges to offer it",
        "race_next_write:touched": "harness cannot inject race_next_write:touched (the memory "
        "cluster's writes carry no version another writer could move)",
        "fail_every_try": "harness offers no fail_every_try (the memory adapter retries no "
        "write within a call: fail_before_effect is its every try): implement "
        "conformance.powers.FailsEveryTry to offer it",
        "lose_next_reply:failure": "harness cannot inject lose_next_reply:failure (the memory "
        "adapter runs no command and reads no reply: a lost reply is a timeout)",
        "lose_next_reply:garbled": "harness cannot inject lose_next_reply:garbled (the memory "
        "adapter runs no command and reads no reply: a lost reply is a timeout)",
    }
    lacks = {n: lacking(kubeflow, n) for n in known if lacking(kubeflow, n)}
    assert lacks == refused | {n: unmet(why, n) for n, why in KUBE_REFUSED.items()}
    assert str(lacks[look_alike_need(LookAlike.COMMA_LIST)]).startswith(
        "harness cannot inject look_alike:comma_list (a Kubernetes label value cannot hold a comma"
    )
    assert kubeflow.declines("recreate") is None
    assert isinstance(slurm.host(slurm.new_backend()), LocalHost)


def test_the_kubeflow_faults_kubernetes_cannot_have_are_refused_when_asked() -> None:
    backend, faults = kube()
    ref = backend.start(make_plan(backend, JobSpec(command=("x",))), 1, 1)
    for call, why in (
        (lambda: faults.reuse_id_next(ref), "the API server hands out no names"),
        (faults.lose_identity_history, "no accounting history"),
        (lambda: faults.near_hold(ref), "no start time"),
        (lambda: faults.inject_look_alike(JOB, LookAlike.COMMA_LIST), "comma"),
        (lambda: faults.inject_look_alike(JOB, LookAlike.MISNAMED), "implies no name"),
    ):
        with pytest.raises(CannotInject, match=why):
            call()


def test_kubeflow_look_alikes_are_labels_annotations_and_namespaces() -> None:
    backend, faults = kube()
    plan = make_plan(backend, JobSpec(command=("x",)), None, with_job(JOB))
    ref = backend.start(plan, 1, 1)
    made: dict[str, LookAlike] = {}
    # No comma in a label value; no name the identity implies, so none to miss (misnamed).
    for kind in (k for k in LookAlike if k not in (LookAlike.COMMA_LIST, LookAlike.MISNAMED)):
        for variant in range(faults.look_alike_forms(kind)):
            made[faults.inject_look_alike(JOB, kind, variant)] = kind
            assert faults.describe_look_alike(kind, variant)
    assert faults.look_alike_forms(LookAlike.UNPARSABLE_IDENTITY) == len(UNPARSABLE_ANNOTATIONS)
    jobs = backend.cluster.jobs
    cases = [jobs[i].labels[LABEL_JOB] for i, k in made.items() if k is LookAlike.CASE_VARIANT]
    assert len(set(cases)) == 3 and job_label(JOB) not in cases
    assert all(c.lower() == job_label(JOB) for c in cases)
    [theirs] = [i for i, k in made.items() if k is LookAlike.OTHER_USER]
    assert theirs.startswith(f"{OTHER_NAMESPACE}/")
    assert all(jobs[i].comment is None for i in made)
    found = {o.ref.id: o for o in backend.find(JOB)}
    foreign = {i for i, k in made.items() if k.foreign}
    assert set(found) == {ref.id} | foreign
    assert all(found[i].foreign and found[i].submission is None for i in foreign)
    assert not found[ref.id].foreign and found[ref.id].submission == 1
    # A look-alike's execution would carry no identity the strict parser refused.
    assert backend.cluster._identity(jobs[next(iter(foreign))]) is None


def test_slurm_shaped_look_alikes_use_the_slurm_encoding() -> None:
    harness = memory_slurm()
    backend = harness.new_backend()
    faults = Faults(harness, backend)
    assert faults.look_alike_forms(LookAlike.UNPARSABLE_IDENTITY) == len(UNPARSABLE_COMMENTS)
    comma = faults.inject_look_alike(JOB, LookAlike.COMMA_LIST, 1, other=JobID.new())
    assert backend.cluster.jobs[comma].name.endswith("," + JOB.discovery_name())
    theirs = faults.inject_look_alike(JOB, LookAlike.OTHER_USER)
    assert backend.cluster.jobs[theirs].owner != "me"
    bare = faults.inject_look_alike(JOB, LookAlike.NO_IDENTITY)
    assert backend.cluster.jobs[bare].comment == ""
    assert {o.ref.id: o.foreign for o in backend.find(JOB)} == {bare: True}


def test_near_hold_defers_the_queued_object_just_outside_the_hold_encoding() -> None:
    harness = memory_slurm()
    backend = harness.new_backend()
    faults = Faults(harness, backend)
    assert faults.near_hold_forms() == len(NEAR_HOLDS)
    for variant, (offset, words) in enumerate(NEAR_HOLDS):
        plan = make_plan(backend, JobSpec(command=("x",)), None, with_job(JobID.new()))
        ref = backend.start(plan, 1, 1)
        assert faults.near_hold(ref, variant) == words
        job = backend.cluster.jobs[ref.id]
        assert job.eligible - job.submit == offset
        seen = backend.open(ref)
        assert (seen.state, seen.hold) == (State.QUEUED, None)
        backend.stop(ref)
        with pytest.raises(CannotInject, match="not queued"):
            faults.near_hold(ref, variant)


@pytest.mark.parametrize("shape", ["slurm", "kubeflow"])
@pytest.mark.parametrize("operation", OPERATIONS)
def test_fail_before_effect_changes_nothing(shape: str, operation: str) -> None:
    harness = memory_slurm() if shape == "slurm" else memory_kubeflow()
    backend = harness.new_backend()
    faults = Faults(harness, backend)
    plan = make_plan(backend, JobSpec(command=("x",)))
    ref = backend.start(plan, 1, 1)
    if operation == "requeue":
        faults.let_run(ref)
    number = backend.hold(ref) if operation == "release" else 0
    before = backend.open(ref)
    other = make_plan(backend, JobSpec(command=("x",)))
    faults.fail_before_effect(operation)
    calls = {
        "start": lambda: backend.start(other, 1, 1),
        "stop": lambda: backend.stop(ref),
        "hold": lambda: backend.hold(ref),
        "release": lambda: backend.release(ref, number),
        "requeue": lambda: backend.requeue(ref),
    }
    with pytest.raises(OutcomeUnknown):
        calls[operation]()
    after = backend.open(ref)
    assert (after.state, after.hold, after.restart_count) == (
        before.state,
        before.hold,
        before.restart_count,
    )
    assert backend.find(other.job) == []
    with pytest.raises(CannotInject):
        faults.fail_before_effect("restart")
    assert after.state in (State.QUEUED, State.HELD, State.RUNNING)


# -- every registered check -------------------------------------------------------------------

KUBE_SKIPS = (
    *(f"harness cannot inject {need} ({why})" for need, why in KUBE_REFUSED.items()),
    *(f"harness cannot inject {need} ({why})" for need, why in REFUSED.items()),
    *(f"harness offers no {need} ({why})" for need, why in REFUSED.items()),
    "harness cannot inject race_next_write(hold, touched)",  # no versions to miss
    "harness cannot inject race_next_write(requeue, touched)",
    "the harness's target has no native id reuse",
    "the harness's target has no history beyond the live view",
    "adapter declares",
    "adapter implements no ",
    "the adapter is not",
    "expected failure",
)


@pytest.mark.parametrize("name", ["memory-slurm", "memory-kubeflow"])
@pytest.mark.parametrize("check", checks(), ids=lambda check: check.id)
def test_every_registered_check(check, name: str) -> None:  # type: ignore[no-untyped-def]
    """Both shapes run every check (the full tier): nothing fails or errs; the kubeflow shape
    skips only what a Kubernetes scheduler cannot have, or what the adapter declares no."""
    result = run_check(check, load_harness(name), seed=0)
    assert result.outcome in (Outcome.PASSED, Outcome.SKIPPED), result.reason
    if result.outcome is Outcome.SKIPPED and name == "memory-kubeflow":
        assert result.reason.startswith(KUBE_SKIPS), f"{check.id}: {result.reason}"


def test_executions_are_the_ref_s_object_s_even_when_the_identity_check_cannot_tell() -> None:
    """The same job's next submission takes the purged id and is requeued: the adapter's
    identity check takes the old ref for it (same name, later submit, restarted), but the
    harness reports each object's own executions, from the cluster's record."""
    harness = memory_slurm()
    backend = harness.new_backend()
    faults = Faults(harness, backend)
    plan = make_plan(backend, JobSpec(command=("x",)), None, with_job(JOB))
    first = backend.start(plan, 1, 1)
    faults.let_run(first)
    faults.finish(first)
    faults.reuse_id_next(first)
    backend.clock.advance(2)
    second = backend.start(plan, 2, 1)
    assert (second.id, second.uid) == (first.id, first.uid)
    faults.let_run(second)
    faults.requeue_underneath(second)
    faults.let_run(second)
    assert backend.open(first).ref == backend.open(second).ref  # what the adapter can tell
    [mine] = harness.executions(backend, first)
    assert {env["DISPATCH_SUBMISSION"] for env in mine} == {"1"}
    theirs = harness.executions(backend, second)
    assert [{env["DISPATCH_SUBMISSION"] for env in ranks} for ranks in theirs] == [{"2"}, {"2"}]


def test_evict_fails_a_kubeflow_shaped_object_evicted_and_the_slurm_shape_has_none() -> None:
    backend, faults = kube()
    ref = backend.start(make_plan(backend, JobSpec(command=("x",))), 1, 1)
    faults.let_run(ref)
    faults.evict(ref)
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.EVICTED)
    harness = memory_slurm()
    assert Fault.EVICT in harness.impossible
    backend = harness.new_backend()
    ref = backend.start(make_plan(backend, JobSpec(command=("x",))), 1, 1)
    Faults(harness, backend).let_run(ref)
    with pytest.raises(CannotInject, match="evicts no job"):
        harness.evict(backend, ref)
