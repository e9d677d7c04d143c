"""Harnesses by name: any registered under the entry-point group ``dispatch.harnesses`` (the
built-in ones register there too, from beside their adapters: ``adapters.memory.testing``,
``adapters.slurm.testing``), or a ``module:factory`` path to a callable that returns a
:class:`~conformance.harness.Harness`. This module imports no adapter: a harness is loaded
only when it is named."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Final

from conformance.harness import Harness

GROUP: Final = "dispatch.harnesses"


class HarnessError(Exception):
    """A harness name or factory that cannot be loaded (the message is one line)."""


def registered() -> dict[str, str]:
    """Every harness registered under :data:`GROUP`: name to its ``module:factory``, by name."""
    return dict(sorted({ep.name: ep.value for ep in entry_points(group=GROUP)}.items()))


def harness_names() -> list[str]:
    return list(registered())


def load_harness(spec: str) -> Harness[Any]:
    """The harness ``spec`` names: a registered name, or ``module:factory``."""
    if ":" in spec:
        module_name, _, attribute = spec.partition(":")
        if not module_name.strip() or not attribute.strip():
            raise HarnessError(
                f"harness {spec!r} is not module:factory (e.g. mypkg.testing:harness)"
            )
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise HarnessError(
                f"cannot import {module_name!r} for harness {spec!r}: {error}"
            ) from None
        factory = getattr(module, attribute, None)
        if factory is None:
            raise HarnessError(f"{module_name!r} has no {attribute!r} (harness {spec!r})")
    else:
        matches = [ep for ep in entry_points(group=GROUP) if ep.name == spec]
        if not matches:
            known = ", ".join(harness_names()) or "none"
            raise HarnessError(
                f"no harness named {spec!r} (known: {known}; or give module:factory)"
            )
        factory = matches[0].load()
    try:
        harness = factory() if callable(factory) and not isinstance(factory, Harness) else factory
    except Exception as error:
        raise HarnessError(
            f"harness factory {spec!r} failed: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(harness, Harness):
        raise HarnessError(f"{spec!r} gave {type(harness).__name__}, not a conformance.Harness")
    return harness


__all__ = ["GROUP", "HarnessError", "harness_names", "load_harness", "registered"]
