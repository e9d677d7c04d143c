"""Files written whole: what a reader (a CI reading a report, a shim reading its cluster's
trace) sees is the old file or the new one, never part of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], text: str, mode: int | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically: into a temporary file in the same
    directory, flushed to disk, then renamed over ``path`` (``os.replace``); on any error,
    an interrupt included, the temporary file is removed. The file gets ``mode``, or the mode
    a new file would get (``0o666`` less the umask)."""
    target = Path(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o666 & ~_umask() if mode is None else mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
