"""Strict, total parsers of what squeue, sacct and scontrol print, and the state table.

Every read asks for an explicit format whose delimiter cannot occur in the fields before the
comment, and puts the comment last: a comment is the owner's free text and may hold the
delimiter, or even a newline, so it is whatever follows the last delimiter, and a line that
does not start like a record continues the previous record's comment. Times are epoch seconds
(the adapter runs every command under ``SLURM_TIME_FORMAT=%s``). Anything else is a
:class:`ParseError` naming the line, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from dispatch_core import Cause, State

SQUEUE_FIELDS: Final = (
    "JobID",
    "Name",
    "State",
    "Reason",
    "SubmitTime",
    "EligibleTime",
    "StartTime",
    "RestartCnt",
    "Comment",
)
SQUEUE_FORMAT: Final = ",".join(
    f"{field}:|" if field != "Comment" else f"{field}:" for field in SQUEUE_FIELDS
)
SACCT_FIELDS: Final = (
    "JobIDRaw",
    "JobName",
    "State",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "ExitCode",
    "Comment",
)
SACCT_FORMAT: Final = ",".join(SACCT_FIELDS)


class ParseError(ValueError):
    """Scheduler output that is not of the shape asked for."""


@dataclass(frozen=True)
class JobLine:
    """One job as squeue or sacct showed it."""

    job_id: int
    name: str
    state: str
    reason: str
    submit: int
    eligible: int | None
    start: int | None
    end: int | None
    restart_count: int | None
    exit_code: int | None
    signal: int | None
    comment: str
    from_accounting: bool


_RECORD_START: Final = re.compile(r"[0-9]+\|")
_UNSET: Final = frozenset({"N/A", "Unknown", "None", "(null)", ""})


def _records(text: str, fields: int) -> list[list[str]]:
    """Split lines into records of ``fields`` fields, the last (the comment) taking the rest,
    including any lines that do not start a record."""
    records: list[list[str]] = []
    for line in text.split("\n"):
        if _RECORD_START.match(line):
            parts = line.split("|", fields - 1)
            if len(parts) != fields:
                raise ParseError(f"expected {fields} fields, got {len(parts)}: {line!r}")
            records.append(parts)
        elif records:
            records[-1][-1] += "\n" + line
        elif line.strip():
            raise ParseError(f"not a job line: {line!r}")
    if records and text.endswith("\n"):
        records[-1][-1] = records[-1][-1].removesuffix("\n")
    return records


def epoch(text: str, what: str) -> int | None:
    """An epoch-seconds field; ``None`` where Slurm prints that it has no time."""
    if text in _UNSET:
        return None
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        raise ParseError(f"{what} {text!r} is not epoch seconds")
    value = int(text)
    return None if value in (0, 0xFFFFFFFE, 0xFFFFFFFF) else value


def _count(text: str, what: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        raise ParseError(f"{what} {text!r} is not a count")
    return int(text)


def parse_squeue(text: str) -> list[JobLine]:
    """The lines of ``squeue -h -O`` with :data:`SQUEUE_FORMAT`."""
    jobs = []
    for job_id, name, state, reason, submit, eligible, start, restarts, comment in _records(
        text, len(SQUEUE_FIELDS)
    ):
        submitted = epoch(submit, "SubmitTime")
        if submitted is None:
            raise ParseError(f"job {job_id} has no SubmitTime")
        jobs.append(
            JobLine(
                job_id=_count(job_id, "JobID"),
                name=name,
                state=_state_word(state),
                reason=reason,
                submit=submitted,
                eligible=epoch(eligible, "EligibleTime"),
                start=epoch(start, "StartTime"),
                end=None,
                restart_count=_count(restarts, "RestartCnt"),
                exit_code=None,
                signal=None,
                comment=comment,
                from_accounting=False,
            )
        )
    return jobs


def parse_sacct(text: str) -> list[JobLine]:
    """The lines of ``sacct -X -P -n -o`` :data:`SACCT_FORMAT`."""
    jobs = []
    for job_id, name, state, submit, eligible, start, end, exit_code, comment in _records(
        text, len(SACCT_FIELDS)
    ):
        submitted = epoch(submit, "Submit")
        if submitted is None:
            raise ParseError(f"job {job_id} has no Submit time")
        code, _, signal = exit_code.partition(":")
        jobs.append(
            JobLine(
                job_id=_count(job_id, "JobIDRaw"),
                name=name,
                state=_state_word(state.split(" ")[0]),
                reason="",
                submit=submitted,
                eligible=epoch(eligible, "Eligible"),
                start=epoch(start, "Start"),
                end=epoch(end, "End"),
                restart_count=None,
                exit_code=_count(code, "ExitCode") if code else None,
                signal=_count(signal, "ExitCode signal") if signal else None,
                comment=comment,
                from_accounting=True,
            )
        )
    return jobs


def parse_sbatch_id(stdout: str) -> str | None:
    """The job id of ``sbatch --parsable`` output (``<id>`` or ``<id>;<cluster>``), or None
    when the output does not start with one (ASCII digits only)."""
    lines = stdout.strip().splitlines()
    first = lines[0].split(";", 1)[0] if lines else ""
    return first if first.isascii() and first.isdigit() else None


def parse_config(text: str) -> dict[str, str]:
    """``scontrol show config`` as a dictionary of its ``Key = value`` lines (the header,
    blank lines and the plugin sections' other lines are left out)."""
    config: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key.strip():
            config[key.strip()] = value.strip()
    return config


def config_number(config: Mapping[str, str], key: str) -> int | None:
    """The leading number of a configuration value (``MinJobAge = 300 sec`` gives 300), or
    None when the key is missing or starts with no number."""
    words = config.get(key, "").split()
    return int(words[0]) if words and words[0].isascii() and words[0].isdigit() else None


def accounting_enabled(config: Mapping[str, str]) -> bool:
    """Whether the cluster stores accounting (``AccountingStorageType`` is not none)."""
    return config.get("AccountingStorageType", "") not in ("", "accounting_storage/none")


def keeps_comments(config: Mapping[str, str]) -> bool | None:
    """Whether accounting keeps job comments (``AccountingStoreFlags=job_comment``); None when
    there is no accounting at all."""
    if not accounting_enabled(config):
        return None
    return "job_comment" in config.get("AccountingStoreFlags", "")


def requeue_allowed(config: Mapping[str, str]) -> bool:
    """``JobRequeue`` (1 by default)."""
    return config.get("JobRequeue", "1") == "1"


def _state_word(text: str) -> str:
    word = text.rstrip("+")
    if not re.fullmatch(r"[A-Z_]+", word):
        raise ParseError(f"state {text!r} is not a Slurm state")
    return word


# -- Slurm state and reason -> (State, Cause) -----------------------------------------------------

STATE_TABLE: Final[Mapping[str, tuple[State, Cause]]] = {
    "PENDING": (State.QUEUED, Cause.NONE),
    "CONFIGURING": (State.RUNNING, Cause.NONE),
    "RUNNING": (State.RUNNING, Cause.NONE),
    "COMPLETING": (State.RUNNING, Cause.NONE),
    "SUSPENDED": (State.RUNNING, Cause.NONE),
    "STOPPED": (State.RUNNING, Cause.NONE),
    "SIGNALING": (State.RUNNING, Cause.NONE),
    "STAGE_OUT": (State.RUNNING, Cause.NONE),
    "RESIZING": (State.RUNNING, Cause.NONE),
    "COMPLETED": (State.SUCCEEDED, Cause.NONE),
    "FAILED": (State.FAILED, Cause.EXIT_CODE),
    "OUT_OF_MEMORY": (State.FAILED, Cause.OUT_OF_MEMORY),
    "TIMEOUT": (State.FAILED, Cause.TIMEOUT),
    "DEADLINE": (State.FAILED, Cause.DEADLINE),
    "NODE_FAIL": (State.FAILED, Cause.NODE_LOST),
    "BOOT_FAIL": (State.FAILED, Cause.NODE_LOST),
    "PREEMPTED": (State.FAILED, Cause.PREEMPTED),
    "CANCELLED": (State.CANCELLED, Cause.CANCELLED),
    "REQUEUED": (State.QUEUED, Cause.REQUEUED),
    "REQUEUE_FED": (State.QUEUED, Cause.REQUEUED),
    "REQUEUE_HOLD": (State.HELD, Cause.REQUEUED),
    "SPECIAL_EXIT": (State.HELD, Cause.REQUEUED),
    "RESV_DEL_HOLD": (State.HELD, Cause.NONE),
    "LAUNCH_FAILED": (State.FAILED, Cause.LAUNCH_FAILED),
    "REVOKED": (State.UNKNOWN, Cause.NONE),
}
"""Every Slurm state (base state, or the flag shown instead) and its coarse state and cause.
Pending jobs are refined by their reason (:func:`classify`)."""

_QUOTA_REASON: Final = re.compile(r"(QOS|Assoc)(Grp|Max).*|.*PerAccount|Partition(Node|Time)Limit")
_INFRA_REASONS: Final = frozenset(
    {"PartitionDown", "PartitionInactive", "ReqNodeNotAvail", "NodeDown"}
)
_STUCK_REASONS: Final = frozenset(
    {"DependencyNeverSatisfied", "BadConstraints", "InvalidAccount", "InvalidQOS"}
)
_HELD_REASONS: Final = frozenset(
    {"JobHeldUser", "JobHeldAdmin", "job requeued in held state", "job_requeued_in_held_state"}
)


def classify(line: JobLine, dispatch_hold: int | None) -> tuple[State, Cause]:
    """The coarse state and cause of one job line (``dispatch_hold``: a decoded dispatch hold)."""
    state, cause = STATE_TABLE.get(line.state, (State.UNKNOWN, Cause.NONE))
    if line.state == "PENDING":
        reason = line.reason
        if dispatch_hold is not None:
            return State.HELD, Cause.NONE
        if reason in _HELD_REASONS:
            return State.HELD, Cause.REQUEUED if "requeued" in reason else Cause.NONE
        if reason.startswith("launch failed requeued held") or reason == "JobLaunchFailure":
            return State.HELD, Cause.LAUNCH_FAILED
        if _QUOTA_REASON.fullmatch(reason) or reason in _INFRA_REASONS:
            return State.QUEUED, Cause.NO_CAPACITY
        if reason in _STUCK_REASONS:
            return State.QUEUED, Cause.UNSCHEDULABLE
        if (line.restart_count or 0) > 0:
            return State.QUEUED, Cause.REQUEUED
    if line.state == "FAILED" and line.reason == "JobLaunchFailure":
        return State.FAILED, Cause.LAUNCH_FAILED
    return state, cause
