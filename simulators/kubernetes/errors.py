"""API errors as the Kubernetes API server writes them: a ``Status`` object with a code and reason.

Every failure a handler or controller raises is an :class:`ApiError`; the HTTP layer writes its
``status`` verbatim with its ``code``. Messages follow k8s.io/apimachinery/pkg/api/errors, so that
kubectl prints what it prints against a real server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One ``details.causes`` entry of an Invalid status."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"


@dataclass
class ApiError(Exception):
    """A request the API server refuses: ``code`` the HTTP status, ``reason`` the Status reason.

    ``details`` is Go's ``*StatusDetails``: None writes no ``details`` (a nil pointer, omitted),
    a dict writes it even when empty (``"details":{}``, as NewGenericServerResponse's).
    """

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def status(self) -> dict[str, Any]:
        """The ``Status`` body: kind, apiVersion, status Failure, message, reason, details, code."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(resource: str, group: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def qualified(resource: str, group: str) -> str:
    """``trainjobs.trainer.kubeflow.org``, or ``pods`` for the core group."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        _details(resource, group, name),
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        _details(resource, group, name),
    )


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        _details(resource, group, name),
    )


STALE: str = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    """422 Invalid as errors.NewInvalid words it: ``<Kind>.<group> "name" is invalid: field:
    message`` for one cause, ``... is invalid: [field: message, ...]`` for more (the
    ErrorList's ToAggregate: unique messages, in brackets when more than one); every cause in
    ``details.causes``."""
    kind_group = f"{kind}.{group}" if group else kind
    text = aggregate([f"{c.field}: {c.message}" for c in causes])
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [
        {"reason": c.reason, "message": c.message, "field": c.field} for c in causes
    ]
    message = f'{kind_group} "{name}" is invalid' + (f": {text}" if causes else "")
    return ApiError(422, "Invalid", message, details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unsupported_media_type(content_type: str) -> ApiError:
    """A custom resource's PATCH handler lists the patch types it takes (apiextensions-apiserver
    customresource_handler.go); ``application/apply-patch+cbor`` only with the
    CBORServingAndStorage gate, alpha and off by default in 1.32."""
    del content_type
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml",
    )


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")


def timeout(message: str) -> ApiError:
    """The timeout filter's answer to a request its handler did not finish in time: 504, reason
    Timeout (k8s.io/apiserver server/filters/timeout.go WithTimeoutForNonLongRunningRequests,
    apimachinery errors.NewTimeoutError); the handler goes on, and its write may still land."""
    return ApiError(504, "Timeout", f"Timeout: {message}", {})


def route_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def aggregate(messages: list[str]) -> str:
    """utilerrors.Aggregate's Error(): one message alone, else the unique ones in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def webhook_denied(webhook: str, error: ApiError | list[str]) -> ApiError:
    """A validating webhook's refusal as the API server words it (webhookerrors.ToStatusErr).

    An :class:`ApiError` keeps its code, reason and details; a list of messages (what
    controller-runtime's ``admission.Denied`` sends) is a 403 Forbidden of their aggregate.
    """
    if isinstance(error, list):
        error = ApiError(403, "Forbidden", aggregate(error))
    return ApiError(
        error.code,
        error.reason,
        f'admission webhook "{webhook}" denied the request: {error.message}',
        error.details,
    )
