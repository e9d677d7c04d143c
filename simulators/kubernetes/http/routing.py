"""Where a request path leads: discovery, a control endpoint, or a resource of the catalogue.

Paths as kube-apiserver serves them (k8s.io/apiserver/pkg/endpoints/installer.go):
``/api/v1/<plural>[/<name>[/<sub>]]`` and ``/apis/<g>/<v>/<plural>...`` for cluster-scoped
resources and all-namespaces lists, ``.../namespaces/<ns>/<plural>[/<name>[/<sub>]]`` for
namespaced ones. ``/api/v1/namespaces/<name>[/status]`` is the Namespace itself. Anything else
is the 404 ``the server could not find the requested resource``.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulators.kubernetes import errors
from simulators.kubernetes.resources import (
    KUEUE_RESOURCES,
    NAMESPACES,
    RESOURCES,
    ResourceType,
    by_path,
)
from simulators.kubernetes.store import Store


@dataclass(frozen=True)
class ResourceRoute:
    """A resource request: ``namespace`` None means cluster scope or all namespaces."""

    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str = ""


def served(store: Store, kueue: bool) -> tuple[ResourceType, ...]:
    """The catalogue types served: those the store keeps; Kueue's only when it is installed."""
    out: list[ResourceType] = []
    for r in RESOURCES:
        if r.key in KUEUE_RESOURCES and not kueue:
            continue
        try:
            store.table(r)
        except errors.ApiError:
            continue
        out.append(r)
    return tuple(out)


def resource_route(parts: list[str], allowed: tuple[ResourceType, ...]) -> ResourceRoute:
    """Parse ``parts`` (the path split on ``/``, empty parts dropped) into a resource route."""
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise errors.route_not_found()
    if not rest:
        raise errors.route_not_found()

    def lookup(plural: str) -> ResourceType:
        found = by_path(group, version, plural)
        if found is None or found not in allowed:
            raise errors.route_not_found()
        return found

    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in NAMESPACES.subresources:
        namespace = rest[1]
        resource = lookup(rest[2])
        if not resource.namespaced:
            raise errors.route_not_found()
        tail = rest[3:]
        if len(tail) > 2:
            raise errors.route_not_found()
        name = tail[0] if tail else None
        sub = tail[1] if len(tail) == 2 else ""
        if sub and sub not in resource.subresources:
            raise errors.route_not_found()
        return ResourceRoute(resource, namespace, name, sub)
    resource = lookup(rest[0])
    tail = rest[1:]
    if len(tail) > 2:
        raise errors.route_not_found()
    name = tail[0] if tail else None
    sub = tail[1] if len(tail) == 2 else ""
    if resource.namespaced and name is not None:
        raise errors.route_not_found()
    if sub and sub not in resource.subresources:
        raise errors.route_not_found()
    return ResourceRoute(resource, None, name, sub)
