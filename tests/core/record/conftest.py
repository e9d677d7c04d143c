"""Store factories for the contract suite: every test written against the RecordStore protocol
runs on each of them (PostgreSQL plugs in here later)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dispatch_core.record import MemoryRecordStore, RecordStore, SqliteRecordStore


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


FACTORIES: dict[str, type[Factory]] = {"sqlite": SqliteFactory, "memory": MemoryFactory}


@pytest.fixture(params=sorted(FACTORIES))
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    made = FACTORIES[request.param](tmp_path)
    yield made
    made.close_all()


@pytest.fixture
def store(factory: Factory) -> RecordStore:
    return factory.new()
