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

:func:`replay` re-runs the causes (calls, drives, direct faults, schedules) on a fresh simulator,
advancing its clock to each recorded time, and reports every difference between the two traces.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import subprocess
import tempfile
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from simulators.slurm.config import SlurmConfig

if TYPE_CHECKING:
    from simulators.slurm.controller import Job
    from simulators.slurm.sim import SlurmSim

TRACE_VERSION: Final = 1
ENV_PREFIXES: Final = ("SLURM_", "SBATCH_", "SQUEUE_", "SACCT_", "SCANCEL_", "SCONTROL_")
ENV_NAMES: Final = frozenset({"PWD", "TZ"})
CAUSES: Final = frozenset({"call", "drive", "schedule"})

Record = dict[str, Any]


def env_subset(env: Mapping[str, str]) -> dict[str, str]:
    """The part of an environment Slurm's commands read, and so the part a trace keeps."""
    return {
        name: value
        for name, value in sorted(env.items())
        if name in ENV_NAMES or name.startswith(ENV_PREFIXES)
    }


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


def dumps(record: Record) -> str:
    """One trace line (without the newline): sorted keys, ASCII, no spaces."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


class Trace:
    """Everything one :class:`~simulators.slurm.SlurmSim` was asked and answered, in order.

    ``enabled = False`` stops recording (for benchmarks that do not want the memory)."""

    def __init__(self, config: SlurmConfig, seed: int, start: float) -> None:
        self.enabled = True
        self.records: list[Record] = [
            {
                "kind": "header",
                "version": TRACE_VERSION,
                "config": _config_to_json(config),
                "seed": seed,
                "start": start,
            }
        ]

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
        call.update(
            stdout=completed.stdout, stderr=completed.stderr, returncode=completed.returncode
        )
        self._append(call)

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
        self._append(call)
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
            # Through JSON and back: what is kept is exactly what a file would hold.
            self.records.append(json.loads(dumps(record)))

    # -- output ------------------------------------------------------------------------------

    @property
    def header(self) -> Record:
        return self.records[0]

    def lines(self) -> list[str]:
        return [dumps(record) for record in self.records]

    def dumps(self) -> str:
        return "".join(line + "\n" for line in self.lines())

    def write(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(self.dumps(), encoding="ascii")


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


def check_record(record: Any, first: bool = False) -> None:
    """Refuse (``ValueError``, naming the field) a record a replay could not take: the wrong
    shape, a time or a number of seconds that is not finite, an unknown kind, op or fault.
    ``first``: the record is a trace's first line, its header. It does not replay anything."""
    from simulators.slurm.faults import FAULTS, FaultError, check_arguments

    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    kind = record.get("kind")
    if first != (kind == "header"):
        raise ValueError("a trace starts with its header line, and has only one")
    if kind not in KINDS:
        raise ValueError(f"unknown record kind {kind!r}")

    def number(value: Any, what: str, minimum: float = 0) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{kind} {what} is not a number: {value!r}")
        if not math.isfinite(value) or value < minimum:
            raise ValueError(f"{kind} {what} must be a finite number >= {minimum:g}: {value!r}")

    def integer(value: Any, what: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{kind} {what} is not an integer: {value!r}")

    def mapping(value: Any, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ValueError(f"{kind} {what} is not an object: {value!r}")
        return value

    if kind == "header":
        number(record.get("start"), "start")
        integer(record.get("seed"), "seed")
        try:
            config_from(record)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"header config: {error}") from None
        return
    number(record.get("t"), "t")
    if kind == "call":
        argv = record.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(w, str) for w in argv):
            raise ValueError(f"call argv is not a list of words: {argv!r}")
        if not isinstance(record.get("stdin"), str | None):
            raise ValueError("call stdin is not text")
        env = mapping(record.get("env"), "env")
        if not all(isinstance(value, str) for value in env.values()):
            raise ValueError("call env holds a value that is not text")
        if record.get("limit") is not None:
            number(record["limit"], "limit")
        if "script" in record:
            integer(record.get("script_arg"), "script_arg")
            if not 0 <= record["script_arg"] < len(argv) or not isinstance(record["script"], str):
                raise ValueError("call script does not match its argv")
    elif kind == "drive":
        op, args = record.get("op"), mapping(record.get("args"), "args")
        if op not in DRIVES:
            raise ValueError(f"unknown drive op {op!r}")
        if op == "advance":
            number(args.get("seconds"), "advance seconds")
        else:
            integer(args.get("job_id"), f"{op} job_id")
            integer(args.get("exit_code"), f"{op} exit_code")
        if op == "run_for":
            integer(args.get("seconds"), "run_for seconds")
            number(args["seconds"], "run_for seconds")
    elif kind == "fault":
        name, args = record.get("name"), mapping(record.get("args"), "args")
        if name not in FAULTS:
            raise ValueError(f"unknown fault {name!r}")
        if not isinstance(record.get("scheduled"), bool):
            raise ValueError("fault scheduled is not true or false")
        try:
            check_arguments(name, args)
        except FaultError as error:
            raise ValueError(f"fault {error.text}") from None
    elif kind == "schedule":
        integer(record.get("seed"), "seed")
        mapping(record.get("args"), "args")
        if not isinstance(record.get("plan"), list):
            raise ValueError("schedule plan is not a list")
    else:  # execution
        if record.get("on") not in ("start", "signal"):
            raise ValueError(f"execution on {record.get('on')!r}")
        for key in ("job_id", "seq", "restart_count", "seconds", "exit_code"):
            integer(record.get(key), key)


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
    from simulators.slurm.commands.getopt import UsageError, parse
    from simulators.slurm.commands.sbatch import SPEC

    words = command_argv(argv)
    if not words or words[0].rsplit("/", 1)[-1] != "sbatch":
        return None
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


# -- replay -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One field of one trace record that the replay answered differently."""

    index: int
    kind: str
    field: str
    expected: Any
    actual: Any

    def __str__(self) -> str:
        return (
            f"#{self.index} {self.kind} {self.field}: "
            f"expected {self.expected!r}, got {self.actual!r}"
        )


@dataclass
class ReplayReport:
    """What a replay found: ``differences`` is empty when every answer was the same."""

    differences: list[Difference] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences

    def __str__(self) -> str:
        if self.ok:
            return f"replayed {len(self.records) - 1} records: no difference"
        lines = [f"{len(self.differences)} difference(s):"]
        lines.extend(f"  {difference}" for difference in self.differences)
        return "\n".join(lines)


def replay(
    source: str | os.PathLike[str] | Iterable[str],
    config: SlurmConfig | None = None,
    seed: int | None = None,
) -> ReplayReport:
    """Re-run a recorded trace on a fresh simulator (``config`` and ``seed`` default to the
    header's) and report every difference between the recorded and the replayed records."""
    records = load(source)
    sim = rebuild(records, config=config, seed=seed)
    report = ReplayReport(records=sim.trace.records)
    report.differences = compare(records, sim.trace.records)
    return report


def rebuild(
    records: Sequence[Record],
    config: SlurmConfig | None = None,
    seed: int | None = None,
    skip_reads: bool = False,
) -> SlurmSim:
    """A fresh simulator that has been through the causes ``records`` hold.

    With ``skip_reads``, calls that only read (squeue, sacct, ``scontrol show``) and answered
    normally are not run again: the state comes out the same (reads change nothing, and the
    events they let happen happen at the next cause, in the same order), but the rebuilt trace
    lacks them, so it is for restoring a cluster (the PATH shims), not for :func:`replay`."""
    from dispatch_core import VirtualClock
    from simulators.slurm.sim import SlurmSim

    header = records[0]
    sim = SlurmSim(
        config if config is not None else config_from(header),
        seed=header["seed"] if seed is None else seed,
        clock=VirtualClock(header["start"]),
    )
    pending = _replay_executions(sim, [r for r in records if r["kind"] == "execution"])
    last = float(header["start"])
    for record in records[1:]:
        last = max(last, float(record["t"]))
        if skip_reads and _only_reads(record):
            continue
        if record["kind"] in CAUSES or (record["kind"] == "fault" and not record["scheduled"]):
            _advance_to(sim, float(record["t"]))
            apply(sim, record)
    _advance_to(sim, last)
    sim.controller.sync()
    pending.clear()  # what the replay did not reach never applies to what comes after it
    return sim


def _replay_executions(
    sim: SlurmSim, records: list[Record]
) -> dict[tuple[Any, ...], deque[Record]]:
    """Apply recorded script outcomes (``execution`` records) at the event and job they name,
    as the execute mode that recorded them did, and record them again."""
    pending: dict[tuple[Any, ...], deque[Record]] = {}
    for record in records:
        key = (record["on"], record["job_id"], record["seq"], record["restart_count"])
        pending.setdefault(key, deque()).append(record)
    if not pending:
        return pending

    def observe(event: str, job: Job) -> None:
        queue = pending.get((event, job.job_id, job.seq, job.restart_count))
        if queue:
            outcome = queue.popleft()
            seconds, code = outcome["seconds"], outcome["exit_code"]
            sim.controller.set_run_time(job, seconds, code)
            sim.trace.execution(sim.controller.now, event, job, seconds, code)

    sim.controller.observe(observe)
    return pending


def _only_reads(record: Record) -> bool:
    """A call that answered normally and cannot have changed the cluster."""
    if record["kind"] != "call" or "timeout" in record:
        return False
    words = command_argv(record["argv"])
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program in ("squeue", "sacct"):
        return True
    verbs = [word for word in words[1:] if not word.startswith("-")]
    return program == "scontrol" and bool(verbs) and verbs[0].lower() == "show"


def apply(sim: SlurmSim, record: Record) -> None:
    """Do again what one cause record did."""
    from simulators.slurm.controller import SlurmError
    from simulators.slurm.faults import FAULTS, FaultError

    kind = record["kind"]
    if kind == "call":
        _replay_call(sim, record)
    elif kind == "drive":
        op, args = record["op"], dict(record["args"])
        try:
            if op == "advance":
                advance(sim, args["seconds"])
            elif op == "finish":
                sim.finish(args["job_id"], args["exit_code"])
            elif op == "fail":
                sim.fail(args["job_id"], args["state"], args["exit_code"])
            elif op == "run_for":
                sim.run_for(args["job_id"], args["seconds"], args["exit_code"])
            else:
                raise ValueError(f"unknown drive op {op!r}")
        except SlurmError as error:
            # Recorded only on success: keep the traces aligned and show the difference.
            sim.trace.drive(sim.clock.now(), op, **args)
            sim.trace.records[-1]["error"] = error.text
    elif kind == "fault":
        name = record["name"]
        if name not in FAULTS:
            raise ValueError(f"unknown fault {name!r}")
        with contextlib.suppress(SlurmError, FaultError):  # the fault recorded its error
            getattr(sim.faults, name)(**record["args"])
    elif kind == "schedule":
        sim.faults.schedule(record["seed"], **record["args"])
    else:
        raise ValueError(f"unknown record kind {kind!r}")


def _replay_call(sim: SlurmSim, record: Record) -> None:
    argv = list(record["argv"])
    script = record.get("script")
    with tempfile.TemporaryDirectory(prefix="slurm-replay-") as scratch:
        if script is not None:
            index = record["script_arg"]
            # The same file name (sbatch names the job after it), in a scratch directory.
            copy = Path(scratch) / Path(argv[index]).name
            copy.write_text(script, encoding="utf-8", errors="surrogateescape")
            argv[index] = str(copy)
        count = len(sim.trace.records)
        with contextlib.suppress(subprocess.TimeoutExpired):  # recorded by the run
            sim.run(argv, stdin=record["stdin"], env=record["env"], timeout=record.get("limit"))
        if script is not None:
            for replayed in sim.trace.records[count:]:
                if replayed["kind"] == "call":
                    replayed["argv"] = list(record["argv"])


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


def _advance_to(sim: SlurmSim, when: float) -> None:
    now = sim.clock.now()
    if when > now:
        advance = getattr(sim.clock, "advance", None)
        if advance is None:
            raise TypeError("replay needs a clock that can be advanced")
        advance(when - now)


def compare(expected: Sequence[Record], actual: Sequence[Record]) -> list[Difference]:
    """Every field that differs between two traces, record by record (headers excluded)."""
    differences: list[Difference] = []
    for index in range(1, max(len(expected), len(actual))):
        if index >= len(actual):
            differences.append(
                Difference(index, expected[index]["kind"], "(record)", expected[index], None)
            )
            continue
        if index >= len(expected):
            differences.append(
                Difference(index, actual[index]["kind"], "(record)", None, actual[index])
            )
            continue
        want, got = expected[index], actual[index]
        label = _label(want)
        for key in sorted(set(want) | set(got)):
            if want.get(key) != got.get(key):
                differences.append(Difference(index, label, key, want.get(key), got.get(key)))
    return differences


def _label(record: Record) -> str:
    kind = str(record.get("kind"))
    if kind == "call":
        return "call " + " ".join(str(word) for word in record.get("argv", []))
    if kind == "drive":
        return f"drive {record.get('op')}"
    if kind == "fault":
        return f"fault {record.get('name')}"
    return kind
