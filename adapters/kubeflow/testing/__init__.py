"""The Kubeflow adapter's conformance harnesses, beside the adapter they test (DESIGN §2, §6).

- :mod:`adapters.kubeflow.testing.sim`: ``kubeflow-sim`` (no Kueue) and ``kubeflow-sim-kueue``
  (Kueue and the readmission gate, run in process), each on its own Kubernetes simulator
  served over HTTP (the only modules here that import the simulator);
- :mod:`adapters.kubeflow.testing.remote`: ``kubeflow-remote``, on a site's real cluster from a
  kubeconfig (``DISPATCH_KUBECONFIG``, ``DISPATCH_KUBE_NAMESPACE``, ``DISPATCH_KUBE_RUNTIME``);
- :mod:`adapters.kubeflow.testing.lookalikes`: TrainJobs as the adapter encodes them, and the
  Kubernetes forms of the look-alike intents;
- :mod:`adapters.kubeflow.testing.broken`: deliberately broken Kubeflow adapters and gate.

They register under the entry-point group ``dispatch.harnesses``; importing this package
imports none of them.
"""
