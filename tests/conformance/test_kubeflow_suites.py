"""The conformance suites on the Kubeflow adapter: the whole standard tier on both kubeflow-sim
harnesses, and on kubeflow-sim over loopback HTTP (every skip a fault or probe Kubernetes cannot
have, with the reason), and each broken
Kubeflow adapter of :mod:`adapters.kubeflow.testing.broken` caught by the checks it names (and
those checks passing on the adapter it breaks). Two of them are also shown directly, on the
paths their named checks do not take (a foreign successor, an administrator's suspension)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from adapters.kubeflow import KubeflowBackend
from adapters.kubeflow.testing import broken
from adapters.kubeflow.testing.broken import CATALOGUE, DeleteWithoutUid, ReleaseKeepsExecution
from adapters.kubeflow.testing.lookalikes import dispatch_trainjob
from adapters.kubeflow.testing.sim import KubeflowSimHarness
from conformance.checks import Outcome, Result, checks, run_check
from conformance.faults import Faults
from dispatch_core import JobSpec, State, make_plan
from simulators.kubernetes.resources import TRAINJOBS

SEED = 0
SKIP_REASONS = (
    "harness cannot inject ",  # a form of a power Kubernetes (or this cluster) cannot have
    "harness offers no ",  # a power Kubernetes (or its simulator) cannot have, with the reason
    "the harness's target has ",  # the identity model: no id reuse, no history
    "adapter declares ",  # a capability the adapter answers no, with its reason
    "adapter implements no ",  # an optional interface it does not offer
    "the adapter is not a ",
    "no program could exercise ",  # a stateful invariant only id reuse can exercise
)


STATEFUL_EXAMPLES = 4
"""Programs per stateful check here: each one is a few hundred requests, and the whole
standard tier at the suite's own number is what `make demo` and
benchmarks/conformance_suite.py run; three harnesses at it would double this test's time."""


@pytest.fixture(scope="module")
def standard() -> dict[str, tuple[list[Result], float]]:
    out: dict[str, tuple[list[Result], float]] = {}
    for harness in (
        KubeflowSimHarness(kueue=False, stateful_examples=STATEFUL_EXAMPLES),
        KubeflowSimHarness(kueue=True, stateful_examples=STATEFUL_EXAMPLES),
        KubeflowSimHarness(
            name="kubeflow-sim-http", over_http=True, stateful_examples=STATEFUL_EXAMPLES
        ),
    ):
        began = time.perf_counter()
        results = [run_check(check, harness, SEED) for check in checks("standard")]
        harness.close()
        out[harness.name] = (results, time.perf_counter() - began)
    return out


@pytest.mark.parametrize("name", ["kubeflow-sim", "kubeflow-sim-kueue", "kubeflow-sim-http"])
def test_the_standard_tier_passes_and_skips_only_what_kubernetes_cannot_have(
    name: str, standard: dict[str, tuple[list[Result], float]], capsys: pytest.CaptureFixture[str]
) -> None:
    results, took = standard[name]
    with capsys.disabled():
        print(f"\n{name}: {len(results)} standard checks in {took:.1f} s")
    bad = [r for r in results if r.outcome not in (Outcome.PASSED, Outcome.SKIPPED)]
    assert not bad, "\n".join(f"{r.check.id} {r.outcome.value}: {r.reason}" for r in bad)
    for result in results:
        if result.outcome is Outcome.SKIPPED:
            assert result.reason.startswith(SKIP_REASONS), (result.check.id, result.reason)


def killers(results: list[Result]) -> list[str]:
    return [
        r.check.id
        for r in results
        if r.outcome is Outcome.FAILED and f"rule: {r.check.rule}" in r.reason
    ]


@pytest.mark.parametrize("entry", [b for b in CATALOGUE if b.only], ids=lambda b: b.name)
def test_each_broken_adapter_is_caught_by_the_checks_it_names(entry: Any) -> None:
    named = [c for c in checks("standard") if c.id in entry.only]
    assert [c.id for c in named] == sorted(entry.only)
    caught = killers([run_check(check, entry.harness(), SEED) for check in named])
    assert caught == sorted(entry.only), f"{entry.name}: {entry.fault}"
    real = KubeflowSimHarness(kueue=entry.kueue)
    for check in named:
        result = run_check(check, real, SEED)
        assert result.outcome is not Outcome.FAILED, (check.id, result.reason)


def test_the_catalogue_has_a_factory_per_entry() -> None:
    for entry in CATALOGUE:
        factory = getattr(broken, entry.name)
        harness = factory()
        assert harness.name.endswith(f":{entry.name}")
        assert entry.fault


def test_a_delete_without_the_uid_precondition_deletes_a_successor_of_the_same_name() -> None:
    """IDENT-054 catches it through a copy of the job's own object; here the successor is
    another user's TrainJob, which the stop through the old ref must leave alone."""
    for backend_type, survives in ((DeleteWithoutUid, False), (KubeflowBackend, True)):
        harness = KubeflowSimHarness(backend_type=backend_type)
        harness.begin("direct")
        backend = harness.new_backend()
        plan = make_plan(backend, JobSpec(command=("true",), nodes=1))
        ref = backend.start(plan, 1, 1)
        backend.stop(ref)
        sim = harness.cluster_of(backend).sim
        namespace, _, name = ref.id.partition("/")
        sim.create(TRAINJOBS, dispatch_trainjob(name, {}, {}, suspend=True), namespace)
        backend.stop(ref)  # through the old ref: must act on nothing
        assert (sim.store.peek(TRAINJOBS, namespace, name) is not None) is survives
        harness.end("direct")


def test_a_release_that_keeps_the_execution_reruns_an_object_under_its_identity() -> None:
    """IDENT-055 catches it through a requeue cut after its suspension; here an administrator
    suspends the running TrainJob, and the hold and release that follow must still give the
    next run an identity of its own."""
    for backend_type, repeats in ((ReleaseKeepsExecution, True), (KubeflowBackend, False)):
        harness = KubeflowSimHarness(backend_type=backend_type)
        harness.begin("direct")
        backend = harness.new_backend()
        plan = make_plan(backend, JobSpec(command=("true",), nodes=1))
        ref = backend.start(plan, 1, 1)
        faults = Faults(harness, backend)
        faults.let_run(ref)
        sim = harness.cluster_of(backend).sim
        namespace, _, name = ref.id.partition("/")
        sim.faults.admin_suspend(namespace, name)
        harness.cluster_of(backend).clock.sleep(60)
        assert backend.open(ref).state in (State.QUEUED, State.HELD)
        number = backend.hold(ref)
        backend.release(ref, number)
        faults.let_run(ref)
        attempts = [ranks[0]["DISPATCH_ATTEMPT"] for ranks in harness.executions(backend, ref)]
        assert (len(set(attempts)) < len(attempts)) is repeats, attempts
        harness.end("direct")
