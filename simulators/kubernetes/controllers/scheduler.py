"""The scheduler: binds pending pods to nodes that fit, or says why none does.

Modelled (kube-scheduler's default profile, pkg/scheduler/framework/plugins):

- filters per node, in the profile's order, the first failing plugin giving the node's reasons:
  NodeUnschedulable ("node(s) were unschedulable"), TaintToleration ("node(s) had untolerated
  taint {key: value}", NoSchedule/NoExecute taints; a node whose Ready condition is not True
  counts as tainted ``node.kubernetes.io/not-ready`` or ``/unreachable``), NodeAffinity for
  ``nodeSelector`` ("node(s) didn't match Pod's node affinity/selector"), NodeResourcesFit
  ("Insufficient cpu", "Insufficient memory", "Insufficient <extended>", "Too many pods") over
  the sum of container ``resources.requests`` of the node's pods that have not ended;
- the choice among fitting nodes is deterministic: least requested cpu fraction, then name;
- binding sets ``spec.nodeName`` and ``PodScheduled=True``; when nothing fits,
  ``PodScheduled=False`` reason ``Unschedulable`` with FitError's message
  (pkg/scheduler/framework/types.go: "0/%v nodes are available: " + sorted "count reason"
  joined by ", " + "."), followed by DefaultPreemption's " preemption: 0/N nodes are available:
  ..." with "No preemption victims found for incoming pod" (every pod has priority 0) or
  "Preemption is not helpful for scheduling" (unresolvable nodes);
- pods with ``schedulingGates`` get ``PodScheduled=False`` reason ``SchedulingGated``;
- pending pods are retried when a pod ends or goes, and when a node is added or changes;
- ``PodValidation``: an admission plugin for pods (containers required, names, images,
  quantities; defaults restartPolicy, terminationGracePeriodSeconds and the not-ready/unreachable
  tolerations of 300 s the DefaultTolerationSeconds plugin adds).

Not modelled: affinity/anti-affinity, topology spread, priorities and real preemption, ports,
volumes, scheduling cycles and their timing (binding is immediate).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, ClassVar, Final

from simulators.kubernetes import errors
from simulators.kubernetes.controllers.base import Controller
from simulators.kubernetes.errors import ApiError, Cause
from simulators.kubernetes.objects import JSON, meta, set_condition
from simulators.kubernetes.quantity import QuantityError, pod_requests, quantity
from simulators.kubernetes.resources import NODES, PODS, ResourceType
from simulators.kubernetes.store import Event, Key, Request
from simulators.kubernetes.validation import is_dns1123_label

NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
NO_VICTIMS: Final = "No preemption victims found for incoming pod"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
GATED_MESSAGE: Final = "Scheduling is blocked due to non-empty scheduling gates"


def node_ready(node: JSON) -> str:
    """The node's Ready condition status ("True", "False", "Unknown")."""
    for c in node.get("status", {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            return str(c.get("status", "Unknown"))
    return "Unknown"


def node_taints(node: JSON) -> list[JSON]:
    """The node's taints, with the node lifecycle controller's for a node not Ready."""
    taints = [t for t in node.get("spec", {}).get("taints") or [] if isinstance(t, dict)]
    ready = node_ready(node)
    if ready != "True":
        key = UNREACHABLE_TAINT if ready == "Unknown" else NOT_READY_TAINT
        if not any(t.get("key") == key for t in taints):
            taints.append({"key": key, "effect": "NoSchedule"})
    return taints


def tolerates(pod: JSON, taint: JSON) -> bool:
    """Whether one of the pod's tolerations tolerates ``taint`` (core/v1 Toleration rules)."""
    for t in pod.get("spec", {}).get("tolerations") or []:
        if not isinstance(t, dict):
            continue
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        operator = t.get("operator", "Equal")
        if not t.get("key") and operator == "Exists":
            return True
        if t.get("key") != taint.get("key"):
            continue
        if operator == "Exists" or str(t.get("value", "")) == str(taint.get("value", "")):
            return True
    return False


def _active_on_node(pod: JSON) -> bool:
    return bool(pod.get("spec", {}).get("nodeName")) and pod.get("status", {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


class Scheduler(Controller):
    """Binds pods without ``spec.nodeName`` to a node that fits; retries when capacity frees."""

    name: ClassVar[str] = "scheduler"
    primary: ClassVar[ResourceType] = PODS
    watches: ClassVar[tuple[ResourceType, ...]] = (NODES,)

    def __init__(self, cluster: Any) -> None:
        super().__init__(cluster)
        self._pending: set[Key] = set()
        """Pods seen without a node (keys), to retry when capacity frees."""
        self._placed: dict[Key, tuple[str, dict[str, Fraction]]] = {}
        """Pods bound and not ended: their node and requests (kept from events, never scanned)."""
        self._used: dict[str, dict[str, Fraction]] = {}
        for pod in self.store.select(PODS):
            m = meta(pod)
            self._track((str(m.get("namespace", "")), str(m.get("name", ""))), pod)

    def _track(self, key: Key, pod: JSON | None) -> None:
        """Keep the per-node sums of requests as pods are bound, end or go."""
        before = self._placed.pop(key, None)
        if before is not None:
            slot = self._used[before[0]]
            slot["pods"] -= 1
            for resource, amount in before[1].items():
                slot[resource] = slot.get(resource, Fraction(0)) - amount
        if pod is not None and _active_on_node(pod):
            node = str(pod["spec"]["nodeName"])
            requests = pod_requests(pod)
            self._placed[key] = (node, requests)
            slot = self._used.setdefault(node, {"pods": Fraction(0)})
            slot["pods"] += 1
            for resource, amount in requests.items():
                slot[resource] = slot.get(resource, Fraction(0)) + amount

    def keys_for(self, event: Event) -> Iterable[Key]:
        if event.resource is NODES:
            return sorted(self._pending)
        m = meta(event.object)
        key = (str(m.get("namespace", "")), str(m.get("name", "")))
        self._track(key, None if event.type == "DELETED" else event.object)
        if event.type == "DELETED":
            self._pending.discard(key)
            return sorted(self._pending) if event.object.get("spec", {}).get("nodeName") else []
        if not event.object.get("spec", {}).get("nodeName"):
            self._pending.add(key)
            return [key]
        self._pending.discard(key)
        old = event.old
        if old is not None and _active_on_node(old) and not _active_on_node(event.object):
            return sorted(self._pending)
        return []

    def all_keys(self) -> list[Key]:
        return [
            (str(meta(p).get("namespace", "")), str(meta(p).get("name", "")))
            for p in self.store.select(PODS)
            if not p.get("spec", {}).get("nodeName")
        ]

    def reconcile(self, namespace: str, name: str) -> float | None:
        pod = self.store.peek(PODS, namespace, name)
        if pod is None or pod.get("spec", {}).get("nodeName"):
            self._pending.discard((namespace, name))
            return None
        if meta(pod).get("deletionTimestamp"):
            return None
        self._pending.add((namespace, name))
        if pod.get("spec", {}).get("schedulingGates"):
            self._set_scheduled(pod, False, "SchedulingGated", GATED_MESSAGE)
            return None
        node, message = self.choose(pod)
        if node is None:
            self._set_scheduled(pod, False, "Unschedulable", message)
            return None
        self._bind(pod, node)
        return None

    # -- fitting -------------------------------------------------------------------------------

    def _usage(self) -> dict[str, dict[str, Fraction]]:
        return self._used

    def node_reasons(
        self,
        pod: JSON,
        node: JSON,
        used: dict[str, Fraction],
        requests: dict[str, Fraction] | None = None,
    ) -> tuple[list[str], bool]:
        """Why ``pod`` does not fit ``node`` (empty: it fits), and whether preemption could help.

        ``requests`` is the pod's :func:`pod_requests`, when the caller has it already.
        """
        if node.get("spec", {}).get("unschedulable"):
            return ["node(s) were unschedulable"], False
        for taint in node_taints(node):
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(pod, taint):
                return [
                    f"node(s) had untolerated taint {{{taint.get('key', '')}: "
                    f"{taint.get('value', '')}}}"
                ], False
        selector = pod.get("spec", {}).get("nodeSelector") or {}
        labels = meta(node).get("labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            return ["node(s) didn't match Pod's node affinity/selector"], False
        allocatable = node.get("status", {}).get("allocatable") or {}
        reasons: list[str] = []
        resolvable = True
        pods_allowed = _quantity_or_zero(allocatable.get("pods", "0"))
        if used.get("pods", Fraction(0)) + 1 > pods_allowed:
            reasons.append("Too many pods")
        if requests is None:
            requests = pod_requests(pod)
        for resource, amount in sorted(requests.items()):
            if amount <= 0:
                continue
            capacity = _quantity_or_zero(allocatable.get(resource, "0"))
            if used.get(resource, Fraction(0)) + amount > capacity:
                reasons.append(f"Insufficient {resource}")
                if amount > capacity:
                    resolvable = False
        return reasons, resolvable

    def choose(self, pod: JSON) -> tuple[JSON | None, str]:
        """The node to bind to, or None and the Unschedulable message."""
        nodes = self.store.select(NODES)
        if not nodes:
            return None, "no nodes available to schedule pods"
        usage = self._usage()
        requests = pod_requests(pod)
        fitting: list[tuple[Fraction, str, JSON]] = []
        histogram: dict[str, int] = {}
        verdicts: dict[str, int] = {}
        for node in nodes:
            used = usage.get(str(meta(node)["name"]), {})
            reasons, resolvable = self.node_reasons(pod, node, used, requests)
            if not reasons:
                cpu = _quantity_or_zero(
                    (node.get("status", {}).get("allocatable") or {}).get("cpu", "0")
                )
                load = used.get("cpu", Fraction(0)) / cpu if cpu > 0 else Fraction(0)
                fitting.append((load, str(meta(node)["name"]), node))
                continue
            for reason in reasons:
                histogram[reason] = histogram.get(reason, 0) + 1
            verdict = NO_VICTIMS if resolvable else NOT_HELPFUL
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
        if fitting:
            fitting.sort(key=lambda entry: (entry[0], entry[1]))
            return fitting[0][2], ""
        return None, fit_error(len(nodes), histogram, verdicts)

    # -- writes --------------------------------------------------------------------------------

    def _set_scheduled(self, pod: JSON, status: bool, reason: str, message: str) -> None:
        m = meta(pod)
        now = self.cluster.now()

        def change(current: JSON) -> None:
            current.setdefault("status", {}).setdefault("phase", "Pending")
            set_condition(current, "PodScheduled", status, reason, message, now)
            for c in current["status"]["conditions"]:
                if c.get("type") == "PodScheduled":
                    c.setdefault("lastProbeTime", None)
                    if status:
                        c.pop("reason", None)
                        c.pop("message", None)

        with contextlib.suppress(ApiError):
            self.store.mutate(
                PODS, str(m["namespace"]), str(m["name"]), change, subresource="status", copy=False
            )

    def _bind(self, pod: JSON, node: JSON) -> None:
        m = meta(pod)
        node_name = str(meta(node)["name"])

        def bind(current: JSON) -> None:
            current.setdefault("spec", {})["nodeName"] = node_name

        try:
            self.store.mutate(PODS, str(m["namespace"]), str(m["name"]), bind, copy=False)
        except ApiError:
            return
        self._pending.discard((str(m["namespace"]), str(m["name"])))
        self._set_scheduled(pod, True, "", "")


def _quantity_or_zero(value: Any) -> Fraction:
    try:
        return quantity(value)
    except QuantityError:
        return Fraction(0)


def fit_error(total: int, histogram: dict[str, int], verdicts: dict[str, int]) -> str:
    """FitError.Error() plus DefaultPreemption's PostFilter message (framework/types.go)."""
    reasons = ", ".join(sorted(f"{count} {reason}" for reason, count in histogram.items()))
    preemption = ", ".join(sorted(f"{count} {reason}" for reason, count in verdicts.items()))
    return (
        f"0/{total} nodes are available: {reasons}. "
        f"preemption: 0/{total} nodes are available: {preemption}."
    )


DEFAULT_TOLERATIONS: Final = (
    {
        "key": NOT_READY_TAINT,
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": UNREACHABLE_TAINT,
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)
"""plugin/pkg/admission/defaulttolerationseconds: both default to 300 s."""


class PodValidation:
    """Admission for pods: what the API server's validation and defaulting refuse or fill in."""

    def admit(self, request: Request) -> None:
        if request.resource is not PODS or request.operation != "CREATE":
            return
        pod = request.object
        spec = pod.setdefault("spec", {})
        name = str(meta(pod).get("name", ""))
        causes: list[Cause] = []
        containers = spec.get("containers")
        if not isinstance(containers, list) or not containers:
            causes.append(Cause("spec.containers", "Required value", "FieldValueRequired"))
            containers = []
        seen: set[str] = set()
        for i, container in enumerate(containers):
            path = f"spec.containers[{i}]"
            if not isinstance(container, dict):
                causes.append(Cause(path, "Invalid value: must be an object"))
                continue
            cname = container.get("name")
            if not cname:
                causes.append(Cause(f"{path}.name", "Required value", "FieldValueRequired"))
            elif problems := is_dns1123_label(cname if isinstance(cname, str) else ""):
                causes.extend(
                    Cause(f"{path}.name", f'Invalid value: "{cname}": {p}') for p in problems
                )
            elif cname in seen:
                causes.append(
                    Cause(f"{path}.name", f'Duplicate value: "{cname}"', "FieldValueDuplicate")
                )
            else:
                seen.add(cname)
            if not container.get("image"):
                causes.append(Cause(f"{path}.image", "Required value", "FieldValueRequired"))
            resources = container.get("resources") or {}
            for section in ("requests", "limits"):
                for resource, value in sorted((resources.get(section) or {}).items()):
                    try:
                        quantity(value)
                    except QuantityError as exc:
                        causes.append(
                            Cause(
                                f"{path}.resources.{section}[{resource}]",
                                f'Invalid value: "{value}": {exc}',
                            )
                        )
        policy = spec.setdefault("restartPolicy", "Always")
        if policy not in ("Always", "OnFailure", "Never"):
            causes.append(
                Cause(
                    "spec.restartPolicy",
                    f'Unsupported value: "{policy}": supported values: "Always", '
                    '"OnFailure", "Never"',
                    "FieldValueNotSupported",
                )
            )
        if causes:
            raise errors.invalid("Pod", "", name, causes)
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        tolerations = spec.setdefault("tolerations", [])
        for default in DEFAULT_TOLERATIONS:
            if not any(
                isinstance(t, dict)
                and t.get("key") == default["key"]
                and t.get("effect") in (None, "", "NoExecute")
                for t in tolerations
            ):
                tolerations.append(dict(default))
        pod.setdefault("status", {})
        request.object["status"] = {"phase": "Pending"}
