"""A create's or update's ``kind`` and ``apiVersion``, as kube-apiserver v1.32 judges them.

A custom resource (served by apiextensions-apiserver's crdHandler) is decoded into an
Unstructured: apimachinery v0.32.13 ``runtime/serializer/json/json.go`` Decode takes its kind
and apiVersion from the body's own keys (lines 174-177; the URL's defaults, line 151, are
overwritten), so a missing ``kind`` is ``runtime.NewMissingKindErr`` turned into 400 by
apiserver ``endpoints/handlers/rest.go`` ``transformDecodeError`` (line 256), a missing
``apiVersion`` (or ``APIVERSION``: map keys are case-sensitive) fails ``AcceptsGroupVersion``
(``handlers/create.go:144``, ``update.go:132``), and another ``kind`` reaches
apiextensions-apiserver ``registry/customresource/validator.go`` ValidateTypeMeta (line 122):
422 from ``registry/rest/create.go:123`` / ``update.go:156``, the GroupKind being the object's
own (the strategy's typer reads it). A missing ``metadata.namespace`` is the URL's
(``registry/rest/meta.go:51-54``). Built-in kinds have theirs defaulted from the URL
(json.go:189, ``gvkWithDefaults``).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from simulators.kubernetes import KubeSim
from simulators.kubernetes.server import Server

TJ = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
CM = "/api/v1/namespaces/default/configmaps"
EXPECTED = "trainer.kubeflow.org/v1alpha1"
NO_VERSION = (
    "the API version in the data () does not match the expected API version "
    "(trainer.kubeflow.org/v1alpha1)"
)


def trainjob(name: str = "tj") -> dict[str, Any]:
    return {
        "apiVersion": EXPECTED,
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }


def without(obj: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != key}


@pytest.fixture
def server() -> Iterator[Server]:
    with KubeSim(seed=5).serve() as s:
        yield s


def call(server: Server, method: str, path: str, body: Any) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def missing_kind(body: bytes) -> str:
    summary = body[:30].decode() + " ..." if len(body) > 30 else body.decode()
    return (
        "the object provided is unrecognized (must be of type TrainJob): "
        f"Object 'Kind' is missing in '{body.decode()}' ({summary})"
    )


@pytest.mark.parametrize("key", [None, "APIVERSION", "apiversion"])
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_custom_resource_without_api_version_is_400(server: Server, key: Any, method: str) -> None:
    made = call(server, "POST", TJ, trainjob())[1]
    body = without(made, "apiVersion")
    if key is not None:
        body[key] = EXPECTED
    path = TJ if method == "POST" else f"{TJ}/tj"
    code, status = call(server, method, path, body)
    assert (code, status["reason"], status["message"]) == (400, "BadRequest", NO_VERSION)
    assert "details" not in status


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_custom_resource_without_kind_is_400_with_the_body(server: Server, method: str) -> None:
    made = call(server, "POST", TJ, trainjob())[1]
    for body in (without(made, "kind"), dict(made, kind=""), dict(made, kind=None)):
        raw = json.dumps(body).encode()
        path = TJ if method == "POST" else f"{TJ}/tj"
        code, status = call(server, method, path, raw)
        assert (code, status["reason"]) == (400, "BadRequest")
        assert status["message"] == missing_kind(raw)
        assert status["message"].endswith('({"apiVersion": "trainer.kubefl ...)')


def test_missing_kind_comes_before_the_api_version_and_short_bodies_are_whole(
    server: Server,
) -> None:
    raw = b'{"metadata":{"name":"tj"}}'
    code, status = call(server, "POST", TJ, raw)
    assert (code, status["message"]) == (400, missing_kind(raw))
    assert status["message"].endswith('({"metadata":{"name":"tj"}})')
    spaced = b' {"metadata":{"name":"tj"}}'  # summarizeData: hex unless it starts with "{"
    code, status = call(server, "POST", TJ, spaced)
    assert code == 400 and status["message"].endswith(f"({spaced[:30].hex()})")


@pytest.mark.parametrize("kind", ["XXTrainJobXX", "trainjob", "TRAINJOB"])
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_custom_resource_of_another_kind_is_422_named_by_that_kind(
    server: Server, kind: str, method: str
) -> None:
    assert call(server, "POST", TJ, trainjob())[0] == 201
    current = call(server, "GET", f"{TJ}/tj", None)[1]  # the controllers moved it on
    body = dict(current if method == "PUT" else trainjob("tj2"), kind=kind)
    path = TJ if method == "POST" else f"{TJ}/tj"
    code, status = call(server, method, path, body)
    name = body["metadata"]["name"]
    cause = f'Invalid value: "{kind}": must be TrainJob'
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == f'{kind}.trainer.kubeflow.org "{name}" is invalid: kind: {cause}'
    assert status["details"] == {
        "name": name,
        "group": "trainer.kubeflow.org",
        "kind": kind,
        "causes": [{"reason": "FieldValueInvalid", "message": cause, "field": "kind"}],
    }
    assert call(server, "GET", f"{TJ}/tj2", None)[0] == 404  # nothing was stored
    assert call(server, "GET", f"{TJ}/tj", None)[1] == current


def test_custom_resource_without_a_namespace_takes_the_urls(server: Server) -> None:
    code, made = call(server, "POST", TJ, trainjob())
    assert code == 201 and made["metadata"]["namespace"] == "default"
    made = call(server, "GET", f"{TJ}/tj", None)[1]  # the controllers moved it on
    changed = dict(made, metadata={k: v for k, v in made["metadata"].items() if k != "namespace"})
    changed["spec"] = dict(made["spec"], suspend=True)
    code, done = call(server, "PUT", f"{TJ}/tj", changed)
    assert code == 200 and done["metadata"]["namespace"] == "default"
    assert (done["kind"], done["apiVersion"]) == ("TrainJob", EXPECTED)


def test_builtin_kinds_default_a_missing_kind_and_api_version(server: Server) -> None:
    bodies: list[dict[str, Any]] = [
        {"metadata": {"name": "a"}},
        {"apiVersion": "", "kind": "", "metadata": {"name": "b"}},
    ]
    for body in bodies:
        code, made = call(server, "POST", CM, body)
        assert code == 201 and (made["kind"], made["apiVersion"]) == ("ConfigMap", "v1")
    code, status = call(server, "POST", CM, {"apiVersion": "v2", "metadata": {"name": "c"}})
    assert (code, status["message"]) == (
        400,
        "the API version in the data (v2) does not match the expected API version (v1)",
    )
