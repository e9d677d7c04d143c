"""A real multi-node Slurm in containers, on a real Docker engine (ci/docker-up.sh starts one):
a job spans the node containers, the adapter's SSH transport reaches the head's sshd and
refuses a host key it was not given, a node's container lost for real ends its job NODE_FAIL
(or requeues it) and comes back, and nothing of a cluster is left behind: not when it stops,
not when its process is interrupted, not when it is killed.

Marker ``containers``: ``make containers`` runs these (``make unit`` leaves them out). Without
an engine they skip with the reason, except under ``CI=true``, where they fail. Waits are the
real cluster's: there is no virtual clock on the other side of ``docker exec``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.slurm import SshTransport
from adapters.slurm.testing.containers import (
    DockerExecTransport,
    SlurmCluster,
    engine_problem,
    leftovers,
    reap,
    require,
)

pytestmark = pytest.mark.containers
REPO = Path(__file__).resolve().parents[2]


def need_engine() -> None:
    why = engine_problem()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true needs a Docker engine (ci/docker-up.sh): {why}")
        pytest.skip(why)


def docker_client() -> Any:
    return require("docker").from_env()


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    need_engine()
    one = SlurmCluster()
    began = time.monotonic()
    one.start()
    print(f"\ncluster up in {time.monotonic() - began:.1f} s: {one.timings}")
    yield one
    assert one.stop() == []


def until(what: str, probe: Callable[[], str | None], bound: float = 60.0) -> tuple[str, float]:
    """Poll ``probe`` (every 0.25 s) until it answers; the answer and the seconds it took."""
    began = time.monotonic()
    while True:
        answer = probe()
        if answer is not None:
            return answer, time.monotonic() - began
        if time.monotonic() - began > bound:
            raise AssertionError(f"{what}: not within {bound:.0f} s")
        time.sleep(0.25)


def run(head: DockerExecTransport | SshTransport, *argv: str) -> str:
    done = head.run(list(argv), timeout=60.0)
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout


def test_a_two_node_job_runs_a_rank_in_each_node_container(cluster: SlurmCluster) -> None:
    head = cluster.exec_transport()
    assert run(head, "sinfo", "-h", "-o", "%D %T").split() == ["2", "idle"]
    job = run(
        head, "sbatch", "--parsable", "--wait", "-N2", "--ntasks-per-node=1",
        "-o", "/shared/hosts-%j", "--wrap", "srun hostname",
    ).strip()  # fmt: skip
    assert sorted(run(head, "cat", f"/shared/hosts-{job}").split()) == ["node1", "node2"]


def test_the_cluster_s_secrets_are_its_own_and_private(cluster: SlurmCluster) -> None:
    assert cluster.secrets is not None
    for path, mode in (
        (cluster.secrets, 0o700),
        (cluster.secrets / "munge.key", 0o600),
        (cluster.secrets / "id_ed25519", 0o600),
    ):
        assert path.stat().st_mode & 0o777 == mode, path
    head = cluster.exec_transport()
    inside = run(head, "sha256sum", "/etc/munge/munge.key").split()[0]
    assert inside == hashlib.sha256((cluster.secrets / "munge.key").read_bytes()).hexdigest()
    assert run(head, "stat", "-c", "%U %a", "/etc/munge/munge.key").split() == ["munge", "400"]


def test_the_ssh_transport_reaches_the_head_and_checks_its_host_key(
    cluster: SlurmCluster, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    ssh = cluster.ssh_transport()
    assert "is UP" in run(ssh, "scontrol", "ping")
    assert run(ssh, "printf", "%s|", "a b", "$(id)", "'") == "a b|$(id)|'|"
    # The same key, but another host key on record: the connection is refused.
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    assert cluster.layout is not None and cluster.secrets is not None
    address = cluster.layout.address("head")
    (tmp_path / "known").write_text(f"{address} {other.with_suffix('.pub').read_text()}")
    short = Path(tempfile.mkdtemp(prefix="ssh-"))  # a ControlPath fits in 108 bytes
    request.addfinalizer(lambda: shutil.rmtree(short, ignore_errors=True))
    wrong = SshTransport(
        address,
        user="root",
        identity_file=str(cluster.secrets / "id_ed25519"),
        control_dir=str(short),
        options=["-o", f"UserKnownHostsFile={tmp_path / 'known'}", "-o",
                 "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes"],
    )  # fmt: skip
    refused = wrong.run(["true"], timeout=30.0)
    assert refused.returncode == 255
    assert "host key" in refused.stderr.lower()


def _state(head: DockerExecTransport, job: str) -> str:
    return run(head, "squeue", "-h", "-t", "all", "-j", job, "-o", "%T|%r|%N").strip()


@pytest.mark.parametrize("requeue", [False, True])
def test_a_lost_node_container_ends_its_job_or_requeues_it_and_comes_back(
    cluster: SlurmCluster, requeue: bool
) -> None:
    head = cluster.exec_transport()
    flag = "--requeue" if requeue else "--no-requeue"
    job = run(
        head, "sbatch", "--parsable", flag, "-N1", "-w", "node2", "-o", "/dev/null",
        "--wrap", "sleep 300",
    ).strip()  # fmt: skip
    until("the job runs", lambda: "up" if _state(head, job).startswith("RUNNING") else None)
    cluster.lose("node2")
    ended = "PENDING" if requeue else "NODE_FAIL"
    seen, took = until(
        f"the job is {ended}",
        lambda: (s if s.startswith(ended) else None) if (s := _state(head, job)) else None,
        bound=90.0,
    )
    print(f"\nnode2 lost: job {job} {seen} after {took:.1f} s")
    shown = run(head, "scontrol", "show", "job", "-o", job)
    assert ("Restarts=1" in shown) is requeue
    node = run(head, "sinfo", "-h", "-n", "node2", "-o", "%T").strip()
    assert node.startswith("down"), node
    cluster.bring_back("node2")
    until(
        "node2 is back",
        lambda: "idle" if run(head, "sinfo", "-h", "-n", "node2", "-o", "%T").strip()
        in ("idle", "mixed", "allocated") else None,
    )  # fmt: skip
    run(head, "scancel", job)


def test_stop_leaves_nothing_and_a_killed_process_is_reaped(tmp_path: Path) -> None:
    need_engine()
    client = docker_client()
    name = f"dispatch-slurm-t{os.getpid()}"
    code = (
        "import os, signal, sys\n"
        "from adapters.slurm.testing.containers import SlurmCluster\n"
        f"c = SlurmCluster(name={name!r}).start()\n"
        "print('up', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == -signal.SIGKILL and done.stdout == "up\n", done.stderr
    left = leftovers(client, name)
    assert sorted(left) == sorted(
        [f"container {name}-{h}" for h in ("head", "node1", "node2")] + [f"network {name}"]
    )
    assert set(left) <= set(reap(client))  # and any other dead process's cluster
    assert leftovers(client, name) == []
    client.close()


def _hear_sigint() -> None:
    """The run must hear the test's SIGINT even where this test's own process ignores it (a
    shell starts a background job without job control with SIGINT ignored, the child inherits
    that, and Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_conformance_run_removes_its_cluster(tmp_path: Path) -> None:
    need_engine()
    client = docker_client()
    before = set(leftovers(client))
    run_ = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "run", "--harness", "slurm-containers",
         "--check", "STATE-", "--report-dir", str(tmp_path)],  # minutes: still running at SIGINT
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_hear_sigint,
    )  # fmt: skip
    try:
        until(
            "the run's cluster is up",
            lambda: "up" if len(set(leftovers(client)) - before) >= 4 else None,
            bound=120.0,
        )
        run_.send_signal(signal.SIGINT)
        _, err = run_.communicate(timeout=120)
    finally:
        if run_.poll() is None:
            run_.kill()
    assert run_.returncode != 0
    assert "interrupted" in err
    assert set(leftovers(client)) - before == set()
    client.close()


def test_the_node_loss_scenario_keeps_slurm_s_guarantees_on_both_sides(
    cluster: SlurmCluster,
) -> None:
    """The differential: ``node-loss`` run on the containers and replayed on the simulator, each
    judged on what Slurm guarantees (the order of states, the outcome both share, and each
    moment within a window of the cluster's own configuration: tools/fidelity/guarantees.py),
    not on text whose timing is the cluster's business. ``DISPATCH_FIDELITY_RECORD=DIR``
    keeps the recording there, as tests/fixtures/slurm-real/node-loss.comment.json was made;
    that fixture's text is held to the simulator by tests/simulators/test_fidelity_golden.py."""
    import tools.fidelity as fid
    from tools.fidelity.containers import ClusterSlurm
    from tools.fidelity.guarantees import Windows, judge

    target = ClusterSlurm(cluster)
    try:
        real = fid.run_real(fid.scenario_named("node-loss"), target, lock=None)
    finally:
        target.close()
    keep = os.environ.get("DISPATCH_FIDELITY_RECORD")
    if keep:
        fid.fixture_path(Path(keep), real.scenario, real.mode).write_text(real.dumps())
    sim = fid.replay_on_sim(real)
    texts = fid.compare(real, sim)
    print(
        f"\nnode-loss recorded in {real.wall:.1f} s; windows: "
        f"{Windows.of(real.cluster).describe()}; {len(texts)} text differences "
        f"({sum(not d.explained for d in texts)} not explained by KNOWN_DIFFERENCES)"
    )
    text_report = fid.report(
        [fid.Outcome(real.scenario, real.mode, len(real.steps), texts, wall=real.wall)]
    )
    if any(not d.explained for d in texts):  # information: the timing is the cluster's
        print(text_report)
    breaches = judge(real, sim)
    assert breaches == [], "\n".join(map(str, breaches)) + "\n" + text_report
