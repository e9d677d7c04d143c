"""Answers made from parts: a list from its items' encodings, the runtime catalogue,
timestamps."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulators.kubernetes.http.handlers import compact, dump, dump_list
from simulators.kubernetes.objects import parse_timestamp, timestamp
from simulators.kubernetes.runtimes import RUNTIMES, catalogue

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(
    head=st.dictionaries(st.text().filter(lambda k: k != "items"), JSON_VALUES, max_size=4),
    items=st.lists(JSON_VALUES, max_size=5),
)
def test_a_list_from_its_items_encodings_is_the_list_encoded_whole(
    head: dict[str, Any], items: list[Any]
) -> None:
    assert dump_list(head, [compact(item) for item in items]) == dump({**head, "items": items})


def test_the_catalogue_hands_out_new_copies() -> None:
    names = list(RUNTIMES)
    first = catalogue(names)
    assert first == [make() for make in RUNTIMES.values()]
    first[0]["spec"]["template"] = "changed"
    first[0]["metadata"]["labels"]["x"] = "y"
    again = catalogue(names)
    assert again == [make() for make in RUNTIMES.values()]
    assert all(a is not b for a, b in zip(first, again, strict=True))


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_timestamps_are_what_strftime_writes_and_parse_back(seconds: float) -> None:
    text = timestamp(seconds)
    assert text == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(seconds)))
    assert timestamp(seconds) == text  # asked again: the same
    assert parse_timestamp(text) == float(int(seconds))
    assert parse_timestamp(text) == float(int(seconds))


def test_a_bad_timestamp_is_refused_every_time() -> None:
    for _ in range(2):
        with pytest.raises(ValueError):
            parse_timestamp("yesterday")
