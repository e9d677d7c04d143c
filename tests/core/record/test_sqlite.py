"""SqliteRecordStore beyond the contract: its pragmas, schema versions and migration, the
fixture corpus of every version, the index unfinished() reads, and crashes: writers killed with
SIGKILL mid-transaction, mid-migration and at random, and several processes on one file."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dispatch_core import JobID
from dispatch_core.record import (
    SCHEMA_VERSION,
    Entry,
    InvalidRecord,
    Lease,
    LeaseConflict,
    SeqConflict,
    SqliteRecordStore,
    StoreError,
)
from dispatch_core.record.sqlite import MIGRATIONS, migrate
from dispatch_core.record.store import summarise
from tests.fixtures.records import make_corpus

from .records import header, intent, observation, observed

FIXTURES = Path(__file__).parents[2] / "fixtures" / "records"
T0 = 1_767_225_600.0


def load(dump: Path, path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(dump.read_text())
    db.close()
    return path


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def consistent(store: SqliteRecordStore) -> None:
    """Every job's entries are gapless, parse, and agree with its stored summary."""
    (check,) = store._db.execute("PRAGMA integrity_check").fetchone()
    assert check == "ok"
    for job in store.jobs():
        entries = store.records(job)
        assert [e.seq for e in entries] == list(range(len(entries)))
        assert summarise(job, [e.record for e in entries]) == store._summary(job)


# -- pragmas and versions -----------------------------------------------------------------------


def test_the_file_is_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    with SqliteRecordStore(tmp_path / "r.db") as store:
        assert store._db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        assert raw(tmp_path / "r.db").execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw(tmp_path / "r.db").execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_every_version_has_a_migration_step() -> None:
    assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))


def test_a_file_of_a_newer_version_is_refused_untouched(tmp_path: Path) -> None:
    SqliteRecordStore(tmp_path / "r.db").close()
    raw(tmp_path / "r.db").execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        SqliteRecordStore(tmp_path / "r.db")
    assert raw(tmp_path / "r.db").execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION + 1,)


def test_a_database_that_is_no_record_store_is_refused(tmp_path: Path) -> None:
    raw(tmp_path / "other.db").execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="not a record store"):
        SqliteRecordStore(tmp_path / "other.db")
    (tmp_path / "junk.db").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a usable record store"):
        SqliteRecordStore(tmp_path / "junk.db")


def test_unfinished_reads_the_partial_index_only(tmp_path: Path) -> None:
    with SqliteRecordStore(tmp_path / "r.db") as store:
        plan = store._db.execute(
            "EXPLAIN QUERY PLAN SELECT job FROM jobs WHERE finished = 0 ORDER BY job"
        ).fetchall()
    assert any("jobs_unfinished" in row[-1] for row in plan), plan


# -- the fixture corpus -------------------------------------------------------------------------


def test_the_corpus_has_a_dump_of_every_schema_version() -> None:
    dumps = sorted(p.name for p in FIXTURES.glob("v*.sql"))
    assert dumps == [f"v{v}.sql" for v in range(1, SCHEMA_VERSION + 1)]


def test_the_current_versions_dump_is_what_the_current_code_writes() -> None:
    # A schema change without a new version (and a frozen dump of the old one) fails here.
    assert make_corpus.dump(SCHEMA_VERSION) == (FIXTURES / f"v{SCHEMA_VERSION}.sql").read_text()
    assert json.loads((FIXTURES / "expected.json").read_text()) == json.loads(
        json.dumps(make_corpus.expected())
    )


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_every_versions_dump_opens_migrated_and_reads_as_expected(
    tmp_path: Path, version: int
) -> None:
    path = load(FIXTURES / f"v{version}.sql", tmp_path / "r.db")
    assert raw(path).execute("PRAGMA user_version").fetchone() == (version,)
    expected = json.loads((FIXTURES / "expected.json").read_text())
    with SqliteRecordStore(path) as store:
        assert raw(path).execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        consistent(store)
        entries = [e for job in store.jobs() for e in store.records(job)]
        assert entries == [Entry.model_validate(e) for e in expected["entries"]]
        assert [str(j) for j in store.unfinished()] == expected["unfinished"]
        for job, lease in expected["leases"].items():
            assert store.lease(JobID(job)) == (lease and Lease.model_validate(lease))
        # and the migrated file goes on as any other: the grammar knows where each job stands
        retried = make_corpus.RETRIED
        live = store.lease(retried)
        assert live is not None
        with pytest.raises(InvalidRecord):
            store.append(retried, 8, intent(retried, 3, 2), live, T0)
        store.append(retried, 8, observed(retried, 3), live, T0)
        with pytest.raises(LeaseConflict):  # the released lease's token is not reused
            store.append(make_corpus.DONE, 6, observation(retried), live, T0)
        assert store.acquire(make_corpus.DONE, "sup-b", T0, 30).token == 2
    with SqliteRecordStore(path) as again:  # reopening a migrated file changes nothing
        consistent(again)
        assert again.next_seq(make_corpus.RETRIED) == 9


def test_a_migration_that_cannot_be_made_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = load(FIXTURES / "v1.sql", tmp_path / "r.db")
    raw(path).execute(f"DELETE FROM records WHERE job = '{make_corpus.RETRIED}' AND seq = 3")
    with pytest.raises(StoreError, match="gap"):
        SqliteRecordStore(path)
    db = raw(path)
    assert db.execute("PRAGMA user_version").fetchone() == (1,)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"records", "leases"}


def test_migrate_takes_a_new_file_through_every_step(tmp_path: Path) -> None:
    db = raw(tmp_path / "r.db")
    db.execute("BEGIN IMMEDIATE")
    assert migrate(db, target=1) == 0
    db.execute("COMMIT")
    assert db.execute("PRAGMA user_version").fetchone() == (1,)
    db.close()
    SqliteRecordStore(tmp_path / "r.db").close()
    assert raw(tmp_path / "r.db").execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


# -- crashes ------------------------------------------------------------------------------------


class Pausing(SqliteRecordStore):
    """A store whose writer stops just before COMMIT, once armed, and says so on a pipe."""

    armed = False
    fd = -1

    def _before_commit(self) -> None:
        if self.armed:
            os.write(self.fd, b"!")
            time.sleep(60)


def in_child(work: Callable[[], None]) -> int:
    """Fork a process that runs ``work`` and exits (never returning into pytest); its pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            work()
        except BaseException:
            code = 1
        os._exit(code)
    return pid


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def new_job(path: Path) -> tuple[JobID, Lease]:
    with SqliteRecordStore(path) as store:
        job = JobID()
        lease = store.acquire(job, "sup-a", T0, 3600)
        store.append(job, 0, header(job), lease, T0)
        store.append(job, 1, intent(job), lease, T0)
    return job, lease


def test_a_writer_killed_before_commit_leaves_no_partial_record(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    job, lease = new_job(path)
    read, write = os.pipe()

    def work() -> None:
        store = Pausing(path)
        store.fd, store.armed = write, True
        store.append(job, 2, observed(job), lease, T0)

    pid = in_child(work)
    os.close(write)  # so that a child that dies early ends the read
    assert os.read(read, 1) == b"!"  # the entry is inserted, the transaction not committed
    kill(pid)
    with SqliteRecordStore(path) as store:
        consistent(store)
        assert store.next_seq(job) == 2 and len(store.records(job)) == 2
        assert store.append(job, 2, observed(job), lease, T0).seq == 2  # the lock is free


def test_a_migration_killed_before_commit_leaves_the_old_version(tmp_path: Path) -> None:
    path = load(FIXTURES / "v1.sql", tmp_path / "r.db")
    read, write = os.pipe()

    def work() -> None:
        Pausing.fd, Pausing.armed = write, True  # armed from the first transaction: migration
        Pausing(path)

    pid = in_child(work)
    os.close(write)  # so that a child that dies early ends the read
    assert os.read(read, 1) == b"!"
    kill(pid)
    assert raw(path).execute("PRAGMA user_version").fetchone() == (1,)
    with SqliteRecordStore(path) as store:
        consistent(store)
        assert store.next_seq(make_corpus.RETRIED) == 8


@pytest.mark.parametrize("seed", range(4))
def test_a_writer_killed_at_a_random_moment_leaves_a_consistent_store(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "r.db"
    jobs = [new_job(path) for _ in range(3)]
    read, write = os.pipe()

    def work() -> None:
        with SqliteRecordStore(path) as store:
            for n in range(10_000):
                job, lease = jobs[n % 3]
                store.append(job, store.next_seq(job), observation(job), lease, T0 + n)
                os.write(write, b".")

    pid = in_child(work)
    os.close(write)
    acknowledged = 0
    target = rng.randrange(5, 60)
    while acknowledged < target:
        got = os.read(read, 64)
        assert got, "the writer died by itself"
        acknowledged += len(got)
    time.sleep(rng.random() * 0.005)
    kill(pid)
    with SqliteRecordStore(path) as store:
        consistent(store)
        appended = sum(store.next_seq(job) - 2 for job, _ in jobs)
        assert appended >= acknowledged  # every append that returned is there


def test_processes_racing_on_one_file_never_break_the_seq(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    job, lease = new_job(path)
    contested = JobID()
    read, write = os.pipe()

    def racer(i: int) -> Callable[[], None]:
        def work() -> None:
            with SqliteRecordStore(path) as store:
                try:
                    store.acquire(contested, f"racer-{i}", T0, 60)
                    os.write(write, b"L")
                except LeaseConflict:
                    os.write(write, b"-")
                done = 0
                while done < 15:
                    try:
                        store.append(
                            job,
                            store.next_seq(job),
                            observation(job, detail=f"{i}-{done}"),
                            lease,
                            T0,
                        )
                        done += 1
                    except SeqConflict:
                        pass

        return work

    pids = [in_child(racer(i)) for i in range(3)]
    os.close(write)
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    assert all(os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0 for s in statuses), statuses
    said = b"".join(iter(lambda: os.read(read, 64), b""))
    assert sorted(said) == sorted(b"L--")  # exactly one process got the contested lease
    with SqliteRecordStore(path) as store:
        consistent(store)
        details = [e.record.observation.detail for e in store.records(job, start=2)]  # type: ignore[union-attr]
        assert sorted(details) == sorted(f"{i}-{n}" for i in range(3) for n in range(15))
