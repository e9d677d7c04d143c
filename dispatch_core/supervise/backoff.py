"""The backoff between a failure after start and the resubmission a rule makes of it."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff on the supervisor's clock: the k-th resubmission of a job (k from 1)
    waits ``base * factor ** (k - 1)`` seconds, never more than ``cap``."""

    base: float = 10.0
    factor: float = 2.0
    cap: float = 600.0

    def __post_init__(self) -> None:
        for name in ("base", "factor", "cap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"Backoff.{name} is a number of seconds, not {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"Backoff.{name} must be finite and not negative, not {value}")
        if self.factor < 1:
            raise ValueError(f"Backoff.factor must be at least 1, not {self.factor}")

    def delay(self, k: int) -> float:
        """The wait before the ``k``-th resubmission (``k`` from 1), capped."""
        if k < 1:
            raise ValueError(f"the first resubmission is k=1, not {k}")
        # The exponent is bounded so that a long history cannot overflow a float.
        exponent = min(k - 1, 1024)
        try:
            wait = self.base * self.factor**exponent
        except OverflowError:
            wait = math.inf
        return float(min(wait, self.cap))


__all__ = ["Backoff"]
