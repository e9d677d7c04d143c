"""``/usr/bin/kubectl`` (the dispatcher, v1.32.4 built in), unchanged, against the simulated API.

One server and one fresh ``--cache-dir`` for the module (stale discovery otherwise lingers for
6 h, ../shared/reference/kube-api-clients.md §1.2). TrainJobs are read only for what the API
itself does, so the tests hold whichever controllers the simulator wires in.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulators.kubernetes import KubeSim
from simulators.kubernetes.resources import PODS, TRAINJOBS
from simulators.kubernetes.server import Server

KUBECTL = Path("/usr/bin/kubectl")
pytestmark = pytest.mark.skipif(
    not KUBECTL.exists(), reason="/usr/bin/kubectl is not installed on this host"
)

TRAINJOB_YAML = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  labels:
    team: {team}
spec:
  runtimeRef:
    name: torch-distributed
  suspend: true
  trainer:
    numNodes: {nodes}
"""


@pytest.fixture(scope="module")
def sim() -> KubeSim:
    return KubeSim(seed=9)


@pytest.fixture(scope="module")
def server(sim: KubeSim) -> Iterator[Server]:
    with sim.serve() as s:
        yield s


@pytest.fixture(scope="module")
def base(server: Server, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    cache = tmp_path_factory.mktemp("kubectl-cache")
    return [str(KUBECTL), "--kubeconfig", server.kubeconfig, "--cache-dir", str(cache)]


def kubectl(base: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*base, *args], capture_output=True, text=True, timeout=60)


def test_version_reports_the_server_minor(base: list[str], sim: KubeSim) -> None:
    done = kubectl(base, "version")
    assert done.returncode == 0, done.stderr
    assert f"Server Version: v1.{sim.config.kube_minor}.0" in done.stdout


def test_trainjob_apply_get_patch_delete(base: list[str], tmp_path: Path, sim: KubeSim) -> None:
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(TRAINJOB_YAML.format(name="tja", nodes=2, team="a"))
    done = kubectl(base, "apply", "-f", str(manifest))
    assert (done.returncode, done.stdout.strip()) == (
        0,
        "trainjob.trainer.kubeflow.org/tja created",
    )
    sim.advance(5)
    done = kubectl(base, "get", "trainjobs")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["NAME", "STATE", "AGE"]
    assert [r.split()[0] for r in rows] == ["tja"] and rows[0].split()[-1] == "5s"
    manifest.write_text(
        TRAINJOB_YAML.format(name="tja", nodes=2, team="b")
    )  # spec.trainer: immutable
    done = kubectl(base, "apply", "-f", str(manifest))
    assert done.stdout.strip() == "trainjob.trainer.kubeflow.org/tja configured", done.stderr
    done = kubectl(base, "get", "trainjob", "tja", "-o", "json")
    obj = json.loads(done.stdout)
    assert obj["metadata"]["labels"] == {"team": "b"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in obj["metadata"]["annotations"]
    done = kubectl(
        base, "patch", "trainjob", "tja", "--type=merge", "-p", '{"spec":{"suspend":false}}'
    )
    assert done.stdout.strip() == "trainjob.trainer.kubeflow.org/tja patched", done.stderr
    assert sim.get(TRAINJOBS, "tja", "default")["spec"]["suspend"] is False
    done = kubectl(base, "patch", "trainjob", "tja", "-p", '{"spec":{"suspend":true}}')
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: application/strategic-merge-patch+json is not supported by "
        "trainer.kubeflow.org/v1alpha1, Kind=TrainJob: the body of the request was in an unknown "
        "format - accepted media types include: application/json-patch+json, "
        "application/merge-patch+json, application/apply-patch+yaml"
    )
    done = kubectl(base, "delete", "trainjob", "tja")
    assert done.stdout.strip() == 'trainjob.trainer.kubeflow.org "tja" deleted', done.stderr
    done = kubectl(base, "get", "trainjob", "tja")
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == 'Error from server (NotFound): trainjobs.trainer.kubeflow.org "tja" not found'
    )


def _trainjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": True},
    }


def test_get_watch_prints_rows_and_exits_when_the_watch_is_cut(
    base: list[str], sim: KubeSim, server: Server
) -> None:
    sim.create(TRAINJOBS, _trainjob("listed"), "default")
    proc = subprocess.Popen(
        [*base, "get", "trainjobs", "-w"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()

    def until_row(name: str) -> list[str]:
        seen: list[str] = []
        while not any(line.split()[:1] == [name] for line in seen):
            seen.append(lines.get(timeout=20))
        return seen

    try:
        first = until_row("listed")
        assert first[0].split() == ["NAME", "STATE", "AGE"]
        assert server.wait_for_watches(1, timeout=20)
        sim.create(TRAINJOBS, _trainjob("watched"), "default")
        until_row("watched")
        sim.faults.cut_watches()
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _fake_logs(
    sim: KubeSim, ns: str, pod: str, container: str, previous: bool, tail: int | None, ts: bool
) -> str:
    lines = [f"{pod}/{container} line {i}\n" for i in range(5)]
    return "".join(lines if tail is None else lines[-tail:])


def test_logs_of_a_pod(base: list[str], sim: KubeSim, server: Server) -> None:
    server.logs = _fake_logs
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "logged"},
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox"},
                {"name": "side", "image": "busybox"},
            ]
        },
    }
    sim.create(PODS, pod, "default")
    done = kubectl(base, "logs", "logged")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "logged/main line 0"
    assert 'Defaulted container "main" out of: main, side' in done.stderr
    done = kubectl(base, "logs", "logged", "-c", "side", "--tail=2")
    assert done.stdout.splitlines() == ["logged/side line 3", "logged/side line 4"]
    done = kubectl(base, "logs", "nosuch")
    assert done.returncode == 1
    assert 'pods "nosuch" not found' in done.stderr


def test_get_one_object_watch_sees_its_first_change(
    base: list[str], sim: KubeSim, server: Server
) -> None:
    sim.create(TRAINJOBS, _trainjob("single"), "default")
    watching = server.open_watches
    proc = subprocess.Popen(
        [*base, "get", "trainjob", "single", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.wait_for_watches(watching + 1, timeout=20)
        with sim.lock:
            sim.store.mutate(
                TRAINJOBS,
                "default",
                "single",
                lambda o: o["metadata"].setdefault("labels", {}).update({"changed": "yes"}),
                internal=False,
            )
        sim.faults.cut_watches()
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    # the GET's row, then the MODIFIED (the synthetic ADDED of resourceVersion=0 is swallowed)
    assert [line.split()[0] for line in out.splitlines()] == ["NAME", "single", "single"]


def test_get_pods_prints_the_pod_columns(base: list[str], sim: KubeSim) -> None:
    pod = {"metadata": {"name": "columns"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    sim.create(PODS, pod, "default")
    done = kubectl(base, "get", "pods", "columns")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert row.split()[0] == "columns" and row.split()[1].endswith("/1")
