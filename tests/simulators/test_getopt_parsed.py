"""``Parsed.last`` and ``Parsed.has`` answer from an index kept up to date with the options
appended: what a scan of the options from the end answers, at every point of the parse."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simulators.slurm.commands.getopt import Parsed

keys = st.sampled_from(["hold", "comment", "job-name", "parsable", "x"])
options = st.lists(st.tuples(keys, st.none() | st.text(max_size=3)), max_size=12)


@given(options, st.lists(keys, min_size=1, max_size=6))
def test_last_and_has_are_the_scan_from_the_end(
    given_options: list[tuple[str, str | None]], asked: list[str]
) -> None:
    parsed = Parsed()
    for option in given_options:
        parsed.options.append(option)
        for key in asked:
            scan = [value for name, value in reversed(parsed.options) if name == key]
            assert parsed.has(key) == bool(scan)
            assert parsed.last(key) == (scan[0] if scan else None)
