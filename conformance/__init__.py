"""The dispatch conformance kit: harnesses, checks, and the runners that run them.

What a harness author needs is here: :class:`Harness` (generic over its backend type), the
identity model it declares (:class:`IdentityModel`, :class:`Lookup`), the listing every harness
gives (:class:`Listed`, :class:`Shown`), the powers it may offer, each a protocol of
:mod:`conformance.powers` it implements (faults as intents: :class:`Fault`, :class:`LookAlike`;
probes: :class:`Probe`, :class:`Host`, :class:`LocalHost`), and what a check declares
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
    SkippedFor,
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
    Harness,
    HarnessUnavailable,
    Host,
    IdentityModel,
    Listed,
    LocalHost,
    LookAlike,
    Lookup,
    Probe,
    Race,
    ReplyLoss,
    Shown,
    Signalled,
    look_alike_need,
    race_need,
    reply_loss_need,
)
from conformance.plugin import suite_for
from conformance.profiles import PROFILES, Profile, ProfileResult, judge_profiles
from conformance.tiers import Tier

__all__ = [
    "NEAR_DECIMALS",
    "OPERATIONS",
    "PROFILES",
    "STALL_BOUND",
    "CannotInject",
    "Check",
    "CheckFailed",
    "Context",
    "Fault",
    "Harness",
    "HarnessUnavailable",
    "Host",
    "IdentityModel",
    "Listed",
    "LocalHost",
    "LookAlike",
    "Lookup",
    "Needs",
    "Outcome",
    "Probe",
    "Profile",
    "ProfileResult",
    "Race",
    "ReplyLoss",
    "Result",
    "Shown",
    "Signalled",
    "Skip",
    "SkippedFor",
    "Tier",
    "check",
    "checks",
    "judge_profiles",
    "look_alike_need",
    "race_need",
    "reply_loss_need",
    "run_check",
    "suite_for",
]
