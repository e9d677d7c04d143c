"""The record store for supervisors on several hosts: one PostgreSQL database (psycopg 3).

Same rules as :class:`~dispatch_core.record.sqlite.SqliteRecordStore`, decided by the same
functions (:func:`~dispatch_core.record.store.check_lease`,
:func:`~dispatch_core.record.store.advance`). Every write is one transaction that first takes
the job's transaction-scoped advisory lock (``pg_advisory_xact_lock`` on a 64-bit hash of the
job id: it exists before the job has any row, so two writers of a new job's header queue on it
too), then checks the lease and the seq, then inserts the entry and updates the job's summary,
then commits. Writers of one job wait for each other; writers of different jobs do not. The
primary key ``(job, seq)`` is the backstop: a second entry at one seq can never be stored.

The schema is versioned by a one-row ``schema_version`` table, and every open runs the steps
from the database's version to :data:`SCHEMA_VERSION` (a fresh database from 0) in one
transaction under a database-wide advisory lock, so that two processes opening a new database
at once migrate it once:

1. ``records`` (one row per entry, keyed by job and seq; the record's stored text as SQLite
   keeps it) and ``leases``;
2. ``jobs``: each job's summary, filled from the records (refused when a job's seq has a gap),
   with a partial index on the unfinished jobs, so that :meth:`PostgresRecordStore.unfinished`
   reads only those.

The store lives in the DSN's database, in ``schema`` when given (created when missing), else
in the connection's default schema. ``psycopg`` is imported when a store is made, so that
``import dispatch_core`` works without it (``pip install 'dispatch-kit[postgres]'``).

No password reaches a message, a ``repr`` or a log: the DSN is only ever shown redacted
(:func:`redact_dsn`), and a server that does not answer is a :class:`StoreError` of one line
naming host and port.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from dispatch_core.model import JobID
from dispatch_core.record.redact import REDACTED, is_secret_name, redact_uri
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

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION: Final = 2
"""The schema this code writes; databases of every earlier version are migrated on open."""

MIGRATION_LOCK: Final = 0x64697370_61746368  # "dispatch": the advisory lock of migrations
"""The advisory lock key every open takes while it reads the version and migrates."""

_KEYWORD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*")


def redact_dsn(dsn: str) -> str:
    """``dsn`` with every credential taken out, for messages and ``repr``.

    A URI (``postgresql://user:password@host:port/db?...``) loses its userinfo and the values
    of secret-named parameters (:func:`~dispatch_core.record.redact.redact_uri`); a libpq
    keyword string (``host=h password='a b' ...``) loses the value of ``password`` and of
    every other secret-named keyword (quoted values with spaces included), keeping the rest."""
    if "://" in dsn:
        return redact_uri(dsn)
    out: list[str] = []
    at = 0
    while at < len(dsn):
        found = _KEYWORD.match(dsn, at)
        if found is None:  # not a keyword string libpq reads: show nothing of it
            return REDACTED if dsn.strip() else dsn
        name, at = found.group(1), found.end()
        value, at = _conninfo_value(dsn, at)
        shown = REDACTED if is_secret_name(name) or name == "passfile" else value
        out.append(f"{name}={shown}")
    return " ".join(out)


def _conninfo_value(text: str, at: int) -> tuple[str, int]:
    """The value starting at ``at`` of a libpq keyword string (quoted or bare), and its end."""
    if at < len(text) and text[at] == "'":
        at += 1
        chars: list[str] = []
        while at < len(text) and text[at] != "'":
            if text[at] == "\\" and at + 1 < len(text):
                at += 1
            chars.append(text[at])
            at += 1
        value = "".join(chars)
        return ("'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"), at + 1
    end = at
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[at:end], end


def _v1(db: psycopg.Connection[Any]) -> None:
    db.execute(
        """CREATE TABLE records (
            job TEXT COLLATE "C" NOT NULL,
            seq BIGINT NOT NULL CHECK (seq >= 0),
            at DOUBLE PRECISION NOT NULL,
            writer TEXT NOT NULL,
            token BIGINT NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (job, seq)
        )"""
    )
    db.execute(
        """CREATE TABLE leases (
            job TEXT COLLATE "C" PRIMARY KEY,
            owner TEXT,
            token BIGINT NOT NULL,
            expires DOUBLE PRECISION NOT NULL
        )"""
    )


def _v2(db: psycopg.Connection[Any]) -> None:
    gaps = db.execute(
        "SELECT job FROM records GROUP BY job HAVING COUNT(*) != MAX(seq) + 1 OR MIN(seq) != 0"
    ).fetchall()
    if gaps:
        raise StoreError(f"cannot migrate: the records of {len(gaps)} job(s) have a gap in seq")
    db.execute(
        """CREATE TABLE jobs (
            job TEXT COLLATE "C" PRIMARY KEY,
            next_seq BIGINT NOT NULL,
            finished BOOLEAN NOT NULL,
            submission BIGINT NOT NULL,
            attempt BIGINT NOT NULL,
            observed BIGINT NOT NULL
        )"""
    )
    db.execute(
        """INSERT INTO jobs
        SELECT job, MAX(seq) + 1, BOOL_OR(kind = 'terminal'),
            COALESCE(MAX(CASE kind WHEN 'intent'
                THEN (body::jsonb ->> 'submission')::bigint END), 0),
            COALESCE((ARRAY_AGG((body::jsonb ->> 'attempt')::bigint ORDER BY seq DESC)
                FILTER (WHERE kind = 'intent'))[1], 0),
            COALESCE(MAX(CASE kind WHEN 'observed'
                THEN (body::jsonb ->> 'submission')::bigint END), 0)
        FROM records GROUP BY job"""
    )
    db.execute("CREATE INDEX jobs_unfinished ON jobs (job) WHERE NOT finished")


MIGRATIONS: Final[dict[int, Callable[[psycopg.Connection[Any]], None]]] = {1: _v1, 2: _v2}
"""Step ``v`` takes a database from version ``v - 1`` to version ``v``."""


def schema_version(db: psycopg.Connection[Any]) -> int:
    """The version the store in ``db``'s current schema says it has (0: no store there)."""
    found = db.execute(
        "SELECT 1 FROM information_schema.tables "
        "WHERE table_schema = current_schema() AND table_name = 'schema_version'"
    ).fetchone()
    if found is None:
        return 0
    row = db.execute("SELECT version FROM schema_version").fetchone()
    return 0 if row is None else int(row[0])


def migrate(db: psycopg.Connection[Any], target: int = SCHEMA_VERSION) -> int:
    """Run the steps that take the store in ``db``'s current schema from its version to
    ``target``, inside the caller's transaction; returns the version it started from."""
    version = schema_version(db)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the record store has schema version {version}; this dispatch-kit knows up to "
            f"{SCHEMA_VERSION}: use a newer one"
        )
    if version == 0:
        other = db.execute(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchone()
        if other is not None and other[0]:
            raise StoreError(
                "the schema holds tables but not a record store (no schema_version table)"
            )
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (0)")
    for step in range(version + 1, target + 1):
        MIGRATIONS[step](db)
    db.execute("UPDATE schema_version SET version = %s", (target,))
    return version


class PostgresRecordStore:
    """A :class:`~dispatch_core.record.store.RecordStore` in a PostgreSQL database.

    ``dsn`` is a libpq connection string or URI; ``schema`` (optional) is the schema the store
    lives in. Several processes on several hosts may open the same store; every write is one
    transaction under the job's advisory lock. One instance is used by one thread (it holds one
    connection). ``connect_timeout`` is in seconds of real time; it decides nothing."""

    def __init__(
        self, dsn: str, *, schema: str | None = None, connect_timeout: float = 10.0
    ) -> None:
        self._dsn = dsn
        self.dsn = redact_dsn(dsn)
        """The DSN as shown: without its password."""
        self.schema = schema
        try:
            import psycopg
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise StoreError(
                "PostgresRecordStore needs psycopg 3: pip install 'dispatch-kit[postgres]'"
            ) from error
        self._psycopg = psycopg
        self._where = self._address()
        try:
            self._db: psycopg.Connection[Any] = psycopg.connect(
                dsn, autocommit=True, connect_timeout=max(1, round(connect_timeout))
            )
        except psycopg.Error as error:
            raise StoreError(
                f"cannot connect to PostgreSQL at {self._where}: {self._said(error)}"
            ) from None
        try:
            with self._errors(), self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                if schema is not None:
                    from psycopg import sql

                    name = sql.Identifier(schema)
                    self._db.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
                    self._db.execute(sql.SQL("SET search_path TO {}").format(name))
                if schema_version(self._db) != SCHEMA_VERSION:
                    migrate(self._db)
        except BaseException:
            self._db.close()
            raise

    # -- errors ---------------------------------------------------------------------------------

    def _address(self) -> str:
        """``host:port`` of the DSN (libpq's defaults and environment filled in)."""
        from psycopg.conninfo import conninfo_to_dict

        try:
            params = conninfo_to_dict(self._dsn)
        except self._psycopg.Error:
            return "(an unreadable DSN)"
        host = str(params.get("host") or os.environ.get("PGHOST") or "localhost")
        port = str(params.get("port") or os.environ.get("PGPORT") or "5432")
        return f"{host}:{port}"

    def _said(self, error: BaseException) -> str:
        """The first line of a driver's message, with any password of the DSN taken out."""
        lines = str(error).strip().splitlines()
        text = lines[0] if lines else type(error).__name__
        from psycopg.conninfo import conninfo_to_dict

        try:
            password = conninfo_to_dict(self._dsn).get("password")
        except self._psycopg.Error:
            password = None
        if password:
            text = text.replace(str(password), REDACTED)
        return text.strip()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn the driver's failures (a lost connection, a server gone) into a one-line
        :class:`StoreError`; the store's own refusals pass through."""
        try:
            yield
        except self._psycopg.OperationalError as error:
            raise StoreError(
                f"PostgreSQL at {self._where} ({self.dsn}): {self._said(error)}"
            ) from None
        except self._psycopg.Error as error:
            raise StoreError(
                f"PostgreSQL at {self._where}: {type(error).__name__}: {self._said(error)}"
            ) from None

    # -- transactions ---------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, job: JobID) -> Iterator[psycopg.Connection[Any]]:
        """One write transaction on ``job``: its advisory lock first, COMMIT at the end."""
        with self._errors(), self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (str(job),))
            yield self._db
            self._before_commit()

    def _before_commit(self) -> None:
        """Called inside every write transaction just before its COMMIT (a seam for tests)."""

    # -- reading --------------------------------------------------------------------------------

    def _summary(self, job: JobID) -> JobSummary:
        row = self._db.execute(
            "SELECT next_seq, finished, submission, attempt, observed FROM jobs WHERE job = %s",
            (str(job),),
        ).fetchone()
        if row is None:
            return JobSummary()
        return JobSummary(int(row[0]), bool(row[1]), int(row[2]), int(row[3]), int(row[4]))

    def _lease(self, job: JobID) -> Lease | None:
        row = self._db.execute(
            "SELECT owner, token, expires FROM leases WHERE job = %s AND owner IS NOT NULL",
            (str(job),),
        ).fetchone()
        if row is None:
            return None
        return Lease(job=job, owner=row[0], token=int(row[1]), expires=float(row[2]))

    def records(self, job: JobID, start: int = 0) -> list[Entry]:
        with self._errors():
            rows = self._db.execute(
                "SELECT seq, at, writer, token, body FROM records WHERE job = %s AND seq >= %s "
                "ORDER BY seq",
                (str(job), start),
            ).fetchall()
        return [
            Entry(job=job, seq=seq, at=at, writer=writer, token=token, record=decode(body))
            for seq, at, writer, token, body in rows
        ]

    def next_seq(self, job: JobID) -> int:
        with self._errors():
            return self._summary(job).next_seq

    def jobs(self) -> list[JobID]:
        with self._errors():
            rows = self._db.execute("SELECT job FROM jobs ORDER BY job").fetchall()
        return [JobID(row[0]) for row in rows]

    def unfinished(self) -> list[JobID]:
        with self._errors():
            rows = self._db.execute(
                "SELECT job FROM jobs WHERE NOT finished ORDER BY job"
            ).fetchall()
        return [JobID(row[0]) for row in rows]

    def lease(self, job: JobID) -> Lease | None:
        with self._errors():
            return self._lease(job)

    # -- writing --------------------------------------------------------------------------------

    def append(
        self, job: JobID, expected_seq: int, record: Record, lease: Lease, now: float
    ) -> Entry:
        check_time(now)
        text = encode(record)
        stored = decode(text)
        with self._transaction(job) as db:
            check_lease(job, self._lease(job), lease, now)
            summary = self._summary(job)
            if expected_seq != summary.next_seq:
                raise SeqConflict(job, expected_seq, summary.next_seq)
            after = advance(job, summary, stored)
            db.execute(
                "INSERT INTO records (job, seq, at, writer, token, kind, body) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (str(job), expected_seq, float(now), lease.owner, lease.token, stored.kind, text),
            )
            db.execute(
                "INSERT INTO jobs (job, next_seq, finished, submission, attempt, observed) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (job) DO UPDATE SET "
                "next_seq = excluded.next_seq, finished = excluded.finished, "
                "submission = excluded.submission, attempt = excluded.attempt, "
                "observed = excluded.observed",
                (
                    str(job),
                    after.next_seq,
                    after.finished,
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
        with self._transaction(job) as db:
            row = db.execute(
                "SELECT owner, token, expires FROM leases WHERE job = %s", (str(job),)
            ).fetchone()
            if row is not None and row[0] is not None and now < row[2] and row[0] != owner:
                raise LeaseConflict(f"job {job}: the lease is held by {row[0]} until {row[2]}")
            token = (int(row[1]) if row else 0) + 1
            lease = Lease(job=job, owner=owner, token=token, expires=now + ttl)
            db.execute(
                "INSERT INTO leases (job, owner, token, expires) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, "
                "token = excluded.token, expires = excluded.expires",
                (str(job), owner, lease.token, lease.expires),
            )
        return lease

    def renew(self, lease: Lease, now: float, ttl: float) -> Lease:
        check_time(now, ttl)
        renewed = Lease(job=lease.job, owner=lease.owner, token=lease.token, expires=now + ttl)
        with self._transaction(lease.job) as db:
            check_lease(lease.job, self._lease(lease.job), lease, now)
            db.execute(
                "UPDATE leases SET expires = %s WHERE job = %s", (renewed.expires, str(lease.job))
            )
        return renewed

    def release(self, lease: Lease) -> bool:
        with self._transaction(lease.job) as db:
            cursor = db.execute(
                "UPDATE leases SET owner = NULL WHERE job = %s AND token = %s AND owner = %s",
                (str(lease.job), lease.token, lease.owner),
            )
            return cursor.rowcount == 1

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> PostgresRecordStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "" if self.schema is None else f", schema={self.schema!r}"
        return f"PostgresRecordStore({self.dsn!r}{where})"


__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "PostgresRecordStore",
    "migrate",
    "redact_dsn",
    "schema_version",
]
