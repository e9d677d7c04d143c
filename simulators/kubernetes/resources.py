"""The resource types the simulated API server serves, as discovery describes them.

One :class:`ResourceType` per REST resource: its group, version, kind, plural and singular names,
short names, scope, subresources, and whether it is a built-in (core) kind. Strategic merge patch
is accepted only for built-in kinds; a custom resource answers 415 to it, as a real API server
does. ``RESOURCES`` is the catalogue; ``by_path`` and ``by_kind`` look types up without a scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One REST resource (``pods``, ``trainjobs``): where it lives and what it is."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    builtin: bool = False
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def key(self) -> tuple[str, str]:
        """``(group, plural)``: what identifies a resource across versions."""
        return (self.group, self.plural)


CORE: Final = ""
BATCH: Final = "batch"
JOBSET: Final = "jobset.x-k8s.io"
TRAINER: Final = "trainer.kubeflow.org"
KUEUE: Final = "kueue.x-k8s.io"
KUEUE_VERSION: Final = "v1beta2"

NAMESPACES: Final = ResourceType(
    CORE, "v1", "Namespace", "namespaces", "namespace", False, ("ns",), ("status",), True
)
NODES: Final = ResourceType(CORE, "v1", "Node", "nodes", "node", False, ("no",), ("status",), True)
PODS: Final = ResourceType(
    CORE, "v1", "Pod", "pods", "pod", True, ("po",), ("status", "log"), True, ("all",)
)
SERVICES: Final = ResourceType(
    CORE, "v1", "Service", "services", "service", True, ("svc",), ("status",), True, ("all",)
)
EVENTS: Final = ResourceType(CORE, "v1", "Event", "events", "event", True, ("ev",), (), True)
CONFIGMAPS: Final = ResourceType(
    CORE, "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",), (), True
)
SECRETS: Final = ResourceType(CORE, "v1", "Secret", "secrets", "secret", True, (), (), True)
JOBS: Final = ResourceType(BATCH, "v1", "Job", "jobs", "job", True, (), ("status",), True, ("all",))
JOBSETS: Final = ResourceType(
    JOBSET, "v1alpha2", "JobSet", "jobsets", "jobset", True, (), ("status",)
)
# kubeflow/trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go: no short name
TRAINJOBS: Final = ResourceType(
    TRAINER, "v1alpha1", "TrainJob", "trainjobs", "trainjob", True, (), ("status",)
)
TRAININGRUNTIMES: Final = ResourceType(
    TRAINER, "v1alpha1", "TrainingRuntime", "trainingruntimes", "trainingruntime", True
)
CLUSTERTRAININGRUNTIMES: Final = ResourceType(
    TRAINER,
    "v1alpha1",
    "ClusterTrainingRuntime",
    "clustertrainingruntimes",
    "clustertrainingruntime",
    False,
)
# kueue apis/kueue/v1beta2/workload_types.go: shortName={kwl,kueueworkload,kueueworkloads}
WORKLOADS: Final = ResourceType(
    KUEUE,
    KUEUE_VERSION,
    "Workload",
    "workloads",
    "workload",
    True,
    ("kwl", "kueueworkload", "kueueworkloads"),
    ("status",),
)
LOCALQUEUES: Final = ResourceType(
    KUEUE,
    KUEUE_VERSION,
    "LocalQueue",
    "localqueues",
    "localqueue",
    True,
    ("queue", "queues", "lq"),
    ("status",),
)
CLUSTERQUEUES: Final = ResourceType(
    KUEUE,
    KUEUE_VERSION,
    "ClusterQueue",
    "clusterqueues",
    "clusterqueue",
    False,
    ("cq",),
    ("status",),
)
RESOURCEFLAVORS: Final = ResourceType(
    KUEUE, KUEUE_VERSION, "ResourceFlavor", "resourceflavors", "resourceflavor", False, ("rf",)
)
ADMISSIONCHECKS: Final = ResourceType(
    KUEUE,
    KUEUE_VERSION,
    "AdmissionCheck",
    "admissionchecks",
    "admissioncheck",
    False,
    (),
    ("status",),
)

RESOURCES: Final[tuple[ResourceType, ...]] = (
    NAMESPACES,
    NODES,
    PODS,
    SERVICES,
    EVENTS,
    CONFIGMAPS,
    SECRETS,
    JOBS,
    JOBSETS,
    TRAINJOBS,
    TRAININGRUNTIMES,
    CLUSTERTRAININGRUNTIMES,
    WORKLOADS,
    LOCALQUEUES,
    CLUSTERQUEUES,
    RESOURCEFLAVORS,
    ADMISSIONCHECKS,
)
KUEUE_RESOURCES: Final = frozenset(r.key for r in RESOURCES if r.group == KUEUE)

_BY_PATH: Final = {(r.group, r.version, r.plural): r for r in RESOURCES}
_BY_KIND: Final = {(r.api_version, r.kind): r for r in RESOURCES}


def by_path(group: str, version: str, plural: str) -> ResourceType | None:
    """The type served at ``/apis/<group>/<version>/<plural>`` (``/api/v1/<plural>`` for core)."""
    return _BY_PATH.get((group, version, plural))


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    """The type of an object whose ``apiVersion`` and ``kind`` are given."""
    return _BY_KIND.get((api_version, kind))


def groups(
    resources: tuple[ResourceType, ...] = RESOURCES,
) -> dict[str, dict[str, list[ResourceType]]]:
    """``{group: {version: [types]}}`` in catalogue order, for discovery."""
    out: dict[str, dict[str, list[ResourceType]]] = {}
    for r in resources:
        out.setdefault(r.group, {}).setdefault(r.version, []).append(r)
    return out
