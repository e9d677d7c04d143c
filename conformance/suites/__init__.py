"""The suites, one module per feature area; importing this package registers every check."""

from conformance.suites import (
    capability,
    causes,
    core,
    hold,
    identity,
    observation,
    safety,
    stateful,
)

__all__ = [
    "capability",
    "causes",
    "core",
    "hold",
    "identity",
    "observation",
    "safety",
    "stateful",
]
