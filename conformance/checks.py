"""The check registry, the context a check runs in, and the runner-agnostic runner.

A check is a function of one :class:`Context`, registered with :func:`check` under a stable id,
its rule (the first line of its docstring) and the seed clause it comes from. The same checks
run from pytest (``conformance.plugin``), from the CLI and inside an author's own suite
(:func:`run_check`), as csi-sanity's registry does.

Outcomes: passed; failed (the message says what the adapter did, the rule, and how to replay
it); skipped because the adapter declares ``no`` (reason given); skipped because the harness
cannot inject a fault; and strict expected failure (an unexpected pass fails).
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from ulid import ULID

from conformance.harness import CannotInject, FaultInjector, Harness, HarnessUnavailable
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

T = TypeVar("T")


class Tier(StrEnum):
    """How much a run checks: ``smoke`` < ``standard`` < ``full``."""

    SMOKE = "smoke"
    STANDARD = "standard"
    FULL = "full"

    def includes(self, other: Tier) -> bool:
        order = list(Tier)
        return order.index(other) <= order.index(self)


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Check:
    """One registered check."""

    id: str
    rule: str
    clause: str
    suite: str
    tier: Tier
    func: Callable[[Context], None]
    xfail: str | None = None


REGISTRY: dict[str, Check] = {}


def check(
    check_id: str, *, clause: str, tier: Tier | str = Tier.STANDARD, xfail: str | None = None
) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    """Register a check under ``check_id``; its docstring's first line is the rule it checks."""

    def register(func: Callable[[Context], None]) -> Callable[[Context], None]:
        if check_id in REGISTRY:
            raise ValueError(f"check id {check_id} is registered twice")
        doc = (func.__doc__ or "").strip().splitlines()
        if not doc:
            raise ValueError(f"check {check_id} has no rule: give it a one-line docstring")
        suite = func.__module__.rsplit(".", 1)[-1]
        REGISTRY[check_id] = Check(check_id, doc[0], clause, suite, Tier(tier), func, xfail)
        return func

    return register


def checks(tier: Tier | str = Tier.FULL, ids: Iterable[str] | None = None) -> list[Check]:
    """The registered checks of ``tier`` (and below), in id order; ``ids`` selects by id or
    id prefix (``IDENT-``)."""
    import conformance.suites  # noqa: F401  (registers every suite)

    chosen = [c for c in REGISTRY.values() if Tier(tier).includes(c.tier)]
    if ids is not None:
        wanted = list(ids)
        chosen = [c for c in chosen if any(c.id == w or c.id.startswith(w) for w in wanted)]
    return sorted(chosen, key=lambda c: c.id)


class Skip(Exception):
    """The check does not apply: the adapter declares no, or the harness cannot inject."""


class CheckFailed(AssertionError):
    """The adapter broke the check's rule."""


class Context:
    """What a check works with: a fresh backend of the harness, its clock, its faults, a seeded
    random source, and a tracker that stops every object the check started (csi-sanity's
    resource tracker)."""

    def __init__(self, harness: Harness, check: Check, seed: int) -> None:
        self.harness = harness
        self.check = check
        self.seed = seed
        self.rng = random.Random(f"{seed}:{check.id}")
        self._backend: Backend | None = None
        self._started: list[tuple[Backend, ObjectRef]] = []

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
    def faults(self) -> FaultInjector:
        return self.harness.faults(self.backend)

    def reopen(self) -> Backend:
        return self.harness.reopen(self.backend)

    def executions(self, ref: ObjectRef) -> list[list[dict[str, str]]]:
        return [
            [dict(env) for env in ranks] for ranks in self.harness.executions(self.backend, ref)
        ]

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
        ref = self.backend.start(plan, submission, attempt)
        self._started.append((self.backend, ref))
        return ref

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

    def cleanup(self) -> None:
        for backend, ref in reversed(self._started):
            try:
                backend.stop(ref)
            except Exception:
                continue


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
        }


def replay_command(harness: str, check_id: str, seed: int) -> str:
    return f"dispatch-conformance run --harness {harness} --check {check_id} --seed {seed}"


def run_check(check: Check, harness: Harness, seed: int = 0) -> Result:
    """Run one check on one harness; never raises for what the adapter does."""
    started = time.perf_counter()
    ctx = Context(harness, check, seed)
    replay = replay_command(harness.name, check.id, seed)
    try:
        check.func(ctx)
        outcome, reason = Outcome.PASSED, ""
    except Skip as skip:
        outcome, reason = Outcome.SKIPPED, str(skip)
    except CannotInject as missing:
        outcome, reason = Outcome.SKIPPED, str(missing)
    except CheckFailed as failure:
        outcome, reason = Outcome.FAILED, _failure(check, str(failure), replay)
    except HarnessUnavailable as missing:
        outcome, reason = Outcome.FAILED, f"harness {harness.name} unavailable: {missing}"
    except DispatchError as error:
        did = f"raised {type(error).__name__}: {error}"
        outcome, reason = Outcome.FAILED, _failure(check, did, replay)
    except Exception as crash:
        where = traceback.format_exception(type(crash), crash, crash.__traceback__)[-2:]
        did = f"crashed: {type(crash).__name__}: {crash}\n  {''.join(where).strip()}"
        outcome, reason = Outcome.FAILED, _failure(check, did, replay)
    finally:
        ctx.cleanup()
    if check.xfail is not None:
        if outcome is Outcome.FAILED:
            outcome, reason = Outcome.SKIPPED, f"expected failure: {check.xfail}"
        elif outcome is Outcome.PASSED:
            outcome = Outcome.FAILED
            reason = _failure(
                check, f"passed, but it is a strict expected failure ({check.xfail})", replay
            )
    return Result(check, harness.name, outcome, reason, time.perf_counter() - started, seed, replay)


def _failure(check: Check, did: str, replay: str) -> str:
    return (
        f"[{check.id}] rule: {check.rule}\n"
        f"  clause: {check.clause}\n"
        f"  adapter: {did}\n"
        f"  replay: {replay}"
    )
