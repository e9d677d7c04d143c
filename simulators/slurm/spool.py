"""Lines of text kept small in memory: a simulated cluster's trace and slurmctld's log grow by
a few lines with every job, and 100,000 jobs of plain strings took tens of MiB
(:class:`LineSpool`)."""

from __future__ import annotations

import bisect
import zlib
from collections.abc import Iterator, Sequence
from typing import Final, overload

UTF8: Final = ("utf-8", "surrogateescape")
CHUNK: Final = 1 << 16
"""How many characters of lines a spool keeps as they are before it compresses them together."""
LEVEL: Final = 1
"""zlib's level for the chunks: lines of one cluster repeat each other, the fastest is enough."""


class LineSpool(Sequence[str]):
    """Lines of text (none holding a newline), in order, kept small: the last ones as they are
    (``tail``), the earlier ones in zlib-compressed chunks of about :data:`CHUNK` characters,
    each the bytes of its lines joined by newlines (UTF-8, ``surrogateescape``: a line made of
    a command line's bytes comes back as it went in). A read-only sequence but for
    :meth:`append`, :meth:`replace` and :meth:`truncate`; iterating it also yields what is
    appended meanwhile, as a list's iterator does."""

    __slots__ = ("_lines", "_open", "chunks", "ends", "sealed", "size", "tail")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.ends: list[int] = []  # the index after each chunk's last line
        self.sealed = 0  # the lines in chunks
        self.tail: list[str] = []
        self.size = 0  # the characters in tail
        self._open = -1  # the chunk whose lines are in _lines (the last one read)
        self._lines: list[str] = []

    def __len__(self) -> int:
        return self.sealed + len(self.tail)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self.line(i) for i in range(*index.indices(len(self)))]
        return self.line(self._position(index))

    def _position(self, index: int) -> int:
        """``index`` (negative from the end) as a line's position; IndexError past either end."""
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError("line index out of range")
        return position

    def __iter__(self) -> Iterator[str]:
        index = 0
        while index < len(self):
            yield self.line(index)
            index += 1

    def __repr__(self) -> str:
        return f"<{len(self)} lines>"

    def append(self, line: str) -> None:
        """Add ``line`` at the end (a line holding a newline is refused: ValueError)."""
        if "\n" in line:
            raise ValueError("a spooled line holds no newline")
        self.tail.append(line)
        self.size += len(line)
        if self.size >= CHUNK:
            self._seal()

    def _seal(self) -> None:
        self.chunks.append(zlib.compress("\n".join(self.tail).encode(*UTF8), LEVEL))
        self.sealed += len(self.tail)
        self.ends.append(self.sealed)
        self.tail, self.size = [], 0

    def _chunk(self, number: int) -> list[str]:
        if number != self._open:
            self._lines = zlib.decompress(self.chunks[number]).decode(*UTF8).split("\n")
            self._open = number
        return self._lines

    def _locate(self, index: int) -> tuple[int, int]:
        """The chunk holding sealed line ``index`` and the index of its first line."""
        number = bisect.bisect_right(self.ends, index)
        return number, self.ends[number - 1] if number else 0

    def line(self, index: int) -> str:
        """Line ``index`` (0 <= index < len)."""
        if index >= self.sealed:
            return self.tail[index - self.sealed]
        number, first = self._locate(index)
        return self._chunk(number)[index - first]

    def lines(self, start: int = 0) -> list[str]:
        """The lines from ``start`` (0 <= start) on."""
        if start >= self.sealed:
            return self.tail[start - self.sealed :]
        number, first = self._locate(start)
        lines = self._chunk(number)[start - first :]
        for later in range(number + 1, len(self.chunks)):
            lines.extend(self._chunk(later))
        lines.extend(self.tail)
        return lines

    def replace(self, index: int, line: str) -> None:
        """Line ``index`` (negative from the end) becomes ``line`` (which holds no newline)."""
        if "\n" in line:
            raise ValueError("a spooled line holds no newline")
        index = self._position(index)
        if index >= self.sealed:
            self.size += len(line) - len(self.tail[index - self.sealed])
            self.tail[index - self.sealed] = line
            return
        number, first = self._locate(index)
        lines = list(self._chunk(number))
        lines[index - first] = line
        self.chunks[number] = zlib.compress("\n".join(lines).encode(*UTF8), LEVEL)
        self._open = -1

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` lines (0 <= length <= len), forget the others."""
        if length < self.sealed:
            number, first = self._locate(length)
            self.tail = self._chunk(number)[: length - first]
            del self.chunks[number:], self.ends[number:]
            self.sealed, self._open = first, -1
        else:
            del self.tail[length - self.sealed :]
        self.size = sum(map(len, self.tail))

    def blocks(self) -> Iterator[bytes]:
        """The trace file's bytes, in pieces: every line and its newline."""
        for chunk in self.chunks:
            yield zlib.decompress(chunk) + b"\n"
        yield "".join(line + "\n" for line in self.tail).encode(*UTF8)
