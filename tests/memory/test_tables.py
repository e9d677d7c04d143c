"""The memory adapter's declared answers and interfaces (seed 000, "The memory adapter's
answers")."""

from __future__ import annotations

import pytest

from adapters.memory import MemoryBackend
from dispatch_core import (
    Backend,
    Capability,
    Holder,
    IdentityWeakener,
    JobSpec,
    NativePolicyCompiler,
    OutputReader,
    Policy,
    Requeuer,
    Rule,
    RuleKind,
    Source,
    Support,
    Tristate,
    accept_unenforced,
    capabilities,
    make_plan,
)
from dispatch_core.registry import adapter_names, load_adapter

YES, NO = Tristate.YES, Tristate.NO

# The seed's text, as a table: (capability, slurm shape, kubeflow shape).
DECLARED = [
    (Capability.CONTAINER_IMAGE, NO, NO),
    (Capability.NATIVE_REQUEUE, NO, NO),
    (Capability.NATIVE_RESTART, NO, NO),
    (Capability.HOLD, YES, YES),
    (Capability.PRE_TERMINATION_SIGNAL, NO, NO),
    (Capability.ACCOUNTING_HISTORY, NO, NO),
    (Capability.ATTEMPT_INJECTION, YES, YES),
    (Capability.READMISSION_GATE, NO, YES),
    (Capability.WORKING_DIRECTORY, YES, NO),
    (Capability.PROCS_PER_NODE, YES, YES),
    (Capability.OUTPUT_PATH, NO, NO),
    (Capability.OUTPUT_READ, NO, NO),
    (Capability.OUTPUT_FOLLOW, NO, NO),
    (Capability.OUTPUT_RETAINED, NO, NO),
]
RULES = [
    (RuleKind.RESUBMIT, YES),
    (RuleKind.HOLD, YES),
    (RuleKind.ESCALATE, YES),
    (RuleKind.REQUEUE, NO),
    (RuleKind.RESTART, NO),
]


def test_the_table_lists_every_capability_in_order() -> None:
    assert [row[0] for row in DECLARED] == list(capabilities())
    assert list(MemoryBackend().capabilities(None)) == list(capabilities())


@pytest.mark.parametrize(("capability", "slurm", "kubeflow"), DECLARED)
def test_declared_capabilities(capability: Capability, slurm: Tristate, kubeflow: Tristate) -> None:
    """Every answer is as the seed declares it, and every source is declared."""
    for shape, expected in (("slurm", slurm), ("kubeflow", kubeflow)):
        support = MemoryBackend(shape).capabilities(None)[capability]  # type: ignore[arg-type]
        assert support.value is expected, (shape, capability)
        assert support.source is Source.DECLARED
        assert support.reason


@pytest.mark.parametrize("shape", ["slurm", "kubeflow"])
@pytest.mark.parametrize(("kind", "expected"), RULES)
def test_declared_rules(shape: str, kind: RuleKind, expected: Tristate) -> None:
    backend = MemoryBackend(shape)  # type: ignore[arg-type]
    [answer] = backend.rules(Policy(rules=(Rule(kind),)))
    assert answer.perform.value is expected
    assert answer.perform.source is Source.DECLARED


def test_rules_answer_one_per_rule_in_policy_order() -> None:
    policy = Policy(rules=tuple(Rule(kind) for kind, _ in reversed(RULES)))
    answers = MemoryBackend().rules(policy)
    assert [a.perform.value for a in answers] == [expected for _, expected in reversed(RULES)]


def test_constructor_overrides_capabilities_entry_by_entry() -> None:
    backend = MemoryBackend(
        capabilities={Capability.HOLD: Tristate.NO, Capability.OUTPUT_READ: Support.unknown("?")}
    )
    answers = backend.capabilities(None)
    assert answers[Capability.HOLD].value is NO
    assert answers[Capability.OUTPUT_READ] == Support.unknown("?")
    assert answers[Capability.PROCS_PER_NODE].value is YES  # untouched


def test_constructor_overrides_rules() -> None:
    backend = MemoryBackend(rules={RuleKind.REQUEUE: "yes", RuleKind.HOLD: Tristate.UNKNOWN})
    answers = backend.rules(Policy(rules=(Rule(RuleKind.REQUEUE), Rule(RuleKind.HOLD))))
    assert [a.perform.value for a in answers] == [YES, Tristate.UNKNOWN]


def test_an_unknown_override_value_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Tristate"):
        MemoryBackend(capabilities={Capability.HOLD: "maybe"})


@pytest.mark.parametrize("shape", ["slurm", "kubeflow"])
def test_interfaces_by_default(shape: str) -> None:
    """Backend, Holder and Requeuer always; never OutputReader; the compiler and the weakener
    only when configured."""
    backend = MemoryBackend(shape)  # type: ignore[arg-type]
    assert isinstance(backend, Backend)
    assert isinstance(backend, Holder)
    assert isinstance(backend, Requeuer)
    assert not isinstance(backend, OutputReader)
    assert not isinstance(backend, NativePolicyCompiler)
    assert not isinstance(backend, IdentityWeakener)


def test_configured_interfaces() -> None:
    backend = MemoryBackend("kubeflow", native=[RuleKind.RESUBMIT], identity_weakened="why")
    assert isinstance(backend, MemoryBackend)
    assert isinstance(backend, NativePolicyCompiler)
    assert isinstance(backend, IdentityWeakener)
    assert isinstance(backend.reopen(), NativePolicyCompiler)


def test_identity_left_intact_unless_set() -> None:
    spec = JobSpec(command=("true",))
    assert "identity_weakened" not in make_plan(MemoryBackend(), spec).model_dump()
    assert make_plan(MemoryBackend(identity_weakened=""), spec).identity_weakened == ""
    weakened = MemoryBackend(identity_weakened=lambda s: f"rank restart for {s.command[0]}")
    assert make_plan(weakened, spec).identity_weakened == "rank restart for true"


def test_native_offer_is_the_native_yes_rules() -> None:
    backend = MemoryBackend(native={RuleKind.RESUBMIT: Tristate.YES, RuleKind.HOLD: Tristate.NO})
    policy = Policy(rules=(Rule(RuleKind.HOLD), Rule(RuleKind.RESUBMIT, budget=4)))
    plan = make_plan(backend, JobSpec(command=("true",)), policy, accept_unenforced(0))
    assert plan.native is not None and plan.native.rules == (1,)
    assert [e.value for e in plan.enforcers] == ["nobody", "backend"]


def test_registered_as_adapter_memory() -> None:
    assert "memory" in adapter_names()
    assert load_adapter("memory") is MemoryBackend
    with pytest.raises(LookupError, match=r"no dispatch adapter named 'nope'.*memory"):
        load_adapter("nope")
