"""The embedded default record store: one SQLite file (stdlib ``sqlite3``).

The file is in WAL mode with ``synchronous=FULL``: a commit is on disk (the WAL fsynced) when
``append`` returns, and readers never block the writer. Every write is one ``BEGIN IMMEDIATE``
transaction (the write lock taken first, then the lease and the seq checked, then the entry and
the job's summary written), so a process killed anywhere leaves the whole entry or none of it.

The schema is versioned by ``PRAGMA user_version``, and every open runs the migration steps
from the file's version to :data:`SCHEMA_VERSION`, a fresh file from 0, in one transaction:

1. ``records`` (one row per entry, keyed by job and seq) and ``leases``;
2. ``jobs``: each job's summary (next seq, finished, latest submission, attempt and observed),
   filled from the records, with a partial index on the unfinished jobs, so that
   :meth:`SqliteRecordStore.unfinished` reads only those (a supervisor's recovery after a crash
   does not grow with the finished history).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Final

from dispatch_core.model import JobID
from dispatch_core.record.store import (
    JobSummary,
    LeaseConflict,
    SeqConflict,
    StoreError,
    advance,
    check_lease,
    check_time,
    decode,
    encode,
)
from dispatch_core.record.types import Entry, Lease, Record

SCHEMA_VERSION: Final = 2
"""The schema this code writes; files of every earlier version are migrated on open."""


def _v1(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE records (
            job TEXT NOT NULL,
            seq INTEGER NOT NULL CHECK (seq >= 0),
            at REAL NOT NULL,
            writer TEXT NOT NULL,
            token INTEGER NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (job, seq)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE leases (
            job TEXT PRIMARY KEY,
            owner TEXT,
            token INTEGER NOT NULL,
            expires REAL NOT NULL
        ) WITHOUT ROWID"""
    )


def _v2(db: sqlite3.Connection) -> None:
    gaps = db.execute(
        "SELECT job FROM records GROUP BY job HAVING COUNT(*) != MAX(seq) + 1 OR MIN(seq) != 0"
    ).fetchall()
    if gaps:
        raise StoreError(f"cannot migrate: the records of {len(gaps)} job(s) have a gap in seq")
    db.execute(
        """CREATE TABLE jobs (
            job TEXT PRIMARY KEY,
            next_seq INTEGER NOT NULL,
            finished INTEGER NOT NULL,
            submission INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            observed INTEGER NOT NULL
        ) WITHOUT ROWID"""
    )
    db.execute(
        """INSERT INTO jobs
        SELECT job, MAX(seq) + 1, MAX(kind = 'terminal'),
            COALESCE(MAX(CASE kind WHEN 'intent' THEN json_extract(body, '$.submission') END), 0),
            0,
            COALESCE(MAX(CASE kind WHEN 'observed' THEN json_extract(body, '$.submission') END), 0)
        FROM records GROUP BY job"""
    )
    db.execute(
        """UPDATE jobs SET attempt = COALESCE((
            SELECT json_extract(body, '$.attempt') FROM records AS r
            WHERE r.job = jobs.job AND r.kind = 'intent' ORDER BY r.seq DESC LIMIT 1), 0)"""
    )
    db.execute("CREATE INDEX jobs_unfinished ON jobs (job) WHERE finished = 0")


MIGRATIONS: Final[dict[int, Callable[[sqlite3.Connection], None]]] = {1: _v1, 2: _v2}
"""Step ``v`` takes a file from version ``v - 1`` to version ``v``."""


def user_version(db: sqlite3.Connection) -> int:
    """The schema version a file says it has (``PRAGMA user_version``; 0 for a new file)."""
    version: int = db.execute("PRAGMA user_version").fetchone()[0]
    return version


def migrate(db: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Run the steps that take ``db`` from its version to ``target`` inside the caller's
    transaction; returns the version it started from."""
    version = user_version(db)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the record store has schema version {version}; this dispatch-kit knows up to "
            f"{SCHEMA_VERSION}: use a newer one"
        )
    if version == 0 and db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
        raise StoreError("the file is an SQLite database but not a record store (no version)")
    for step in range(version + 1, target + 1):
        MIGRATIONS[step](db)
    db.execute(f"PRAGMA user_version = {int(target)}")
    return version


class SqliteRecordStore:
    """A :class:`~dispatch_core.record.store.RecordStore` in one SQLite file at ``path``.

    Several processes may open the same file; every write takes SQLite's write lock
    (``BEGIN IMMEDIATE``, waiting up to ``timeout`` seconds of real time for it). One instance
    is used by one thread."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=timeout)
        except sqlite3.Error as error:  # a directory, a path SQLite cannot open
            raise StoreError(f"{self.path}: cannot open a record store there: {error}") from error
        try:
            mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: SQLite cannot use WAL mode here ({mode})")
            self._db.execute("PRAGMA synchronous=FULL")
            if user_version(self._db) != SCHEMA_VERSION:
                with self._transaction():
                    migrate(self._db)
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise StoreError(f"{self.path}: not a usable record store: {error}") from error
        except BaseException:
            self._db.close()
            raise

    # -- transactions ---------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
            self._before_commit()
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def _before_commit(self) -> None:
        """Called inside every write transaction just before its COMMIT (a seam for the tests
        that kill a writer there)."""

    # -- reading --------------------------------------------------------------------------------

    def _summary(self, job: JobID) -> JobSummary:
        row = self._db.execute(
            "SELECT next_seq, finished, submission, attempt, observed FROM jobs WHERE job = ?",
            (str(job),),
        ).fetchone()
        if row is None:
            return JobSummary()
        return JobSummary(row[0], bool(row[1]), row[2], row[3], row[4])

    def _lease(self, job: JobID) -> Lease | None:
        row = self._db.execute(
            "SELECT owner, token, expires FROM leases WHERE job = ? AND owner IS NOT NULL",
            (str(job),),
        ).fetchone()
        return None if row is None else Lease(job=job, owner=row[0], token=row[1], expires=row[2])

    def records(self, job: JobID, start: int = 0) -> list[Entry]:
        rows = self._db.execute(
            "SELECT seq, at, writer, token, body FROM records WHERE job = ? AND seq >= ? "
            "ORDER BY seq",
            (str(job), start),
        ).fetchall()
        return [
            Entry(job=job, seq=seq, at=at, writer=writer, token=token, record=decode(body))
            for seq, at, writer, token, body in rows
        ]

    def next_seq(self, job: JobID) -> int:
        return self._summary(job).next_seq

    def jobs(self) -> list[JobID]:
        return [JobID(row[0]) for row in self._db.execute("SELECT job FROM jobs ORDER BY job")]

    def unfinished(self) -> list[JobID]:
        rows = self._db.execute("SELECT job FROM jobs WHERE finished = 0 ORDER BY job")
        return [JobID(row[0]) for row in rows]

    def lease(self, job: JobID) -> Lease | None:
        return self._lease(job)

    # -- writing --------------------------------------------------------------------------------

    def append(
        self, job: JobID, expected_seq: int, record: Record, lease: Lease, now: float
    ) -> Entry:
        check_time(now)
        text = encode(record)
        stored = decode(text)
        with self._transaction() as db:
            check_lease(job, self._lease(job), lease, now)
            summary = self._summary(job)
            if expected_seq != summary.next_seq:
                raise SeqConflict(job, expected_seq, summary.next_seq)
            after = advance(job, summary, stored)
            db.execute(
                "INSERT INTO records (job, seq, at, writer, token, kind, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (str(job), expected_seq, float(now), lease.owner, lease.token, stored.kind, text),
            )
            db.execute(
                "INSERT INTO jobs (job, next_seq, finished, submission, attempt, observed) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job) DO UPDATE SET "
                "next_seq = excluded.next_seq, finished = excluded.finished, "
                "submission = excluded.submission, attempt = excluded.attempt, "
                "observed = excluded.observed",
                (
                    str(job),
                    after.next_seq,
                    int(after.finished),
                    after.submission,
                    after.attempt,
                    after.observed,
                ),
            )
        return Entry(
            job=job, seq=expected_seq, at=now, writer=lease.owner, token=lease.token, record=stored
        )

    def acquire(self, job: JobID, owner: str, now: float, ttl: float) -> Lease:
        check_time(now, ttl)
        with self._transaction() as db:
            row = db.execute(
                "SELECT owner, token, expires FROM leases WHERE job = ?", (str(job),)
            ).fetchone()
            if row is not None and row[0] is not None and now < row[2] and row[0] != owner:
                raise LeaseConflict(f"job {job}: the lease is held by {row[0]} until {row[2]}")
            lease = Lease(job=job, owner=owner, token=(row[1] if row else 0) + 1, expires=now + ttl)
            db.execute(
                "INSERT INTO leases (job, owner, token, expires) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, "
                "token = excluded.token, expires = excluded.expires",
                (str(job), owner, lease.token, lease.expires),
            )
        return lease

    def renew(self, lease: Lease, now: float, ttl: float) -> Lease:
        check_time(now, ttl)
        renewed = Lease(job=lease.job, owner=lease.owner, token=lease.token, expires=now + ttl)
        with self._transaction() as db:
            check_lease(lease.job, self._lease(lease.job), lease, now)
            db.execute(
                "UPDATE leases SET expires = ? WHERE job = ?", (renewed.expires, str(lease.job))
            )
        return renewed

    def release(self, lease: Lease) -> bool:
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE leases SET owner = NULL WHERE job = ? AND token = ? AND owner = ?",
                (str(lease.job), lease.token, lease.owner),
            )
            return cursor.rowcount == 1

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteRecordStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteRecordStore({self.path!r})"


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SqliteRecordStore", "migrate", "user_version"]
