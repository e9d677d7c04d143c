"""Figures for the record store (a benchmark, not a test: it prints, it asserts nothing).

    .venv/bin/python benchmarks/record_store.py [--appends 2000] [--jobs 300]
        [--finished 10000] [--unfinished 100] [--dir DIR]

1. appends per second on SQLite (WAL, synchronous=FULL: every append is one fsynced commit),
   one writer appending observations to one job, and whole jobs (header, intent, observed,
   terminal); the in-memory store beside it, for the cost of the rules and the encoding alone;
   on PostgreSQL too when ``DISPATCH_TEST_POSTGRES_DSN`` names a server (ci/postgres-up.sh),
   in a schema of its own, dropped after (each append one committed transaction);
2. recovery: with ``--finished`` finished and ``--unfinished`` unfinished jobs in the file, the
   time to open it, list the unfinished jobs (the partial index) and read their records.

The file goes in ``--dir`` (default: the system's temporary directory): put it on the disk
that will hold the real record, since the fsync is most of the cost.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from dispatch_core import JobID, JobSpec, ObjectRef, Observation, Plan, State
from dispatch_core.record import (
    HeaderRecord,
    IntentRecord,
    MemoryRecordStore,
    ObservationRecord,
    ObservedRecord,
    PostgresRecordStore,
    Record,
    RecordStore,
    SqliteRecordStore,
    TerminalRecord,
    spec_fingerprint,
)

T0 = 1_767_225_600.0
SPEC = JobSpec(command=("python", "train.py"), env={"SEED": "7"}, nodes=2)


def _job(store: RecordStore, finish: bool, now: float) -> JobID:
    """A job's header, intent and observed record, and its terminal one if ``finish``."""
    job = JobID()
    lease = store.acquire(job, "bench", now, 3600)
    ref = ObjectRef(
        backend="bench", uid=job.discovery_name(), id="1", submit=datetime(2026, 1, 1, tzinfo=UTC)
    )
    records: list[Record] = [
        HeaderRecord.of(Plan(job=job, backend="bench", spec=SPEC)),
        IntentRecord(
            submission=1,
            attempt=1,
            spec_fingerprint=spec_fingerprint(SPEC),
            adapter="memory",
            cluster="bench",
            tool_version="0.1.0",
            object_name=job.discovery_name(),
        ),
        ObservedRecord(submission=1, ref=ref, host="n1"),
    ]
    if finish:
        records.append(TerminalRecord(state=State.SUCCEEDED))
    for seq, record in enumerate(records):
        store.append(job, seq, record, lease, now)
    return job


def observations(store: RecordStore, appends: int) -> float:
    """Appends per second of observations to one job."""
    job = _job(store, finish=False, now=T0)
    lease = store.acquire(job, "bench", T0, 3600)
    (entry,) = store.records(job, start=2)
    ref = entry.record.ref  # type: ignore[union-attr]
    record = ObservationRecord(observation=Observation(ref=ref, state=State.RUNNING))
    started = time.perf_counter()
    for n in range(appends):
        store.append(job, 3 + n, record, lease, T0)
    return appends / (time.perf_counter() - started)


def whole_jobs(store: RecordStore, jobs: int) -> float:
    """Appends per second when writing whole jobs (four records each, with a lease each)."""
    started = time.perf_counter()
    for _ in range(jobs):
        _job(store, finish=True, now=T0)
    return 4 * jobs / (time.perf_counter() - started)


def recovery(directory: Path, finished: int, unfinished: int) -> tuple[float, float, float, int]:
    """Seconds to build the file (not fsynced), then to open it, list and read the unfinished."""
    path = directory / "recovery.db"
    started = time.perf_counter()
    with SqliteRecordStore(path) as store:
        store._db.execute("PRAGMA synchronous=OFF")  # building the history is not measured
        for n in range(finished + unfinished):
            _job(store, finish=n >= unfinished, now=T0)
    built = time.perf_counter() - started
    started = time.perf_counter()
    store = SqliteRecordStore(path)
    opened = time.perf_counter() - started
    started = time.perf_counter()
    read = sum(len(store.records(job)) for job in store.unfinished())
    listed = time.perf_counter() - started
    store.close()
    return built, opened, listed, read


def postgres(dsn: str, appends: int, jobs: int) -> None:
    """The append figures on PostgreSQL, in a schema made for the run and dropped after."""
    import psycopg
    from psycopg import sql

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    try:
        with PostgresRecordStore(dsn, schema=schema) as store:
            print(f"record store in PostgreSQL {store.dsn}, schema {schema}")
            rate = observations(store, appends)
            print(f"  PostgreSQL, one job, {appends} observations: {rate:,.0f} appends/s")
            rate = whole_jobs(store, jobs)
            print(f"  PostgreSQL, {jobs} whole jobs (4 records each): {rate:,.0f} appends/s")
    finally:
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--finished", type=int, default=10_000)
    parser.add_argument("--unfinished", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as name:
        directory = Path(name)
        print(f"record store in {directory} (SQLite, WAL, synchronous=FULL)")
        with SqliteRecordStore(directory / "appends.db") as store:
            rate = observations(store, args.appends)
            print(f"  SQLite, one job, {args.appends} observations: {rate:,.0f} appends/s")
            rate = whole_jobs(store, args.jobs)
            print(f"  SQLite, {args.jobs} whole jobs (4 records each): {rate:,.0f} appends/s")
        memory = MemoryRecordStore()
        rate = observations(memory, args.appends)
        print(f"  memory, one job, {args.appends} observations: {rate:,.0f} appends/s")
        built, opened, listed, read = recovery(directory, args.finished, args.unfinished)
        print(
            f"recovery with {args.finished:,} finished and {args.unfinished} unfinished jobs "
            f"(built in {built:.1f} s): open {opened * 1000:.1f} ms, list the unfinished and "
            f"read their {read} records {listed * 1000:.1f} ms"
        )
    dsn = os.environ.get("DISPATCH_TEST_POSTGRES_DSN", "")
    if dsn:
        postgres(dsn, args.appends, args.jobs)
    else:
        print("PostgreSQL: DISPATCH_TEST_POSTGRES_DSN is not set (ci/postgres-up.sh prints one)")


if __name__ == "__main__":
    main()
