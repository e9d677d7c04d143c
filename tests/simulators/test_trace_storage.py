"""How a trace keeps its records (issue 17): each one's JSON line, the earlier lines compressed
together, decoded when read. What is read back is what a trace that kept every record as a
dict held, the file it writes is the same bytes, and many records take little memory."""

from __future__ import annotations

import json
import math
import subprocess
import tracemalloc
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulators.slurm import SlurmConfig, SlurmSim, spool, trace
from simulators.slurm.controller import JobState
from simulators.slurm.replay import replay
from simulators.slurm.trace import Record, Trace, dumps, env_subset, load

CONFIG = SlurmConfig(max_job_id=50, min_job_age=2)
JOB_SH = "#!/bin/sh\nsleep 5\n"
RUNNING = JobState.RUNNING


def json_dumps(value: Any) -> str:
    """What a trace line was made with before (and still is, to the byte)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


class DictTrace:
    """The trace as it was: every record through JSON and back, kept as a dict, written out by
    dumping each again."""

    def __init__(self, header: Record) -> None:
        self.records: list[Record] = [header]

    def add(self, record: Record) -> None:
        self.records.append(json.loads(json_dumps(record)))

    def lines(self) -> list[str]:
        return [json_dumps(record) for record in self.records]


# -- what records hold ---------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["", "\n", "\\", '"', "\u00e9", "\U0001f600", "\x00", "a\nb"])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=4)
    ),  # keys JSON makes strings
    max_leaves=10,
)
words = st.builds(  # no sbatch: its script operand would be a file to read
    lambda program, args: [program, *args],
    st.sampled_from(["squeue", "/usr/bin/scancel", "sacct", "scontrol"]),
    st.lists(st.text(max_size=10), max_size=4),
)
times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
texts = st.text(max_size=40)

calls = st.tuples(
    st.just("call"),
    words,
    st.none() | texts,
    st.dictionaries(st.sampled_from(["SLURM_TIME_FORMAT", "TZ", "PWD", "HOME"]), texts),
    st.none() | st.floats(min_value=0, max_value=100),
    texts,
    texts,
    st.integers(min_value=0, max_value=255),
    st.sampled_from([None, "before", "reply-lost"]),
)
drives = st.tuples(
    st.just("drive"),
    st.sampled_from(["finish", "fail", "advance"]),
    st.dictionaries(st.sampled_from(["job_id", "exit_code", "seconds", "state"]), values),
)
faults = st.tuples(
    st.just("fault"),
    st.sampled_from(["preempt", "purge_now"]),
    st.dictionaries(st.text(max_size=6), values, max_size=3),
    values,
)
reads = st.tuples(st.just("read"), st.integers(min_value=-300, max_value=300))
replaces = st.tuples(st.just("replace"), st.integers(min_value=-300, max_value=300), values)
truncates = st.tuples(st.just("truncate"), st.integers(min_value=1, max_value=300))
operations = st.lists(
    calls | calls | calls | drives | faults | reads | replaces | truncates, max_size=60
)


def apply(op: tuple[Any, ...], now: float, kept: Trace, oracle: DictTrace) -> None:
    """Do ``op`` on the trace and, as the old trace would have had it, on the oracle."""
    kind = op[0]
    if kind == "call":
        _, argv, stdin, env, limit, stdout, stderr, code, timeout = op
        call = kept.begin(now, argv, stdin, env, limit)
        done = subprocess.CompletedProcess(argv, code, stdout, stderr)
        if timeout is None:
            kept.end(call, done)
        else:
            kept.timed_out(call, timeout, 3.0, done if timeout == "reply-lost" else None)
        oracle.add(call)  # what the old trace got: the same record, after end or timed_out
    elif kind == "drive":
        _, name, args = op
        kept.drive(now, name, **args)
        oracle.add({"kind": "drive", "t": now, "op": name, "args": args})
    elif kind == "fault":
        _, name, args, result = op
        kept.fault(now, name, args, scheduled=False, result=result)
        fault = {"kind": "fault", "t": now, "name": name, "args": args, "scheduled": False}
        oracle.add({**fault, "result": result})
    elif kind == "read":
        index = op[1]
        if -len(oracle.records) <= index < len(oracle.records):
            assert kept.records[index] == oracle.records[index]
        else:
            with pytest.raises(IndexError):
                kept.records[index]
    elif kind == "replace":
        _, index, value = op
        if -len(oracle.records) <= index < len(oracle.records):
            record = kept.records[index]
            record["extra"] = value  # as replay adds an error to a record
            kept.replace(index, record)
            oracle.records[index]["extra"] = json.loads(json_dumps(value))
        else:
            with pytest.raises(IndexError):
                kept.replace(index, {"kind": "drive"})
    else:
        length = op[1]
        kept.truncate(length)
        del oracle.records[length:]


@settings(max_examples=150, deadline=None)
@given(operations, st.sampled_from([1, 40, 400, spool.CHUNK]))
def test_the_records_read_back_are_what_a_dict_keeping_trace_held(
    ops: list[tuple[Any, ...]], chunk: int
) -> None:
    """Calls, drives, faults (with keys JSON turns into strings), reads, changes and cuts, with
    chunks from one line to the default: the records, the lines and the file's text are the old
    trace's, after every step."""
    with mock.patch.object(spool, "CHUNK", chunk):
        kept = Trace(CONFIG, seed=3, start=1767225600.0)
        oracle = DictTrace(json.loads(json_dumps(kept.header)))
        for step, op in enumerate(ops):
            apply(op, 1767225600.0 + step, kept, oracle)
            assert len(kept.records) == len(oracle.records)
        assert list(kept.records) == oracle.records
        assert kept.records[:] == oracle.records
        assert kept.records[::-3] == oracle.records[::-3]
        assert list(reversed(kept.records)) == oracle.records[::-1]
        assert kept.lines() == oracle.lines()
        assert kept.lines(len(oracle.records) // 2) == oracle.lines()[len(oracle.records) // 2 :]
        assert kept.lines(-2) == oracle.lines()[-2:]
        assert kept.dumps() == "".join(line + "\n" for line in oracle.lines())
        assert load(kept.lines()) == oracle.records


@settings(max_examples=300, deadline=None)
@given(values)
def test_a_line_is_json_dumps_to_the_byte(value: Any) -> None:
    record = {"kind": "x", "value": value}
    assert dumps(record) == json_dumps(record)


@pytest.mark.parametrize("odd", [math.nan, math.inf, -math.inf, -0.0, 2**70, 1e-310, True])
def test_a_line_is_json_dumps_for_odd_numbers_too(odd: Any) -> None:
    record = {"b": [odd], "a": {"z": odd, "y": None}}
    assert dumps(record) == json_dumps(record)


def test_a_line_that_cannot_be_written_leaves_the_encoder_as_it_was() -> None:
    """The C encoder keeps the containers it is inside, to refuse cycles, and a failed line
    leaves them there: the same record, mended, would be a "cycle" (and they would stay alive)."""
    bad: dict[str, Any] = {"a": [{"b": object()}], "c": {"d": [1]}}
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps(bad)
    bad["a"][0]["b"] = 2
    assert dumps(bad) == json_dumps(bad) == '{"a":[{"b":2}],"c":{"d":[1]}}'
    cycle: dict[str, Any] = {"kind": "x"}
    cycle["self"] = [cycle]
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(cycle)
    cycle["self"] = [{}]
    assert dumps(cycle) == '{"kind":"x","self":[{}]}'


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["TZ", "PWD", "HOME", "SLURM_A", "SQUEUE_B", "X_SLURM"]), texts)
)
def test_the_environment_kept_is_the_same(env: dict[str, str]) -> None:
    old = {
        name: value
        for name, value in sorted(env.items())
        if name in trace.ENV_NAMES or name.startswith(trace.ENV_PREFIXES)
    }
    assert env_subset(env) == old
    assert list(env_subset(env)) == list(old)  # in name order, as it is written


# -- a simulator's trace -----------------------------------------------------------------------


def busy(sim: SlurmSim, jobs: int, scratch: Path) -> None:
    """Calls of every kind that answers (sbatch from stdin and from a file, behind ``env``;
    squeue, scontrol, scancel), drives and faults, with time passing."""
    script = scratch / "job.sh"
    script.write_text(JOB_SH)
    env = {"SLURM_TIME_FORMAT": "%s", "PWD": str(scratch), "HOME": "/root"}
    for i in range(jobs):
        sim.run(["sbatch", "--parsable", f"--job-name=dj-{i}"], stdin=JOB_SH, env=env)
        sim.run(["env", "TZ=UTC", "/usr/bin/sbatch", "--parsable", str(script)], env=env)
        sim.run(["squeue", "-h", "-o", "%i|%j|%T"], env=env)
        sim.run(["scontrol", "show", "job", str(i % 40 + 1)], env=env)
        sim.advance(7)
        if i % 5 == 0:
            sim.run(["scancel", str(i % 40 + 1)], env=env)
        running = [j for j, job in sim.controller.jobs.items() if job.state is RUNNING]
        if i % 7 == 3 and running:
            sim.finish(min(running))
        if i % 11 == 5:
            sim.faults.purge_now()


def test_chunks_do_not_change_the_bytes_or_the_replay(tmp_path: Path) -> None:
    """The same session with chunks of one line, of a few hundred characters and of the
    default: the same file, to the byte, and it replays with no difference."""
    written = []
    for chunk in (1, 300, spool.CHUNK):
        with mock.patch.object(spool, "CHUNK", chunk):
            sim = SlurmSim(CONFIG, seed=9)
            busy(sim, 60, tmp_path)
            path = tmp_path / f"trace-{chunk}.jsonl"
            sim.trace.write(path)
            written.append(path.read_bytes())
            assert written[-1] == sim.trace.dumps().encode("ascii")
            records = list(sim.trace.records)
            assert written[-1] == "".join(json_dumps(r) + "\n" for r in records).encode()
            assert any("script" in r for r in records)  # the sbatch behind env and a path
            assert replay(path).ok
    assert written[0] == written[1] == written[2]
    assert len(written[0]) > 2 * spool.CHUNK  # the default chunks were more than one


def test_a_trace_of_many_records_stays_small() -> None:
    """20,000 sbatch calls, each its own name and id: a dict a record took about 1.3 KB, the
    lines themselves over 200 bytes; kept, they take a few bytes each."""
    kept = Trace(CONFIG, seed=0, start=1767225600.0)
    records = 20_000

    def sbatch(i: int) -> None:
        argv = ["sbatch", "--parsable", f"--job-name=dj-BENCH{i}", "--comment=dispatch:s=1"]
        call = kept.begin(1767225600.0 + i // 100, argv, JOB_SH, {}, None)
        kept.end(call, subprocess.CompletedProcess(argv, 0, f"{i % 10_000 + 1}\n", ""))

    sbatch(0)  # what the first one imports is no record's
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(1, records):
            sbatch(i)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(kept.records) == records + 1
    assert len(kept.dumps()) > 200 * records
    assert grown < 20 * records, f"{grown / records:.0f} bytes a record"
    assert kept.records[12_345]["argv"][2] == "--job-name=dj-BENCH12344"


# -- the view --------------------------------------------------------------------------------


def test_records_are_a_read_only_view_decoded_when_read() -> None:
    sim = SlurmSim(CONFIG)
    view = sim.trace.records
    assert len(view) == 1 and view[0]["kind"] == "header" and view[-1] == sim.trace.header
    assert sim.trace.header["config"]["nodes"] == ["vm"]  # as a file gives it back
    sim.run(["sbatch", "--parsable"], stdin=JOB_SH)
    assert len(view) == 2 and view[-1]["stdout"] == "1\n"  # the same view, grown
    read = view[-1]
    read["stdout"] = "changed"
    assert view[-1]["stdout"] == "1\n" and view[-1] is not view[-1]
    with pytest.raises(IndexError):
        view[2]
    with pytest.raises(IndexError):
        view[-3]
    with pytest.raises(TypeError):
        view[0] = {}  # type: ignore[index]
    seen = []
    for record in view:  # as a list's iterator: what is recorded meanwhile comes too
        seen.append(record["kind"])
        if len(seen) == 2:
            sim.run(["squeue"])
    assert seen == ["header", "call", "call"]
    assert "3 trace records" in repr(view)


def test_replace_and_truncate_reach_into_the_compressed_chunks() -> None:
    with mock.patch.object(spool, "CHUNK", 100):
        kept = Trace(CONFIG, seed=0, start=0.0)
        for i in range(50):
            kept.drive(float(i), "advance", seconds=i)
        assert len(kept._spool.chunks) > 5  # what this test is about
        record = kept.records[7]
        record["error"] = "gone"
        kept.replace(7, record)
        assert kept.records[7] == {**record, "error": "gone"}
        assert [r["args"]["seconds"] for r in kept.records[6:9]] == [5, 6, 7]
        kept.truncate(20)
        assert len(kept.records) == 20 and kept.records[-1]["args"] == {"seconds": 18}
        kept.drive(99.0, "advance", seconds=99)
        assert [r["t"] for r in kept.records[-2:]] == [18.0, 99.0]
        kept.truncate(1)
        assert kept.lines() == [json_dumps(kept.header)]
        with pytest.raises(ValueError, match="keeps its header"):
            kept.truncate(0)


def test_the_header_is_as_a_file_holds_it(tmp_path: Path) -> None:
    sim = SlurmSim(SlurmConfig(nodes=("a", "b")), seed=4)
    sim.trace.write(tmp_path / "t.jsonl")
    assert load(tmp_path / "t.jsonl") == [sim.trace.header] == list(sim.trace.records)


def test_disabled_recording_keeps_the_header_only(tmp_path: Path) -> None:
    sim = SlurmSim(CONFIG)
    header = sim.trace.header
    sim.trace.enabled = False
    busy(sim, 3, tmp_path)
    assert list(sim.trace.records) == [header]


def test_a_replay_changes_what_it_has_just_recorded_through_the_trace(tmp_path: Path) -> None:
    """What a replay writes into records it has just made (:meth:`Trace.replace`): a drive it
    could not do gets its error; an sbatch of a script file keeps the recorded path, not the
    scratch copy the replay ran."""
    script = tmp_path / "job.sh"
    script.write_text(JOB_SH)
    sim = SlurmSim(CONFIG, seed=2)
    sim.run(["sbatch", "--parsable", str(script)])
    sim.advance(5)
    sim.finish(1)
    other = SlurmConfig(first_job_id=20, max_job_id=50, min_job_age=2)
    report = replay(sim.trace.lines(), config=other)
    drive = [d for d in report.differences if d.kind == "drive finish"]
    assert [(d.field, d.expected) for d in drive] == [("error", None)]
    assert report.records[-1]["error"] == drive[0].actual == "Invalid job id specified"
    assert report.records[1]["argv"] == ["sbatch", "--parsable", str(script)]
    assert replay(sim.trace.lines()).ok
