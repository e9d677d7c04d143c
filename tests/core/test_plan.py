"""make_plan against seed 000: "How Submit uses the answers", "Rule support" and "Execution
identity", written as decision tables, plus a property test against an independent oracle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dispatch_core.plan as plan_module
from dispatch_core import (
    Capability,
    Enforcer,
    JobID,
    JobSpec,
    NativeOffer,
    Policy,
    Rejected,
    Rule,
    RuleKind,
    RuleSupport,
    Support,
    Tristate,
    Unsupported,
    accept_unenforced,
    accept_unverified,
    capabilities,
    make_plan,
    needed_capabilities,
    with_job,
    with_supervisor,
)
from dispatch_core.spi import Backend, IdentityWeakener, NativePolicyCompiler

YES, NO, UNKNOWN = Tristate.YES, Tristate.NO, Tristate.UNKNOWN
MISSING = None  # the adapter leaves the capability out of its answer

# ---------------------------------------------------------------------------------------------
# A configurable fake backend that records what it is asked
# ---------------------------------------------------------------------------------------------


class FakeBackend:
    """A Backend whose answers are set per test; every call is recorded in ``calls``.

    ``answers`` maps a capability to a Tristate (or to MISSING, left out of the answer); any
    capability not named answers yes. ``performs`` is one Tristate per rule (default: yes for
    every rule of the policy asked), or a whole list returned as is (to answer a wrong count).
    """

    def __init__(
        self,
        answers: Mapping[Capability, Tristate | None] | None = None,
        performs: Sequence[Tristate] | None = None,
        name: str = "fake",
    ) -> None:
        self.name = name
        self.answers = dict(answers or {})
        self.performs = performs
        self.calls: list[tuple[str, Any]] = []

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        self.calls.append(("capabilities", spec))
        table = {}
        for capability in capabilities():
            value = self.answers.get(capability, YES)
            if value is not MISSING:
                table[capability] = Support(value, reason=f"{capability} said {value}")
        return table

    def rules(self, policy: Policy) -> list[RuleSupport]:
        self.calls.append(("rules", policy))
        performs = self.performs if self.performs is not None else [YES] * len(policy.rules)
        return [RuleSupport(Support(p, reason=f"rule perform {p}")) for p in performs]

    def start(self, plan, submission, attempt):
        raise AssertionError("make_plan must not start anything")

    def find(self, job_id):
        raise AssertionError("make_plan must not look anything up")

    def open(self, ref):
        raise AssertionError("make_plan must not open anything")

    def stop(self, ref):
        raise AssertionError("make_plan must not stop anything")

    def asked(self) -> list[str]:
        return [name for name, _ in self.calls]


class CompilerBackend(FakeBackend):
    """A FakeBackend that is also a NativePolicyCompiler: ``native_answers`` (default: all yes)
    answer ``native``, and ``compiled`` (default: every native yes) is the offer."""

    def __init__(
        self,
        native_answers: Sequence[Tristate] | None = None,
        compiled: Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.native_answers = native_answers
        self.compiled = compiled

    def _native(self, policy: Policy) -> list[Tristate]:
        if self.native_answers is None:
            return [YES] * len(policy.rules)
        return list(self.native_answers)

    def native(self, policy: Policy) -> list[Support]:
        self.calls.append(("native", policy))
        return [Support(a) for a in self._native(policy)]

    def compile(self, policy: Policy) -> NativeOffer:
        self.calls.append(("compile", policy))
        compiled = self.compiled
        if compiled is None:
            compiled = [i for i, a in enumerate(self._native(policy)) if a is YES]
        return NativeOffer(rules=tuple(compiled), detail={"compiled": "yes"})


class WeakenerBackend(FakeBackend):
    """A FakeBackend that is also an IdentityWeakener answering ``weakened`` (or raising it)."""

    def __init__(self, weakened: str | Exception, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.weakened = weakened

    def identity_weakened(self, spec: JobSpec) -> str:
        self.calls.append(("identity_weakened", spec))
        if isinstance(self.weakened, Exception):
            raise self.weakened
        return self.weakened


def test_fakes_implement_the_spi():
    """The fakes are what the core will detect: a Backend, and the two optional interfaces."""
    assert isinstance(FakeBackend(), Backend)
    assert not isinstance(FakeBackend(), NativePolicyCompiler | IdentityWeakener)
    assert isinstance(CompilerBackend(), NativePolicyCompiler)
    assert isinstance(WeakenerBackend(""), IdentityWeakener)


def spec_needing(*caps: Capability) -> JobSpec:
    """The smallest spec whose fields need exactly ``caps`` (plus AttemptInjection, always)."""
    fields: dict[str, Any] = {"command": ("train",), "extensions": {}}
    for capability in caps:
        TRIGGERS[capability](fields)
    return JobSpec(**fields)


TRIGGERS = {
    Capability.CONTAINER_IMAGE: lambda f: f["extensions"].update({"dispatch.Image": "alpine:3"}),
    Capability.WORKING_DIRECTORY: lambda f: f.update(work_dir="/scratch"),
    Capability.PROCS_PER_NODE: lambda f: f.update(procs_per_node=4),
    Capability.OUTPUT_PATH: lambda f: f["extensions"].update({"dispatch.Output": "/out/%j"}),
    Capability.ATTEMPT_INJECTION: lambda f: None,  # always needed
}
SPEC_CAPABILITIES = list(TRIGGERS)


def policy_of(n: int, **kwargs: Any) -> Policy:
    kinds = list(RuleKind)
    return Policy(
        rules=tuple(Rule(kind=kinds[i % len(kinds)], budget=i + 1) for i in range(n)),
        **kwargs,
    )


# ---------------------------------------------------------------------------------------------
# How Submit uses the answers
# ---------------------------------------------------------------------------------------------


def test_needed_capabilities_follow_the_seed_column():
    """The "Needed at submit when" column: Image, WorkDir, ProcsPerNode > 0, Output; and
    AttemptInjection always. In the table's order."""
    assert needed_capabilities(JobSpec(command=("x",))) == (Capability.ATTEMPT_INJECTION,)
    assert needed_capabilities(spec_needing(*SPEC_CAPABILITIES)) == (
        Capability.CONTAINER_IMAGE,
        Capability.ATTEMPT_INJECTION,
        Capability.WORKING_DIRECTORY,
        Capability.PROCS_PER_NODE,
        Capability.OUTPUT_PATH,
    )
    assert needed_capabilities(JobSpec(command=("x",), procs_per_node=0)) == (
        Capability.ATTEMPT_INJECTION,
    )


# the spec needs the capability; the adapter answers ...      -> make_plan
CAPABILITY_DECISIONS = [
    (YES, "proceeds"),
    (NO, Unsupported),
    (UNKNOWN, Unsupported),
    (MISSING, Unsupported),  # a missing answer is unknown
]


@pytest.mark.parametrize("capability", SPEC_CAPABILITIES)
@pytest.mark.parametrize(("answer", "outcome"), CAPABILITY_DECISIONS)
def test_needed_capability_decision(capability, answer, outcome):
    """For each capability a spec needs: proceed on yes; refuse with Unsupported on no (with
    the support's reason) and on unknown, since none of the five is visible on failure."""
    backend = FakeBackend({capability: answer})
    spec = spec_needing(capability)
    if outcome == "proceeds":
        plan = make_plan(backend, spec)
        assert plan.capabilities[capability].value is YES
        assert plan.unverified == ()
        assert plan.spec == spec
        assert plan.backend == "fake"
    else:
        with pytest.raises(outcome) as refusal:
            make_plan(backend, spec)
        assert str(capability) in str(refusal.value)
        if answer is NO:
            assert f"{capability} said no" in str(refusal.value)


OPTIONAL = [c for c in SPEC_CAPABILITIES if c is not Capability.ATTEMPT_INJECTION]


@pytest.mark.parametrize("capability", OPTIONAL)
@pytest.mark.parametrize("answer", [NO, UNKNOWN, MISSING])
def test_capability_the_spec_does_not_need_is_never_checked(capability, answer):
    """A capability the spec does not need may answer anything: e.g. WorkingDirectory no
    with no work_dir proceeds (the spec needs every other capability)."""
    others = [c for c in OPTIONAL if c is not capability]
    plan = make_plan(FakeBackend({capability: answer}), spec_needing(*others))
    assert capability not in plan.capabilities
    assert set(plan.capabilities) == {*others, Capability.ATTEMPT_INJECTION}


def test_working_directory_no_without_work_dir_proceeds():
    """The seed's example: WorkingDirectory answered no does not matter to a spec that sets
    no work_dir; the same adapter refuses a spec that sets one."""
    backend = FakeBackend({Capability.WORKING_DIRECTORY: NO})
    assert make_plan(backend, JobSpec(command=("x",))).unverified == ()
    with pytest.raises(Unsupported, match="WorkingDirectory"):
        make_plan(backend, JobSpec(command=("x",), work_dir="/w"))


@pytest.mark.parametrize(
    "capability", [c for c in capabilities() if c not in SPEC_CAPABILITIES], ids=str
)
@pytest.mark.parametrize("answer", [NO, UNKNOWN, MISSING])
def test_capabilities_no_spec_field_needs_are_never_checked(capability, answer):
    """The core reads only the five capabilities a spec can need; the other nine are for a
    host to show, whatever they answer."""
    plan = make_plan(FakeBackend({capability: answer}), spec_needing(*SPEC_CAPABILITIES))
    assert plan.unverified == ()


@pytest.mark.parametrize("answer", [NO, UNKNOWN, MISSING])
def test_attempt_injection_is_never_waived(answer):
    """AttemptInjection is needed by every spec; unknown or no refuses, and no option or
    policy waives it."""
    backend = CompilerBackend(answers={Capability.ATTEMPT_INJECTION: answer})
    with pytest.raises(Unsupported, match="AttemptInjection"):
        make_plan(
            backend,
            JobSpec(command=("x",)),
            policy_of(2),
            with_supervisor(),
            accept_unenforced(0),
            accept_unverified(1, Enforcer.SUPERVISOR),
        )


def test_capabilities_are_asked_for_the_spec():
    """Backend.capabilities is called with the spec being planned."""
    backend = FakeBackend()
    spec = spec_needing(Capability.WORKING_DIRECTORY)
    make_plan(backend, spec)
    assert ("capabilities", spec) in backend.calls


def test_other_namespace_extensions_are_not_checked():
    """Adapter-specific extensions (slurm.Partition) are not checked by the core; even with
    every capability unknown apart from AttemptInjection the plan proceeds."""
    answers = {c: UNKNOWN for c in capabilities()} | {Capability.ATTEMPT_INJECTION: YES}
    spec = JobSpec(command=("x",), extensions={"slurm.Partition": "gpu", "kubeflow.Queue": "q"})
    plan = make_plan(FakeBackend(answers), spec)
    assert list(plan.capabilities) == [Capability.ATTEMPT_INJECTION]


VISIBLE = [c for c in capabilities() if c.visible_on_failure]


@pytest.mark.parametrize(("answer", "outcome"), CAPABILITY_DECISIONS)
def test_visible_on_failure_capabilities_proceed_unverified(monkeypatch, answer, outcome):
    """If a visible-on-failure capability were needed: yes proceeds, no refuses with its
    reason, unknown (or missing) proceeds and is listed in Plan.unverified, in order."""
    monkeypatch.setattr(
        plan_module,
        "needed_capabilities",
        lambda spec: (Capability.ATTEMPT_INJECTION, *VISIBLE),
    )
    backend = FakeBackend(dict.fromkeys(VISIBLE, answer))
    if answer is NO:
        with pytest.raises(Unsupported, match="OutputRead said no"):
            make_plan(backend, JobSpec(command=("x",)))
        return
    plan = make_plan(backend, JobSpec(command=("x",)))
    assert plan.unverified == (() if answer is YES else tuple(VISIBLE))


def test_unverified_capability_still_refuses_others(monkeypatch):
    """An unknown visible-on-failure capability does not waive an unknown ordinary one."""
    monkeypatch.setattr(
        plan_module,
        "needed_capabilities",
        lambda spec: (Capability.ATTEMPT_INJECTION, Capability.OUTPUT_READ),
    )
    backend = FakeBackend({Capability.OUTPUT_READ: UNKNOWN, Capability.ATTEMPT_INJECTION: UNKNOWN})
    with pytest.raises(Unsupported, match="AttemptInjection"):
        make_plan(backend, JobSpec(command=("x",)))


# ---------------------------------------------------------------------------------------------
# Rule support
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rules", "answered"), [(0, 1), (1, 0), (2, 1), (2, 3), (3, 0)])
def test_rule_support_count_must_match_the_policy(rules, answered):
    """Backend.rules answers one RuleSupport per rule; any other count is Rejected."""
    backend = FakeBackend(performs=[YES] * answered)
    with pytest.raises(Rejected, match="one per rule"):
        make_plan(backend, JobSpec(command=("x",)), policy_of(rules), with_supervisor())


def test_rules_are_asked_with_the_policy():
    """Backend.rules is asked about the policy itself."""
    backend = FakeBackend()
    policy = policy_of(3)
    make_plan(backend, JobSpec(command=("x",)), policy, with_supervisor())
    assert ("rules", policy) in backend.calls


N = None  # the option is not given
S = Enforcer.SUPERVISOR
B = Enforcer.BACKEND
NB = Enforcer.NOBODY

# One rule. perform | in native offer | with_supervisor | accept_unenforced | accept_unverified
#   -> enforcer, or the error
RULE_DECISIONS = [
    # perform no: refused, nothing can accept it
    (NO, False, False, False, N, Unsupported),
    (NO, False, True, True, S, Unsupported),
    (NO, False, True, True, NB, Unsupported),
    # perform unknown: refused unless accept_unverified names the enforcer
    (UNKNOWN, False, False, False, N, Unsupported),
    (UNKNOWN, False, True, True, N, Unsupported),
    (UNKNOWN, False, False, False, S, S),
    (UNKNOWN, False, False, False, NB, NB),
    (UNKNOWN, False, True, False, NB, NB),
    # (a decision of the core, not the seed's: the backend enforces only rules it offered
    # natively, and a native yes needs perform yes, so it can never take an unknown rule)
    (UNKNOWN, False, False, False, B, Rejected),
    # perform yes: backend if natively offered, else supervisor, else nobody, else Rejected
    (YES, True, False, False, N, B),
    (YES, True, True, True, N, B),
    (YES, False, True, False, N, S),
    (YES, False, True, True, N, S),
    (YES, False, False, True, N, NB),
    (YES, False, False, False, N, Rejected),
    (YES, False, False, False, S, Rejected),  # accept_unverified is for unknown rules only
]


@pytest.mark.parametrize(
    ("perform", "native", "supervisor", "unenforced", "unverified", "outcome"), RULE_DECISIONS
)
def test_rule_decision(perform, native, supervisor, unenforced, unverified, outcome):
    """Seed 000 "Rule support": no refuses; unknown needs accept_unverified; yes is assigned
    backend, supervisor or nobody, in that order of preference, or is Rejected."""
    options = []
    if supervisor:
        options.append(with_supervisor())
    if unenforced:
        options.append(accept_unenforced(0))
    if unverified is not N:
        options.append(accept_unverified(0, unverified))
    if native:
        backend: FakeBackend = CompilerBackend(native_answers=[YES], performs=[perform])
    else:
        backend = FakeBackend(performs=[perform])
    spec = JobSpec(command=("x",))
    if isinstance(outcome, type):
        with pytest.raises(outcome) as refusal:
            make_plan(backend, spec, policy_of(1), *options)
        assert "rule 0" in str(refusal.value)
        if outcome is Unsupported:
            assert f"rule perform {perform}" in str(refusal.value)  # the support's reason
        return
    plan = make_plan(backend, spec, policy_of(1), *options)
    assert plan.enforcers == (outcome,)
    assert plan.unverified_rules == ((0,) if perform is UNKNOWN else ())


def test_accept_unverified_records_enforcer_per_rule():
    """Each accepted unknown rule gets the enforcer named for it, and is listed in
    Plan.unverified_rules in policy order."""
    backend = FakeBackend(performs=[UNKNOWN, YES, UNKNOWN])
    plan = make_plan(
        backend,
        JobSpec(command=("x",)),
        policy_of(3),
        accept_unverified(2, Enforcer.NOBODY),
        with_supervisor(),
        accept_unverified(0, Enforcer.SUPERVISOR),
    )
    assert plan.enforcers == (Enforcer.SUPERVISOR, Enforcer.SUPERVISOR, Enforcer.NOBODY)
    assert plan.unverified_rules == (0, 2)


def test_accept_unenforced_is_per_rule():
    """accept_unenforced(i) covers rule i only; another yes rule is still Rejected."""
    backend = FakeBackend(performs=[YES, YES])
    with pytest.raises(Rejected, match="rule 1"):
        make_plan(backend, JobSpec(command=("x",)), policy_of(2), accept_unenforced(0))
    plan = make_plan(
        backend, JobSpec(command=("x",)), policy_of(2), accept_unenforced(0), accept_unenforced(1)
    )
    assert plan.enforcers == (Enforcer.NOBODY, Enforcer.NOBODY)


def test_empty_policy_needs_no_options():
    """No rules: nothing to enforce, no options needed; no policy means an empty one."""
    plan = make_plan(FakeBackend(), JobSpec(command=("x",)))
    assert plan.policy == Policy()
    assert (plan.enforcers, plan.unverified_rules, plan.native) == ((), (), None)


@pytest.mark.parametrize(
    ("rules", "option"),
    [
        (0, accept_unverified(0, Enforcer.SUPERVISOR)),
        (2, accept_unverified(2, Enforcer.SUPERVISOR)),
        (2, accept_unverified(-1, Enforcer.NOBODY)),
        (0, accept_unenforced(0)),
        (2, accept_unenforced(2)),
        (2, accept_unenforced(-1)),
    ],
)
def test_option_naming_a_rule_outside_the_policy_is_rejected(rules, option):
    """An option naming a rule index the policy does not have is Rejected."""
    backend = FakeBackend()
    with pytest.raises(Rejected, match="names rule"):
        make_plan(backend, JobSpec(command=("x",)), policy_of(rules), with_supervisor(), option)


def test_option_outside_the_policy_is_rejected_before_any_question():
    """A bad option is refused before the adapter is asked anything."""
    backend = FakeBackend({Capability.ATTEMPT_INJECTION: NO})
    with pytest.raises(Rejected):
        make_plan(backend, JobSpec(command=("x",)), policy_of(1), accept_unenforced(5))
    assert backend.calls == []


def test_with_job_keeps_the_job_id():
    """with_job(job_id) plans for that job; without it each plan gets a fresh job id."""
    job = JobID()
    plan = make_plan(FakeBackend(), JobSpec(command=("x",)), None, with_job(job))
    assert plan.job == job
    first = make_plan(FakeBackend(), JobSpec(command=("x",)))
    second = make_plan(FakeBackend(), JobSpec(command=("x",)))
    assert first.job != second.job


def test_make_plan_refuses_a_non_option():
    """Anything but a make_plan option is Rejected."""
    with pytest.raises(Rejected, match="not a make_plan option"):
        make_plan(FakeBackend(), JobSpec(command=("x",)), None, "with_supervisor")


# ---------------------------------------------------------------------------------------------
# NativePolicyCompiler
# ---------------------------------------------------------------------------------------------


def test_native_is_asked_before_compile_with_the_whole_policy():
    """The compiler is asked Native, then offered the whole policy, every rule's full budget,
    unchanged (Compile); the accepted offer is Plan.native."""
    policy = Policy(
        rules=(
            Rule(kind=RuleKind.REQUEUE, budget=3),
            Rule(kind=RuleKind.RESUBMIT, budget=5),
            Rule(kind=RuleKind.RESTART, budget=7),
        )
    )
    backend = CompilerBackend(native_answers=[YES, NO, YES], performs=[YES, YES, YES])
    plan = make_plan(backend, JobSpec(command=("x",)), policy, with_supervisor())
    questions = [name for name in backend.asked() if name in ("native", "compile")]
    assert questions == ["native", "compile"]
    compiled_with = dict(backend.calls)["compile"]
    assert compiled_with == policy
    assert [r.budget for r in compiled_with.rules] == [3, 5, 7]
    assert dict(backend.calls)["native"] == policy
    assert plan.native == NativeOffer(rules=(0, 2), detail={"compiled": "yes"})
    assert plan.enforcers == (Enforcer.BACKEND, Enforcer.SUPERVISOR, Enforcer.BACKEND)


def test_shared_checkpoint_asks_the_compiler_neither_question():
    """Under a shared checkpoint every rule becomes a hold for a person: neither Native nor
    Compile is asked, nothing is native, and a yes rule needs a supervisor or acceptance."""
    backend = CompilerBackend(performs=[YES, YES])
    policy = policy_of(2, shared_checkpoint=True)
    with pytest.raises(Rejected, match="nobody enforces rule 0"):
        make_plan(backend, JobSpec(command=("x",)), policy)
    plan = make_plan(backend, JobSpec(command=("x",)), policy, with_supervisor())
    assert "native" not in backend.asked() and "compile" not in backend.asked()
    assert plan.native is None
    assert plan.enforcers == (Enforcer.SUPERVISOR, Enforcer.SUPERVISOR)


def test_without_the_interface_plan_native_is_none():
    """A plain Backend offers nothing natively."""
    plan = make_plan(FakeBackend(), JobSpec(command=("x",)), policy_of(1), with_supervisor())
    assert plan.native is None
    assert plan.enforcers == (Enforcer.SUPERVISOR,)


# native answers | compiled rules | performs -> outcome
NATIVE_DECISIONS = [
    ([YES, YES], [0, 1], [YES, YES], (B, B)),
    ([YES, YES], [1], [YES, YES], (S, B)),  # a native yes it did not compile: not native
    ([YES, NO], [], [YES, YES], (S, S)),
    ([NO, UNKNOWN], [], [YES, YES], (S, S)),
    ([NO, YES], [0], [YES, YES], Rejected),  # compiled a rule it answered native no
    ([UNKNOWN, YES], [0, 1], [YES, YES], Rejected),  # compiled a rule answered native unknown
    ([YES, YES], [0, 2], [YES, YES], Rejected),  # compiled a rule the policy lacks
    ([YES, NO], [], [UNKNOWN, YES], Rejected),  # native yes, perform unknown
    ([NO, YES], [], [YES, NO], Rejected),  # native yes, perform no: Rejected, not Unsupported
    ([YES], [0], [YES, YES], Rejected),  # wrong native answer count
    ([YES, YES, YES], [0], [YES, YES], Rejected),
    ([NO, NO], [], [NO, YES], Unsupported),  # consistent answers; rule 0 cannot be performed
]


@pytest.mark.parametrize(("native", "compiled", "performs", "outcome"), NATIVE_DECISIONS)
def test_native_offer_decision(native, compiled, performs, outcome):
    """A rule it compiles must be one it answered yes natively, and a native yes must have a
    perform of yes; otherwise Rejected. The accepted offer decides which rules are backend's."""
    backend = CompilerBackend(native_answers=native, compiled=compiled, performs=performs)
    args = (backend, JobSpec(command=("x",)), policy_of(2), with_supervisor())
    if isinstance(outcome, type):
        with pytest.raises(outcome):
            make_plan(*args)
        return
    plan = make_plan(*args)
    assert plan.enforcers == outcome
    assert plan.native is not None and list(plan.native.rules) == compiled


def test_compiler_with_unknown_rule_accepted_for_the_supervisor():
    """An unknown rule answered native no can be accepted unverified for the supervisor while
    another rule is compiled."""
    backend = CompilerBackend(native_answers=[NO, YES], compiled=[1], performs=[UNKNOWN, YES])
    plan = make_plan(
        backend, JobSpec(command=("x",)), policy_of(2), accept_unverified(0, Enforcer.SUPERVISOR)
    )
    assert plan.enforcers == (Enforcer.SUPERVISOR, Enforcer.BACKEND)
    assert plan.unverified_rules == (0,)


# ---------------------------------------------------------------------------------------------
# Execution identity (IdentityWeakener)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["", "allowRankRestart: one rank may rerun as itself"])
def test_identity_weakener_answer_is_recorded(answer):
    """The IdentityWeakener's answer for the spec is Plan.identity_weakened, even "" (kept)."""
    backend = WeakenerBackend(answer)
    spec = JobSpec(command=("x",))
    plan = make_plan(backend, spec)
    assert plan.identity_weakened == answer
    assert plan.model_dump()["identity_weakened"] == answer
    assert ("identity_weakened", spec) in backend.calls


def test_identity_weakener_refuses_nothing():
    """The core refuses nothing on a weakening: the plan proceeds as it would without it."""
    backend = WeakenerBackend("weak", performs=[YES])
    plan = make_plan(backend, JobSpec(command=("x",)), policy_of(1), with_supervisor())
    assert plan.enforcers == (Enforcer.SUPERVISOR,)


def test_identity_weakener_error_fails_make_plan():
    """An error from identity_weakened fails make_plan: it propagates unchanged."""

    class Boom(Exception):
        pass

    error = Boom("cannot read the runtime")
    with pytest.raises(Boom) as raised:
        make_plan(WeakenerBackend(error), JobSpec(command=("x",)))
    assert raised.value is error


def test_without_identity_weakener_the_field_is_absent():
    """An adapter without the interface never weakens identity: the key is absent."""
    plan = make_plan(FakeBackend(), JobSpec(command=("x",)))
    assert plan.identity_weakened is None
    assert "identity_weakened" not in plan.model_dump()
    assert "identity_weakened" not in plan.model_dump(mode="json")


def test_make_plan_never_touches_the_scheduler():
    """make_plan only asks questions: capabilities, rules, and the optional interfaces."""
    backend = WeakenerBackend("", performs=[YES])
    make_plan(backend, spec_needing(*SPEC_CAPABILITIES), policy_of(1), with_supervisor())
    assert set(backend.asked()) <= {"capabilities", "rules", "identity_weakened"}


# ---------------------------------------------------------------------------------------------
# Property: make_plan agrees with an independent statement of the seed's rules
# ---------------------------------------------------------------------------------------------

# Each draw below is weighted towards the well-behaved answer, so that every kind of fault
# appears on its own often enough, and a fair share of the cases get through to a plan.
ANSWER = st.sampled_from([YES, NO, UNKNOWN, MISSING])
PERFORM = st.sampled_from([YES, YES, YES, YES, UNKNOWN, UNKNOWN, NO])
NATIVE = st.sampled_from([YES, NO, UNKNOWN])
NOT_BACKEND_MOSTLY = st.sampled_from(
    [Enforcer.SUPERVISOR, Enforcer.NOBODY] * 2 + [Enforcer.BACKEND]
)
RARELY = st.sampled_from([False] * 5 + [True])
SOMETIMES = st.sampled_from([False, False, True])


@dataclass
class Case:
    triggers: set[Capability]
    answers: dict[Capability, Tristate | None]
    rules: int
    shared_checkpoint: bool
    performs: list[Tristate]
    compiler: bool
    native: list[Tristate]
    compiled: list[int]
    supervisor: bool
    unverified: dict[int, Enforcer]
    unenforced: set[int]


def _answers(draw: st.DrawFn, answer: st.SearchStrategy[Tristate], rules: int) -> list[Tristate]:
    """One answer per rule, or now and then one too few or too many."""
    count = max(0, rules + draw(st.sampled_from([0] * 8 + [-1, 1])))
    return draw(st.lists(answer, min_size=count, max_size=count))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    rules = draw(st.integers(0, 4))
    triggers = draw(st.sets(st.sampled_from(SPEC_CAPABILITIES)))
    answers = {c: draw(ANSWER) for c in capabilities()}
    if not draw(RARELY):  # mostly, every capability the spec needs is yes
        answers.update(dict.fromkeys([*triggers, Capability.ATTEMPT_INJECTION], YES))

    performs = _answers(draw, PERFORM, rules)
    native = _answers(draw, NATIVE, rules)
    if not draw(SOMETIMES):  # mostly a consistent compiler: native yes only where perform yes
        native = [
            a if i < len(performs) and performs[i] is YES else NO for i, a in enumerate(native)
        ]
    native_yes = [i for i, a in enumerate(native) if a is YES]
    if draw(RARELY):  # now and then, any rule (or one past the end)
        compiled = sorted(draw(st.sets(st.integers(0, rules))))
    else:  # the native yes rules, less some it declines
        declined = draw(st.sets(st.sampled_from(native_yes))) if native_yes else set()
        compiled = sorted(set(native_yes) - declined)
    inside = st.integers(0, rules - 1) if rules else st.nothing()
    unverified = draw(st.dictionaries(inside, NOT_BACKEND_MOSTLY, max_size=rules))
    if not draw(RARELY):  # mostly, every unknown rule is accepted unverified
        for i, perform in enumerate(performs[:rules]):
            if perform is UNKNOWN and i not in unverified:
                unverified[i] = draw(NOT_BACKEND_MOSTLY)
    unenforced = draw(st.sets(inside, max_size=rules))
    if draw(RARELY):  # an option naming a rule outside the policy
        stray = draw(st.sampled_from([-1, rules]))
        if draw(st.booleans()):
            unenforced.add(stray)
        else:
            unverified[stray] = draw(st.sampled_from(list(Enforcer)))
    return Case(
        triggers=triggers,
        answers=answers,
        rules=rules,
        shared_checkpoint=draw(SOMETIMES),
        performs=performs,
        compiler=not draw(SOMETIMES),
        native=native,
        compiled=compiled,
        supervisor=draw(st.booleans()),
        unverified=unverified,
        unenforced=unenforced,
    )


def oracle(case: Case) -> type[Exception] | tuple[tuple[Enforcer, ...], tuple[int, ...], Any]:
    """The seed's rules, stated again: the error make_plan must raise, or the enforcers,
    the unverified rules and the native rule set of the plan."""
    # Options are the caller's; one naming a rule the policy lacks is refused as asked.
    named = list(case.unverified) + list(case.unenforced)
    if any(not 0 <= i < case.rules for i in named):
        return Rejected
    # How Submit uses the answers: every needed capability (the triggered ones and
    # AttemptInjection, always) must be yes. None of the five is visible on failure, so
    # no and unknown (and a missing answer, which is unknown) refuse alike.
    for capability in {*case.triggers, Capability.ATTEMPT_INJECTION}:
        if case.answers[capability] is not YES:
            return Unsupported
    # Rule support: one answer per rule.
    if len(case.performs) != case.rules:
        return Rejected
    # The compiler, unless the checkpoint is shared: consistent answers, or Rejected.
    offered: set[int] = set()
    if case.compiler and not case.shared_checkpoint:
        if len(case.native) != case.rules:
            return Rejected
        native_yes = {i for i, a in enumerate(case.native) if a is YES}
        if any(case.performs[i] is not YES for i in native_yes):
            return Rejected
        if not set(case.compiled) <= native_yes:
            return Rejected
        offered = set(case.compiled)
    enforcers: list[Enforcer] = []
    unverified: list[int] = []
    for i, perform in enumerate(case.performs):
        if perform is NO:
            return Unsupported
        if perform is UNKNOWN:
            if i not in case.unverified:
                return Unsupported
            # A decision of the implementation, not of the seed: the backend can only be named
            # for a rule it offered natively, and an unknown rule can never be offered.
            if case.unverified[i] is Enforcer.BACKEND:
                return Rejected
            enforcers.append(case.unverified[i])
            unverified.append(i)
        elif i in offered:
            enforcers.append(Enforcer.BACKEND)
        elif case.supervisor:
            enforcers.append(Enforcer.SUPERVISOR)
        elif i in case.unenforced:
            enforcers.append(Enforcer.NOBODY)
        else:
            return Rejected
    native = tuple(case.compiled) if case.compiler and not case.shared_checkpoint else None
    return tuple(enforcers), tuple(unverified), native


@settings(max_examples=400)
@given(case=cases(), shuffle=st.randoms(use_true_random=False))
def test_make_plan_agrees_with_the_oracle(case: Case, shuffle: Any) -> None:
    """For random specs, answers, policies and options, make_plan returns exactly the plan the
    oracle predicts, or raises exactly the error it predicts."""
    answers = dict(case.answers)
    if case.compiler:
        backend: FakeBackend = CompilerBackend(
            native_answers=case.native,
            compiled=case.compiled,
            answers=answers,
            performs=case.performs,
        )
    else:
        backend = FakeBackend(answers, performs=case.performs)
    options = [accept_unverified(i, e) for i, e in case.unverified.items()]
    options += [accept_unenforced(i) for i in case.unenforced]
    if case.supervisor:
        options.append(with_supervisor())
    shuffle.shuffle(options)
    policy = policy_of(case.rules, shared_checkpoint=case.shared_checkpoint)
    spec = spec_needing(*case.triggers)

    expected = oracle(case)
    if isinstance(expected, type):
        with pytest.raises(Exception) as raised:
            make_plan(backend, spec, policy, *options)
        assert type(raised.value) is expected, f"{raised.value!r}, expected {expected.__name__}"
        return
    plan = make_plan(backend, spec, policy, *options)
    enforcers, unverified, native = expected
    assert plan.enforcers == enforcers
    assert plan.unverified_rules == unverified
    assert plan.unverified == ()
    assert (plan.native.rules if plan.native is not None else None) == native
    assert plan.policy == policy
    asked = [name for name in backend.asked() if name in ("native", "compile")]
    assert asked == (["native", "compile"] if native is not None else [])
