"""OpenAPI v3, just enough for kubectl's client-side validation of ``create`` and ``apply``.

kubectl (validate=strict by default) reads ``/openapi/v3``, fetches each group-version's
``serverRelativeURL`` and looks for a ``patch`` operation carrying
``x-kubernetes-group-version-kind`` and a ``fieldValidation`` parameter; finding one, it leaves
validation to the server (``fieldValidation=Strict``). Measured:
../shared/reference/kube-api-clients.md §1.6. Custom kinds get a top-level schema for
``kubectl explain``; built-in kinds get none (kubectl's client-side apply would read a schema
without patch strategies as replace-the-list); ``/openapi/v2`` is 404.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from simulators.kubernetes.resources import ResourceType, groups

JSONDoc = dict[str, Any]


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def group_version_doc(
    resources: tuple[ResourceType, ...], group: str, version: str
) -> JSONDoc | None:
    """The v3 document of one group-version, or None if it is not served."""
    chosen = groups(resources).get(group, {}).get(version)
    if chosen is None:
        return None
    paths: JSONDoc = {}
    for r in chosen:
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        operation = {
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [{"name": "fieldValidation", "in": "query"}],
        }
        base = f"/{_gv_path(group, version)}"
        if r.namespaced:
            base += "/namespaces/{namespace}"
        paths[f"{base}/{r.plural}"] = {"post": operation}
        paths[f"{base}/{r.plural}/{{name}}"] = {"patch": operation, "put": operation}
    doc: JSONDoc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1"},
        "paths": paths,
    }
    schemas = {_schema_name(r): _schema(r) for r in chosen if not r.builtin}
    if schemas:
        doc["components"] = {"schemas": schemas}
    return doc


def _schema_name(r: ResourceType) -> str:
    """A CRD's schema name: the reversed group, the version, the kind (apiextensions builder)."""
    return ".".join([*reversed(r.group.split(".")), r.version, r.kind])


def _field(kind: str, description: str) -> JSONDoc:
    return {"type": kind, "description": description}


def _schema(r: ResourceType) -> JSONDoc:
    """The top level of a custom kind, enough for ``kubectl explain`` (its nested fields are
    not served: ``explain <kind>.spec`` prints the field without FIELDS)."""
    return {
        "type": "object",
        "description": f"{r.kind} of {r.group}/{r.version}. The simulator serves this schema's "
        "top-level fields only; see the upstream CRD for the rest.",
        "properties": {
            "apiVersion": _field(
                "string",
                "APIVersion defines the versioned schema of this representation of an object.",
            ),
            "kind": _field(
                "string",
                "Kind is a string value representing the REST resource this object represents.",
            ),
            "metadata": _field("object", "Standard object's metadata."),
            "spec": _field("object", f"The desired state of the {r.kind}."),
            "status": _field("object", f"The observed state of the {r.kind}."),
        },
        "x-kubernetes-group-version-kind": [
            {"group": r.group, "version": r.version, "kind": r.kind}
        ],
    }


def _hash(doc: JSONDoc) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()


def root(resources: tuple[ResourceType, ...]) -> JSONDoc:
    """``/openapi/v3``: each group-version's document by its ``serverRelativeURL``."""
    paths: JSONDoc = {}
    for group, versions in groups(resources).items():
        for version in versions:
            doc = group_version_doc(resources, group, version)
            assert doc is not None
            gv = _gv_path(group, version)
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={_hash(doc)}"}
    return {"paths": paths}
