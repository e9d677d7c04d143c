"""The proof of strength: every registered check runs against every deliberately broken adapter
of ``adapters.memory.testing.broken`` (and every standard-tier check against each broken Slurm
adapter of ``adapters.slurm.testing.broken``, on the simulator); each one must fail at least one
check whose message names the rule it broke. The kill rate (killed / total), and which checks
kill which adapter, are printed."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.memory.testing import broken as memory_broken
from adapters.memory.testing.broken import BY_NAME as MEMORY_BY_NAME
from adapters.slurm.testing import broken as slurm_broken
from conformance.checks import Outcome, Result, checks, run_check
from conformance.harnesses import load_harness

SEED = 0

CATALOGUES: dict[str, tuple[str, tuple[Any, ...]]] = {
    memory_broken.__name__: ("full", tuple(memory_broken.CATALOGUE)),
    # The full tier's long stateful programs take minutes per adapter on the simulator.
    slurm_broken.__name__: ("standard", tuple(slurm_broken.CATALOGUE)),
}
"""Each catalogue's module, the tier run against its adapters, and its entries."""
CATALOGUE: list[Any] = [broken for _tier, entries in CATALOGUES.values() for broken in entries]
BY_NAME: dict[str, Any] = {broken.name: broken for broken in CATALOGUE}
MODULE: dict[str, str] = {
    broken.name: module for module, (_tier, entries) in CATALOGUES.items() for broken in entries
}
assert len(BY_NAME) == len(CATALOGUE), "a broken adapter's name is in two catalogues"


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[Result]]:
    return {
        broken.name: [run_check(check, broken.harness(), SEED) for check in checks(tier)]
        for tier, entries in CATALOGUES.values()
        for broken in entries
    }


def killers(results: list[Result]) -> list[str]:
    """The checks that failed with a message naming their rule."""
    return [
        r.check.id
        for r in results
        if r.outcome is Outcome.FAILED and f"rule: {r.check.rule}" in r.reason
    ]


@pytest.mark.parametrize("name", [broken.name for broken in CATALOGUE])
def test_the_broken_adapter_fails_a_check_that_names_the_rule(
    name: str, outcomes: dict[str, list[Result]]
) -> None:
    assert killers(outcomes[name]), f"no check caught {name}: {BY_NAME[name].fault}\n" + "\n".join(
        f"{r.check.id} {r.outcome.value} {r.reason}" for r in outcomes[name]
    )


@pytest.mark.parametrize("name", [broken.name for broken in CATALOGUE if broken.only])
def test_a_broken_adapter_written_for_a_check_is_caught_by_that_check_alone(
    name: str, outcomes: dict[str, list[Result]]
) -> None:
    """Each check written for a class of bugs catches one that no other check does."""
    assert killers(outcomes[name]) == list(BY_NAME[name].only)


def test_kill_rate(outcomes: dict[str, list[Result]], capsys: pytest.CaptureFixture[str]) -> None:
    killed = [name for name, results in outcomes.items() if killers(results)]
    lines = [f"kill rate: {len(killed)}/{len(outcomes)} broken adapters caught (seed {SEED})"]
    for name, results in outcomes.items():
        caught = ", ".join(killers(results)) or "NOT CAUGHT"
        lines.append(f"  {name:30} {caught}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert len(killed) == len(outcomes), "\n".join(lines)


@pytest.mark.parametrize("name", [broken.name for broken in CATALOGUE])
def test_each_broken_adapter_is_a_module_factory_harness(name: str) -> None:
    harness = load_harness(f"{MODULE[name]}:{name}")
    assert harness.name == f"{MODULE[name]}:{name}"
    backend = harness.new_backend()
    assert type(harness.reopen(backend)) is type(backend), "a reopen keeps the adapter broken"


def test_a_broken_adapter_is_otherwise_the_memory_adapter() -> None:
    """Wrong in one way only: the checks the fault does not touch still pass."""
    results = {
        r.check.id: r
        for r in (
            run_check(c, MEMORY_BY_NAME["rules_in_table_order"].harness(), SEED)
            for c in checks("full", ["CAP-", "STATE-"])
        )
    }
    failed = sorted(cid for cid, r in results.items() if r.outcome is Outcome.FAILED)
    assert failed == ["CAP-003", "CAP-010"], failed
