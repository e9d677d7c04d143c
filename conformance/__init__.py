"""The dispatch conformance kit: harnesses, checks, and the runners that run them."""

from conformance.checks import (
    Check,
    CheckFailed,
    Context,
    Outcome,
    Result,
    Skip,
    Tier,
    check,
    checks,
    run_check,
)
from conformance.harness import CannotInject, FaultInjector, Harness, HarnessUnavailable
from conformance.plugin import suite_for

__all__ = [
    "CannotInject",
    "Check",
    "CheckFailed",
    "Context",
    "FaultInjector",
    "Harness",
    "HarnessUnavailable",
    "Outcome",
    "Result",
    "Skip",
    "Tier",
    "check",
    "checks",
    "run_check",
    "suite_for",
]
