"""A TrainJob's coarse state and typed cause, from the TrainJob, its JobSet, its pods and,
with Kueue, its Workload (facts §8.5, refined). A failure is never a bare ``failed``.

First match wins:

- ``metadata.deletionTimestamp`` set → cancelled (cancelled);
- TrainJob ``Complete=True`` → succeeded;
- TrainJob ``Failed=True``: reason ``DeadlineExceeded`` → timeout; else from the pods of the
  newest JobSet restart attempt: a container ``OOMKilled`` → out_of_memory; a pod
  ``DisruptionTarget`` ``DeletionByTaintManager``/``DeletionByPodGC`` or ``status.reason``
  ``NodeLost`` → node_lost; ``status.reason`` ``Evicted`` or ``DisruptionTarget``
  ``TerminationByKubelet`` → evicted; ``PreemptionByScheduler`` → preempted; a terminated
  container's non-zero exit code → exit_code (``exit_code`` set); no pod left to tell →
  evidence_lost (the JobSet's reason in the detail);
- every pod of the newest restart attempt being deleted, one of them with its node →
  failed, node_lost (the Job waits on pods that stay Terminating, so nothing upstream ends);
- with Kueue, the Workload: ``spec.active=false`` → held with dispatch's number when the TrainJob
  carries a valid ``dispatch/hold``, else queued (deactivated by someone else, as a suspend
  without dispatch's hold reads queued without Kueue); not admitted, ``Evicted=True`` (or
  ``Requeued=True`` once quota is reserved again) ``Preempted`` → queued, preempted;
  ``NodeFailures`` → queued, node_lost; ``QuotaReserved=False`` ``ExceedsMaxQuota``,
  ``NoMatchingFlavor``, ``Inadmissible`` → queued, unschedulable; ``WaitingForQuota`` →
  queued, no_capacity;
- without Kueue, ``spec.suspend=true``: held with dispatch's hold number, else queued
  (suspended by someone else, or a requeue between its steps);
- otherwise from the pods: a container waiting ``ErrImagePull``/``ImagePullBackOff`` →
  queued, image_pull; ``PodScheduled=False`` ``Unschedulable`` → queued, unschedulable; a
  pod ``Running`` or ``Succeeded`` → running; else queued.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from adapters.kubeflow.env import LABEL_RESTART_ATTEMPT
from dispatch_core import Cause, State

JSON = Mapping[str, Any]
IMAGE_PULL: Final = frozenset({"ErrImagePull", "ImagePullBackOff"})
NODE_LOST: Final = frozenset({"DeletionByTaintManager", "DeletionByPodGC"})


@dataclass(frozen=True)
class Verdict:
    """What the evidence says."""

    state: State
    cause: Cause = Cause.NONE
    exit_code: int | None = None
    detail: str = ""


def condition(obj: JSON | None, kind: str) -> JSON | None:
    """The status condition of type ``kind`` whose status is "True", or None."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == kind and cond.get("status") == "True":
            return cond
    return None


def _false_condition(obj: JSON, kind: str) -> JSON | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == kind and cond.get("status") == "False":
            return cond
    return None


def _attempt(pod: JSON) -> int:
    text = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_RESTART_ATTEMPT, "")
    return int(text) if isinstance(text, str) and text.isdigit() else -1


def current_pods(pods: Sequence[JSON]) -> list[JSON]:
    """The pods of the newest JobSet restart attempt (older ones are being deleted)."""
    if not pods:
        return []
    newest = max(_attempt(p) for p in pods)
    return [p for p in pods if _attempt(p) == newest]


def _statuses(pod: JSON) -> list[JSON]:
    status = pod.get("status") or {}
    return [
        s
        for s in [
            *(status.get("initContainerStatuses") or []),
            *(status.get("containerStatuses") or []),
        ]
        if isinstance(s, Mapping)
    ]


def _terminations(pod: JSON) -> list[JSON]:
    found = []
    for status in _statuses(pod):
        for key in ("state", "lastState"):
            ended = (status.get(key) or {}).get("terminated")
            if isinstance(ended, Mapping):
                found.append(ended)
    return found


def _disruption(pod: JSON) -> object:
    return (condition(pod, "DisruptionTarget") or {}).get("reason")


def _pod_name(pod: JSON) -> str:
    return str((pod.get("metadata") or {}).get("name", "?"))


def failure_cause(pods: Sequence[JSON], reason: object) -> Verdict:
    """Why a TrainJob whose JobSet failed (``reason``) failed, from its newest pods."""
    pods = current_pods(pods)
    for pod in pods:
        for ended in _terminations(pod):
            if ended.get("reason") == "OOMKilled":
                return Verdict(
                    State.FAILED,
                    Cause.OUT_OF_MEMORY,
                    _exit(ended),
                    detail=f"pod {_pod_name(pod)}: OOMKilled",
                )
    for pod in pods:
        if _disruption(pod) in NODE_LOST or (pod.get("status") or {}).get("reason") == "NodeLost":
            return Verdict(State.FAILED, Cause.NODE_LOST, detail=f"pod {_pod_name(pod)}: node lost")
    for pod in pods:
        if (pod.get("status") or {}).get("reason") == "Evicted" or (
            _disruption(pod) == "TerminationByKubelet"
        ):
            return Verdict(State.FAILED, Cause.EVICTED, detail=f"pod {_pod_name(pod)}: evicted")
    for pod in pods:
        if _disruption(pod) == "PreemptionByScheduler":
            return Verdict(State.FAILED, Cause.PREEMPTED, detail=f"pod {_pod_name(pod)}: preempted")
    for pod in pods:
        for ended in _terminations(pod):
            code = _exit(ended)
            if code:
                return Verdict(
                    State.FAILED,
                    Cause.EXIT_CODE,
                    code,
                    detail=f"pod {_pod_name(pod)}: exit code {code}",
                )
    return Verdict(
        State.FAILED,
        Cause.EVIDENCE_LOST,
        detail=f"the JobSet failed ({reason}) and no pod is left to tell why",
    )


def _exit(ended: JSON) -> int | None:
    code = ended.get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def waiting_cause(pods: Sequence[JSON]) -> Verdict | None:
    """Queued with a cause when a pod cannot start (image pull, unschedulable), else None."""
    for pod in current_pods(pods):
        for status in _statuses(pod):
            reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
            if reason in IMAGE_PULL:
                return Verdict(
                    State.QUEUED, Cause.IMAGE_PULL, detail=f"pod {_pod_name(pod)}: {reason}"
                )
    for pod in current_pods(pods):
        cond = _false_condition(pod, "PodScheduled")
        if cond is not None and cond.get("reason") == "Unschedulable":
            return Verdict(
                State.QUEUED,
                Cause.UNSCHEDULABLE,
                detail=f"pod {_pod_name(pod)}: Unschedulable",
            )
    return None


def node_lost(pods: Sequence[JSON]) -> Verdict | None:
    """Failed, node_lost, when every pod of the newest restart attempt is being deleted with
    its node (``DisruptionTarget`` from the taint manager): the Job then waits on pods that
    stay Terminating until the node goes, so the TrainJob never fails by itself, yet no rank
    runs and none will be replaced under the identity-keeping runtimes."""
    newest = current_pods(pods)
    if not newest or not all((p.get("metadata") or {}).get("deletionTimestamp") for p in newest):
        return None
    gone = [p for p in newest if _disruption(p) in NODE_LOST]
    if not gone:
        return None
    return Verdict(
        State.FAILED,
        Cause.NODE_LOST,
        detail=f"pod {_pod_name(gone[0])} was deleted with its node; every rank is terminating",
    )


def _workload_verdict(workload: JSON, hold: int | None) -> Verdict | None:
    if (workload.get("spec") or {}).get("active") is False:
        if hold is not None:
            return Verdict(
                State.HELD, Cause.NONE, detail=f"Workload inactive (dispatch hold {hold})"
            )
        return Verdict(State.QUEUED, Cause.NONE, detail="Workload inactive, no dispatch hold")
    evicted = condition(workload, "Evicted")
    if evicted is None or condition(workload, "QuotaReserved") is not None:
        evicted = condition(workload, "Requeued")  # evicted, requeued, not yet readmitted
    if evicted is not None and condition(workload, "Admitted") is None:
        reason = evicted.get("reason")
        if reason == "Preempted":
            return Verdict(State.QUEUED, Cause.PREEMPTED, detail="Workload evicted: Preempted")
        if reason == "NodeFailures":
            return Verdict(State.QUEUED, Cause.NODE_LOST, detail="Workload evicted: NodeFailures")
    pending = _false_condition(workload, "QuotaReserved")
    if pending is not None:
        reason = pending.get("reason")
        if reason in ("ExceedsMaxQuota", "NoMatchingFlavor", "Inadmissible", "Misconfigured"):
            return Verdict(State.QUEUED, Cause.UNSCHEDULABLE, detail=f"QuotaReserved: {reason}")
        if reason in ("WaitingForQuota", "WaitingForPreemptedWorkloads"):
            return Verdict(State.QUEUED, Cause.NO_CAPACITY, detail=f"QuotaReserved: {reason}")
    return None


def classify(
    trainjob: JSON,
    pods: Sequence[JSON],
    *,
    hold: int | None,
    kueue: bool,
    workload: JSON | None = None,
) -> Verdict:
    """The verdict on ``trainjob`` from the evidence read in the same ``open``."""
    meta = trainjob.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return Verdict(State.CANCELLED, Cause.CANCELLED, detail="being deleted")
    if condition(trainjob, "Complete") is not None:
        return Verdict(State.SUCCEEDED, Cause.NONE, 0, detail="Complete")
    failed = condition(trainjob, "Failed")
    if failed is not None:
        reason = failed.get("reason")
        if reason == "DeadlineExceeded":
            return Verdict(State.FAILED, Cause.TIMEOUT, detail="Failed: DeadlineExceeded")
        verdict = failure_cause(pods, reason)
        return Verdict(
            verdict.state,
            verdict.cause,
            verdict.exit_code,
            detail=f"Failed ({reason}): {verdict.detail}",
        )
    lost = node_lost(pods)
    if lost is not None:
        return lost
    suspended = (trainjob.get("spec") or {}).get("suspend") is True
    if kueue and workload is not None:
        queued = _workload_verdict(workload, hold)
        inactive = (workload.get("spec") or {}).get("active") is False
        if queued is not None and (suspended or inactive):
            return queued
    if suspended and not kueue:
        if hold is not None:
            return Verdict(State.HELD, Cause.NONE, detail=f"suspended under dispatch hold {hold}")
        return Verdict(State.QUEUED, Cause.NONE, detail="suspended (no dispatch hold)")
    waiting = waiting_cause(pods)
    if waiting is not None:
        return waiting
    if suspended:
        return Verdict(State.QUEUED, Cause.NONE, detail="suspended, waiting for admission")
    phases = {str((p.get("status") or {}).get("phase", "")) for p in current_pods(pods)}
    if phases & {"Running", "Succeeded"}:
        return Verdict(State.RUNNING, Cause.NONE, detail="running")
    return Verdict(State.QUEUED, Cause.NONE, detail="waiting for its pods to start")


__all__ = ["Verdict", "classify", "condition", "current_pods", "failure_cause", "waiting_cause"]
