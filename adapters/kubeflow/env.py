"""The execution identity of a TrainJob's ranks: the Trainer env set at create, and the
execution counter in dispatch's own runtime patch (the encoding contract of issue 14).

``spec.trainer.env`` is immutable, so the values that change per execution reach the ranks
through the downward API from pod-template annotations (written in the runtime patch whose
manager is ``dispatch.io/dispatch``, only while the TrainJob is suspended) and from JobSet's
``restart-attempt`` label, then are assembled by ``$(VAR)`` expansion, in this order:

- ``DISPATCH_JOB`` = the ULID; ``DISPATCH_SUBMISSION`` = N;
- ``DJ_EXECUTION`` = ``metadata.annotations['dispatch/execution']``;
- ``DJ_EPOCH_PAD`` = ``metadata.annotations['dispatch/epoch-pad']``;
- ``DJ_RESTART`` = ``metadata.labels['jobset.sigs.k8s.io/restart-attempt']``;
- ``DISPATCH_ATTEMPT`` = ``<N>-<name>-$(DJ_EXECUTION)$(DJ_RESTART)``;
- ``DISPATCH_EPOCH`` = ``<N>$(DJ_EPOCH_PAD)$(DJ_EXECUTION)$(DJ_RESTART)``.

So R = execution * 10 + restart-attempt (the restart attempt stays one digit: a runtime that
allows more than 9 JobSet restarts is refused) and EPOCH = N * 1,000,000 + R, with
``epoch-pad`` = ``"0" * (5 - len(execution))`` (execution ≤ 99,999).

The user's env follows, each ``$`` doubled so that the kubelet's ``$(VAR)`` expansion gives
the value back exactly (``$$`` is one ``$``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from dispatch_core import ENV_ATTEMPT, ENV_EPOCH, ENV_JOB, ENV_SUBMISSION, EncodingError, JobID
from dispatch_core.identity import parse_decimal

MANAGER: Final = "dispatch.io/dispatch"
"""The manager of dispatch's entry in ``spec.runtimePatches``."""
ANNOTATION_EXECUTION: Final = "dispatch/execution"
ANNOTATION_EPOCH_PAD: Final = "dispatch/epoch-pad"
LABEL_RESTART_ATTEMPT: Final = "jobset.sigs.k8s.io/restart-attempt"
EXECUTION_BOUND: Final = 100_000
"""An execution id stays below this (five digits), so R = execution * 10 + restart < 1e6."""
MAX_RESTARTS: Final = 9
"""JobSet restarts the encoding carries (one digit of R)."""

HELPER_ENV: Final = ("DJ_EXECUTION", "DJ_EPOCH_PAD", "DJ_RESTART")
"""The names the identity env uses for its parts; a user env may not set them."""

JSON = dict[str, Any]


def _field(path: str) -> JSON:
    return {"valueFrom": {"fieldRef": {"fieldPath": path}}}


def _escaped(value: str) -> str:
    return value.replace("$", "$$")


def trainer_env(job: JobID, submission: int, name: str, user: Mapping[str, str]) -> list[JSON]:
    """``spec.trainer.env``: the identity entries in the contract's order, then ``user``'s."""
    clash = sorted(set(user) & set(HELPER_ENV))
    if clash:
        raise EncodingError(f"env {', '.join(clash)} is the adapter's own (the identity env)")
    n = str(submission)
    entries: list[JSON] = [
        {"name": ENV_JOB, "value": str(job)},
        {"name": ENV_SUBMISSION, "value": n},
        {"name": "DJ_EXECUTION", **_field(f"metadata.annotations['{ANNOTATION_EXECUTION}']")},
        {"name": "DJ_EPOCH_PAD", **_field(f"metadata.annotations['{ANNOTATION_EPOCH_PAD}']")},
        {"name": "DJ_RESTART", **_field(f"metadata.labels['{LABEL_RESTART_ATTEMPT}']")},
        {"name": ENV_ATTEMPT, "value": f"{n}-{name}-$(DJ_EXECUTION)$(DJ_RESTART)"},
        {"name": ENV_EPOCH, "value": f"{n}$(DJ_EPOCH_PAD)$(DJ_EXECUTION)$(DJ_RESTART)"},
    ]
    entries.extend({"name": key, "value": _escaped(value)} for key, value in user.items())
    return entries


def execution_annotations(execution: int) -> dict[str, str]:
    """The pod-template annotations of execution ``execution`` (1 ≤ execution < 100,000)."""
    if isinstance(execution, bool) or not 0 < execution < EXECUTION_BOUND:
        raise EncodingError(f"execution {execution!r} is out of range [1, {EXECUTION_BOUND})")
    text = str(execution)
    return {ANNOTATION_EXECUTION: text, ANNOTATION_EPOCH_PAD: "0" * (5 - len(text))}


def execution_patch(replicated_jobs: Sequence[str], execution: int) -> JSON:
    """dispatch's runtime patch: execution ``execution`` on every replicatedJob's pods."""
    annotations = execution_annotations(execution)
    return {
        "manager": MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": rjob,
                            "template": {
                                "spec": {"template": {"metadata": {"annotations": annotations}}}
                            },
                        }
                        for rjob in replicated_jobs
                    ]
                }
            }
        },
    }


def read_execution(trainjob: Mapping[str, Any]) -> int:
    """The execution id dispatch's runtime patch carries: the same canonical decimal on every
    replicatedJob, with its pad; :class:`EncodingError` otherwise (the object is then not one
    dispatch can write)."""
    patches = (trainjob.get("spec") or {}).get("runtimePatches") or []
    mine = [p for p in patches if isinstance(p, dict) and p.get("manager") == MANAGER]
    if len(mine) != 1:
        raise EncodingError(f"{len(mine)} runtime patches of manager {MANAGER}, not one")
    try:
        rjobs = mine[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        found = set()
        for rjob in rjobs:
            annotations = rjob["template"]["spec"]["template"]["metadata"]["annotations"]
            found.add((annotations[ANNOTATION_EXECUTION], annotations[ANNOTATION_EPOCH_PAD]))
    except (KeyError, TypeError) as error:
        raise EncodingError(f"dispatch's runtime patch lacks {error}") from None
    if len(found) != 1:
        raise EncodingError(f"dispatch's runtime patch carries {len(found)} executions, not one")
    text, pad = found.pop()
    execution = parse_decimal(str(text), ANNOTATION_EXECUTION, minimum=1, bound=EXECUTION_BOUND)
    if pad != execution_annotations(execution)[ANNOTATION_EPOCH_PAD]:
        raise EncodingError(f"{ANNOTATION_EPOCH_PAD} {pad!r} does not pad execution {execution}")
    return execution


def with_execution(trainjob: JSON, execution: int) -> None:
    """Set dispatch's runtime patch of ``trainjob`` (in place) to execution ``execution``,
    keeping the replicatedJobs it names."""
    patches = trainjob["spec"]["runtimePatches"]
    for i, patch in enumerate(patches):
        if patch.get("manager") == MANAGER:
            rjobs = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
            fresh = execution_patch([str(r["name"]) for r in rjobs], execution)
            patches[i] = fresh
            return
    raise EncodingError(f"no runtime patch of manager {MANAGER}")


__all__ = [
    "ANNOTATION_EPOCH_PAD",
    "ANNOTATION_EXECUTION",
    "EXECUTION_BOUND",
    "HELPER_ENV",
    "LABEL_RESTART_ATTEMPT",
    "MANAGER",
    "MAX_RESTARTS",
    "execution_annotations",
    "execution_patch",
    "read_execution",
    "trainer_env",
    "with_execution",
]
