"""sacct against the real Slurm 22.05.8 transcripts of slurm-lab.md §7, and its field lists.

The golden tests replay the lab's command lines (tests/fixtures/slurm-lab/) on a simulator
whose clock runs as the lab's did. Where the lab's scheduler started a job at a second the
controller's scheduler does not model (a periodic pass at 13:51:37, say), the test holds the
pending job and releases it a second before, which starts it then without touching its
accounting times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulators.slurm.commands.sacct import (
    FIELD_TABLE,
    FieldError,
    Style,
    header,
    parse_fields,
    render,
)
from tests.simulators.lab import FIXTURES, Lab, epoch
from tests.simulators.test_squeue import first_jobs, more_jobs

NAME = "dj-ABCDEFGHIJKLMNOPQRSTUVWXYZ"
DAY = 86_400


def start_at(lab: Lab, clock: str, *job_ids: int) -> None:
    """Start the pending jobs at ``clock`` (HH:MM:SS): hold them now, release them a second
    before (the release's scheduler pass comes one second later)."""
    for job_id in job_ids:
        lab.sim.run(["scontrol", "hold", str(job_id)])
    lab.at(f"{clock[:6]}{int(clock[6:]) - 1:02d}")
    lab.latency(1)
    for job_id in job_ids:
        lab.sim.run(["scontrol", "release", str(job_id)])
    lab.at(clock)
    assert [lab.sim.job(j).start_time for j in job_ids] == [epoch(clock)] * len(job_ids)


def _python(code: str, stdin: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout


# -- §7.3 and §7.4 ---------------------------------------------------------------------------------


def lab_7_4(tmp_path: Path, section: str) -> Lab:
    """Job 1 ran 13:45:28-48; jobs 2 and 3 (submitted 13:45:34) run from 13:45:35 and 13:45:49."""
    lab = first_jobs(tmp_path, section)
    more_jobs(lab)
    lab.at("13:45:47")
    start_at(lab, "13:45:49", 3)
    return lab


def test_7_3_sacct_json_begins_as_the_lab_s(tmp_path: Path) -> None:
    lab = lab_7_4(tmp_path, "7.3")
    [exchange] = [ex for ex in lab.exchanges if ex.command.startswith("sacct --json")]
    done = lab.sim.run(["sacct", "--json", "-j", "1"])
    assert done.returncode == 0
    head = exchange.output.split("\n", 1)[1].removesuffix("[rc=0]\n")
    assert done.stdout.encode()[:300].decode() == head
    assert json.loads(done.stdout)["jobs"][0]["job_id"] == 1


def test_7_4_sacct_basics(tmp_path: Path) -> None:
    lab = lab_7_4(tmp_path, "7.4")
    lab.at("13:45:50")
    lab.check(
        "sacct -j 1,2,3 -P -o JobID,JobName%40,Comment,State,Submit,Start,End,Restarts,ExitCode"
    )
    json_exchange = next(ex for ex in lab.exchanges if "--json" in ex.command)
    code = json_exchange.command.split("python3 -c ", 1)[1][1:-1]
    dump = lab.sim.run(["sacct", "-j", "1", "--json"]).stdout
    assert _python(code, dump) + "[rc=0]\n" == json_exchange.output
    lab.check("sacct -j 1,2,3 -P -o JobID,JobName%40,Comment,State,Submit,Start,End,ExitCode")


# -- §7.5 id reuse ---------------------------------------------------------------------------------


def test_7_5_every_incarnation_of_a_reused_id(tmp_path: Path) -> None:
    """Job 1 of §7.1, then dj-REUSEA and dj-REUSEB with the same id: plain -j shows the newest,
    -D all three; their database indexes 1, 6 and 8 (records 2-5 and 7 are other jobs)."""
    lab = lab_7_4(tmp_path, "7.5")
    lab.at("13:46:00")
    for _ in range(2):  # database records 4 and 5
        lab.sim.run(["sbatch", "--wrap=true"])
    lab.sim.run_for(4, 1)
    lab.sim.run_for(5, 1)
    lab.at("13:47:19")
    lab.sim.controller.set_next_job_id(1)
    lab.latency(2)
    lab.check(
        "sbatch --parsable --job-name=dj-REUSEA --comment=first --output=$SCRATCH/out/%x-%j.out job.sh 5; date +%T"
    )
    lab.sim.run_for(1, 6)
    lab.at("13:47:30")
    lab.sim.run(["sbatch", "--wrap=true"])  # database record 7
    lab.at("13:47:40")
    lab.sim.controller.set_next_job_id(1)
    lab.latency(0)
    assert (
        lab.sh(
            "sbatch --parsable --job-name=dj-REUSEB --comment=second --output=$SCRATCH/out/%x-%j.out job.sh 5"
        )
        == "1\n[rc=0]\n"
    )
    lab.sim.run_for(1, 6)
    lab.at("13:47:50")
    lab.check_all(
        "sacct -j 1 -P -o JobID,JobName,Comment,State,Submit,Start,End",
        "sacct -j 1 -D -P -o JobID,JobName,Comment,State,Submit,Start,End",
        "sacct -j 1 -D -X -P -S 2026-11-30T00:00 -o JobIDRaw,DBIndex,JobName,Comment,State,Submit",
    )


# -- §7.6 requeue ----------------------------------------------------------------------------------


def test_7_6e_sacct_after_requeues(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.6e", "13:48:05", first_job_id=4, sched_interval=DAY)
    lab.latency(2)
    lab.sim.run(["sbatch", "--job-name=dj-Y", str(lab.job_sh), "1"])  # §7.5's job 4
    lab.sim.run_for(4, 2)
    lab.at("13:48:38")
    lab.sim.controller.set_next_job_id(4)
    lab.sh(
        "sbatch --parsable --job-name=dj-REQRUN --comment='dispatch:s=1;a=0' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 600"
    )
    lab.at("13:48:41")
    lab.sim.run(["scontrol", "requeue", "4"])
    lab.at("13:48:53")
    lab.sim.controller.set_next_job_id(7)
    lab.latency(0)
    lab.sim.run(["sbatch", "--job-name=dj-REQHOLDRUN", str(lab.job_sh)])
    lab.at("13:48:56")
    lab.sim.run(["scontrol", "requeuehold", "7"])
    lab.at("13:49:00")
    lab.sim.run(["scontrol", "release", "7"])
    lab.sim.run(["sbatch", "--job-name=dj-REQSPECIAL", str(lab.job_sh)])
    lab.at("13:49:03")
    lab.sim.run(["scontrol", "requeuehold", "State=SpecialExit", "8"])
    lab.at("13:51:30")
    start_at(lab, "13:51:37", 4, 7)
    lab.at("13:52:00")
    lab.check_all(
        "sacct -j 4,7,8 -X -P -o JobID,JobName,Comment,State,Submit,Eligible,Start,End",
        "sacct -j 4,7,8 -X -D -P -o JobID,JobName,Comment,State,Submit,Eligible,Start,End",
    )


def _unrecorded_outputs(section: str) -> list[str]:
    """The outputs of a fixture whose command lines the lab did not record."""
    text = (FIXTURES / f"{section}.txt").read_text()
    loose = [block for block in text.split("\n\n") if not block.startswith("$ ")]
    outputs: list[str] = []
    for block in loose:
        for line in block.splitlines():
            if line.startswith("JobID|"):
                outputs.append("")
            if outputs and line[:1] in ("J", *"0123456789"):
                outputs[-1] += line + "\n"
    return outputs


def test_7_6g_older_incarnations_and_a_requeued_completed_job(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.6g", "13:53:17", first_job_id=15)
    lab.sim.run(["sbatch", "--hold", f"--job-name={NAME}", str(lab.job_sh)])
    lab.sim.controller.cancel(lab.sim.job(15), by=0)  # cancelled while held
    lab.at("13:55:21")
    lab.sim.controller.set_next_job_id(15)
    lab.sim.run(["sbatch", "--begin=2100-01-01T00:00:00", "--job-name=dj-BENCH15", str(lab.job_sh)])
    lab.at("13:55:25")
    lab.sim.controller.cancel(lab.sim.job(15), by=0)  # cancelled while waiting for 2100
    lab.at("14:06:39")
    lab.sim.controller.set_next_job_id(15)
    lab.latency(3)
    lab.check("sbatch --parsable --job-name=dj-DONEREQ --output=$SCRATCH/out/%x-%j.out job.sh 1")
    lab.sim.run_for(15, 1)
    lab.at("14:06:43")
    lab.check("scontrol requeue 15")
    # The lab's slurmdbd listed the new PENDING row only a moment later; the simulated
    # accounting has it at once (the row of the next output below).
    command = "sacct -j 15 -X -D -P -o JobID,JobName,State,Submit,Eligible,Start,End"
    pending, cancelled = _unrecorded_outputs("7.6g")
    expected = lab.exchange(command).output
    new_row = pending.splitlines()[-1] + "\n"
    assert lab.sh(command) == expected.replace("[rc=0]\n", new_row + "[rc=0]\n")
    # The two later outputs; their command lines were not recorded, and they leave out the
    # older incarnations: -D with a start time after them.
    later = (
        "sacct -j 15 -X -D -P -S 2026-11-30T14:00 -o JobID,JobName,State,Submit,Eligible,Start,End"
    )
    assert lab.sh(later) == pending + "[rc=0]\n"
    lab.at("14:06:52")
    lab.sim.controller.cancel(lab.sim.job(15), by=0)
    assert lab.sh(later) == cancelled + "[rc=0]\n"


def test_7_6h_node_failure_and_a_second_requeue(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.6h", "13:54:41", first_job_id=17, sched_interval=DAY)
    lab.sh(
        "sbatch --parsable --requeue --job-name=dj-RQYES --output=$SCRATCH/out/%x-%j.out job.sh 600"
    )
    lab.sh(
        "sbatch --parsable --no-requeue --job-name=dj-RQNO --output=$SCRATCH/out/%x-%j.out job.sh 600"
    )
    lab.at("13:54:44")
    lab.sim.controller.node_failure("vm")
    lab.at("13:54:50")
    lab.check("sacct -j 17,18 -X -D -P -o JobID,JobName,State,Submit,Start,End,ExitCode")
    lab.at("13:56:50")
    start_at(lab, "13:56:59", 17)
    lab.at("14:01:17")
    lab.sim.run(["scontrol", "requeue", "17"])
    lab.at("14:03:20")
    start_at(lab, "14:03:30", 17)
    lab.at("14:04:00")
    [rows] = _unrecorded_outputs("7.6h")
    command = "sacct -j 17 -X -D -P -o JobID,JobName,State,Submit,Eligible,Start,End"
    assert lab.sh(command) == rows + "[rc=0]\n"


# -- §7.8 the comment ------------------------------------------------------------------------------


def test_7_8_the_comment_with_and_without_job_comment(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.8", "13:52:46", first_job_id=12, job_comment=False)
    lab.sh(
        "sbatch --parsable --job-name=dj-NOCOMMENT --comment='dispatch:s=2;a=1' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 3"
    )
    lab.sim.run_for(12, 3)
    lab.at("13:52:55")
    lab.check("sacct -j 12 -X -P -o JobID,JobName,Comment,State,Submit")
    json_exchange = next(ex for ex in lab.exchanges if "--json" in ex.command)
    code = json_exchange.command.split("python3 -c ", 1)[1][1:-1]
    dump = lab.sim.run(["sacct", "-j", "12", "-X", "--json"]).stdout
    assert _python(code, dump) + "[rc=0]\n" == json_exchange.output
    # back to AccountingStoreFlags=job_comment (the lab restarted slurmctld)
    import dataclasses

    config = dataclasses.replace(lab.sim.config, job_comment=True)
    lab.sim.config = lab.sim.controller.config = config
    lab.at("13:53:00")
    lab.check(
        "sbatch --parsable --job-name=dj-WITHCOMMENT --comment='dispatch:s=2;a=1' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 3"
    )
    lab.sim.run_for(13, 3)
    lab.at("13:53:10")
    lab.check("sacct -j 12,13 -X -P -o JobID,JobName,Comment,State,Submit")


def test_7_8_the_comment_stored_is_the_last_one(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.8", "13:53:30", first_job_id=16)
    lab.sh(
        "sbatch --parsable --job-name=dj-CMT --comment='dispatch:s=1;a=0' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 4"
    )
    lab.sim.run_for(16, 4)
    lab.at("13:53:32")
    lab.sh("scontrol update jobid=16 Comment='dispatch:s=1;a=1'")
    lab.at("13:53:36")  # ended at 13:53:35, still in slurmctld's memory
    lab.check("sacct -j 16 -X -P -o JobID,State,Comment")
    lab.check("scontrol update jobid=16 Comment='after-end'")


def test_7_11_accounting_remembers_a_purged_id(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.11", "14:00:00", first_job_id=19)
    lab.sim.run(["sbatch", "--hold", str(lab.job_sh)])
    lab.sim.controller.cancel(lab.sim.job(19), by=0)
    lab.at("14:05:00")
    lab.check("sacct -j 19 -X -n -P -o JobID,State")


# -- the source's behaviour beyond the transcripts ---------------------------------------------------


def test_the_default_columns(tmp_path: Path) -> None:
    lab = lab_7_4(tmp_path, "7.4")
    lab.at("13:45:50")
    lab.sim.controller.cancel(lab.sim.job(2), by=0)
    assert lab.sim.run(["sacct"]).stdout == (
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n"
        "------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
        "1            dj-ABCDEF+      debug        lab          1  COMPLETED      0:0 \n"
        "1.batch           batch                   lab          1  COMPLETED      0:0 \n"
        # A running job cancelled keeps ExitCode 0:0; its batch step records the TERM
        # (real output: tests/fixtures/slurm-real/formats.*.json).
        "2            dj-abcdef+      debug        lab          1 CANCELLED+      0:0 \n"
        "2.batch           batch                   lab          1  CANCELLED     0:15 \n"
        "3             dj-X,dj-Y      debug        lab          1    RUNNING      0:0 \n"
        "3.batch           batch                   lab          1    RUNNING      0:0 \n"
    )


def test_parsable_and_delimiters(tmp_path: Path) -> None:
    lab = lab_7_4(tmp_path, "7.4")
    lab.at("13:45:50")
    run = lab.sim.run
    assert run(["sacct", "-j", "1", "-X", "-p", "-o", "JobID,State"]).stdout == (
        "JobID|State|\n1|COMPLETED|\n"
    )
    assert run(["sacct", "-j", "1", "-X", "-P", "--delimiter=;;", "-o", "JobID,State"]).stdout == (
        "JobID;;State\n1;;COMPLETED\n"
    )
    assert run(["sacct", "-j", "1", "-X", "-n", "-o", "JobID%3,jobn%5,Start%10"]).stdout == (
        "  1 dj-A+ 2026-11-30 \n"  # a width given with % is right-justified
    )


def test_time_windows_names_and_states(tmp_path: Path) -> None:
    lab = lab_7_4(tmp_path, "7.4")
    lab.at("13:45:50")
    run = lab.sim.run

    def ids(*argv: str) -> list[str]:
        done = run(["sacct", "-X", "-n", "-P", "-o", "JobID", *argv])
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert ids() == ["1", "2", "3"]
    assert ids("--name=DJ-abcdefghijklmnopqrstuvwxyz") == ["1", "2"]  # any case
    assert ids("--name=dj-X,dj-Y") == []  # the comma splits, as in squeue
    assert ids("-s", "CD") == []  # the window of -s alone is the current second
    assert ids("-s", "CD", "-S", "13:45:00") == []  # -E defaults to -S with -s
    assert ids("-s", "CD", "-S", "13:45:00", "-E", "now") == ["1"]
    assert ids("-s", "R", "-S", "13:45:00", "-E", "now") == ["1", "2", "3"]  # ran in it
    assert ids("-E", "13:45:30") == ["1"]
    lab.at("23:59:59")
    lab.sim.advance(2)  # the next day: the default window starts at midnight
    assert ids() == []  # all three ended yesterday
    assert ids("-S", "2026-11-30") == ["1", "2", "3"]
    done = run(["sacct", "-S", "2026-12-02"])
    assert done.returncode == 1
    assert done.stderr == (
        "sacct: error: Start time (2026-12-02T00:00:00) requested is after end time "
        "(2026-12-01T00:00:02).\n"
    )


def test_errors(tmp_path: Path) -> None:
    lab = lab_7_4(tmp_path, "7.4")
    run = lab.sim.run
    assert run(["sacct", "-o", "JobID,Bogus"]).stderr == (
        'sacct: error: Invalid field requested: "Bogus"\n'
    )
    assert run(["sacct", "-j", "x1"]).stderr == "sacct: fatal: Bad job/step specified: x1\n"
    assert run(["sacct", "-s", "XX"]).stderr == "sacct: fatal: unrecognized job state value 'XX'\n"
    assert run(["sacct", "-S", "bogus"]).stderr == "Invalid time specification (pos=0): bogus\n"
    done = run(["sacct", "stray"])
    assert (done.returncode, done.stderr) == (
        1,
        "sacct: error: Unknown arguments:\nsacct: error:  stray\n",
    )


def test_without_accounting_storage(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.4", "13:45:27", accounting=False)
    done = lab.sim.run(["sacct", "-j", "1"])
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "Slurm accounting storage is disabled\n",
    )


def test_sacct_keeps_working_while_slurmctld_is_down(tmp_path: Path) -> None:
    lab = lab_7_4(tmp_path, "7.4")
    lab.sim.controller.down_until = lab.sim.controller.now + 60
    done = lab.sim.run(["sacct", "-j", "1", "-X", "-n", "-P", "-o", "JobID,State"])
    assert (done.returncode, done.stdout) == (0, "1|COMPLETED\n")


def test_a_step_can_be_asked_for(tmp_path: Path) -> None:
    lab = lab_7_4(tmp_path, "7.4")
    lab.at("13:45:50")
    done = lab.sim.run(["sacct", "-j", "1.batch,2", "-n", "-P", "-o", "JobID,State"])
    assert done.stdout == "1.batch|COMPLETED\n2|RUNNING\n2.batch|RUNNING\n"


# -- field lists: Hypothesis ------------------------------------------------------------------------

NAMES = [name for _, name, _, _ in FIELD_TABLE]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(NAMES), st.text(alphabet="abcdEFGH%0123456789 ,", max_size=8)),
        max_size=6,
    ).map(",".join)
)
def test_random_field_lists_never_crash(spec: str) -> None:
    try:
        fields = parse_fields(spec + ",")
    except FieldError as error:
        assert error.line.startswith(("sacct: error: Invalid field requested: ", "sacct: fatal: "))
        return
    header(fields, Style())
    header(fields, Style(parsable=2))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(NAMES), st.integers(-30, 30), st.text(max_size=40))
def test_string_columns_pad_and_cut_with_a_plus(name: str, width: int, value: str) -> None:
    [field] = parse_fields(f"{name}%{width},")
    assert field.width == width
    if field.kind != "str":
        return
    cell = render(field, value, Style(), False, {})
    raw = value.encode("utf-8", "surrogateescape")
    size = abs(width)
    assert len(cell) == size + 1 and cell.endswith(b" ")
    body = cell[:-1]
    if len(raw) > size:
        assert body == (raw[: size - 1] + b"+" if size else b"")
    else:
        assert body == (raw.rjust(size) if width >= 0 else raw.ljust(size))
    assert render(field, value, Style(parsable=2), True, {}) == raw


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("Sta,Sub,Eli,E,ExitC,", ["Start", "Submit", "Eligible", "Elapsed", "ExitCode"]),
        ("jobid,JOBIDRAW,dbi,", ["JobID", "JobIDRaw", "DBIndex"]),
        ("JobID,,State,", ["JobID"]),  # an empty item ends the list
        (" JobID, State,", ["JobID", "State"]),
    ],
)
def test_field_names_are_prefixes(spec: str, names: list[str]) -> None:
    assert [f.name for f in parse_fields(spec)] == names


def test_a_width_applies_to_every_use_of_its_field() -> None:
    fields = parse_fields("JobName,JobName%5,")
    assert [f.width for f in fields] == [5, 5]
    assert len(parse_fields("a,")) == len(FIELD_TABLE)  # a prefix of ALL
