"""slurmctld and slurmdbd, modelled: the job table, the scheduler, requeue, holds, purge, and
accounting, on a virtual clock.

Time moves only when the clock is advanced; :meth:`Controller.sync` then replays every timed
event (scheduler passes, job ends, time limits, purges, scheduled faults) in time order, so
the same calls give the same state whatever the step sizes. Lookups by id and by name are
dictionary lookups, never scans of the job table.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from dispatch_core import Clock
from simulators.slurm.config import SlurmConfig
from simulators.slurm.spool import LineSpool

PRIORITY_BASE: Final = 0xFFFF0000
"""priority/basic gives each job a priority one below the lowest it gave before, starting just
below this; a job submitted held gets 0 and takes none, a release takes a new one."""


class JobState(StrEnum):
    """The state squeue and sacct print for a job (the base state or the flag shown instead)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    SPECIAL_EXIT = "SPECIAL_EXIT"
    REQUEUED = "REQUEUED"  # accounting only: the row of an incarnation that was requeued

    @property
    def finished(self) -> bool:
        return self in _FINISHED

    @property
    def compact(self) -> str:
        return _COMPACT[self]


_FINISHED: Final = frozenset(
    {
        JobState.COMPLETED,
        JobState.CANCELLED,
        JobState.FAILED,
        JobState.TIMEOUT,
        JobState.NODE_FAIL,
        JobState.PREEMPTED,
        JobState.BOOT_FAIL,
        JobState.DEADLINE,
        JobState.OUT_OF_MEMORY,
    }
)
_COMPACT: Final = {
    JobState.PENDING: "PD",
    JobState.RUNNING: "R",
    JobState.SUSPENDED: "S",
    JobState.COMPLETING: "CG",
    JobState.COMPLETED: "CD",
    JobState.CANCELLED: "CA",
    JobState.FAILED: "F",
    JobState.TIMEOUT: "TO",
    JobState.NODE_FAIL: "NF",
    JobState.PREEMPTED: "PR",
    JobState.BOOT_FAIL: "BF",
    JobState.DEADLINE: "DL",
    JobState.OUT_OF_MEMORY: "OOM",
    JobState.SPECIAL_EXIT: "SE",
    JobState.REQUEUED: "RQ",
}


class HoldKind(StrEnum):
    """Why a job's priority is 0, as the pending reason shows it."""

    USER = "JobHeldUser"
    ADMIN = "JobHeldAdmin"
    REQUEUE = "job requeued in held state"


class SlurmError(Exception):
    """An error slurmctld returns; ``text`` is ``slurm_strerror`` of its code."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


INVALID_JOB_ID: Final = "Invalid job id specified"
JOB_PENDING: Final = "Job is pending execution"
NOT_PENDING: Final = "Job is no longer pending execution"
ALREADY_DONE: Final = "Job has already finished"
DISABLED: Final = "Requested operation is presently disabled"
TOO_LONG: Final = "Pathname of a file, directory or other parameter too long"
EAGAIN: Final = "Resource temporarily unavailable"
BAD_PARTITION: Final = "Invalid partition name specified"
BAD_NODE_COUNT: Final = "Node count specification invalid"
BAD_FEATURES: Final = "Invalid feature specification"
UNAVAILABLE: Final = "Unable to contact slurm controller (connect failure)"


def _size(text: str) -> int:
    """The length in bytes slurmctld sees: a command line's bytes, which Python gives as text
    decoded with ``surrogateescape`` (so bytes that are no UTF-8 count as themselves)."""
    return len(text.encode("utf-8", "surrogateescape"))


@dataclass
class Signal:
    """``--signal=[{R|B}:]<sig>[@<secs>]``."""

    number: int
    name: str
    seconds: int = 60
    batch_only: bool = False


@dataclass
class Submission:
    """What sbatch sends: the options after ``#SBATCH`` lines and the command line are merged."""

    script: str
    args: tuple[str, ...] = ()
    name: str | None = None
    comment: str = ""
    partition: str | None = None
    account: str | None = None
    nodes: int = 1
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    time_limit: int | None = None  # minutes
    begin: int | None = None
    work_dir: str = "/root"
    stdout: str | None = None
    stderr: str | None = None
    open_mode: str = "truncate"
    requeue: bool | None = None
    hold: bool = False
    signal: Signal | None = None
    constraint: str | None = None
    export: str = "ALL"
    environment: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class AcctRecord:
    """One row of ``sacct -X -D``: one incarnation of one job id. Slotted: accounting keeps one
    per job ever submitted (100,000 jobs: 16 MiB less than with a ``__dict__`` each)."""

    db_index: int
    job_id: int
    name: str
    user: str
    uid: int
    account: str
    partition: str
    submit: int
    eligible: int
    start: int = 0
    end: int = 0
    state: JobState = JobState.PENDING
    comment: str | None = None
    exit_code: int = 0
    exit_signal: int = 0
    cancelled_by: int | None = None
    cpus: int = 1
    nodes: int = 1
    nodelist: str = ""
    hold_at_end: bool = False


@dataclass
class Job:
    """A job record in slurmctld's memory."""

    job_id: int
    seq: int
    submission: Submission
    name: str
    comment: str
    user: str
    uid: int
    account: str
    partition: str
    submit_time: int
    begin_time: int  # details->begin_time: 0 when unset (held at submit)
    priority: int
    requeue: bool
    cpus: int
    state: JobState = JobState.PENDING
    reason: str = "None"
    hold: HoldKind | None = None
    start_time: int = 0
    end_time: int = 0
    restart_count: int = 0
    exit_code: int = 0
    exit_signal: int = 0
    cancelled_by: int | None = None
    nodelist: str = ""
    allocated: tuple[str, ...] = ()  # nodes whose CPUs the job holds right now
    record: AcctRecord | None = None
    run_for: int | None = None
    exit_after: int = 0
    purged: bool = False
    next_start_chance: int = 0
    incarnation: int = 0
    completing_until: int = 0
    requeue_target: tuple[int, int, HoldKind | None, JobState] | None = None
    last_eval: int = 0
    signals: list[tuple[int, int, str]] = field(default_factory=list)  # (time, number, scope)

    @property
    def time_limit(self) -> int | None:
        return self.submission.time_limit

    @property
    def eligible_time(self) -> int:
        return self.begin_time

    @property
    def held(self) -> bool:
        return self.hold is not None


@dataclass(order=True)
class _Event:
    at: int
    order: int
    what: str = field(compare=False)
    action: Callable[[], None] = field(compare=False)


class Controller:
    """One cluster's slurmctld and slurmdbd."""

    def __init__(self, config: SlurmConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.jobs: dict[int, Job] = {}
        self.by_name: dict[str, set[int]] = {}  # lower-cased name -> live ids
        self.accounting: list[AcctRecord] = []
        self.acct_by_id: dict[int, list[AcctRecord]] = {}
        self.acct_by_name: dict[str, list[AcctRecord]] = {}
        self.free_cpus: dict[str, int] = dict.fromkeys(config.nodes, config.cpus_per_node)
        self.down_until = 0
        self.log = LineSpool()  # slurmctld's log: a few lines per job, kept compressed
        self._now = int(clock.now())
        self._events: list[_Event] = []
        self._order = itertools.count()
        self._seq = itertools.count(1)
        self._next_priority = PRIORITY_BASE - 1
        self._db_index = itertools.count(1)
        self._next_id = config.first_job_id
        self._ready: set[int] = set()
        self._observers: list[Callable[[str, Job], None]] = []
        self.lagging: set[int] = set()  # job seqs whose new records slurmdbd has not got

    # -- time --------------------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self._now

    def sync(self) -> None:
        """Replay every event due up to the clock's time, in time order."""
        target = int(self.clock.now())
        while self._events and self._events[0].at <= target:
            event = heapq.heappop(self._events)
            self._now = max(self._now, event.at)
            event.action()
        self._now = max(self._now, target)

    def at(self, when: int, what: str, action: Callable[[], None]) -> None:
        heapq.heappush(self._events, _Event(when, next(self._order), what, action))

    def observe(self, observer: Callable[[str, Job], None]) -> None:
        """Call ``observer(event, job)`` on every start, end and requeue (execute mode, traces)."""
        self._observers.append(observer)

    def _notify(self, event: str, job: Job) -> None:
        self.log.append(f"t={self._now} {event} {job.job_id}")
        for observer in self._observers:
            observer(event, job)

    # -- lookups -----------------------------------------------------------------------------------

    def get(self, job_id: int) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise SlurmError(INVALID_JOB_ID)
        return job

    def named(self, name: str) -> list[Job]:
        """Live jobs whose name equals ``name`` without regard to case (squeue's match)."""
        return [self.jobs[i] for i in sorted(self.by_name.get(name.lower(), ()))]

    def records(self, job_id: int) -> list[AcctRecord]:
        return self.acct_by_id.get(job_id, [])

    def records_named(self, name: str) -> list[AcctRecord]:
        return self.acct_by_name.get(name.lower(), [])

    def available(self) -> bool:
        return self._now >= self.down_until

    # -- submission --------------------------------------------------------------------------------

    def _admit(self, sub: Submission) -> tuple[str, int]:
        """slurmctld's checks of a submission: its partition and CPUs, or the error."""
        config = self.config
        if _size(sub.comment) > 1024 or (sub.name and _size(sub.name) > 1024):
            raise SlurmError(TOO_LONG)
        partition = sub.partition or config.partition
        if partition not in config.all_partitions:
            raise SlurmError(BAD_PARTITION)
        if sub.nodes > len(config.nodes) or sub.nodes < 1:
            raise SlurmError(BAD_NODE_COUNT)
        per_node = sub.ntasks_per_node or 1
        cpus = max(sub.ntasks or 0, sub.nodes * per_node, 1)
        if cpus > len(config.nodes) * config.cpus_per_node:
            raise SlurmError("Requested node configuration is not available")
        if len(self.jobs) + 1 >= config.effective_max_job_count:
            raise SlurmError(EAGAIN)
        return partition, cpus

    def will_run(self, sub: Submission) -> tuple[int, int, int, tuple[str, ...], str]:
        """``sbatch --test-only``: the checks of :meth:`submit`, then the id, the time the
        job could start, its CPUs, nodes and partition. job_allocate makes the job record,
        so the id is used up, gives it a priority unless it is held, and drops it
        (``src/slurmctld/job_mgr.c``, job_allocate with will_run): no job is left."""
        partition, cpus = self._admit(sub)
        job_id = self._record_id(sub)
        if not sub.hold:
            self._take_priority()
        begin = sub.begin if sub.begin and sub.begin > self._now else self._now
        return job_id, begin, cpus, tuple(self.config.nodes[: sub.nodes]), partition

    def submit(self, sub: Submission) -> Job:
        """Create a job from a submission, or raise the error slurmctld returns."""
        config = self.config
        partition, cpus = self._admit(sub)
        job_id = self._record_id(sub)
        seq = next(self._seq)
        now = self._now
        begin = 0 if sub.hold else (sub.begin if sub.begin and sub.begin > now else now)
        job = Job(
            job_id=job_id,
            seq=seq,
            submission=sub,
            name=sub.name if sub.name is not None else _script_name(sub),
            comment=sub.comment,
            user=config.user,
            uid=config.uid,
            account=sub.account or config.account,
            partition=partition,
            submit_time=now,
            begin_time=begin,
            priority=0 if sub.hold else self._take_priority(),
            requeue=config.job_requeue if sub.requeue is None else sub.requeue,
            cpus=cpus,
            hold=HoldKind.USER if sub.hold else None,
            # A begin time in the future shows at once (slurm-lab 7.6b; fidelity "holds").
            reason=HoldKind.USER.value if sub.hold else ("BeginTime" if begin > now else "None"),
        )
        job.run_for = config.run_time
        self.jobs[job_id] = job
        self.by_name.setdefault(job.name.lower(), set()).add(job_id)
        self._new_record(job)
        self._consider(job, now + config.sched_latency)
        self._notify("submit", job)
        return job

    def _record_id(self, sub: Submission) -> int:
        """The id of the job record ``_job_create`` makes; what it refuses after that (the id
        stays used up, no job is left, accounting has no row) is refused here: a feature
        constraint (``build_feature_list``), since the simulator's nodes have no features."""
        job_id = self._allocate_id()
        if sub.constraint:
            raise SlurmError(BAD_FEATURES)
        return job_id

    def _allocate_id(self) -> int:
        config = self.config
        for _ in range(config.max_job_id - config.first_job_id):
            candidate = self._next_id
            self._next_id = candidate + 1
            if self._next_id >= config.max_job_id:
                self._next_id = config.first_job_id
            if candidate not in self.jobs:
                return candidate
        raise SlurmError(EAGAIN)

    def _take_priority(self) -> int:
        """The next priority priority/basic hands out (never below 1)."""
        priority = self._next_priority
        self._next_priority = max(1, priority - 1)
        return priority

    def set_next_priority(self, priority: int) -> None:
        """Where priority/basic's count stands (it depends on every job since slurmctld
        started: a simulator aligned with a real cluster starts where it is)."""
        if not 1 <= priority < PRIORITY_BASE:
            raise ValueError(f"priority {priority} is outside 1..{PRIORITY_BASE - 1}")
        self._next_priority = priority

    def set_next_job_id(self, job_id: int) -> None:
        """Drive the id counter (the id-reuse fault)."""
        if not self.config.first_job_id <= job_id < self.config.max_job_id:
            raise ValueError(f"job id {job_id} is outside FirstJobId..MaxJobId-1")
        self._next_id = job_id

    def _new_record(self, job: Job) -> None:
        if not self.config.accounting:
            job.record = None
            return
        record = AcctRecord(
            db_index=next(self._db_index),
            job_id=job.job_id,
            name=job.name,
            user=job.user,
            uid=job.uid,
            account=job.account,
            partition=job.partition,
            submit=job.submit_time,
            eligible=job.begin_time,
            cpus=job.cpus,
            nodes=job.submission.nodes,
        )
        job.record = record
        if job.seq in self.lagging:
            return  # slurmdbd has not got it (yet): sacct shows the job's older rows only
        self.accounting.append(record)
        self.acct_by_id.setdefault(job.job_id, []).append(record)
        self.acct_by_name.setdefault(job.name.lower(), []).append(record)

    def lag_accounting(self, job: Job) -> None:
        """From now on slurmdbd gets no new record of ``job`` (its next incarnations): sacct
        shows its older rows only, as for the seconds after a requeue on a real cluster, where
        slurmctld sends the new record on its next db_inx pass (docs/fidelity.md)."""
        self.lagging.add(job.seq)
        self.log.append(f"t={self._now} lag accounting {job.job_id}")

    # -- scheduling --------------------------------------------------------------------------------

    def _consider(self, job: Job, chance: int) -> None:
        """Give ``job`` a scheduler pass at ``chance`` (or when its begin time expires)."""
        job.next_start_chance = chance
        if job.held or job.begin_time == 0:
            return
        if job.begin_time > chance:
            # The next pass shows the reason BeginTime; the periodic pass after the begin
            # time expires starts the job.
            self.at(chance, f"sched {job.job_id}", lambda: self._ready_up(job, chance))
            interval = self.config.sched_interval
            chance = -(-job.begin_time // interval) * interval
        self.at(chance, f"sched {job.job_id}", lambda: self._ready_up(job, chance))

    def _ready_up(self, job: Job, chance: int) -> None:
        current = self.jobs.get(job.job_id)
        if current is not job or job.state is not JobState.PENDING or job.held:
            return
        if job.next_start_chance > chance or job.begin_time > self._now or job.begin_time == 0:
            if job.begin_time > self._now:
                job.reason = "BeginTime"
            return
        self._ready.add(job.job_id)
        self._schedule()

    def _schedule(self) -> None:
        """Start ready jobs in priority order while CPUs are free."""
        order = sorted(
            (self.jobs[i] for i in self._ready if i in self.jobs),
            key=lambda j: (-j.priority, j.seq),
        )
        for job in order:
            if job.state is not JobState.PENDING or job.held or job.begin_time > self._now:
                self._ready.discard(job.job_id)
                continue
            if not self.available():
                job.reason = "None"
                continue
            nodes = self._allocate(job)
            if nodes is None:
                job.reason = "Resources" if job is order[0] else "Priority"
                continue
            self._ready.discard(job.job_id)
            self._start(job, nodes)

    def _allocate(self, job: Job) -> list[str] | None:
        wanted = job.submission.nodes
        per_node = -(-job.cpus // wanted)
        nodes = [n for n in self.config.nodes if self.free_cpus[n] >= per_node][:wanted]
        if len(nodes) < wanted:
            return None
        for node in nodes:
            self.free_cpus[node] -= per_node
        return nodes

    def _release_cpus(self, job: Job) -> None:
        """Give back the CPUs the job holds (once: a second call finds none)."""
        if not job.allocated:
            return
        per_node = -(-job.cpus // len(job.allocated))
        for node in job.allocated:
            self.free_cpus[node] += per_node
        job.allocated = ()

    def _start(self, job: Job, nodes: list[str]) -> None:
        job.state = JobState.RUNNING
        job.reason = "None"
        job.start_time = job.last_eval = self._now
        job.nodelist = ",".join(nodes)
        job.allocated = tuple(nodes)
        job.incarnation += 1
        if job.record is not None:
            job.record.start = self._now
            job.record.eligible = job.begin_time
            job.record.state = JobState.RUNNING
            job.record.nodelist = job.nodelist
        incarnation = job.incarnation
        if job.time_limit is not None:
            kill = self._now + job.time_limit * 60
            self.at(kill, f"time limit {job.job_id}", lambda: self._time_limit(job, incarnation))
        signal = job.submission.signal
        if signal is not None and job.time_limit is not None:
            # slurm-lab §7.9: the signal came exactly 60 s before the kill for @30; Slurm checks
            # time limits once a minute, so the lead is the asked time rounded up to a minute.
            lead = 60 * max(1, -(-signal.seconds // 60))
            when = max(self._now, self._now + job.time_limit * 60 - lead)
            scope = "batch" if signal.batch_only else "steps"

            def deliver() -> None:
                if self._current(job, incarnation):
                    self.signal(job, signal.number, scope)

            self.at(when, f"signal {job.job_id}", deliver)
        if job.run_for is not None:
            done = self._now + job.run_for
            self.at(done, f"exit {job.job_id}", lambda: self._exit(job, incarnation))
        self._notify("start", job)

    def signal(self, job: Job, number: int, scope: str) -> None:
        """Deliver signal ``number`` to a running job's batch shell (``batch``), its steps
        (``steps``) or both (``full``); the job keeps its state."""
        job.signals.append((self._now, number, scope))
        self.log.append(f"t={self._now} signal {number} {job.job_id} {scope}")
        for observer in self._observers:
            observer("signal", job)

    def set_run_time(self, job: Job, seconds: int, exit_code: int = 0) -> None:
        """The job's script runs ``seconds`` once started, then exits with ``exit_code``; a
        running job's current run ends ``seconds`` after its start."""
        job.run_for, job.exit_after = seconds, exit_code
        if job.state is JobState.RUNNING:
            incarnation = job.incarnation
            when = max(self._now, job.start_time + seconds)
            self.at(when, f"exit {job.job_id}", lambda: self._exit(job, incarnation))

    def _exit(self, job: Job, incarnation: int) -> None:
        if self._current(job, incarnation):
            self.finish(job.job_id, job.exit_after)

    def _time_limit(self, job: Job, incarnation: int) -> None:
        if self._current(job, incarnation):
            self.end(job, JobState.TIMEOUT, "TimeLimit", exit_code=0, signal=0)

    def _current(self, job: Job, incarnation: int) -> bool:
        """Is ``job`` still running the incarnation a timed event was scheduled for?"""
        return (
            self.jobs.get(job.job_id) is job
            and job.incarnation == incarnation
            and job.state is JobState.RUNNING
        )

    # -- ends --------------------------------------------------------------------------------------

    def end(
        self,
        job: Job,
        state: JobState,
        reason: str = "None",
        *,
        exit_code: int = 0,
        signal: int = 0,
        cancelled_by: int | None = None,
    ) -> None:
        """End the current incarnation of ``job`` in ``state``."""
        was_running = job.state in (JobState.RUNNING, JobState.COMPLETING)
        if was_running:
            self._release_cpus(job)
        self._ready.discard(job.job_id)
        job.state = state
        job.reason = reason
        job.end_time = self._now
        job.exit_code, job.exit_signal = exit_code, signal
        job.cancelled_by = cancelled_by
        if not was_running and state is JobState.CANCELLED and job.hold is not None:
            job.start_time = self._now  # cancelled while held: Start = End = the cancel time
        self._close_record(job, state)
        self._notify("end", job)
        age = self.config.effective_min_job_age
        self.at(self._now + age, f"purge {job.job_id}", lambda: self._purge(job))
        if was_running:
            self._schedule()

    def _close_record(self, job: Job, state: JobState) -> None:
        record = job.record
        if record is None:
            return
        record.state = state
        record.end = self._now
        record.start = job.start_time
        record.exit_code, record.exit_signal = job.exit_code, job.exit_signal
        record.cancelled_by = job.cancelled_by
        record.eligible = job.begin_time
        record.hold_at_end = job.hold is not None
        # AccountingStoreFlags=job_comment sends the comment with the job-complete message only.
        if self.config.job_comment:
            record.comment = job.comment

    def finish(self, job_id: int, exit_code: int = 0) -> None:
        """The running job's batch script exits with ``exit_code``."""
        job = self.get(job_id)
        if job.state is not JobState.RUNNING:
            raise SlurmError(f"job {job_id} is {job.state}, not RUNNING")
        if exit_code == 0:
            self.end(job, JobState.COMPLETED)
        else:
            self.end(job, JobState.FAILED, "NonZeroExitCode", exit_code=exit_code)

    def _purge(self, job: Job) -> None:
        if self.jobs.get(job.job_id) is not job or not job.state.finished:
            return
        del self.jobs[job.job_id]
        job.purged = True
        names = self.by_name.get(job.name.lower())
        if names is not None:
            names.discard(job.job_id)
            if not names:
                del self.by_name[job.name.lower()]
        self._notify("purge", job)

    def purge_now(self, job_id: int | None = None) -> list[int]:
        """Purge finished jobs now (the purge fault); returns the purged ids."""
        purged = []
        for job in list(self.jobs.values()):
            if job.state.finished and (job_id is None or job.job_id == job_id):
                self._purge(job)
                purged.append(job.job_id)
        return purged

    # -- writes ------------------------------------------------------------------------------------

    def cancel(self, job: Job, by: int) -> None:
        """scancel: a pending or running job ends CANCELLED. A job COMPLETING on its way back
        to the queue (a requeue) is already done as far as the signal goes, and survives."""
        if job.state.finished or job.state is JobState.COMPLETING:
            raise SlurmError(ALREADY_DONE)
        # The job's exit code stays 0:0 (its batch step's records the signal) and its reason
        # stays what it was (JobHeldUser, BeginTime, JobHeldAdmin on a held running job, ...).
        self.end(job, JobState.CANCELLED, job.reason, cancelled_by=by)

    def requeue(self, job: Job, hold: HoldKind | None = None, special_exit: bool = False) -> None:
        """scontrol requeue / requeuehold (22.05 ``_job_requeue_op``)."""
        if not job.requeue:
            raise SlurmError(DISABLED)
        if job.state in (JobState.PENDING, JobState.SPECIAL_EXIT, JobState.COMPLETING):
            raise SlurmError(JOB_PENDING)
        running = job.state is JobState.RUNNING
        self._requeue(job, JobState.REQUEUED, hold, special_exit, completing=running)
        if not running:
            job.reason = hold.value if hold is not None else "None"

    def _requeue(
        self,
        job: Job,
        row_state: JobState,
        hold: HoldKind | None,
        special_exit: bool,
        completing: bool,
    ) -> None:
        """End the incarnation (its accounting row in ``row_state``) and queue the job again:
        restart count + 1, SubmitTime strictly later, begin time pushed out by the requeue delay
        unless already in the future."""
        now = self._now
        if job.state is JobState.RUNNING:
            self._release_cpus(job)
            job.end_time = now
        job.restart_count += 1
        new_submit = max(now, job.submit_time + 1)  # strictly later, even twice in a second
        new_begin = job.begin_time
        if new_begin <= now:
            new_begin = now + self.config.requeue_delay + 1
        final = JobState.SPECIAL_EXIT if special_exit else JobState.PENDING
        self._close_record(job, row_state)
        self._ready.discard(job.job_id)
        self._notify("requeue", job)
        job.requeue_target = (new_submit, new_begin, hold, final)
        if completing:
            # COMPLETING, with the old SubmitTime and the new restart count, until
            # batch_requeue_fini moves the job back to PENDING.
            job.state = JobState.COMPLETING
            self.at(now + 1, f"requeue fini {job.job_id}", lambda: self._requeue_fini(job))
        else:
            self._requeue_fini(job)

    def _requeue_fini(self, job: Job) -> None:
        if self.jobs.get(job.job_id) is not job or job.requeue_target is None:
            return
        submit, begin, hold, final = job.requeue_target
        job.requeue_target = None
        job.state = final
        job.submit_time, job.begin_time = submit, begin
        job.start_time = job.end_time = 0
        job.exit_code = job.exit_signal = 0
        job.cancelled_by = None
        job.nodelist = ""
        if hold is not None:
            self.hold(job, hold)
        else:
            job.reason = "BeginTime" if begin > self._now else "None"
        self._new_record(job)
        if job.record is not None:
            job.record.eligible = begin
        self._consider(job, self._now + self.config.sched_latency)

    def hold(self, job: Job, kind: HoldKind) -> None:
        """scontrol hold / uhold: priority 0; on a running job only the reason changes."""
        if job.state.finished:
            raise SlurmError(ALREADY_DONE)
        job.hold = kind
        job.priority = 0
        job.reason = kind.value
        self._ready.discard(job.job_id)

    def release(self, job: Job) -> None:
        """scontrol release: the priority hold is lifted; a future begin time still applies."""
        if job.state.finished:
            raise SlurmError(ALREADY_DONE)
        if job.hold is None:
            return
        kind, job.hold = job.hold, None
        job.priority = self._take_priority()
        if job.state is JobState.PENDING:
            if job.begin_time == 0:
                job.begin_time = self._now
            # slurm-lab §7.6c and §7.7: released from a requeue hold the reason reads None;
            # from a user or admin hold, BeginTime while the begin time is in the future.
            future = job.begin_time > self._now and kind is not HoldKind.REQUEUE
            job.reason = "BeginTime" if future else "None"
            self._consider(job, self._now + self.config.sched_latency)
        else:
            job.reason = "None"

    def set_begin(self, job: Job, begin: int) -> None:
        """scontrol update StartTime=: only a pending job. A time before the submit time reads
        back as the submit time, one before now as now (slurm-lab §7.7)."""
        if job.state is not JobState.PENDING:
            raise SlurmError(NOT_PENDING)
        if begin < job.submit_time:
            begin = job.submit_time
        elif begin < self._now:
            begin = self._now
        job.begin_time = begin
        job.reason = job.hold.value if job.hold else "None"
        if job.record is not None:
            job.record.eligible = begin
        self._ready.discard(job.job_id)
        self._consider(job, self._now + self.config.sched_latency)

    def set_comment(self, job: Job, comment: str) -> None:
        if job.state.finished:
            raise SlurmError(ALREADY_DONE)
        if _size(comment) > 1024:
            raise SlurmError(TOO_LONG)
        job.comment = comment

    def set_name(self, job: Job, name: str) -> None:
        if job.state.finished:
            raise SlurmError(ALREADY_DONE)
        ids = self.by_name.get(job.name.lower())
        if ids is not None:
            ids.discard(job.job_id)
            if not ids:
                del self.by_name[job.name.lower()]
        job.name = name
        self.by_name.setdefault(name.lower(), set()).add(job.job_id)
        if job.record is not None:
            job.record.name = name
            self.acct_by_name.setdefault(name.lower(), []).append(job.record)

    def set_requeue(self, job: Job, requeue: bool) -> None:
        job.requeue = requeue

    # -- faults that end or move jobs --------------------------------------------------------------

    def fail(self, job_id: int, state: JobState, reason: str = "None", exit_code: int = 0) -> None:
        """A running job ends in ``state`` (FAILED, OUT_OF_MEMORY, TIMEOUT, DEADLINE, ...)."""
        job = self.get(job_id)
        if job.state is not JobState.RUNNING:
            raise SlurmError(f"job {job_id} is {job.state}, not RUNNING")
        signal = 9 if state is JobState.OUT_OF_MEMORY else 0
        self.end(job, state, reason, exit_code=exit_code, signal=signal)

    def node_failure(self, node: str) -> list[int]:
        """The node goes down: its jobs are requeued when requeueable, else end NODE_FAIL."""
        hit = [
            j
            for j in self.jobs.values()
            if j.state is JobState.RUNNING and node in j.nodelist.split(",")
        ]
        for job in hit:
            self._node_lost(job)
        self._schedule()
        return [j.job_id for j in hit]

    def node_failure_of(self, job: Job) -> None:
        """The node under one running job fails for that job alone (its share of a node that
        others share is lost): it is requeued when requeueable, else it ends NODE_FAIL, as
        :meth:`node_failure` does to each job of a node; then a scheduler pass."""
        if job.state is not JobState.RUNNING:
            raise SlurmError(f"job {job.job_id} is {job.state}, not RUNNING")
        self._node_lost(job)
        self._schedule()

    def _node_lost(self, job: Job) -> None:
        if job.requeue:
            self._requeue(job, JobState.NODE_FAIL, None, False, completing=False)
        else:
            self.end(job, JobState.NODE_FAIL, "NodeDown")

    def set_owner(self, job: Job, user: str, uid: int) -> None:
        """Make ``job`` (and its accounting record) another user's, as if that user had
        submitted it: squeue ``--me`` and a user's sacct no longer show it to this one."""
        job.user, job.uid = user, uid
        if job.record is not None:
            job.record.user, job.record.uid = user, uid

    def live_jobs(self) -> Iterator[Job]:
        return iter(list(self.jobs.values()))


def _script_name(sub: Submission) -> str:
    """sbatch's default job name: the script's file name, or ``sbatch`` for stdin."""
    return sub.environment.get("__SCRIPT_NAME__", "sbatch")
