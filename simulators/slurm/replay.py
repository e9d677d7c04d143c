"""Replay of a trace (:mod:`simulators.slurm.trace`): :func:`replay` re-runs the causes a trace
holds (calls, drives, direct faults, schedules) on a fresh simulator, advancing its clock to
each recorded time, and reports every difference between the two traces; :func:`rebuild` gives
the simulator a trace leads to (the PATH shims restore a cluster with it); :func:`check_record`
refuses a record a replay could not take.

Replay imports recording, never the other way round: :mod:`simulators.slurm.trace` (the format
and the recording) imports nothing of this module.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import tempfile
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dispatch_core import VirtualClock
from simulators.slurm.config import SlurmConfig
from simulators.slurm.controller import Job, SlurmError
from simulators.slurm.faults import FAULTS, FaultError, check_arguments
from simulators.slurm.sim import SlurmSim
from simulators.slurm.trace import (
    CAUSES,
    DRIVES,
    KINDS,
    Record,
    advance,
    command_argv,
    config_from,
    load,
)


def check_record(record: Any, first: bool = False) -> None:
    """Refuse (``ValueError``, naming the field) a record a replay could not take: the wrong
    shape, a time or a number of seconds that is not finite, an unknown kind, op or fault.
    ``first``: the record is a trace's first line, its header. It does not replay anything."""
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
    records: Sequence[Record] = field(default_factory=list)

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
            failed = sim.trace.records[-1]
            failed["error"] = error.text
            sim.trace.replace(-1, failed)
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
            for index in range(count, len(sim.trace.records)):
                replayed = sim.trace.records[index]
                if replayed["kind"] == "call":
                    replayed["argv"] = list(record["argv"])
                    sim.trace.replace(index, replayed)


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
