"""End to end, as a user drives it: ``dispatch-kube-sim serve`` in its own process, then only
``kubectl`` and ``dispatch-kube-sim advance``; and, in process, only the official client's
``watch.Watch()``. The TrainJob lifecycle: create, run, suspend, resume, logs, restart,
complete, fail, delete, with and without Kueue.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulators.kubernetes import KubeConfig, KubeSim
from simulators.kubernetes.resources import TRAINJOBS

KUBECTL = Path("/usr/bin/kubectl")
CLI = [sys.executable, "-m", "simulators.kubernetes.cli"]

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  labels: {labels}
spec:
  runtimeRef:
    name: {runtime}
    kind: {kind}
  trainer:
    numNodes: {nodes}
    image: busybox
    command: ["train"]
    env:
    - name: KUBE_SIM_RUN_SECONDS
      value: "{seconds}"
    - name: KUBE_SIM_EXIT_CODES
      value: "{exit_codes}"
    - name: KUBE_SIM_LOG
      value: "0:hello from {name}"
"""

RESTARTING_RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: restarting
spec:
  mlPolicy:
    numNodes: 1
  template:
    spec:
      failurePolicy:
        maxRestarts: 1
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            backoffLimit: 0
            template:
              spec:
                restartPolicy: Never
                containers:
                - name: node
                  image: busybox
"""


class Cluster:
    """One ``dispatch-kube-sim serve`` process and the kubectl that talks to it."""

    def __init__(self, tmp: Path, kueue: bool) -> None:
        self.kubeconfig = tmp / "kubeconfig"
        self.cache = tmp / "cache"
        self.tmp = tmp
        args = [*CLI, "serve", "--kubeconfig", str(self.kubeconfig), "--seed", "5"]
        self.process = subprocess.Popen(
            [*args, *(["--kueue"] if kueue else [])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        assert first.startswith("serving http://127.0.0.1:"), first

    def kubectl(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [
                str(KUBECTL),
                "--kubeconfig",
                str(self.kubeconfig),
                "--cache-dir",
                str(self.cache),
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done

    def get(self, *args: str) -> str:
        return self.kubectl("get", *args).stdout.strip()

    def advance(self, seconds: float) -> None:
        done = subprocess.run(
            [*CLI, "advance", str(seconds), "--kubeconfig", str(self.kubeconfig)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr

    def apply(self, name: str, text: str) -> str:
        path = self.tmp / f"{name}.yaml"
        path.write_text(text)
        return self.kubectl("apply", "-f", str(path)).stdout.strip()

    def phases(self, trainjob: str) -> list[str]:
        text = self.get(
            "pods",
            "-l",
            f"jobset.sigs.k8s.io/jobset-name={trainjob}",
            "-o",
            "jsonpath={.items[*].status.phase}",
        )
        return sorted(text.split())

    def condition(self, trainjob: str, kind: str) -> str:
        return self.get(
            "trainjob",
            trainjob,
            "-o",
            f'jsonpath={{.status.conditions[?(@.type=="{kind}")].status}}/{{.status.conditions[?(@.type=="{kind}")].reason}}',
        )

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(params=[False, True], ids=["plain", "kueue"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    if not KUBECTL.exists():
        pytest.skip("/usr/bin/kubectl is not installed on this host")
    made = Cluster(tmp_path, bool(request.param))
    yield made
    made.stop()


def manifest(name: str, kueue: bool, **fields: Any) -> str:
    values: dict[str, Any] = {
        "name": name,
        "labels": json.dumps({"kueue.x-k8s.io/queue-name": "user-queue"} if kueue else {}),
        "runtime": "torch-distributed",
        "kind": "ClusterTrainingRuntime",
        "nodes": 2,
        "seconds": 120,
        "exit_codes": "0",
    }
    values.update(fields)
    return TRAINJOB.format(**values)


def hold(cluster: Cluster, kueue: bool, held: bool) -> None:
    if kueue:  # under Kueue a hold goes through the Workload (facts §5.2)
        workload = cluster.get("workloads", "-o", "jsonpath={.items[0].metadata.name}")
        patch = json.dumps({"spec": {"active": not held}})
        cluster.kubectl("patch", "workload", workload, "--type=merge", "-p", patch)
    else:
        patch = json.dumps({"spec": {"suspend": held}})
        cluster.kubectl("patch", "trainjob", "tj", "--type=merge", "-p", patch)


def test_the_trainjob_lifecycle_through_kubectl(
    cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    kueue = "kueue" in request.node.callspec.id
    assert cluster.apply("tj", manifest("tj", kueue)) == "trainjob.trainer.kubeflow.org/tj created"
    cluster.advance(5)
    assert cluster.phases("tj") == ["Running", "Running"]
    table = cluster.get("trainjobs")
    assert table.splitlines()[0].split()[0] == "NAME" and "tj" in table
    first = set(cluster.get("pods", "-o", "name").split())

    hold(cluster, kueue, True)
    cluster.advance(40)
    assert cluster.phases("tj") == []
    assert cluster.condition("tj", "Suspended") == "True/Suspended"
    hold(cluster, kueue, False)
    cluster.advance(5)
    assert cluster.phases("tj") == ["Running", "Running"]
    assert cluster.condition("tj", "Suspended") == "False/Resumed"
    second = set(cluster.get("pods", "-o", "name").split())
    assert second and not second & first

    pod = sorted(second)[0].removeprefix("pod/")
    assert "hello from tj" in cluster.kubectl("logs", pod).stdout

    waiter = subprocess.Popen(
        [
            str(KUBECTL),
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--cache-dir",
            str(cluster.cache),
            "wait",
            "--for=condition=Complete",
            "trainjob/tj",
            "--timeout=60s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cluster.advance(200)
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert out.strip() == "trainjob.trainer.kubeflow.org/tj condition met"
    assert cluster.condition("tj", "Complete") == "True/AllJobsCompleted"

    assert (
        cluster.kubectl("delete", "trainjob", "tj").stdout.strip()
        == 'trainjob.trainer.kubeflow.org "tj" deleted'
    )
    cluster.advance(60)
    assert "No resources found" in cluster.kubectl("get", "jobsets").stderr
    assert cluster.phases("tj") == []


def test_failure_and_restart_through_kubectl(
    cluster: Cluster, request: pytest.FixtureRequest
) -> None:
    kueue = "kueue" in request.node.callspec.id
    # the identity runtime: restartPolicy Never, backoffLimit 0: the first failure fails it
    cluster.apply(
        "bad",
        manifest("bad", kueue, runtime="dispatch-identity", nodes=1, seconds=3, exit_codes="2"),
    )
    cluster.advance(30)
    assert cluster.condition("bad", "Failed") == "True/FailedJobs"
    # a TrainingRuntime with failurePolicy.maxRestarts 1: one JobSet restart, then ReachedMaxRestarts
    assert (
        cluster.apply("rt", RESTARTING_RUNTIME)
        == "trainingruntime.trainer.kubeflow.org/restarting created"
    )
    cluster.apply(
        "again",
        manifest(
            "again",
            kueue,
            runtime="restarting",
            kind="TrainingRuntime",
            nodes=1,
            seconds=3,
            exit_codes="2",
        ),
    )
    cluster.advance(10)
    attempts = cluster.get(
        "jobs",
        "-o",
        "jsonpath={.items[*].metadata.labels.jobset\\.sigs\\.k8s\\.io/restart-attempt}",
    )
    cluster.advance(60)
    assert cluster.get("jobset", "again", "-o", "jsonpath={.status.restarts}") == "1"
    assert cluster.condition("again", "Failed") == "True/ReachedMaxRestarts"
    assert re.fullmatch(r"[01]( [01])*", attempts), attempts


def test_the_official_client_watches_a_trainjob_to_complete_and_deleted() -> None:
    from kubernetes import client, config, watch

    sim = KubeSim(KubeConfig(default_run_seconds=30), seed=2)
    with sim.serve() as server:
        api = config.new_client_from_config(config_file=server.kubeconfig)
        objects = client.CustomObjectsApi(api)
        group, version, plural = "trainer.kubeflow.org", "v1alpha1", "trainjobs"
        seen: list[tuple[str, str]] = []
        started = threading.Event()

        def follow() -> None:
            stream = watch.Watch().stream(
                objects.list_namespaced_custom_object,
                group,
                version,
                "default",
                plural,
                timeout_seconds=300,
            )
            started.set()
            for event in stream:
                conditions = event["object"].get("status", {}).get("conditions", [])
                last = conditions[-1]["type"] if conditions else "-"
                seen.append((event["type"], last))
                if event["type"] == "DELETED":
                    return

        body = {
            "apiVersion": f"{group}/{version}",
            "kind": "TrainJob",
            "metadata": {"name": "py"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
        }
        objects.create_namespaced_custom_object(group, version, "default", plural, body)
        watcher = threading.Thread(target=follow)
        watcher.start()
        started.wait(10)
        server.wait_for_watches(1, 10)
        sim.advance(60)
        assert sim.get(TRAINJOBS, "py", "default")["status"]["conditions"][-1]["type"] == "Complete"
        objects.delete_namespaced_custom_object(group, version, "default", plural, "py")
        watcher.join(30)
        assert not watcher.is_alive()
    assert seen[0] == ("ADDED", "-")
    assert ("MODIFIED", "Complete") in seen
    assert seen[-1][0] == "DELETED"


@pytest.mark.parametrize("kueue", [False, True], ids=["plain", "kueue"])
def test_the_trainjob_lifecycle_through_the_official_client(kueue: bool) -> None:
    """create, run, suspend, resume, restart, complete, fail, delete, through CustomObjectsApi and
    CoreV1Api only (time moves through the control endpoint, as ``dispatch-kube-sim advance``)."""
    import http.client
    from urllib.parse import urlsplit

    from kubernetes import client, config

    sim = KubeSim(KubeConfig(kueue=kueue), seed=4)
    with sim.serve() as server:
        api = config.new_client_from_config(config_file=server.kubeconfig)
        objects, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
        g, v, ns = "trainer.kubeflow.org", "v1alpha1", "default"
        port = urlsplit(server.url).port

        def advance(seconds: float) -> None:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("POST", "/sim/v1/advance", json.dumps({"seconds": seconds}))
            assert connection.getresponse().status == 200
            connection.close()

        def body(name: str, **fields: Any) -> dict[str, Any]:
            labels = {"kueue.x-k8s.io/queue-name": "user-queue"} if kueue else {}
            return json.loads(
                json.dumps(
                    {
                        "apiVersion": f"{g}/{v}",
                        "kind": "TrainJob",
                        "metadata": {"name": name, "labels": labels},
                        "spec": {
                            "runtimeRef": {
                                "name": fields.get("runtime", "torch-distributed"),
                                "kind": fields.get("kind", "ClusterTrainingRuntime"),
                            },
                            "trainer": {
                                "numNodes": fields.get("nodes", 2),
                                "env": [
                                    {
                                        "name": "KUBE_SIM_RUN_SECONDS",
                                        "value": str(fields.get("seconds", 120)),
                                    },
                                    {
                                        "name": "KUBE_SIM_EXIT_CODES",
                                        "value": fields.get("exit_codes", "0"),
                                    },
                                ],
                            },
                        },
                    }
                )
            )

        def phases(name: str) -> list[str]:
            listed = core.list_namespaced_pod(
                ns, label_selector=f"jobset.sigs.k8s.io/jobset-name={name}"
            )
            return sorted(str(p.status.phase) for p in listed.items)

        def conditions(name: str) -> dict[str, tuple[str, str]]:
            obj = objects.get_namespaced_custom_object(g, v, ns, "trainjobs", name)
            return {
                c["type"]: (c["status"], c["reason"])
                for c in obj.get("status", {}).get("conditions", [])
            }

        def hold(name: str, held: bool) -> None:
            if kueue:
                (wl,) = objects.list_namespaced_custom_object(
                    "kueue.x-k8s.io", "v1beta2", ns, "workloads"
                )["items"]
                objects.patch_namespaced_custom_object(
                    "kueue.x-k8s.io",
                    "v1beta2",
                    ns,
                    "workloads",
                    wl["metadata"]["name"],
                    {"spec": {"active": not held}},
                )
            else:
                objects.patch_namespaced_custom_object(
                    g, v, ns, "trainjobs", name, {"spec": {"suspend": held}}
                )

        objects.create_namespaced_custom_object(g, v, ns, "trainjobs", body("tj"))
        advance(5)
        assert phases("tj") == ["Running", "Running"]
        hold("tj", True)
        advance(40)
        assert phases("tj") == [] and conditions("tj")["Suspended"] == ("True", "Suspended")
        hold("tj", False)
        advance(5)
        assert phases("tj") == ["Running", "Running"]
        advance(200)
        assert conditions("tj")["Complete"] == ("True", "AllJobsCompleted")
        objects.delete_namespaced_custom_object(g, v, ns, "trainjobs", "tj")
        advance(60)
        assert phases("tj") == []
        assert (
            objects.list_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", ns, "jobsets")[
                "items"
            ]
            == []
        )

        objects.create_namespaced_custom_object(
            g, v, ns, "trainingruntimes", json.loads(json.dumps(_yaml_runtime()))
        )
        objects.create_namespaced_custom_object(
            g,
            v,
            ns,
            "trainjobs",
            body(
                "again",
                runtime="restarting",
                kind="TrainingRuntime",
                nodes=1,
                seconds=3,
                exit_codes="2",
            ),
        )
        advance(70)
        jobset = objects.get_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", ns, "jobsets", "again"
        )
        assert jobset["status"]["restarts"] == 1
        assert conditions("again")["Failed"] == ("True", "ReachedMaxRestarts")


def _yaml_runtime() -> dict[str, Any]:
    """RESTARTING_RUNTIME as an object (the official client sends dicts)."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "restarting"},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {
                "spec": {
                    "failurePolicy": {"maxRestarts": 1},
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {
                                    "backoffLimit": 0,
                                    "template": {
                                        "spec": {
                                            "restartPolicy": "Never",
                                            "containers": [{"name": "node", "image": "busybox"}],
                                        }
                                    },
                                },
                            },
                        }
                    ],
                }
            },
        },
    }
