"""The Kubeflow adapter: Kubeflow Trainer v2 TrainJobs over the official ``kubernetes`` client
(DESIGN §11, issue 14). ``KubeflowBackend(api_client, namespace, cluster, queue=None,
allow_rank_restart=False)``; the readmission gate is :mod:`adapters.kubeflow.admission`."""

from adapters.kubeflow.backend import KubeflowBackend

__all__ = ["KubeflowBackend"]
