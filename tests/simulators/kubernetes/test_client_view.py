"""What a user of the official ``kubernetes`` client (37.x) sees, where the API server's answer
depends on the registry or on a controller the client does not talk to.

Each test drives the simulator through the client only, plus ``sim.advance`` and ``sim.faults``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from simulators.kubernetes import KubeSim

G, V, NS = "trainer.kubeflow.org", "v1alpha1", "default"


@pytest.fixture
def sim() -> KubeSim:
    return KubeSim(seed=7)


@pytest.fixture
def api(sim: KubeSim) -> Iterator[client.ApiClient]:
    with sim.serve() as server:
        made: Any = config.new_client_from_config(config_file=server.kubeconfig)  # type: ignore[no-untyped-call]
        yield made
        made.close()


def _trainjob(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


def test_delete_answers_a_success_status_unless_the_registry_returns_the_object(
    api: client.ApiClient, sim: KubeSim
) -> None:
    # apiserver registry/generic/registry/store.go finalizeDelete: an object deleted at once
    # is answered {"status": "Success", "details": {name, group, kind: <resource>, uid}}
    # unless its registry sets ReturnDeletedObject (pods, services); one that waits on
    # finalizers or a grace period comes back as it now stands.
    core: Any = client.CoreV1Api(api)
    co: Any = client.CustomObjectsApi(api)
    cm = core.create_namespaced_config_map(NS, {"metadata": {"name": "c"}})
    gone = core.delete_namespaced_config_map("c", NS)
    assert gone == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "c", "kind": "configmaps", "uid": cm.metadata.uid},
    }
    made = co.create_namespaced_custom_object(G, V, NS, "trainjobs", _trainjob("bg"))
    gone = co.delete_namespaced_custom_object(G, V, NS, "trainjobs", "bg")
    assert gone["status"] == "Success"
    assert gone["details"] == {
        "name": "bg",
        "group": G,
        "kind": "trainjobs",
        "uid": made["metadata"]["uid"],
    }
    co.create_namespaced_custom_object(G, V, NS, "trainjobs", _trainjob("fg"))
    sim.advance(5)
    waiting = co.delete_namespaced_custom_object(
        G, V, NS, "trainjobs", "fg", propagation_policy="Foreground"
    )
    assert waiting["kind"] == "TrainJob"
    assert "foregroundDeletion" in waiting["metadata"]["finalizers"]
    pod = core.create_namespaced_pod(
        NS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    )
    answered = core.delete_namespaced_pod("p", NS, grace_period_seconds=0)
    assert answered.kind == "Pod" and answered.metadata.uid == pod.metadata.uid


def test_a_lost_nodes_pods_turn_not_ready_at_once(api: client.ApiClient, sim: KubeSim) -> None:
    # pkg/controller/nodelifecycle: a node that stops being Ready has its pods marked
    # Ready=False (pkg/controller/util/node MarkPodsNotReady); phase and the other conditions
    # stay, so the Job's `ready` and the TrainJob's jobsStatus[].ready drop.
    co: Any = client.CustomObjectsApi(api)
    core: Any = client.CoreV1Api(api)
    env = [{"name": "KUBE_SIM_RUN_SECONDS", "value": "forever"}]
    co.create_namespaced_custom_object(
        G, V, NS, "trainjobs", _trainjob("t", trainer={"numNodes": 1, "env": env})
    )
    sim.advance(5)
    (pod,) = core.list_namespaced_pod(NS, label_selector="jobset.sigs.k8s.io/jobset-name=t").items
    assert [c.status for c in pod.status.conditions if c.type == "Ready"] == ["True"]
    sim.faults.lose_node(pod.spec.node_name)
    lost = core.read_namespaced_pod(pod.metadata.name, NS)
    conditions = {c.type: c for c in lost.status.conditions}
    assert conditions["Ready"].status == "False"
    assert conditions["ContainersReady"].status == "True"
    assert lost.status.phase == "Running"
    sim.advance(60)
    assert (
        core.read_namespaced_pod(pod.metadata.name, NS).status.conditions == lost.status.conditions
    )
    status = co.get_namespaced_custom_object(G, V, NS, "trainjobs", "t")["status"]
    assert status["jobsStatus"][0]["ready"] == 0


def test_a_watch_from_before_the_store_began_is_410_gone(api: client.ApiClient) -> None:
    # apiserver storage/cacher/watch_cache.go getAllEventsSinceLocked: with nothing evicted
    # yet, the oldest version a watch resumes from is the list the cache started from; an
    # older one is "too old resource version" (the client's Watch raises ApiException 410).
    from kubernetes import watch
    from kubernetes.client.exceptions import ApiException

    co: Any = client.CustomObjectsApi(api)
    co.create_namespaced_custom_object(G, V, NS, "trainjobs", _trainjob("t", suspend=True))
    with pytest.raises(ApiException) as gone:
        for _ in watch.Watch().stream(  # type: ignore[no-untyped-call]
            co.list_namespaced_custom_object,
            G,
            V,
            NS,
            "trainjobs",
            resource_version="1",
            timeout_seconds=1,
        ):
            pass
    assert gone.value.status == 410
    assert "too old resource version: 1 (1000)" in str(gone.value.reason)
