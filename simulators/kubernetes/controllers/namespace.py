"""The namespace controller: a terminating namespace's contents are deleted, then it goes.

As pkg/controller/namespace/deletion does: deleting a namespace marks it (``deletionTimestamp``,
phase ``Terminating``, its ``spec.finalizers`` still ``kubernetes``); new objects are refused
there (403); every object in it is deleted (owners' cascades and pods' grace periods apply);
when nothing is left the namespace is finalized and removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import ClassVar

from simulators.kubernetes.controllers.base import Controller
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import meta
from simulators.kubernetes.resources import NAMESPACES, RESOURCES, ResourceType
from simulators.kubernetes.store import Event, Key


class NamespaceController(Controller):
    """Empties and removes terminating namespaces."""

    name: ClassVar[str] = "namespace"
    primary: ClassVar[ResourceType] = NAMESPACES

    def interests(self) -> tuple[ResourceType, ...]:
        return RESOURCES

    def keys_for(self, event: Event) -> Iterable[Key]:
        if event.resource is NAMESPACES:
            return [("", str(meta(event.object).get("name", "")))]
        if event.type != "DELETED" or not event.resource.namespaced:
            return []
        namespace = str(meta(event.object).get("namespace", ""))
        owner = self.store.peek(NAMESPACES, "", namespace)
        if owner is not None and meta(owner).get("deletionTimestamp"):
            return [("", namespace)]
        return []

    def reconcile(self, namespace: str, name: str) -> float | None:
        del namespace
        found = self.store.peek(NAMESPACES, "", name)
        if found is None or not meta(found).get("deletionTimestamp"):
            return None
        for resource, obj in self.store.namespaced_in(name):
            m = meta(obj)
            if m.get("deletionTimestamp"):
                continue
            # gone meanwhile, or refused: its own DELETED event brings the namespace back here
            with contextlib.suppress(ApiError):
                self.store.delete(
                    resource,
                    name,
                    str(m.get("name")),
                    uid=str(m.get("uid")),
                    propagation="Background",
                    internal=True,
                    copy=False,
                )
        self.store.finalize_namespace(name)
        return None
