"""Request bodies in ``application/vnd.kubernetes.protobuf``, for the kinds kubectl sends so.

kubectl's generators (``kubectl create namespace|configmap|secret``) write through the typed
client, which sends protobuf: the magic ``k8s\\x00`` then a ``runtime.Unknown`` (1 typeMeta
{1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding, 4 contentType) whose ``raw`` is the object
(k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go; field numbers from
k8s.io/api/core/v1/generated.proto and apimachinery's meta/v1 generated.proto, checked against
kubectl 1.32's bodies). Decoded here into the JSON the rest of the server reads: Namespace,
ConfigMap, Secret, SelfSubjectAccessReview (``kubectl auth can-i``) and DeleteOptions. Any
other kind is 415 naming what is accepted.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Final

from simulators.kubernetes.errors import ApiError

PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
MAGIC: Final = b"k8s\x00"

Fields = list[tuple[int, int | bytes]]
JSON = dict[str, Any]


def is_protobuf(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == PROTOBUF


def _refuse(what: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"{what}: the simulator decodes protobuf only for Namespace, ConfigMap, Secret, "
        "SelfSubjectAccessReview and DeleteOptions; send application/json (accepted media "
        "types include: application/json, application/vnd.kubernetes.protobuf for those kinds)",
    )


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _malformed()
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _malformed() -> ApiError:
    return ApiError(400, "BadRequest", "error decoding request body: malformed protobuf")


def fields(data: bytes) -> Fields:
    """The message's (field number, value) pairs: varints as int, length-delimited as bytes."""
    out: Fields = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            out.append((number, value))
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise _malformed()
            out.append((number, data[at : at + size]))
            at += size
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        else:
            raise _malformed()
    return out


def _bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise _malformed()
    return value


def _str(value: int | bytes) -> str:
    try:
        return _bytes(value).decode()
    except UnicodeDecodeError:
        raise _malformed() from None


def _map(entries: list[int | bytes], value: Callable[[int | bytes], Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in entries:
        parts = dict(fields(_bytes(entry)))
        out[_str(parts.get(1, b""))] = value(parts.get(2, b""))
    return out


def _b64(value: int | bytes) -> str:
    return base64.b64encode(_bytes(value)).decode()


def _grouped(data: bytes) -> dict[int, list[int | bytes]]:
    out: dict[int, list[int | bytes]] = {}
    for number, value in fields(data):
        out.setdefault(number, []).append(value)
    return out


def _metadata(data: bytes) -> JSON:
    """ObjectMeta: 1 name, 2 generateName, 3 namespace, 11 labels, 12 annotations, 14 finalizers."""
    f = _grouped(data)
    out: JSON = {}
    for number, name in ((1, "name"), (2, "generateName"), (3, "namespace")):
        text = _str(f[number][-1]) if number in f else ""
        if text:
            out[name] = text
    if 11 in f:
        out["labels"] = _map(f[11], _str)
    if 12 in f:
        out["annotations"] = _map(f[12], _str)
    if 14 in f:
        out["finalizers"] = [_str(v) for v in f[14]]
    return out


def _namespace(f: dict[int, list[int | bytes]]) -> JSON:
    """Namespace: 2 spec {1 finalizers}; status is the server's."""
    out: JSON = {}
    if 2 in f:
        finalizers = [_str(v) for v in _grouped(_bytes(f[2][-1])).get(1, [])]
        out["spec"] = {"finalizers": finalizers} if finalizers else {}
    return out


def _configmap(f: dict[int, list[int | bytes]]) -> JSON:
    """ConfigMap: 2 data, 3 binaryData (base64 in JSON), 4 immutable."""
    out: JSON = {}
    if 2 in f:
        out["data"] = _map(f[2], _str)
    if 3 in f:
        out["binaryData"] = _map(f[3], _b64)
    if 4 in f:
        out["immutable"] = bool(f[4][-1])
    return out


def _secret(f: dict[int, list[int | bytes]]) -> JSON:
    """Secret: 2 data (bytes, base64 in JSON), 3 type, 4 stringData, 5 immutable."""
    out: JSON = {}
    if 2 in f:
        out["data"] = _map(f[2], _b64)
    if 3 in f and _str(f[3][-1]):
        out["type"] = _str(f[3][-1])
    if 4 in f:
        out["stringData"] = _map(f[4], _str)
    if 5 in f:
        out["immutable"] = bool(f[5][-1])
    return out


_ATTRIBUTES: Final = (
    (1, "namespace"),
    (2, "verb"),
    (3, "group"),
    (4, "version"),
    (5, "resource"),
    (6, "subresource"),
    (7, "name"),
)


def _strings(data: bytes, names: tuple[tuple[int, str], ...]) -> JSON:
    f = _grouped(data)
    return {name: _str(f[n][-1]) for n, name in names if n in f and _str(f[n][-1])}


def _access_review(f: dict[int, list[int | bytes]]) -> JSON:
    """SelfSubjectAccessReview (k8s.io/api/authorization/v1): 2 spec {1 resourceAttributes
    {1 namespace, 2 verb, 3 group, 4 version, 5 resource, 6 subresource, 7 name},
    2 nonResourceAttributes {1 path, 2 verb}} (kubectl auth can-i)."""
    spec: JSON = {}
    if 2 in f:
        g = _grouped(_bytes(f[2][-1]))
        if 1 in g:
            spec["resourceAttributes"] = _strings(_bytes(g[1][-1]), _ATTRIBUTES)
        if 2 in g:
            spec["nonResourceAttributes"] = _strings(_bytes(g[2][-1]), ((1, "path"), (2, "verb")))
    return {"spec": spec}


KINDS: Final[dict[tuple[str, str], Callable[[dict[int, list[int | bytes]]], JSON]]] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ConfigMap"): _configmap,
    ("v1", "Secret"): _secret,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): _access_review,
}


def _unknown(body: bytes) -> tuple[str, str, bytes]:
    if not body.startswith(MAGIC):
        raise ApiError(
            400, "BadRequest", "error decoding request body: no protobuf magic prefix k8s\\x00"
        )
    f = dict(fields(body[len(MAGIC) :]))
    type_meta = dict(fields(_bytes(f.get(1, b""))))
    return _str(type_meta.get(1, b"")), _str(type_meta.get(2, b"")), _bytes(f.get(2, b""))


def decode_object(body: bytes) -> JSON:
    """The JSON form of a protobuf Namespace, ConfigMap or Secret (415 for other kinds)."""
    api_version, kind, raw = _unknown(body)
    decode = KINDS.get((api_version, kind))
    if decode is None:
        raise _refuse(f"a protobuf {kind or 'object'} ({api_version or 'no apiVersion'})")
    f = _grouped(raw)
    out: JSON = {"apiVersion": api_version, "kind": kind}
    out["metadata"] = _metadata(_bytes(f[1][-1])) if 1 in f else {}
    out.update(decode(f))
    return out


def decode_delete_options(body: bytes) -> JSON:
    """DeleteOptions: 1 gracePeriodSeconds, 2 preconditions {1 uid, 2 resourceVersion},
    3 orphanDependents, 4 propagationPolicy, 5 dryRun."""
    api_version, kind, raw = _unknown(body)
    if kind not in ("", "DeleteOptions"):
        raise _refuse(f"a protobuf {kind} where DeleteOptions were expected")
    del api_version
    f = _grouped(raw)
    out: JSON = {}
    if 1 in f:
        grace = f[1][-1]
        if not isinstance(grace, int):
            raise _malformed()
        out["gracePeriodSeconds"] = grace - (1 << 64) if grace >= 1 << 63 else grace
    if 2 in f:
        pre = _grouped(_bytes(f[2][-1]))
        out["preconditions"] = {
            k: _str(pre[n][-1]) for n, k in ((1, "uid"), (2, "resourceVersion")) if n in pre
        }
    if 3 in f:
        out["orphanDependents"] = bool(f[3][-1])
    if 4 in f and _str(f[4][-1]):
        out["propagationPolicy"] = _str(f[4][-1])
    if 5 in f:
        out["dryRun"] = [_str(v) for v in f[5]]
    return out
