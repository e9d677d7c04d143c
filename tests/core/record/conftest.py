"""Store factories for the contract suite: every test written against the RecordStore protocol
runs on each of them.

PostgreSQL runs when ``DISPATCH_TEST_POSTGRES_DSN`` names a server (ci/postgres-up.sh prints
one); each test gets its own schema, dropped after it. Without the variable the PostgreSQL
cases are skipped with the reason, except under ``CI=true``, where they fail: CI must not pass
without PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dispatch_core.record import (
    MemoryRecordStore,
    PostgresRecordStore,
    RecordStore,
    SqliteRecordStore,
)

DSN_VARIABLE = "DISPATCH_TEST_POSTGRES_DSN"


def postgres_dsn() -> str:
    """The test server's DSN; skips the test without one (fails it under ``CI=true``)."""
    dsn = os.environ.get(DSN_VARIABLE, "")
    if not dsn:
        why = f"{DSN_VARIABLE} is not set (start a server with ci/postgres-up.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true needs PostgreSQL: {why}")
        pytest.skip(why)
    return dsn


class Schemas:
    """Fresh schemas in the test server's database, each dropped by :meth:`drop_all`."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.made: list[str] = []

    def new(self) -> str:
        name = f"test_{uuid.uuid4().hex[:16]}"
        self.made.append(name)
        return name

    def drop_all(self) -> None:
        if not self.made:
            return
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn, autocommit=True) as db:
            for name in self.made:
                db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
        self.made.clear()


class Factory:
    """Makes stores of one kind: a new one, another handle on the same one, one reopened."""

    name = ""
    durable = False

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.opened: list[RecordStore] = []

    def new(self) -> RecordStore:
        raise NotImplementedError

    def other(self, store: RecordStore) -> RecordStore:
        """A second handle on ``store`` (another connection, as another process would have)."""
        raise NotImplementedError

    def reopen(self, store: RecordStore) -> RecordStore:
        """``store`` closed and opened again (a restart of its process)."""
        raise NotImplementedError

    def close_all(self) -> None:
        for store in self.opened:
            store.close()


class SqliteFactory(Factory):
    name = "sqlite"
    durable = True

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.count = 0

    def _open(self, path: str) -> RecordStore:
        store = SqliteRecordStore(path)
        self.opened.append(store)
        return store

    def new(self) -> RecordStore:
        self.count += 1
        return self._open(str(self.directory / f"record-{self.count}.db"))

    def other(self, store: RecordStore) -> RecordStore:
        assert isinstance(store, SqliteRecordStore)
        return self._open(store.path)

    def reopen(self, store: RecordStore) -> RecordStore:
        assert isinstance(store, SqliteRecordStore)
        store.close()
        return self._open(store.path)


class MemoryFactory(Factory):
    name = "memory"

    def new(self) -> RecordStore:
        return MemoryRecordStore()

    def other(self, store: RecordStore) -> RecordStore:
        return store

    def reopen(self, store: RecordStore) -> RecordStore:
        return store


class PostgresFactory(Factory):
    """Each store in a schema of its own in the test server's database (dropped after)."""

    name = "postgres"
    durable = True

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.schemas = Schemas(postgres_dsn())

    def _open(self, schema: str) -> RecordStore:
        store = PostgresRecordStore(self.schemas.dsn, schema=schema)
        self.opened.append(store)
        return store

    def new(self) -> RecordStore:
        return self._open(self.schemas.new())

    def other(self, store: RecordStore) -> RecordStore:
        assert isinstance(store, PostgresRecordStore) and store.schema is not None
        return self._open(store.schema)

    def reopen(self, store: RecordStore) -> RecordStore:
        assert isinstance(store, PostgresRecordStore) and store.schema is not None
        store.close()
        return self._open(store.schema)

    def close_all(self) -> None:
        super().close_all()
        self.schemas.drop_all()


FACTORIES: dict[str, type[Factory]] = {
    "sqlite": SqliteFactory,
    "memory": MemoryFactory,
    "postgres": PostgresFactory,
}


@pytest.fixture(params=sorted(FACTORIES))
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    made = FACTORIES[request.param](tmp_path)
    try:
        yield made
    finally:
        made.close_all()


@pytest.fixture
def schemas() -> Iterator[Schemas]:
    """Schemas for PostgreSQL tests beyond the contract (skipped without a server)."""
    made = Schemas(postgres_dsn())
    try:
        yield made
    finally:
        made.drop_all()


@pytest.fixture
def store(factory: Factory) -> RecordStore:
    return factory.new()
