"""The scenarios (:data:`SCENARIOS`), each a script of Slurm commands whose answers the
simulator must give as the real cluster does."""

from __future__ import annotations

from typing import Final

from tools.fidelity.cluster import ClusterInfo, FidelityError
from tools.fidelity.scenario import (
    GONE,
    Run,
    Scenario,
    Step,
    bring_back,
    lose_node,
    run,
    sleep,
    submit,
    wait_state,
)

_LONG_FIELDS: Final = (
    "JobID:|,Name:|,State:|,Reason:|,SubmitTime:|,EligibleTime:|,StartTime:|,RestartCnt:|,Comment:|"
)
_ACCT: Final = "JobID,JobName,State,Comment,Submit,Eligible,Start,End,ExitCode"


def _formats(_: ClusterInfo) -> list[Step]:
    return [
        *submit("A", "fid-Formats", "--comment=dispatch:s=1;a=1 | spaced"),
        wait_state("A", "RUNNING", 15),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%j|%T|%k|%V|%r|%P|%u|%D|%C"),
        run("squeue", "-j", "{A}", "-h", "-O", _LONG_FIELDS),
        run("squeue", "-j", "{A}", "-h", "-O", "JobID,Name,State,Partition"),
        run("squeue", "-j", "{A}", "-h", "-O", "JobID|,Name|,State:0|"),
        run("squeue", "-j", "{A}", "-o", "%.10i %.9P %.20j %.8T %R"),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%V|%S|%e", time_format="standard"),
        run("scontrol", "show", "job", "{A}"),
        run("sacct", "-j", "{A}", "-X", "-P", "-o", _ACCT),
        run("sacct", "-j", "{A}", "-P", "-o", "JobID,JobName%40,State,ExitCode"),
        run("sacct", "-j", "{A}", "-X", "-o", "JobID,JobName,State,ExitCode"),
        run("scancel", "{A}"),
        wait_state("A", "CANCELLED", 15),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-o", "%i|%T|%r"),
        run("sacct", "-j", "{A}", "-X", "-P", "-o", _ACCT),
        run("sacct", "-j", "{A}", "-n", "-P", "-o", "JobID,State,ExitCode"),
    ]


def _names(_: ClusterInfo) -> list[Step]:
    return [
        *submit("A", "fid-CaseName", hold=True),
        *submit("B", "fid-casename", hold=True),
        *submit("C", "fid-x,fid-y", hold=True),
        run("squeue", "-j", "{A},{B},{C}", "-h", "-o", "%i|%j|%T|%r"),
        run("squeue", "--name=fid-CASENAME", "-h", "-o", "%i|%j"),
        run("squeue", "--name=fid-casename,fid-nothing", "-h", "-o", "%i|%j"),
        run("squeue", "--name=fid-x,fid-y", "-h", "-o", "%i|%j"),
        run("squeue", "--name=fid-x", "-h", "-o", "%i|%j"),
        run("squeue", "--name=fid-nothing", "-h", "-o", "%i|%j"),
        run("scancel", "--name=fid-casename", "{A}"),
        run("scancel", "--name=fid-other", "{A}"),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-o", "%i|%j|%T"),
        run("scancel", "--name=fid-CaseName", "{A}"),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-o", "%i|%j|%T"),
        run("scancel", "--name=fid-CaseName", "{A}"),
        run("scancel", "{A}"),
        run("scancel", "--name=fid-x,fid-y"),
        run("squeue", "-t", "all", "-j", "{A},{B},{C}", "-h", "-o", "%i|%j|%T"),
        run("scancel", "--name=fid-casename"),
        run("squeue", "-t", "all", "-j", "{A},{B},{C}", "-h", "-o", "%i|%j|%T"),
        run(
            "sacct", "--name=fid-casename", "-S", "{START}", "-X", "-P", "-o", "JobID,JobName,State"
        ),
        run("sacct", "-j", "{C}", "-X", "-P", "-o", "JobID,JobName,State"),
    ]


def _requeue_running(_: ClusterInfo) -> list[Step]:
    acct = ["sacct", "-j", "{A}", "-D", "-X", "-P", "-S", "{START}", "-o", _ACCT]
    observe = ["squeue", "-j", "{A}", "-h", "-O", _LONG_FIELDS]
    return [
        *submit("A", "fid-Requeue", "--comment=dispatch:s=1;a=1"),
        wait_state("A", "RUNNING", 15),
        run(*observe),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%Q"),
        run("scontrol", "requeue", "{A}"),
        run(*observe),
        wait_state("A", "PENDING", 15),
        run(*observe),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%Q"),
        run("scontrol", "show", "job", "{A}"),
        run(*acct),
        run("sacct", "-j", "{A}", "-X", "-P", "-o", "JobID,JobName,State,Comment"),
        wait_state("A", "RUNNING", 75),
        run(*observe),
        run(*acct),
        run("scancel", "{A}"),
        wait_state("A", "CANCELLED", 15),
        run(*observe[:1], "-t", "all", *observe[1:]),
        run(*acct),
    ]


def _requeue_pending(_: ClusterInfo) -> list[Step]:
    observe = ["-h", "-O", "JobID:|,State:|,Reason:|,RestartCnt:|,EligibleTime:|,StartTime:|"]
    return [
        *submit("A", "fid-ReqHeld", hold=True),
        *submit("B", "fid-ReqBegin", "--begin=now+1hour"),
        *submit("C", "fid-ReqNo", "--no-requeue"),
        wait_state("C", "RUNNING", 15),
        run("scontrol", "requeue", "{A}"),
        run("scontrol", "requeuehold", "{A}"),
        run("scontrol", "requeue", "{B}"),
        run("squeue", "-j", "{A},{B}", *observe),
        run("scontrol", "requeue", "{C}"),
        run("scontrol", "update", "JobId={C}", "Requeue=1"),
        run("scontrol", "show", "job", "-o", "{C}"),
        run("scontrol", "requeue", "{C}"),
        wait_state("C", "PENDING", 15),
        run("squeue", "-j", "{C}", *observe),
        run("scontrol", "requeue", "{C}"),
        run("scancel", "{A}", "{B}", "{C}"),
        run("squeue", "-t", "all", "-j", "{A},{B},{C}", "-h", "-o", "%i|%T|%r"),
    ]


def _holds(_: ClusterInfo) -> list[Step]:
    observe = ["-h", "-O", "JobID:|,State:|,Reason:|,EligibleTime:|,StartTime:|"]
    return [
        *submit("A", "fid-HoldBegin", "--begin=now+1hour"),
        sleep(1),
        run("squeue", "-j", "{A}", *observe),
        run("scontrol", "update", "JobId={A}", "StartTime=2100-01-01T00:00:00"),
        run("squeue", "-j", "{A}", *observe),
        run("scontrol", "show", "job", "{A}"),
        sleep(4),
        run("squeue", "-j", "{A}", *observe),
        run("scontrol", "update", "JobId={A}", "StartTime=10000-01-01T00:00:00"),
        run("scontrol", "update", "JobId={A}", "StartTime=uts0"),
        run("scontrol", "update", "JobId={A}", "StartTime=now"),
        wait_state("A", "RUNNING", 15),
        run("squeue", "-j", "{A}", *observe),
        run("scontrol", "update", "JobId={A}", "StartTime=2100-01-01T00:00:00"),
        run("scontrol", "hold", "{A}"),
        run("squeue", "-j", "{A}", *observe),
        *submit("B", "fid-HoldHeld", hold=True),
        *submit("C", "fid-HoldOther", "--begin=now+1hour"),
        run("squeue", "-j", "{A},{B},{C}", "-h", "-o", "%i|%Q|%r"),
        run("squeue", "-j", "{B}", *observe),
        run("scontrol", "update", "JobId={B}", "StartTime=2100-01-01T00:00:00"),
        run("scontrol", "release", "{B}"),
        run("squeue", "-j", "{B}", *observe),
        run("squeue", "-j", "{A},{B},{C}", "-h", "-o", "%i|%Q|%r"),
        run("scontrol", "hold", "{B}"),
        run("squeue", "-j", "{B}", *observe),
        run("scontrol", "uhold", "{B}"),
        run("scontrol", "update", "JobId={B}", "StartTime=now"),
        run("squeue", "-j", "{B}", *observe),
        run("scontrol", "release", "{B}"),
        wait_state("B", "RUNNING", 15),
        run("squeue", "-j", "{B}", *observe),
        run("squeue", "-j", "{A},{B},{C}", "-h", "-o", "%i|%Q|%r"),
        run("scancel", "{A}", "{B}", "{C}"),
        wait_state("B", "CANCELLED", 15),
        run("squeue", "-t", "all", "-j", "{A},{B},{C}", "-h", "-o", "%i|%T|%r"),
        run(
            "sacct",
            "-j",
            "{A},{B},{C}",
            "-X",
            "-P",
            "-o",
            "JobID,JobName,State,Eligible,Start,End,ExitCode",
        ),
    ]


def _unknown_ids(_: ClusterInfo) -> list[Step]:
    return [
        *submit("A", "fid-Gone", seconds=1),
        wait_state("A", "COMPLETED", 20),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-o", "%i|%j|%T|%r"),
        wait_state("A", GONE, 30),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%T"),
        run("squeue", "-j", "999", "-h", "-o", "%i|%T"),
        run("squeue", "-j", "{A},999", "-h", "-o", "%i|%T"),
        run("scontrol", "show", "job", "{A}"),
        run("scontrol", "update", "JobId={A}", "StartTime=now"),
        run("scontrol", "update", "JobId={A}", "Comment=late"),
        run("scontrol", "requeue", "{A}"),
        run("scontrol", "hold", "{A}"),
        run("scontrol", "release", "{A}"),
        run("scancel", "{A}"),
        run("scancel", "--name=fid-Gone", "{A}"),
        run("sacct", "-j", "{A}", "-X", "-n", "-P", "-o", "JobID,JobName,State,ExitCode"),
        run("sacct", "-j", "{A}", "-P", "-o", "JobID,JobName,State,ExitCode,Elapsed"),
    ]


_BAD_SCRIPT: Final = "#!/bin/sh\ntrue\n"


def _bad_sbatch(*bad: str, stdin: str = _BAD_SCRIPT) -> Run:
    """An sbatch the client or slurmctld refuses, ``bad`` last: should it pass after all, the
    job is held and named ``fid-Bad`` (the runner cancels it)."""
    argv = ["sbatch", "--parsable", "--hold", "--job-name=fid-Bad", "--output=/dev/null"]
    return run(*argv, *bad, stdin=stdin)


def _bad_input(info: ClusterInfo) -> list[Step]:
    """Bad options and arguments of every command, refused before anything changes: by
    getopt_long, by the command's own checks, or by slurmctld before a job exists. Ids are
    MaxJobId and above, which slurmctld never issues. (``sbatch --nodes=0`` is left out: a
    held one is accepted with no nodes, and without ``--hold`` slurmctld refuses it only
    after the job record, and so its id, exists.)"""
    never, never2 = str(info.max_job_id), str(info.max_job_id + 1)
    both = f"{never},,{never2}"
    return [
        # sbatch: getopt_long's '?' and the first pass's checks exit(-1): 255 ...
        _bad_sbatch("--no-such-option"),
        _bad_sbatch("-Z"),
        _bad_sbatch("--job-name"),
        _bad_sbatch("-J"),
        _bad_sbatch("-N"),
        _bad_sbatch("--hold=1"),
        _bad_sbatch("--requeue=1"),
        _bad_sbatch("--no"),
        _bad_sbatch("--nodes=abc"),
        _bad_sbatch("--nodes=3-1"),
        _bad_sbatch("--time=xx"),
        _bad_sbatch("--signal=NOPE"),
        _bad_sbatch("--signal=B:USR1@99999"),
        _bad_sbatch("--begin=garbage"),
        _bad_sbatch("--mem=abc"),
        _bad_sbatch("--open-mode=x"),
        _bad_sbatch("--no-such-option", "--nodes=abc"),
        _bad_sbatch("--nodes=abc", "--no-such-option"),
        # ... parse_int exits 1 ...
        _bad_sbatch("--ntasks=abc"),
        _bad_sbatch("--cpus-per-task=0"),
        _bad_sbatch("--ntasks-per-node=x"),
        _bad_sbatch("--ntasks=abc", "--nodes=abc"),
        # ... the script's directives: the second pass, after the script is read ...
        _bad_sbatch(stdin="#!/bin/sh\n#SBATCH --no-such-option\ntrue\n"),
        _bad_sbatch(stdin="#!/bin/sh\n#SBATCH --nodes=abc\ntrue\n"),
        _bad_sbatch(stdin="#!/bin/sh\n#SBATCH --ntasks=abc\ntrue\n"),
        _bad_sbatch("--nodes=1", stdin="#!/bin/sh\n#SBATCH --nodes=abc\ntrue\n"),
        # ... the script itself and the final checks: exit 1 ...
        _bad_sbatch(stdin=""),
        _bad_sbatch(stdin="echo no interpreter\n"),
        _bad_sbatch("/nonexistent/script.sh"),
        _bad_sbatch("--wrap=true", "extra"),
        _bad_sbatch("--quiet", "--verbose"),
        # ... and slurmctld's refusal before a job record exists: exit 1.
        _bad_sbatch("--partition=fid-nosuch"),
        # squeue: exit 1, except a bad -o/-O field, user or empty id item (reported, exit 0).
        run("squeue", "--no-such-option"),
        run("squeue", "-Z"),
        run("squeue", "--name"),
        run("squeue", "-n"),
        run("squeue", "--sort"),
        run("squeue", "--no"),
        run("squeue", "-j", "abc"),
        run("squeue", "-jabc"),
        run("squeue", "--jobs=abc"),
        run("squeue", "-j", both, "-h"),
        run("squeue", "-j", never, "-h"),
        run("squeue", "-h", "-j", never, "-o", "%i|%Z"),
        run("squeue", "-h", "-t", "all", "-o", "%i|%_"),
        run("squeue", "-h", "-t", "all", "-O", "JobID,nosuchfield"),
        run("squeue", "-h", "-t", "NOPE"),
        run("squeue", "-h", "-u", "fid-nosuchuser"),
        run("squeue", "-h", "-S", "Z"),
        run("squeue", "--iterate=abc"),
        run("squeue", "extra"),
        run("squeue", "-j", never, "extra"),
        run("squeue", "-o", "%i", "-O", "JobID"),
        run("squeue", "-l", "-o", "%i"),
        run("squeue", "-t", "NOPE", "--no-such-option"),
        # sacct: getopt_long's message alone, exit 1.
        run("sacct", "--no-such-option"),
        run("sacct", "-Z"),
        run("sacct", "--name"),
        run("sacct", "-j"),
        run("sacct", "--no"),
        run("sacct", "--u=1"),
        run("sacct", "-j", "abc"),
        run("sacct", "-j", f"{never}.x"),
        run("sacct", "-S", "garbage"),
        run("sacct", "-E", "garbage"),
        run("sacct", "-s", "NOPE"),
        run("sacct", "-j", never, "-o", "nosuchfield"),
        run("sacct", "-n", "-u", "fid-nosuchuser"),
        run("sacct", "-S", "now", "-E", "now-1hour"),
        run("sacct", "--whole-hetjob=x"),
        run("sacct", "-l", "-o", "jobid"),
        run("sacct", "extra"),
        run("sacct", "-S", "garbage", "--no-such-option"),
        # scancel: exit 1, before anything is sent.
        run("scancel", "--no-such-option", never),
        run("scancel", "-Z", never),
        run("scancel", "--name"),
        run("scancel", "-n"),
        run("scancel", "--s=1", never),
        run("scancel"),
        run("scancel", "abc"),
        run("scancel", both),
        run("scancel", f"{never}.x"),
        run("scancel", f"{never}_abc"),
        run("scancel", "0"),
        run("scancel", "--", "-5"),
        run("scancel", "--signal=NOPE", never),
        run("scancel", "-t", "NOPE", never),
        run("scancel", "-u", "fid-nosuchuser"),
        run("scancel", "--signal=NOPE", "--no-such-option", never),
        # scontrol: exit 1.
        run("scontrol", "--no-such-option", "show", "job"),
        run("scontrol", "-Z", "show", "job"),
        run("scontrol", "--u"),
        run("scontrol"),
        run("scontrol", stdin=f"show job {never}\nnosuchcommand\n"),
        run("scontrol", "nosuchcommand"),
        run("scontrol", "sh", "job", never),
        run("scontrol", "sho", "job", never),
        run("scontrol", "show"),
        run("scontrol", "show", "nosuchentity"),
        run("scontrol", "show", "job", "abc"),
        run("scontrol", "show", "job", both),
        run("scontrol", "show", "job", never, "extra"),
        run("scontrol", "show", f"job={never}"),
        run("scontrol", "update"),
        run("scontrol", "update", "Foo=1"),
        run("scontrol", "update", "JobId=abc", "Foo=1"),
        run("scontrol", "update", f"JobId={never}", "Comment=x", "Foo=1"),
        run("scontrol", "update", "JobId=abc", "StartTime=now"),
        run("scontrol", "update", f"JobId={never}-1", "Comment=x"),
        run("scontrol", "update", f"JobId={never}", "junk"),
        run("scontrol", "update", f"JobId={never}", "Comment"),
        run("scontrol", "update", "JobId", never, "Comment", "x"),
        run("scontrol", "update", f"JobId={never}", "StartTime=garbage"),
        run("scontrol", "update", f"JobId={never}", "Requeue=x"),
        run("scontrol", "update", "JobId="),
        run("scontrol", "update", "JobName=fid-nosuch", "Comment=x"),
        run("scontrol", "hold"),
        run("scontrol", "hold", "abc"),
        run("scontrol", "uhold", never),
        run("scontrol", "release", both),
        run("scontrol", "release", never, never2),
        run("scontrol", "requeue"),
        run("scontrol", "requeue", "abc"),
        run("scontrol", "requeuehold", "abc"),
    ]


def _wrap_start(info: ClusterInfo) -> int:
    return info.max_job_id - 3


def _wrap_requires(info: ClusterInfo) -> str | None:
    if not 5 <= info.id_count <= 40:
        return (
            f"needs 5 to 40 job ids to wrap in a short scenario (MaxJobId {info.max_job_id} - "
            f"FirstJobId {info.first_job_id}; ci/slurm-up.sh --max-job-id sets it)"
        )
    return None


def _id_wrap(info: ClusterInfo) -> list[Step]:
    """A held keeper at MaxJobId - 3; held fillers (cancelled in batches, waited out of
    memory) take the ids round past MaxJobId - 1 to FirstJobId and on, until the counter
    comes back to the keeper, which is still in memory and so skipped."""
    room = max(2, min(10, min(info.max_job_count, info.id_count + 1) - 4))
    steps: list[Step] = [*submit("K", "fid-WrapKeep", hold=True)]
    remaining = info.id_count - 1  # ids between the keeper and itself, round the wrap
    number = 0
    while remaining > 0:
        batch = min(room, remaining)
        labels = []
        for _ in range(batch):
            number += 1
            label = f"F{number}"
            labels.append(label)
            steps += submit(label, f"fid-WrapFill{number:02d}", hold=True)
        remaining -= batch
        steps.append(run("squeue", "-t", "all", "-h", "-o", "%i|%j|%T|%r"))
        steps.append(run("scancel", *(f"{{{label}}}" for label in labels)))
        steps.append(wait_state(labels[-1], GONE, 30))
    steps += submit("S", "fid-WrapSkip", hold=True)
    steps.append(run("squeue", "-t", "all", "-h", "-o", "%i|%j|%T|%r"))
    steps.append(run("scancel", "{K}", "{S}"))
    return steps


def _comment_steps(_: ClusterInfo) -> list[Step]:
    fields = ["-X", "-P", "-o", "JobID,JobName,State,Comment"]
    return [
        *submit("A", "fid-Comment", "--comment=dispatch:s=1;a=1", seconds=4),
        wait_state("A", "RUNNING", 15),
        run("sacct", "-j", "{A}", *fields),
        run("scontrol", "update", "JobId={A}", "Comment=dispatch:s=1;a=2"),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%T|%k"),
        wait_state("A", "COMPLETED", 20),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-O", "JobID:|,State:|,Comment:|"),
        run("sacct", "-j", "{A}", *fields),
        run("sacct", "-j", "{A}", "-P", "-o", "JobID,State,Comment,ExitCode"),
        run("scontrol", "update", "JobId={A}", "Comment=after-end"),
        *submit("B", "fid-CommentCancel", "--comment=dispatch:s=2;a=1", hold=True),
        run("sacct", "-j", "{B}", *fields),
        run("scancel", "{B}"),
        wait_state("B", "CANCELLED", 15),
        run("sacct", "-j", "{B}", *fields),
    ]


def _requeue_ok(info: ClusterInfo) -> str | None:
    if not info.job_requeue:
        return "needs JobRequeue=1"
    if info.cred_expire > 30:
        return (
            f"waits the requeue delay (AuthInfo cred_expire {info.cred_expire} s + 1): needs "
            "cred_expire <= 30 (ci/slurm-up.sh --cred-expire 5)"
        )
    return None


def _short_age(info: ClusterInfo) -> str | None:
    if info.min_job_age > 10:
        return f"waits for purges: needs MinJobAge <= 10 (it is {info.min_job_age})"
    return None


def _node_loss(info: ClusterInfo) -> list[Step]:
    """Two jobs on the first node (slurmctld and the simulator both fill the first node
    first), one ``--no-requeue`` and one ``--requeue``; the node is lost and comes back: the
    first ends NODE_FAIL, the second is requeued (restart count 1) and runs again."""
    node = info.nodes[0]
    return [
        *submit("A", "fid-lost", "--no-requeue"),
        *submit("B", "fid-requeued", "--requeue"),
        wait_state("A", "RUNNING", 20),
        wait_state("B", "RUNNING", 20),
        run("squeue", "-h", "-j", "{A},{B}", "-o", "%i|%j|%T|%N"),
        lose_node(node),
        bring_back(node),
        wait_state("A", ("NODE_FAIL", GONE), 30),  # purged MinJobAge s after its end, or later
        run("squeue", "-h", "-t", "all", "-j", "{A},{B}", "-o", "%i|%j|%T|%r"),
        run("scontrol", "show", "job", "-o", "{A}"),
        wait_state("B", "RUNNING", 60),
        run("scontrol", "show", "job", "-o", "{B}"),
        run("sacct", "-X", "-P", "-j", "{A}", "-o", "JobID,JobName,State,ExitCode,End"),
        run("sacct", "-X", "-D", "-P", "-j", "{B}", "-o", "JobID,JobName,State,ExitCode"),
        run("scancel", "{B}"),
    ]


def _two_nodes(info: ClusterInfo) -> str | None:
    if len(info.nodes) < 2:
        return f"needs a cluster of 2 nodes or more, not {len(info.nodes)}"
    return _requeue_ok(info)


SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        "formats",
        "squeue -o/-O (comment last, widths, a bad spec), scontrol show job, sacct -P and "
        "fixed columns, of a running and then a cancelled job whose comment holds '|' and spaces",
        _formats,
    ),
    Scenario(
        "names",
        "squeue --name is case-insensitive and splits commas; scancel --name is "
        "case-sensitive and ANDed with ids; a name holding a comma; sacct --name",
        _names,
    ),
    Scenario(
        "requeue-running",
        "scontrol requeue of a running job: COMPLETING, RestartCnt, SubmitTime moves, the "
        "requeue delay, the restart, sacct -D rows",
        _requeue_running,
        requires=_requeue_ok,
    ),
    Scenario(
        "requeue-pending",
        "scontrol requeue/requeuehold of pending jobs (held, future begin), of a --no-requeue "
        "job, then after Requeue=1",
        _requeue_pending,
        requires=_requeue_ok,
    ),
    Scenario(
        "holds",
        "holds through scontrol update StartTime=... and release with StartTime=now; hold, "
        "uhold and release of a --hold job; bad times; hold of a running job",
        _holds,
    ),
    Scenario(
        "unknown-ids",
        "a purged id: squeue -j, scontrol show/update/requeue/hold/release, scancel with and "
        "without a filter; accounting still remembers it",
        _unknown_ids,
        requires=_short_age,
    ),
    Scenario(
        "bad-input",
        "bad options and arguments of sbatch, squeue, sacct, scancel and scontrol: getopt_long's "
        "refusals, bad values, ids and fields, missing operands; the messages and exit statuses",
        _bad_input,
        mode_free=True,
    ),
    Scenario(
        "id-wrap",
        "ids wrap from MaxJobId - 1 to FirstJobId (MaxJobId itself is never issued) and skip "
        "an id still in memory",
        _id_wrap,
        start_id=_wrap_start,
        requires=lambda info: _wrap_requires(info) or _short_age(info),
    ),
    Scenario(
        "comment-at-end",
        "with AccountingStoreFlags=job_comment, accounting gets the comment only when a record "
        "ends (the value at the end), for a completed and a cancelled job",
        _comment_steps,
        job_comment=True,
    ),
    Scenario(
        "node-loss",
        "a node lost under two running jobs: the --no-requeue one ends NODE_FAIL, the "
        "--requeue one is requeued and runs again once the node is back",
        _node_loss,
        job_comment=True,
        requires=_two_nodes,
        loses_nodes=True,
    ),
    Scenario(
        "comment-absent",
        "without AccountingStoreFlags=job_comment, accounting never gets the comment",
        _comment_steps,
        job_comment=False,
    ),
)


def scenario_named(name: str) -> Scenario:
    for scenario in SCENARIOS:
        if scenario.name == name:
            return scenario
    raise FidelityError(f"no scenario {name!r} (known: {', '.join(s.name for s in SCENARIOS)})")
