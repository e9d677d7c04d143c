"""The check registry, the context a check runs in, and the runner-agnostic runner.

A check is a function of one :class:`Context`, registered with :func:`check` under a stable id,
its rule (the first line of its docstring) and the seed clause it comes from. The same checks
run from pytest (``conformance.plugin``), from the CLI and inside an author's own suite
(:func:`run_check`), as csi-sanity's registry does.

Outcomes: passed; failed (the message says what the adapter did, the rule, and how to replay
it); skipped because the adapter declares ``no`` (reason given); skipped because the harness
cannot inject a fault; and strict expected failure (an unexpected pass fails). A harness that
raises (its ``new_backend``, ``reopen``, ``clock``, ``job_command``, ``executions``, or its
fault injector, with anything but :class:`CannotInject`) is an *error*: the harness's, not the
adapter's, and the message says where it raised.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
import sysconfig
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, TypeVar

from ulid import ULID

from conformance.faults import Faults, missing_power
from conformance.harness import (
    CannotInject,
    Harness,
    HarnessUnavailable,
    Host,
    IdentityModel,
    Listed,
    Probe,
    Signalled,
    fault_needs,
)
from conformance.powers import (
    AsksBeyondCapacity,
    AsksUnpullableImage,
    ObservesExecutions,
    ObservesImages,
    ObservesSignals,
    OpensOtherTargets,
    OtherTarget,
    RerunsFailures,
    ShowsInventory,
    ShowsPaths,
    SuppliesSupervisor,
    WeakensIdentity,
    WritesRankOutput,
    lacking,
)
from conformance.tiers import Tier
from dispatch_core import (
    Backend,
    Capability,
    Clock,
    DispatchError,
    JobID,
    JobSpec,
    ObjectRef,
    Plan,
    PlanOption,
    Policy,
    Support,
    Tristate,
    make_plan,
    with_job,
)
from dispatch_core.clock import pause
from dispatch_core.supervise import Supervisor

T = TypeVar("T")


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"
    """The harness raised: the check could not judge the adapter."""


IDENTITY_FLAGS: Final[Mapping[str, str]] = {
    "reuses_ids": "no native id reuse (IdentityModel.reuses_ids is false)",
    "requeue_moves_submit": "no requeue that moves submit (IdentityModel.requeue_moves_submit)",
    "history_outlives_live": (
        "no history beyond the live view (IdentityModel.history_outlives_live is false)"
    ),
}
"""The identity-model flags a check may need, and what their absence means."""


@dataclass(frozen=True)
class Needs:
    """What a check needs, declared when it registers: capabilities the adapter must answer
    ``yes``, optional interfaces its backend must implement, faults and probes the harness must
    offer. A harness lacking a fault or probe skips the check before any backend is made; a
    capability or an interface is asked of the check's backend before the check runs."""

    capabilities: tuple[Capability, ...] = ()
    interfaces: tuple[type, ...] = ()
    faults: tuple[str, ...] = ()
    probes: tuple[Probe, ...] = ()
    identity: tuple[str, ...] = ()
    """:class:`IdentityModel` flags that must be true of the harness's target (e.g.
    ``reuses_ids``): a check about id reuse does not apply where ids are never reused."""

    def __post_init__(self) -> None:
        known = set(fault_needs())
        for fault in self.faults:
            if fault not in known:
                raise ValueError(f"unknown fault need {fault!r} (known: {', '.join(known)})")
        for flag in self.identity:
            if flag not in IDENTITY_FLAGS:
                raise ValueError(f"unknown identity need {flag!r} (known: {IDENTITY_FLAGS})")

    def unmet_identity(self, model: IdentityModel) -> str | None:
        """Why ``model`` does not meet the identity needs, or None."""
        for flag in self.identity:
            if not getattr(model, flag):
                return f"the harness's target has {IDENTITY_FLAGS[flag]}"
        return None

    def harness_needs(self) -> list[str]:
        """The needs a harness answers (faults, then probes)."""
        return [*self.faults, *(p.value for p in self.probes)]

    def names(self) -> list[str]:
        """Every need, each as one word: capabilities, interfaces, the harness's needs, then
        identity-model flags."""
        return [
            *(c.value for c in self.capabilities),
            *(i.__name__ for i in self.interfaces),
            *self.harness_needs(),
            *(f"identity.{flag}" for flag in self.identity),
        ]

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "capabilities": [c.value for c in self.capabilities],
            "interfaces": [i.__name__ for i in self.interfaces],
            "faults": list(self.faults),
            "probes": [p.value for p in self.probes],
            "identity": list(self.identity),
        }


@dataclass(frozen=True)
class Check:
    """One registered check."""

    id: str
    rule: str
    clause: str
    suite: str
    tier: Tier
    func: Callable[[Context], None]
    needs: Needs = field(default_factory=Needs)
    xfail_on: Mapping[str, str] = field(default_factory=dict)
    """Harness names on which the check is a strict expected failure, with the reason."""
    verifies: frozenset[Capability] = frozenset()
    """The capabilities whose declared ``yes`` this check verifies by behaviour (a pass on a
    harness whose adapter declares one yes is that answer's evidence in ``matrix.md``)."""

    def xfail(self, harness: str) -> str | None:
        """The reason the check is expected to fail on ``harness``, or None."""
        return self.xfail_on.get(harness)

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "tier": self.tier.value,
            "suite": self.suite,
            "rule": self.rule,
            "clause": self.clause,
            "needs": self.needs.as_dict(),
            "xfail_on": dict(self.xfail_on),
            "verifies": sorted(c.value for c in self.verifies),
        }


REGISTRY: dict[str, Check] = {}


def check(
    check_id: str,
    *,
    clause: str,
    tier: Tier | str = Tier.STANDARD,
    needs: Needs | None = None,
    xfail_on: Mapping[str, str] | None = None,
    verifies: Iterable[Capability] = (),
) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    """Register a check under ``check_id``; its docstring's first line is the rule it checks.
    ``needs`` declares what it needs; ``xfail_on`` names the harnesses on which it is a strict
    expected failure (an unexpected pass fails), each with its reason; ``verifies`` names the
    capabilities whose declared yes it verifies by behaviour."""

    def register(func: Callable[[Context], None]) -> Callable[[Context], None]:
        if check_id in REGISTRY:
            raise ValueError(f"check id {check_id} is registered twice")
        doc = (func.__doc__ or "").strip().splitlines()
        if not doc:
            raise ValueError(f"check {check_id} has no rule: give it a one-line docstring")
        module = func.__module__
        within = module.partition(".suites.")[2] or module.rsplit(".", 1)[-1]
        suite = within.split(".", 1)[0]
        REGISTRY[check_id] = Check(
            check_id,
            doc[0],
            clause,
            suite,
            Tier(tier),
            func,
            needs or Needs(),
            dict(xfail_on or {}),
            frozenset(verifies),
        )
        return func

    return register


def checks(tier: Tier | str = Tier.FULL, ids: Iterable[str] | None = None) -> list[Check]:
    """The registered checks of ``tier`` (and below), in id order; ``ids`` selects by id or
    id prefix (``IDENT-``), case-insensitively."""
    import conformance.suites  # noqa: F401  (registers every suite)

    chosen = [c for c in REGISTRY.values() if Tier(tier).includes(c.tier)]
    if ids is not None:
        wanted = [w.upper() for w in ids]
        chosen = [c for c in chosen if any(c.id.upper().startswith(w) for w in wanted)]
    return sorted(chosen, key=lambda c: c.id)


class SelectionError(ValueError):
    """A tier or check selection that cannot run (the message is one line)."""


def select(
    tier: Tier | str,
    ids: Sequence[str],
    *,
    option: str = "--check",
    tier_option: str = "--tier",
) -> list[Check]:
    """What a runner runs: the checks of ``tier`` that ``ids`` select (every one when ``ids``
    is empty), as :func:`checks` does, but refusing what would run something else than asked:
    an unknown tier, an empty id (a prefix of every id), and an id that selects no check of
    ``tier``. ``option`` and ``tier_option`` name the runner's options in the messages."""
    tiers = [t.value for t in Tier]
    if str(tier) not in tiers:
        raise SelectionError(f"{tier_option} {tier!r} is not a tier ({', '.join(tiers)})")
    for given in ids:
        if not given.strip():
            raise SelectionError(
                f"{option} {given!r} names no check: give a check id or an id prefix such as "
                "IDENT- (see: dispatch-conformance list)"
            )
    wanted = [given.strip() for given in ids]
    for w in wanted:
        if checks(tier, [w]):
            continue
        elsewhere = checks(Tier.FULL, [w])
        if elsewhere:
            higher = sorted({c.tier.value for c in elsewhere}, key=tiers.index)
            named = ", ".join(c.id for c in elsewhere[:3]) + (", ..." if len(elsewhere) > 3 else "")
            raise SelectionError(
                f"no {tier}-tier check matches {option} {w}: {named} "
                f"{'is' if len(elsewhere) == 1 else 'are'} {'/'.join(higher)}-tier "
                f"(add {tier_option} {higher[-1]})"
            )
        hint = "; give the option once per id" if "," in w else ""
        raise SelectionError(
            f"no {tier}-tier check matches {option} {w}{hint} (see: dispatch-conformance list)"
        )
    return checks(tier, wanted or None)


def one_line(text: str) -> str:
    """``text`` on one line (messages from harnesses and adapters may span several)."""
    return " ".join(text.split())


class SkippedFor(StrEnum):
    """Why a check did not run, which decides whether its profile is covered
    (:mod:`conformance.profiles`)."""

    ADAPTER = "adapter"
    """The adapter declares the capability ``no`` or implements no such interface: the rule
    does not apply to it (not a gap in coverage)."""
    TARGET = "target"
    """The harness's target cannot show it (its identity model: ids never reused, ...): the
    rule does not apply there (not a gap)."""
    HARNESS = "harness"
    """The harness lacks a power the check needs (``lacking`` lists every one): a gap."""
    CIRCUMSTANCE = "circumstance"
    """The scheduler did what kept the check from judging (it started the object before a
    hold could land): a gap in this run."""
    EXPECTED_FAILURE = "expected-failure"
    """A strict expected failure that failed as expected: a known gap."""


class Skip(Exception):
    """The check does not apply (``ADAPTER``: the adapter declares no; ``TARGET``), or could
    not be judged this time (``CIRCUMSTANCE``, with what happened)."""

    def __init__(
        self, reason: str, kind: SkippedFor = SkippedFor.ADAPTER, lacking: Sequence[str] = ()
    ) -> None:
        super().__init__(reason)
        self.kind = kind
        self.lacking = tuple(lacking)


class CheckFailed(AssertionError):
    """The adapter broke the check's rule."""


@dataclass(frozen=True)
class HarnessCrash:
    """A harness method (or its fault injector) that raised: the harness's error, not the
    adapter's. ``location`` says where it raised."""

    call: str
    error: BaseException
    refs: tuple[ObjectRef, ...] = ()
    """The refs the call was given: where one is an adapter's wrong answer, the failure is
    the adapter's (:func:`wrong_answer`)."""

    @property
    def location(self) -> str:
        return where(self.error)

    def __str__(self) -> str:
        said = one_line(str(self.error))
        return f"{self.call} raised {type(self.error).__name__}" + (f": {said}" if said else "")


_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"])


def where(error: BaseException) -> str:
    """``path:line in function`` of the innermost frame of ``error`` outside Python's standard
    library (the innermost one when all are), the path relative to the directory of the
    import path (or the working directory) it lies in."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "an unknown place (no traceback)"
    own = [f for f in frames if not os.path.abspath(f.filename).startswith(_STDLIB + os.sep)]
    frame = (own or frames)[-1]
    return f"{_short_path(frame.filename)}:{frame.lineno} in {frame.name}"


def _short_path(filename: str) -> str:
    try:
        path = os.path.abspath(filename)
        roots = {os.path.abspath(entry or os.curdir) for entry in (os.getcwd(), *sys.path)}
    except OSError:  # the working directory is gone
        return filename
    for root in sorted(roots, key=len, reverse=True):
        if path.startswith(root.rstrip(os.sep) + os.sep):
            return os.path.relpath(path, root)
    return filename


_A_HARNESS_MAY_RAISE = (Skip, CannotInject, HarnessUnavailable, CheckFailed)
_HARNESS_CALL = "_dispatch_harness_call"
_HARNESS_REFS = "_dispatch_harness_refs"


def harness_crash(error: BaseException | None) -> HarnessCrash | None:
    """The harness call that raised ``error``, or an exception ``error`` was raised while
    handling (a check that turned the harness's exception into a failure), or one of an
    exception group's; None when the harness raised none of them."""
    pending, seen = [error], set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        call = getattr(current, _HARNESS_CALL, None)
        if isinstance(call, str):
            refs = getattr(current, _HARNESS_REFS, ())
            return HarnessCrash(call, current, tuple(r for r in refs if isinstance(r, ObjectRef)))
        if isinstance(current, BaseExceptionGroup):
            pending += reversed(current.exceptions)
        pending += [current.__context__, current.__cause__]
    return None


class GuardedHarness(Harness[Backend]):
    """A harness as :func:`run_check` hands it to a check. An exception out of a call into it
    (``new_backend``, ``clock``, ``listing``, ``job_command``, ``close``, or any power's
    method, through :meth:`faults` and the context's probes), other than :class:`Skip`,
    :class:`CannotInject`, :class:`HarnessUnavailable` and :class:`CheckFailed`, is marked
    with the call and raised on as it is, so that a check that tolerates it (a stateful
    program tolerates a fault that did not apply) still can; one that ends the check, or
    causes its failure, makes the outcome the harness's error (:func:`harness_crash`).
    ``reopen`` is the adapter's own re-opening in all but name: what it raises stays the
    adapter's. Its powers are found on :attr:`inner`, by type."""

    def __init__(self, inner: Harness[Any]) -> None:
        self.inner = inner
        self.name = inner.name
        identity = getattr(inner, "identity", None)  # run_check refuses a harness without one
        if identity is not None:
            self.identity = identity
        self.impossible = inner.impossible
        self.schedule_within = inner.schedule_within
        self.stateful_examples = inner.stateful_examples
        self.stateful_steps = inner.stateful_steps
        self.crash_points = inner.crash_points

    def guard(self, call: str, action: Callable[[], T], refs: Iterable[object] = ()) -> T:
        """``action()``; what it raises (but the kit's own exceptions) is marked with ``call``
        and the refs it was given (``refs``: its arguments; the refs among them are kept)."""
        try:
            return action()
        except _A_HARNESS_MAY_RAISE:
            raise
        except (Exception, SystemExit) as error:
            if not hasattr(error, _HARNESS_CALL):  # the innermost call is the one to name
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(error, _HARNESS_CALL, call)
                    setattr(error, _HARNESS_REFS, [r for r in refs if isinstance(r, ObjectRef)])
            raise

    def lacking(self, need: str) -> str | None:
        """Why the harness does not meet ``need`` (:func:`conformance.powers.lacking`)."""
        return self.guard(f"declines({need!r})", lambda: lacking(self.inner, need))

    def declines(self, need: str) -> str | None:
        return self.guard(f"declines({need!r})", lambda: self.inner.declines(need))

    def begin(self, check_id: str) -> None:
        self.guard("begin()", lambda: self.inner.begin(check_id))

    def end(self, check_id: str) -> None:
        self.guard("end()", lambda: self.inner.end(check_id))

    def new_backend(self) -> Backend:
        backend: Backend = self.guard("new_backend()", self.inner.new_backend)
        return backend

    def reopen(self, backend: Backend) -> Backend:
        reopened: Backend = self.inner.reopen(backend)
        return reopened

    def clock(self, backend: Backend) -> Clock:
        return self.guard("clock()", lambda: self.inner.clock(backend))

    def listing(self, backend: Backend) -> Mapping[str, Listed]:
        return self.guard("listing()", lambda: self.inner.listing(backend))

    def job_command(self) -> tuple[str, ...]:
        return self.guard("job_command()", self.inner.job_command)

    def faults(self, backend: Backend) -> Faults:
        """The harness's powers on ``backend``, each call guarded."""
        return Faults(self.inner, backend, self.guard)

    # -- the probes: each found by type on the inner harness, each call guarded -----------------

    def host(self, backend: Backend) -> Host:
        inner = self.inner
        if not isinstance(inner, ShowsPaths):
            raise missing_power(Probe.HOST_PATHS)
        return _GuardedHost(self.guard("host()", lambda: inner.host(backend)), self)

    def executions(self, backend: Backend, ref: ObjectRef) -> list[list[dict[str, str]]]:
        inner = self.inner
        if not isinstance(inner, ObservesExecutions):
            raise missing_power(Probe.EXECUTIONS)
        runs = self.guard("executions()", lambda: inner.executions(backend, ref), [ref])
        return [[dict(env) for env in ranks] for ranks in runs]

    def images(self, backend: Backend, ref: ObjectRef) -> list[list[str]]:
        inner = self.inner
        if not isinstance(inner, ObservesImages):
            raise missing_power(Probe.IMAGES)
        runs = self.guard("images()", lambda: inner.images(backend, ref), [ref])
        return [list(ranks) for ranks in runs]

    def pre_termination_spec(self, spec: JobSpec, lead: int, limit: int) -> JobSpec:
        inner = self.inner
        if not isinstance(inner, ObservesSignals):
            raise missing_power(Probe.SIGNALS)
        return self.guard(
            "pre_termination_spec()", lambda: inner.pre_termination_spec(spec, lead, limit)
        )

    def signals(self, backend: Backend, ref: ObjectRef) -> Signalled:
        inner = self.inner
        if not isinstance(inner, ObservesSignals):
            raise missing_power(Probe.SIGNALS)
        signalled: Signalled = self.guard("signals()", lambda: inner.signals(backend, ref), [ref])
        return signalled

    def self_restarting_spec(self, spec: JobSpec) -> JobSpec:
        inner = self.inner
        if not isinstance(inner, RerunsFailures):
            raise missing_power(Probe.SELF_RESTARTS)
        return self.guard("self_restarting_spec()", lambda: inner.self_restarting_spec(spec))

    def weakening_spec(self, spec: JobSpec) -> JobSpec:
        inner = self.inner
        if not isinstance(inner, WeakensIdentity):
            raise missing_power(Probe.RUNTIMES)
        return self.guard("weakening_spec()", lambda: inner.weakening_spec(spec))

    def keeping_spec(self, spec: JobSpec) -> JobSpec:
        inner = self.inner
        if not isinstance(inner, WeakensIdentity):
            raise missing_power(Probe.RUNTIMES)
        return self.guard("keeping_spec()", lambda: inner.keeping_spec(spec))

    def beyond_capacity_spec(self, spec: JobSpec) -> JobSpec:
        inner = self.inner
        if not isinstance(inner, AsksBeyondCapacity):
            raise missing_power(Probe.BEYOND_CAPACITY)
        return self.guard("beyond_capacity_spec()", lambda: inner.beyond_capacity_spec(spec))

    def unpullable_image_spec(self, spec: JobSpec) -> JobSpec:
        inner = self.inner
        if not isinstance(inner, AsksUnpullableImage):
            raise missing_power(Probe.UNPULLABLE_IMAGE)
        return self.guard("unpullable_image_spec()", lambda: inner.unpullable_image_spec(spec))

    def other_target_forms(self) -> int:
        inner = self.inner
        if not isinstance(inner, OpensOtherTargets):
            raise missing_power(Probe.OTHER_TARGETS)
        forms: int = self.guard("other_target_forms()", inner.other_target_forms)
        return forms

    def other_target(self, backend: Backend, spec: JobSpec, variant: int) -> OtherTarget:
        inner = self.inner
        if not isinstance(inner, OpensOtherTargets):
            raise missing_power(Probe.OTHER_TARGETS)
        target: OtherTarget = self.guard(
            "other_target()", lambda: inner.other_target(backend, spec, variant)
        )
        return target

    def rank_writes(self, backend: Backend, ref: ObjectRef, rank: int, text: str) -> None:
        inner = self.inner
        if not isinstance(inner, WritesRankOutput):
            raise missing_power(Probe.RANK_OUTPUT)
        self.guard("rank_writes()", lambda: inner.rank_writes(backend, ref, rank, text), [ref])

    def inventory(self, backend: Backend) -> set[str]:
        inner = self.inner
        if not isinstance(inner, ShowsInventory):
            raise missing_power(Probe.INVENTORY)
        return set(self.guard("inventory()", lambda: inner.inventory(backend)))

    def supervisor_type(self) -> type[Supervisor]:
        """The supervisor the core suite runs: the harness's own
        (:class:`~conformance.powers.SuppliesSupervisor`), else the reference one."""
        inner = self.inner
        if isinstance(inner, SuppliesSupervisor):
            return self.guard("supervisor_type()", inner.supervisor_type)
        return Supervisor

    def close(self) -> None:
        self.guard("close()", self.inner.close)


class _GuardedHost(Host):
    """A host whose every method goes through :meth:`GuardedHarness.guard`."""

    def __init__(self, inner: Host, harness: GuardedHarness) -> None:
        self._inner = inner
        self._guard = harness.guard

    def scratch_dir(self) -> str:
        return self._guard("host().scratch_dir()", self._inner.scratch_dir)

    def exists(self, path: str) -> bool:
        return self._guard("host().exists()", lambda: self._inner.exists(path))

    def read(self, path: str) -> str | None:
        return self._guard("host().read()", lambda: self._inner.read(path))

    def realpath(self, path: str) -> str:
        return self._guard("host().realpath()", lambda: self._inner.realpath(path))

    def remove(self, path: str) -> None:
        self._guard("host().remove()", lambda: self._inner.remove(path))

    def make_dir(self, path: str) -> None:
        self._guard("host().make_dir()", lambda: self._inner.make_dir(path))


class Context:
    """What a check works with: a fresh backend of the harness, its clock, its faults, a seeded
    random source, and a tracker that stops every object the check started (csi-sanity's
    resource tracker)."""

    def __init__(self, harness: Harness[Any], check: Check, seed: int) -> None:
        self.harness = harness if isinstance(harness, GuardedHarness) else GuardedHarness(harness)
        self.check = check
        self.seed = seed
        self.rng = random.Random(f"{seed}:{check.id}")
        self._backend: Backend | None = None
        self._cleanups: list[tuple[str, Callable[[], object]]] = []
        self.started: dict[ObjectRef, list[tuple[JobID, int, int]]] = {}
        """Each ref :meth:`start` got from the adapter, with each job, submission and attempt
        it was the answer to."""

    @property
    def identity(self) -> IdentityModel:
        """The harness's identity model: how its target finds, names and reuses objects."""
        model: IdentityModel = self.harness.identity
        return model

    @property
    def backend(self) -> Backend:
        """The check's backend, made by the harness on first use (once per check)."""
        if self._backend is None:
            self._backend = self.harness.new_backend()
        return self._backend

    @property
    def clock(self) -> Clock:
        return self.harness.clock(self.backend)

    @property
    def faults(self) -> Faults:
        """The harness's powers on the check's backend (:class:`~conformance.faults.Faults`)."""
        return self.harness.faults(self.backend)

    @property
    def host(self) -> Host:
        """The filesystem the check's jobs run on (:class:`~conformance.powers.ShowsPaths`)."""
        return self.harness.host(self.backend)

    def scratch_dir(self) -> str:
        """A fresh directory on the cluster's filesystem, removed when the check ends."""
        host = self.host
        path = host.scratch_dir()
        self.track(f"remove the scratch directory {path}", lambda: host.remove(path))
        return path

    def reopen(self) -> Backend:
        reopened: Backend = self.harness.reopen(self.backend)
        return reopened

    def executions(self, ref: ObjectRef) -> list[list[dict[str, str]]]:
        """The environment each rank of each execution of the object saw
        (:class:`~conformance.powers.ObservesExecutions`)."""
        return self.harness.executions(self.backend, ref)

    def images(self, ref: ObjectRef) -> list[list[str]]:
        """The image each rank of each execution of the object ran in
        (:class:`~conformance.powers.ObservesImages`)."""
        return self.harness.images(self.backend, ref)

    def pre_termination_spec(self, spec: JobSpec, lead: int, limit: int) -> JobSpec:
        """``spec`` with a time limit and a signal before it
        (:class:`~conformance.powers.ObservesSignals`)."""
        return self.harness.pre_termination_spec(spec, lead, limit)

    def signals(self, ref: ObjectRef) -> Signalled:
        """What the processes of the object's first execution were sent before their end
        (:class:`~conformance.powers.ObservesSignals`)."""
        return self.harness.signals(self.backend, ref)

    def self_restarting_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` as the scheduler reruns its object after a failed execution
        (:class:`~conformance.powers.RerunsFailures`)."""
        return self.harness.self_restarting_spec(spec)

    def weakening_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` naming a runtime that weakens execution identity, which the adapter refuses
        (:class:`~conformance.powers.WeakensIdentity`)."""
        return self.harness.weakening_spec(spec)

    def keeping_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` naming a runtime that keeps execution identity
        (:class:`~conformance.powers.WeakensIdentity`)."""
        return self.harness.keeping_spec(spec)

    def beyond_capacity_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` asking for more than the target could ever give it
        (:class:`~conformance.powers.AsksBeyondCapacity`)."""
        return self.harness.beyond_capacity_spec(spec)

    def unpullable_image_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` naming an image the target can never pull
        (:class:`~conformance.powers.AsksUnpullableImage`)."""
        return self.harness.unpullable_image_spec(spec)

    def other_target_forms(self) -> int:
        """How many kinds of other target the harness opens
        (:class:`~conformance.powers.OpensOtherTargets`)."""
        return self.harness.other_target_forms()

    def other_target(self, backend: Backend, spec: JobSpec, variant: int) -> OtherTarget:
        """A new adapter instance on another target of ``backend``'s scheduler, and ``spec``
        as ``backend``'s target accepts it and that one refuses it
        (:class:`~conformance.powers.OpensOtherTargets`)."""
        return self.harness.other_target(backend, spec, variant)

    def rank_writes(self, ref: ObjectRef, rank: int, text: str) -> None:
        """Rank ``rank`` of the running object's current execution writes the line ``text`` to
        its output now (:class:`~conformance.powers.WritesRankOutput`)."""
        self.harness.rank_writes(self.backend, ref, rank, text)

    def inventory(self) -> set[str]:
        """The native ids of the user's objects on the target that have not ended
        (:class:`~conformance.powers.ShowsInventory`)."""
        return self.harness.inventory(self.backend)

    def listing(self) -> dict[str, Listed]:
        """The scheduler's own view of the user's objects (the harness's
        :meth:`Harness.listing`): the oracle, read without the adapter."""
        return dict(self.harness.listing(self.backend))

    def job_id(self) -> JobID:
        """A new job id: the harness clock's time, and randomness drawn from the check's seed."""
        millis = int(self.clock.now() * 1000)
        return JobID(ULID.from_bytes(millis.to_bytes(6, "big") + self.rng.randbytes(10)))

    # -- planning and starting --------------------------------------------------------------

    def spec(self, **fields: Any) -> JobSpec:
        """A job spec for this check: the harness's job command unless told otherwise."""
        fields.setdefault("command", self.harness.job_command())
        return JobSpec(**fields)

    def plan(
        self, spec: JobSpec | None = None, policy: Policy | None = None, *options: PlanOption
    ) -> Plan:
        # A seeded job id first: a with_job among ``options`` comes later and wins.
        return make_plan(
            self.backend, spec or self.spec(), policy, with_job(self.job_id()), *options
        )

    def start(self, plan: Plan | None = None, submission: int = 1, attempt: int = 1) -> ObjectRef:
        """Start ``plan`` (a plain new one by default); the object is stopped after the check."""
        plan = plan or self.plan()
        backend = self.backend
        ref = backend.start(plan, submission, attempt)
        if isinstance(ref, ObjectRef):
            asked = self.started.setdefault(ref, [])
            if (plan.job, submission, attempt) not in asked:
                asked.append((plan.job, submission, attempt))
        self.track(f"stop({ref.id}) of {ref.uid}", lambda: backend.stop(ref))
        return ref

    def track(self, what: str, undo: Callable[[], object]) -> None:
        """Have ``undo`` run when the check ends, after everything tracked later (LIFO);
        ``what`` names it in the report of a cleanup that failed."""
        self._cleanups.append((what, undo))

    # -- expectations --------------------------------------------------------------------------

    def declared(self, capability: Capability) -> Tristate:
        return self.backend.capabilities(None).get(capability, Support()).value

    def require(self, capability: Capability) -> None:
        """Skip unless the adapter answers ``yes`` for ``capability``."""
        support = self.backend.capabilities(None).get(capability, Support())
        if support.value is not Tristate.YES:
            reason = f": {support.reason}" if support.reason else ""
            raise Skip(f"adapter declares {capability} {support.value}{reason}")

    def fail(self, did: str) -> None:
        """Fail the check: ``did`` says what the adapter did."""
        raise CheckFailed(did)

    def expect(self, condition: bool, did: str) -> None:
        """Fail with ``did`` (what the adapter did instead) unless ``condition`` holds."""
        if not condition:
            raise CheckFailed(did)

    def expect_raises(
        self, error: type[BaseException], action: Callable[[], object], what: str
    ) -> BaseException:
        """``action`` must raise ``error``; ``what`` names the action in the failure."""
        try:
            action()
        except error as raised:
            return raised
        except DispatchError as other:
            raise CheckFailed(
                f"{what} raised {type(other).__name__} ({other}), not {error.__name__}"
            ) from None
        raise CheckFailed(f"{what} succeeded instead of raising {error.__name__}")

    def wait_until(self, ready: Callable[[], T | None], what: str, bound: float = 600.0) -> T:
        """Poll ``ready`` on the harness clock until it returns a truthy value, within ``bound``."""
        waited = 0.0
        while True:
            value = ready()
            if value:
                return value
            if waited >= bound:
                raise CheckFailed(f"{what} did not happen within {bound:.0f} s")
            pause(self.clock, 5.0)
            waited += 5.0

    def meet_needs(self) -> None:
        """Skip unless the backend meets the check's capability and interface needs (it is
        made here when the check needs either); the skip names every one it does not meet."""
        needs = self.check.needs
        unmet: list[str] = []
        if needs.capabilities:
            answers = self.backend.capabilities(None)
            for capability in needs.capabilities:
                support = answers.get(capability, Support())
                if support.value is not Tristate.YES:
                    reason = f": {support.reason}" if support.reason else ""
                    unmet.append(f"adapter declares {capability} {support.value}{reason}")
        for interface in needs.interfaces:
            if not isinstance(self.backend, interface):
                unmet.append(
                    f"adapter implements no {interface.__name__} "
                    f"({type(self.backend).__name__} is not one)"
                )
        if unmet:
            raise Skip("; ".join(unmet))

    def cleanup(self) -> list[str]:
        """Undo everything tracked, last first; each undo that raised, said on one line (a
        failed cleanup is reported, never swallowed)."""
        failed: list[str] = []
        while self._cleanups:
            what, undo = self._cleanups.pop()
            try:
                undo()
            except (Exception, SystemExit) as error:
                said = one_line(f"{type(error).__name__}: {error}")
                failed.append(f"{what} raised {said} (at {where(error)})")
        return failed


@dataclass
class Result:
    """One check's outcome on one harness."""

    check: Check
    harness: str
    outcome: Outcome
    reason: str
    duration: float
    seed: int
    replay: str = field(default="")
    adapter: str = field(default="")
    """What the adapter did, when the adapter failed the check: the text of the reason's
    ``adapter:`` line (and the lines it continues on), '' for any other outcome."""
    skipped_for: str = field(default="")
    """A :class:`SkippedFor` value for a skipped check, '' for any other outcome."""
    lacking: tuple[str, ...] = field(default=())
    """For a check skipped for the harness, every need it lacked."""

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.check.id,
            "rule": self.check.rule,
            "clause": self.check.clause,
            "suite": self.check.suite,
            "tier": self.check.tier.value,
            "harness": self.harness,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "duration": round(self.duration, 6),
            "seed": self.seed,
            "replay": self.replay,
            "adapter": self.adapter,
            "needs": self.check.needs.names(),
            "skipped_for": self.skipped_for,
            "lacking": list(self.lacking),
        }


def replay_command(harness: str, check_id: str, seed: int) -> str:
    return f"dispatch-conformance run --harness {harness} --check {check_id} --seed {seed}"


def run_check(check: Check, harness: Harness[Any], seed: int = 0) -> Result:
    """Run one check on one harness; never raises for what the adapter or the harness does.

    The order: the harness's identity model is checked, then the check's fault and probe
    needs (a lacking one skips it before any backend is made), then ``begin``, the check's
    capability and interface needs (on its backend), the check, its tracker's cleanup (last
    first), and ``end``. A cleanup or an ``end`` that raised is the check's error."""
    started = time.perf_counter()
    guarded = harness if isinstance(harness, GuardedHarness) else GuardedHarness(harness)
    replay = replay_command(harness.name, check.id, seed)

    skipped_for = SkippedFor.ADAPTER
    lacking: tuple[str, ...] = ()

    def result(outcome: Outcome, reason: str, did: str = "") -> Result:
        elapsed = time.perf_counter() - started
        adapter = did if outcome is Outcome.FAILED else ""
        skipped = skipped_for.value if outcome is Outcome.SKIPPED else ""
        missing = tuple(lacking) if outcome is Outcome.SKIPPED else ()
        return Result(
            check, harness.name, outcome, reason, elapsed, seed, replay, adapter, skipped, missing
        )

    if not isinstance(getattr(harness, "identity", None), IdentityModel):
        return result(
            Outcome.ERROR,
            f"[{check.id}] harness error, not the adapter's: harness {harness.name} declares no "
            "identity model (set its identity = IdentityModel(...))\n"
            f"  replay: {replay}",
        )
    unmet = check.needs.unmet_identity(harness.identity)
    if unmet:
        skipped_for = SkippedFor.TARGET
        return result(Outcome.SKIPPED, unmet)
    try:
        lacks = {need: guarded.lacking(need) for need in check.needs.harness_needs()}
    except (Exception, SystemExit) as error:
        asked = HarnessCrash(getattr(error, _HARNESS_CALL, "declines()"), error)
        return result(Outcome.ERROR, _harness_error(check, asked, replay))
    if any(lacks.values()):
        lacking = tuple(n for n, why in lacks.items() if why)
        skipped_for = _skipped_for(lacking, harness)
        return result(Outcome.SKIPPED, "; ".join(why for why in lacks.values() if why))
    ctx = Context(guarded, check, seed)
    crash: HarnessCrash | None = None
    wrong: str | None = None
    leftovers: list[str] = []
    did = ""  # what the adapter did, when it failed the check
    try:
        guarded.begin(check.id)
    except (Exception, SystemExit) as error:
        return result(Outcome.ERROR, _harness_error(check, HarnessCrash("begin()", error), replay))
    try:
        ctx.meet_needs()
        check.func(ctx)
        outcome, reason = Outcome.PASSED, ""
    except Skip as skip:
        outcome, reason, skipped_for, lacking = Outcome.SKIPPED, str(skip), skip.kind, skip.lacking
    except CannotInject as missing:
        outcome, reason = Outcome.SKIPPED, str(missing)
        lacking = (missing.fault,)
        skipped_for = _skipped_for(lacking, harness)
    except CheckFailed as failure:
        # A failure raised while handling the harness's exception (a stateful program turns
        # every exception into one) is the harness's error.
        crash = harness_crash(failure)
        did = str(failure)
        outcome, reason = Outcome.FAILED, _failure(check, did, replay)
    except HarnessUnavailable as missing:
        outcome, reason = Outcome.FAILED, f"harness {harness.name} unavailable: {missing}"
    except DispatchError as error:
        crash = harness_crash(error)
        did = f"raised {type(error).__name__}: {error}"
        outcome, reason = Outcome.FAILED, _failure(check, did, replay)
    except (Exception, SystemExit) as error:
        crash = harness_crash(error)
        place = traceback.format_exception(type(error), error, error.__traceback__)[-2:]
        did = f"crashed: {type(error).__name__}: {error}\n  {''.join(place).strip()}"
        outcome, reason = Outcome.FAILED, _failure(check, did, replay)
    finally:
        wrong = wrong_answer(ctx, crash) if crash is not None else None
        leftovers = ctx.cleanup()
        try:
            guarded.end(check.id)
        except (Exception, SystemExit) as error:
            said = one_line(f"{type(error).__name__}: {error}")
            leftovers.append(f"the harness's end({check.id}) raised {said} (at {where(error)})")
    xfail = check.xfail(harness.name)
    if crash is not None and wrong is not None:
        # The harness failed on what the adapter handed it: the adapter's failure.
        did = f"{wrong}; the harness then failed on that object: {crash} (at {crash.location})"
        outcome, reason, crash = Outcome.FAILED, _failure(check, did, replay), None
    if crash is not None:
        outcome, reason = Outcome.ERROR, _harness_error(check, crash, replay)
    elif xfail is not None:
        if outcome is Outcome.FAILED:
            outcome, reason = Outcome.SKIPPED, f"expected failure: {xfail}"
            skipped_for = SkippedFor.EXPECTED_FAILURE
        elif outcome is Outcome.PASSED:
            outcome = Outcome.FAILED
            did = f"passed, but it is a strict expected failure ({xfail})"
            reason = _failure(check, did, replay)
    if leftovers:
        said = "; ".join(leftovers)
        if outcome is Outcome.FAILED or outcome is Outcome.ERROR:
            reason += f"\n  cleanup failed too: {said}"
        else:
            was = f"{outcome.value}" + (f" ({one_line(reason)})" if reason else "")
            outcome = Outcome.ERROR
            reason = (
                f"[{check.id}] cleanup failed after the check {was}: {said}\n"
                f"  rule: {check.rule}\n"
                f"  replay: {replay}"
            )
    return result(outcome, reason, did)


def wrong_answer(ctx: Context, crash: HarnessCrash) -> str | None:
    """What was wrong with an adapter's answer that a harness call failed on, or None when
    none of the refs the call was given is a wrong answer: a ref :meth:`Context.start` got as
    the answer to two submissions, or that the adapter's own ``open`` shows as another
    submission or attempt than the one asked for, or foreign."""
    for ref in crash.refs:
        asked = ctx.started.get(ref, [])
        if len(asked) > 1:
            whose = " and ".join(f"submission {n}, attempt {a}" for _, n, a in asked)
            return f"start returned the same object {ref.id} ({ref.uid}) for {whose}"
        if not asked:
            continue
        [(job, submission, attempt)] = asked
        said = f"start(job {job}, submission {submission}, attempt {attempt}) returned {ref.id}"
        try:
            seen = ctx.backend.open(ref)
        except Exception:  # gone, or the adapter's crash: not the question here
            continue
        if seen.foreign:
            return f"{said}, which its own open shows as a foreign object"
        if seen.submission not in (None, submission) or seen.attempt not in (None, attempt):
            return (
                f"{said}, which its own open shows as submission {seen.submission}, attempt "
                f"{seen.attempt} ({seen.state.value}): another submission's object"
            )
    return None


def _skipped_for(lacking: Sequence[str], harness: Harness[Any]) -> SkippedFor:
    """``TARGET`` when every need lacking is one the harness's target cannot have by its
    nature (:attr:`Harness.impossible`), else ``HARNESS``: a gap in coverage."""
    impossible: frozenset[str] = getattr(harness, "impossible", frozenset())
    if lacking and all(need in impossible for need in lacking):
        return SkippedFor.TARGET
    return SkippedFor.HARNESS


def _harness_error(check: Check, crash: HarnessCrash, replay: str) -> str:
    return (
        f"[{check.id}] harness error, not the adapter's: {crash}\n"
        f"  at: {crash.location}\n"
        f"  rule: {check.rule} (not judged)\n"
        f"  replay: {replay}"
    )


def _failure(check: Check, did: str, replay: str) -> str:
    return (
        f"[{check.id}] rule: {check.rule}\n"
        f"  clause: {check.clause}\n"
        f"  adapter: {did}\n"
        f"  replay: {replay}"
    )
