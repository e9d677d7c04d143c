"""What several Slurm commands share: the job state names Slurm's clients know, the signal
names ``sig_name2num`` knows, C's ``strtol``, the time squeue's and sacct's headers print, the
exception a command raises to stop with an exit status (and :func:`exit_with`, which prints its
line first), and the runner of byte-writing commands."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from simulators.slurm.sim import Output

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

STATES: Final = (
    # job_state_num(): the base states, numbered as in slurm.h ...
    ("PENDING", "PD", 0),
    ("RUNNING", "R", 1),
    ("SUSPENDED", "S", 2),
    ("COMPLETED", "CD", 3),
    ("CANCELLED", "CA", 4),
    ("FAILED", "F", 5),
    ("TIMEOUT", "TO", 6),
    ("NODE_FAIL", "NF", 7),
    ("PREEMPTED", "PR", 8),
    ("BOOT_FAIL", "BF", 9),
    ("DEADLINE", "DL", 10),
    ("OUT_OF_MEMORY", "OOM", 11),
    # ... then the flags the clients also accept, with their bit values.
    ("COMPLETING", "CG", 0x8000),
    ("CONFIGURING", "CF", 0x4000),
    ("RESIZING", "RS", 0x2000),
    ("RESV_DEL_HOLD", "RD", 0x20000),
    ("REQUEUED", "RQ", 0x400),
    ("REQUEUE_FED", "RF", 0x100000),
    ("REQUEUE_HOLD", "RH", 0x800),
    ("REVOKED", "RV", 0x1000),
    ("SIGNALING", "SI", 0x400000),
    ("SPECIAL_EXIT", "SE", 0x1000000),
    ("STAGE_OUT", "SO", 0x800000),
    ("STOPPED", "ST", 0x200000),
)
# sig_name2num()'s table (signals_mapping[] of src/common/proc_args.c)
SIGNALS: Final = {
    "HUP": 1,
    "INT": 2,
    "QUIT": 3,
    "ABRT": 6,
    "KILL": 9,
    "ALRM": 14,
    "TERM": 15,
    "USR1": 10,
    "USR2": 12,
    "URG": 23,
    "CONT": 18,
    "STOP": 19,
    "TSTP": 20,
    "TTIN": 21,
    "TTOU": 22,
    "XCPU": 24,
}
_STRTOL: Final = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
BASE_STATES: Final = tuple((name, code) for name, code, number in STATES if number < 0x100)
FLAG_STATES: Final = tuple((name, code) for name, code, number in STATES if number >= 0x100)


def strtol(text: str) -> tuple[int, str]:
    """C ``strtol(text, &end, 10)``: the number (0 when there is none) and what follows."""
    match = _STRTOL.match(text)
    if match is None:
        return 0, text
    return int(match.group(1)), text[match.end() :]


def sig_name2num(text: str) -> int:
    """``sig_name2num``: a number, or a name with or without ``SIG`` (any case); 0 if neither."""
    number, rest = strtol(text)
    if rest != text:  # strtol found a number
        return number & 0xFFFF if not rest.strip() else 0
    name = text.lstrip()
    if name[:3].upper() == "SIG":
        name = name[3:]
    for known, value in SIGNALS.items():
        if name[: len(known)].upper() == known and not name[len(known) :].strip():
            return value
    return 0


class CommandExit(Exception):
    """The command stops here with ``returncode`` (its messages are already in its output)."""

    def __init__(self, returncode: int) -> None:
        super().__init__(returncode)
        self.returncode = returncode


def exit_with(result: Output, line: str, code: int = 1) -> CommandExit:
    """Print ``line`` on stderr and give the :class:`CommandExit` (status ``code``) to raise."""
    result.err(line)
    return CommandExit(code)


def ctime(epoch: int) -> str:
    """``epoch`` as squeue's and sacct's headers print a time, in UTC: ``Mon Nov 30 13:45:00
    2026`` (C's ``ctime`` layout without its newline, the day of the month zero-padded)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%a %b %d %H:%M:%S %Y")


def run_to_bytes(
    run: Callable[[SlurmSim, list[str], Mapping[str, str], Output, bytearray], None],
    sim: SlurmSim,
    args: list[str],
    env: Mapping[str, str],
) -> Output:
    """Run a command that writes its stdout as bytes (padded and cut byte for byte, as Slurm's
    C clients do), stopping at :class:`CommandExit` with its status."""
    result = Output()
    out = bytearray()
    try:
        run(sim, args, env, result, out)
    except CommandExit as stop:
        result.returncode = stop.returncode
    result.stdout = out.decode("utf-8", "surrogateescape") + result.stdout
    return result
