"""What the reports a CI reads say (``conformance.reports``): report.json's schema version,
verdict and the parts of each failure as fields of their own; JUnit's failure message; the
matrix's "verified by" for each declared yes; and the STATE-004 message that says what find did
with a look-alike.

Checks registered here (ids ``TEST-98.``) are removed after each test."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

import conformance.suites  # noqa: F401  (registers every check)
from adapters.memory import MemoryBackend
from adapters.memory.testing.broken import (
    HoldKeptInProcess,
    find_drops_foreign,
    lenient_comment_parser,
)
from conformance import Context, Needs, Skip
from conformance.checks import REGISTRY, Check, Outcome, run_check
from conformance.reports import (
    FAILURE_FIELDS,
    JUNIT_MESSAGE_BUDGET,
    SCHEMA_VERSION,
    RunInfo,
    junit_message,
    matrix_markdown,
    report_json,
    verdict,
    verification,
    verifiers,
)
from conformance.runner import Answers, Loaded
from conformance.tiers import Tier
from dispatch_core import Capability, Support, VirtualClock
from tests.conformance.test_cli import TOY, ToyHarness, cli

# -- checks of this module -------------------------------------------------------------------


def _passes(ctx: Context) -> None:
    ctx.backend.capabilities(None)


def _fails(ctx: Context) -> None:
    ctx.fail("held it twice\n  and then some")


def _crashes(ctx: Context) -> None:
    ctx.backend.capabilities(None)
    raise ZeroDivisionError("the adapter divided by zero")


def _skips(ctx: Context) -> None:
    raise Skip("the harness has no second node")


HOLD = frozenset({Capability.HOLD})
PROCS = frozenset({Capability.PROCS_PER_NODE})

CHECKS: tuple[tuple[str, Callable[[Context], None], frozenset[Capability]], ...] = (
    ("TEST-981", _passes, HOLD),
    ("TEST-982", _fails, HOLD),
    ("TEST-983", _passes, PROCS),
    ("TEST-984", _skips, frozenset({Capability.WORKING_DIRECTORY})),
    ("TEST-985", _crashes, frozenset()),
)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> dict[str, Check]:
    made = {}
    for check_id, func, verifies in CHECKS:
        check = Check(
            check_id,
            f"Rule of {check_id}.",
            "test clause",
            "test",
            Tier.SMOKE,
            func,
            Needs(),
            {},
            verifies,
        )
        monkeypatch.setitem(REGISTRY, check_id, check)
        made[check_id] = check
    return made


def row(outcome: str, check_id: str = "TEST-981", **fields: object) -> dict[str, object]:
    return {"id": check_id, "harness": "toy", "outcome": outcome, "reason": "", **fields}


# -- the verdict -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ([], "passed"),
        (["passed", "skipped"], "passed"),
        (["skipped"], "passed"),
        (["passed", "failed", "skipped"], "failed"),
        (["failed", "error"], "error"),
        (["error"], "error"),
    ],
)
def test_the_verdict_is_the_worst_outcome(outcomes: list[str], expected: str) -> None:
    assert verdict([row(o) for o in outcomes]) == expected


def test_a_harness_that_cannot_answer_is_an_error_verdict() -> None:
    passed = [row("passed")]
    assert verdict(passed, [Answers("toy", note="no answers", blame="adapter")]) == "passed"
    assert verdict(passed, [Answers("toy", note="no answers", blame="harness")]) == "error"


def test_an_expected_failure_that_passes_fails_the_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check = Check(
        "TEST-986", "Known broken.", "c", "test", Tier.SMOKE, _passes, Needs(), {"toy": "i"}
    )
    monkeypatch.setitem(REGISTRY, check.id, check)
    strict = Loaded(TOY, "toy", ToyHarness()).run(check, 0)
    assert strict.outcome is Outcome.FAILED
    assert verdict([strict]) == "failed"
    assert strict.adapter == "passed, but it is a strict expected failure (i)"
    expected = Check("TEST-987", "Known.", "c", "test", Tier.SMOKE, _fails, Needs(), {"toy": "i"})
    monkeypatch.setitem(REGISTRY, expected.id, expected)
    as_expected = Loaded(TOY, "toy", ToyHarness()).run(expected, 0)
    assert (as_expected.outcome, as_expected.adapter) == (Outcome.SKIPPED, "")
    assert verdict([as_expected]) == "passed"


# -- the parts of a failure ------------------------------------------------------------------


def test_what_the_adapter_did_is_a_field_and_the_line_of_the_message(
    registered: dict[str, Check],
) -> None:
    harness = Loaded(TOY, "toy", ToyHarness())
    results = {
        i: harness.run(registered[i], 3) for i in ("TEST-981", "TEST-982", "TEST-984", "TEST-985")
    }
    failed, crashed = results["TEST-982"], results["TEST-985"]
    assert failed.adapter == "held it twice\n  and then some"
    assert crashed.adapter.startswith("crashed: ZeroDivisionError: the adapter divided by zero\n")
    for result in (failed, crashed):
        # The message is composed of the fields, unchanged.
        assert result.reason == (
            f"[{result.check.id}] rule: {result.check.rule}\n"
            f"  clause: test clause\n"
            f"  adapter: {result.adapter}\n"
            f"  replay: {result.replay}"
        )
        assert (
            result.replay
            == f"dispatch-conformance run --harness {TOY} --check {result.check.id} --seed 3"
        )
        assert result.as_dict()["adapter"] == result.adapter
    assert results["TEST-981"].adapter == results["TEST-984"].adapter == ""

    document = report_json(list(results.values()), [], RunInfo("cli", [("toy", TOY)], 3, "smoke"))
    document = json.loads(json.dumps(document))
    assert (document["schema_version"], document["verdict"]) == (SCHEMA_VERSION, "failed")
    assert SCHEMA_VERSION == 3
    assert [f["id"] for f in document["failures"]] == ["TEST-982", "TEST-985"]
    first = document["failures"][0]
    assert set(first) == set(FAILURE_FIELDS)
    assert first == {
        "harness": "toy",
        "id": "TEST-982",
        "rule": "Rule of TEST-982.",
        "clause": "test clause",
        "adapter": "held it twice\n  and then some",
        "replay": failed.replay,
    }
    # The existing fields stay.
    assert {
        "id",
        "rule",
        "clause",
        "harness",
        "outcome",
        "reason",
        "duration",
        "seed",
        "replay",
    } <= set(document["results"][1])


def test_a_harness_error_has_no_adapter_part(registered: dict[str, Check]) -> None:
    from tests.conformance.test_cli_errors import NoBackendHarness

    result = Loaded("x:y", "no-backend", NoBackendHarness()).run(registered["TEST-981"], 0)
    assert (result.outcome, result.adapter) == (Outcome.ERROR, "")
    assert junit_message(result) == result.reason.splitlines()[0]
    assert junit_message(result).startswith("[TEST-981] harness error, not the adapter's:")


def test_the_junit_message_is_the_first_line_of_what_the_adapter_did() -> None:
    failed = row(
        "failed", adapter="find dropped 7\n  seed 0; the program: ...", reason="[TEST-981] rule: R"
    )
    assert junit_message(failed) == "[TEST-981] adapter: find dropped 7"
    # A failure that is not the adapter's doing (its harness unavailable): the reason's line.
    unavailable = row("failed", reason="harness toy unavailable: no cluster\nsecond")
    assert junit_message(unavailable) == "harness toy unavailable: no cluster"
    long = junit_message(row("failed", adapter="x" * 1000))
    assert len(long) == JUNIT_MESSAGE_BUDGET and long.endswith("\N{HORIZONTAL ELLIPSIS}")
    assert long.startswith("[TEST-981] adapter: xxx")


# -- the matrix: each declared yes and the check that verified it ----------------------------


def answers_of(harness: ToyHarness, label: str) -> Answers:
    return Answers(label, dict(harness.backend().capabilities(None)))


def test_each_declared_yes_names_its_check(registered: dict[str, Check]) -> None:
    harness = ToyHarness()
    answers = answers_of(harness, "toy")
    yes = [c for c, s in answers.answers.items() if s.value.value == "yes"]
    assert {Capability.HOLD, Capability.PROCS_PER_NODE, Capability.WORKING_DIRECTORY} <= set(yes)
    loaded = Loaded(TOY, "toy", harness)
    results = [
        loaded.run(registered[i], 0) for i in ("TEST-981", "TEST-982", "TEST-983", "TEST-984")
    ]
    said = {c: text for h, c, text in verification([answers], results)}
    assert set(said) == set(yes)  # one line per yes, no other
    assert said[Capability.HOLD].startswith("FAILED: TEST-982; verified by TEST-981")
    procs = [c.id for c in verifiers(Capability.PROCS_PER_NODE)]
    assert "TEST-983" in procs
    assert said[Capability.PROCS_PER_NODE] == "verified by TEST-983"
    # Each verifier in id order: the one that ran skipped (its reason), the others not run.
    assert said[Capability.WORKING_DIRECTORY] == "not verified: " + "; ".join(
        "TEST-984 skipped: the harness has no second node"
        if c.id == "TEST-984"
        else f"{c.id} not run ({c.tier.value} tier)"
        for c in verifiers(Capability.WORKING_DIRECTORY)
    )
    for capability in yes:
        if not verifiers(capability):
            assert said[capability] == "not verified: no check verifies it"


def test_a_verifying_check_that_errs_verifies_nothing(registered: dict[str, Check]) -> None:
    answers = Answers("toy", {Capability.HOLD: Support.yes("it holds")})
    err = row("error", "TEST-981", reason="[TEST-981] harness error")
    registry = [registered["TEST-981"], registered["TEST-982"]]
    [(label, capability, text)] = verification([answers], [err], registry)
    assert (label, capability) == ("toy", Capability.HOLD)
    assert text == "not verified: TEST-981 harness error; TEST-982 not run (smoke tier)"


def matrix_lines(markdown: str) -> dict[tuple[str, str], str]:
    """The "Declared yes" table of a matrix.md: (harness, capability) -> what verified it."""
    section = markdown.split("## Declared yes: verified by", 1)[1]
    table = [line for line in section.splitlines() if line.startswith("| ")][1:]
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in table]
    return {(h, c): text for h, c, text in cells}


def test_matrix_md_has_a_line_per_yes_from_the_registry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Through the CLI, on the memory adapter: every declared yes has its line, naming the
    registered checks that verify it (none hard-coded here)."""
    code, _, _ = cli(
        capsys,
        "run",
        "--harness",
        TOY,
        "--harness",
        f"{__name__}:broken_hold_harness",
        "--tier",
        "standard",
        "--check",
        "CAP-",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 1
    markdown = (tmp_path / "matrix.md").read_text()
    assert "| capability | toy | broken-hold |" in markdown  # the matrix as before
    lines = matrix_lines(markdown)
    results = json.loads((tmp_path / "report.json").read_text())["results"]
    outcome = {(r["harness"], r["id"]): r["outcome"] for r in results}
    for label, harness in (("toy", ToyHarness()), ("broken-hold", BrokenHoldHarness())):
        answers = answers_of(harness, label)
        for capability, support in answers.answers.items():
            key = (label, capability.value)
            if support.value.value != "yes":
                assert key not in lines
                continue
            passed = [c.id for c in verifiers(capability) if outcome.get((label, c.id)) == "passed"]
            failed = [c.id for c in verifiers(capability) if outcome.get((label, c.id)) == "failed"]
            if failed:
                assert lines[key].startswith("FAILED: " + ", ".join(failed))
            elif passed:
                assert lines[key] == "verified by " + ", ".join(passed)
            else:
                assert lines[key].startswith("not verified: ")
    # The broken adapter's Hold is contradicted by the check that verifies it.
    hold = [c.id for c in verifiers(Capability.HOLD)]
    assert hold, "a check verifies Hold"
    assert lines[("broken-hold", "Hold")].startswith("FAILED: ")
    assert lines[("toy", "Hold")].startswith("verified by ")


def test_the_matrix_alone_has_no_verification() -> None:
    markdown = matrix_markdown([answers_of(ToyHarness(), "toy")])
    assert "Declared yes" not in markdown


class BrokenHoldHarness(ToyHarness):
    """The memory adapter answering Hold yes, with a hold that does not survive a reopen."""

    def __init__(self) -> None:
        super().__init__("broken-hold")

    def backend(self) -> MemoryBackend:
        return HoldKeptInProcess("slurm", clock=VirtualClock(), max_job_id=50, min_job_age=60.0)


def broken_hold_harness() -> ToyHarness:
    return BrokenHoldHarness()


# -- STATE-004: what find did with a look-alike it must report foreign --------------------------


def test_state_004_says_find_took_a_look_alike_as_the_jobs_own() -> None:
    """The lenient comment parser reads ``dispatch:s=01;a=1`` as submission 1: find reports the
    look-alike with foreign=False, as the job's own, which the message says (not "dropped")."""
    result = run_check(REGISTRY["STATE-004"], lenient_comment_parser(), 0)
    assert result.outcome is Outcome.FAILED
    said = result.adapter.splitlines()[0]
    assert re.fullmatch(
        r"find\(A\) reported (\S+) as the job's own \(submission 1\); it is a look-alike "
        r"\(.*'dispatch:s=01;a=1'.*\): keyed exactly as the job, it must be reported foreign",
        said,
    ), said
    assert "dropped" not in said
    assert junit_message(result) == f"[STATE-004] adapter: {said}"


def test_state_004_says_dropped_only_when_find_left_it_out() -> None:
    result = run_check(REGISTRY["STATE-004"], find_drops_foreign(), 0)
    assert result.outcome is Outcome.FAILED
    said = result.adapter.splitlines()[0]
    assert re.fullmatch(
        r"find\(A\) dropped (\S+); it is a look-alike \(.*\): keyed exactly as the job, it must "
        r"be reported foreign, not dropped",
        said,
    ), said


def test_a_stateful_failure_reads_the_same_in_each_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """report.json's fields, the progress lines and JUnit say the same STATE-004 failure."""
    spec = "adapters.memory.testing.broken:lenient_comment_parser"
    code, out, _ = cli(
        capsys, "run", "--harness", spec, "--check", "STATE-004", "--report-dir", str(tmp_path)
    )
    assert code == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "failed"
    [failure] = report["failures"]
    [result] = report["results"]
    assert failure["adapter"] == result["adapter"]
    assert failure["adapter"].startswith("find(A) reported ")
    assert len(failure["adapter"].splitlines()) > 2  # what find did, then the shrunk program
    assert f"  adapter: {failure['adapter']}\n" in result["reason"]
    lines = out.splitlines()
    assert f"        adapter: {failure['adapter'].splitlines()[0]}" in lines
    assert f"        replay: {failure['replay']}" in lines
    assert (
        failure["replay"] == f"dispatch-conformance run --harness {spec} --check STATE-004 --seed 0"
    )
    [element] = ET.parse(tmp_path / "junit.xml").getroot().iter("failure")
    assert element.get("message") == f"[STATE-004] adapter: {failure['adapter'].splitlines()[0]}"
    assert element.text == result["reason"]
