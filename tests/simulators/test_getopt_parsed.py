"""``Parsed.last`` and ``Parsed.has`` answer from an index kept up to date with the options
appended: what a scan of the options from the end answers, at every point of the parse."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simulators.slurm import SlurmSim
from simulators.slurm.commands.getopt import Parsed, UsageError, parse
from simulators.slurm.commands.sbatch import SPEC

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


names = st.none() | st.sampled_from(["dj-A", "dj-B", "dj-C"])


@given(names, names, names, names)
def test_sbatch_takes_the_command_line_s_value_else_the_directive_s(
    cli_name: str | None,
    directive_name: str | None,
    cli_comment: str | None,
    directive_comment: str | None,
) -> None:
    sim = SlurmSim()
    script = "#!/bin/sh\n"
    script += f"#SBATCH --job-name={directive_name}\n" if directive_name else ""
    script += f"#SBATCH --comment={directive_comment}\n" if directive_comment else ""
    argv = (
        ["sbatch", "--parsable", "--hold", "--job-name=first"]
        if cli_name
        else ["sbatch", "--parsable", "--hold"]
    )
    argv += [f"--job-name={cli_name}"] if cli_name else []
    argv += [f"--comment={cli_comment}"] if cli_comment else []
    done = sim.run(argv, script + "true\n")
    assert done.returncode == 0, done.stderr
    listed = sim.run(["squeue", "-h", "-o", "%j|%k"]).stdout
    name = cli_name or directive_name or "sbatch"
    comment = cli_comment or directive_comment or "(null)"
    assert listed == f"{name}|{comment}\n"


dashed = st.lists(
    st.sampled_from(["--hold", "--parsable", "-H", "--comment", "-J", "-Jx", "--job-name=a", "-x"])
    | st.text(alphabet="-abcJHo=", min_size=1, max_size=6).filter(lambda w: w.startswith("-")),
    max_size=8,
)


@given(dashed)
def test_sbatch_words_that_all_begin_with_a_dash_leave_no_script_operand(words: list[str]) -> None:
    """What lets the trace skip its parse of an sbatch whose script is its stdin."""
    if any(word in ("-", "--") for word in words):
        return
    try:
        parsed = parse("sbatch", words, SPEC, permute=False)
    except UsageError:
        return
    assert parsed.operands == []
