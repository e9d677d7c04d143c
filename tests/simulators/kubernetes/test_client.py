"""The official ``kubernetes`` client (37.x), unchanged, against the simulated API server.

TrainJobs are custom objects here; the tests read only what the API itself does (no controller
outcome), so they hold whichever controllers the simulator wires in.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException, ConflictException, NotFoundException

from simulators.kubernetes import KubeSim
from simulators.kubernetes.server import Server

G, V, PLURAL, NS = "trainer.kubeflow.org", "v1alpha1", "trainjobs", "default"


def trainjob(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": labels},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": True},
    }


@pytest.fixture
def sim() -> KubeSim:
    return KubeSim(seed=5)


@pytest.fixture
def server(sim: KubeSim) -> Iterator[Server]:
    with sim.serve() as s:
        yield s


@pytest.fixture
def api(server: Server) -> Iterator[client.ApiClient]:
    made: Any = config.new_client_from_config(config_file=server.kubeconfig)  # type: ignore[no-untyped-call]
    assert made.configuration.host == server.url
    yield made
    made.close()


def test_custom_object_lifecycle(api: client.ApiClient) -> None:
    co: Any = client.CustomObjectsApi(api)
    made = co.create_namespaced_custom_object(G, V, NS, PLURAL, trainjob("py1", team="py"))
    assert made["metadata"]["uid"] and made["metadata"]["namespace"] == NS
    got = co.get_namespaced_custom_object(G, V, NS, PLURAL, "py1")
    assert got["metadata"]["uid"] == made["metadata"]["uid"]
    listed = co.list_namespaced_custom_object(G, V, NS, PLURAL, label_selector="team=py")
    assert listed["kind"] == "TrainJobList"
    assert [o["metadata"]["name"] for o in listed["items"]] == ["py1"]
    assert (
        co.list_namespaced_custom_object(G, V, NS, PLURAL, label_selector="team=no")["items"] == []
    )
    patched = co.patch_namespaced_custom_object(
        G, V, NS, PLURAL, "py1", {"metadata": {"labels": {"x": "1"}}}
    )
    assert patched["metadata"]["labels"] == {"team": "py", "x": "1"}
    jsonpatched = co.patch_namespaced_custom_object(
        G,
        V,
        NS,
        PLURAL,
        "py1",
        [{"op": "replace", "path": "/metadata/labels/x", "value": "2"}],
        _content_type="application/json-patch+json",
    )
    assert jsonpatched["metadata"]["labels"]["x"] == "2"
    current = co.get_namespaced_custom_object(G, V, NS, PLURAL, "py1")
    current["metadata"]["annotations"] = {"dispatch/attempt": "1"}
    replaced = co.replace_namespaced_custom_object(G, V, NS, PLURAL, "py1", current)
    assert replaced["metadata"]["annotations"] == {"dispatch/attempt": "1"}
    assert int(replaced["metadata"]["resourceVersion"]) > int(
        current["metadata"]["resourceVersion"]
    )
    co.delete_namespaced_custom_object(
        G,
        V,
        NS,
        PLURAL,
        "py1",
        body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid=made["metadata"]["uid"])
        ),
    )
    with pytest.raises(NotFoundException) as missing:
        co.get_namespaced_custom_object(G, V, NS, PLURAL, "py1")
    assert missing.value.status == 404 and missing.value.reason == "Not Found"
    assert json.loads(str(missing.value.body))["reason"] == "NotFound"


def test_stale_replace_and_wrong_uid_are_conflicts(api: client.ApiClient) -> None:
    co: Any = client.CustomObjectsApi(api)
    co.create_namespaced_custom_object(G, V, NS, PLURAL, trainjob("py2"))
    stale = co.get_namespaced_custom_object(G, V, NS, PLURAL, "py2")
    co.patch_namespaced_custom_object(G, V, NS, PLURAL, "py2", {"metadata": {"labels": {"a": "b"}}})
    stale["metadata"]["labels"] = {"c": "d"}
    with pytest.raises(ConflictException) as conflict:
        co.replace_namespaced_custom_object(G, V, NS, PLURAL, "py2", stale)
    assert conflict.value.status == 409
    assert "the object has been modified" in json.loads(str(conflict.value.body))["message"]
    wrong = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="wrong-uid"))
    with pytest.raises(ConflictException) as refused:
        co.delete_namespaced_custom_object(G, V, NS, PLURAL, "py2", body=wrong)
    assert "UID in precondition: wrong-uid" in json.loads(str(refused.value.body))["message"]
    assert co.get_namespaced_custom_object(G, V, NS, PLURAL, "py2")["metadata"]["name"] == "py2"
    with pytest.raises(ApiException) as unsupported:
        co.patch_namespaced_custom_object(
            G,
            V,
            NS,
            PLURAL,
            "py2",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert (unsupported.value.status, unsupported.value.reason) == (415, "Unsupported Media Type")


def test_watch_sees_added_modified_deleted(api: client.ApiClient, sim: KubeSim) -> None:
    co: Any = client.CustomObjectsApi(api)
    rv = co.list_namespaced_custom_object(G, V, NS, PLURAL)["metadata"]["resourceVersion"]
    seen: list[tuple[str, str]] = []
    w: Any = watch.Watch()  # type: ignore[no-untyped-call]

    def follow() -> None:
        for event in w.stream(
            co.list_namespaced_custom_object,
            G,
            V,
            NS,
            PLURAL,
            resource_version=rv,
            timeout_seconds=30,
        ):
            seen.append((event["type"], event["object"]["metadata"]["name"]))

    reader = threading.Thread(target=follow)
    reader.start()
    co.create_namespaced_custom_object(G, V, NS, PLURAL, trainjob("w1"))
    co.patch_namespaced_custom_object(G, V, NS, PLURAL, "w1", {"metadata": {"labels": {"m": "1"}}})
    co.delete_namespaced_custom_object(G, V, NS, PLURAL, "w1")
    sim.advance(30)  # the stream's timeoutSeconds is virtual time: this ends it
    reader.join(timeout=10)
    assert not reader.is_alive()
    kinds = [t for t, name in seen if name == "w1"]
    assert kinds[0] == "ADDED" and "MODIFIED" in kinds and kinds[-1] == "DELETED"


def test_typed_pods_and_logs(api: client.ApiClient, server: Server) -> None:
    server.logs = lambda sim, ns, pod, container, previous, tail, ts: (
        f"hello from {pod}/{container}\n"
    )
    core: Any = client.CoreV1Api(api)
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p1", labels={"app": "train"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox")]),
    )
    made = core.create_namespaced_pod(NS, pod)
    assert made.metadata.uid and made.spec.containers[0].name == "main"
    pods = core.list_namespaced_pod(NS, label_selector="app=train")
    assert [p.metadata.name for p in pods.items] == ["p1"]
    assert core.read_namespaced_pod_log("p1", NS) == "hello from p1/main\n"
    with pytest.raises(NotFoundException):
        core.read_namespaced_pod("nosuch", NS)
