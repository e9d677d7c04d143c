"""scontrol: ``show job [-o] [id]``, ``show config``, ``update JobId=...``, ``requeue``,
``requeuehold``, ``hold``, ``uhold`` and ``release``, with 22.05's messages and exit statuses."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, TypeVar

from simulators.slurm.commands.getopt import Opt, UsageError, parse
from simulators.slurm.controller import (
    ALREADY_DONE,
    INVALID_JOB_ID,
    NOT_PENDING,
    UNAVAILABLE,
    HoldKind,
    Job,
    JobState,
    SlurmError,
)
from simulators.slurm.sim import Output, command
from simulators.slurm.timefmt import TimeSpecError, format_time, parse_time

if TYPE_CHECKING:
    from simulators.slurm.controller import Controller
    from simulators.slurm.sim import SlurmSim

T = TypeVar("T")
PROG: Final = "scontrol"
SPEC: Final = [
    Opt("oneliner", ("oneliner",), "o", "none"),
    Opt("details", ("details",), "d", "none"),
    Opt("quiet", ("quiet",), "Q", "none"),
    Opt("verbose", ("verbose",), "v", "none"),
    Opt("all", ("all",), "a", "none"),
    Opt("help", ("help",), "h", "none"),
    Opt("version", ("version",), "V", "none"),
]


@command(PROG)
def scontrol(sim: SlurmSim, args: list[str], stdin: str | None, env: Mapping[str, str]) -> Output:
    result = Output()
    try:
        cli = parse(PROG, args, SPEC)
    except UsageError as error:
        for line in error.lines:
            result.err(line)
        result.returncode = 1
        return result
    if cli.has("version"):
        result.out(f"slurm {sim.config.version}")
        return result
    words = cli.operands
    if not words:
        result.err("scontrol: no command given")
        result.returncode = 1
        return result
    verb, rest = words[0].lower(), words[1:]
    if verb == "show":
        _show(sim, rest, cli.has("oneliner"), env, result)
    elif verb == "update":
        _update(sim, rest, result)
    elif verb in ("requeue", "requeuehold"):
        _requeue(sim, rest, verb == "requeuehold", result)
    elif verb in ("hold", "uhold", "release"):
        _hold(sim, verb, rest, result)
    else:
        result.err(f"invalid keyword: {words[0]}")
        result.returncode = 1
    return result


# -- show --------------------------------------------------------------------------------------


def _show(
    sim: SlurmSim, words: list[str], oneliner: bool, env: Mapping[str, str], result: Output
) -> None:
    what = words[0].lower() if words else ""
    controller = sim.controller
    if what in ("job", "jobs", "jobid"):
        if not controller.available():
            result.err(f"slurm_load_jobs error: {UNAVAILABLE}")
            result.returncode = 1
            return
        if len(words) > 1:
            ids = _ids(words[1])
            jobs = [controller.jobs[i] for i in ids if i in controller.jobs]
            if not jobs:
                result.err(f"slurm_load_jobs error: {INVALID_JOB_ID}")
                result.returncode = 1
                return
        else:
            jobs = sorted(controller.jobs.values(), key=lambda j: j.seq)
            if not jobs:
                result.out("No jobs in the system")
                return
        # slurm_sprint_job_info: lines end with line_end ("\n   ", or " " for -o), the last
        # (Power=) too, then the record ends with "\n\n" (or "\n").
        line_end = " " if oneliner else "\n   "
        for job in jobs:
            fields = [line for line in job_fields(job, controller, env) if line]
            result.stdout += line_end.join(" ".join(line) for line in fields) + line_end
            result.stdout += "\n" if oneliner else "\n\n"
    elif what == "config":
        _show_config(sim, env, result)
    else:
        result.err(f"invalid entity: {words[0] if words else ''} for keyword: show")
        result.returncode = 1


def job_fields(job: Job, controller: Controller, env: Mapping[str, str]) -> list[list[str]]:
    """``scontrol show job``'s lines of ``Key=Value`` pairs."""
    sub = job.submission
    now = controller.now
    config = controller.config

    def when(epoch: int, absent: str = "Unknown") -> str:
        return format_time(epoch, env) if epoch else absent

    if job.state is JobState.PENDING:
        start = when(job.begin_time if job.begin_time > now else 0)
        end = "Unknown"
    else:
        start = when(job.start_time)
        end = when(job.end_time)
    run = max(0, (job.end_time or now) - job.start_time) if job.start_time else 0
    limit = "UNLIMITED" if job.time_limit is None else _duration(job.time_limit * 60)
    stdout = expand_path(sub.stdout or "slurm-%j.out", job, sub.work_dir)
    stderr = expand_path(sub.stderr, job, sub.work_dir) if sub.stderr else stdout
    exit_code = f"{job.exit_code}:{job.exit_signal}"
    return [
        [f"JobId={job.job_id}", f"JobName={job.name}"],
        [f"UserId={job.user}({job.uid})", f"GroupId={job.user}({job.uid})", "MCS_label=N/A"],
        [f"Priority={job.priority}", "Nice=0", f"Account={job.account}", "QOS=normal"],
        [f"JobState={job.state}", f"Reason={job.reason.replace(' ', '_')}", "Dependency=(null)"],
        [
            f"Requeue={int(job.requeue)}",
            f"Restarts={job.restart_count}",
            "BatchFlag=1",
            "Reboot=0",
            f"ExitCode={exit_code}",
        ],
        [f"RunTime={_duration(run)}", f"TimeLimit={limit}", "TimeMin=N/A"],
        [f"SubmitTime={when(job.submit_time)}", f"EligibleTime={when(job.begin_time)}"],
        [f"AccrueTime={when(job.begin_time if job.begin_time and not job.held else 0)}"],
        [f"StartTime={start}", f"EndTime={end}", "Deadline=N/A"],
        [
            "SuspendTime=None",
            "SecsPreSuspend=0",
            f"LastSchedEval={when(job.last_eval or job.submit_time)}",
            "Scheduler=Main",
        ],
        [
            f"Partition={job.partition}",
            f"AllocNode:Sid={config.alloc_node or config.submit_host}:1",
        ],
        ["ReqNodeList=(null)", "ExcNodeList=(null)"],
        [f"NodeList={job.nodelist}"],  # empty while pending, as 22.05 prints it
        [f"BatchHost={job.nodelist.split(',')[0]}"] if job.nodelist else [],
        [
            f"NumNodes={sub.nodes}",
            f"NumCPUs={job.cpus}",
            f"NumTasks={sub.ntasks or sub.nodes * (sub.ntasks_per_node or 1)}",
            "CPUs/Task=1",
            "ReqB:S:C:T=0:0:*:*",
        ],
        [f"TRES={_tres(job, config.pending_mem)}"],
        ["Socks/Node=*", f"NtasksPerN:B:S:C={sub.ntasks_per_node or 0}:0:*:*", "CoreSpec=*"],
        ["MinCPUsNode=1", "MinMemoryNode=0", "MinTmpDiskNode=0"],
        ["Features=(null)", "DelayBoot=00:00:00"],
        ["OverSubscribe=OK", "Contiguous=0", "Licenses=(null)", "Network=(null)"],
        [f"Command={_command(job)}"],
        [f"WorkDir={sub.work_dir}"],
        [f"Comment={job.comment} "] if job.comment else [],
        [f"StdErr={stderr}"],
        ["StdIn=/dev/null"],
        [f"StdOut={stdout}"],
        ["Power="],
    ]


def _tres(job: Job, pending_mem: str | None) -> str:
    """What the job asked for while it is pending (with the memory slurmctld gives a job
    that asked for none, when the configuration knows it), what it holds once it runs."""
    mem = f"mem={pending_mem}," if pending_mem and job.state is JobState.PENDING else ""
    return f"cpu={job.cpus},{mem}node={job.submission.nodes},billing={job.cpus}"


def _command(job: Job) -> str:
    name = job.submission.environment.get("__SCRIPT_NAME__")
    if name is None:
        return "(null)"
    return f"{job.submission.work_dir}/{name}"


def expand_path(pattern: str | None, job: Job, work_dir: str) -> str:
    """An output path with sbatch's ``%`` patterns filled in, made absolute."""
    if pattern is None:
        return ""
    replacements = {
        "j": str(job.job_id),
        "x": job.name,
        "u": job.user,
        "N": (job.nodelist or "").split(",")[0],
        "%": "%",
        "A": str(job.job_id),
        "a": "4294967294",
    }
    out = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern) and pattern[i + 1] in replacements:
            out.append(replacements[pattern[i + 1]])
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    path = "".join(out)
    return path if path.startswith("/") else f"{work_dir.rstrip('/')}/{path}"


def _duration(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def _show_config(sim: SlurmSim, env: Mapping[str, str], result: Output) -> None:
    config = sim.config
    values = {
        "AccountingStorageType": "accounting_storage/slurmdbd"
        if config.accounting
        else "accounting_storage/none",
        "AccountingStoreFlags": "job_comment" if config.job_comment else "(null)",
        "AuthInfo": f"cred_expire={config.requeue_delay}"
        if config.requeue_delay != 120
        else "(null)",
        "ClusterName": config.cluster_name,
        "FirstJobId": str(config.first_job_id),
        "JobRequeue": str(int(config.job_requeue)),
        "KillWait": f"{config.kill_wait} sec",
        "MaxJobCount": str(config.effective_max_job_count),
        "MaxJobId": str(config.max_job_id),
        "MinJobAge": f"{config.effective_min_job_age} sec",
        "PreemptMode": "OFF",
        "PriorityType": "priority/basic",
        "SchedulerParameters": "(null)",
        "SchedulerType": "sched/backfill",
        "SLURM_VERSION": config.version,
    }
    result.out(f"Configuration data as of {format_time(sim.controller.now, env)}")
    for key in sorted(values, key=str.lower):
        result.out(f"{key:<23} = {values[key]}")
    result.out("")


# -- update ------------------------------------------------------------------------------------


def _update(sim: SlurmSim, words: list[str], result: Output) -> None:
    controller = sim.controller
    pairs: list[tuple[str, str]] = []
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            result.err(f"Invalid input: {word}")
            result.err("Request aborted")
            result.returncode = 1
            return
        pairs.append((key, value))
    job_ids = [value for key, value in pairs if key.lower() == "jobid"]
    if not job_ids:
        result.err("No valid entity in update command")
        result.err(
            'Input line must include "NodeName", "PartitionName", "Reservation", "JobId", '
            'or "JobName"'
        )
        result.returncode = 1
        return
    changes: list[tuple[str, Callable[[Job], None]]] = []
    for key, value in pairs:
        tag = key.lower()
        if tag == "jobid":
            continue
        if len(tag) >= 2 and ("starttime".startswith(tag) or "eligibletime".startswith(tag)):
            try:
                begin = parse_time(value, controller.now)
            except TimeSpecError as error:
                result.err(str(error))
                result.err("No changes specified")
                result.returncode = 1
                return
            changes.append(("begin", _with(controller.set_begin, begin)))
        elif tag == "comment":
            changes.append(("comment", _with(controller.set_comment, value)))
        elif tag == "requeue":
            if value not in ("0", "1"):
                result.err(f"Invalid Requeue value: {value}")
                result.err("Request aborted")
                result.returncode = 1
                return
            changes.append(("requeue", _with(controller.set_requeue, value == "1")))
        elif tag in ("jobname", "name"):
            changes.append(("name", _with(controller.set_name, value)))
        else:
            result.err(f"Update of this parameter is not supported: {key}={value}")
            result.err("Request aborted")
            result.returncode = 1
            return
    if not changes:
        result.err("No changes specified")
        result.returncode = 1
        return
    for text in job_ids:
        for job_id in _ids(text):
            try:
                if not controller.available():
                    raise SlurmError(UNAVAILABLE)
                job = controller.get(job_id)
                _precheck(job, [name for name, _ in changes])
                for _, apply in changes:
                    apply(job)
            except SlurmError as error:
                result.err(f"{error.text} for job {job_id}")
                result.returncode = 1


def _with(setter: Callable[[Job, T], None], value: T) -> Callable[[Job], None]:
    """``setter`` with its value bound, applied to a job later."""

    def apply(job: Job) -> None:
        setter(job, value)

    return apply


def _precheck(job: Job, changes: list[str]) -> None:
    """One update RPC either lands whole or not at all."""
    if "begin" in changes and job.state is not JobState.PENDING:
        raise SlurmError(NOT_PENDING)
    if ("comment" in changes or "name" in changes) and job.state.finished:
        raise SlurmError(ALREADY_DONE)


# -- requeue, hold, release --------------------------------------------------------------------


def _requeue(sim: SlurmSim, words: list[str], hold: bool, result: Output) -> None:
    special = False
    ids: list[str] = []
    for word in words:
        if word.lower() == "state=specialexit":
            special = True
        elif word.lower() == "incomplete":
            continue
        else:
            ids.append(word)
    if not ids:
        result.err("Invalid job id specified")
        result.returncode = 1
        return
    controller = sim.controller
    for text in ids:
        for job_id in _ids(text):
            try:
                if not controller.available():
                    raise SlurmError(UNAVAILABLE)
                job = controller.get(job_id)
                controller.requeue(job, HoldKind.REQUEUE if hold else None, special_exit=special)
            except SlurmError as error:
                result.err(f"{error.text} for job {job_id}")
                result.returncode = 1


def _hold(sim: SlurmSim, verb: str, words: list[str], result: Output) -> None:
    controller = sim.controller
    for text in words or [""]:
        for job_id in _ids(text):
            try:
                if not controller.available():
                    raise SlurmError(UNAVAILABLE)
                job = controller.get(job_id)
                if verb == "release":
                    controller.release(job)
                else:
                    admin = verb == "hold" and sim.config.uid == 0
                    controller.hold(job, HoldKind.ADMIN if admin else HoldKind.USER)
            except SlurmError as error:
                result.err(f"{error.text} for job {job_id}")
                result.err(f"slurm_suspend error: {error.text}")
                result.returncode = 1


def _ids(text: str) -> list[int]:
    ids = []
    for part in text.split(","):
        part = part.strip()
        ids.append(int(part) if part.isdigit() else 0)
    return ids
