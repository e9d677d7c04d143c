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
reason; a strict expected failure that fails is ``xfailed``, and one that passes fails. Every
item carries ``harness``, ``check`` and ``seed`` as user properties, which ``--junitxml``
writes as ``<property>`` elements (they travel with the report, so pytest-xdist keeps them).

The suite can also live in an author's own test module::

    # tests/test_conformance.py
    from conformance import suite_for
    from mypkg.testing import MyHarness

    test_conformance = suite_for(MyHarness)            # a harness class or factory
    test_on_sim = suite_for("slurm-sim", tier="full")  # or a registered name / module:factory

``suite_for`` returns a test function parametrized over the checks (ids are check ids); keep
it out of ``conftest.py`` (pytest takes a conftest's names for hooks and fixtures, not tests).
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

if TYPE_CHECKING:
    from _pytest._io import TerminalWriter

    from conformance.checks import Check, Result
    from conformance.harness import Harness
    from conformance.runner import Loaded

ENTRY_POINT = "dispatch_conformance"
TIERS = ("smoke", "standard", "full")
RESULT_ATTRIBUTE = "dispatch_result"


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
    specs: list[str] = config.getoption("dispatch_harness") or []
    if not specs:
        return
    from conformance.checks import checks
    from conformance.runner import HarnessError, load_all

    tier: str = config.getoption("dispatch_tier")
    selection: list[str] = config.getoption("dispatch_check") or []
    selected = checks(tier, selection or None)
    if not selected:
        raise pytest.UsageError(
            f"no {tier}-tier check matches --dispatch-check {' '.join(selection)} "
            "(see: dispatch-conformance list)"
        )
    try:
        loaded = load_all(specs)
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from None
    run = ConformanceRun(
        loaded=loaded,
        selected=selected,
        seed=config.getoption("dispatch_seed"),
        tier=tier,
        selection=selection,
        report_dir=config.getoption("dispatch_report_dir"),
        only_checks=config.args_source is not pytest.Config.ArgsSource.ARGS,
        worker=hasattr(config, "workerinput"),
    )
    config.stash[_RUN] = run
    config.pluginmanager.register(run, RUN_PLUGIN)


def pytest_unconfigure(config: pytest.Config) -> None:
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
    results: list[dict[str, object]] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)

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
        if isinstance(item, ConformanceItem) and call.when == "call" and item.result is not None:
            # An attribute of the report travels to the pytest-xdist controller with it.
            vars(report)[RESULT_ATTRIBUTE] = item.result.as_dict()
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = vars(report).get(RESULT_ATTRIBUTE)
        if report.when == "call" and isinstance(result, dict):
            self.results.append(result)

    def pytest_sessionfinish(self) -> None:
        if self.report_dir is None or self.worker:
            return  # a pytest-xdist worker: the controller writes the reports
        from conformance.reports import RunInfo, write_reports
        from conformance.runner import capability_answers

        info = RunInfo(
            runner="pytest",
            harnesses=[(h.label, h.spec) for h in self.loaded],
            seed=self.seed,
            tier=self.tier,
            selection=self.selection,
        )
        answers = [capability_answers(h) for h in self.loaded]
        self.written = write_reports(self.report_dir, self.results, answers, info)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.worker:
            return
        from conformance.reports import closing_line

        terminalreporter.write_sep("-", "dispatch conformance")
        if self.written:
            terminalreporter.write_line("reports: " + ", ".join(str(p) for p in self.written))
        terminalreporter.write_line(closing_line(self.results))


_RUN = pytest.StashKey[ConformanceRun]()
RUN_PLUGIN = "dispatch-conformance-run"


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
    """One check on one harness."""

    def __init__(self, *, check: Check, loaded: Loaded, seed: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check
        self.loaded = loaded
        self.seed = seed
        self.result: Result | None = None
        self.user_properties.extend(
            [("harness", loaded.label), ("check", check.id), ("seed", str(seed))]
        )

    def runtest(self) -> None:
        self.result = self.loaded.run(self.check, self.seed)
        settle(self.result)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, ConformanceFailure):
            path, line, _ = self.reportinfo()
            return FailureRepr(str(excinfo.value), str(path), (line or 0) + 1)
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


class FailureRepr(TerminalRepr):
    """A failed check as pytest shows it: the check's message, no Python traceback."""

    def __init__(self, message: str, path: str, line: int) -> None:
        self.message = message
        first = message.splitlines()[0] if message else "failed"
        self.reprcrash = ReprFileLocation(path, line, first)

    def toterminal(self, tw: TerminalWriter) -> None:
        for line in self.message.splitlines():
            tw.line(line, red=True, bold=line.startswith("["))


def settle(result: Result) -> None:
    """Turn a check's result into pytest's outcome: return (passed), skip, xfail, or raise
    :class:`ConformanceFailure`."""
    from conformance.checks import Outcome

    if result.outcome is Outcome.PASSED:
        return
    if result.outcome is Outcome.SKIPPED:
        if result.check.xfail is not None and result.reason.startswith("expected failure"):
            pytest.xfail(result.reason)
        _skip(result.reason)
    raise ConformanceFailure(result.reason)


def _skip(reason: str) -> NoReturn:
    # The item's location (the check's source), not this line, in pytest's skip summary.
    raise pytest.skip.Exception(reason, _use_item_location=True)


# -- the suite in an author's own test module ------------------------------------------------


def suite_for(
    harness: Harness | Callable[[], Harness] | str,
    *,
    tier: str = "standard",
    seed: int = 0,
    checks: Sequence[str] | None = None,
) -> Callable[..., None]:
    """A test function running every check of ``tier`` (or those ``checks`` names by id or
    prefix) against ``harness``: a Harness, a callable returning one (a class or factory,
    called once, on the first check), or a name or ``module:factory`` as on the command line.
    Assign it to a ``test_`` name in a test module; its parameters are the check ids."""
    from conformance.checks import checks as registered

    selected = registered(tier, checks)
    made: list[Loaded] = []

    def harness_for(config: pytest.Config) -> Loaded:
        if not made:
            from conformance.harness import Harness as HarnessType
            from conformance.runner import Loaded, load

            if isinstance(harness, str):
                value, spec = load(harness), harness
            else:
                value = harness if isinstance(harness, HarnessType) else harness()
                spec = f"{type(value).__module__}:{type(value).__qualname__}"
            label = harness if isinstance(harness, str) else value.name
            made.append(Loaded(spec, label, value))
            config.add_cleanup(value.close)
        return made[0]

    @pytest.mark.parametrize("dispatch_check", selected, ids=[c.id for c in selected])
    def test_dispatch_conformance(
        dispatch_check: Check,
        record_property: Callable[[str, object], None],
        pytestconfig: pytest.Config,
    ) -> None:
        loaded = harness_for(pytestconfig)
        record_property("harness", loaded.label)
        record_property("check", dispatch_check.id)
        record_property("seed", str(seed))
        result = loaded.run(dispatch_check, seed)
        try:
            settle(result)
        except ConformanceFailure as failure:
            pytest.fail(str(failure), pytrace=False)

    test_dispatch_conformance.__doc__ = f"The dispatch conformance checks ({tier} tier)."
    return test_dispatch_conformance


__all__ = ["ConformanceItem", "suite_for"]
