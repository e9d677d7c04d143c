"""Plugins by name: an entry point registered under a group (harnesses under
:data:`HARNESS_GROUP`), or a ``module:factory`` path. The one lookup the ``dispatch`` CLI and
the conformance kit share; what a loaded plugin must be is for the caller to check."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Final

HARNESS_GROUP: Final = "dispatch.harnesses"


class PluginError(Exception):
    """A plugin name or ``module:factory`` path that cannot be loaded (the message is one line)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


def registered(group: str) -> dict[str, str]:
    """Every plugin registered under ``group``: name to its ``module:factory``, by name."""
    return dict(sorted({ep.name: ep.value for ep in entry_points(group=group)}.items()))


def _never(_: object) -> bool:
    return False


def load(
    group: str, spec: str, *, kind: str = "plugin", ready: Callable[[object], bool] = _never
) -> Any:
    """What ``spec`` names: a name registered under ``group``, or ``module:factory``. The
    factory is called (unless it is not callable, or ``ready`` says it already is the plugin)
    and what it returns is returned. ``kind`` names the plugin in the messages."""
    if ":" in spec:
        module_name, _, attribute = spec.partition(":")
        if not module_name.strip() or not attribute.strip():
            raise PluginError(f"{kind} {spec!r} is not module:factory (e.g. mypkg.testing:{kind})")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise PluginError(
                f"cannot import {module_name!r} for {kind} {spec!r}: {error}"
            ) from None
        factory = getattr(module, attribute, None)
        if factory is None:
            raise PluginError(f"{module_name!r} has no {attribute!r} ({kind} {spec!r})")
    else:
        matches = [ep for ep in entry_points(group=group) if ep.name == spec]
        if not matches:
            known = ", ".join(registered(group)) or "none"
            raise PluginError(f"no {kind} named {spec!r} (known: {known}; or give module:factory)")
        factory = matches[0].load()
    if not callable(factory) or ready(factory):
        return factory
    try:
        return factory()
    except Exception as error:
        raise PluginError(
            f"{kind} factory {spec!r} failed: {type(error).__name__}: {error}"
        ) from None


__all__ = ["HARNESS_GROUP", "PluginError", "load", "registered"]
