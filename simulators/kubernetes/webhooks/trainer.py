"""The TrainJob's admission: the CRD schema (defaults, CEL rules) and the Trainer's webhooks.

kubeflow/trainer v2.3.0, in the order the API server runs them:

1. CRD defaults: ``runtimeRef.apiGroup`` ``trainer.kubeflow.org``, ``runtimeRef.kind``
   ``ClusterTrainingRuntime``, ``suspend: false``, ``managedBy``
   ``trainer.kubeflow.org/trainjob-controller`` [T1].
2. The defaulting webhook (defaulter.trainjob.trainer.kubeflow.org): each runtime patch's
   ``time`` is stamped when the entry is new or changed, kept otherwise
   (pkg/webhooks/trainjob_webhook.go Default).
3. The CRD's CEL rules (422 Invalid, from the API server itself, after the name's RFC 1123
   causes when the name is not a DNS subdomain either): the name is an RFC 1035 label
   of at most 63 characters; ``runtimeRef``, ``initializer``, ``trainer``,
   ``activeDeadlineSeconds`` and ``managedBy`` are immutable (``self == oldSelf``), as are a
   patch's pod-spec ``serviceAccountName``, ``volumes``, ``initContainers``, ``containers``,
   ``imagePullSecrets``, ``securityContext`` and ``terminationGracePeriodSeconds`` [T1].
4. The validating webhook (validator.trainjob.trainer.kubeflow.org): an unknown runtime kind, a
   missing runtime, the Torch plugin's reserved ``PET_`` names [T7], and the JobSet plugin's
   runtime-patch rules [T4]: patches change only while suspended before or after the update and
   no JobSet replicatedJob is active; a patch may not name an unknown replicatedJob or container,
   nor set env on ``node`` / initializer containers. The webhook returns a plain error, so
   controller-runtime denies with 403 Forbidden and the API server prefixes the webhook's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from simulators.kubernetes.controllers.trainer import (
    NODE,
    TRAINER_CONTROLLER,
    runtime_kind_key,
    runtime_ref,
    runtime_type,
)
from simulators.kubernetes.errors import Cause, invalid, webhook_denied
from simulators.kubernetes.objects import JSON, name_of, namespace_of, timestamp
from simulators.kubernetes.resources import JOBSETS, TRAINER, TRAINJOBS
from simulators.kubernetes.store import Request, Store
from simulators.kubernetes.validation import DNS1035_LABEL_RE
from simulators.kubernetes.webhooks.jobset import go_value

VALIDATOR: Final = "validator.trainjob.trainer.kubeflow.org"
MANAGERS: Final = (TRAINER_CONTROLLER, "kueue.x-k8s.io/multikueue")
TORCH_RESERVED: Final = frozenset(
    {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}
)
"""pkg/constants/constants.go TorchRunReservedEnvNames [T10]: exactly these five names."""
IMMUTABLE_SPEC: Final = (
    ("runtimeRef", "object"),
    ("initializer", "object"),
    ("trainer", "object"),
    ("activeDeadlineSeconds", "integer"),
    ("managedBy", "string"),
)
IMMUTABLE_POD_PATCH: Final = (
    ("serviceAccountName", "string"),
    ("volumes", "array"),
    ("initContainers", "array"),
    ("containers", "array"),
    ("imagePullSecrets", "array"),
    ("securityContext", "object"),
    ("terminationGracePeriodSeconds", "integer"),
)
NO_ENV_CONTAINERS: Final = ("dataset-initializer", "model-initializer", NODE)


def default_trainjob(tj: JSON) -> None:
    """The CRD's schema defaults [T1]."""
    spec = tj.setdefault("spec", {})
    ref = spec.setdefault("runtimeRef", {})
    ref.setdefault("apiGroup", TRAINER)
    ref.setdefault("kind", "ClusterTrainingRuntime")
    spec.setdefault("suspend", False)
    spec.setdefault("managedBy", TRAINER_CONTROLLER)


def stamp_patches(tj: JSON, old: JSON | None, now: float) -> None:
    """trainjob_webhook.go Default: a new or changed patch entry gets ``time`` = now."""
    stamp = timestamp(now)
    patches = tj.get("spec", {}).get("runtimePatches") or []
    if old is None:
        for patch in patches:
            if patch.get("time") is None:
                patch["time"] = stamp
        return
    previous = {p.get("manager"): p for p in old.get("spec", {}).get("runtimePatches") or []}
    for patch in patches:
        before = previous.get(patch.get("manager"))
        if before is None:
            if patch.get("time") is None:
                patch["time"] = stamp
            continue
        a = {k: v for k, v in before.items() if k != "time"}
        b = {k: v for k, v in patch.items() if k != "time"}
        patch["time"] = before.get("time") if a == b else stamp


def cel_causes(tj: JSON, old: JSON | None) -> list[Cause]:
    """The CRD's x-kubernetes-validations [T1]; transition rules only where both sides exist."""
    causes: list[Cause] = []
    name = name_of(tj)
    if not DNS1035_LABEL_RE.fullmatch(name):
        causes.append(
            Cause(
                "<nil>",
                'Invalid value: "object": metadata.name must match RFC 1035 DNS label format',
            )
        )
    if len(name) > 63:
        causes.append(
            Cause(
                "<nil>", 'Invalid value: "object": metadata.name must be no more than 63 characters'
            )
        )
    spec = tj.get("spec", {})
    manager = spec.get("managedBy")
    if manager is not None and manager not in MANAGERS:
        causes.append(
            Cause(
                "spec.managedBy",
                'Invalid value: "string": ManagedBy must be '
                "trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set",
            )
        )
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool) and deadline < 1 and deadline:
        causes.append(
            Cause(
                "spec.activeDeadlineSeconds",
                f"Invalid value: {deadline}: spec.activeDeadlineSeconds in body should be greater "
                "than or equal to 1",
            )
        )
    if old is None:
        return causes
    old_spec = old.get("spec", {})
    for fld, kind in IMMUTABLE_SPEC:
        if fld in spec and fld in old_spec and spec[fld] != old_spec[fld]:
            causes.append(Cause(f"spec.{fld}", f'Invalid value: "{kind}": field is immutable'))
    old_patches = {p.get("manager"): p for p in old_spec.get("runtimePatches") or []}
    for i, patch in enumerate(spec.get("runtimePatches") or []):
        before = old_patches.get(patch.get("manager"))
        if before is None:
            continue
        old_rjobs = {r.get("name"): r for r in _patch_rjobs(before)}
        for j, rjob in enumerate(_patch_rjobs(patch)):
            previous = old_rjobs.get(rjob.get("name"))
            if previous is None:
                continue
            pod, old_pod = _patch_pod_spec(rjob), _patch_pod_spec(previous)
            for fld, kind in IMMUTABLE_POD_PATCH:
                if fld in pod and fld in old_pod and pod[fld] != old_pod[fld]:
                    path = (
                        f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec."
                        f"replicatedJobs[{j}].template.spec.template.spec.{fld}"
                    )
                    causes.append(Cause(path, f'Invalid value: "{kind}": field is immutable'))
    return causes


def _patch_rjobs(patch: JSON) -> list[JSON]:
    spec = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
    return [r for r in spec.get("replicatedJobs") or [] if isinstance(r, dict)]


def _patch_pod_spec(rjob: JSON) -> JSON:
    spec = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


class TrainJobWebhook:
    """Defaults and validates TrainJobs as the CRD schema and the Trainer's webhooks do."""

    def __init__(self, store: Store, now: Callable[[], float] | None = None) -> None:
        self.store = store
        self.now = now if now is not None else store.now
        # the store leaves an invalid name's causes to this plugin, reported with the CEL rules'
        store.crd_rules.add(TRAINJOBS.key)

    def admit(self, request: Request) -> None:
        if request.resource is not TRAINJOBS or request.subresource:
            return
        if request.operation == "DELETE":
            return
        tj = request.object
        old = request.old if request.operation == "UPDATE" else None
        if old is not None and old.get("metadata", {}).get("deletionTimestamp"):
            return
        default_trainjob(tj)
        stamp_patches(tj, old, self.now())
        # customresource strategy.go Validate: ValidateObjectMetaAccessor's name errors, then
        # the x-kubernetes-validations rules' (an Invalid error does not block them), one 422
        causes = [*request.causes, *cel_causes(tj, old)]
        if causes:
            raise invalid(TRAINJOBS.kind, TRAINJOBS.group, name_of(tj), causes)
        messages = self._validate(tj, old)
        if messages:
            raise webhook_denied(VALIDATOR, messages)

    # -- the validating webhook ---------------------------------------------------------------

    def _validate(self, tj: JSON, old: JSON | None) -> list[str]:
        """trainjob_webhook.go ValidateCreate / ValidateUpdate → runtime.ValidateObjects."""
        rtype = runtime_type(tj)
        if rtype is None:
            return [f"unsupported runtime: {runtime_kind_key(tj)}"]
        name, _, kind = runtime_ref(tj)
        runtime = self.store.peek(rtype, namespace_of(tj), name)
        if runtime is None:
            ref = tj.get("spec", {}).get("runtimeRef")
            cluster = kind == "ClusterTrainingRuntime"
            path = "spec.RuntimeRef" if cluster else "spec.runtimeRef"
            which = "clusterTrainingRuntime" if cluster else "trainingRuntime"
            return [
                f"{path}: Invalid value: {go_value(ref)}: {rtype.plural}.{rtype.group} "
                f'"{name}" not found: specified {which} must be created before the TrainJob is '
                "created"
            ]
        messages: list[str] = []
        ml = runtime.get("spec", {}).get("mlPolicy") or {}
        trainer = tj.get("spec", {}).get("trainer")
        if ml.get("torch") is not None and isinstance(trainer, dict):  # T7 Validate
            reserved = sorted(
                {str(e.get("name")) for e in trainer.get("env") or []} & TORCH_RESERVED
            )
            if reserved:
                messages.append(
                    f"spec.trainer.env: Invalid value: {go_value(trainer.get('env'))}: must not "
                    f"have reserved envs, invalid envs configured: [{' '.join(reserved)}]"
                )
        messages.extend(self._patch_rules(tj, old, runtime))
        return messages

    def _patch_rules(self, tj: JSON, old: JSON | None, runtime: JSON) -> list[str]:
        """T4 JobSet.Validate: runtime-patch immutability and what a patch may name."""
        messages: list[str] = []
        patches = tj.get("spec", {}).get("runtimePatches") or []
        path = "spec.runtimePatches"
        if old is not None and _without_time(patches) != _without_time(
            old.get("spec", {}).get("runtimePatches") or []
        ):
            old_suspended = old.get("spec", {}).get("suspend") is True
            new_suspended = tj.get("spec", {}).get("suspend") is True
            if not old_suspended and not new_suspended:
                messages.append(
                    f"{path}: Forbidden: RuntimePatches can only be modified when the TrainJob is "
                    "suspended before or after the update"
                )
            else:
                js = self.store.peek(JOBSETS, namespace_of(tj), name_of(tj))
                for rj in (js or {}).get("status", {}).get("replicatedJobsStatus") or []:
                    if int(rj.get("active", 0)) > 0:
                        messages.append(
                            f"{path}: Forbidden: RuntimePatches cannot be modified when the "
                            f"JobSet's ReplicatedJob {rj.get('name')} is still active"
                        )
        containers: dict[str, set[str]] = {}
        template = runtime.get("spec", {}).get("template", {}).get("spec", {})
        for rjob in template.get("replicatedJobs") or []:
            pod = rjob.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
            containers[str(rjob.get("name"))] = {
                str(c.get("name"))
                for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
            }
        value = go_value(patches)
        for patch in patches:
            manager = str(patch.get("manager", ""))
            if "/" not in manager or not manager.split("/", 1)[0]:
                messages.append(
                    f"{path}.manager: Invalid value: {go_value(manager)}: must be a "
                    'domain-prefixed path (such as "acme.io/foo")'
                )
            for rjob in _patch_rjobs(patch):
                rname = str(rjob.get("name"))
                if rname not in containers:
                    messages.append(
                        f"{path}: Invalid value: {value}: must not have replicated job that "
                        "doesn't exist in the runtime job template"
                    )
                    continue
                pod = _patch_pod_spec(rjob)
                for c in pod.get("initContainers") or []:
                    if c.get("name") not in containers[rname]:
                        messages.append(
                            f"{path}: Invalid value: {value}: must not have initContainer that "
                            f"doesn't exist in the runtime job {rname}"
                        )
                for c in pod.get("containers") or []:
                    if c.get("name") not in containers[rname]:
                        messages.append(
                            f"{path}: Invalid value: {value}: must not have container that "
                            f"doesn't exist in the runtime job {rname}"
                        )
                    elif c.get("env") and c.get("name") in NO_ENV_CONTAINERS:
                        messages.append(
                            f"{path}: Invalid value: {value}: must not have envs for the "
                            "dataset-initializer, model-initializer, node containers"
                        )
        return messages


def _without_time(patches: list[Any]) -> list[Any]:
    out = []
    for p in patches:
        if isinstance(p, dict):
            p = {k: v for k, v in p.items() if k != "time"}  # compared only: no copy
        out.append(p)
    return out


__all__ = ["TrainJobWebhook", "cel_causes", "default_trainjob", "stamp_patches"]
