"""Server-side printing: ``meta.k8s.io/v1`` Tables, as kubectl asks for them (``as=Table``).

Columns follow the built-in printers of kubernetes v1.32 (pkg/printers/internalversion/
printers.go: pods NAME READY STATUS RESTARTS AGE, jobs, nodes, namespaces) and the CRDs'
``additionalPrinterColumns`` (trainer: ``State`` = ``.status.conditions[-1:].type``; JobSet;
Kueue Workload). Cells are printed verbatim by kubectl, so ages are made human here with the
rules of k8s.io/apimachinery/pkg/util/duration.HumanDuration, from the virtual clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from simulators.kubernetes.objects import JSON, condition, meta, parse_timestamp
from simulators.kubernetes.resources import (
    CLUSTERQUEUES,
    JOBS,
    JOBSETS,
    LOCALQUEUES,
    NAMESPACES,
    NODES,
    PODS,
    SERVICES,
    TRAINJOBS,
    WORKLOADS,
    ResourceType,
)

TABLE_CONTENT_TYPE: Final = "application/json;as=Table;v=v1;g=meta.k8s.io"


def wants_table(accept: str) -> bool:
    """Whether the Accept header asks for a Table (kubectl's ``get`` without ``-o``)."""
    return "as=Table" in accept.replace(" ", "")


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: 5s, 119s, 3m2s, 10m, 4h, 7h5m, 2d, 3d4h, 400d, 2y10d, 9y."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _age(obj: JSON, now: float) -> str:
    created = meta(obj).get("creationTimestamp")
    if not isinstance(created, str):
        return "<unknown>"
    try:
        return human_duration(now - parse_timestamp(created))
    except ValueError:
        return "<unknown>"


Column = tuple[str, str, str, int]  # name, type, format, priority
Cells = Callable[[JSON, float], list[Any]]


def _col(name: str, kind: str = "string", fmt: str = "", priority: int = 0) -> Column:
    return (name, kind, fmt, priority)


NAME: Final = _col("Name", fmt="name")
AGE: Final = _col("Age", "string")


def _pod_status(pod: JSON) -> str:
    """printPod's STATUS: Terminating, the pod's reason, a container's reason, the phase."""
    status = pod.get("status", {})
    reason = str(status.get("reason") or status.get("phase") or "Unknown")
    for c in status.get("initContainerStatuses", []) or []:
        state = c.get("state", {})
        if "terminated" in state and state["terminated"].get("exitCode", 0) != 0:
            return f"Init:{state['terminated'].get('reason') or 'Error'}"
        if "waiting" in state and state["waiting"].get("reason") not in (None, "PodInitializing"):
            return f"Init:{state['waiting']['reason']}"
    for c in reversed(status.get("containerStatuses", []) or []):
        state = c.get("state", {})
        if "waiting" in state and state["waiting"].get("reason"):
            reason = str(state["waiting"]["reason"])
        elif "terminated" in state:
            t = state["terminated"]
            reason = str(t.get("reason") or f"ExitCode:{t.get('exitCode', 0)}")
    if meta(pod).get("deletionTimestamp"):
        return "Terminating"
    return reason


def _pod_cells(pod: JSON, now: float) -> list[Any]:
    statuses = pod.get("status", {}).get("containerStatuses", []) or []
    total = len(pod.get("spec", {}).get("containers", []) or [])
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    status = pod.get("status", {})
    return [
        meta(pod).get("name"),
        f"{ready}/{total}",
        _pod_status(pod),
        restarts,
        _age(pod, now),
        status.get("podIP") or "<none>",
        pod.get("spec", {}).get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        _readiness_gates(pod),
    ]


def _readiness_gates(pod: JSON) -> str:
    """printPod's READINESS GATES: ``<none>``, else how many of the gates' conditions are True."""
    gates = pod.get("spec", {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    kinds = [g.get("conditionType") for g in gates if isinstance(g, dict)]
    true = sum(1 for k in kinds if isinstance(k, str) and _cond_status(pod, k) == "True")
    return f"{true}/{len(gates)}"


def _selector_text(selector: Any) -> str:
    """metav1.FormatLabelSelector: ``k=v`` terms, then ``k in (a,b)``-style expressions."""
    if not isinstance(selector, dict):
        return "<none>"
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            terms.append(str(key))
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms) or "<none>"


def _containers_and_images(spec: JSON) -> tuple[str, str]:
    containers = spec.get("template", {}).get("spec", {}).get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return names, images


def _job_status(job: JSON) -> str:
    """printJob's STATUS (v1.32): Complete, Failed, Suspended, ..., Running."""
    for kind in ("Complete", "Failed", "SuccessCriteriaMet", "FailureTarget", "Suspended"):
        c = condition(job, kind)
        if c is not None and c.get("status") == "True":
            return kind
    if meta(job).get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def _job_cells(job: JSON, now: float) -> list[Any]:
    spec = job.get("spec", {})
    status = job.get("status", {})
    completions = spec.get("completions")
    succeeded = int(status.get("succeeded", 0))
    shown = (
        f"{succeeded}/{completions}"
        if completions is not None
        else f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    )
    duration = ""
    start = status.get("startTime")
    if isinstance(start, str):
        end = status.get("completionTime")
        try:
            until = parse_timestamp(end) if isinstance(end, str) else now
            duration = human_duration(until - parse_timestamp(start))
        except ValueError:
            duration = ""
    names, images = _containers_and_images(spec)
    return [
        meta(job).get("name"),
        _job_status(job),
        shown,
        duration,
        _age(job, now),
        names,
        images,
        _selector_text(spec.get("selector")),
    ]


def _cond_status(obj: JSON, kind: str) -> Any:
    c = condition(obj, kind)
    return None if c is None else c.get("status")


def _trainjob_cells(tj: JSON, now: float) -> list[Any]:
    conditions = tj.get("status", {}).get("conditions") or []
    state = conditions[-1].get("type") if conditions and isinstance(conditions[-1], dict) else None
    return [meta(tj).get("name"), state, _age(tj, now)]


def _jobset_cells(js: JSON, now: float) -> list[Any]:
    status = js.get("status", {})
    return [
        meta(js).get("name"),
        status.get("terminalState"),
        status.get("restarts"),
        _cond_status(js, "Completed"),
        js.get("spec", {}).get("suspend"),
        _age(js, now),
    ]


def _workload_cells(wl: JSON, now: float) -> list[Any]:
    return [
        meta(wl).get("name"),
        wl.get("spec", {}).get("queueName"),
        (wl.get("status", {}).get("admission") or {}).get("clusterQueue"),
        _cond_status(wl, "Admitted"),
        _cond_status(wl, "Finished"),
        _age(wl, now),
    ]


def _node_cells(node: JSON, now: float) -> list[Any]:
    ready = condition(node, "Ready")
    status = "Ready" if ready is not None and ready.get("status") == "True" else "NotReady"
    if node.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = sorted(
        k.split("/", 1)[1]
        for k in (meta(node).get("labels") or {})
        if k.startswith("node-role.kubernetes.io/")
    )
    version = node.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", "")
    info = node.get("status", {}).get("nodeInfo", {})
    addresses = node.get("status", {}).get("addresses") or []

    def address(kind: str) -> str:
        found = [a.get("address") for a in addresses if a.get("type") == kind]
        return str(found[0]) if found else "<none>"

    return [
        meta(node).get("name"),
        status,
        ",".join(roles) or "<none>",
        _age(node, now),
        version,
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _service_cells(svc: JSON, now: float) -> list[Any]:
    """printService: TYPE (ClusterIP when unset, the server's default), CLUSTER-IP,
    EXTERNAL-IP, PORT(S) as ``port[:nodePort]/protocol``, AGE, SELECTOR."""
    spec = svc.get("spec", {})
    kind = spec.get("type") or "ClusterIP"
    external = ",".join(spec.get("externalIPs") or []) or "<none>"
    ports = []
    for p in spec.get("ports") or []:
        node_port = f":{p['nodePort']}" if p.get("nodePort") else ""
        ports.append(f"{p.get('port')}{node_port}/{p.get('protocol') or 'TCP'}")
    selector = spec.get("selector") or {}
    return [
        meta(svc).get("name"),
        kind,
        spec.get("clusterIP") or "<none>",
        external,
        ",".join(ports) or "<none>",
        _age(svc, now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


def _cluster_queue_cells(cq: JSON, now: float) -> list[Any]:
    del now
    spec, status = cq.get("spec", {}), cq.get("status", {})
    return [
        meta(cq).get("name"),
        spec.get("cohortName"),
        spec.get("queueingStrategy"),
        status.get("pendingWorkloads"),
        status.get("admittedWorkloads"),
    ]


def _local_queue_cells(lq: JSON, now: float) -> list[Any]:
    del now
    status = lq.get("status", {})
    return [
        meta(lq).get("name"),
        lq.get("spec", {}).get("clusterQueue"),
        status.get("pendingWorkloads"),
        status.get("admittedWorkloads"),
    ]


def _namespace_cells(ns: JSON, now: float) -> list[Any]:
    return [meta(ns).get("name"), ns.get("status", {}).get("phase"), _age(ns, now)]


def _default_cells(obj: JSON, now: float) -> list[Any]:
    return [meta(obj).get("name"), _age(obj, now)]


PRINTERS: Final[dict[tuple[str, str], tuple[tuple[Column, ...], Cells]]] = {
    PODS.key: (
        (
            NAME,
            _col("Ready"),
            _col("Status"),
            _col("Restarts", "string"),
            AGE,
            _col("IP", priority=1),
            _col("Node", priority=1),
            _col("Nominated Node", priority=1),
            _col("Readiness Gates", priority=1),
        ),
        _pod_cells,
    ),
    JOBS.key: (
        (
            NAME,
            _col("Status"),
            _col("Completions"),
            _col("Duration"),
            AGE,
            _col("Containers", priority=1),
            _col("Images", priority=1),
            _col("Selector", priority=1),
        ),
        _job_cells,
    ),
    SERVICES.key: (
        (
            NAME,
            _col("Type"),
            _col("Cluster-IP"),
            _col("External-IP"),
            _col("Port(s)"),
            AGE,
            _col("Selector", priority=1),
        ),
        _service_cells,
    ),
    # kueue apis/kueue/v1beta2/clusterqueue_types.go, localqueue_types.go printcolumns: no Age
    CLUSTERQUEUES.key: (
        (
            NAME,
            _col("Cohort"),
            _col("Strategy", priority=1),
            _col("Pending Workloads", "integer"),
            _col("Admitted Workloads", "integer", priority=1),
        ),
        _cluster_queue_cells,
    ),
    LOCALQUEUES.key: (
        (
            NAME,
            _col("ClusterQueue"),
            _col("Pending Workloads", "integer"),
            _col("Admitted Workloads", "integer"),
        ),
        _local_queue_cells,
    ),
    TRAINJOBS.key: ((NAME, _col("State"), AGE), _trainjob_cells),
    JOBSETS.key: (
        (
            NAME,
            _col("TerminalState"),
            _col("Restarts", "integer"),
            _col("Completed"),
            _col("Suspended", "boolean"),
            AGE,
        ),
        _jobset_cells,
    ),
    WORKLOADS.key: (
        (NAME, _col("Queue"), _col("Reserved in"), _col("Admitted"), _col("Finished"), AGE),
        _workload_cells,
    ),
    NODES.key: (
        (
            NAME,
            _col("Status"),
            _col("Roles"),
            AGE,
            _col("Version"),
            _col("Internal-IP", priority=1),
            _col("External-IP", priority=1),
            _col("OS-Image", priority=1),
            _col("Kernel-Version", priority=1),
            _col("Container-Runtime", priority=1),
        ),
        _node_cells,
    ),
    NAMESPACES.key: ((NAME, _col("Status"), AGE), _namespace_cells),
}


def _printer(resource: ResourceType) -> tuple[tuple[Column, ...], Cells]:
    return PRINTERS.get(resource.key, ((NAME, AGE), _default_cells))


def _partial(obj: JSON) -> JSON:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta(obj),
    }


def table(
    resource: ResourceType,
    objects: list[JSON],
    now: float,
    resource_version: str = "",
    continue_token: str = "",
) -> JSON:
    """A Table of ``objects``; each row carries its metadata (for -A and --show-labels)."""
    columns, cells = _printer(resource)
    list_meta: JSON = {}
    if resource_version:
        list_meta["resourceVersion"] = resource_version
    if continue_token:
        list_meta["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {"name": n, "type": t, "format": f, "description": "", "priority": p}
            for n, t, f, p in columns
        ],
        "rows": [{"cells": cells(o, now), "object": _partial(o)} for o in objects],
    }
