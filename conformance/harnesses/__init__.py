"""Harnesses by name: any registered under the entry-point group ``dispatch.harnesses`` (the
built-in ones register there too, from beside their adapters: ``adapters.memory.testing``,
``adapters.slurm.testing``), or a ``module:factory`` path to a callable that returns a
:class:`~conformance.harness.Harness`. This module imports no adapter: a harness is loaded
only when it is named."""

from __future__ import annotations

from typing import Any, Final

from conformance.harness import Harness
from dispatch_core import plugins

GROUP: Final = plugins.HARNESS_GROUP


class HarnessError(Exception):
    """A harness name or factory that cannot be loaded (the message is one line)."""


def registered() -> dict[str, str]:
    """Every harness registered under :data:`GROUP`: name to its ``module:factory``, by name."""
    return plugins.registered(GROUP)


def harness_names() -> list[str]:
    return list(registered())


def load_harness(spec: str) -> Harness[Any]:
    """The harness ``spec`` names: a registered name, or ``module:factory``."""
    try:
        harness: object = plugins.load(
            GROUP, spec, kind="harness", ready=lambda found: isinstance(found, Harness)
        )
    except plugins.PluginError as error:
        raise HarnessError(str(error)) from None
    if not isinstance(harness, Harness):
        raise HarnessError(f"{spec!r} gave {type(harness).__name__}, not a conformance.Harness")
    return harness


__all__ = ["GROUP", "HarnessError", "harness_names", "load_harness", "registered"]
