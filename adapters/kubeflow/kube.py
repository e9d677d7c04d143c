"""The adapter's one seam to the cluster: the official ``kubernetes`` client over HTTP.

Every request goes through :meth:`Kube.call`, which counts it (``calls``, keyed
``"<verb> <resource>"``) and turns the client's failures into two kinds:

- :class:`ApiFailure`: the server answered with a Status (its code, reason and message);
- :class:`LostReply`: no answer reached us (the connection dropped, a timeout, urllib3's
  ``ProtocolError``): a write may or may not have taken effect.

urllib3's own retries are turned off on the adapter's client: a PUT or DELETE retried
unseen after a lost reply would hide the outcome the adapter must judge itself. Answers are
read as plain JSON (``_preload_content=False``), the same shape for custom and built-in kinds.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

TRAINER: Final = ("trainer.kubeflow.org", "v1alpha1")
JOBSET: Final = ("jobset.x-k8s.io", "v1alpha2")
KUEUE: Final = ("kueue.x-k8s.io", "v1beta2")

JSON = dict[str, Any]


class ApiFailure(Exception):
    """The API server answered with an error Status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class LostReply(Exception):
    """No answer came back: the request may or may not have taken effect."""


def _failure(error: ApiException) -> ApiFailure:
    status = int(error.status or 0)
    reason, message = str(error.reason or ""), ""
    try:
        body = json.loads(error.body or "{}")
        if isinstance(body, dict):
            reason = str(body.get("reason") or reason)
            message = str(body.get("message") or "")
    except (TypeError, ValueError):
        message = str(error.body or "")[:500]
    return ApiFailure(status, reason, message)


class Kube:
    """The requests the adapter makes, each counted."""

    def __init__(self, api_client: client.ApiClient, *, timeout: float = 30.0) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self.calls: Counter[str] = Counter()
        rest = getattr(api_client, "rest_client", None)
        manager = getattr(rest, "pool_manager", None)
        if manager is not None:
            manager.connection_pool_kw["retries"] = False
            manager.clear()
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.core: Any = client.CoreV1Api(api_client)
        self.apis: Any = client.ApisApi(api_client)

    def call(self, key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One request, counted under ``key``; its answer as JSON (or bytes for a log)."""
        self.calls[key] += 1
        try:
            answer = fn(*args, _preload_content=False, _request_timeout=self.timeout, **kwargs)
        except ApiException as error:
            if not error.status:
                raise LostReply(str(error.reason)) from None
            raise _failure(error) from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise LostReply(f"{type(error).__name__}: {error}") from None
        data = answer.data
        if key.startswith("log "):
            return bytes(data)
        try:
            return json.loads(data)
        except ValueError:
            raise LostReply(f"{key}: an answer that is not JSON") from None

    # -- custom objects ------------------------------------------------------------------------

    def get(self, api: tuple[str, str], plural: str, namespace: str | None, name: str) -> JSON:
        if namespace is None:
            return dict(
                self.call(
                    f"get {plural}", self.custom.get_cluster_custom_object, *api, plural, name
                )
            )
        return dict(
            self.call(
                f"get {plural}",
                self.custom.get_namespaced_custom_object,
                *api,
                namespace,
                plural,
                name,
            )
        )

    def list_objects(
        self, api: tuple[str, str], plural: str, namespace: str | None, selector: str = ""
    ) -> list[JSON]:
        if namespace is None:
            answer = self.call(
                f"list {plural}",
                self.custom.list_cluster_custom_object,
                *api,
                plural,
                label_selector=selector,
            )
        else:
            answer = self.call(
                f"list {plural}",
                self.custom.list_namespaced_custom_object,
                *api,
                namespace,
                plural,
                label_selector=selector,
            )
        return [dict(item) for item in answer.get("items") or []]

    def create(self, api: tuple[str, str], plural: str, namespace: str, body: JSON) -> JSON:
        return dict(
            self.call(
                f"create {plural}",
                self.custom.create_namespaced_custom_object,
                *api,
                namespace,
                plural,
                body,
            )
        )

    def replace(
        self, api: tuple[str, str], plural: str, namespace: str, name: str, body: JSON
    ) -> JSON:
        """PUT ``body``, which carries the ``resourceVersion`` it was read at."""
        return dict(
            self.call(
                f"update {plural}",
                self.custom.replace_namespaced_custom_object,
                *api,
                namespace,
                plural,
                name,
                body,
            )
        )

    def delete(
        self, api: tuple[str, str], plural: str, namespace: str, name: str, uid: str, policy: str
    ) -> JSON:
        """DELETE with ``preconditions.uid``: never without it."""
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": uid},
            "propagationPolicy": policy,
        }
        return dict(
            self.call(
                f"delete {plural}",
                self.custom.delete_namespaced_custom_object,
                *api,
                namespace,
                plural,
                name,
                body=options,
            )
        )

    # -- built-in kinds ------------------------------------------------------------------------

    def pods(self, namespace: str, selector: str) -> list[JSON]:
        answer = self.call(
            "list pods", self.core.list_namespaced_pod, namespace, label_selector=selector
        )
        return [dict(item) for item in answer.get("items") or []]

    def log(self, namespace: str, pod: str, container: str) -> bytes:
        answer = self.call(
            "log pods", self.core.read_namespaced_pod_log, pod, namespace, container=container
        )
        assert isinstance(answer, bytes)
        return answer

    def api_groups(self) -> list[str]:
        answer = self.call("get apis", self.apis.get_api_versions)
        return [str(group.get("name")) for group in answer.get("groups") or []]


__all__ = ["JOBSET", "KUEUE", "TRAINER", "ApiFailure", "Kube", "LostReply"]
