"""What the reports a CI reads say: the STATE-004 message that says what find did with a
look-alike."""

from __future__ import annotations

import re

import conformance.suites  # noqa: F401  (registers every check)
from adapters.memory.testing.broken import find_drops_foreign, lenient_comment_parser
from conformance.checks import REGISTRY, Outcome, run_check

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
    assert f"  adapter: {said}\n" in result.reason


def test_state_004_says_dropped_only_when_find_left_it_out() -> None:
    result = run_check(REGISTRY["STATE-004"], find_drops_foreign(), 0)
    assert result.outcome is Outcome.FAILED
    said = result.adapter.splitlines()[0]
    assert re.fullmatch(
        r"find\(A\) dropped (\S+); it is a look-alike \(.*\): keyed exactly as the job, it must "
        r"be reported foreign, not dropped",
        said,
    ), said
