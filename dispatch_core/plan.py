"""make_plan: the checks Submit applies before anything reaches a scheduler.

It implements seed 000's "How Submit uses the answers", "Rule support" and "Execution identity"
sections, in that order:

1. each capability the spec needs (``needed_capabilities``): yes proceeds; no refuses with
   ``Unsupported`` and the support's reason; unknown refuses unless the capability is visible on
   failure, in which case it is listed in ``Plan.unverified``;
2. the rules: one ``RuleSupport`` per rule in policy order; a ``NativePolicyCompiler`` is asked
   ``native`` and then ``compile`` (neither under a shared checkpoint); each rule gets an enforcer;
3. an ``IdentityWeakener`` is asked why the spec would weaken execution identity.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from dispatch_core.errors import DispatchError, Rejected, Unsupported
from dispatch_core.model import (
    IMAGE,
    OUTPUT,
    Capability,
    Enforcer,
    JobID,
    JobSpec,
    NativeOffer,
    Plan,
    Policy,
    RuleSupport,
    Support,
    Tristate,
)
from dispatch_core.spi import Backend, IdentityWeakener, NativePolicyCompiler


def needed_capabilities(spec: JobSpec) -> tuple[Capability, ...]:
    """The capabilities ``spec`` needs at submit, in the seed table's order.

    AttemptInjection is always needed and nothing waives it."""
    needed = []
    if IMAGE in spec.extensions:
        needed.append(Capability.CONTAINER_IMAGE)
    needed.append(Capability.ATTEMPT_INJECTION)
    if spec.work_dir is not None:
        needed.append(Capability.WORKING_DIRECTORY)
    if spec.procs_per_node > 0:
        needed.append(Capability.PROCS_PER_NODE)
    if OUTPUT in spec.extensions:
        needed.append(Capability.OUTPUT_PATH)
    return tuple(needed)


@dataclass
class _Options:
    rule_count: int
    unverified: dict[int, Enforcer] = field(default_factory=dict)
    unenforced: set[int] = field(default_factory=set)
    supervisor: bool = False
    job: JobID | None = None

    def rule_index(self, index: int, option: str) -> int:
        if isinstance(index, bool) or not isinstance(index, int):
            raise Rejected(f"{option} names rule {index!r}: a rule index is an int")
        if not 0 <= index < self.rule_count:
            raise Rejected(
                f"{option} names rule {index}, but the policy has {self.rule_count} rule(s)"
            )
        return index


class PlanOption(ABC):
    """An option of make_plan; build one with the functions below."""

    @abstractmethod
    def apply(self, options: _Options) -> None:
        """Record this option in ``options``."""


@dataclass(frozen=True)
class _AcceptUnverified(PlanOption):
    rule: int
    enforcer: Enforcer

    def apply(self, options: _Options) -> None:
        index = options.rule_index(self.rule, "accept_unverified")
        options.unverified[index] = Enforcer(self.enforcer)


@dataclass(frozen=True)
class _AcceptUnenforced(PlanOption):
    rule: int

    def apply(self, options: _Options) -> None:
        options.unenforced.add(options.rule_index(self.rule, "accept_unenforced"))


@dataclass(frozen=True)
class _WithSupervisor(PlanOption):
    def apply(self, options: _Options) -> None:
        options.supervisor = True


@dataclass(frozen=True)
class _WithJob(PlanOption):
    job: JobID

    def apply(self, options: _Options) -> None:
        options.job = self.job


def accept_unverified(rule_index: int, enforcer: Enforcer) -> PlanOption:
    """Accept rule ``rule_index`` although the adapter cannot tell whether it can be performed,
    naming who enforces it; the rule is then listed in ``Plan.unverified_rules``."""
    return _AcceptUnverified(rule_index, enforcer)


def accept_unenforced(rule_index: int) -> PlanOption:
    """Accept that nobody enforces rule ``rule_index`` if neither backend nor supervisor does."""
    return _AcceptUnenforced(rule_index)


def with_supervisor() -> PlanOption:
    """A supervisor runs beside the job and enforces the rules the backend does not."""
    return _WithSupervisor()


def with_job(job: JobID) -> PlanOption:
    """Plan for an existing job (a resubmission) instead of a new job id."""
    return _WithJob(job)


def make_plan(
    backend: Backend, spec: JobSpec, policy: Policy | None = None, *options: PlanOption
) -> Plan:
    """Check ``spec`` and ``policy`` against ``backend``'s answers and return the plan to start.

    Raises ``Unsupported`` when the cluster cannot do what is asked, ``Rejected`` when it is
    refused as asked (an option missing, or the adapter's answers inconsistent)."""
    policy = policy if policy is not None else Policy()
    chosen = _Options(rule_count=len(policy.rules))
    for option in options:
        if not isinstance(option, PlanOption):
            raise Rejected(f"{option!r} is not a make_plan option")
        option.apply(chosen)

    checked, unverified = _check_capabilities(backend, spec)
    supports = _rule_supports(backend, policy)
    offer = _native_offer(backend, policy, supports)
    enforcers, unverified_rules = _assign_enforcers(backend, policy, supports, offer, chosen)

    identity_weakened: str | None = None
    if isinstance(backend, IdentityWeakener):
        identity_weakened = backend.identity_weakened(spec)
        if not isinstance(identity_weakened, str):
            raise Rejected(f"{backend.name}: identity_weakened must answer a str")

    return Plan(
        job=chosen.job if chosen.job is not None else JobID.new(),
        backend=backend.name,
        spec=spec,
        policy=policy,
        capabilities=checked,
        unverified=unverified,
        enforcers=enforcers,
        unverified_rules=unverified_rules,
        native=offer,
        identity_weakened=identity_weakened,
    )


def _check_capabilities(
    backend: Backend, spec: JobSpec
) -> tuple[dict[Capability, Support], tuple[Capability, ...]]:
    answers: Mapping[Capability, Support] = backend.capabilities(spec)
    checked: dict[Capability, Support] = {}
    unverified: list[Capability] = []
    for capability in needed_capabilities(spec):
        support = answers.get(capability, Support())
        if not isinstance(support, Support):
            raise Rejected(f"{backend.name} answered {capability} with {support!r}, not a Support")
        checked[capability] = support
        if support.value is Tristate.YES:
            continue
        if support.value is Tristate.NO:
            raise Unsupported(_refusal(backend, capability, support, "cannot do it"))
        if not capability.visible_on_failure:
            raise Unsupported(_refusal(backend, capability, support, "cannot tell whether it can"))
        unverified.append(capability)
    return checked, tuple(unverified)


def _refusal(backend: Backend, capability: Capability, support: Support, verdict: str) -> str:
    reason = f": {support.reason}" if support.reason else ""
    return f"{backend.name}: the job needs {capability}, and the cluster {verdict}{reason}"


def _rule_supports(backend: Backend, policy: Policy) -> list[RuleSupport]:
    supports = list(backend.rules(policy))
    if len(supports) != len(policy.rules):
        raise Rejected(
            f"{backend.name} answered {len(supports)} rule support(s) for a policy of "
            f"{len(policy.rules)} rule(s); it must answer one per rule, in order"
        )
    for index, support in enumerate(supports):
        if not isinstance(support, RuleSupport):
            raise Rejected(
                f"{backend.name} answered rule {index} with {support!r}, not a RuleSupport"
            )
    return supports


def _native_offer(
    backend: Backend, policy: Policy, supports: Sequence[RuleSupport]
) -> NativeOffer | None:
    # Under a shared checkpoint every recovery rule becomes a hold for a person: nothing native.
    if policy.shared_checkpoint or not isinstance(backend, NativePolicyCompiler):
        return None
    native = list(backend.native(policy))
    if len(native) != len(policy.rules):
        raise Rejected(
            f"{backend.name} answered {len(native)} native answer(s) for a policy of "
            f"{len(policy.rules)} rule(s)"
        )
    for index, answer in enumerate(native):
        if not isinstance(answer, Support):
            raise Rejected(f"{backend.name} answered native rule {index} with {answer!r}")
        if answer.value is Tristate.YES and supports[index].perform.value is not Tristate.YES:
            raise Rejected(
                f"{backend.name} would enforce rule {index} ({policy.rules[index].kind}) natively, "
                f"but answered its perform {supports[index].perform.value}"
            )
    offer = backend.compile(policy)
    if not isinstance(offer, NativeOffer):
        raise Rejected(f"{backend.name} compiled the policy to {offer!r}, not a NativeOffer")
    for index in offer.rules:
        if index >= len(policy.rules) or native[index].value is not Tristate.YES:
            raise Rejected(
                f"{backend.name} compiled rule {index}, which it did not answer native yes for"
            )
    return offer


@dataclass(frozen=True)
class RuleDecision:
    """What seed 000's "Rule support" decides for a policy's rules: an enforcer per rule (and
    the rules accepted unverified), or the refusal at the first rule that is refused, with
    that rule's perform reason."""

    enforcers: tuple[Enforcer, ...] = ()
    unverified: tuple[int, ...] = ()
    refusal: type[DispatchError] | None = None
    rule: int | None = None
    reason: str = ""
    cause: str = ""
    """Why the rule is refused: ``no``, ``unknown`` (not accepted unverified),
    ``unverified_backend`` (accepted unverified naming a backend that does not enforce it),
    ``unenforced`` (nobody enforces it)."""


def decide_rules(
    performs: Sequence[Support],
    native: Collection[int],
    *,
    unverified: Mapping[int, Enforcer],
    supervisor: bool,
    unenforced: Collection[int],
) -> RuleDecision:
    """The Perform table, rule by rule: no → Unsupported; unknown → Unsupported unless
    ``unverified`` names an enforcer (the backend only if it enforces the rule natively);
    yes → the backend if native, else the supervisor with ``supervisor``, else nobody if
    ``unenforced`` names it, else Rejected."""
    enforcers: list[Enforcer] = []
    accepted: list[int] = []
    for index, perform in enumerate(performs):
        if perform.value is Tristate.NO:
            return RuleDecision(refusal=Unsupported, rule=index, reason=perform.reason, cause="no")
        if perform.value is Tristate.UNKNOWN:
            enforcer = unverified.get(index)
            if enforcer is None:
                return RuleDecision(
                    refusal=Unsupported, rule=index, reason=perform.reason, cause="unknown"
                )
            if enforcer is Enforcer.BACKEND and index not in native:
                return RuleDecision(refusal=Rejected, rule=index, cause="unverified_backend")
            enforcers.append(enforcer)
            accepted.append(index)
        elif index in native:
            enforcers.append(Enforcer.BACKEND)
        elif supervisor:
            enforcers.append(Enforcer.SUPERVISOR)
        elif index in unenforced:
            enforcers.append(Enforcer.NOBODY)
        else:
            return RuleDecision(refusal=Rejected, rule=index, cause="unenforced")
    return RuleDecision(tuple(enforcers), tuple(accepted))


def _assign_enforcers(
    backend: Backend,
    policy: Policy,
    supports: Sequence[RuleSupport],
    offer: NativeOffer | None,
    chosen: _Options,
) -> tuple[tuple[Enforcer, ...], tuple[int, ...]]:
    native = set(offer.rules) if offer is not None else set()
    decision = decide_rules(
        [support.perform for support in supports],
        native,
        unverified=chosen.unverified,
        supervisor=chosen.supervisor,
        unenforced=chosen.unenforced,
    )
    if decision.rule is None:
        return decision.enforcers, decision.unverified
    index = decision.rule
    what = f"rule {index} ({policy.rules[index].kind})"
    reason = f": {decision.reason}" if decision.reason else ""
    if decision.cause == "no":
        raise Unsupported(f"{backend.name} cannot perform {what}{reason}")
    if decision.cause == "unknown":
        raise Unsupported(
            f"{backend.name} cannot tell whether it can perform {what}{reason}; "
            f"accept_unverified({index}, enforcer) accepts it"
        )
    if decision.cause == "unverified_backend":
        raise Rejected(f"accept_unverified names the backend for {what}, which it does not enforce")
    raise Rejected(
        f"nobody enforces {what}: the backend does not offer it natively; "
        f"with_supervisor() or accept_unenforced({index}) accepts it"
    )


__all__ = [
    "PlanOption",
    "RuleDecision",
    "accept_unenforced",
    "accept_unverified",
    "decide_rules",
    "make_plan",
    "needed_capabilities",
    "with_job",
    "with_supervisor",
]
