"""Golden tests of the simulated Kueue (main at ff69552e) driving TrainJobs in the store.

Each test names the upstream fact it encodes (facts-file refs [K1]..[K18] of
../shared/reference/kubeflow-facts.md §16, or the upstream path). The Trainer, JobSet, Job and
kubelet controllers are not run: a test writes the TrainJob status it needs (``jobsStatus``
active counts, ``Complete``/``Failed``) itself, through the status subresource.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

import pytest

from dispatch_core import VirtualClock
from simulators.kubernetes.config import KubeConfig, NodeConfig, QueueConfig
from simulators.kubernetes.controllers import kueue as kq
from simulators.kubernetes.controllers.base import Cluster, Runner
from simulators.kubernetes.controllers.gc import GarbageCollector
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.faults import FaultError
from simulators.kubernetes.objects import JSON, condition, meta, name_of, namespace_of
from simulators.kubernetes.resources import (
    ADMISSIONCHECKS,
    CLUSTERQUEUES,
    CLUSTERTRAININGRUNTIMES,
    LOCALQUEUES,
    NAMESPACES,
    RESOURCEFLAVORS,
    TRAINJOBS,
    WORKLOADS,
)
from simulators.kubernetes.runtimes import catalogue
from simulators.kubernetes.store import Store
from simulators.kubernetes.webhooks.kueue import KueueTrainJobWebhook, KueueWorkloadWebhook

NS = "default"
GATE = "dispatch-gate"


@dataclass
class Env:
    store: Store
    clock: VirtualClock
    cluster: Cluster
    runner: Runner

    def settle(self) -> None:
        self.runner.settle()

    def submit(self, name: str, cpu: str = "1", nodes: int = 2, gate: str | None = None) -> JSON:
        annotations = {kq.GATE_ANNOTATION: gate} if gate is not None else None
        made = self.store.create(TRAINJOBS, NS, trainjob(name, cpu, nodes, annotations=annotations))
        self.settle()
        return made

    def tj(self, name: str) -> JSON:
        return self.store.get(TRAINJOBS, NS, name)

    def wl(self, name: str) -> JSON:
        found = kq.workload_for(self.store, NS, name)
        assert found is not None, f"no Workload for {name}"
        return found

    def tj_status(self, name: str, **status: Any) -> None:
        def change(obj: JSON) -> None:
            obj.setdefault("status", {}).update(status)

        self.store.mutate(TRAINJOBS, NS, name, change, subresource="status")
        self.settle()

    def set_check(self, name: str, state: str, message: str = "", **extra: Any) -> None:
        """What an AdmissionCheck controller writes into the Workload's status [K17]."""
        wl = self.wl(name)

        def change(obj: JSON) -> None:
            for check in obj["status"]["admissionChecks"]:
                if check["name"] == GATE:
                    check.update(state=state, message=message, **extra)

        self.store.mutate(WORKLOADS, NS, name_of(wl), change, subresource="status")
        self.settle()

    def user_update(self, name: str, change: Any) -> JSON:
        current = self.store.get(TRAINJOBS, NS, name)
        change(current)
        made = self.store.update(TRAINJOBS, NS, name, current)
        self.settle()
        return made


def trainjob(
    name: str,
    cpu: str,
    nodes: int,
    queue: str | None = "user-queue",
    annotations: dict[str, str] | None = None,
) -> JSON:
    m: JSON = {"name": name}
    if queue is not None:
        m["labels"] = {kq.QUEUE_LABEL: queue}
    if annotations:
        m["annotations"] = dict(annotations)
    return {
        "apiVersion": TRAINJOBS.api_version,
        "kind": TRAINJOBS.kind,
        "metadata": m,
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "numNodes": nodes,
                "resourcesPerNode": {"requests": {"cpu": cpu, "memory": "1Gi"}},
            },
        },
    }


def make(
    cpu: int | None = 4, checks: tuple[str, ...] = (), gc: bool = False, pods: int | None = None
) -> Env:
    clock = VirtualClock()
    rng = random.Random(0)
    store = Store(rng=rng, now=clock.now)
    store.create(NAMESPACES, "", {"metadata": {"name": NS}}, internal=True)
    for runtime in catalogue(["torch-distributed"]):
        store.create(CLUSTERTRAININGRUNTIMES, "", runtime, internal=True)
    queue = QueueConfig(cpu=cpu, admission_checks=checks, pods=pods)
    for resource, obj in kq.bootstrap(queue, [NodeConfig("node-0")]):
        store.create(resource, namespace_of(obj), obj, internal=True)
    store.admission[:] = [KueueTrainJobWebhook(), KueueWorkloadWebhook()]
    cluster = Cluster(store, clock, rng, KubeConfig(kueue=True, queue=queue))
    controllers = [controller(cluster) for controller in kq.CONTROLLERS]
    runner = Runner(cluster, [*controllers, GarbageCollector(cluster)] if gc else controllers)
    runner.settle()
    return Env(store, clock, cluster, runner)


def cond(obj: JSON, kind: str) -> tuple[str, str, str]:
    c = condition(obj, kind)
    assert c is not None, f"no {kind} condition in {obj.get('status')}"
    return (str(c["status"]), str(c["reason"]), str(c["message"]))


def kueue_patch(tj: JSON) -> JSON:
    patch = kq.kueue_patch(tj)
    assert patch is not None
    return patch


def replicated_jobs(tj: JSON) -> list[JSON]:
    spec = kueue_patch(tj)["trainingRuntimeSpec"]["template"]["spec"]
    return list(spec.get("replicatedJobs", []))


# -- names, labels, objects -----------------------------------------------------------------


def test_workload_name_matches_upstream_golden_names() -> None:
    """pkg/controller/jobframework/workload_names.go and its _test.go vectors [K7]."""
    assert kq.workload_name("name", "uid", kind="Job", group="batch") == "job-name-ef3a1"
    long = (
        "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-"
        "department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-"
        "by-engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-"
        "dept"
    )
    got = kq.workload_name(long, "uid", kind="Job", group="batch")
    assert len(got) == 253
    assert got.endswith("-approved-by-l-218b8")
    short = kq.workload_name(long, "uid", kind="Job", group="batch", max_length=63)
    assert short == "job-marketing-campaign-autumn-2024-region-north-america-d-218b8"
    uid = "23a7711a-8133-4876-b7eb-dcd9e87a1613"
    digest = hashlib.sha1(f"TrainJob\ntrainer.kubeflow.org\ntj\n{uid}".encode()).hexdigest()
    assert digest[:5] == "ea186"
    assert kq.workload_name("tj", uid) == "trainjob-tj-ea186"


def test_one_workload_per_trainjob_with_job_uid_owner_queue_and_podsets() -> None:
    """[K7, K8] name and job-uid label; [K2] podSets count = replicas x parallelism."""
    env = make()
    tj = env.submit("tj", nodes=3)
    wl = env.wl("tj")
    uid = meta(tj)["uid"]
    assert meta(wl)["name"] == kq.workload_name("tj", uid)
    assert meta(wl)["labels"] == {kq.JOB_UID_LABEL: uid}
    (ref,) = meta(wl)["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
        "TrainJob",
        "tj",
        uid,
        True,
    )
    assert wl["spec"]["queueName"] == "user-queue"
    assert wl["spec"]["active"] is True
    (podset,) = wl["spec"]["podSets"]
    assert (podset["name"], podset["count"]) == ("node", 3)
    assert podset["template"]["spec"]["containers"]
    assert len(env.store.select(WORKLOADS)) == 1


def test_bootstrap_objects_quota_from_nodes_and_checks() -> None:
    """v1beta2 ClusterQueue/LocalQueue/ResourceFlavor/AdmissionCheck (apis/kueue/v1beta2) [K18]."""
    queue = QueueConfig(admission_checks=("a-check",), admission_check_controller="x.io/gate")
    made = kq.bootstrap(queue, [NodeConfig("n0", cpu=8), NodeConfig("n1", cpu=4)])
    kinds = [r for r, _ in made]
    assert kinds == [RESOURCEFLAVORS, ADMISSIONCHECKS, CLUSTERQUEUES, LOCALQUEUES]
    cq = made[2][1]
    (group,) = cq["spec"]["resourceGroups"]
    (flavor,) = group["flavors"]
    assert flavor["name"] == "default-flavor"
    assert flavor["resources"] == [
        {"name": "cpu", "nominalQuota": "12"},
        {"name": "memory", "nominalQuota": "64Gi"},
    ]
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "a-check"}]}
    assert made[1][1]["spec"] == {"controllerName": "x.io/gate"}
    assert made[3][1]["spec"] == {"clusterQueue": "cluster-queue"}
    assert meta(made[3][1])["namespace"] == "default"


# -- the TrainJob webhook ---------------------------------------------------------------------


def test_webhook_suspends_a_queued_trainjob_and_appends_kueues_patch() -> None:
    """trainjob_webhook.go Default [K3, K15]: suspend when managed; the patch always."""
    env = make(cpu=0)
    queued = env.store.create(TRAINJOBS, NS, trainjob("q", "1", 1))
    assert queued["spec"]["suspend"] is True
    assert queued["spec"]["runtimePatches"] == [
        {"manager": kq.PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}
    ]
    plain = env.store.create(TRAINJOBS, NS, trainjob("plain", "1", 1, queue=None))
    assert "suspend" not in plain["spec"]
    assert [p["manager"] for p in plain["spec"]["runtimePatches"]] == [kq.PATCH_MANAGER]
    env.settle()
    assert kq.workload_for(env.store, NS, "plain") is None


def test_admission_gated_by_can_only_be_set_at_creation_and_then_shortened() -> None:
    """pkg/util/webhook/validation_admissiongatedby.go [K9, K16]: 403 from vtrainjob.kb.io."""
    env = make()
    env.submit("late")
    with pytest.raises(ApiError) as refused:
        env.user_update(
            "late",
            lambda o: (
                meta(o)
                .setdefault("annotations", {})
                .update({kq.GATE_ANNOTATION: "example.com/gate"})
            ),
        )
    assert refused.value.code == 403
    assert refused.value.reason == "Forbidden"
    assert refused.value.message == (
        'admission webhook "vtrainjob.kb.io" denied the request: '
        "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Forbidden: cannot add "
        "admission gate after creation"
    )
    env.submit("gated", gate="a.io/x,b.io/y")
    env.user_update(
        "gated", lambda o: meta(o)["annotations"].update({kq.GATE_ANNOTATION: "a.io/x"})
    )
    with pytest.raises(ApiError) as added:
        env.user_update(
            "gated", lambda o: meta(o)["annotations"].update({kq.GATE_ANNOTATION: "a.io/x,c.io/z"})
        )
    assert added.value.message.endswith("Forbidden: can only remove gates, not add new ones")


def test_admission_gated_by_blocks_quota_until_removed() -> None:
    """workload_controller.go mayUpdateConditionForAdmissionGatedBy [K9, K10]."""
    env = make()
    env.submit("g", gate="example.com/gate")
    wl = env.wl("g")
    assert meta(wl)["annotations"] == {kq.GATE_ANNOTATION: "example.com/gate"}
    assert cond(wl, "QuotaReserved") == (
        "False",
        "AdmissionGated",
        "Admission is gated by: example.com/gate",
    )
    assert "admission" not in wl["status"]
    assert env.tj("g")["spec"]["suspend"] is True
    env.user_update("g", lambda o: meta(o)["annotations"].pop(kq.GATE_ANNOTATION))
    wl = env.wl("g")
    assert kq.GATE_ANNOTATION not in meta(wl).get("annotations", {})
    assert cond(wl, "QuotaReserved")[0] == "True"
    assert env.tj("g")["spec"]["suspend"] is False


def test_queue_name_is_immutable_while_the_trainjob_runs() -> None:
    """jobframework/validation.go validateUpdateForQueueName."""
    env = make()
    env.submit("run")
    with pytest.raises(ApiError) as refused:
        env.user_update("run", lambda o: meta(o)["labels"].update({kq.QUEUE_LABEL: "other"}))
    assert refused.value.code == 403
    assert refused.value.message.endswith(
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable'
    )


# -- quota and admission ----------------------------------------------------------------------


def test_quota_reservation_admits_and_unsuspends_with_kueues_patch() -> None:
    """scheduler SetQuotaReservation + RunWithPodSetsInfo [K1, K2]."""
    env = make()
    env.submit("tj", cpu="500m", nodes=3)
    wl = env.wl("tj")
    assert cond(wl, "QuotaReserved") == (
        "True",
        "QuotaReserved",
        "Quota reserved in ClusterQueue cluster-queue",
    )
    assert cond(wl, "Admitted") == ("True", "Admitted", "The workload is admitted")
    assert wl["status"]["admission"] == {
        "clusterQueue": "cluster-queue",
        "podSetAssignments": [
            {
                "name": "node",
                "flavors": {"cpu": "default-flavor", "memory": "default-flavor"},
                "resourceUsage": {"cpu": "1500m", "memory": "3Gi"},
                "count": 3,
            }
        ],
    }
    tj = env.tj("tj")
    assert tj["spec"]["suspend"] is False
    (rjob,) = replicated_jobs(tj)
    assert rjob["name"] == "node"
    assert rjob["template"]["spec"]["template"]["metadata"]["labels"] == {
        kq.PODSET_LABEL: "node",
        kq.LOCAL_QUEUE_LABEL: "user-queue",
        kq.CLUSTER_QUEUE_LABEL: "cluster-queue",
    }
    cq = env.store.get(CLUSTERQUEUES, "", "cluster-queue")
    assert (cq["status"]["reservingWorkloads"], cq["status"]["admittedWorkloads"]) == (1, 1)


def test_waiting_for_quota_when_full_then_admitted_when_quota_frees() -> None:
    """flavorassigner.go message; quota released when the Workload finishes [K2, K4]."""
    env = make(cpu=2)
    env.submit("first", cpu="1", nodes=2)
    env.clock.advance(1)
    env.submit("second", cpu="1", nodes=2)
    second = env.wl("second")
    assert cond(second, "QuotaReserved") == (
        "False",
        "WaitingForQuota",
        "couldn't assign flavors to pod set node: insufficient unused quota for cpu in flavor "
        "default-flavor, 2 more needed",
    )
    assert cond(second, "Admitted") == ("False", "NoReservation", "The workload has no reservation")
    assert env.tj("second")["spec"]["suspend"] is True
    env.tj_status(
        "first",
        conditions=[
            {
                "type": "Complete",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": "2026-01-01T00:00:01Z",
            }
        ],
    )
    assert cond(env.wl("first"), "Finished") == (
        "True",
        "Succeeded",
        "jobset completed successfully",
    )
    assert cond(env.wl("second"), "QuotaReserved")[0] == "True"
    assert env.tj("second")["spec"]["suspend"] is False


def test_exceeds_max_quota_when_larger_than_the_nominal_quota() -> None:
    """flavorassigner.go fitsResourceQuota: ExceedsMaxQuota."""
    env = make(cpu=2)
    env.submit("big", cpu="3", nodes=1)
    assert cond(env.wl("big"), "QuotaReserved") == (
        "False",
        "ExceedsMaxQuota",
        "couldn't assign flavors to pod set node: insufficient quota for cpu in flavor "
        "default-flavor, previously considered podsets requests (0) + current podset request "
        "(3) > maximum capacity (2)",
    )


def test_failed_trainjob_finishes_its_workload_failed() -> None:
    """reconciler.go step 3: Finished reason Failed with the TrainJob's message [K4]."""
    env = make()
    env.submit("bad")
    env.tj_status(
        "bad",
        conditions=[
            {
                "type": "Failed",
                "status": "True",
                "reason": "FailedJobs",
                "message": "jobset failed due to one or more job failures (first failed job: x)",
                "lastTransitionTime": "2026-01-01T00:00:01Z",
            }
        ],
    )
    assert cond(env.wl("bad"), "Finished") == (
        "True",
        "Failed",
        "jobset failed due to one or more job failures (first failed job: x)",
    )
    cq = env.store.get(CLUSTERQUEUES, "", "cluster-queue")
    assert cq["status"]["reservingWorkloads"] == 0


# -- admission checks -------------------------------------------------------------------------


def test_admission_check_pending_gates_admission_until_ready_with_podset_updates() -> None:
    """[K17] Admitted only when every check is Ready; [K1, K2] podSetUpdates reach the patch."""
    env = make(checks=(GATE,))
    env.submit("tj")
    wl = env.wl("tj")
    (check,) = wl["status"]["admissionChecks"]
    assert (check["name"], check["state"]) == (GATE, "Pending")
    assert cond(wl, "QuotaReserved")[0] == "True"
    assert cond(wl, "Admitted") == (
        "False",
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )
    assert env.tj("tj")["spec"]["suspend"] is True
    assert replicated_jobs(env.tj("tj")) == []
    update = {
        "name": "node",
        "annotations": {"dispatch.io/admission": "1"},
        "labels": {"dispatch.io/epoch": "1"},
        "nodeSelector": {"pool": "a"},
        "tolerations": [{"key": "pool", "operator": "Exists", "effect": "NoSchedule"}],
    }
    env.set_check("tj", "Ready", podSetUpdates=[update])
    assert cond(env.wl("tj"), "Admitted")[0] == "True"
    tj = env.tj("tj")
    assert tj["spec"]["suspend"] is False
    (rjob,) = replicated_jobs(tj)
    pod = rjob["template"]["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"dispatch.io/admission": "1"}
    assert pod["metadata"]["labels"]["dispatch.io/epoch"] == "1"
    assert pod["metadata"]["labels"][kq.PODSET_LABEL] == "node"
    assert pod["spec"] == {
        "nodeSelector": {"pool": "a"},
        "tolerations": [{"key": "pool", "operator": "Exists", "effect": "NoSchedule"}],
    }


def test_ready_checks_pod_set_updates_are_immutable() -> None:
    """pkg/webhooks/workload_webhook.go validateImmutablePodSetUpdates: 403 vworkload.kb.io."""
    env = make(checks=(GATE,))
    env.submit("tj")
    env.set_check("tj", "Ready", podSetUpdates=[{"name": "node", "labels": {"a": "1"}}])
    with pytest.raises(ApiError) as refused:
        env.set_check("tj", "Ready", podSetUpdates=[{"name": "node", "labels": {"a": "2"}}])
    assert refused.value.code == 403
    assert refused.value.message.startswith(
        'admission webhook "vworkload.kb.io" denied the request: '
        "status.admissionChecks[0].podSetUpdates: Invalid value: "
    )


def test_retry_check_releases_quota_requeues_and_bumps_retry_count() -> None:
    """workload_controller.go reconcileCheckBasedEviction (Retry) and evict.go reset [K5, K18]."""
    env = make(checks=(GATE,))
    env.submit("tj")
    uid = meta(env.wl("tj"))["uid"]
    env.set_check("tj", "Retry", message="try later")
    wl = env.wl("tj")
    assert meta(wl)["uid"] == uid
    assert cond(wl, "Evicted") == (
        "False",
        "QuotaReserved",
        'Previously: Evicted due to AdmissionCheck in Retry state: "dispatch-gate" (try later)',
    )
    assert cond(wl, "Requeued") == ("True", "BackoffFinished", "The workload backoff was finished")
    assert cond(wl, "QuotaReserved")[0] == "True"
    (check,) = wl["status"]["admissionChecks"]
    assert (check["state"], check["retryCount"]) == ("Pending", 1)
    assert check["message"] == "Reset to Pending after eviction. Previously: Retry"
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "AdmissionCheck", "underlyingCause": "", "count": 1}
    ]
    assert env.tj("tj")["spec"]["suspend"] is True


def test_retry_after_seconds_holds_the_requeue_until_it_passes() -> None:
    """workload_controller.go: Requeued False/AdmissionCheck until requeueState.requeueAt."""
    env = make(checks=(GATE,))
    env.submit("tj")
    env.set_check("tj", "Retry", requeueAfterSeconds=30)
    wl = env.wl("tj")
    assert cond(wl, "Requeued")[:2] == ("False", "AdmissionCheck")
    assert cond(wl, "QuotaReserved")[:2] == ("False", "PendingEvaluation")
    assert "admission" not in wl["status"]
    env.runner.advance(31)
    wl = env.wl("tj")
    assert cond(wl, "Requeued")[:2] == ("True", "BackoffFinished")
    assert cond(wl, "QuotaReserved")[0] == "True"


def test_rejected_check_evicts_and_deactivates() -> None:
    """workload_controller.go: Rejected → DeactivationTarget → spec.active=false [K1, K18]."""
    env = make(checks=(GATE,))
    env.submit("tj")
    env.set_check("tj", "Rejected", message="no")
    wl = env.wl("tj")
    assert wl["spec"]["active"] is False
    assert condition(wl, "DeactivationTarget") is None
    assert cond(wl, "Evicted") == (
        "True",
        "DeactivatedDueToAdmissionCheck",
        'The workload is deactivated due to AdmissionCheck in Rejected state: "dispatch-gate" (no)',
    )
    assert cond(wl, "QuotaReserved") == ("False", "Deactivated", "The workload is deactivated")
    assert cond(wl, "Requeued")[:2] == ("False", "DeactivatedDueToAdmissionCheck")
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Deactivated", "underlyingCause": "AdmissionCheck", "count": 1}
    ]
    assert env.tj("tj")["spec"]["suspend"] is True


# -- eviction, readmission, holds ---------------------------------------------------------------


def test_preemption_stops_the_job_resets_checks_and_readmits_the_same_workload() -> None:
    """[K6] Preempted/InClusterQueue message; [K5] checks reset, evictions++; [K2, K4] Stop,
    Requeued True, PendingEvaluation; the same Workload is readmitted."""
    env = make(checks=(GATE,))
    env.submit("tj")
    env.set_check("tj", "Ready", podSetUpdates=[{"name": "node", "annotations": {"n": "1"}}])
    env.tj_status("tj", jobsStatus=[{"name": "node", "active": 1, "ready": 1}])
    before = env.wl("tj")
    assert env.tj("tj")["spec"]["suspend"] is False
    kq.preempt(env.cluster, NS, meta(before)["name"])
    env.settle()
    wl = env.wl("tj")
    message = (
        "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to "
        "prioritization in the ClusterQueue; preemptor path: /cluster-queue; preemptee path: "
        "/cluster-queue"
    )
    assert cond(wl, "Evicted") == ("True", "Preempted", message)
    assert cond(wl, "Preempted") == ("True", "InClusterQueue", message)
    (check,) = wl["status"]["admissionChecks"]
    assert check["state"] == "Pending"
    assert check["message"] == "Reset to Pending after eviction. Previously: Ready"
    assert "podSetUpdates" not in check and "retryCount" not in check
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Preempted", "underlyingCause": "", "count": 1}
    ]
    tj = env.tj("tj")
    assert tj["spec"]["suspend"] is True
    assert cond(wl, "QuotaReserved")[0] == "True"  # held while a Job is still active
    assert replicated_jobs(tj) != []
    env.tj_status("tj", jobsStatus=[{"name": "node", "active": 0, "ready": 0}])
    wl = env.wl("tj")
    assert replicated_jobs(env.tj("tj")) == []
    assert cond(wl, "Requeued") == ("True", "Preempted", message)
    # Readmitted at once (the quota is free again), gated again by the reset check.
    assert meta(wl)["uid"] == meta(before)["uid"]
    assert meta(wl)["name"] == meta(before)["name"]
    assert cond(wl, "QuotaReserved")[0] == "True"
    assert cond(wl, "Evicted") == ("False", "QuotaReserved", f"Previously: {message}")
    assert cond(wl, "Preempted")[:2] == ("False", "QuotaReserved")
    assert cond(wl, "Admitted")[:2] == ("False", "UnsatisfiedAdmissionChecks")
    assert env.tj("tj")["spec"]["suspend"] is True
    env.set_check("tj", "Ready", podSetUpdates=[{"name": "node", "annotations": {"n": "2"}}])
    tj = env.tj("tj")
    assert tj["spec"]["suspend"] is False
    (rjob,) = replicated_jobs(tj)
    assert rjob["template"]["spec"]["template"]["metadata"]["annotations"] == {"n": "2"}
    assert len(env.store.select(WORKLOADS)) == 1


def test_preemption_without_checks_passes_through_pending_evaluation() -> None:
    """reconciler.go step 6: QuotaReserved False/PendingEvaluation before the scheduler's pass."""
    env = make()
    env.submit("tj")
    env.tj_status("tj", jobsStatus=[{"name": "node", "active": 1}])
    seen: list[tuple[str, str]] = []

    def watch(event: Any) -> None:
        if event.resource is WORKLOADS:
            c = condition(event.object, "QuotaReserved")
            if c is not None:
                seen.append((str(c["status"]), str(c["reason"])))

    env.store.listeners.append(watch)
    kq.preempt(env.cluster, NS, meta(env.wl("tj"))["name"])
    env.tj_status("tj", jobsStatus=[{"name": "node", "active": 0}])
    assert ("False", "PendingEvaluation") in seen
    assert seen[-1] == ("True", "QuotaReserved")
    assert env.tj("tj")["spec"]["suspend"] is False


def test_deactivation_evicts_without_requeue_and_reactivation_requeues() -> None:
    """[K12] spec.active=false: evicted, not requeued; [K1] Requeued/Reactivated on return."""
    env = make()
    env.submit("tj")
    env.tj_status("tj", jobsStatus=[{"name": "node", "active": 1}])
    uid = meta(env.wl("tj"))["uid"]
    name = meta(env.wl("tj"))["name"]
    kq.deactivate(env.cluster, NS, name)
    env.settle()
    wl = env.wl("tj")
    assert cond(wl, "Evicted") == ("True", "Deactivated", "The workload is deactivated")
    assert env.tj("tj")["spec"]["suspend"] is True
    env.tj_status("tj", jobsStatus=[{"name": "node", "active": 0}])
    env.runner.advance(600)
    wl = env.wl("tj")
    assert cond(wl, "QuotaReserved") == ("False", "Deactivated", "The workload is deactivated")
    assert cond(wl, "Requeued") == ("False", "Deactivated", "The workload is deactivated")
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Deactivated", "underlyingCause": "", "count": 1}
    ]
    assert env.tj("tj")["spec"]["suspend"] is True
    with pytest.raises(FaultError):
        kq.deactivate(env.cluster, NS, name)
    kq.reactivate(env.cluster, NS, name)
    env.settle()
    wl = env.wl("tj")
    assert meta(wl)["uid"] == uid
    assert cond(wl, "Requeued") == ("True", "Reactivated", "The workload was reactivated")
    assert cond(wl, "QuotaReserved")[0] == "True"
    assert env.tj("tj")["spec"]["suspend"] is False


def test_user_suspend_of_an_admitted_trainjob_is_undone() -> None:
    """[inference K4] reconciler.go step 7 starts a suspended job whose Workload is admitted."""
    env = make()
    env.submit("tj")
    made = env.user_update("tj", lambda o: o["spec"].update(suspend=True))
    assert made["spec"]["suspend"] is True
    assert env.tj("tj")["spec"]["suspend"] is False
    assert cond(env.wl("tj"), "Admitted")[0] == "True"


def test_user_unsuspend_of_a_waiting_trainjob_is_undone() -> None:
    """reconciler.go step 8: a running job whose Workload is not admitted is stopped."""
    env = make(cpu=0)
    env.submit("tj")
    env.user_update("tj", lambda o: o["spec"].update(suspend=False))
    assert env.tj("tj")["spec"]["suspend"] is True


def test_workload_admission_cannot_change_once_set_but_can_reset() -> None:
    """[K1] workload_webhook.go validateAdmissionUpdate: 403 vworkload.kb.io."""
    env = make()
    env.submit("tj")
    name = meta(env.wl("tj"))["name"]

    def move(obj: JSON) -> None:
        obj["status"]["admission"]["clusterQueue"] = "elsewhere"

    with pytest.raises(ApiError) as refused:
        env.store.mutate(WORKLOADS, NS, name, move, subresource="status", internal=False)
    assert refused.value.code == 403
    assert refused.value.message.startswith(
        'admission webhook "vworkload.kb.io" denied the request: status.admission: Invalid value:'
    )
    assert refused.value.message.endswith(": field is immutable")
    cleared = env.store.mutate(
        WORKLOADS, NS, name, lambda o: o["status"].pop("admission"), subresource="status"
    )
    assert "admission" not in cleared["status"]


def test_faults_refuse_what_they_cannot_hit() -> None:
    """preempt needs a Workload holding quota; deactivate an active one."""
    env = make(cpu=0)
    env.submit("tj")
    name = meta(env.wl("tj"))["name"]
    with pytest.raises(FaultError):
        kq.preempt(env.cluster, NS, name)
    with pytest.raises(FaultError):
        kq.preempt(env.cluster, NS, "nothing")
    with pytest.raises(FaultError):
        kq.reactivate(env.cluster, NS, name)


def test_same_seed_same_objects() -> None:
    """Determinism: two runs with the same calls store identical Workloads and TrainJobs."""

    def run() -> list[JSON]:
        env = make(cpu=2, checks=(GATE,))
        env.submit("a")
        env.submit("b")
        env.set_check("a", "Retry")
        return [env.wl("a"), env.wl("b"), env.tj("a"), env.tj("b")]

    assert run() == run()


def test_missing_local_queue_is_misconfigured() -> None:
    """workload_controller.go getQueueBlocker: "LocalQueue <name> doesn't exist"."""
    env = make()
    env.store.create(TRAINJOBS, NS, trainjob("lost", "1", 1, queue="nowhere"))
    env.settle()
    assert cond(env.wl("lost"), "QuotaReserved") == (
        "False",
        "Misconfigured",
        "LocalQueue nowhere doesn't exist",
    )
    assert env.tj("lost")["spec"]["suspend"] is True


def test_queue_status_counts_pending_reserving_and_admitted() -> None:
    """ClusterQueue/LocalQueue status counts and their Active conditions (v1beta2 types)."""
    env = make(cpu=2, checks=(GATE,))
    env.submit("a")
    env.clock.advance(1)
    env.submit("b")
    cq = env.store.get(CLUSTERQUEUES, "", "cluster-queue")["status"]
    lq = env.store.get(LOCALQUEUES, NS, "user-queue")["status"]
    for status in (cq, lq):
        counts = (status["pendingWorkloads"], status["reservingWorkloads"])
        assert counts == (1, 1)
        assert status["admittedWorkloads"] == 0
    assert cond({"status": cq}, "Active") == ("True", "Ready", "Can admit new workloads")
    assert cond({"status": lq}, "Active") == (
        "True",
        "Ready",
        "Can submit new workloads to localQueue",
    )
    env.set_check("a", "Ready")
    lq = env.store.get(LOCALQUEUES, NS, "user-queue")["status"]
    assert lq["admittedWorkloads"] == 1
    (flavor,) = env.store.get(CLUSTERQUEUES, "", "cluster-queue")["status"]["flavorsReservation"]
    assert flavor["resources"][0] == {"name": "cpu", "total": "2", "borrowed": "0"}


def test_deleting_a_trainjob_removes_its_workload_and_frees_quota() -> None:
    """The Workload's controller owner reference [K4]: garbage-collected with the TrainJob."""
    env = make(cpu=2, gc=True)
    env.submit("first", nodes=2)
    env.clock.advance(1)
    env.submit("second", nodes=2)
    assert cond(env.wl("second"), "QuotaReserved")[1] == "WaitingForQuota"
    env.store.delete(TRAINJOBS, NS, "first")
    env.settle()
    assert [meta(w)["name"] for w in env.store.select(WORKLOADS)] == [
        meta(env.wl("second"))["name"]
    ]
    assert cond(env.wl("second"), "QuotaReserved")[0] == "True"


def test_admission_gated_by_format_is_validated_at_creation() -> None:
    """validateAdmissionGatedByAnnotationFormat [K9]: domain-prefixed, no duplicates."""
    env = make()
    with pytest.raises(ApiError) as refused:
        env.submit("dup", gate="a.io/x,a.io/x")
    assert refused.value.code == 403
    assert refused.value.message == (
        'admission webhook "vtrainjob.kb.io" denied the request: '
        "metadata.annotations[kueue.x-k8s.io/admission-gated-by]: Invalid value: "
        '"a.io/x,a.io/x": duplicate gate name: a.io/x'
    )
    with pytest.raises(ApiError) as bare:
        env.submit("bare", gate="nopath")
    assert bare.value.message.endswith(
        'Invalid value: "nopath": must be a domain-prefixed path (such as "acme.io/foo")'
    )
    assert env.store.peek(TRAINJOBS, NS, "dup") is None


def complete(env: Env, name: str) -> None:
    env.tj_status(
        name,
        conditions=[
            {
                "type": "Complete",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": "2026-01-01T00:00:09Z",
            }
        ],
    )


def test_pending_workloads_are_admitted_in_creation_then_name_order() -> None:
    """The simulator's queue order: creation time, then namespace and name (BestEffortFIFO).

    A Finished Workload keeps ``QuotaReserved=True`` (finish.go sets only ``Finished``) but no
    longer counts against the quota.
    """
    env = make(cpu=2)
    env.submit("blocker", nodes=2)
    env.clock.advance(1)
    env.submit("c", nodes=2)
    env.clock.advance(1)
    env.submit("b", nodes=2)
    env.submit("a", nodes=2)

    def reserved() -> list[str]:
        return sorted(
            n
            for n in ("blocker", "a", "b", "c")
            if kq.has_quota(env.wl(n)) and not kq.is_finished(env.wl(n))
        )

    assert reserved() == ["blocker"]
    complete(env, "blocker")
    assert reserved() == ["c"]
    complete(env, "c")
    assert reserved() == ["a"]
    complete(env, "a")
    assert reserved() == ["b"]


def standalone_workload(name: str, pods: int, priority: int) -> JSON:
    """A Workload made directly (no job), as another user may make one for Kueue to admit."""
    return {
        "apiVersion": WORKLOADS.api_version,
        "kind": WORKLOADS.kind,
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "active": True,
            "priority": priority,
            "queueName": "user-queue",
            "podSets": [
                {
                    "name": "main",
                    "count": pods,
                    "template": {"spec": {"containers": [{"name": "main", "image": "pause"}]}},
                }
            ],
        },
    }


def test_a_cluster_queue_covering_pods_counts_each_podsets_pods() -> None:
    """flavorassigner.go: with ``pods`` covered, each podSet asks for its count of pods, whatever
    its containers request; a Workload that would pass the pods quota waits for it."""
    made = kq.bootstrap(QueueConfig(pods=7), [NodeConfig("node-0")])
    cq = next(obj for resource, obj in made if resource is CLUSTERQUEUES)
    (group,) = cq["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "pods"]
    assert group["flavors"][0]["resources"][-1] == {"name": "pods", "nominalQuota": "7"}
    env = make(pods=3)
    env.submit("tj", cpu="1", nodes=2)
    (assigned,) = env.wl("tj")["status"]["admission"]["podSetAssignments"]
    assert assigned["resourceUsage"]["pods"] == "2"
    assert assigned["flavors"]["pods"] == "default-flavor"
    env.store.create(WORKLOADS, NS, standalone_workload("other", 2, 0))
    env.settle()
    other = env.store.get(WORKLOADS, NS, "other")
    status, reason, message = cond(other, "QuotaReserved")
    assert (status, reason) == ("False", "WaitingForQuota")
    assert "insufficient unused quota for pods in flavor default-flavor, 1 more needed" in message


def test_a_preempted_workload_waits_while_its_higher_priority_preemptor_holds_quota() -> None:
    """cluster_queue.go baseCompareFunc: priority first, then time; preemption.go: the message
    names the preemptor; the preempted Workload stays Evicted/Preempted, Requeued/Preempted and
    WaitingForQuota until the preemptor goes, then is readmitted."""
    env = make(pods=2)
    env.submit("tj", cpu="1", nodes=2)
    env.tj_status("tj", jobsStatus=[{"name": "node", "active": 1}])
    victim = meta(env.wl("tj"))["name"]
    made = env.store.create(WORKLOADS, NS, standalone_workload("preemptor", 2, 1))
    env.settle()
    assert cond(env.store.get(WORKLOADS, NS, "preemptor"), "QuotaReserved")[1] == "WaitingForQuota"
    kq.preempt(env.cluster, NS, victim, "preemptor")
    env.settle()
    assert f"(UID: {meta(made)['uid']}, JobUID: UNKNOWN)" in cond(env.wl("tj"), "Evicted")[2]
    env.tj_status("tj", jobsStatus=[{"name": "node", "active": 0}])
    env.runner.advance(60)
    wl = env.wl("tj")
    assert cond(env.store.get(WORKLOADS, NS, "preemptor"), "QuotaReserved")[0] == "True"
    assert cond(wl, "QuotaReserved")[:2] == ("False", "WaitingForQuota")
    assert cond(wl, "Evicted")[:2] == ("True", "Preempted")
    assert cond(wl, "Requeued")[:2] == ("True", "Preempted")
    assert env.tj("tj")["spec"]["suspend"] is True
    env.store.delete(WORKLOADS, NS, "preemptor")
    env.settle()
    wl = env.wl("tj")
    assert cond(wl, "QuotaReserved")[0] == "True"
    assert cond(wl, "Evicted")[:2] == ("False", "QuotaReserved")
    assert env.tj("tj")["spec"]["suspend"] is False
