"""Harnesses side by side: ``dispatch-conformance run --jobs N`` runs each harness of the run in
a process of its own, at most N at once.

A harness's checks stay in one process, in the run's order, as they run one harness after
another: a harness is never shared between processes, so its clusters, its scratch files and
its seeds are the same as in a serial run, and so are its results. The worker is a fork of the
runner (the harnesses loaded, nothing started yet); it runs every selected check, asks a fresh
backend for the capability answers, closes the harness, and sends back plain values, from
which the runner rebuilds the results in its own check objects. A worker that dies (a crash in
native code, a kill) is that harness's error, for every check it did not report.
"""

from __future__ import annotations

import gc
import multiprocessing
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Final, cast

from conformance.checks import Check, Outcome, Result, one_line
from conformance.runner import Answers, Loaded, capability_answers

Row = tuple[str, str, str, float, int, str, str, str, tuple[str, ...]]
"""A result as it crosses the process boundary: id, outcome, reason, duration, seed, replay,
adapter, skipped_for, lacking."""

_WORK: tuple[Sequence[Loaded], Sequence[Check], int] | None = None
"""What the forked workers inherit: the loaded harnesses, the selected checks, the seed."""

CONTEXT: Final = "fork"
"""Forked workers start at once and inherit the loaded harnesses (spawned ones would import
everything and load them again); every platform the kit supports offers it."""


@dataclass
class HarnessRun:
    """One harness's whole run, as its worker reported it."""

    loaded: Loaded
    results: list[Result]
    answers: Answers
    took: float
    closing: str
    """The complaint from closing the harness in its worker ('' when it closed cleanly)."""


ShardReport = tuple[list[Row], Answers | None, float, str]
"""What a worker sends back: its rows, the capability answers (shard 0's), its wall time and
the complaint from closing its harness."""


def _run_harness(index: int, shard: int, shards: int) -> ShardReport:
    """In a worker: shard ``shard`` of ``shards`` of the selected checks (every ``shards``-th,
    from the ``shard``-th) on harness ``index``, its answers (shard 0's only), then close it."""
    assert _WORK is not None, "a worker runs only in a fork of run_side_by_side"
    everyone, selected, seed = _WORK
    loaded = everyone[index]
    started = time.perf_counter()
    rows: list[Row] = []
    answers: Answers | None = None
    try:
        for check in selected[shard::shards]:
            r = loaded.run(check, seed)
            rows.append(
                (check.id, r.outcome.value, r.reason, r.duration, r.seed, r.replay, r.adapter,
                 r.skipped_for, r.lacking)
            )  # fmt: skip
        if shard == 0:
            answers = capability_answers(loaded)
        took = time.perf_counter() - started
    finally:
        # Interrupted too (Ctrl-C, or the runner's SIGTERM): the harness releases what it
        # holds (a cluster of containers, jobs), and no second signal stops it half-way.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        closing = loaded.close()
        # A worker ends in os._exit, which runs no atexit hook: what the harness let go of
        # must be collected now, so that its weakref finalizers (scratch directories,
        # processes) run.
        gc.collect()
    return rows, answers, took, closing


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _rebuilt(loaded: Loaded, rows: list[Row], by_id: dict[str, Check]) -> list[Result]:
    return [
        Result(by_id[id_], loaded.label, Outcome(outcome), reason, duration, seed, replay, adapter,
               skipped_for, lacking)
        for id_, outcome, reason, duration, seed, replay, adapter, skipped_for, lacking in rows
    ]  # fmt: skip


def _ended_early(loaded: Loaded, selected: Sequence[Check], seed: int, why: str) -> HarnessRun:
    reason = f"harness error: the process running harness {loaded.label} ended early: {why}"
    results = [Result(c, loaded.label, Outcome.ERROR, reason, 0.0, seed) for c in selected]
    answers = Answers(loaded.label, note=f"no answers: {reason}", blame="harness")
    return HarnessRun(loaded, results, answers, 0.0, "")


def _worker(index: int, shard: int, shards: int, send: Connection) -> None:
    """A worker's whole life: run harness ``index`` and send what :func:`_run_harness` gives
    (or the one line of what it raised). The runner's SIGTERM (it was interrupted) ends the
    worker through its ``finally`` clauses, so that its harness is closed."""
    signal.signal(signal.SIGTERM, _stop)
    try:
        send.send(("ran", _run_harness(index, shard, shards)))
    except BaseException as error:  # even SystemExit: the runner must hear of it
        send.send(("raised", one_line(f"{type(error).__name__}: {error}")))
    finally:
        send.close()


def run_side_by_side(
    loaded: Sequence[Loaded], selected: Sequence[Check], seed: int, jobs: int, shards: int = 1
) -> Iterator[HarnessRun]:
    """Each harness's run, in the order they end, at most ``jobs`` workers at once. Each worker
    is a process of its own (not a pool's), so that one that dies takes no other harness with
    it. With ``shards`` > 1 a harness's checks are dealt over that many workers, each with an
    instance of the harness of its own (a real cluster harness makes a cluster in each); the
    harness's run is theirs together, in the run's check order, once the last has ended."""
    global _WORK
    by_id = {check.id: check for check in selected}
    order = {check.id: n for n, check in enumerate(selected)}
    _WORK = (loaded, selected, seed)
    context = multiprocessing.get_context(CONTEXT)
    shards = max(1, min(shards, len(selected)))
    waiting = [(index, shard) for index in range(len(loaded)) for shard in range(shards)]
    running: dict[Connection, tuple[BaseProcess, int, int]] = {}
    parts: dict[int, list[tuple[str, object]]] = {index: [] for index in range(len(loaded))}
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                index, shard = waiting.pop(0)
                receive, send = context.Pipe(duplex=False)
                started: BaseProcess = context.Process(
                    target=_worker,
                    args=(index, shard, shards, send),
                    name=f"conformance {loaded[index].label} {shard + 1}/{shards}",
                )
                started.start()
                send.close()  # the worker holds the only write end: its exit ends the pipe
                running[receive] = (started, index, shard)
            for ready in wait(list(running)):
                assert isinstance(ready, Connection)
                process, index, shard = running.pop(ready)
                try:
                    kind, payload = ready.recv()
                except EOFError:  # it ended without a word: killed, or crashed in native code
                    kind, payload = "died", f"exit status {process.exitcode}"
                ready.close()
                process.join()
                parts[index].append((kind, payload))
                if len(parts[index]) == shards:
                    yield _joined(loaded[index], parts.pop(index), selected, seed, by_id, order)
    finally:
        _WORK = None
        for left, _, _ in running.values():  # interrupted: no worker outlives the run
            left.terminate()
            left.join()


def _joined(
    one: Loaded,
    parts: list[tuple[str, object]],
    selected: Sequence[Check],
    seed: int,
    by_id: dict[str, Check],
    order: dict[str, int],
) -> HarnessRun:
    """A harness's run from its shards' reports: any shard that did not report makes the
    whole harness's run an error (its checks were not all run)."""
    for kind, payload in parts:
        if kind == "raised":
            return _ended_early(one, selected, seed, f"it raised {payload}")
        if kind == "died":
            return _ended_early(one, selected, seed, str(payload))
    rows: list[Row] = []
    answers: Answers | None = None
    took, closings = 0.0, []
    for _, payload in parts:
        shard_rows, shard_answers, shard_took, closing = cast(ShardReport, payload)
        rows += shard_rows
        answers = shard_answers if shard_answers is not None else answers
        took = max(took, shard_took)
        if closing:
            closings.append(closing)
    rows.sort(key=lambda row: order[row[0]])
    assert answers is not None, "shard 0 gives the capability answers"
    return HarnessRun(one, _rebuilt(one, rows, by_id), answers, took, "; ".join(closings))


__all__ = ["HarnessRun", "run_side_by_side"]
