"""The TrainJob lifecycle through the whole simulated cluster, with and without Kueue.

create → pods running → Complete; failure → Failed (FailedJobs); suspend deletes the pods and
resume brings new ones under the same Jobs; a failing container restarts in place under the
JobSet default OnFailure; delete removes the JobSet, Jobs and pods; Kueue admits, preempts and
readmits the same Workload. Faults act through ``sim.faults``.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulators.kubernetes import KubeConfig, KubeSim
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.faults import FaultError
from simulators.kubernetes.objects import JSON, condition, meta
from simulators.kubernetes.resources import (
    JOBS,
    JOBSETS,
    NAMESPACES,
    NODES,
    PODS,
    TRAINJOBS,
    WORKLOADS,
)

QUEUE = {"kueue.x-k8s.io/queue-name": "user-queue"}


def trainjob(
    name: str, nodes: int = 2, *, labels: dict[str, str] | None = None, **env: str
) -> JSON:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "numNodes": nodes,
                "image": "busybox",
                "command": ["train"],
                "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
            },
        },
    }


def pods(sim: KubeSim, name: str) -> list[JSON]:
    with sim.lock:
        return [
            p
            for p in sim.store.select(PODS, "default")
            if p["metadata"].get("labels", {}).get("jobset.sigs.k8s.io/jobset-name") == name
        ]


def phases(sim: KubeSim, name: str) -> list[str]:
    return sorted(str(p["status"].get("phase")) for p in pods(sim, name))


def state(sim: KubeSim, name: str) -> dict[str, tuple[str, str]]:
    obj = sim.get(TRAINJOBS, name, "default")
    return {
        c["type"]: (c["status"], c["reason"]) for c in obj.get("status", {}).get("conditions", [])
    }


def suspend(sim: KubeSim, name: str, value: bool) -> None:
    with sim.lock:

        def change(obj: JSON) -> None:
            obj["spec"]["suspend"] = value

        sim.store.mutate(TRAINJOBS, "default", name, change, internal=False)
        sim.runner.settle()


@pytest.mark.parametrize("kueue", [False, True], ids=["plain", "kueue"])
def test_a_trainjob_runs_to_complete(kueue: bool) -> None:
    sim = KubeSim(KubeConfig(kueue=kueue))
    sim.create(TRAINJOBS, trainjob("tj", labels=QUEUE if kueue else None), "default")
    assert sim.get(JOBSETS, "tj", "default")["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    sim.advance(5)
    assert phases(sim, "tj") == ["Running", "Running"]
    sim.advance(60)
    assert phases(sim, "tj") == ["Succeeded", "Succeeded"]
    assert state(sim, "tj")["Complete"] == ("True", "AllJobsCompleted")


def test_a_failing_rank_restarts_in_place_then_the_trainjob_fails() -> None:
    # JobSet's default restartPolicy OnFailure [J5]: the kubelet restarts the container, counted
    # toward backoffLimit (6 by default [A1]); then the Job fails, the JobSet fails FailedJobs [J3],
    # and the TrainJob copies its reason [T4].
    sim = KubeSim()
    sim.create(
        TRAINJOBS, trainjob("bad", 1, KUBE_SIM_EXIT_CODES="3", KUBE_SIM_RUN_SECONDS="1"), "default"
    )
    sim.advance(10)
    (pod,) = pods(sim, "bad")
    assert pod["status"]["containerStatuses"][0]["restartCount"] >= 1
    sim.advance(3600)
    failed = state(sim, "bad")["Failed"]
    assert failed == ("True", "FailedJobs")
    message = condition(sim.get(TRAINJOBS, "bad", "default"), "Failed")
    assert message is not None and "first failed job: bad-node-0" in message["message"]


@pytest.mark.parametrize("kueue", [False, True], ids=["plain", "kueue"])
def test_suspend_deletes_pods_and_resume_brings_new_ones_under_the_same_jobs(kueue: bool) -> None:
    sim = KubeSim(KubeConfig(kueue=kueue, default_run_seconds=None))
    sim.create(TRAINJOBS, trainjob("tj", labels=QUEUE if kueue else None), "default")
    sim.advance(5)
    job_uid = sim.get(JOBS, "tj-node-0", "default")["metadata"]["uid"]
    before = {p["metadata"]["uid"] for p in pods(sim, "tj")}
    if kueue:
        (wl,) = sim.store.select(WORKLOADS, "default")
        sim.faults.deactivate("default", wl["metadata"]["name"])
    else:
        suspend(sim, "tj", True)
    sim.advance(60)
    assert pods(sim, "tj") == []
    assert state(sim, "tj")["Suspended"][0] == "True"
    if kueue:
        with sim.lock:

            def activate(obj: JSON) -> None:
                obj["spec"]["active"] = True

            sim.store.mutate(WORKLOADS, "default", wl["metadata"]["name"], activate, internal=False)
            sim.runner.settle()
    else:
        suspend(sim, "tj", False)
    sim.advance(5)
    after = {p["metadata"]["uid"] for p in pods(sim, "tj")}
    assert len(after) == 2 and not after & before
    assert sim.get(JOBS, "tj-node-0", "default")["metadata"]["uid"] == job_uid
    assert state(sim, "tj")["Suspended"] == ("False", "Resumed")


def test_kueue_preemption_readmits_the_same_workload() -> None:
    sim = KubeSim(KubeConfig(kueue=True, default_run_seconds=None))
    sim.create(TRAINJOBS, trainjob("tj", labels=QUEUE), "default")
    sim.advance(5)
    (wl,) = sim.store.select(WORKLOADS, "default")
    name, uid = wl["metadata"]["name"], wl["metadata"]["uid"]
    sim.faults.kueue_preempt("default", name)
    sim.advance(1)
    again = sim.get(WORKLOADS, name, "default")
    assert again["metadata"]["uid"] == uid
    evictions = again["status"]["schedulingStats"]["evictions"]
    assert [(e["reason"], e["count"]) for e in evictions] == [("Preempted", 1)]
    sim.advance(10)
    assert phases(sim, "tj") == ["Running", "Running"]
    assert condition(sim.get(WORKLOADS, name, "default"), "Admitted") is not None


def test_delete_removes_the_jobset_jobs_and_pods() -> None:
    sim = KubeSim(KubeConfig(default_run_seconds=None))
    sim.create(TRAINJOBS, trainjob("tj"), "default")
    sim.advance(5)
    with sim.lock:
        sim.store.delete(TRAINJOBS, "default", "tj", propagation="Background")
        sim.runner.settle()
    sim.advance(60)
    with sim.lock:
        assert sim.store.select(JOBSETS, "default") == []
        assert sim.store.select(JOBS, "default") == []
    assert pods(sim, "tj") == []


def test_node_loss_replaces_the_pods_elsewhere_after_the_toleration() -> None:
    sim = KubeSim(KubeConfig(default_run_seconds=None))
    sim.create(TRAINJOBS, trainjob("tj", 1), "default")
    sim.advance(5)
    (pod,) = pods(sim, "tj")
    node = pod["spec"]["nodeName"]
    sim.faults.lose_node(node)
    sim.advance(301)
    live = [p for p in pods(sim, "tj") if not p["metadata"].get("deletionTimestamp")]
    assert [p["spec"].get("nodeName") for p in live] != [node]
    assert any(f.fault == "lose_node" for f in sim.faults.fired)


def test_oom_kill_and_faults_that_cannot_hit() -> None:
    sim = KubeSim(KubeConfig(default_run_seconds=None))
    sim.create(TRAINJOBS, trainjob("tj", 1), "default")
    sim.advance(5)
    (pod,) = pods(sim, "tj")
    sim.faults.oom_kill("default", pod["metadata"]["name"])
    sim.advance(1)
    (pod,) = pods(sim, "tj")
    last: dict[str, Any] = pod["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["reason"], last["exitCode"]) == ("OOMKilled", 137)
    with pytest.raises(FaultError):
        sim.faults.oom_kill("default", "no-such-pod")
    with pytest.raises(FaultError):
        sim.faults.kueue_preempt("default", "wl")
    with pytest.raises(FaultError):
        sim.faults.unschedulable("no-such-node")


def test_unschedulable_nodes_keep_pods_pending_until_uncordoned() -> None:
    sim = KubeSim()
    sim.faults.unschedulable()
    sim.create(TRAINJOBS, trainjob("tj", 1), "default")
    sim.advance(30)
    (pod,) = pods(sim, "tj")
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None and (scheduled["status"], scheduled["reason"]) == (
        "False",
        "Unschedulable",
    )
    sim.faults.schedulable()
    sim.advance(5)
    assert phases(sim, "tj") == ["Running"]
    assert all(not n["spec"].get("unschedulable") for n in sim.store.select(NODES))


def test_image_pull_failure_stays_pending() -> None:
    sim = KubeSim()
    sim.faults.image_pull_failure("busybox")
    sim.create(TRAINJOBS, trainjob("tj", 1), "default")
    sim.advance(600)
    (pod,) = pods(sim, "tj")
    assert pod["status"]["phase"] == "Pending"
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] in ("ErrImagePull", "ImagePullBackOff")
    assert "Failed" not in state(sim, "tj")


def test_same_seed_same_cluster() -> None:
    def run(seed: int) -> list[JSON]:
        sim = KubeSim(KubeConfig(kueue=True), seed=seed)
        sim.create(TRAINJOBS, trainjob("tj", labels=QUEUE), "default")
        sim.advance(30)
        with sim.lock:
            return [obj for _, obj in sim.store.all_objects()]

    first, second, other = run(3), run(3), run(4)
    assert first == second
    assert [meta(o)["uid"] for o in first] != [meta(o)["uid"] for o in other]


def test_deleting_a_namespace_deletes_what_it_holds_then_the_namespace() -> None:
    # pkg/controller/namespace/deletion: Terminating, contents deleted, then finalized.
    sim = KubeSim(KubeConfig(default_run_seconds=None))
    sim.create(NAMESPACES, {"metadata": {"name": "team"}})
    sim.create(TRAINJOBS, trainjob("tj", 1), "team")
    sim.advance(5)
    with sim.lock:
        marked = sim.store.delete(NAMESPACES, "", "team")
        assert marked["status"]["phase"] == "Terminating"
        with pytest.raises(ApiError) as refused:
            sim.store.create(TRAINJOBS, "team", trainjob("late", 1))
        assert refused.value.code == 403
        sim.runner.settle()
    sim.advance(60)
    with sim.lock:
        assert sim.store.peek(NAMESPACES, "", "team") is None
        assert sim.store.namespaced_in("team") == []
