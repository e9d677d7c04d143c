"""Normalisation: what :func:`normalise` replaces in both sides' answers before they are
compared (times, durations, ids, hosts, scratch paths, pids), and :func:`similar`, equality
within the time tolerance."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from tools.fidelity.transcript import Transcript

WINDOW: Final = 7 * 86_400
"""Times within this many seconds of the start become ``T+n``; others stay literal (the
far-future StartTime of a hold, 2100-01-01T00:00:00, is a value, not a moment of the run)."""
_ISO: Final = re.compile(r"(?<![0-9])(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?![0-9])")
_EPOCH: Final = re.compile(r"(?<![0-9.+\-])(\d{10})(?![0-9])")
_ELAPSED: Final = re.compile(r"(?<![0-9:\-T])(?:(\d+)-)?(\d\d):(\d\d):(\d\d)(?![0-9:])")
_PID: Final = re.compile(r"(?<![A-Za-z_])(pid[=: ]|Sid=[^:\s]+:)(\d+)")
TOKEN: Final = re.compile(r"(?<![A-Za-z0-9_])([TE])([+-]\d+)(?![0-9])")


@dataclass(frozen=True)
class Context:
    """What :func:`normalise` replaces: times around ``start``, ``hosts`` (name ->
    placeholder), ``scratch`` paths and ``ids`` (id -> label; empty while ids are aligned)."""

    start: int
    hosts: Mapping[str, str] = field(default_factory=dict)
    scratch: tuple[str, ...] = ()
    ids: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, transcript: Transcript, ids: Mapping[str, str] | None = None) -> Context:
        hosts: dict[str, str] = {transcript.cluster.host: "<host>"}
        for number, node in enumerate(transcript.cluster.nodes, 1):
            hosts.setdefault(node, f"<node{number}>")
        scratch = (transcript.scratch,) if transcript.scratch else ()
        return cls(int(transcript.start), hosts, scratch, dict(ids or {}))


def _relative(epoch: int, start: int) -> str | None:
    delta = epoch - start
    if abs(delta) > WINDOW:
        return None
    return f"T{delta:+d}"


def normalise(text: str, context: Context) -> str:
    """``text`` with the run's accidents replaced: scratch paths by ``$SCRATCH``, times near
    the start by ``T+n`` (ISO and epoch forms alike), ``HH:MM:SS`` durations by ``E+n``,
    mapped ids by their labels, host and node names by placeholders, pids by ``<pid>``.
    Idempotent: what it writes matches none of its patterns."""
    for path in sorted(context.scratch, key=len, reverse=True):
        if path and len(path) > 1:
            text = text.replace(path, "$SCRATCH")

    def iso_time(match: re.Match[str]) -> str:
        try:
            year, month, day, hour, minute, second = (int(part) for part in match.groups())
            moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:
            return match.group(0)
        return _relative(int(moment.timestamp()), context.start) or match.group(0)

    text = _ISO.sub(iso_time, text)
    text = _EPOCH.sub(lambda m: _relative(int(m.group(1)), context.start) or m.group(0), text)

    def elapsed(match: re.Match[str]) -> str:
        days, hours, minutes, seconds = match.groups()
        total = int(days or 0) * 86_400 + int(hours) * 3600 + int(minutes) * 60 + int(seconds)
        return f"E+{total}"

    text = _ELAPSED.sub(elapsed, text)
    if context.ids:
        pattern = "|".join(re.escape(i) for i in sorted(context.ids, key=len, reverse=True))
        text = re.sub(
            rf"(?<![A-Za-z0-9_.+\-:{{<])({pattern})(?![0-9A-Za-z_])",
            lambda m: context.ids[m.group(1)],
            text,
        )
    names = [name for name in context.hosts if len(name) > 1 and not name.isdigit()]
    if names:
        pattern = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
        text = re.sub(
            rf"(?<![A-Za-z0-9_<{{$])({pattern})(?![A-Za-z0-9_>}}])",
            lambda m: context.hosts[m.group(1)],
            text,
        )
    return _PID.sub(lambda m: f"{m.group(1)}<pid>", text)


def similar(real: str, sim: str, tolerance: int) -> bool:
    """Equal once normalised, ``T+n``/``E+n`` tokens within ``tolerance`` seconds."""
    if real == sim:
        return True
    left, right = TOKEN.split(real), TOKEN.split(sim)
    if len(left) != len(right):
        return False
    for index, (a, b) in enumerate(zip(left, right, strict=True)):
        if index % 3 == 2:
            if abs(int(a) - int(b)) > tolerance:
                return False
        elif a != b:
            return False
    return True
