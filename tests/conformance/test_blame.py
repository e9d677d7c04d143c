"""Blame the right party: a harness call that fails on what the adapter handed it (a ref that
is the answer to two submissions, or another submission's object by the adapter's own open)
is the adapter's failure of the check that received it; a harness that fails on a right
answer is still the harness's error (exit status 3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from adapters.memory import MemoryBackend
from adapters.memory.testing.broken import CATALOGUE
from adapters.memory.testing.harness import MemoryHarness
from conformance import Outcome, checks, run_check
from conformance.cli import main
from dispatch_core import ObjectRef

EARLIER = next(b for b in CATALOGUE if b.name == "start_returns_an_earlier_submission")


def test_a_harness_failing_on_another_submission_s_object_is_the_adapter_s_failure() -> None:
    [check] = checks(ids=["IDENT-040"])
    result = run_check(check, EARLIER.harness(), seed=0)
    assert result.outcome is Outcome.FAILED, result.reason
    assert result.adapter.startswith("start returned the same object ")
    assert "for submission 2, attempt 1 and submission 3, attempt 1" in result.adapter
    assert "the harness then failed on that object: let_run() raised KeyError" in (result.adapter)


def test_the_run_exits_1_naming_the_check_not_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = "adapters.memory.testing.broken:start_returns_an_earlier_submission"
    code = main(["run", "--harness", spec, "--check", "IDENT-040", "--report-dir", str(tmp_path)])
    assert code == 1
    out = capsys.readouterr().out
    assert "FAILED   IDENT-040" in out and "harness error" not in out


class FailsOnItsOwn(MemoryHarness):
    """Raises on every executions() it is asked: the harness's own bug, whatever the ref."""

    def executions(
        self, backend: MemoryBackend, ref: ObjectRef
    ) -> Sequence[Sequence[Mapping[str, str]]]:
        raise RuntimeError("the harness's own bug")


def test_a_harness_failing_on_a_right_answer_is_still_the_harness_s_error() -> None:
    [check] = checks(ids=["IDENT-014"])
    result = run_check(check, FailsOnItsOwn("slurm"), seed=0)
    assert result.outcome is Outcome.ERROR
    assert "harness error, not the adapter's: executions() raised RuntimeError" in result.reason
