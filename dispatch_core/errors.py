"""The errors of the dispatch contract.

Every error an adapter or the core raises on purpose is a :class:`DispatchError`, so a host can
tell a refusal from a bug. The subclasses mirror the Go original's sentinel errors.
"""

from __future__ import annotations


class DispatchError(Exception):
    """Base of every error the dispatch contract defines."""


class Unsupported(DispatchError):
    """The cluster cannot do what the job or the policy asks (a capability or rule answered no)."""


class Rejected(DispatchError):
    """The request is refused as asked: an option is missing, or an adapter's answers disagree."""


class NotFound(DispatchError):
    """The object is gone, or the identity check found another object in its place."""


class OutcomeUnknown(DispatchError):
    """A write may or may not have taken effect: re-observe, never assume."""


class Conflict(DispatchError):
    """The object carries another instance's state (for example another hold than the one named)."""


class EncodingError(DispatchError, ValueError):
    """A value does not have the exact shape an encoding requires (strict parsers raise this)."""


__all__ = [
    "Conflict",
    "DispatchError",
    "EncodingError",
    "NotFound",
    "OutcomeUnknown",
    "Rejected",
    "Unsupported",
]
