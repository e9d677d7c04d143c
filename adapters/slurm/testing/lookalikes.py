"""The look-alikes of a job's objects (:class:`~conformance.harness.LookAlike`) in Slurm's own
encoding: the name ``squeue --name`` matches (without regard to case, splitting on commas) and
the comment ``dispatch:s=<N>;a=<attempt>``.

Every Slurm-shaped harness (the simulator, a real cluster, the memory adapter's Slurm shape)
makes its look-alikes from :func:`slurm_look_alike`, so the forms are the same everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ulid import ULID

from adapters.slurm.identity import HoldBase, slurm_comment
from conformance.harness import NEAR_DECIMALS, CannotInject, LookAlike, look_alike_need
from dispatch_core import HoldBound, JobID

NEAR_HOLDS: Final[tuple[tuple[int, str], ...]] = (
    (HoldBase, "StartTime = SubmitTime + HoldBase: hold number 0"),
    (HoldBase + HoldBound, "StartTime = SubmitTime + HoldBase + HoldBound, one past the last"),
    (HoldBase - 1, "StartTime = SubmitTime + HoldBase - 1"),
)
"""The start times (seconds after SubmitTime) just outside the hold encoding that every
Slurm-shaped harness's :meth:`~conformance.powers.WritesNearHolds.near_hold` writes, with a few
words on each: each decodes to no hold."""

UNPARSABLE_COMMENTS: Final = (
    "dispatch:s=01;a=1",
    "dispatch:s=1;a=1;x=2",
    "dispatch:s=1",
    "s=1;a=1",
    "dispatch:s=1;a=01",
    "dispatch:s=1;a=1 ",
    " dispatch:s=1;a=1",
    "dispatch: s=1; a=1",
    "DISPATCH:s=1;a=1",
    "dispatch:s=+1;a=1",
    "garbage",
)
"""Comments a strict parser refuses (seed 001: exactly that shape, canonical decimals): a
leading zero, an extra field, a missing one, no prefix, a leading zero in the attempt, spaces
after, before and inside, the prefix's case, a sign, and no shape at all."""

NEAR_SHAPES: Final = (
    ("dispatch:a=1;s=1", "the fields reordered"),
    ("dispatch:s=1;a=1;", "a trailing separator"),
    ("dispatch:s=1;s=2;a=1", "the submission repeated"),
    ("dispatch:s=1;a=1;a=2", "the attempt repeated"),
    ("dispatch:S=1;A=1", "the keys in upper case"),
    ("dispatch:s=1,a=1", "a comma for the semicolon"),
    ("dispatch:s:1;a:1", "colons for the equals signs"),
    ("dispatch:s=1;attempt=1", "the attempt's key spelled out"),
    ("dispatch::s=1;a=1", "the colon doubled"),
    ("Dispatch:s=1;a=1", "the prefix capitalised"),
    ("xdispatch:s=1;a=1", "a letter before the prefix"),
    ("dispatch:s=1;a=1dispatch:s=2;a=1", "a second identity run on"),
)
"""Comments whose shape is one step off ``dispatch:s=<N>;a=<attempt>``, each with what is off."""
NEAR_COMMENTS: Final = (
    *((f"dispatch:s={text};a=1", f"the submission is {why}") for text, why in NEAR_DECIMALS),
    *((f"dispatch:s=1;a={text}", f"the attempt is {why}") for text, why in NEAR_DECIMALS),
    *NEAR_SHAPES,
)
"""Every near-identity comment (:attr:`LookAlike.NEAR_IDENTITY`): each number of the valid
comment replaced by each near decimal in turn, then each near shape."""

CASE_FORMS: Final = ("name in lower case", "DJ- and the ULID", "Dj- and the ULID", "DJ- lower")
COMMA_FORMS: Final = ("name,other", "other,name", "name,")
OTHER_USER: Final = "someone-else"
"""The user whose job an other-user look-alike is."""


@dataclass(frozen=True)
class SlurmLookAlike:
    """One look-alike as a Slurm job: its name, its comment, and whether it is another user's."""

    name: str
    comment: str
    other_user: bool = False


def sibling(job: JobID) -> JobID:
    """A job id other than ``job``'s, derived from it (the same time, the other random bits):
    the other name of a comma list when a check names none."""
    raw = bytes(job.ulid)
    return JobID(ULID.from_bytes(raw[:6] + bytes(b ^ 0xFF for b in raw[6:])))


def slurm_look_alike_forms(kind: LookAlike) -> int:
    """How many forms of ``kind`` the Slurm encoding has."""
    if kind is LookAlike.CASE_VARIANT:
        return len(CASE_FORMS)
    if kind is LookAlike.COMMA_LIST:
        return len(COMMA_FORMS)
    if kind is LookAlike.UNPARSABLE_IDENTITY:
        return len(UNPARSABLE_COMMENTS)
    if kind is LookAlike.NEAR_IDENTITY:
        return len(NEAR_COMMENTS)
    return 1


def slurm_look_alike(
    job: JobID, kind: LookAlike, variant: int = 0, other: JobID | None = None
) -> SlurmLookAlike:
    """Form ``variant`` (modulo the number of forms) of look-alike ``kind`` of ``job``'s
    objects, as a Slurm job; a comma list lists ``other``'s name (a sibling's when None)."""
    name = job.discovery_name()
    ulid = str(job)
    valid = slurm_comment(1, 1)
    index = variant % slurm_look_alike_forms(kind)
    if kind is LookAlike.CASE_VARIANT:
        names = ("dj-" + ulid.lower(), "DJ-" + ulid, "Dj-" + ulid, "DJ-" + ulid.lower())
        return SlurmLookAlike(names[index], valid)
    if kind is LookAlike.COMMA_LIST:
        second = (other if other is not None else sibling(job)).discovery_name()
        lists = (f"{name},{second}", f"{second},{name}", f"{name},")
        return SlurmLookAlike(lists[index], valid)
    if kind is LookAlike.UNPARSABLE_IDENTITY:
        return SlurmLookAlike(name, UNPARSABLE_COMMENTS[index])
    if kind is LookAlike.NEAR_IDENTITY:
        return SlurmLookAlike(name, NEAR_COMMENTS[index][0])
    if kind is LookAlike.NO_IDENTITY:
        return SlurmLookAlike(name, "")
    if kind is LookAlike.OTHER_USER:
        return SlurmLookAlike(name, valid, other_user=True)
    raise CannotInject(look_alike_need(kind))


def describe_slurm_look_alike(kind: LookAlike, variant: int = 0) -> str:
    """A few words on form ``variant`` of ``kind`` in the Slurm encoding."""
    index = variant % slurm_look_alike_forms(kind)
    if kind is LookAlike.CASE_VARIANT:
        return f"named with a case variant ({CASE_FORMS[index]}), comment dispatch:s=1;a=1"
    if kind is LookAlike.COMMA_LIST:
        return f"named with a comma list ({COMMA_FORMS[index]}), comment dispatch:s=1;a=1"
    if kind is LookAlike.UNPARSABLE_IDENTITY:
        return f"the job's name, commented {UNPARSABLE_COMMENTS[index]!r}"
    if kind is LookAlike.NEAR_IDENTITY:
        comment, why = NEAR_COMMENTS[index]
        return f"the job's name, commented {comment!r} ({why})"
    if kind is LookAlike.NO_IDENTITY:
        return "the job's name, no comment"
    if kind is LookAlike.OTHER_USER:
        return f"the job's name and comment dispatch:s=1;a=1, but user {OTHER_USER}'s"
    return f"{kind.value} #{variant}"


__all__ = [
    "CASE_FORMS",
    "COMMA_FORMS",
    "NEAR_COMMENTS",
    "NEAR_HOLDS",
    "NEAR_SHAPES",
    "OTHER_USER",
    "UNPARSABLE_COMMENTS",
    "SlurmLookAlike",
    "describe_slurm_look_alike",
    "sibling",
    "slurm_look_alike",
    "slurm_look_alike_forms",
]
