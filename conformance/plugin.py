"""The pytest face of the conformance kit (PYTEST_DONT_REWRITE).

Installed as the ``pytest11`` plugin ``dispatch_conformance``; ``-p conformance.plugin`` loads
it where entry points are not loaded. With ``--dispatch-harness`` it adds one item per
(harness, check), with ids like ``memory-slurm::IDENT-003``::

    pytest --dispatch-harness=memory-slurm --dispatch-harness=mypkg.testing:harness \\
        --dispatch-tier=full --dispatch-seed=7 --dispatch-report-dir=reports --junitxml=junit.xml

Without test paths on the command line only the checks run; name paths (``pytest tests
--dispatch-harness=...``) to run your own tests beside them. Without ``--dispatch-harness``
the plugin adds nothing and prints nothing.

A check that passes passes; one that fails fails with the check's message (the rule, what the
adapter did, the replay command) and no traceback; one that does not apply is skipped with its
reason (a need the harness lacks skips it before any backend is made, with the same reason the
CLI prints); a check whose ``xfail_on`` names the harness is a strict expected failure there:
one that fails is ``xfailed``, and one that passes fails. A
harness that raises (making a backend, in its fault injector, ...) is an *error* (``E``, a
JUnit ``<error>``): the check runs in the item's setup, so that pytest tells the harness's
error from the adapter's failure. A harness that fails to close is said in the summary and
makes the exit status 1. Every item carries ``harness``, ``check``, ``seed``, ``rule`` and
``clause`` as user properties, which ``--junitxml`` writes as ``<property>`` elements (they
travel with the report, so pytest-xdist keeps them). In ``--junitxml`` a check's testcase has
the ``classname`` of the CLI's junit.xml (``dispatch.conformance.<harness>``), and a failure's
``message`` (and pytest's one-line summary) says what the adapter did
(``[ID] adapter: ...``), as the CLI's does; the element's text is the whole message. A bad
option (a ``--dispatch-check`` that selects nothing, a ``--dispatch-report-dir`` that cannot be
written, a harness that cannot be loaded) is a one-line usage error before anything runs.

The suite can also live in an author's own test module::

    # tests/test_conformance.py
    from conformance import suite_for
    from mypkg.testing import MyHarness

    test_conformance = suite_for(MyHarness)            # a harness class or factory
    test_on_sim = suite_for("slurm-sim", tier="full")  # or a registered name / module:factory

``suite_for`` returns a test function parametrized over the checks (ids are check ids); keep
it out of ``conftest.py`` (pytest takes a conftest's names for hooks and fixtures, not tests).
With this plugin loaded (its entry point loads it) a harness error there is an error too;
without it (``-p no:dispatch_conformance``), a failure that says it is the harness's error.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest
from _pytest._code.code import ReprFileLocation, TerminalRepr

from conformance.tiers import TIERS

if TYPE_CHECKING:
    from _pytest._io import TerminalWriter

    from conformance.checks import Check, Result
    from conformance.harness import Harness
    from conformance.runner import Answers, Loaded

ENTRY_POINT = "dispatch_conformance"
RESULT_ATTRIBUTE = "dispatch_result"
JUNIT_ATTRIBUTE = "dispatch_junit"
"""A check's report carries ``{"classname": ..., "message": ...}`` under this attribute (it
travels to the pytest-xdist controller with the report), for :class:`JUnitNames`."""


# -- options ---------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dispatch", "dispatch conformance kit (conformance.plugin)")
    group.addoption(
        "--dispatch-harness",
        action="append",
        default=[],
        metavar="NAME|module:factory",
        help="run the conformance checks against this harness (repeatable): a name registered "
        "under dispatch.harnesses, or module:factory. Without test paths, only the checks run.",
    )
    group.addoption(
        "--dispatch-seed",
        type=int,
        default=0,
        metavar="N",
        help="the seed every check draws its randomness from (default 0)",
    )
    group.addoption(
        "--dispatch-report-dir",
        default=None,
        metavar="DIR",
        help="write report.json, junit.xml and matrix.md of the conformance run into DIR",
    )
    group.addoption(
        "--dispatch-tier",
        type=lambda text: text.strip().lower(),
        choices=TIERS,
        default="standard",
        help="how much to check: smoke < standard < full (default standard)",
    )
    group.addoption(
        "--dispatch-check",
        action="append",
        default=[],
        metavar="ID",
        help="run only this check id or id prefix, e.g. IDENT- (repeatable)",
    )
    group.addoption(
        "--dispatch-require",
        action="append",
        default=[],
        metavar="PROFILE",
        help="fail the session unless every harness passes this profile whole (core, "
        "extended/holds or holds, ...; all: every profile that applies; repeatable): a "
        "partial profile, with checks not run for a power the harness lacks, is not passed",
    )


def pytest_plugin_registered(plugin: object, plugin_name: str, manager: Any) -> None:
    """Registered under one name (``dispatch_conformance`` by its entry point, or
    ``conformance.plugin`` by ``-p`` or a conftest's ``pytest_plugins``), block the other, so
    that pytest does not load the same module a second time (pluggy refuses a second name)."""
    if plugin is not sys.modules[__name__]:
        return
    for alias in (ENTRY_POINT, __name__):
        if alias != plugin_name and not manager.has_plugin(alias):
            manager.set_blocked(alias)


# -- the run ---------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin(JUNIT_PLUGIN):
        config.pluginmanager.register(JUnitNames(config), JUNIT_PLUGIN)
    specs: list[str] = config.getoption("dispatch_harness") or []
    if not specs:
        return
    from conformance.checks import SelectionError, select
    from conformance.profiles import REQUIRE_ALL, profile_named
    from conformance.reports import RUN_REPORTS, ReportDirError, prepare_report_dir
    from conformance.runner import HarnessError, load_all

    tier: str = config.getoption("dispatch_tier")
    selection: list[str] = config.getoption("dispatch_check") or []
    required: list[str] = []
    for name in config.getoption("dispatch_require") or []:
        try:
            required.append(name if name == REQUIRE_ALL else profile_named(name).name)
        except KeyError as error:
            raise pytest.UsageError(f"--dispatch-require: {error.args[0]}") from None
    report_dir: str | None = config.getoption("dispatch_report_dir")
    worker = hasattr(config, "workerinput")
    try:
        selected = select(tier, selection, option="--dispatch-check", tier_option="--dispatch-tier")
        if report_dir is not None and not worker:
            prepare_report_dir(report_dir, RUN_REPORTS, option="--dispatch-report-dir")
        loaded = load_all(specs)
    except (SelectionError, ReportDirError, HarnessError) as error:
        raise pytest.UsageError(str(error)) from None
    run = ConformanceRun(
        loaded=loaded,
        selected=selected,
        seed=config.getoption("dispatch_seed"),
        tier=tier,
        selection=selection,
        report_dir=report_dir,
        only_checks=config.args_source is not pytest.Config.ArgsSource.ARGS,
        worker=worker,
        required=list(dict.fromkeys(required)),
    )
    config.stash[_RUN] = run
    config.pluginmanager.register(run, RUN_PLUGIN)


def pytest_unconfigure(config: pytest.Config) -> None:
    names = config.pluginmanager.get_plugin(JUNIT_PLUGIN)
    if names is not None:
        config.pluginmanager.unregister(names, JUNIT_PLUGIN)
    run = config.stash.get(_RUN, None)
    if run is not None:
        from conformance.runner import close_all

        config.pluginmanager.unregister(run, RUN_PLUGIN)
        close_all(run.loaded)


@dataclass(eq=False)
class ConformanceRun:
    """The conformance run of one pytest session: registered as a plugin only when
    ``--dispatch-harness`` is given, so a session without it sees none of these hooks."""

    loaded: list[Loaded]
    selected: list[Check]
    seed: int
    tier: str
    selection: list[str]
    report_dir: str | None
    only_checks: bool
    worker: bool
    required: list[str] = field(default_factory=list)
    results: list[dict[str, object]] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    coverage: list[str] = field(default_factory=list)
    """The coverage lines and the verdict line, said in the summary."""

    def pytest_report_header(self) -> list[str]:
        labels = ", ".join(h.label for h in self.loaded)
        lines = [
            f"dispatch conformance: {labels}; {len(self.selected)} {self.tier}-tier "
            f"check{'s' if len(self.selected) != 1 else ''} each, seed {self.seed}"
        ]
        if self.only_checks:
            lines.append("dispatch conformance: only the checks run (name test paths to add yours)")
        return lines

    def pytest_ignore_collect(self) -> bool | None:
        return True if self.only_checks else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, items: list[pytest.Item]
    ) -> None:
        for loaded in self.loaded:
            collector = HarnessCollector.from_parent(
                session, name=loaded.label, nodeid=loaded.label, run=self, loaded=loaded
            )
            collected = collector.collect()
            session.ihook.pytest_collectreport(
                report=pytest.CollectReport(collector.nodeid, "passed", None, list(collected))
            )
            items.extend(i for i in collected if isinstance(i, pytest.Item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # The phase the outcome was settled in: setup for a harness error, else call. An
        # attribute of the report travels to the pytest-xdist controller with it.
        settled = "setup" if isinstance(item, ConformanceItem) and item.harness_error else "call"
        if isinstance(item, ConformanceItem) and item.result is not None and call.when == settled:
            vars(report)[RESULT_ATTRIBUTE] = item.result.as_dict()
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = vars(report).get(RESULT_ATTRIBUTE)
        if isinstance(result, dict):
            self.results.append(result)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the reports (the controller, not a pytest-xdist worker), then close the
        harnesses; a report that cannot be written or a harness that fails to close is said in
        the summary and fails the session."""
        from conformance.runner import close_all

        try:
            if not self.worker:
                self._judge()
        finally:
            self.problems += close_all(self.loaded)
        if self.problems and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _judge(self) -> None:
        """The profiles each harness covered (a required one not passed whole is a problem
        of the session), then the reports."""
        from conformance.profiles import coverage_line, judge_profiles, unmet, verdict_line
        from conformance.reports import verdict
        from conformance.runner import capability_answers

        answers = [capability_answers(h) for h in self.loaded]
        self.problems += [f"{a.label}: {a.note}" for a in answers if a.blame == "harness"]
        from conformance.checks import checks

        judged = judge_profiles(self.results, answers, [c.id for c in checks(self.tier)])
        missing = unmet(judged, self.required)
        self.coverage = [coverage_line(label, profiles) for label, profiles in judged.items()]
        for label, found, name in missing:
            said = found.words() if found is not None else f"{name}: no check of it ran"
            self.problems.append(f"required profile not passed: {label}: {said}")
        outcome = verdict(self.results, answers, self.required, self.tier)
        self.coverage.append(verdict_line(outcome, judged, missing))
        if self.report_dir is not None:
            self._write_reports(answers)

    def _write_reports(self, answers: list[Answers]) -> None:
        from conformance.reports import RunInfo, write_reports

        assert self.report_dir is not None
        info = RunInfo(
            runner="pytest",
            harnesses=[(h.label, h.spec) for h in self.loaded],
            seed=self.seed,
            tier=self.tier,
            selection=self.selection,
            identities={h.label: h.identity() for h in self.loaded},
            required=self.required,
        )
        try:
            self.written = write_reports(self.report_dir, self.results, answers, info)
        except OSError as error:
            why = error.strerror or str(error)
            self.problems.append(
                f"cannot write the reports to --dispatch-report-dir {self.report_dir}: {why}"
            )

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.worker:
            return
        from conformance.reports import closing_line

        terminalreporter.write_sep("-", "dispatch conformance")
        if self.written:
            terminalreporter.write_line("reports: " + ", ".join(str(p) for p in self.written))
        for problem in self.problems:
            terminalreporter.write_line(f"error: {problem}", red=True)
        terminalreporter.write_line(closing_line(self.results))
        for line in self.coverage:
            terminalreporter.write_line(line)


_RUN = pytest.StashKey[ConformanceRun]()
RUN_PLUGIN = "dispatch-conformance-run"
JUNIT_PLUGIN = "dispatch-conformance-junit"


class JUnitNames:
    """What pytest's ``--junitxml`` writes of a check, made to agree with the CLI's junit.xml:
    the testcase's ``classname`` (``reports.junit_classname``), set on pytest's own reporter
    of the testcase before it records the report. Under pytest-xdist a failure's text arrives
    without its one-line summary; it is given back, so that the ``message`` is
    ``reports.junit_message`` there too. Reports without :data:`JUNIT_ATTRIBUTE` (not a
    check's) are left alone."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        junit = vars(report).get(JUNIT_ATTRIBUTE)
        if not isinstance(junit, dict):
            return
        message = junit.get("message")
        if report.failed and isinstance(report.longrepr, str) and isinstance(message, str):
            path, line, _ = report.location
            report.longrepr = FailureRepr(report.longrepr, path, (line or 0) + 1, message)
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        classname = junit.get("classname")
        if xml is not None and isinstance(classname, str) and report.when != "teardown":
            xml.node_reporter(report).add_attribute("classname", classname)


_JUNIT = pytest.StashKey[dict[str, str]]()
"""An item's :data:`JUNIT_ATTRIBUTE`: its classname, and the message once it failed or erred."""


def _junit(item: pytest.Item, loaded: Loaded, result: Result | None = None) -> None:
    """Note ``item``'s JUnit classname (and, with its ``result``, the failure's message)."""
    from conformance.reports import junit_classname, junit_message

    junit = item.stash.setdefault(_JUNIT, {})
    junit["classname"] = junit_classname(loaded.label)
    if result is not None:
        junit["message"] = junit_message(result)


class HarnessCollector(pytest.Collector):
    """The checks of one harness."""

    def __init__(self, *, run: ConformanceRun, loaded: Loaded, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.loaded = loaded

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        return [
            ConformanceItem.from_parent(
                self, name=check.id, check=check, loaded=self.loaded, seed=self.run.seed
            )
            for check in self.run.selected
        ]


class ConformanceFailure(Exception):
    """A check failed; the message is the check's own (rule, what the adapter did, replay)."""


class ConformanceItem(pytest.Item):
    """One check on one harness. The check runs in :meth:`setup`, so that a harness error is
    pytest's error (the setup's); :meth:`runtest` settles its outcome."""

    def __init__(self, *, check: Check, loaded: Loaded, seed: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check
        self.loaded = loaded
        self.seed = seed
        self.result: Result | None = None
        self.harness_error = False
        self.user_properties.extend(properties(loaded, check, seed))
        _junit(self, loaded)

    def setup(self) -> None:
        self.result = self.loaded.run(self.check, self.seed)
        _junit(self, self.loaded, self.result)
        self.harness_error = errs(self.result)
        if self.harness_error:
            harness_error(self, self.result)

    def runtest(self) -> None:
        assert self.result is not None
        report_outcome(self.result, self.loaded.xfail(self.check))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, ConformanceFailure):
            path, line, _ = self.reportinfo()
            summary = self.stash.get(_JUNIT, {}).get("message")
            return FailureRepr(str(excinfo.value), str(path), (line or 0) + 1, summary)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return (*_source(self.check), f"{self.loaded.label}::{self.check.id}")


def _source(check: Check) -> tuple[str, int]:
    try:
        path = inspect.getsourcefile(check.func) or "<unknown>"
        _, line = inspect.getsourcelines(check.func)
    except (OSError, TypeError):
        return "<unknown>", 0
    return path, max(line - 1, 0)


def properties(loaded: Loaded, check: Check, seed: int) -> list[tuple[str, object]]:
    """A check's item's user properties (JUnit ``<property>`` elements), as the CLI's
    junit.xml gives them: ``harness``, ``check``, ``seed``, ``rule``, ``clause``."""
    return [
        ("harness", loaded.label),
        ("check", check.id),
        ("seed", str(seed)),
        ("rule", check.rule),
        ("clause", check.clause),
    ]


class FailureRepr(TerminalRepr):
    """A failed check as pytest shows it: the check's message, no Python traceback.
    ``summary`` is its one line (pytest's short summary, JUnit's ``message``): by default,
    the message's first line."""

    def __init__(self, message: str, path: str, line: int, summary: str | None = None) -> None:
        self.message = message
        first = message.splitlines()[0] if message else "failed"
        self.reprcrash = ReprFileLocation(path, line, summary or first)

    def toterminal(self, tw: TerminalWriter) -> None:
        for line in self.message.splitlines():
            tw.line(line, red=True, bold=line.startswith("["))


def errs(result: Result) -> bool:
    """Whether the harness erred."""
    from conformance.checks import Outcome

    return result.outcome is Outcome.ERROR


_HARNESS_ERROR = pytest.StashKey[str]()


def harness_error(item: pytest.Item, result: Result) -> NoReturn:
    """Fail ``item``'s setup with the harness error: pytest reports an error, which
    :func:`pytest_runtest_makereport` shows as the message alone."""
    item.stash[_HARNESS_ERROR] = result.reason
    pytest.fail(result.reason, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A harness error is shown as its message (the first line in summaries and in JUnit's
    ``<error message>``), as a check's failure is; a ``suite_for`` check's failure is shown
    as a check item's is (its message, summarised by what the adapter did). A check's report
    carries :data:`JUNIT_ATTRIBUTE` for :class:`JUnitNames`."""
    report = yield
    reason = item.stash.get(_HARNESS_ERROR, None)
    junit = item.stash.get(_JUNIT, None)
    if reason is not None and call.when == "setup" and report.failed:
        path, line, _ = item.reportinfo()
        summary = junit.get("message") if junit else None
        report.longrepr = FailureRepr(reason, str(path), (line or 0) + 1, summary)
    result = item.stash.get(_SUITE_RESULT, None)
    if result is not None and call.when == "call" and report.failed and junit:
        path, line, _ = item.reportinfo()
        said = str(report.longrepr)
        message = result.reason if result.reason in said else said
        report.longrepr = FailureRepr(message, str(path), (line or 0) + 1, junit.get("message"))
    if junit is not None:
        vars(report)[JUNIT_ATTRIBUTE] = dict(junit)
    return report


def report_outcome(result: Result, xfail: str | None = None) -> None:
    """Turn a check's result into pytest's outcome: return (passed), skip, xfail, or raise
    :class:`ConformanceFailure` (a failure, or a harness error settled in the test itself).
    ``xfail`` is the reason the check is a strict expected failure on the result's harness
    (``Loaded.xfail``): the runner reports such a failure as skipped with the reason
    ``expected failure: <xfail>``, which is pytest's xfailed; a pass there is already a
    failure."""
    from conformance.checks import Outcome

    if result.outcome is Outcome.PASSED:
        return
    if result.outcome is Outcome.SKIPPED:
        if xfail is not None and result.reason.startswith("expected failure: "):
            pytest.xfail(result.reason)
        _skip(result.reason)
    raise ConformanceFailure(result.reason)


def _skip(reason: str) -> NoReturn:
    # The item's location (the check's source), not this line, in pytest's skip summary.
    raise pytest.skip.Exception(reason, _use_item_location=True)


# -- the suite in an author's own test module ------------------------------------------------


def suite_for(
    harness: Harness[Any] | Callable[[], Harness[Any]] | str,
    *,
    tier: str = "standard",
    seed: int = 0,
    checks: Sequence[str] | None = None,
) -> Callable[..., None]:
    """A test function running every check of ``tier`` (or those ``checks`` names by id or
    prefix) against ``harness``: a Harness, a callable returning one (a class or factory,
    called once, on the first check), or a name or ``module:factory`` as on the command line.
    Assign it to a ``test_`` name in a test module; its parameters are the check ids. A
    replay command names the harness as given: the name, or ``module:factory`` of the class or
    factory."""
    from conformance.checks import select

    # One id given as a string is one id, not a prefix per character.
    ids = [checks] if isinstance(checks, str) else list(checks or ())
    selected = select(tier, ids, option="suite_for check", tier_option="tier")
    suite = _Suite(harness, seed)

    @pytest.mark.parametrize("dispatch_check", selected, ids=[c.id for c in selected])
    def test_dispatch_conformance(dispatch_check: Check, request: pytest.FixtureRequest) -> None:
        from conformance.runner import HarnessError

        try:
            loaded = suite.loaded(request.config)
        except HarnessError as refused:
            message = str(refused)
        else:
            result = request.node.stash.get(_SUITE_RESULT, None)
            if result is None:  # this plugin is not loaded: the check runs here
                request.node.user_properties.extend(suite.properties(loaded, dispatch_check))
                result = loaded.run(dispatch_check, seed)
            try:
                report_outcome(result, loaded.xfail(dispatch_check))
            except ConformanceFailure as failure:
                message = str(failure)
            else:
                return
        pytest.fail(message, pytrace=False)  # outside the except: said once, not chained

    setattr(test_dispatch_conformance, _SUITE_ATTRIBUTE, suite)
    test_dispatch_conformance.__doc__ = f"The dispatch conformance checks ({tier} tier)."
    return test_dispatch_conformance


_SUITE_ATTRIBUTE = "dispatch_suite"
_SUITE_RESULT = pytest.StashKey["Result"]()


class _Suite:
    """The harness of one ``suite_for`` test: made on its first check, closed at the end."""

    def __init__(self, harness: Harness[Any] | Callable[[], Harness[Any]] | str, seed: int) -> None:
        self.harness = harness
        self.seed = seed
        self.made: Loaded | None = None
        self.refused: str | None = None

    def loaded(self, config: pytest.Config) -> Loaded:
        """The harness, made on the first call; a harness that cannot be made or breaks the
        contract (``runner.contract_error``) raises the same one-line ``HarnessError`` on
        every call (each check says it), and is made only once."""
        from conformance.runner import HarnessError

        if self.refused is not None:
            raise HarnessError(self.refused)
        if self.made is None:
            try:
                self.made = self._make()
            except HarnessError as error:
                self.refused = str(error)
                raise
            config.add_cleanup(self.last_close)
            _suites(config).append(self)
        return self.made

    def _make(self) -> Loaded:
        from conformance.harness import Harness as HarnessType
        from conformance.runner import HarnessError, Loaded, contract_error, load, one_line

        given = self.harness
        if isinstance(given, str):
            return Loaded(given, given, load(given))
        named = given if not isinstance(given, HarnessType) else type(given)
        spec = f"{named.__module__}:{named.__qualname__}"
        try:
            value = given if isinstance(given, HarnessType) else given()
        except (Exception, SystemExit) as error:
            raise HarnessError(
                one_line(f"harness factory {spec!r} failed: {type(error).__name__}: {error}")
            ) from None
        if not isinstance(value, HarnessType):
            raise HarnessError(f"{spec!r} gave {type(value).__name__}, not a conformance.Harness")
        problem = contract_error(value)
        if problem:
            raise HarnessError(one_line(f"harness {spec!r} {problem}"))
        name = getattr(value, "name", "")
        label = name if isinstance(name, str) and name and name != "unnamed" else spec
        return Loaded(spec, label, value)

    def properties(self, loaded: Loaded, check: Check) -> list[tuple[str, object]]:
        """The item's ``harness``, ``check``, ``seed``, ``rule`` and ``clause`` (JUnit
        ``<property>`` elements)."""
        return properties(loaded, check, self.seed)

    def close(self) -> str:
        """Close the harness (once); the complaint when closing failed, else ''."""
        return self.made.close() if self.made is not None else ""

    def last_close(self) -> None:
        # Without this plugin's session hooks, the harness is closed here, at the very end:
        # a failure can only be said on stderr.
        problem = self.close()
        if problem:
            print(f"dispatch conformance: error: {problem}", file=sys.stderr, flush=True)


_SUITES = pytest.StashKey[list[_Suite]]()


def _suites(config: pytest.Config) -> list[_Suite]:
    return config.stash.setdefault(_SUITES, [])


def _suite_of(item: pytest.Item) -> _Suite | None:
    suite = getattr(getattr(item, "function", None), _SUITE_ATTRIBUTE, None)
    return suite if isinstance(suite, _Suite) else None


@pytest.hookimpl(trylast=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``suite_for`` test's check runs in its setup (after its fixtures'), so that a harness
    error is pytest's error; the test itself settles the outcome."""
    suite = _suite_of(item)
    callspec = getattr(item, "callspec", None)
    if suite is None or callspec is None:
        return
    check: Check = callspec.params["dispatch_check"]
    from conformance.runner import HarnessError

    try:
        loaded = suite.loaded(item.config)
    except HarnessError as refused:
        message = str(refused)
        item.stash[_HARNESS_ERROR] = message
        pytest.fail(message, pytrace=False)
    item.user_properties.extend(suite.properties(loaded, check))
    result = loaded.run(check, suite.seed)
    item.stash[_SUITE_RESULT] = result
    _junit(item, loaded, result)
    if errs(result):
        harness_error(item, result)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Close the harnesses of ``suite_for`` tests; one that fails to close fails the session."""
    problems = [p for p in (s.close() for s in _suites(session.config)) if p]
    if problems:
        session.config.stash[_SUITE_PROBLEMS] = problems
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


_SUITE_PROBLEMS = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for problem in terminalreporter.config.stash.get(_SUITE_PROBLEMS, []):
        terminalreporter.write_line(f"error: {problem}", red=True)


__all__ = ["ConformanceItem", "suite_for"]
