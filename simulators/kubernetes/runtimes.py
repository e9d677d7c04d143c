"""The runtime catalogue: ClusterTrainingRuntime objects the simulated cluster starts with.

The stock runtimes are kubeflow/trainer v2.3.0 ``manifests/base/runtimes`` (tag commit
658725bd) [T11], images and commands as upstream writes them; none sets ``failurePolicy``,
``backoffLimit``, ``restartPolicy``, ``podFailurePolicy`` or ``backoffLimitPerIndex`` (so the
JobSet webhook defaults ``restartPolicy: OnFailure`` [J5]). ``dispatch-identity`` is dispatch's
own: a plain runtime (no framework policy, so no ``PET_`` or ``JAX_`` variables) whose trainer
Job has ``restartPolicy: Never`` and ``backoffLimit: 0``, so that a failed rank is never rerun
under the identity it had (facts §4.2, §0 ``IdentityWeakener``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from simulators.kubernetes.objects import JSON, clone

API_VERSION: Final = "trainer.kubeflow.org/v1alpha1"
KIND: Final = "ClusterTrainingRuntime"
ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
"""pkg/constants/constants.go LabelTrainJobAncestor [T10]."""
FRAMEWORK_LABEL: Final = "trainer.kubeflow.org/framework"


def _runtime(name: str, framework: str, spec: JSON) -> JSON:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "labels": {FRAMEWORK_LABEL: framework}},
        "spec": spec,
    }


def _trainer_job(containers: list[JSON], **pod_spec: object) -> JSON:
    """A replicatedJob template labelled as the trainer step."""
    spec: JSON = dict(pod_spec)
    spec["containers"] = containers
    return {
        "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
        "spec": {"template": {"spec": spec}},
    }


def _single_node(
    name: str, framework: str, ml_policy: JSON, image: str, **pod_spec: object
) -> JSON:
    """A runtime of one trainer replicatedJob ``node`` with one container ``node``."""
    container = {"name": "node", "image": image}
    template = _trainer_job([container], **pod_spec)
    spec = {"replicatedJobs": [{"name": "node", "template": template}]}
    return _runtime(name, framework, {"mlPolicy": ml_policy, "template": {"spec": spec}})


TORCH_IMAGE: Final = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"


def torch_distributed() -> JSON:
    """manifests/base/runtimes/torch_distributed.yaml (v2.3.0)."""
    return _single_node("torch-distributed", "torch", {"numNodes": 1, "torch": {}}, TORCH_IMAGE)


def deepspeed_distributed() -> JSON:
    """manifests/base/runtimes/deepspeed_distributed.yaml (v2.3.0): MPI, launcher + node.

    ``successPolicy`` targets the launcher; the launcher ``dependsOn`` the node Jobs being Ready.
    """
    image = "ghcr.io/kubeflow/trainer/deepspeed-runtime"
    return _runtime(
        "deepspeed-distributed",
        "deepspeed",
        {
            "mlPolicy": {
                "numNodes": 1,
                "mpi": {
                    "numProcPerNode": 1,
                    "mpiImplementation": "OpenMPI",
                    "sshAuthMountPath": "/home/mpiuser/.ssh",
                    "runLauncherAsNode": True,
                },
            },
            "template": {
                "spec": {
                    "network": {"publishNotReadyAddresses": True},
                    "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "securityContext": {"fsGroup": 1000},
                                            "containers": [
                                                {
                                                    "name": "node",
                                                    "image": image,
                                                    "securityContext": {"runAsUser": 1000},
                                                    "command": ["/usr/sbin/sshd"],
                                                    "args": [
                                                        "-De",
                                                        "-f",
                                                        "/home/mpiuser/.sshd_config",
                                                    ],
                                                    "readinessProbe": {
                                                        "tcpSocket": {"port": 2222},
                                                        "initialDelaySeconds": 5,
                                                    },
                                                }
                                            ],
                                        }
                                    }
                                }
                            },
                        },
                        {
                            "name": "launcher",
                            "dependsOn": [{"name": "node", "status": "Ready"}],
                            "template": _trainer_job(
                                [
                                    {
                                        "name": "node",
                                        "image": image,
                                        "securityContext": {"runAsUser": 1000},
                                    }
                                ],
                                securityContext={"fsGroup": 1000},
                            ),
                        },
                    ],
                }
            },
        },
    )


def jax_distributed() -> JSON:
    """manifests/base/runtimes/jax_distributed.yaml (v2.3.0)."""
    return _single_node(
        "jax-distributed", "jax", {"numNodes": 1, "jax": {}}, "nvcr.io/nvidia/jax:25.10-py3"
    )


def dispatch_identity() -> JSON:
    """dispatch's identity-keeping runtime: plain (no framework env), Never, backoffLimit 0."""
    runtime = _single_node(
        "dispatch-identity", "plain", {"numNodes": 1}, TORCH_IMAGE, restartPolicy="Never"
    )
    job_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec["backoffLimit"] = 0
    return runtime


RUNTIMES: Final[dict[str, Callable[[], JSON]]] = {
    "torch-distributed": torch_distributed,
    "deepspeed-distributed": deepspeed_distributed,
    "jax-distributed": jax_distributed,
    "dispatch-identity": dispatch_identity,
}


_MADE: dict[tuple[str, Callable[[], JSON]], JSON] = {}
"""Each runtime as its function made it once (every cluster starts with copies of them)."""


def catalogue(names: Iterable[str]) -> list[JSON]:
    """The ClusterTrainingRuntime objects of ``names``, in order (ValueError for an unknown one):
    new copies, the caller's to keep."""
    out: list[JSON] = []
    for name in names:
        make = RUNTIMES.get(name)
        if make is None:
            raise ValueError(f"unknown runtime {name!r}; known: {', '.join(sorted(RUNTIMES))}")
        made = _MADE.get((name, make))
        if made is None:
            made = _MADE[(name, make)] = make()
        out.append(clone(made))
    return out
