"""Discovery documents: aggregated (apidiscovery.k8s.io/v2) and legacy, and ``/version``.

kubectl 1.32 asks ``/api`` and ``/apis`` for ``APIGroupDiscoveryList`` and reads the answer as
aggregated only when its Content-Type is exactly
``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`` (measured:
../shared/reference/kube-api-clients.md §1.2); otherwise it reads the legacy ``APIVersions`` /
``APIGroupList`` and fetches each group-version's ``APIResourceList``. Both are served.
"""

from __future__ import annotations

from typing import Any, Final

from simulators.kubernetes.resources import VERBS, ResourceType, groups

ACCESS_REVIEWS: Final = ResourceType(
    "authorization.k8s.io",
    "v1",
    "SelfSubjectAccessReview",
    "selfsubjectaccessreviews",
    "selfsubjectaccessreview",
    namespaced=False,
    builtin=True,
)
"""What ``kubectl auth can-i`` asks; discovered and answered (create only), never stored."""
CREATE_ONLY: Final = frozenset({ACCESS_REVIEWS.key})

AGGREGATED: Final = "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
SUBRESOURCE_VERBS: Final = {"status": ["get", "patch", "update"], "log": ["get"]}

JSONDoc = dict[str, Any]


def aggregated_version(accept: str) -> str | None:
    """``v2`` or ``v2beta1`` when the Accept header asks for aggregated discovery, else None."""
    for part in accept.split(","):
        params = {
            k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])
        }
        if (
            params.get("g") == "apidiscovery.k8s.io"
            and params.get("as") == "APIGroupDiscoveryList"
            and params.get("v") in ("v2", "v2beta1")
        ):
            return params["v"]
    return None


def verbs(r: ResourceType) -> list[str]:
    return ["create"] if r.key in CREATE_ONLY else list(VERBS)


def _resource_entry(r: ResourceType) -> JSONDoc:
    kind = {"group": r.group, "version": r.version, "kind": r.kind}
    entry: JSONDoc = {
        "resource": r.plural,
        "responseKind": kind,
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    entry["verbs"] = verbs(r)
    if r.subresources:
        entry["subresources"] = [
            {"subresource": s, "responseKind": kind, "verbs": SUBRESOURCE_VERBS.get(s, ["get"])}
            for s in r.subresources
        ]
    return entry


def aggregated(resources: tuple[ResourceType, ...], core: bool, version: str) -> JSONDoc:
    """``/api`` (core) or ``/apis`` as an ``APIGroupDiscoveryList``."""
    items: list[JSONDoc] = []
    for group, versions in groups(resources).items():
        if (group == "") != core:
            continue
        items.append(
            {
                "metadata": {"name": group},
                "versions": [
                    {"version": v, "resources": [_resource_entry(r) for r in rs]}
                    for v, rs in versions.items()
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }


def api_versions(host: str) -> JSONDoc:
    """Legacy ``/api``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }


def _group(name: str, versions: list[str]) -> JSONDoc:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(resources: tuple[ResourceType, ...]) -> JSONDoc:
    """Legacy ``/apis``."""
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(g, list(vs)) for g, vs in groups(resources).items() if g],
    }


def api_group(resources: tuple[ResourceType, ...], group: str) -> JSONDoc | None:
    """``/apis/<group>``, or None when no such group is served."""
    versions = groups(resources).get(group)
    if not group or versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, list(versions))}


def resource_list(resources: tuple[ResourceType, ...], group: str, version: str) -> JSONDoc | None:
    """``/api/v1`` or ``/apis/<g>/<v>`` as an ``APIResourceList``, or None if not served."""
    chosen = groups(resources).get(group, {}).get(version)
    if chosen is None:
        return None
    entries: list[JSONDoc] = []
    for r in chosen:
        entry: JSONDoc = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": verbs(r),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        entries.append(entry)
        for s in r.subresources:
            entries.append(
                {
                    "name": f"{r.plural}/{s}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": SUBRESOURCE_VERBS.get(s, ["get"]),
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }


def version_info(minor: int) -> JSONDoc:
    """``/version``: kubectl's dispatcher runs the client matching ``minor`` (§1.1)."""
    return {
        "major": "1",
        "minor": str(minor),
        "gitVersion": f"v1.{minor}.0",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }
