"""TrainJobs as dispatch encodes them, and the Kubernetes forms of the look-alike intents.

:func:`dispatch_trainjob` builds a TrainJob body exactly as the encoding contract of the Kubeflow
adapter fixes it (name ``dj-<ulid lower>-<N>``, labels ``dispatch/job`` and
``dispatch/submission``, annotation ``dispatch/attempt``, the ``dispatch.io/dispatch`` runtime
patch carrying ``dispatch/execution`` and ``dispatch/epoch-pad``, the identity env in
``spec.trainer.env``): the gate's tests make dispatch TrainJobs with it, and the harnesses make
look-alikes, which differ from a job's own TrainJob in one labelled way each, or in their
name alone (``misnamed``).

Kubernetes cannot have two kinds: a label value holds no comma and a selector never splits one
(``comma_list``), and a label value holds no space, sign or non-ASCII digit (the near decimals
that are no label value are tried in the attempt annotation only).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from conformance.harness import NEAR_DECIMALS, LookAlike
from dispatch_core import JobID

JOB_LABEL: Final = "dispatch/job"
SUBMISSION_LABEL: Final = "dispatch/submission"
ATTEMPT_ANNOTATION: Final = "dispatch/attempt"
EXECUTION_ANNOTATION: Final = "dispatch/execution"
EPOCH_PAD_ANNOTATION: Final = "dispatch/epoch-pad"
RESTART_LABEL: Final = "jobset.sigs.k8s.io/restart-attempt"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
PATCH_MANAGER: Final = "dispatch.io/dispatch"
TRAINER_API: Final = "trainer.kubeflow.org/v1alpha1"
OTHER_NAMESPACE: Final = "someone-else"
"""Another user's namespace: the adapter lists its own namespace only."""
_LABEL_VALUE: Final = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def is_label_value(text: str) -> bool:
    """Whether ``text`` is a valid Kubernetes label value (at most 63 characters)."""
    return len(text) <= 63 and _LABEL_VALUE.fullmatch(text) is not None


def trainjob_name(job: JobID, submission: int) -> str:
    """The name of the TrainJob of (job, submission): ``dj-<ulid lower>-<N>``."""
    return f"dj-{str(job).lower()}-{submission}"


def identity_env(job: str, submission: str, name: str) -> list[dict[str, Any]]:
    """``spec.trainer.env`` of the contract: static values, then the downward API."""

    def field(path: str) -> dict[str, Any]:
        return {"valueFrom": {"fieldRef": {"fieldPath": path}}}

    return [
        {"name": "DISPATCH_JOB", "value": job},
        {"name": "DISPATCH_SUBMISSION", "value": submission},
        {"name": "DJ_EXECUTION", **field(f"metadata.annotations['{EXECUTION_ANNOTATION}']")},
        {"name": "DJ_EPOCH_PAD", **field(f"metadata.annotations['{EPOCH_PAD_ANNOTATION}']")},
        {"name": "DJ_RESTART", **field(f"metadata.labels['{RESTART_LABEL}']")},
        {"name": "DISPATCH_ATTEMPT", "value": f"{submission}-{name}-$(DJ_EXECUTION)$(DJ_RESTART)"},
        {
            "name": "DISPATCH_EPOCH",
            "value": f"{submission}$(DJ_EPOCH_PAD)$(DJ_EXECUTION)$(DJ_RESTART)",
        },
    ]


def runtime_patch(replicated_jobs: tuple[str, ...], execution: int) -> dict[str, Any]:
    """The ``dispatch.io/dispatch`` runtime patch naming ``execution`` in every replicatedJob."""
    annotations = {
        EXECUTION_ANNOTATION: str(execution),
        EPOCH_PAD_ANNOTATION: "0" * (5 - len(str(execution))),
    }
    return {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": name,
                            "template": {
                                "spec": {
                                    "template": {"metadata": {"annotations": dict(annotations)}}
                                }
                            },
                        }
                        for name in replicated_jobs
                    ]
                }
            }
        },
    }


def dispatch_trainjob(
    name: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    *,
    runtime: str = "dispatch-identity",
    replicated_jobs: tuple[str, ...] = ("node",),
    nodes: int = 1,
    queue: str | None = None,
    suspend: bool = False,
    execution: int = 1,
    command: tuple[str, ...] = ("true",),
) -> dict[str, Any]:
    """A TrainJob body encoded as the contract says, with the labels and annotations given (a
    look-alike's differ from a job's own)."""
    all_labels = dict(labels)
    if queue is not None:
        all_labels[QUEUE_LABEL] = queue
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainJob",
        "metadata": {"name": name, "labels": all_labels, "annotations": dict(annotations)},
        "spec": {
            "runtimeRef": {"name": runtime},
            "suspend": suspend,
            "trainer": {
                "numNodes": nodes,
                "command": list(command),
                "env": identity_env(
                    labels.get(JOB_LABEL, ""), labels.get(SUBMISSION_LABEL, ""), name
                ),
            },
            "runtimePatches": [runtime_patch(replicated_jobs, execution)],
        },
    }


def own_labels(job: JobID, submission: int, attempt: int) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations of (job, submission, attempt)'s own TrainJob."""
    return (
        {JOB_LABEL: str(job), SUBMISSION_LABEL: str(submission)},
        {ATTEMPT_ANNOTATION: str(attempt)},
    )


# -- the look-alike forms -------------------------------------------------------------------


@dataclass(frozen=True)
class Form:
    """One look-alike: its job label, submission label and attempt annotation (None: absent),
    the namespace it lives in (None: the adapter's), and a few words on it."""

    job: str
    submission: str | None
    attempt: str | None
    about: str
    other_namespace: bool = False
    extra_labels: tuple[tuple[str, str], ...] = ()
    execution: int = 1
    """The execution its runtime patch names (``dispatch/execution``)."""
    name: str = ""
    """Its name as a template (:data:`MISNAMED`); empty: the harness names it after the job's
    TrainJobs."""


CASE_FORMS: Final = ("the ULID in lower case", "odd letters lower", "even letters lower")
UNPARSABLE: Final[tuple[tuple[str | None, str | None, str], ...]] = (
    ("01", "1", "the submission has a leading zero"),
    ("0", "1", "the submission is zero"),
    ("1000000", "1", "the submission is at the epoch bound"),
    ("one", "1", "the submission is a word"),
    ("", "1", "the submission is empty"),
    ("1", "01", "the attempt has a leading zero"),
    ("1", "0", "the attempt is zero"),
    ("1", "+1", "the attempt has a sign"),
    ("1", " 1", "the attempt has a space before it"),
    ("1", "1.0", "the attempt has a decimal point"),
    ("1", "", "the attempt is empty"),
    ("1", None, "the attempt annotation is missing"),
    (None, "1", "the submission label is missing"),
)
"""(submission label, attempt annotation) pairs a strict parser refuses."""


def _case_variant(ulid: str, index: int) -> str:
    if index == 0:
        return ulid.lower()
    return "".join(c.lower() if i % 2 == index % 2 else c for i, c in enumerate(ulid))


def _near() -> tuple[tuple[str | None, str | None, str, tuple[tuple[str, str], ...]], ...]:
    forms: list[tuple[str | None, str | None, str, tuple[tuple[str, str], ...]]] = []
    for text, why in NEAR_DECIMALS:
        if is_label_value(text):
            forms.append((text, "1", f"the submission is {why}", ()))
    for text, why in NEAR_DECIMALS:
        forms.append(("1", text, f"the attempt is {why}", ()))
    forms.append(("1", "1\n", "the attempt has a newline after it (a regex's $ takes it)", ()))
    forms.append(
        (
            None,
            "1",
            "the submission under a renamed label (dispatch/Submission)",
            (("dispatch/Submission", "1"),),
        )
    )
    return tuple(forms)


NEAR: Final = _near()
"""Near identities: each near decimal in the submission label (where it is a label value) and
in the attempt annotation, plus a trailing newline and a renamed submission label."""
NEAR_EXECUTIONS: Final = (
    (100_000, "the execution annotation is at its bound (100000)"),
    (0, "the execution annotation is zero"),
)
"""Near identities in the runtime patch: an execution just outside ``[1, 100000)``, with a
valid submission and attempt."""
MISNAMED: Final[tuple[tuple[str, str], ...]] = (
    (
        "dj-{ulid}-{other}",
        "named dj-<ulid>-<another N>, another submission's name (a comparison of the "
        "dj-<ulid>- prefix alone takes it)",
    ),
    (
        "dj-{ulid}-1-copy-{serial}",
        "named dj-<ulid>-1-copy-<k>, the implied name and a suffix (a startswith comparison "
        "takes it)",
    ),
    (
        "copy-{serial}-dj-{ulid}-1",
        "named copy-<k>-dj-<ulid>-1, a prefix and the implied name (an endswith or contains "
        "comparison takes it)",
    ),
    (
        "dj-{ulid}-{zeros}1",
        "named dj-<ulid>-01, the submission with a leading zero (a number read from the name "
        "takes it)",
    ),
    ("training-run-{serial}", "named training-run-<k>, a name of its own (no comparison at all)"),
)
"""Misnamed look-alikes (:attr:`LookAlike.MISNAMED`): the job's label and submission 1, attempt
1, under a name other than ``dj-<ulid>-1``, each with why a lenient comparison takes it. A
TrainJob's name is the client's choice, any RFC 1035 label of at most 63 characters (Kubeflow
Trainer v2.3.0, pkg/apis/trainer/v1alpha1/trainjob_types.go; /work/shared/reference/
kubeflow-facts.md §1). The template's ``{ulid}`` is the job's ULID in lower case, ``{serial}``
the look-alike's number on its cluster, ``{other}`` a submission no check starts and
``{zeros}`` as many zeros as keep the name free (:func:`misnamed_name`)."""


def look_alike_forms(kind: LookAlike) -> int:
    """How many forms ``kind`` has on Kubernetes (0: Kubernetes cannot have it)."""
    if kind is LookAlike.CASE_VARIANT:
        return len(CASE_FORMS)
    if kind is LookAlike.UNPARSABLE_IDENTITY:
        return len(UNPARSABLE)
    if kind is LookAlike.NEAR_IDENTITY:
        return len(NEAR) + len(NEAR_EXECUTIONS)
    if kind is LookAlike.MISNAMED:
        return len(MISNAMED)
    if kind is LookAlike.COMMA_LIST:
        return 0
    return 1


COMMA_LIST_WHY: Final = (
    "a Kubernetes label value cannot hold a comma, and a label selector never splits one"
)
"""Why no Kubernetes harness makes a :attr:`LookAlike.COMMA_LIST` look-alike."""
COMMA_LIST_REASON: Final = f"look_alike:comma_list ({COMMA_LIST_WHY})"


def look_alike(job: JobID, kind: LookAlike, variant: int = 0) -> Form:
    """Form ``variant`` of ``kind`` for ``job`` (ValueError for comma_list)."""
    ulid = str(job)
    if kind is LookAlike.CASE_VARIANT:
        index = variant % len(CASE_FORMS)
        return Form(_case_variant(ulid, index), "1", "1", f"job label: {CASE_FORMS[index]}")
    if kind is LookAlike.UNPARSABLE_IDENTITY:
        submission, attempt, about = UNPARSABLE[variant % len(UNPARSABLE)]
        return Form(ulid, submission, attempt, about)
    if kind is LookAlike.NO_IDENTITY:
        return Form(ulid, None, None, "the job label, no submission label, no attempt")
    if kind is LookAlike.OTHER_USER:
        return Form(ulid, "1", "1", f"another user's, in namespace {OTHER_NAMESPACE}", True)
    if kind is LookAlike.NEAR_IDENTITY:
        index = variant % look_alike_forms(kind)
        if index >= len(NEAR):
            execution, about = NEAR_EXECUTIONS[index - len(NEAR)]
            return Form(ulid, "1", "1", about, execution=execution)
        submission, attempt, about, extra = NEAR[index]
        return Form(ulid, submission, attempt, about, extra_labels=extra)
    if kind is LookAlike.MISNAMED:
        template, about = MISNAMED[variant % len(MISNAMED)]
        return Form(ulid, "1", "1", about, name=template)
    raise ValueError(COMMA_LIST_REASON)


def describe(kind: LookAlike, variant: int = 0) -> str:
    """A few words on form ``variant`` of ``kind``."""
    if kind is LookAlike.COMMA_LIST:
        return COMMA_LIST_REASON
    return f"{kind.value}: {look_alike(JobID.parse('0' * 26), kind, variant).about}"


def misnamed_name(form: Form, job: JobID, serial: int, other: int, zeros: int = 1) -> str:
    """The name of the misnamed look-alike ``form`` of ``job``: its template filled with the
    look-alike's number ``serial`` on its cluster, the submission ``other`` (one no check
    starts) and ``zeros`` zeros."""
    return form.name.format(ulid=str(job).lower(), serial=serial, other=other, zeros="0" * zeros)


__all__ = [
    "ATTEMPT_ANNOTATION",
    "COMMA_LIST_REASON",
    "COMMA_LIST_WHY",
    "EPOCH_PAD_ANNOTATION",
    "EXECUTION_ANNOTATION",
    "JOB_LABEL",
    "MISNAMED",
    "OTHER_NAMESPACE",
    "PATCH_MANAGER",
    "QUEUE_LABEL",
    "RESTART_LABEL",
    "SUBMISSION_LABEL",
    "Form",
    "describe",
    "dispatch_trainjob",
    "identity_env",
    "is_label_value",
    "look_alike",
    "look_alike_forms",
    "misnamed_name",
    "own_labels",
    "runtime_patch",
    "trainjob_name",
]
