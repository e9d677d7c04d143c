"""Bad options and arguments beyond the recorded fidelity scenario ``bad-input``: the getopt
rules it rests on, options the simulator does not implement, and what a refusal must not do
(take a job id, submit a job). Sources: Slurm 22.05.8 (src/common/slurm_opt.c,
src/sbatch/opt.c, src/scontrol/*.c) and glibc 2.36's getopt_long."""

from __future__ import annotations

import pytest

from dispatch_core import VirtualClock
from simulators.slurm import SlurmConfig, SlurmSim
from simulators.slurm.commands.getopt import Opt, UsageError, parse
from simulators.slurm.commands.scontrol import _job_ids, _tokens, same

SCRIPT = "#!/bin/sh\ntrue\n"
SPEC = [
    Opt("noconvert", ("noconvert",), None, "none"),
    Opt("nodelist", ("node", "nodes", "nodelist"), "w"),
    Opt("noheader", ("noheader",), "h", "none"),
    Opt("gres", ("gres",), simulated=False),
]


def lab() -> SlurmSim:
    return SlurmSim(SlurmConfig(max_job_id=20, min_job_age=2), clock=VirtualClock(1_796_046_327))


def run(sim: SlurmSim, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = sim.run(list(argv), stdin=stdin)
    return done.returncode, done.stdout, done.stderr


def refused(args: list[str]) -> list[str]:
    with pytest.raises(UsageError) as caught:
        parse("prog", args, SPEC)
    return caught.value.lines


def test_an_ambiguous_prefix_lists_the_first_match_and_every_other_option() -> None:
    # glibc: the first match, then each later one that is not the same option as the first
    assert refused(["--no=1"]) == [
        "prog: option '--no=1' is ambiguous; possibilities: '--noconvert' '--node' '--nodes' "
        "'--nodelist' '--noheader'"
    ]
    # aliases of one option are no ambiguity, and the first alias is the one named
    assert parse("prog", ["--nod", "n1"], SPEC).options == [("nodelist", "n1")]
    assert refused(["--nod"]) == ["prog: option '--node' requires an argument"]
    assert refused(["--noh=x"]) == ["prog: option '--noheader' doesn't allow an argument"]


def test_a_deferred_error_keeps_the_options_before_it() -> None:
    parsed = parse("prog", ["-h", "--bogus", "-w", "n1"], SPEC, defer=True)
    assert parsed.options == [("noheader", None)]
    assert parsed.error is not None and parsed.error.lines == [
        "prog: unrecognized option '--bogus'"
    ]
    with pytest.raises(UsageError):
        parsed.check()


def test_an_option_the_simulator_lacks_is_refused_as_such() -> None:
    with pytest.raises(UsageError) as caught:
        parse("prog", ["--gres=gpu:1"], SPEC)
    assert caught.value.lines == ["prog: error: --gres is not supported by this simulator"]
    assert not caught.value.getopt


@pytest.mark.parametrize(
    "option", ["--exclusive", "--array=1-3", "-x n1", "--mail-type=END", "--wait"]
)
def test_sbatch_refuses_real_options_it_does_not_simulate_without_a_job(option: str) -> None:
    sim = lab()
    rc, out, err = run(sim, "sbatch", "--parsable", *option.split(), stdin=SCRIPT)
    shown = option.split("=")[0].split()[0]
    assert (rc, out, err) == (1, "", f"sbatch: error: {shown} is not supported by this simulator\n")
    assert sim.controller.jobs == {}
    assert run(sim, "sbatch", "--parsable", stdin=SCRIPT)[1] == "1\n"  # no id was taken


def test_sbatch_refusals_take_no_job_id() -> None:
    sim = lab()
    for bad in ("--bogus", "--nodes=abc", "--ntasks=0", "--mem=1Q", "--signal=FOO@1"):
        rc, _, _ = run(sim, "sbatch", "--parsable", bad, stdin=SCRIPT)
        assert rc in (1, 255), bad
    assert run(sim, "sbatch", "--parsable", stdin=SCRIPT)[1] == "1\n"


def test_sbatch_checks_values_as_slurm_does() -> None:
    sim = lab()
    ok = [
        "--nodes=1-2",
        "--nodes=1-2k",
        "--mem=1024",
        "--mem=2GB",
        "--mem=1t",
        "--signal=B:USR1@30",
        "--signal=RB:10",
        "--signal=sigterm",
        "--open-mode=Append",
        "--ntasks=+2",
        "--tasks-per-node=1",
        "--requeue",
    ]
    for option in ok:
        rc, _, err = run(sim, "sbatch", "--parsable", "--hold", option, stdin=SCRIPT)
        assert (rc, err) == (0, ""), option
    assert run(sim, "sbatch", "--nodes=2-", stdin=SCRIPT)[2] == (  # no digits: -1
        "sbatch: error: Maximum node count -1 is less than minimum node count 2\n"
    )
    assert run(sim, "sbatch", "--signal=USR1@", "--hold", stdin=SCRIPT)[0] == 0
    assert run(sim, "sbatch", "--signal=USR1@5x", stdin=SCRIPT)[0] == 255
    assert run(sim, "sbatch", "--mem=5KBB", stdin=SCRIPT)[2] == (
        "sbatch: error: Invalid --mem specification\n"
    )


def test_sbatch_parses_the_command_line_first_then_the_directives() -> None:
    sim = lab()
    script = "#!/bin/sh\n#SBATCH --nodes=abc\ntrue\n"
    # the command line is checked before the script is even read
    assert run(sim, "sbatch", "--time=x", stdin="") == (
        255,
        "",
        "sbatch: error: Invalid --time specification\n",
    )
    # a directive is checked even when the command line overrides it
    assert run(sim, "sbatch", "-N", "1", stdin=script)[2] == (
        'sbatch: error: "abc" is not a valid node count\n'
    )
    # getopt stops at a word that is no option: an invalid directive
    stray = "#!/bin/sh\n#SBATCH -J fid-x stray\ntrue\n"
    assert run(sim, "sbatch", stdin=stray) == (
        255,
        "",
        "sbatch: error: Invalid directive found in batch script: stray\n",
    )
    # --help answers before a later bad option is seen, as real sbatch's first pass does
    rc, out, _ = run(sim, "sbatch", "--help", "--bogus")
    assert rc == 0 and out.startswith("Usage: sbatch")


def test_a_real_submission_still_reads_its_options() -> None:
    sim = lab()
    rc, out, _ = run(
        sim,
        "sbatch",
        "--parsable",
        "--hold",
        "--open-mode=a",
        "--signal=B:USR1@30",
        "--requeue",
        stdin=SCRIPT,
    )
    job = sim.job(int(out))
    sub = job.submission
    assert rc == 0 and sub.open_mode == "append" and sub.requeue is True
    assert sub.signal is not None and (sub.signal.name, sub.signal.seconds) == ("USR1", 30)
    assert sub.signal.batch_only


def test_scontrol_abbreviations_follow_the_source_order() -> None:
    sim = lab()
    job = run(sim, "sbatch", "--parsable", "--hold", "-J", "fid-a", stdin=SCRIPT)[1].strip()
    assert run(sim, "scontrol", "sho", "j", job)[0] == 0
    assert run(sim, "scontrol", "u", f"JobId={job}", "Com=x")[:1] == (0,)
    assert sim.job(int(job)).comment == "x"
    # "de" is details (before delete), taken as a flag; "re" names no command
    assert run(sim, "scontrol", "de") == (0, "", "")
    assert run(sim, "scontrol", "re", job) == (1, "", "invalid keyword: re\n")
    assert run(sim, "scontrol", "ping") == (
        1,
        "",
        "scontrol: error: ping is not supported by this simulator\n",
    )
    assert run(sim, "scontrol", "update", f"JobId={job}", "TimeLimit=5") == (
        1,
        "",
        "scontrol: error: update of TimeLimit is not supported by this simulator\n",
    )
    assert run(sim, "scontrol", "update", f"JobId={job}", "Comment+=y") == (
        1,
        "",
        "scontrol: error: Option Comment+=y does not accept [+|-]= syntax\n",
    )


def test_scontrol_updates_and_holds_a_job_named_or_listed() -> None:
    sim = lab()
    first = run(sim, "sbatch", "--parsable", "--hold", "-J", "fid-a", stdin=SCRIPT)[1].strip()
    assert run(sim, "scontrol", "update", "JobName=fid-a", "Comment=c") == (0, "", "")
    assert sim.job(int(first)).comment == "c"
    assert run(sim, "scontrol", "update", "JobName=fid-b", "Comment=c")[2] == (
        "scontrol: error: No jobs with name 'fid-b'\n"
    )
    assert run(sim, "scontrol", "release", f"JobId={first},19")[2] == (
        "Invalid job id specified for job 19\nslurm_suspend error: Invalid job id specified\n"
    )
    assert run(sim, "scontrol", "requeue", "Incomplete") == (0, "", "")


def test_scontrol_reads_commands_from_stdin_without_one() -> None:
    sim = lab()
    rc, out, err = run(sim, "scontrol", stdin="show job 7\n\nquit\nshow job 8\n")
    assert (rc, out, err) == (
        1,
        "scontrol: show job 7\nscontrol: \nscontrol: quit\n",
        "slurm_load_jobs error: Invalid job id specified\n",
    )


def test_scontrol_words_and_id_lists() -> None:
    assert _tokens(' update  Comment="a b" x ') == ["update", 'Comment="a b"', "x"]
    assert _job_ids("1,,2 3") == ["1", "2", "3"]
    assert _job_ids("7_[1-3]") == ["7_[1-3]"]
    assert _job_ids("1-2") is None and _job_ids("1__2") is None and _job_ids("x") is None
    assert same("sho", "show", 3) and not same("sh", "show", 3) and same("holdxyz", "hold", 4)
