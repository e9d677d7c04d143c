"""What a kubectl user's script runs around a TrainJob, against ``sim.serve()`` in process:
one behaviour a test, each one that did not work before its fix.

One server (seed 3, Kueue installed) and one fresh ``--cache-dir`` for the module; the virtual
clock moves only through ``sim.advance``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulators.kubernetes import KubeConfig, KubeSim
from simulators.kubernetes.server import Server

KUBECTL = Path("/usr/bin/kubectl")
pytestmark = pytest.mark.skipif(
    not KUBECTL.exists(), reason="/usr/bin/kubectl is not installed on this host"
)

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  namespace: {namespace}
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 1
    image: busybox
    command: ["train"]
    env:
    - name: KUBE_SIM_RUN_SECONDS
      value: "{seconds}"
    - name: KUBE_SIM_LOG
      value: "0:hello from {name}"
"""


@pytest.fixture(scope="module")
def sim() -> KubeSim:
    return KubeSim(KubeConfig(kueue=True), seed=3)


@pytest.fixture(scope="module")
def server(sim: KubeSim) -> Iterator[Server]:
    with sim.serve() as s:
        yield s


@pytest.fixture(scope="module")
def base(server: Server, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    cache = tmp_path_factory.mktemp("kubectl-cache")
    return [str(KUBECTL), "--kubeconfig", server.kubeconfig, "--cache-dir", str(cache)]


def kubectl(
    base: list[str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, input=stdin)


def ok(base: list[str], *args: str, stdin: str | None = None) -> str:
    done = kubectl(base, *args, stdin=stdin)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_event_field_selectors_of_describe_are_served(base: list[str]) -> None:
    """describe lists events by involvedObject.*; scripts select by reason and type too."""
    selector = "involvedObject.kind=Pod,involvedObject.name=x,involvedObject.uid=u,reason=Started"
    done = kubectl(base, "get", "events", "-A", "--field-selector", selector)
    assert (done.returncode, done.stderr.strip()) == (0, "No resources found")
    done = kubectl(base, "get", "events", "--field-selector", "involvedObject.color=red")
    assert done.returncode == 1
    assert "field label not supported: involvedObject.color" in done.stderr


def test_node_and_job_field_selectors_read_as_the_strategies_build_them(
    base: list[str], sim: KubeSim, tmp_path: Path
) -> None:
    """A node without spec.unschedulable is unschedulable=false; a Job's status.successful."""
    nodes = ok(base, "get", "nodes", "--field-selector", "spec.unschedulable=false", "-o", "name")
    assert nodes.split() == [f"node/node-{i}" for i in range(len(nodes.split()))]
    assert len(nodes.split()) >= 1
    none = kubectl(base, "get", "nodes", "--field-selector", "spec.unschedulable=true")
    assert none.stderr.strip() == "No resources found"
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(TRAINJOB.format(name="fsel", namespace="default", seconds=10))
    ok(base, "apply", "-f", str(manifest))
    sim.advance(2)
    running = ok(base, "get", "jobs", "--field-selector", "status.successful=0", "-o", "name")
    assert running.split() == ["job.batch/fsel-node-0"]
    sim.advance(30)
    done = ok(base, "get", "jobs", "--field-selector", "status.successful=1", "-o", "name")
    assert done.split() == ["job.batch/fsel-node-0"]
    pods = ok(
        base,
        "get",
        "pods",
        "--field-selector",
        "spec.schedulerName=default-scheduler",
        "-o",
        "name",
    )
    assert len(pods.split()) == 1
    ok(base, "delete", "-f", str(manifest))


def test_create_namespace_configmap_secret_sent_as_protobuf(base: list[str]) -> None:
    """kubectl create namespace|configmap|secret send protobuf; delete namespace finalizes it."""
    assert ok(base, "create", "namespace", "proto-a").strip() == "namespace/proto-a created"
    assert ok(base, "get", "ns", "proto-a", "-o", "jsonpath={.status.phase}") == "Active"
    out = ok(
        base,
        "create",
        "configmap",
        "cm1",
        "-n",
        "proto-a",
        "--from-literal=a=b",
        "-o",
        "jsonpath={.data.a}",
    )
    assert out == "b"
    out = ok(
        base,
        "create",
        "secret",
        "generic",
        "s1",
        "-n",
        "proto-a",
        "--from-literal=p=q",
        "--type=Opaque",
        "-o",
        "jsonpath={.type} {.data.p}",
    )
    assert out == "Opaque cQ=="  # base64 of "q"
    assert ok(base, "delete", "namespace", "proto-a").strip() == 'namespace "proto-a" deleted'
    gone = kubectl(base, "get", "ns", "proto-a")
    assert gone.returncode == 1 and "NotFound" in gone.stderr


def test_create_job_in_protobuf_is_refused_with_a_way_out(base: list[str]) -> None:
    done = kubectl(base, "create", "job", "j1", "--image=busybox", "--", "echo", "hi")
    assert done.returncode == 1
    assert "decodes protobuf only for Namespace, ConfigMap, Secret" in done.stderr
    assert "send application/json" in done.stderr


def test_server_side_apply_says_what_to_use_instead(base: list[str], tmp_path: Path) -> None:
    """415 for a new object too (before: 404 for the object server-side apply would create)."""
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(TRAINJOB.format(name="ssa", namespace="default", seconds=5))
    done = kubectl(base, "apply", "--server-side", "-f", str(manifest))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: Server-side apply not available on the server: (server-side apply is not "
        "modelled by this simulator: use client-side apply (kubectl apply without "
        "--server-side), kubectl patch --type merge|json, or replace)"
    )
    assert kubectl(base, "get", "trainjob", "ssa").returncode == 1


def header(text: str) -> list[str]:
    return text.splitlines()[0].split()


def test_queue_service_and_wide_tables_have_the_upstream_columns(base: list[str]) -> None:
    """Kueue's printcolumns (no AGE), printService, and the -o wide columns of pods, jobs, nodes."""
    assert ok(base, "get", "cq").splitlines() == [
        "NAME            COHORT   PENDING WORKLOADS",
        "cluster-queue            0",
    ]
    assert header(ok(base, "get", "cq", "-o", "wide")) == [
        *("NAME", "COHORT", "STRATEGY", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"),
    ]
    lq = ok(base, "get", "lq", "-A").splitlines()
    assert lq[0].split() == [
        *("NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"),
    ]
    assert lq[1].split()[:3] == ["default", "user-queue", "cluster-queue"]
    assert header(ok(base, "get", "nodes", "-o", "wide"))[5:] == [
        *("INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"),
    ]


def test_trainjob_children_print_as_kubectl_prints_them(
    base: list[str], sim: KubeSim, tmp_path: Path
) -> None:
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(TRAINJOB.format(name="wide", namespace="default", seconds=30))
    ok(base, "apply", "-f", str(manifest))
    sim.advance(3)
    svc = ok(base, "get", "svc", "wide").splitlines()
    assert svc[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert svc[1].split()[:5] == ["wide", "ClusterIP", "None", "<none>", "<none>"]
    jobs = ok(base, "get", "jobs", "wide-node-0", "-o", "wide").splitlines()
    assert header(jobs[0] + "\n")[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert jobs[1].split()[5:7] == ["node", "busybox"]
    assert jobs[1].split()[7].startswith("batch.kubernetes.io/controller-uid=")
    pods = ok(base, "get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=wide", "-o", "wide")
    assert header(pods)[7:] == ["NOMINATED", "NODE", "READINESS", "GATES"]
    assert pods.splitlines()[1].split()[-2:] == ["<none>", "<none>"]
    ok(base, "delete", "-f", str(manifest))


def test_explain_a_custom_kind_lists_its_top_level_fields(base: list[str]) -> None:
    """Before: a template error (no components.schemas in the OpenAPI v3 document)."""
    out = ok(base, "explain", "trainjob")
    assert out.splitlines()[:3] == [
        "GROUP:      trainer.kubeflow.org",
        "KIND:       TrainJob",
        "VERSION:    v1alpha1",
    ]
    fields = [line.split()[0] for line in out.splitlines() if "\t<" in line]
    assert fields == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert "FIELD: spec <Object>" in ok(base, "explain", "trainjob.spec")
    assert "KIND:       ClusterQueue" in ok(base, "explain", "clusterqueues")


def test_exec_and_port_forward_say_they_are_not_modelled(
    base: list[str], sim: KubeSim, tmp_path: Path
) -> None:
    """Before: 404 the server could not find the requested resource."""
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(TRAINJOB.format(name="execd", namespace="default", seconds=30))
    ok(base, "apply", "-f", str(manifest))
    sim.advance(3)
    pod = ok(base, "get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=execd", "-o", "name")
    done = kubectl(base, "exec", pod.strip(), "--", "ls")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"Error from server (BadRequest): exec into pod {pod.strip().split('/')[1]} is not "
        "modelled by this simulator: its containers run no processes (read their output with "
        "kubectl logs)"
    )
    done = kubectl(base, "port-forward", pod.strip(), "8080:29500")
    assert done.returncode == 1 and "port-forward into pod" in done.stderr
    ok(base, "delete", "-f", str(manifest))


FOLLOWED = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: followed
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 1
    image: busybox
    env:
    - name: KUBE_SIM_RUN_SECONDS
      value: "20"
    - name: KUBE_SIM_LOG
      value: |
        0:first
        10:second
        15:third
"""


def test_logs_follow_streams_until_the_container_ends_when_the_clock_moves(
    base: list[str], sim: KubeSim, server: Server, tmp_path: Path
) -> None:
    """Realtime mode (follow_logs): before, ``logs -f`` answered what existed and closed."""
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(FOLLOWED)
    ok(base, "apply", "-f", str(manifest))
    sim.advance(3)
    pod = ok(base, "get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=followed", "-o", "name")
    server.api.follow_logs = True
    try:
        follower = subprocess.Popen(
            [*base, "logs", "-f", pod.strip()], stdout=subprocess.PIPE, text=True
        )
        assert follower.stdout is not None
        assert follower.stdout.readline() == "first\n"
        assert follower.poll() is None  # still following: the container runs
        sim.advance(12)
        assert follower.stdout.readline() == "second\n"
        sim.advance(30)  # third line, then the container completes and the stream ends
        assert follower.stdout.read() == "third\n"
        assert follower.wait(timeout=10) == 0
    finally:
        server.api.follow_logs = False
    assert ok(base, "logs", "-f", pod.strip()) == "first\nsecond\nthird\n"  # virtual: at once
    assert ok(base, "logs", pod.strip(), "--limit-bytes=8") == "first\nse"  # was: ignored
    ok(base, "delete", "-f", str(manifest))


def test_server_dry_run_and_diff_store_nothing(
    base: list[str], sim: KubeSim, tmp_path: Path
) -> None:
    """Before: --dry-run=server created, labelled and deleted for real (namespaces included)."""
    manifest = tmp_path / "tj.yaml"
    manifest.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dry\n---\n")
    ok(base, "apply", "-f", str(manifest))
    manifest.write_text(TRAINJOB.format(name="dry", namespace="dry", seconds=5))
    with sim.lock:
        revision, rng = sim.store.revision, sim.store.rng.getstate()
    out = ok(base, "apply", "-f", str(manifest), "--dry-run=server")
    assert out.strip() == "trainjob.trainer.kubeflow.org/dry created (server dry run)"
    out = ok(base, "create", "-f", str(manifest), "--dry-run=server", "-o", "name")
    assert out.strip() == "trainjob.trainer.kubeflow.org/dry"
    assert ok(base, "delete", "ns", "dry", "--dry-run=server").strip() == (
        'namespace "dry" deleted (server dry run)'
    )
    ok(base, "label", "ns", "dry", "x=y", "--dry-run=server")
    with sim.lock:
        assert (sim.store.revision, sim.store.rng.getstate()) == (revision, rng)
    assert kubectl(base, "get", "trainjob", "-n", "dry").stderr.strip() == (
        "No resources found in dry namespace."
    )
    ok(base, "apply", "-f", str(manifest))
    changed = manifest.read_text().replace(
        "  namespace: dry\n", "  namespace: dry\n  labels:\n    team: a\n"
    )
    manifest.write_text(changed)
    diff = kubectl(base, "diff", "-f", str(manifest))
    assert diff.returncode == 1, diff.stderr  # 1: differences found
    assert "+  labels:\n+    team: a\n" in diff.stdout
    assert (
        ok(base, "get", "trainjob", "dry", "-n", "dry", "-o", "jsonpath={.metadata.labels}") == ""
    )
    ok(base, "delete", "ns", "dry")


def test_auth_can_i_answers_yes(base: list[str]) -> None:
    """Before: 404 (no authorization.k8s.io); the review arrives in protobuf."""
    assert ok(base, "auth", "can-i", "create", "trainjobs").strip() == "yes"
    assert ok(base, "auth", "can-i", "delete", "pods", "-n", "default").strip() == "yes"
    assert ok(base, "auth", "can-i", "get", "/healthz").strip() == "yes"


def test_describe_node_shows_its_lease(base: list[str], sim: KubeSim) -> None:
    """Before: ``Lease: Failed to get lease: the server could not find the requested resource``."""
    out = ok(base, "describe", "node", "node-0")
    lease = out.split("Lease:\n", 1)[1].splitlines()[:3]
    assert [line.split(":", 1)[0].strip() for line in lease] == [
        "HolderIdentity",
        "AcquireTime",
        "RenewTime",
    ]
    assert lease[0].split() == ["HolderIdentity:", "node-0"]
    gone = kubectl(
        base,
        "get",
        "--raw",
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/nosuch",
    )
    assert gone.returncode == 1 and 'leases.coordination.k8s.io "nosuch" not found' in gone.stderr


def test_readyz_verbose_lists_its_checks(base: list[str]) -> None:
    assert ok(base, "get", "--raw", "/readyz?verbose").splitlines() == [
        "[+]ping ok",
        "[+]log ok",
        "[+]etcd ok",
        "readyz check passed",
    ]
    assert ok(base, "get", "--raw", "/livez") == "ok"


def test_a_jobset_that_never_restarted_prints_restarts_0(
    base: list[str], sim: KubeSim, tmp_path: Path
) -> None:
    """Before: the RESTARTS column was empty until the first restart (status.restarts left out);
    JobSet v0.12.0 JobSetStatus.Restarts is ``json:"restarts"`` without omitempty [J1]."""
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(TRAINJOB.format(name="norestart", namespace="default", seconds=30))
    ok(base, "apply", "-f", str(manifest))
    sim.advance(3)
    table = ok(base, "get", "jobset", "norestart").splitlines()
    assert table[0].split() == [
        "NAME",
        "TERMINALSTATE",
        "RESTARTS",
        "COMPLETED",
        "SUSPENDED",
        "AGE",
    ]
    assert table[1].split()[:3] == ["norestart", "0", "false"]
    assert ok(base, "get", "jobset", "norestart", "-o", "jsonpath={.status.restarts}") == "0"
    ok(base, "delete", "-f", str(manifest))


QUEUED_TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 1
    image: busybox
    env:
    - name: KUBE_SIM_RUN_SECONDS
      value: "forever"
"""


def test_orphan_delete_of_a_queued_trainjob_finishes_its_workload(
    base: list[str], sim: KubeSim, tmp_path: Path
) -> None:
    """Before: the orphaned Workload stayed admitted and held its quota for ever. Kueue at the
    pin finishes it (FinishOrphanedWorkloads, beta, on): workload.go FinalizeOrphanedWorkload."""
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(QUEUED_TRAINJOB.format(name="orphaner"))
    ok(base, "apply", "-f", str(manifest))
    sim.advance(3)
    uid = ok(base, "get", "trainjob", "orphaner", "-o", "jsonpath={.metadata.uid}")
    selector = f"kueue.x-k8s.io/job-uid={uid}"
    jsonpath = "jsonpath={.items[0].status.conditions[?(@.type=='Admitted')].status}"
    assert ok(base, "get", "workloads", "-l", selector, "-o", jsonpath) == "True"
    ok(base, "delete", "trainjob", "orphaner", "--cascade=orphan")
    sim.advance(1)
    finished = "{.items[0].status.conditions[?(@.type=='Finished')]}"
    got = ok(base, "get", "workloads", "-l", selector, "-o", f"jsonpath={finished}")
    assert '"reason":"OwnerNotFound"' in got
    assert '"message":"The workload\'s owner no longer exists"' in got
    assert '"status":"True"' in got
    ok(base, "delete", "jobset", "orphaner")
    ok(base, "delete", "workloads", "-l", selector)


def test_queue_name_of_a_workload_holding_quota_is_immutable(
    base: list[str], sim: KubeSim, tmp_path: Path
) -> None:
    """Before: the patch was accepted. The Workload CRD's rule (workload_types.go at the pin):
    "queueName is immutable while workload quota reserved"; a 422 from the API server."""
    manifest = tmp_path / "tj.yaml"
    manifest.write_text(QUEUED_TRAINJOB.format(name="requeue-me"))
    ok(base, "apply", "-f", str(manifest))
    sim.advance(3)
    uid = ok(base, "get", "trainjob", "requeue-me", "-o", "jsonpath={.metadata.uid}")
    name = ok(base, "get", "workloads", "-l", f"kueue.x-k8s.io/job-uid={uid}", "-o", "name").strip()
    done = kubectl(base, "patch", name, "--type=merge", "-p", '{"spec":{"queueName":"other"}}')
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f'The Workload "{name.split("/")[1]}" is invalid: <nil>: Invalid value: "object": '
        "queueName is immutable while workload quota reserved"
    )
    assert ok(base, "get", name, "-o", "jsonpath={.spec.queueName}") == "user-queue"
    ok(base, "delete", "-f", str(manifest))
