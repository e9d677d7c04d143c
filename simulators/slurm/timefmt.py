"""Slurm's time specifications, parsed and printed as its commands do (the simulator runs in UTC).

Parsing follows ``parse_time`` (slurm-facts §6): ``uts<epoch>`` (at least 1,000,000, nothing
after it), ``now[+|-count[unit]]``, ``today``/``tomorrow``/``midnight``/``noon``/``elevenses``/
``fika``/``teatime``, ``HH:MM[:SS]`` (tomorrow when already past), ``YYYY-MM-DD[THH:MM[:SS]]``
(years up to 9999) and ``MM/DD/YY``. Printing follows ``SLURM_TIME_FORMAT``: ``standard`` (the
default, ``YYYY-MM-DDTHH:MM:SS``) or a strftime format, where ``%s`` is epoch seconds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Final

NO_VAL: Final = 0xFFFFFFFE
"""Printed as ``None``."""
INFINITE: Final = 0xFFFFFFFF
"""Printed as ``Unknown``."""

_STANDARD: Final = "%Y-%m-%dT%H:%M:%S"
_FOUR_HUNDRED_YEARS: Final = 146_097 * 86_400
_YEAR_10000: Final = 253_402_300_800


class TimeSpecError(ValueError):
    """A time specification Slurm would refuse; ``pos`` is where parse_time stopped."""

    def __init__(self, spec: str, pos: int = 0) -> None:
        super().__init__(f"Invalid time specification (pos={pos}): {spec}")
        self.spec = spec
        self.pos = pos


_UNITS: Final = {
    "": 1,
    "s": 1,
    "sec": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
}
_NAMED_TIMES: Final = {"midnight": 0, "noon": 12, "elevenses": 11, "fika": 15, "teatime": 16}
_NOW: Final = re.compile(r"now(?:([+-])([0-9]+)([a-z]*))?")
_ISO: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:T([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?)?"
)
_CLOCK: Final = re.compile(r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?")
_US_DATE: Final = re.compile(r"([0-9]{2})[/.]([0-9]{2})[/.]([0-9]{2})")


def parse_time(spec: str, now: int) -> int:
    """The epoch seconds ``spec`` names, read at ``now``; :class:`TimeSpecError` when invalid."""
    text = spec.strip().lower()
    if text.startswith("uts"):
        digits = text[3:]
        if not digits.isascii() or not digits.isdigit() or int(digits) < 1_000_000:
            raise TimeSpecError(spec, 0)
        return int(digits)
    base = datetime.fromtimestamp(now, UTC)
    midnight = base.replace(hour=0, minute=0, second=0, microsecond=0)
    if match := _NOW.fullmatch(text):
        sign, count, unit = match.groups()
        if sign is None:
            return now
        if unit not in _UNITS:
            raise TimeSpecError(spec, 0)
        delta = int(count) * _UNITS[unit]
        return now + delta if sign == "+" else now - delta
    if text == "today":
        return int(midnight.timestamp())
    if text == "tomorrow":
        return int((midnight + timedelta(days=1)).timestamp())
    if text in _NAMED_TIMES:
        moment = midnight.replace(hour=_NAMED_TIMES[text])
        return _next_occurrence(moment, base)
    if match := _ISO.fullmatch(text.upper()):
        year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
        return _epoch_of(spec, year, month, day, hour, minute, second)
    if re.fullmatch(r"[0-9]{5,}-.*", text):
        raise TimeSpecError(spec, 2)
    if match := _CLOCK.fullmatch(text):
        hour, minute, second = (int(g) if g else 0 for g in match.groups())
        if hour > 23 or minute > 59 or second > 59:
            raise TimeSpecError(spec, 0)
        moment = midnight.replace(hour=hour, minute=minute, second=second)
        return _next_occurrence(moment, base)
    if match := _US_DATE.fullmatch(text):
        month, day, year = (int(g) for g in match.groups())
        return _epoch_of(spec, 2000 + year, month, day, 0, 0, 0)
    raise TimeSpecError(spec, 0)


def _next_occurrence(moment: datetime, base: datetime) -> int:
    if moment < base:
        moment += timedelta(days=1)
    return int(moment.timestamp())


def _epoch_of(spec: str, year: int, month: int, day: int, h: int, m: int, s: int) -> int:
    try:
        return int(datetime(year, month, day, h, m, s, tzinfo=UTC).timestamp())
    except ValueError:
        raise TimeSpecError(spec, 0) from None


def format_time(epoch: int, env: Mapping[str, str] | None = None) -> str:
    """``epoch`` as Slurm prints a time, under ``SLURM_TIME_FORMAT`` from ``env``.

    The special values print as Slurm prints them: NO_VAL as ``None``, INFINITE as ``Unknown``."""
    if epoch == NO_VAL:
        return "None"
    if epoch == INFINITE:
        return "Unknown"
    fmt = (env or {}).get("SLURM_TIME_FORMAT", "standard")
    if fmt in ("standard", "", "relative"):
        fmt = _STANDARD
    cycles = 0
    shifted = epoch
    while shifted >= _YEAR_10000:  # datetime stops at 9999; Slurm prints year 10000 and later
        shifted -= _FOUR_HUNDRED_YEARS
        cycles += 1
    moment = datetime.fromtimestamp(shifted, UTC)
    if fmt == _STANDARD and cycles == 0:  # what the loop below gives, in one step
        return (
            f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
            f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
        )
    out = []
    i = 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            code = fmt[i + 1]
            if code == "s":
                out.append(str(epoch))
            elif code == "Y":
                out.append(f"{moment.year + 400 * cycles:04d}")
            elif code == "%":
                out.append("%")
            else:
                out.append(moment.strftime("%" + code))
            i += 2
        else:
            out.append(fmt[i])
            i += 1
    return "".join(out)
