"""The dispatch conformance kit: harnesses, checks, and the runners that run them.

What a harness author needs is here: :class:`Harness` (generic over its backend type), the
identity model it declares (:class:`IdentityModel`, :class:`Lookup`), the intents its fault
injector serves (:class:`FaultInjector`, :class:`Fault`, :class:`LookAlike`), the probes it may
offer (:class:`Probe`, :class:`Host`, :class:`LocalHost`), and what a check declares
(:class:`Needs`, ``xfail_on``). ``conformance`` imports no adapter and no simulator.
"""

from conformance.checks import (
    Check,
    CheckFailed,
    Context,
    Needs,
    Outcome,
    Result,
    Skip,
    check,
    checks,
    run_check,
)
from conformance.harness import (
    NEAR_DECIMALS,
    OPERATIONS,
    STALL_BOUND,
    CannotInject,
    Fault,
    FaultInjector,
    Harness,
    HarnessUnavailable,
    Host,
    IdentityModel,
    LocalHost,
    LookAlike,
    Lookup,
    Probe,
    ReplyLoss,
    Signalled,
    look_alike_need,
)
from conformance.plugin import suite_for
from conformance.tiers import Tier

__all__ = [
    "NEAR_DECIMALS",
    "OPERATIONS",
    "STALL_BOUND",
    "CannotInject",
    "Check",
    "CheckFailed",
    "Context",
    "Fault",
    "FaultInjector",
    "Harness",
    "HarnessUnavailable",
    "Host",
    "IdentityModel",
    "LocalHost",
    "LookAlike",
    "Lookup",
    "Needs",
    "Outcome",
    "Probe",
    "ReplyLoss",
    "Result",
    "Signalled",
    "Skip",
    "Tier",
    "check",
    "checks",
    "look_alike_need",
    "run_check",
    "suite_for",
]
