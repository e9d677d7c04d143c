"""How the Slurm adapter writes a job's identity and its holds into Slurm's own fields.

- the comment ``dispatch:s=<N>;a=<attempt>`` (seed 001, "The comment"; DESIGN §4): N is the
  submission number, ``a`` the user-visible attempt number;
- holds as a far-future start time: hold number k is ``StartTime = SubmitTime + HoldBase + k``,
  decoded as ``EligibleTime - SubmitTime - HoldBase`` against the job's *current* SubmitTime,
  valid only for ``0 < k < HoldBound`` (DESIGN §4, "Slurm holds").

The neutral rules they rest on (canonical decimals, the epoch bound, the hold-number range)
are :mod:`dispatch_core`'s. Every parser here is strict and total: exactly the documented
shape, anything else raises :class:`~dispatch_core.EncodingError`, never a guess.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final, NamedTuple

from dispatch_core import EncodingError, EpochBound, HoldBound, parse_decimal

COMMENT_PREFIX: Final = "dispatch:"

HoldBase: Final = 315_576_000
"""Seconds from a job's submit time to hold number 0: ten Julian years."""

_COMMENT: Final = re.compile(r"dispatch:s=([0-9]+);a=([0-9]+)")


class SlurmComment(NamedTuple):
    """What a Slurm job's ``--comment`` carries: the submission number and the attempt number."""

    submission: int
    attempt: int


def _number(value: int, what: str, *, minimum: int, bound: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise EncodingError(f"{what} must be an int, not {type(value).__name__}")
    if not minimum <= value < bound:
        raise EncodingError(f"{what} {value} is out of range: it must be in [{minimum}, {bound})")
    return value


def slurm_comment(submission: int, attempt: int) -> str:
    """The comment of a Slurm job: ``dispatch:s=<N>;a=<attempt>``."""
    _number(submission, "submission", minimum=1, bound=EpochBound)
    _number(attempt, "attempt", minimum=1, bound=EpochBound)
    return f"{COMMENT_PREFIX}s={submission};a={attempt}"


def parse_slurm_comment(text: str) -> SlurmComment:
    """Submission and attempt of a comment of exactly the form ``dispatch:s=<N>;a=<attempt>``."""
    match = _COMMENT.fullmatch(text)
    if match is None:
        raise EncodingError(f"comment {text!r} is not of the form dispatch:s=<N>;a=<attempt>")
    return SlurmComment(
        parse_decimal(match[1], "comment's submission", minimum=1, bound=EpochBound),
        parse_decimal(match[2], "comment's attempt", minimum=1, bound=EpochBound),
    )


def _epoch_seconds(moment: int | datetime, what: str) -> int:
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            raise EncodingError(f"{what} must be time-zone aware")
        if moment.microsecond:
            raise EncodingError(f"{what} must be whole seconds")
        return int(moment.timestamp())
    if isinstance(moment, bool) or not isinstance(moment, int):
        raise EncodingError(f"{what} must be epoch seconds or a datetime")
    return moment


def encode_hold(submit: int | datetime, hold: int) -> int:
    """The start time (epoch seconds) that places hold number ``hold`` on a job submitted at
    ``submit``: ``submit + HoldBase + hold``."""
    _number(hold, "hold number", minimum=1, bound=HoldBound)
    return _epoch_seconds(submit, "submit time") + HoldBase + hold


def decode_hold(eligible: int | datetime | None, submit: int | datetime) -> int | None:
    """The hold number an eligible time carries against the job's *current* submit time, or
    ``None`` when it carries none (not far enough out, too far, or no eligible time)."""
    if eligible is None:
        return None
    hold = (
        _epoch_seconds(eligible, "eligible time") - _epoch_seconds(submit, "submit time") - HoldBase
    )
    return hold if 0 < hold < HoldBound else None


__all__ = [
    "COMMENT_PREFIX",
    "HoldBase",
    "SlurmComment",
    "decode_hold",
    "encode_hold",
    "parse_slurm_comment",
    "slurm_comment",
]
