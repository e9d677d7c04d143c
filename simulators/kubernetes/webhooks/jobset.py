"""The JobSet admission webhooks (mjobset.kb.io, vjobset.kb.io) and the CRD's schema defaults.

As kubernetes-sigs/jobset v0.12.0 pkg/webhooks/jobset_webhook.go [J5] behaves: defaults
``successPolicy{All}``, ``startupPolicy{AnyOrder}``, ``completionMode: Indexed`` and
``restartPolicy: OnFailure`` for every replicatedJob, ``network.enableDNSHostnames`` and
``publishNotReadyAddresses`` true, failure-policy rule names ``failurePolicyRule<i>``; the CRD
defaults ``replicas: 1``, ``groupName: default`` and ``failurePolicy.restartStrategy: Recreate``
(api/jobset/v1alpha2/jobset_types.go [J1]). On update ``spec.replicatedJobs`` is immutable
except, while the JobSet is suspended before or after, the pod templates' labels, annotations,
nodeSelector, tolerations and schedulingGates; ``spec.managedBy`` is immutable. Refusals are
422 Invalid, prefixed as the API server prefixes a webhook's denial.
"""

from __future__ import annotations

import json
from typing import Any, Final

from simulators.kubernetes.errors import Cause, invalid, webhook_denied
from simulators.kubernetes.objects import JSON, clone, name_of
from simulators.kubernetes.resources import JOBSETS
from simulators.kubernetes.store import Request
from simulators.kubernetes.validation import LABEL_MAX, is_dns1035_label, max_len_error

VALIDATING: Final = "vjobset.kb.io"
JOB_NAME_TOO_LONG: Final = (
    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
)
POD_NAME_TOO_LONG: Final = (
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
)
JOB_FAILURE_REASONS: Final = frozenset(
    {
        "BackoffLimitExceeded",
        "DeadlineExceeded",
        "FailedIndexes",
        "MaxFailedIndexesExceeded",
        "PodFailurePolicy",
    }
)


def go_value(value: Any) -> str:
    """A bad value as k8s.io/apimachinery field.Error prints it: quoted strings, JSON otherwise.

    [verify] composite values are printed as JSON by recent apimachinery versions.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return "null"
    return json.dumps(value, separators=(",", ":"))


def internal_cause(message: str) -> Cause:
    """A plain ``error`` turned into a field error: field.InternalError(nil, err)."""
    return Cause("<nil>", f"Internal error: {message}", "InternalError")


def default_jobset(js: JSON) -> None:
    """J5 Default plus the CRD's schema defaults [J1]."""
    spec = js.setdefault("spec", {})
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = {"operator": "All"}
    if spec.get("startupPolicy") is None:
        spec["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    for rjob in spec.get("replicatedJobs") or []:
        rjob.setdefault("replicas", 1)
        rjob.setdefault("groupName", "default")
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        if job_spec.get("completionMode") is None:
            job_spec["completionMode"] = "Indexed"
        pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
        if not pod_spec.get("restartPolicy"):
            pod_spec["restartPolicy"] = "OnFailure"
    network = spec.get("network")
    if network is None:
        network = spec["network"] = {}
    if network.get("enableDNSHostnames") is None:
        network["enableDNSHostnames"] = True
    if network.get("publishNotReadyAddresses") is None:
        network["publishNotReadyAddresses"] = True
    policy = spec.get("failurePolicy")
    if isinstance(policy, dict):
        policy.setdefault("restartStrategy", "Recreate")
        for i, rule in enumerate(policy.get("rules") or []):
            if not rule.get("name"):
                rule["name"] = f"failurePolicyRule{i}"


def validate_create(js: JSON) -> list[Cause]:
    """J5 ValidateCreate (the parts that do not depend on alpha gates or PVCs)."""
    causes: list[Cause] = []
    spec = js.get("spec", {})
    rjobs = spec.get("replicatedJobs") or []
    policy = spec.get("failurePolicy") or {}
    if policy.get("restartStrategy") == "InPlaceRestart":
        causes.append(
            internal_cause(
                "InPlaceRestart restart strategy cannot be set when InPlaceRestart feature gate "
                "is disabled"
            )
        )
    if rjobs and rjobs[0].get("dependsOn") is not None:
        causes.append(internal_cause("DependsOn can't be set for the first ReplicatedJob"))
    names: set[str] = set()
    for i, rjob in enumerate(rjobs):
        path = f"spec.replicatedJobs[{i}]"
        rname = str(rjob.get("name", ""))
        names.add(rname)
        replicas = int(rjob.get("replicas", 1))
        longest_job = f"{name_of(js)}-{rname}-{replicas - 1}"
        for message in _dns1035(longest_job, JOB_NAME_TOO_LONG):
            causes.append(
                Cause(f"{path}.name", f"Invalid value: {go_value(longest_job)}: {message}")
            )
        job_spec = rjob.get("template", {}).get("spec", {})
        if job_spec.get("completionMode") == "Indexed" and job_spec.get("completions") is not None:
            pod = f"{longest_job}-{int(job_spec['completions']) - 1}-abcde"
            for message in _dns1035(pod, POD_NAME_TOO_LONG):
                causes.append(
                    Cause(f"{path}.name", f"Invalid value: {go_value(longest_job)}: {message}")
                )
        for dep in rjob.get("dependsOn") or []:
            if dep.get("name") not in names or dep.get("name") == rname:
                causes.append(
                    internal_cause(
                        f"replicatedJob: {rname} cannot depend on replicatedJob: {dep.get('name')}"
                    )
                )
    for target in (spec.get("successPolicy") or {}).get("targetReplicatedJobs") or []:
        if target not in names:
            causes.append(
                internal_cause(
                    f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs"
                )
            )
    for rule in policy.get("rules") or []:
        for target in rule.get("targetReplicatedJobs") or []:
            if target not in names:
                causes.append(
                    internal_cause(
                        f"invalid replicatedJob name '{target}' in failure policy does not appear "
                        "in .spec.ReplicatedJobs"
                    )
                )
        for reason in rule.get("onJobFailureReasons") or []:
            if reason not in JOB_FAILURE_REASONS:
                causes.append(
                    internal_cause(
                        f"invalid job failure reason '{reason}' in failure policy is not a "
                        "recognized job failure reason"
                    )
                )
    return causes


def _dns1035(value: str, too_long: str) -> list[str]:
    """validation.IsDNS1035Label, its length message replaced as J5 replaces it."""
    return [too_long if m == max_len_error(LABEL_MAX) else m for m in is_dns1035_label(value)]


MUTABLE_WHILE_SUSPENDED: Final = ("nodeSelector", "tolerations", "schedulingGates")


def validate_update(old: JSON, new: JSON) -> list[Cause]:
    """J5 ValidateUpdate: replicatedJobs and managedBy immutable, scheduling fields while held."""
    old_spec = old.get("spec", {})
    new_spec = new.get("spec", {})
    munged = clone(new_spec.get("replicatedJobs") or [])
    old_rjobs = {str(r.get("name")): r for r in old_spec.get("replicatedJobs") or []}
    if old_spec.get("suspend") or new_spec.get("suspend"):
        for rjob in munged:
            previous = old_rjobs.get(str(rjob.get("name")))
            if previous is None:
                continue
            old_pod = previous.get("template", {}).get("spec", {}).get("template", {})
            pod = rjob.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
            pod_meta = pod.setdefault("metadata", {})
            for fld in ("labels", "annotations"):
                _copy(pod_meta, old_pod.get("metadata") or {}, fld)
            if not pod_meta:
                pod.pop("metadata", None)
            pod_spec = pod.setdefault("spec", {})
            for fld in MUTABLE_WHILE_SUSPENDED:
                _copy(pod_spec, old_pod.get("spec") or {}, fld)
            if "metadata" not in old_pod:
                pod.pop("metadata", None)
    causes: list[Cause] = []
    if munged != (old_spec.get("replicatedJobs") or []):
        value = go_value(munged)
        causes.append(Cause("spec.replicatedJobs", f"Invalid value: {value}: field is immutable"))
    if new_spec.get("managedBy") != old_spec.get("managedBy"):
        value = go_value(new_spec.get("managedBy"))
        causes.append(Cause("spec.managedBy", f"Invalid value: {value}: field is immutable"))
    return causes


def _copy(target: JSON, source: JSON, fld: str) -> None:
    if fld in source:
        target[fld] = clone(source[fld])
    else:
        target.pop(fld, None)


class JobSetWebhook:
    """Defaults and validates JobSets on create and update (status writes are not shown)."""

    def admit(self, request: Request) -> None:
        if request.resource is not JOBSETS or request.subresource:
            return
        if request.operation == "DELETE":
            return
        default_jobset(request.object)
        if request.operation == "CREATE":
            causes = validate_create(request.object)
        else:
            if request.old is None:
                return
            if request.old.get("metadata", {}).get("deletionTimestamp"):
                return
            causes = validate_update(request.old, request.object)
        if causes:
            error = invalid(JOBSETS.kind, JOBSETS.group, name_of(request.object), causes)
            raise webhook_denied(VALIDATING, error)


__all__ = ["JobSetWebhook", "default_jobset", "go_value", "validate_update"]
