"""Capability (``CAP-``): the adapter's answers, and make_plan's decisions on them (seed 000)."""

from __future__ import annotations

from conformance.checks import Context, Tier, check
from dispatch_core import (
    Capability,
    Policy,
    Rule,
    RuleKind,
    RuleSupport,
    Support,
    Tristate,
    capabilities,
)

SEED_000 = "seed 000"


@check("CAP-001", clause=f"{SEED_000}, Capabilities and support", tier=Tier.SMOKE)
def fourteen_answers(ctx: Context) -> None:
    """capabilities() answers every one of the fourteen capabilities with a valid Support."""
    answers = ctx.backend.capabilities(None)
    missing = [c.value for c in capabilities() if c not in answers]
    ctx.expect(not missing, f"answered no Support for {', '.join(missing)}")
    for capability, support in answers.items():
        ctx.expect(
            isinstance(support, Support),
            f"answered {capability} with {type(support).__name__}, not a Support",
        )
        ctx.expect(
            support.value is not Tristate.NO or bool(support.reason),
            f"answered {capability} no without a reason (a refusal must say why)",
        )


@check(
    "CAP-002",
    clause=f"{SEED_000}, AttemptInjection: always needed, nothing waives it",
    tier=Tier.SMOKE,
)
def attempt_injection(ctx: Context) -> None:
    """AttemptInjection is yes: every rank of every execution sees the four DISPATCH_ variables."""
    support = ctx.backend.capabilities(None)[Capability.ATTEMPT_INJECTION]
    ctx.expect(support.value is Tristate.YES, f"answered AttemptInjection {support.value}")


@check("CAP-003", clause=f"{SEED_000}, Rule support: one RuleSupport per rule, in policy order")
def rules_in_order(ctx: Context) -> None:
    """rules(policy) answers one RuleSupport per rule, in policy order, for any policy."""
    kinds = list(RuleKind)
    ctx.rng.shuffle(kinds)
    policy = Policy(rules=tuple(Rule(kind=k, budget=ctx.rng.randint(0, 5)) for k in kinds))
    answers = list(ctx.backend.rules(policy))
    ctx.expect(
        len(answers) == len(policy.rules),
        f"answered {len(answers)} rule supports for a policy of {len(policy.rules)} rules",
    )
    ctx.expect(
        all(isinstance(a, RuleSupport) for a in answers),
        "answered something other than RuleSupport values",
    )
    for kind in kinds:
        alone = list(ctx.backend.rules(Policy(rules=(Rule(kind=kind),))))
        position = kinds.index(kind)
        ctx.expect(
            alone[0].perform == answers[position].perform,
            f"answered {kind} as {alone[0].perform.value} alone but "
            f"{answers[position].perform.value} at position {position}: not in policy order",
        )
    empty = list(ctx.backend.rules(Policy()))
    ctx.expect(empty == [], f"answered {len(empty)} rule supports for an empty policy")
