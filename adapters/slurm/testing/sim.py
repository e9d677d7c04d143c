"""The Slurm adapter on the Slurm simulator: the ``slurm-sim`` and ``slurm-sim-nocomment``
harnesses, one class (:class:`SlurmSimHarness`).

- ``slurm-sim``: :class:`~adapters.slurm.SlurmBackend` on a fresh
  :class:`~simulators.slurm.SlurmSim` per backend (ids wrap at 60, MinJobAge 30 s, two nodes
  of four CPUs, a virtual clock that starts at the wall time), accounting with
  ``job_comment``; the batch scripts really run (:class:`HarnessExecute`), and every task's
  environment is recorded.
- ``slurm-sim-nocomment``: the same cluster without ``AccountingStoreFlags=job_comment``: it
  alone gives :class:`~conformance.powers.LosesIdentityHistory` (``slurm-sim`` declines it).

Both offer every fault the simulator allows, each a power of :mod:`conformance.powers`
implemented on the harness; ask for a pre-termination signal through the adapter's
``slurm.TimeLimit`` and ``slurm.Signal`` and read, from the controller, when a job was
signalled and when it ended (:class:`~conformance.powers.ObservesSignals`); list the user's
unfinished jobs (:class:`~conformance.powers.ShowsInventory`); and let a check run the
adapter's preflight, whose waits cost no real time here
(:class:`~conformance.powers.PreflightsFree`).

The adapter reaches the simulator only through its transport (:class:`SimCluster`), as it
reaches a real Slurm; faults act as the scheduler, an administrator or another user would,
through the simulator's own fault and command APIs, never through the adapter under test.
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

from adapters.slurm import LocalTransport, SlurmBackend
from adapters.slurm.parse import parse_sbatch_id
from adapters.slurm.testing.lookalikes import (
    NEAR_HOLDS,
    OTHER_USER,
    describe_slurm_look_alike,
    slurm_look_alike,
    slurm_look_alike_forms,
)
from adapters.slurm.testing.transport import (
    FIRST_CALLS,
    LOSABLE,
    SLURM_COMMANDS,
    CallFaults,
    command_words,
    lost_reply,
    program,
)
from conformance.harness import (
    CLOCK_HOLD_EDGES,
    LOOK_ALIKES_HELD,
    CannotInject,
    Fault,
    Harness,
    Host,
    IdentityModel,
    Listed,
    LocalHost,
    LookAlike,
    Lookup,
    Probe,
    Race,
    ReplyLoss,
    Shown,
    Signalled,
    advance_to_residue,
    look_alike_need,
    race_need,
)
from conformance.powers import (
    AsksBeyondCapacity,
    DisablesHistory,
    FailsBeforeEffect,
    FailsBetweenSteps,
    IgnoresStops,
    IgnoresWrites,
    KillsForMemory,
    LagsHistory,
    LosesIdentityHistory,
    LosesNodes,
    LosesReplies,
    MakesLookAlikes,
    MovesToHoldEdges,
    ObservesExecutions,
    ObservesSignals,
    Preempts,
    PreflightsFree,
    Purges,
    RacesWrites,
    RequeuesUnderneath,
    ReusesIds,
    ReusesIdsNext,
    RunsCommands,
    RunsJobs,
    ShowsInventory,
    ShowsPaths,
    TellsUnfired,
    VanishesBeforeReadBack,
    WritesNearHolds,
    WritesRankOutput,
)
from dispatch_core import Clock, HoldBound, JobID, JobSpec, ObjectRef, Rejected, VirtualClock
from simulators.slurm import Job, JobState, SlurmConfig, SlurmSim
from simulators.slurm.commands.scontrol import expand_path
from simulators.slurm.execute import LAUNCH_FAILED, ExecuteMode, Running

SCRATCH_ENV: Final = "DISPATCH_SIM_SCRATCH"
"""Names the directory the simulated clusters keep their files in (see :func:`scratch_root`)."""


def scratch_root() -> str | None:
    """Where a simulated cluster makes its files (its scripts, its tasks' environments, the
    checks' scratch directories): ``$DISPATCH_SIM_SCRATCH`` when set; else ``/dev/shm`` when it
    is a directory we may write (a tmpfs: a directory made and removed there costs about a
    tenth of what it costs on a disk, and a suite makes and removes thousands); else None, the
    temp directory."""
    chosen = os.environ.get(SCRATCH_ENV)
    if chosen:
        return chosen
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    return None


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
SIGNAL_GRACE: Final = 5.0
"""Real seconds a script still running when its ``--signal`` comes has to act on it (a trap
that writes what it saw and exits) before the suite goes on."""
SIGNAL: Final = "USR1"
"""The pre-termination signal the harness asks for (to the job's steps, as ``--signal``
without ``B:`` sends it)."""
FOREIGN_SCRIPT: Final = "#!/bin/sh\ntrue\n"
OTHER_UID: Final = 1001
"""The uid of :data:`~adapters.slurm.testing.lookalikes.OTHER_USER` on the simulator."""

SLURM_IDENTITY: Final = IdentityModel(
    lookup=Lookup.NAME, reuses_ids=True, requeue_moves_submit=True, history_outlives_live=True
)
"""Slurm's identity model: ``squeue --name``, ids reused after MaxJobId, a requeue moves
SubmitTime on, accounting keeps what squeue forgot."""
SLURM_IMPOSSIBLE: Final = frozenset(
    [
        Fault.RECREATE,  # slurmctld hands out every job id itself
        Fault.TAKE_ID_AHEAD,  # so nobody takes the one a start will get first
        Fault.STALL_TEARDOWN,  # a requeue waits for no teardown another controller owns
        race_need(Race.TOUCHED),  # scontrol update carries no version another writer moves
        Probe.SELF_RESTARTS,  # Slurm reruns no failed job by itself (only a node failure's)
        Probe.IMAGES,  # a job's steps run on the node as they are, in no container image
        Probe.UNPULLABLE_IMAGE,  # so no image is pulled, and none can fail to be
        Probe.RUNTIMES,  # a job names no runtime: failed tasks are never rerun in place
        Fault.FAIL_EVERY_TRY,  # the Slurm adapter retries no write: its one try is every try
        look_alike_need(LookAlike.MISNAMED),  # the name is the key; slurmctld hands out ids
        Fault.EVICT,  # a Slurm node evicts no job: short of memory, it kills a step (oom_kill)
    ]
)
"""What no Slurm harness can show, by Slurm's nature (``Harness.impossible``)."""

_PENDING_WORDS: Final = frozenset(
    {"PENDING", "SPECIAL_EXIT", "REQUEUE_HOLD", "REQUEUED", "REQUEUE_FED", "RESV_DEL_HOLD"}
)
_RUNNING_WORDS: Final = frozenset(
    {"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT",
     "RESIZING"}
)  # fmt: skip


def slurm_listed(name: str, state: str) -> Listed:
    """A Slurm job as the oracle shows it: squeue's state word (pending, held or requeued;
    running or ending; else ended) and the job its exact name names (``dj-<id>``)."""
    word = state.rstrip("+")
    shown = (
        Shown.PENDING
        if word in _PENDING_WORDS
        else Shown.RUNNING
        if word in _RUNNING_WORDS
        else Shown.ENDED
    )
    return Listed(shown, name[3:] if name.startswith("dj-") else None)


NO_SELF_RESTARTS: Final = (
    "Slurm never reruns a job whose command failed: it requeues by itself only a requeueable "
    "job whose node failed, which lose_node and requeue_underneath show"
)
NO_IMAGES: Final = (
    "a Slurm job's steps run on the node as they are, in no container image: the adapter "
    "declares ContainerImage no"
)
NO_RECREATE: Final = (
    "slurmctld hands out every job id itself: nobody makes a job under the id of one that is gone"
)
NO_TAKE_AHEAD: Final = (
    "slurmctld hands out every job id itself: nobody can take the id a start will get first"
)
NO_STALL: Final = (
    "a finished Slurm job is never requeued: no requeue waits for an ended run to be taken down"
)
NO_TOUCHED: Final = (
    "scontrol update carries no version another writer could move: a write that meets "
    "another's change simply lands"
)
NO_RETRIES: Final = (
    "the Slurm adapter retries no write within a call: fail_before_effect is its every try"
)
NO_RUNTIMES: Final = (
    "a Slurm job names no runtime that could rerun a failed task under the identity it had: "
    "the Slurm adapter weakens execution identity for no spec"
)
NO_MISNAMED: Final = (
    "a Slurm job's name is the job's lookup key and slurmctld hands out every job id: no job "
    "carries the job's key under an id its identity does not imply"
)
NO_EVICT: Final = (
    "a Slurm node evicts no job for its own sake: a node short of memory has the kernel kill a "
    "step for its memory (OUT_OF_MEMORY, which oom_kill shows), and a drained node lets its "
    "jobs run on"
)
SLURM_IMPOSSIBLE_WHY: Final[Mapping[str, str]] = {
    Fault.RECREATE: NO_RECREATE,
    Fault.TAKE_ID_AHEAD: NO_TAKE_AHEAD,
    Fault.EVICT: NO_EVICT,
    look_alike_need(LookAlike.MISNAMED): NO_MISNAMED,
    Fault.STALL_TEARDOWN: NO_STALL,
    race_need(Race.TOUCHED): NO_TOUCHED,
    Probe.SELF_RESTARTS: NO_SELF_RESTARTS,
    Probe.IMAGES: NO_IMAGES,
    Probe.UNPULLABLE_IMAGE: NO_IMAGES,
    Probe.RUNTIMES: NO_RUNTIMES,
    Fault.FAIL_EVERY_TRY: NO_RETRIES,
}
"""Why a Slurm harness cannot give each need of :data:`SLURM_IMPOSSIBLE` (the reason a
harness's ``declines`` returns, shown in the check's skip)."""
KEEPS_COMMENTS: Final = (
    "this cluster's accounting keeps comments, AccountingStoreFlags=job_comment; "
    "slurm-sim-nocomment has none"
)
"""Why ``slurm-sim`` declines lose_identity_history."""
ELIGIBLE_LOOK_ALIKES: Final = (
    "its look-alikes are eligible, so that accounting shows them to find (sacct selects by "
    "eligible time): the scheduler runs them by itself; slurm-local's are held"
)
"""Why the simulated Slurm harnesses decline ``look_alike:held``."""


class HarnessExecute(ExecuteMode):
    """Execute mode for a harness: a job's batch script and command really run when it starts
    (every task's environment recorded first), but the suite never waits on a command: one
    still running :data:`COMMAND_GRACE` real seconds after its tasks were recorded runs on in
    the background until its job ends or is requeued (then it is killed, as slurmd would), or
    until the cluster is dropped. In virtual time a started job runs until a fault, a stop or
    its time limit ends it, whatever its command does, its ``--signal`` included
    (:meth:`on_signal`)."""

    def __init__(self, sim: SlurmSim, rank_env_dir: Path, scratch_root: str | None) -> None:
        super().__init__(
            sim, default_run=FOREVER, rank_env_dir=rank_env_dir, scratch_root=scratch_root
        )
        weakref.finalize(self, _kill_all, self.running)

    def on_start(self, job: Job) -> None:
        if job.submission.signal is not None:
            super().on_start(job)
            return
        running = self.launch(job)
        if running is None:
            self.ended(job, LAUNCH_FAILED)
        elif self._exits(running, job):
            self.ended(job, self.reap(running, None))
        else:
            self.running[job.job_id] = running

    def on_signal(self, job: Job) -> None:
        """A script still running when its ``--signal`` comes gets it, and has
        :data:`SIGNAL_GRACE` real seconds to act on it (a trap that writes what it saw and
        exits) before virtual time goes on. The job runs on until its time limit, a fault or a
        stop ends it, as every job of the harness does, whatever its script does: so a job
        whose command ended at once in real time is signalled, then killed at its limit, as a
        job whose command runs on would be."""
        running = self.running[job.job_id]
        if not _runs(running):
            return  # its command ended already: nothing to signal
        self.deliver(job, running)
        deadline = time.monotonic() + SIGNAL_GRACE
        while _runs(running) and time.monotonic() < deadline:
            time.sleep(0.002)

    def _exits(self, running: Running, job: Job) -> bool:
        """Whether the script ends within its grace (a bounded real-time wait)."""
        sub = job.submission
        tasks = sub.ntasks or sub.nodes * (sub.ntasks_per_node or 1)
        ranks = self.recorded[-1].directory
        deadline = time.monotonic() + START_BOUND
        recorded_at: float | None = None
        while not running.exit.wait(0.002):  # wakes the moment the script ends
            now = time.monotonic()
            if recorded_at is None and sum(1 for _ in ranks.glob("*.env")) >= tasks:
                recorded_at = now
            if now >= deadline or (recorded_at is not None and now - recorded_at > COMMAND_GRACE):
                return False
        return True


def _runs(running: Running) -> bool:
    """Whether any process of the script's process group (its steps included) still runs."""
    running.process.poll()  # reap the script itself once it has ended
    try:
        os.killpg(running.process.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_all(running: dict[int, Running]) -> None:
    """Kill the scripts still running when the cluster goes, and release what each holds (its
    output files, its scratch directory: on tmpfs, a leak would hold memory until reboot)."""
    for job in list(running.values()):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            ExecuteMode.reap(job, 5.0)
    running.clear()


# -- the simulated cluster ---------------------------------------------------------------------


class SimCluster:
    """One simulated cluster, and the transport to it: Slurm commands go to the simulator, with
    the environment of a login shell in a scratch directory; anything else (``cat``, ``tail``,
    ``rm``) runs on this host, whose filesystem the simulated jobs write to. :attr:`calls`
    holds the call faults armed (a lost reply, a timeout before effect)."""

    def __init__(self, config: SlurmConfig) -> None:
        self.calls = CallFaults()
        # (operation, what happens once its call took effect, before the caller sees the reply)
        self.after: list[tuple[str, Callable[[Sequence[str], str], None]]] = []
        # (operation, what happens just before its call)
        self.before: list[tuple[str, Callable[[Sequence[str], str], None]]] = []
        self.ignored: list[str] = []  # job ids whose next scancel exits 0 and does nothing
        self.ignored_writes: list[str] = []  # operations whose next call exits 0, does nothing
        self.cut: list[str] = []  # operations whose last call times out before its effect
        # (operation, what the scheduler does to the job named just before its first call)
        self.raced: list[tuple[str, Callable[[int], None]]] = []
        self.root = scratch_root()
        self.scratch = Path(tempfile.mkdtemp(prefix="dispatch-slurm-sim-", dir=self.root))
        weakref.finalize(self, shutil.rmtree, self.scratch, ignore_errors=True)
        # The cluster reads about the wall time: find bounds sacct by the job id's ULID time.
        self.sim = SlurmSim(config, clock=VirtualClock(int(time.time())))
        self.execute = HarnessExecute(self.sim, self.scratch / "ranks", self.root)
        self.env = {
            "PWD": str(self.scratch),
            "HOME": str(self.scratch),
            "PATH": os.environ.get("PATH", os.defpath),
            "USER": config.user,
            "LOGNAME": config.user,
        }
        self.local = LocalTransport()
        self.submitted: list[tuple[int, str, int, int]] = []  # (id, name, submit, seq)
        self.signalled: dict[int, list[float]] = {}  # seq -> signal times of its first run
        self.ended_at: dict[int, float] = {}  # seq -> when its first execution ended
        self.sim.controller.observe(self._observed)

    # -- the transport --------------------------------------------------------------------------

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        words = command_words(argv)
        command = program(words)
        if command not in SLURM_COMMANDS:
            return self.local.run(argv, stdin=stdin, timeout=timeout)
        for index, (operation, then) in enumerate(self.before):
            if LOSABLE[operation](words):
                del self.before[index]
                then(words, "")
                break
        if command == "scancel" and words[-1] in self.ignored:
            self.ignored.remove(words[-1])
            return subprocess.CompletedProcess(list(argv), 0, "", "")
        for index, (operation, race) in enumerate(self.raced):
            if FIRST_CALLS[operation](words):
                del self.raced[index]
                named = [w.removeprefix("JobId=") for w in words if w.startswith("JobId=")]
                race(int(named[0]))
                break
        for operation in self.cut:
            if LOSABLE[operation](words):
                self.cut.remove(operation)
                # The last step times out (after the caller's timeout, virtual) before effect.
                self.sim.faults.timeout_before(command, args=tuple(words[1:]))
                break
        for operation in self.ignored_writes:
            if LOSABLE[operation](words):
                self.ignored_writes.remove(operation)
                return subprocess.CompletedProcess(list(argv), 0, "", "")
        fault = self.calls.take(words)
        if fault == "lose_reply":
            # The call takes effect; its reply is lost after the caller's timeout (virtual).
            self.sim.faults.lose_reply(command, args=tuple(words[1:]))
        elif fault == "before_effect":
            # The call times out (after the caller's timeout, virtual) before it takes effect.
            self.sim.faults.timeout_before(command, args=tuple(words[1:]))
        done = self.sim.run(argv, stdin=stdin, env=self.env, timeout=timeout)
        for index, (operation, then) in enumerate(self.after):
            if LOSABLE[operation](words) and done.returncode == 0:
                del self.after[index]
                then(words, done.stdout)
                break
        if fault in ("reply_failure", "reply_garbled"):
            return lost_reply(fault, words, done)
        return done

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
        elif event == "signal" and job.seq not in self.ended_at:
            self.signalled.setdefault(job.seq, []).append(float(self.sim.controller.now))
        elif event in ("end", "requeue"):
            self.ended_at.setdefault(job.seq, float(self.sim.controller.now))

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

    def signals(self, ref: ObjectRef) -> Signalled:
        """The signals the controller sent the ref's job during its first execution, and when
        that execution ended (the controller's own record)."""
        seq = self.seq(ref)
        if seq is None:
            return Signalled(received=(), ended=None)
        return Signalled(received=tuple(self.signalled.get(seq, ())), ended=self.ended_at.get(seq))

    def listing(self) -> dict[str, Listed]:
        """The user's jobs in slurmctld's memory (its live view), as squeue shows them."""
        controller = self.sim.controller
        controller.sync()
        user = self.sim.config.user
        return {
            str(job.job_id): slurm_listed(job.name, job.state.value)
            for job in controller.jobs.values()
            if job.user == user
        }

    def inventory(self) -> list[str]:
        """The ids of the user's jobs in slurmctld's memory that have not finished."""
        controller = self.sim.controller
        controller.sync()
        user = self.sim.config.user
        return [
            str(job.job_id)
            for job in controller.jobs.values()
            if job.user == user and not job.state.finished
        ]


class SlurmSimHarness(
    Harness[SlurmBackend],
    RunsJobs[SlurmBackend],
    RequeuesUnderneath[SlurmBackend],
    Purges[SlurmBackend],
    ReusesIds[SlurmBackend],
    ReusesIdsNext[SlurmBackend],
    LosesNodes[SlurmBackend],
    KillsForMemory[SlurmBackend],
    Preempts[SlurmBackend],
    LagsHistory[SlurmBackend],
    DisablesHistory[SlurmBackend],
    LosesIdentityHistory[SlurmBackend],
    LosesReplies[SlurmBackend],
    FailsBeforeEffect[SlurmBackend],
    VanishesBeforeReadBack[SlurmBackend],
    IgnoresStops[SlurmBackend],
    IgnoresWrites[SlurmBackend],
    RacesWrites[SlurmBackend],
    FailsBetweenSteps[SlurmBackend],
    TellsUnfired[SlurmBackend],
    WritesNearHolds[SlurmBackend],
    MovesToHoldEdges[SlurmBackend],
    MakesLookAlikes[SlurmBackend],
    ObservesExecutions[SlurmBackend],
    ObservesSignals[SlurmBackend],
    ShowsInventory[SlurmBackend],
    ShowsPaths[SlurmBackend],
    WritesRankOutput[SlurmBackend],
    AsksBeyondCapacity,
    RunsCommands,
    PreflightsFree,
):
    """The Slurm adapter on a fresh simulated cluster per backend, with or without
    ``job_comment``; ``config`` overrides the cluster's settings (SlurmConfig fields). Every
    fault the simulator allows, on the backend's simulated cluster; lose_identity_history only
    without ``job_comment`` (its accounting never kept comments)."""

    identity = SLURM_IDENTITY
    impossible = SLURM_IMPOSSIBLE

    def __init__(self, job_comment: bool = True, **config: Any) -> None:
        self.job_comment = job_comment
        self.name = "slurm-sim" if job_comment else "slurm-sim-nocomment"
        defaults = SlurmConfig(max_job_id=60, min_job_age=30, nodes=("n1", "n2"), cpus_per_node=4)
        self.config = dataclasses.replace(defaults, job_comment=job_comment, **config)

    def declines(self, need: str) -> str | None:
        if need == Fault.LOSE_IDENTITY_HISTORY and self.job_comment:
            return KEEPS_COMMENTS
        if need == LOOK_ALIKES_HELD:
            return ELIGIBLE_LOOK_ALIKES
        return SLURM_IMPOSSIBLE_WHY.get(need)

    def new_backend(self) -> SlurmBackend:
        cluster = SimCluster(self.config)
        return SlurmBackend(
            cluster,
            self.config.cluster_name,
            clock=cluster.sim.clock,
            job_comment=self.job_comment,
            user=self.config.user,
        )

    def reopen(self, backend: SlurmBackend) -> SlurmBackend:
        return backend.reopen()

    def clock(self, backend: SlurmBackend) -> Clock:
        return sim_cluster(backend).sim.clock

    def listing(self, backend: SlurmBackend) -> Mapping[str, Listed]:
        return sim_cluster(backend).listing()

    # -- what ran, as the target saw it ------------------------------------------------------------

    def executions(
        self, backend: SlurmBackend, ref: ObjectRef
    ) -> Sequence[Sequence[Mapping[str, str]]]:
        return sim_cluster(backend).executions(ref)

    def host(self, backend: SlurmBackend) -> Host:
        """This host's filesystem: the simulated jobs' scripts run here (the checks' scratch
        directories beside the cluster's files, in :func:`scratch_root`)."""
        return LocalHost(sim_cluster(backend).root)

    def pre_termination_spec(self, spec: JobSpec, lead: int, limit: int) -> JobSpec:
        return slurm_pre_termination_spec(spec, lead, limit)

    def signals(self, backend: SlurmBackend, ref: ObjectRef) -> Signalled:
        return sim_cluster(backend).signals(ref)

    def inventory(self, backend: SlurmBackend) -> Sequence[str]:
        return sim_cluster(backend).inventory()

    def beyond_capacity_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` on one node more than the cluster has: slurmctld refuses it at submission
        ("Node count specification invalid", as the simulator's ``_admit`` models it)."""
        return spec.model_copy(update={"nodes": len(self.config.nodes) + 1})

    def rank_writes(self, backend: SlurmBackend, ref: ObjectRef, rank: int, text: str) -> None:
        """Task ``rank`` of the running job writes the line ``text`` to its stdout now: it goes
        to the end of the job's output file (``StdOut``), where srun puts every task's stdout
        unless told otherwise (srun(1), Slurm 22.05, "IO Redirection": "By default, stdout and
        stderr will be redirected from all tasks to the stdout and stderr of srun", which a
        batch step's srun has in the job's output file)."""
        job = sim_cluster(backend).require(ref)
        sub = job.submission
        tasks = sub.ntasks or sub.nodes * (sub.ntasks_per_node or 1)
        if job.state is not JobState.RUNNING or not 0 <= rank < tasks:
            raise Rejected(f"job {job.job_id} ({job.state}, {tasks} tasks) runs no task {rank}")
        path = expand_path(sub.stdout or "slurm-%j.out", job, sub.work_dir)
        with open(path, "a", encoding="utf-8") as output:
            output.write(f"{text}\n")

    # -- the scheduler -----------------------------------------------------------------------------

    def let_run(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        cluster = sim_cluster(backend)
        _let_run(cluster, cluster.require(ref))

    def finish(self, backend: SlurmBackend, ref: ObjectRef, exit_code: int = 0) -> None:
        cluster = sim_cluster(backend)
        job = cluster.require(ref)
        _let_run(cluster, job)
        cluster.sim.finish(job.job_id, exit_code)

    def oom_kill(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        """The job's step is killed by the cgroup's memory limit: it ends OUT_OF_MEMORY."""
        cluster = sim_cluster(backend)
        job = cluster.require(ref)
        _let_run(cluster, job)
        cluster.sim.fail(job.job_id, JobState.OUT_OF_MEMORY)

    def lose_node(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        cluster = sim_cluster(backend)
        job = cluster.require(ref)
        _let_run(cluster, job)
        node = job.nodelist.split(",")[0]
        controller = cluster.sim.controller
        sharing = [
            other
            for other in controller.jobs.values()
            if other is not job
            and other.state is JobState.RUNNING
            and node in other.nodelist.split(",")
        ]
        if sharing:
            # Only this job's share of the node is lost (the fault acts on one object).
            controller.node_failure_of(job)
        else:
            cluster.sim.faults.node_failure(node)

    def preempt(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        """Preemption (mode requeue): a job submitted --requeue, or marked Requeue=1, is
        requeued with a PREEMPTED row in accounting; any other ends PREEMPTED."""
        cluster = sim_cluster(backend)
        job = cluster.require(ref)
        _let_run(cluster, job)
        cluster.sim.faults.preempt(job.job_id)
        _finish_requeue(cluster, job)

    def lag_history(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        """slurmdbd gets no new record of the job from now on (its requeues' incarnations):
        sacct keeps showing its older rows, as in the seconds after a real requeue."""
        cluster = sim_cluster(backend)
        cluster.sim.controller.lag_accounting(cluster.require(ref))

    def disable_history(self, backend: SlurmBackend) -> None:
        """The cluster runs on without accounting storage (``accounting_storage/none``): sacct
        prints "Slurm accounting storage is disabled" and exits 1; no new record is kept."""
        sim = sim_cluster(backend).sim
        config = dataclasses.replace(sim.config, accounting=False)
        sim.config = sim.controller.config = config

    # -- an administrator ------------------------------------------------------------------------

    def requeue_underneath(
        self, backend: SlurmBackend, ref: ObjectRef, *, in_flight: bool = False, held: bool = False
    ) -> None:
        cluster = sim_cluster(backend)
        if held:
            job = cluster.require(ref)
            _let_run(cluster, job)
            cluster.admin("scontrol", "update", f"JobId={job.job_id}", "Requeue=1")
            cluster.admin("scontrol", "requeuehold", "State=SpecialExit", str(job.job_id))
            if not in_flight:
                _finish_requeue(cluster, job)
            return
        _requeue_underneath(cluster, cluster.require(ref), settle=not in_flight)

    def purge(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        cluster = sim_cluster(backend)
        job = cluster.live(ref)
        if job is None:
            return  # already out of slurmctld's memory
        _end(cluster, job)
        _aged(cluster, job)
        cluster.sim.faults.purge_now(job.job_id)

    def reuse_id(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        cluster = sim_cluster(backend)
        job = cluster.live(ref)
        if job is not None:
            _end(cluster, job)
            _aged(cluster, job)
        # Another user's job takes the id; held, so it stays (and runs nothing on this host).
        cluster.sim.faults.reuse_id(int(ref.id), name="someone-elses-job", hold=True, run_for=None)

    def reuse_id_next(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        cluster = sim_cluster(backend)
        job = cluster.live(ref)
        if job is not None:
            _end(cluster, job)
            _aged(cluster, job)
            cluster.sim.faults.purge_now(job.job_id)
        cluster.sim.controller.set_next_job_id(int(ref.id))

    def lose_identity_history(self, backend: SlurmBackend) -> None:
        if self.job_comment:
            raise CannotInject(Fault.LOSE_IDENTITY_HISTORY, why=KEEPS_COMMENTS)
        # Nothing to do: this cluster's accounting never kept comments.

    # -- the calls -----------------------------------------------------------------------------

    def lose_next_reply(
        self, backend: SlurmBackend, operation: str, form: ReplyLoss = ReplyLoss.TIMEOUT
    ) -> None:
        sim_cluster(backend).calls.arm(operation, form.value)

    def vanish_before_read_back(
        self, backend: SlurmBackend, operation: str, *, reuse_id: bool = False, early: bool = False
    ) -> None:
        if operation not in ("start", "stop") or (early and (operation != "stop" or reuse_id)):
            raise CannotInject(f"vanish_before_read_back({operation})")
        cluster = sim_cluster(backend)

        def vanish(words: Sequence[str], stdout: str) -> None:
            native = parse_sbatch_id(stdout) if operation == "start" else words[-1]
            job = cluster.sim.controller.jobs.get(int(native)) if native else None
            if job is None:
                return  # gone already
            _end(cluster, job)
            _aged(cluster, job)
            if reuse_id:
                cluster.sim.faults.reuse_id(
                    job.job_id, name="someone-elses-job", hold=True, run_for=None
                )
            else:
                cluster.sim.faults.purge_now(job.job_id)

        (cluster.before if early else cluster.after).append((operation, vanish))

    def fail_before_effect(self, backend: SlurmBackend, operation: str) -> None:
        sim_cluster(backend).calls.arm_before(operation)

    def ignore_next_stop(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        sim_cluster(backend).ignored.append(ref.id)

    def fail_between_steps(self, backend: SlurmBackend, operation: str) -> None:
        if operation != "requeue":
            raise CannotInject(f"fail_between_steps({operation})")
        sim_cluster(backend).cut.append(operation)

    def race_next_write(self, backend: SlurmBackend, operation: str, race: Race) -> None:
        if operation not in ("hold", "release", "requeue") or race is Race.TOUCHED:
            # TOUCHED: slurmctld's writes carry no precondition, so none meets a newer version
            raise CannotInject(f"race_next_write({operation}, {race.value})")
        cluster = sim_cluster(backend)

        def change(job_id: int) -> None:
            job = cluster.sim.controller.jobs.get(job_id)
            if job is None:
                return  # gone already
            if race is Race.STARTS:
                _let_run(cluster, job)
            elif race is Race.ENDS:
                _end(cluster, job)  # cancelled: ended, still in squeue until MinJobAge
            else:
                _end(cluster, job)
                _aged(cluster, job)
                cluster.sim.faults.purge_now(job.job_id)

        cluster.raced.append((operation, change))

    def ignore_next_write(self, backend: SlurmBackend, operation: str) -> None:
        if operation not in ("hold", "release", "requeue"):
            raise CannotInject(f"ignore_next_write({operation})")
        sim_cluster(backend).ignored_writes.append(operation)

    def unfired(self, backend: SlurmBackend) -> Sequence[str]:
        cluster = sim_cluster(backend)
        vanishing = [f"vanish_before_read_back({op})" for op, _ in cluster.before + cluster.after]
        ignoring = (
            ["ignore_next_stop" for _ in cluster.ignored]
            + [f"ignore_next_write({op})" for op in cluster.ignored_writes]
            + [f"race_next_write({op})" for op, _ in cluster.raced]
            + [f"fail_between_steps({op})" for op in cluster.cut]
        )
        return cluster.calls.unfired() + vanishing + ignoring

    # -- holds -----------------------------------------------------------------------------------

    def near_hold_forms(self) -> int:
        return len(NEAR_HOLDS)

    def near_hold(self, backend: SlurmBackend, ref: ObjectRef, variant: int = 0) -> str:
        """``scontrol update StartTime=`` of the pending job, as its owner could type it."""
        cluster = sim_cluster(backend)
        job = cluster.require(ref)
        if job.state is not JobState.PENDING:
            raise CannotInject(f"near_hold (job {job.job_id} is {job.state.value}, not pending)")
        offset, form = NEAR_HOLDS[variant % len(NEAR_HOLDS)]
        cluster.sim.controller.set_begin(job, job.submit_time + offset)
        return form

    def hold_edges(self) -> int:
        return len(CLOCK_HOLD_EDGES)

    def hold_edge(self, backend: SlurmBackend, variant: int = 0) -> str:
        """The simulator's clock moved to the millisecond where the Slurm adapter's numbering
        (``SlurmBackend.hold``) reaches the edge."""
        sim = sim_cluster(backend).sim
        residue, form = CLOCK_HOLD_EDGES[variant % len(CLOCK_HOLD_EDGES)]
        if not advance_to_residue(sim.clock.now, sim.advance, residue, HoldBound - 1):
            raise CannotInject(f"hold_edge (the clock did not stop at {form})")
        return form

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
        """A job of the look-alike's name and comment (another user's for
        :attr:`LookAlike.OTHER_USER`, submitted then handed over as that user's). It is not
        held: eligible, it shows in accounting as well as in squeue, so both of find's reads
        meet it (a held job has no eligible time, and sacct selects by it)."""
        cluster = sim_cluster(backend)
        form = slurm_look_alike(job_id, kind, variant, other)
        argv = ["sbatch", "--parsable", f"--job-name={form.name}"]
        if form.comment:
            argv.append(f"--comment={form.comment}")
        done = cluster.admin(*argv, stdin=FOREIGN_SCRIPT)
        native = parse_sbatch_id(done.stdout)
        if native is None:
            raise RuntimeError(f"sbatch of a look-alike printed no job id: {done.stdout!r}")
        if form.other_user:
            cluster.sim.controller.set_owner(cluster.sim.job(int(native)), OTHER_USER, OTHER_UID)
        if requeued:
            _requeue_underneath(cluster, cluster.sim.job(int(native)))
        return native


# -- what the scheduler and an administrator do, on one simulated cluster ----------------------


def _let_run(cluster: SimCluster, job: Job) -> None:
    """Let virtual time pass until the scheduler has started ``job`` (bounded)."""
    waited = 0
    while job.state is not JobState.RUNNING:
        controller = cluster.sim.controller
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
        cluster.sim.advance(1)
        waited += 1


def _requeue_underneath(cluster: SimCluster, job: Job, settle: bool = True) -> None:
    _let_run(cluster, job)
    # The adapter submits --no-requeue unless it asked for native requeue: an administrator
    # raises the flag first (slurm-lab §7.6i), then requeues.
    cluster.admin("scontrol", "update", f"JobId={job.job_id}", "Requeue=1")
    cluster.sim.faults.requeue_underneath(job.job_id)
    if settle:
        _finish_requeue(cluster, job)


def _finish_requeue(cluster: SimCluster, job: Job) -> None:
    """Let a requeue in flight (COMPLETING) finish: the job is back in the queue, with its
    new submit time (a second of virtual time; the requeue delay keeps it pending)."""
    for _ in range(10):
        if job.state is not JobState.COMPLETING:
            return
        cluster.sim.advance(1)


def _end(cluster: SimCluster, job: Job) -> None:
    _finish_requeue(cluster, job)
    if not job.state.finished:
        cluster.admin("scancel", str(job.job_id))


def _aged(cluster: SimCluster, job: Job) -> None:
    """slurmctld purges no sooner than 2 s after the end (MinJobAge's floor): a reused id
    is never submitted in the second its old job was."""
    wait = job.end_time + 2 - cluster.sim.controller.now
    if wait > 0:
        cluster.sim.advance(wait)


def slurm_pre_termination_spec(spec: JobSpec, lead: int, limit: int) -> JobSpec:
    """``spec`` with the Slurm adapter's ``slurm.TimeLimit`` (whole minutes) and
    ``slurm.Signal`` (:data:`SIGNAL` to the job's steps, ``lead`` seconds before the limit);
    CannotInject for a limit that is no whole number of minutes, or a lead sbatch cannot say."""
    if limit <= 0 or limit % 60:
        raise CannotInject(f"signals (a Slurm time limit is whole minutes: {limit} s is not)")
    if not 0 < lead < min(limit, 65_536):
        raise CannotInject(f"signals (sbatch --signal cannot say a lead of {lead} s here)")
    extensions = {
        **spec.extensions,
        "slurm.TimeLimit": str(limit // 60),
        "slurm.Signal": f"{SIGNAL}@{lead}",
    }
    return spec.model_copy(update={"extensions": extensions})


def sim_cluster(backend: SlurmBackend) -> SimCluster:
    """The simulated cluster a backend of :class:`SlurmSimHarness` runs on."""
    transport = backend.transport
    if not isinstance(transport, SimCluster):
        raise TypeError("the slurm-sim harness was given a backend it did not make")
    return transport


def slurm_sim() -> SlurmSimHarness:
    return SlurmSimHarness(job_comment=True)


def slurm_sim_nocomment() -> SlurmSimHarness:
    return SlurmSimHarness(job_comment=False)


__all__ = [
    "ELIGIBLE_LOOK_ALIKES",
    "KEEPS_COMMENTS",
    "NO_EVICT",
    "NO_IMAGES",
    "NO_MISNAMED",
    "NO_RECREATE",
    "NO_RETRIES",
    "NO_RUNTIMES",
    "NO_SELF_RESTARTS",
    "NO_STALL",
    "NO_TAKE_AHEAD",
    "NO_TOUCHED",
    "SCRATCH_ENV",
    "SLURM_IDENTITY",
    "SLURM_IMPOSSIBLE",
    "SLURM_IMPOSSIBLE_WHY",
    "HarnessExecute",
    "SimCluster",
    "SlurmSimHarness",
    "scratch_root",
    "sim_cluster",
    "slurm_listed",
    "slurm_pre_termination_spec",
    "slurm_sim",
    "slurm_sim_nocomment",
]
