"""What several Slurm commands share: the job state names Slurm's clients know, and the
exception a command raises to stop with an exit status."""

from __future__ import annotations

from typing import Final

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
