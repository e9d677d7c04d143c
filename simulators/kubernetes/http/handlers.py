"""The API's verbs over the store: one ``Api.handle(Request)`` per HTTP request.

Every request runs under ``sim.lock``: the armed API fault is taken first (a refusal answers
409 or 500 before anything applies), then the verb applies, writes settle the controllers, and
a ``lose_reply`` fault drops the answer after the write landed. Faults are matched on the verb
(get, list, watch, create, update, patch, delete, deletecollection), the plural
(``trainjobs``; ``trainjobs/status`` for a subresource) and the name (``""`` for collections).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, cast
from urllib.parse import parse_qsl, urlsplit

from simulators.kubernetes import errors, patch
from simulators.kubernetes.controllers import kubelet
from simulators.kubernetes.errors import ApiError, Cause
from simulators.kubernetes.http import discovery, dryrun, leases, openapi, protobuf, tables
from simulators.kubernetes.http import fields as served_fields
from simulators.kubernetes.http.control import CONTROL
from simulators.kubernetes.http.follow import LogFollow
from simulators.kubernetes.http.routing import ResourceRoute, resource_route, served
from simulators.kubernetes.http.watch import WatchStream
from simulators.kubernetes.objects import JSON, meta
from simulators.kubernetes.resources import PODS, ResourceType
from simulators.kubernetes.selectors import FieldSelector, LabelSelector, SelectorError, go_quote
from simulators.kubernetes.store import Propagation, Store, decode_body

if TYPE_CHECKING:
    from simulators.kubernetes.sim import KubeSim

JSON_TYPE: Final = "application/json"
TEXT_TYPE: Final = "text/plain; charset=utf-8"
REFUSED: Final = "the simulator refused this request before it applied (fault refuse_next)"
TIMED_OUT: Final = "request did not complete within the allotted timeout"
"""The timeout filter's words (server/filters/timeout.go), for time_out_after_effect."""

HEALTH_CHECKS: Final = ("ping", "log", "etcd")
WRITES: Final = frozenset({"create", "update", "patch", "delete", "deletecollection"})
SERVER_SIDE_APPLY: Final = ("application/apply-patch+yaml", "application/apply-patch+cbor")
NO_SERVER_SIDE_APPLY: Final = (
    "server-side apply is not modelled by this simulator: use client-side apply "
    "(kubectl apply without --server-side), kubectl patch --type merge|json, or replace"
)
"""kubectl prints it as ``Server-side apply not available on the server: (<this>)``."""

LogSource = Callable[["KubeSim", str, str, str, bool, "int | None", bool], str]
"""(sim, namespace, pod, container, previous, tail_lines, timestamps) -> the log text."""


@dataclass
class Request:
    """What the HTTP layer read: method, path, query (last value of each), headers, body."""

    method: str
    path: str
    query: dict[str, str]
    accept: str = ""
    content_type: str = ""
    body: bytes = b""


def http_request(method: str, target: str, accept: str, content_type: str, body: bytes) -> Request:
    """The request an HTTP request line (``target``: path and query), headers and body make;
    a repeated query parameter keeps its last value."""
    split = urlsplit(target)
    return Request(
        method=method,
        path=split.path,
        query=dict(parse_qsl(split.query, keep_blank_values=True)),
        accept=accept,
        content_type=content_type,
        body=body,
    )


@dataclass
class Reply:
    """A whole answer; ``lose`` says: close the connection without writing it."""

    code: int
    body: bytes
    content_type: str | None = JSON_TYPE
    lose: bool = False


class Batches(Protocol):
    """A stream's source: the next chunks to write (blocking), or None at its end."""

    def next_batch(self) -> list[bytes] | None: ...


@dataclass
class Streamed:
    """A watch or followed-log answer: 200, then the stream's chunks."""

    stream: Batches
    content_type: str


def dump(obj: Any) -> bytes:
    """Compact JSON and a newline, as the API server's encoder writes it."""
    return compact(obj) + b"\n"


def compact(obj: Any) -> bytes:
    """Compact JSON (:func:`dump` without its newline)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def dump_list(head: JSON, items: list[bytes]) -> bytes:
    """:func:`dump` of ``head`` with ``items`` (each item's :func:`compact` JSON) added last:
    what ``dump({**head, "items": [...]})`` writes, from the items' encodings."""
    start = compact(head)[:-1]  # without its closing brace
    comma = b"," if len(start) > 1 else b""
    return start + comma + b'"items":[' + b",".join(items) + b"]}\n"


RETURN_DELETED_OBJECT: Final = frozenset({("", "pods"), ("", "services")})
"""Registries with ``ReturnDeletedObject: true`` among the kinds served (pkg/registry/core/pod
and core/service storage.go): their immediate delete answers the object, not a Status."""


def deleted_status(r: ResourceType, obj: JSON) -> JSON:
    """``finalizeDelete``'s answer: Success, details name, group, kind (the resource), uid."""
    details: JSON = {"name": meta(obj).get("name", "")}
    if r.group:
        details["group"] = r.group
    details["kind"] = r.plural
    details["uid"] = meta(obj).get("uid", "")
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def reply_headers(answer: Reply) -> list[tuple[str, str]]:
    """The headers of a whole answer, as the server writes them."""
    headers = [("Content-Type", answer.content_type)] if answer.content_type else []
    return [
        *headers,
        ("Cache-Control", "no-cache, private"),
        ("Content-Length", str(len(answer.body))),
    ]


def error_reply(exc: ApiError) -> Reply:
    return Reply(exc.code, dump(exc.status()))


def kubelet_logs(
    sim: KubeSim,
    namespace: str,
    pod: str,
    container: str,
    previous: bool,
    tail_lines: int | None,
    timestamps: bool,
) -> str:
    """The kubelet's log of the container (``timestamps`` is accepted; the kubelet keeps none)."""
    del timestamps
    return kubelet.logs(
        sim.cluster, namespace, pod, container, previous=previous, tail_lines=tail_lines
    )


def _bool(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def _int(query: dict[str, str], name: str) -> int | None:
    text = query.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise errors.bad_request(f'invalid value "{text}" for {name}: not an integer') from None


def check_type_meta(r: ResourceType, obj: JSON, body: bytes) -> None:
    """A create's or update's ``kind`` and ``apiVersion`` as the API server judges them (v0.32).

    A built-in kind's are defaulted from the URL when missing or empty (apimachinery
    ``serializer/json/json.go`` Decode: ``gvkWithDefaults``). A custom resource is decoded into
    an Unstructured, whose kind and apiVersion come from the body's own (case-sensitive) keys
    alone (json.go:174-178): a missing or empty ``kind`` is 400 (``transformDecodeError``), a
    missing ``apiVersion`` the 400 of a differing one (handlers/create.go:144, update.go:132),
    and another ``kind`` is the CRD validator's 422 (apiextensions-apiserver
    ``customresource/validator.go`` ValidateTypeMeta), named by the kind the body gave.
    """
    custom = not r.builtin
    kind = obj.get("kind")
    if custom and not (isinstance(kind, str) and kind):
        head = body[:30]  # handlers/rest.go summarizeData(body, 30)
        summary = head.decode("utf-8", "replace") if body.startswith(b"{") else head.hex()
        summary += " ..." if len(body) > 30 else ""
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {r.kind}): "
            f"Object 'Kind' is missing in '{body.decode('utf-8', 'replace')}' ({summary})"
        )
    given = obj.get("apiVersion")
    if (custom or given not in (None, "")) and given != r.api_version:
        shown = "" if given is None else given
        raise errors.bad_request(
            f"the API version in the data ({shown}) does not match the expected API "
            f"version ({r.api_version})"
        )
    if custom and kind != r.kind:
        m = obj.get("metadata")
        name = m.get("name") if isinstance(m, dict) else None
        cause = Cause("kind", f"Invalid value: {go_quote(str(kind))}: must be {r.kind}")
        raise errors.invalid(str(kind), r.group, name if isinstance(name, str) else "", [cause])


def apply_patch(resource: ResourceType, current: JSON, content_type: str, body: bytes) -> JSON:
    """The patched object (simulators.kubernetes.patch; 415 for strategic merge on a CRD)."""
    return patch.apply_patch(
        current,
        content_type,
        body,
        builtin=resource.builtin,
        kind=resource.kind,
        group=resource.group,
        version=resource.version,
    )


STREAMING: Final = {
    "exec": "exec",
    "attach": "attach",
    "portforward": "port-forward",
    "proxy": "proxy",
}
"""Pod subresources that open a connection into a container; the simulator runs no processes."""


def _refuse_streaming(parts: list[str]) -> None:
    """``pods/<name>/exec|attach|portforward|proxy``: 400 saying why and what to use instead."""
    if (
        len(parts) == 7
        and parts[:3] == ["api", "v1", "namespaces"]
        and parts[4] == "pods"
        and parts[6] in STREAMING
    ):
        raise errors.bad_request(
            f"{STREAMING[parts[6]]} into pod {parts[5]} is not modelled by this simulator: its "
            "containers run no processes (read their output with kubectl logs)"
        )


class Api:
    """The API server's request handling, independent of sockets."""

    def __init__(
        self,
        sim: KubeSim,
        host: str,
        stopped: Callable[[], bool],
        logs: LogSource = kubelet_logs,
    ) -> None:
        self.sim = sim
        self.host = host
        self.stopped = stopped
        self.logs = logs
        self.follow_logs = False
        self._served: tuple[Store, bool, tuple[ResourceType, ...]] | None = None
        """:attr:`resources` as made for a store and a Kueue setting (a store's tables are
        fixed when it is made)."""
        self._dry = False
        """``follow=true`` streams a growing log (the server sets it in realtime mode)."""

    @property
    def resources(self) -> tuple[ResourceType, ...]:
        store, kueue = self.sim.store, bool(self.sim.config.kueue)
        if self._served is None or self._served[0] is not store or self._served[1] != kueue:
            self._served = (store, kueue, served(store, kueue))
        return self._served[2]

    def handle(self, req: Request) -> Reply | Streamed:
        try:
            return self._route(req)
        except ApiError as exc:
            return error_reply(exc)

    def answer(self, req: Request) -> Reply | Streamed:
        """:meth:`handle`, where a simulator bug answers 500 as the API server would."""
        try:
            return self.handle(req)
        except Exception as exc:
            return Reply(500, dump(errors.internal(f"{type(exc).__name__}: {exc}").status()))

    # -- routing -------------------------------------------------------------------------------

    def _route(self, req: Request) -> Reply | Streamed:
        parts = [p for p in req.path.split("/") if p]
        if parts in (["healthz"], ["readyz"], ["livez"]):
            if "verbose" in req.query:  # k8s.io/apiserver/pkg/server/healthz: one line a check
                text = "".join(f"[+]{c} ok\n" for c in HEALTH_CHECKS)
                return Reply(200, f"{text}{parts[0]} check passed\n".encode(), TEXT_TYPE)
            return Reply(200, b"ok", TEXT_TYPE)
        if parts == ["version"]:
            return Reply(200, dump(discovery.version_info(int(self.sim.config.kube_minor))))
        if parts[:2] == ["sim", "v1"]:
            return self._control(req, "/".join(parts[2:]))
        if parts[:1] == ["openapi"]:
            return self._openapi(parts)
        if req.method == "GET":
            found = self._discovery(parts, req.accept)
            if found is not None:
                return found
        if parts == ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"]:
            return self._access_review(req)
        if tuple(parts[:-1]) == leases.PATH and req.method == "GET":
            with self.sim.lock:
                return Reply(200, dump(leases.node_lease(self.sim, parts[-1])))
        _refuse_streaming(parts)
        route = resource_route(parts, self.resources)
        with self.sim.lock:
            return self._resource(req, route)

    def _control(self, req: Request, name: str) -> Reply:
        handler = CONTROL.get((req.method, name))
        if handler is None:
            raise errors.route_not_found()
        body = decode_body(req.body) if req.body.strip() else {}
        with self.sim.lock:
            return Reply(200, dump(handler(self.sim, body)))

    def _openapi(self, parts: list[str]) -> Reply:
        if parts == ["openapi", "v3"]:
            return Reply(200, dump(openapi.root(self.resources)))
        if parts[:2] == ["openapi", "v3"]:
            gv = parts[2:]
            doc = None
            if gv[:1] == ["api"] and len(gv) == 2:
                doc = openapi.group_version_doc(self.resources, "", gv[1])
            elif gv[:1] == ["apis"] and len(gv) == 3:
                doc = openapi.group_version_doc(self.resources, gv[1], gv[2])
            if doc is not None:
                return Reply(200, dump(doc))
        raise errors.route_not_found()

    def _access_review(self, req: Request) -> Reply:
        """``kubectl auth can-i``: every request is allowed (the simulator has no authorizer;
        its kubeconfig user is ``{}``), as the review answers it: 201, the spec, the status."""
        if req.method != "POST":
            raise errors.method_not_allowed()
        review = self._body_object(req, discovery.ACCESS_REVIEWS)
        review["apiVersion"] = discovery.ACCESS_REVIEWS.api_version
        review["kind"] = discovery.ACCESS_REVIEWS.kind
        review.setdefault("metadata", {})
        review["status"] = {
            "allowed": True,
            "reason": "the simulator authorizes every request",
        }
        return Reply(201, dump(review))

    def _discovery(self, parts: list[str], accept: str) -> Reply | None:
        resources = (*self.resources, discovery.ACCESS_REVIEWS)
        if parts in (["api"], ["apis"]):
            version = discovery.aggregated_version(accept)
            core = parts == ["api"]
            if version is not None:
                doc = discovery.aggregated(resources, core, version)
                return Reply(200, dump(doc), discovery.AGGREGATED.format(v=version))
            if core:
                return Reply(200, dump(discovery.api_versions(self.host)))
            return Reply(200, dump(discovery.api_group_list(resources)))
        found: JSON | None = None
        if parts == ["api", "v1"]:
            found = discovery.resource_list(resources, "", "v1")
        elif len(parts) == 2 and parts[0] == "apis":
            found = discovery.api_group(resources, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            found = discovery.resource_list(resources, parts[1], parts[2])
        else:
            return None
        if found is None:
            raise errors.route_not_found()
        return Reply(200, dump(found))

    # -- resources -----------------------------------------------------------------------------

    def _verb(self, req: Request, route: ResourceRoute) -> str:
        method, item = req.method, route.name is not None
        if method == "GET":
            if item:
                return "get"
            return "watch" if _bool(req.query.get("watch")) else "list"
        if method == "POST" and not item:
            return "create"
        if method == "PUT" and item:
            return "update"
        if method == "PATCH" and item:
            return "patch"
        if method == "DELETE":
            return "delete" if item else "deletecollection"
        raise errors.method_not_allowed()

    def _resource(self, req: Request, route: ResourceRoute) -> Reply | Streamed:
        verb = self._verb(req, route)
        r = route.resource
        if route.namespace is None and r.namespaced and verb not in ("list", "watch"):
            raise errors.route_not_found()
        plural = f"{r.plural}/{route.subresource}" if route.subresource else r.plural
        fault = self.sim.faults.take(verb, plural, route.name or "")
        if fault is not None and fault.kind == "refuse":
            if fault.code == 409:
                raise errors.conflict(r.plural, r.group, route.name or "", REFUSED)
            raise errors.internal(REFUSED)
        dry = verb in WRITES and dryrun.requested(req.query)
        if verb in ("delete", "deletecollection") and not dry:
            dry = dryrun.in_options(self._delete_body(req))  # kubectl delete puts it there
        if dry:
            with dryrun.sandbox(self.sim.store):
                self._dry = True
                try:
                    answer = self._apply(verb, req, route)
                finally:
                    self._dry = False
        else:
            answer = self._apply(verb, req, route)
        if fault is not None and fault.kind == "lose_reply":
            return Reply(0, b"", None, lose=True)
        if fault is not None and fault.kind == "time_out":
            raise errors.timeout(TIMED_OUT)
        return answer

    def _apply(self, verb: str, req: Request, route: ResourceRoute) -> Reply | Streamed:
        r, ns, name, sub = (
            route.resource,
            route.namespace or "",
            route.name or "",
            route.subresource,
        )
        store = self.sim.store
        if sub == "log":
            if verb != "get":
                raise errors.method_not_allowed()
            return self._log(req, ns, name)
        if verb == "get":
            if tables.wants_table(req.accept):
                return self._object(req, r, store.get(r, ns, name))
            # encoded here, under the lock (once per version of the object: it is never changed)
            return Reply(200, self._json(r, store.stored(r, ns, name)))
        if verb in ("list", "watch"):
            labels, fields = self._selectors(req, r)
            if verb == "watch":
                return self._watch(req, route, labels, fields)
            table = tables.wants_table(req.accept)
            page = store.list(
                r,
                route.namespace,
                labels,
                fields,
                _int(req.query, "limit"),
                req.query.get("continue", ""),
                copies=table,  # plain JSON is encoded here, under the lock: no copies needed
            )
            if table:
                doc = tables.table(
                    r, page.items, self.sim.clock.now(), page.resource_version, page.continue_token
                )
                return Reply(200, dump(doc), tables.TABLE_CONTENT_TYPE)
            list_meta: JSON = {"resourceVersion": page.resource_version}
            if page.continue_token:
                list_meta["continue"] = page.continue_token
            if page.remaining is not None:
                list_meta["remainingItemCount"] = page.remaining
            body: JSON = {"apiVersion": r.api_version, "kind": r.list_kind, "metadata": list_meta}
            items = [store.encoding(r, obj, compact) for obj in page.items]
            return Reply(200, dump_list(body, items))
        # A write's answer is the object as the write stored it, encoded at once (under the
        # lock, before the controllers react): the stored object itself, no copy. The body
        # decoded for the request, and a patch's result, are handed over to the store.
        if verb == "create":
            obj = self._body_object(req, r)
            reply = self._object(req, r, store.create(r, ns, obj, owned=True, copy=False), 201)
            self._settle()
            return reply
        if verb == "update":
            obj = self._body_object(req, r)
            done = store.update(r, ns, name, obj, subresource=sub, owned=True, copy=False)
            reply = self._object(req, r, done)
            self._settle()
            return reply
        if verb == "patch":
            content_type = req.content_type.split(";")[0].strip().lower()
            if content_type in SERVER_SIDE_APPLY:  # before the get: it would create the object
                raise ApiError(415, "UnsupportedMediaType", NO_SERVER_SIDE_APPLY)
            current = store.stored(r, ns, name)  # apply_patch never changes it: a patched copy
            patched = apply_patch(r, current, content_type, req.body)
            pm = meta(patched)
            if not pm.get("resourceVersion"):
                pm["resourceVersion"] = meta(current).get("resourceVersion")
            done = store.update(r, ns, name, patched, subresource=sub, owned=True, copy=False)
            reply = self._object(req, r, done)
            self._settle()
            return reply
        if verb == "delete":
            return self._delete(req, r, ns, name)
        if verb == "deletecollection":
            labels, fields = self._selectors(req, r)
            options = self._delete_options(req)
            gone = []
            for obj in [dict(o) for o in store.select(r, route.namespace, labels, fields)]:
                m = meta(obj)
                gone.append(
                    store.delete(
                        r,
                        str(m.get("namespace", "")),
                        str(m.get("name", "")),
                        propagation=options["propagation"],
                        grace_seconds=options["grace"],
                    )
                )
            self._settle()
            deleted: JSON = {
                "apiVersion": r.api_version,
                "kind": r.list_kind,
                "metadata": {"resourceVersion": str(store.revision)},
                "items": gone,
            }
            return Reply(200, dump(deleted))
        raise errors.method_not_allowed()

    def _settle(self) -> None:
        """Let the controllers react to a write (not to a dry run: nothing changed)."""
        if not self._dry:
            self.sim.runner.settle()

    def _object(self, req: Request, r: ResourceType, obj: JSON, code: int = 200) -> Reply:
        if tables.wants_table(req.accept):
            rv = str(meta(obj).get("resourceVersion", ""))
            doc = tables.table(r, [obj], self.sim.clock.now(), rv)
            return Reply(code, dump(doc), tables.TABLE_CONTENT_TYPE)
        return Reply(code, self._json(r, obj))

    def _json(self, r: ResourceType, obj: JSON) -> bytes:
        """:func:`dump` of ``obj``; of a stored object, made once per version (the store keeps
        it with the version: :meth:`~simulators.kubernetes.store.Store.encoding`)."""
        return self.sim.store.encoding(r, obj, compact) + b"\n"

    def _body_object(self, req: Request, r: ResourceType) -> JSON:
        obj = (
            protobuf.decode_object(req.body)
            if protobuf.is_protobuf(req.content_type)
            else decode_body(req.body)
        )
        if not isinstance(obj, dict):
            raise errors.bad_request("the body of the request is not a JSON object")
        check_type_meta(r, obj, req.body)
        return obj

    def _selectors(
        self, req: Request, r: ResourceType
    ) -> tuple[LabelSelector | None, FieldSelector | None]:
        try:
            text = req.query.get("labelSelector", "")
            labels = LabelSelector.parse(text) if text else None
            text = req.query.get("fieldSelector", "")
            fields = served_fields.parse(text, r) if text else None
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from None
        return labels, fields

    def _watch(
        self,
        req: Request,
        route: ResourceRoute,
        labels: LabelSelector | None,
        fields: FieldSelector | None,
    ) -> Streamed:
        r = route.resource
        as_table = tables.wants_table(req.accept)

        def render(obj: JSON) -> JSON:
            if not as_table:
                return obj
            rv = str(meta(obj).get("resourceVersion", ""))
            return tables.table(r, [obj], self.sim.clock.now(), rv)

        timeout = _int(req.query, "timeoutSeconds")
        stream = WatchStream(
            self.sim,
            r,
            route.namespace,
            labels,
            fields,
            req.query.get("resourceVersion", ""),
            timeout_seconds=None if timeout is None else float(timeout),
            bookmarks=_bool(req.query.get("allowWatchBookmarks")),
            send_initial=_bool(req.query.get("sendInitialEvents")),
            render=render,
            stopped=self.stopped,
        )
        return Streamed(stream, tables.TABLE_CONTENT_TYPE if as_table else JSON_TYPE)

    def _delete_body(self, req: Request) -> JSON:
        body: Any
        if not req.body.strip():
            body = {}
        elif protobuf.is_protobuf(req.content_type):
            body = protobuf.decode_delete_options(req.body)
        else:
            body = decode_body(req.body)
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request is not a DeleteOptions object")
        return body

    def _delete_options(self, req: Request) -> dict[str, Any]:
        body = self._delete_body(req)
        pre = body.get("preconditions") or {}
        policy = req.query.get("propagationPolicy") or body.get("propagationPolicy")
        orphan = req.query.get("orphanDependents", body.get("orphanDependents"))
        if policy is None and orphan is not None:
            policy = "Orphan" if _bool(str(orphan)) else "Background"
        if policy is not None and policy not in ("Background", "Foreground", "Orphan"):
            raise errors.bad_request(
                f'propagationPolicy: Unsupported value: "{policy}": supported values: '
                '"Foreground", "Background", "Orphan"'
            )
        grace = _int(req.query, "gracePeriodSeconds")
        if grace is None and body.get("gracePeriodSeconds") is not None:
            grace = int(body["gracePeriodSeconds"])
        propagation = cast("Propagation | None", policy)
        return {
            "uid": pre.get("uid"),
            "resource_version": pre.get("resourceVersion"),
            "propagation": propagation,
            "grace": grace,
            "orphan_false": orphan is not None and not _bool(str(orphan)),
        }

    def _delete(self, req: Request, r: ResourceType, ns: str, name: str) -> Reply:
        """200 with the object, or a Success ``Status``; 202 only for ``orphanDependents=false``
        not yet gone.

        As k8s.io/apiserver/pkg/endpoints/handlers/delete.go decides the status code. The body
        is the registry's (apiserver/pkg/registry/generic/registry/store.go): an object that
        waits (finalizers, a grace period) comes back as it now stands; one deleted at once
        comes back only where the registry sets ``ReturnDeletedObject`` (pods, services), and
        as ``finalizeDelete``'s ``Status`` (Success; details name, group, resource, uid)
        everywhere else: ConfigMaps, Jobs, custom resources such as TrainJobs.
        """
        options = self._delete_options(req)
        done = self.sim.store.delete(
            r,
            ns,
            name,
            uid=options["uid"],
            resource_version=options["resource_version"],
            propagation=options["propagation"],
            grace_seconds=options["grace"],
            copy=False,
        )
        deleted_at_once = self.sim.store.peek(r, ns, name) is None
        body = done
        if deleted_at_once and r.key not in RETURN_DELETED_OBJECT:
            body = deleted_status(r, done)
        encoded = dump(body)  # as the delete left it (the stored object itself: not later)
        self._settle()
        still = self.sim.store.peek(r, ns, name) is not None
        return Reply(202 if still and options["orphan_false"] else 200, encoded)

    def _log(self, req: Request, ns: str, name: str) -> Reply | Streamed:
        """``pods/log``: the container's log (pkg/registry/core/pod/strategy.go LogLocation)."""
        pod = self.sim.store.get(PODS, ns, name)
        spec = pod.get("spec", {})
        names = [str(c.get("name")) for c in spec.get("containers", []) or []]
        inits = [str(c.get("name")) for c in spec.get("initContainers", []) or []]
        container = req.query.get("container", "")
        if not container:
            if len(names) == 1:
                container = names[0]
            elif not names:
                raise errors.bad_request(f"a container name must be specified for pod {name}")
            else:
                text = (
                    f"a container name must be specified for pod {name}, "
                    f"choose one of: [{' '.join(names)}]"
                )
                if inits:
                    text += f" or one of the init containers: [{' '.join(inits)}]"
                raise errors.bad_request(text)
        elif container not in names and container not in inits:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        tail = _int(req.query, "tailLines")
        previous = _bool(req.query.get("previous"))
        if self.follow_logs and _bool(req.query.get("follow")) and not previous:
            timestamps = _bool(req.query.get("timestamps"))

            def read(tail_lines: int | None) -> str:
                return self.logs(self.sim, ns, name, container, False, tail_lines, timestamps)

            follow = LogFollow(self.sim, ns, name, container, read, tail, self.stopped)
            return Streamed(follow, TEXT_TYPE)
        text = self.logs(
            self.sim,
            ns,
            name,
            container,
            _bool(req.query.get("previous")),
            tail,
            _bool(req.query.get("timestamps")),
        )
        body = text.encode()
        limit = _int(req.query, "limitBytes")
        if limit is not None:
            if limit < 1:
                raise errors.bad_request(
                    f"limitBytes: Invalid value: {limit}: must be greater than 0"
                )
            body = body[:limit]  # kubelet: io.LimitReader on the log stream
        return Reply(200, body, TEXT_TYPE)
