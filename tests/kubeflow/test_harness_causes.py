"""The simulated Kubeflow harnesses' faults behind the causes checks: Kueue's preemption for a
preemptor that holds the quota, an administrator's requeue by deactivation and reactivation,
and a node-pressure eviction."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.kubeflow.testing.sim import (
    POD_QUOTA,
    PREEMPTOR_PRIORITY,
    KubeflowSimHarness,
    SimCluster,
    kubeflow_sim,
    kubeflow_sim_kueue,
)
from conformance.faults import Faults
from dispatch_core import Cause, JobSpec, ObjectRef, State, make_plan
from simulators.kubernetes.objects import JSON, condition
from simulators.kubernetes.resources import PODS, WORKLOADS


def started(harness: KubeflowSimHarness, nodes: int = 2) -> tuple[Any, ObjectRef, Faults]:
    harness.begin("test")
    backend = harness.new_backend()
    ref = backend.start(make_plan(backend, JobSpec(command=("true",), nodes=nodes)), 1, 1)
    faults = Faults(harness, backend)
    faults.let_run(ref)
    return backend, ref, faults


def said(obj: JSON | None, kind: str) -> tuple[str, str]:
    found = condition(obj or {}, kind)
    assert found is not None, f"no {kind} condition"
    return str(found["status"]), str(found["reason"])


def workload(cluster: SimCluster, ref: ObjectRef) -> JSON:
    found = cluster.workload(cluster.require(ref))
    assert found is not None
    return found


def test_a_preempted_trainjob_waits_for_its_preemptor_s_quota_until_the_next_let_run() -> None:
    harness = kubeflow_sim_kueue()
    backend, ref, faults = started(harness)
    cluster = harness.cluster_of(backend)
    faults.preempt(ref)
    ((namespace, name),) = cluster.preemptors
    cluster.clock.advance(300)
    preemptor = cluster.sim.store.get(WORKLOADS, namespace, name)
    assert preemptor["spec"]["priority"] == PREEMPTOR_PRIORITY
    assert preemptor["spec"]["podSets"][0]["count"] == POD_QUOTA  # nothing else holds any
    assert said(preemptor, "QuotaReserved")[0] == "True"
    assert said(preemptor, "Admitted")[0] == "False"  # the gate never passes it: no pod runs
    wl = workload(cluster, ref)
    assert said(wl, "Evicted") == ("True", "Preempted")
    assert said(wl, "Requeued") == ("True", "Preempted")
    assert said(wl, "QuotaReserved") == ("False", "WaitingForQuota")
    evicted = condition(wl, "Evicted")
    assert evicted is not None and str(preemptor["metadata"]["uid"]) in str(evicted["message"])
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.QUEUED, Cause.PREEMPTED)
    # Another object waits for the quota too, until a let_run: the preemptor's owner is done.
    other = backend.start(make_plan(backend, JobSpec(command=("true",), nodes=1)), 1, 1)
    cluster.clock.advance(60)
    assert backend.open(other).state is State.QUEUED
    faults.let_run(ref)
    assert cluster.preemptors == []
    assert cluster.sim.store.peek(WORKLOADS, namespace, name) is None
    assert backend.open(ref).state is State.RUNNING
    faults.let_run(other)
    assert len(harness.executions(backend, ref)) == 2
    harness.end("test")


def test_the_preemptor_takes_only_the_quota_the_preempted_workload_leaves() -> None:
    harness = kubeflow_sim_kueue()
    backend, first, faults = started(harness, nodes=2)
    cluster = harness.cluster_of(backend)
    second = backend.start(make_plan(backend, JobSpec(command=("true",), nodes=3)), 1, 1)
    faults.let_run(second)
    faults.preempt(first)
    ((namespace, name),) = cluster.preemptors
    preemptor = cluster.sim.store.get(WORKLOADS, namespace, name)
    assert preemptor["spec"]["podSets"][0]["count"] == POD_QUOTA - 3
    assert backend.open(second).state is State.RUNNING  # the preemptor took no quota of it
    harness.end("test")


@pytest.mark.parametrize("in_flight", [False, True])
def test_an_administrator_requeues_by_deactivating_and_reactivating_the_workload(
    in_flight: bool,
) -> None:
    harness = kubeflow_sim_kueue()
    backend, ref, faults = started(harness)
    cluster = harness.cluster_of(backend)
    pods = {p["metadata"]["uid"] for p in cluster.pods(cluster.require(ref))}
    faults.requeue_underneath(ref, in_flight=in_flight)
    wl = workload(cluster, ref)
    assert wl["spec"]["active"] is True
    assert said(wl, "Evicted") == ("True", "Deactivated")
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Deactivated", "underlyingCause": "", "count": 1}
    ]
    left = {p["metadata"]["uid"] for p in cluster.sim.store.select(PODS, "default")}
    assert bool(pods & left) is in_flight  # in flight: its pods are still being stopped
    assert cluster.preemptors == []
    for _ in range(30):  # Kueue readmits it by itself: no let_run
        cluster.clock.advance(1)
    wl = workload(cluster, ref)
    assert said(wl, "Requeued") == ("True", "Reactivated")
    assert cluster.running(cluster.require(ref))
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.RUNNING, Cause.NONE)
    assert len(harness.executions(backend, ref)) == 2
    harness.end("test")


@pytest.mark.parametrize("make", [kubeflow_sim, kubeflow_sim_kueue])
def test_evict_fails_the_trainjob_by_its_evicted_pod(make: Any) -> None:
    harness = make()
    backend, ref, faults = started(harness)
    cluster = harness.cluster_of(backend)
    faults.evict(ref)
    assert cluster.finished(cluster.require(ref))
    evicted = [
        p
        for p in cluster.sim.store.select(PODS, "default")
        if (p.get("status") or {}).get("reason") == "Evicted"
    ]
    assert len(evicted) == 1
    assert said(evicted[0], "DisruptionTarget") == ("True", "TerminationByKubelet")
    seen = backend.open(ref)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.EVICTED)
    harness.end("test")
