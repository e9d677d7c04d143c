"""Kueue's admission webhooks for TrainJobs and Workloads (main at ff69552e).

- :class:`KueueTrainJobWebhook`: pkg/controller/jobs/trainjob/trainjob_webhook.go [K3]. On
  CREATE (``mtrainjob.kb.io``, verbs=create) a TrainJob Kueue manages (the
  ``kueue.x-k8s.io/queue-name`` label, or ``manageJobsWithoutQueueName``) gets
  ``spec.suspend=true``, and every TrainJob gets Kueue's own runtime patch appended (manager
  ``kueue.x-k8s.io/manager``, ``trainingRuntimeSpec.template.spec`` empty) [K3, K15].
  Validation (``vtrainjob.kb.io``, verbs=create;update): pkg/controller/jobframework/validation.go
  ``ValidateJobOnCreate``/``ValidateJobOnUpdate``: the queue name is immutable while the job
  runs; ``admission-gated-by`` (pkg/util/webhook/validation_admissiongatedby.go [K9]) may be
  set at creation only, and afterwards only removed or shortened.
- :class:`KueueWorkloadWebhook`: pkg/webhooks/workload_webhook.go ``ValidateWorkloadUpdate``
  (``vworkload.kb.io``, workloads and workloads/status): ``status.admission`` can be set or
  reset to null but not changed [K1]; a Ready check's ``podSetUpdates`` are immutable;
  ``admission-gated-by`` as above. Before it, the CRD's rule that ``spec.queueName`` is
  immutable while the Workload holds quota (422, as the API server answers a CEL rule).

Both skip the ``kube-system`` and ``kueue-system`` namespaces, as the webhook configurations'
namespaceSelector does. A refusal is what the API server makes of a controller-runtime
``Denied`` answer (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors
``ToStatusErr``): **403 Forbidden**, ``admission webhook "<name>" denied the request: <errors>``,
the errors joined as ``field.ErrorList.ToAggregate`` prints them (one bare, several in
``[a, b]``). It is not a 422: the webhooks return a plain aggregate, not an API status.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from simulators.kubernetes.controllers.kueue import (
    GATE_ANNOTATION,
    QUEUE_LABEL,
    READY,
    UNMANAGED_NAMESPACES,
    empty_kueue_patch,
)
from simulators.kubernetes.errors import Cause, invalid, webhook_denied
from simulators.kubernetes.objects import (
    JSON,
    annotations_of,
    is_true,
    labels_of,
    name_of,
    namespace_of,
)
from simulators.kubernetes.resources import TRAINJOBS, WORKLOADS
from simulators.kubernetes.store import Request
from simulators.kubernetes.validation import is_dns1123_subdomain

TRAINJOB_VALIDATOR: Final = "vtrainjob.kb.io"
WORKLOAD_VALIDATOR: Final = "vworkload.kb.io"
GATE_PATH: Final = f"metadata.annotations[{GATE_ANNOTATION}]"
QUEUE_PATH: Final = f"metadata.labels[{QUEUE_LABEL}]"
MAX_GATE_NAME: Final = 63
_PATH_SEGMENT: Final = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")


def _render(value: Any) -> str:
    """field.Invalid's rendering of a bad value: quoted strings, JSON for the rest."""
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _gates(value: str) -> list[str]:
    """pkg/util/csv.Parse: comma-separated, each entry trimmed; blank is none."""
    if value.strip() == "":
        return []
    return [g.strip() for g in value.split(",")]


def _domain_prefixed_path(gate: str) -> list[str]:
    """k8s.io/apimachinery pkg/util/validation IsDomainPrefixedPath, as field errors."""
    out: list[str] = []
    if not gate:
        return [f"{GATE_PATH}: Required value"]
    host, slash, path = gate.partition("/")
    if not slash or not path:
        return [
            f"{GATE_PATH}: Invalid value: {_render(gate)}: must be a domain-prefixed path "
            '(such as "acme.io/foo")'
        ]
    out.extend(
        f"{GATE_PATH}: Invalid value: {_render(host)}: {m}" for m in is_dns1123_subdomain(host)
    )
    if not _PATH_SEGMENT.fullmatch(path):
        out.append(
            f"{GATE_PATH}: Invalid value: {_render(path)}: Invalid path (regex used for "
            f"validation is '{_PATH_SEGMENT.pattern}')"
        )
    return out


def validate_gate_format(value: str) -> list[str]:
    """validateAdmissionGatedByAnnotationFormat [K9]."""
    if value == "":
        return []
    out: list[str] = []
    seen: set[str] = set()
    for gate in _gates(value):
        if gate == "":
            out.append(
                f"{GATE_PATH}: Invalid value: {_render(value)}: cannot contain empty gate names"
            )
            continue
        if gate in seen:
            out.append(f"{GATE_PATH}: Invalid value: {_render(value)}: duplicate gate name: {gate}")
            continue
        seen.add(gate)
        out.extend(_domain_prefixed_path(gate))
        if len(gate) > MAX_GATE_NAME:
            out.append(f"{GATE_PATH}: Too long: may not be more than {MAX_GATE_NAME} bytes")
    return out


def validate_gate_update(old: JSON, new: JSON) -> list[str]:
    """ValidateAdmissionGatedByAnnotationOnUpdate [K9]: never added later, only shortened."""
    old_value = annotations_of(old).get(GATE_ANNOTATION)
    new_value = annotations_of(new).get(GATE_ANNOTATION)
    old_text = old_value or ""
    new_text = new_value or ""
    out: list[str] = []
    if old_text == "" and new_text != "":
        out.append(f"{GATE_PATH}: Forbidden: cannot add admission gate after creation")
    if old_text != "" and new_text != "":
        old_gates = _gates(old_text)
        if any(g not in old_gates for g in _gates(new_text)):
            out.append(f"{GATE_PATH}: Forbidden: can only remove gates, not add new ones")
    out.extend(validate_gate_format(new_text))
    return out


class KueueTrainJobWebhook:
    """Kueue's TrainJob defaulter and validator (an admission plugin: ``admit(request)``)."""

    def __init__(self, manage_jobs_without_queue_name: bool = False) -> None:
        self.manage_jobs_without_queue_name = manage_jobs_without_queue_name

    def managed(self, trainjob: JSON) -> bool:
        """WorkloadShouldBeSuspended: a queue name, or manageJobsWithoutQueueName."""
        return bool(labels_of(trainjob).get(QUEUE_LABEL)) or self.manage_jobs_without_queue_name

    def admit(self, request: Request) -> None:
        if request.resource is not TRAINJOBS or request.subresource:
            return
        obj = request.object
        if namespace_of(obj) in UNMANAGED_NAMESPACES:
            return
        if request.operation == "CREATE":
            self.default(obj)
            errors = validate_gate_format(str(annotations_of(obj).get(GATE_ANNOTATION, "")))
            if errors:
                raise webhook_denied(TRAINJOB_VALIDATOR, errors)
        elif request.operation == "UPDATE" and request.old is not None:
            errors = self.validate_update(request.old, obj)
            if errors:
                raise webhook_denied(TRAINJOB_VALIDATOR, errors)

    def default(self, trainjob: JSON) -> None:
        """TrainJobWebhook.Default [K3]: suspend when managed; always append Kueue's patch."""
        spec = trainjob.setdefault("spec", {})
        if self.managed(trainjob):
            spec["suspend"] = True
        patches = spec.get("runtimePatches")
        if not isinstance(patches, list):
            patches = []
        spec["runtimePatches"] = [*patches, empty_kueue_patch()]

    def validate_update(self, old: JSON, new: JSON) -> list[str]:
        """ValidateJobOnUpdate: queue name immutable while running; the gate's rules."""
        errors: list[str] = []
        old_queue = labels_of(old).get(QUEUE_LABEL, "")
        new_queue = labels_of(new).get(QUEUE_LABEL, "")
        if not new.get("spec", {}).get("suspend", False) and old_queue != new_queue:
            errors.append(f"{QUEUE_PATH}: Invalid value: {_render(new_queue)}: field is immutable")
        errors.extend(validate_gate_update(old, new))
        return errors


def _quota_reserved(wl: JSON) -> bool:
    return is_true(wl, "QuotaReserved")


def cel_causes(old: JSON, new: JSON) -> list[Cause]:
    """The Workload CRD's x-kubernetes-validations on ``spec.queueName`` (apis/kueue/v1beta2/
    workload_types.go): immutable while the old and the new object both hold quota. The API
    server checks them before any validating webhook runs."""
    if not (_quota_reserved(old) and _quota_reserved(new)):
        return []
    if old.get("spec", {}).get("queueName") == new.get("spec", {}).get("queueName"):
        return []
    message = 'Invalid value: "object": queueName is immutable while workload quota reserved'
    return [Cause("<nil>", message)]


class KueueWorkloadWebhook:
    """Kueue's Workload validator for updates (main resource and status)."""

    def admit(self, request: Request) -> None:
        if request.resource is not WORKLOADS or request.operation != "UPDATE":
            return
        if request.old is None:
            return
        causes = cel_causes(request.old, request.object)
        if causes:
            raise invalid(WORKLOADS.kind, WORKLOADS.group, name_of(request.object), causes)
        if namespace_of(request.object) in UNMANAGED_NAMESPACES:
            return
        errors = self.validate_update(request.old, request.object)
        if errors:
            raise webhook_denied(WORKLOAD_VALIDATOR, errors)

    def validate_update(self, old: JSON, new: JSON) -> list[str]:
        errors: list[str] = []
        new_admission = new.get("status", {}).get("admission")
        old_admission = old.get("status", {}).get("admission")
        if (
            new_admission is not None
            and old_admission is not None
            and new_admission != old_admission
        ):
            errors.append(
                f"status.admission: Invalid value: {_render(new_admission)}: field is immutable"
            )
        old_checks = old.get("status", {}).get("admissionChecks") or []
        new_checks = {c.get("name"): c for c in new.get("status", {}).get("admissionChecks") or []}
        for index, check in enumerate(old_checks):
            after = new_checks.get(check.get("name"))
            if after is None:
                continue
            both_ready = check.get("state") == READY and after.get("state") == READY
            if both_ready and after.get("podSetUpdates") != check.get("podSetUpdates"):
                errors.append(
                    f"status.admissionChecks[{index}].podSetUpdates: Invalid value: "
                    f"{_render(after.get('podSetUpdates'))}: field is immutable"
                )
        errors.extend(validate_gate_update(old, new))
        return errors
