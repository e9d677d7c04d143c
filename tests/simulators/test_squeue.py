"""squeue against the real Slurm 22.05.8 transcripts of slurm-lab.md §7, and its format parsers.

The golden tests replay the lab's command lines (tests/fixtures/slurm-lab/) on a simulator
whose clock runs as the lab's did, and compare the bytes and the exit status. The lab's
scheduler started jobs 0 to 2 s after their submission; ``Lab.latency`` sets that per job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulators.slurm.commands.squeue import (
    FIELDS,
    LETTERS,
    LONG_NAMES,
    parse_format,
    parse_long_format,
    print_str,
    ranged,
    render_line,
)
from tests.simulators.lab import Lab, transcript

NAME = "dj-ABCDEFGHIJKLMNOPQRSTUVWXYZ"
FIELDS_OF_7_6 = (
    "'JobID:|,Name:|,State:|,Reason:|,SubmitTime:|,EligibleTime:|,StartTime:|,RestartCnt:'"
)
FIELDS_OF_7_7 = (
    "'JobID:|,Name:|,State:|,Reason:|,SubmitTime:|,EligibleTime:|,StartTime:|,Priority:'"
)
FIELDS_OF_7_7B = "'JobID:|,Name:|,State:|,Reason:|,EligibleTime:|,StartTime:|,Priority:'"


def first_jobs(tmp_path: Path, section: str) -> Lab:
    """§7.1-7.2: job 1 (20 s) at 13:45:27; jobs 2 and 3 at 13:45:34, job 3 waiting for a CPU."""
    lab = Lab(tmp_path, section, "13:45:27")
    lab.sh(
        "sbatch --parsable --job-name=dj-ABCDEFGHIJKLMNOPQRSTUVWXYZ "
        "--comment='dispatch:s=1;a=0' --output=$SCRATCH/out/%x-%j.out job.sh 20"
    )
    lab.sim.run_for(1, 20)
    return lab


def more_jobs(lab: Lab) -> None:
    lab.at("13:45:34")
    lab.sh(
        "sbatch --parsable --job-name=dj-abcdefghijklmnopqrstuvwxyz --comment='lower' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 20"
    )
    lab.sh(
        "sbatch --parsable --job-name='dj-X,dj-Y' --comment='comma' "
        "--output=$SCRATCH/out/comma-%j.out job.sh 20"
    )
    lab.sim.run_for(2, 20)
    lab.sim.run_for(3, 20)


# -- §7.1 formats --------------------------------------------------------------------------------


def test_7_1_formats(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.1", "13:45:27")
    lab.check(
        "sbatch --parsable --job-name=dj-ABCDEFGHIJKLMNOPQRSTUVWXYZ --comment='dispatch:s=1;a=0' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 20"
    )
    lab.at("13:45:30")
    lab.check_all(
        f"squeue --me --name={NAME} -h -o '%i|%j|%T|%k|%V|%r'",
        f"squeue --me --name={NAME} -h -O 'JobID:|,Name:|,State:|,Comment:|,SubmitTime:|,"
        "RestartCnt:|,EligibleTime:|,StartTime:|,Reason:'",
        f"squeue --me --name={NAME} -h -O 'JobID:0|,Name:0|,State:0|,Comment:0|,SubmitTime:0|,"
        "RestartCnt:0'",
        # a suffix without the colon: an error per bad field, exit 0, the valid field padded
        f"squeue --me --name={NAME} -h -O 'JobID|,Name|,State|,Comment|,SubmitTime|,RestartCnt'",
    )
    assert len(lab.used) == len(lab.exchanges)


def test_7_1_long_values_are_whole_with_a_suffix_and_cut_to_20_without(tmp_path: Path) -> None:
    """§7.1's separate check: a 300-character comment comes back whole through ``Comment:|``
    and ``%k``; ``JobID,Comment`` is 40 characters."""
    lab = Lab(tmp_path, "7.1", "13:45:27")
    comment = "c" * 300
    lab.sim.run(["sbatch", "--parsable", f"--comment={comment}", str(lab.job_sh)])
    for argv in (["-O", "Comment:|"], ["-o", "%k"]):
        done = lab.sim.run(["squeue", "-h", *argv])
        assert done.stdout.rstrip("|\n") == comment
    done = lab.sim.run(["squeue", "-h", "-O", "JobID,Comment"])
    assert done.stdout == "1".ljust(20) + "c" * 20 + "\n"


def test_7_6i_a_field_with_an_empty_size_runs_into_the_next(tmp_path: Path) -> None:
    """§7.6i: ``StartTime:,RestartCnt:`` printed ``…14:11:221``."""
    lab = Lab(tmp_path, "7.6i", "14:09:13", first_job_id=5)
    lab.check("sbatch --parsable --no-requeue --job-name=dj-RQFLAG job.sh 300")
    lab.at("14:09:16")
    assert lab.sh("scontrol update JobId=5 Requeue=1") == "[rc=0]\n"
    lab.at("14:09:21")
    lab.sim.run(["scontrol", "requeue", "5"])
    lab.at("14:09:24")
    command = (
        "squeue -j 5 -h -O 'JobID:|,Name:|,State:|,Reason:|,SubmitTime:|,EligibleTime:|,"
        "StartTime:,RestartCnt:'"
    )
    assert lab.sh(command) == lab.exchange("scontrol requeue 5; sleep 3; " + command).output


# -- §7.2 name matching --------------------------------------------------------------------------


def test_7_2_name_matching(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.2")
    lab.at("13:45:34")
    lab.check(
        "sbatch --parsable --job-name=dj-abcdefghijklmnopqrstuvwxyz --comment='lower' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 20"
    )
    lab.check(
        "sbatch --parsable --job-name='dj-X,dj-Y' --comment='comma' "
        "--output=$SCRATCH/out/comma-%j.out job.sh 20"
    )
    lab.at("13:45:36")
    lab.check_all(
        "squeue --me -h -o '%i|%j|%T|%k'",  # the PENDING job first
        f"squeue --me --name={NAME} -h -o '%i|%j'",
        "squeue --me --name=dj-abcdefghijklmnopqrstuvwxyz -h -o '%i|%j'",
        "squeue --me --name=dj-ABCDEFGHIJKLMNOPQRSTUVWXY -h -o '%i|%j'",
        f"squeue --me --name={NAME},dj-abcdefghijklmnopqrstuvwxyz -h -o '%i|%j'",
        "squeue --me --name='dj-X,dj-Y' -h -o '%i|%j'",
        "squeue --me --name='dj-X' -h -o '%i|%j'",
        "squeue --me --name=nonexistent -h -o '%i|%j'",
    )
    # The last exchange pipes scontrol's output through tr; its squeue part matched nothing:
    assert lab.sh("squeue --me --name=dj-X,dj-Y -h -o %i") == "[rc=0]\n"


# -- §7.3 --json -----------------------------------------------------------------------------------


def _python(code: str, stdin: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_7_3_json_ignores_every_filter_and_has_the_lab_keys(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.3")
    more_jobs(lab)
    lab.at("13:45:36")
    whole, filtered, keys = lab.exchanges[:3]
    code = filtered.command.split("python3 -c ", 1)[1]
    dump = lab.sim.run(["squeue", "--json", "--name=nonexistent"])
    assert dump.returncode == 0
    assert _python(code[1:-1], dump.stdout) + "[rc=0]\n" == filtered.output
    # The third exchange reads the file the first one wrote; run its code on our dump.
    mine = lab.sim.run(["squeue", "--me", "--json"]).stdout
    code = keys.command.split("python3 -c ", 1)[1][1:-1]
    code = code.replace('open("$SCRATCH/squeue.json")', "sys.stdin").replace(
        "import json;", "import json, sys;"
    )
    assert _python(code, mine) + "[rc=0]\n" == keys.output
    assert whole.command.startswith("squeue --me --json")


def test_7_3_json_of_a_pending_job_has_no_job_resources(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.3", "13:45:27")
    lab.sim.run(["sbatch", "--hold", str(lab.job_sh)])
    job = json.loads(lab.sim.run(["squeue", "--json"]).stdout)["jobs"][0]
    assert len(job) == 110 and "job_resources" not in job
    assert (job["eligible_time"], job["start_time"], job["priority"]) == (0, 0, 0)


# -- §7.4, 7.10, 7.11 ------------------------------------------------------------------------------


def test_7_4_finished_jobs_leave_the_default_listing(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.4")
    more_jobs(lab)
    lab.at("13:45:50")
    lab.check("squeue --me -h -o '%i|%j|%T'")


def test_7_10_two_held_jobs_of_one_name_newest_first(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.10", "13:53:17", first_job_id=15)
    held = (
        "sbatch --parsable --hold --job-name=dj-ABCDEFGHIJKLMNOPQRSTUVWXYZ "
        "--output=$SCRATCH/out/%x-%j.out job.sh 30"
    )
    lab.check(held)
    lab.check(held, 1)
    listing = f"squeue --name={NAME} -h -o '%i|%j|%T'"
    lab.check(listing)
    lab.sim.controller.cancel(lab.sim.job(15), by=0)
    lab.check(listing, 2)  # after "scancel --name=<exact name> 15": 16 is left
    lab.sim.controller.cancel(lab.sim.job(16), by=0)
    lab.check(listing, 3)  # "scancel --name=<name>" cancelled every job of that name


def test_7_10_a_cancelled_job_stays_in_the_all_listing(tmp_path: Path) -> None:
    """The last exchange of §7.10: CANCELLED before RUNNING (CA < R)."""
    lab = Lab(tmp_path, "7.10", "13:54:00", first_job_id=14)
    lab.sim.run(["sbatch", "--job-name=dj-SIGNAL", str(lab.job_sh)])
    lab.sim.run(["sbatch", "--hold", f"--job-name={NAME}", str(lab.job_sh)])
    lab.at("13:54:05")
    lab.sim.controller.cancel(lab.sim.job(15), by=0)
    lab.sim.controller.purge_now(15)
    lab.sim.run(["sbatch", "--hold", f"--job-name={NAME}", str(lab.job_sh)])
    lab.sim.controller.set_next_job_id(16)
    lab.sim.controller.cancel(lab.sim.job(16), by=0)
    lab.check("squeue -t all -h -o '%i|%j|%T'")


def test_7_11_unknown_ids(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.11", "14:04:00", first_job_id=10)
    lab.sim.run(["sbatch", "--job-name=dj-SIGNAL2", str(lab.job_sh)])
    lab.at("14:04:05")
    lab.check_all(
        "squeue -j 19 -h -o '%i|%T'",
        "squeue -j 999 -h -o '%i|%T'",
        "squeue --me --name=dj-NOPE -h -o '%i|%T'",
        "squeue -j 10,999 -h -o '%i|%T'",
        "squeue -j 998,999 -h -o '%i|%T'",
    )


# -- §7.5 and §7.6: states, order and times through requeues ---------------------------------------


def test_7_5_the_wrap_skips_a_held_id(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.5", "13:48:00", max_job_id=5)
    for name in ("dj-A", "dj-B"):  # ids 1 and 2's predecessors, long gone
        lab.sim.run(["sbatch", f"--job-name={name}", str(lab.job_sh)])
    lab.sim.run_for(1, 1)
    lab.sim.run_for(2, 1)
    lab.at("13:48:05")
    lab.sim.controller.set_next_job_id(2)
    lab.check("sbatch --parsable --hold --job-name=dj-HELD job.sh 5")
    lab.check("sbatch --parsable --job-name=dj-X job.sh 1")
    lab.check("sbatch --parsable --job-name=dj-Y job.sh 1")
    lab.sim.run_for(3, 1)
    lab.sim.run_for(4, 1)
    lab.at("13:48:10")
    lab.check("squeue -t all -h -o '%i|%j|%T|%r'")
    lab.check("sbatch --parsable --job-name=dj-Z job.sh 1")
    lab.check("sbatch --parsable --job-name=dj-W job.sh 1")


def test_7_5_a_reused_id_lists_the_new_job(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.5", "13:47:40", max_job_id=2)
    lab.latency(0)
    lab.sim.run(["sbatch", "--job-name=dj-REUSEB", "--comment=second", str(lab.job_sh)])
    lab.check("squeue -t all -h -o '%i|%j|%T|%V|%r|%S'")


def requeue_lab(tmp_path: Path, section: str) -> Lab:
    """§7.6a-d on one cluster: jobs 4 (requeued), 5 (held), 6 (begin in an hour), 7
    (requeuehold, release) and 8 (requeuehold State=SpecialExit)."""
    lab = Lab(tmp_path, section, "13:48:38", first_job_id=4)
    lab.latency(2)
    lab.sh(
        "sbatch --parsable --job-name=dj-REQRUN --comment='dispatch:s=1;a=0' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 600"
    )
    return lab


def test_7_6a_requeue_of_a_running_job(tmp_path: Path) -> None:
    lab = requeue_lab(tmp_path, "7.6a")
    lab.at("13:48:41")
    show = f"squeue --name=dj-REQRUN -h -O {FIELDS_OF_7_6}; date +%FT%T"
    lab.check(show)
    lab.check("scontrol requeue $(squeue --name=dj-REQRUN -h -o %i)")
    lab.check(show, 1)  # COMPLETING, RestartCnt 1, StartTime now
    lab.at("13:48:46")
    lab.check(show, 2)  # PENDING/BeginTime, submit = requeue, eligible +121 s


def _jobs_5_to_8(lab: Lab) -> None:
    lab.at("13:48:41")
    lab.sim.run(["scontrol", "requeue", "4"])
    lab.at("13:48:50")
    lab.latency(1)
    lab.sh(
        "sbatch --parsable --hold --job-name=dj-REQHELD --output=$SCRATCH/out/%x-%j.out job.sh 30"
    )
    lab.sh(
        "sbatch --parsable --begin=now+1hour --job-name=dj-REQPEND "
        "--output=$SCRATCH/out/%x-%j.out job.sh 30"
    )


def test_7_6b_pending_jobs(tmp_path: Path) -> None:
    lab = requeue_lab(tmp_path, "7.6b")
    _jobs_5_to_8(lab)
    lab.at("13:48:51")
    show5 = f"squeue -j 5 -h -O {FIELDS_OF_7_6}"
    lab.check(show5)
    lab.check("scontrol requeue 5")
    lab.check(show5, 1)
    lab.check("scontrol requeuehold 5")
    lab.check(show5, 2)
    lab.check("scontrol requeue 6")
    lab.check("scontrol requeuehold 6")
    lab.check(f"squeue -j 6 -h -O {FIELDS_OF_7_6}")


def test_7_6c_requeuehold_release_and_special_exit(tmp_path: Path) -> None:
    lab = requeue_lab(tmp_path, "7.6c")
    _jobs_5_to_8(lab)
    lab.at("13:48:53")
    lab.latency(0)
    lab.check(
        "sbatch --parsable --job-name=dj-REQHOLDRUN --output=$SCRATCH/out/%x-%j.out job.sh 600"
    )
    lab.at("13:48:56")
    show7 = f"squeue -j 7 -h -O {FIELDS_OF_7_6}; date +%T"
    lab.check(show7)
    lab.check("scontrol requeuehold 7")
    lab.at("13:49:00")
    lab.check(show7, 1)
    lab.latency(1)  # the release's scheduler pass comes after the next squeue
    lab.check("scontrol release 7")
    lab.latency(0)
    lab.check(show7, 2)
    lab.check(
        "sbatch --parsable --job-name=dj-REQSPECIAL --output=$SCRATCH/out/%x-%j.out job.sh 600"
    )
    lab.at("13:49:03")
    lab.check("scontrol requeuehold State=SpecialExit 8")
    lab.at("13:49:04")
    lab.check(f"squeue -j 8 -h -O {FIELDS_OF_7_6}")


def test_7_6d_the_default_order_before_the_restart(tmp_path: Path) -> None:
    """PENDING by priority (4, 7, then the held 5), SPECIAL_EXIT last; a pending job whose
    begin time has passed shows StartTime N/A."""
    lab = requeue_lab(tmp_path, "7.6d")
    _jobs_5_to_8(lab)
    lab.at("13:48:53")
    lab.latency(0)
    lab.sim.run(["sbatch", "--job-name=dj-REQHOLDRUN", str(lab.job_sh)])
    lab.at("13:48:56")
    lab.sim.run(["scontrol", "requeuehold", "7"])
    lab.at("13:49:00")
    lab.sim.run(["scontrol", "release", "7"])
    lab.sim.run(["sbatch", "--job-name=dj-REQSPECIAL", str(lab.job_sh)])
    lab.at("13:49:03")
    lab.sim.run(["scontrol", "requeuehold", "State=SpecialExit", "8"])
    lab.sim.controller.cancel(lab.sim.job(6), by=0)  # gone from the lab's listing
    lab.at("13:50:50")
    lab.check(f"squeue -h -O {FIELDS_OF_7_6}")


def test_7_6g_a_completed_job_requeued(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.6g", "14:06:39", first_job_id=15, min_job_age=300)
    lab.latency(3)
    lab.check("sbatch --parsable --job-name=dj-DONEREQ --output=$SCRATCH/out/%x-%j.out job.sh 1")
    lab.sim.run_for(15, 1)
    lab.at("14:06:43")
    show = f"squeue -t all -j 15 -h -O {FIELDS_OF_7_6}"
    lab.check(show)
    lab.check("scontrol requeue 15")
    lab.check(show, 1)


def test_7_6h_node_failure(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.6h", "13:54:41", first_job_id=17)
    lab.check(
        "sbatch --parsable --requeue --job-name=dj-RQYES --output=$SCRATCH/out/%x-%j.out job.sh 600"
    )
    lab.check(
        "sbatch --parsable --no-requeue --job-name=dj-RQNO --output=$SCRATCH/out/%x-%j.out job.sh 600"
    )
    lab.at("13:54:43")
    fields = "'JobID:|,Name:|,State:|,Reason:|,SubmitTime:|,EligibleTime:|,RestartCnt:'"
    lab.check(f"squeue -h -O {fields}")
    lab.check("scontrol requeue 18")
    lab.at("13:54:44")
    lab.sim.controller.node_failure("vm")  # scontrol update nodename=vm state=down
    lab.check(f"squeue -t all -h -O {fields}")
    lab.at("13:54:50")
    lab.check(f"squeue -t all -h -O {fields}", 1)  # NODE_FAIL purged
    lab.at("14:01:14")
    lab.sim.run(["scontrol", "release", "17"])


# -- §7.7 holds through StartTime -------------------------------------------------------------------


def hold_lab(tmp_path: Path) -> Lab:
    """Jobs 9-11 of §7.7 were the 6th-8th submissions since slurmctld started: their priorities
    are 0xFFFF0000 - 6, -7, -8."""
    lab = Lab(tmp_path, "7.7", "13:51:40", first_job_id=4)
    for _ in range(5):
        lab.sim.run(["sbatch", "--wrap=true"])
    for job_id in range(4, 9):
        lab.sim.run_for(job_id, 1)
    lab.at("13:51:55")
    lab.check(
        "sbatch --parsable --begin=now+1hour --job-name=dj-HOLDD "
        "--output=$SCRATCH/out/%x-%j.out job.sh 30"
    )
    return lab


def test_7_7_start_time_updates(tmp_path: Path) -> None:
    lab = hold_lab(tmp_path)
    lab.at("13:51:56")
    show = f"squeue -j 9 -h -O {FIELDS_OF_7_7}"
    eligible = "; scontrol show job 9 | grep -o 'EligibleTime=[^ ]*'"
    lab.check(show)
    updates = [
        "2030-01-01T12:34:56",
        "2038-01-19T03:14:07",
        "2038-01-19T03:14:08",
        "2099-12-31T23:59:59",
        "2100-01-01T00:00:00",
        "2999-12-31T23:59:59",
        "9999-12-31T23:59:59",
    ]
    for n, value in enumerate(updates, start=1):
        lab.check(f"scontrol update jobid=9 StartTime={value}")
        lab.check(show + eligible, n - 1)
    lab.check("scontrol update jobid=9 StartTime=10000-01-01T00:00:00")
    lab.check(show + eligible, len(updates))
    lab.check("scontrol update jobid=9 StartTime=2026-01-01T00:00:00")
    lab.check(show + eligible, len(updates) + 1)  # EligibleTime = SubmitTime, StartTime N/A
    lab.at("13:51:58")
    lab.check("scontrol update jobid=9 StartTime=2100-01-01T00:00:00", 1)  # RUNNING now


def test_7_7_hold_and_release_with_priorities(tmp_path: Path) -> None:
    lab = hold_lab(tmp_path)
    lab.at("13:52:04")
    lab.check(
        "sbatch --parsable --begin=now+1hour --job-name=dj-HOLDE "
        "--output=$SCRATCH/out/%x-%j.out job.sh 30"
    )
    lab.at("13:52:05")
    show10 = f"squeue -j 10 -h -O {FIELDS_OF_7_7B}"
    lab.check(show10)
    lab.check("scontrol update jobid=10 StartTime=2100-01-01T00:00:00; date +%T")
    lab.at("13:52:08")
    lab.check("date +%T; " + show10)
    lab.latency(3)  # "RUNNING after 2.80s"
    lab.sim.run(["scontrol", "update", "jobid=10", "StartTime=now"])
    lab.latency(1)
    lab.at("13:52:11")
    lab.check(show10, 1)  # RUNNING, EligibleTime = the release time
    lab.at("13:52:21")
    lab.check(
        "sbatch --parsable --hold --job-name=dj-HOLDH --output=$SCRATCH/out/%x-%j.out job.sh 30"
    )
    show11 = f"squeue -j 11 -h -O {FIELDS_OF_7_7B}"
    lab.check(show11)
    lab.check("scontrol update jobid=11 StartTime=2100-01-01T00:00:00")
    lab.check(show11, 1)
    lab.check("scontrol release 11")
    lab.check(show11, 2)
    lab.check("scontrol hold 11")
    lab.check(show11, 3)
    lab.check("scontrol uhold 11")
    lab.check(show11, 4)
    lab.at("13:52:27")
    lab.check("scontrol update jobid=11 StartTime=now")
    lab.check(show11, 5)
    lab.at("13:52:31")
    lab.sim.run(["scontrol", "release", "11"])
    lab.at("13:52:33")
    lab.check("scontrol hold 11")
    # RUNNING, JobHeldAdmin, priority 0. The lab's EligibleTime moved to the start (13:52:32):
    # slurmctld drops a past begin time on release and sets it on the next pass; the
    # controller keeps the StartTime=now value (13:52:27), so that column is not compared.
    got = lab.sh(show11).split("|")
    lab_line = lab.exchange(show11, 6).output.split("|")
    assert got[:4] + got[5:] == lab_line[:4] + lab_line[5:]
    assert (got[4], lab_line[4]) == ("2026-11-30T13:52:27", "2026-11-30T13:52:32")


def test_7_7_uts_edges(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.7", "14:09:12", first_job_id=3)
    lab.check("sbatch --parsable --hold --job-name=dj-UTS --comment='dispatch:s=1;a=0' job.sh 5")
    show = (
        "squeue -j 3 -h -O 'JobID:|,Name:|,State:|,Reason:|,SubmitTime:|,EligibleTime:|,StartTime:'"
    )
    lab.sim.run(["scontrol", "update", "JobId=3", "StartTime=uts2111407759"])
    done = lab.sim.run(["squeue", "-j", "3", "-h", "-O", show.split("-O ")[1].strip("'")])
    assert done.stdout == (
        "3|dj-UTS|PENDING|JobHeldUser|2026-11-30T14:09:12|2036-11-27T14:09:19|2036-11-27T14:09:19\n"
    )
    lab.at("14:09:13")
    lab.sim.run(["scontrol", "release", "3"])
    lab.at("14:09:17")
    assert lab.sh(show) == lab.exchange(f"scontrol release 3; sleep 4; {show}").output
    for value in ("4294967293", "4294967294", "4294967295", "4294967296", "253402300799"):
        command = f"scontrol update JobId=3 StartTime=uts{value}; {show}; " + (
            "scontrol show job 3 | grep -o 'EligibleTime=[^ ]*'"
        )
        lab.check(command)
    lab.check(
        f"scontrol update JobId=3 StartTime=uts253402300800; {show}; "
        "scontrol show job 3 | grep -o 'EligibleTime=[^ ]*'"
    )
    lab.check(f"scontrol update JobId=3 StartTime=uts0; {show}")


def test_7_8_the_comment_in_squeue(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.8", "13:52:46", first_job_id=12, job_comment=False)
    lab.check(
        "sbatch --parsable --job-name=dj-NOCOMMENT --comment='dispatch:s=2;a=1' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 3"
    )
    lab.check("squeue -j 12 -h -o '%i|%j|%T|%k'")


def test_7_8_rewriting_the_comment(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.8", "13:53:30", first_job_id=16)
    lab.check(
        "sbatch --parsable --job-name=dj-CMT --comment='dispatch:s=1;a=0' "
        "--output=$SCRATCH/out/%x-%j.out job.sh 4"
    )
    lab.at("13:53:31")
    lab.check("squeue -j 16 -h -o '%i|%T|%k'")
    lab.check("scontrol update jobid=16 Comment='dispatch:s=1;a=1'")
    lab.check("squeue -j 16 -h -o '%i|%T|%k'", 1)


def test_7_8_a_1024_byte_comment(tmp_path: Path) -> None:
    lab = Lab(tmp_path, "7.8", "14:10:00", first_job_id=6)
    comment = "c" * 1024
    assert (
        lab.sim.run(
            [
                "sbatch",
                "--parsable",
                "--hold",
                "--job-name=dj-CLEN1024",
                f"--comment={comment}",
                str(lab.job_sh),
            ]
        ).stdout
        == "6\n"
    )
    done = lab.sim.run(["squeue", "--name=dj-CLEN1024", "-h", "-o", "%k"])
    assert len(done.stdout) == 1025


# -- behaviour of the real source beyond the transcripts --------------------------------------------


def test_the_default_listing(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.2")
    more_jobs(lab)
    lab.at("13:45:40")
    assert lab.sim.run(["squeue"]).stdout == (
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
        "                 3     debug dj-X,dj-     root PD       0:00      1 (Resources)\n"
        "                 1     debug dj-ABCDE     root  R       0:12      1 vm\n"
        "                 2     debug dj-abcde     root  R       0:05      1 vm\n"
    )


def test_the_long_listing_starts_with_the_date(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.2")
    lab.at("13:45:29")
    assert lab.sim.run(["squeue", "-l"]).stdout == (
        "Mon Nov 30 13:45:29 2026\n"
        "             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES"
        " NODELIST(REASON)\n"
        "                 1     debug dj-ABCDE     root  RUNNING       0:01 UNLIMITED      1 vm\n"
    )


def test_slurm_time_format_and_state_filters(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.2")
    more_jobs(lab)
    lab.at("13:45:49")  # job 1 COMPLETED at 13:45:48, purged at 13:45:50
    env = {"SLURM_TIME_FORMAT": "%s"}
    done = lab.sim.run(["squeue", "-h", "-t", "cd,R", "-o", "%i %V %S"], env=env)
    assert done.stdout == (
        "1 1796046327 1796046328\n2 1796046334 1796046335\n3 1796046334 1796046348\n"
    )
    assert lab.sim.run(["squeue", "-h", "-t", "r", "-o", "%i"]).stdout.split() == ["2", "3"]
    bad = lab.sim.run(["squeue", "-t", "bogus"])
    assert bad.returncode == 1
    assert bad.stderr.startswith("squeue: error: Invalid job state specified: bogus\n")
    assert "Valid job states include: PENDING,RUNNING,SUSPENDED" in bad.stderr


def test_errors_of_the_command_line(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.1")
    run = lab.sim.run
    assert run(["squeue", "-j", "abc"]).stderr == "squeue: error: Invalid job id: abc\n"
    done = run(["squeue", "-o", "%i", "-O", "JobID"])
    assert (done.returncode, done.stderr) == (
        1,
        "squeue: error: -O (--Format) is incompatible with -o (--format)\n",
    )
    done = run(["squeue", "-x"])
    assert (
        done.stderr == "squeue: invalid option -- 'x'\nTry \"squeue --help\" for more information\n"
    )
    done = run(["squeue", "-h", "-S", "X", "-o", "%i"])
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "squeue: error: Invalid sort specification: X\n",
    )
    done = run(["squeue", "-u", "nobody", "-h"])
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == "squeue: error: Invalid user: nobody\n\n"


def test_slurmctld_down(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.1")
    lab.sim.controller.down_until = lab.sim.controller.now + 60
    done = lab.sim.run(["squeue"])
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
    )


def test_an_unknown_letter_prints_its_token(tmp_path: Path) -> None:
    lab = first_jobs(tmp_path, "7.1")
    lab.at("13:45:29")
    done = lab.sim.run(["squeue", "-o", "<%i|%%|%5j>"])
    # strtok collapses "%%": "|" is a letter of its own, invalid, printed with its "%"
    assert done.stderr == "squeue: error: Invalid job format specification: |\n"
    assert done.stdout == "<JOBID|%|NAME >\n<1|%|dj-AB>\n"


# -- parsers: Hypothesis ---------------------------------------------------------------------------

SPEC_TEXT = st.lists(
    st.sampled_from([*"%.:|,-+ 0123456789ijTtkVSrRlNaZxyz", "JobID", "Name", "State", "all"]),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(SPEC_TEXT)
def test_random_format_specs_never_crash(spec: str) -> None:
    for parser in (parse_format, parse_long_format):
        items, errors = parser(spec)
        assert all(
            line.startswith("squeue: error: Invalid job format specification: ") for line in errors
        )
        render_line(items, None, {})


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.integers(-50, 50), st.booleans(), st.booleans())
def test_print_str_pads_and_cuts(value: str, width: int, right: bool, cut: bool) -> None:
    raw = value.encode("utf-8", "surrogateescape")
    text = print_str(value, width, right, cut)
    if width > 0 and (not right or cut):
        assert len(text) == width
        assert text.strip(b" ") in raw or raw.startswith(text.rstrip(b" ")) or right
    if width > 0 and not right:
        assert text == raw[:width].ljust(width)
    if width > 0 and right:
        assert text == (raw.rjust(width)[:width] if cut else raw.rjust(width))
    if width == 0:
        assert text == raw
    if width < 0:
        assert text == raw + b" "


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(LETTERS)), st.integers(0, 30), st.booleans())
def test_o_widths(letter: str, width: int, right: bool) -> None:
    spec = f"%{'.' if right else ''}{width or ''}{letter}"
    [item], errors = parse_format(spec)
    assert errors == [] and (item.key, item.width, item.right) == (LETTERS[letter], width, right)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(sorted(LONG_NAMES)),
    st.one_of(st.none(), st.integers(-5, 30)),
    st.booleans(),
    st.sampled_from(["", "|", "@@"]),
)
def test_capital_o_specs(name: str, size: int | None, right: bool, suffix: str) -> None:
    if size is None and not right and not suffix:
        [item], errors = parse_long_format(name.upper())
        assert (item.width, item.suffix) == (20, None)
    else:
        spec = f"{name}:{'.' if right else ''}{'' if size is None else size}{suffix}"
        [item], errors = parse_long_format(spec)
        assert (item.width, item.right) == (size or 0, right)
        assert item.suffix == (suffix or None)
    assert errors == [] and item.key == LONG_NAMES[name]


def test_every_field_has_a_header() -> None:
    assert set(LETTERS.values()) <= set(FIELDS)
    assert set(LONG_NAMES.values()) <= set(FIELDS) | {"num_tasks"}


def test_ranged_node_lists() -> None:
    assert ranged(["vm"]) == "vm"
    assert ranged(["n1", "n2", "n3", "n5"]) == "n[1-3,5]"
    assert ranged(["n01", "n02"]) == "n[01-02]"


def test_fixtures_are_whole() -> None:
    assert len(transcript("7.7")) == 57
    assert transcript("7.1")[-1].output.endswith("0                   \n[rc=0]\n")


@pytest.mark.parametrize("section", ["7.1", "7.2", "7.6a", "7.6b", "7.6c"])
def test_every_exchange_of_the_short_sections_is_replayed(section: str, tmp_path: Path) -> None:
    replays = {
        "7.1": test_7_1_formats,
        "7.2": test_7_2_name_matching,
        "7.6a": test_7_6a_requeue_of_a_running_job,
        "7.6b": test_7_6b_pending_jobs,
        "7.6c": test_7_6c_requeuehold_release_and_special_exit,
    }
    replays[section](tmp_path)
