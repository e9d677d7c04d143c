"""KubeflowBackend against the Kubernetes simulator served over HTTP (the official client),
without Kueue and with Kueue plus the readmission gate."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from adapters.kubeflow import KubeflowBackend
from adapters.kubeflow.kube import TRAINER
from dispatch_core import (
    Capability,
    Cause,
    Conflict,
    JobSpec,
    NotFound,
    OutcomeUnknown,
    Rejected,
    State,
    Tristate,
    Unsupported,
    make_plan,
    parse_execution_env,
)
from simulators.kubernetes.controllers.kubelet import starts
from simulators.kubernetes.resources import PODS, TRAININGRUNTIMES, TRAINJOBS
from simulators.kubernetes.runtimes import dispatch_identity
from tests.kubeflow.conftest import NS, World

LONG = JobSpec(command=("train", "--epochs", "1"), nodes=2)


def trainjob(world: World, name: str) -> dict[str, Any]:
    return world.sim.get(TRAINJOBS, name, NS)


def epochs(world: World, name: str) -> list[int]:
    """The R every rank of every execution of TrainJob ``name`` saw, in start order."""
    seen = []
    for start in starts(world.sim.cluster):
        if start.pod.startswith(name + "-"):
            identity = parse_execution_env(start.env)
            assert identity.native_id == name
            seen.append(identity.restart)
    return seen


def run(world: World, ref: Any, seconds: float = 10) -> Any:
    world.advance(seconds)
    seen = world.backend.open(ref)
    assert seen.state is State.RUNNING, seen
    return seen


def delta(backend: KubeflowBackend, before: Counter[str]) -> dict[str, int]:
    after = Counter(backend.calls)
    after.subtract(before)
    return {k: v for k, v in after.items() if v}


# -- start ------------------------------------------------------------------------------------


def test_start_writes_the_contract(plain: World) -> None:
    spec = JobSpec(
        command=("python", "-c", "print('$HOME')"),
        env={"PLAIN": "a$(B)c", "TOKEN": "s3cret"},
        secret_env=("TOKEN",),
        nodes=2,
        extensions={"dispatch.Image": "registry.example/train:1"},
    )
    backend = plain.backend
    ref = backend.start(make_plan(backend, spec), 3, 2)
    name = ref.id.split("/")[1]
    obj = trainjob(plain, name)
    assert name.startswith("dj-") and name.endswith("-3") and name == name.lower()
    assert obj["metadata"]["labels"]["dispatch/submission"] == "3"
    assert obj["metadata"]["annotations"]["dispatch/attempt"] == "2"
    assert obj["spec"]["runtimeRef"]["kind"] == "ClusterTrainingRuntime"
    trainer = obj["spec"]["trainer"]
    assert trainer["command"] == ["python", "-c", "print('$HOME')"]
    assert trainer["numNodes"] == 2 and trainer["image"] == "registry.example/train:1"
    names = [e["name"] for e in trainer["env"]]
    assert names[:7] == [
        "DISPATCH_JOB",
        "DISPATCH_SUBMISSION",
        "DJ_EXECUTION",
        "DJ_EPOCH_PAD",
        "DJ_RESTART",
        "DISPATCH_ATTEMPT",
        "DISPATCH_EPOCH",
    ]
    plain.advance(10)
    seen = [s for s in starts(plain.sim.cluster) if s.pod.startswith(name)]
    assert len(seen) == 2
    for start in seen:
        identity = parse_execution_env(start.env)
        assert (identity.submission, identity.restart) == (3, 10)
        assert start.env["PLAIN"] == "a$(B)c" and start.env["TOKEN"] == "s3cret"
    assert backend.open(ref).state is State.RUNNING


def test_start_is_idempotent_per_submission(world: World) -> None:
    backend = world.backend
    plan = make_plan(backend, LONG)
    ref = backend.start(plan, 1, 1)
    before = Counter(backend.calls)
    assert backend.start(plan, 1, 1) == ref  # 409 AlreadyExists, read back, ours
    print("start again (409):", delta(backend, before))
    with pytest.raises(Conflict):
        backend.start(plan, 1, 2)
    assert [o.ref for o in backend.find(plan.job)] == [ref]


@pytest.mark.parametrize("fault", ["lose", "500-after", "500-before"])
def test_start_resolves_a_lost_reply_by_reading(plain: World, fault: str) -> None:
    backend, faults = plain.backend, plain.sim.faults
    plan = make_plan(backend, LONG)
    if fault == "lose":
        faults.lose_next_reply("create", "trainjobs")
    elif fault == "500-before":
        faults.refuse_next("create", "trainjobs", code=500)
    if fault == "500-before":
        with pytest.raises(OutcomeUnknown):
            backend.start(plan, 1, 1)
        assert backend.find(plan.job) == []
        return
    if fault == "500-after":
        # applied, then answered 500: the lost-reply fault plus a refused read-back would
        # be two faults; a lost reply is the same judgement
        faults.lose_next_reply("create", "trainjobs")
    ref = backend.start(plan, 1, 1)
    found = backend.find(plan.job)
    assert [o.ref for o in found] == [ref]
    assert backend.calls["create trainjobs"] == 1


def test_refusals_at_plan_and_start(plain: World) -> None:
    backend = plain.backend
    for ext in ({"slurm.Partition": "gpu"}, {"kubeflow.Queue": "x"}):
        spec = JobSpec(command=("x",), extensions=ext)
        with pytest.raises(Unsupported):
            make_plan(backend, spec)
    with pytest.raises(Unsupported, match=r"workingDir"):
        make_plan(backend, JobSpec(command=("x",), work_dir="/data"))
    with pytest.raises(Unsupported):
        make_plan(backend, JobSpec(command=("x",), procs_per_node=4))  # plain runtime
    with pytest.raises(Unsupported, match="no TrainingRuntime"):
        make_plan(backend, JobSpec(command=("x",), extensions={"kubeflow.Runtime": "nope"}))


def test_runtime_answers_and_rank_restart_opt_in(plain: World) -> None:
    backend = plain.backend
    torch = JobSpec(command=("x",), extensions={"kubeflow.Runtime": "torch-distributed"})
    jax = JobSpec(command=("x",), extensions={"kubeflow.Runtime": "jax-distributed"})
    caps = backend.capabilities(torch)
    assert caps[Capability.ATTEMPT_INJECTION].value is Tristate.NO
    assert "restartPolicy OnFailure" in caps[Capability.ATTEMPT_INJECTION].reason
    assert caps[Capability.PROCS_PER_NODE].value is Tristate.YES
    assert backend.capabilities(jax)[Capability.PROCS_PER_NODE].value is Tristate.NO
    with pytest.raises(Unsupported, match="backoffLimit 6"):
        make_plan(backend, torch)
    assert backend.identity_weakened(torch).startswith("runtime torch-distributed: ")
    assert backend.identity_weakened(JobSpec(command=("x",))) == ""
    assert backend.own_retries(JobSpec(command=("x",))) == ""
    opted = plain.new_backend(allow_rank_restart=True)
    plan = make_plan(opted, torch)
    assert plan.identity_weakened and "OnFailure" in plan.identity_weakened
    assert opted.own_retries(torch) != ""
    for cap, value in {
        Capability.WORKING_DIRECTORY: Tristate.NO,
        Capability.OUTPUT_RETAINED: Tristate.NO,
        Capability.ACCOUNTING_HISTORY: Tristate.NO,
        Capability.NATIVE_REQUEUE: Tristate.NO,
        Capability.READMISSION_GATE: Tristate.NO,
        Capability.HOLD: Tristate.YES,
        Capability.CONTAINER_IMAGE: Tristate.YES,
    }.items():
        assert backend.capabilities(None)[cap].value is value, cap


def test_secret_values_never_reach_an_error(plain: World) -> None:
    backend = plain.new_backend(allow_rank_restart=True)
    spec = JobSpec(
        command=("x",),
        env={"PET_NNODES": "9", "TOKEN": "hunter2-secret"},
        secret_env=("TOKEN",),
        extensions={"kubeflow.Runtime": "torch-distributed"},
    )
    with pytest.raises(Rejected) as refused:
        backend.start(make_plan(backend, spec), 1, 1)
    assert "hunter2-secret" not in str(refused.value)
    assert "PET_NNODES" in str(refused.value)


def test_kueue_without_the_gate_refuses_submit() -> None:
    from tests.kubeflow.conftest import _world

    made = _world(True, gate=False)
    world = next(made)
    caps = world.backend.capabilities(LONG)
    assert caps[Capability.ATTEMPT_INJECTION].value is Tristate.NO
    assert "dispatch-readmission" in caps[Capability.ATTEMPT_INJECTION].reason
    assert caps[Capability.READMISSION_GATE].value is Tristate.NO
    with pytest.raises(Unsupported):
        make_plan(world.backend, LONG)
    made.close()


# -- find and identity ------------------------------------------------------------------------


def test_find_reports_look_alikes_as_foreign(plain: World) -> None:
    backend = plain.backend
    plan = make_plan(backend, LONG)
    ref = backend.start(plan, 1, 1)
    body = backend.trainjob(plan, 2, 1)
    job = str(plan.job)
    variants = {
        "bad-submission": ({"dispatch/submission": "02"}, {}, None),
        "no-attempt": ({}, {"dispatch/attempt": None}, None),
        "name-mismatch": ({}, {}, f"dj-{job.lower()}-9"),
    }
    for i, (labels, dropped, name) in enumerate(variants.values()):
        other = copy.deepcopy(body)
        other["metadata"]["name"] = name or f"dj-{job.lower()}-{i + 2}"
        other["metadata"]["labels"].update(labels)
        for key in dropped:
            other["metadata"]["annotations"].pop(key)
        plain.sim.create(TRAINJOBS, other, NS)
    lower = copy.deepcopy(body)
    lower["metadata"]["name"] = f"dj-{job.lower()}-7"
    lower["metadata"]["labels"]["dispatch/job"] = job.lower()  # a case variant: not selected
    plain.sim.create(TRAINJOBS, lower, NS)
    found = backend.find(plan.job)
    assert len(found) == 4
    ours = [o for o in found if not o.foreign]
    assert [o.ref for o in ours] == [ref]
    for seen in found:
        if seen.foreign:
            assert (seen.submission, seen.attempt) == (None, None)
            with pytest.raises(Rejected):
                backend.hold(seen.ref)


def test_a_recreated_name_is_another_object(plain: World) -> None:
    backend, sim = plain.backend, plain.sim
    plan = make_plan(backend, LONG)
    ref = backend.start(plan, 1, 1)
    name = ref.id.split("/")[1]
    body = backend.trainjob(plan, 1, 1)
    sim.faults.admin_delete(TRAINJOBS, NS, name)
    sim.advance(1)
    again = sim.create(TRAINJOBS, body, NS)
    assert again["metadata"]["uid"] != ref.uid
    with pytest.raises(NotFound):
        backend.open(ref)
    for act in (
        lambda: backend.hold(ref),
        lambda: backend.release(ref, 5),
        lambda: backend.requeue(ref),
    ):
        with pytest.raises(NotFound):
            act()
    backend.stop(ref)  # nothing of the ref's left: success, the new object untouched
    assert trainjob(plain, name)["metadata"]["uid"] == again["metadata"]["uid"]
    assert not trainjob(plain, name)["metadata"].get("deletionTimestamp")
    assert backend.calls["update trainjobs"] == 0


# -- stop ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", [None, "lose", "500", "409"])
def test_stop_deletes_by_uid_and_verifies(world: World, fault: str | None) -> None:
    backend = world.backend
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    run(world, ref, 15)
    if fault == "lose":
        world.sim.faults.lose_next_reply("delete", "trainjobs")
    elif fault:
        world.sim.faults.refuse_next("delete", "trainjobs", code=int(fault))
    before = Counter(backend.calls)
    backend.stop(ref)
    print(f"stop ({fault}):", delta(backend, before))
    with pytest.raises(NotFound):
        backend.open(ref)
    assert backend.kube.pods(NS, f"jobset.sigs.k8s.io/jobset-name={ref.id.split('/')[1]}") == []
    backend.stop(ref)  # again: nothing left to cancel


# -- holds, releases, requeues -----------------------------------------------------------------


def test_hold_release_requeue_give_every_execution_a_higher_r(world: World) -> None:
    backend = world.backend
    plan = make_plan(backend, LONG)
    before = Counter(backend.calls)
    ref = backend.start(plan, 1, 1)
    print("start:", delta(backend, before))
    name = ref.id.split("/")[1]
    before = Counter(backend.calls)
    number = backend.hold(ref)
    print("hold:", delta(backend, before))
    seen = backend.open(ref)
    assert (seen.state, seen.hold) == (State.HELD, number)
    world.advance(30)
    assert backend.open(ref).state is State.HELD and epochs(world, name) == []
    with pytest.raises(Conflict):
        backend.release(ref, number + 1)
    before = Counter(backend.calls)
    backend.release(ref, number)
    print("release:", delta(backend, before))
    with pytest.raises(Conflict):
        backend.release(ref, number)
    first = run(world, ref, 15)
    r1 = set(epochs(world, name))
    assert len(r1) == 1
    with pytest.raises(Rejected):
        backend.hold(ref)
    before = Counter(backend.calls)
    backend.requeue(ref)
    print("requeue:", delta(backend, before))
    second = run(world, ref, 20)
    assert second.restart_count == (first.restart_count or 0) + 1
    rs = epochs(world, name)
    assert rs == sorted(rs) and len(set(rs)) == 2 and max(rs) > max(r1), rs
    before = Counter(backend.calls)
    seen = backend.open(ref)
    print("open:", delta(backend, before))
    before = Counter(backend.calls)
    backend.find(plan.job)
    print("find:", delta(backend, before))
    assert backend.reopen().open(ref).ref == ref


@pytest.mark.parametrize("fault", ["lose", "409", "500"])
def test_a_hold_whose_update_is_uncertain_is_judged(plain: World, fault: str) -> None:
    backend, faults = plain.backend, plain.sim.faults
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    if fault == "lose":
        faults.lose_next_reply("update", "trainjobs")
    else:
        faults.refuse_next("update", "trainjobs", code=int(fault))
    number = backend.hold(ref)
    seen = backend.open(ref)
    assert (seen.state, seen.hold) == (State.HELD, number)
    backend.release(ref, number)
    assert backend.open(ref).hold is None


def test_a_requeue_cut_between_its_steps(plain: World) -> None:
    backend, faults = plain.backend, plain.sim.faults
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    before = run(plain, ref)
    real = backend.kube.replace
    calls = {"n": 0}

    def cut(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] >= 2:
            faults.refuse_next("update", "trainjobs", code=500)
        return real(*args)

    backend.kube.replace = cut  # type: ignore[method-assign]
    with pytest.raises(OutcomeUnknown):
        backend.requeue(ref)
    backend.kube.replace = real  # type: ignore[method-assign]
    backend.requeue(ref)  # finishes the cut one: once
    after = run(plain, ref, 20)
    assert after.restart_count == (before.restart_count or 0) + 1


def test_identity_env_across_a_jobset_restart(plain: World) -> None:
    runtime = dispatch_identity()
    runtime["kind"] = "TrainingRuntime"
    runtime["metadata"] = {"name": "restarting", "namespace": NS}
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    plain.sim.create(TRAININGRUNTIMES, runtime, NS)
    backend = plain.backend
    spec = JobSpec(command=("x",), nodes=2, extensions={"kubeflow.Runtime": "restarting"})
    assert backend.capabilities(spec)[Capability.NATIVE_RESTART].value is Tristate.YES
    assert "maxRestarts is 1" in backend.own_retries(spec)
    ref = backend.start(make_plan(backend, spec), 1, 1)
    name = ref.id.split("/")[1]
    assert trainjob(plain, name)["spec"]["runtimeRef"]["kind"] == "TrainingRuntime"
    first = run(plain, ref)
    pod = next(s.pod for s in starts(plain.sim.cluster) if s.pod.startswith(name))
    plain.sim.faults.oom_kill(NS, pod)
    second = run(plain, ref, 30)
    assert second.restart_count == (first.restart_count or 0) + 1
    assert epochs(plain, name) == [10, 10, 11, 11]
    backend.requeue(ref)
    run(plain, ref, 20)
    assert epochs(plain, name)[-2:] == [21, 21]


# -- causes -----------------------------------------------------------------------------------


def _failed(world: World, ref: Any, seconds: float = 20) -> Any:
    world.advance(seconds)
    seen = world.backend.open(ref)
    assert seen.state.ended, seen
    return seen


def _rank_pod(world: World, ref: Any) -> str:
    name = ref.id.split("/")[1]
    return next(s.pod for s in starts(world.sim.cluster) if s.pod.startswith(name))


def test_causes_from_pod_faults(plain: World) -> None:
    backend, faults = plain.backend, plain.sim.faults
    cases = {}
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    run(plain, ref)
    faults.oom_kill(NS, _rank_pod(plain, ref))
    cases["oom"] = (_failed(plain, ref), Cause.OUT_OF_MEMORY)
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    run(plain, ref)
    faults.evict_pod(NS, _rank_pod(plain, ref))
    cases["evicted"] = (_failed(plain, ref), Cause.EVICTED)
    code = JobSpec(command=("x",), env={"KUBE_SIM_EXIT_CODES": "3", "KUBE_SIM_RUN_SECONDS": "5"})
    ref = backend.start(make_plan(backend, code), 1, 1)
    cases["exit"] = (_failed(plain, ref), Cause.EXIT_CODE)
    assert cases["exit"][0].exit_code == 3
    done = JobSpec(command=("x",), env={"KUBE_SIM_RUN_SECONDS": "5"})
    ref = backend.start(make_plan(backend, done), 1, 1)
    seen = _failed(plain, ref)
    assert seen.state is State.SUCCEEDED
    for what, (seen, cause) in cases.items():
        assert (seen.state, seen.cause) == (State.FAILED, cause), (what, seen)


def test_node_lost_and_queued_causes(plain: World) -> None:
    backend, faults = plain.backend, plain.sim.faults
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    run(plain, ref)
    pod = plain.sim.get(PODS, _rank_pod(plain, ref), NS)
    faults.lose_node(pod["spec"]["nodeName"])
    seen = _failed(plain, ref, 400)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.NODE_LOST), seen
    faults.image_pull_failure("pull-fails:1")
    image = JobSpec(command=("x",), extensions={"dispatch.Image": "pull-fails:1"})
    ref = backend.start(make_plan(backend, image), 1, 1)
    plain.advance(10)
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.QUEUED, Cause.IMAGE_PULL), seen
    faults.unschedulable()
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    plain.advance(5)
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.QUEUED, Cause.UNSCHEDULABLE), seen


def test_deadline_is_timeout(plain: World) -> None:
    backend = plain.backend
    plan = make_plan(backend, LONG)
    body = backend.trainjob(plan, 1, 1)
    body["spec"]["activeDeadlineSeconds"] = 10
    plain.sim.create(TRAINJOBS, body, NS)
    ref = backend.find(plan.job)[0].ref
    seen = _failed(plain, ref, 20)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.TIMEOUT), seen


def test_kueue_preemption_is_queued_preempted(queued: World) -> None:
    backend = queued.backend
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    first = run(queued, ref)
    workload = backend.kube.list_objects(
        ("kueue.x-k8s.io", "v1beta2"), "workloads", NS, f"kueue.x-k8s.io/job-uid={ref.uid}"
    )[0]
    queued.sim.faults.kueue_preempt(NS, workload["metadata"]["name"])
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.QUEUED, Cause.PREEMPTED), seen
    again = run(queued, ref, 20)
    assert again.restart_count == (first.restart_count or 0) + 1
    rs = epochs(queued, ref.id.split("/")[1])
    assert rs == sorted(rs) and len(set(rs)) == 2, rs


def test_gone_is_not_found(world: World) -> None:
    backend = world.backend
    ref = backend.start(make_plan(backend, LONG), 1, 1)
    world.sim.faults.admin_delete(TRAINJOBS, NS, ref.id.split("/")[1])
    with pytest.raises(NotFound):
        backend.open(ref)


# -- output and preflight ---------------------------------------------------------------------


def test_output_is_rank_zeros_log(plain: World) -> None:
    backend = plain.backend
    spec = JobSpec(
        command=("x",),
        nodes=2,
        env={"KUBE_SIM_LOG": "0:hello\n2:world", "KUBE_SIM_RUN_SECONDS": "4"},
    )
    ref = backend.start(make_plan(backend, spec), 1, 1)
    plain.advance(5)
    text = backend.read_output(ref)
    assert b"hello" in text
    assert backend.read_output(ref, 3) == text[3:]
    assert b"world" in b"".join(backend.follow_output(ref))
    backend.stop(ref)
    with pytest.raises(NotFound):
        backend.read_output(ref)


def test_preflight_probes_and_cleans_up(world: World) -> None:
    backend = world.backend
    before = Counter(backend.calls)
    answers = backend.preflight()
    print("preflight:", delta(backend, before))
    assert all(a.source == "probed" and a.reason for a in answers.values())
    assert answers[Capability.OUTPUT_READ].value is Tristate.YES, answers[Capability.OUTPUT_READ]
    gate = answers[Capability.READMISSION_GATE].value
    assert gate is (Tristate.YES if world.kueue else Tristate.NO)
    assert backend.kube.list_objects(TRAINER, "trainjobs", NS) == []
    assert backend.capabilities(None)[Capability.OUTPUT_READ].source == "probed"


def test_a_failed_trainjob_is_requeued_under_a_new_jobset(plain: World) -> None:
    backend = plain.backend
    spec = JobSpec(command=("x",), env={"KUBE_SIM_EXIT_CODES": "3", "KUBE_SIM_RUN_SECONDS": "5"})
    ref = backend.start(make_plan(backend, spec), 1, 1)
    failed = _failed(plain, ref)
    assert (failed.state, failed.cause) == (State.FAILED, Cause.EXIT_CODE)
    before = Counter(backend.calls)
    backend.requeue(ref)
    print("requeue of a failed TrainJob:", delta(backend, before))
    plain.advance(3)
    again = backend.open(ref)
    assert again.ref == ref and again.restart_count == (failed.restart_count or 0) + 1
    rs = epochs(plain, ref.id.split("/")[1])
    assert rs == [10, 20], rs


def test_capabilities_reflect_the_preflight(plain: World) -> None:
    backend = plain.backend
    backend.preflight()
    caps = backend.capabilities(None)
    for cap in (Capability.ATTEMPT_INJECTION, Capability.CONTAINER_IMAGE, Capability.OUTPUT_READ):
        assert caps[cap].source == "probed", cap
    output = JobSpec(command=("x",), extensions={"dispatch.Output": "/tmp/out"})
    assert backend.capabilities(output)[Capability.ATTEMPT_INJECTION].value is Tristate.YES
    with pytest.raises(Unsupported):
        make_plan(backend, output)
