"""Which budget a failure spends, and which rule of the policy answers it.

- A failure **before the execution started** spends the launch-retry budget: the object ended
  with cause ``launch_failed``, ``image_pull`` or ``unschedulable`` without ever having been
  seen running, or it stayed queued with such a cause for longer than the launch bound (then
  the supervisor stops it). A launch retry is submission N+1 with the same attempt A.
- Any other failure is **after start**: it spends the policy. The rule that answers it is the
  first, in policy order, whose causes match (no causes: any) and whose budget is not spent;
  a rule the backend enforces is the backend's (it had its turn before the object ended: the
  supervisor never also retries it) and a rule nobody enforces is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from dispatch_core.model import Cause, Enforcer, Policy, Rule, RuleKind, State

LAUNCH_CAUSES: Final = frozenset({Cause.LAUNCH_FAILED, Cause.IMAGE_PULL, Cause.UNSCHEDULABLE})
"""The causes of a failure before the execution started."""


def before_start(cause: Cause, seen_running: bool) -> bool:
    """Whether a failure with ``cause`` is one before the execution started."""
    return cause in LAUNCH_CAUSES and not seen_running


def fatal_while_queued(state: State, cause: Cause) -> bool:
    """Whether a queued (or scheduler-held) object carries a known-fatal launch cause: if it
    keeps it beyond the launch bound, the supervisor stops it and spends a launch retry."""
    return state in (State.QUEUED, State.HELD) and cause in LAUNCH_CAUSES


def matches(rule: Rule, cause: Cause) -> bool:
    """Whether ``rule`` answers a failure with ``cause`` (a rule without causes answers any)."""
    return not rule.causes or cause in rule.causes


@dataclass(frozen=True)
class Choice:
    """The rule that answers a failure: its index in the policy, and the kind the supervisor
    performs (``hold`` for every rule under a shared checkpoint)."""

    index: int
    kind: RuleKind
    rule: Rule


def choose_rule(
    policy: Policy,
    enforcers: tuple[Enforcer, ...],
    cause: Cause,
    spent: Mapping[int, int],
) -> Choice | None:
    """The first rule, in policy order, that the supervisor enforces, that answers ``cause``,
    and whose budget ``spent`` (uses per rule index, counted from the record) leaves room for;
    None when there is none (the job then fails with the cause). Under a shared checkpoint every
    rule becomes a hold for a person (seed 000)."""
    for index, rule in enumerate(policy.rules):
        enforcer = enforcers[index] if index < len(enforcers) else Enforcer.NOBODY
        if enforcer is not Enforcer.SUPERVISOR or not matches(rule, cause):
            continue
        if spent.get(index, 0) >= rule.budget:
            continue
        kind = RuleKind.HOLD if policy.shared_checkpoint else rule.kind
        return Choice(index, kind, rule)
    return None


__all__ = [
    "LAUNCH_CAUSES",
    "Choice",
    "before_start",
    "choose_rule",
    "fatal_while_queued",
    "matches",
]
