"""Kueue (main at ff69552e, API kueue.x-k8s.io/v1beta2) for TrainJobs: Workloads, quota, checks.

Three controllers, run in this order (``CONTROLLERS``):

- :class:`KueueJobController` (pkg/controller/jobframework/reconciler.go [K4] with the TrainJob
  integration pkg/controller/jobs/trainjob/trainjob_controller.go [K2]): one Workload per
  managed TrainJob, ``Finished`` when the TrainJob ends, ``RunWithPodSetsInfo`` when the
  Workload is admitted, ``Stop`` and the clearing of the admission when it is evicted.
- :class:`WorkloadController` (pkg/controller/core/workload_controller.go [K10]): deactivation
  and reactivation, ``admission-gated-by``, the admission-check states, check-based eviction,
  the ``Admitted`` condition.
- :class:`KueueScheduler` (pkg/scheduler): quota reservation in a ClusterQueue, by priority
  then FIFO by creation time then namespace and name; no preemption of its own (the ClusterQueue's
  ``withinClusterQueue`` is ``Never``): :func:`preempt` is the fault that evicts as the
  preemptor would.

Feature gates as at the pin [K11]: ``AdmissionGatedBy`` and ``UnadmittedWorkloadsObservability``
on, ``UnadmittedWorkloadsExplicitStatus`` and ``ShortWorkloadNames`` off,
``AssignQueueLabelsForPods`` on. Not modelled: cohorts and borrowing, priority classes and the
scheduler's own priority-based preemption (``spec.priority`` orders the queue only),
``waitForPodsReady``, TAS, MultiKueue, the ``resource-in-use``
finalizer, AdmissionCheck ``Active`` gating the ClusterQueue, queue ``stopPolicy``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any, Final

from simulators.kubernetes import objects, quantity
from simulators.kubernetes.config import NodeConfig, QueueConfig
from simulators.kubernetes.controllers.base import Cluster, Controller
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import (
    JSON,
    annotations_of,
    clone,
    condition,
    controller_of,
    ensure_status,
    is_true,
    labels_of,
    meta,
    name_of,
    namespace_of,
    owner_reference,
    parse_timestamp,
    remove_condition,
    timestamp,
    uid_of,
)
from simulators.kubernetes.quantity import format_amount, resource_value, round_up
from simulators.kubernetes.resources import (
    ADMISSIONCHECKS,
    CLUSTERQUEUES,
    LOCALQUEUES,
    RESOURCEFLAVORS,
    TRAINJOBS,
    WORKLOADS,
    ResourceType,
)
from simulators.kubernetes.store import Event, Key, Store
from simulators.kubernetes.validation import is_dns1123_label

PODS_RESOURCE: Final = "pods"
"""The resource a ClusterQueue may cover to count pods (corev1.ResourcePods; at the pin,
pkg/scheduler/flavorassigner/flavorassigner.go and pkg/resources/requests.go)."""
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
"""pkg/controller/constants/constants.go QueueLabel [K8]."""
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
"""pkg/controller/constants/constants.go JobUIDLabel [K8]."""
GATE_ANNOTATION: Final = "kueue.x-k8s.io/admission-gated-by"
"""pkg/constants/constants.go AdmissionGatedByAnnotation [K8, K9]."""
PODSET_LABEL: Final = "kueue.x-k8s.io/podset"
LOCAL_QUEUE_LABEL: Final = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_LABEL: Final = "kueue.x-k8s.io/cluster-queue-name"
"""pkg/constants/constants.go: the pod labels RunWithPodSetsInfo adds (AssignQueueLabelsForPods)."""
PATCH_MANAGER: Final = "kueue.x-k8s.io/manager"
"""trainjob_controller.go runtimePatchManagerName [K2, K3]."""
TRAINJOB_KIND: Final = "TrainJob"
TRAINJOB_GROUP: Final = "trainer.kubeflow.org"
UNMANAGED_NAMESPACES: Final = frozenset({"kube-system", "kueue-system"})
"""The default managedJobsNamespaceSelector and webhook namespaceSelector leave these out."""

HASH_LENGTH: Final = 5
MAX_WORKLOAD_NAME: Final = 253
"""workload_names.go longMaxWorkloadNameLength (63 only with the alpha ShortWorkloadNames) [K7]."""

# Workload condition types and reasons (apis/kueue/v1beta2/workload_types.go) [K1].
QUOTA_RESERVED: Final = "QuotaReserved"
ADMITTED: Final = "Admitted"
EVICTED: Final = "Evicted"
PREEMPTED: Final = "Preempted"
REQUEUED: Final = "Requeued"
FINISHED: Final = "Finished"
OWNER_NOT_FOUND: Final = "OwnerNotFound"
DEACTIVATION_TARGET: Final = "DeactivationTarget"
PENDING_EVALUATION: Final = "PendingEvaluation"
WAITING_FOR_QUOTA: Final = "WaitingForQuota"
EXCEEDS_MAX_QUOTA: Final = "ExceedsMaxQuota"
MISCONFIGURED: Final = "Misconfigured"
ADMISSION_GATED: Final = "AdmissionGated"
DEACTIVATED: Final = "Deactivated"
REACTIVATED: Final = "Reactivated"
BACKOFF_FINISHED: Final = "BackoffFinished"
EVICTED_BY_PREEMPTION: Final = "Preempted"
EVICTED_BY_NODE_FAILURES: Final = "NodeFailures"
EVICTED_BY_ADMISSION_CHECK: Final = "AdmissionCheck"
EVICTED_BY_PODS_READY_TIMEOUT: Final = "PodsReadyTimeout"
IN_CLUSTER_QUEUE: Final = "InClusterQueue"
SCHEDULER_REASONS: Final = frozenset(
    {
        WAITING_FOR_QUOTA,
        "NoMatchingFlavor",
        EXCEEDS_MAX_QUOTA,
        "TopologyPlacementFailed",
        "WaitingForPreemptedWorkloads",
        "WaitingForPodsReady",
        PENDING_EVALUATION,
    }
)
"""workload_controller.go schedulerSetReasons: kept until the scheduler's next pass."""

PENDING: Final = "Pending"
READY: Final = "Ready"
RETRY: Final = "Retry"
REJECTED: Final = "Rejected"
"""apis/kueue/v1beta2/admissioncheck_types.go CheckState values [K18]."""

PREEMPTION_REASONS: Final = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}
"""pkg/scheduler/preemption/preemption.go HumanReadablePreemptionReasons [K6]."""

RenderJobSet = Callable[[Store, JSON], "JSON | None"]


# -- names and small readers -------------------------------------------------------------------


def workload_name(
    owner_name: str,
    owner_uid: str,
    kind: str = TRAINJOB_KIND,
    group: str = TRAINJOB_GROUP,
    max_length: int = MAX_WORKLOAD_NAME,
) -> str:
    """``<lower(kind)>-<name>`` cut to fit, ``-``, then 5 hex of sha1("kind\\ngroup\\nname\\nuid").

    pkg/controller/jobframework/workload_names.go GetWorkloadNameForOwnerWithGVK [K7]: the prefix
    is truncated to ``max_length - 1 - 5`` characters; the hash is of the owner's GVK kind and
    group (not the version), name and UID, joined by newlines.
    """
    prefix = f"{kind.lower()}-{owner_name}"[: max_length - 1 - HASH_LENGTH]
    digest = hashlib.sha1(f"{kind}\n{group}\n{owner_name}\n{owner_uid}".encode()).hexdigest()
    return f"{prefix}-{digest[:HASH_LENGTH]}"


def queue_name(obj: JSON) -> str:
    return str(labels_of(obj).get(QUEUE_LABEL, ""))


def gate_of(obj: JSON) -> str:
    return str(annotations_of(obj).get(GATE_ANNOTATION, ""))


def is_suspended(trainjob: JSON) -> bool:
    return bool(trainjob.get("spec", {}).get("suspend", False))


def is_job_active(trainjob: JSON) -> bool:
    """TrainJob.IsActive: any ``status.jobsStatus[].active > 0`` [K2]."""
    for job in trainjob.get("status", {}).get("jobsStatus") or []:
        if isinstance(job, dict) and int(job.get("active") or 0) > 0:
            return True
    return False


def job_finished(trainjob: JSON) -> tuple[str, bool, bool]:
    """TrainJob.Finished: (message, success, finished) from ``Complete``/``Failed`` [K2]."""
    done = condition(trainjob, "Complete")
    if done is not None and done.get("status") == "True":
        return str(done.get("message", "")), True, True
    failed = condition(trainjob, "Failed")
    if failed is not None and failed.get("status") == "True":
        return str(failed.get("message", "")), False, True
    return "", False, False


def is_active(wl: JSON) -> bool:
    return bool(wl.get("spec", {}).get("active", True))


def has_quota(wl: JSON) -> bool:
    return is_true(wl, QUOTA_RESERVED)


def is_admitted(wl: JSON) -> bool:
    return is_true(wl, ADMITTED)


def is_finished(wl: JSON) -> bool:
    return is_true(wl, FINISHED)


def is_evicted(wl: JSON) -> bool:
    return is_true(wl, EVICTED)


def checks_of(wl: JSON) -> list[JSON]:
    checks = wl.get("status", {}).get("admissionChecks")
    return [c for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []


def find_workload(store: Store, trainjob: JSON) -> JSON | None:
    """The Workload the TrainJob controls (by owner uid), as stored."""
    for resource, obj in store.dependents(uid_of(trainjob)):
        if resource is WORKLOADS:
            ref = controller_of(obj)
            if ref is not None and ref.get("uid") == uid_of(trainjob):
                return obj
    return None


def kueue_patch(trainjob: JSON) -> JSON | None:
    """The TrainJob's runtime patch whose manager is Kueue's [K2]."""
    for patch in trainjob.get("spec", {}).get("runtimePatches") or []:
        if isinstance(patch, dict) and patch.get("manager") == PATCH_MANAGER:
            return patch
    return None


def empty_kueue_patch() -> JSON:
    """What the webhook appends: ``trainingRuntimeSpec.template.spec`` empty [K3]."""
    return {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}


# -- conditions (apimachinery meta.SetStatusCondition, with observedGeneration) ----------------


def set_condition(
    obj: JSON, kind: str, status: bool, reason: str, message: str, now: float
) -> bool:
    """:func:`objects.set_condition` with ``observedGeneration``, as Kueue writes its conditions."""
    return objects.set_condition(obj, kind, status, reason, message, now, observed_generation=True)


def write_workload_status(store: Store, wl: JSON, change: Callable[[JSON], object]) -> None:
    """Apply ``change`` to the stored Workload through its status subresource."""

    def apply(obj: JSON) -> None:
        change(obj)

    store.mutate(
        WORKLOADS,
        namespace_of(wl),
        name_of(wl),
        apply,
        subresource="status",
        internal=True,
        copy=False,
    )


def sync_admitted(wl: JSON, now: float) -> bool:
    """pkg/workload/admissionchecks.go SyncAdmittedCondition (UnadmittedWorkloadsObservability)."""
    reserved = condition(wl, QUOTA_RESERVED)
    admitted = condition(wl, ADMITTED)
    if reserved is None and admitted is None:
        return False
    has_reservation = has_quota(wl)
    all_ready = all(c.get("state") == READY for c in checks_of(wl))
    if not has_reservation:
        status, reason, message = False, "NoReservation", "The workload has no reservation"
    elif not all_ready:
        status, reason, message = (
            False,
            "UnsatisfiedAdmissionChecks",
            "The workload has not all checks ready",
        )
    else:
        status, reason, message = True, "Admitted", "The workload is admitted"
    if is_admitted(wl) and not status and admitted is not None:
        since = parse_timestamp(str(admitted["lastTransitionTime"]))
        status_obj = ensure_status(wl)
        status_obj["accumulatedPastExecutionTimeSeconds"] = int(
            status_obj.get("accumulatedPastExecutionTimeSeconds", 0)
        ) + int(now - since)
    return set_condition(wl, ADMITTED, status, reason, message, now)


def unset_quota(wl: JSON, reason: str, message: str, now: float) -> bool:
    """pkg/workload/workload.go UnsetQuotaReservationWithCondition: False, admission cleared."""
    changed = set_condition(wl, QUOTA_RESERVED, False, reason, message, now)
    if wl.get("status", {}).get("admission") is not None:
        del wl["status"]["admission"]
        changed = True
    if sync_admitted(wl, now):
        changed = True
    return changed


def set_requeued(wl: JSON, reason: str, message: str, status: bool, now: float) -> bool:
    """pkg/workload/workload.go SetRequeuedCondition."""
    return set_condition(wl, REQUEUED, status, reason, message, now)


def evict(wl: JSON, reason: str, message: str, cause: str, now: float) -> None:
    """pkg/workload/evict/evict.go Evict's status change [K5].

    ``Evicted=True`` (a deactivation with a cause gets ``DeactivatedDueTo<cause>``), cluster
    nomination and unhealthy nodes cleared, every non-Pending check reset to Pending (a Retry
    check's ``retryCount`` bumped, others' dropped, ``podSetUpdates`` dropped), and
    ``schedulingStats.evictions[{reason, underlyingCause}].count`` incremented.
    """
    eviction_reason = f"{reason}DueTo{cause}" if reason == DEACTIVATED and cause else reason
    set_condition(wl, EVICTED, True, eviction_reason, message, now)
    status = ensure_status(wl)
    for key in ("clusterName", "nominatedClusterNames", "unhealthyNodes"):
        status.pop(key, None)
    checks = checks_of(wl)
    for index, check in enumerate(checks):
        state = check.get("state")
        if state == PENDING:
            continue
        reset: JSON = {
            "name": check.get("name"),
            "state": PENDING,
            "lastTransitionTime": timestamp(now),
            "message": f"Reset to Pending after eviction. Previously: {state}",
        }
        if "requeueAfterSeconds" in check:
            reset["requeueAfterSeconds"] = check["requeueAfterSeconds"]
        if state == RETRY:
            reset["retryCount"] = int(check.get("retryCount") or 0) + 1
        checks[index] = reset
    if checks:
        status["admissionChecks"] = checks
    evictions = status.setdefault("schedulingStats", {}).setdefault("evictions", [])
    for entry in evictions:
        if entry.get("reason") == reason and entry.get("underlyingCause", "") == cause:
            entry["count"] = int(entry.get("count", 0)) + 1
            break
    else:
        evictions.append({"reason": reason, "underlyingCause": cause, "count": 1})


def preemption_message(
    preemptor_uid: str,
    preemptor_job_uid: str,
    reason: str,
    preemptor_path: str,
    preemptee_path: str,
) -> str:
    """pkg/scheduler/preemption/preemption.go preemptionMessage [K6]."""
    return (
        f"Preempted to accommodate a workload (UID: {preemptor_uid or 'UNKNOWN'}, JobUID: "
        f"{preemptor_job_uid or 'UNKNOWN'}) due to {PREEMPTION_REASONS.get(reason, '')}; "
        f"preemptor path: {preemptor_path or 'UNKNOWN'}; "
        f"preemptee path: {preemptee_path or 'UNKNOWN'}"
    )


def _checks_message(checks: list[JSON], state: str) -> str:
    """workload_controller.go buildAdmissionChecksMessage."""
    ordered = sorted(checks, key=lambda c: str(c.get("name", "")))
    parts = [
        f'"{c.get("name")}" ({c["message"]})' if c.get("message") else f'"{c.get("name")}"'
        for c in ordered
    ]
    noun = "AdmissionChecks" if len(ordered) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"


# -- quantities --------------------------------------------------------------------------------


def pod_requests(template: JSON) -> dict[str, int]:
    """A pod template's requests as Kueue's amounts (pkg/workload/resources.go, limits standing in
    for requests; :func:`simulators.kubernetes.quantity.pod_requests`)."""
    return {k: amount(k, v) for k, v in quantity.pod_requests(template).items()}


def amount(resource: str, value: Any) -> int:
    """Kueue's int64 amount of a quantity or an exact number: milli-units for cpu, else units."""
    if isinstance(value, Fraction):
        return round_up(value * 1000 if resource == "cpu" else value)
    return resource_value(resource, value)


def pod_sets(jobset: JSON) -> list[JSON]:
    """pkg/controller/jobs/jobset PodSets: one per replicatedJob, count = replicas x pods [K2].

    Pods per replica: ``parallelism`` (default 1), or ``completions`` when smaller.
    """
    out: list[JSON] = []
    for rjob in jobset.get("spec", {}).get("replicatedJobs") or []:
        job_spec = rjob.get("template", {}).get("spec", {})
        parallelism = int(job_spec.get("parallelism", 1))
        completions = int(job_spec.get("completions", parallelism))
        per_replica = min(parallelism, completions)
        out.append(
            {
                "name": rjob.get("name"),
                "template": clone(job_spec.get("template", {})),
                "count": int(rjob.get("replicas", 1)) * per_replica,
            }
        )
    return out


# -- the objects the simulator starts with ------------------------------------------------------


def bootstrap(config: QueueConfig, nodes: Iterable[NodeConfig]) -> list[tuple[ResourceType, JSON]]:
    """The ResourceFlavor, AdmissionChecks, ClusterQueue and LocalQueue of a QueueConfig, in order.

    The ClusterQueue's nominal cpu/memory quota is the config's, or else the nodes' total (plus
    ``nvidia.com/gpu`` when the nodes have any, and ``pods`` when the config gives a pods
    quota); it lists the config's AdmissionChecks in ``admissionChecksStrategy`` (v1beta2
    dropped the plain ``admissionChecks`` list).
    """
    listed = list(nodes)
    cpu = config.cpu if config.cpu is not None else sum(int(n.cpu) for n in listed)
    memory = config.memory if config.memory is not None else sum(int(n.memory) for n in listed)
    gpu = sum(int(n.gpu) for n in listed)
    covered = ["cpu", "memory"]
    quotas: list[JSON] = [
        {"name": "cpu", "nominalQuota": format_amount("cpu", int(cpu) * 1000)},
        {"name": "memory", "nominalQuota": format_amount("memory", int(memory))},
    ]
    if gpu:
        covered.append("nvidia.com/gpu")
        quotas.append({"name": "nvidia.com/gpu", "nominalQuota": str(gpu)})
    if config.pods is not None:
        covered.append(PODS_RESOURCE)
        quotas.append({"name": PODS_RESOURCE, "nominalQuota": str(config.pods)})
    cq_spec: JSON = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {"coveredResources": covered, "flavors": [{"name": config.flavor, "resources": quotas}]}
        ],
        "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
    }
    if config.admission_checks:
        cq_spec["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": name} for name in config.admission_checks]
        }
    out: list[tuple[ResourceType, JSON]] = [
        (
            RESOURCEFLAVORS,
            {
                "apiVersion": RESOURCEFLAVORS.api_version,
                "kind": RESOURCEFLAVORS.kind,
                "metadata": {"name": config.flavor},
                "spec": {},
            },
        )
    ]
    for name in config.admission_checks:
        out.append(
            (
                ADMISSIONCHECKS,
                {
                    "apiVersion": ADMISSIONCHECKS.api_version,
                    "kind": ADMISSIONCHECKS.kind,
                    "metadata": {"name": name},
                    "spec": {"controllerName": config.admission_check_controller},
                },
            )
        )
    out.append(
        (
            CLUSTERQUEUES,
            {
                "apiVersion": CLUSTERQUEUES.api_version,
                "kind": CLUSTERQUEUES.kind,
                "metadata": {"name": config.cluster_queue},
                "spec": cq_spec,
            },
        )
    )
    out.append(
        (
            LOCALQUEUES,
            {
                "apiVersion": LOCALQUEUES.api_version,
                "kind": LOCALQUEUES.kind,
                "metadata": {"name": config.local_queue, "namespace": config.namespace},
                "spec": {"clusterQueue": config.cluster_queue},
            },
        )
    )
    return out


# -- the job reconciler (jobframework + TrainJob integration) -----------------------------------


RETRY_SECONDS: Final = 1.0
"""Virtual seconds before a reconcile whose write was refused runs again (controller-runtime
requeues a failed reconcile with back-off; a refusal here is a webhook's, never a conflict)."""


class _Retrying(Controller):
    """A controller whose ``step`` may be refused by a webhook: it is then retried later."""

    def step(self, namespace: str, name: str) -> float | None:
        raise NotImplementedError

    def reconcile(self, namespace: str, name: str) -> float | None:
        try:
            return self.step(namespace, name)
        except ApiError:
            return self.cluster.now() + RETRY_SECONDS


def _default_render(store: Store, trainjob: JSON) -> JSON | None:
    from simulators.kubernetes.controllers import trainer

    render: RenderJobSet = trainer.render_jobset
    return render(store, trainjob)


class KueueJobController(_Retrying):
    """jobframework's JobReconciler for TrainJobs [K4, K2]: one reconcile, one step.

    - no Workload: create it (``trainjob-<name>-<hash>``, label ``job-uid``, controller owner
      reference, ``spec.podSets`` from the JobSet the Trainer would build) once no Job is active;
    - the TrainJob ``Complete``/``Failed``: the Workload ``Finished`` (``Succeeded``/``Failed``,
      the TrainJob's message);
    - ``admission-gated-by`` copied from the TrainJob to the Workload (removed with it);
    - the Workload ``Evicted``: ``Stop`` (suspend; once no ``jobsStatus[].active > 0``, clear the
      ``replicatedJobs`` of Kueue's patch), then ``Requeued`` (True only after ``Preempted`` or
      ``NodeFailures``) and ``QuotaReserved=False/PendingEvaluation`` with the admission cleared;
    - suspended and the Workload ``Admitted``: ``RunWithPodSetsInfo`` (Kueue's patch written while
      still suspended, then ``suspend=false`` as a second update) — this is also what undoes a
      user's suspend of an admitted TrainJob [inference from K4: step 7 starts any suspended job
      whose Workload is admitted];
    - running and the Workload not admitted: ``Stop`` ("Not admitted by cluster queue").
    """

    name = "kueue-job"
    primary = TRAINJOBS
    watches = (WORKLOADS,)

    def __init__(
        self,
        cluster: Cluster,
        render_jobset: RenderJobSet | None = None,
        manage_jobs_without_queue_name: bool = False,
    ) -> None:
        super().__init__(cluster)
        self.render_jobset: RenderJobSet = render_jobset or _default_render
        self.manage_jobs_without_queue_name = manage_jobs_without_queue_name

    def managed(self, trainjob: JSON) -> bool:
        if namespace_of(trainjob) in UNMANAGED_NAMESPACES:
            return False
        return bool(queue_name(trainjob)) or self.manage_jobs_without_queue_name

    def step(self, namespace: str, name: str) -> float | None:
        trainjob = self.store.peek(TRAINJOBS, namespace, name)
        if trainjob is None or meta(trainjob).get("deletionTimestamp"):
            return None
        if not self.managed(trainjob):
            return None
        now = self.cluster.now()
        wl = find_workload(self.store, trainjob)
        if wl is not None and is_finished(wl):
            return None
        message, success, finished = job_finished(trainjob)
        if finished:
            if wl is not None:
                self._finish(wl, "Succeeded" if success else "Failed", message, now)
            return None
        if wl is None:
            if not is_job_active(trainjob):
                self._create_workload(trainjob)
            return None
        if self._propagate_gate(trainjob, wl):
            return None
        if is_evicted(wl):
            evicted = condition(wl, EVICTED) or {}
            if not self._stop(trainjob, wl) or not has_quota(wl):
                return None
            reason = str(evicted.get("reason", ""))
            text = str(evicted.get("message", ""))

            def clear(obj: JSON) -> None:
                requeued = reason in (EVICTED_BY_PREEMPTION, EVICTED_BY_NODE_FAILURES)
                set_requeued(obj, reason, text, requeued, now)
                unset_quota(obj, PENDING_EVALUATION, text, now)

            write_workload_status(self.store, wl, clear)
            return None
        if is_suspended(trainjob):
            if is_admitted(wl):
                self._start(trainjob, wl)
            elif not has_quota(wl) and queue_name(trainjob) != wl.get("spec", {}).get("queueName"):
                self._set_queue(wl, queue_name(trainjob))
            return None
        if not is_admitted(wl):
            self._stop(trainjob, wl)
        return None

    # -- steps ------------------------------------------------------------------------------

    def _finish(self, wl: JSON, reason: str, message: str, now: float) -> None:
        """pkg/workload/finish/finish.go Finish: ``Finished=True`` with the job's message [K4]."""
        write_workload_status(
            self.store, wl, lambda obj: set_condition(obj, FINISHED, True, reason, message, now)
        )

    def _create_workload(self, trainjob: JSON) -> None:
        """jobframework ConstructWorkload + prepareWorkload [K4, K7, K8]."""
        jobset = self.render_jobset(self.store, trainjob)
        if jobset is None:
            return
        m: JSON = {
            "name": workload_name(name_of(trainjob), uid_of(trainjob)),
            "namespace": namespace_of(trainjob),
            "labels": {JOB_UID_LABEL: uid_of(trainjob)},
            "ownerReferences": [owner_reference(trainjob, controller=True, block=True)],
        }
        gate = gate_of(trainjob)
        if gate:
            m["annotations"] = {GATE_ANNOTATION: gate}
        wl: JSON = {
            "apiVersion": WORKLOADS.api_version,
            "kind": WORKLOADS.kind,
            "metadata": m,
            "spec": {
                "active": True,
                "podSets": pod_sets(jobset),
                "priority": 0,
                "queueName": queue_name(trainjob),
            },
        }
        self.store.create(WORKLOADS, namespace_of(trainjob), wl, internal=True, copy=False)

    def _propagate_gate(self, trainjob: JSON, wl: JSON) -> bool:
        """reconciler.go PropagateAdmissionGatedByAnnotation: the Workload follows the job.

        An empty value counts as none: the Workload's annotation is then removed.
        """
        wanted = gate_of(trainjob)
        if wanted == gate_of(wl):
            return False

        def change(obj: JSON) -> None:
            annotations = meta(obj).setdefault("annotations", {})
            if wanted:
                annotations[GATE_ANNOTATION] = wanted
            else:
                annotations.pop(GATE_ANNOTATION, None)
                if not annotations:
                    del meta(obj)["annotations"]

        self.store.mutate(
            WORKLOADS, namespace_of(wl), name_of(wl), change, internal=True, copy=False
        )
        return True

    def _set_queue(self, wl: JSON, queue: str) -> None:
        """reconciler.go handleQueueNameChange: a suspended job's new queue moves its Workload."""

        def change(obj: JSON) -> None:
            obj.setdefault("spec", {})["queueName"] = queue

        self.store.mutate(
            WORKLOADS, namespace_of(wl), name_of(wl), change, internal=True, copy=False
        )

    def _stop(self, trainjob: JSON, wl: JSON) -> bool:
        """TrainJob.Stop [K2]: suspend; wait for no active Job; clear Kueue's replicatedJobs.

        Returns whether the job is stopped (suspended, inactive, patch restored).
        """
        del wl
        namespace, name = namespace_of(trainjob), name_of(trainjob)
        if not is_suspended(trainjob):

            def suspend(obj: JSON) -> None:
                obj.setdefault("spec", {})["suspend"] = True

            self.store.mutate(TRAINJOBS, namespace, name, suspend, internal=True, copy=False)
            return False
        if is_job_active(trainjob):
            return False
        patch = kueue_patch(trainjob)
        spec = (patch or {}).get("trainingRuntimeSpec", {}).get("template", {}).get("spec", {})
        if isinstance(spec, dict) and "replicatedJobs" in spec:

            def restore(obj: JSON) -> None:
                found = kueue_patch(obj)
                if found is not None:
                    found["trainingRuntimeSpec"]["template"]["spec"].pop("replicatedJobs", None)

            self.store.mutate(TRAINJOBS, namespace, name, restore, internal=True, copy=False)
        return patch is not None

    def _start(self, trainjob: JSON, wl: JSON) -> None:
        """reconciler.go startJob → TrainJob.RunWithPodSetsInfo [K2].

        Kueue's patch gets one ``replicatedJobs`` entry per podSet (pod-template labels and
        annotations, nodeSelector, tolerations): an update while still suspended (the Trainer's
        webhook allows patch changes only then), then a second update with ``suspend=false``.
        """
        namespace, name = namespace_of(trainjob), name_of(trainjob)
        if kueue_patch(trainjob) is None:
            return
        entries = self._replicated_job_patches(wl)

        def write_patch(obj: JSON) -> None:
            found = kueue_patch(obj)
            if found is not None:
                spec = (
                    found.setdefault("trainingRuntimeSpec", {})
                    .setdefault("template", {})
                    .setdefault("spec", {})
                )
                spec["replicatedJobs"] = entries

        self.store.mutate(TRAINJOBS, namespace, name, write_patch, internal=True, copy=False)

        def unsuspend(obj: JSON) -> None:
            obj.setdefault("spec", {})["suspend"] = False

        self.store.mutate(TRAINJOBS, namespace, name, unsuspend, internal=True, copy=False)

    def _replicated_job_patches(self, wl: JSON) -> list[JSON]:
        """reconciler.go getPodSetsInfoFromStatus + podset.FromAssignment/FromUpdate/Merge."""
        admission = wl.get("status", {}).get("admission") or {}
        cq_name = str(admission.get("clusterQueue", ""))
        out: list[JSON] = []
        for assignment in admission.get("podSetAssignments") or []:
            ps_name = str(assignment.get("name", ""))
            labels: dict[str, str] = {}
            annotations: dict[str, str] = {}
            node_selector: dict[str, str] = {}
            tolerations: list[JSON] = []
            seen: set[str] = set()
            for flavor_name in (assignment.get("flavors") or {}).values():
                if flavor_name in seen:
                    continue
                seen.add(flavor_name)
                flavor = self.store.peek(RESOURCEFLAVORS, "", str(flavor_name))
                if flavor is None:
                    continue
                node_selector.update(flavor.get("spec", {}).get("nodeLabels") or {})
                tolerations.extend(clone(flavor.get("spec", {}).get("tolerations") or []))
            labels[PODSET_LABEL] = ps_name
            labels[LOCAL_QUEUE_LABEL] = str(wl.get("spec", {}).get("queueName", ""))
            if not is_dns1123_label(cq_name):
                labels[CLUSTER_QUEUE_LABEL] = cq_name
            for check in checks_of(wl):
                for update in check.get("podSetUpdates") or []:
                    if update.get("name") == ps_name:
                        annotations.update(update.get("annotations") or {})
                        labels.update(update.get("labels") or {})
                        node_selector.update(update.get("nodeSelector") or {})
                        for toleration in update.get("tolerations") or []:
                            if toleration not in tolerations:
                                tolerations.append(clone(toleration))
                        break
            pod_meta: JSON = {}
            if annotations:
                pod_meta["annotations"] = annotations
            if labels:
                pod_meta["labels"] = labels
            pod_spec: JSON = {}
            if node_selector:
                pod_spec["nodeSelector"] = node_selector
            if tolerations:
                pod_spec["tolerations"] = tolerations
            out.append(
                {
                    "name": ps_name,
                    "template": {"spec": {"template": {"metadata": pod_meta, "spec": pod_spec}}},
                }
            )
        return out


# -- the Workload controller ---------------------------------------------------------------------


def _spec_changed(event: Event) -> bool:
    if event.old is None or event.type != "MODIFIED":
        return True
    return event.object.get("spec") != event.old.get("spec")


def cluster_queue_of(store: Store, wl: JSON) -> str | None:
    """The ClusterQueue the Workload's LocalQueue points at, if both exist."""
    lq = store.peek(LOCALQUEUES, namespace_of(wl), str(wl.get("spec", {}).get("queueName", "")))
    if lq is None:
        return None
    return str(lq.get("spec", {}).get("clusterQueue", "")) or None


def has_all_required_checks(wl: JSON, required: Iterable[str]) -> bool:
    """pkg/workload/admissionchecks.go HasAllRequiredChecks: every check the ClusterQueue
    requires has an entry in ``status.admissionChecks`` (in any state). The scheduler syncs
    ``Admitted`` at quota reservation only then (pkg/scheduler/scheduler.go prepareWorkload);
    a Workload reserved before the Workload controller has added its checks is admitted by no
    one until they are there and all ``Ready``."""
    present = {str(c.get("name")) for c in checks_of(wl)}
    return all(name in present for name in required)


def cq_checks(cq: JSON) -> list[str]:
    """The AdmissionCheck names a ClusterQueue lists (``admissionChecksStrategy``), sorted."""
    rules = cq.get("spec", {}).get("admissionChecksStrategy", {}).get("admissionChecks") or []
    return sorted({str(r.get("name")) for r in rules if isinstance(r, dict) and r.get("name")})


class WorkloadController(_Retrying):
    """pkg/controller/core/workload_controller.go [K10], one step per reconcile.

    - ``spec.active=false``: evicted ``Deactivated`` (``DeactivatedDueTo<cause>`` after a
      DeactivationTarget), never requeued until ``spec.active=true`` again, which sets
      ``Requeued=True/Reactivated`` [K1, K12];
    - ``DeactivationTarget=True`` (a Rejected check): ``spec.active=false``;
    - ``admission-gated-by`` on the Workload: ``QuotaReserved=False/AdmissionGated``; its removal:
      ``PendingEvaluation`` "AdmissionGatedBy cleared, waiting for quota reservation" [K9, K16];
    - ``status.admissionChecks`` follows the ClusterQueue's list, new entries ``Pending``, sorted;
    - with quota: a Rejected check sets ``DeactivationTarget``; a Retry check evicts with reason
      ``AdmissionCheck`` [K17, K18]; after a Retry eviction ``Requeued=True/BackoffFinished`` once
      ``requeueState.requeueAt`` has passed;
    - ``Admitted`` synced (``NoReservation`` / ``UnsatisfiedAdmissionChecks`` / ``Admitted``).
    """

    name = "kueue-workload"
    primary = WORKLOADS
    watches = (LOCALQUEUES, CLUSTERQUEUES, ADMISSIONCHECKS)

    def keys_for(self, event: Event) -> Iterable[Key]:
        if event.resource is WORKLOADS:
            return super().keys_for(event)
        if not _spec_changed(event):
            return []
        if event.resource is LOCALQUEUES:
            return self.store.keys(WORKLOADS, namespace_of(event.object))
        return self.store.keys(WORKLOADS)

    def step(self, namespace: str, name: str) -> float | None:
        wl = self.store.peek(WORKLOADS, namespace, name)
        if wl is None or meta(wl).get("deletionTimestamp") or is_finished(wl):
            return None
        now = self.cluster.now()
        if not meta(wl).get("ownerReferences") and labels_of(wl).get(JOB_UID_LABEL):
            # isOrphanedWorkload + FinalizeOrphanedWorkload (FinishOrphanedWorkloads, beta, on
            # since v0.18): its job was deleted with propagationPolicy Orphan; the quota is freed
            write_workload_status(
                self.store,
                wl,
                lambda o: set_condition(
                    o, FINISHED, True, OWNER_NOT_FOUND, "The workload's owner no longer exists", now
                ),
            )
            return None
        if is_active(wl):
            if is_true(wl, DEACTIVATION_TARGET):

                def deactivate(obj: JSON) -> None:
                    obj.setdefault("spec", {})["active"] = False

                self.store.mutate(WORKLOADS, namespace, name, deactivate, internal=True, copy=False)
                return None
            requeued = condition(wl, REQUEUED)
            if requeued is not None and requeued.get("status") == "False":
                reason = requeued.get("reason")
                if reason == DEACTIVATED:
                    write_workload_status(
                        self.store,
                        wl,
                        lambda o: set_requeued(
                            o, REACTIVATED, "The workload was reactivated", True, now
                        ),
                    )
                    return None
                if reason in (EVICTED_BY_PODS_READY_TIMEOUT, EVICTED_BY_ADMISSION_CHECK):
                    at = (wl.get("status", {}).get("requeueState") or {}).get("requeueAt")
                    if at and parse_timestamp(str(at)) > now:
                        return parse_timestamp(str(at))

                    def finish_backoff(obj: JSON) -> None:
                        state = obj.get("status", {}).get("requeueState")
                        if isinstance(state, dict):
                            state.pop("requeueAt", None)
                        set_requeued(
                            obj, BACKOFF_FINISHED, "The workload backoff was finished", True, now
                        )

                    write_workload_status(self.store, wl, finish_backoff)
                    return None
        else:
            target = condition(wl, DEACTIVATION_TARGET)
            if not is_evicted(wl):
                cause = str(target.get("reason", "")) if target else ""
                message = "The workload is deactivated"
                if target is not None:
                    message = f"{message} due to {target.get('message', '')}"

                def deactivated(obj: JSON) -> None:
                    remove_condition(obj, DEACTIVATION_TARGET)
                    obj.get("status", {}).pop("requeueState", None)
                    evict(obj, DEACTIVATED, message, cause, now)

                write_workload_status(self.store, wl, deactivated)
                return None
            if wl.get("status", {}).get("requeueState") is not None:
                write_workload_status(
                    self.store, wl, lambda o: o["status"].pop("requeueState", None)
                )
                return None
        gated = bool(gate_of(wl))
        reserved_cond = condition(wl, QUOTA_RESERVED)
        gated_cond = reserved_cond is not None and reserved_cond.get("reason") == ADMISSION_GATED
        if not gated and gated_cond:
            write_workload_status(
                self.store,
                wl,
                lambda o: unset_quota(
                    o,
                    PENDING_EVALUATION,
                    "AdmissionGatedBy cleared, waiting for quota reservation",
                    now,
                ),
            )
            return None
        if gated and not gated_cond:
            text = f"Admission is gated by: {gate_of(wl)}"
            write_workload_status(
                self.store, wl, lambda o: unset_quota(o, ADMISSION_GATED, text, now)
            )
            return None
        queue = str(wl.get("spec", {}).get("queueName", ""))
        lq = self.store.peek(LOCALQUEUES, namespace, queue)
        cq_name = str(lq.get("spec", {}).get("clusterQueue", "")) if lq is not None else ""
        cq = self.store.peek(CLUSTERQUEUES, "", cq_name) if cq_name else None
        if cq is not None:
            wanted = cq_checks(cq)
            current = checks_of(wl)
            names = [str(c.get("name")) for c in current]
            if names != wanted:
                by_name = {str(c.get("name")): c for c in current}

                def sync(obj: JSON) -> None:
                    checks = [
                        clone(by_name[n])
                        if n in by_name
                        else {
                            "name": n,
                            "state": PENDING,
                            "lastTransitionTime": timestamp(now),
                            "message": "",
                        }
                        for n in wanted
                    ]
                    if checks:
                        ensure_status(obj)["admissionChecks"] = checks
                    else:
                        ensure_status(obj).pop("admissionChecks", None)

                write_workload_status(self.store, wl, sync)
                return None
        if not is_admitted(wl):
            snapshot = clone(wl)
            if not has_quota(snapshot):
                self._quota_reserved_false(snapshot, lq, cq, queue, cq_name, now)
            sync_admitted(snapshot, now)
            if snapshot.get("status") != wl.get("status"):
                self.store.update(
                    WORKLOADS,
                    namespace,
                    name,
                    snapshot,
                    subresource="status",
                    internal=True,
                    owned=True,
                    copy=False,
                )
                return None
        if has_quota(wl) and not is_evicted(wl):
            checks = checks_of(wl)
            rejected = [c for c in checks if c.get("state") == REJECTED]
            retry = [c for c in checks if c.get("state") == RETRY]
            if rejected:
                text = _checks_message(rejected, REJECTED)
                write_workload_status(
                    self.store,
                    wl,
                    lambda o: set_condition(
                        o, DEACTIVATION_TARGET, True, EVICTED_BY_ADMISSION_CHECK, text, now
                    ),
                )
                return None
            if retry:
                text = f"Evicted due to {_checks_message(retry, RETRY)}"
                after = [
                    parse_timestamp(str(c["lastTransitionTime"])) + int(c["requeueAfterSeconds"])
                    for c in retry
                    if c.get("requeueAfterSeconds") is not None and c.get("lastTransitionTime")
                ]

                def retried(obj: JSON) -> None:
                    if after:
                        state = ensure_status(obj).setdefault("requeueState", {})
                        state["requeueAt"] = timestamp(max(after))
                    evict(obj, EVICTED_BY_ADMISSION_CHECK, text, "", now)

                write_workload_status(self.store, wl, retried)
                return None
        return None

    def _quota_reserved_false(
        self,
        wl: JSON,
        lq: JSON | None,
        cq: JSON | None,
        queue: str,
        cq_name: str,
        now: float,
    ) -> None:
        """workload_controller.go resolveGranularUnadmittedQuotaReservedCondition."""
        current = condition(wl, QUOTA_RESERVED)
        if not is_active(wl):
            reason, message = DEACTIVATED, "The workload is deactivated"
        elif lq is None:
            reason, message = MISCONFIGURED, f"LocalQueue {queue} doesn't exist"
        elif cq is None:
            reason, message = MISCONFIGURED, f"ClusterQueue {cq_name} doesn't exist"
        elif gate_of(wl):
            reason, message = ADMISSION_GATED, f"Admission is gated by: {gate_of(wl)}"
        elif current is None or current.get("reason") in SCHEDULER_REASONS:
            return
        else:
            reason, message = (
                PENDING_EVALUATION,
                "Workload is pending evaluation in the scheduling queue",
            )
        set_condition(wl, QUOTA_RESERVED, False, reason, message, now)


# -- the scheduler -----------------------------------------------------------------------------


def _requests_of(wl: JSON) -> list[tuple[str, int, dict[str, int]]]:
    """(podSet name, count, total requests) per podSet."""
    out: list[tuple[str, int, dict[str, int]]] = []
    for ps in wl.get("spec", {}).get("podSets") or []:
        count = int(ps.get("count", 1))
        per_pod = pod_requests(ps.get("template") or {})
        out.append((str(ps.get("name", "")), count, {k: v * count for k, v in per_pod.items()}))
    return out


def _usage_of(admission: JSON) -> dict[tuple[str, str], int]:
    """{(flavor, resource): amount} of an admission's podSetAssignments."""
    usage: dict[tuple[str, str], int] = {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for resource, value in (assignment.get("resourceUsage") or {}).items():
            key = (str(flavors.get(resource, "")), str(resource))
            usage[key] = usage.get(key, 0) + amount(str(resource), value)
    return usage


def with_pods(
    needs: list[tuple[str, int, dict[str, int]]],
) -> list[tuple[str, int, dict[str, int]]]:
    """Each podSet's requests and its count of ``pods``: what the flavor assigner asks of a
    ClusterQueue that covers the ``pods`` resource, whatever the containers request
    (pkg/scheduler/flavorassigner/flavorassigner.go at the pin: ``podSet.Requests.Set(
    ResourcePods, podSet.Count)`` when ``a.cq.RGByResource(ResourcePods) != nil``)."""
    return [(name, count, {**requests, PODS_RESOURCE: count}) for name, count, requests in needs]


def priority_of(wl: JSON) -> int:
    """The Workload's ``spec.priority`` (0 when unset)."""
    value = wl.get("spec", {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _schedulable(wl: JSON) -> bool:
    """Pending in the queue: active, unfinished, unreserved, ungated, requeued if evicted."""
    if meta(wl).get("deletionTimestamp") or is_finished(wl) or not is_active(wl):
        return False
    if has_quota(wl) or gate_of(wl):
        return False
    requeued = condition(wl, REQUEUED)
    return requeued is None or requeued.get("status") == "True"


class KueueScheduler(_Retrying):
    """The scheduler's quota reservation, per ClusterQueue (primary CLUSTERQUEUES).

    Usage is the ``resourceUsage`` of every Workload holding ``QuotaReserved=True`` and not
    ``Finished``. Pending Workloads are taken by priority (``spec.priority``, higher first),
    then FIFO by creation time, then namespace and name (pkg/cache/queue/cluster_queue.go
    baseCompareFunc at the pin; BestEffortFIFO: one that does not fit does not block the ones after
    it). A Workload fits a flavor when every podSet's requests x count (and its count of
    ``pods``, where the ClusterQueue covers them) fit the flavor's nominal quota less the usage;
    it then gets ``status.admission`` and ``QuotaReserved=True`` "Quota reserved in ClusterQueue
    <cq>", ``Evicted``/``Preempted`` turned False "Previously: ...", and ``Admitted`` synced
    (pkg/workload/workload.go SetQuotaReservation). Otherwise ``QuotaReserved=False`` with
    ``WaitingForQuota`` (or ``ExceedsMaxQuota``) and the flavor assigner's message
    (pkg/scheduler/flavorassigner/flavorassigner.go).
    """

    name = "kueue-scheduler"
    primary = CLUSTERQUEUES
    watches = (WORKLOADS, LOCALQUEUES, RESOURCEFLAVORS)

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(cluster)
        self._needs: dict[tuple[str, int], list[tuple[str, int, dict[str, int]]]] = {}
        self._order: dict[str, tuple[float, str, str]] = {}
        self._ready = False
        """Whether the index below reflects the store (rebuilt at first use and queue changes)."""
        self._pending: dict[str, set[Key]] = {}
        self._reserved: dict[str, dict[Key, tuple[dict[tuple[str, str], int], bool]]] = {}
        self._where: dict[Key, tuple[str, str]] = {}
        self._parked: dict[str, set[Key]] = {}
        """Workloads that did not fit, left alone until quota is released (inadmissible)."""
        self._released: set[str] = set()
        self._lq_counts: dict[Key, list[int]] = {}
        """(namespace, LocalQueue) -> [pending, reserving, admitted] Workloads."""
        self._lq_counted: dict[Key, tuple[Key, tuple[int, int, int]]] = {}

    def needs(self, wl: JSON) -> list[tuple[str, int, dict[str, int]]]:
        """The Workload's requests per podSet (cached by uid and generation)."""
        key = (uid_of(wl), int(meta(wl).get("generation", 1)))
        found = self._needs.get(key)
        if found is None:
            found = _requests_of(wl)
            self._needs[key] = found
        return found

    def order(self, wl: JSON) -> tuple[int, float, str, str]:
        """The queue order: priority (higher first), then creation time, then namespace and
        name (the last three cached by uid). Upstream breaks a tie of priority and time by uid;
        a preemption keeps the preempted Workload's creation time (pkg/workload/workload.go
        GetQueueOrderTimestamp at the pin moves only a PodsReady timeout's or an admission
        check's eviction to its time)."""
        uid = uid_of(wl)
        found = self._order.get(uid)
        if found is None:
            created = parse_timestamp(str(meta(wl).get("creationTimestamp")))
            found = (created, namespace_of(wl), name_of(wl))
            self._order[uid] = found
        return (-priority_of(wl), *found)

    def keys_for(self, event: Event) -> Iterable[Key]:
        """The ClusterQueues an event concerns; Workload events also keep the index current."""
        if event.resource is CLUSTERQUEUES:
            if _spec_changed(event):
                self._released.add(name_of(event.object))
                return [("", name_of(event.object))]
            return []
        if event.resource is RESOURCEFLAVORS:
            self._released.update(k[1] for k in self.store.keys(CLUSTERQUEUES))
            return self.store.keys(CLUSTERQUEUES)
        if event.resource is LOCALQUEUES:
            if not _spec_changed(event):
                return []
            self._ready = False
            cq = str(event.object.get("spec", {}).get("clusterQueue", ""))
            return [("", cq)] if cq else []
        if not self._ready:
            return self.store.keys(CLUSTERQUEUES)
        key = (namespace_of(event.object), name_of(event.object))
        before = self._where.get(key)
        after = self._index(key, None if event.type == "DELETED" else event.object)
        keys = {("", q) for q in (*(before or ()), *after) if q}
        if before is not None and before[1] and before[1] != after[1]:
            self._released.add(before[1])
        for parked in self._parked.values():
            parked.discard(key)
        return sorted(keys)

    def _index(self, key: Key, wl: JSON | None) -> tuple[str, str]:
        """(pending in, reserving in) for one Workload, recorded in the index."""
        if not self._ready:
            return ("", "")
        before = self._where.pop(key, None)
        if before is not None:
            self._pending.get(before[0], set()).discard(key)
            self._reserved.get(before[1], {}).pop(key, None)
        counted = self._lq_counted.pop(key, None)
        if counted is not None:
            counts = self._lq_counts[counted[0]]
            for index, value in enumerate(counted[1]):
                counts[index] -= value
        pending_in = reserved_in = ""
        if wl is not None:
            admission = wl.get("status", {}).get("admission") or {}
            row = (0, 0, 0)
            if has_quota(wl) and admission.get("clusterQueue") and not is_finished(wl):
                reserved_in = str(admission["clusterQueue"])
                self._reserved.setdefault(reserved_in, {})[key] = (
                    _usage_of(admission),
                    is_admitted(wl),
                )
                row = (0, 1, 1 if is_admitted(wl) else 0)
            elif _schedulable(wl):
                pending_in = cluster_queue_of(self.store, wl) or ""
                if pending_in:
                    self._pending.setdefault(pending_in, set()).add(key)
                row = (1, 0, 0)
            if any(row):
                lq = (namespace_of(wl), str(wl.get("spec", {}).get("queueName", "")))
                counts = self._lq_counts.setdefault(lq, [0, 0, 0])
                for index, value in enumerate(row):
                    counts[index] += value
                self._lq_counted[key] = (lq, row)
        where = (pending_in, reserved_in)
        if pending_in or reserved_in:
            self._where[key] = where
        return where

    def _rebuild(self) -> None:
        self._pending.clear()
        self._reserved.clear()
        self._where.clear()
        self._parked.clear()
        self._lq_counts.clear()
        self._lq_counted.clear()
        self._ready = True
        self._released.update(k[1] for k in self.store.keys(CLUSTERQUEUES))
        for wl in self.store.select(WORKLOADS):
            self._index((namespace_of(wl), name_of(wl)), wl)

    def step(self, namespace: str, name: str) -> float | None:
        del namespace
        cq = self.store.peek(CLUSTERQUEUES, "", name)
        if cq is None:
            return None
        if not self._ready:
            self._rebuild()
        now = self.cluster.now()
        nominal = self._nominal(cq)
        usage: dict[tuple[str, str], int] = {}
        reserved = self._reserved.get(name, {})
        reserving = len(reserved)
        admitted = 0
        for used, is_in in reserved.values():
            admitted += 1 if is_in else 0
            for key, value in used.items():
                usage[key] = usage.get(key, 0) + value
        parked = self._parked.setdefault(name, set())
        if name in self._released:
            self._released.discard(name)
            parked.clear()
        pending_keys = self._pending.get(name, set())
        pending: list[JSON] = []
        for key in sorted(pending_keys - parked):
            found = self.store.peek(WORKLOADS, key[0], key[1])
            if found is not None:
                pending.append(found)
        waiting = len(pending_keys & parked)
        pending.sort(key=self.order)
        required = cq_checks(cq)
        covers_pods = any(PODS_RESOURCE in quotas for _, quotas in nominal)
        still_pending = 0
        for wl in pending:
            needs = with_pods(self.needs(wl)) if covers_pods else self.needs(wl)
            flavor, reason, message = self._assign(nominal, usage, needs)
            if flavor is not None:
                admission = self._admission(name, flavor, needs)
                for _, _, requests in needs:
                    for resource, value in requests.items():
                        usage[(flavor, resource)] = usage.get((flavor, resource), 0) + value

                def reserve(obj: JSON, admission: JSON = admission) -> None:
                    ensure_status(obj)["admission"] = admission
                    set_condition(
                        obj,
                        QUOTA_RESERVED,
                        True,
                        "QuotaReserved",
                        f"Quota reserved in ClusterQueue {name}",
                        now,
                    )
                    for kind in (EVICTED, PREEMPTED):
                        previous = condition(obj, kind)
                        if previous is not None and previous.get("status") == "True":
                            set_condition(
                                obj,
                                kind,
                                False,
                                "QuotaReserved",
                                f"Previously: {previous.get('message', '')}",
                                now,
                            )
                    if has_all_required_checks(obj, required):
                        sync_admitted(obj, now)

                reserved_wl = self.store.mutate(
                    WORKLOADS,
                    namespace_of(wl),
                    name_of(wl),
                    reserve,
                    subresource="status",
                    internal=True,
                    copy=False,
                )
                reserving += 1
                admitted += 1 if is_admitted(reserved_wl) else 0
                continue
            still_pending += 1
            parked.add((namespace_of(wl), name_of(wl)))
            current = condition(wl, QUOTA_RESERVED)
            if (
                current is None
                or current.get("reason") != reason
                or current.get("message") != message
            ):

                def wait(obj: JSON, reason: str = reason, message: str = message) -> None:
                    unset_quota(obj, reason, message, now)

                self.store.mutate(
                    WORKLOADS,
                    namespace_of(wl),
                    name_of(wl),
                    wait,
                    subresource="status",
                    internal=True,
                    copy=False,
                )
        self._write_status(cq, nominal, usage, still_pending + waiting, reserving, admitted, now)
        self._write_local_queues(name, now)
        return None

    def _nominal(self, cq: JSON) -> list[tuple[str, dict[str, int]]]:
        """(flavor, {resource: nominal amount}) in the ClusterQueue's order."""
        out: list[tuple[str, dict[str, int]]] = []
        for group in cq.get("spec", {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                quotas = {
                    str(r.get("name")): amount(str(r.get("name")), r.get("nominalQuota", "0"))
                    for r in flavor.get("resources") or []
                }
                for existing, have in out:
                    if existing == flavor.get("name"):
                        have.update(quotas)
                        break
                else:
                    out.append((str(flavor.get("name")), quotas))
        return out

    def _assign(
        self,
        nominal: list[tuple[str, dict[str, int]]],
        usage: dict[tuple[str, str], int],
        needs: list[tuple[str, int, dict[str, int]]],
    ) -> tuple[str | None, str, str]:
        """The first flavor every podSet fits, or the reason and message of why none does."""
        first: tuple[str, str] | None = None
        for flavor, quotas in nominal:
            assumed: dict[str, int] = {}
            parts: list[str] = []
            worst = WAITING_FOR_QUOTA
            for ps_name, _, requests in needs:
                reasons: list[str] = []
                for resource in sorted(requests):
                    request = requests[resource]
                    if request == 0:
                        continue
                    if resource not in quotas:
                        reasons.append(f"resource {resource} unavailable in ClusterQueue")
                        worst = "NoMatchingFlavor"
                        continue
                    before = assumed.get(resource, 0)
                    value = before + request
                    available = quotas[resource] - usage.get((flavor, resource), 0)
                    if value > quotas[resource]:
                        reasons.append(
                            f"insufficient quota for {resource} in flavor {flavor}, previously "
                            f"considered podsets requests ({format_amount(resource, before)}) + "
                            f"current podset request ({format_amount(resource, request)}) > "
                            f"maximum capacity ({format_amount(resource, quotas[resource])})"
                        )
                        worst = EXCEEDS_MAX_QUOTA
                    elif value > available:
                        reasons.append(
                            f"insufficient unused quota for {resource} in flavor {flavor}, "
                            f"{format_amount(resource, value - available)} more needed"
                        )
                    assumed[resource] = value
                if reasons:
                    parts.append(
                        f"couldn't assign flavors to pod set {ps_name}: "
                        f"{', '.join(sorted(reasons))}"
                    )
            if not parts:
                return flavor, "", ""
            if first is None:
                first = (worst, "; ".join(parts))
        if first is None:
            return None, "NoMatchingFlavor", "no flavors in the ClusterQueue"
        return None, first[0], first[1]

    def _admission(
        self, cq_name: str, flavor: str, needs: list[tuple[str, int, dict[str, int]]]
    ) -> JSON:
        assignments: list[JSON] = []
        for ps_name, count, requests in needs:
            used = {r: v for r, v in sorted(requests.items()) if v}
            entry: JSON = {"name": ps_name}
            if used:
                entry["flavors"] = {r: flavor for r in used}
                entry["resourceUsage"] = {r: format_amount(r, v) for r, v in used.items()}
            entry["count"] = count
            assignments.append(entry)
        return {"clusterQueue": cq_name, "podSetAssignments": assignments}

    def _write_status(
        self,
        cq: JSON,
        nominal: list[tuple[str, dict[str, int]]],
        usage: dict[tuple[str, str], int],
        pending: int,
        reserving: int,
        admitted: int,
        now: float,
    ) -> None:
        """ClusterQueue status: counts, flavorsReservation/flavorsUsage, ``Active`` condition."""
        flavors = [
            {
                "name": flavor,
                "resources": [
                    {
                        "name": r,
                        "total": format_amount(r, usage.get((flavor, r), 0)),
                        "borrowed": "0",
                    }
                    for r in quotas
                ],
            }
            for flavor, quotas in nominal
        ]
        wanted = clone(cq)
        status = ensure_status(wanted)
        status["flavorsReservation"] = flavors
        status["flavorsUsage"] = clone(flavors)
        status["pendingWorkloads"] = pending
        status["reservingWorkloads"] = reserving
        status["admittedWorkloads"] = admitted
        set_condition(wanted, "Active", True, "Ready", "Can admit new workloads", now)
        if wanted.get("status") != cq.get("status"):
            self.store.update(
                CLUSTERQUEUES,
                "",
                name_of(cq),
                wanted,
                subresource="status",
                internal=True,
                owned=True,
                copy=False,
            )

    def _write_local_queues(self, cq_name: str, now: float) -> None:
        """LocalQueue status (localqueue_controller.go): counts and ``Active`` "Ready"."""
        for lq in self.store.select(LOCALQUEUES):
            if lq.get("spec", {}).get("clusterQueue") != cq_name:
                continue
            key = (namespace_of(lq), name_of(lq))
            pending, reserving, admitted = self._lq_counts.get(key, [0, 0, 0])
            wanted = clone(lq)
            status = ensure_status(wanted)
            status["pendingWorkloads"] = pending
            status["reservingWorkloads"] = reserving
            status["admittedWorkloads"] = admitted
            set_condition(
                wanted, "Active", True, "Ready", "Can submit new workloads to localQueue", now
            )
            if wanted.get("status") != lq.get("status"):
                self.store.update(
                    LOCALQUEUES,
                    key[0],
                    key[1],
                    wanted,
                    subresource="status",
                    internal=True,
                    owned=True,
                    copy=False,
                )


CONTROLLERS: Final = (KueueJobController, WorkloadController, KueueScheduler)
"""Kueue's controllers in the order they should reconcile."""


# -- faults ------------------------------------------------------------------------------------


def _fault_error(message: str) -> Exception:
    from simulators.kubernetes.faults import FaultError

    return FaultError(message)


def preempt(
    cluster: Cluster,
    namespace: str,
    workload_name: str,
    preemptor: str | None = None,
    reason: str = IN_CLUSTER_QUEUE,
) -> JSON:
    """Kueue preemption of a Workload holding quota (pkg/scheduler/preemption/preemption.go) [K6].

    ``Evicted=True/Preempted`` and ``Preempted=True/<reason>`` with the upstream message (the
    preemptor's uid and job uid, ``UNKNOWN`` when no preemptor Workload is named; paths are
    ``/<clusterQueue>``, no cohorts). Raises FaultError for a Workload that is missing,
    finished, without quota or already evicted.
    """
    store = cluster.store
    wl = store.peek(WORKLOADS, namespace, workload_name)
    if wl is None:
        raise _fault_error(f"no Workload {namespace}/{workload_name}")
    if is_finished(wl) or not has_quota(wl) or is_evicted(wl):
        raise _fault_error(f"Workload {namespace}/{workload_name} holds no quota to preempt")
    if reason not in PREEMPTION_REASONS:
        raise _fault_error(f"unknown preemption reason {reason!r}")
    cq_name = str((wl.get("status", {}).get("admission") or {}).get("clusterQueue", ""))
    preemptor_uid = preemptor_job = ""
    preemptor_path = f"/{cq_name}"
    if preemptor is not None:
        other = store.peek(WORKLOADS, namespace, preemptor)
        if other is None:
            raise _fault_error(f"no preemptor Workload {namespace}/{preemptor}")
        preemptor_uid = uid_of(other)
        preemptor_job = labels_of(other).get(JOB_UID_LABEL, "")
        other_cq = cluster_queue_of(store, other)
        preemptor_path = f"/{other_cq}" if other_cq else ""
    message = preemption_message(
        preemptor_uid, preemptor_job, reason, preemptor_path, f"/{cq_name}"
    )
    now = cluster.now()

    def change(obj: JSON) -> None:
        set_condition(obj, PREEMPTED, True, reason, message, now)
        evict(obj, EVICTED_BY_PREEMPTION, message, "", now)

    return store.mutate(
        WORKLOADS, namespace, workload_name, change, subresource="status", internal=True
    )


def deactivate(cluster: Cluster, namespace: str, workload_name: str) -> JSON:
    """An administrator's ``spec.active=false`` [K12]; FaultError if missing, finished, inactive."""
    store = cluster.store
    wl = store.peek(WORKLOADS, namespace, workload_name)
    if wl is None:
        raise _fault_error(f"no Workload {namespace}/{workload_name}")
    if is_finished(wl) or not is_active(wl):
        raise _fault_error(f"Workload {namespace}/{workload_name} is finished or already inactive")

    def change(obj: JSON) -> None:
        obj.setdefault("spec", {})["active"] = False

    return store.mutate(WORKLOADS, namespace, workload_name, change, internal=True)


def reactivate(cluster: Cluster, namespace: str, workload_name: str) -> JSON:
    """``spec.active=true`` again; FaultError when missing, finished or already active."""
    store = cluster.store
    wl = store.peek(WORKLOADS, namespace, workload_name)
    if wl is None:
        raise _fault_error(f"no Workload {namespace}/{workload_name}")
    if is_finished(wl) or is_active(wl):
        raise _fault_error(f"Workload {namespace}/{workload_name} is finished or already active")

    def change(obj: JSON) -> None:
        obj.setdefault("spec", {})["active"] = True

    return store.mutate(WORKLOADS, namespace, workload_name, change, internal=True)


def workload_for(store: Store, namespace: str, trainjob_name: str) -> JSON | None:
    """The Workload of a TrainJob by the TrainJob's name (a copy), or None."""
    trainjob = store.peek(TRAINJOBS, namespace, trainjob_name)
    if trainjob is None:
        return None
    wl = find_workload(store, trainjob)
    return clone(wl) if wl is not None else None
