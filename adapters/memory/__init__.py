"""The memory adapter: the dispatch SPI over an in-memory scheduler (Slurm or Kubeflow shape)."""

from adapters.memory.backend import MemoryBackend
from adapters.memory.cluster import Execution, Job, MemoryCluster
from adapters.memory.tables import SHAPES, Shape, declared_capabilities, declared_rules

__all__ = [
    "SHAPES",
    "Execution",
    "Job",
    "MemoryBackend",
    "MemoryCluster",
    "Shape",
    "declared_capabilities",
    "declared_rules",
]
