"""How a planned job becomes one ``sbatch`` call: its argv and its batch script.

Text from the JobSpec never meets a shell unquoted: options go to sbatch as argv elements
(no shell between the adapter and sbatch), and every value written into the script (argv,
environment, paths) passes through ``shlex.quote``. Numbers alone go on ``#SBATCH`` lines,
because sbatch's own ``#SBATCH`` tokenizer cannot carry arbitrary text.

The four ``DISPATCH_`` variables are computed inside the script, at run time, from
``SLURM_JOB_ID`` and ``${SLURM_RESTART_COUNT:-0}`` (unset on a first execution), so every
execution of a requeued job gets its own attempt and a higher epoch; the command then runs
through ``srun`` so that every rank sees them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from adapters.slurm.identity import slurm_comment
from dispatch_core import (
    ENV_ATTEMPT,
    ENV_EPOCH,
    ENV_JOB,
    ENV_SUBMISSION,
    OUTPUT,
    EpochBound,
    Plan,
    Unsupported,
)

NAMESPACE: Final = "slurm"

_WORD: Final = r"[A-Za-z0-9_.+-]+"
_EXTENSIONS: Final[Mapping[str, tuple[str, re.Pattern[str]]]] = {
    "Partition": ("--partition", re.compile(rf"{_WORD}(,{_WORD})*")),
    "Account": ("--account", re.compile(_WORD)),
    "QOS": ("--qos", re.compile(_WORD)),
    "TimeLimit": (
        "--time",
        re.compile(r"[0-9]+|[0-9]+:[0-9]{2}(:[0-9]{2})?|[0-9]+-[0-9]+(:[0-9]{2}(:[0-9]{2})?)?"),
    ),
    "Constraint": ("--constraint", re.compile(r"[A-Za-z0-9_.&|,*\[\]()!:-]+")),
    "Gres": ("--gres", re.compile(r"[A-Za-z0-9_.:,/=-]+")),
    "Signal": ("--signal", re.compile(r"(B:|R:)?(SIG)?[A-Z0-9]+(@[0-9]{1,5})?")),
}
SLURM_EXTENSIONS: Final = frozenset(_EXTENSIONS)


@dataclass(frozen=True)
class BatchSubmission:
    """One sbatch call: its argv and the script fed to it on stdin."""

    argv: tuple[str, ...]
    script: str


def slurm_options(extensions: Mapping[str, str]) -> list[str]:
    """The sbatch options for the ``slurm.*`` extensions; any other namespace is Unsupported."""
    options = []
    for key in sorted(extensions):
        namespace, _, name = key.partition(".")
        if namespace == "dispatch":
            continue
        if namespace != NAMESPACE or name not in _EXTENSIONS:
            known = ", ".join(f"slurm.{n}" for n in sorted(_EXTENSIONS))
            raise Unsupported(f"the Slurm adapter does not honour {key} (it honours {known})")
        flag, pattern = _EXTENSIONS[name]
        value = extensions[key]
        if not pattern.fullmatch(value):
            raise Unsupported(f"{key}={value!r} is not a valid {flag} value")
        options.append(f"{flag}={value}")
    return options


def batch_submission(plan: Plan, submission: int, attempt: int) -> BatchSubmission:
    """The sbatch argv and script that start ``plan`` as submission ``submission``."""
    spec = plan.spec
    comment = slurm_comment(submission, attempt)
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={plan.job.discovery_name()}",
        f"--comment={comment}",
    ]
    if spec.work_dir is not None:
        argv.append(f"--chdir={spec.work_dir}")
    output = spec.extensions.get(OUTPUT)
    if output is not None:
        argv += [f"--output={output}", "--open-mode=append"]
    # Never requeueable by Slurm itself: its own requeue is no native rule (it cannot bound how
    # often it requeues after node failures), so no plan pushes one down (docs/decisions.md);
    # the adapter's requeue raises Requeue=1 first.
    argv.append("--no-requeue")
    argv += slurm_options(spec.extensions)

    lines = ["#!/bin/bash", f"#SBATCH --nodes={spec.nodes}"]
    if spec.procs_per_node > 0:
        lines.append(f"#SBATCH --ntasks-per-node={spec.procs_per_node}")
    restart = "${SLURM_RESTART_COUNT:-0}"
    lines += [
        "# dispatch: execution identity, computed at run time for every execution",
        f"restart={restart}",
        'case "$restart" in ""|*[!0-9]*)',
        '  echo "dispatch: bad SLURM_RESTART_COUNT" >&2; exit 97;;',
        "esac",
        f'if [ "$restart" -ge {EpochBound} ]; then echo "dispatch: restart bound" >&2; exit 97; fi',
        f"export {ENV_JOB}={shlex.quote(str(plan.job))}",
        f"export {ENV_SUBMISSION}={submission}",
        f'export {ENV_ATTEMPT}="{submission}-${{SLURM_JOB_ID}}-${{restart}}"',
        f'export {ENV_EPOCH}="$(( {submission} * {EpochBound} + restart ))"',
        "unset restart",
    ]
    for name in sorted(spec.env):
        lines.append(f"export {name}={shlex.quote(spec.env[name])}")
    command = " ".join(shlex.quote(arg) for arg in spec.command)
    lines.append(f"exec srun --export=ALL -- {command}")
    return BatchSubmission(argv=tuple(argv), script="\n".join(lines) + "\n")
