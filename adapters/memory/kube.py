"""How the memory adapter's kubeflow shape carries a job's identity: as Kubernetes would, in
labels and annotations, never in a comment (DESIGN §11).

- the label ``dispatch/job``: the job's ULID in lower case (a label value; a label selector
  matches it exactly, so no case variant and no list is ever selected);
- the annotations ``dispatch/submission`` and ``dispatch/attempt``: canonical decimals from 1,
  below :data:`~dispatch_core.EpochBound` (the grammar of :func:`~dispatch_core.parse_decimal`).

An object with the job's label whose annotations are missing or do not parse is foreign.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from dispatch_core import EncodingError, EpochBound, JobID, parse_decimal

LABEL_JOB: Final = "dispatch/job"
ANNOTATION_SUBMISSION: Final = "dispatch/submission"
ANNOTATION_ATTEMPT: Final = "dispatch/attempt"


def job_label(job: JobID) -> str:
    """The value of the ``dispatch/job`` label of ``job``'s objects."""
    return str(job).lower()


def kube_labels(job: JobID) -> dict[str, str]:
    """The labels of an object of ``job``."""
    return {LABEL_JOB: job_label(job)}


def kube_annotations(submission: int, attempt: int) -> dict[str, str]:
    """The annotations of submission ``submission`` of attempt ``attempt`` (checked first)."""
    for value, what in ((submission, "submission"), (attempt, "attempt")):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < EpochBound:
            raise EncodingError(
                f"{what} {value!r} is out of range: it must be in [1, {EpochBound})"
            )
    return {ANNOTATION_SUBMISSION: str(submission), ANNOTATION_ATTEMPT: str(attempt)}


def parse_kube_identity(annotations: Mapping[str, str]) -> tuple[int, int]:
    """Submission and attempt from an object's annotations; :class:`EncodingError` when one is
    missing or is not a canonical decimal in range."""
    found = []
    for key in (ANNOTATION_SUBMISSION, ANNOTATION_ATTEMPT):
        text = annotations.get(key)
        if text is None:
            raise EncodingError(f"the object has no {key} annotation")
        found.append(parse_decimal(text, f"annotation {key}", minimum=1, bound=EpochBound))
    return found[0], found[1]


def job_of_label(labels: Mapping[str, str]) -> JobID:
    """The job an object's ``dispatch/job`` label names; :class:`EncodingError` otherwise."""
    text = labels.get(LABEL_JOB)
    if text is None or text != text.lower():
        raise EncodingError(f"label {LABEL_JOB}={text!r} names no job")
    try:
        return JobID.parse(text.upper())
    except ValueError as error:
        raise EncodingError(f"label {LABEL_JOB}={text!r}: {error}") from None


__all__ = [
    "ANNOTATION_ATTEMPT",
    "ANNOTATION_SUBMISSION",
    "LABEL_JOB",
    "job_label",
    "job_of_label",
    "kube_annotations",
    "kube_labels",
    "parse_kube_identity",
]
