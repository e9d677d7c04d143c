"""What several Slurm commands share: the job state names Slurm's clients know, the exception
a command raises to stop with an exit status, and the runner of byte-writing commands."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
BASE_STATES: Final = tuple((name, code) for name, code, number in STATES if number < 0x100)
FLAG_STATES: Final = tuple((name, code) for name, code, number in STATES if number >= 0x100)


class CommandExit(Exception):
    """The command stops here with ``returncode`` (its messages are already in its output)."""

    def __init__(self, returncode: int) -> None:
        super().__init__(returncode)
        self.returncode = returncode


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
