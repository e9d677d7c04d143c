"""Hold numbers, as on Slurm: from the clock, so a later hold never takes an earlier one's.

Hold number k is milliseconds of the adapter's clock plus the instance's own count of holds,
folded into ``(0, HoldBound)``; when it equals the number the object carries now, the next
one is taken. So within 16 minutes, and never twice in one instance, a stale ``release(k)``
cannot free a later hold. The number lives in the TrainJob's ``dispatch/hold`` annotation
(:mod:`adapters.kubeflow.names`); without Kueue it rides with ``spec.suspend=true`` in one
update, with Kueue it comes first and the Workload's ``spec.active=false`` second.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from dispatch_core import Clock, HoldBound


class HoldNumbers:
    """The hold numbers one adapter instance hands out."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._count: Iterator[int] = itertools.count()

    def next(self, current: int | None) -> int:
        """A new hold number, never ``current``."""
        stamp = int(self.clock.now() * 1000) + next(self._count)
        number = stamp % (HoldBound - 1) + 1
        if number == current:
            number = number % (HoldBound - 1) + 1
        return number


__all__ = ["HoldNumbers"]
