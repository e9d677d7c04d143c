"""Node Leases in ``kube-node-lease``, made from the Node when asked (``kubectl describe node``
reads ``coordination.k8s.io/v1`` ``leases/<node>``; it prints ``Failed to get lease`` without).

The kubelet renews its Lease every 10 s with ``leaseDurationSeconds: 40`` and
``holderIdentity`` its node name, owned by the Node (pkg/kubelet/nodelease). The simulator keeps
no Leases: a Ready node's was renewed now, a NotReady node's when it stopped being Ready.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Final

from simulators.kubernetes import errors
from simulators.kubernetes.objects import JSON, condition, meta, parse_timestamp
from simulators.kubernetes.resources import NODES

if TYPE_CHECKING:
    from simulators.kubernetes.sim import KubeSim

PATH: Final = ("apis", "coordination.k8s.io", "v1", "namespaces", "kube-node-lease", "leases")
LEASE_SECONDS: Final = 40


def _micro(seconds: float) -> str:
    """metav1.MicroTime as JSON: RFC 3339 with microseconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(seconds))) + ".000000Z"


def node_lease(sim: KubeSim, name: str) -> JSON:
    """The Lease of node ``name`` (404 as for a missing Lease when there is no such node)."""
    node = sim.store.peek(NODES, "", name)
    if node is None:
        raise errors.not_found("leases", "coordination.k8s.io", name)
    m = meta(node)
    ready = condition(node, "Ready")
    renewed = sim.clock.now()
    if ready is None or ready.get("status") != "True":
        since = (ready or {}).get("lastTransitionTime") or m.get("creationTimestamp")
        with contextlib.suppress(ValueError):
            renewed = parse_timestamp(str(since))
    return {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": "kube-node-lease",
            "uid": m.get("uid"),
            "resourceVersion": m.get("resourceVersion"),
            "creationTimestamp": m.get("creationTimestamp"),
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": m.get("uid")}
            ],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": _micro(renewed),
        },
    }
