"""The capability (CAP-) and stateful (STATE-) checks: they pass, or skip with a stated reason,
on every correct memory configuration; a declared yes that behaviour contradicts fails; a
stateful failure carries its seed and its shrunk program."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from adapters.memory import MemoryBackend, Shape
from adapters.memory.testing.harness import MemoryHarness
from conformance.checks import Check, Outcome, Result, checks, run_check
from conformance.harness import Harness, Listed
from conformance.harnesses import load_harness
from dispatch_core import (
    OUTPUT,
    Backend,
    Capability,
    Clock,
    JobID,
    JobSpec,
    NativeOffer,
    ObjectRef,
    Observation,
    Plan,
    Policy,
    RuleKind,
    RuleSupport,
    Support,
    Tristate,
    make_plan,
)

CAP_AND_STATE = checks("full", ["CAP-", "STATE-"])
CAP = checks("full", ["CAP-"])
STATE = checks("full", ["STATE-"])


def weakened_for_many_nodes(spec: JobSpec) -> str:
    return "allowRankRestart: one rank may rerun under its identity" if spec.nodes > 1 else ""


CONFIGURATIONS: dict[str, Callable[[], MemoryHarness]] = {
    "slurm-native": lambda: MemoryHarness("slurm", native=[RuleKind.RESUBMIT, RuleKind.HOLD]),
    "kubeflow-native-map": lambda: MemoryHarness(
        "kubeflow",
        native={RuleKind.RESUBMIT: Tristate.YES, RuleKind.ESCALATE: Tristate.UNKNOWN},
    ),
    "slurm-weakened": lambda: MemoryHarness("slurm", identity_weakened="allowRankRestart"),
    "kubeflow-weakened-per-spec": lambda: MemoryHarness(
        "kubeflow", identity_weakened=weakened_for_many_nodes
    ),
    "slurm-native-and-weakened": lambda: MemoryHarness(
        "slurm", native=[RuleKind.ESCALATE], identity_weakened="site opt-in"
    ),
    "slurm-unknown-rules": lambda: MemoryHarness(
        "slurm",
        rules={RuleKind.REQUEUE: Tristate.UNKNOWN, RuleKind.HOLD: Tristate.UNKNOWN},
        native=[RuleKind.RESUBMIT],
    ),
    "slurm-other-answers": lambda: MemoryHarness(
        "slurm",
        capabilities={
            Capability.CONTAINER_IMAGE: Tristate.YES,
            Capability.OUTPUT_PATH: Tristate.UNKNOWN,
            Capability.WORKING_DIRECTORY: Support.unknown("not probed yet"),
        },
    ),
}


def acceptable(result: Result) -> bool:
    return result.outcome is Outcome.PASSED or (
        result.outcome is Outcome.SKIPPED and bool(result.reason.strip())
    )


def results(harness: Any, selected: Sequence[Check], seed: int = 0) -> dict[str, Result]:
    return {check.id: run_check(check, harness, seed) for check in selected}


def explain(outcomes: Mapping[str, Result]) -> str:
    return "\n".join(
        f"{cid}: {r.outcome.value} {r.reason}" for cid, r in outcomes.items() if not acceptable(r)
    )


# -- the correct harnesses -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["memory-slurm", "memory-kubeflow"])
def test_every_check_passes_or_skips_on_the_built_in_memory_harnesses(name: str) -> None:
    outcomes = results(load_harness(name), CAP_AND_STATE)
    assert all(acceptable(r) for r in outcomes.values()), explain(outcomes)
    assert outcomes["CAP-011"].outcome is Outcome.SKIPPED
    assert "not a NativePolicyCompiler" in outcomes["CAP-011"].reason
    passed = [cid for cid, r in outcomes.items() if r.outcome is Outcome.PASSED]
    assert {"CAP-004", "CAP-009", "CAP-010", "CAP-012", "CAP-014", "CAP-016"} <= set(passed)
    assert {"STATE-002", "STATE-003", "STATE-004", "STATE-005", "STATE-006"} <= set(passed)


@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_capability_checks_pass_on_configured_memory_adapters(name: str) -> None:
    harness = CONFIGURATIONS[name]()
    outcomes = results(harness, CAP)
    assert all(acceptable(r) for r in outcomes.values()), explain(outcomes)
    backend = harness.new_backend()
    from dispatch_core import IdentityWeakener, NativePolicyCompiler

    if isinstance(backend, NativePolicyCompiler):
        assert outcomes["CAP-011"].outcome is Outcome.PASSED
    if isinstance(backend, IdentityWeakener):
        assert outcomes["CAP-012"].outcome is Outcome.PASSED


def test_stateful_checks_pass_on_a_native_weakening_memory_adapter() -> None:
    outcomes = results(CONFIGURATIONS["slurm-native-and-weakened"](), STATE)
    assert all(acceptable(r) for r in outcomes.values()), explain(outcomes)


@pytest.mark.parametrize("seed", [1, 2])
def test_stateful_checks_hold_for_other_seeds(seed: int) -> None:
    for name in ("memory-slurm", "memory-kubeflow"):
        outcomes = results(load_harness(name), STATE, seed)
        assert all(acceptable(r) for r in outcomes.values()), explain(outcomes)


class NoFaults(Harness[MemoryBackend]):
    """The memory adapter behind a harness that keeps only the contract: it offers no power,
    so it can inject nothing."""

    name = "no-faults"

    def __init__(self, shape: Shape) -> None:
        self.memory = MemoryHarness(shape)
        self.identity = self.memory.identity

    def new_backend(self) -> MemoryBackend:
        return self.memory.new_backend()

    def reopen(self, backend: MemoryBackend) -> MemoryBackend:
        return self.memory.reopen(backend)

    def clock(self, backend: MemoryBackend) -> Clock:
        return self.memory.clock(backend)

    def listing(self, backend: MemoryBackend) -> Mapping[str, Listed]:
        return self.memory.listing(backend)


def test_a_harness_without_faults_skips_with_the_reason_never_passes_silently() -> None:
    outcomes = results(NoFaults("slurm"), STATE)
    assert all(acceptable(r) for r in outcomes.values()), explain(outcomes)
    for cid in ("STATE-001", "STATE-003", "STATE-005", "STATE-006"):
        assert outcomes[cid].outcome is Outcome.SKIPPED, cid
        reason = outcomes[cid].reason
        assert reason.startswith(("harness offers no", "harness cannot inject")), reason
    cap = results(NoFaults("slurm"), CAP)
    assert cap["CAP-014"].outcome is Outcome.SKIPPED
    assert "harness offers no let_run" in cap["CAP-014"].reason


# -- a declared yes that behaviour contradicts fails ---------------------------------------------


class RanksSee(MemoryHarness):
    """The memory adapter (which declares WorkingDirectory and ProcsPerNode yes), with a harness
    that reports what its ranks saw, rewritten by ``rewrite``."""

    def __init__(self, rewrite: Callable[[Backend, list[dict[str, str]]], list[dict[str, str]]]):
        super().__init__("slurm")
        self.rewrite = rewrite

    def executions(self, backend: Backend, ref: ObjectRef) -> list[list[dict[str, str]]]:
        return [
            self.rewrite(backend, [dict(r) for r in ranks])
            for ranks in super().executions(backend, ref)
        ]


def work_dir_of(backend: Backend) -> str:
    assert isinstance(backend, MemoryBackend)
    return next(e.work_dir for e in reversed(backend.cluster.executions) if e.work_dir)


def test_a_working_directory_that_is_honoured_passes() -> None:
    harness = RanksSee(lambda b, ranks: [{**r, "PWD": work_dir_of(b)} for r in ranks])
    result = run_check(check_named("CAP-013"), harness)
    assert result.outcome is Outcome.PASSED, result.reason


def test_a_working_directory_that_is_ignored_fails() -> None:
    harness = RanksSee(lambda b, ranks: [{**r, "PWD": "/home/someone"} for r in ranks])
    result = run_check(check_named("CAP-013"), harness)
    assert result.outcome is Outcome.FAILED
    assert "declares WorkingDirectory yes, but ranks ran in" in result.reason
    assert "rule: A declared WorkingDirectory yes is honoured" in result.reason


def test_procs_per_node_that_is_ignored_fails() -> None:
    harness = RanksSee(lambda b, ranks: ranks[::2])
    result = run_check(check_named("CAP-014"), harness)
    assert result.outcome is Outcome.FAILED
    assert "ran 2 rank(s), not 4" in result.reason


class NotAHolder:
    """A backend that declares Hold yes but has no hold or release."""

    def __init__(self, inner: MemoryBackend) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        return self.inner.capabilities(spec)

    def rules(self, policy: Policy) -> list[RuleSupport]:
        return self.inner.rules(policy)

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        return self.inner.start(plan, submission, attempt)

    def find(self, job_id: JobID) -> list[Observation]:
        return self.inner.find(job_id)

    def open(self, ref: ObjectRef) -> Observation:
        return self.inner.open(ref)

    def stop(self, ref: ObjectRef) -> None:
        self.inner.stop(ref)


class NotAHolderHarness(MemoryHarness):
    def new_backend(self) -> Backend:
        inner = super().new_backend()
        assert isinstance(inner, MemoryBackend)
        return NotAHolder(inner)

    def reopen(self, backend: Backend) -> Backend:
        assert isinstance(backend, NotAHolder)
        return NotAHolder(backend.inner.reopen())


def test_hold_declared_yes_without_holder_fails() -> None:
    result = run_check(check_named("CAP-016"), NotAHolderHarness("slurm"))
    assert result.outcome is Outcome.FAILED
    assert "declares Hold yes, but does not implement Holder" in result.reason


class Printing(MemoryBackend):
    """Declares OutputPath yes and reads output back; where it writes is up to ``lands``."""

    lands = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("capabilities", {Capability.OUTPUT_PATH: Tristate.YES})
        super().__init__(*args, **kwargs)
        self.printed: dict[str, str] = {}

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        ref = super().start(plan, submission, attempt)
        text = " ".join(plan.spec.command[1:]) + "\n"
        self.printed[ref.id] = text
        path = plan.spec.extensions.get(OUTPUT)
        if path is not None and self.lands:
            with open(path, "w") as handle:
                handle.write(text)
        return ref

    def read_output(self, ref: ObjectRef, offset: int = 0) -> bytes:
        return self.printed.get(ref.id, "").encode()[offset:]

    def follow_output(self, ref: ObjectRef) -> Iterator[bytes]:
        yield self.read_output(ref)


class Elsewhere(Printing):
    lands = False


class PrintingHarness(MemoryHarness):
    def __init__(self, backend: type[Printing]) -> None:
        super().__init__("slurm")
        self.backend = backend

    def new_backend(self) -> Backend:
        return self.backend("slurm", max_job_id=50)


def test_an_output_path_that_is_honoured_passes() -> None:
    result = run_check(check_named("CAP-015"), PrintingHarness(Printing))
    assert result.outcome is Outcome.PASSED, result.reason


def test_output_that_does_not_land_at_the_path_fails() -> None:
    result = run_check(check_named("CAP-015"), PrintingHarness(Elsewhere))
    assert result.outcome is Outcome.FAILED
    assert "nothing of it landed at the dispatch.Output path" in result.reason


def test_output_path_skips_when_the_adapter_is_no_output_reader() -> None:
    harness = MemoryHarness("slurm", capabilities={Capability.OUTPUT_PATH: Tristate.YES})
    result = run_check(check_named("CAP-015"), harness)
    assert result.outcome is Outcome.SKIPPED
    assert "not an OutputReader" in result.reason


# -- make_plan decisions on inconsistent answers -----------------------------------------------------


def test_a_native_yes_that_cannot_be_performed_fails_the_offer_check() -> None:
    harness = MemoryHarness("slurm", native=[RuleKind.REQUEUE])  # requeue's perform is no
    result = run_check(check_named("CAP-011"), harness)
    assert result.outcome is Outcome.FAILED
    assert "a native yes must be performable" in result.reason


class CompilesTooMuch(MemoryBackend):
    """Answers resubmit native yes, then compiles every rule of the policy."""

    def native(self, policy: Policy) -> list[Support]:
        return [
            Support.yes("native") if r.kind is RuleKind.RESUBMIT else Support.no("not native")
            for r in policy.rules
        ]

    def compile(self, policy: Policy) -> NativeOffer:
        return NativeOffer(rules=tuple(range(len(policy.rules))))


def test_an_offer_of_a_rule_not_answered_native_fails() -> None:
    class Harness(MemoryHarness):
        def new_backend(self) -> Backend:
            return CompilesTooMuch("slurm")

    result = run_check(check_named("CAP-011"), Harness("slurm"))
    assert result.outcome is Outcome.FAILED
    assert "which native() did not answer yes" in result.reason


def test_the_capability_decision_names_the_refusing_answer() -> None:
    backend = MemoryBackend("kubeflow")
    with pytest.raises(Exception, match="WorkingDirectory") as refused:
        make_plan(backend, JobSpec(command=("true",), work_dir="/tmp"))
    assert "does not model WorkingDirectory" in str(refused.value)
    result = run_check(check_named("CAP-005"), MemoryHarness("kubeflow"))
    assert result.outcome is Outcome.PASSED, result.reason


# -- a stateful failure: seed and shrunk program -------------------------------------------------


def test_a_stateful_failure_names_the_rule_the_seed_and_the_program() -> None:
    harness = load_harness("adapters.memory.testing.broken:epoch_ignores_restarts")
    first = run_check(check_named("STATE-003"), harness, seed=7)
    assert first.outcome is Outcome.FAILED
    assert "rule: No repeated attempt" in first.reason
    assert "seed 7" in first.reason
    assert "  1. submit" in first.reason
    assert "let A" in first.reason or "let B" in first.reason
    again = run_check(check_named("STATE-003"), harness, seed=7)
    assert again.reason == first.reason, "the same seed must replay the same shrunk program"


def test_the_stateful_checks_do_not_sleep_for_real(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds} s of real time")

    monkeypatch.setattr(time, "sleep", no_sleep)
    outcomes = results(load_harness("memory-slurm"), STATE)
    assert all(acceptable(r) for r in outcomes.values()), explain(outcomes)


def check_named(check_id: str) -> Check:
    (found,) = checks("full", [check_id])
    return found


def test_scratch_directories_are_removed() -> None:
    import tempfile

    before = set(os.listdir(tempfile.gettempdir()))
    results(load_harness("memory-slurm"), checks("full", ["CAP-013", "CAP-015"]))
    results(PrintingHarness(Printing), checks("full", ["CAP-015"]))
    left = {
        n for n in set(os.listdir(tempfile.gettempdir())) - before if "dispatch-conformance" in n
    }
    assert not left
