"""The memory adapter's conformance harnesses, beside the adapter they test (DESIGN §2, §6).

- :mod:`adapters.memory.testing.harness`: ``memory-slurm`` and ``memory-kubeflow``
  (:class:`MemoryHarness`, its :class:`MemoryFaults`);
- :mod:`adapters.memory.testing.broken`: the memory adapter deliberately wrong in one way each,
  a harness factory per broken adapter (``adapters.memory.testing.broken:<name>``): the proof
  that the suites have teeth.
"""

from adapters.memory.testing.harness import (
    MemoryFaults,
    MemoryHarness,
    memory_kubeflow,
    memory_slurm,
)

__all__ = ["MemoryFaults", "MemoryHarness", "memory_kubeflow", "memory_slurm"]
