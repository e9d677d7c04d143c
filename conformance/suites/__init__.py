"""The suites, one module per feature area; importing this package registers every check."""

from conformance.suites import capability, hold, identity, safety, stateful

__all__ = ["capability", "hold", "identity", "safety", "stateful"]
