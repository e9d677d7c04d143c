"""The suites, one module per feature area; importing this package registers every check."""

from conformance.suites import capability

__all__ = ["capability"]
