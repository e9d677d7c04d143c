"""The shared steps' judgement of a write through a stale ref: the occupant's only change
allowed is the one a real scheduler makes on its own (it starts a queued object), and no write
can make that change."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.steps import started_meanwhile
from dispatch_core import State

STATES = st.sampled_from(list(State))
RESTARTS = st.sampled_from(["unknown", "0", "1", "2"])
HOLDS = st.sampled_from(["none", "1", "7"])


def shown(state: State, restarts: str, hold: str) -> str:
    return f"{state}, restart count {restarts}, hold {hold}"


def test_a_queued_object_the_scheduler_started_is_not_a_write_s_doing() -> None:
    before = shown(State.QUEUED, "0", "none")
    assert started_meanwhile(before, shown(State.RUNNING, "0", "none"))
    assert not started_meanwhile(before, shown(State.HELD, "0", "1"))  # a stale hold landed
    assert not started_meanwhile(before, shown(State.RUNNING, "1", "none"))  # requeued and rerun
    assert not started_meanwhile(shown(State.HELD, "0", "1"), shown(State.RUNNING, "0", "none"))
    assert not started_meanwhile(None, before) and not started_meanwhile(before, None)


@given(STATES, RESTARTS, HOLDS, STATES, RESTARTS, HOLDS)
def test_only_queued_to_running_with_all_else_kept_is_allowed(
    s1: State, r1: str, h1: str, s2: State, r2: str, h2: str
) -> None:
    allowed = started_meanwhile(shown(s1, r1, h1), shown(s2, r2, h2))
    assert allowed == ((s1, s2) == (State.QUEUED, State.RUNNING) and (r1, h1) == (r2, h2))
