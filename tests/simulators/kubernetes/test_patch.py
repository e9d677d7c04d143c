"""PATCH as k8s.io/apiserver v0.32 handlers/patch.go applies it: the three patch types, the
statuses for bodies of the wrong shape, 415 for strategic merge on a custom resource, and the
properties (merge patch inverts create_patch, the input is never mutated, any bytes give an
object or an ApiError)."""

from __future__ import annotations

import json
from typing import Any

import json_merge_patch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import clone
from simulators.kubernetes.patch import (
    APPLY_YAML,
    JSON_PATCH,
    JSON_PATCH_FAILED,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
    go_json_error,
)

TRAINJOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {
        "name": "tja",
        "namespace": "default",
        "labels": {"team": "py"},
        "annotations": {"dispatch/attempt": "1"},
    },
    "spec": {"suspend": False, "trainer": {"numNodes": 2, "image": "img:1"}},
}

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "namespace": "default",
        "finalizers": ["a.io/x"],
        "ownerReferences": [{"uid": "u1", "kind": "Job", "name": "j"}],
    },
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "img:1",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "ports": [{"containerPort": 80, "name": "http"}],
            },
            {"name": "side", "image": "side:1"},
        ],
        "tolerations": [{"key": "a"}],
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "PodScheduled", "status": "True"},
        ],
    },
}


def crd(content_type: str, body: bytes | str, current: dict[str, Any] | None = None) -> Any:
    raw = body.encode() if isinstance(body, str) else body
    return apply_patch(
        TRAINJOB if current is None else current,
        content_type,
        raw,
        builtin=False,
        kind="TrainJob",
        group="trainer.kubeflow.org",
        version="v1alpha1",
    )


def core(content_type: str, body: bytes | str, current: dict[str, Any] | None = None) -> Any:
    raw = body.encode() if isinstance(body, str) else body
    return apply_patch(
        POD if current is None else current,
        content_type,
        raw,
        builtin=True,
        kind="Pod",
        group="",
        version="v1",
    )


def refused(call: Any, *args: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call(*args)
    return caught.value


# --- merge patch -----------------------------------------------------------------------------


def test_kubectl_merge_patch_suspend() -> None:
    out = crd(MERGE_PATCH, '{"spec":{"suspend":true}}')
    assert out["spec"] == {"suspend": True, "trainer": {"numNodes": 2, "image": "img:1"}}
    assert out["metadata"] == TRAINJOB["metadata"]
    assert TRAINJOB["spec"]["suspend"] is False


def test_merge_patch_null_deletes_and_nested_merge() -> None:
    out = crd(
        MERGE_PATCH,
        '{"metadata":{"annotations":{"dispatch/attempt":null,"dispatch/hold":"7"}},'
        '"spec":{"trainer":{"numNodes":3,"new":{"x":null,"y":1}}}}',
    )
    assert out["metadata"]["annotations"] == {"dispatch/hold": "7"}
    assert out["spec"]["trainer"] == {"numNodes": 3, "image": "img:1", "new": {"y": 1}}


def test_merge_patch_replaces_lists_and_prunes_nulls_inside_their_objects() -> None:
    out = core(MERGE_PATCH, '{"spec":{"containers":[{"name":"only","image":null}]}}')
    assert out["spec"]["containers"] == [{"name": "only"}]


def test_merge_patch_charset_suffix_is_ignored() -> None:
    out = crd(MERGE_PATCH + "; charset=utf-8", '{"spec":{"suspend":true}}')
    assert out["spec"]["suspend"] is True


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '[{"op":"replace","path":"/spec/suspend","value":true}]',
            "error decoding patch: json: cannot unmarshal array into Go value of type "
            "map[string]interface {}",
        ),
        (
            '"x"',
            "error decoding patch: json: cannot unmarshal string into Go value of type "
            "map[string]interface {}",
        ),
        ("null", "Invalid JSON Patch"),
        ("", "error decoding patch: unexpected end of JSON input"),
        (
            "{spec:1}",
            "error decoding patch: invalid character 's' looking for beginning of object key string",
        ),
        ('{"a":1}}', "error decoding patch: invalid character '}' after top-level value"),
        ("NaN", "error decoding patch: invalid character 'N' looking for beginning of value"),
    ],
)
def test_merge_patch_bad_bodies_are_400(body: str, message: str) -> None:
    err = refused(crd, MERGE_PATCH, body)
    assert (err.code, err.reason, err.message) == (400, "BadRequest", message)


# --- JSON patch ------------------------------------------------------------------------------


def test_json_patch_replace_add_remove() -> None:
    ops = [
        {"op": "replace", "path": "/spec/trainer/numNodes", "value": 4},
        {"op": "add", "path": "/metadata/labels/dispatch~1job", "value": "01J"},
        {"op": "remove", "path": "/metadata/annotations/dispatch~1attempt"},
        {"op": "test", "path": "/spec/trainer/numNodes", "value": 4},
    ]
    out = crd(JSON_PATCH, json.dumps(ops))
    assert out["spec"]["trainer"]["numNodes"] == 4
    assert out["metadata"]["labels"] == {"team": "py", "dispatch/job": "01J"}
    assert out["metadata"]["annotations"] == {}
    assert TRAINJOB["metadata"]["annotations"] == {"dispatch/attempt": "1"}


def test_json_patch_array_ops_and_negative_index() -> None:
    ops = [
        {"op": "add", "path": "/spec/containers/-", "value": {"name": "third"}},
        {"op": "remove", "path": "/spec/containers/-1"},  # evanphx v4 allows negative indices
        {"op": "move", "from": "/spec/containers/1", "path": "/spec/containers/0"},
        {"op": "copy", "from": "/metadata/name", "path": "/metadata/labels"},
    ]
    out = core(JSON_PATCH, json.dumps(ops))
    assert [c["name"] for c in out["spec"]["containers"]] == ["side", "main"]
    assert out["metadata"]["labels"] == "p"


def test_json_patch_replace_of_a_missing_key_adds_it_as_v4_does() -> None:
    out = crd(JSON_PATCH, '[{"op":"replace","path":"/spec/managedBy","value":"x"}]')
    assert out["spec"]["managedBy"] == "x"


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "test", "path": "/spec/suspend", "value": True}],
        [{"op": "test", "path": "/spec/trainer/numNodes", "value": "2"}],
        [{"op": "remove", "path": "/spec/nothere"}],
        [{"op": "replace", "path": "/spec/no/such", "value": 1}],
        [{"op": "add", "path": "/missing/deep", "value": 1}],
        [{"op": "add", "path": "", "value": {}}],
        [{"op": "add", "path": "spec", "value": 1}],
        [{"op": "bogus", "path": "/spec"}],
        [{"path": "/spec"}],
        [{"op": "test", "path": "/spec/suspend"}],
        [{"op": "move", "from": "/nope", "path": "/spec/x"}],
        [None],
        [
            {"op": "replace", "path": "/spec/suspend", "value": True},
            {"op": "test", "path": "/spec/suspend", "value": False},
        ],
    ],
)
def test_json_patch_that_does_not_apply_is_422(ops: list[Any]) -> None:
    before = clone(TRAINJOB)
    err = refused(crd, JSON_PATCH, json.dumps(ops))
    assert (err.code, err.reason, err.message) == (422, "Invalid", JSON_PATCH_FAILED)
    assert before == TRAINJOB


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '{"op":"add"}',
            "error decoding patch: json: cannot unmarshal object into Go value of type "
            "[]handlers.jsonPatchOp",
        ),
        (
            "[1]",
            "error decoding patch: json: cannot unmarshal number into Go value of type "
            "handlers.jsonPatchOp",
        ),
        (
            '[{"op":true,"path":"/a"}]',
            "error decoding patch: json: cannot unmarshal bool into Go struct field "
            "jsonPatchOp.op of type string",
        ),
        ("[", "error decoding patch: unexpected end of JSON input"),
        ("[1,]", "error decoding patch: invalid character ']' looking for beginning of value"),
    ],
)
def test_json_patch_bad_bodies_are_400(body: str, message: str) -> None:
    err = refused(crd, JSON_PATCH, body)
    assert (err.code, err.reason, err.message) == (400, "BadRequest", message)


def test_json_patch_add_without_value_sets_null_as_v4_does() -> None:
    assert crd(JSON_PATCH, '[{"op":"add","path":"/spec/x"}]')["spec"]["x"] is None


def test_json_patch_null_body_is_no_change() -> None:
    assert crd(JSON_PATCH, "null") == TRAINJOB


# --- strategic merge -------------------------------------------------------------------------


def test_strategic_merges_containers_and_env_by_name() -> None:
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "img:2",
                    "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                },
                {"name": "new", "image": "new:1"},
            ]
        }
    }
    out = core(STRATEGIC_MERGE_PATCH, json.dumps(patch))
    main, side, new = out["spec"]["containers"]
    assert main["image"] == "img:2"
    assert main["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]
    assert main["ports"] == [{"containerPort": 80, "name": "http"}]
    assert side == {"name": "side", "image": "side:1"}
    assert new == {"name": "new", "image": "new:1"}
    assert POD["spec"]["containers"][0]["image"] == "img:1"


def test_strategic_patch_delete_directive_removes_the_item() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "side", "$patch": "delete"},
                {"name": "main", "env": [{"name": "A", "$patch": "delete"}]},
            ]
        }
    }
    out = core(STRATEGIC_MERGE_PATCH, json.dumps(patch))
    assert [c["name"] for c in out["spec"]["containers"]] == ["main"]
    assert out["spec"]["containers"][0]["env"] == [{"name": "B", "value": "2"}]


def test_strategic_replace_directive_and_null() -> None:
    patch = {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "x", "image": "x:1"}, {"$patch": "replace"}]},
        "status": {"$patch": "replace", "phase": "Pending"},
    }
    out = core(STRATEGIC_MERGE_PATCH, json.dumps(patch))
    assert out["spec"]["containers"] == [{"name": "x", "image": "x:1"}]
    assert out["status"] == {"phase": "Pending"}
    assert out["metadata"]["labels"] == {"a": "b"}
    out = core(STRATEGIC_MERGE_PATCH, '{"spec":{"tolerations":null},"metadata":{"namespace":null}}')
    assert "tolerations" not in out["spec"] and "namespace" not in out["metadata"]


def test_strategic_other_lists_are_replaced() -> None:
    out = core(STRATEGIC_MERGE_PATCH, '{"spec":{"tolerations":[{"key":"b"}]}}')
    assert out["spec"]["tolerations"] == [{"key": "b"}]


def test_strategic_conditions_owner_references_and_ports_by_key() -> None:
    patch = {
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        "metadata": {"ownerReferences": [{"uid": "u2", "kind": "Job", "name": "k"}]},
        "spec": {
            "containers": [{"name": "main", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]
        },
    }
    out = core(STRATEGIC_MERGE_PATCH, json.dumps(patch))
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]
    assert [r["uid"] for r in out["metadata"]["ownerReferences"]] == ["u1", "u2"]
    assert out["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "name": "http", "protocol": "TCP"}
    ]


def test_strategic_finalizers_merge_as_a_set_and_delete_from_primitive_list() -> None:
    out = core(STRATEGIC_MERGE_PATCH, '{"metadata":{"finalizers":["b.io/y","a.io/x"]}}')
    assert out["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]
    out = core(
        STRATEGIC_MERGE_PATCH,
        '{"metadata":{"$deleteFromPrimitiveList/finalizers":["a.io/x"],'
        '"$setElementOrder/finalizers":[]}}',
    )
    assert out["metadata"]["finalizers"] == []


def test_strategic_missing_merge_key_is_a_500_as_the_server_gives() -> None:
    err = refused(core, STRATEGIC_MERGE_PATCH, '{"spec":{"containers":[{"image":"x"}]}}')
    assert (err.code, err.reason) == (500, "")
    assert err.message == "map: map[image:x] does not contain declared merge key: name"


def test_strategic_bad_bodies() -> None:
    err = refused(core, STRATEGIC_MERGE_PATCH, "[]")
    assert (err.code, err.message) == (
        400,
        "json: cannot unmarshal array into Go value of type map[string]interface {}",
    )
    assert core(STRATEGIC_MERGE_PATCH, "null") == POD


def test_strategic_merge_on_a_crd_is_415() -> None:
    err = refused(crd, STRATEGIC_MERGE_PATCH, '{"spec":{"suspend":true}}')
    assert (err.code, err.reason) == (415, "UnsupportedMediaType")
    assert err.message == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml"
    )
    # apply-patch+cbor is listed only with CBORServingAndStorage, alpha and off in 1.32
    # (customresource_handler.go); kubectl 1.32 prints this list as it comes


def test_other_content_types_are_415() -> None:
    assert refused(crd, "application/json", "{}").code == 415
    err = refused(core, "text/plain", "{}")
    assert err.code == 415 and STRATEGIC_MERGE_PATCH in err.message
    err = refused(crd, APPLY_YAML, "spec: {}")
    assert (err.code, err.reason) == (415, "UnsupportedMediaType")
    assert "server-side apply" in err.message


# --- the Go JSON scanner -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"1", None),
        (b' {"a": [1, -2.5e+3, "x\\u00e9", true, false, null]} ', None),
        (b"tru", "unexpected end of JSON input"),
        (b"trux", "invalid character 'x' in literal true (expecting 'e')"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a":1 "b"}', "invalid character '\"' after object key:value pair"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b"01", "invalid character '1' after top-level value"),
        (b"1.x", "invalid character 'x' after decimal point in numeric literal"),
        (b"1e+", "unexpected end of JSON input"),
        (b"-x", "invalid character 'x' in numeric literal"),
        (b'"\\x"', "invalid character 'x' in string escape code"),
        (b'"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"),
        (b'"a\nb"', "invalid character '\\n' in string literal"),
        (b"'a'", "invalid character '\\'' looking for beginning of value"),
    ],
)
def test_go_json_errors(data: bytes, message: str | None) -> None:
    assert go_json_error(data) == message


# --- properties ------------------------------------------------------------------------------

scalars = st.one_of(st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=5))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)
documents = st.dictionaries(
    st.sampled_from(["a", "b", "spec", "metadata"]), json_values, max_size=4
)


@settings(max_examples=100, deadline=None)
@given(documents, documents)
def test_merge_patch_of_create_patch_gives_the_target(a: dict[str, Any], b: dict[str, Any]) -> None:
    patch = json_merge_patch.create_patch(a, b)
    out = crd(MERGE_PATCH, json.dumps(patch), current=a)
    assert out == b


patch_bodies = st.one_of(
    st.binary(max_size=40),
    st.builds(lambda v: json.dumps(v).encode(), json_values),
    st.builds(
        lambda ops: json.dumps(ops).encode(),
        st.lists(
            st.fixed_dictionaries(
                {
                    "op": st.sampled_from(
                        ["add", "remove", "replace", "move", "copy", "test", "x"]
                    ),
                    "path": st.sampled_from(
                        [
                            "",
                            "/",
                            "/spec",
                            "/spec/containers/0",
                            "/spec/containers/-",
                            "/metadata/finalizers/-1",
                            "/x/y",
                        ]
                    ),
                },
                optional={
                    "value": json_values,
                    "from": st.sampled_from(["/spec", "/metadata/name", "/nope"]),
                },
            ),
            max_size=3,
        ),
    ),
    st.builds(
        lambda v: json.dumps({"spec": {"containers": v}}).encode(),
        st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": st.sampled_from(["main", "side", "z"]),
                    "$patch": st.sampled_from(["delete", "replace", "merge", "x"]),
                    "image": st.one_of(st.none(), st.text(max_size=3)),
                },
            ),
            max_size=3,
        ),
    ),
)
content_types = st.sampled_from(
    [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_YAML, "application/json", ""]
)


@settings(max_examples=200, deadline=None)
@given(content_types, patch_bodies, st.booleans())
def test_any_body_gives_an_object_or_an_api_error_and_never_mutates(
    content_type: str, body: bytes, builtin: bool
) -> None:
    before = clone(POD)
    try:
        out = apply_patch(
            POD, content_type, body, builtin=builtin, kind="Pod", group="", version="v1"
        )
    except ApiError as err:
        assert err.code in (400, 413, 415, 422, 500)
    else:
        assert isinstance(out, dict)
        out["mutated"] = True
    assert before == POD
