"""The built-in harnesses of the Slurm adapter.

- ``slurm-sim``: :class:`~adapters.slurm.SlurmBackend` on a fresh
  :class:`~simulators.slurm.SlurmSim` per check (ids wrap at 60, MinJobAge 30 s, two nodes of
  four CPUs, a virtual clock that starts at the wall time), accounting with ``job_comment``;
  the batch scripts really run (execute mode), and every task's environment is recorded.
- ``slurm-sim-nocomment``: the same cluster without ``AccountingStoreFlags=job_comment``.
- ``slurm-local``: a real Slurm reached through the commands on this machine's PATH; when there
  is none, every check is skipped with the reason.

Faults act as the scheduler or an administrator would, never through the adapter under test.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from adapters.slurm import LocalTransport, SlurmBackend, Transport
from conformance.harness import CannotInject, FaultInjector, Harness, HarnessUnavailable
from dispatch_core import Backend, Clock, JobID, ObjectRef, Rejected, VirtualClock, WallClock
from dispatch_core.clock import pause
from simulators.slurm import Job, JobState, SlurmConfig, SlurmSim
from simulators.slurm.execute import LAUNCH_FAILED, ExecuteMode
from simulators.slurm.trace import command_argv

SLURM_COMMANDS: Final = ("sbatch", "squeue", "sacct", "scancel", "scontrol")
FOREVER: Final = 100_000_000
"""Virtual seconds a started job's command runs: until a fault (finish, stop, ...) ends it."""
LET_RUN_BOUND: Final = 900
"""Virtual seconds let_run waits for the scheduler (a requeued job is eligible after 121 s,
and the periodic scheduler pass starts it within the next minute)."""
COMMAND_GRACE: Final = 0.25
"""Real seconds a job's command has, once srun has recorded its tasks, to end before the
suite goes on without it (ample for ``true``, ``echo``, ``pwd``)."""
START_BOUND: Final = 5.0
"""Real seconds a batch script has to reach srun (or end) before the suite goes on."""
FOREIGN_SCRIPT: Final = "#!/bin/sh\ntrue\n"


def _program(words: Sequence[str]) -> str:
    return words[0].rsplit("/", 1)[-1] if words else ""


def _is_hold(words: Sequence[str]) -> bool:
    return (
        _program(words) == "scontrol"
        and words[1:2] == ["update"]
        and any(w.startswith("StartTime=") and w != "StartTime=now" for w in words[2:])
    )


def _is_release(words: Sequence[str]) -> bool:
    return _program(words) == "scontrol" and words[1:2] == ["update"] and "StartTime=now" in words


LOSABLE: Final[Mapping[str, Callable[[Sequence[str]], bool]]] = {
    "start": lambda words: _program(words) == "sbatch",
    "stop": lambda words: _program(words) == "scancel",
    "hold": _is_hold,
    "release": _is_release,
    # The adapter requeues in two steps (Requeue=1, then requeue): the second one takes effect.
    "requeue": lambda words: _program(words) == "scontrol" and words[1:2] in (["requeue"],),
}
"""Which call carries each operation's effect: its reply is the one a lost-reply fault loses."""


class _ReplyLosing:
    """The operations whose next reply is to be lost, matched against each call."""

    def __init__(self) -> None:
        self.lose: list[str] = []

    def arm(self, operation: str) -> None:
        if operation not in LOSABLE:
            raise CannotInject(f"lose_next_reply({operation})")
        self.lose.append(operation)

    def take(self, words: Sequence[str]) -> bool:
        for index, operation in enumerate(self.lose):
            if LOSABLE[operation](words):
                del self.lose[index]
                return True
        return False


class _Execute(ExecuteMode):
    """Execute mode for a harness: a job's batch script and command really run when it starts
    (every task's environment recorded first), but the suite never waits on a command: one
    still running :data:`COMMAND_GRACE` real seconds after its tasks were recorded runs on in
    the background until its job ends or is requeued (then it is killed, as slurmd would), or
    until the cluster is dropped. In virtual time a started job runs until a fault or a stop
    ends it, whatever its command does."""

    def __init__(self, sim: SlurmSim, rank_env_dir: Path) -> None:
        super().__init__(sim, default_run=FOREVER, rank_env_dir=rank_env_dir)
        weakref.finalize(self, _kill_all, self.running)

    def _on_event(self, event: str, job: Job) -> None:
        if event != "start" or job.submission.signal is not None:
            super()._on_event(event, job)
            return
        running = self._launch(job)
        if running is None:
            self._ended(job, LAUNCH_FAILED)
        elif self._exits(running, job):
            self._ended(job, self._reap(running, None))
        else:
            self.running[job.job_id] = running

    def _exits(self, running: Any, job: Job) -> bool:
        """Whether the script ends within its grace (a bounded real-time wait)."""
        sub = job.submission
        tasks = sub.ntasks or sub.nodes * (sub.ntasks_per_node or 1)
        ranks = self.recorded[-1].directory
        deadline = time.monotonic() + START_BOUND
        recorded_at: float | None = None
        while running.process.poll() is None:
            now = time.monotonic()
            if recorded_at is None and sum(1 for _ in ranks.glob("*.env")) >= tasks:
                recorded_at = now
            if now >= deadline or (recorded_at is not None and now - recorded_at > COMMAND_GRACE):
                return False
            time.sleep(0.002)
        return True


def _kill_all(running: dict[int, Any]) -> None:
    for job in list(running.values()):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            job.process.wait(timeout=5)
    running.clear()


# -- the simulated cluster ---------------------------------------------------------------------


class SimCluster(_ReplyLosing):
    """One simulated cluster, and the transport to it: Slurm commands go to the simulator, with
    the environment of a login shell in a scratch directory; anything else (``cat``, ``tail``,
    ``rm``) runs on this host, whose filesystem the simulated jobs write to."""

    def __init__(self, config: SlurmConfig) -> None:
        super().__init__()
        self.scratch = Path(tempfile.mkdtemp(prefix="dispatch-slurm-sim-"))
        weakref.finalize(self, shutil.rmtree, self.scratch, ignore_errors=True)
        # The cluster reads about the wall time: find bounds sacct by the job id's ULID time.
        self.sim = SlurmSim(config, clock=VirtualClock(int(time.time())))
        self.execute = _Execute(self.sim, self.scratch / "ranks")
        self.env = {
            "PWD": str(self.scratch),
            "HOME": str(self.scratch),
            "PATH": os.environ.get("PATH", os.defpath),
            "USER": config.user,
            "LOGNAME": config.user,
        }
        self.local = LocalTransport()
        self.submitted: list[tuple[int, str, int, int]] = []  # (id, name, submit, seq)
        self.sim.controller.observe(self._observed)

    # -- the transport --------------------------------------------------------------------------

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        words = command_argv(argv)
        if _program(words) not in SLURM_COMMANDS:
            return self.local.run(argv, stdin=stdin, timeout=timeout)
        if self.take(words):
            # The call takes effect; its reply is lost after the caller's timeout (virtual).
            self.sim.faults.lose_reply(_program(words), args=tuple(words[1:]))
        return self.sim.run(argv, stdin=stdin, env=self.env, timeout=timeout)

    def admin(self, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """A command run by someone other than the adapter (an administrator, another user)."""
        done = self.sim.run(list(argv), stdin=stdin, env=self.env)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        return done

    # -- which simulated job a ref names ----------------------------------------------------------

    def _observed(self, event: str, job: Job) -> None:
        if event == "submit":
            self.submitted.append((job.job_id, job.name, job.submit_time, job.seq))

    def seq(self, ref: ObjectRef) -> int | None:
        """The submission ``ref`` names: the latest one with its id and name submitted at or
        before its submit time (a requeue moves the submit time of the same submission on)."""
        if not ref.id.isdigit():
            return None
        job_id = int(ref.id)
        found = [
            seq
            for (i, name, submit, seq) in self.submitted
            if i == job_id and name == ref.uid and submit <= ref.submit_epoch
        ]
        return found[-1] if found else None

    def live(self, ref: ObjectRef) -> Job | None:
        """The ref's job while slurmctld still has it in memory."""
        self.sim.controller.sync()
        job = self.sim.controller.jobs.get(int(ref.id)) if ref.id.isdigit() else None
        if job is None or job.seq != self.seq(ref):
            return None
        return job

    def require(self, ref: ObjectRef) -> Job:
        job = self.live(ref)
        if job is None:
            raise KeyError(f"job {ref.id} ({ref.uid}) is not in slurmctld's memory")
        return job

    def executions(self, ref: ObjectRef) -> list[list[dict[str, str]]]:
        seq = self.seq(ref)
        return [r.ranks() for r in self.execute.recorded if seq is not None and r.seq == seq]


class SimFaults(FaultInjector):
    """Every fault the simulator allows, on one simulated cluster."""

    def __init__(self, cluster: SimCluster, job_comment: bool) -> None:
        self.cluster = cluster
        self.sim = cluster.sim
        self.job_comment = job_comment

    # -- the scheduler -----------------------------------------------------------------------------

    def let_run(self, ref: ObjectRef) -> None:
        self._let_run(self.cluster.require(ref))

    def _let_run(self, job: Job) -> None:
        """Let virtual time pass until the scheduler has started ``job`` (bounded)."""
        waited = 0
        while job.state is not JobState.RUNNING:
            controller = self.sim.controller
            if job.purged or job.state.finished or job.state is JobState.SPECIAL_EXIT:
                raise Rejected(f"job {job.job_id} is {job.state}: it will not run again")
            pending = job.state is JobState.PENDING
            if pending and (job.held or job.begin_time - controller.now > LET_RUN_BOUND):
                raise Rejected(
                    f"job {job.job_id} is held ({job.reason}, eligible at {job.begin_time}): "
                    "the scheduler will not start it"
                )
            if waited >= LET_RUN_BOUND:
                raise Rejected(
                    f"job {job.job_id} did not start within {LET_RUN_BOUND} s ({job.reason})"
                )
            self.sim.advance(1)
            waited += 1

    def finish(self, ref: ObjectRef, exit_code: int = 0) -> None:
        job = self.cluster.require(ref)
        self._let_run(job)
        self.sim.finish(job.job_id, exit_code)

    def lose_node(self, ref: ObjectRef) -> None:
        job = self.cluster.require(ref)
        self._let_run(job)
        node = job.nodelist.split(",")[0]
        controller = self.sim.controller
        sharing = [
            other
            for other in controller.jobs.values()
            if other is not job
            and other.state is JobState.RUNNING
            and node in other.nodelist.split(",")
        ]
        if not sharing:
            self.sim.faults.node_failure(node)
        elif job.requeue:
            # Only this job's share of the node is lost (the fault acts on one object): the
            # controller's node-failure requeue, for this job alone.
            controller._requeue(job, JobState.NODE_FAIL, None, False, completing=False)
            controller._schedule()
        else:
            self.sim.fail(job.job_id, JobState.NODE_FAIL)

    # -- an administrator ------------------------------------------------------------------------

    def requeue_underneath(self, ref: ObjectRef) -> None:
        job = self.cluster.require(ref)
        self._let_run(job)
        # The adapter submits --no-requeue unless it asked for native requeue: an administrator
        # raises the flag first (slurm-lab §7.6i), then requeues.
        self.cluster.admin("scontrol", "update", f"JobId={job.job_id}", "Requeue=1")
        self.sim.faults.requeue_underneath(job.job_id)
        self._settle(job)

    def _settle(self, job: Job) -> None:
        """Let a requeue in flight (COMPLETING) finish: the job is back in the queue, with its
        new submit time (a second of virtual time; the requeue delay keeps it pending)."""
        for _ in range(10):
            if job.state is not JobState.COMPLETING:
                return
            self.sim.advance(1)

    def _end(self, job: Job) -> None:
        self._settle(job)
        if not job.state.finished:
            self.cluster.admin("scancel", str(job.job_id))

    def _aged(self, job: Job) -> None:
        """slurmctld purges no sooner than 2 s after the end (MinJobAge's floor): a reused id
        is never submitted in the second its old job was."""
        wait = job.end_time + 2 - self.sim.controller.now
        if wait > 0:
            self.sim.advance(wait)

    def purge(self, ref: ObjectRef) -> None:
        job = self.cluster.live(ref)
        if job is None:
            return  # already out of slurmctld's memory
        self._end(job)
        self._aged(job)
        self.sim.faults.purge_now(job.job_id)

    def reuse_id(self, ref: ObjectRef) -> None:
        job = self.cluster.live(ref)
        if job is not None:
            self._end(job)
            self._aged(job)
        # Another user's job takes the id; held, so it stays (and runs nothing on this host).
        self.sim.faults.reuse_id(int(ref.id), name="someone-elses-job", hold=True, run_for=None)

    def reuse_id_next(self, ref: ObjectRef) -> None:
        job = self.cluster.live(ref)
        if job is not None:
            self._end(job)
            self._aged(job)
            self.sim.faults.purge_now(job.job_id)
        self.sim.controller.set_next_job_id(int(ref.id))

    def lose_comments(self) -> None:
        if self.job_comment:
            raise CannotInject(
                "lose_comments (this cluster's accounting keeps comments, "
                "AccountingStoreFlags=job_comment; slurm-sim-nocomment has none)"
            )
        # Nothing to do: this cluster's accounting never kept comments.

    def lose_next_reply(self, operation: str) -> None:
        self.cluster.arm(operation)

    def inject_named(self, job_id: JobID, name: str, comment: str) -> str:
        done = self.cluster.admin(
            "sbatch", "--parsable", f"--job-name={name}", f"--comment={comment}",
            stdin=FOREIGN_SCRIPT,
        )  # fmt: skip
        return done.stdout.strip().split(";", 1)[0]


class SlurmSimHarness(Harness):
    """The Slurm adapter on a fresh simulated cluster per check, with or without
    ``job_comment``; ``config`` overrides the cluster's settings (SlurmConfig fields)."""

    def __init__(self, job_comment: bool = True, **config: Any) -> None:
        self.job_comment = job_comment
        self.name = "slurm-sim" if job_comment else "slurm-sim-nocomment"
        defaults = SlurmConfig(max_job_id=60, min_job_age=30, nodes=("n1", "n2"), cpus_per_node=4)
        self.config = dataclasses.replace(defaults, job_comment=job_comment, **config)

    def new_backend(self) -> Backend:
        cluster = SimCluster(self.config)
        return SlurmBackend(
            cluster, self.config.cluster_name, clock=cluster.sim.clock, job_comment=self.job_comment
        )

    def reopen(self, backend: Backend) -> Backend:
        return _slurm(backend).reopen()

    def clock(self, backend: Backend) -> Clock:
        return _cluster(backend).sim.clock

    def faults(self, backend: Backend) -> FaultInjector:
        return SimFaults(_cluster(backend), self.job_comment)

    def executions(self, backend: Backend, ref: ObjectRef) -> Sequence[Sequence[Mapping[str, str]]]:
        return _cluster(backend).executions(ref)


def _slurm(backend: Backend) -> SlurmBackend:
    if not isinstance(backend, SlurmBackend):
        raise TypeError(f"the Slurm harness was given {type(backend).__name__}")
    return backend


def _cluster(backend: Backend) -> SimCluster:
    transport = _slurm(backend).transport
    if not isinstance(transport, SimCluster):
        raise TypeError("the slurm-sim harness was given a backend it did not make")
    return transport


# -- a real Slurm on this machine --------------------------------------------------------------


class LocalSlurm(_ReplyLosing):
    """The Slurm commands of this host, with the lost-reply fault: the command runs on the real
    cluster, and its reply is dropped. Every id sbatch hands out is told to the harness."""

    def __init__(self, transport: Transport, handed_out: Callable[[str], None]) -> None:
        super().__init__()
        self.transport = transport
        self.handed_out = handed_out

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = self.transport.run(argv, stdin=stdin, timeout=timeout)
        words = command_argv(argv)
        if _program(words) == "sbatch" and done.returncode == 0:
            self.handed_out(done.stdout.strip().split(";", 1)[0])
        if self.take(words):
            raise subprocess.TimeoutExpired(list(argv), timeout or 0.0)
        return done


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


class LocalFaults(FaultInjector):
    """The faults a job's owner or the cluster's administrator can really cause on a real
    cluster: let run (by waiting), finish (the harness's job command exits with the code
    asked), requeue underneath (``scontrol requeue``), purge (by waiting past MinJobAge), id
    reuse (driving the id counter around MaxJobId with held filler jobs), lost replies and
    look-alike jobs. Losing a node cannot be done to one job alone, and comments are lost only
    where the cluster's accounting keeps none."""

    def __init__(self, harness: SlurmLocalHarness, backend: SlurmBackend) -> None:
        self.harness = harness
        self.backend = backend
        self.slurm = backend.transport
        self.clock = backend.clock

    def _run(self, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.harness.command(list(argv), stdin=stdin)

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
        self, ready: Callable[[SqueueRow | None], bool], ref: ObjectRef, bound: float
    ) -> bool:
        waited = 0.0
        while True:
            if ready(self._row(ref)):
                return True
            if waited >= bound:
                return False
            pause(self.clock, 0.5)
            waited += 0.5

    # -- the scheduler -----------------------------------------------------------------------------

    def let_run(self, ref: ObjectRef) -> None:
        """Wait for the real scheduler to start the job (it cannot be made to), and for every
        task of the harness's job command to have recorded its environment."""
        bound = self.harness.bound

        def started(row: SqueueRow | None) -> bool:
            if row is None or row.state not in PENDING_STATES:
                return True
            if row.reason in HELD_REASONS or (
                row.reason == "BeginTime"
                and row.start is not None
                and row.start > self.clock.now() + bound
            ):
                raise Rejected(
                    f"job {ref.id} is held ({row.reason}, eligible at {row.start}): "
                    "the scheduler will not start it"
                )
            return False

        if ref.id in self.harness.held_look_alikes:
            # Injected held so as not to take the cluster's CPUs; letting it run releases it.
            self._run("scontrol", "release", ref.id)
            self.harness.held_look_alikes.discard(ref.id)
        if not self._wait(started, ref, bound):
            raise CannotInject(f"let_run (job {ref.id} did not start within {bound:.0f} s)")
        row = self._row(ref)
        if row is None:
            raise Rejected(f"job {ref.id} left squeue before it could be seen running")
        if row.state == "RUNNING" and ref.id not in self.harness.look_alikes:
            self._await_tasks(ref)

    def _await_tasks(self, ref: ObjectRef) -> None:
        """Wait (bounded) until every task of the execution now running (the job's restart
        count names it) has recorded itself; a job running a command of its own records
        nothing, and is not waited for long."""
        tasks, restarts = self.harness.job_info(ref)
        waited = 0.0
        while waited < self.harness.task_bound:
            run = self.harness.run_of(ref, restarts)
            if run is not None and len(run[1]) >= tasks:
                return
            if self._state(ref) != "RUNNING":
                return
            pause(self.clock, 0.2)
            waited += 0.2

    def finish(self, ref: ObjectRef, exit_code: int = 0) -> None:
        self.let_run(ref)
        run = self.harness.run_of(ref, self.harness.job_info(ref)[1])
        if run is None or self._state(ref) != "RUNNING":
            raise CannotInject(f"finish (job {ref.id} does not run the harness's job command)")
        self.harness.control(
            "finish",
            'printf "%s\\n" "$1" > "$2/.exit" && mv "$2/.exit" "$2/exit"',
            str(exit_code),
            run[0],
        )
        if not self._wait(
            lambda row: row is None or row.state not in ("RUNNING", "COMPLETING"), ref, 30.0
        ):
            raise CannotInject(
                f"finish (job {ref.id} was still running 30 s after its command was told to exit)"
            )

    def lose_node(self, ref: ObjectRef) -> None:
        raise CannotInject("lose_node (downing a real node would hit every job on it)")

    # -- an administrator ------------------------------------------------------------------------

    def requeue_underneath(self, ref: ObjectRef) -> None:
        self.let_run(ref)
        for argv in (
            ("scontrol", "update", f"JobId={ref.id}", "Requeue=1"),
            ("scontrol", "requeue", ref.id),
        ):
            done = self._run(*argv)
            if done.returncode != 0:
                raise CannotInject(f"requeue_underneath ({' '.join(argv)}: {done.stderr.strip()})")
        self._wait(lambda row: row is None or row.state != "COMPLETING", ref, 60.0)

    def _purge_bound(self) -> float:
        age = self.harness.min_job_age
        if age is None or age > 120:
            raise CannotInject(f"purge (MinJobAge is {age} s here: too long to wait for)")
        # slurmctld purges every max(10, MinJobAge) s the jobs that ended MinJobAge s ago.
        return age + max(10, age) + 10.0

    def purge(self, ref: ObjectRef) -> None:
        self._purged(ref, "purge")

    def _purged(self, ref: ObjectRef, fault: str) -> None:
        """End the ref's job (if it has not ended) and wait until slurmctld has purged it."""
        bound = self._purge_bound()
        self._run("scancel", f"--name={ref.uid}", ref.id)
        if not self._wait(lambda row: row is None, ref, bound):
            raise CannotInject(f"{fault} (job {ref.id} stayed in squeue past MinJobAge)")

    def _gone(self, ref: ObjectRef, fault: str) -> None:
        """Purge the ref's job and drop what it recorded, before its id goes to another."""
        self._purged(ref, fault)
        self.harness.forget(ref)

    def _drive_ids(self, stop_at: str, keep: bool) -> str:
        """Submit held filler jobs (cancelling each) until slurmctld hands out ``stop_at``;
        that filler is kept (the occupant) when ``keep``. Returns its id."""
        first, last = self.harness.id_range()
        for _ in range(2 * (last - first + 1) + 2):
            native = self.harness.filler()
            if native != stop_at or not keep:
                self._run("scancel", native)
            if native == stop_at:
                return native
        raise CannotInject(f"reuse_id (slurmctld never handed out id {stop_at})")

    def reuse_id(self, ref: ObjectRef) -> None:
        self._gone(ref, "reuse_id")
        self._drive_ids(ref.id, keep=True)

    def reuse_id_next(self, ref: ObjectRef) -> None:
        self._gone(ref, "reuse_id_next")
        first, last = self.harness.id_range()
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
        if self.harness.last_id() != str(before):
            self._drive_ids(str(before), keep=False)

    def lose_comments(self) -> None:
        if self.backend.job_comment is not False:
            raise CannotInject(
                "lose_comments (this cluster's accounting keeps comments: run the suite again "
                "after ci/slurm-up.sh --no-job-comment)"
            )

    def lose_next_reply(self, operation: str) -> None:
        if not isinstance(self.slurm, _ReplyLosing):
            raise CannotInject(f"lose_next_reply({operation})")
        self.slurm.arm(operation)

    def inject_named(self, job_id: JobID, name: str, comment: str) -> str:
        done = self._run(
            "sbatch", "--parsable", f"--job-name={name}", f"--comment={comment}",
            "--output=/dev/null", "--time=15", "--hold", stdin=LOOK_ALIKE_SCRIPT,
        )  # fmt: skip
        if done.returncode != 0:
            raise CannotInject(f"inject_named (sbatch refused: {done.stderr.strip()})")
        native = done.stdout.strip().split(";", 1)[0]
        self.harness.handed_out(native)
        self.harness.held_look_alikes.add(native)
        self.harness.look_alikes.add(native)
        return native


class SlurmLocalHarness(Harness):
    """The Slurm adapter on a real Slurm reached through this machine's commands (a login
    node whose filesystem the jobs share). Without one (no ``sbatch`` on PATH, or slurmctld
    does not answer), every check is skipped with the reason, except under ``CI=true``, where
    a missing Slurm fails every check: CI must not pass without it.

    The checks' jobs run :data:`JOB_COMMAND_SCRIPT`, which records each task's environment in
    a control directory and runs until ``finish`` writes its exit code; so the harness sees
    every rank of every execution, as on the simulator."""

    name = "slurm-local"
    required_under_ci = True
    """Whether ``CI=true`` turns a missing Slurm into failures (CI starts this one)."""
    schedule_within = 10.0  # a release or a submission triggers a scheduler pass at once
    stateful_examples = 2
    stateful_steps = 5
    # A real cluster's steps take real seconds (a requeued job waits cred_expire + 1 s, a
    # purge up to MinJobAge + 10 s): a few short programs per stateful check.

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
        config = {}
        for line in done.stdout.splitlines():
            key, sep, value = line.partition(" = ")
            if sep:
                config[key.strip()] = value.strip()
        if not config:
            return "scontrol show config printed no configuration"
        self._config = config
        return None

    def _number(self, key: str) -> int | None:
        text = self.slurm_config().get(key, "").split()
        return int(text[0]) if text and text[0].isdigit() else None

    @property
    def min_job_age(self) -> int | None:
        return self._number("MinJobAge")

    def id_range(self) -> tuple[int, int]:
        """The ids slurmctld hands out: FirstJobId to MaxJobId - 1."""
        first, maximum = self._number("FirstJobId"), self._number("MaxJobId")
        if first is None or maximum is None or maximum - first > 1000:
            raise CannotInject(
                f"reuse_id (MaxJobId {maximum} - FirstJobId {first}: too many ids to drive "
                "the counter around; ci/slurm-up.sh --max-job-id sets a small one)"
            )
        return first, maximum - 1

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
        if done.returncode != 0:
            raise CannotInject(f"reuse_id (sbatch of a filler job refused: {done.stderr.strip()})")
        native = done.stdout.strip().split(";", 1)[0]
        self.handed_out(native)
        return native

    # -- the job command and its control directory ------------------------------------------------

    def control_dir(self) -> str:
        """The directory the jobs' command records into and reads its exit code from (made on
        first use on the cluster's side, removed by :meth:`close`)."""
        if self._control is None:
            done = self.command(["mktemp", "-d", "/tmp/dispatch-harness.XXXXXX"])
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

    def new_backend(self) -> Backend:
        config = self.slurm_config()
        self.clean()
        accounting = config.get("AccountingStorageType", "") not in ("", "accounting_storage/none")
        job_comment = (
            ("job_comment" in config.get("AccountingStoreFlags", "")) if accounting else None
        )
        return SlurmBackend(
            LocalSlurm(self._submit_transport(), self.handed_out),
            config.get("ClusterName") or "slurm",
            clock=self.wall,
            job_comment=job_comment,
            job_requeue=config.get("JobRequeue", "1") == "1",
        )

    def _submit_transport(self) -> Transport:
        """The adapter's transport: on this host, submitting from the control directory, so
        the output files of jobs that name none land there, not in the caller's directory."""
        if type(self.transport) is LocalTransport and self.transport.cwd is None:
            return LocalTransport(cwd=self.control_dir())
        return self.transport

    def reopen(self, backend: Backend) -> Backend:
        return _slurm(backend).reopen()

    def clock(self, backend: Backend) -> Clock:
        return _slurm(backend).clock

    def faults(self, backend: Backend) -> FaultInjector:
        return LocalFaults(self, _slurm(backend))

    def executions(self, backend: Backend, ref: ObjectRef) -> Sequence[Sequence[Mapping[str, str]]]:
        return [tasks for _, tasks in self.runs(ref)]

    def close(self) -> None:
        """Cancel the jobs of the last check, and remove the control directory."""
        self.clean()
        if self._control is not None:
            self.command(["rm", "-rf", "--", self._control])
            self._control = None


def slurm_sim() -> SlurmSimHarness:
    return SlurmSimHarness(job_comment=True)


def slurm_sim_nocomment() -> SlurmSimHarness:
    return SlurmSimHarness(job_comment=False)


def slurm_local() -> SlurmLocalHarness:
    return SlurmLocalHarness()
