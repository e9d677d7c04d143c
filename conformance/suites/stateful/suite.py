"""The stateful checks (``STATE-``): one invariant each, on the same machine."""

from __future__ import annotations

from conformance.checks import Context, Needs, Skip, check
from conformance.harness import Fault, LookAlike, Probe, look_alike_need
from conformance.suites.clauses import SEED_000, SEED_001
from conformance.suites.stateful.driver import drive
from conformance.suites.stateful.model import Focus
from conformance.tiers import Tier
from dispatch_core import Capability, Holder

FULL_SCALE = 4
"""A full-tier stateful check runs this many times the programs of its standard twin, each
twice as long."""

HOLDS = Needs(capabilities=(Capability.HOLD,))
EXECUTIONS = Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS,))
STARTS = Needs(faults=(Fault.LOSE_NEXT_REPLY,))
WRITES_NEED = ("reuse_id", "reuse_id_next", "purge")
FIND_NEED = tuple(look_alike_need(kind) for kind in LookAlike)


def holds(ctx: Context, scale: int) -> None:
    if not isinstance(ctx.backend, Holder):
        raise Skip("the adapter declares Hold yes but is no Holder (CAP-016 fails it for that)")
    drive(ctx, Focus.HOLDS, (), scale)


# -- the checks: standard ------------------------------------------------------------------------


@check("STATE-001", clause=f"{SEED_001}, The identity check")
def no_write_after_failed_identity_check(ctx: Context) -> None:
    """No write after a failed identity check: a write acts only on its ref's object, if any."""
    drive(ctx, Focus.WRITES, WRITES_NEED)


@check("STATE-002", clause=f"{SEED_001}, What else rides on Submit (holds)", needs=HOLDS)
def no_hold_decoded_to_the_wrong_instance(ctx: Context) -> None:
    """No hold decoded to the wrong instance: every hold shown is the one placed there."""
    holds(ctx, 1)


@check("STATE-003", clause=f"{SEED_000}, Execution identity; DESIGN §4", needs=EXECUTIONS)
def no_repeated_attempt(ctx: Context) -> None:
    """No repeated attempt, and epochs increase per object, every rank seeing all four."""
    drive(ctx, Focus.EXECUTIONS, ("let_run",))


@check("STATE-004", clause=f"{SEED_001}, The name; The comment")
def find_matches_exactly(ctx: Context) -> None:
    """find reports only the job's own objects as the job's; exact-key look-alikes foreign."""
    drive(ctx, Focus.FIND, FIND_NEED)


@check(
    "STATE-005",
    clause=f"{SEED_001}, The identity check, rule 3 (requeues)",
    needs=Needs(faults=(Fault.LET_RUN,)),
)
def requeue_moves_submit_forward(ctx: Context) -> None:
    """A requeue keeps the ref valid and moves a name-identified object's submit forward."""
    drive(ctx, Focus.ANCHOR, ("requeue_underneath", "let_run"))


@check(
    "STATE-006", clause="DESIGN §3, Backend.start: idempotent per (job, submission)", needs=STARTS
)
def start_is_idempotent(ctx: Context) -> None:
    """A start retried after a lost reply finds the first one's object: one per submission."""
    drive(ctx, Focus.STARTS, ("lose_next_reply(start)",))


# -- the checks: full (the same invariants, FULL_SCALE times the programs, twice as long) --------


@check("STATE-011", clause=f"{SEED_001}, The identity check", tier=Tier.FULL)
def no_write_after_failed_identity_check_long(ctx: Context) -> None:
    """STATE-001 at length: no write after a failed identity check, over long programs."""
    drive(ctx, Focus.WRITES, WRITES_NEED, FULL_SCALE)


@check(
    "STATE-012",
    clause=f"{SEED_001}, What else rides on Submit (holds)",
    tier=Tier.FULL,
    needs=HOLDS,
)
def no_hold_decoded_to_the_wrong_instance_long(ctx: Context) -> None:
    """STATE-002 at length: no hold decoded to the wrong instance, over long programs."""
    holds(ctx, FULL_SCALE)


@check(
    "STATE-013",
    clause=f"{SEED_000}, Execution identity; DESIGN §4",
    tier=Tier.FULL,
    needs=EXECUTIONS,
)
def no_repeated_attempt_long(ctx: Context) -> None:
    """STATE-003 at length: no repeated attempt and increasing epochs, over long programs."""
    drive(ctx, Focus.EXECUTIONS, ("let_run",), FULL_SCALE)


@check("STATE-014", clause=f"{SEED_001}, The name; The comment", tier=Tier.FULL)
def find_matches_exactly_long(ctx: Context) -> None:
    """STATE-004 at length: find reports only the job's own objects, over long programs."""
    drive(ctx, Focus.FIND, FIND_NEED, FULL_SCALE)


@check(
    "STATE-015",
    clause=f"{SEED_001}, The identity check, rule 3 (requeues)",
    tier=Tier.FULL,
    needs=Needs(faults=(Fault.LET_RUN,)),
)
def requeue_moves_submit_forward_long(ctx: Context) -> None:
    """STATE-005 at length: a requeue keeps the ref valid, over long programs."""
    drive(ctx, Focus.ANCHOR, ("requeue_underneath", "let_run"), FULL_SCALE)


@check(
    "STATE-016",
    clause="DESIGN §3, Backend.start: idempotent per (job, submission)",
    tier=Tier.FULL,
    needs=STARTS,
)
def start_is_idempotent_long(ctx: Context) -> None:
    """STATE-006 at length: a retried start makes no second object, over long programs."""
    drive(ctx, Focus.STARTS, ("lose_next_reply(start)",), FULL_SCALE)
