"""Clocks: the real one, and the virtual one every simulator, harness and fake shares.

Everything that waits or stamps a time takes a :class:`Clock`; nothing in a simulator reads the
wall clock or sleeps for real.
"""

from __future__ import annotations

import time
from typing import Final, Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Where an adapter or simulator reads time."""

    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...


class WallClock:
    """The real clock, for adapters that run against a real scheduler."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def pause(clock: Clock, seconds: float) -> None:
    """Wait ``seconds`` on ``clock``: virtual time for a virtual clock, real time otherwise."""
    sleep = getattr(clock, "sleep", None)
    if callable(sleep):
        sleep(seconds)
    else:
        time.sleep(seconds)


DEFAULT_START: Final = 1_767_225_600.0
"""2026-01-01T00:00:00Z: a fixed start, so that every run sees the same times."""


class VirtualClock:
    """A clock that never reads the wall clock and never sleeps for real."""

    def __init__(self, start: float = DEFAULT_START) -> None:
        self._now = float(start)

    def now(self) -> float:
        """Seconds since the Unix epoch, in virtual time."""
        return self._now

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` (never back) and return the new time."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        self._now += seconds
        return self._now

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of virtual time: the same as ``advance``, returning nothing."""
        self.advance(seconds)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now})"


__all__ = ["DEFAULT_START", "Clock", "VirtualClock", "WallClock", "pause"]
