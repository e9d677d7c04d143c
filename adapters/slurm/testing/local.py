"""The Slurm adapter on a real Slurm: the ``slurm-local`` harness (and, through another
transport, ``slurm-containers``).

:class:`SlurmLocalHarness` reaches the cluster through a transport (this machine's commands by
default, SSH or ``docker exec`` as well): the adapter's own calls go through :class:`LocalSlurm`,
which adds the call faults; the harness's own calls (an administrator's) through
:meth:`SlurmLocalHarness.command`; the paths the checks need on the cluster through
:class:`TransportHost`, with the same commands. Without a cluster, every check is skipped with
the reason (failed under ``CI=true``).

Its powers (:mod:`conformance.powers`, implemented on the harness class, each given the backend
a check works on) are what a job's owner or the cluster's administrator can really do: the
harness never reaches into the adapter under test. What the cluster, as configured, cannot give
(a MinJobAge too long to wait for a purge, a MaxJobId too far to drive the id counter around,
accounting that keeps comments) is named by :meth:`SlurmLocalHarness.declines`, from
``scontrol show config``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Final

from adapters.slurm import LocalTransport, SlurmBackend, Transport
from adapters.slurm.parse import (
    config_number,
    keeps_comments,
    parse_config,
    parse_sbatch_id,
    requeue_allowed,
)
from adapters.slurm.testing.lookalikes import (
    NEAR_COMMENTS,
    NEAR_HOLDS,
    describe_slurm_look_alike,
    slurm_look_alike,
    slurm_look_alike_forms,
)
from adapters.slurm.testing.sim import (
    NO_EVICT,
    NO_IMAGES,
    NO_MISNAMED,
    NO_RECREATE,
    NO_RETRIES,
    NO_RUNTIMES,
    NO_SELF_RESTARTS,
    NO_TAKE_AHEAD,
    NO_TOUCHED,
    SLURM_IDENTITY,
    SLURM_IMPOSSIBLE,
    slurm_listed,
)
from adapters.slurm.testing.transport import CallFaults, command_words, lost_reply, program
from conformance.harness import (
    CannotInject,
    Fault,
    Harness,
    HarnessUnavailable,
    Host,
    Listed,
    LookAlike,
    Probe,
    Race,
    ReplyLoss,
    look_alike_need,
    race_need,
)
from conformance.powers import (
    FailsBeforeEffect,
    LosesIdentityHistory,
    LosesReplies,
    MakesLookAlikes,
    ObservesExecutions,
    Purges,
    RequeuesUnderneath,
    ReusesIds,
    ReusesIdsNext,
    RunsCommands,
    RunsJobs,
    ShowsPaths,
    WritesNearHolds,
)
from dispatch_core import Clock, JobID, ObjectRef, Rejected, WallClock
from dispatch_core.clock import pause

FOREIGN_SCRIPT: Final = "#!/bin/sh\ntrue\n"


OTHER_USER: Final = "nobody"
"""Whose job an other-user look-alike is: root submits it with ``sbatch --uid`` (Slurm 22.05
lets root submit as another user; the job stays held and never runs)."""
OTHER_USER_REFUSED: Final = (
    "slurm-local runs as a user other than root, and only root may submit another user's job, "
    "with sbatch --uid"
)
"""Why slurm-local, run by a user other than root, declines ``look_alike:other_user``."""
LOCAL_REFUSED: Final[Mapping[str, str]] = {
    Fault.RECREATE: NO_RECREATE,
    Fault.TAKE_ID_AHEAD: NO_TAKE_AHEAD,
    Fault.EVICT: NO_EVICT,
    look_alike_need(LookAlike.MISNAMED): NO_MISNAMED,
    race_need(Race.TOUCHED): NO_TOUCHED,
    Fault.FAIL_EVERY_TRY: NO_RETRIES,
    Probe.SELF_RESTARTS: NO_SELF_RESTARTS,
    Probe.IMAGES: NO_IMAGES,
    Probe.RUNTIMES: NO_RUNTIMES,
    Fault.LOSE_NODE: "downing a real node would hit every job on it",
    Fault.PREEMPT: "a real preemption needs a PreemptType and a job of a higher priority or QOS "
    "taking the running job's node",
    Fault.DISABLE_HISTORY: "switching accounting off takes a restart of slurmctld with another "
    "AccountingStorageType, for every user",
    Fault.LAG_HISTORY: "slurmctld decides when a requeued job's new record reaches slurmdbd, "
    "within seconds: nothing holds it back for a check",
    look_alike_need(LookAlike.NEAR_IDENTITY): f"{len(NEAR_COMMENTS)} look-alikes, each a held "
    "job of the real cluster, do not fit its id space beside the suite's own; the comment parser "
    "they try is the code the simulator harnesses run: IDENT-004 tries the unparsable comments "
    "here",
    Probe.SIGNALS: "a real Slurm's time limits are whole minutes, enforced up to a minute late, "
    "so a job that is signalled and then killed holds a CPU of the shared cluster for over two "
    "real minutes; the adapter's preflight probes PreTerminationSignal here: "
    "dispatch-conformance preflight --harness slurm-local",
    Probe.PREFLIGHT: "on a real cluster the probes hold real jobs for minutes, a 2-minute "
    "--signal job among them: run them with dispatch-conformance preflight --harness "
    "slurm-local",
}
"""What slurm-local never gives, and why (:meth:`SlurmLocalHarness.declines`): mostly powers it
does not implement (it offers no inventory either: nothing needs it without the preflight),
and ``look_alike:near_identity``, a form of one it does."""


class LocalSlurm:
    """The adapter's transport to a real Slurm, with the call faults: a lost reply (the command
    runs on the cluster, its reply is dropped) and a timeout before effect (the command is not
    run at all); either raises ``subprocess.TimeoutExpired``, as a transport does. Every id
    sbatch hands out is told to the harness."""

    def __init__(self, transport: Transport, handed_out: Callable[[str], None]) -> None:
        self.calls = CallFaults()
        self.transport = transport
        self.handed_out = handed_out

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        words = command_words(argv)
        fault = self.calls.take(words)
        if fault == "before_effect":
            raise subprocess.TimeoutExpired(list(argv), timeout or 0.0)
        done = self.transport.run(argv, stdin=stdin, timeout=timeout)
        if program(words) == "sbatch" and done.returncode == 0:
            native = parse_sbatch_id(done.stdout)
            if native is not None:
                self.handed_out(native)
        if fault == "lose_reply":
            raise subprocess.TimeoutExpired(list(argv), timeout or 0.0)
        if fault in ("reply_failure", "reply_garbled"):
            return lost_reply(fault, words, done)
        return done


class TransportHost(Host):
    """The cluster's filesystem through the harness's own commands (``mktemp -d``, ``test -e``,
    ``cat``, ``realpath``, ``rm -rf``, ``mkdir``), so it works wherever the transport reaches:
    this host, a login node over SSH, a container."""

    def __init__(
        self,
        command: Callable[[list[str]], subprocess.CompletedProcess[str]],
        root: str = "/tmp",
    ) -> None:
        self.command = command
        self.root = root
        """Where scratch directories are made: a directory the cluster's nodes share."""

    def _run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.command(list(argv))

    def scratch_dir(self) -> str:
        done = self._run("mktemp", "-d", f"{self.root}/dispatch-conformance.XXXXXX")
        path = done.stdout.strip()
        if done.returncode != 0 or not path.startswith("/"):
            raise RuntimeError(f"mktemp -d on the cluster failed: {done.stderr.strip()}")
        return path

    def exists(self, path: str) -> bool:
        done = self._run("test", "-e", path)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"test -e {path} on the cluster failed: {done.stderr.strip()}")
        return done.returncode == 0

    def read(self, path: str) -> str | None:
        done = self._run("cat", "--", path)
        if done.returncode == 0:
            return done.stdout
        if not self.exists(path):
            return None
        raise RuntimeError(f"cat {path} on the cluster failed: {done.stderr.strip()}")

    def realpath(self, path: str) -> str:
        done = self._run("realpath", "--", path)
        if done.returncode != 0:
            raise RuntimeError(f"realpath {path} on the cluster failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def remove(self, path: str) -> None:
        done = self._run("rm", "-rf", "--", path)
        if done.returncode != 0:
            raise RuntimeError(f"rm -rf {path} on the cluster failed: {done.stderr.strip()}")

    def make_dir(self, path: str) -> None:
        done = self._run("mkdir", "--", path)
        if done.returncode != 0:
            raise RuntimeError(f"mkdir {path!r} on the cluster failed: {done.stderr.strip()}")


JOB_COMMAND_SCRIPT: Final = """\
run="$1/$SLURM_JOB_ID.$SLURM_JOB_NAME.${SLURM_RESTART_COUNT:-0}"
mkdir -p "$run" || exit 97
env -0 > "$run/.$SLURM_PROCID" && mv "$run/.$SLURM_PROCID" "$run/$SLURM_PROCID.env" || exit 97
while [ ! -e "$run/exit" ]; do sleep 0.2; done
read -r code < "$run/exit"
exit "$code"
"""
"""The checks' job command on a real cluster (run by every task): record the task's
environment in the control directory ``$1``, one directory per execution (job id, name,
restart count), then wait for the harness to write the exit code the fault ``finish`` asks."""
FILLER_NAME: Final = "dispatch-harness-filler"
LOOK_ALIKE_SCRIPT: Final = "#!/bin/sh\nexec sleep 600\n"
"""What an injected job runs once let run: long enough to be running when a check looks."""
PENDING_STATES: Final = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD"})
HELD_REASONS: Final = frozenset({"JobHeldUser", "JobHeldAdmin"})


@dataclasses.dataclass(frozen=True)
class SqueueRow:
    state: str
    reason: str
    start: int | None
    """The expected start time (epoch seconds), when squeue gives one."""


class SlurmLocalHarness(
    Harness[SlurmBackend],
    RunsJobs[SlurmBackend],
    RequeuesUnderneath[SlurmBackend],
    Purges[SlurmBackend],
    ReusesIds[SlurmBackend],
    ReusesIdsNext[SlurmBackend],
    LosesIdentityHistory[SlurmBackend],
    LosesReplies[SlurmBackend],
    FailsBeforeEffect[SlurmBackend],
    WritesNearHolds[SlurmBackend],
    MakesLookAlikes[SlurmBackend],
    ObservesExecutions[SlurmBackend],
    ShowsPaths[SlurmBackend],
    RunsCommands,
):
    """The Slurm adapter on a real Slurm reached through this machine's commands (a login
    node whose filesystem the jobs share). Without one (no ``sbatch`` on PATH, or slurmctld
    does not answer), every check is skipped with the reason, except under ``CI=true``, where
    a missing Slurm fails every check: CI must not pass without it.

    The checks' jobs run :data:`JOB_COMMAND_SCRIPT`, which records each task's environment in
    a control directory and runs until ``finish`` writes its exit code; so the harness sees
    every rank of every execution, as on the simulator.

    Its powers are the faults a job's owner or the cluster's administrator can really cause on
    a real cluster: let run (by waiting), finish (the harness's job command exits with the code
    asked), requeue underneath (``scontrol requeue``), purge (by waiting past MinJobAge), id
    reuse (driving the id counter around MaxJobId with held filler jobs), lost replies,
    timeouts before effect and look-alike jobs (another user's only when the harness runs as
    root). Losing a node cannot be done to one job alone, and identities are lost from history
    only where the cluster's accounting keeps no comments: :meth:`declines` reads the cluster's
    configuration for the powers that depend on it."""

    name = "slurm-local"
    identity = SLURM_IDENTITY
    impossible = SLURM_IMPOSSIBLE
    refused: Mapping[str, str] = LOCAL_REFUSED
    """What this harness never gives, and why (:meth:`declines`)."""
    scratch_root = "/tmp"
    """Where the control and scratch directories are made on the cluster's side (a directory
    the submitting host and the nodes share)."""
    required_under_ci = True
    """Whether ``CI=true`` turns a missing Slurm into failures (CI starts this one)."""
    schedule_within = 10.0  # a release or a submission triggers a scheduler pass at once
    stateful_examples = 2
    stateful_steps = 5
    crash_points = 2
    # A real cluster's steps take real seconds (a requeued job waits cred_expire + 1 s, a
    # purge up to MinJobAge + 10 s): a few short programs per stateful check, and two of
    # CORE-009's crash points (each a scenario on the cluster and a 31 s lease expiry).

    def __init__(
        self,
        transport: Transport | None = None,
        clock: Clock | None = None,
        bound: float = 300.0,
        task_bound: float = 30.0,
    ) -> None:
        self.transport = transport if transport is not None else LocalTransport()
        self.wall: Clock = clock if clock is not None else WallClock()
        self.bound = bound
        self.task_bound = task_bound
        self.look_alikes: set[str] = set()
        """Injected jobs: they run a script of the harness's, not the job command."""
        self.held_look_alikes: set[str] = set()
        """Injected jobs still held by the harness (let_run releases them)."""
        self.ours: list[str] = []
        """Every job id handed out to this harness or its backends since the last clean-up."""
        self._config: dict[str, str] | None = None
        self._reason: str | None = None
        self._control: str | None = None
        self._last_id: str | None = None

    def command(
        self, argv: list[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """One Slurm command of the harness's own (an administrator's, not the adapter's)."""
        return self.transport.run(
            ["env", "LC_ALL=C", "TZ=UTC", "SLURM_TIME_FORMAT=%s", *argv], stdin=stdin, timeout=60.0
        )

    def _run(self, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.command(list(argv), stdin=stdin)

    # -- the cluster's configuration --------------------------------------------------------------

    def slurm_config(self) -> dict[str, str]:
        """``scontrol show config``, or CannotInject("a real Slurm: <why there is none>");
        under ``CI=true``, HarnessUnavailable instead."""
        if self._config is None and self._reason is None:
            self._reason = self._probe()
        if self._reason is not None:
            missing = self.missing(self._reason)
            if self.required_under_ci and os.environ.get("CI") == "true":
                raise HarnessUnavailable(
                    f"{self.name} needs a real Slurm under CI=true (start it with "
                    f"ci/slurm-up.sh): {self._reason}",
                    missing=missing,
                )
            raise CannotInject(f"a real Slurm: {self._reason}", missing=missing)
        assert self._config is not None
        return self._config

    def missing(self, reason: str) -> str:
        """Why there is no cluster, as ``dispatch-conformance preflight`` tells a site's
        administrator: what is missing and where, with no script of this repository."""
        local = isinstance(self.transport, LocalTransport)
        where = "on this machine" if local else f"through {type(self.transport).__name__}"
        if reason.startswith("no ") and reason.endswith(" on PATH"):
            command = reason.removeprefix("no ").removesuffix(" on PATH")
            return (
                f"no Slurm cluster to probe {where}: {command} is not on PATH (install the "
                "Slurm client commands, or run this on a login node of the cluster)"
            )
        return (
            f"no Slurm cluster answers {where}: {reason} (is slurmctld running, and is this "
            "host a login node of its cluster?)"
        )

    def _probe(self) -> str | None:
        if isinstance(self.transport, LocalTransport) and shutil.which("sbatch") is None:
            return "no sbatch on PATH"
        try:
            done = self.command(["scontrol", "show", "config"])
        except FileNotFoundError:
            return "no scontrol on PATH"
        except subprocess.TimeoutExpired:
            return "scontrol show config did not answer within 60 s"
        if done.returncode != 0:
            why = (done.stderr.strip() or done.stdout.strip()).splitlines()
            if done.returncode == 127 or (why and "No such file" in why[0]):
                return "no scontrol on PATH"
            return f"scontrol show config failed ({why[0] if why else done.returncode})"
        config = parse_config(done.stdout)
        if not config:
            return "scontrol show config printed no configuration"
        self._config = config
        return None

    def _number(self, key: str) -> int | None:
        return config_number(self.slurm_config(), key)

    @property
    def min_job_age(self) -> int | None:
        return self._number("MinJobAge")

    def ids_refused(self) -> str | None:
        """Why the id counter cannot be driven around here (too many ids between FirstJobId
        and MaxJobId), or None."""
        first, maximum = self._number("FirstJobId"), self._number("MaxJobId")
        if first is None or maximum is None or maximum - first > 1000:
            return (
                f"MaxJobId {maximum} - FirstJobId {first}: too many ids to drive the counter "
                "around; ci/slurm-up.sh --max-job-id sets a small one"
            )
        return None

    def id_range(self) -> tuple[int, int]:
        """The ids slurmctld hands out: FirstJobId to MaxJobId - 1."""
        why = self.ids_refused()
        if why is not None:
            raise CannotInject(f"reuse_id ({why})")
        first, maximum = self._number("FirstJobId"), self._number("MaxJobId")
        assert first is not None and maximum is not None
        return first, maximum - 1

    def purge_refused(self) -> str | None:
        """Why a purge cannot be waited for here (MinJobAge is too long), or None."""
        age = self.min_job_age
        if age is None or age > 120:
            return f"MinJobAge is {age} s here: too long to wait for"
        return None

    def purge_bound(self) -> float:
        """How long a purge may take here (slurmctld purges every max(10, MinJobAge) s the
        jobs that ended MinJobAge s ago), or CannotInject when MinJobAge is too long."""
        why = self.purge_refused()
        if why is not None:
            raise CannotInject(f"purge ({why})")
        age = self.min_job_age
        assert age is not None
        return age + max(10, age) + 10.0

    def history_kept(self) -> str | None:
        """Why lose_identity_history cannot be had here (this cluster's accounting keeps
        comments, or has none), or None: it lost them already."""
        kept = keeps_comments(self.slurm_config())
        if kept is None:
            return "this cluster has no accounting: there is no history to lose identities from"
        if kept:
            return (
                "this cluster's accounting keeps comments: run the suite again after "
                "ci/slurm-up.sh --no-job-comment"
            )
        return None

    # -- what the harness declines ----------------------------------------------------------------

    def declines(self, need: str) -> str | None:
        """From :attr:`refused` and, for the needs that depend on the cluster, from its
        configuration (``scontrol show config``, read once). Without a cluster the answer is
        None: the backend, when the check asks for it, says why there is none."""
        refused = self.refused.get(need)
        if refused is not None:
            return refused
        if need == look_alike_need(LookAlike.OTHER_USER) and os.geteuid() != 0:
            return OTHER_USER_REFUSED
        try:
            if need == Fault.LOSE_IDENTITY_HISTORY:
                return self.history_kept()
            if need in (Fault.PURGE, Fault.REUSE_ID, Fault.REUSE_ID_NEXT):
                why = self.purge_refused()
                if why is not None:
                    return why
            if need in (Fault.REUSE_ID, Fault.REUSE_ID_NEXT):
                return self.ids_refused()
        except (CannotInject, HarnessUnavailable):
            return None  # no cluster at all: new_backend says so, or fails under CI
        return None

    # -- ids handed out, and filler jobs ------------------------------------------------------

    def handed_out(self, native: str) -> None:
        self._last_id = native
        self.ours.append(native)

    def clean(self) -> None:
        """Cancel every job the previous check left (the adapter's, look-alikes, occupants):
        with a small MaxJobCount, leftovers would soon make sbatch block."""
        if self.ours:
            self.command(["scancel", *dict.fromkeys(self.ours)])
            self.ours.clear()
            self.held_look_alikes.clear()
            self.look_alikes.clear()

    def last_id(self) -> str | None:
        """The id slurmctld last handed out, as far as this harness saw (it assumes nobody
        else submits to the cluster; a wrong guess only costs filler jobs)."""
        return self._last_id

    def filler(self) -> str:
        """Submit a held job of the harness's own and return its id; waits (bounded) while
        the cluster is at MaxJobCount, which would make sbatch retry for up to 120 s."""
        first, last = self.id_range()
        room = last - first + 1 - 2
        waited = 0.0
        while len(self.command(["squeue", "-h", "-t", "all", "-o", "%i"]).stdout.split()) >= room:
            if waited >= 60.0:
                raise CannotInject("reuse_id (the cluster stayed at MaxJobCount for 60 s)")
            pause(self.wall, 1.0)
            waited += 1.0
        done = self.command(
            ["sbatch", "--parsable", "--hold", f"--job-name={FILLER_NAME}",
             "--output=/dev/null", "--time=1"],
            stdin=FOREIGN_SCRIPT,
        )  # fmt: skip
        native = parse_sbatch_id(done.stdout) if done.returncode == 0 else None
        if native is None:
            raise CannotInject(f"reuse_id (sbatch of a filler job refused: {done.stderr.strip()})")
        self.handed_out(native)
        return native

    # -- the job command and its control directory ------------------------------------------------

    def control_dir(self) -> str:
        """The directory the jobs' command records into and reads its exit code from (made on
        first use on the cluster's side, removed by :meth:`close`)."""
        if self._control is None:
            done = self.command(["mktemp", "-d", f"{self.scratch_root}/dispatch-harness.XXXXXX"])
            if done.returncode != 0:
                raise CannotInject(f"a control directory ({done.stderr.strip()})")
            self._control = done.stdout.strip()
        return self._control

    def job_command(self) -> tuple[str, ...]:
        return ("sh", "-c", JOB_COMMAND_SCRIPT, "dispatch-harness", self.control_dir())

    def control(self, what: str, script: str, *args: str) -> str:
        """Run ``sh -c script`` with ``args`` on the cluster's side; its stdout."""
        done = self.command(["sh", "-c", script, "dispatch-harness", *args])
        if done.returncode != 0:
            raise CannotInject(f"{what} ({done.stderr.strip() or done.returncode})")
        return done.stdout

    def runs(self, ref: ObjectRef) -> list[tuple[str, list[dict[str, str]]]]:
        """Each execution the ref's job recorded, in order: its directory and its tasks'
        environments, by rank."""
        out = self.control(
            "executions",
            'cd "$1" || exit 1\n'
            'for f in "$2".*/*.env; do [ -e "$f" ] || continue; printf "%s\\0" "$f"; '
            'cat "$f"; printf "\\0"; done',
            self.control_dir(),
            f"{ref.id}.{ref.uid}",
        )
        runs: dict[int, dict[int, dict[str, str]]] = {}
        for chunk in out.split("\0\0"):
            if not chunk:
                continue
            path, *entries = chunk.split("\0")
            run, _, task = path.partition("/")
            restart, rank = run.rsplit(".", 1)[-1], task.removesuffix(".env")
            if not (restart.isdigit() and rank.isdigit()):
                continue
            env = dict(entry.partition("=")[::2] for entry in entries if entry)
            runs.setdefault(int(restart), {})[int(rank)] = env
        base = self.control_dir()
        return [
            (f"{base}/{ref.id}.{ref.uid}.{restart}", [tasks[r] for r in sorted(tasks)])
            for restart, tasks in sorted(runs.items())
        ]

    def run_of(self, ref: ObjectRef, restarts: int) -> tuple[str, list[dict[str, str]]] | None:
        """The execution the ref's job recorded at restart count ``restarts``, if any."""
        suffix = f".{restarts}"
        return next((run for run in self.runs(ref) if run[0].endswith(suffix)), None)

    def job_info(self, ref: ObjectRef) -> tuple[int, int]:
        """How many tasks the ref's job runs and its restart count (``NumTasks`` and
        ``Restarts`` of scontrol show job; 1 and 0 when it does not say)."""
        done = self.command(["scontrol", "show", "job", "-o", ref.id])
        info = dict(word.partition("=")[::2] for word in done.stdout.split())
        tasks, restarts = info.get("NumTasks", ""), info.get("Restarts", "")
        return (
            int(tasks) if tasks.isdigit() else 1,
            int(restarts) if restarts.isdigit() else 0,
        )

    def forget(self, ref: ObjectRef) -> None:
        """Drop what the ref's job recorded, before its id is handed to another job."""
        self.control(
            "forget", 'cd "$1" && rm -rf -- "$2".*', self.control_dir(), f"{ref.id}.{ref.uid}"
        )

    # -- the Harness contract ---------------------------------------------------------------------

    def end(self, check_id: str) -> None:
        """Cancel every job the check left (the adapter's, look-alikes, occupants, fillers):
        with a small MaxJobCount, leftovers would soon make sbatch block."""
        self.clean()

    def new_backend(self) -> SlurmBackend:
        """A backend on the cluster; what an earlier backend of the same check (an earlier
        program of a stateful check) left is cancelled first."""
        config = self.slurm_config()
        self.clean()
        return SlurmBackend(
            LocalSlurm(self._submit_transport(), self.handed_out),
            config.get("ClusterName") or "slurm",
            clock=self.wall,
            job_comment=keeps_comments(config),
            job_requeue=requeue_allowed(config),
        )

    def _submit_transport(self) -> Transport:
        """The adapter's transport: on this host, submitting from the control directory, so
        the output files of jobs that name none land there, not in the caller's directory."""
        if type(self.transport) is LocalTransport and self.transport.cwd is None:
            return LocalTransport(cwd=self.control_dir())
        return self.transport

    def reopen(self, backend: SlurmBackend) -> SlurmBackend:
        return backend.reopen()

    def clock(self, backend: SlurmBackend) -> Clock:
        return backend.clock

    def listing(self, backend: SlurmBackend) -> Mapping[str, Listed]:
        """The user's jobs in squeue (every state slurmctld still holds), read by the
        harness's own command, never the adapter's."""
        done = self.command(["squeue", "-h", "-t", "all", "--me", "-o", "%i|%T|%j"])
        if done.returncode != 0:
            raise RuntimeError(f"listing (squeue: {done.stderr.strip()})")
        listed: dict[str, Listed] = {}
        for line in done.stdout.splitlines():
            native, state, name = line.split("|", 2)
            listed[native] = slurm_listed(name, state)
        return listed

    def close(self) -> None:
        """Cancel the jobs of the last check, and remove the control directory."""
        self.clean()
        if self._control is not None:
            self.command(["rm", "-rf", "--", self._control])
            self._control = None

    # -- what ran, and where -----------------------------------------------------------------------

    def executions(
        self, backend: SlurmBackend, ref: ObjectRef
    ) -> Sequence[Sequence[Mapping[str, str]]]:
        return [tasks for _, tasks in self.runs(ref)]

    def host(self, backend: SlurmBackend) -> Host:
        """The cluster's filesystem through the harness's transport."""
        return TransportHost(self.command, self.scratch_root)

    # -- a job as squeue shows it ------------------------------------------------------------------

    def _row(self, ref: ObjectRef) -> SqueueRow | None:
        """The ref's job as squeue shows it (None once it has left squeue, or when the id
        now belongs to a job of another name)."""
        done = self._run("squeue", "-j", ref.id, "-h", "-t", "all", "-o", "%T|%r|%S|%j")
        for line in done.stdout.splitlines():
            state, reason, start, name = [*line.split("|", 3), "", "", ""][:4]
            if name == ref.uid:
                return SqueueRow(state, reason, int(start) if start.isdigit() else None)
        return None

    def _state(self, ref: ObjectRef) -> str | None:
        row = self._row(ref)
        return None if row is None else row.state

    def _wait(
        self,
        backend: SlurmBackend,
        ready: Callable[[SqueueRow | None], bool],
        ref: ObjectRef,
        bound: float,
    ) -> bool:
        waited = 0.0
        while True:
            if ready(self._row(ref)):
                return True
            if waited >= bound:
                return False
            pause(backend.clock, 0.5)
            waited += 0.5

    # -- the scheduler -----------------------------------------------------------------------------

    def let_run(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        """Wait for the real scheduler to start the job (it cannot be made to), and for every
        task of the harness's job command to have recorded its environment."""
        bound = self.bound
        clock = backend.clock

        def started(row: SqueueRow | None) -> bool:
            if row is None or row.state not in PENDING_STATES:
                return True
            if row.reason in HELD_REASONS or (
                row.reason == "BeginTime"
                and row.start is not None
                and row.start > clock.now() + bound
            ):
                raise Rejected(
                    f"job {ref.id} is held ({row.reason}, eligible at {row.start}): "
                    "the scheduler will not start it"
                )
            return False

        if ref.id in self.held_look_alikes:
            # Injected held so as not to take the cluster's CPUs; letting it run releases it.
            self._run("scontrol", "release", ref.id)
            self.held_look_alikes.discard(ref.id)
        if not self._wait(backend, started, ref, bound):
            raise CannotInject(f"let_run (job {ref.id} did not start within {bound:.0f} s)")
        row = self._row(ref)
        if row is None:
            raise Rejected(f"job {ref.id} left squeue before it could be seen running")
        if row.state == "RUNNING" and ref.id not in self.look_alikes:
            self._await_tasks(backend, ref)

    def _await_tasks(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        """Wait (bounded) until every task of the execution now running (the job's restart
        count names it) has recorded itself; a job running a command of its own records
        nothing, and is not waited for long."""
        tasks, restarts = self.job_info(ref)
        waited = 0.0
        while waited < self.task_bound:
            run = self.run_of(ref, restarts)
            if run is not None and len(run[1]) >= tasks:
                return
            if self._state(ref) != "RUNNING":
                return
            pause(backend.clock, 0.2)
            waited += 0.2

    def finish(self, backend: SlurmBackend, ref: ObjectRef, exit_code: int = 0) -> None:
        self.let_run(backend, ref)
        run = self.run_of(ref, self.job_info(ref)[1])
        if run is None or self._state(ref) != "RUNNING":
            raise CannotInject(f"finish (job {ref.id} does not run the harness's job command)")
        self.control(
            "finish",
            'printf "%s\\n" "$1" > "$2/.exit" && mv "$2/.exit" "$2/exit"',
            str(exit_code),
            run[0],
        )
        if not self._wait(
            backend,
            lambda row: row is None or row.state not in ("RUNNING", "COMPLETING"),
            ref,
            30.0,
        ):
            raise CannotInject(
                f"finish (job {ref.id} was still running 30 s after its command was told to exit)"
            )

    # -- an administrator ------------------------------------------------------------------------

    def near_hold_forms(self) -> int:
        return len(NEAR_HOLDS)

    def near_hold(self, backend: SlurmBackend, ref: ObjectRef, variant: int = 0) -> str:
        """``scontrol update StartTime=uts<epoch>`` of the pending job, as its owner types it."""
        offset, form = NEAR_HOLDS[variant % len(NEAR_HOLDS)]
        at = f"StartTime=uts{ref.submit_epoch + offset}"
        done = self._run("scontrol", "update", f"JobId={ref.id}", at)
        if done.returncode != 0:
            raise CannotInject(f"near_hold (scontrol update {at}: {done.stderr.strip()})")
        return form

    def requeue_underneath(
        self,
        backend: SlurmBackend,
        ref: ObjectRef,
        *,
        in_flight: bool = False,
        held: bool = False,
    ) -> None:
        if held:
            raise CannotInject("requeue_underneath(held)")
        self.let_run(backend, ref)
        for argv in (
            ("scontrol", "update", f"JobId={ref.id}", "Requeue=1"),
            ("scontrol", "requeue", ref.id),
        ):
            done = self._run(*argv)
            if done.returncode != 0:
                raise CannotInject(f"requeue_underneath ({' '.join(argv)}: {done.stderr.strip()})")
        if not in_flight:
            self._wait(backend, lambda row: row is None or row.state != "COMPLETING", ref, 60.0)

    def purge(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        self._purged(backend, ref, "purge")

    def _purged(self, backend: SlurmBackend, ref: ObjectRef, fault: str) -> None:
        """End the ref's job (if it has not ended) and wait until slurmctld has purged it."""
        bound = self.purge_bound()
        self._run("scancel", f"--name={ref.uid}", ref.id)
        if not self._wait(backend, lambda row: row is None, ref, bound):
            raise CannotInject(f"{fault} (job {ref.id} stayed in squeue past MinJobAge)")

    def _gone(self, backend: SlurmBackend, ref: ObjectRef, fault: str) -> None:
        """Purge the ref's job and drop what it recorded, before its id goes to another."""
        self._purged(backend, ref, fault)
        self.forget(ref)

    def _drive_ids(self, stop_at: str, keep: bool) -> str:
        """Submit held filler jobs (cancelling each) until slurmctld hands out ``stop_at``;
        that filler is kept (the occupant) when ``keep``. Returns its id."""
        first, last = self.id_range()
        for _ in range(2 * (last - first + 1) + 2):
            native = self.filler()
            if native != stop_at or not keep:
                self._run("scancel", native)
            if native == stop_at:
                return native
        raise CannotInject(f"reuse_id (slurmctld never handed out id {stop_at})")

    def reuse_id(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        self._gone(backend, ref, "reuse_id")
        self._drive_ids(ref.id, keep=True)

    def reuse_id_next(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        self._gone(backend, ref, "reuse_id_next")
        first, last = self.id_range()
        taken = set(self._run("squeue", "-h", "-t", "all", "-o", "%i").stdout.split())
        # slurmctld skips the ids it still holds (ended jobs until purged included): the
        # counter must stop on the last free id before the target.
        before = int(ref.id)
        for _ in range(last - first + 1):
            before = before - 1 if before > first else last
            if str(before) not in taken:
                break
        else:
            raise CannotInject(f"reuse_id_next (every id but {ref.id} is taken)")
        if self.last_id() != str(before):
            self._drive_ids(str(before), keep=False)

    def lose_identity_history(self, backend: SlurmBackend) -> None:
        why = self.history_kept()
        if why is not None:
            raise CannotInject(f"{Fault.LOSE_IDENTITY_HISTORY} ({why})")
        # Nothing to do: this cluster's accounting keeps no comments.

    # -- the adapter's calls meet trouble --------------------------------------------------------

    def _calls(self, backend: SlurmBackend, fault: str) -> CallFaults:
        slurm = backend.transport
        if not isinstance(slurm, LocalSlurm):
            raise CannotInject(f"{fault} (the backend's transport is not the harness's)")
        return slurm.calls

    def lose_next_reply(
        self, backend: SlurmBackend, operation: str, form: ReplyLoss = ReplyLoss.TIMEOUT
    ) -> None:
        self._calls(backend, f"lose_next_reply({operation})").arm(operation, form.value)

    def fail_before_effect(self, backend: SlurmBackend, operation: str) -> None:
        self._calls(backend, f"fail_before_effect({operation})").arm_before(operation)

    # -- look-alikes -------------------------------------------------------------------------------

    def look_alike_forms(self, kind: LookAlike) -> int:
        return slurm_look_alike_forms(kind)

    def describe_look_alike(self, kind: LookAlike, variant: int = 0) -> str:
        return describe_slurm_look_alike(kind, variant)

    def inject_look_alike(
        self,
        backend: SlurmBackend,
        job_id: JobID,
        kind: LookAlike,
        variant: int = 0,
        *,
        other: JobID | None = None,
        requeued: bool = False,
    ) -> str:
        """A held job of the look-alike's name and comment, submitted as the harness's user
        (released, run and requeued when ``requeued``); :attr:`LookAlike.OTHER_USER` as
        :data:`OTHER_USER`, which only root can (see :data:`OTHER_USER_REFUSED`)."""
        form = slurm_look_alike(job_id, kind, variant, other)
        argv = ["sbatch", "--parsable", f"--job-name={form.name}"]
        if form.other_user:
            if os.geteuid() != 0:
                raise CannotInject(f"{look_alike_need(kind)} ({OTHER_USER_REFUSED})")
            argv.append(f"--uid={OTHER_USER}")
        if form.comment:
            argv.append(f"--comment={form.comment}")
        argv += ["--output=/dev/null", "--time=15", "--hold"]
        done = self._run(*argv, stdin=LOOK_ALIKE_SCRIPT)
        native = parse_sbatch_id(done.stdout) if done.returncode == 0 else None
        if native is None:
            raise CannotInject(
                f"{look_alike_need(kind)} (sbatch refused: "
                f"{done.stderr.strip() or done.stdout.strip()})"
            )
        self.handed_out(native)
        self.held_look_alikes.add(native)
        self.look_alikes.add(native)
        if requeued:
            # The faults find a job by its id and name; the submit time plays no part.
            since = datetime.fromtimestamp(int(backend.clock.now()), UTC)
            self.requeue_underneath(
                backend, ObjectRef(backend="look-alike", uid=form.name, id=native, submit=since)
            )
        return native


def slurm_local() -> SlurmLocalHarness:
    return SlurmLocalHarness()


__all__ = [
    "JOB_COMMAND_SCRIPT",
    "LocalSlurm",
    "SlurmLocalHarness",
    "TransportHost",
    "slurm_local",
]
