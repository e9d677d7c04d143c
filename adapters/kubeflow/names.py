"""How the Kubeflow adapter names a TrainJob and writes a job's identity into its metadata
(DESIGN §11; the encoding contract of issue 14).

- one TrainJob per (job, submission), named ``dj-<ulid in lower case>-<N>`` (an RFC 1035
  label of 33 to 39 characters);
- labels ``dispatch/job=<ULID>`` (upper case, as :class:`~dispatch_core.JobID` prints it; a
  label selector matches it exactly, so no case variant and no list is ever selected) and
  ``dispatch/submission=<N>``; annotation ``dispatch/attempt=<A>``;
- the hold number in the annotation ``dispatch/hold=<k>`` (``0 < k < HoldBound``).

Every parser here is strict and total: canonical decimals from 1 (the grammar of
:func:`~dispatch_core.parse_decimal`), the name equal to the one the labels imply byte for
byte; anything else raises :class:`~dispatch_core.EncodingError`, and the object is foreign.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from dispatch_core import EncodingError, EpochBound, HoldBound, JobID, parse_decimal

LABEL_JOB: Final = "dispatch/job"
LABEL_SUBMISSION: Final = "dispatch/submission"
ANNOTATION_ATTEMPT: Final = "dispatch/attempt"
ANNOTATION_HOLD: Final = "dispatch/hold"
LABEL_QUEUE: Final = "kueue.x-k8s.io/queue-name"
NAME_PREFIX: Final = "dj-"


class TrainJobIdentity(NamedTuple):
    """Whose a TrainJob is: the job, its submission N and its user attempt A."""

    job: JobID
    submission: int
    attempt: int


def _number(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < EpochBound:
        raise EncodingError(f"{what} {value!r} is out of range: it must be in [1, {EpochBound})")
    return value


def trainjob_name(job: JobID, submission: int) -> str:
    """The TrainJob of submission ``submission`` of ``job``: ``dj-<ulid lower case>-<N>``."""
    return f"{NAME_PREFIX}{str(job).lower()}-{_number(submission, 'submission')}"


def identity_labels(job: JobID, submission: int) -> dict[str, str]:
    """The labels that make a TrainJob ``job``'s submission ``submission``."""
    return {LABEL_JOB: str(job), LABEL_SUBMISSION: str(_number(submission, "submission"))}


def identity_annotations(attempt: int) -> dict[str, str]:
    """The annotation of user attempt ``attempt``."""
    return {ANNOTATION_ATTEMPT: str(_number(attempt, "attempt"))}


def job_selector(job: JobID) -> str:
    """The label selector of every TrainJob of ``job`` (an exact equality)."""
    return f"{LABEL_JOB}={job}"


def parse_identity(
    name: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> TrainJobIdentity:
    """The identity a TrainJob's name, labels and annotations carry; :class:`EncodingError`
    when a label or annotation is missing or malformed, or the name is not the one they imply."""
    job_text = labels.get(LABEL_JOB)
    if job_text is None:
        raise EncodingError(f"no {LABEL_JOB} label")
    try:
        job = JobID.parse(job_text)
    except ValueError as error:
        raise EncodingError(f"label {LABEL_JOB}={job_text!r}: {error}") from None
    found = []
    for where, key in ((labels, LABEL_SUBMISSION), (annotations, ANNOTATION_ATTEMPT)):
        text = where.get(key)
        if text is None:
            raise EncodingError(f"no {key}")
        found.append(parse_decimal(text, key, minimum=1, bound=EpochBound))
    submission, attempt = found
    expected = trainjob_name(job, submission)
    if name != expected:
        raise EncodingError(f"name {name!r} is not {expected!r}, which its labels imply")
    return TrainJobIdentity(job, submission, attempt)


def parse_hold(annotations: Mapping[str, str]) -> int | None:
    """The hold number ``dispatch/hold`` carries, None when absent; EncodingError when it is
    not a canonical decimal in ``(0, HoldBound)``."""
    text = annotations.get(ANNOTATION_HOLD)
    if text is None:
        return None
    return parse_decimal(text, ANNOTATION_HOLD, minimum=1, bound=HoldBound)


__all__ = [
    "ANNOTATION_ATTEMPT",
    "ANNOTATION_HOLD",
    "LABEL_JOB",
    "LABEL_QUEUE",
    "LABEL_SUBMISSION",
    "NAME_PREFIX",
    "TrainJobIdentity",
    "identity_annotations",
    "identity_labels",
    "job_selector",
    "parse_hold",
    "parse_identity",
    "trainjob_name",
]
