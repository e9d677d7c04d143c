"""The trace of one simulated cluster: every ``SlurmSim.run`` call and every fault, in order, as
JSON Lines that can be replayed.

Each line is one JSON object with sorted keys (so the same session gives the same bytes):

- ``{"kind": "header", "config": {...}, "seed": 0, "start": <clock>, "version": 1}`` first;
- ``{"kind": "call", "t": <virtual time>, "argv": [...], "stdin": ..., "env": {...},
  "stdout": ..., "stderr": ..., "returncode": ...}``; a call that timed out has
  ``"timeout": "before"`` (it never took effect) or ``"reply-lost"`` (it did; its output is kept
  but the caller never saw it) and ``"waited"``, the virtual seconds the caller waited. ``env``
  holds only what Slurm's commands read (``SLURM_*``, ``SBATCH_*``, ``SQUEUE_*``, ``SACCT_*``,
  ``SCANCEL_*``, ``SCONTROL_*``, ``PWD``, ``TZ``), never the rest of the caller's environment.
  An sbatch call that names a script file also keeps the script (``script``, and its index in
  ``argv`` as ``script_arg``), so the call replays after the file is gone;
- ``{"kind": "drive", "t": ..., "op": "finish"|"fail"|"run_for"|"advance", "args": {...}}``: what
  a test decided (``SlurmSim.finish`` and friends);
- ``{"kind": "fault", "t": ..., "name": ..., "args": {...}, "scheduled": false, ...}``: a fault
  (:mod:`simulators.slurm.faults`), with its ``result``, ``error`` or ``skipped`` reason;
- ``{"kind": "schedule", "t": ..., "seed": ..., "args": {...}, "plan": [...]}``: a seeded fault
  schedule was installed; the faults it fires later appear with ``"scheduled": true``;
- ``{"kind": "execution", "t": ..., "on": "start"|"signal", "job_id": ..., "seq": ...,
  "restart_count": ..., "seconds": ..., "exit_code": ...}``: a real batch script ran (an execute
  mode that records, as the PATH shims' ``--execute``) and its job was set to end ``seconds``
  after its start with ``exit_code``. It is an outcome no seed can give: a replay applies it at
  the same event of the same job instead of running the script again.

How a trace is kept in memory: each record as its line, the text a file holds, written when the
record is made; the last lines as they are, the earlier ones zlib-compressed in chunks (lines of
one session repeat each other: 100,000 calls of ``benchmarks/slurm_sim.py`` take under 1 MiB,
where a dict a record took 157 MiB). :attr:`Trace.records` is a read-only sequence that decodes
a record when it is read, a new dict each time; :meth:`Trace.replace` and
:meth:`Trace.truncate` change what was recorded.

This module is the format and the recording: :class:`Trace`, what a line holds, :func:`load`;
:func:`advance`, time passing as a recorded step. It imports nothing that replays:
:mod:`simulators.slurm.replay` re-runs the causes (calls, drives, direct faults, schedules) on a
fresh simulator, advancing its clock to each recorded time, and reports every difference between
the two traces; it also checks a record before it is replayed (``check_record``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, overload

from simulators.slurm.config import SlurmConfig
from simulators.slurm.spool import LineSpool

if TYPE_CHECKING:
    from simulators.slurm.controller import Job
    from simulators.slurm.sim import SlurmSim

TRACE_VERSION: Final = 1
ENV_PREFIXES: Final = ("SLURM_", "SBATCH_", "SQUEUE_", "SACCT_", "SCANCEL_", "SCONTROL_")
ENV_NAMES: Final = frozenset({"PWD", "TZ"})
CAUSES: Final = frozenset({"call", "drive", "schedule"})

Record = dict[str, Any]


def env_subset(env: Mapping[str, str]) -> dict[str, str]:
    """The part of an environment Slurm's commands read, and so the part a trace keeps (in name
    order; only that part is sorted)."""
    if not env:
        return {}
    return dict(
        sorted(
            (name, value)
            for name, value in env.items()
            if name in ENV_NAMES or name.startswith(ENV_PREFIXES)
        )
    )


def split_env_prefix(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """The assignments of a leading ``env NAME=value ...`` and the command after it: how an
    adapter sets SLURM_TIME_FORMAT or TZ on the far side of any transport."""
    assignments: dict[str, str] = {}
    words = list(argv)
    while words and words[0].rsplit("/", 1)[-1] == "env":
        words = words[1:]
        while words and "=" in words[0] and not words[0].startswith("="):
            name, _, value = words[0].partition("=")
            assignments[name] = value
            words = words[1:]
    return assignments, words


def command_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` without a leading ``env NAME=value ...``."""
    return split_env_prefix(argv)[1]


_ENCODER: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)
_MARKERS: Final[dict[int, Any]] = {}  # the C encoder's circular-reference check


def _c_encoder() -> Callable[[object, int], Any] | None:
    """What ``_ENCODER.encode`` makes for each call (``json.encoder``'s C encoder with its
    options), made once; None without json's C accelerator."""
    try:
        from _json import make_encoder
    except ImportError:  # pragma: no cover (CPython has it)
        return None
    return make_encoder(
        _MARKERS, _ENCODER.default, encode_basestring_ascii, None, ":", ",", True, False, True
    )


_ITERENCODE: Final = _c_encoder()


def dumps(record: Record) -> str:
    """One trace line (without the newline): sorted keys, ASCII, no spaces.

    The same text as ``json.dumps(record, sort_keys=True, separators=(",", ":"),
    ensure_ascii=True)``, from the C encoder ``json.dumps`` itself would use, made once rather
    than for every line (it is on the path of every simulated command)."""
    if _ITERENCODE is None:  # no C accelerator: json's pure-Python encoder
        return _ENCODER.encode(record)
    try:
        return "".join(_ITERENCODE(record, 0))
    except BaseException:
        _MARKERS.clear()  # a failed encoding leaves (and keeps alive) what it was inside
        raise


class Records(Sequence[Record]):
    """The records of a :class:`Trace`, decoded from its lines when read: each read is a new
    dict (as :func:`load` gives), so changing it changes nothing in the trace
    (:meth:`Trace.replace` does). A view: it grows as the trace does."""

    __slots__ = ("_spool",)

    def __init__(self, spool: LineSpool) -> None:
        self._spool = spool

    def __len__(self) -> int:
        return len(self._spool)

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        if isinstance(index, slice):
            return [json.loads(line) for line in self._spool[index]]
        record: Record = json.loads(self._spool[index])
        return record

    def __iter__(self) -> Iterator[Record]:
        # as the spool's (and a list's) iterator: what is appended meanwhile comes too
        return map(json.loads, self._spool)

    def __repr__(self) -> str:
        return f"<{len(self)} trace records>"


class Trace:
    """Everything one :class:`~simulators.slurm.SlurmSim` was asked and answered, in order.

    What a trace keeps is each record's line, as the file holds it (:func:`dumps`): the last
    ones as they are, the earlier ones compressed (a session's lines repeat each other: tens of
    bytes a call). :attr:`records` decodes them when read. ``enabled = False`` stops recording
    (for benchmarks that want the figures without it)."""

    def __init__(self, config: SlurmConfig, seed: int, start: float) -> None:
        self.enabled = True
        self._spool = LineSpool()
        self._records = Records(self._spool)
        header: Record = {
            "kind": "header",
            "version": TRACE_VERSION,
            "config": _config_to_json(config),
            "seed": seed,
            "start": start,
        }
        self._spool.append(_canonical(header))

    @property
    def records(self) -> Records:
        """Every record so far, the header first: a read-only sequence of dicts."""
        return self._records

    # -- recording ---------------------------------------------------------------------------

    def begin(
        self,
        now: float,
        argv: Sequence[str],
        stdin: str | None,
        env: Mapping[str, str],
        timeout: float | None,
    ) -> Record:
        """A call starts: its record, appended when it ends (:meth:`end`, :meth:`timed_out`)."""
        call: Record = {
            "kind": "call",
            "t": now,
            "argv": list(argv),
            "stdin": stdin,
            "env": env_subset(env),
        }
        if timeout is not None:
            call["limit"] = timeout
        if self.enabled:
            script = _script_operand(argv)
            if script is not None:
                index, text = script
                call["script_arg"], call["script"] = index, text
        return call

    def end(self, call: Record, completed: subprocess.CompletedProcess[str]) -> None:
        call["stdout"] = completed.stdout
        call["stderr"] = completed.stderr
        call["returncode"] = completed.returncode
        if self.enabled:
            # A call's record is canonical as it is (see _canonical): its keys are the format's,
            # its env's are names, and argv is a list of words.
            self._spool.append(dumps(call))

    def timed_out(
        self,
        call: Record,
        kind: str,
        waited: float = 0.0,
        completed: subprocess.CompletedProcess[str] | None = None,
    ) -> subprocess.TimeoutExpired:
        """Record that ``call`` timed out (``before`` it took effect, or its ``reply-lost``) and
        return the exception a transport would raise."""
        call["timeout"] = kind
        call["waited"] = waited
        if completed is not None:
            call.update(
                stdout=completed.stdout, stderr=completed.stderr, returncode=completed.returncode
            )
        if self.enabled:
            self._spool.append(dumps(call))
        return subprocess.TimeoutExpired(call["argv"], waited)

    def drive(self, now: float, op: str, **args: Any) -> None:
        """A test decided something (a job's end, its run time, time passing)."""
        self._append({"kind": "drive", "t": now, "op": op, "args": args})

    def fault(self, now: float, name: str, args: Mapping[str, Any], **outcome: Any) -> None:
        record: Record = {"kind": "fault", "t": now, "name": name, "args": dict(args)}
        record.update(outcome)
        self._append(record)

    def schedule(self, now: float, seed: int, args: Mapping[str, Any], plan: list[Record]) -> None:
        self._append({"kind": "schedule", "t": now, "seed": seed, "args": dict(args), "plan": plan})

    def execution(self, now: float, on: str, job: Job, seconds: int, exit_code: int) -> None:
        """A real batch script ran at ``job``'s event ``on`` (``start`` or ``signal``): the job
        ends ``seconds`` after its start with ``exit_code``."""
        self._append(
            {
                "kind": "execution",
                "t": now,
                "on": on,
                "job_id": job.job_id,
                "seq": job.seq,
                "restart_count": job.restart_count,
                "seconds": seconds,
                "exit_code": exit_code,
            }
        )

    def _append(self, record: Record) -> None:
        if self.enabled:
            self._spool.append(_canonical(record))

    # -- changing what was recorded -----------------------------------------------------------

    def replace(self, index: int, record: Record) -> None:
        """Record ``index`` (negative from the end) becomes ``record`` (a replay that records
        what the original did: an error, a script's original path)."""
        self._spool.replace(index, _canonical(record))

    def truncate(self, length: int) -> None:
        """Forget every record after the first ``length`` (at least 1: the header stays)."""
        if length < 1:
            raise ValueError(f"a trace keeps its header: truncate(length >= 1), not {length}")
        self._spool.truncate(min(length, len(self._spool)))

    # -- output ------------------------------------------------------------------------------

    @property
    def header(self) -> Record:
        return self._records[0]

    def lines(self, start: int = 0) -> list[str]:
        """The lines of the records from ``start`` on (0: all, the header first; negative: from
        the end, as ``records[start:]``), without their newlines."""
        spool = self._spool
        return spool.lines(max(start + len(spool), 0) if start < 0 else start)

    def dumps(self) -> str:
        return b"".join(self._spool.blocks()).decode("utf-8", "surrogateescape")

    def write(self, path: str | os.PathLike[str]) -> None:
        with open(path, "wb") as file:
            for block in self._spool.blocks():
                file.write(block)


def _canonical(record: Record) -> str:
    """``record``'s line as a file keeps it: through JSON and back first, as :func:`load` reads
    it, so that keys JSON makes strings (``{10: ..., 9: ...}``) are sorted as the strings they
    become. A call's record needs no round trip (:meth:`Trace.end`): it has no such keys."""
    return dumps(json.loads(dumps(record)))


def load(source: str | os.PathLike[str] | Iterable[str]) -> list[Record]:
    """The records of a trace: a path to a ``.jsonl`` file, or its lines. A line that is not a
    JSON object raises ``ValueError`` naming its number."""
    if isinstance(source, str | os.PathLike):
        text = Path(source).read_text(encoding="ascii")
        lines: Iterable[str] = text.splitlines()
    else:
        lines = source
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise ValueError(f"line {number}: not JSON ({error})") from None
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            raise ValueError(f"line {number}: not a trace record (an object with a kind)")
        records.append(record)
    if not records or records[0].get("kind") != "header":
        raise ValueError("a trace starts with its header line")
    return records


KINDS: Final = frozenset({"header", "call", "drive", "fault", "schedule", "execution"})
DRIVES: Final = frozenset({"advance", "finish", "fail", "run_for"})


def config_from(header: Mapping[str, Any]) -> SlurmConfig:
    """The :class:`SlurmConfig` a trace header names."""
    values: dict[str, Any] = {
        name: tuple(value) if isinstance(value, list) else value
        for name, value in header["config"].items()
    }
    return SlurmConfig(**values)


def _config_to_json(config: SlurmConfig) -> dict[str, Any]:
    return {item.name: getattr(config, item.name) for item in dataclasses.fields(config)}


def _script_operand(argv: Sequence[str]) -> tuple[int, str] | None:
    """For ``sbatch [options] script [args]``: the script's index in ``argv`` and its text."""
    if not argv or not argv[0].endswith(("sbatch", "env")):
        return None  # neither sbatch nor env: not an sbatch call (on every call: keep it quick)
    from simulators.slurm.commands.getopt import UsageError, parse
    from simulators.slurm.commands.sbatch import SPEC

    words = command_argv(argv)
    if not words or words[0].rsplit("/", 1)[-1] != "sbatch":
        return None
    if all(word.startswith("-") and word not in ("-", "--") for word in words[1:]):
        return None  # options alone (getopt stops at the first operand): the script is stdin
    try:
        parsed = parse("sbatch", words[1:], SPEC, permute=False)
    except UsageError:
        return None
    if parsed.has("wrap") or not parsed.operands:
        return None
    path = parsed.operands[0]
    index = len(argv) - len(parsed.operands)  # the operands are the tail of argv
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return index, handle.read()
    except OSError:
        return None


def advance(sim: SlurmSim, seconds: float) -> None:
    """Let ``seconds`` pass on ``sim`` and keep it in the trace (``SlurmSim.advance`` alone is
    not recorded: a replay gets there by the times of the next records; a cluster whose state
    lives in its trace, as behind the PATH shims, needs the step itself). ``seconds`` must be a
    finite number >= 0 (``ValueError`` otherwise, and nothing is recorded)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ValueError(f"advance wants a number of seconds, not {seconds!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"advance wants a finite number of seconds >= 0, not {seconds!r}")
    sim.trace.drive(sim.clock.now(), "advance", seconds=seconds)
    sim.advance(seconds)
