"""Adapters registered under the entry-point group ``dispatch.adapters``."""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Final

ADAPTER_GROUP: Final = "dispatch.adapters"


def adapter_names() -> list[str]:
    """The names of every registered adapter, sorted."""
    return sorted({ep.name for ep in entry_points(group=ADAPTER_GROUP)})


def load_adapter(name: str) -> object:
    """The factory (usually the backend class) registered as adapter ``name``.

    Raises ``LookupError`` naming the registered adapters when none has that name."""
    matches = [ep for ep in entry_points(group=ADAPTER_GROUP) if ep.name == name]
    if not matches:
        known = ", ".join(adapter_names()) or "none"
        raise LookupError(f"no dispatch adapter named {name!r} is installed (installed: {known})")
    return matches[0].load()


__all__ = ["ADAPTER_GROUP", "adapter_names", "load_adapter"]
