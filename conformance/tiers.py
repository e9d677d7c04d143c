"""The tiers of a run (a module of its own, so that the pytest plugin can name them without
importing the kit when pytest starts)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Tier(StrEnum):
    """How much a run checks: ``smoke`` < ``standard`` < ``full``."""

    SMOKE = "smoke"
    STANDARD = "standard"
    FULL = "full"

    def includes(self, other: Tier) -> bool:
        order = list(Tier)
        return order.index(other) <= order.index(self)


TIERS: Final[tuple[str, ...]] = tuple(t.value for t in Tier)
"""The tier names, lowest first (what a runner's ``--tier`` option accepts)."""
