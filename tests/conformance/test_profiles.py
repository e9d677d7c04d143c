"""Profiles: what a verdict covers. Every check belongs to one profile; per harness a profile
is passed, partial (with every check not run and what it lacked), failed or not applicable; a
skip names every need that is missing and says whose gap it is; ``--require`` makes a gate of
it in the CLI and the plugin; report.json, junit.xml and matrix.md carry it."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from adapters.memory import MemoryBackend
from conformance import Fault, Needs, Probe, SkippedFor, checks, run_check
from conformance.checks import Check, Context, Tier
from conformance.cli import main
from conformance.profiles import (
    NOT_SELECTED,
    PROFILES,
    judge_profiles,
    profile_named,
    profile_of,
    unmet,
    verdict_line,
)
from conformance.runner import Answers
from dispatch_core import Capability, Support, Tristate
from tests.conformance.test_cli import HERE, ToyHarness

ROOT = Path(__file__).resolve().parents[2]
TOY = f"{HERE}:toy_harness"


def test_every_registered_check_belongs_to_exactly_one_profile() -> None:
    for check in checks(Tier.FULL):
        owners = [p.name for p in PROFILES if check.id in p.checks]
        assert len(owners) == 1, (check.id, owners)
    registered = {c.id for c in checks(Tier.FULL)}
    for profile in PROFILES:
        assert profile.checks <= registered, profile.checks - registered
    assert PROFILES[0].name == "core"
    assert profile_of("HOLD-001").name == "extended/holds"
    assert profile_named("holds") is profile_named("extended/holds")
    with pytest.raises(KeyError, match="no profile 'nope'"):
        profile_named("nope")


def _row(check_id: str, outcome: str, harness: str = "h", **more: Any) -> dict[str, Any]:
    return {"id": check_id, "harness": harness, "outcome": outcome, "reason": "", **more}


def test_a_profile_is_passed_partial_failed_or_not_applicable() -> None:
    rows = [
        _row("IDENT-001", "passed"),
        _row("IDENT-002", "skipped", skipped_for="harness", lacking=["look_alike:case_variant"]),
        _row("IDENT-003", "skipped", skipped_for="target", lacking=["look_alike:comma_list"]),
        _row("HOLD-001", "passed"),
        _row("HOLD-002", "failed"),
        _row("CAP-017", "skipped", skipped_for="adapter"),
        _row("CAP-020", "error"),
        _row("CAP-019", "skipped", skipped_for="circumstance", reason="the scheduler ..."),
    ]
    judged = {p.name: p for p in judge_profiles(rows)["h"]}
    core = judged["core"]
    assert (core.result, core.passed, core.not_applicable) == ("partial", 1, 1)
    assert core.not_run == [{"id": "IDENT-002", "needs": ["look_alike:case_variant"]}]
    assert "harness offers no look_alike:case_variant" in core.words()
    assert judged["extended/holds"].result == "failed"
    assert judged["extended/history"].result == "not applicable"
    assert judged["extended/output"].not_run == [{"id": "CAP-020", "needs": ["harness error"]}]
    assert judged["extended/preflight"].not_run[0]["needs"] == ["circumstance: the scheduler ..."]
    assert "extended/requeue" not in judged  # no check of it ran: not judged


def test_a_check_of_the_tier_the_selection_left_out_is_not_run() -> None:
    rows = [_row("IDENT-001", "passed")]
    core = judge_profiles(rows, tier_checks=["IDENT-001", "IDENT-006"])["h"][0]
    assert core.result == "partial"
    assert core.not_run == [{"id": "IDENT-006", "needs": [NOT_SELECTED]}]


def test_a_harness_skip_of_a_capability_the_adapter_declares_no_does_not_apply() -> None:
    row = _row(
        "CAP-018",
        "skipped",
        skipped_for="harness",
        lacking=["signals"],
        needs=["PreTerminationSignal", "let_run", "signals"],
    )
    no = Answers("h", {Capability.PRE_TERMINATION_SIGNAL: Support(value=Tristate.NO)})
    yes = Answers("h", {Capability.PRE_TERMINATION_SIGNAL: Support(value=Tristate.YES)})
    assert judge_profiles([row], [no])["h"][0].result == "not applicable"
    assert judge_profiles([row], [yes])["h"][0].result == "partial"


def test_required_profiles_not_passed_whole_are_named() -> None:
    rows = [
        _row("IDENT-001", "passed", "a"),
        _row("IDENT-001", "skipped", "b", skipped_for="harness", lacking=["let_run"]),
        _row("CAP-017", "skipped", "a", skipped_for="adapter"),
        _row("CAP-017", "passed", "b"),
    ]
    judged = judge_profiles(rows)
    assert [(h, name) for h, _, name in unmet(judged, ["core"])] == [("b", "core")]
    assert unmet(judged, ["extended/history"]) == [("a", judged["a"][1], "extended/history")]
    # all: every profile that applies (a's history does not apply)
    assert [(h, name) for h, _, name in unmet(judged, ["all"])] == [("b", "core")]
    assert [(h, found) for h, found, _ in unmet(judged, ["holds"])] == [("a", None), ("b", None)]
    line = verdict_line("failed", judged, unmet(judged, ["core"]))
    assert line == (
        "failed: core passed whole on 1 of 2 harnesses; partial on b (1 check not run); "
        "1 required profile result not passed"
    )


class Lacking(ToyHarness):
    """Offers nothing: a check needing two faults is skipped naming both; the target cannot
    recreate by its nature."""

    impossible = frozenset({Fault.RECREATE.value})


def test_a_skip_names_every_missing_need_and_whose_gap_it_is() -> None:
    def body(ctx: Context) -> None:
        raise AssertionError("never runs")

    two = Check("T-1", "a rule", "c", "t", Tier.STANDARD, body,
                Needs(faults=(Fault.LET_RUN, Fault.PURGE), probes=(Probe.EXECUTIONS,)))  # fmt: skip
    result = run_check(two, Lacking(), seed=0)
    assert result.lacking == ("let_run", "purge", "executions")
    assert result.skipped_for == SkippedFor.HARNESS
    assert result.reason.count("harness offers no") == 3
    assert "implement conformance.powers.RunsJobs" in result.reason
    nature = Check("T-2", "a rule", "c", "t", Tier.STANDARD, body, Needs(faults=(Fault.RECREATE,)))
    assert run_check(nature, Lacking(), seed=0).skipped_for == SkippedFor.TARGET

    def declares_no(ctx: Context) -> None:
        raise AssertionError("never runs")

    caps = Check("T-3", "a rule", "c", "t", Tier.STANDARD, declares_no,
                 Needs(capabilities=(Capability.PRE_TERMINATION_SIGNAL, Capability.HOLD),
                       interfaces=(MemoryBackend, int)))  # fmt: skip
    skipped = run_check(caps, Lacking(), seed=0)
    assert skipped.skipped_for == SkippedFor.ADAPTER
    assert "PreTerminationSignal no" in skipped.reason
    assert "implements no int" in skipped.reason


def test_the_cli_gate_fails_a_partial_core_and_reports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--harness", TOY, "--tier", "smoke", "--report-dir", str(tmp_path)]
    assert main(args) == 0  # no gate: partial is said, not failed
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("passed: core passed whole on 0 of 1 harness; partial on toy")
    assert any(line.startswith("  toy: core partial") for line in out)
    assert main([*args, "--require", "core", "--check", "CAP-001"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("failed: core passed whole on 0 of 1 harness")
    assert any("required profile not passed: toy: core partial" in line for line in out)
    assert any(NOT_SELECTED in line for line in out)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["schema_version"] == 3
    assert report["verdict"] == "failed"
    assert report["run"]["required"] == ["core"]
    [harness] = report["run"]["harnesses"]
    [core] = harness["profiles"]
    assert core["name"] == "core" and core["result"] == "partial" and core["passed"] == 1
    assert {"id": "IDENT-001", "needs": [NOT_SELECTED]} in core["not_run"]
    assert report["required"] == [{"harness": "toy", "profile": "core", "result": "partial"}]
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert str(props["profile:core"]).startswith("core partial")
    assert "## Profiles" in (tmp_path / "matrix.md").read_text()


def test_an_unknown_required_profile_is_a_one_line_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--harness", TOY, "--require", "hold", "--report-dir", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no profile 'hold'" in err[0]


def test_the_plugin_gate_fails_the_session(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "conformance.plugin", "-p", "no:cacheprovider",
         f"--dispatch-harness={TOY}", "--dispatch-tier=smoke", "--dispatch-require=core"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "required profile not passed: toy: core partial" in done.stdout
    lines = done.stdout.splitlines()
    assert any(line.startswith("failed: core passed whole on 0 of 1 harness") for line in lines)
