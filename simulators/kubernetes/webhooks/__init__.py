"""Admission plugins: the JobSet and TrainJob webhooks (with their CRDs' schema rules)."""

from simulators.kubernetes.webhooks.jobset import JobSetWebhook
from simulators.kubernetes.webhooks.trainer import TrainJobWebhook

__all__ = ["JobSetWebhook", "TrainJobWebhook"]
