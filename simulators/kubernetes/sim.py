"""KubeSim: one deterministic Kubernetes cluster with Trainer, JobSet, Job, kubelet and Kueue.

Everything happens under one lock: a request's write goes through admission into the store,
then every controller reconciles, in a fixed order, until the cluster settles; ``advance``
moves the virtual clock, stopping at each time a controller asked for. uids and generated names
come from ``random.Random(seed)``, times from the virtual clock: the same seed and the same
requests give byte-identical answers. ``serve()`` puts the real HTTP API in front of it.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dispatch_core import VirtualClock
from simulators.kubernetes.behaviour import Behaviours
from simulators.kubernetes.config import KubeConfig
from simulators.kubernetes.controllers.base import Cluster, Controller, Runner
from simulators.kubernetes.controllers.gc import GarbageCollector
from simulators.kubernetes.controllers.job import JobController, JobDefaults
from simulators.kubernetes.controllers.jobset import JobSetController
from simulators.kubernetes.controllers.kubelet import Kubelet, TaintEviction
from simulators.kubernetes.controllers.kueue import (
    KueueJobController,
    KueueScheduler,
    WorkloadController,
)
from simulators.kubernetes.controllers.kueue import bootstrap as kueue_bootstrap
from simulators.kubernetes.controllers.namespace import NamespaceController
from simulators.kubernetes.controllers.scheduler import PodValidation, Scheduler
from simulators.kubernetes.controllers.trainer import TrainerController
from simulators.kubernetes.objects import JSON
from simulators.kubernetes.resources import CLUSTERTRAININGRUNTIMES, NAMESPACES, NODES, ResourceType
from simulators.kubernetes.runtimes import catalogue
from simulators.kubernetes.store import Store
from simulators.kubernetes.webhooks import JobSetWebhook, TrainJobWebhook
from simulators.kubernetes.webhooks.kueue import KueueTrainJobWebhook, KueueWorkloadWebhook

if TYPE_CHECKING:
    from simulators.kubernetes.server import Server


class KubeSim:
    """A simulated cluster: ``sim.clock``, ``sim.advance(s)``, ``sim.faults``, ``sim.serve()``."""

    def __init__(
        self, config: KubeConfig | None = None, seed: int = 0, clock: VirtualClock | None = None
    ) -> None:
        self.config = config if config is not None else KubeConfig()
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock = clock if clock is not None else VirtualClock()
        self.lock = threading.RLock()
        self.store = Store(
            rng=self.rng, now=self.clock.now, lock=self.lock, window=self.config.watch_window
        )
        self.cluster = Cluster(self.store, self.clock, self.rng, self.config)
        self.controllers: list[Controller] = self._controllers()
        self.runner = Runner(self.cluster, self.controllers)
        with self.lock:
            self._bootstrap()
            self.runner.settle()
        from simulators.kubernetes.faults import Faults

        self.faults = Faults(self)

    # -- wiring --------------------------------------------------------------------------------

    def _controllers(self) -> list[Controller]:
        """The controllers, in the order they reconcile: Kueue (when installed), Trainer, JobSet,
        Job, the scheduler, the kubelets, the taint manager, namespaces, the garbage collector last.

        Admission runs in the order of ``store.admission``: Kueue's mutating TrainJob webhook
        before the Trainer's (whose ``time`` stamp then covers Kueue's runtime patch), then the
        validations of the built-in kinds and the JobSet webhook.
        """
        cluster = self.cluster
        cluster.behaviours = Behaviours.from_config(self.config)
        if self.config.kueue:
            self.store.admission.extend([KueueTrainJobWebhook(), KueueWorkloadWebhook()])
        self.store.admission.extend(
            [
                TrainJobWebhook(self.store, self.clock.now),
                JobSetWebhook(),
                JobDefaults(),
                PodValidation(),
            ]
        )
        kueue: list[Controller] = []
        if self.config.kueue:
            kueue = [
                KueueJobController(cluster),
                WorkloadController(cluster),
                KueueScheduler(cluster),
            ]
        return [
            *kueue,
            TrainerController(cluster),
            JobSetController(cluster),
            JobController(cluster),
            Scheduler(cluster),
            Kubelet(cluster),
            TaintEviction(cluster),
            NamespaceController(cluster),
            GarbageCollector(cluster),
        ]

    def _bootstrap(self) -> None:
        for namespace in self.config.namespaces:
            self.store.create(
                NAMESPACES, "", _namespace(namespace), internal=True, owned=True, copy=False
            )
        for node in self.config.nodes:
            self.add_node(_node(node))
        for runtime in catalogue(self.config.runtimes):
            self.store.create(
                CLUSTERTRAININGRUNTIMES, "", runtime, internal=True, owned=True, copy=False
            )
        if self.config.kueue:
            for resource, obj in kueue_bootstrap(self.config.queue, self.config.nodes):
                namespace = str(obj.get("metadata", {}).get("namespace", ""))
                self.store.create(resource, namespace, obj, internal=True, copy=False)

    def add_node(self, node: JSON) -> JSON:
        """Create a Node with its status (capacity, allocatable, Ready), as its kubelet would."""
        with self.lock:
            status = node.get("status", {})
            made = self.store.create(NODES, "", node, internal=True)
            made["status"] = status
            name = str(made["metadata"]["name"])
            return self.store.update(NODES, "", name, made, subresource="status", internal=True)

    # -- driving -------------------------------------------------------------------------------

    def settle(self) -> None:
        """Let every controller catch up with the writes so far."""
        with self.lock:
            self.runner.settle()

    def advance(self, seconds: float) -> float:
        """Move virtual time forward, reconciling at every due time on the way; the new time."""
        if seconds < 0:
            raise ValueError(f"time cannot go back ({seconds} s)")
        with self.lock:
            now = self.runner.advance(seconds)
            self.store.changed.notify_all()
            return now

    def create(self, resource: ResourceType, obj: JSON, namespace: str = "") -> JSON:
        """Create an object as a client would (admission included), then settle."""
        with self.lock:
            made = self.store.create(resource, namespace, obj)
            self.runner.settle()
            return made

    def get(self, resource: ResourceType, name: str, namespace: str = "") -> JSON:
        with self.lock:
            return self.store.get(resource, namespace, name)

    @contextlib.contextmanager
    def serve(self, port: int = 0, *, realtime: bool = False) -> Iterator[Server]:
        """The HTTP API on loopback: ``server.url``, ``server.kubeconfig`` (a file path)."""
        from simulators.kubernetes.server import Server

        server = Server(self, port=port, realtime=realtime)
        server.start()
        try:
            yield server
        finally:
            server.stop()


def _namespace(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _node(node: Any) -> JSON:
    capacity = {
        "cpu": str(node.cpu),
        "memory": f"{node.memory // 1024}Ki",
        "pods": str(node.pods),
    }
    if node.gpu:
        capacity["nvidia.com/gpu"] = str(node.gpu)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux"},
        },
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
        },
    }
