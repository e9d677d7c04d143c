"""The Kubeflow Trainer: TrainJob → JobSet, runtime patches, suspend, deadline, status.

As kubeflow/trainer v2.3.0 behaves (tag commit 658725bd):

- The JobSet has the TrainJob's name and namespace and a controller ownerReference to it with
  ``blockOwnerDeletion`` [T4 ``Build``]. Its labels and annotations are the runtime template's
  plus the runtime patches' (TrainJob labels never reach it) [T6 ``newRuntimeInfo``].
- The runtime's ``template.spec`` is strategic-merge-patched with each ``runtimePatches[]``
  entry's ``template.spec`` in order [T6 ``mergeRuntimePatches``]; ``spec.trainer`` image,
  command, args and env go to the ``node`` container of trainer-ancestor replicatedJobs, which are
  forced to ``replicas: 1`` with ``parallelism = completions = numNodes`` [T5, T4
  ``SyncParallelCount``]; the mlPolicy plugins inject their variables [T7, T8, T9, plainml].
- The runtime is read once and kept in a ``<trainjob>-runtime-snapshot`` ConfigMap owned by the
  TrainJob; later builds read the snapshot (pkg/runtime/core/snapshot.go).
- An existing JobSet is re-applied only while the TrainJob or the JobSet is suspended [T4].
- Conditions: ``Suspended`` (Suspended / Resumed); ``Complete`` and ``Failed`` copied from the
  JobSet's ``Completed`` / ``Failed`` with reason and message; a non-deadline ``Failed`` is
  recomputed every reconcile; an unknown runtime kind gives ``Failed/TrainingRuntimeNotSupported``;
  ``activeDeadlineSeconds`` from creation or the last resume gives the sticky
  ``Failed/DeadlineExceeded`` and deletes the JobSet [T3, T12].
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterable
from typing import Any, ClassVar, Final

from simulators.kubernetes import patch as patch_module
from simulators.kubernetes.controllers.base import Controller
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import (
    JSON,
    clone,
    condition,
    controller_of,
    is_true,
    meta,
    name_of,
    namespace_of,
    owner_reference,
    parse_timestamp,
    remove_condition,
    set_condition,
    uid_of,
)
from simulators.kubernetes.quantity import QuantityError, value_of
from simulators.kubernetes.resources import (
    CLUSTERTRAININGRUNTIMES,
    CONFIGMAPS,
    JOBSETS,
    SECRETS,
    TRAINER,
    TRAININGRUNTIMES,
    TRAINJOBS,
    ResourceType,
)
from simulators.kubernetes.store import Event, Key, Store

ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_ANCESTOR: Final = "trainer"
DATASET_INITIALIZER: Final = "dataset-initializer"
MODEL_INITIALIZER: Final = "model-initializer"
NODE: Final = "node"
LAUNCHER: Final = "launcher"
TRAINER_PORT: Final = 29500
"""pkg/constants/constants.go ContainerTrainerPort [T10]."""
COMPLETION_INDEX_PATH: Final = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
"""pkg/constants/constants.go JobCompletionIndexFieldPath [T10]."""
TRAINER_CONTROLLER: Final = "trainer.kubeflow.org/trainjob-controller"
SUSPENDED_MESSAGE: Final = "TrainJob is suspended"
RESUMED_MESSAGE: Final = "TrainJob is resumed"
DEADLINE_MESSAGE: Final = "TrainJob exceeded its active deadline"
DEADLINE_REASON: Final = "DeadlineExceeded"
NOT_SUPPORTED_REASON: Final = "TrainingRuntimeNotSupported"
SNAPSHOT_SUFFIX: Final = "-runtime-snapshot"
SNAPSHOT_KEY: Final = "runtime"
RUNTIME_KINDS: Final = {
    ("ClusterTrainingRuntime", TRAINER): CLUSTERTRAININGRUNTIMES,
    ("TrainingRuntime", TRAINER): TRAININGRUNTIMES,
}
JOBSET_MERGE_KEYS: Final = {
    **patch_module.MERGE_KEYS,
    "replicatedJobs": "name",
    "dependsOn": "name",
}
"""The runtime patches merge against JobSetSpec [T6]: the core types' merge keys and JobSet's
(api/jobset/v1alpha2/jobset_types.go: replicatedJobs and dependsOn are ``patchMergeKey:"name"``)."""


# -- small helpers ----------------------------------------------------------------------------


def runtime_ref(trainjob: JSON) -> tuple[str, str, str]:
    """(name, apiGroup, kind) of ``spec.runtimeRef``, with the CRD's defaults [T1]."""
    ref = trainjob.get("spec", {}).get("runtimeRef") or {}
    return (
        str(ref.get("name", "")),
        str(ref.get("apiGroup", TRAINER)),
        str(ref.get("kind", "ClusterTrainingRuntime")),
    )


def runtime_kind_key(trainjob: JSON) -> str:
    """``Kind.group`` as pkg/runtime/runtime.go RuntimeRefToRuntimeRegistryKey prints it."""
    _, group, kind = runtime_ref(trainjob)
    return f"{kind}.{group}" if group else kind


def runtime_type(trainjob: JSON) -> ResourceType | None:
    """The resource the runtimeRef names, or None when the Trainer has no such runtime kind."""
    _, group, kind = runtime_ref(trainjob)
    return RUNTIME_KINDS.get((kind, group))


def snapshot_name(trainjob: JSON) -> str:
    return f"{name_of(trainjob)}{SNAPSHOT_SUFFIX}"


def read_runtime(store: Store, trainjob: JSON) -> JSON | None:
    """The runtime a TrainJob builds from: its snapshot if it has one, else the stored runtime."""
    rtype = runtime_type(trainjob)
    if rtype is None:
        return None
    snap = store.peek(CONFIGMAPS, namespace_of(trainjob), snapshot_name(trainjob))
    if snap is not None:
        owner = controller_of(snap)
        if owner is not None and owner.get("uid") == uid_of(trainjob):
            try:
                data = json.loads(str(snap.get("data", {}).get(SNAPSHOT_KEY, "")))
            except ValueError:
                data = None
            if isinstance(data, dict):
                return data
    name = runtime_ref(trainjob)[0]
    found = store.peek(rtype, namespace_of(trainjob), name)
    return clone(found) if found is not None else None


def upsert(items: list[JSON], new: Iterable[JSON], key: str = "name") -> None:
    """Replace the entry with the same key in place, or append (pkg/apply UpsertEnvVars etc.)."""
    for entry in new:
        for i, old in enumerate(items):
            if old.get(key) == entry.get(key):
                items[i] = clone(entry)
                break
        else:
            items.append(clone(entry))


def quantity_value(value: Any) -> int:
    """``resource.Quantity.Value()``: the quantity rounded up to a whole number (0: unreadable)."""
    try:
        return value_of(value)
    except QuantityError:
        return 0


def _gpus(resources: JSON) -> int:
    """pkg/runtime/runtime.go GetNumGPUPerNode: requests' first ``*gpu*`` resource, else limits'."""

    def count(rl: Any) -> int:
        if isinstance(rl, dict):
            for name in sorted(rl):
                if "gpu" in name.lower():
                    return quantity_value(rl[name])
        return 0

    n = count(resources.get("requests"))
    limit = count(resources.get("limits"))
    return limit if n == 0 and limit > 0 else n


def _cpus(resources: JSON) -> int:
    """torch.go getNumCPUPerNode: the cpu request, else the cpu limit, else 0."""
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    if "cpu" in requests and quantity_value(requests["cpu"]) != 0:
        return quantity_value(requests["cpu"])
    if "cpu" in limits:
        return quantity_value(limits["cpu"])
    return 0


def _pod_spec(rjob: JSON) -> JSON:
    tmpl = rjob.setdefault("template", {})
    job_spec = tmpl.setdefault("spec", {})
    pod = job_spec.setdefault("template", {})
    spec: JSON = pod.setdefault("spec", {})
    return spec


def _ancestor(rjob: JSON) -> str:
    labels = rjob.get("template", {}).get("metadata", {}).get("labels") or {}
    return str(labels.get(ANCESTOR_LABEL, ""))


def _container(rjob: JSON, name: str, init: bool = False) -> JSON | None:
    for c in _pod_spec(rjob).get("initContainers" if init else "containers") or []:
        if c.get("name") == name:
            return c  # type: ignore[no-any-return]
    return None


def _framework(ml: JSON | None) -> str:
    if ml is None:
        return "plain"
    for kind in ("torch", "mpi", "jax"):
        if ml.get(kind) is not None:
            return kind
    return "plain"


def _env(name: str, value: str) -> JSON:
    return {"name": name, "value": value}


def _env_from_index(name: str) -> JSON:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_PATH}}}


# -- rendering --------------------------------------------------------------------------------


def build_jobset(trainjob: JSON, runtime: JSON) -> JSON:
    """The JobSet the Trainer applies for ``trainjob`` built from ``runtime`` (pure).

    Raises :class:`ApiError` when a runtime patch does not strategic-merge (StrategicMergePatch).
    """
    tj_spec = trainjob.get("spec", {})
    trainer: JSON | None = tj_spec.get("trainer")
    rspec = runtime.get("spec", {})
    ml: JSON | None = clone(rspec.get("mlPolicy")) if rspec.get("mlPolicy") is not None else None
    template = clone(rspec.get("template") or {})
    labels = dict(template.get("metadata", {}).get("labels") or {})
    annotations = dict(template.get("metadata", {}).get("annotations") or {})
    patches = [p for p in tj_spec.get("runtimePatches") or [] if isinstance(p, dict)]
    spec: JSON = template.get("spec") or {}
    order = {str(r.get("name")): i for i, r in enumerate(spec.get("replicatedJobs") or [])}
    for patch in patches:  # T6 newRuntimeInfo: metadata of every patch, in order
        pmeta = (patch.get("trainingRuntimeSpec") or {}).get("template", {}).get("metadata") or {}
        labels.update(pmeta.get("labels") or {})
        annotations.update(pmeta.get("annotations") or {})
    for patch in patches:  # T6 mergeRuntimePatches
        pspec = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")
        if isinstance(pspec, dict):
            spec = patch_module.strategic_merge(spec, pspec, JOBSET_MERGE_KEYS)
    rjobs: list[JSON] = sorted(
        spec.get("replicatedJobs") or [], key=lambda r: order.get(str(r.get("name")), 0)
    )
    spec["replicatedJobs"] = rjobs
    kind = _framework(ml)
    mpi: JSON = (ml or {}).get("mpi") or {}
    launcher_as_node = kind == "mpi" and bool(mpi.get("runLauncherAsNode", False))

    # Pod sets and resourcesPerNode (T6 newRuntimeInfo).
    counts: dict[str, int] = {}
    for rjob in rjobs:
        name = str(rjob.get("name"))
        count = int(rjob.get("template", {}).get("spec", {}).get("parallelism", 1))
        ancestor = _ancestor(rjob)
        if ancestor == TRAINER_ANCESTOR and ml is not None:
            count = int(ml.get("numNodes", 1))
        counts[name] = count
        per_node = (trainer or {}).get("resourcesPerNode")
        if isinstance(per_node, dict) and (
            (ancestor == TRAINER_ANCESTOR and ml is not None) or (launcher_as_node and name == NODE)
        ):
            node = _container(rjob, NODE)
            if node is not None:
                node["resources"] = patch_module.strategic_merge(
                    node.get("resources") or {}, per_node, JOBSET_MERGE_KEYS
                )

    trainer_rjob = next((r for r in rjobs if _ancestor(r) == TRAINER_ANCESTOR), None)
    trainer_node = (
        _container(trainer_rjob, NODE) if trainer_rjob is not None and trainer is not None else None
    )
    num_nodes = (trainer or {}).get("numNodes")
    trainer_env = [e for e in (trainer or {}).get("env") or [] if isinstance(e, dict)]

    def runtime_resources() -> JSON:
        for r in rjobs:  # runtime.go ExtractResourcePerNodeFromRuntime
            if r.get("name") == NODE or _ancestor(r) == TRAINER_ANCESTOR:
                node = _container(r, NODE)
                if node is not None and node.get("resources") is not None:
                    res: JSON = node["resources"]
                    return res
        return {}

    per_node_res = (trainer or {}).get("resourcesPerNode") or runtime_resources()
    if kind in ("torch", "jax", "plain") and trainer_rjob is not None and num_nodes is not None:
        counts[str(trainer_rjob.get("name"))] = int(num_nodes)
    if kind == "torch":  # T7 EnforceMLPolicy
        nproc: str = "auto"
        if (trainer or {}).get("numProcPerNode") is not None:
            nproc = str(int(trainer["numProcPerNode"]))  # type: ignore[index]
        if nproc == "auto" and _gpus(per_node_res) == 0:
            nproc = str(max(1, _cpus(per_node_res)))
        if trainer_node is not None:
            upsert(trainer_node.setdefault("env", []), trainer_env)
        nnodes = counts.get(str(trainer_rjob.get("name")), 1) if trainer_rjob is not None else 1
        tj_name = name_of(trainjob)
        pet = [
            _env("PET_NNODES", str(nnodes)),
            _env("PET_NPROC_PER_NODE", nproc),
            _env_from_index("PET_NODE_RANK"),
        ]
        master = [
            _env("PET_MASTER_ADDR", f"{tj_name}-{NODE}-0-0.{tj_name}"),
            _env("PET_MASTER_PORT", str(TRAINER_PORT)),
        ]
        if trainer_node is not None:
            upsert(trainer_node.setdefault("env", []), pet + master)
            upsert(
                trainer_node.setdefault("ports", []),
                [{"containerPort": TRAINER_PORT}],
                "containerPort",
            )
        injection = ((ml or {}).get("torch") or {}).get("envInjection") or {}
        for target in injection.get("targets") or []:
            target_rjob = next((r for r in rjobs if r.get("name") == target.get("jobName")), None)
            for cname in target.get("containerNames") or []:
                if target_rjob is None:
                    continue
                c = _container(target_rjob, cname) or _container(target_rjob, cname, init=True)
                if c is not None:
                    upsert(c.setdefault("env", []), pet + master)
    elif kind == "jax" and trainer_node is not None:  # T9 EnforceMLPolicy
        nnodes = counts.get(str(trainer_rjob.get("name")), 1) if trainer_rjob is not None else 1
        tj_name = name_of(trainjob)
        upsert(
            trainer_node.setdefault("env", []),
            [
                _env("JAX_NUM_PROCESSES", str(nnodes)),
                _env_from_index("JAX_PROCESS_ID"),
                _env("JAX_COORDINATOR_ADDRESS", f"{tj_name}-{NODE}-0-0.{tj_name}:{TRAINER_PORT}"),
            ],
        )
        upsert(
            trainer_node.setdefault("ports", []), [{"containerPort": TRAINER_PORT}], "containerPort"
        )
    elif kind == "plain" and trainer_node is not None:  # plainml.go EnforceMLPolicy
        upsert(trainer_node.setdefault("env", []), trainer_env)
    elif kind == "mpi":  # T8 EnforceMLPolicy
        _enforce_mpi(trainjob, trainer, mpi, rjobs, counts, per_node_res)

    # T4 SyncParallelCount: every pod set's count becomes parallelism = completions.
    for rjob in rjobs:
        pcount = counts.get(str(rjob.get("name")))
        if pcount is not None:
            job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
            job_spec["parallelism"] = pcount
            job_spec["completions"] = pcount

    _initializer(trainjob, rjobs)
    # T5 Builder.Trainer
    for rjob in rjobs:
        ancestor = _ancestor(rjob)
        if ancestor == TRAINER_ANCESTOR:
            rjob["replicas"] = 1
            node = _container(rjob, NODE)
            if node is not None and trainer is not None:
                for fld in ("image", "command", "args"):
                    if trainer.get(fld) is not None:
                        node[fld] = clone(trainer[fld])
        if ancestor == TRAINER_ANCESTOR or (launcher_as_node and rjob.get("name") == NODE):
            node = _container(rjob, NODE)
            if node is not None and trainer is not None:
                upsert(node.setdefault("env", []), trainer_env)

    spec["suspend"] = bool(tj_spec.get("suspend", False))
    m: JSON = {"name": name_of(trainjob), "namespace": namespace_of(trainjob)}
    if labels:
        m["labels"] = labels
    if annotations:
        m["annotations"] = annotations
    m["ownerReferences"] = [owner_reference(trainjob, controller=True, block=True)]
    return {"apiVersion": JOBSETS.api_version, "kind": JOBSETS.kind, "metadata": m, "spec": spec}


def _enforce_mpi(
    trainjob: JSON,
    trainer: JSON | None,
    mpi: JSON,
    rjobs: list[JSON],
    counts: dict[str, int],
    per_node_res: JSON,
) -> None:
    """T8 MPI EnforceMLPolicy: node count, slots, ssh and hostfile volumes, OpenMPI variables."""
    launcher_as_node = bool(mpi.get("runLauncherAsNode", False))
    if trainer and trainer.get("numNodes") is not None and NODE in counts:
        n = int(trainer["numNodes"])
        counts[NODE] = max(n - 1, 1) if launcher_as_node else n
    slots = int(mpi.get("numProcPerNode", 1))
    if trainer and trainer.get("numProcPerNode") is not None:
        slots = int(trainer["numProcPerNode"])
    elif slots == 1 and _gpus(per_node_res) > 1:
        slots = _gpus(per_node_res)
    name = name_of(trainjob)
    ssh_volume = {
        "name": "mpi-ssh-auth",
        "secret": {
            "secretName": f"{name}-mpi-ssh-auth",
            "defaultMode": 0o400,
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
        },
    }
    hostfile_volume = {
        "name": "mpi-hostfile",
        "configMap": {
            "name": f"{name}-mpi-hostfile",
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }
    for rjob in rjobs:
        rname = rjob.get("name")
        if rname not in (NODE, LAUNCHER):
            continue
        pod = _pod_spec(rjob)
        upsert(pod.setdefault("volumes", []), [ssh_volume])
        if rname == LAUNCHER:
            upsert(pod["volumes"], [hostfile_volume])
        node = _container(rjob, NODE)
        if node is None:
            continue
        mounts = node.setdefault("volumeMounts", [])
        upsert(
            mounts,
            [{"name": "mpi-ssh-auth", "mountPath": str(mpi.get("sshAuthMountPath", "/root/.ssh"))}],
        )
        if rname == LAUNCHER:
            upsert(mounts, [{"name": "mpi-hostfile", "mountPath": "/etc/mpi"}])
            upsert(
                node.setdefault("env", []),
                [
                    _env("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
                    _env("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
                    _env("OMPI_MCA_orte_set_default_slots", str(slots)),
                    _env("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
                ],
            )


def _initializer(trainjob: JSON, rjobs: list[JSON]) -> None:
    """T5 Builder.Initializer: replicas 1; STORAGE_URI and env into the initializer container."""
    init = trainjob.get("spec", {}).get("initializer") or {}
    for rjob in rjobs:
        ancestor = _ancestor(rjob)
        if ancestor not in (DATASET_INITIALIZER, MODEL_INITIALIZER):
            continue
        rjob["replicas"] = 1
        cfg = init.get("dataset" if ancestor == DATASET_INITIALIZER else "model")
        c = _container(rjob, ancestor)
        if c is None or not isinstance(cfg, dict):
            continue
        env = c.setdefault("env", [])
        if cfg.get("storageUri") is not None:
            upsert(env, [_env("STORAGE_URI", str(cfg["storageUri"]))])
        upsert(env, [e for e in cfg.get("env") or [] if isinstance(e, dict)])
        secret = cfg.get("secretRef")
        if isinstance(secret, dict):
            c.setdefault("envFrom", []).append({"secretRef": {"name": secret.get("name")}})


def render_jobset(store: Store, trainjob: JSON) -> JSON | None:
    """The JobSet the Trainer would build for ``trainjob`` now; None when its runtime is missing.

    Pure: reads the store (the runtime, or the TrainJob's runtime snapshot), writes nothing.
    The JobSet webhook's defaults are not applied (they are applied when it is written).
    """
    runtime = read_runtime(store, trainjob)
    if runtime is None:
        return None
    try:
        return build_jobset(trainjob, runtime)
    except ApiError:
        return None  # a runtime patch strategic merge refuses


# -- the controller ---------------------------------------------------------------------------


def _is_finished(trainjob: JSON) -> bool:
    """trainjob.IsTrainJobFinished: Complete or Failed is True."""
    return is_true(trainjob, "Complete") or is_true(trainjob, "Failed")


class TrainerController(Controller):
    """Reconciles TrainJobs into JobSets and mirrors the JobSet's state into TrainJob status."""

    name: ClassVar[str] = "trainer"
    primary: ClassVar[ResourceType] = TRAINJOBS
    watches: ClassVar[tuple[ResourceType, ...]] = (
        JOBSETS,
        CLUSTERTRAININGRUNTIMES,
        TRAININGRUNTIMES,
    )

    def keys_for(self, event: Event) -> Iterable[Key]:
        if event.resource in (CLUSTERTRAININGRUNTIMES, TRAININGRUNTIMES):
            name = name_of(event.object)
            kind = event.resource.kind
            out: list[Key] = []
            for tj in self.store.select(TRAINJOBS):
                ref_name, group, ref_kind = runtime_ref(tj)
                same_scope = kind == "ClusterTrainingRuntime" or namespace_of(tj) == namespace_of(
                    event.object
                )
                if ref_name == name and ref_kind == kind and group == TRAINER and same_scope:
                    out.append((namespace_of(tj), name_of(tj)))
            return out
        return super().keys_for(event)

    def reconcile(self, namespace: str, name: str) -> float | None:
        stored = self.store.peek(TRAINJOBS, namespace, name)
        if stored is None or meta(stored).get("deletionTimestamp"):
            return None
        tj = clone(stored)
        managed_by = tj.get("spec", {}).get("managedBy")
        if managed_by not in (None, "", TRAINER_CONTROLLER):
            return None  # T3: managed by an external controller (MultiKueue)
        now = self.cluster.now()
        before = stored.get("status")  # the stored object is never changed: no copy to compare
        failed = condition(tj, "Failed")
        if failed is not None and failed.get("reason") != DEADLINE_REASON:
            remove_condition(tj, "Failed")
        rtype = runtime_type(tj)
        if rtype is None:
            set_condition(
                tj,
                "Failed",
                True,
                NOT_SUPPORTED_REASON,
                f"unsupported runtime: {runtime_kind_key(tj)}",
                now,
            )
        elif not _is_finished(tj):
            self._reconcile_objects(tj)
        self._set_suspended(tj, now)
        if rtype is not None:
            self._copy_jobset_status(tj)
        wake = self._deadline(tj, now)
        if tj.get("status") != before:
            try:
                self.store.update(
                    TRAINJOBS,
                    namespace,
                    name,
                    tj,
                    subresource="status",
                    internal=True,
                    owned=True,
                    copy=False,
                )
            except ApiError:
                return now  # a conflict or a refusal: try again
        return wake

    # -- objects ------------------------------------------------------------------------------

    def _reconcile_objects(self, tj: JSON) -> None:
        """Snapshot the runtime, build the JobSet, create or (while suspended) re-apply it."""
        runtime = read_runtime(self.store, tj)
        if runtime is None:
            return  # T6 errorNotFoundSpecified...Runtime: an error, retried; no condition
        self._ensure_snapshot(tj, runtime)
        namespace, name = namespace_of(tj), name_of(tj)
        mpi = _framework(runtime.get("spec", {}).get("mlPolicy")) == "mpi"
        running = self.store.peek(JOBSETS, namespace, name)
        if (
            not mpi
            and running is not None
            and not tj.get("spec", {}).get("suspend", False)
            and not running.get("spec", {}).get("suspend")
        ):
            return  # T4 Build: a running JobSet is left alone (build_jobset is pure: not built)
        try:
            desired = build_jobset(tj, runtime)
        except ApiError:
            return  # T6 mergeRuntimePatches: StrategicMergePatch's error, retried; no condition
        if mpi:
            self._mpi_objects(tj, runtime, desired)
        current = self.store.peek(JOBSETS, namespace, name)
        try:
            if current is None:
                self.store.create(JOBSETS, namespace, desired, internal=True, copy=False)
                return
            if not desired["spec"]["suspend"] and not current.get("spec", {}).get("suspend"):
                return  # T4 Build: a running JobSet is left alone
            merged = clone(current)
            mm = meta(merged)
            dm = meta(desired)
            for fld in ("labels", "annotations"):
                if dm.get(fld):
                    mm[fld] = {**(mm.get(fld) or {}), **dm[fld]}
            refs = [r for r in mm.get("ownerReferences") or [] if r.get("uid") != uid_of(tj)]
            mm["ownerReferences"] = [*dm["ownerReferences"], *refs]
            merged["spec"] = desired["spec"]  # server-side apply of the fields the Trainer owns
            self.store.update(
                JOBSETS, namespace, name, merged, internal=True, owned=True, copy=False
            )
        except ApiError:
            pass  # T3: the failure is an Event (TrainJobResourcesCreationFailed); retried later

    def _mpi_objects(self, tj: JSON, runtime: JSON, jobset: JSON) -> None:
        """T8 MPI Build: the ssh-auth Secret (once) and the hostfile ConfigMap (kept current).

        The key pair is random bytes from the seeded generator, not a usable key: no ssh runs.
        """
        namespace, name = namespace_of(tj), name_of(tj)
        owner = [owner_reference(tj)]
        if self.store.peek(SECRETS, namespace, f"{name}-mpi-ssh-auth") is None:
            fake = self.cluster.rng.getrandbits(256).to_bytes(32, "big")
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": f"{name}-mpi-ssh-auth",
                    "namespace": namespace,
                    "ownerReferences": owner,
                },
                "type": "kubernetes.io/ssh-auth",
                "immutable": True,
                "data": {
                    "ssh-privatekey": base64.b64encode(b"simulated-private-key:" + fake).decode(),
                    "ssh-publickey": base64.b64encode(b"simulated-public-key:" + fake).decode(),
                },
            }
            with contextlib.suppress(ApiError):
                self.store.create(SECRETS, namespace, secret, internal=True, copy=False)
        mpi = (runtime.get("spec", {}).get("mlPolicy") or {}).get("mpi") or {}
        launcher_as_node = bool(mpi.get("runLauncherAsNode", False))
        lines: list[str] = []
        sub = str((jobset["spec"].get("network") or {}).get("subdomain") or name)
        for rjob in jobset["spec"].get("replicatedJobs") or []:
            rname = rjob.get("name")
            if not (rname == NODE or (launcher_as_node and rname == LAUNCHER)):
                continue
            slots = "1"
            for r in jobset["spec"].get("replicatedJobs") or []:
                c = _container(r, NODE) if r.get("name") == LAUNCHER else None
                for e in (c or {}).get("env") or []:
                    if e.get("name") == "OMPI_MCA_orte_set_default_slots":
                        slots = str(e.get("value"))
            pods = int(rjob.get("template", {}).get("spec", {}).get("parallelism", 1))
            for replica in range(int(rjob.get("replicas", 1))):
                for pod in range(pods):
                    lines.append(f"{name}-{rname}-{replica}-{pod}.{sub} slots={slots}\n")
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"{name}-mpi-hostfile",
                "namespace": namespace,
                "ownerReferences": owner,
            },
            "data": {"hostfile": "".join(lines)},
        }
        current = self.store.peek(CONFIGMAPS, namespace, f"{name}-mpi-hostfile")
        with contextlib.suppress(ApiError):
            if current is None:
                self.store.create(CONFIGMAPS, namespace, body, internal=True, copy=False)
            elif current.get("data") != body["data"]:
                updated = clone(current)
                updated["data"] = body["data"]
                self.store.update(
                    CONFIGMAPS, namespace, meta(current)["name"], updated, internal=True, copy=False
                )

    def _ensure_snapshot(self, tj: JSON, runtime: JSON) -> None:
        """pkg/runtime/core/snapshot.go: a ConfigMap owned by the TrainJob holding the runtime."""
        namespace, name = namespace_of(tj), snapshot_name(tj)
        if self.store.peek(CONFIGMAPS, namespace, name) is not None:
            return
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "ownerReferences": [owner_reference(tj)],
            },
            "data": {SNAPSHOT_KEY: json.dumps(runtime, sort_keys=True)},
        }
        with contextlib.suppress(ApiError):
            self.store.create(CONFIGMAPS, namespace, body, internal=True, copy=False)

    # -- status -------------------------------------------------------------------------------

    def _set_suspended(self, tj: JSON, now: float) -> None:
        """T3 setSuspendedCondition."""
        if tj.get("spec", {}).get("suspend"):
            set_condition(tj, "Suspended", True, "Suspended", SUSPENDED_MESSAGE, now)
        elif (c := condition(tj, "Suspended")) is not None and c.get("status") == "True":
            set_condition(tj, "Suspended", False, "Resumed", RESUMED_MESSAGE, now)

    def _copy_jobset_status(self, tj: JSON) -> None:
        """T4 Status: Completed → Complete, Failed → Failed, replicatedJobsStatus → jobsStatus."""
        js = self.store.peek(JOBSETS, namespace_of(tj), name_of(tj))
        if js is None or (owner := controller_of(js)) is None or owner.get("uid") != uid_of(tj):
            return
        status = tj.setdefault("status", {})
        for source, target in (("Completed", "Complete"), ("Failed", "Failed")):
            c = condition(js, source)
            if c is not None and c.get("status") == "True":
                existing = condition(tj, target)
                if existing is not None and existing.get("reason") == DEADLINE_REASON:
                    continue
                copied = clone(c)
                copied["type"] = target
                conditions = status.setdefault("conditions", [])
                for i, old in enumerate(conditions):
                    if old.get("type") == target:
                        if old.get("status") == copied.get("status"):
                            copied["lastTransitionTime"] = old.get("lastTransitionTime")
                        conditions[i] = copied
                        break
                else:
                    conditions.append(copied)
        jobs = []
        for rj in js.get("status", {}).get("replicatedJobsStatus") or []:
            jobs.append(
                {
                    "name": rj.get("name"),
                    "ready": int(rj.get("ready", 0)),
                    "succeeded": int(rj.get("succeeded", 0)),
                    "failed": int(rj.get("failed", 0)),
                    "active": int(rj.get("active", 0)),
                    "suspended": int(rj.get("suspended", 0)),
                }
            )
        if jobs:
            status["jobsStatus"] = jobs
        else:
            status.pop("jobsStatus", None)

    def _deadline(self, tj: JSON, now: float) -> float | None:
        """T3 reconcileDeadline: from creation or the last resume; on expiry Failed and delete."""
        seconds = int(tj.get("spec", {}).get("activeDeadlineSeconds") or 0)
        if seconds <= 0 or _is_finished(tj) or tj.get("spec", {}).get("suspend"):
            return None
        start_text = meta(tj).get("creationTimestamp")
        suspended = condition(tj, "Suspended")
        if suspended is not None and suspended.get("status") == "False":
            start_text = suspended.get("lastTransitionTime")
        if not start_text:
            return None
        deadline = parse_timestamp(str(start_text)) + seconds
        if now >= deadline:  # a real reconcile lands just after the deadline it asked for
            set_condition(tj, "Failed", True, DEADLINE_REASON, DEADLINE_MESSAGE, now)
            with contextlib.suppress(ApiError):
                self.store.delete(JOBSETS, namespace_of(tj), name_of(tj), internal=True, copy=False)
            return None
        return deadline


__all__ = [
    "TrainerController",
    "build_jobset",
    "read_runtime",
    "render_jobset",
    "runtime_ref",
]
