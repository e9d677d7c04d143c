"""``dryRun=All``: the request runs as far as storage (defaulting, validation, admission, the
answer the client prints) and stores nothing (k8s.io/apiserver/pkg/endpoints/handlers: the
registry's ``DryRunnableStorage`` skips the etcd write; kubectl's ``--dry-run=server`` and
``kubectl diff``). Here the store's two committing steps are swapped, for the one request, for
ones that hand back the object as it would have been stored; the random source is put back, so a
dry run leaves no trace at all (the next uid and generated name are what they would have been).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from simulators.kubernetes import errors
from simulators.kubernetes.objects import JSON, clone
from simulators.kubernetes.store import Store

SUPPORTED: tuple[str, ...] = ("All",)


def requested(query: dict[str, str]) -> bool:
    """Whether the query asks for a dry run (400 for a value other than ``All``)."""
    value = query.get("dryRun")
    if value is None or value == "":
        return False
    if value not in SUPPORTED:
        raise errors.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return True


def in_options(options: JSON) -> bool:
    """Whether DeleteOptions (a delete's body) carry ``dryRun: ["All"]``."""
    values = options.get("dryRun") or []
    if not isinstance(values, list):
        raise errors.bad_request("dryRun: Invalid value: must be a list")
    for value in values:
        if value not in SUPPORTED:
            raise errors.bad_request(
                f'dryRun: Unsupported value: "{value}": supported values: "All"'
            )
    return bool(values)


@contextmanager
def sandbox(store: Store) -> Iterator[None]:
    """Within: ``store`` validates and admits as usual but commits nothing."""
    state = store.rng.getstate()

    def commit(table: Any, key: Any, obj: JSON, old: JSON | None, kind: Any) -> JSON:
        del table, key, old, kind
        return obj

    def remove(table: Any, key: Any, old: JSON) -> JSON:
        del table, key
        return clone(old)

    store._commit = commit  # type: ignore[method-assign]
    store._remove = remove  # type: ignore[method-assign]
    try:
        yield
    finally:
        del store._commit
        del store._remove
        store.rng.setstate(state)
