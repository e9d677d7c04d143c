"""squeue: list the jobs in slurmctld's memory, as Slurm 22.05's ``squeue`` prints them.

What is modelled, from ``src/squeue/{opts,print,sort,squeue}.c`` at tag ``slurm-22-05-8-1``:

- ``-o/--format`` is split like ``parse_format``: text before the first ``%`` is a prefix;
  the rest is cut with ``strtok(…, "%")`` (so consecutive ``%`` collapse and ``%%`` is *not*
  a literal percent sign); each token is ``[.][width]<letter><suffix>``. An unknown letter
  prints ``squeue: error: Invalid job format specification: <letter>`` and its token,
  ``%`` included, is printed verbatim on every line.
- ``-O/--Format`` is split on commas like ``parse_long_format``: ``type[:[.][size][suffix]]``;
  without a colon the field is 20 wide; a bad type prints
  ``squeue: error: Invalid job format specification: <token>`` and is skipped (exit 0).
- Every value goes through ``_print_str``: a left-justified width truncates and pads, a
  right-justified width pads (and truncates unless the field is a node list or a duration),
  width 0 prints the value as is, a negative width prints the value and a space. Missing
  strings print as glibc prints ``NULL`` (``(null)``, or nothing under a precision below 6).
- Filters (``-j``, ``-n``, ``-u``/``--me``, ``-t``, ``-p``, ``-A``, ``-q``, ``-w``, ``-L``,
  ``-R``) and the sort (``-S``, default ``P,t,-p`` after a reversed start-time sort, each a
  stable merge sort as glibc's ``qsort``) follow ``_filter_job`` and ``sort_job_list``.
- ``--json`` dumps every job, ignoring all filters (as 22.05 does), with the 110/111 keys
  of ``openapi/v0.0.38``'s ``dump_job_info``; the values come from the simulated job.

Deliberate differences (see also the module's tests): ``-i/--iterate`` prints a single
iteration; ``-s/--steps`` (job steps) is refused; ``-v`` prints no option dump; ``--yaml``
is refused; widths beyond ``MAX_WIDTH`` are clamped so a huge width cannot exhaust memory.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from simulators.slurm.commands.common import (
    BASE_STATES,
    FLAG_STATES,
    CommandExit,
    ctime,
    exit_with,
    run_to_bytes,
)
from simulators.slurm.commands.getopt import Opt, Parsed, UsageError, parse, refuse
from simulators.slurm.controller import INVALID_JOB_ID, UNAVAILABLE, Job, JobState
from simulators.slurm.sim import Output, command
from simulators.slurm.timefmt import format_time

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

PROG: Final = "squeue"
MAX_WIDTH: Final = 1 << 16
"""Widths beyond this are clamped (real squeue would pad to gigabytes)."""

SPEC: Final = [
    Opt("accounts", ("accounts",), "A"),
    Opt("all", ("all",), "a", "none"),
    Opt("array", ("array",), "r", "none"),
    Opt("array-unique", ("array-unique",), None, "none"),
    Opt("Format", ("Format",), "O"),
    Opt("format", ("format",), "o"),
    Opt("federation", ("federation",), None, "none"),
    Opt("help", ("help",), None, "none"),
    Opt("hide", ("hide",), None, "none"),
    Opt("iterate", ("iterate",), "i"),
    Opt("jobs", ("jobs",), "j", "optional"),
    Opt("local", ("local",), None, "none"),
    Opt("long", ("long",), "l", "none"),
    Opt("licenses", ("licenses",), "L"),
    Opt("clusters", ("cluster", "clusters"), "M"),
    Opt("me", ("me",), None, "none"),
    Opt("name", ("name",), "n"),
    Opt("noconvert", ("noconvert",), None, "none"),
    Opt("nodelist", ("node", "nodes", "nodelist"), "w"),
    Opt("noheader", ("noheader",), "h", "none"),
    Opt("partitions", ("partitions",), "p"),
    Opt("priority", ("priority",), "P", "none"),
    Opt("qos", ("qos",), "q"),
    Opt("reservation", ("reservation",), "R"),
    Opt("sibling", ("sib", "sibling"), None, "none"),
    Opt("sort", ("sort",), "S"),
    Opt("start", ("start",), None, "none"),
    Opt("steps", ("steps",), "s", "optional"),
    Opt("states", ("states",), "t"),
    Opt("usage", ("usage",), None, "none"),
    Opt("user", ("user", "users"), "u"),
    Opt("accounts", (), "U"),
    Opt("verbose", ("verbose",), "v", "none"),
    Opt("version", ("version",), "V", "none"),
    Opt("json", ("json",), None, "none"),
    Opt("yaml", ("yaml",), None, "none"),
]

USAGE: Final = (
    "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]\n"
    "              [-n name] [-o format] [-p partitions] [--qos qos]\n"
    "              [--reservation reservation] [--sort fields] [--start]\n"
    "              [--step step_id] [-t states] [-u user_name] [--usage]\n"
    "              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]\n"
    "\t      [-ahjlrsv]\n"
)
DEFAULT_FORMAT: Final = (
    "jobarrayid:.18 ,partition:.9 ,name:.8 ,username:.8 ,statecompact:.2 ,timeused:.10 ,"
    "numnodes:.6 ,reasonlist:0"
)
LONG_FORMAT: Final = (
    "jobarrayid:.18 ,partition:.9 ,name:.8 ,username:.8 ,state:.8 ,timeused:.10 ,"
    "timelimit:.9 ,numnodes:.6 ,reasonlist:0"
)
START_FORMAT: Final = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
DEFAULT_SORT: Final = "P,t,-p"

INFINITE: Final = 0xFFFFFFFF
NO_VAL: Final = 0xFFFFFFFE
YEAR_SECONDS: Final = 365 * 24 * 3600

_VALID_STATES: Final = ",".join(name for name, _ in BASE_STATES + FLAG_STATES)


# -- the job as squeue receives it (pack_job) -----------------------------------------------------


_NO_FLAGS: Final[frozenset[str]] = frozenset()
_COMPLETING: Final = frozenset({"COMPLETING"})
_SPECIAL_EXIT: Final = frozenset({"SPECIAL_EXIT"})
_REQUEUED: Final = frozenset({"REQUEUED"})
_REQUEUE_STATES: Final = (JobState.SPECIAL_EXIT, JobState.REQUEUED)
# An enum's member read off its class costs a lookup through the metaclass; these are one each.
_COMPLETING_STATE: Final = JobState.COMPLETING
_SPECIAL_EXIT_STATE: Final = JobState.SPECIAL_EXIT
_REQUEUED_STATE: Final = JobState.REQUEUED


def _state_view(state: JobState) -> tuple[JobState, str, frozenset[str], bool]:
    """A state (not COMPLETING), its base state, its flags and whether it is pending."""
    base = "PENDING" if state in _REQUEUE_STATES else str(state)
    if state is _SPECIAL_EXIT_STATE:
        flags = _SPECIAL_EXIT
    elif state is _REQUEUED_STATE:
        flags = _REQUEUED
    else:
        flags = _NO_FLAGS
    return state, base, flags, base == "PENDING"


_STATE_VIEWS: Final[dict[JobState, tuple[JobState, str, frozenset[str], bool]]] = {
    state: _state_view(state) for state in JobState if state is not _COMPLETING_STATE
}
"""What a view reads of each state but COMPLETING (whose base depends on the job)."""


class JobView:
    """A job record as slurmctld packs it for squeue at ``now``.

    What every listing reads of it (its base state, flags, whether it is pending, its start
    time) is computed once, here; the rest on each access. A view is made and read within one
    command, while the job cannot change."""

    __slots__ = ("base", "cluster", "flags", "job", "now", "pending", "start_time", "submit_host")

    job: Job
    now: int
    cluster: str
    submit_host: str
    base: str
    flags: frozenset[str]
    pending: bool
    start_time: int

    def __init__(self, job: Job, now: int, cluster: str, submit_host: str) -> None:
        self.job = job
        self.now = now
        self.cluster = cluster
        self.submit_host = submit_host
        state = job.state
        known = _STATE_VIEWS.get(state)
        if known is not None and known[0] is state:
            _, self.base, self.flags, pending = known
        else:
            if state is _COMPLETING_STATE:
                base = "PENDING" if job.requeue_target is not None else "COMPLETED"
                self.flags = _COMPLETING
            else:  # no JobState member (so each flag's test, by identity, fails)
                base = "PENDING" if state in _REQUEUE_STATES else str(state)
                self.flags = _NO_FLAGS
            self.base = base
            pending = base == "PENDING"
        self.pending = pending
        start = job.start_time
        if not pending:
            self.start_time = start
        elif start:
            self.start_time = start if start > now else now
        elif job.begin_time > now:
            self.start_time = job.begin_time
        else:
            self.start_time = 0

    @property
    def state_name(self) -> str:
        return str(self.job.state)

    @property
    def compact(self) -> str:
        return self.job.state.compact

    @property
    def time_limit(self) -> int:
        """Minutes, or INFINITE (the lab partition has no limit)."""
        limit = self.job.time_limit
        return INFINITE if limit is None else limit

    @property
    def end_time(self) -> int:
        job = self.job
        limit = self.time_limit
        if not self.pending:
            if job.state.finished:
                return job.end_time
            if limit == INFINITE:
                return job.start_time + YEAR_SECONDS
            return job.start_time + limit * 60
        start = self.start_time
        if start:
            # C: start_time + time_limit * 60 in uint32 arithmetic for the product.
            return max(job.end_time, start + ((limit * 60) & 0xFFFFFFFF))
        return 0

    @property
    def time_used(self) -> int:
        job = self.job
        if job.start_time == 0 or self.pending:
            return 0
        if job.state is JobState.RUNNING or job.end_time == 0:
            return self.now - job.start_time
        return job.end_time - job.start_time

    @property
    def nodes(self) -> int:
        return self.job.submission.nodes

    @property
    def tasks(self) -> int:
        sub = self.job.submission
        return sub.ntasks or sub.nodes * (sub.ntasks_per_node or 1)

    @property
    def tres(self) -> str:
        job = self.job
        return f"cpu={job.cpus},node={self.nodes},billing={job.cpus}"

    @property
    def batch_host(self) -> str | None:
        return self.job.nodelist.split(",")[0] if self.job.nodelist else None

    @property
    def command(self) -> str | None:
        name = self.job.submission.environment.get("__SCRIPT_NAME__")
        if name is None or name == "wrap":
            return None
        return f"{self.job.submission.work_dir}/{name}"

    @property
    def stdout(self) -> str:
        sub = self.job.submission
        return sub.stdout or f"{sub.work_dir}/slurm-{self.job.job_id}.out"

    @property
    def accrue_time(self) -> int:
        job = self.job
        if job.held and self.pending:
            return 0
        return job.begin_time if 0 < job.begin_time <= self.now else 0


# -- printing, byte for byte ----------------------------------------------------------------------


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def print_str(value: str | None, width: int, right: bool, cut: bool = True) -> bytes:
    """squeue's ``_print_str``: what ``printf`` writes for ``value`` in a field of ``width``
    (``None`` is a C NULL string, which glibc prints as ``(null)``)."""
    width = max(-MAX_WIDTH, min(MAX_WIDTH, width))
    raw = b"(null)" if value is None else _b(value)
    if right and width > 0:
        text = raw.rjust(width)
        if cut:
            text = text[:width]
    elif width > 0:
        if value is None and width < 6:
            raw = b""  # glibc prints nothing for NULL under a precision below 6
        text = raw[:width]
    elif width < 0:
        text = raw + b" "
    else:
        text = raw
    if width > len(text):
        text += b" " * (width - len(text))
    return text


def _secs(seconds: int) -> str:
    """``_print_secs``: ``M:SS``, ``H:MM:SS`` or ``D-HH:MM:SS``; INVALID when negative."""
    if seconds < 0 or seconds > YEAR_SECONDS:
        return "INVALID"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def ranged(nodes: Sequence[str]) -> str:
    """A node list as Slurm's hostlist prints it (``vm[1-3,5]``)."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    order: list[tuple[str, int] | str] = []
    for node in nodes:
        stem = node.rstrip("0123456789")
        digits = node[len(stem) :]
        if not digits:
            if node not in plain:
                plain.append(node)
                order.append(node)
            continue
        key = (stem, len(digits) if digits.startswith("0") else 0)
        if key not in groups:
            groups[key] = []
            order.append(key)
        if int(digits) not in groups[key]:
            groups[key].append(int(digits))
    out: list[str] = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        stem, pad = item
        numbers = sorted(groups[item])
        if len(numbers) == 1:
            out.append(f"{stem}{numbers[0]:0{pad}d}")
            continue
        runs: list[str] = []
        first = last = numbers[0]
        for number in [*numbers[1:], None]:
            if number is not None and number == last + 1:
                last = number
                continue
            runs.append(f"{first:0{pad}d}" + (f"-{last:0{pad}d}" if last != first else ""))
            if number is not None:
                first = last = number
        out.append(f"{stem}[{','.join(runs)}]")
    return ",".join(out)


# -- fields ---------------------------------------------------------------------------------------

ValueFn = Callable[[JobView, Mapping[str, str]], str | None]


@dataclass(frozen=True)
class Field:
    """One printable column: its header and how a job's value is printed."""

    header: str
    value: ValueFn
    cut: bool = True
    header_cut: bool = True
    cut_when: Callable[[JobView], bool] | None = None
    expr: str | None = None
    """The value as a Python expression of ``job`` (``view.job``), ``view`` and ``env``,
    inlined by the compiled printing (see :func:`compile_items`); None: ``value`` is called."""
    expr_null: bool = False
    """Whether ``expr`` can give None (else it always gives a str)."""


def _time(epoch: int, env: Mapping[str, str]) -> str:
    """``_print_time``: ``N/A`` for 0, else ``slurm_make_time_str`` (into a 32-byte buffer)."""
    if epoch == 0:
        return "N/A"
    return _time_of(env)(epoch)


_STANDARD_TIME_FORMATS: Final = (None, "standard", "", "relative")
"""``SLURM_TIME_FORMAT`` values (None: unset) printing ``YYYY-MM-DDTHH:MM:SS``."""


def _time_of(env: Mapping[str, str]) -> Callable[[int], str]:
    """``slurm_make_time_str`` into a 32-byte buffer under ``env``'s ``SLURM_TIME_FORMAT``."""
    time_format = env.get("SLURM_TIME_FORMAT")
    if time_format in _STANDARD_TIME_FORMATS:
        return _standard_time
    return functools.partial(_formatted_time, {"SLURM_TIME_FORMAT": time_format})


@functools.lru_cache(maxsize=4096)
def _standard_time(epoch: int) -> str:
    """``epoch`` in Slurm's standard layout: a pure function of it (digits only, whatever the
    locale), so computed once for each."""
    return _formatted_time({}, epoch)


def _formatted_time(env: Mapping[str, str], epoch: int) -> str:
    return (
        format_time(epoch, env)
        .encode("utf-8", "surrogateescape")[:31]
        .decode("utf-8", "surrogateescape")
    )


def _time_expr(epoch: str) -> str:
    """:func:`_time` of ``epoch`` (an expression) as an expression for ``Field.expr``, where
    ``time_of`` is :func:`_time_of` of the call's environment."""
    return f"'N/A' if {epoch} == 0 else time_of({epoch})"


class _Const:
    """A field whose value is the same for every job (rendered once per format)."""

    __slots__ = ("text",)

    def __init__(self, text: str | None) -> None:
        self.text = text

    def __call__(self, view: JobView, env: Mapping[str, str]) -> str | None:
        return self.text


def _const(text: str | None) -> ValueFn:
    return _Const(text)


def _reason(view: JobView, env: Mapping[str, str]) -> str:
    return view.job.reason


def _shows_reason(view: JobView) -> bool:
    return "COMPLETING" not in view.flags and (
        view.pending or view.base in ("TIMEOUT", "OUT_OF_MEMORY", "DEADLINE", "FAILED")
    )


def _reason_list(view: JobView, env: Mapping[str, str]) -> str:
    return f"({view.job.reason})" if _shows_reason(view) else _nodelist(view, env)


def _nodelist(view: JobView, env: Mapping[str, str]) -> str:
    return ranged(view.job.nodelist.split(",")) if view.job.nodelist else ""


def _time_end(view: JobView, env: Mapping[str, str]) -> str:
    end = view.end_time
    if view.time_limit == INFINITE and end > view.now:
        return "NONE"
    return _time(end, env)


def _time_limit(view: JobView, env: Mapping[str, str]) -> str:
    limit = view.time_limit
    return "UNLIMITED" if limit == INFINITE else _secs(limit * 60)


def _time_left(view: JobView, env: Mapping[str, str]) -> str:
    limit = view.time_limit
    return "UNLIMITED" if limit == INFINITE else _secs(limit * 60 - view.time_used)


def _priority(view: JobView, env: Mapping[str, str]) -> str:
    return f"{view.job.priority / 0xFFFFFFFF:16.14f}"


def _pending_time(view: JobView, env: Mapping[str, str]) -> str:
    start = view.start_time
    if start and start < view.now:
        return str(start - view.job.submit_time)
    return str(view.now - view.job.submit_time)


def _stderr(view: JobView, env: Mapping[str, str]) -> str:
    return view.job.submission.stderr or view.stdout


_F: Final = Field
FIELDS: Final[dict[str, Field]] = {
    "account": _F("ACCOUNT", lambda v, e: v.job.account, expr="job.account"),
    "accrue_time": _F("ACCRUE_TIME", lambda v, e: _time(v.accrue_time, e)),
    "admin_comment": _F("ADMIN_COMMENT", _const(None)),
    "alloc_nodes": _F("ALLOC_NODES", lambda v, e: v.submit_host),
    "alloc_sid": _F("ALLOC_SID", _const("1")),
    "array_job_id": _F("ARRAY_JOB_ID", lambda v, e: str(v.job.job_id), expr="str(job.job_id)"),
    "array_task_id": _F("ARRAY_TASK_ID", _const("N/A")),
    "assoc_id": _F("ASSOC_ID", _const("0")),
    "batch_flag": _F("BATCH_FLAG", _const("1")),
    "batch_host": _F("EXEC_HOST", lambda v, e: v.batch_host or "n/a"),
    "boards_per_node": _F("BOARDS_PER_NODE", _const("N/A")),
    "burst_buffer": _F("BURST_BUFFER", _const(None)),
    "burst_buffer_state": _F("BURST_BUFFER_STATE", _const(None)),
    "cluster_features": _F("CLUSTER_FEATURES", _const(None)),
    "cluster_name": _F("CLUSTER", lambda v, e: v.cluster),
    "command": _F("COMMAND", lambda v, e: v.command),
    "comment": _F(
        "COMMENT", lambda v, e: v.job.comment or None, expr="job.comment or None", expr_null=True
    ),
    "container": _F("CONTAINER", _const(None)),
    "contiguous": _F("CONTIGUOUS", _const("0")),
    "core_spec": _F("CORE_SPEC", _const("N/A")),
    "cores": _F("CORES_PER_SOCKET", _const("*")),
    "cpus_per_task": _F("CPUS_PER_TASK", _const("1")),
    "cpus_per_tres": _F("CPUS_PER_TRES", _const("N/A")),
    "deadline": _F("DEADLINE", _const("N/A")),
    "delay_boot": _F("DELAY_BOOT", _const("0:00")),
    "dependency": _F("DEPENDENCY", _const(None)),
    "derived_ec": _F("DERIVED_EC", _const("0")),
    "eligible_time": _F(
        "ELIGIBLE_TIME", lambda v, e: _time(v.job.begin_time, e), expr=_time_expr("job.begin_time")
    ),
    "exc_nodes": _F("EXC_NODES", _const(""), cut=False),
    "exit_code": _F("EXIT_CODE", lambda v, e: str(v.job.exit_code << 8 | v.job.exit_signal)),
    "features": _F("FEATURES", _const(None)),
    "fed_origin": _F("ORIGIN", _const("NA")),
    "fed_origin_raw": _F("ORIGIN_RAW", _const("NA")),
    "fed_siblings_active": _F("ACTIVE_SIBLINGS", _const("NA")),
    "fed_siblings_active_raw": _F("ACTIVE_SIBLINGS_RAW", _const("NA")),
    "fed_siblings_viable": _F("VIABLE_SIBLINGS", _const("NA")),
    "fed_siblings_viable_raw": _F("VIALBLE_SIBLINGS_RAW", _const("NA")),
    "group_id": _F("GROUP", lambda v, e: str(v.job.uid), expr="str(job.uid)"),
    "group_name": _F("GROUP", lambda v, e: v.job.user, expr="job.user"),
    "het_job_id": _F("HET_JOB_ID", _const("N/A")),
    "het_job_id_set": _F("HET_JOB_ID_SET", _const("N/A")),
    "het_job_offset": _F("HET_JOB_OFFSET", _const("N/A")),
    "job_id": _F("JOBID", lambda v, e: str(v.job.job_id), expr="str(job.job_id)"),
    "job_id2": _F("JOBID", lambda v, e: str(v.job.job_id), expr="str(job.job_id)"),
    "job_last_sched_eval": _F(
        "LAST_SCHED_EVAL", lambda v, e: _time(v.job.last_eval or v.job.submit_time, e)
    ),
    "job_state": _F("STATE", lambda v, e: v.state_name, expr="str(job.state)"),
    "job_state_compact": _F("ST", lambda v, e: v.compact, expr="job.state.compact"),
    "licenses": _F("LICENSES", _const(None)),
    "max_cpus": _F("MAX_CPUS", lambda v, e: str(v.job.cpus), expr="str(job.cpus)"),
    "max_nodes": _F("MAX_NODES", lambda v, e: str(v.nodes)),
    "mcs_label": _F("MCSLABEL", _const(None)),
    "mem_per_tres": _F("MEM_PER_TRES", _const("N/A")),
    "min_cpus": _F("MIN_CPUS", _const("1")),
    "min_memory": _F("MIN_MEMORY", _const("0")),
    "min_time": _F("TIME_MIN", _const("0:00")),
    "min_tmp_disk": _F("MIN_TMP_DISK", _const("0")),
    "name": _F("NAME", lambda v, e: v.job.name, expr="job.name"),
    "network": _F("NETWORK", _const(None)),
    "nice": _F("NICE", _const("0")),
    "nodes": _F("NODELIST", _nodelist, cut=False, header_cut=False),
    "ntasks_per_board": _F("NTASKS_PER_BOARD", _const("N/A")),
    "ntasks_per_core": _F("NTASKS_PER_CORE", _const("N/A")),
    "ntasks_per_node": _F(
        "NTASKS_PER_NODE",
        lambda v, e: (
            str(v.job.submission.ntasks_per_node or 0)
            if v.job.submission.ntasks_per_node
            else "N/A"
        ),
    ),
    "ntasks_per_socket": _F("NTASKS_PER_SOCKET", _const("N/A")),
    "num_cpus": _F("CPUS", lambda v, e: str(v.job.cpus), expr="str(job.cpus)"),
    "num_nodes": _F("NODES", lambda v, e: str(v.nodes), expr="str(job.submission.nodes)"),
    "num_sct": _F("S:C:T", _const("*:*:*")),
    "num_tasks": _F("TASKS", lambda v, e: str(v.tasks)),
    "over_subscribe": _F("OVER_SUBSCRIBE", _const("OK")),
    "partition": _F("PARTITION", lambda v, e: v.job.partition, expr="job.partition"),
    "preempt_time": _F("PREEMPT_TIME", _const("N/A")),
    "prefer": _F("PREFER", _const(None)),
    "priority": _F("PRIORITY", _priority),
    "priority_long": _F("PRIORITY", lambda v, e: str(v.job.priority), expr="str(job.priority)"),
    "profile": _F("PROFILE", _const("NotSet")),
    "qos": _F("QOS", _const("normal")),
    "reason": _F("REASON", _reason, expr="job.reason"),
    "reason_list": _F("NODELIST(REASON)", _reason_list, header_cut=False, cut_when=_shows_reason),
    "reboot": _F("REBOOT", _const("0")),
    "req_nodes": _F("REQ_NODES", _const(""), cut=False),
    "req_switch": _F("REQ_SWITCH", _const("0")),
    "requeue": _F("REQUEUE", lambda v, e: str(int(v.job.requeue))),
    "reservation": _F("RESERVATION", _const(None)),
    "resize_time": _F("RESIZE_TIME", _const("N/A"), cut=False),
    "restart_cnt": _F(
        "RESTART_COUNT", lambda v, e: str(v.job.restart_count), expr="str(job.restart_count)"
    ),
    "schednodes": _F("SCHEDNODES", _const(None), cut=False, header_cut=False),
    "select_jobinfo": _F("", _const("")),
    "sockets": _F("SOCKETS_PER_NODE", _const("*")),
    "sockets_per_board": _F("SOCKETS_PER_BOARD", _const("0")),
    "std_err": _F("STDERR", _stderr),
    "std_in": _F("STDIN", _const("/dev/null")),
    "std_out": _F("STDOUT", lambda v, e: v.stdout),
    "system_comment": _F("SYSTEM_COMMENT", _const(None)),
    "threads": _F("THREADS_PER_CORE", _const("*")),
    "time_end": _F("END_TIME", _time_end),
    "time_left": _F("TIME_LEFT", _time_left, cut=False),
    "time_limit": _F("TIME_LIMIT", _time_limit, cut=False),
    "time_pending": _F("PENDING_TIME", _pending_time),
    "time_start": _F(
        "START_TIME", lambda v, e: _time(v.start_time, e), expr=_time_expr("view.start_time")
    ),
    "time_submit": _F(
        "SUBMIT_TIME", lambda v, e: _time(v.job.submit_time, e), expr=_time_expr("job.submit_time")
    ),
    "time_used": _F("TIME", lambda v, e: _secs(v.time_used), cut=False),
    "tres_alloc": _F("TRES_ALLOC", lambda v, e: v.tres),
    "tres_bind": _F("TRES_BIND", _const("N/A")),
    "tres_freq": _F("TRES_FREQ", _const("N/A")),
    "tres_per_job": _F("TRES_PER_JOB", _const("N/A")),
    "tres_per_node": _F("TRES_PER_NODE", _const("N/A")),
    "tres_per_socket": _F("TRES_PER_SOCKET", _const("N/A")),
    "tres_per_task": _F("TRES_PER_TASK", _const("N/A")),
    "user_id": _F("UID", lambda v, e: str(v.job.uid), expr="str(job.uid)"),
    "user_name": _F("USER", lambda v, e: v.job.user, expr="job.user"),
    "wait4switch": _F("WAIT4SWITCH", _const("0:00")),
    "wckey": _F("WCKEY", _const(None)),
    "work_dir": _F("WORK_DIR", lambda v, e: v.job.submission.work_dir),
}

LETTERS: Final = {
    "a": "account",
    "A": "job_id2",
    "b": "tres_per_node",
    "B": "batch_host",
    "c": "min_cpus",
    "C": "num_cpus",
    "d": "min_tmp_disk",
    "D": "num_nodes",
    "e": "time_end",
    "E": "dependency",
    "f": "features",
    "F": "array_job_id",
    "g": "group_name",
    "G": "group_id",
    "h": "over_subscribe",
    "H": "sockets",
    "i": "job_id",
    "I": "cores",
    "j": "name",
    "J": "threads",
    "k": "comment",
    "K": "array_task_id",
    "l": "time_limit",
    "L": "time_left",
    "m": "min_memory",
    "M": "time_used",
    "n": "req_nodes",
    "N": "nodes",
    "o": "command",
    "O": "contiguous",
    "p": "priority",
    "P": "partition",
    "q": "qos",
    "Q": "priority_long",
    "r": "reason",
    "R": "reason_list",
    "s": "select_jobinfo",
    "S": "time_start",
    "t": "job_state_compact",
    "T": "job_state",
    "U": "user_id",
    "u": "user_name",
    "v": "reservation",
    "V": "time_submit",
    "w": "wckey",
    "W": "licenses",
    "x": "exc_nodes",
    "X": "core_spec",
    "y": "nice",
    "Y": "schednodes",
    "z": "num_sct",
    "Z": "work_dir",
}

# -O names (compared case-insensitively), in parse_long_format's order of tests.
LONG_NAMES: Final = {
    "account": "account",
    "container": "container",
    "jobid": "job_id2",
    "gres": "tres_per_node",
    "batchhost": "batch_host",
    "burstbuffer": "burst_buffer",
    "burstbufferstate": "burst_buffer_state",
    "cluster": "cluster_name",
    "delayboot": "delay_boot",
    "mincpus": "min_cpus",
    "numcpus": "num_cpus",
    "mintmpdisk": "min_tmp_disk",
    "numnodes": "num_nodes",
    "endtime": "time_end",
    "dependency": "dependency",
    "feature": "features",
    "clusterfeature": "cluster_features",
    "prefer": "prefer",
    "arrayjobid": "array_job_id",
    "groupname": "group_name",
    "groupid": "group_id",
    "oversubscribe": "over_subscribe",
    "shared": "over_subscribe",
    "sockets": "sockets",
    "jobarrayid": "job_id",
    "cores": "cores",
    "name": "name",
    "threads": "threads",
    "admin_comment": "admin_comment",
    "system_comment": "system_comment",
    "comment": "comment",
    "arraytaskid": "array_task_id",
    "timelimit": "time_limit",
    "timeleft": "time_left",
    "minmemory": "min_memory",
    "timeused": "time_used",
    "reqnodes": "req_nodes",
    "nodelist": "nodes",
    "command": "command",
    "contiguous": "contiguous",
    "priority": "priority",
    "partition": "partition",
    "qos": "qos",
    "prioritylong": "priority_long",
    "reason": "reason",
    "reasonlist": "reason_list",
    "selectjobinfo": "select_jobinfo",
    "starttime": "time_start",
    "lastschedeval": "job_last_sched_eval",
    "statecompact": "job_state_compact",
    "state": "job_state",
    "userid": "user_id",
    "username": "user_name",
    "reservation": "reservation",
    "submittime": "time_submit",
    "pendingtime": "time_pending",
    "wckey": "wckey",
    "licenses": "licenses",
    "corespec": "core_spec",
    "nice": "nice",
    "schednodes": "schednodes",
    "sct": "num_sct",
    "workdir": "work_dir",
    "accruetime": "accrue_time",
    "allocnodes": "alloc_nodes",
    "allocsid": "alloc_sid",
    "associd": "assoc_id",
    "batchflag": "batch_flag",
    "boardspernode": "boards_per_node",
    "cpuspertask": "cpus_per_task",
    "cpus-per-task": "cpus_per_task",
    "derivedec": "derived_ec",
    "eligibletime": "eligible_time",
    "exit_code": "exit_code",
    "origin": "fed_origin",
    "originraw": "fed_origin_raw",
    "siblingsactive": "fed_siblings_active",
    "siblingsactiveraw": "fed_siblings_active_raw",
    "siblingsviable": "fed_siblings_viable",
    "siblingsviableraw": "fed_siblings_viable_raw",
    "maxcpus": "max_cpus",
    "maxnodes": "max_nodes",
    "network": "network",
    "ntpercore": "ntasks_per_core",
    "ntpernode": "ntasks_per_node",
    "ntpersocket": "ntasks_per_socket",
    "ntperboard": "ntasks_per_board",
    "preempttime": "preempt_time",
    "profile": "profile",
    "reboot": "reboot",
    "reqswitch": "req_switch",
    "requeue": "requeue",
    "resizetime": "resize_time",
    "restartcnt": "restart_cnt",
    "sperboard": "sockets_per_board",
    "stderr": "std_err",
    "stdin": "std_in",
    "stdout": "std_out",
    "mintime": "min_time",
    "wait4switch": "wait4switch",
    "cpus-per-tres": "cpus_per_tres",
    "mem-per-tres": "mem_per_tres",
    "tres": "tres_alloc",
    "tres-alloc": "tres_alloc",
    "tres-bind": "tres_bind",
    "tres-freq": "tres_freq",
    "tres-per-job": "tres_per_job",
    "tres-per-node": "tres_per_node",
    "tres-per-socket": "tres_per_socket",
    "tres-per-task": "tres_per_task",
    "mcslabel": "mcs_label",
    "deadline": "deadline",
    "packjobid": "het_job_id",
    "hetjobid": "het_job_id",
    "packjoboffset": "het_job_offset",
    "hetjoboffset": "het_job_offset",
    "packjobidset": "het_job_id_set",
    "hetjobidset": "het_job_id_set",
}


@dataclass(frozen=True)
class Item:
    """One element of a parsed format: a field, literal text (a prefix) or an invalid spec
    (which prints only its ``suffix``)."""

    kind: str  # "field", "prefix" or "invalid"
    key: str = ""
    width: int = 0
    right: bool = False
    suffix: str | None = None

    def render(self, view: JobView | None, env: Mapping[str, str]) -> bytes:
        out = b""
        if self.kind == "field":
            field = FIELDS[self.key]
            if view is None:
                out = print_str(field.header, self.width, self.right, field.header_cut)
            else:
                cut = field.cut if field.cut_when is None else field.cut_when(view)
                out = print_str(field.value(view, env), self.width, self.right, cut)
        if self.suffix is not None:
            out += _b(self.suffix)
        return out


def _int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _strtol(text: str) -> tuple[int, int]:
    """C ``strtol(text, &end, 10)``: the value (clamped as a C long, then kept as an int)
    and how many characters it consumed (0 when there was no number)."""
    i = 0
    while i < len(text) and text[i] in " \t\n\v\f\r":
        i += 1
    sign = 1
    if i < len(text) and text[i] in "+-":
        sign = -1 if text[i] == "-" else 1
        i += 1
    start = i
    while i < len(text) and "0" <= text[i] <= "9":
        i += 1
    if i == start:
        return 0, 0
    value = sign * int(text[start:i])
    value = max(-(2**63), min(2**63 - 1, value))
    return _int32(value), i


def parse_format(fmt: str) -> tuple[list[Item], list[str]]:
    """``-o/--format``: the items to print and the error lines squeue prints for them."""
    items: list[Item] = []
    errors: list[str] = []
    pos = fmt.find("%")
    if pos == -1:
        return [Item("prefix", suffix=fmt)], errors
    if pos > 0:
        items.append(Item("prefix", suffix=fmt[:pos]))
        fmt = fmt[pos:]
    format_all = fmt.lower() == "%all"
    if format_all:
        letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
        letters += [chr(c) for c in range(ord("A"), ord("Z") + 1)]
        fmt = "%" + "|%".join(letters)
    for token in (t for t in fmt.split("%") if t):
        i = 0
        right = token.startswith(".")
        if right:
            i = 1
        width = 0
        while i < len(token) and "0" <= token[i] <= "9":
            width = _int32(width * 10 + ord(token[i]) - ord("0"))
            i += 1
        letter = token[i] if i < len(token) else ""
        suffix = token[i + 1 :]
        key = LETTERS.get(letter)
        if key is not None:
            items.append(Item("field", key, width, right, suffix))
        elif not format_all:
            items.append(Item("invalid", width=width, right=right, suffix="%" + token))
            errors.append(f"{PROG}: error: Invalid job format specification: {letter}")
    return items, errors


def parse_long_format(fmt: str) -> tuple[list[Item], list[str]]:
    """``-O/--Format``: the items to print and the error lines squeue prints for them."""
    items, errors = _parsed_long_format(fmt)
    return list(items), list(errors)


@functools.lru_cache(maxsize=64)
def _parsed_long_format(fmt: str) -> tuple[tuple[Item, ...], tuple[str, ...]]:
    """:func:`parse_long_format`'s answer, parsed once per format (items are frozen)."""
    items, errors = _parse_long_format(fmt)
    return tuple(items), tuple(errors)


def _parse_long_format(fmt: str) -> tuple[list[Item], list[str]]:
    items: list[Item] = []
    errors: list[str] = []
    for token in (t for t in fmt.split(",") if t):
        name, colon, rest = token.partition(":")
        suffix: str | None = None
        if colon:
            right = rest.startswith(".")
            if right:
                rest = rest[1:]
            width, used = _strtol(rest)
            if rest[used:]:
                suffix = rest[used:]
        else:
            right, width = False, 20
        lowered = name.lower()
        key = LONG_NAMES.get(lowered)
        if key is None and lowered.startswith("numtask"):
            key = "num_tasks"
        if key is None:
            items.append(Item("invalid", width=width, right=right, suffix=suffix))
            errors.append(f"{PROG}: error: Invalid job format specification: {name}")
        else:
            items.append(Item("field", key, width, right, suffix))
    return items, errors


def render_line(items: Sequence[Item], view: JobView | None, env: Mapping[str, str]) -> bytes:
    """One output line (the header when ``view`` is None), newline included."""
    return b"".join(item.render(view, env) for item in items) + b"\n"


# -- printing fast: a format compiled once into a function printing the jobs' lines -------------
#
# The lines are built as one ``str`` and encoded once: with ``surrogateescape`` a string
# encodes character by character, so encoding the concatenation gives the concatenation of
# the encodings :func:`render_line` joins. Only a field with a width above 0 is padded and cut
# by bytes; for an ASCII value bytes and characters are one, else :func:`print_str` does it
# and its bytes are decoded back (``surrogateescape`` decodes any bytes to a string that
# encodes to them again). A field's value is its ``expr`` where it has one (the same value as
# its ``value``, inlined), else a call of its ``value``. tests/simulators/test_squeue_fast.py
# holds the reference printing as the oracle of this one.

LinesFn = Callable[[Sequence[JobView], Mapping[str, str]], str]


@dataclass(frozen=True)
class Compiled:
    """A parsed format ready to print: its items (for the header), the error lines of the
    parse, and the function giving the lines of a list of jobs (newlines included)."""

    items: tuple[Item, ...]
    errors: tuple[str, ...]
    lines: LinesFn


def _decoded(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _varies(item: Item) -> bool:
    """Whether what ``item`` prints depends on the job."""
    if item.kind != "field":
        return False
    field = FIELDS[item.key]
    return not isinstance(field.value, _Const) or field.cut_when is not None


def _literal(item: Item) -> str:
    """What ``item`` prints for every job, when that does not depend on the job."""
    if item.kind != "field":
        return item.suffix or ""
    field = FIELDS[item.key]
    assert isinstance(field.value, _Const)
    text = field.value.text
    return _decoded(print_str(text, item.width, item.right, field.cut)) + (item.suffix or "")


def _field_code(item: Item, n: int, namespace: dict[str, object]) -> list[str]:
    """The statements leaving in ``t<n>`` what ``item`` prints for ``view`` (``job`` is its
    job), its suffix excepted; what they call is put in ``namespace``."""
    field = FIELDS[item.key]
    var = f"t{n}"
    if field.expr is not None:
        code = [f"{var} = {field.expr}"]
    else:
        namespace[f"value{n}"] = field.value
        code = [f"{var} = value{n}(view, env)"]
    width = max(-MAX_WIDTH, min(MAX_WIDTH, item.width))
    if width <= 0:
        if field.expr is None or field.expr_null:
            code.append(f"if {var} is None: {var} = '(null)'")
        return code
    if field.cut_when is not None:
        namespace[f"cut_when{n}"] = field.cut_when
        cut = f"cut_when{n}(view)"
    else:
        cut = repr(field.cut)
    if not item.right:  # printf's precision: always cut
        ascii_case = [f"{var} = {var}[:{width}].ljust({width})"]
    elif field.cut_when is None:
        ascii_case = [f"{var} = {var}.rjust({width})" + (f"[:{width}]" if field.cut else "")]
    else:
        ascii_case = [f"{var} = {var}.rjust({width})", f"if {cut}: {var} = {var}[:{width}]"]
    return [
        *code,
        f"if {var} is not None and {var}.isascii():",
        *(f"    {line}" for line in ascii_case),
        "else:",
        f"    {var} = decoded(print_str({var}, {width}, {item.right!r}, {cut}))",
    ]


def compile_items(items: Sequence[Item], errors: Sequence[str]) -> Compiled:
    """``items`` (and their parse's ``errors``) compiled into a function printing jobs' lines:
    ``lines(views, env)`` is ``render_line(items, view, env)`` of each view, joined and
    decoded. The generated code holds FIELDS' expressions, names bound in its namespace and
    integers; a format's own text only ever as the ``repr`` of an f-string's literal text,
    its braces doubled, so no text of a format is code."""
    namespace: dict[str, object] = {
        "decoded": _decoded,
        "print_str": print_str,
        "time_of_env": _time_of,
    }
    body: list[str] = []
    template: list[str] = []  # an f-string's text: literals with their braces doubled
    fields = 0
    for item in items:
        if not _varies(item):
            template.append(_literal(item).replace("{", "{{").replace("}", "}}"))
            continue
        n = fields
        fields += 1
        body.extend(_field_code(item, n, namespace))
        template.append(f"{{t{n}}}")
        if item.width < 0:
            template.append(" ")
        template.append((item.suffix or "").replace("{", "{{").replace("}", "}}"))
    template.append("\n")
    source = "\n".join(
        [
            "def lines(views, env):",
            "    out = []",
            "    append = out.append",
            "    time_of = time_of_env(env)",
            "    for view in views:",
            "        job = view.job",
            *(f"        {line}" for line in body),
            f"        append(f{''.join(template)!r})",
            "    return ''.join(out)",
        ]
    )
    exec(compile(source, "<squeue format>", "exec"), namespace)
    lines = namespace["lines"]
    assert callable(lines)
    return Compiled(tuple(items), tuple(errors), lines)


@functools.lru_cache(maxsize=64)
def compiled_format(fmt: str) -> Compiled:
    """``-o`` format ``fmt`` parsed and compiled (a pure function of it, so done once)."""
    return compile_items(*parse_format(fmt))


@functools.lru_cache(maxsize=64)
def compiled_long_format(fmt: str) -> Compiled:
    """``-O`` format ``fmt`` parsed and compiled (a pure function of it, so done once)."""
    return compile_items(*_parsed_long_format(fmt))


# -- sorting (glibc qsort is a stable merge sort; tests/simulators/test_squeue_sort.py holds it,
# with Slurm's comparators, and checks these sorts give its order) -------------------------------


def _start(view: JobView) -> int:
    if view.base == "PENDING" and not view.flags and view.start_time < view.now:
        return view.now
    return view.start_time


def _sorted_by_start(views: list[JobView], reverse: bool) -> list[JobView]:
    """What the merge sort gives with ``sort_jobs_by_start_time``'s comparator, each key
    computed once. The comparator is consistent among start times other than 0, so those come
    out as any stable sort on the key puts them. A view with 0 loses every comparison, even to
    another 0: every merge takes the other side's views first, and of two 0s the right one,
    so the 0s come last, in the reverse of their order."""
    starting = [view for view in views if view.start_time != 0]
    unknown = [view for view in views if view.start_time == 0]
    return sorted(starting, key=_start, reverse=reverse) + unknown[::-1]


_COMPACT: Final = {state: state.compact for state in JobState}
"""``JobState.compact`` of each state, without its property's call."""

TextKeys = Callable[[list[JobView]], list[str]]


def _each(key: Callable[[JobView], str]) -> TextKeys:
    return lambda views: list(map(key, views))


_JOB_STATE: Final = operator.attrgetter("job.state")

# Keys compared as bytes (strcmp), given as the list of the views' texts: see _text_keys.
_TEXT_SORT_KEYS: Final[dict[str, TextKeys]] = {
    "B": lambda views: [v.batch_host or "" for v in views],
    "g": _each(operator.attrgetter("job.user")),
    "j": _each(operator.attrgetter("job.name")),
    "N": _each(operator.attrgetter("job.nodelist")),
    "P": _each(operator.attrgetter("job.partition")),
    "t": lambda views: [_COMPACT[state] for state in map(_JOB_STATE, views)],
    "T": _each(operator.attrgetter("state_name")),
    "u": _each(operator.attrgetter("job.user")),
}
_SORT_KEYS: Final[dict[str, Callable[[JobView], int]]] = {
    "C": operator.attrgetter("job.cpus"),
    "D": operator.attrgetter("nodes"),
    "e": operator.attrgetter("end_time"),
    "G": operator.attrgetter("job.uid"),
    "i": operator.attrgetter("job.job_id"),
    "l": operator.attrgetter("time_limit"),
    "L": lambda v: (v.time_limit * 60 - v.time_used) if v.time_limit != INFINITE else INFINITE,
    "M": operator.attrgetter("time_used"),
    "p": operator.attrgetter("job.priority"),
    "Q": operator.attrgetter("job.priority"),
    "U": operator.attrgetter("job.uid"),
    "V": operator.attrgetter("job.submit_time"),
}


def _sorted_by(
    views: list[JobView], keys: Sequence[int | str | bytes], reverse: bool
) -> list[JobView]:
    """``sorted(views, key=..., reverse=reverse)`` where ``keys`` holds each view's key: the
    views as they are when every key is the same (a stable sort keeps their order)."""
    if len(set(keys)) <= 1:
        return views
    order = sorted(range(len(views)), key=keys.__getitem__, reverse=reverse)
    return [views[i] for i in order]


def _text_keys(texts: list[str]) -> Sequence[str | bytes]:
    """What strcmp compares of ``texts``: their bytes, or the texts themselves when ASCII
    (as their bytes compare)."""
    return texts if all(map(str.isascii, texts)) else [_b(text) for text in texts]


_SORT_NOOP: Final = frozenset("bcdfhHIJmnOvz")


def sort_views(views: list[JobView], spec: str) -> tuple[list[JobView], str | None]:
    """``sort_jobs_by_start_time`` then ``sort_job_list``; the error line for a bad letter."""
    views = _sorted_by_start(views, True)
    steps, error = _sort_steps(spec)
    for letter, reverse in steps:
        if letter == "S":
            views = _sorted_by_start(views, reverse)
        # Slurm's comparator on a key is consistent: a stable sort gives the merge sort's order
        elif letter in _TEXT_SORT_KEYS:
            views = _sorted_by(views, _text_keys(_TEXT_SORT_KEYS[letter](views)), reverse)
        else:
            views = _sorted_by(views, list(map(_SORT_KEYS[letter], views)), reverse)
    return views, error


@functools.lru_cache(maxsize=64)
def _sort_steps(spec: str) -> tuple[tuple[tuple[str, bool], ...], str | None]:
    """``sort_job_list``'s reading of ``spec`` (a pure function of it, so done once): the
    sorts to make, in their order (letter, reversed), up to a bad letter, and its error line."""
    steps: list[tuple[str, bool]] = []
    i = len(spec) - 1
    while i >= 0:
        letter = spec[i]
        if letter in ",+-":
            i -= 1
            continue
        reverse = i > 0 and spec[i - 1] == "-"
        if i + 1 >= 7 and spec[i - 6 : i + 1].lower() == "cluster":
            i -= 7
            continue  # one cluster: sorting by its name changes nothing
        if letter == "S" or letter in _TEXT_SORT_KEYS or letter in _SORT_KEYS:
            steps.append((letter, reverse))
        elif letter not in _SORT_NOOP:
            return tuple(steps), f"{PROG}: error: Invalid sort specification: {letter}"
        i -= 1
    return tuple(steps), None


# -- the command ----------------------------------------------------------------------------------


@dataclass
class _Params:
    job_flag: bool = False
    jobs: list[tuple[int, int | None]] | None = None
    names: list[str] | None = None
    users: list[int] | None = None
    states: list[tuple[str, bool]] | None = None  # (name, is_flag)
    all_states: bool = False
    partitions: list[str] | None = None
    accounts: list[str] | None = None
    qos: list[str] | None = None
    licenses: list[str] | None = None
    nodes: set[str] | None = None
    reservation: str | None = None
    format: str | None = None
    format_long: str | None = None
    sort: str | None = None
    no_header: bool = False
    long_list: bool = False
    start_flag: bool = False
    step_flag: bool = False
    iterate: bool = False


@command(PROG)
def squeue(sim: SlurmSim, args: list[str], stdin: str | None, env: Mapping[str, str]) -> Output:
    return run_to_bytes(_run, sim, args, env)


def _run(
    sim: SlurmSim, args: list[str], env: Mapping[str, str], result: Output, out: bytearray
) -> None:
    cli = parse(PROG, args, SPEC, defer=True)
    try:
        params = _params(sim, cli, env, result)
    except UsageError as error:
        raise CommandExit(refuse(result, error)) from None
    if cli.has("json"):
        _dump_json(sim, env, out)
        return
    if (params.iterate or params.long_list) and not params.no_header:
        out += _b(ctime(sim.controller.now) + "\n")
    controller = sim.controller
    if not controller.available():
        result.err(f"slurm_load_jobs error: {UNAVAILABLE}")
        raise CommandExit(1)
    jobs = _load(sim, params, result)
    if params.format is not None:
        compiled = compiled_format(params.format)
    else:
        fmt = params.format_long
        if fmt is None:
            fmt = LONG_FORMAT if params.long_list else DEFAULT_FORMAT
        compiled = compiled_long_format(fmt)
    for line in compiled.errors:
        result.err(line)
    if not params.no_header:
        out += render_line(compiled.items, None, env)
    now = controller.now
    config = sim.config
    views = _kept(jobs, params, now, config.cluster_name, config.submit_host)
    views, sort_error = sort_views(views, params.sort or DEFAULT_SORT)
    if sort_error is not None:
        result.err(sort_error)
        raise CommandExit(1)
    if views:
        out += compiled.lines(views, env).encode("utf-8", "surrogateescape")
    if params.iterate:
        out += b"\n"


def _params(sim: SlurmSim, cli: Parsed, env: Mapping[str, str], result: Output) -> _Params:
    """``parse_command_line``: options in their order, then operands and the environment."""
    params = _Params()
    override_env = False
    for key, value in cli.options:
        text = value or ""
        if key == "help":
            result.stdout += USAGE
            raise CommandExit(0)
        if key == "usage":
            result.stdout += USAGE
            raise CommandExit(0)
        if key == "version":
            result.out(f"slurm {sim.config.version}")
            raise CommandExit(0)
        if key == "accounts":
            params.accounts = _str_list(text)
        elif key == "noheader":
            params.no_header = True
        elif key == "iterate":
            if _strtol(text)[0] <= 0:
                result.err(f"{PROG}: error: --iterate={text}")
                result.err("")
                raise CommandExit(1)
            params.iterate = True
        elif key == "jobs":
            if value is not None:
                params.jobs = _job_list(value, result)
            params.job_flag = True
        elif key == "long":
            params.long_list = True
            override_env = True
        elif key == "licenses":
            params.licenses = _str_list(text)
        elif key == "name":
            params.names = _str_list(text)
        elif key == "Format":
            if params.format is not None:
                raise exit_with(
                    result, f"{PROG}: error: -O (--Format) is incompatible with -o (--format)"
                )
            params.format_long = text
            override_env = True
        elif key == "format":
            if params.format_long is not None:
                raise exit_with(
                    result, f"{PROG}: error: -o (--format) is incompatible with -O (--Format)"
                )
            params.format = text
            override_env = True
        elif key == "partitions":
            params.partitions = _str_list(text)
        elif key == "qos":
            params.qos = _str_list(text)
        elif key == "reservation":
            params.reservation = text
        elif key == "steps":
            params.step_flag = True
            override_env = True
        elif key == "sort":
            params.sort = text
        elif key == "states":
            _state_list(text, params, result)
        elif key == "user":
            params.users = _uids_skipping_unknown(sim, text, result)
        elif key == "me":
            params.users = [sim.config.uid]
        elif key == "nodelist":
            params.nodes = _node_set(text, result)
        elif key == "start":
            params.start_flag = True
            override_env = True
        elif key == "yaml":
            raise exit_with(result, f"{PROG}: error: --yaml is not supported by this simulator")
    cli.check()  # getopt_long stopped here: "case '?': ... exit(1)"
    if params.long_list and params.format is not None:
        raise exit_with(
            result,
            f"{PROG}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. "
            "Please remove one and retry.",
        )
    if not override_env:
        if (fmt := env.get("SQUEUE_FORMAT")) is not None:
            params.format = fmt
        elif (fmt2 := env.get("SQUEUE_FORMAT2")) is not None:
            params.format_long = fmt2
    if params.sort is None and (sort := env.get("SQUEUE_SORT")) is not None:
        params.sort = sort
    operands = list(cli.operands)
    if operands and params.job_flag:
        params.jobs = _job_list(operands.pop(0), result)
    elif operands and params.step_flag:
        operands.pop(0)
    if operands:
        result.err(f"{PROG}: error: Unrecognized option: {operands[0]}")
        result.stdout += USAGE
        raise CommandExit(1)
    if params.step_flag:
        raise exit_with(result, f"{PROG}: error: job steps (-s/--steps) are not simulated")
    if params.names is None and (names := env.get("SQUEUE_NAMES")) is not None:
        params.names = _str_list(names)
    if params.partitions is None and (parts := env.get("SQUEUE_PARTITION")) is not None:
        params.partitions = _str_list(parts)
    if params.accounts is None and (accounts := env.get("SQUEUE_ACCOUNT")) is not None:
        params.accounts = _str_list(accounts)
    states = env.get("SQUEUE_STATES")
    if params.states is None and not params.all_states and states is not None:
        _state_list(states, params, result)
    if params.users is None and (users := env.get("SQUEUE_USERS")) is not None:
        params.users = _uids_skipping_unknown(sim, users, result)
    if params.start_flag:
        if params.format is None:
            params.format = START_FORMAT
        if params.sort is None:
            params.sort = "S"
        if params.states is None and not params.all_states:
            _state_list("PD", params, result)
    return params


def _str_list(text: str) -> list[str]:
    """``_build_str_list``: strtok on commas (empty items vanish)."""
    return [item for item in text.split(",") if item]


def _job_list(text: str, result: Output) -> list[tuple[int, int | None]]:
    """``_build_job_list``: ``id`` or ``id_task``; an id that is not positive is fatal."""
    jobs: list[tuple[int, int | None]] = []
    for item in _str_list(text):
        job_id, used = _strtol(item)
        array_id: int | None = None
        if item[used : used + 1] == "_":
            array_id = _strtol(item[used + 1 :])[0]
        if job_id <= 0:
            raise exit_with(result, f"{PROG}: error: Invalid job id: {item}")
        jobs.append((job_id, array_id))
    return jobs


def _uids_skipping_unknown(sim: SlurmSim, text: str, result: Output) -> list[int]:
    """``_build_user_list``: names or uids of known users; others are reported and skipped."""
    known = {"root": 0, sim.config.user: sim.config.uid}
    uids: list[int] = []
    for item in _str_list(text):
        if item in known:
            uids.append(known[item])
        elif item.isascii() and item.isdigit() and int(item) in known.values():
            uids.append(int(item))
        else:
            result.err(f"{PROG}: error: Invalid user: {item}")
            result.err("")
    return uids


def _state_list(text: str, params: _Params, result: Output) -> None:
    """``_build_state_list``: ``all``, or long names and compact codes, any case."""
    if text.lower() == "all":
        params.all_states = True
        params.states = None
        return
    params.all_states = False
    states: list[tuple[str, bool]] = []
    for item in _str_list(text):
        lowered = item.lower()
        found = next(
            (
                (name, flag)
                for flag, table in ((False, BASE_STATES), (True, FLAG_STATES))
                for name, code in table
                if lowered in (name.lower(), code.lower())
            ),
            None,
        )
        if found is None:
            result.err(f"{PROG}: error: Invalid job state specified: {item}")
            result.err(f"{PROG}: error: Valid job states include: {_VALID_STATES}")
            result.err("")
            raise CommandExit(1)
        states.append(found)
    params.states = states


def _node_set(text: str, result: Output) -> set[str]:
    nodes: set[str] = set()
    for item in _str_list(text):
        if "[" in item:
            stem, _, rest = item.partition("[")
            body = rest.rstrip("]")
            for part in body.split(","):
                low, _, high = part.partition("-")
                if not low.isdigit() or (high and not high.isdigit()):
                    raise exit_with(result, f"{PROG}: error: '{text}' invalid entry for --nodelist")
                width = len(low) if low.startswith("0") else 0
                for number in range(int(low), int(high or low) + 1):
                    nodes.add(f"{stem}{number:0{width}d}")
        else:
            nodes.add(item)
    return nodes


_SEQ: Final = operator.attrgetter("seq")


def _load(sim: SlurmSim, params: _Params, result: Output) -> list[Job]:
    """The jobs slurmctld returns, in its list order, before squeue's own filters."""
    controller = sim.controller
    if params.jobs is not None and len(params.jobs) == 1:
        job = controller.jobs.get(params.jobs[0][0])
        if job is None:
            result.err(f"slurm_load_jobs error: {INVALID_JOB_ID}")
            raise CommandExit(1)
        candidates: Iterable[Job] = [job]
    elif params.names is not None:
        found: dict[int, Job] = {}
        for name in params.names:
            for job in controller.named(name):
                found[id(job)] = job
        candidates = found.values()
    elif params.jobs is not None:
        candidates = [controller.jobs[i] for i, _ in params.jobs if i in controller.jobs]
    else:
        candidates = controller.jobs.values()
    return sorted(candidates, key=_SEQ)


_LISTED_BASES: Final = ("RUNNING", "SUSPENDED")


def _state_selected(view: JobView, states: list[tuple[str, bool]] | None) -> bool:
    """``-t`` as squeue applies it; without it, pending, running, suspended and completing."""
    if states is None:
        return view.pending or view.base in _LISTED_BASES or "COMPLETING" in view.flags
    return any(
        (name in view.flags) if flag else (name == view.base and not view.flags)
        for name, flag in states
    )


def _kept(
    jobs: list[Job], params: _Params, now: int, cluster: str, submit_host: str
) -> list[JobView]:
    """The views of the jobs ``_filter_job`` and ``_filter_job_part`` keep, in their order.
    Every test is a pure function of the job, so each is applied to the whole list in turn,
    and a view is made only for the jobs that pass those that do not need one."""
    if params.licenses is not None or params.reservation is not None:
        return []  # no job of the simulated cluster uses licenses or a reservation
    if params.qos is not None and not any(q.lower() == "normal" for q in params.qos):
        return []
    if params.jobs is not None:
        wanted = params.jobs
        jobs = [
            job
            for job in jobs
            if any(job_id == job.job_id and array_id is None for job_id, array_id in wanted)
        ]
    if params.accounts is not None:
        accounts = params.accounts
        jobs = [job for job in jobs if any(a.lower() == job.account.lower() for a in accounts)]
    if params.nodes is not None:
        nodes = params.nodes
        jobs = [job for job in jobs if set(job.nodelist.split(",")) & nodes]
    if params.users is not None:
        users = params.users
        jobs = [job for job in jobs if job.uid in users]
    if params.names is not None:
        names = params.names
        jobs = [job for job in jobs if any(n.lower() == job.name.lower() for n in names)]
    if params.partitions is not None:
        partitions = params.partitions
        jobs = [job for job in jobs if job.partition in partitions]
    views = [JobView(job, now, cluster, submit_host) for job in jobs]
    if params.all_states:
        return views
    states = params.states
    if states is None:  # _state_selected(view, None), inlined
        return [
            view
            for view in views
            if view.pending or view.base in _LISTED_BASES or "COMPLETING" in view.flags
        ]
    return [view for view in views if _state_selected(view, states)]


# -- --json ---------------------------------------------------------------------------------------


def _dump_json(sim: SlurmSim, env: Mapping[str, str], out: bytearray) -> None:
    """``squeue --json`` (openapi/v0.0.38): every job, whatever the filters."""
    controller = sim.controller
    config = sim.config
    errors: list[object] = []
    jobs: list[dict[str, object]] = []
    if not controller.available():
        errors.append(
            {
                "error": "Failed while looking for jobs",
                "error_number": 1007,
                "source": "slurm_load_jobs",
            }
        )
    else:
        now = controller.now
        for job in sorted(controller.jobs.values(), key=lambda j: j.seq):
            jobs.append(job_json(JobView(job, now, config.cluster_name, config.submit_host)))
    document = {
        "meta": {
            "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
            "Slurm": {
                "version": _version(config.version),
                "release": config.version,
            },
        },
        "errors": errors,
        "jobs": jobs,
    }
    out += _b(dump_pretty(document))


def _version(release: str) -> dict[str, int]:
    parts = [int(p) if p.isdigit() else 0 for p in release.split(".")] + [0, 0, 0]
    return {"major": parts[0], "micro": parts[2], "minor": parts[1]}


def dump_pretty(document: object) -> str:
    """JSON as Slurm's serializer prints it: two-space indents, ``\\/`` for ``/``, and empty
    lists as ``[`` newline ``]``."""

    def render(value: object, indent: int) -> str:
        pad = "  " * (indent + 1)
        end = "  " * indent
        if isinstance(value, dict):
            if not value:
                return "{\n" + end + "}"
            body = ",\n".join(
                f"{pad}{_json_str(str(k))}: {render(v, indent + 1)}" for k, v in value.items()
            )
            return "{\n" + body + "\n" + end + "}"
        if isinstance(value, list):
            if not value:
                return "[\n" + end + "]"
            body = ",\n".join(pad + render(v, indent + 1) for v in value)
            return "[\n" + body + "\n" + end + "]"
        if isinstance(value, str):
            return _json_str(value)
        return json.dumps(value)

    return render(document, 0) + "\n"


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("/", "\\/")


def job_json(view: JobView) -> dict[str, object]:
    """One job as ``dump_job_info`` of openapi/v0.0.38 writes it (keys in its order)."""
    job = view.job
    sub = job.submission
    running = view.base not in ("PENDING",) and not job.state.finished
    data: dict[str, object] = {
        "account": job.account,
        "accrue_time": view.accrue_time,
        "admin_comment": None,
        "array_job_id": 0,
        "array_task_id": None,
        "array_max_tasks": 0,
        "array_task_string": None,
        "association_id": 0,
        "batch_features": None,
        "batch_flag": True,
        "batch_host": view.batch_host,
        "flags": [],
        "burst_buffer": None,
        "burst_buffer_state": None,
        "cluster": view.cluster,
        "cluster_features": None,
        "command": view.command,
        "comment": job.comment or None,
        "container": None,
        "contiguous": False,
        "core_spec": None,
        "thread_spec": None,
        "cores_per_socket": None,
        "billable_tres": float(job.cpus) if job.start_time else None,
        "cpus_per_task": None,
        "cpu_frequency_minimum": None,
        "cpu_frequency_maximum": None,
        "cpu_frequency_governor": None,
        "cpus_per_tres": None,
        "deadline": 0,
        "delay_boot": 0,
        "dependency": None,
        "derived_exit_code": 0,
        "eligible_time": job.begin_time,
        "end_time": view.end_time,
        "excluded_nodes": None,
        "exit_code": job.exit_code << 8 | job.exit_signal,
        "features": None,
        "federation_origin": None,
        "federation_siblings_active": None,
        "federation_siblings_viable": None,
        "gres_detail": [],
        "group_id": job.uid,
        "group_name": job.user,
        "job_id": job.job_id,
    }
    if running or (job.state.finished and job.nodelist):
        data["job_resources"] = {
            "nodes": job.nodelist,
            "allocated_cores": job.cpus,
            "allocated_hosts": len(job.nodelist.split(",")),
            "allocated_nodes": [
                {"sockets": {}, "cores": {}, "memory": 0, "cpus": job.cpus, "nodename": node}
                for node in job.nodelist.split(",")
            ],
        }
    data |= {
        "job_state": view.state_name,
        "last_sched_evaluation": job.last_eval or job.submit_time,
        "licenses": None,
        "max_cpus": 0,
        "max_nodes": 0,
        "mcs_label": None,
        "memory_per_tres": None,
        "name": job.name,
        "nodes": job.nodelist or None,
        "nice": None,
        "tasks_per_core": None,
        "tasks_per_node": sub.ntasks_per_node or 0,
        "tasks_per_socket": None,
        "tasks_per_board": 0,
        "cpus": job.cpus,
        "node_count": view.nodes,
        "tasks": view.tasks,
        "het_job_id": 0,
        "het_job_id_set": None,
        "het_job_offset": 0,
        "partition": job.partition,
        "prefer": None,
        "memory_per_node": None,
        "memory_per_cpu": None,
        "minimum_cpus_per_node": 1,
        "minimum_tmp_disk_per_node": 0,
        "preempt_time": 0,
        "pre_sus_time": 0,
        "priority": job.priority,
        "profile": None,
        "qos": "normal",
        "reboot": False,
        "required_nodes": None,
        "requeue": job.requeue,
        "resize_time": 0,
        "restart_cnt": job.restart_count,
        "resv_name": None,
        "shared": None,
        "show_flags": ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"],
        "sockets_per_board": 0,
        "sockets_per_node": None,
        "start_time": view.start_time,
        "state_description": None,
        "state_reason": job.reason,
        "standard_error": sub.stderr or view.stdout,
        "standard_input": "/dev/null",
        "standard_output": view.stdout,
        "submit_time": job.submit_time,
        "suspend_time": 0,
        "system_comment": None,
        "time_limit": None if job.time_limit is None else job.time_limit,
        "time_minimum": 0,
        "threads_per_core": None,
        "tres_bind": None,
        "tres_freq": None,
        "tres_per_job": None,
        "tres_per_node": None,
        "tres_per_socket": None,
        "tres_per_task": None,
        "tres_req_str": view.tres,
        "tres_alloc_str": view.tres if job.start_time else None,
        "user_id": job.uid,
        "user_name": job.user,
        "wckey": None,
        "current_working_directory": sub.work_dir,
    }
    return data
