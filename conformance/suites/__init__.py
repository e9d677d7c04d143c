"""The suites, one module per feature area; importing this package registers every check."""

from conformance.suites import capability, hold, identity, stateful

__all__ = ["capability", "hold", "identity", "stateful"]
