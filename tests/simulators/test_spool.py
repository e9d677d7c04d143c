"""``LineSpool`` is a list of lines that keeps its older lines compressed: whatever is
appended, replaced or cut, reading it gives what a plain list would, at every chunk size,
bytes that are no UTF-8 included."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulators.slurm import spool
from simulators.slurm.spool import LineSpool

text = st.text(
    st.characters(blacklist_characters="\n", blacklist_categories=["Cs"]) | st.just("\udcff"),
    max_size=30,
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), text),
        st.tuples(st.just("replace"), st.integers(min_value=0, max_value=200), text),
        st.tuples(st.just("truncate"), st.integers(min_value=0, max_value=200)),
    ),
    max_size=60,
)


@given(steps, st.sampled_from([1, 7, 50, spool.CHUNK]))
def test_a_spool_reads_as_the_list_it_stands_for(
    program: list[tuple[object, ...]], chunk: int
) -> None:
    with mock.patch.object(spool, "CHUNK", chunk):
        kept, plain = LineSpool(), list[str]()
        for step in program:
            if step[0] == "append":
                kept.append(str(step[1]))
                plain.append(str(step[1]))
            elif step[0] == "replace" and plain:
                index = int(str(step[1])) % len(plain)
                kept.replace(index, str(step[2]))
                plain[index] = str(step[2])
            elif step[0] == "truncate":
                length = min(int(str(step[1])), len(plain))
                kept.truncate(length)
                del plain[length:]
            assert len(kept) == len(plain)
            assert list(kept) == plain
        assert kept[:] == plain and kept[1:-1] == plain[1:-1]
        assert [kept[-i] for i in range(1, len(plain) + 1)] == plain[::-1]
        assert kept.lines(len(plain) // 2) == plain[len(plain) // 2 :]
        written = b"".join(kept.blocks())
        assert written == "".join(line + "\n" for line in plain).encode("utf-8", "surrogateescape")


def test_iteration_yields_what_is_appended_meanwhile_as_a_list_s_does() -> None:
    kept = LineSpool()
    kept.append("a")
    seen = []
    for line in kept:
        seen.append(line)
        if len(kept) < 3:
            kept.append(line + "+")
    assert seen == ["a", "a+", "a++"]


def test_a_line_with_a_newline_is_refused_and_an_index_past_the_end_too() -> None:
    kept = LineSpool()
    with pytest.raises(ValueError, match="no newline"):
        kept.append("two\nlines")
    kept.append("one")
    with pytest.raises(ValueError, match="no newline"):
        kept.replace(0, "two\nlines")
    with pytest.raises(IndexError):
        kept[1]
    assert list(kept) == ["one"]


def test_many_lines_take_little_memory() -> None:
    kept = LineSpool()
    for i in range(50_000):
        kept.append(f"t={i} purge {i % 10_001}")
    assert len(kept) == 50_000 and kept[12_345] == "t=12345 purge 2344"
    assert sum(map(len, kept.chunks)) < 50_000 * 8  # a list of str: about 70 bytes a line
