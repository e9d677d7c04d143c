"""The answers' JSON made from parts: a list from its items' encodings, the runtime catalogue."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from simulators.kubernetes.http.handlers import compact, dump, dump_list
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
