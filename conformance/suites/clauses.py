"""Where the checks' rules come from: the seed documents and DESIGN.md, named once for every
suite (a check's clause is one of these, then the section it quotes)."""

from typing import Final

SEED_000: Final = "seed 000"
"""The capability table, rule support and execution identity."""
SEED_001: Final = "seed 001"
"""Slurm identity: the name, the comment, the identity check."""
SEED_000_HOLD: Final = f"{SEED_000}, Hold"
DESIGN_HOLDS: Final = "DESIGN §4, Slurm holds"
DESIGN_REOBSERVE: Final = (
    "DESIGN §3, OutcomeUnknown: re-observe, never assume (§5: a command that timed out before "
    "it took effect)"
)
DESIGN_STALE_WRITE: Final = (
    "DESIGN §4, Kubeflow: the identity check rides on the write itself; a 409 is re-read and "
    "judged again, never retried blindly"
)
