"""The Slurm adapter's parsers, on real lines from slurm-lab.md and on hostile ones.

The real lines are the lab's, with their times rewritten as epoch seconds (the adapter runs
every command under ``SLURM_TIME_FORMAT=%s``) and the comment appended as the last field, as
the adapter's format asks."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.slurm.parse import (
    STATE_TABLE,
    JobLine,
    ParseError,
    accounting_enabled,
    classify,
    config_number,
    keeps_comments,
    parse_config,
    parse_sacct,
    parse_sbatch_id,
    parse_squeue,
    requeue_allowed,
)
from dispatch_core import Cause, State


def epochs(line: str) -> str:
    """Rewrite every ISO time of a lab line as epoch seconds."""
    out = []
    for field in line.split("|"):
        try:
            moment = datetime.strptime(field, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
            out.append(str(int(moment.timestamp())))
        except ValueError:
            out.append(field)
    return "|".join(out)


# squeue -O JobID:|,Name:|,State:|,Reason:|,SubmitTime:|,EligibleTime:|,StartTime:|,RestartCnt:|
# from slurm-lab §7.6a, 7.6b, 7.6c, 7.6d, with a comment appended.
LAB_SQUEUE = [
    "4|dj-REQRUN|RUNNING|None|2026-11-30T13:48:38|2026-11-30T13:48:38|2026-11-30T13:48:40|0",
    "4|dj-REQRUN|COMPLETING|None|2026-11-30T13:48:38|2026-11-30T13:48:38|2026-11-30T13:48:41|1",
    "4|dj-REQRUN|PENDING|BeginTime|2026-11-30T13:48:41|2026-11-30T13:50:42|2026-11-30T13:50:42|1",
    "5|dj-REQHELD|PENDING|JobHeldUser|2026-11-30T13:48:50|N/A|N/A|0",
    "7|dj-REQHOLDRUN|PENDING|job requeued in held state|2026-11-30T13:48:56|2026-11-30T13:50:57|2026-11-30T13:50:57|1",
    "8|dj-REQSPECIAL|SPECIAL_EXIT|job requeued in held state|2026-11-30T13:49:03|2026-11-30T13:51:04|2026-11-30T13:51:04|1",
    "18|dj-RQNO|NODE_FAIL|NodeDown|2026-11-30T13:54:41|2026-11-30T13:54:41|2026-11-30T13:54:42|0",
]


def test_lab_squeue_lines_parse() -> None:
    text = "".join(epochs(line) + "|dispatch:s=1;a=1\n" for line in LAB_SQUEUE)
    jobs = parse_squeue(text)
    assert [(j.job_id, j.state, j.restart_count) for j in jobs] == [
        (4, "RUNNING", 0),
        (4, "COMPLETING", 1),
        (4, "PENDING", 1),
        (5, "PENDING", 0),
        (7, "PENDING", 1),
        (8, "SPECIAL_EXIT", 1),
        (18, "NODE_FAIL", 0),
    ]
    assert jobs[3].eligible is None and jobs[3].start is None
    assert jobs[2].eligible == jobs[2].submit + 121
    assert all(j.comment == "dispatch:s=1;a=1" for j in jobs)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (LAB_SQUEUE[0], (State.RUNNING, Cause.NONE)),
        (LAB_SQUEUE[1], (State.RUNNING, Cause.NONE)),
        (LAB_SQUEUE[2], (State.QUEUED, Cause.REQUEUED)),
        (LAB_SQUEUE[3], (State.HELD, Cause.NONE)),
        (LAB_SQUEUE[4], (State.HELD, Cause.REQUEUED)),
        (LAB_SQUEUE[5], (State.HELD, Cause.REQUEUED)),
        (LAB_SQUEUE[6], (State.FAILED, Cause.NODE_LOST)),
    ],
)
def test_lab_lines_classify(line: str, expected: tuple[State, Cause]) -> None:
    [job] = parse_squeue(epochs(line) + "|c\n")
    assert classify(job, None) == expected


def test_a_dispatch_hold_is_held_whatever_the_reason() -> None:
    [job] = parse_squeue(epochs(LAB_SQUEUE[2]) + "|c\n")
    assert classify(job, 7) == (State.HELD, Cause.NONE)


# sacct -X -D -P -o JobIDRaw,JobName,State,Submit,Eligible,Start,End,ExitCode,Comment
LAB_SACCT = [
    "17|dj-RQYES|NODE_FAIL|2026-11-30T13:54:41|2026-11-30T13:54:41|2026-11-30T13:54:42|2026-11-30T13:54:44|0:0|",
    "17|dj-RQYES|REQUEUED|2026-11-30T13:54:44|2026-11-30T13:56:45|2026-11-30T13:56:59|2026-11-30T14:01:17|0:0|dispatch:s=1;a=1",
    "17|dj-RQYES|RUNNING|2026-11-30T14:01:17|2026-11-30T14:03:18|2026-11-30T14:03:30|Unknown|0:0|",
    "15|dj-BENCH15|CANCELLED by 0|2026-11-30T13:55:21|2100-01-01T00:00:00|None|2026-11-30T13:55:25|0:15|x",
    "14|dj-SIGNAL|TIMEOUT|2026-11-30T13:53:17|Unknown|2026-11-30T13:53:17|2026-11-30T13:54:29|0:0|",
]


def test_lab_sacct_lines_parse() -> None:
    jobs = parse_sacct("".join(epochs(line) + "\n" for line in LAB_SACCT))
    assert [(j.job_id, j.state) for j in jobs] == [
        (17, "NODE_FAIL"),
        (17, "REQUEUED"),
        (17, "RUNNING"),
        (15, "CANCELLED"),
        (14, "TIMEOUT"),
    ]
    assert jobs[2].end is None and jobs[3].start is None and jobs[4].eligible is None
    assert (jobs[3].exit_code, jobs[3].signal) == (0, 15)
    assert jobs[1].comment == "dispatch:s=1;a=1" and jobs[0].comment == ""
    assert all(j.from_accounting and j.restart_count is None for j in jobs)


def test_a_comment_may_hold_the_delimiter_and_newlines() -> None:
    base = epochs(LAB_SQUEUE[0])
    [job] = parse_squeue(f"{base}|a|b\nsecond line|x\n")
    assert job.comment == "a|b\nsecond line|x"


@pytest.mark.parametrize(
    "text",
    [
        "garbage\n",
        "4|dj-X|RUNNING\n",  # truncated
        "4|dj-X|RUNNING|None|soon|1|1|0|c\n",  # a time that is not epoch seconds
        "4|dj-X|running|None|1|1|1|0|c\n",  # not a Slurm state word
        "4|dj-X|RUNNING|None|1|1|1|-1|c\n",  # a negative restart count
        "4|dj-X|RUNNING|None|N/A|1|1|0|c\n",  # no submit time
        "x4|dj-X|RUNNING|None|1|1|1|0|c\n",
        "4|dj-X|RUNNING|None|\uff11|1|1|0|c\n",  # a full-width digit one
    ],
)
def test_hostile_squeue_output_is_a_clear_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_squeue(text)


@given(st.text(max_size=200))
def test_parsers_are_total(text: str) -> None:
    """Any text parses or raises ParseError: never another exception."""
    for parser in (parse_squeue, parse_sacct):
        with contextlib.suppress(ParseError):
            parser(text)


def test_every_slurm_state_is_in_the_table() -> None:
    """slurm-facts §12: base states and the flags shown instead of them."""
    base = "BOOT_FAIL CANCELLED COMPLETED DEADLINE FAILED NODE_FAIL OUT_OF_MEMORY PENDING PREEMPTED RUNNING SUSPENDED TIMEOUT"
    flags = "COMPLETING CONFIGURING LAUNCH_FAILED REQUEUED REQUEUE_FED REQUEUE_HOLD RESIZING RESV_DEL_HOLD REVOKED SIGNALING SPECIAL_EXIT STAGE_OUT STOPPED"
    missing = [s for s in (base + " " + flags).split() if s not in STATE_TABLE]
    assert missing == []


@pytest.mark.parametrize(
    ("state", "reason", "restarts", "expected"),
    [
        ("PENDING", "Resources", 0, (State.QUEUED, Cause.NONE)),
        ("PENDING", "Priority", 0, (State.QUEUED, Cause.NONE)),
        ("PENDING", "QOSMaxJobsPerUserLimit", 0, (State.QUEUED, Cause.NO_CAPACITY)),
        ("PENDING", "AssocGrpCpuLimit", 0, (State.QUEUED, Cause.NO_CAPACITY)),
        ("PENDING", "PartitionDown", 0, (State.QUEUED, Cause.NO_CAPACITY)),
        ("PENDING", "ReqNodeNotAvail", 0, (State.QUEUED, Cause.NO_CAPACITY)),
        ("PENDING", "DependencyNeverSatisfied", 0, (State.QUEUED, Cause.UNSCHEDULABLE)),
        ("PENDING", "InvalidQOS", 0, (State.QUEUED, Cause.UNSCHEDULABLE)),
        ("PENDING", "JobHeldAdmin", 0, (State.HELD, Cause.NONE)),
        ("PENDING", "launch failed requeued held", 1, (State.HELD, Cause.LAUNCH_FAILED)),
        ("PENDING", "BeginTime", 2, (State.QUEUED, Cause.REQUEUED)),
        ("COMPLETED", "None", 0, (State.SUCCEEDED, Cause.NONE)),
        ("FAILED", "NonZeroExitCode", 0, (State.FAILED, Cause.EXIT_CODE)),
        ("FAILED", "JobLaunchFailure", 0, (State.FAILED, Cause.LAUNCH_FAILED)),
        ("OUT_OF_MEMORY", "OutOfMemory", 0, (State.FAILED, Cause.OUT_OF_MEMORY)),
        ("TIMEOUT", "TimeLimit", 0, (State.FAILED, Cause.TIMEOUT)),
        ("DEADLINE", "None", 0, (State.FAILED, Cause.DEADLINE)),
        ("NODE_FAIL", "NodeDown", 0, (State.FAILED, Cause.NODE_LOST)),
        ("BOOT_FAIL", "None", 0, (State.FAILED, Cause.NODE_LOST)),
        ("PREEMPTED", "None", 0, (State.FAILED, Cause.PREEMPTED)),
        ("CANCELLED", "None", 0, (State.CANCELLED, Cause.CANCELLED)),
        ("REVOKED", "None", 0, (State.UNKNOWN, Cause.NONE)),
        ("SOMETHING_NEW", "None", 0, (State.UNKNOWN, Cause.NONE)),
    ],
)
def test_state_table(state: str, reason: str, restarts: int, expected: tuple[State, Cause]) -> None:
    line = JobLine(
        job_id=1,
        name="dj-X",
        state=state,
        reason=reason,
        submit=1,
        eligible=1,
        start=None,
        end=None,
        restart_count=restarts,
        exit_code=None,
        signal=None,
        comment="",
        from_accounting=False,
    )
    assert classify(line, None) == expected


# -- sbatch --parsable and scontrol show config ------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "job_id"),
    [
        ("42\n", "42"),
        ("42;lab\n", "42"),
        ("  7\n", "7"),
        ("", None),
        ("Submitted batch job 42\n", None),  # not --parsable
        ("\u0664\u0662\n", None),  # digits, but not ASCII ones
        ("-1\n", None),
        ("42x;lab\n", None),
    ],
)
def test_parse_sbatch_id(stdout: str, job_id: str | None) -> None:
    assert parse_sbatch_id(stdout) == job_id


CONFIG = """Configuration data as of 2026-11-30T10:00:00
AccountingStorageType   = accounting_storage/slurmdbd
AccountingStoreFlags    = job_comment
ClusterName             = lab
JobRequeue              = 1
MaxJobId                = 67043328
MinJobAge               = 300 sec

Cgroup Support Configuration:
AllowedDevicesFile      = /etc/slurm/cgroup_allowed_devices_file.conf
Slurmctld(primary) at vm is UP
"""


def test_parse_config_reads_the_key_value_lines() -> None:
    config = parse_config(CONFIG)
    assert config["ClusterName"] == "lab"
    assert config["MinJobAge"] == "300 sec"
    assert "Slurmctld(primary) at vm is UP" not in config.values()
    assert config_number(config, "MinJobAge") == 300
    assert config_number(config, "MaxJobId") == 67_043_328
    assert config_number(config, "ClusterName") is None
    assert config_number(config, "Nope") is None
    assert accounting_enabled(config) and keeps_comments(config) is True
    assert requeue_allowed(config)


def test_config_without_accounting_or_comments() -> None:
    none = {"AccountingStorageType": "accounting_storage/none", "JobRequeue": "0"}
    assert not accounting_enabled(none) and keeps_comments(none) is None
    assert not requeue_allowed(none)
    flags = {"AccountingStorageType": "accounting_storage/slurmdbd", "AccountingStoreFlags": ""}
    assert keeps_comments(flags) is False
    assert keeps_comments({}) is None and requeue_allowed({})
