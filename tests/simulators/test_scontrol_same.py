"""scontrol's ``xstrncasecmp`` stand-in: the ASCII fast path gives what the padded comparison
gives, for every text, word and length."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simulators.slurm.commands.scontrol import (
    ENTITIES,
    JOB_TAGS,
    KEYWORDS,
    UPDATE_ENTITIES,
    _candidates,
    _match,
    same,
)


def padded(text: str, word: str, length: int) -> bool:
    pad = "\0" * length
    return (text.lower() + pad)[:length] == (word.lower() + pad)[:length]


words = st.text(alphabet=st.sampled_from("aAbBsShHoOwW\0=İ1"), max_size=8)


@given(words, words, st.integers(min_value=0, max_value=10))
def test_same_is_the_padded_case_blind_comparison(text: str, word: str, length: int) -> None:
    assert same(text, word, length) == padded(text, word, length)


def scanned(text: str, size: int, table: tuple[tuple[str, int], ...]) -> str | None:
    """The first match over the whole table, as ``_process_command`` and ``_update_it`` scan."""
    return next((word for word, least in table if same(text, word, max(size, least))), None)


tags = st.text(alphabet=st.sampled_from("aAbBcCjJoOsShHuUpPrRnNeE_\0=İK1"), max_size=12)
TABLES = (ENTITIES, UPDATE_ENTITIES, JOB_TAGS, tuple((kw, n) for kw, n, _ in KEYWORDS))


@given(tags, st.integers(min_value=0, max_value=14), st.sampled_from(range(len(TABLES))))
def test_the_first_letter_index_finds_what_the_whole_scan_finds(
    text: str, size: int, which: int
) -> None:
    table = TABLES[which]
    assert _match(text, size, table) == scanned(text, size, table)


@given(tags)
def test_a_keyword_is_found_among_its_first_letter_as_in_the_whole_table(tag: str) -> None:
    def matches(rows: tuple[tuple[str, int, bool], ...]) -> list[str]:
        return [kw for kw, n, exact in rows if same(tag, kw, n if exact else max(len(tag), n))]

    assert matches(_candidates(tag, KEYWORDS)) == matches(KEYWORDS)
