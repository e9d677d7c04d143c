"""Named faults of the simulated cluster, each one call, each recorded in ``sim.faults.fired``.

Faults of the API itself, consulted by the HTTP server for every request:

- ``refuse_next(verb, resource, name, code)``: the next matching request is answered 409
  Conflict or 500 InternalError *before* it takes effect;
- ``lose_next_reply(verb, resource, name)``: the next matching request takes effect, and the
  server then closes the connection without answering (the client sees the connection drop);
- ``cut_watches()``: every open watch stream ends now (clients resume from their last version).

Faults of the cluster, each acting now and settling the controllers after:

- ``lose_node(node)``: the node stops reporting (Ready Unknown, the unreachable taints); its pods
  are deleted by the taint manager when their 300 s toleration runs out;
- ``evict_pod(namespace, pod)``: node-pressure eviction (Failed, reason Evicted, grace 0);
- ``oom_kill(namespace, pod, container=None)``: the container ends OOMKilled, exit 137;
- ``preempt_pod(namespace, pod)``: the scheduler preempts the pod (DisruptionTarget, deleted);
- ``image_pull_failure(image=None, ...)``: containers that match pull with ErrImagePull and back
  off (ImagePullBackOff) from now on; this never fails a Job by itself;
- ``unschedulable(node=None)``: the node (every node by default) is cordoned; ``schedulable``
  undoes it;
- ``kueue_preempt(namespace, workload, preemptor=None)``, ``deactivate(namespace, workload)``
  and ``reactivate(namespace, workload)``: Kueue evicts the admitted Workload (Preempted,
  requeued), or an administrator deactivates it (evicted, not requeued) or reactivates it;
- ``admin_delete(resource, namespace, name)`` and ``admin_suspend(namespace, trainjob)``: an
  administrator deletes or suspends the object underneath its owner.

Each raises :class:`FaultError` (nothing changed) when it cannot hit what it is aimed at.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.resources import NODES, TRAINJOBS, ResourceType

if TYPE_CHECKING:
    from simulators.kubernetes.controllers.base import Cluster
    from simulators.kubernetes.objects import JSON
    from simulators.kubernetes.sim import KubeSim

T = TypeVar("T")

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


class FaultError(ValueError):
    """A fault aimed at nothing it can hit, or with arguments it cannot take."""


@dataclass(frozen=True)
class Armed:
    """A one-shot API fault waiting for the next request that matches it."""

    kind: Literal["refuse", "lose_reply", "time_out"]
    verb: str | None = None
    resource: str | None = None
    name: str | None = None
    code: int = 500

    def matches(self, verb: str, resource: str, name: str) -> bool:
        return (
            (self.verb is None or self.verb == verb)
            and (self.resource is None or self.resource == resource)
            and (self.name is None or self.name == name)
        )


@dataclass
class Fired:
    """What a fault did, for the test that asked for it and for its failure message."""

    fault: str
    target: str
    detail: str = ""


@dataclass
class _State:
    armed: list[Armed] = field(default_factory=list)
    fired: list[Fired] = field(default_factory=list)
    watch_epoch: int = 0


class Faults:
    """``sim.faults``: what a real cluster does to an adapter, one named call each."""

    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self._state = _State()

    @property
    def fired(self) -> list[Fired]:
        return list(self._state.fired)

    @property
    def watch_epoch(self) -> int:
        """Grows by one at each ``cut_watches``; a stream opened in an older epoch ends."""
        return self._state.watch_epoch

    def _check(self, verb: str | None) -> None:
        if verb is not None and verb not in VERBS:
            raise FaultError(f"unknown verb {verb!r}; one of {', '.join(VERBS)}")

    def refuse_next(
        self,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        code: int = 500,
    ) -> None:
        """The next matching request is refused with ``code`` (409 or 500) before it applies."""
        self._check(verb)
        if code not in (409, 500):
            raise FaultError(f"a refusal is 409 or 500, not {code}")
        with self.sim.lock:
            self._state.armed.append(Armed("refuse", verb, resource, name, code))

    def lose_next_reply(
        self, verb: str | None = None, resource: str | None = None, name: str | None = None
    ) -> None:
        """The next matching request applies, and its reply never reaches the client."""
        self._check(verb)
        with self.sim.lock:
            self._state.armed.append(Armed("lose_reply", verb, resource, name))

    def time_out_after_effect(
        self, verb: str | None = None, resource: str | None = None, name: str | None = None
    ) -> None:
        """The next matching request applies, and the client gets the timeout filter's 504
        (``Timeout: request did not complete within the allotted timeout``): the write landed
        though the answer says the request did not complete."""
        self._check(verb)
        with self.sim.lock:
            self._state.armed.append(Armed("time_out", verb, resource, name, 504))

    def cut_watches(self) -> None:
        """Every open watch stream ends now."""
        with self.sim.lock:
            self._state.watch_epoch += 1
            self._state.fired.append(Fired("cut_watches", "*"))
            self.sim.store.changed.notify_all()

    def take(self, verb: str, resource: str, name: str) -> Armed | None:
        """The armed API fault this request triggers, disarmed (the server calls this)."""
        with self.sim.lock:
            for index, armed in enumerate(self._state.armed):
                if armed.matches(verb, resource, name):
                    del self._state.armed[index]
                    self._state.fired.append(
                        Fired(armed.kind, f"{verb} {resource}/{name}".rstrip("/"), str(armed.code))
                    )
                    return armed
            return None

    def record(self, fault: str, target: str, detail: str = "") -> None:
        """Note a cluster fault that fired (the controllers' fault functions call this)."""
        self._state.fired.append(Fired(fault, target, detail))

    # -- faults of the cluster -----------------------------------------------------------------

    def _act(self, fault: str, target: str, act: Callable[[Cluster], T]) -> T:
        """Run one cluster fault under the lock, record it, and let the controllers settle."""
        with self.sim.lock:
            try:
                result = act(self.sim.cluster)
            except ApiError as error:
                raise FaultError(f"{fault} {target}: {error.message}") from None
            self._state.fired.append(
                Fired(fault, target, result if isinstance(result, str) else "")
            )
            self.sim.runner.settle()
            return result

    def lose_node(self, node: str) -> str:
        """The node stops reporting; its pods go when their unreachable toleration runs out."""
        from simulators.kubernetes.controllers.kubelet import lose_node

        return self._act("lose_node", node, lambda c: lose_node(c, node))

    def evict_pod(self, namespace: str, pod: str, reason: str = "Evicted") -> str:
        """Node-pressure eviction of the pod: Failed, ``status.reason`` Evicted, grace 0."""
        from simulators.kubernetes.controllers.kubelet import evict_pod

        return self._act(
            "evict_pod", f"{namespace}/{pod}", lambda c: evict_pod(c, namespace, pod, reason)
        )

    def oom_kill(self, namespace: str, pod: str, container: str | None = None) -> str:
        """The container (the first running one by default) is OOM-killed now."""
        from simulators.kubernetes.controllers.kubelet import oom_kill

        return self._act(
            "oom_kill", f"{namespace}/{pod}", lambda c: oom_kill(c, namespace, pod, container)
        )

    def preempt_pod(self, namespace: str, pod: str) -> str:
        """The scheduler preempts the pod (DisruptionTarget PreemptionByScheduler), deleting it."""
        from simulators.kubernetes.controllers.kubelet import preempt_pod

        return self._act(
            "preempt_pod", f"{namespace}/{pod}", lambda c: preempt_pod(c, namespace, pod)
        )

    def image_pull_failure(
        self,
        image: str | None = None,
        *,
        namespace: str | None = None,
        pod_labels: Mapping[str, str] | None = None,
    ) -> str:
        """Containers that match (every one by default) fail to pull their image from now on."""
        from simulators.kubernetes.behaviour import Behaviour

        def act(cluster: Cluster) -> str:
            cluster.behaviours.add(
                Behaviour(image_pull="ErrImagePull"),
                image=image,
                namespace=namespace,
                pod_labels=pod_labels,
            )
            return f"image pulls fail for {image or 'every image'}"

        return self._act("image_pull_failure", image or "*", act)

    def unschedulable(self, node: str | None = None) -> str:
        """Cordon the node (every node by default): nothing new is scheduled there."""
        return self._cordon(node, True)

    def schedulable(self, node: str | None = None) -> str:
        """Undo :meth:`unschedulable`."""
        return self._cordon(node, False)

    def _cordon(self, node: str | None, cordoned: bool) -> str:
        def act(cluster: Cluster) -> str:
            names = [node] if node is not None else [k[1] for k in cluster.store.keys(NODES)]
            for name in names:
                if cluster.store.peek(NODES, "", name) is None:
                    raise FaultError(f"no node {name!r}")

                def change(obj: JSON) -> None:
                    spec = obj.setdefault("spec", {})
                    if cordoned:
                        spec["unschedulable"] = True
                    else:
                        spec.pop("unschedulable", None)

                cluster.store.mutate(NODES, "", name, change, copy=False)
            return f"{'cordoned' if cordoned else 'uncordoned'} {', '.join(names)}"

        return self._act("unschedulable" if cordoned else "schedulable", node or "*", act)

    def kueue_preempt(self, namespace: str, workload: str, preemptor: str | None = None) -> JSON:
        """Kueue preempts the admitted Workload: Evicted (Preempted), then requeued; the
        message names the ``preemptor`` Workload of the same namespace, when one is given."""
        from simulators.kubernetes.controllers.kueue import preempt

        self._need_kueue()
        return self._act(
            "kueue_preempt",
            f"{namespace}/{workload}",
            lambda c: preempt(c, namespace, workload, preemptor),
        )

    def deactivate(self, namespace: str, workload: str) -> JSON:
        """An administrator sets the Workload's ``spec.active=false``: evicted, not requeued."""
        from simulators.kubernetes.controllers.kueue import deactivate

        self._need_kueue()
        return self._act(
            "deactivate", f"{namespace}/{workload}", lambda c: deactivate(c, namespace, workload)
        )

    def reactivate(self, namespace: str, workload: str) -> JSON:
        """An administrator sets the deactivated Workload's ``spec.active=true`` again: Kueue
        requeues it (``Requeued=True``, reason ``Reactivated``)."""
        from simulators.kubernetes.controllers.kueue import reactivate

        self._need_kueue()
        return self._act(
            "reactivate", f"{namespace}/{workload}", lambda c: reactivate(c, namespace, workload)
        )

    def _need_kueue(self) -> None:
        if not self.sim.config.kueue:
            raise FaultError("Kueue is not installed in this simulator (KubeConfig(kueue=True))")

    def admin_delete(
        self, resource: ResourceType, namespace: str, name: str, propagation: str = "Background"
    ) -> JSON:
        """An administrator deletes the object (the owner's adapter is not asked)."""
        if propagation not in ("Background", "Foreground", "Orphan"):
            raise FaultError(
                f"propagation is Background, Foreground or Orphan, not {propagation!r}"
            )

        def act(cluster: Cluster) -> JSON:
            return cluster.store.delete(resource, namespace, name, propagation=propagation)  # type: ignore[arg-type]

        return self._act("admin_delete", f"{resource.plural}/{namespace}/{name}", act)

    def admin_suspend(self, namespace: str, trainjob: str) -> JSON:
        """An administrator sets the TrainJob's ``spec.suspend=true``."""

        def act(cluster: Cluster) -> JSON:
            def change(obj: JSON) -> None:
                obj.setdefault("spec", {})["suspend"] = True

            return cluster.store.mutate(TRAINJOBS, namespace, trainjob, change, internal=False)

        return self._act("admin_suspend", f"{namespace}/{trainjob}", act)
