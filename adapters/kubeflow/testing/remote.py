"""The Kubeflow adapter on a site's real cluster: the ``kubeflow-remote`` harness.

The kit passes no options to a harness (``--harness NAME`` or ``module:factory`` only), so this
one is configured from the environment:

- ``DISPATCH_KUBECONFIG``: the kubeconfig file (default: ``$KUBECONFIG``, then
  ``~/.kube/config``);
- ``DISPATCH_KUBE_CONTEXT``: its context (default: the current one);
- ``DISPATCH_KUBE_NAMESPACE``: the namespace the adapter works in (default ``default``);
- ``DISPATCH_KUBE_RUNTIME``: the runtime a spec names when it names none (default
  ``dispatch-identity``);
- ``DISPATCH_KUBE_QUEUE``: the Kueue LocalQueue to submit to (default: none, no Kueue).

When no cluster answers (no kubeconfig, an unreadable one, an API server that does not answer
``/version`` within 10 s) every check is skipped with the reason, which ``dispatch-conformance
preflight --harness kubeflow-remote`` prints for the site's administrator; it is a harness
error instead (:class:`~conformance.harness.HarnessUnavailable`) under ``CI=true`` or when
``DISPATCH_KUBECONFIG`` names the cluster explicitly, since then it was asked for. The harness
injects no fault (a real cluster's administrator is not the harness's to play). It lists the
namespace's TrainJobs as the simulated clusters do (its listing, read with its own client:
:func:`~adapters.kubeflow.testing.sim.trainjob_listing` over the namespace's TrainJobs, JobSets
and pods), and those that have not ended
(:class:`~conformance.powers.ShowsInventory`); it runs no preflight in a check
(:data:`NO_PREFLIGHT`). Nothing of the kubeconfig (a token, a client key) is ever printed:
only its path and the server's URL.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from kubernetes import client
from kubernetes import config as kube_config

from adapters.kubeflow import KubeflowBackend
from adapters.kubeflow.kube import JOBSET, TRAINER
from adapters.kubeflow.testing.sim import (
    JOBSET_UID,
    KUBE_IDENTITY,
    trainjob_finished,
    trainjob_listing,
)
from conformance.harness import CannotInject, Harness, HarnessUnavailable, Listed, Probe
from conformance.powers import ShowsInventory
from dispatch_core import Clock, WallClock

ENV_KUBECONFIG: Final = "DISPATCH_KUBECONFIG"
ENV_CONTEXT: Final = "DISPATCH_KUBE_CONTEXT"
ENV_NAMESPACE: Final = "DISPATCH_KUBE_NAMESPACE"
ENV_RUNTIME: Final = "DISPATCH_KUBE_RUNTIME"
ENV_QUEUE: Final = "DISPATCH_KUBE_QUEUE"
PROBE_TIMEOUT: Final = 10.0
"""Seconds the API server has to answer ``/version``."""
JOB_COMMAND: Final = ("sh", "-c", "sleep 86400")
"""A command that runs until a stop ends it (a real cluster decides nothing for the checks)."""
NO_PREFLIGHT: Final = (
    "on a real cluster the probes run real TrainJobs for minutes: run "
    "dispatch-conformance preflight --harness kubeflow-remote"
)
"""Why the harness offers no ``preflight`` (:meth:`KubeflowRemoteHarness.declines`)."""


def _settings(environ: Mapping[str, str]) -> dict[str, str | None]:
    explicit = environ.get(ENV_KUBECONFIG) or None
    kubeconfig = explicit or environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    return {
        "explicit": explicit,
        "kubeconfig": kubeconfig.split(os.pathsep)[0],
        "context": environ.get(ENV_CONTEXT) or None,
        "namespace": environ.get(ENV_NAMESPACE) or "default",
        "runtime": environ.get(ENV_RUNTIME) or "dispatch-identity",
        "queue": environ.get(ENV_QUEUE) or None,
        "ci": "true" if environ.get("CI") == "true" else None,
    }


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:300] or type(error).__name__


class KubeflowRemoteHarness(Harness[KubeflowBackend], ShowsInventory[KubeflowBackend]):
    """The Kubeflow adapter on the cluster a kubeconfig names (see the module for settings)."""

    name = "kubeflow-remote"
    identity = KUBE_IDENTITY
    schedule_within = 120.0
    stateful_examples = 2
    stateful_steps = 5
    crash_points = 2

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.settings = _settings(os.environ if environ is None else environ)
        self._configuration: client.Configuration | None = None
        self._reason: str | None = None
        self.clients: list[client.ApiClient] = []
        self.backends: dict[int, KubeflowBackend] = {}

    def declines(self, need: str) -> str | None:
        if need == Probe.PREFLIGHT:
            return NO_PREFLIGHT
        return None

    # -- the cluster ------------------------------------------------------------------------------

    def missing(self, reason: str) -> str:
        """Why there is no cluster, in a site administrator's words."""
        return (
            f"no Kubernetes cluster answers through {self.settings['kubeconfig']}: {reason} "
            f"(set {ENV_KUBECONFIG} to a kubeconfig of the cluster, {ENV_NAMESPACE} to your "
            f"namespace, {ENV_RUNTIME} to the runtime to use)"
        )

    def _unavailable(self, reason: str) -> Exception:
        missing = self.missing(reason)
        if self.settings["ci"] or self.settings["explicit"]:
            return HarnessUnavailable(f"{self.name}: {missing}", missing=missing)
        return CannotInject(f"a Kubernetes cluster: {reason}", missing=missing)

    def configuration(self) -> client.Configuration:
        """The client configuration, once the API server answered; else the reason, raised."""
        if self._reason is not None:
            raise self._unavailable(self._reason)
        if self._configuration is not None:
            return self._configuration
        path = str(self.settings["kubeconfig"])
        configuration = client.Configuration()
        try:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"no kubeconfig at {path}")
            kube_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=path,
                context=self.settings["context"],
                client_configuration=configuration,
            )
            with client.ApiClient(configuration) as probe:
                api: Any = client.VersionApi(probe)
                api.get_code(_request_timeout=PROBE_TIMEOUT)
        except Exception as error:
            self._reason = _one_line(error)
            raise self._unavailable(self._reason) from None
        self._configuration = configuration
        return configuration

    # -- the harness ------------------------------------------------------------------------------

    def _backend(self) -> KubeflowBackend:
        api = client.ApiClient(self.configuration())
        self.clients.append(api)
        backend = KubeflowBackend(
            api,
            str(self.settings["namespace"]),
            f"kubeflow-remote:{self.configuration().host}",
            queue=self.settings["queue"],
            default_runtime=str(self.settings["runtime"]),
            clock=WallClock(),
        )
        self.backends[id(backend)] = backend
        return backend

    def new_backend(self) -> KubeflowBackend:
        return self._backend()

    def reopen(self, backend: KubeflowBackend) -> KubeflowBackend:
        return self._backend()

    def clock(self, backend: KubeflowBackend) -> Clock:
        return backend.clock

    def job_command(self) -> tuple[str, ...]:
        return JOB_COMMAND

    def inventory(self, backend: KubeflowBackend) -> Sequence[str]:
        """The TrainJobs of the namespace that have not ended, read by this harness's own
        client (never through the adapter)."""
        namespace = str(self.settings["namespace"])
        with client.ApiClient(self.configuration()) as api:
            custom: Any = client.CustomObjectsApi(api)
            listed = custom.list_namespaced_custom_object(*TRAINER, namespace, "trainjobs")
        out = []
        for item in listed.get("items") or []:
            if not trainjob_finished(item) and not item["metadata"].get("deletionTimestamp"):
                out.append(f"{namespace}/{item['metadata']['name']}")
        return out

    def listing(self, backend: KubeflowBackend) -> Mapping[str, Listed]:
        """The TrainJobs of the namespace, with the JobSets and pods that tell whether one
        runs, read by this harness's own client (never through the adapter) and shown as the
        simulated clusters show theirs (:func:`~adapters.kubeflow.testing.sim.trainjob_listing`)."""
        namespace = str(self.settings["namespace"])
        with client.ApiClient(self.configuration()) as api:
            custom: Any = client.CustomObjectsApi(api)
            core: Any = client.CoreV1Api(api)
            trainjobs = custom.list_namespaced_custom_object(*TRAINER, namespace, "trainjobs")
            jobsets = custom.list_namespaced_custom_object(*JOBSET, namespace, "jobsets")
            # Pods as JSON (the client's models would rename their fields): only a JobSet's pods
            # can tell a TrainJob runs.
            pods = json.loads(
                core.list_namespaced_pod(
                    namespace, label_selector=JOBSET_UID, _preload_content=False
                ).data
            )
        return trainjob_listing(
            namespace,
            trainjobs.get("items") or [],
            jobsets.get("items") or [],
            pods.get("items") or [],
        )

    def end(self, check_id: str) -> None:
        clients, self.clients = self.clients, []
        self.backends.clear()
        for made in clients:
            made.close()  # type: ignore[no-untyped-call]

    def close(self) -> None:
        self.end("")


def kubeflow_remote() -> KubeflowRemoteHarness:
    return KubeflowRemoteHarness()


__all__ = [
    "ENV_CONTEXT",
    "ENV_KUBECONFIG",
    "ENV_NAMESPACE",
    "ENV_QUEUE",
    "ENV_RUNTIME",
    "KubeflowRemoteHarness",
    "kubeflow_remote",
]
