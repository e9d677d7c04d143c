"""sacct: the accounting records slurmdbd keeps, as Slurm 22.05's ``sacct`` prints them.

What is modelled, from ``src/sacct/{options,print,sacct}.c``, ``src/common/print_fields.c``,
``slurmdb_job_cond_def_start_end`` and ``as_mysql_jobacct_process.c`` at ``slurm-22-05-8-1``:

- ``-o/--format``: comma-separated fields, each matched as a case-insensitive *prefix* of a
  field name in sacct's table order (``Sta`` is ``Start``), with an optional ``%width``; the
  width is stored in the (shared) field table, so the last width given for a field applies
  to every use of it; ``ALL`` (or a prefix of it) selects every field; an empty item ends
  the list; an unknown name is ``sacct: error: Invalid field requested: "<name>"``, exit 1.
- Output: fixed columns (header, dashes, a trailing space after every column, strings
  longer than the column cut with ``+``), ``-p`` (``|`` after every field) or ``-P``
  (``|`` between fields); ``--delimiter`` replaces ``|``. Dates are cut to the column width
  in every mode, as ``slurm_make_time_str`` fills a buffer of that size.
- Selection as slurmdbd's SQL does it: the default window (midnight..now, or epoch..now with
  ``-j``, or now..now with ``-s``), ``-S``/``-E``, the per-state clauses of ``-s``, ``-j``,
  ``--name`` (case-insensitive, as the MariaDB collation compares), ``-u``/``-a`` (root sees
  every user), ``-r``, ``-A``; without ``-D`` only the newest record of each job id; rows in
  ascending submit time (``_sort_desc_submit_time`` sorts ascending), each job's ``.batch``
  step after it unless ``-X``.
- A record cancelled before it started prints Start ``None``; ``CANCELLED by <uid>``.
- Without accounting storage (``SlurmConfig.accounting`` False) sacct prints
  ``Slurm accounting storage is disabled`` and exits 1, as with ``accounting_storage/none``.

Deliberate differences: usage statistics (AveRSS, MaxRSS, TRESUsage*, CPU times, energy) are
blank or zero, and so are fields the simulated accounting does not record (Timelimit,
WorkDir, Priority, SubmitLine, Flags, Constraints); the batch step of a job killed by a
signal (cancel, time limit, requeue, node failure) reads ``CANCELLED`` with ``0:15``; the
``-v`` output is the single "Jobs … in the time window" line; ``--name`` does not expand
``[..]`` host-list brackets nor ignore trailing spaces as MariaDB's PAD SPACE would;
``-B``, ``--env-vars``, ``--yaml`` and ``-c``/``-f`` (job completion) are refused or fail as
on a cluster without job completion logging; ``--json`` gives a reduced dbv0.0.38 dump.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from simulators.slurm.commands.common import STATES, CommandExit, ctime, exit_with, run_to_bytes
from simulators.slurm.commands.getopt import Opt, Parsed, UsageError, parse, refuse
from simulators.slurm.commands.squeue import dump_pretty, ranged
from simulators.slurm.controller import AcctRecord, JobState
from simulators.slurm.sim import Output, command
from simulators.slurm.timefmt import INFINITE, NO_VAL, TimeSpecError, format_time, parse_time

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

PROG: Final = "sacct"
MAX_WIDTH: Final = 1 << 16
"""``%width`` values beyond this are clamped (real sacct would pad to gigabytes)."""

SPEC: Final = [
    Opt("allusers", ("allusers",), "a", "none"),
    Opt("accounts", ("accounts",), "A"),
    Opt("allocations", ("allocations",), "X", "none"),
    Opt("brief", ("brief",), "b", "none"),
    Opt("batch-script", ("batch-script",), "B", "none"),
    Opt("completion", ("completion",), "c", "none"),
    Opt("constraints", ("constraints",), "C"),
    Opt("delimiter", ("delimiter",)),
    Opt("duplicates", ("duplicates",), "D", "none"),
    Opt("federation", ("federation",), None, "none"),
    Opt("helpformat", ("helpformat", "help-fields"), "e", "none"),
    Opt("endtime", ("endtime",), "E"),
    Opt("env-vars", ("env-vars",), None, "none"),
    Opt("file", ("file",), "f"),
    Opt("flags", ("flags",), "F"),
    Opt("group", ("gid", "group"), "g"),
    Opt("help", ("help",), "h", "none"),
    Opt("local", ("local",), None, "none"),
    Opt("name", ("name",)),
    Opt("nnodes", ("nnodes",), "i"),
    Opt("ncpus", ("ncpus",), "I"),
    Opt("jobs", ("jobs",), "j"),
    Opt("timelimit-min", ("timelimit-min",), "k"),
    Opt("timelimit-max", ("timelimit-max",), "K"),
    Opt("long", ("long",), "l", "none"),
    Opt("allclusters", ("allclusters",), "L", "none"),
    Opt("clusters", ("cluster", "clusters"), "M"),
    Opt("nodelist", ("nodelist",), "N"),
    Opt("noconvert", ("noconvert",), None, "none"),
    Opt("units", ("units",)),
    Opt("noheader", ("noheader",), "n", "none"),
    Opt("format", ("fields", "format"), "o"),
    Opt("parsable", ("parsable",), "p", "none"),
    Opt("parsable2", ("parsable2",), "P", "none"),
    Opt("qos", ("qos",), "q"),
    Opt("partition", ("partition",), "r"),
    Opt("reason", ("reason",), "R"),
    Opt("state", ("state",), "s"),
    Opt("starttime", ("starttime",), "S"),
    Opt("truncate", ("truncate",), "T", "none"),
    Opt("user", ("uid",), "u"),
    Opt("use-local-uid", ("use-local-uid",), None, "none"),
    Opt("usage", ("usage",), "U", "none"),
    Opt("user", ("user",)),
    Opt("verbose", ("verbose",), "v", "none"),
    Opt("version", ("version",), "V", "none"),
    Opt("wckeys", ("wckeys",), "W"),
    Opt("whole-hetjob", ("whole-hetjob",), None, "optional"),
    Opt("associations", ("associations",), "x"),
    Opt("allocations", (), "t", "none"),
    Opt("json", ("json",), None, "none"),
    Opt("yaml", ("yaml",), None, "none"),
]

BRIEF_FIELDS: Final = "jobid,state,exitcode"
DEFAULT_FIELDS: Final = "jobid,jobname,partition,account,alloccpus,state,exitcode"
LONG_FIELDS: Final = (
    "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,"
    "maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,"
    "mincpunode,mincputask,avecpu,ntasks,alloccpus,elapsed,state,exitcode,avecpufreq,"
    "reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,reqmem,consumedenergy,maxdiskread,"
    "maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,"
    "maxdiskwritetask,avediskwrite,reqtres,alloctres,tresusageinave,tresusageinmax,"
    "tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,"
    "tresusageintot,tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,tresusageoutave,"
    "tresusageouttot"
)
USAGE: Final = "Usage: sacct [options]\n\tUse --help for help\n"

# Job state numbers as the accounting database stores them.
STATE_NUMBERS: Final = {
    JobState.PENDING: 0,
    JobState.RUNNING: 1,
    JobState.SUSPENDED: 2,
    JobState.COMPLETED: 3,
    JobState.CANCELLED: 4,
    JobState.FAILED: 5,
    JobState.TIMEOUT: 6,
    JobState.NODE_FAIL: 7,
    JobState.PREEMPTED: 8,
    JobState.BOOT_FAIL: 9,
    JobState.DEADLINE: 10,
    JobState.OUT_OF_MEMORY: 11,
    JobState.REQUEUED: 0x400,
}
_SUPPORTED_STATES: Final = frozenset({*range(12), 0x400, 0x2000, 0x1000})
_SIGNAL_ENDS: Final = frozenset(
    {
        JobState.CANCELLED,
        JobState.TIMEOUT,
        JobState.REQUEUED,
        JobState.NODE_FAIL,
        JobState.PREEMPTED,
        JobState.DEADLINE,
    }
)


# -- rows -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One printed line: a job record, or its batch step (``step`` True)."""

    record: AcctRecord
    step: bool
    now: int
    cluster: str
    truncate: tuple[int, int] | None = None  # -T: the (start, end) window

    @property
    def ran(self) -> bool:
        return bool(self.record.nodelist)

    def _times(self) -> tuple[int, int]:
        """(start, end) after -T truncation, for elapsed times."""
        r = self.record
        start, end = r.start, r.end
        if self.truncate is not None:
            low, high = self.truncate
            if high > self.now:
                high = self.now
            if start and start < low:
                start = low
            if not end or end > high:
                end = high
            if not start:
                start = end
        return start, end

    @property
    def start(self) -> int:
        r = self.record
        if self.step:
            return r.start
        start, end = self._times()
        if self.truncate is None and not start and end:
            return NO_VAL  # cancelled before it started
        return start

    @property
    def end(self) -> int:
        return self._times()[1]

    @property
    def elapsed(self) -> int:
        start, end = self._times()
        if self.truncate is not None:
            return max(0, end - start)
        if not start:
            return 0
        return max(0, (end or self.now) - start)

    @property
    def cpus(self) -> int:
        r = self.record
        if self.step:
            return -(-r.cpus // max(1, r.nodes))
        return r.cpus

    @property
    def state(self) -> str:
        r = self.record
        if not self.step:
            name = str(r.state)
            if r.state is JobState.CANCELLED and r.cancelled_by is not None:
                return f"{name} by {r.cancelled_by}"
            return name
        if not r.end:
            return "RUNNING"
        if r.state is JobState.COMPLETED:
            return "COMPLETED"
        if r.state is JobState.FAILED:
            return "FAILED"
        if r.state is JobState.OUT_OF_MEMORY:
            return "OUT_OF_MEMORY"
        return "CANCELLED" if r.state in _SIGNAL_ENDS else str(r.state)

    @property
    def exit_code(self) -> str:
        r = self.record
        if self.step:
            if r.end and r.state in _SIGNAL_ENDS:
                return "0:15"
            code, signal = r.exit_code, r.exit_signal
        else:
            code, signal = r.exit_code, r.exit_signal
        if signal:
            return f"0:{signal}"
        code &= 0xFF
        if code >= 128:
            code -= 128
        return f"{code}:0"

    @property
    def job_id(self) -> str:
        return f"{self.record.job_id}.batch" if self.step else str(self.record.job_id)

    @property
    def nodelist(self) -> str:
        r = self.record
        if self.step:
            return r.nodelist.split(",")[0]
        return ranged(r.nodelist.split(",")) if r.nodelist else "None assigned"


def _duration(seconds: int) -> str:
    """``secs2time_str``."""
    if seconds == INFINITE:
        return "UNLIMITED"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days < 0:
        return "INVALID"
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"


def _reserved(row: Row) -> int | None:
    r = row.record
    if row.step:
        return None
    if not r.eligible or r.eligible == INFINITE:
        return 0
    if r.start:
        return max(0, r.start - r.eligible)
    return max(0, row.now - r.eligible) if r.eligible < row.now else 0


# Each field: (default width, name, kind, value). Kinds: str, uint, date, secs.
Value = Callable[[Row], object]


@dataclass
class FieldDef:
    width: int
    name: str
    kind: str
    value: Value


def _job(fn: Callable[[Row], object]) -> Value:
    """A field only job rows have (steps print nothing)."""
    return lambda row: None if row.step else fn(row)


def _blank(row: Row) -> object:
    return None


def _zero_cpu(row: Row) -> object:
    return "00:00:00"


def _tres(row: Row) -> str:
    r = row.record
    if row.step:
        return f"cpu={row.cpus},node=1"
    return f"cpu={r.cpus},node={r.nodes},billing={r.cpus}"


def _reason(row: Row) -> str:
    return "None"


FIELD_TABLE: Final[list[tuple[int, str, str, Value]]] = [
    (10, "Account", "str", lambda row: row.record.account),
    (15, "AdminComment", "str", _blank),
    (10, "AllocCPUS", "uint", lambda row: row.cpus),
    (
        10,
        "AllocNodes",
        "str",
        lambda row: "1" if row.step else str(row.record.nodes if row.ran else 0),
    ),
    (10, "AllocTRES", "str", lambda row: _tres(row) if row.ran else ""),
    (7, "AssocID", "uint", lambda row: 0),
    (10, "AveCPU", "str", _blank),
    (10, "AveCPUFreq", "str", _blank),
    (14, "AveDiskRead", "str", _blank),
    (14, "AveDiskWrite", "str", _blank),
    (10, "AvePages", "str", _blank),
    (10, "AveRSS", "str", _blank),
    (10, "AveVMSize", "str", _blank),
    (16, "BlockID", "str", _blank),
    (10, "Cluster", "str", lambda row: row.cluster),
    (14, "Comment", "str", _job(lambda row: row.record.comment)),
    (19, "Constraints", "str", _blank),
    (14, "ConsumedEnergy", "str", lambda row: "0"),
    (17, "ConsumedEnergyRaw", "uint", lambda row: 0),
    (19, "Container", "str", _blank),
    (10, "CPUTime", "secs", lambda row: row.elapsed * row.cpus),
    (10, "CPUTimeRAW", "uint", lambda row: row.elapsed * row.cpus),
    (-10, "DBIndex", "uint", lambda row: row.record.db_index),
    (15, "DerivedExitCode", "str", lambda row: "" if row.step else "0:0"),
    (10, "Elapsed", "secs", lambda row: row.elapsed),
    (10, "ElapsedRaw", "uint", lambda row: row.elapsed),
    (19, "Eligible", "date", lambda row: row.record.start if row.step else row.record.eligible),
    (19, "End", "date", lambda row: row.end),
    (8, "ExitCode", "str", lambda row: row.exit_code),
    (19, "Flags", "str", _blank),
    (6, "GID", "uint", _job(lambda row: row.record.uid)),
    (9, "Group", "str", _job(lambda row: row.record.user)),
    (-12, "JobID", "str", lambda row: row.job_id),
    (-12, "JobIDRaw", "str", lambda row: row.job_id),
    (10, "JobName", "str", lambda row: "batch" if row.step else row.record.name),
    (9, "Layout", "str", lambda row: "Unknown" if row.step else None),
    (12, "MaxDiskRead", "str", _blank),
    (15, "MaxDiskReadNode", "str", _blank),
    (15, "MaxDiskReadTask", "uint", _blank),
    (12, "MaxDiskWrite", "str", _blank),
    (16, "MaxDiskWriteNode", "str", _blank),
    (16, "MaxDiskWriteTask", "uint", _blank),
    (8, "MaxPages", "str", _blank),
    (12, "MaxPagesNode", "str", _blank),
    (14, "MaxPagesTask", "uint", _blank),
    (10, "MaxRSS", "str", _blank),
    (10, "MaxRSSNode", "str", _blank),
    (10, "MaxRSSTask", "uint", _blank),
    (10, "MaxVMSize", "str", _blank),
    (14, "MaxVMSizeNode", "str", _blank),
    (14, "MaxVMSizeTask", "uint", _blank),
    (12, "McsLabel", "str", _blank),
    (10, "MinCPU", "str", _blank),
    (10, "MinCPUNode", "str", _blank),
    (10, "MinCPUTask", "uint", _blank),
    (10, "NCPUS", "uint", lambda row: row.cpus),
    (8, "NNodes", "uint", lambda row: 1 if row.step else row.record.nodes),
    (15, "NodeList", "str", lambda row: row.nodelist),
    (8, "NTasks", "uint", lambda row: 1 if row.step else None),
    (10, "Partition", "str", _job(lambda row: row.record.partition)),
    (10, "Priority", "uint", _blank),
    (10, "QOS", "str", _job(lambda row: "normal")),
    (6, "QOSRAW", "uint", _job(lambda row: 1)),
    (22, "Reason", "str", _job(_reason)),
    (10, "ReqCPUFreq", "str", lambda row: "Unknown"),
    (13, "ReqCPUFreqGov", "str", lambda row: "Unknown"),
    (13, "ReqCPUFreqMax", "str", lambda row: "Unknown"),
    (13, "ReqCPUFreqMin", "str", lambda row: "Unknown"),
    (8, "ReqCPUS", "uint", lambda row: row.cpus),
    (10, "ReqMem", "str", lambda row: "" if row.step else "0"),
    (8, "ReqNodes", "str", lambda row: "1" if row.step else str(row.record.nodes)),
    (10, "ReqTRES", "str", _job(_tres)),
    (20, "Reservation", "str", _blank),
    (8, "ReservationId", "uint", _blank),
    (10, "Reserved", "secs", _reserved),
    (10, "ResvCPU", "secs", lambda row: None if row.step else (_reserved(row) or 0) * row.cpus),
    (10, "ResvCPURAW", "uint", lambda row: None if row.step else (_reserved(row) or 0) * row.cpus),
    (19, "Start", "date", lambda row: row.start),
    (10, "State", "str", lambda row: row.state),
    (19, "Submit", "date", lambda row: row.record.start if row.step else row.record.submit),
    (20, "SubmitLine", "str", _blank),
    (10, "Suspended", "secs", lambda row: 0),
    (15, "SystemComment", "str", _blank),
    (10, "SystemCPU", "str", _zero_cpu),
    (10, "Timelimit", "str", _blank),
    (10, "TimelimitRaw", "str", _blank),
    (10, "TotalCPU", "str", _zero_cpu),
    (14, "TRESUsageInAve", "str", _blank),
    (14, "TRESUsageInMax", "str", _blank),
    (18, "TRESUsageInMaxNode", "str", _blank),
    (18, "TRESUsageInMaxTask", "str", _blank),
    (14, "TRESUsageInMin", "str", _blank),
    (18, "TRESUsageInMinNode", "str", _blank),
    (18, "TRESUsageInMinTask", "str", _blank),
    (14, "TRESUsageInTot", "str", _blank),
    (15, "TRESUsageOutAve", "str", _blank),
    (15, "TRESUsageOutMax", "str", _blank),
    (19, "TRESUsageOutMaxNode", "str", _blank),
    (19, "TRESUsageOutMaxTask", "str", _blank),
    (15, "TRESUsageOutMin", "str", _blank),
    (19, "TRESUsageOutMinNode", "str", _blank),
    (19, "TRESUsageOutMinTask", "str", _blank),
    (15, "TRESUsageOutTot", "str", _blank),
    (6, "UID", "uint", _job(lambda row: row.record.uid)),
    (9, "User", "str", _job(lambda row: row.record.user)),
    (10, "UserCPU", "str", _zero_cpu),
    (10, "WCKey", "str", _job(lambda row: "")),
    (10, "WCKeyID", "uint", _job(lambda row: 0)),
    (20, "WorkDir", "str", _blank),
]


# -- field lists and printing ---------------------------------------------------------------------


class FieldError(Exception):
    """An ``-o`` item sacct refuses; ``line`` is its stderr line."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def parse_fields(field_list: str) -> list[FieldDef]:
    """The columns of a (comma-terminated) ``--format`` list, as sacct resolves them."""
    return [FieldDef(w, n, k, v) for w, n, k, v in _resolved_fields(field_list)]


@functools.lru_cache(maxsize=64)
def _resolved_fields(field_list: str) -> tuple[tuple[int, str, str, Value], ...]:
    """:func:`parse_fields`'s answer, resolved once per list (the adapter sends the same few
    lists again and again; the search through the table is most of a short sacct's time)."""
    return tuple((f.width, f.name, f.kind, f.value) for f in _parse_fields(field_list))


def _parse_fields(field_list: str) -> list[FieldDef]:
    table = [FieldDef(w, n, k, v) for w, n, k, v in FIELD_TABLE]
    chosen: list[FieldDef] = []
    rest = field_list
    while "," in rest:
        item, rest = rest.split(",", 1)
        item = item.lstrip(" \t\n\v\f\r")
        if not item:
            break  # sacct's loop stops at an empty item
        width: int | None = None
        if "%" in item:
            item, _, digits = item.partition("%")
            width = _atoi(digits)
        if item and "all".startswith(item.lower()):
            for entry in table:
                if width is not None:
                    entry.width = width
                chosen.append(entry)
            continue
        lowered = item.lower()
        match = next((f for f in table if f.name.lower().startswith(lowered)), None)
        if match is None:
            if item.lower() in ("allocgres", "reqgres"):
                good = "AllocTRES" if item.lower() == "allocgres" else "ReqTRES"
                raise FieldError(
                    f"{PROG}: fatal: {_gres_name(item)} has been removed, please use {good}"
                )
            raise FieldError(f'{PROG}: error: Invalid field requested: "{item}"')
        if width is not None:
            match.width = width
        chosen.append(match)
    return chosen


def _gres_name(item: str) -> str:
    return "AllocGRES" if item.lower() == "allocgres" else "ReqGRES"


def _atoi(text: str) -> int:
    match = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", text)
    if match is None:
        return 0
    value = int(match.group(1))
    return max(-MAX_WIDTH, min(MAX_WIDTH, value))


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class Style:
    """How fields are printed: ``parsable`` 0 (columns), 1 (``-p``) or 2 (``-P``)."""

    parsable: int = 0
    delimiter: str | None = None

    @property
    def sep(self) -> bytes:
        return _b(self.delimiter) if self.delimiter is not None else b"|"


def header(fields: Sequence[FieldDef], style: Style) -> bytes:
    """``print_fields_header``: names (and the dashes line when not parsable)."""
    out = b""
    for i, f in enumerate(fields):
        last = i == len(fields) - 1
        name = _b(f.name)
        if style.parsable == 2 and last:
            out += name
        elif style.parsable:
            out += name + style.sep
        else:
            out += _column(name, f.width) + b" "
    out += b"\n"
    if not style.parsable:
        out += b"".join(b"-" * abs(f.width) + b" " for f in fields) + b"\n"
    return out


def _column(text: bytes, width: int) -> bytes:
    """``printf("%*.*s", len, abs(len), text)``: cut to the width, padded on the left for a
    positive width and on the right for a negative one."""
    size = abs(width)
    text = text[:size]
    return text.rjust(size) if width >= 0 else text.ljust(size)


def render(f: FieldDef, value: object, style: Style, last: bool, env: Mapping[str, str]) -> bytes:
    """One field of one row, as sacct's ``print_fields_*`` routine for its kind prints it."""
    size = abs(f.width)
    end = b"" if (style.parsable == 2 and last) else style.sep if style.parsable else b" "
    if f.kind == "str":
        if value is None:
            text = b"" if style.parsable else b" "
            return (text if style.parsable else _column(text, f.width)) + end
        raw = _b(str(value))
        if style.parsable:
            return raw + end
        if len(raw) > size:
            raw = raw[: size - 1] + b"+" if size else b""
        return _column(raw, f.width) + end
    if f.kind == "date":
        epoch = int(value) if isinstance(value, int) else 0
        text = _b(_date(epoch, env))[:size]
        if style.parsable:
            return text + end
        return _column(text, f.width) + end
    if value is None:  # NO_VAL numbers print nothing
        if style.parsable:
            return end
        return b" " * max(size, 1) + b" "
    secs = f.kind == "secs" and isinstance(value, int)
    text = _b(_duration(value) if secs and isinstance(value, int) else str(value))
    if style.parsable:
        return text + end
    return (text.rjust(size) if f.width >= 0 else text.ljust(size)) + b" "


def _date(epoch: int, env: Mapping[str, str]) -> str:
    """``slurm_make_time_str``: 0 and INFINITE are ``Unknown``, NO_VAL is ``None``."""
    if epoch in (0, INFINITE):
        return "Unknown"
    if epoch == NO_VAL:
        return "None"
    return format_time(epoch, env)


# -- the command ----------------------------------------------------------------------------------


@dataclass
class _Query:
    steps: dict[int, set[str] | None] | None = None  # job id -> requested steps (None: whole)
    names: list[str] | None = None
    users: list[int] | None = None
    all_users: bool = False
    states: list[int] | None = None
    partitions: list[str] | None = None
    accounts: list[str] | None = None
    clusters: list[str] | None = None
    nodes: set[str] | None = None
    start: int = 0
    end: int = 0
    duplicates: bool = False
    no_steps: bool = False
    truncate: bool = False
    field_list: str = ""
    style: Style = field(default_factory=Style)
    no_header: bool = False


@command(PROG)
def sacct(sim: SlurmSim, args: list[str], stdin: str | None, env: Mapping[str, str]) -> Output:
    return run_to_bytes(_run, sim, args, env)


def _run(
    sim: SlurmSim, args: list[str], env: Mapping[str, str], result: Output, out: bytearray
) -> None:
    cli = parse(PROG, args, SPEC, defer=True)
    try:
        query, help_kind = _options(sim, cli, env, result)
    except UsageError as error:  # "case '?': /* getopt() has explained it */ exit(1);"
        raise CommandExit(refuse(result, error, try_help=False)) from None
    if help_kind == "help":
        out += _b(USAGE)
        return
    if help_kind == "usage":
        out += _b(USAGE)
        return
    if help_kind == "fields":
        out += _b(_help_fields())
        return
    if cli.has("json"):
        out += _b(dump_pretty(_json(sim, query, env)))
        return
    fields = parse_fields(query.field_list)
    if not query.no_header:
        out += header(fields, query.style)
    for row in select_rows(sim, query):
        line = b"".join(
            render(f, f.value(row), query.style, i == len(fields) - 1, env)
            for i, f in enumerate(fields)
        )
        out += line + b"\n"


def _options(
    sim: SlurmSim, cli: Parsed, env: Mapping[str, str], result: Output
) -> tuple[_Query, str | None]:
    """``parse_command_line``, in its order of checks."""
    query = _Query()
    config = sim.config
    now = sim.controller.now
    help_kind: str | None = None
    all_users = False
    brief = long_output = False
    completion = False
    script = env_vars = False
    verbosity = 0
    field_list: str | None = None
    parsable = 0
    delimiter: str | None = None
    user_given = False
    for key, value in cli.options:
        text = value or ""
        if key == "allusers":
            all_users = True
        elif key == "accounts":
            query.accounts = (query.accounts or []) + _char_list(text, lower=True)
        elif key == "brief":
            brief = True
        elif key == "batch-script":
            script = True
        elif key == "completion":
            completion = True
        elif key == "delimiter":
            delimiter = text
        elif key == "clusters":
            if text.lower() in ("all", "-1"):
                query.clusters = None
            else:
                query.clusters = (query.clusters or []) + _char_list(text, lower=True)
        elif key == "duplicates":
            query.duplicates = True
        elif key == "helpformat":
            help_kind = "fields"
        elif key in ("endtime", "starttime"):
            try:
                moment = _parse_past(text, now)
            except TimeSpecError as error:
                raise exit_with(result, str(error)) from None
            if key == "endtime":
                query.end = moment
            else:
                query.start = moment
        elif key == "env-vars":
            env_vars = True
        elif key == "file":
            raise exit_with(result, f"{text} is not a valid file")
        elif key == "help":
            help_kind = "help"
        elif key == "name":
            query.names = (query.names or []) + _char_list(text, lower=True)
        elif key == "jobs":
            _step_list(text, query, result)
        elif key == "long":
            long_output = True
        elif key == "nodelist":
            query.nodes = set(_char_list(text, lower=False))
        elif key == "noheader":
            query.no_header = True
        elif key == "format":
            field_list = (field_list or "") + text + ","
        elif key == "parsable":
            parsable = 1
        elif key == "parsable2":
            parsable = 2
        elif key == "partition":
            query.partitions = (query.partitions or []) + _char_list(text, lower=True)
        elif key == "state":
            query.states = (query.states or []) + _state_list(text, result)
        elif key == "truncate":
            query.truncate = True
        elif key == "usage":
            help_kind = "usage"
        elif key == "user":
            if text == "-1":
                all_users = True
                continue
            all_users = False
            user_given = True
            query.users = (query.users or []) + _uids_refusing_unknown(sim, text, result)
        elif key == "verbose":
            verbosity += 1
        elif key == "version":
            result.out(f"slurm {config.version}")
            raise CommandExit(0)
        elif key == "allocations":
            query.no_steps = True
        elif key == "whole-hetjob":
            if value is not None and value.lower() not in ("yes", "y", "no", "n"):
                raise exit_with(
                    result,
                    f'{PROG}: error: Invalid --whole-hetjob value "{value}". '
                    "Valid values: [yes|no].",
                )
        elif key == "yaml":
            raise exit_with(result, f"{PROG}: error: --yaml is not supported by this simulator")
    cli.check()
    if (script or env_vars) and not query.steps:
        reason = "job environment" if env_vars else "job scripts"
        raise exit_with(
            result,
            f"{PROG}: fatal: When requesting {reason} you must also request specific jobs "
            "with the '-j' option.",
        )
    if script and env_vars:
        raise exit_with(
            result, f"{PROG}: fatal: Options --batch-script and --env-vars are mutually exclusive"
        )
    if long_output and field_list is not None:
        raise exit_with(
            result,
            f"{PROG}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. "
            "Please remove one and retry.",
        )
    _default_window(query, now)
    if query.end and query.start > query.end:
        raise exit_with(
            result,
            f"{PROG}: error: Start time ({_date(query.start, env)}) requested is after end "
            f"time ({_date(query.end, env)}).",
        )
    if verbosity:
        states = ",".join(_state_label(s) for s in query.states) if query.states else "Eligible"
        start_text = "Epoch 0" if not query.start else ctime(query.start)
        end_text = ctime(query.end)
        if start_text != end_text:
            result.err(f"{PROG}: Jobs {states} in the time window from {start_text} to {end_text}")
        else:
            result.err(f"{PROG}: Jobs {states} at the time instant {start_text}")
    if completion:
        raise exit_with(result, "Slurm job completion is disabled")
    if not config.accounting:
        raise exit_with(result, "Slurm accounting storage is disabled")
    if script or env_vars:
        raise exit_with(result, f"{PROG}: error: job scripts and environments are not simulated")
    if not query.users and (query.steps or query.nodes):
        all_users = True
    if not user_given and config.uid == 0:
        all_users = True
    if all_users:
        query.users = None
    elif not user_given:
        query.users = [config.uid]
    query.all_users = all_users
    if brief:
        field_list = (field_list or "") + BRIEF_FIELDS + ","
    if long_output:
        field_list = (field_list or "") + LONG_FIELDS + ","
    if field_list is None:
        field_list = env.get("SACCT_FORMAT", DEFAULT_FIELDS) + ","
    query.field_list = field_list
    try:
        parse_fields(field_list)
    except FieldError as error:
        raise exit_with(result, error.line) from None
    if cli.operands:
        result.err(f"{PROG}: error: Unknown arguments:")
        for operand in cli.operands:
            result.err(f"{PROG}: error:  {operand}")
        raise CommandExit(1)
    query.style = Style(parsable, delimiter)
    return query, help_kind


def _parse_past(spec: str, now: int) -> int:
    """``parse_time(spec, past=1)``: a time of day without a date means today."""
    moment = parse_time(spec, now)
    text = spec.strip().lower()
    clock = re.fullmatch(r"[0-9]{1,2}:[0-9]{2}(:[0-9]{2})?", text)
    named = text in ("midnight", "noon", "elevenses", "fika", "teatime")
    midnight = int(datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0).timestamp())
    if (clock or named) and moment >= midnight + 86400:
        moment -= 86400
    return moment


def _default_window(query: _Query, now: int) -> None:
    """``slurmdb_job_cond_def_start_end``; the window is [start, end)."""
    if query.states:
        if not query.start and not query.steps:
            query.start = now
        if query.start and not query.end:
            query.end = query.start
    elif not query.steps and not query.start:
        day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0)
        query.start = int(day.timestamp())
    if not query.end:
        query.end = now
    if query.end in (query.start, now):
        query.end += 1


def _state_label(number: int) -> str:
    return next((name for name, _, n in STATES if n == number), "?")


def _char_list(text: str, lower: bool) -> list[str]:
    """``slurm_addto_char_list``: commas split, quotes turn into backquotes, duplicates move
    to the end, an empty string stays one empty item."""
    items: list[str] = []
    if text[:1] in ("'", '"'):
        quote = text[0]
        text = text[1:]
        text = text.split(quote, 1)[0]
    text = text.replace('"', "`").replace("'", "`")
    parts = text.split(",")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    for part in parts:
        if part == "" and len(parts) > 1:
            continue
        if lower:
            part = part.lower()
        if part in items:
            items.remove(part)
        items.append(part)
    return items


def _step_list(text: str, query: _Query, result: Output) -> None:
    """``slurm_addto_step_list``: ``id``, ``id.batch``, ``id.<step>``."""
    steps = query.steps if query.steps is not None else {}
    for item in _parse_list(text):
        if not item[:1].isdigit():
            raise exit_with(result, f"{PROG}: fatal: Bad job/step specified: {item}")
        job_text, dot, step = item.partition(".")
        if dot and step not in ("batch", "extern", "interactive") and not step[:1].isdigit():
            raise exit_with(result, f"{PROG}: fatal: Bad step specified: {job_text}")
        job_text = job_text.split("_", 1)[0].split("+", 1)[0]
        job_id = int(re.match(r"[0-9]+", job_text).group(0)) if job_text else 0  # type: ignore[union-attr]
        job_id &= 0xFFFFFFFF
        if not dot:
            steps[job_id] = None
        else:
            wanted = steps.setdefault(job_id, set())
            if wanted is not None:
                wanted.add("batch" if step == "batch" else step)
    query.steps = steps or None


def _parse_list(text: str) -> list[str]:
    """``slurm_parse_char_list``: commas split, a leading quote ends at its mate, other
    quotes become backquotes, empty items vanish."""
    if text[:1] in ("'", '"'):
        text = text[1:].split(text[0], 1)[0]
    text = text.replace('"', "`").replace("'", "`")
    return [item for item in text.split(",") if item]


def _state_list(text: str, result: Output) -> list[int]:
    states: list[int] = []
    for item in _parse_list(text):
        lowered = item.lower()
        number = next(
            (n for name, code, n in STATES if lowered in (name.lower(), code.lower())),
            None,
        )
        if number is None:
            raise exit_with(result, f"{PROG}: fatal: unrecognized job state value '{item}'")
        if number not in _SUPPORTED_STATES:
            raise exit_with(result, f"{PROG}: fatal: job state {item} is not supported / accounted")
        if number not in states:
            states.append(number)
    return states


def _uids_refusing_unknown(sim: SlurmSim, text: str, result: Output) -> list[int]:
    """``--user`` (``slurm_addto_id_char_list``): names or uids of known users, each once; an
    unknown one is fatal (exit 1), and so is a list that names none."""
    known = {"root": 0, sim.config.user: sim.config.uid}
    uids: list[int] = []
    for item in _parse_list(text):
        if item in known:
            uid = known[item]
        elif item.isascii() and item.isdigit() and int(item) in known.values():
            uid = int(item)
        else:
            result.err(f"{PROG}: error: Invalid user id: {item}")
            raise CommandExit(1)
        if uid not in uids:
            uids.append(uid)
    if not uids:
        raise CommandExit(1)
    return uids


def _help_fields() -> str:
    out = ""
    for i, (_, name, _, _) in enumerate(FIELD_TABLE):
        if i & 3:
            out += " "
        elif i:
            out += "\n"
        out += f"{name:<19}"
    return out + "\n"


# -- selection (slurmdbd's query) -----------------------------------------------------------------


def _matches(record: AcctRecord, query: _Query) -> bool:
    number = STATE_NUMBERS.get(record.state, 0)
    if query.steps is not None and record.job_id not in query.steps:
        return False
    if query.clusters is not None and not query.clusters:
        return False
    if query.users is not None and record.uid not in query.users:
        return False
    if query.names is not None and record.name.lower() not in query.names:
        return False
    if query.partitions is not None and record.partition.lower() not in query.partitions:
        return False
    if query.accounts is not None and record.account.lower() not in query.accounts:
        return False
    if query.nodes is not None and not (set(record.nodelist.split(",")) & query.nodes):
        return False
    start, end = query.start, query.end
    r = record
    if query.states:
        return any(_state_clause(r, n, number, start, end) for n in query.states)
    if query.steps is not None:
        return r.submit < end and (r.end >= start or r.end == 0)
    return bool(r.eligible) and r.eligible < end and (r.end >= start or r.end == 0)


def _state_clause(r: AcctRecord, wanted: int, number: int, start: int, end: int) -> bool:
    """``_state_time_string``: the per-state test of ``-s``."""
    if wanted == 0:  # PENDING: pending at some point of the window
        return (
            bool(r.eligible)
            and (
                (bool(r.start) and start < r.start)
                or (not r.start and bool(r.end) and start < r.end)
                or (not r.start and not r.end and number == 0)
            )
            and end > r.eligible
        )
    if wanted == 1:  # RUNNING: running at some point of the window
        return bool(r.start) and (start < r.end or (not r.end and number == 1)) and end > r.start
    if wanted == 2:
        return False  # nothing is ever suspended on the simulated cluster
    return number == wanted and bool(r.end) and start <= r.end <= end


def select_rows(sim: SlurmSim, query: _Query) -> list[Row]:
    """The rows sacct prints, in its order."""
    controller = sim.controller
    if query.steps is not None:
        candidates = [r for job_id in query.steps for r in controller.records(job_id)]
    elif query.names is not None:
        candidates = [r for name in query.names for r in controller.records_named(name)]
    else:
        candidates = list(controller.accounting)
    unique = {id(r): r for r in candidates}.values()
    matched = sorted(
        (r for r in unique if _matches(r, query)),
        key=lambda r: (r.job_id, -r.submit, -r.db_index),
    )
    if not query.duplicates:
        newest: list[AcctRecord] = []
        for record in matched:
            if not newest or newest[-1].job_id != record.job_id:
                newest.append(record)
        matched = newest
    matched.sort(key=lambda r: (r.submit, r.job_id, r.db_index))
    only_pending = query.states == [0]
    window = (query.start, query.end) if query.truncate else None
    rows: list[Row] = []
    cluster = sim.config.cluster_name
    now = controller.now
    for record in matched:
        wanted = query.steps.get(record.job_id) if query.steps is not None else None
        if wanted is None:
            rows.append(Row(record, False, now, cluster, window))
        if query.no_steps or only_pending or not record.nodelist:
            continue
        if wanted is not None and "batch" not in wanted:
            continue
        step_end = record.end
        if record.start <= query.end and (not step_end or step_end >= query.start):
            rows.append(Row(record, True, now, cluster, window))
    return rows


# -- --json ---------------------------------------------------------------------------------------


def _json(sim: SlurmSim, query: _Query, env: Mapping[str, str]) -> dict[str, object]:
    """A reduced ``sacct --json`` (openapi/dbv0.0.38): the keys adapters read, per job."""
    jobs: list[dict[str, object]] = []
    for row in select_rows(sim, query):
        if row.step:
            continue
        r = row.record
        steps: list[object] = []
        if r.nodelist and not query.no_steps:
            step = Row(r, True, row.now, row.cluster)
            steps.append(
                {
                    "step": {"job_id": r.job_id, "id": f"{r.job_id}.batch", "name": "batch"},
                    "state": step.state,
                    "time": {"start": r.start, "end": step.end},
                    "exit_code": _exit_json(step),
                    "nodes": {"count": 1, "range": step.nodelist},
                }
            )
        jobs.append(
            {
                "account": r.account,
                "comment": {"administrator": None, "job": r.comment, "system": None},
                "allocation_nodes": r.nodes if r.nodelist else 0,
                "cluster": row.cluster,
                "derived_exit_code": {"status": "SUCCESS", "return_code": 0},
                "time": {
                    "elapsed": row.elapsed,
                    "eligible": r.eligible,
                    "end": r.end,
                    "start": r.start,
                    "submission": r.submit,
                    "suspended": 0,
                },
                "exit_code": _exit_json(row),
                "group": r.user,
                "job_id": r.job_id,
                "name": r.name,
                "nodes": row.nodelist,
                "partition": r.partition,
                "qos": "normal",
                "kill_request_user": None if r.cancelled_by is None else r.user,
                "state": {"current": str(r.state), "reason": "None"},
                "steps": steps,
                "user": r.user,
            }
        )
    return {
        "meta": {
            "plugin": {"type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38"},
            "Slurm": {
                "version": _version(sim.config.version),
                "release": sim.config.version,
            },
        },
        "errors": [],
        "jobs": jobs,
    }


def _exit_json(row: Row) -> dict[str, object]:
    """``_dump_job_exit_code``: 22.05 reports any exit status as SUCCESS with return code 0."""
    signal = row.exit_code.partition(":")[2]
    if signal != "0":
        return {"status": "SIGNALED", "signal": {"signal_id": int(signal)}}
    return {"status": "SUCCESS", "return_code": 0}


def _version(release: str) -> dict[str, int]:
    parts = [int(p) if p.isdigit() else 0 for p in release.split(".")] + [0, 0, 0]
    return {"major": parts[0], "micro": parts[2], "minor": parts[1]}
