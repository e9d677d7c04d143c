"""The pytest plugin mutmut runs the conformance checks with (``-p tools.mutation.plugin``).

mutmut names the tests that reach a mutated function by their node ids and passes them to
pytest as positional arguments. A conformance item is not a file (``slurm-sim::IDENT-003``),
so pytest would refuse it as a path; this plugin takes such arguments off the command line
before pytest reads them (so that only the checks run, as without arguments) and keeps exactly
those items, in the order given (mutmut orders them fastest first). It also drops the
``--dispatch-harness`` options of the harnesses none of them is on (loading a harness takes
time, and mutmut starts pytest once per mutant).

During mutmut's stats run it also adds each item's *setup* time to mutmut's durations: a check
runs in its item's setup (see :mod:`conformance.plugin`), and mutmut counts only the call
phase, so without it every check would seem to take no time (and every timeout be the
constant alone).

``--mutation-leave-out PREFIX`` leaves out the checks whose id starts with PREFIX: the mutation
run leaves out the stateful suite (``STATE``), which costs most of a surviving mutant's run and
kills almost nothing the other checks miss (docs/decisions.md, "The stateful suite in the
mutation run"), so the kill rate it reports is a lower bound of the standard tier's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator
from typing import Final

import pytest

CONFORMANCE_ITEM: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*::[A-Z]+-[0-9]+")
"""A conformance item's node id: ``<harness label>::<check id>``."""

_SELECTED = pytest.StashKey[list[str]]()


HARNESS_OPTION: Final = "--dispatch-harness="


def selected_items(args: list[str]) -> tuple[list[str], list[str]]:
    """Split command-line arguments into conformance node ids (that are not paths) and the
    rest, less the ``--dispatch-harness=NAME`` options of harnesses no node id is on."""
    picked = [a for a in args if CONFORMANCE_ITEM.fullmatch(a) and not os.path.exists(a)]
    rest = [a for a in args if a not in picked]
    if picked:
        harnesses = {nodeid.rpartition("::")[0] for nodeid in picked}
        given = {a.removeprefix(HARNESS_OPTION) for a in rest if a.startswith(HARNESS_OPTION)}
        if harnesses <= given:
            rest = [
                a
                for a in rest
                if not a.startswith(HARNESS_OPTION) or a.removeprefix(HARNESS_OPTION) in harnesses
            ]
    return picked, rest


LEAVE_OUT_OPTION: Final = "--mutation-leave-out"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        LEAVE_OUT_OPTION,
        action="append",
        default=[],
        metavar="PREFIX",
        help="leave out the conformance checks whose id starts with PREFIX (repeatable)",
    )


def left_out(nodeid: str, prefixes: list[str]) -> bool:
    """Whether the conformance item ``nodeid`` is one of the checks ``prefixes`` leave out."""
    check = nodeid.rpartition("::")[2]
    return "::" in nodeid and any(check.startswith(prefix) for prefix in prefixes)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    picked, rest = selected_items(args)
    if picked:
        args[:] = rest
        early_config.stash[_SELECTED] = picked


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    prefixes: list[str] = config.getoption(LEAVE_OUT_OPTION)
    picked = config.stash.get(_SELECTED, None)
    if picked is None and not prefixes:
        return
    order = {nodeid: i for i, nodeid in enumerate(picked or [i.nodeid for i in items])}
    kept = sorted(
        (i for i in items if i.nodeid in order and not left_out(i.nodeid, prefixes)),
        key=lambda i: order[i.nodeid],
    )
    kept_ids = {id(i) for i in kept}
    dropped = [i for i in items if id(i) not in kept_ids]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "setup" and os.environ.get("MUTANT_UNDER_TEST") == "stats":
        from mutmut.state import state

        state().duration_by_test[item.nodeid] += call.duration
    return report
