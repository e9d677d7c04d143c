"""Bad input to ``dispatch-conformance`` and to the pytest plugin, and harnesses that raise: each
gives one line on stderr (never a traceback) and a documented exit status; every report is
written atomically.

Exit statuses (``conformance.cli.EXIT_STATUSES``): 0 passed, 1 a check failed, 2 bad usage or
input, 3 a harness error, 70 an internal error, 130 interrupted.

The harnesses here are named ``tests.conformance.test_cli_errors:<factory>``. Nothing here
runs a Slurm command: the preflight tests put fakes (or nothing) on a PATH of their own."""

from __future__ import annotations

import errno
import json
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import conformance.cli as cli_module
import conformance.reports as reports
from adapters.memory import MemoryBackend
from conformance import Harness, checks, suite_for
from conformance.checks import SelectionError
from conformance.cli import EXIT_STATUSES
from conformance.powers import RunsJobs
from dispatch_core import ObjectRef
from tests.conformance.test_cli import TOY, NoIdentityHarness, ToyHarness, cli, one_line_error

pytest_plugins = ["pytester"]

HERE = "tests.conformance.test_cli_errors"
PLUGIN = ("-p", "conformance.plugin")
ERROR = "dispatch-conformance: error: "
CAP = checks("full", ["CAP-001"])[0]

# -- harnesses that raise --------------------------------------------------------------------


class NoBackendHarness(ToyHarness):
    def __init__(self) -> None:
        super().__init__("no-backend")

    def new_backend(self) -> MemoryBackend:
        raise RuntimeError("no cluster config\nat all")


def no_backend() -> Harness[MemoryBackend]:
    return NoBackendHarness()


class BadCloseHarness(ToyHarness):
    def __init__(self) -> None:
        super().__init__("bad-close")

    def close(self) -> None:
        raise OSError("cannot remove the scratch directory")


def bad_close() -> Harness[MemoryBackend]:
    return BadCloseHarness()


class BadInjectorHarness(ToyHarness, RunsJobs[MemoryBackend]):
    """Offers let_run and finish; its let_run raises."""

    def __init__(self) -> None:
        super().__init__("bad-injector")

    def let_run(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        raise RuntimeError("scheduler socket gone")

    def finish(self, backend: MemoryBackend, ref: ObjectRef, exit_code: int = 0) -> None:
        backend.cluster.finish(ref.id, exit_code)


def bad_injector() -> Harness[MemoryBackend]:
    return BadInjectorHarness()


class BadEndHarness(ToyHarness):
    def __init__(self) -> None:
        super().__init__("bad-end")

    def end(self, check_id: str) -> None:
        raise RuntimeError(f"could not remove the namespace of {check_id}")


def bad_end() -> Harness[MemoryBackend]:
    return BadEndHarness()


def exits() -> Harness[MemoryBackend]:
    sys.exit(0)


def needs_an_argument(cluster: str) -> Harness[MemoryBackend]:
    return ToyHarness()


def stderr(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stderr.lines if line]


def where_line(name: str) -> str:
    """The location a harness error gives for a function of this module."""
    return rf"at: tests/conformance/test_cli_errors\.py:\d+ in {name}"


# -- the report directory, checked before anything runs -------------------------------------


def unwritable(tmp_path: Path) -> list[tuple[str, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = [
        (str(a_file), f"--report-dir {a_file}: not a directory"),
        ("/dev/null", "--report-dir /dev/null: not a directory"),
        (f"{a_file}/sub", f"--report-dir {a_file}/sub: cannot create it (Not a directory)"),
        ("", "--report-dir is empty: give a directory to write the reports to"),
    ]
    if Path("/proc/self").is_dir():
        cases.append(
            ("/proc/x", "--report-dir /proc/x: cannot create it (No such file or directory)")
        )
    return cases


@pytest.mark.parametrize("command", ["run", "matrix", "preflight"])
def test_an_unwritable_report_dir_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    for directory, says in unwritable(tmp_path):
        # The harness would fail at once if it were even made: nothing runs before the check.
        code, out, err = cli(
            capsys, command, "--harness", f"{HERE}:no_backend", "--report-dir", directory
        )
        assert (code, out) == (2, ""), (directory, out)
        assert one_line_error(err) == ERROR + says


def test_a_report_that_is_a_directory_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "junit.xml").mkdir()
    code, out, err = cli(capsys, "run", "--harness", TOY, "--report-dir", str(tmp_path))
    assert (code, out) == (2, "")
    assert one_line_error(err) == ERROR + (
        f"--report-dir {tmp_path}: junit.xml there is a directory, not a report"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_report_dir_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tmp_path.chmod(0o500)
    try:
        code, _, err = cli(capsys, "run", "--harness", TOY, "--report-dir", str(tmp_path))
    finally:
        tmp_path.chmod(0o700)
    assert code == 2
    assert one_line_error(err) == ERROR + (
        f"--report-dir {tmp_path}: cannot write into it (Permission denied)"
    )


def test_a_report_dir_that_cannot_be_written_into_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(**kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)  # as conformance.reports calls it
    code, out, err = cli(capsys, "run", "--harness", TOY, "--report-dir", str(tmp_path))
    assert (code, out) == (2, "")
    assert one_line_error(err) == ERROR + (
        f"--report-dir {tmp_path}: cannot write into it (Read-only file system)"
    )


def test_the_plugin_refuses_an_unwritable_report_dir(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        f"--dispatch-harness={TOY}", *PLUGIN, "--dispatch-report-dir=/dev/null"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert stderr(result) == ["ERROR: --dispatch-report-dir /dev/null: not a directory"]
    assert "collected" not in result.stdout.str()


# -- every report is written atomically, by one helper -------------------------------------


def test_write_atomic_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old\n")
    assert reports.write_atomic(target, "new ünïcode\n") == target
    assert target.read_text(encoding="utf-8") == "new ünïcode\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    mode = target.stat().st_mode & 0o777
    mask = os.umask(0)
    os.umask(mask)
    assert mode == 0o666 & ~mask


def test_an_interrupted_write_leaves_the_old_report_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "junit.xml"
    target.write_text("<testsuites/>\n")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        reports.write_atomic(target, "<testsuites>half")
    assert target.read_text() == "<testsuites/>\n"
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


def test_every_report_the_cli_writes_goes_through_write_atomic(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    through: list[str] = []
    atomic = reports.write_atomic

    def recording(path: str | os.PathLike[str], text: str) -> Path:
        through.append(Path(path).name)
        return atomic(path, text)

    monkeypatch.setattr(reports, "write_atomic", recording)
    for command, extra in (("run", ["--check", "CAP-001"]), ("matrix", []), ("preflight", [])):
        directory = tmp_path / command
        code, _, _ = cli(capsys, command, "--harness", TOY, "--report-dir", str(directory), *extra)
        assert code == 0
        written = sorted(p.name for p in directory.iterdir())
        assert written == sorted(through), command
        through.clear()


def test_a_disk_that_fills_up_at_the_end_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(path: str | os.PathLike[str], text: str) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(reports, "write_atomic", full)
    code, out, err = cli(
        capsys,
        "run",
        "--harness",
        TOY,
        "--check",
        "CAP-001",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 2
    assert out.splitlines()[-2] == "1 passed, 0 failed, 0 skipped"
    assert "reports: " not in out
    assert one_line_error(err) == ERROR + (
        f"cannot write the reports to --report-dir {tmp_path}: No space left on device"
    )


def test_a_run_interrupted_while_writing_keeps_each_report_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["run", "--harness", TOY, "--check", "CAP-001", "--report-dir", str(tmp_path)]
    assert cli(capsys, *argv)[0] == 0
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}
    replace = os.replace
    calls: list[str] = []

    def replace_then_interrupt(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) == 2:  # report.json is replaced; junit.xml is not
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    code, _, err = cli(capsys, *argv)
    assert (code, one_line_error(err)) == (130, ERROR + "interrupted")
    after = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert set(after) == set(before)  # no temporary file left
    json.loads(after["report.json"])  # the new one, whole
    assert after["junit.xml"] == before["junit.xml"]  # the old one, whole
    ET.fromstring(after["junit.xml"])


# -- harnesses that raise are the harness's errors (exit 3) ---------------------------------


def test_a_harness_whose_new_backend_raises_is_a_harness_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = f"{HERE}:no_backend"
    code, out, err = cli(
        capsys, "run", "--harness", spec, "--check", "CAP-001", "--report-dir", str(tmp_path)
    )
    assert (code, err) == (3, "")
    lines = out.splitlines()
    start = lines.index(f"  ERROR    CAP-001  {CAP.rule}")
    assert lines[start + 1] == (
        "      [CAP-001] harness error, not the adapter's: new_backend() raised RuntimeError: "
        "no cluster config at all"
    )
    assert re.fullmatch(r"        " + where_line("new_backend"), lines[start + 2])
    assert lines[start + 3] == f"        rule: {CAP.rule} (not judged)"
    assert lines[start + 4] == (
        f"        replay: dispatch-conformance run --harness {spec} --check CAP-001 --seed 0"
    )
    assert "adapter: crashed" not in out
    assert "harness errors: no-backend::CAP-001" in lines
    assert lines[-2] == "0 passed, 0 failed, 0 skipped, 1 harness error"

    report = json.loads((tmp_path / "report.json").read_text())
    [row] = report["results"]
    assert row["outcome"] == "error"
    # A harness error is the run's verdict, no failure of the adapter's, nothing it did.
    assert (report["verdict"], report["failures"], row["adapter"]) == ("error", [], "")
    root = ET.parse(tmp_path / "junit.xml").getroot()
    assert (root.get("errors"), root.get("failures")) == ("1", "0")
    assert root.find(".//failure") is None
    error = root.find("testsuite/testcase/error")
    assert error is not None
    assert error.get("message") == (
        "[CAP-001] harness error, not the adapter's: new_backend() raised RuntimeError: "
        "no cluster config at all"
    )
    assert "rule: " in (error.text or "")


def test_a_fault_injector_that_raises_is_a_harness_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(
        capsys,
        "run",
        "--harness",
        f"{HERE}:bad_injector",
        "--check",
        "HOLD-001",
        "--check",
        "STATE-001",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 3
    for check_id in ("HOLD-001", "STATE-001"):  # a stateful program catches it: still an error
        assert (
            f"      [{check_id}] harness error, not the adapter's: let_run() raised "
            "RuntimeError: scheduler socket gone"
        ) in out.splitlines()
    assert re.search(where_line("let_run"), out)
    assert out.splitlines()[-2] == "0 passed, 0 failed, 0 skipped, 2 harness errors"


def test_a_harness_whose_close_raises_exits_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli(
        capsys,
        "run",
        "--harness",
        f"{HERE}:bad_close",
        "--check",
        "CAP-001",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 3
    assert out.splitlines()[-2] == "1 passed, 0 failed, 0 skipped"
    assert re.fullmatch(
        re.escape(
            ERROR + "harness error: closing harness bad-close failed: OSError: cannot remove "
            "the scratch directory (at "
        )
        + r"tests/conformance/test_cli_errors\.py:\d+ in close\)",
        one_line_error(err),
    )
    for command in ("matrix", "preflight"):
        code, _, err = cli(
            capsys, command, "--harness", f"{HERE}:bad_close", "--report-dir", str(tmp_path)
        )
        assert code == 3, command
        assert "closing harness bad-close failed" in one_line_error(err)


def test_a_harness_whose_end_raises_makes_the_check_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(
        capsys,
        "run",
        "--harness",
        f"{HERE}:bad_end",
        "--check",
        "CAP-001",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 3
    assert (
        "      [CAP-001] cleanup failed after the check passed: the harness's end(CAP-001) raised "
        "RuntimeError: could not remove the namespace of CAP-001 (at "
    ) in out
    assert out.splitlines()[-2] == "0 passed, 0 failed, 0 skipped, 1 harness error"
    [row] = json.loads((tmp_path / "report.json").read_text())["results"]
    assert row["outcome"] == "error"


def test_a_harness_without_an_identity_model_is_refused_everywhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pytester: pytest.Pytester
) -> None:
    spec = "tests.conformance.test_cli:no_identity_harness"
    says = f"harness '{spec}' declares no identity model: set identity = IdentityModel("
    for command in ("run", "matrix", "preflight"):
        code, out, err = cli(capsys, command, "--harness", spec, "--report-dir", str(tmp_path))
        assert (code, out) == (2, ""), command
        assert one_line_error(err).startswith(ERROR + says), command
    result = pytester.runpytest(f"--dispatch-harness={spec}", *PLUGIN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in stderr(result) if says in line]
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_suite_for_says_a_harness_without_an_identity_model_on_each_check(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_mine="""
        from conformance import suite_for
        from tests.conformance.test_cli import NoIdentityHarness

        test_anonymous = suite_for(NoIdentityHarness, checks=["CAP-001", "CAP-002"])
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(errors=2)
    said = (
        "harness 'tests.conformance.test_cli:NoIdentityHarness' declares no identity model: "
        "set identity = IdentityModel(*"
    )
    for check_id in ("CAP-001", "CAP-002"):
        result.stdout.fnmatch_lines([f"*ERROR at setup of test_anonymous[[]{check_id}[]]*", said])
    assert "Traceback" not in result.stdout.str()
    assert NoIdentityHarness.__name__ in result.stdout.str()


def test_a_harness_error_outranks_a_failed_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(
        capsys,
        "run",
        "--harness",
        "tests.conformance.test_cli:broken_harness",
        "--harness",
        f"{HERE}:no_backend",
        "--check",
        "CAP-001",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 3
    assert out.splitlines()[-2] == "0 passed, 1 failed, 0 skipped, 1 harness error"


def test_matrix_and_preflight_say_a_harness_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = f"{HERE}:no_backend"
    code, out, err = cli(capsys, "matrix", "--harness", spec, "--report-dir", str(tmp_path))
    assert code == 3
    line = one_line_error(err)
    assert line.startswith(
        ERROR + "no-backend: no answers: harness error: new_backend() raised RuntimeError: "
        "no cluster config at all (at "
    )
    assert re.search(where_line("new_backend").removeprefix("at: ") + r"\)$", line)
    assert "no answers: harness error" in (tmp_path / "matrix.md").read_text()
    code, out, err = cli(capsys, "preflight", "--harness", spec, "--report-dir", str(tmp_path))
    assert (code, out) == (3, "")
    assert re.fullmatch(
        re.escape(
            ERROR + "harness error: harness no-backend could not make a backend: new_backend() "
            "raised RuntimeError: no cluster config at all (at "
        )
        + r"tests/conformance/test_cli_errors\.py:\d+ in new_backend\)",
        one_line_error(err),
    )


def test_the_plugin_reports_a_harness_error_as_an_error(pytester: pytest.Pytester) -> None:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        f"--dispatch-harness={HERE}:no_backend",
        *PLUGIN,
        "--dispatch-check=CAP-001",
        f"--junitxml={junit}",
        "-rE",
    )
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of no-backend::CAP-001*",
            "[[]CAP-001[]] harness error, not the adapter's: new_backend() raised RuntimeError: "
            "no cluster config at all",
            "0 passed, 0 failed, 0 skipped, 1 harness error",
            "ERROR no-backend::CAP-001 - [[]CAP-001[]] harness error, not the adapter's*",
        ]
    )
    out = result.stdout.str()
    assert "Traceback" not in out and "Failed:" not in out
    case = ET.parse(junit).getroot().find(".//testcase")
    assert case is not None and case.find("failure") is None
    error = case.find("error")
    assert error is not None
    assert "harness error, not the adapter's: new_backend() raised" in error.get("message", "")


def test_the_plugin_fails_a_session_whose_harness_does_not_close(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest(
        f"--dispatch-harness={HERE}:bad_close", *PLUGIN, "--dispatch-check=CAP-001"
    )
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.re_match_lines(
        [
            r"error: harness error: closing harness bad-close failed: OSError: cannot remove "
            r"the scratch directory \(at tests/conformance/test_cli_errors\.py:\d+ in close\)",
            r"1 passed, 0 failed, 0 skipped",
        ]
    )


# -- suite_for -------------------------------------------------------------------------------


def test_suite_for_says_a_failure_once_and_replays_what_was_passed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_mine="""
        from conformance import suite_for
        from tests.conformance.test_cli import BrokenHarness, broken_harness

        test_factory = suite_for(broken_harness, checks=["CAP-001"])
        test_class = suite_for(BrokenHarness, checks=["CAP-001"])
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "During handling of the above exception" not in out
    assert result.stdout.lines.count(f"[CAP-001] rule: {CAP.rule}") == 2  # once per test
    for named in ("broken_harness", "BrokenHarness"):
        assert (
            f"  replay: dispatch-conformance run --harness tests.conformance.test_cli:{named} "
            "--check CAP-001 --seed 0"
        ) in result.stdout.lines


def test_suite_for_reports_a_harness_error_as_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine=f"""
        from conformance import suite_for
        from {HERE} import bad_close, no_backend

        test_no_backend = suite_for(no_backend, checks=["CAP-001"])
        test_bad_close = suite_for(bad_close, checks=["CAP-001"])
        """
    )
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--junitxml={junit}")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_no_backend[[]CAP-001[]]*",
            "[[]CAP-001[]] harness error, not the adapter's: new_backend() raised RuntimeError: "
            "no cluster config at all",
            "error: harness error: closing harness bad-close failed: OSError: *",
        ]
    )
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["test_no_backend[CAP-001]"].find("error") is not None
    assert cases["test_no_backend[CAP-001]"].find("failure") is None
    props = {
        p.get("name"): p.get("value") for p in cases["test_no_backend[CAP-001]"].iter("property")
    }
    assert props == {
        "harness": "no-backend",
        "check": "CAP-001",
        "seed": "0",
        "rule": CAP.rule,
        "clause": CAP.clause,
    }
    assert cases["test_no_backend[CAP-001]"].get("classname") == "dispatch.conformance.no-backend"


def test_suite_for_takes_one_id_given_as_a_string_as_one_id() -> None:
    test = suite_for(TOY, checks="CAP-001")
    [marker] = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
    assert [c.id for c in marker.args[1]] == ["CAP-001"]


def test_the_plugin_takes_a_tier_in_capitals(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        f"--dispatch-harness={TOY}", *PLUGIN, "--dispatch-tier=SMOKE", "--collect-only", "-q"
    )
    collected = [line for line in result.stdout.lines if line.startswith("toy::")]
    assert collected == [f"toy::{c.id}" for c in checks("smoke")]


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"checks": [""]}, "suite_for check '' names no check"),
        ({"checks": ["NOPE-"]}, "no standard-tier check matches suite_for check NOPE-"),
        ({"tier": "huge"}, "tier 'huge' is not a tier (smoke, standard, full)"),
    ],
)
def test_suite_for_refuses_a_selection_that_runs_something_else(
    kwargs: dict[str, object], says: str
) -> None:
    with pytest.raises(SelectionError) as refused:
        suite_for(TOY, **kwargs)  # type: ignore[arg-type]
    assert str(refused.value).startswith(says)


# -- check selection -----------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "list"])
@pytest.mark.parametrize("empty", ["", " "])
def test_an_empty_check_id_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, empty: str
) -> None:
    harness = ["--harness", TOY, "--report-dir", str(tmp_path)] if command == "run" else []
    code, out, err = cli(capsys, command, *harness, "--check", "CAP-001", "--check", empty)
    assert (code, out) == (2, "")
    assert one_line_error(err) == ERROR + (
        f"--check {empty!r} names no check: give a check id or an id prefix such as IDENT- "
        "(see: dispatch-conformance list)"
    )


def test_check_ids_match_in_any_case(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = cli(
        capsys,
        "run",
        "--harness",
        TOY,
        "--check",
        "cap-001",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 0
    assert "  passed   CAP-001" in out
    code, out, _ = cli(capsys, "list", "--check", "Ident-")
    assert out.splitlines()[-1] == f"{len(checks('full', ['IDENT-']))} checks"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["--check", "CAP-001", "--check", "NOPE"],
            "no standard-tier check matches --check NOPE (see: dispatch-conformance list)",
        ),
        (
            ["--check", "CAP-001,CAP-002"],
            "no standard-tier check matches --check CAP-001,CAP-002; give the option once per "
            "id (see: dispatch-conformance list)",
        ),
    ],
)
def test_every_check_id_must_select_a_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], says: str
) -> None:
    code, out, err = cli(capsys, "run", "--harness", TOY, *argv, "--report-dir", str(tmp_path))
    assert (code, out) == (2, "")
    assert one_line_error(err) == ERROR + says


def test_a_check_of_a_higher_tier_names_the_tier_to_add(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    higher = [c for c in checks("full", ["STATE-"]) if c not in checks("smoke")]
    assert len(higher) > 3
    tiers = sorted({c.tier.value for c in higher}, key=["smoke", "standard", "full"].index)
    named = ", ".join(c.id for c in higher[:3])
    code, _, err = cli(
        capsys,
        "run",
        "--harness",
        TOY,
        "--tier",
        "smoke",
        "--check",
        "STATE-",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 2
    assert one_line_error(err) == ERROR + (
        f"no smoke-tier check matches --check STATE-: {named}, ... are {'/'.join(tiers)}-tier "
        f"(add --tier {tiers[-1]})"
    )


def test_the_plugin_refuses_an_empty_check_id_and_matches_in_any_case(
    pytester: pytest.Pytester,
) -> None:
    refused = pytester.runpytest(f"--dispatch-harness={TOY}", *PLUGIN, "--dispatch-check=")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert stderr(refused) == [
        "ERROR: --dispatch-check '' names no check: give a check id or an id prefix such as "
        "IDENT- (see: dispatch-conformance list)"
    ]
    ran = pytester.runpytest(f"--dispatch-harness={TOY}", *PLUGIN, "--dispatch-check=cap-001")
    ran.assert_outcomes(passed=1)


# -- the command line: one line, exit 2 ----------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "a command is required: run, list, harnesses, matrix or preflight (see: dispatch-conformance --help)"),
        (["run"], "the following arguments are required: --harness (see: dispatch-conformance run --help)"),
        (["matrix"], "the following arguments are required: --harness (see: dispatch-conformance matrix --help)"),
        (["run", "--harness", TOY, "--frob"], "unrecognized arguments: --frob (see: dispatch-conformance --help)"),
        (["run", "--harness", TOY, "--seed", "x"], "argument --seed: 'x' is not a whole number (see: dispatch-conformance run --help)"),
        (["run", "--harness", TOY, "--seed", "1.5"], "argument --seed: '1.5' is not a whole number (see: dispatch-conformance run --help)"),
        (["run", "--harness", TOY, "--seed", ""], "argument --seed: '' is not a whole number (see: dispatch-conformance run --help)"),
        (["run", "--harness", TOY, "--seed"], "argument --seed: expected one argument (see: dispatch-conformance run --help)"),
        (["preflight", "--harness", TOY, "--bound", "0"], "argument --bound: '0': give a number of seconds above 0 (see: dispatch-conformance preflight --help)"),
        (["preflight", "--harness", TOY, "--bound", "nan"], "argument --bound: 'nan': give a number of seconds above 0 (see: dispatch-conformance preflight --help)"),
        (["preflight", "--harness", TOY, "--bound", "soon"], "argument --bound: 'soon' is not a number of seconds (see: dispatch-conformance preflight --help)"),
        (["preflight", "--harness", TOY, "--probe-dir", ""], "argument --probe-dir: empty: give an absolute directory on the cluster (see: dispatch-conformance preflight --help)"),
        (["preflight", "--harness", TOY, "--probe-dir", "scratch"], "argument --probe-dir: 'scratch' is not an absolute path (the probe jobs run on the cluster's nodes: give one such as /scratch/me) (see: dispatch-conformance preflight --help)"),
        (["preflight", "--harness", TOY, "--harness", "memory-kubeflow"], "preflight probes one harness: --harness is given 2 times"),
    ],
)  # fmt: skip
def test_a_bad_command_line_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, "")
    assert one_line_error(err) == ERROR + says


@pytest.mark.parametrize("argv", [["frobnicate"], ["run", "--harness", TOY, "--tier", "huge"]])
def test_a_bad_choice_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, err = cli(capsys, *argv)
    line = one_line_error(err)
    assert code == 2
    assert re.fullmatch(
        re.escape(ERROR) + r"argument (COMMAND|--tier): invalid choice: '(frobnicate|huge)' "
        r"\(choose from .*\) \(see: dispatch-conformance( run)? --help\)",
        line,
    )


def test_a_tier_in_capitals_is_the_tier(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = cli(
        capsys, "run", "--harness", TOY, "--tier", "SMOKE", "--report-dir", str(tmp_path)
    )
    assert code in (0, 1)
    assert out.splitlines()[0].startswith(
        f"dispatch-conformance: {len(checks('smoke'))} smoke-tier checks"
    )


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("", "no harness named '' (known: "),
        (":", "harness ':' is not module:factory (e.g. mypkg.testing:harness)"),
        ("os:", "harness 'os:' is not module:factory (e.g. mypkg.testing:harness)"),
        (":harness", "harness ':harness' is not module:factory (e.g. mypkg.testing:harness)"),
        ("os:path", "'os:path' gave module, not a conformance.Harness"),
        (f"{HERE}:exits", f"harness '{HERE}:exits' failed to load: SystemExit: 0"),
        (
            f"{HERE}:needs_an_argument",
            f"harness factory '{HERE}:needs_an_argument' failed: TypeError: needs_an_argument() "
            "missing 1 required positional argument: 'cluster'",
        ),
    ],
)
def test_a_harness_that_cannot_be_loaded_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: str, says: str
) -> None:
    for command in ("run", "matrix", "preflight"):
        code, out, err = cli(capsys, command, "--harness", spec, "--report-dir", str(tmp_path))
        assert (code, out) == (2, ""), command
        assert one_line_error(err).startswith(ERROR + says), command


def test_a_harness_that_cannot_be_loaded_leaves_no_report_dir_behind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for command in ("run", "matrix", "preflight"):
        reports = tmp_path / "new" / "reports"
        code, out, err = cli(capsys, command, "--harness", "no-such", "--report-dir", str(reports))
        assert (code, out) == (2, ""), command
        assert one_line_error(err).startswith(ERROR + "no harness named 'no-such'"), command
        assert list(tmp_path.iterdir()) == [], command
    code, out, err = cli(capsys, "run", "--harness", "no-such", "--report-dir", "/" + "a" * 300)
    assert (code, out) == (2, "")
    assert one_line_error(err).endswith(": cannot create it (File name too long)")


def test_a_module_that_exits_on_import_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "exits_on_import_mod.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = cli(
        capsys, "run", "--harness", "exits_on_import_mod:h", "--report-dir", str(tmp_path / "r")
    )
    assert code == 2
    assert one_line_error(err) == (
        ERROR + "harness 'exits_on_import_mod:h' failed to load: SystemExit: 3"
    )


def test_an_internal_error_is_one_line_and_exit_70(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(args: object) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli_module, "command_list", broken)
    code, _, err = cli(capsys, "list")
    assert code == 70
    assert re.fullmatch(
        re.escape(ERROR + "internal error: ZeroDivisionError: division by zero (at ")
        + r"tests/conformance/test_cli_errors\.py:\d+ in broken; please report it\)",
        one_line_error(err),
    )


def test_help_documents_every_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ([], ["run"], ["matrix"], ["preflight"], ["list"]):
        code, out, _ = cli(capsys, *command, "--help")
        assert code == 0
        assert EXIT_STATUSES in out, command
    statuses = re.findall(r"^  (\d+) ", EXIT_STATUSES, re.M)
    assert statuses == ["0", "1", "2", "3", "70", "130", "141"]
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    documented = re.findall(r"^\| `(\d+)` \|", readme, re.M)
    assert documented == statuses


# -- preflight without a cluster: what is missing, in a site's words -----------------------


@pytest.mark.parametrize("ci", [False, True])
def test_preflight_without_slurm_says_what_is_missing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ci: bool,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no Slurm command at all
    if ci:
        monkeypatch.setenv("CI", "true")
    else:
        monkeypatch.delenv("CI", raising=False)
    code, out, err = cli(
        capsys, "preflight", "--harness", "slurm-local", "--report-dir", str(tmp_path / "r")
    )
    assert (code, out) == (2, "")
    assert one_line_error(err) == ERROR + (
        "preflight of slurm-local: no Slurm cluster to probe on this machine: sbatch is not on "
        "PATH (install the Slurm client commands, or run this on a login node of the cluster)"
    )
    assert "slurm-up" not in err and "inject" not in err


def test_preflight_when_slurmctld_does_not_answer_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "sbatch": "exit 1",  # never run: the harness only looks for it
        "scontrol": "echo 'slurm_load_ctl_conf error: Unable to contact slurm controller "
        "(connect failure)' >&2; exit 1",
    }
    for program, text in scripts.items():
        (bin_dir / program).write_text(f"#!/bin/sh\n{text}\n")
        (bin_dir / program).chmod(0o755)
    env = Path("/usr/bin/env") if Path("/usr/bin/env").exists() else Path("/bin/env")
    (bin_dir / "env").symlink_to(env)
    monkeypatch.setenv("PATH", str(bin_dir))  # the fakes and env only: no real Slurm
    monkeypatch.setenv("CI", "true")
    code, _, err = cli(
        capsys, "preflight", "--harness", "slurm-local", "--report-dir", str(tmp_path / "r")
    )
    assert code == 2
    assert one_line_error(err) == ERROR + (
        "preflight of slurm-local: no Slurm cluster answers on this machine: scontrol show "
        "config failed (slurm_load_ctl_conf error: Unable to contact slurm controller (connect "
        "failure)) (is slurmctld running, and is this host a login node of its cluster?)"
    )
