"""A deterministic Kubernetes simulator: the HTTP API over Trainer, JobSet, Job, kubelet, Kueue."""

from simulators.kubernetes.config import IDENTITY_RUNTIME, KubeConfig, NodeConfig, QueueConfig
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.sim import KubeSim

__all__ = ["IDENTITY_RUNTIME", "ApiError", "KubeConfig", "KubeSim", "NodeConfig", "QueueConfig"]
