"""The garbage collector: owner references, background and foreground cascades, orphaning.

As kube-controller-manager's garbagecollector behaves:

- A dependent all of whose owners are gone (no object of the owner's kind and name, or one with
  another uid) is deleted, in the background, or in the foreground when an owner it blocked was
  deleted in the foreground.
- An owner marked for deletion with the ``foregroundDeletion`` finalizer has its dependents
  deleted; the finalizer is removed (and the owner goes) once no dependent with
  ``blockOwnerDeletion: true`` remains.
- An owner with the ``orphan`` finalizer has its uid removed from its dependents'
  ownerReferences, then the finalizer removed.
- The collector acts on such an owner ``gc_seconds`` (KubeConfig) after it first saw it
  marked, not within the DELETE: the real one works from its informers' events
  (pkg/controller/garbagecollector: graph_builder.go queues the owner's update event,
  garbagecollector.go's attemptToDelete workers process it), after the request has answered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import ClassVar

from simulators.kubernetes.controllers.base import Cluster, Controller
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import JSON, meta, owner_references, remove_finalizer
from simulators.kubernetes.resources import NAMESPACES, RESOURCES, ResourceType, by_kind
from simulators.kubernetes.store import FOREGROUND, ORPHAN, Event, Key, Propagation

_BY_KEY = {f"{r.group}/{r.plural}": r for r in RESOURCES}


def _gc_key(resource: ResourceType, obj: JSON) -> Key:
    m = meta(obj)
    return (f"{resource.group}/{resource.plural}", f"{m.get('namespace', '')}/{m.get('name', '')}")


class GarbageCollector(Controller):
    """Deletes what lost its owners, runs foreground cascades, orphans on request."""

    name: ClassVar[str] = "garbage-collector"
    primary: ClassVar[ResourceType] = NAMESPACES

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(cluster)
        self._first_seen: dict[str, float] = {}
        """The virtual time the collector first saw each marked owner (by uid)."""

    def interests(self) -> tuple[ResourceType, ...]:
        return RESOURCES

    def all_keys(self) -> list[Key]:
        return sorted(
            _gc_key(resource, obj)
            for resource, obj in self.store.all_objects()
            if owner_references(obj) or meta(obj).get("deletionTimestamp")
        )

    def keys_for(self, event: Event) -> Iterable[Key]:
        keys: list[Key] = []
        obj = event.object
        m = meta(obj)
        if event.type == "DELETED":
            uid = str(m.get("uid", ""))
            self._first_seen.pop(uid, None)
            keys.extend(_gc_key(r, dep) for r, dep in self.store.dependents(uid))
            keys.extend(self._owners_being_deleted(obj))
            return keys
        finalizers = m.get("finalizers") or []
        if m.get("deletionTimestamp") and (FOREGROUND in finalizers or ORPHAN in finalizers):
            keys.append(_gc_key(event.resource, obj))
        refs = owner_references(obj)
        if refs and (event.old is None or owner_references(event.old) != refs):
            keys.append(_gc_key(event.resource, obj))
        return keys

    def _owners_being_deleted(self, obj: JSON) -> list[Key]:
        out: list[Key] = []
        namespace = str(meta(obj).get("namespace", ""))
        for ref in owner_references(obj):
            owner_type = by_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
            if owner_type is None:
                continue
            owner = self.store.peek(owner_type, namespace, str(ref.get("name", "")))
            if owner is not None and meta(owner).get("deletionTimestamp"):
                out.append(_gc_key(owner_type, owner))
        return out

    def reconcile(self, namespace: str, name: str) -> float | None:
        resource = _BY_KEY.get(namespace)
        if resource is None:
            return None
        obj_namespace, _, obj_name = name.partition("/")
        obj = self.store.peek(resource, obj_namespace, obj_name)
        if obj is None:
            return None
        m = meta(obj)
        finalizers = list(m.get("finalizers") or [])
        marked = bool(m.get("deletionTimestamp"))
        if marked and (ORPHAN in finalizers or FOREGROUND in finalizers):
            now = self.cluster.now()
            due = self._first_seen.setdefault(str(m.get("uid")), now) + self._latency()
            if now < due:
                return due
        if marked and ORPHAN in finalizers:
            self._orphan(resource, obj)
            return None
        if marked and FOREGROUND in finalizers:
            self._foreground(resource, obj)
            return None
        self._collect_if_orphaned(resource, obj)
        return None

    def _latency(self) -> float:
        config = self.cluster.config  # None: a controller's unit test, with no KubeConfig
        return 0.0 if config is None else float(config.gc_seconds)

    def _owner(self, ref: JSON, namespace: str) -> JSON | None:
        owner_type = by_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        if owner_type is None:
            return None
        owner = self.store.peek(owner_type, namespace, str(ref.get("name", "")))
        if owner is None or meta(owner).get("uid") != ref.get("uid"):
            return None
        return owner

    def _collect_if_orphaned(self, resource: ResourceType, obj: JSON) -> None:
        refs = owner_references(obj)
        if not refs or meta(obj).get("deletionTimestamp"):
            return
        namespace = str(meta(obj).get("namespace", ""))
        if any(self._owner(ref, namespace) is not None for ref in refs):
            return
        self._delete(resource, obj, "Background")

    def _foreground(self, resource: ResourceType, owner: JSON) -> None:
        uid = str(meta(owner).get("uid"))
        blocking = False
        for dep_type, dep in self.store.dependents(uid):
            refs = [r for r in owner_references(dep) if r.get("uid") == uid]
            if any(r.get("blockOwnerDeletion") is True for r in refs):
                blocking = True
            if not meta(dep).get("deletionTimestamp"):
                self._delete(dep_type, dep, "Foreground")
        if blocking:
            return
        self._drop_finalizer(resource, owner, FOREGROUND)

    def _orphan(self, resource: ResourceType, owner: JSON) -> None:
        uid = str(meta(owner).get("uid"))
        for dep_type, dep in self.store.dependents(uid):
            dm = meta(dep)

            def strip(current: JSON, uid: str = uid) -> None:
                cm = meta(current)
                kept = [r for r in owner_references(current) if r.get("uid") != uid]
                if kept:
                    cm["ownerReferences"] = kept
                else:
                    cm.pop("ownerReferences", None)

            self._write(dep_type, str(dm.get("namespace", "")), str(dm.get("name")), strip)
        self._drop_finalizer(resource, owner, ORPHAN)

    def _drop_finalizer(self, resource: ResourceType, owner: JSON, finalizer: str) -> None:
        m = meta(owner)

        def drop(current: JSON) -> None:
            remove_finalizer(current, finalizer)

        self._write(resource, str(m.get("namespace", "")), str(m.get("name")), drop)

    def _write(
        self, resource: ResourceType, namespace: str, name: str, change: Callable[[JSON], None]
    ) -> None:
        # gone or refused meanwhile: the next event brings it back here
        with contextlib.suppress(ApiError):
            self.store.mutate(resource, namespace, name, change, copy=False)

    def _delete(self, resource: ResourceType, obj: JSON, propagation: Propagation) -> None:
        m = meta(obj)
        # already gone, or replaced (the uid precondition): nothing of ours to delete
        with contextlib.suppress(ApiError):
            self.store.delete(
                resource,
                str(m.get("namespace", "")),
                str(m.get("name")),
                uid=str(m.get("uid")),
                propagation=propagation,
                internal=True,
                copy=False,
            )
