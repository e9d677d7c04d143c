"""scontrol's ``xstrncasecmp`` stand-in: the ASCII fast path gives what the padded comparison
gives, for every text, word and length."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simulators.slurm.commands.scontrol import same


def padded(text: str, word: str, length: int) -> bool:
    pad = "\0" * length
    return (text.lower() + pad)[:length] == (word.lower() + pad)[:length]


words = st.text(alphabet=st.sampled_from("aAbBsShHoOwW\0=İ1"), max_size=8)


@given(words, words, st.integers(min_value=0, max_value=10))
def test_same_is_the_padded_case_blind_comparison(text: str, word: str, length: int) -> None:
    assert same(text, word, length) == padded(text, word, length)
