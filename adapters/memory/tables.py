"""The memory adapter's declared answers (seed 000, "The memory adapter's answers").

It declares AttemptInjection, Hold, WorkingDirectory and ProcsPerNode yes and every other
capability no; shaped like Kubeflow it also declares ReadmissionGate yes and WorkingDirectory no.
For rules, resubmit, hold and escalate are yes; requeue and restart are no. Every source is
``declared``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from dispatch_core import Capability, RuleKind, Support, Tristate, capabilities

Shape = Literal["slurm", "kubeflow"]
SHAPES: Final[tuple[Shape, ...]] = ("slurm", "kubeflow")

_YES_EVERY_SHAPE: Final = frozenset(
    {
        Capability.ATTEMPT_INJECTION,
        Capability.HOLD,
        Capability.WORKING_DIRECTORY,
        Capability.PROCS_PER_NODE,
    }
)
_YES_BY_SHAPE: Final[Mapping[Shape, frozenset[Capability]]] = {
    "slurm": _YES_EVERY_SHAPE,
    "kubeflow": (_YES_EVERY_SHAPE - {Capability.WORKING_DIRECTORY}) | {Capability.READMISSION_GATE},
}
_RULES_YES: Final = frozenset({RuleKind.RESUBMIT, RuleKind.HOLD, RuleKind.ESCALATE})

SupportLike = Support | Tristate | str


def as_support(answer: SupportLike, reason: str) -> Support:
    """An override as a Support: a bare value becomes a declared answer with ``reason``."""
    if isinstance(answer, Support):
        return answer
    return Support(value=Tristate(answer), reason=reason)


def declared_capabilities(shape: Shape) -> dict[Capability, Support]:
    """The fourteen declared answers of one shape, in the seed's order."""
    yes = _YES_BY_SHAPE[shape]
    return {
        capability: Support.yes(f"memory adapter ({shape} shape) declares {capability}")
        if capability in yes
        else Support.no(f"memory adapter ({shape} shape) does not model {capability}")
        for capability in capabilities()
    }


def declared_rules(shape: Shape) -> dict[RuleKind, Support]:
    """The declared perform answer for each rule kind."""
    return {
        kind: Support.yes(f"memory adapter ({shape} shape) performs {kind}")
        if kind in _RULES_YES
        else Support.no(f"memory adapter ({shape} shape) does not perform {kind}")
        for kind in RuleKind
    }
