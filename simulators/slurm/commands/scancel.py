"""scancel: cancel or signal jobs, as ``src/scancel`` of Slurm 22.05.8 does it.

Two paths, as in the real client (slurm-lab §6, §7.10):

- **No filter** (only ids, ``-v``/``-Q``): each id goes straight to slurmctld as a SIGKILL. An
  unknown or finished id is ignored (rc 0); only ``-v`` shows ``Terminating job N`` and the
  error.
- **Any filter** (``--name``, ``--state``, ``--user``/``--me``, ``--signal``, ``--batch``, ...):
  scancel first loads every job, reports ids that are unknown or finished (``Kill job error on
  job id N: Invalid job id specified``, rc 1), drops jobs the filters do not match (``--name`` is
  exact and case-sensitive), then signals pending jobs, then the others.

A signal other than SIGKILL is delivered, not a cancel: it is recorded in the controller's log
(``t=<now> signal <number> <job id> <steps|batch|full>``) and the job keeps its state. A
pending job cannot take one (slurmctld answers "Job can not be altered now"), and scancel
retries ten times, sleeping 5, 6, ... 14 s of the cluster's clock, before it gives up. The exit
status is the highest error code seen, modulo 256, as ``exit(rc)`` makes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from simulators.slurm.commands.common import STATES, sig_name2num, strtol
from simulators.slurm.commands.getopt import Opt, parse, refuse
from simulators.slurm.controller import UNAVAILABLE, HoldKind, Job, JobState, SlurmError
from simulators.slurm.sim import Output, command

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

PROG: Final = "scancel"
SPEC: Final = [
    Opt("account", ("account",), "A"),
    Opt("batch", ("batch",), "b", "none"),
    Opt("ctld", ("ctld",), None, "none"),
    Opt("full", ("full",), "f", "none"),
    Opt("help", ("help",), None, "none"),
    Opt("hurry", ("hurry",), "H", "none"),
    Opt("interactive", ("interactive",), "i", "none"),
    Opt("clusters", ("cluster", "clusters"), "M"),
    Opt("name", ("jobname",), "n"),
    Opt("me", ("me",), None, "none"),
    Opt("name", ("name",)),
    Opt("nodelist", ("nodelist",), "w"),
    Opt("partition", ("partition",), "p"),
    Opt("qos", ("qos",), "q"),
    Opt("quiet", ("quiet",), "Q", "none"),
    Opt("reservation", ("reservation",), "R"),
    Opt("sibling", ("sibling",), None),
    Opt("signal", ("signal",), "s"),
    Opt("state", ("state",), "t"),
    Opt("usage", ("usage",), None, "none"),
    Opt("user", ("user",), "u"),
    Opt("verbose", ("verbose",), "v", "none"),
    Opt("version", ("version",), "V", "none"),
    Opt("wckey", ("wckey",), None),
]

SIGKILL: Final = 9
# slurm_errno.h and slurm_strerror() of 22.05
ESLURM_ACCESS_DENIED: Final = 2002
ESLURM_INVALID_JOB_ID: Final = 2017
ESLURM_TRANSITION_STATE_NO_UPDATE: Final = 2020
ESLURM_ALREADY_DONE: Final = 2021
SLURMCTLD_CONNECTION_ERROR: Final = 1800
STRERROR: Final = {
    ESLURM_ACCESS_DENIED: "Access/permission denied",
    ESLURM_INVALID_JOB_ID: "Invalid job id specified",
    ESLURM_TRANSITION_STATE_NO_UPDATE: "Job can not be altered now, try again later",
    ESLURM_ALREADY_DONE: "Job/step already completing or completed",
    SLURMCTLD_CONNECTION_ERROR: UNAVAILABLE,
}
MAX_CANCEL_RETRY: Final = 10
# What ``scancel -v`` prints when it loads the job list (select plugins initialised to unpack
# it), verbatim from slurm-lab §7.10.
PLUGIN_LINES: Final = (
    "scancel: select/cons_tres: common_init: select/cons_tres loaded",
    "scancel: select/cray_aries: init: Cray/Aries node selection plugin loaded",
    "scancel: select/linear: init: Linear node selection plugin loaded with argument 4",
    "scancel: select/cons_res: common_init: select/cons_res loaded",
)
USAGE: Final = (
    "Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]\n"
    "               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]\n"
    "               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]\n"
    "               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey]\n"
    "               [job_id[_array_id][.step_id]]\n"
)
HELP: Final = (
    "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]\n"
    "  -A, --account=account           act only on jobs charging this account\n"
    "  -b, --batch                     signal batch shell for specified job\n"
    "  -f, --full                      signal batch shell and all steps for specified job\n"
    "  -H, --hurry                     avoid burst buffer stage out\n"
    "  -i, --interactive               require response from user for each job\n"
    "  -M, --clusters                  clusters to issue commands to.\n"
    "                                  NOTE: SlurmDBD must be up.\n"
    "  -n, --name=job_name             act only on jobs with this name\n"
    "  -p, --partition=partition       act only on jobs in this partition\n"
    "  -Q, --quiet                     disable warnings\n"
    "  -q, --qos=qos                   act only on jobs with this quality of service\n"
    "  -R, --reservation=reservation   act only on jobs with this reservation\n"
    "      --sibling=cluster_name      remove an active sibling job from a federated job\n"
    "  -s, --signal=name | integer     signal to send to job, default is SIGKILL\n"
    "  -t, --state=states              act only on jobs in this state.  Valid job\n"
    "                                  states are PENDING, RUNNING and SUSPENDED\n"
    "  -u, --user=user_name            act only on jobs of this user\n"
    "  -V, --version                   output version information and exit\n"
    "  -v, --verbose                   verbosity level\n"
    "  -w, --nodelist                  act only on jobs on these nodes\n"
    "      --wckey=wckey               act only on jobs with this workload\n"
    "                                  charactization key\n"
    "\nHelp options:\n"
    "  --help                          show this help message\n"
    "  --usage                         display brief usage message\n"
)

NO_VAL: Final = -1  # array id: none given
INFINITE: Final = -2  # array id: ``_*``
BATCH_SCRIPT: Final = -1  # step id: none given (the whole job)


class Exit(Exception):
    """scancel exits early with this status (its messages are already in the output)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@dataclass
class JobRef:
    """One ``job_id[_array_id][.step_id]`` operand, as ``_xlate_job_step_ids`` splits it."""

    text: str
    job_id: int
    array_id: int = NO_VAL
    step_id: int = BATCH_SCRIPT
    found: bool = False
    pending: bool = False


@dataclass
class Options:
    account: str | None = None
    batch: bool = False
    full: bool = False
    interactive: bool = False
    name: str | None = None
    nodelist: str | None = None
    partition: str | None = None
    qos: str | None = None
    reservation: str | None = None
    signal: int | None = None
    state: str | None = None  # the job_state_string of the --state given
    user_name: str | None = None
    user_id: int = 0
    verbose: int = 0
    wckey: str | None = None
    refs: list[JobRef] = field(default_factory=list)
    job_list: list[str] = field(default_factory=list)

    def has_default_opt(self) -> bool:
        return (
            self.account is None
            and not self.batch
            and not self.interactive
            and self.name is None
            and self.partition is None
            and self.qos is None
            and self.reservation is None
            and self.signal is None
            and self.state is None
            and self.user_name is None
            and self.wckey is None
            and self.nodelist is None
        )

    def has_filter(self) -> bool:
        return any(
            value is not None
            for value in (
                self.account,
                self.name,
                self.nodelist,
                self.partition,
                self.qos,
                self.reservation,
                self.state,
                self.user_name,
                self.wckey,
            )
        )


@command(PROG)
def scancel(sim: SlurmSim, args: list[str], stdin: str | None, env: Mapping[str, str]) -> Output:
    result = Output()
    run = _Run(sim, result, stdin)
    try:
        run.options(args, env)
        run.main()
    except Exit as done:
        result.returncode = done.status & 0xFF
    return result


class _Run:
    """One invocation: its options, the job list it loaded and what it printed."""

    def __init__(self, sim: SlurmSim, result: Output, stdin: str | None) -> None:
        self.sim = sim
        self.controller = sim.controller
        self.result = result
        self.opt = Options()
        self.answers = (stdin or "").splitlines()
        self.rc = 0

    # -- options (opt.c) -------------------------------------------------------------------

    def options(self, args: list[str], env: Mapping[str, str]) -> None:
        opt = self.opt
        self._environment(env)
        cli = parse(PROG, args, SPEC, defer=True)
        for key, value in cli.options:
            text = value or ""
            if key == "account":
                opt.account = text.lower()
            elif key == "batch":
                opt.batch = True
            elif key == "full":
                opt.full = True
            elif key == "interactive":
                opt.interactive = True
            elif key == "clusters":
                self._clusters(text)
            elif key == "me":
                opt.user_name = str(self.sim.config.uid)
            elif key == "name":
                opt.name = text
            elif key == "partition":
                opt.partition = text
            elif key == "quiet":
                opt.verbose = -1
            elif key == "qos":
                opt.qos = text.lower()
            elif key == "reservation":
                opt.reservation = text
            elif key == "signal":
                number = sig_name2num(text)
                if not number:
                    self.result.err(f"Unknown job signal: {text}")
                    raise Exit(1)
                opt.signal = number
            elif key == "state":
                opt.state = self._state(text, from_env=False)
            elif key == "user":
                opt.user_name = text
            elif key == "verbose":
                opt.verbose += 1
            elif key == "version":
                self.result.out(f"slurm {self.sim.config.version}")
                raise Exit(0)
            elif key == "nodelist":
                opt.nodelist = text
            elif key == "wckey":
                opt.wckey = text
            elif key == "help":
                self.result.stdout += HELP
                raise Exit(0)
            elif key == "usage":
                self.result.stdout += USAGE
                raise Exit(0)
            # --ctld, --hurry and --sibling change nothing the simulator models.
        if cli.error is not None:  # getopt_long stopped here: "case '?': ... exit(1)"
            raise Exit(refuse(self.result, cli.error))
        if cli.operands:
            self._job_ids(cli.operands)
        self._verify()

    def _environment(self, env: Mapping[str, str]) -> None:
        opt = self.opt
        if (value := env.get("SCANCEL_ACCOUNT")) is not None:
            opt.account = value.lower()
        if (value := env.get("SCANCEL_BATCH")) is not None:
            opt.batch = self._boolean("SCANCEL_BATCH", value, opt.batch)
        if (value := env.get("SCANCEL_FULL")) is not None:
            opt.full = self._boolean("SCANCEL_FULL", value, opt.full)
        if (value := env.get("SCANCEL_INTERACTIVE")) is not None:
            opt.interactive = self._boolean("SCANCEL_INTERACTIVE", value, opt.interactive)
        if (value := env.get("SCANCEL_NAME")) is not None:
            opt.name = value
        if (value := env.get("SCANCEL_PARTITION")) is not None:
            opt.partition = value
        if (value := env.get("SCANCEL_QOS")) is not None:
            opt.qos = value.lower()
        if (value := env.get("SCANCEL_STATE")) is not None:
            opt.state = self._state(value, from_env=True)
        if (value := env.get("SCANCEL_USER")) is not None:
            opt.user_name = value
        if (value := env.get("SCANCEL_VERBOSE")) is not None:
            opt.verbose = int(self._boolean("SCANCEL_VERBOSE", value, bool(opt.verbose)))
        if (value := env.get("SCANCEL_WCKEY")) is not None:
            opt.wckey = value
        if (value := env.get("SLURM_CLUSTERS")) is not None:
            self._clusters(value, from_env=True)

    def _boolean(self, name: str, value: str, current: bool) -> bool:
        lowered = value.lower()
        if lowered in ("true", "t"):
            return True
        if lowered in ("false", "f"):
            return False
        self.error(f"Unrecognized {name} value: {value}")
        return current

    def _state(self, text: str, from_env: bool) -> str:
        for long, short, _ in STATES:
            if text.lower() in (long.lower(), short.lower()):
                return long
        if from_env:
            self.result.err(f"Unrecognized SCANCEL_STATE value: {text}")
        else:
            self.result.err(f"Invalid job state specified: {text}")
        self.result.err("Valid job states are PENDING, RUNNING, and SUSPENDED")
        raise Exit(1)

    def _clusters(self, names: str, from_env: bool = False) -> None:
        """``-M``: only this cluster (or ``all``, which is this one) can be reached."""
        wanted = [name for name in names.split(",") if name]
        if all(name.lower() == "all" or name == self.sim.config.cluster_name for name in wanted):
            return
        if names.lower() == "all":
            self.error("No clusters can be reached now. Contact your admin to resolve the problem.")
        else:
            what = "SLURM_CLUSTERS" if from_env else "--cluster"
            self.error(
                f"'{names}' can't be reached now, or it is an invalid entry for {what}.  "
                "Use 'sacctmgr list clusters' to see available clusters."
            )
        raise Exit(1)

    def _job_ids(self, operands: list[str]) -> None:
        """``_xlate_job_step_ids``: ids split on commas, with array and step suffixes."""
        pending = list(operands)
        refs: list[JobRef] = []
        args: list[str] = []
        while pending:
            text = pending.pop(0)
            args.append(text)
            job_id, rest = strtol(text)
            if job_id <= 0:
                self._invalid_id(text)
            if rest.startswith("_["):
                if not rest.endswith("]") or "]" in rest[2:-1]:
                    self._invalid_id(text)
                for task in _task_ids(rest[2:-1]):
                    refs.append(JobRef(text=text, job_id=job_id, array_id=task))
                continue  # no step and no comma after a task range
            ref = JobRef(text=text, job_id=job_id)
            if rest.startswith("_*"):
                ref.array_id, rest = INFINITE, rest[2:]
            elif rest[:1] in ("_", "+"):
                value, after = strtol(rest[1:])
                if value < 0:
                    self._invalid_id(text)
                ref.array_id = value if rest[0] == "_" else NO_VAL  # +N: a hetjob component
                rest = after
            if rest.startswith("."):
                value, rest = strtol(rest[1:])
                if value < 0:
                    self._invalid_id(text)
                ref.step_id = value
            refs.append(ref)
            if rest.startswith(","):
                args[-1] = text[: len(text) - len(rest)]
                pending.insert(0, rest[1:])
            elif rest:
                self._invalid_id(text)
        self.opt.refs = refs
        self.opt.job_list = args

    def _invalid_id(self, text: str) -> None:
        self.error(f"Invalid job id {text}")
        raise Exit(1)

    def _verify(self) -> None:
        """``_opt_verify``: the user must exist; something must identify the jobs."""
        opt = self.opt
        if opt.user_name is not None:
            uid = self._uid_from_string(opt.user_name)
            if uid is None:
                self.error(f"Invalid user name: {opt.user_name}")
                raise Exit(1)
            opt.user_id = uid
        if not opt.refs and not opt.has_filter():
            self.error("No job identification provided")
            raise Exit(1)

    def _uid_from_string(self, name: str) -> int | None:
        """Users the simulated passwd knows: root, the configured user, owners of live jobs."""
        known = {"root": 0, self.sim.config.user: self.sim.config.uid}
        for job in self.controller.jobs.values():
            known.setdefault(job.user, job.uid)
        if name in known:
            return known[name]
        if name.isdigit() and int(name) in known.values():
            return int(name)
        return None

    # -- main (scancel.c) ------------------------------------------------------------------

    def main(self) -> None:
        opt = self.opt
        if opt.has_default_opt() and all(ref.step_id == BATCH_SCRIPT for ref in opt.refs):
            for text in opt.job_list:
                self._cancel_job_id(text)
            raise Exit(self.rc)
        if not self.controller.available():
            self.result.err(f"slurm_load_jobs error: {UNAVAILABLE}")
            raise Exit(1)
        loaded = sorted(self.controller.jobs.values(), key=lambda job: job.seq)
        if opt.verbose > 0:
            for line in PLUGIN_LINES:
                self.result.err(line)
        live = {job.job_id: job for job in loaded}  # job_id zeroed == removed from here
        self._verify_job_ids(loaded, live)
        if opt.has_filter():
            self._filter_job_records(loaded, live)
        self._cancel_jobs(loaded, live, pending_pass=True)
        self._cancel_jobs(loaded, live, pending_pass=False)
        raise Exit(self.rc)

    def _verify_job_ids(self, loaded: list[Job], live: dict[int, Job]) -> None:
        opt = self.opt
        if not opt.refs:
            return
        for job in loaded:
            if _finished(job):
                live.pop(job.job_id, None)
                continue
            referenced = False
            for ref in opt.refs:
                if ref.array_id == NO_VAL and ref.job_id == job.job_id:
                    ref.found = True  # no modelled job is an array job, so only plain ids
                    if _base_state(job) == "PENDING":
                        ref.pending = True
                    referenced = True
            if not referenced:
                live.pop(job.job_id, None)
        for ref in opt.refs:
            if ref.found:
                continue
            self.rc = 1
            if opt.verbose >= 0:
                shown = _ref_text(ref)
                invalid = STRERROR[ESLURM_INVALID_JOB_ID]
                if ref.step_id == BATCH_SCRIPT:
                    self.error(f"Kill job error on job id {shown}: {invalid}")
                else:
                    self.error(f"Kill job error on job step id {shown}.{ref.step_id}: {invalid}")
            ref.job_id = 0

    def _filter_job_records(self, loaded: list[Job], live: dict[int, Job]) -> None:
        opt = self.opt
        matches = 0
        for job in loaded:
            if job.job_id not in live:
                continue
            if _finished(job) or _base_state(job) not in ("PENDING", "RUNNING", "SUSPENDED"):
                del live[job.job_id]
                continue
            if not self._matches(job):
                del live[job.job_id]
                continue
            matches += 1
        if matches == 0 and opt.verbose > 0:
            message = ""
            if opt.account is not None:
                message += f"account={opt.account} "
            if opt.name is not None:
                message += f"job_name={opt.name} "
            if opt.nodelist is not None:
                message += f"nodelist={opt.nodelist} "
            if opt.partition is not None:
                message += f"partition={opt.partition} "
            if opt.qos is not None:
                message += f"qos={opt.qos} "
            if opt.reservation is not None:
                message += f"reservation={opt.reservation} "
            if opt.state is not None:
                message += f"state={opt.state} "
            if opt.user_name is not None:
                message += f"user_name={opt.user_name} "
            if opt.wckey is not None:
                message += f"wckey={opt.wckey} "
            if message:
                self.error(f"No active jobs match ALL job filters, including: {message}")

    def _matches(self, job: Job) -> bool:
        """Every filter given, compared as ``xstrcmp`` does (exact, case-sensitive)."""
        opt = self.opt
        if opt.account is not None and job.account != opt.account:
            return False
        if opt.name is not None and job.name != opt.name:
            return False
        if opt.partition is not None and job.partition != opt.partition:
            return False
        if opt.qos is not None and opt.qos != "normal":  # every simulated job runs in "normal"
            return False
        if opt.reservation is not None:  # no simulated job has a reservation
            return False
        if opt.state is not None and _base_state(job) != opt.state:
            return False
        if opt.user_name is not None and job.uid != opt.user_id:
            return False
        if opt.nodelist is not None:
            wanted = {node for node in opt.nodelist.split(",") if node}
            if not wanted & set(filter(None, job.nodelist.split(","))):
                return False
        return opt.wckey is None  # no simulated job has a wckey

    def _cancel_jobs(self, loaded: list[Job], live: dict[int, Job], pending_pass: bool) -> None:
        """``_cancel_jobs_by_state``: pending jobs first, then every other one."""
        opt = self.opt
        if opt.refs:
            for ref in opt.refs:
                if ref.job_id == 0 or (pending_pass and not ref.pending):
                    continue
                for job in loaded:
                    if job.job_id not in live:
                        continue
                    if ref.step_id != BATCH_SCRIPT and _base_state(job) == "PENDING":
                        continue
                    if ref.array_id != NO_VAL or ref.job_id != job.job_id:
                        continue
                    if opt.interactive and not self._confirm(job, ref.step_id):
                        del live[job.job_id]
                        continue
                    if ref.step_id == BATCH_SCRIPT:
                        self._cancel_job_id(str(job.job_id))
                        del live[job.job_id]
                    else:
                        self._cancel_step_id(job, ref.step_id)
            return
        for job in loaded:
            if job.job_id not in live:
                continue
            if pending_pass and not (
                job.state is JobState.PENDING and job.hold is not HoldKind.REQUEUE
            ):
                continue
            if opt.interactive and not self._confirm(job, BATCH_SCRIPT):
                del live[job.job_id]
                continue
            self._cancel_job_id(str(job.job_id))
            del live[job.job_id]

    def _confirm(self, job: Job, step_id: int) -> bool:
        """``--interactive``: ask on stdout, read y/n from stdin (end of input reads as n)."""
        target = (
            f"job_id={job.job_id}" if step_id == BATCH_SCRIPT else f"step_id={job.job_id}.{step_id}"
        )
        while True:
            self.result.stdout += (
                f"Cancel {target} name={job.name} partition={job.partition} [y/n]? "
            )
            if not self.answers:
                return False
            answer = self.answers.pop(0)
            if answer[:1] in ("y", "Y"):
                return True
            if answer[:1] in ("n", "N"):
                return False

    # -- the RPCs ----------------------------------------------------------------------------

    def _cancel_job_id(self, text: str) -> None:
        """``_cancel_job_id``: one kill request, retried while the job is in transition."""
        opt = self.opt
        signal = opt.signal if opt.signal is not None else SIGKILL
        job_type = "full " if opt.full else "batch " if opt.batch else ""
        if opt.signal is None:
            self.verbose(f"Terminating {job_type}job {text}")
        else:
            self.verbose(f"Signal {signal} to {job_type}job {text}")
        code = 0
        for attempt in range(MAX_CANCEL_RETRY):
            code = self._kill_job(text, signal)
            if code != ESLURM_TRANSITION_STATE_NO_UPDATE:
                break
            self.verbose("Job is in transitional state, retrying")
            self._sleep(5 + attempt)
        if code:
            if opt.verbose > 0 or code not in (ESLURM_ALREADY_DONE, ESLURM_INVALID_JOB_ID):
                self.error(f"Kill job error on job id {text}: {STRERROR[code]}")
            if code in (ESLURM_ALREADY_DONE, ESLURM_INVALID_JOB_ID) and signal == SIGKILL:
                code = 0
        self.rc = max(self.rc, code)

    def _kill_job(self, text: str, signal: int) -> int:
        """slurmctld's ``job_str_signal`` and ``job_signal``, for the jobs it models."""
        controller = self.controller
        if not controller.available():
            return SLURMCTLD_CONNECTION_ERROR
        job_id, rest = strtol(text)
        if job_id <= 0 or rest not in ("", "_*"):
            return ESLURM_INVALID_JOB_ID  # array tasks and hetjob components: none exist
        job = controller.jobs.get(job_id)
        if job is None:
            return ESLURM_INVALID_JOB_ID
        uid = self.sim.config.uid
        if uid != 0 and job.uid != uid:
            return ESLURM_ACCESS_DENIED
        if _finished(job):
            return ESLURM_ALREADY_DONE
        running = job.state is JobState.RUNNING
        if signal == SIGKILL and (not running or not self.opt.batch):
            try:
                controller.cancel(job, by=uid)
            except SlurmError:
                return ESLURM_ALREADY_DONE
            return 0
        if not running:
            return ESLURM_TRANSITION_STATE_NO_UPDATE
        scope = "batch" if self.opt.batch else "full" if self.opt.full else "steps"
        controller.signal(job, signal, scope)
        if signal == SIGKILL:  # --batch: the batch shell dies of SIGKILL, the job with it
            controller.end(job, JobState.FAILED, "JobLaunchFailure", exit_code=0, signal=SIGKILL)
        return 0

    def _cancel_step_id(self, job: Job, step_id: int) -> None:
        """``_cancel_step_id``: the simulator models no job steps, so none is ever found."""
        signal = self.opt.signal if self.opt.signal is not None else SIGKILL
        if signal == SIGKILL:
            self.verbose(f"Terminating step {job.job_id}.{step_id}")
        else:
            self.verbose(f"Signal {signal} to step {job.job_id}.{step_id}")
        if not self.controller.available():
            code = SLURMCTLD_CONNECTION_ERROR
        elif job.job_id not in self.controller.jobs:
            code = ESLURM_INVALID_JOB_ID
        elif _finished(job):
            code = ESLURM_ALREADY_DONE
        elif job.state is not JobState.RUNNING:
            code = ESLURM_TRANSITION_STATE_NO_UPDATE
        else:
            code = ESLURM_INVALID_JOB_ID
        if self.opt.verbose > 0 or code != ESLURM_ALREADY_DONE:
            self.error(f"Kill job error on job step id {job.job_id}: {STRERROR[code]}")
        if code == ESLURM_ALREADY_DONE and signal == SIGKILL:
            code = 0
        self.rc = max(self.rc, code)

    # -- output ------------------------------------------------------------------------------

    def error(self, message: str) -> None:
        self.result.err(f"{PROG}: error: {message}")

    def verbose(self, message: str) -> None:
        if self.opt.verbose > 0:
            self.result.err(f"{PROG}: {message}")

    def _sleep(self, seconds: int) -> None:
        if hasattr(self.sim.clock, "advance"):
            self.sim.advance(seconds)


def _finished(job: Job) -> bool:
    return job.state.finished


def _base_state(job: Job) -> str:
    """The base state slurmctld keeps: a job COMPLETING back into the queue, or held in
    SpecialExit, is PENDING underneath."""
    if job.state in (JobState.COMPLETING, JobState.SPECIAL_EXIT):
        return "PENDING"
    return job.state.value


def _ref_text(ref: JobRef) -> str:
    if ref.array_id == NO_VAL:
        return str(ref.job_id)
    if ref.array_id == INFINITE:
        return f"{ref.job_id}_*"
    return f"{ref.job_id}_{ref.array_id}"


def _task_ids(spec: str) -> list[int]:
    """The task ids of an array range list such as ``1-3,7``."""
    tasks: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            tasks.extend(range(int(low), int(high or low) + 1))
    return tasks
