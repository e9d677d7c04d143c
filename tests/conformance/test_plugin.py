"""The pytest plugin (``conformance.plugin``) and ``conformance.suite_for``, run with pytester.

Checks registered by this module for a test (ids ``TEST-9..``) are removed after it, so the
outcomes asserted here do not move as the real suites grow. The suites are imported here, in
this process: pytester's in-process runs forget the modules they import, and a suite imported
again would register its checks twice."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET

import pytest

import conformance.suites  # noqa: F401  (registered once here, not inside a pytester run)
from conformance import checks
from conformance.checks import REGISTRY
from conformance.plugin import JUnitNames
from tests.conformance.test_cli import BY_LABEL, BY_NAME, TOY, register_test_checks

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "conformance.plugin")
HERE = "tests.conformance.test_cli"
LABEL = f"{HERE}:label_harness"


@pytest.fixture
def registered_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    register_test_checks(monkeypatch)


def junit_cases(path: object) -> dict[str, ET.Element]:
    root = ET.parse(str(path)).getroot()
    return {c.get("name", ""): c for c in root.iter("testcase")}


def props(case: ET.Element) -> dict[str, str | None]:
    return {p.get("name", ""): p.get("value") for p in case.iter("property")}


def check_props(harness: str, check_id: str, seed: int) -> dict[str, str | None]:
    """The properties a check's testcase carries, in both JUnit reports."""
    check = REGISTRY[check_id]
    return {
        "harness": harness,
        "check": check_id,
        "seed": str(seed),
        "rule": check.rule,
        "clause": check.clause,
    }


def test_without_a_harness_it_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one():\n    assert True\n")
    # In process, the outer session has imported the kit already: pytest's warning that it
    # cannot rewrite those modules is about this test's set-up, not the plugin.
    quiet = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
    for args in (quiet, (*quiet, *PLUGIN)):
        result = pytester.runpytest(*args)
        result.assert_outcomes(passed=1)
        lines = result.stdout.lines
        assert not [ln for ln in lines if "dispatch" in ln and not ln.startswith("plugins:")]
    empty = pytester.mkdir("empty")
    result = pytester.runpytest(*PLUGIN, str(empty))
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "collected 0 items" in result.stdout.str()


def test_one_item_per_harness_and_check(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        f"--dispatch-harness={TOY}",
        f"--dispatch-harness={LABEL}",
        *PLUGIN,
        "--dispatch-check=CAP-001",
        "--dispatch-check=CAP-002",
        "-v",
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "dispatch conformance: toy, toy-label; 2 standard-tier checks each, seed 0",
            "*collected 4 items",
            "toy::CAP-001 PASSED*",
            "toy::CAP-002 PASSED*",
            "toy-label::CAP-001 PASSED*",
            "toy-label::CAP-002 PASSED*",
            "*- dispatch conformance -*",
            "4 passed, 0 failed, 0 skipped",
        ]
    )


@pytest.mark.parametrize("tier", ["smoke", "standard", "full"])
def test_each_tier_collects_its_checks(pytester: pytest.Pytester, tier: str) -> None:
    result = pytester.runpytest(
        f"--dispatch-harness={TOY}",
        *PLUGIN,
        f"--dispatch-tier={tier}",
        "--collect-only",
        "-q",
    )
    collected = [line for line in result.stdout.lines if line.startswith("toy::")]
    assert collected == [f"toy::{c.id}" for c in checks(tier)]


@pytest.mark.usefixtures("registered_checks")
def test_outcomes_skip_reasons_and_strict_xfail(pytester: pytest.Pytester) -> None:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        f"--dispatch-harness={HERE}:plain_harness",
        *PLUGIN,
        "--dispatch-check=TEST-9",
        "--dispatch-seed=7",
        f"--junitxml={junit}",
        "-rA",
    )
    result.assert_outcomes(passed=1, skipped=2, xfailed=1, failed=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] *test_cli.py:*: adapter declares ContainerImage no: memory adapter (slurm shape)*",
            "SKIPPED [[]1[]] *test_cli.py:*: harness offers no lose_node: implement conformance.powers.LosesNodes to offer it",
            "XFAIL memory-plain::TEST-904 - expected failure: issue 1",
            "FAILED memory-plain::TEST-905 - [[]TEST-905[]] adapter: passed, but it is a *",
            "FAILED memory-plain::TEST-906 - [[]TEST-906[]] adapter: answered maybe",
        ]
    )
    result.stdout.fnmatch_lines(["*- dispatch conformance -*", "1 passed, 2 failed, 3 skipped"])
    # The failure is the check's message: the rule, what the adapter did, the replay; no
    # Python traceback.
    result.stdout.fnmatch_lines(
        [
            "*_ memory-plain::TEST-906 _*",
            "[[]TEST-906[]] rule: The answer is yes or no.",
            "  clause: test clause",
            "  adapter: answered maybe",
            f"  replay: dispatch-conformance run --harness {HERE}:plain_harness --check TEST-906 --seed 7",
        ]
    )
    assert "passed, but it is a strict expected failure (issue 2)" in out
    assert "Traceback" not in out and "conformance/plugin.py" not in out and "def _fails" not in out

    cases = junit_cases(junit)
    assert set(cases) == {f"TEST-90{n}" for n in range(1, 7)}
    for check_id, case in cases.items():
        assert props(case) == check_props("memory-plain", check_id, 7)
        assert case.get("classname") == "dispatch.conformance.memory-plain"
    skipped = cases["TEST-903"].find("skipped")
    assert (
        skipped is not None
        and skipped.get("message")
        == "harness offers no lose_node: implement conformance.powers.LosesNodes to offer it"
    )
    # The message says what the adapter did; the text is the whole message.
    failure = cases["TEST-906"].find("failure")
    assert failure is not None
    assert failure.get("message") == "[TEST-906] adapter: answered maybe"
    assert (failure.text or "").splitlines() == [
        "[TEST-906] rule: The answer is yes or no.",
        "  clause: test clause",
        "  adapter: answered maybe",
        f"  replay: dispatch-conformance run --harness {HERE}:plain_harness --check TEST-906 --seed 7",
    ]
    strict = cases["TEST-905"].find("failure")
    assert strict is not None
    assert strict.get("message") == (
        "[TEST-905] adapter: passed, but it is a strict expected failure (issue 2)"
    )
    [suite] = ET.parse(junit).getroot().iter("testsuite")
    assert suite.get("hostname") == socket.gethostname()


@pytest.mark.usefixtures("registered_checks")
def test_xfail_on_holds_on_the_harness_it_names_only(pytester: pytest.Pytester) -> None:
    reports = pytester.path / "reports"
    result = pytester.runpytest(
        f"--dispatch-harness={HERE}:plain_harness",
        f"--dispatch-harness={LABEL}",
        *PLUGIN,
        "--dispatch-check=TEST-904",
        "--dispatch-check=TEST-905",
        f"--dispatch-report-dir={reports}",
        "-rA",
    )
    # memory-plain: 904 fails as expected (xfailed), 905 passes where a failure was expected
    # (strict: it fails); toy-label is not named: 904 fails, 905 passes.
    result.assert_outcomes(passed=1, xfailed=1, failed=2)
    lines = result.stdout.lines
    assert "XFAIL memory-plain::TEST-904 - expected failure: issue 1" in lines
    assert any(line.startswith("FAILED memory-plain::TEST-905 - ") for line in lines)
    assert "FAILED toy-label::TEST-904 - [TEST-904] adapter: answered maybe" in lines
    assert "PASSED toy-label::TEST-905" in lines
    report = json.loads((reports / "report.json").read_text())
    outcomes = {(r["harness"], r["id"]): r["outcome"] for r in report["results"]}
    assert outcomes == {
        ("memory-plain", "TEST-904"): "skipped",
        ("memory-plain", "TEST-905"): "failed",
        ("toy-label", "TEST-904"): "failed",
        ("toy-label", "TEST-905"): "passed",
    }
    identities = {h["label"]: h["identity"] for h in report["run"]["harnesses"]}
    assert identities == {"memory-plain": BY_NAME.as_dict(), "toy-label": BY_LABEL.as_dict()}


def test_a_broken_adapter_fails_the_named_rule(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        f"--dispatch-harness={HERE}:broken_harness", *PLUGIN, "--dispatch-check=CAP-001"
    )
    result.assert_outcomes(failed=1)
    rule = REGISTRY["CAP-001"].rule
    result.stdout.fnmatch_lines(
        [
            f"[[]CAP-001[]] rule: {rule}",
            "  adapter: answered no Support for OutputRetained",
            "FAILED broken::CAP-001 - [[]CAP-001[]] adapter: answered no Support for OutputRet*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_report_dir_gets_every_report(pytester: pytest.Pytester) -> None:
    reports = pytester.path / "reports"
    result = pytester.runpytest(
        f"--dispatch-harness={TOY}",
        f"--dispatch-harness={HERE}:broken_harness",
        *PLUGIN,
        "--dispatch-check=CAP-001",
        f"--dispatch-report-dir={reports}",
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["reports: *report.json, *junit.xml, *matrix.md", "1 passed, 1 failed, 0 skipped"]
    )
    report = json.loads((reports / "report.json").read_text())
    assert report["run"]["runner"] == "pytest"
    assert [
        {k: v for k, v in h.items() if k != "profiles"} for h in report["run"]["harnesses"]
    ] == [
        {"label": "toy", "spec": TOY, "identity": BY_NAME.as_dict()},
        {"label": "broken", "spec": f"{HERE}:broken_harness", "identity": BY_NAME.as_dict()},
    ]
    assert [p["result"] for h in report["run"]["harnesses"] for p in h["profiles"]] == [
        "partial",  # the run selected one check of core
        "failed",
    ]
    assert [(r["harness"], r["id"], r["outcome"]) for r in report["results"]] == [
        ("toy", "CAP-001", "passed"),
        ("broken", "CAP-001", "failed"),
    ]
    suites = ET.parse(reports / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["toy", "broken"]
    matrix = (reports / "matrix.md").read_text()
    assert "| capability | toy | broken |" in matrix
    assert "| OutputRetained | no (declared) [" in matrix
    assert "| OutputRetained | no (declared) [" in matrix and "not answered |" in matrix


def test_a_bad_harness_is_a_usage_error(pytester: pytest.Pytester) -> None:
    for spec, says in (
        ("nope", "no harness named 'nope'"),
        (f"{HERE}:exploding_harness", "RuntimeError: no cluster here second line"),
        (f"{HERE}:misspelt_harness", "lists 'lose_comments' as impossible, which no check"),
    ):
        result = pytester.runpytest(f"--dispatch-harness={spec}", *PLUGIN)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert says in result.stderr.str()
        assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_own_tests_run_beside_the_checks_when_paths_are_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_mine():\n    assert True\n")
    only = pytester.runpytest(
        f"--dispatch-harness={TOY}", *PLUGIN, "--dispatch-check=CAP-001", "-v"
    )
    only.assert_outcomes(passed=1)
    only.stdout.fnmatch_lines(["*only the checks run*"])
    both = pytester.runpytest(
        ".", f"--dispatch-harness={TOY}", *PLUGIN, "--dispatch-check=CAP-001", "-v"
    )
    both.assert_outcomes(passed=2)
    both.stdout.fnmatch_lines(["*test_mine PASSED*", "toy::CAP-001 PASSED*"])


def test_every_way_of_loading_it_works_beside_the_entry_point(pytester: pytest.Pytester) -> None:
    for args in (("-p", "dispatch_conformance"), ()):
        result = pytester.runpytest(f"--dispatch-harness={TOY}", *args, "--dispatch-check=CAP-001")
        result.assert_outcomes(passed=1)


def test_results_and_properties_survive_xdist_serialization(pytester: pytest.Pytester) -> None:
    """pytest-xdist ships reports from workers as JSON: the properties and the result the
    controller writes its reports from must survive the trip."""
    records = pytester.inline_run(
        f"--dispatch-harness={HERE}:broken_harness", *PLUGIN, "--dispatch-check=CAP-00"
    )
    calls = [r for r in records.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert calls
    for report in calls:
        again = pytest.TestReport._from_json(report._to_json())
        assert again.user_properties == report.user_properties
        assert dict(again.user_properties)["harness"] == "broken"
        assert vars(again)["dispatch_result"] == vars(report)["dispatch_result"]
        assert vars(again)["dispatch_result"]["id"] == dict(again.user_properties)["check"]
        assert vars(again)["dispatch_junit"] == vars(report)["dispatch_junit"]
    # A failure's text arrives without its one-line summary; the controller gives it back, so
    # that --junitxml's message and the short summary say what the adapter did there too.
    [failed] = [r for r in calls if r.failed]
    again = pytest.TestReport._from_json(failed._to_json())
    assert isinstance(again.longrepr, str)
    JUnitNames(pytester.parseconfig()).pytest_runtest_logreport(again)
    crash = getattr(again.longrepr, "reprcrash", None)
    assert crash is not None
    assert crash.message == "[CAP-001] adapter: answered no Support for OutputRetained"
    assert str(again.longrepr) == str(failed.longrepr)


@pytest.mark.usefixtures("registered_checks")
def test_suite_for_imports_the_suite_into_an_authors_module(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_my_adapter=f"""
        from conformance import suite_for
        from {HERE} import ToyHarness, broken_harness

        test_memory = suite_for(ToyHarness, checks=["CAP-001", "TEST-902"], seed=5)
        test_broken = suite_for(broken_harness, checks=["CAP-001"])
        test_named = suite_for("{HERE}:plain_harness", checks=["TEST-903"])
        """
    )
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(f"--junitxml={junit}", "-rA", "-v")
    result.assert_outcomes(passed=1, skipped=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_memory[[]CAP-001[]] PASSED*",
            "*test_memory[[]TEST-902[]] SKIPPED*",
            "*test_broken[[]CAP-001[]] FAILED*",
            "*test_named[[]TEST-903[]] SKIPPED*",
        ]
    )
    out = result.stdout.str()
    assert "adapter declares ContainerImage no" in out
    assert "harness offers no lose_node" in out
    assert "adapter: answered no Support for OutputRetained" in out
    assert "Traceback" not in out
    cases = {(c.get("name") or ""): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert props(cases["test_memory[CAP-001]"]) == check_props("toy", "CAP-001", 5)
    assert props(cases["test_named[TEST-903]"]) == check_props(
        f"{HERE}:plain_harness", "TEST-903", 0
    )
    # The classnames of the CLI's junit.xml, and a failure's message says what the adapter did.
    assert cases["test_memory[CAP-001]"].get("classname") == "dispatch.conformance.toy"
    assert cases["test_broken[CAP-001]"].get("classname") == "dispatch.conformance.broken"
    failure = cases["test_broken[CAP-001]"].find("failure")
    assert failure is not None
    assert failure.get("message") == "[CAP-001] adapter: answered no Support for OutputRetained"
    assert (failure.text or "").startswith(f"[CAP-001] rule: {REGISTRY['CAP-001'].rule}\n")


def test_a_conftest_may_name_it_too(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["conformance.plugin"]\n')
    result = pytester.runpytest(f"--dispatch-harness={TOY}", "--dispatch-check=CAP-001")
    result.assert_outcomes(passed=1)


@pytest.mark.usefixtures("registered_checks")
def test_the_cli_and_pytest_write_the_same_junit_for_a_check(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same (harness, check) in the CLI's junit.xml and in pytest's --junitxml: the same
    classname and name, properties, element (failure for the adapter, error for the
    harness, skipped) and message (pytest words a setup error's as ``failed on setup``)."""
    from conformance.cli import main

    plain, erring = f"{HERE}:plain_harness", "tests.conformance.test_cli_errors:no_backend"
    cli_dir = pytester.path / "cli"
    selection = ["--check", "TEST-90", "--check", "CAP-001", "--seed", "7"]
    code = main(
        ["run", "--harness", plain, "--harness", erring, *selection, "--report-dir", str(cli_dir)]
    )
    capsys.readouterr()
    assert code == 3
    junit = pytester.path / "pytest.xml"
    pytester.runpytest(
        f"--dispatch-harness={plain}",
        f"--dispatch-harness={erring}",
        *PLUGIN,
        "--dispatch-check=TEST-90",
        "--dispatch-check=CAP-001",
        "--dispatch-seed=7",
        f"--junitxml={junit}",
    )

    def cases(path: object) -> dict[tuple[str, str], ET.Element]:
        found = ET.parse(str(path)).getroot().iter("testcase")
        return {(c.get("classname", ""), c.get("name", "")): c for c in found}

    def said(case: ET.Element) -> tuple[str, str | None]:
        [element] = [e for e in case if e.tag in ("failure", "error", "skipped")] or [case]
        return element.tag, element.get("message")

    by_cli, by_pytest = cases(cli_dir / "junit.xml"), cases(junit)
    assert set(by_cli) == set(by_pytest)
    assert len(by_cli) == 14  # 7 checks on each of two harnesses
    outcomes: dict[str, set[str]] = {}
    for (classname, check_id), ours in by_cli.items():
        theirs = by_pytest[classname, check_id]
        harness = classname.removeprefix("dispatch.conformance.")
        assert props(ours) == props(theirs) == check_props(harness, check_id, 7)
        tag, message = said(ours)
        outcomes.setdefault(tag, set()).add(f"{harness}::{check_id}")
        if tag == "error":
            assert said(theirs) == (tag, f'failed on setup with "{message}"')
            assert message is not None and "harness error, not the adapter's" in message
        else:
            assert said(theirs) == (tag, message)
    # The checks that need no backend fail on no-backend as on memory-plain (no xfail_on
    # names it); those that make one are the harness's errors there.
    assert outcomes["failure"] == {
        "memory-plain::TEST-905",
        "memory-plain::TEST-906",
        "no-backend::TEST-904",
        "no-backend::TEST-906",
    }
    made = ("CAP-001", "TEST-901", "TEST-902", "TEST-905")  # each makes a backend
    assert outcomes["error"] == {f"no-backend::{i}" for i in made}
    assert said(by_cli[("dispatch.conformance.no-backend", "TEST-904")]) == (
        "failure",
        "[TEST-904] adapter: answered maybe",
    )
