"""squeue's sort: glibc's merge sort (``msort_with_tmp``) with Slurm's comparators is the
reference, and the simulator's sorts must give its order for every list, a start time of 0
(the start-time comparator's inconsistency) included."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from simulators.slurm.commands import squeue

Cmp = Callable[[Any, Any], int]


def msort(items: list[Any], cmp: Cmp) -> list[Any]:
    """glibc's ``msort_with_tmp``: the result for an inconsistent comparator too."""
    if len(items) <= 1:
        return items
    half = len(items) // 2
    left, right = msort(items[:half], cmp), msort(items[half:], cmp)
    out: list[Any] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if cmp(left[i], right[j]) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def by(key: Callable[[Any], Any], reverse: bool) -> Cmp:
    """``sort_job_list``'s comparator on one key."""

    def cmp(a: Any, b: Any) -> int:
        diff = (key(a) > key(b)) - (key(a) < key(b))
        return -diff if reverse else diff

    return cmp


def by_start(reverse: bool) -> Cmp:
    """``sort_jobs_by_start_time``'s comparator: a start time of 0 loses every comparison."""

    def cmp(a: Any, b: Any) -> int:
        if a.start_time == 0:
            return 1
        if b.start_time == 0:
            return -1
        sa, sb = squeue._start(a), squeue._start(b)
        diff = (sa > sb) - (sa < sb)
        return -diff if reverse else diff

    return cmp


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
    expected = msort(items, by_start(reverse))
    assert squeue._sorted_by_start(items, reverse) == expected


@given(st.lists(st.integers(min_value=0, max_value=5), max_size=40), st.booleans())
def test_a_key_sort_is_the_merge_sort_s_order(keys: list[int], reverse: bool) -> None:
    items: list[Any] = [View(i, 0, "PENDING", job_id=k) for i, k in enumerate(keys)]
    key = lambda v: v.job_id  # noqa: E731
    expected = msort(items, by(key, reverse))
    assert sorted(items, key=key, reverse=reverse) == expected
