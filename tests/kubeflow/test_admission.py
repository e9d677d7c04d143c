"""The readmission gate against the Kubernetes simulator with Kueue, over HTTP.

A dispatch TrainJob is admitted only after the gate's pass; the execution id is written before
the check is Ready; every eviction makes the next admission pass through the gate again, so R
strictly increases in what the kubelet gave the ranks; a gate restarted between its two writes
bumps once; a TrainJob that is not dispatch's is never touched; and a gate that marks Ready
first lets a readmission rerun under the identity it had.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from adapters.kubeflow.admission import (
    ADMISSION_ANNOTATION,
    CHECK_NAME,
    CONTROLLER_NAME,
    ReadmissionGate,
    admission_of,
    current_execution,
    main,
)
from adapters.kubeflow.testing.broken import ReadyBeforeWrite
from adapters.kubeflow.testing.lookalikes import dispatch_trainjob, own_labels, trainjob_name
from dispatch_core import JobID
from dispatch_core.identity import parse_execution_env
from simulators.kubernetes import KubeConfig, KubeSim, QueueConfig
from simulators.kubernetes.controllers.kubelet import starts

NS = "default"
QUEUE = "user-queue"
TJ = ("trainer.kubeflow.org", "v1alpha1")
KUEUE = ("kueue.x-k8s.io", "v1beta2")
JOB = JobID.parse("01JZ8Q2N5V0000000000000000")


@pytest.fixture
def sim() -> KubeSim:
    queue = QueueConfig(admission_checks=(CHECK_NAME,), admission_check_controller=CONTROLLER_NAME)
    return KubeSim(KubeConfig(kueue=True, queue=queue, default_run_seconds=None), seed=3)


@pytest.fixture
def api(sim: KubeSim) -> Iterator[client.ApiClient]:
    with sim.serve() as server:
        made: Any = config.new_client_from_config(config_file=server.kubeconfig)  # type: ignore[no-untyped-call]
        yield made
        made.close()


@pytest.fixture
def gate(api: client.ApiClient, sim: KubeSim) -> ReadmissionGate:
    return ReadmissionGate(api, clock=sim.clock)


def submit(api: client.ApiClient, submission: int = 1, **labels: str) -> str:
    name = trainjob_name(JOB, submission)
    own, annotations = own_labels(JOB, submission, 1)
    body = dispatch_trainjob(name, labels or own, annotations, queue=QUEUE, nodes=2)
    client.CustomObjectsApi(api).create_namespaced_custom_object(*TJ, NS, "trainjobs", body)
    return name


def trainjob_of(api: client.ApiClient, name: str) -> dict[str, Any]:
    co: Any = client.CustomObjectsApi(api)
    got: dict[str, Any] = co.get_namespaced_custom_object(*TJ, NS, "trainjobs", name)
    return got


def workload(api: client.ApiClient, name: str) -> dict[str, Any]:
    co: Any = client.CustomObjectsApi(api)
    listed = co.list_namespaced_custom_object(*KUEUE, NS, "workloads")
    (found,) = [w for w in listed["items"] if w["metadata"]["ownerReferences"][0]["name"] == name]
    result: dict[str, Any] = found
    return result


def check_state(wl: dict[str, Any]) -> str:
    (check,) = [c for c in wl["status"]["admissionChecks"] if c["name"] == CHECK_NAME]
    return str(check["state"])


def condition(obj: dict[str, Any], kind: str) -> str | None:
    for c in obj.get("status", {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["status"])
    return None


def executions(sim: KubeSim, name: str) -> list[list[dict[str, str]]]:
    """The ranks' env per execution, grouped by (execution annotation, restart-attempt)."""
    grouped: dict[tuple[str, str], list[dict[str, str]]] = {}
    for start in starts(sim.cluster):
        if start.labels.get("jobset.sigs.k8s.io/jobset-name") != name or start.container != "node":
            continue
        key = (
            start.annotations.get("dispatch/execution", ""),
            start.labels.get("jobset.sigs.k8s.io/restart-attempt", ""),
        )
        grouped.setdefault(key, []).append(start.env)
    return list(grouped.values())


def admit(
    sim: KubeSim, gate: ReadmissionGate, api: client.ApiClient, name: str, count: int = 1
) -> None:
    """Let the gate and the cluster run until the TrainJob's ``count``-th execution has both
    its ranks started (bounded, in virtual time)."""
    for _ in range(600):
        gate.sync()
        runs = executions(sim, name)
        if len(runs) >= count and all(len(ranks) == 2 for ranks in runs):
            return
        sim.advance(1)
    raise AssertionError(f"{name} did not start execution {count} within 600 s")


def epochs(sim: KubeSim, name: str) -> list[int]:
    out = []
    for ranks in executions(sim, name):
        identities = {parse_execution_env(env).epoch for env in ranks}
        assert len(identities) == 1, ranks
        out.append(identities.pop())
    return out


def test_a_dispatch_trainjob_is_admitted_only_after_the_gates_pass(
    sim: KubeSim, api: client.ApiClient, gate: ReadmissionGate
) -> None:
    name = submit(api)
    sim.advance(30)
    wl = workload(api, name)
    assert condition(wl, "QuotaReserved") == "True"
    assert check_state(wl) == "Pending"
    assert condition(wl, "Admitted") != "True"
    assert trainjob_of(api, name)["spec"]["suspend"] is True
    assert starts(sim.cluster) == []
    assert gate.sync() == 1
    tj = trainjob_of(api, name)
    assert current_execution(tj) == 2
    assert tj["metadata"]["annotations"][ADMISSION_ANNOTATION] == admission_of(wl)
    wl = workload(api, name)
    assert check_state(wl) == "Ready"
    assert condition(wl, "Admitted") == "True"
    assert gate.sync() == 0  # level-based: nothing waits on it any more
    sim.advance(5)
    (ranks,) = executions(sim, name)
    assert len(ranks) == 2
    for env in ranks:
        identity = parse_execution_env(env)
        assert env["DISPATCH_ATTEMPT"] == f"1-{name}-20"
        assert identity.epoch == 1_000_020


def test_the_execution_is_written_before_the_check_is_ready(
    sim: KubeSim, api: client.ApiClient
) -> None:
    seen: list[tuple[int | None, str, bool]] = []

    class Watching(ReadmissionGate):
        def written(self, wl_: Any, trainjob: Any) -> None:
            tj = trainjob_of(api, trainjob["metadata"]["name"])
            wl = workload(api, tj["metadata"]["name"])
            seen.append((current_execution(tj), check_state(wl), tj["spec"]["suspend"]))

    name = submit(api)
    sim.advance(5)
    assert Watching(api, clock=sim.clock).sync() == 1
    assert seen == [(2, "Pending", True)]
    assert check_state(workload(api, name)) == "Ready"


def test_every_eviction_passes_through_the_gate_and_r_strictly_increases(
    sim: KubeSim, api: client.ApiClient, gate: ReadmissionGate
) -> None:
    name = submit(api)
    admit(sim, gate, api, name)
    for round_ in range(2):
        wl = workload(api, name)
        sim.faults.kueue_preempt(NS, wl["metadata"]["name"])
        wl = workload(api, name)
        assert check_state(wl) == "Pending", round_
        admit(sim, gate, api, name, round_ + 2)
    found = epochs(sim, name)
    assert found == sorted(set(found)) and len(found) == 3, found
    attempts = [ranks[0]["DISPATCH_ATTEMPT"] for ranks in executions(sim, name)]
    assert attempts == [f"1-{name}-20", f"1-{name}-30", f"1-{name}-40"]
    assert current_execution(trainjob_of(api, name)) == 4


class Crash(Exception):
    pass


def test_a_gate_restarted_between_its_two_writes_bumps_once(
    sim: KubeSim, api: client.ApiClient
) -> None:
    class Crashing(ReadmissionGate):
        def written(self, workload: Any, trainjob: Any) -> None:
            raise Crash("killed between the TrainJob write and the Ready")

    name = submit(api)
    sim.advance(5)
    with pytest.raises(Crash):
        Crashing(api, clock=sim.clock).sync()
    assert current_execution(trainjob_of(api, name)) == 2
    assert check_state(workload(api, name)) == "Pending"
    restarted = ReadmissionGate(api, clock=sim.clock)
    assert restarted.sync() == 1
    assert current_execution(trainjob_of(api, name)) == 2  # read what it wrote: no second bump
    assert check_state(workload(api, name)) == "Ready"
    sim.advance(5)
    assert epochs(sim, name) == [1_000_020]


def test_a_conflict_is_read_again_and_judged_again(
    sim: KubeSim, api: client.ApiClient, gate: ReadmissionGate
) -> None:
    name = submit(api)
    sim.advance(5)
    sim.faults.refuse_next("update", "trainjobs", name, code=409)
    assert gate.sync() == 1
    assert current_execution(trainjob_of(api, name)) == 2
    assert check_state(workload(api, name)) == "Ready"


OWN, ATTEMPT = own_labels(JOB, 1, 1)


@pytest.mark.parametrize(
    ("labels", "annotations", "name"),
    [
        ({}, {}, "someone-elses"),
        ({"dispatch/job": str(JOB)}, {}, "someone-elses"),
        ({"dispatch/job": str(JOB).lower(), "dispatch/submission": "1"}, {}, "someone-elses"),
        ({"dispatch/job": str(JOB), "dispatch/submission": "01"}, {}, "someone-elses"),
        ({"dispatch/job": "not-a-ulid", "dispatch/submission": "1"}, {}, "someone-elses"),
        # The job's labels, but what the adapter's identity check refuses: the gate judges as
        # the adapter does (names.parse_identity), so it writes on none of them.
        (OWN, ATTEMPT, "someone-elses"),  # a name the labels do not imply
        (OWN, ATTEMPT, trainjob_name(JOB, 2)),  # another submission's name
        (OWN, {}, trainjob_name(JOB, 1)),  # no attempt
        (OWN, {"dispatch/attempt": "01"}, trainjob_name(JOB, 1)),  # a near attempt
        (OWN, {"dispatch/attempt": "0"}, trainjob_name(JOB, 1)),
    ],
)
def test_a_trainjob_that_is_not_dispatchs_is_never_touched(
    sim: KubeSim,
    api: client.ApiClient,
    gate: ReadmissionGate,
    labels: dict[str, str],
    annotations: dict[str, str],
    name: str,
) -> None:
    body = dispatch_trainjob(name, labels, annotations, queue=QUEUE)
    if not labels:
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": QUEUE}
    client.CustomObjectsApi(api).create_namespaced_custom_object(*TJ, NS, "trainjobs", body)
    sim.advance(5)
    before_tj, before_wl = trainjob_of(api, name), workload(api, name)
    assert check_state(before_wl) == "Pending"
    assert gate.sync() == 0
    assert (
        trainjob_of(api, name)["metadata"]["resourceVersion"]
        == (before_tj["metadata"]["resourceVersion"])
    )
    after = workload(api, name)
    assert after["metadata"]["resourceVersion"] == before_wl["metadata"]["resourceVersion"]
    assert check_state(after) == "Pending"


def test_a_gate_that_marks_ready_first_lets_a_readmission_rerun_under_its_identity(
    sim: KubeSim, api: client.ApiClient
) -> None:
    broken = ReadyBeforeWrite(api, clock=sim.clock)
    name = submit(api)
    admit(sim, broken, api, name)
    sim.faults.kueue_preempt(NS, workload(api, name)["metadata"]["name"])
    for _ in range(600):
        broken.sync()
        if len(_all_starts(sim, name)) == 2 and len(_all_starts(sim, name)[1]) == 2:
            break
        sim.advance(1)
    attempts = [ranks[0]["DISPATCH_ATTEMPT"] for ranks in _all_starts(sim, name)]
    assert len(attempts) == 2 and attempts[0] == attempts[1], attempts


def _all_starts(sim: KubeSim, name: str) -> list[list[dict[str, str]]]:
    """Executions told apart by pod uid generation (a broken gate leaves the key the same)."""
    runs: list[list[dict[str, str]]] = []
    seen: set[str] = set()
    for start in starts(sim.cluster):
        if start.labels.get("jobset.sigs.k8s.io/jobset-name") != name:
            continue
        if start.pod_uid in seen:
            continue
        seen.add(start.pod_uid)
        if not runs or len(runs[-1]) == 2:
            runs.append([])
        runs[-1].append(start.env)
    return runs


def test_the_gate_acts_on_nothing_when_its_check_names_another_controller(
    api: client.ApiClient, sim: KubeSim
) -> None:
    name = submit(api)
    sim.advance(5)
    other = ReadmissionGate(api, controller_name="example.com/other", clock=sim.clock)
    assert other.sync() == 0
    assert check_state(workload(api, name)) == "Pending"
    assert ReadmissionGate(api, check_name="no-such-check", clock=sim.clock).sync() == 0


def test_run_passes_until_stopped(
    sim: KubeSim, api: client.ApiClient, gate: ReadmissionGate
) -> None:
    name = submit(api)
    sim.advance(5)
    stop = threading.Event()
    stop.set()
    gate.run(stop, 3600.0)  # one pass, then the stop is seen without waiting
    assert check_state(workload(api, name)) == "Ready"


def test_the_console_script(
    sim: KubeSim, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with sim.serve() as server:
        name = trainjob_name(JOB, 1)
        own, annotations = own_labels(JOB, 1, 1)
        body = dispatch_trainjob(name, own, annotations, queue=QUEUE)
        made: Any = config.new_client_from_config(config_file=server.kubeconfig)  # type: ignore[no-untyped-call]
        client.CustomObjectsApi(made).create_namespaced_custom_object(*TJ, NS, "trainjobs", body)
        sim.advance(5)
        assert main(["--kubeconfig", str(server.kubeconfig), "--once"]) == 0
        assert capsys.readouterr().out == "dispatch-admission: acted on 1 workload\n"
        assert check_state(workload(made, name)) == "Ready"
        made.close()
    assert main(["--kubeconfig", str(tmp_path / "none"), "--once"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err
    assert main(["--kubeconfig", str(tmp_path), "--interval", "0"]) == 2
    assert "positive number of seconds" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.write_text("not: [a kubeconfig")
    assert main(["--kubeconfig", str(bad), "--once"]) == 2
    assert capsys.readouterr().err.startswith("dispatch-admission: --kubeconfig")
    with pytest.raises(SystemExit) as helped:
        main(["--help"])
    assert helped.value.code == 0
    assert "--kubeconfig" in capsys.readouterr().out
