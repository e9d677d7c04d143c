"""Execution identity: the rules every adapter shares, whatever its scheduler.

- the four ``DISPATCH_`` variables every rank of every execution sees (DESIGN §4), the epoch
  and the attempt id;
- the grammar of a submission or attempt number (canonical decimals, below :data:`EpochBound`)
  and the range of a hold number (below :data:`HoldBound`), which each adapter's own encoding
  (a Slurm comment and start time, Kubernetes labels and annotations) writes and reads;
- the identity check of seed 001 (:func:`identity_mismatch`).

How an identity is written into a scheduler's fields is the adapter's (the Slurm comment codec
and hold encoding are in :mod:`adapters.slurm.identity`). Every parser here is strict and total:
exactly the documented shape, canonical decimals (ASCII digits, no sign, no leading zero, no
spaces), bounds checked; anything else raises :class:`~dispatch_core.errors.EncodingError`,
never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from dispatch_core.errors import EncodingError
from dispatch_core.model import JobID

EpochBound: Final = 1_000_000
"""N (the submission number) and R (the restart count) must each stay below this."""

HoldBound: Final = 1_000_000
"""A hold number k is valid only for ``0 < k < HoldBound``."""

ENV_JOB: Final = "DISPATCH_JOB"
ENV_SUBMISSION: Final = "DISPATCH_SUBMISSION"
ENV_ATTEMPT: Final = "DISPATCH_ATTEMPT"
ENV_EPOCH: Final = "DISPATCH_EPOCH"
IDENTITY_ENV: Final = (ENV_JOB, ENV_SUBMISSION, ENV_ATTEMPT, ENV_EPOCH)

_CANONICAL_DECIMAL: Final = re.compile(r"0|[1-9][0-9]*")
_MAX_DIGITS: Final = 19


def parse_decimal(text: str, what: str, *, minimum: int = 0, bound: int | None = None) -> int:
    """``text`` as a canonical decimal in ``[minimum, bound)``, or :class:`EncodingError`."""
    if len(text) > _MAX_DIGITS or not _CANONICAL_DECIMAL.fullmatch(text):
        raise EncodingError(f"{what} {text!r} is not a canonical decimal")
    value = int(text)
    if value < minimum or (bound is not None and value >= bound):
        upper = f" and below {bound}" if bound is not None else ""
        raise EncodingError(f"{what} {value} is out of range: it must be at least {minimum}{upper}")
    return value


def _check(value: int, what: str, *, minimum: int, bound: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EncodingError(f"{what} must be an int, not {type(value).__name__}")
    if not minimum <= value < bound:
        raise EncodingError(f"{what} {value} is out of range: it must be in [{minimum}, {bound})")
    return value


def _check_native_id(native_id: str) -> str:
    if not native_id or any(c.isspace() or not c.isprintable() for c in native_id):
        raise EncodingError(
            f"native id {native_id!r} must be non-empty printable text without spaces"
        )
    return native_id


def epoch(submission: int, restart: int) -> int:
    """``DISPATCH_EPOCH``: ``N * EpochBound + R``, so it grows across restarts and resubmissions."""
    _check(submission, "submission", minimum=1, bound=EpochBound)
    _check(restart, "restart count", minimum=0, bound=EpochBound)
    return submission * EpochBound + restart


def attempt_id(submission: int, native_id: str, restart: int) -> str:
    """``DISPATCH_ATTEMPT``: ``"{N}-{native_id}-{R}"``, unique to one execution."""
    epoch(submission, restart)
    return f"{submission}-{_check_native_id(native_id)}-{restart}"


@dataclass(frozen=True)
class ExecutionIdentity:
    """Who one execution is: the job, its submission N, the native object, and its restart R."""

    job: JobID
    submission: int
    native_id: str
    restart: int

    def __post_init__(self) -> None:
        attempt_id(self.submission, self.native_id, self.restart)

    @property
    def attempt(self) -> str:
        return attempt_id(self.submission, self.native_id, self.restart)

    @property
    def epoch(self) -> int:
        return epoch(self.submission, self.restart)

    def env(self) -> dict[str, str]:
        """The four ``DISPATCH_`` variables of this execution."""
        return {
            ENV_JOB: str(self.job),
            ENV_SUBMISSION: str(self.submission),
            ENV_ATTEMPT: self.attempt,
            ENV_EPOCH: str(self.epoch),
        }


def execution_env(job: JobID, submission: int, native_id: str, restart: int) -> dict[str, str]:
    """The four ``DISPATCH_`` variables of one execution."""
    return ExecutionIdentity(job, submission, native_id, restart).env()


def parse_attempt_id(text: str) -> tuple[int, str, int]:
    """``(N, native_id, R)`` from a ``DISPATCH_ATTEMPT`` value (the native id may hold dashes)."""
    first, sep1, rest = text.partition("-")
    middle, sep2, last = rest.rpartition("-")
    if not (sep1 and sep2):
        raise EncodingError(f"attempt {text!r} is not of the form N-<native id>-R")
    submission = parse_decimal(first, "attempt's submission", minimum=1, bound=EpochBound)
    restart = parse_decimal(last, "attempt's restart count", minimum=0, bound=EpochBound)
    try:
        return submission, _check_native_id(middle), restart
    except EncodingError as error:
        raise EncodingError(f"attempt {text!r}: {error}") from None


def parse_execution_env(env: Mapping[str, str]) -> ExecutionIdentity:
    """The identity an execution's environment carries; all four variables must agree."""
    missing = [name for name in IDENTITY_ENV if name not in env]
    if missing:
        raise EncodingError(f"execution environment lacks {', '.join(missing)}")
    try:
        job = JobID.parse(env[ENV_JOB])
    except ValueError as error:
        raise EncodingError(f"{ENV_JOB}: {error}") from None
    submission = parse_decimal(env[ENV_SUBMISSION], ENV_SUBMISSION, minimum=1, bound=EpochBound)
    attempt_submission, native_id, restart = parse_attempt_id(env[ENV_ATTEMPT])
    if attempt_submission != submission:
        raise EncodingError(
            f"{ENV_ATTEMPT} {env[ENV_ATTEMPT]!r} names submission {attempt_submission}, "
            f"but {ENV_SUBMISSION} is {submission}"
        )
    identity = ExecutionIdentity(job, submission, native_id, restart)
    found = parse_decimal(env[ENV_EPOCH], ENV_EPOCH, minimum=0)
    if found != identity.epoch:
        raise EncodingError(
            f"{ENV_EPOCH} is {found}, but {ENV_ATTEMPT} {identity.attempt!r} "
            f"requires {identity.epoch}"
        )
    return identity


def identity_mismatch(
    ref_uid: str, ref_submit: int, *, uid: str, submit: int, restart_count: int
) -> str | None:
    """Why the object seen under a ref's id is not the ref's object (seed 001, "The identity
    check"), or None when it is: its name/UID must equal the ref's exactly, and its submit time
    must equal the ref's, or be the same or later once the scheduler has requeued it."""
    if uid != ref_uid:
        return f"it is {uid!r}, not {ref_uid!r}"
    if submit == ref_submit or (restart_count > 0 and submit >= ref_submit):
        return None
    if restart_count > 0:
        return f"it was submitted at {submit}, before the ref's {ref_submit}"
    return f"it was submitted at {submit}, not {ref_submit}, and was never requeued"


__all__ = [
    "ENV_ATTEMPT",
    "ENV_EPOCH",
    "ENV_JOB",
    "ENV_SUBMISSION",
    "IDENTITY_ENV",
    "EpochBound",
    "ExecutionIdentity",
    "HoldBound",
    "attempt_id",
    "epoch",
    "execution_env",
    "identity_mismatch",
    "parse_attempt_id",
    "parse_decimal",
    "parse_execution_env",
]
