"""squeue's sort, as glibc's merge sort gives it (``_msort``), and the fast paths that stand in
for it: the same order for every list, a start time of 0 (the comparator's inconsistency)
included."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from simulators.slurm.commands import squeue


@dataclass(frozen=True)
class View:
    """What the start-time comparator reads of a job's view (and a tag to tell views apart)."""

    tag: int
    start_time: int
    base: str
    now: int = 100
    flags: frozenset[str] = field(default_factory=frozenset)
    job_id: int = 0


views = st.lists(
    st.builds(
        View,
        tag=st.integers(),
        start_time=st.sampled_from([0, 0, 50, 99, 100, 101, 150]),
        base=st.sampled_from(["PENDING", "RUNNING"]),
        flags=st.sampled_from([frozenset(), frozenset({"REQUEUED"})]),
    ),
    max_size=40,
).map(lambda vs: [View(i, v.start_time, v.base, flags=v.flags) for i, v in enumerate(vs)])


@given(views, st.booleans())
def test_the_start_time_sort_is_the_merge_sort_s_order(items: list[Any], reverse: bool) -> None:
    expected = squeue._msort(items, squeue._by_start(reverse))
    assert squeue._sorted_by_start(items, reverse) == expected


@given(st.lists(st.integers(min_value=0, max_value=5), max_size=40), st.booleans())
def test_a_key_sort_is_the_merge_sort_s_order(keys: list[int], reverse: bool) -> None:
    items: list[Any] = [View(i, 0, "PENDING", job_id=k) for i, k in enumerate(keys)]
    key = lambda v: v.job_id  # noqa: E731
    expected = squeue._msort(items, squeue._by(key, reverse))
    assert sorted(items, key=key, reverse=reverse) == expected
