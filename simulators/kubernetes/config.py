"""KubeConfig: the simulated cluster's nodes, whether Kueue is installed, and its runtimes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

STOCK_RUNTIMES: Final = ("torch-distributed", "deepspeed-distributed", "jax-distributed")
IDENTITY_RUNTIME: Final = "dispatch-identity"
"""The identity-keeping runtime: its trainer Job has restartPolicy Never and backoffLimit 0."""


@dataclass(frozen=True)
class NodeConfig:
    """One node and what it can hold (``cpu`` in cores, ``memory`` in bytes)."""

    name: str
    cpu: int = 8
    memory: int = 32 * 1024**3
    pods: int = 110
    gpu: int = 0


def default_nodes() -> tuple[NodeConfig, ...]:
    return tuple(NodeConfig(f"node-{i}") for i in range(4))


@dataclass(frozen=True)
class QueueConfig:
    """Kueue's objects when installed: one ResourceFlavor, one ClusterQueue, one LocalQueue."""

    cluster_queue: str = "cluster-queue"
    local_queue: str = "user-queue"
    namespace: str = "default"
    flavor: str = "default-flavor"
    cpu: int | None = None
    """The ClusterQueue's nominal cpu quota; None: the nodes' total."""
    memory: int | None = None
    """The ClusterQueue's nominal memory quota in bytes; None: the nodes' total."""
    pods: int | None = None
    """The ClusterQueue's nominal quota of Kueue's ``pods`` resource (each podSet then asks for
    its count of pods, whatever its containers request); None: pods are not covered."""
    admission_checks: tuple[str, ...] = ()
    """AdmissionCheck names the ClusterQueue lists (each made with the given controllerName)."""
    admission_check_controller: str = "dispatch.io/readmission-gate"


@dataclass(frozen=True)
class KubeConfig:
    """The simulated cluster.

    ``kueue``: whether Kueue is installed (with ``queue``'s objects). ``runtimes``: the
    ClusterTrainingRuntimes in the catalogue (stock names plus ``dispatch-identity``).
    ``pod_start_seconds``: virtual time from a pod's binding to its containers running (image
    pull and create). ``default_run_seconds``/``default_exit_code``: how a container behaves when
    nothing says otherwise. ``watch_window``: events kept per resource for watch resumes.
    ``kube_minor``: what ``/version`` reports (kubectl's dispatcher picks its client by it).
    """

    nodes: tuple[NodeConfig, ...] = field(default_factory=default_nodes)
    kueue: bool = False
    queue: QueueConfig = field(default_factory=QueueConfig)
    runtimes: tuple[str, ...] = (*STOCK_RUNTIMES, IDENTITY_RUNTIME)
    namespaces: tuple[str, ...] = ("default", "kube-system", "kube-public")
    pod_start_seconds: float = 2.0
    default_run_seconds: float | None = 60.0
    """None: containers run until stopped."""
    default_exit_code: int = 0
    watch_window: int = 10_000
    kube_minor: int = 32
    image_pull_backoff_max: float = 300.0
    """The kubelet's image pull back-off cap (seconds)."""
    reaction_seconds: float = 0.0
    """Virtual time from an event to the reconcile of each controller it concerns (every hop of
    a chain: the Trainer suspends the JobSet, the JobSet its Jobs, ...). Real controllers react
    to their informers' events after the write has answered; 0 (the default) reacts within the
    request."""
    gc_seconds: float = 0.0
    """Virtual time from an object's foreground or orphan deletion to the garbage collector
    acting on it (deleting or orphaning its dependents, then dropping its finalizer). The real
    collector works from its informers' events, after the DELETE has answered, so a read right
    after such a DELETE still finds the object, marked; each owner in a chain waits its turn.
    0 (the default) acts within the request: ``kubectl delete`` waits for the object to go,
    which against a clock moved only by ``advance`` would be for ever. The conformance
    harnesses, whose adapters' pauses move the clock, use 0.5."""
