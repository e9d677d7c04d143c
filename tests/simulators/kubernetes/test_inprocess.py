"""The in-process pool answers exactly what the server answers over loopback.

Two simulators of the same seed get the same requests through the official client, one over
HTTP, one through :class:`InProcessPool`: every answer (status, reason, content type, body),
every error Status, and a lost reply must be the same on both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from simulators.kubernetes import KubeSim
from simulators.kubernetes.inprocess import InProcessPool
from simulators.kubernetes.server import Server

G, V, PLURAL, NS = "trainer.kubeflow.org", "v1alpha1", "trainjobs", "default"


def trainjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": True},
    }


def _client(server: Server, in_process: bool) -> client.ApiClient:
    made: Any = config.new_client_from_config(config_file=server.kubeconfig)  # type: ignore[no-untyped-call]
    made.rest_client.pool_manager = (
        InProcessPool(server, retries=False) if in_process else urllib3.PoolManager(retries=False)
    )
    assert isinstance(made, client.ApiClient)
    return made


@pytest.fixture
def pair() -> Iterator[tuple[tuple[KubeSim, client.ApiClient], tuple[KubeSim, client.ApiClient]]]:
    sims = [KubeSim(seed=7), KubeSim(seed=7)]
    with sims[0].serve() as over_http, sims[1].serve() as in_process:
        apis = [_client(over_http, False), _client(in_process, True)]
        yield (sims[0], apis[0]), (sims[1], apis[1])
        for api in apis:
            api.close()  # type: ignore[no-untyped-call]


def _answer(call: Any) -> tuple[int, str, str, Any]:
    """(status, reason, content type, JSON body) of a call with ``_preload_content=False``,
    an error Status included."""
    try:
        answer = call()
        status, reason, headers, data = answer.status, answer.reason, answer.headers, answer.data
    except ApiException as error:
        status, reason, headers, data = error.status, error.reason, error.headers, error.body
    return status, reason, headers.get("Content-Type", ""), json.loads(data)


def _script(api: client.ApiClient) -> list[tuple[int, str, str, Any]]:
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    raw = {"_preload_content": False}
    calls: list[Any] = [
        lambda: custom.create_namespaced_custom_object(G, V, NS, PLURAL, trainjob("a"), **raw),
        lambda: custom.create_namespaced_custom_object(G, V, NS, PLURAL, trainjob("a"), **raw),
        lambda: custom.get_namespaced_custom_object(G, V, NS, PLURAL, "a", **raw),
        lambda: custom.get_namespaced_custom_object(G, V, NS, PLURAL, "missing", **raw),
        lambda: custom.list_namespaced_custom_object(
            G, V, NS, PLURAL, label_selector="app=x", **raw
        ),
        lambda: custom.list_namespaced_custom_object(
            G, V, NS, PLURAL, label_selector="app in (", **raw
        ),
        lambda: custom.patch_namespaced_custom_object(
            G, V, NS, PLURAL, "a", {"metadata": {"labels": {"b": "c"}}}, **raw
        ),
        lambda: core.list_namespaced_pod(NS, **raw),
        lambda: custom.delete_namespaced_custom_object(
            G, V, NS, PLURAL, "a", body={"preconditions": {"uid": "not-its-uid"}}, **raw
        ),
        lambda: custom.delete_namespaced_custom_object(G, V, NS, PLURAL, "a", **raw),
    ]
    return [_answer(call) for call in calls]


def test_every_answer_is_the_one_http_gives(pair: Any) -> None:
    (_, over_http), (_, in_process) = pair
    assert _script(in_process) == _script(over_http)
    pool = in_process.rest_client.pool_manager
    assert isinstance(pool, InProcessPool) and pool.requests == 10


def test_a_lost_reply_is_a_dropped_connection_on_both(pair: Any) -> None:
    raised = []
    for sim, api in pair:
        sim.faults.lose_next_reply("create", PLURAL)
        custom = client.CustomObjectsApi(api)
        with pytest.raises(urllib3.exceptions.ProtocolError) as lost:
            custom.create_namespaced_custom_object(G, V, NS, PLURAL, trainjob("b"))
        raised.append(str(lost.value))
        # the write landed all the same
        assert custom.get_namespaced_custom_object(G, V, NS, PLURAL, "b")["metadata"]["name"] == "b"
    assert raised[0] == raised[1]


def test_a_watch_goes_over_the_socket(pair: Any) -> None:
    (_, in_process) = pair[1]
    custom = client.CustomObjectsApi(in_process)
    custom.create_namespaced_custom_object(G, V, NS, PLURAL, trainjob("w"))
    events = watch.Watch().stream(  # type: ignore[no-untyped-call]
        custom.list_namespaced_custom_object, G, V, NS, PLURAL, timeout_seconds=1
    )
    first = next(iter(events))
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "w")
    pool = in_process.rest_client.pool_manager
    assert pool.requests == 1  # the create; the watch was not answered in process
