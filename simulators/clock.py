"""The virtual clock every simulator and harness shares (defined in the core, for fakes too)."""

from dispatch_core.clock import DEFAULT_START, VirtualClock

__all__ = ["DEFAULT_START", "VirtualClock"]
