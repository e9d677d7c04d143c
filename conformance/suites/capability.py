"""Capability (``CAP-``): the adapter's answers, and make_plan's decisions on them (seed 000).

- the fourteen answers, AttemptInjection yes, one rule answer per rule in policy order;
- every make_plan decision on the adapter's actual answers: each capability a spec can need
  (proceed on yes, Unsupported with the reason otherwise), each rule (an enforcer per the seed,
  or a refusal), the native offer's consistency, the identity weakening recorded;
- a declared yes verified by behaviour: the working directory, the ranks per node, the output
  path, holds, accounting history (an end read late) and the pre-termination signal are
  honoured. A declared yes that behaviour contradicts fails, never skips;
- preflight: bounded, leaving nothing it submitted behind, every answer probed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from conformance.checks import CheckFailed, Context, Needs, Skip, SkippedFor, check
from conformance.harness import CannotInject, Fault, Probe
from conformance.steps import call, found, long_spec, look, run
from conformance.suites.clauses import SEED_000
from conformance.suites.hold import start_held
from conformance.tiers import Tier
from dispatch_core import (
    IMAGE,
    OUTPUT,
    Backend,
    Capability,
    Cause,
    Conflict,
    DispatchError,
    Enforcer,
    Holder,
    IdentityWeakener,
    JobID,
    JobSpec,
    NativeOffer,
    NativePolicyCompiler,
    NotFound,
    ObjectRef,
    Observation,
    OutputReader,
    PlanOption,
    Policy,
    Preflight,
    PreflightOptions,
    Rejected,
    Rule,
    RuleKind,
    RuleSupport,
    Source,
    State,
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
from dispatch_core.plan import decide_rules


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


# -- make_plan on each capability a spec can need (seed 000, "How Submit uses the answers") ----

SUBMIT_CLAUSE = f"{SEED_000}, How Submit uses the answers"
RULE_CLAUSE = f"{SEED_000}, Rule support"
IDENTITY_CLAUSE = f"{SEED_000}, Execution identity"
BEHAVIOUR_CLAUSE = f"{SEED_000}, Capabilities and support; DESIGN §6: a declared yes is verified"

SPEC_NEEDED: tuple[Capability, ...] = (
    Capability.CONTAINER_IMAGE,
    Capability.ATTEMPT_INJECTION,
    Capability.WORKING_DIRECTORY,
    Capability.PROCS_PER_NODE,
    Capability.OUTPUT_PATH,
)
"""The five capabilities a spec can need, in the seed table's order."""


CHECK_IMAGE: Final = "docker.io/library/busybox:1.36"
"""The image the ContainerImage checks ask for (dispatch.Image)."""


def needing(capability: Capability) -> dict[str, object]:
    """JobSpec fields that make a spec need ``capability`` (none for AttemptInjection, which
    every spec needs)."""
    fields: dict[Capability, dict[str, object]] = {
        Capability.CONTAINER_IMAGE: {"extensions": {IMAGE: CHECK_IMAGE}},
        Capability.ATTEMPT_INJECTION: {},
        Capability.WORKING_DIRECTORY: {"work_dir": "/tmp"},
        Capability.PROCS_PER_NODE: {"procs_per_node": 2},
        Capability.OUTPUT_PATH: {"extensions": {OUTPUT: "/tmp/dispatch-conformance.out"}},
    }
    return fields[capability]


def describe(spec: JobSpec) -> str:
    """The spec's fields that make it need something, for a failure message."""
    parts = []
    if spec.extensions:
        parts.append(f"extensions={dict(spec.extensions)}")
    if spec.work_dir is not None:
        parts.append(f"work_dir={spec.work_dir!r}")
    if spec.nodes != 1:
        parts.append(f"nodes={spec.nodes}")
    if spec.procs_per_node:
        parts.append(f"procs_per_node={spec.procs_per_node}")
    return "a spec with " + ", ".join(parts) if parts else "a plain spec"


def answer_for(ctx: Context, spec: JobSpec | None, capability: Capability) -> Support:
    """The adapter's answer for ``capability`` for ``spec`` (a capability left out is unknown)."""
    answer = ctx.backend.capabilities(spec).get(capability, Support())
    what = describe(spec) if spec is not None else "no spec"
    ctx.expect(
        isinstance(answer, Support),
        f"answered {capability} for {what} with {type(answer).__name__}, not a Support",
    )
    return answer


def refusing(ctx: Context, spec: JobSpec) -> tuple[Capability, Support] | None:
    """The first capability ``spec`` needs whose answer the seed refuses on, with that answer:
    no, or unknown for a capability not visible on failure."""
    for capability in needed_capabilities(spec):
        answer = answer_for(ctx, spec, capability)
        if answer.value is Tristate.YES:
            continue
        if answer.value is Tristate.UNKNOWN and capability.visible_on_failure:
            continue
        return capability, answer
    return None


def expect_capability_decision(
    ctx: Context,
    spec: JobSpec,
    capability: Capability,
    policy: Policy | None = None,
    *options: PlanOption,
) -> bool:
    """make_plan on ``spec`` (with ``policy`` and ``options``, whose rules the adapter can
    perform) proceeds exactly when the seed's decision on the adapter's answers for the
    capabilities says so, and otherwise refuses with Unsupported naming the capability and
    carrying the answer's reason. Returns whether it proceeded; a plan made is started, and
    start must not refuse what the adapter answered yes for."""
    needed = needed_capabilities(spec)
    ctx.expect(
        capability in needed and Capability.ATTEMPT_INJECTION in needed,
        f"the core says {describe(spec)} needs {', '.join(needed)}, "
        f"not {capability} and AttemptInjection",
    )
    answer = answer_for(ctx, spec, capability)
    refusal = refusing(ctx, spec)
    try:
        plan = ctx.plan(spec, policy, *options)
    except Unsupported as refused:
        text = str(refused)
        if refusal is None:
            ctx.fail(
                f"answered {capability} {answer.value} for {describe(spec)}, yet make_plan "
                f"refused it: {text}"
            )
            return False
        blocked, why = refusal
        ctx.expect(
            str(blocked) in text,
            f"make_plan refused {describe(spec)} without naming {blocked} "
            f"(answered {why.value}): {text}",
        )
        ctx.expect(
            why.reason in text,
            f"make_plan refused {describe(spec)} for {blocked} without the answer's reason "
            f"{why.reason!r}: {text}",
        )
        return False
    if refusal is not None:
        blocked, why = refusal
        ctx.fail(
            f"answered {blocked} {why.value} for {describe(spec)}, yet make_plan proceeded "
            "(it must refuse with Unsupported)"
        )
    ctx.expect(
        plan.capabilities.get(capability) == answer,
        f"the plan records {capability} as {plan.capabilities.get(capability)!r}, "
        f"not the adapter's answer {answer!r}",
    )
    ctx.expect(
        plan.unverified == (),
        f"the plan lists {', '.join(plan.unverified)} as unverified for {describe(spec)}",
    )
    try:
        ctx.start(plan)
    except (Unsupported, Rejected) as refused:
        ctx.fail(
            f"answered {capability} yes for {describe(spec)}, but start refused the plan: "
            f"{type(refused).__name__}: {refused}"
        )
    return True


@check(
    "CAP-004",
    clause=f"{SUBMIT_CLAUSE}: ContainerImage, needed when the spec carries dispatch.Image",
)
def container_image_decision(ctx: Context) -> None:
    """dispatch.Image proceeds exactly on ContainerImage yes, else Unsupported with the reason."""
    capability = Capability.CONTAINER_IMAGE
    expect_capability_decision(ctx, ctx.spec(**needing(capability)), capability)


@check("CAP-005", clause=f"{SUBMIT_CLAUSE}: WorkingDirectory, needed when JobSpec.WorkDir is set")
def working_directory_decision(ctx: Context) -> None:
    """work_dir proceeds exactly on WorkingDirectory yes, else Unsupported with the reason."""
    capability = Capability.WORKING_DIRECTORY
    expect_capability_decision(ctx, ctx.spec(**needing(capability)), capability)


@check("CAP-006", clause=f"{SUBMIT_CLAUSE}: ProcsPerNode, needed when JobSpec.ProcsPerNode > 0")
def procs_per_node_decision(ctx: Context) -> None:
    """procs_per_node > 0 proceeds exactly on ProcsPerNode yes, else Unsupported with the reason."""
    capability = Capability.PROCS_PER_NODE
    expect_capability_decision(ctx, ctx.spec(**needing(capability)), capability)


@check(
    "CAP-007", clause=f"{SUBMIT_CLAUSE}: OutputPath, needed when the spec carries dispatch.Output"
)
def output_path_decision(ctx: Context) -> None:
    """dispatch.Output proceeds exactly on OutputPath yes, else Unsupported with the reason."""
    capability = Capability.OUTPUT_PATH
    expect_capability_decision(ctx, ctx.spec(**needing(capability)), capability)


@check("CAP-008", clause=f"{SUBMIT_CLAUSE}: AttemptInjection, needed always; nothing waives it")
def attempt_injection_decision(ctx: Context) -> None:
    """Every spec needs AttemptInjection, answered yes; no option waives a refusal."""
    capability = Capability.ATTEMPT_INJECTION
    every_option = (
        with_supervisor(),
        accept_unenforced(0),
        accept_unverified(0, Enforcer.SUPERVISOR),
    )
    specs = [ctx.spec(), ctx.spec(nodes=2)]
    specs += [ctx.spec(**needing(c)) for c in SPEC_NEEDED if c is not capability]
    kinds = performable(ctx)
    for spec in specs[:2]:
        expect_capability_decision(ctx, spec, capability)
        if kinds:  # one rule the adapter can perform, so that every option applies to it
            policy = Policy(rules=(Rule(kind=kinds[0]),))
            expect_capability_decision(ctx, spec, capability, policy, *every_option)
    for spec in specs:
        answer = answer_for(ctx, spec, capability)
        ctx.expect(
            answer.value is Tristate.YES,
            f"answered AttemptInjection {answer.value} for {describe(spec)} "
            f"(reason {answer.reason!r}): every rank of every execution must see the four "
            "DISPATCH_ variables, and nothing waives it",
        )


# -- make_plan on the rules (seed 000, "Rule support") ------------------------------------------


@dataclass(frozen=True)
class Options:
    """A set of make_plan's rule options, as the oracle below reads them."""

    supervisor: bool = False
    unenforced: frozenset[int] = frozenset()
    unverified: Mapping[int, Enforcer] = field(default_factory=dict)

    def plan_options(self) -> list[PlanOption]:
        chosen: list[PlanOption] = [with_supervisor()] if self.supervisor else []
        chosen += [accept_unenforced(i) for i in sorted(self.unenforced)]
        chosen += [accept_unverified(i, e) for i, e in sorted(self.unverified.items())]
        return chosen

    def __str__(self) -> str:
        parts = ["with_supervisor()"] if self.supervisor else []
        parts += [f"accept_unenforced({i})" for i in sorted(self.unenforced)]
        parts += [f"accept_unverified({i}, {e})" for i, e in sorted(self.unverified.items())]
        return ", ".join(parts) or "no options"


@dataclass(frozen=True)
class Decision:
    """What the seed's Rule support section decides: enforcers, or a refusal at a rule."""

    enforcers: tuple[Enforcer, ...] = ()
    unverified: tuple[int, ...] = ()
    refusal: type[DispatchError] | None = None
    rule: int | None = None
    why: str = ""
    inconsistent: str = ""


def native_offer(ctx: Context, policy: Policy) -> tuple[set[int], str | None]:
    """The rules the adapter's native offer includes (none under a shared checkpoint or without
    the interface), and why make_plan must refuse the offer when it is inconsistent."""
    backend = ctx.backend
    if policy.shared_checkpoint or not isinstance(backend, NativePolicyCompiler):
        return set(), None
    native = list(backend.native(policy))
    performs = [s.perform for s in backend.rules(policy)]
    if len(native) != len(policy.rules) or len(performs) != len(policy.rules):
        return set(), "the native answers do not count one per rule"
    for index, answer in enumerate(native):
        if answer.value is Tristate.YES and performs[index].value is not Tristate.YES:
            return set(), f"rule {index} is native yes but its perform is not yes"
    offer = backend.compile(policy)
    chosen = set(offer.rules)
    for index in chosen:
        if index >= len(native) or native[index].value is not Tristate.YES:
            return chosen, f"the offer compiles rule {index}, which is not native yes"
    return chosen, None


def decide(
    performs: Sequence[Support], native: set[int], options: Options, inconsistent: str | None
) -> Decision:
    """The seed's decision (``dispatch_core.plan.decide_rules``, the one Perform table) on the
    adapter's own answers; an inconsistent native offer is Rejected."""
    if inconsistent is not None:
        return Decision(refusal=Rejected, inconsistent=inconsistent)
    decided = decide_rules(
        performs,
        native,
        unverified=options.unverified,
        supervisor=options.supervisor,
        unenforced=options.unenforced,
    )
    return Decision(
        decided.enforcers, decided.unverified, decided.refusal, decided.rule, decided.reason
    )


def expect_rule_decision(ctx: Context, policy: Policy, options: Options) -> None:
    """make_plan on ``policy`` with ``options`` decides what the seed decides on the adapter's
    own answers."""
    performs = [s.perform for s in ctx.backend.rules(policy)]
    ctx.expect(
        len(performs) == len(policy.rules),
        f"answered {len(performs)} rule supports for a policy of {len(policy.rules)} rules",
    )
    native, inconsistent = native_offer(ctx, policy)
    expected = decide(performs, native, options, inconsistent)
    kinds = ", ".join(str(r.kind) for r in policy.rules)
    shared = " under a shared checkpoint" if policy.shared_checkpoint else ""
    asked = f"the policy [{kinds}]{shared} with {options}"
    answered = ", ".join(str(p.value) for p in performs)
    try:
        plan = ctx.plan(ctx.spec(), policy, *options.plan_options())
    except (Unsupported, Rejected) as refused:
        if expected.refusal is None:
            ctx.fail(
                f"make_plan refused {asked} with {type(refused).__name__} ({refused}), although "
                f"the rules were answered [{answered}]: the seed assigns "
                f"{', '.join(expected.enforcers)}"
            )
            return
        ctx.expect(
            type(refused) is expected.refusal,
            f"make_plan refused {asked} with {type(refused).__name__} ({refused}), not "
            f"{expected.refusal.__name__} (rules answered [{answered}])",
        )
        ctx.expect(
            expected.why in str(refused),
            f"make_plan refused {asked} without the perform answer's reason {expected.why!r}: "
            f"{refused}",
        )
        return
    if expected.refusal is not None:
        where = f" at rule {expected.rule}" if expected.rule is not None else ""
        ctx.fail(
            f"make_plan accepted {asked} (enforcers {', '.join(plan.enforcers)}), but the seed "
            f"refuses it with {expected.refusal.__name__}{where}: rules answered [{answered}]"
            + (
                f"; the native offer is inconsistent: {expected.inconsistent}"
                if expected.inconsistent
                else ""
            )
        )
    ctx.expect(
        plan.enforcers == expected.enforcers,
        f"make_plan assigned [{', '.join(plan.enforcers)}] for {asked}, not "
        f"[{', '.join(expected.enforcers)}] (rules answered [{answered}], native {sorted(native)})",
    )
    ctx.expect(
        plan.unverified_rules == expected.unverified,
        f"the plan lists unverified rules {plan.unverified_rules} for {asked}, "
        f"not {expected.unverified}",
    )
    if policy.shared_checkpoint:
        ctx.expect(
            plan.native is None,
            f"the plan carries a native offer {plan.native!r} under a shared checkpoint",
        )


def single_rule_options() -> list[Options]:
    return [
        Options(),
        Options(supervisor=True),
        Options(unenforced=frozenset({0})),
        Options(unverified={0: Enforcer.SUPERVISOR}),
        Options(unverified={0: Enforcer.BACKEND}),
        Options(supervisor=True, unenforced=frozenset({0}), unverified={0: Enforcer.SUPERVISOR}),
    ]


@check("CAP-009", clause=f"{RULE_CLAUSE}: the Perform table, one rule at a time")
def rule_decisions(ctx: Context) -> None:
    """Each rule alone: no refused whatever the options, unknown only if accepted, yes enforced."""
    for kind in RuleKind:
        for shared in (False, True):
            policy = Policy(rules=(Rule(kind=kind, budget=2),), shared_checkpoint=shared)
            for options in single_rule_options():
                expect_rule_decision(ctx, policy, options)


def performable(ctx: Context) -> list[RuleKind]:
    """The rule kinds the adapter does not answer no for, alone."""
    return [
        kind
        for kind in RuleKind
        if ctx.backend.rules(Policy(rules=(Rule(kind=kind),)))[0].perform.value is not Tristate.NO
    ]


def orders(kinds: Sequence[RuleKind]) -> list[list[RuleKind]]:
    """The kinds in their order, reversed, and rotated: an answer tied to a position shows."""
    forward = list(kinds)
    rotated = forward[2:] + forward[:2]
    distinct: list[list[RuleKind]] = []
    for order in (forward, forward[::-1], rotated):
        if order not in distinct:
            distinct.append(order)
    return distinct


@check("CAP-010", clause=f"{RULE_CLAUSE}: one RuleSupport per rule, in policy order")
def mixed_rule_decisions(ctx: Context) -> None:
    """Each rule of a mixed policy is answered and decided as alone, whatever its position."""
    alone = {
        kind: ctx.backend.rules(Policy(rules=(Rule(kind=kind),)))[0].perform for kind in RuleKind
    }
    for kinds in (list(RuleKind), performable(ctx)):
        for order in orders(kinds):
            policy = Policy(rules=tuple(Rule(kind=k) for k in order))
            answers = [s.perform for s in ctx.backend.rules(policy)]
            ctx.expect(
                len(answers) == len(order),
                f"answered {len(answers)} rule supports for a policy of {len(order)} rules",
            )
            for index, (kind, answer) in enumerate(zip(order, answers, strict=True)):
                ctx.expect(
                    answer.value is alone[kind].value,
                    f"answered {kind} {alone[kind].value} alone but {answer.value} at position "
                    f"{index} of [{', '.join(order)}]: answers are not in policy order",
                )
            every = range(len(order))
            for options in (
                Options(),
                Options(supervisor=True),
                Options(
                    supervisor=True,
                    unenforced=frozenset(every),
                    unverified={i: Enforcer.SUPERVISOR for i in every},
                ),
                Options(
                    unenforced=frozenset(every), unverified={i: Enforcer.NOBODY for i in every}
                ),
            ):
                expect_rule_decision(ctx, policy, options)


def sample_policies(ctx: Context) -> list[Policy]:
    """Each kind alone, every kind in order and reversed, with budgets from the check's seed."""
    policies = [Policy(rules=(Rule(kind=k, budget=ctx.rng.randint(1, 5)),)) for k in RuleKind]
    for order in orders(list(RuleKind))[:2]:
        policies.append(
            Policy(rules=tuple(Rule(kind=k, budget=ctx.rng.randint(0, 9)) for k in order))
        )
    return policies


@check("CAP-011", clause=f"{RULE_CLAUSE}: a NativePolicyCompiler's offer")
def native_offer_consistency(ctx: Context) -> None:
    """A native offer answers per rule and compiles only native-yes rules, each performable."""
    backend = ctx.backend
    if not isinstance(backend, NativePolicyCompiler):
        raise Skip(
            "the adapter is not a NativePolicyCompiler: it enforces no rule natively, and "
            "make_plan asks it nothing"
        )
    for policy in sample_policies(ctx):
        kinds = f"[{', '.join(str(r.kind) for r in policy.rules)}]"
        native = list(backend.native(policy))
        ctx.expect(
            len(native) == len(policy.rules),
            f"native() answered {len(native)} times for a policy of {len(policy.rules)} rules "
            f"{kinds}",
        )
        ctx.expect(
            all(isinstance(a, Support) for a in native),
            f"native() answered something other than Support values for {kinds}",
        )
        performs = [s.perform for s in backend.rules(policy)]
        for index, answer in enumerate(native):
            ctx.expect(
                answer.value is not Tristate.YES or performs[index].value is Tristate.YES,
                f"native() answers rule {index} ({policy.rules[index].kind}) yes, but its "
                f"perform is {performs[index].value}: a native yes must be performable",
            )
        offer = backend.compile(policy)
        ctx.expect(
            isinstance(offer, NativeOffer),
            f"compile() returned {type(offer).__name__}, not a NativeOffer",
        )
        ctx.expect(
            len(set(offer.rules)) == len(offer.rules),
            f"compile() offers rule indices {offer.rules} for {kinds}: an index twice",
        )
        yes = {i for i, a in enumerate(native) if a.value is Tristate.YES}
        extra = sorted(set(offer.rules) - yes)
        ctx.expect(
            not extra,
            f"compile() offers rules {extra} of {kinds}, which native() did not answer yes "
            f"(native yes: {sorted(yes)})",
        )
        if any(p.value is Tristate.NO for p in performs):
            continue
        unknown = {
            i: Enforcer.SUPERVISOR for i, p in enumerate(performs) if p.value is Tristate.UNKNOWN
        }
        plan = ctx.plan(
            ctx.spec(), policy, with_supervisor(), *Options(unverified=unknown).plan_options()
        )
        ctx.expect(
            plan.native == offer,
            f"the plan records the native offer {plan.native!r}, not compile()'s {offer!r}",
        )
        shared = Policy(rules=policy.rules, shared_checkpoint=True)
        plan = ctx.plan(
            ctx.spec(), shared, with_supervisor(), *Options(unverified=unknown).plan_options()
        )
        ctx.expect(
            plan.native is None and Enforcer.BACKEND not in plan.enforcers,
            f"under a shared checkpoint the plan carries native offer {plan.native!r} and "
            f"enforcers {plan.enforcers}: nothing is native then",
        )


@check("CAP-012", clause=f"{IDENTITY_CLAUSE}: IdentityWeakener and Plan.IdentityWeakened")
def identity_weakening_recorded(ctx: Context) -> None:
    """The plan records an IdentityWeakener's answer; without one the field is absent."""
    backend = ctx.backend
    specs = [ctx.spec(), ctx.spec(nodes=2)]
    specs += [
        ctx.spec(**needing(c))
        for c in SPEC_NEEDED
        if c is not Capability.ATTEMPT_INJECTION and refusing(ctx, ctx.spec(**needing(c))) is None
    ]
    for spec in specs:
        if refusing(ctx, spec) is not None:
            continue
        plan = ctx.plan(spec)
        record = plan.model_dump()
        if isinstance(backend, IdentityWeakener):
            answer = backend.identity_weakened(spec)
            ctx.expect(
                isinstance(answer, str),
                f"identity_weakened() answered {answer!r} for {describe(spec)}, not a str",
            )
            ctx.expect(
                plan.identity_weakened == answer,
                f"the plan records identity_weakened {plan.identity_weakened!r} for "
                f"{describe(spec)}, not the adapter's answer {answer!r}",
            )
            ctx.expect(
                record.get("identity_weakened") == answer,
                f"the plan's record carries identity_weakened {record.get('identity_weakened')!r} "
                f"for {describe(spec)}, not {answer!r}",
            )
        else:
            ctx.expect(
                plan.identity_weakened is None and "identity_weakened" not in record,
                f"the adapter is no IdentityWeakener, yet the plan's record carries "
                f"identity_weakened {record.get('identity_weakened')!r} for {describe(spec)}",
            )


@check(
    "CAP-024",
    clause=(
        f"{IDENTITY_CLAUSE}; DESIGN §11: a spec naming a runtime whose failed ranks rerun "
        "under the identity they had is refused with Unsupported"
    ),
    needs=Needs(probes=(Probe.RUNTIMES,)),
)
def judged_on_its_runtime(ctx: Context) -> None:
    """A spec is judged on the runtime it names: a weakening one refused, a keeping one accepted."""
    weakening = ctx.weakening_spec(ctx.spec())
    keeping = ctx.keeping_spec(ctx.spec())
    # Each order on an instance of its own, which has read no runtime yet: what it judged of
    # the first spec must not decide the second.
    for first, then in ((keeping, weakening), (weakening, keeping)):
        backend = ctx.reopen()
        for spec in (first, then):
            what = f"{describe(spec)} (the {'first' if spec is first else 'second'} judged)"
            if spec is keeping:
                expect_kept(ctx, backend, spec, what)
            else:
                expect_refused(ctx, backend, spec, what)


@check(
    "CAP-025",
    clause=(
        f"{SUBMIT_CLAUSE}: the answers are the target's; DESIGN §11: a spec naming a runtime "
        "whose failed ranks rerun under the identity they had is refused with Unsupported"
    ),
    needs=Needs(probes=(Probe.OTHER_TARGETS,)),
)
def judged_on_its_own_target(ctx: Context) -> None:
    """Two instances in one process judge a spec each on its own target, in either order.

    For each other target the harness opens (another namespace, cluster or queue, which
    refuses a spec the check's target accepts), an instance on each judges the spec, the
    check's first and then the other's first: whatever one instance read of its target (a
    runtime, the queue's admission checks) must not answer for the other's."""
    forms = ctx.other_target_forms()
    for variant in range(forms):
        for other_first in (False, True):
            here = ctx.reopen()
            other = ctx.other_target(here, ctx.spec(), variant)
            order = [(other.backend, False), (here, True)]
            if not other_first:
                order.reverse()
            for index, (backend, accepts) in enumerate(order):
                where = "the check's target" if accepts else other.about
                when = "first" if index == 0 else "after an instance on the other target did"
                what = f"{describe(other.spec)} on {where}, judged {when}"
                try:
                    make_plan(backend, other.spec, None, with_job(ctx.job_id()))
                except Unsupported as refused:
                    ctx.expect(
                        not accepts,
                        f"make_plan refused {what} with Unsupported ({refused}): that target "
                        "accepts it, and an instance answers for its own target",
                    )
                    continue
                ctx.expect(
                    accepts,
                    f"make_plan accepted {what}: that target refuses it (Unsupported), and an "
                    "instance answers for its own target, not from what another read",
                )


def injection_answer(ctx: Context, backend: Backend, spec: JobSpec, what: str) -> Support:
    answer = call(ctx, f"capabilities() of {what}", lambda: backend.capabilities(spec))
    support = answer.get(Capability.ATTEMPT_INJECTION, Support())
    ctx.expect(
        isinstance(support, Support),
        f"answered AttemptInjection for {what} with {type(support).__name__}, not a Support",
    )
    return support


def expect_kept(ctx: Context, backend: Backend, spec: JobSpec, what: str) -> None:
    """The spec naming a runtime that keeps identity is accepted, no weakening recorded."""
    support = injection_answer(ctx, backend, spec, what)
    ctx.expect(
        support.value is Tristate.YES,
        f"answered AttemptInjection {support.value} ({support.reason}) for {what}, whose "
        "runtime keeps execution identity: the spec is judged on the runtime it names",
    )
    try:
        plan = make_plan(backend, spec, None, with_job(ctx.job_id()))
    except Unsupported as refused:
        ctx.fail(
            f"make_plan refused {what}, whose runtime keeps execution identity, with "
            f"Unsupported ({refused}): the spec is judged on the runtime it names"
        )
        return
    if isinstance(backend, IdentityWeakener):
        ctx.expect(
            not plan.identity_weakened,
            f"the plan of {what}, whose runtime keeps execution identity, records "
            f"identity_weakened {plan.identity_weakened!r}",
        )


def expect_refused(ctx: Context, backend: Backend, spec: JobSpec, what: str) -> None:
    """The spec naming a runtime that weakens identity is refused: AttemptInjection no, with
    its reason, and make_plan raises Unsupported."""
    support = injection_answer(ctx, backend, spec, what)
    ctx.expect(
        support.value is Tristate.NO and bool(support.reason),
        f"answered AttemptInjection {support.value} ({support.reason or 'no reason'}) for "
        f"{what}, whose runtime reruns a failed rank under the identity it had: the spec is "
        "judged on the runtime it names, and refused (no, with why)",
    )
    try:
        plan = make_plan(backend, spec, None, with_job(ctx.job_id()))
    except Unsupported:
        return
    ctx.fail(
        f"make_plan accepted {what}, whose runtime reruns a failed rank under the identity it "
        f"had (identity_weakened {plan.identity_weakened!r}), though the adapter may not "
        "weaken identity: it must refuse it with Unsupported"
    )


# -- a declared yes verified by behaviour ----------------------------------------------------------


def declared_yes(ctx: Context, spec: JobSpec, capability: Capability) -> None:
    """Skip unless the adapter answers yes for ``capability`` for ``spec``."""
    answer = answer_for(ctx, spec, capability)
    if answer.value is not Tristate.YES:
        reason = f": {answer.reason}" if answer.reason else ""
        raise Skip(f"adapter declares {capability} {answer.value}{reason}")


def executions_of(ctx: Context, spec: JobSpec, what: str) -> tuple[ObjectRef, list[dict[str, str]]]:
    """Start ``spec``, let it run (the harness's let_run), and the environment each rank of its
    first execution saw."""
    ref = ctx.start(ctx.plan(spec))
    ctx.faults.let_run(ref)

    def first() -> list[dict[str, str]] | None:
        runs = ctx.executions(ref)
        return runs[0] if runs else None

    return ref, ctx.wait_until(first, f"the first execution of {what}", 120.0)


@check(
    "CAP-013",
    clause=f"{BEHAVIOUR_CLAUSE}: WorkingDirectory, JobSpec.WorkDir is honoured",
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS, Probe.HOST_PATHS)),
    verifies=(Capability.WORKING_DIRECTORY,),
)
def working_directory_honoured(ctx: Context) -> None:
    """A declared WorkingDirectory yes is honoured: every rank runs in work_dir."""
    work_dir = ctx.scratch_dir()
    spec = ctx.spec(work_dir=work_dir)
    declared_yes(ctx, spec, Capability.WORKING_DIRECTORY)
    _ref, ranks = executions_of(ctx, spec, f"a job with work_dir={work_dir!r}")
    seen = [env.get("PWD") for env in ranks]
    if all(pwd is None for pwd in seen):
        raise CannotInject("executions' working directory (no rank's environment has PWD)")
    host = ctx.host
    wanted = host.realpath(work_dir)
    wrong = [
        (rank, pwd)
        for rank, pwd in enumerate(seen)
        if pwd is not None and host.realpath(pwd) != wanted
    ]
    ctx.expect(
        not wrong,
        f"declares WorkingDirectory yes, but ranks ran in "
        f"{', '.join(f'rank {r}: {p!r}' for r, p in wrong)}, not work_dir {work_dir!r}",
    )


@check(
    "CAP-022",
    clause=f"{BEHAVIOUR_CLAUSE}: ContainerImage, dispatch.Image is honoured",
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.IMAGES,)),
    verifies=(Capability.CONTAINER_IMAGE,),
)
def container_image_honoured(ctx: Context) -> None:
    """A declared ContainerImage yes is honoured: every rank runs in the dispatch.Image image."""
    nodes = 2
    spec = ctx.spec(nodes=nodes, **needing(Capability.CONTAINER_IMAGE))
    declared_yes(ctx, spec, Capability.CONTAINER_IMAGE)
    ref = ctx.start(ctx.plan(spec))
    ctx.faults.let_run(ref)

    def first() -> list[str] | None:
        runs = ctx.images(ref)
        return runs[0] if runs else None

    ranks = ctx.wait_until(first, f"the first execution of a job of {nodes} nodes", 120.0)
    wrong = [(rank, image) for rank, image in enumerate(ranks) if image != CHECK_IMAGE]
    ctx.expect(
        len(ranks) == nodes and not wrong,
        f"declares ContainerImage yes, but a job of {nodes} nodes with {IMAGE}={CHECK_IMAGE!r} "
        f"ran {len(ranks)} rank(s) in "
        f"{', '.join(f'rank {r}: {i!r}' for r, i in enumerate(ranks)) or 'no image'}",
    )


@check(
    "CAP-014",
    clause=f"{BEHAVIOUR_CLAUSE}: ProcsPerNode, JobSpec.ProcsPerNode is honoured",
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS,)),
    verifies=(Capability.PROCS_PER_NODE,),
)
def procs_per_node_honoured(ctx: Context) -> None:
    """A declared ProcsPerNode yes is honoured: N nodes of P procs per node run N*P ranks."""
    nodes, per_node = 2, 2
    spec = ctx.spec(nodes=nodes, procs_per_node=per_node)
    declared_yes(ctx, spec, Capability.PROCS_PER_NODE)
    _ref, ranks = executions_of(ctx, spec, f"a job of {nodes} nodes x {per_node} procs")
    ctx.expect(
        len(ranks) == nodes * per_node,
        f"declares ProcsPerNode yes, but a job of {nodes} nodes with procs_per_node={per_node} "
        f"ran {len(ranks)} rank(s), not {nodes * per_node}",
    )


@check(
    "CAP-015",
    clause=f"{BEHAVIOUR_CLAUSE}: OutputPath, the dispatch.Output extension",
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.HOST_PATHS,)),
    verifies=(Capability.OUTPUT_PATH,),
)
def output_path_honoured(ctx: Context) -> None:
    """A declared OutputPath yes is honoured: the output lands at the dispatch.Output path."""
    path = ctx.scratch_dir().rstrip("/") + "/output.txt"
    marker = f"dispatch-conformance-{ctx.job_id()}"
    spec = ctx.spec(command=("echo", marker), extensions={OUTPUT: path})
    declared_yes(ctx, spec, Capability.OUTPUT_PATH)
    backend = ctx.backend
    if not isinstance(backend, OutputReader):
        raise Skip(
            "the adapter is not an OutputReader: the suite cannot read where a job's output went"
        )
    ref = ctx.start(ctx.plan(spec))
    ctx.faults.let_run(ref)
    with contextlib.suppress(CannotInject):  # else the harness runs it to its end itself
        ctx.faults.finish(ref, 0)
    host = ctx.host

    def landed() -> bool:
        return marker in (host.read(path) or "")

    def read_back() -> str:
        try:
            return backend.read_output(ref).decode("utf-8", "replace")
        except (NotFound, Unsupported):
            return ""

    def appeared() -> bool | None:
        return landed() or marker in read_back() or None

    try:
        ctx.wait_until(appeared, "the job's output", 60.0)
    except CheckFailed:
        raise Skip(
            f"no output appeared at {path!r} nor through read_output: the harness does not "
            "run job commands, so where output lands cannot be seen",
            SkippedFor.CIRCUMSTANCE,
        ) from None
    if landed():
        return
    ctx.fail(
        f"declares OutputPath yes, but the output ({marker!r}) was readable through "
        f"read_output while nothing of it landed at the dispatch.Output path {path!r}"
    )


def releasing(holder: Holder, ref: ObjectRef, number: int) -> Callable[[], None]:
    return lambda: holder.release(ref, number)


@check(
    "CAP-016",
    clause=f"{BEHAVIOUR_CLAUSE}: Hold, as Holder requires",
    needs=Needs(capabilities=(Capability.HOLD,)),
    verifies=(Capability.HOLD,),
)
def holds_work(ctx: Context) -> None:
    """A declared Hold yes is honoured: numbered, survives a reopen, refuses other numbers."""
    backend = ctx.backend
    if not isinstance(backend, Holder):
        ctx.fail("declares Hold yes, but does not implement Holder (hold, release)")
        return
    # A real scheduler may start the object before the hold lands (Rejected, as HOLD-006
    # allows): start_held tries new ones; the hold number and its read-back are checked there.
    _, ref, number = start_held(ctx, backend, ctx.plan)
    other = ctx.reopen()
    ctx.expect(
        isinstance(other, Holder),
        f"the reopened adapter ({type(other).__name__}) does not implement Holder",
    )
    assert isinstance(other, Holder)
    seen = other.open(ref)
    ctx.expect(
        seen.state is State.HELD and seen.hold == number,
        f"after a reopen, open() shows the object {seen.state} with hold {seen.hold}: "
        f"hold {number} did not survive the reopen",
    )
    for wrong in (number + 1, number - 1):
        if wrong <= 0:
            continue
        ctx.expect_raises(
            Conflict,
            releasing(other, ref, wrong),
            f"release(ref, {wrong}) of hold {number}",
        )
    seen = other.open(ref)
    ctx.expect(
        seen.state is State.HELD and seen.hold == number,
        f"after refused releases naming other numbers, the object is {seen.state} with hold "
        f"{seen.hold}, not still held with hold {number}",
    )
    other.release(ref, number)
    seen = other.open(ref)
    ctx.expect(
        seen.state is not State.HELD and seen.hold is None,
        f"after release(ref, {number}), open() shows the object {seen.state} with hold {seen.hold}",
    )


# -- AccountingHistory: an end read late ----------------------------------------------------------

LATE_EXIT: Final = 42
"""The exit code of the object whose failure is read late (distinctive: no default gives it)."""


@check(
    "CAP-017",
    clause=f"{BEHAVIOUR_CLAUSE}: AccountingHistory, an end can be read late",
    needs=Needs(
        capabilities=(Capability.ACCOUNTING_HISTORY,),
        faults=(Fault.LET_RUN, Fault.FINISH, Fault.PURGE),
    ),
    verifies=(Capability.ACCOUNTING_HISTORY,),
)
def end_read_late(ctx: Context) -> None:
    """A declared AccountingHistory yes is honoured: a purged object's end is read late."""
    ended: list[tuple[JobID, ObjectRef, int, int]] = []
    # One fails with a distinctive exit code (as submission 2, a later submission of its job),
    # one succeeds; both end, then both leave the live view.
    for exit_code, submission in ((LATE_EXIT, 2), (0, 1)):
        plan = ctx.plan(long_spec(ctx))
        ref = ctx.start(plan, submission=submission, attempt=1)
        run(ctx, ref)
        ended.append((plan.job, ref, exit_code, submission))
    for _job, ref, exit_code, _submission in ended:
        ctx.faults.finish(ref, exit_code)
    for _job, ref, _exit_code, _submission in ended:
        ctx.faults.purge(ref)
    for job, ref, exit_code, submission in ended:
        expect_read_late(ctx, job, ref, exit_code, submission)


def expect_read_late(ctx: Context, job: JobID, ref: ObjectRef, code: int, submission: int) -> None:
    """open and find of the object that ended with exit code ``code`` and left the live view
    show its end, and find reports it as the job's own, with its submission."""
    what = f"the object {ref.id} that exited {code} and then left the live view"
    try:
        seen = ctx.backend.open(ref)
    except NotFound as error:
        ctx.fail(
            f"declares AccountingHistory yes, but open() of {what} raised NotFound ({error}): "
            "its end cannot be read late"
        )
        return
    except DispatchError as error:
        ctx.fail(f"open() of {what} raised {type(error).__name__} ({error})")
        return
    ctx.expect(
        seen.state.ended,
        f"declares AccountingHistory yes, but open() of {what} showed it {seen.state}, not ended",
    )
    if code == 0:
        ctx.expect(
            seen.state is State.SUCCEEDED and seen.exit_code in (0, None),
            f"open() of {what} showed it {seen.state} (cause {seen.cause}, exit code "
            f"{seen.exit_code}), not succeeded",
        )
    else:
        ctx.expect(
            (seen.state, seen.cause, seen.exit_code) == (State.FAILED, Cause.EXIT_CODE, code),
            f"open() of {what} showed it {seen.state} with cause {seen.cause} and exit code "
            f"{seen.exit_code}, not failed with cause exit_code and exit code {code}",
        )
    shown = found(ctx, job, "after its object ended and left the live view").get(ref.id)
    if shown is None:
        ctx.fail(f"declares AccountingHistory yes, but find({job}) dropped {what} (open reads it)")
        return
    ctx.expect(not shown.foreign, f"find({job}) reported {what} as foreign: it is the job's own")
    ctx.expect(
        (shown.submission, shown.attempt) == (submission, 1),
        f"find({job}) reported {what} with submission {shown.submission} and attempt "
        f"{shown.attempt}, not the submission {submission} and attempt 1 it was started as",
    )
    ctx.expect(
        shown.state is seen.state,
        f"find({job}) reported {what} {shown.state}, while open() showed it {seen.state}",
    )


# -- PreTerminationSignal: a signal, and time to act on it, before the kill ------------------------

SIGNAL_LEAD: Final = 120
"""Seconds before its time limit that the check's job asks for its pre-termination signal."""
SIGNAL_LIMIT: Final = 600
"""The check's job's time limit, in seconds (whole minutes, as some schedulers need)."""


@check(
    "CAP-018",
    clause=f"{BEHAVIOUR_CLAUSE}: PreTerminationSignal, a signal and time to act before the kill",
    needs=Needs(
        capabilities=(Capability.PRE_TERMINATION_SIGNAL,),
        faults=(Fault.LET_RUN,),
        probes=(Probe.SIGNALS,),
    ),
    verifies=(Capability.PRE_TERMINATION_SIGNAL,),
)
def pre_termination_signal_honoured(ctx: Context) -> None:
    """A declared PreTerminationSignal yes is honoured: a signal comes well before the kill."""
    spec = ctx.pre_termination_spec(ctx.spec(), SIGNAL_LEAD, SIGNAL_LIMIT)
    declared_yes(ctx, spec, Capability.PRE_TERMINATION_SIGNAL)
    asked = f"a signal {SIGNAL_LEAD} s before its {SIGNAL_LIMIT} s time limit"
    ref = ctx.start(ctx.plan(spec))
    run(ctx, ref)
    started = ctx.clock.now()

    def ended() -> Observation | None:
        seen = look(ctx, ref, "while the job runs to its time limit")
        return seen if seen.state.ended else None

    seen = ctx.wait_until(
        ended, f"open({ref.id}) showing the job that asked for {asked} ended", SIGNAL_LIMIT + 300
    )
    signalled = ctx.signals(ref)
    end = signalled.ended if signalled.ended is not None else ctx.clock.now()
    ran = f"{end - started:.0f} s after they started"
    ctx.expect(
        bool(signalled.received),
        f"declares PreTerminationSignal yes, but the processes of a job that asked for {asked} "
        f"received no signal before they ended, {ran}",
    )
    first = signalled.received[0]
    ctx.expect(
        end - first >= SIGNAL_LEAD / 2,
        f"declares PreTerminationSignal yes, but the processes of a job that asked for {asked} "
        f"got their first signal only {end - first:.0f} s before they ended ({ran}): no time "
        "to act on it",
    )
    ctx.expect(
        (seen.state, seen.cause) == (State.FAILED, Cause.TIMEOUT),
        f"open() showed the job that ran to its time limit ({ran}) {seen.state} with cause "
        f"{seen.cause}, not failed with cause timeout",
    )


def printed(ctx: Context, what: str) -> tuple[JobSpec, bytes]:
    """The spec of a job that prints one marker line (``echo``), and the marker."""
    marker = f"dispatch-conformance-{ctx.job_id()}-{what}"
    return ctx.spec(command=("echo", marker)), marker.encode()


def printing(ctx: Context, spec: JobSpec) -> ObjectRef:
    """Start the printing job and let it run, unless the scheduler has run it to its end."""
    ref = ctx.start(ctx.plan(spec))
    seen = look(ctx, ref, "after its start")
    if seen.state is State.QUEUED:
        ctx.faults.let_run(ref)
    return ref


@check(
    "CAP-020",
    clause=f"{BEHAVIOUR_CLAUSE}: OutputRead, as OutputReader.read_output requires",
    needs=Needs(
        capabilities=(Capability.OUTPUT_READ,), interfaces=(OutputReader,), faults=(Fault.LET_RUN,)
    ),
    verifies=(Capability.OUTPUT_READ,),
)
def output_read_honoured(ctx: Context) -> None:
    """A declared OutputRead yes is honoured: read_output gives what the job printed, by offset."""
    spec, marker = printed(ctx, "read")
    declared_yes(ctx, spec, Capability.OUTPUT_READ)
    backend = ctx.backend
    assert isinstance(backend, OutputReader)  # the check's interface need
    ref = printing(ctx, spec)

    def read(offset: int = 0) -> bytes:
        return call(
            ctx,
            f"read_output({ref.id}, offset={offset})",
            lambda: backend.read_output(ref, offset),
        )

    def shown() -> bytes | None:
        try:
            text = backend.read_output(ref, 0)
        except NotFound:
            return None  # nothing to read yet (Kubernetes: rank 0's pod not made yet)
        return text if marker in text else None

    try:
        whole = ctx.wait_until(shown, f"read_output({ref.id}) showing what the job printed", 120.0)
    except CheckFailed:
        raise CheckFailed(
            f"declares OutputRead yes, but read_output({ref.id}) never showed the line its job "
            f"printed ({marker.decode()!r}); it read {read()[:200]!r}"
        ) from None
    at = whole.index(marker)
    ctx.expect(
        read(at).startswith(marker),
        f"read_output({ref.id}, offset={at}) gave {read(at)[:100]!r}: the output from byte {at} "
        f"starts with {marker.decode()!r}",
    )
    ctx.expect(
        read(len(whole)) == b"",
        f"read_output({ref.id}, offset={len(whole)}) gave {read(len(whole))[:100]!r} past the "
        "end of what was written",
    )


FOLLOW_BOUND: Final = 600.0
"""Seconds of the cluster's clock a follow of a job that prints one line and exits may take."""


def follow_to_the_end(ctx: Context, backend: OutputReader, ref: ObjectRef, since: str) -> bytes:
    """What ``follow_output(ref)`` yielded until it returned; the check fails when it goes on
    :data:`FOLLOW_BOUND` s (``since`` says since what, for the message) or raises."""
    began = ctx.clock.now()
    followed = b""
    try:
        for chunk in backend.follow_output(ref):
            followed += chunk
            if ctx.clock.now() - began > FOLLOW_BOUND:
                ctx.fail(
                    f"follow_output({ref.id}) went on {FOLLOW_BOUND:.0f} s {since}: it must "
                    "return once the execution ends"
                )
    except DispatchError as error:
        ctx.fail(f"follow_output({ref.id}) raised {type(error).__name__} ({error})")
    return followed


@check(
    "CAP-021",
    clause=f"{BEHAVIOUR_CLAUSE}: OutputFollow, as OutputReader.follow_output requires",
    needs=Needs(
        capabilities=(Capability.OUTPUT_FOLLOW,),
        interfaces=(OutputReader,),
        faults=(Fault.LET_RUN,),
    ),
    verifies=(Capability.OUTPUT_FOLLOW,),
)
def output_follow_honoured(ctx: Context) -> None:
    """A declared OutputFollow yes is honoured: follow_output yields the output, then returns."""
    spec, marker = printed(ctx, "follow")
    declared_yes(ctx, spec, Capability.OUTPUT_FOLLOW)
    backend = ctx.backend
    assert isinstance(backend, OutputReader)  # the check's interface need
    ref = printing(ctx, spec)
    followed = follow_to_the_end(
        ctx, backend, ref, "after its job, which prints one line and exits, began"
    )
    ctx.expect(
        marker in followed,
        f"declares OutputFollow yes, but follow_output({ref.id}) returned {followed[:200]!r} "
        f"without the line its job printed ({marker.decode()!r})",
    )
    seen = look(ctx, ref, "after follow_output returned")
    ctx.expect(
        seen.state.ended,
        f"follow_output({ref.id}) returned while open shows the job {seen.state}: it follows "
        "until the execution ends",
    )


OUTPUT_RANKS: Final = 3
"""The nodes of CAP-023's job: its rank 0 is neither the first rank to write nor the last
rank, so reading the first writer's output or the last rank's shows another line."""


def rank_lines(ranks: Mapping[int, bytes], text: bytes) -> str:
    """Which ranks' lines ``text`` holds, in words."""
    seen = [rank for rank, line in sorted(ranks.items()) if line in text]
    return f"the line(s) of rank(s) {', '.join(map(str, seen))}" if seen else "no rank's line"


@check(
    "CAP-023",
    clause=(
        f"{BEHAVIOUR_CLAUSE}: OutputRead, OutputFollow; docs/decisions.md, Output: a job's "
        "output is its rank 0's"
    ),
    needs=Needs(
        capabilities=(Capability.OUTPUT_READ, Capability.OUTPUT_FOLLOW),
        interfaces=(OutputReader,),
        faults=(Fault.LET_RUN, Fault.FINISH),
        probes=(Probe.RANK_OUTPUT,),
    ),
)
def output_of_rank_zero(ctx: Context) -> None:
    """read_output and follow_output show what rank 0 of the current execution printed."""
    backend = ctx.backend
    assert isinstance(backend, OutputReader)  # the check's interface need
    ref = ctx.start(ctx.plan(ctx.spec(nodes=OUTPUT_RANKS)))
    ctx.faults.let_run(ref)
    mark = f"dispatch-conformance-{ctx.job_id()}"
    # The ranks write last to first: rank 0's line is the last written, by the first rank.
    ranks = {r: f"{mark} rank {r} of {OUTPUT_RANKS}".encode() for r in range(OUTPUT_RANKS)}
    for rank in sorted(ranks, reverse=True):
        ctx.rank_writes(ref, rank, ranks[rank].decode())
    job = f"a job of {OUTPUT_RANKS} nodes, each rank of which wrote a line of its own"

    def read() -> bytes | None:
        try:
            return backend.read_output(ref, 0)
        except NotFound:
            return None  # nothing to read yet (Kubernetes: rank 0's pod not made yet)

    def shown() -> bytes | None:
        text = read()
        return text if text is not None and ranks[0] in text else None

    try:
        ctx.wait_until(shown, f"read_output({ref.id}) showing rank 0's line", 120.0)
    except CheckFailed:
        text = call(ctx, f"read_output({ref.id})", read) or b""
        raise CheckFailed(
            f"read_output({ref.id}) of {job} never showed rank 0's line "
            f"({ranks[0].decode()!r}); it read {rank_lines(ranks, text)}: {text[:200]!r}"
        ) from None
    ctx.faults.finish(ref, 0)
    followed = follow_to_the_end(ctx, backend, ref, "after it was called on a job that had ended")
    ctx.expect(
        ranks[0] in followed,
        f"follow_output({ref.id}) of {job}, once it ended, returned {rank_lines(ranks, followed)} "
        f"without rank 0's ({ranks[0].decode()!r}): {followed[:200]!r}",
    )


# -- preflight ------------------------------------------------------------------------------------

PREFLIGHT_BOUND: Final = 5.0
"""The bound per probe the check gives preflight (seconds of the cluster's clock): small, so that
a probe that takes longer is cut short and what it submitted must be cleaned up, and so that a
preflight that ignores its bound overruns. A probe answers one capability or more, so a
preflight may take at most this bound for each of its answers, and one more for the rest
(reading the configuration, submitting, cancelling)."""


@check(
    "CAP-019",
    clause=(
        f"{SEED_000}, Support is three-valued: probed, the adapter tested it on this cluster, "
        "in its preflight; dispatch_core.spi.Preflight"
    ),
    needs=Needs(interfaces=(Preflight,), probes=(Probe.PREFLIGHT, Probe.INVENTORY)),
)
def preflight_bounded_and_clean(ctx: Context) -> None:
    """preflight keeps to its bound, leaves nothing it submitted unfinished, and answers probed."""
    backend = ctx.backend
    assert isinstance(backend, Preflight)  # the check's interface need
    if ctx.harness.lacking(Probe.HOST_PATHS) is None:
        probe_dir = ctx.scratch_dir()
    else:
        probe_dir = PreflightOptions().probe_dir
    before = ctx.inventory()
    lines: list[str] = []
    options = PreflightOptions(probe_dir=probe_dir, bound=PREFLIGHT_BOUND, progress=lines.append)
    clock = ctx.clock
    started = clock.now()
    answers = call(ctx, f"preflight(bound={PREFLIGHT_BOUND:g})", lambda: backend.preflight(options))
    took = clock.now() - started
    said = f" (its last progress line: {lines[-1]!r})" if lines else ""
    ctx.expect(
        isinstance(answers, Mapping)
        and all(isinstance(c, Capability) and isinstance(a, Support) for c, a in answers.items()),
        f"preflight() returned {answers!r}, not a dict of Capability to Support",
    )
    allowed = PREFLIGHT_BOUND * (len(answers) + 1)
    ctx.expect(
        took <= allowed,
        f"preflight(bound={PREFLIGHT_BOUND:g}) took {took:.0f} s of the cluster's clock for "
        f"{len(answers)} answers, more than its bound per probe allows ({allowed:g} s: a bound "
        f"for each answer's probe and one for the rest){said}",
    )

    def cleaned() -> bool | None:
        return not (ctx.inventory() - before) or None

    try:
        ctx.wait_until(cleaned, "the preflight's probe objects ending", PREFLIGHT_BOUND)
    except CheckFailed:
        left = sorted(ctx.inventory() - before)
        ctx.fail(
            f"preflight(bound={PREFLIGHT_BOUND:g}) left {len(left)} object(s) it submitted "
            f"queued or running on the cluster ({', '.join(left)}), {PREFLIGHT_BOUND:g} s "
            f"after it returned: a preflight removes what it submitted{said}"
        )
    wrong = [
        f"{c} {a.value} with source {a.source}" + ("" if a.reason else " and no reason")
        for c, a in answers.items()
        if a.source is not Source.PROBED or not a.reason
    ]
    ctx.expect(
        not wrong,
        f"preflight answered {'; '.join(wrong)}: each of its answers is probed, with a reason "
        "saying what the probe saw",
    )
    later = backend.capabilities(None)
    stale = [
        f"{c} {later[c].value} ({later[c].source}), not the probed {a.value}"
        if c in later
        else f"nothing for {c}"
        for c, a in answers.items()
        if c not in later or (later[c].value, later[c].source) != (a.value, a.source)
    ]
    ctx.expect(
        not stale,
        f"after preflight, capabilities(None) answers {'; '.join(stale)}: it does not reflect "
        "what the preflight probed",
    )
