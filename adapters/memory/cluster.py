"""The state of one memory "cluster", shared by every MemoryBackend opened on it.

The two shapes model the identity hazards of the schedulers they are named for:

- slurm: numeric ids from a small id space, reused once the old record is purged; a requeue
  moves the submit time strictly forward and raises the restart count; holds are far-future
  start times decoded against the current submit time; accounting keeps ended jobs (and their
  comments only when ``job_comment`` is set).
- kubeflow: objects named ``namespace/name``, UIDs never reused, names reused after delete;
  ended objects are deleted after ``min_job_age`` and leave no history. An object carries its
  identity as Kubernetes would, never in a comment: the label ``dispatch/job`` (the job's ULID
  in lower case, which a label selector matches exactly) and the annotations
  ``dispatch/submission`` and ``dispatch/attempt`` (see :mod:`adapters.memory.kube`).

Time comes only from the injected clock, inside calls: every call first runs :meth:`tick`,
which applies the scheduled faults that are due and purges what has aged out. No threads.
Faults are methods named for what they do; every one is recorded in :attr:`trace`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from adapters.memory.kube import job_of_label, parse_kube_identity
from adapters.memory.tables import Shape
from adapters.slurm.identity import decode_hold, encode_hold, parse_slurm_comment
from dispatch_core import (
    Cause,
    Clock,
    EncodingError,
    ExecutionIdentity,
    JobID,
    JobSpec,
    OutcomeUnknown,
    Rejected,
    State,
)

DEFAULT_REQUEUE_DELAY: Final = 120
"""Slurm 22.05 makes a requeued job eligible after the credential lifetime (120 s) plus 1 s."""


@dataclass(frozen=True)
class Execution:
    """One execution of one scheduler object: who it was, and the environment each rank saw."""

    serial: int
    native_id: str
    uid: str
    identity: ExecutionIdentity | None
    started: float
    work_dir: str | None
    ranks: tuple[dict[str, str], ...]


@dataclass
class Job:
    """One scheduler object (a Slurm job, or a TrainJob) as the memory scheduler keeps it."""

    serial: int
    native_id: str
    uid: str
    name: str
    comment: str | None
    """The Slurm shape's comment (None on the kubeflow shape, which has no comments)."""
    spec: JobSpec | None
    job: JobID | None
    """The job whose plan made the object (None for an object made by someone else); what
    the object shows of it is its name (Slurm shape) or its label (kubeflow shape)."""
    submit: int
    eligible: int
    state: State = State.QUEUED
    cause: Cause = Cause.NONE
    exit_code: int | None = None
    restart_count: int = 0
    end_time: float | None = None
    requeue_flag: bool = False
    holds_placed: int = 0
    kube_hold: int | None = None
    owner: str = "me"
    purged: bool = False
    comment_kept: bool = True
    submitted: int | None = None
    """When the object was made (``submit`` before any requeue moved it)."""
    labels: dict[str, str] = field(default_factory=dict)
    """The kubeflow shape's labels (a label selector matches them exactly)."""
    annotations: dict[str, str] = field(default_factory=dict)
    """The kubeflow shape's annotations."""

    @property
    def ended(self) -> bool:
        return self.state.ended

    def hold_number(self) -> int | None:
        """The hold this object carries, decoded as its scheduler would show it."""
        if self.state is not State.QUEUED:
            return None  # only a pending object carries a hold
        if self.kube_hold is not None:
            return self.kube_hold
        return decode_hold(self.eligible, self.submit)


@dataclass
class _Event:
    at: float
    order: int
    what: str
    action: Callable[[], None]


@dataclass
class MemoryCluster:
    """One cluster's jobs, accounting, executions and scheduled faults."""

    shape: Shape
    clock: Clock
    name: str
    first_job_id: int = 1
    max_job_id: int = 999
    min_job_age: float = 300.0
    job_comment: bool = True
    accounting: bool = True
    requeue_delay: int = DEFAULT_REQUEUE_DELAY
    namespace: str = "default"
    seed: int = 0
    jobs: dict[str, Job] = field(default_factory=dict)
    history: list[Job] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    _next_id: int = 0
    _serial: int = 0
    _events: list[_Event] = field(default_factory=list)
    _pending_faults: dict[str, str] = field(default_factory=dict)
    _ignore_cancel: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not 0 < self.first_job_id <= self.max_job_id:
            raise ValueError("need 0 < first_job_id <= max_job_id")
        self._next_id = self.first_job_id
        self._rng = random.Random(self.seed)

    # -- time -------------------------------------------------------------------------------

    def now(self) -> int:
        """The current time in whole seconds, as schedulers stamp it."""
        return int(self.clock.now())

    def tick(self) -> None:
        """Apply the faults that are due, then purge what has aged out."""
        now = self.clock.now()
        due = sorted((e for e in self._events if e.at <= now), key=lambda e: (e.at, e.order))
        for event in due:
            self._events.remove(event)
            self._record(f"scheduled {event.what}")
            event.action()
        for job in list(self.jobs.values()):
            if job.ended and job.end_time is not None and job.end_time + self.min_job_age <= now:
                self._purge(job)

    def at(self, when: float, what: str, action: Callable[[], None]) -> None:
        """Schedule ``action`` to happen at virtual time ``when``."""
        self._serial += 1
        self._events.append(_Event(when, self._serial, what, action))

    def _record(self, line: str) -> None:
        self.trace.append(f"t={self.clock.now():.0f} {line}")

    # -- submission ---------------------------------------------------------------------------

    def submit(
        self,
        name: str,
        comment: str | None,
        spec: JobSpec | None,
        job: JobID | None,
        owner: str = "me",
        *,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        namespace: str | None = None,
    ) -> Job:
        """Create a new scheduler object, pending and eligible now: on the Slurm shape a job
        named ``name`` with ``comment``; on the kubeflow shape an object ``name`` in
        ``namespace`` (the cluster's by default) with ``labels`` and ``annotations``."""
        self._serial += 1
        now = self.now()
        if self.shape == "slurm":
            native_id = str(self._allocate_id())
            uid = name
        else:
            native_id = self._kube_name(name, namespace or self.namespace)
            uid = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        record = Job(
            serial=self._serial,
            native_id=native_id,
            uid=uid,
            name=name if self.shape == "slurm" else native_id.split("/", 1)[1],
            comment=comment,
            spec=spec,
            job=job,
            submit=now,
            eligible=now,
            owner=owner,
            submitted=now,
            labels=dict(labels or {}),
            annotations=dict(annotations or {}),
        )
        self.jobs[native_id] = record
        if self.shape == "slurm":
            self._record(f"submit {native_id} name={record.name} comment={comment} owner={owner}")
        else:
            self._record(
                f"create {native_id} uid={uid} labels={record.labels} "
                f"annotations={record.annotations} owner={owner}"
            )
        return record

    def _allocate_id(self) -> int:
        span = self.max_job_id - self.first_job_id + 1
        for _ in range(span):
            candidate = self._next_id
            self._next_id = candidate + 1 if candidate < self.max_job_id else self.first_job_id
            if str(candidate) not in self.jobs:
                return candidate
        raise Rejected(
            f"{self.name}: every job id from {self.first_job_id} to {self.max_job_id} is in use"
        )

    def set_next_id(self, native_id: int) -> None:
        """Drive the id counter (Slurm shape): ``native_id`` is the next id handed out, if free."""
        if self.shape != "slurm":
            raise Rejected("native ids are not handed out on the kubeflow shape")
        if not self.first_job_id <= native_id <= self.max_job_id:
            raise ValueError(
                f"id {native_id} is outside {self.first_job_id}..{self.max_job_id} on {self.name}"
            )
        self._next_id = native_id
        self._record(f"next id {native_id}")

    def _kube_name(self, name: str, namespace: str) -> str:
        full = f"{namespace}/{name}"
        if full in self.jobs:
            raise Rejected(f"{self.name}: an object named {full} already exists")
        return full

    # -- lookups --------------------------------------------------------------------------------

    def live(self, native_id: str) -> Job | None:
        """The object the scheduler shows under ``native_id`` right now, if any."""
        return self.jobs.get(native_id)

    def accounted(self, native_id: str, uid: str, submit: int) -> Job | None:
        """The accounting record of a purged object (Slurm shape with accounting only)."""
        for job in reversed(self.history):
            if job.native_id == native_id and job.uid == uid and job.submit >= submit:
                return job
        return None

    def named(self, name: str) -> list[Job]:
        """Every object of this user named exactly ``name``: live ones, then accounting."""
        live = [j for j in self.jobs.values() if j.owner == "me" and j.name == name]
        # Accounting shows the latest incarnation of each object, as sacct does without -D.
        latest: dict[int, Job] = {}
        for job in self.history:
            if job.owner == "me" and job.name == name:
                latest[job.serial] = job
        shown = {j.serial for j in live}
        return live + [j for serial, j in latest.items() if serial not in shown]

    def labelled(self, key: str, value: str) -> list[Job]:
        """The objects of the cluster's namespace whose label ``key`` is exactly ``value``
        (kubeflow shape: a label selector)."""
        prefix = f"{self.namespace}/"
        return [
            j
            for j in self.jobs.values()
            if j.native_id.startswith(prefix) and j.labels.get(key) == value
        ]

    def made_as(self, native_id: str, uid: str, submit: int) -> Job | None:
        """The object a ref of ``native_id``, ``uid`` and ``submit`` was made for, whatever
        became of it (live, in accounting, or purged): the latest one made under that id and
        uid at or before ``submit``. This is the cluster's own record, for a harness: an
        adapter sees only what the scheduler shows."""
        made = [
            job
            for job in [*self.jobs.values(), *self.history]
            if job.native_id == native_id
            and job.uid == uid
            and job.submitted is not None
            and job.submitted <= submit
        ]
        return max(made, key=lambda job: job.serial) if made else None

    def shown_comment(self, job: Job) -> str | None:
        """The comment as the scheduler shows it (accounting without job_comment drops it)."""
        return job.comment if job.comment_kept else None

    # -- transitions ------------------------------------------------------------------------------

    def start_execution(self, job: Job) -> Execution:
        """Run a queued, eligible object: every rank sees the four DISPATCH_ variables."""
        if job.state is not State.QUEUED or job.hold_number() is not None:
            raise Rejected(f"{job.native_id} is {job.state.value}, not queued and eligible")
        if job.eligible > self.now():
            raise Rejected(f"{job.native_id} is not eligible before {job.eligible}")
        job.state, job.cause = State.RUNNING, Cause.NONE
        identity = self._identity(job)
        spec = job.spec
        ranks: tuple[dict[str, str], ...] = ()
        if spec is not None:
            per_node = max(spec.procs_per_node, 1)
            base = dict(spec.env)
            if spec.work_dir is not None:
                base["PWD"] = spec.work_dir  # where every rank runs
            if identity is not None:
                base.update(identity.env())
            ranks = tuple(dict(base) for _ in range(spec.nodes * per_node))
        execution = Execution(
            serial=job.serial,
            native_id=job.native_id,
            uid=job.uid,
            identity=identity,
            started=self.clock.now(),
            work_dir=spec.work_dir if spec is not None else None,
            ranks=ranks,
        )
        self.executions.append(execution)
        self._record(f"run {job.native_id} restart={job.restart_count}")
        return execution

    def _identity(self, job: Job) -> ExecutionIdentity | None:
        # Computed at run time from what the object carries: on Slurm what the batch script
        # was written with (the job, the submission of its comment), on Kubernetes what the
        # downward API reads from the object's label and annotations.
        try:
            if self.shape == "slurm":
                if job.job is None or job.comment is None:
                    return None
                submission = parse_slurm_comment(job.comment).submission
                return ExecutionIdentity(job.job, submission, job.native_id, job.restart_count)
            owner = job_of_label(job.labels)
            submission = parse_kube_identity(job.annotations)[0]
        except EncodingError:
            return None
        return ExecutionIdentity(owner, submission, job.uid, job.restart_count)

    def end(self, job: Job, state: State, cause: Cause, exit_code: int | None = None) -> None:
        """End an object in ``state`` with ``cause``."""
        job.state, job.cause, job.exit_code = state, cause, exit_code
        job.end_time = self.clock.now()
        self._record(f"end {job.native_id} {state.value}/{cause.value} exit={exit_code}")

    def cancel(self, job: Job) -> None:
        """Cancel an object unless it has ended (or a fault makes the scheduler ignore it)."""
        if job.ended:
            return
        if job.native_id in self._ignore_cancel:
            self._ignore_cancel.discard(job.native_id)
            self._record(f"cancel of {job.native_id} ignored")
            return
        self.end(job, State.CANCELLED, Cause.CANCELLED)

    def requeue(self, job: Job) -> None:
        """Put a running or ended object back in the queue under the same native id.

        Slurm shape: SubmitTime moves strictly forward, the restart count rises, the begin time
        is pushed out by the requeue delay unless already in the future, and the incarnation
        that ended gets its own accounting record."""
        if job.state in (State.QUEUED, State.HELD):
            raise Rejected(f"{job.native_id} is pending: only a started job can be requeued")
        if job.restart_count + 1 >= 1_000_000:
            raise Rejected(f"{job.native_id} has reached the restart bound")
        now = self.now()
        if self.shape == "slurm":
            if self.accounting:
                self.history.append(self._incarnation_record(job))
            job.submit = max(now, job.submit + 1)
            if job.eligible <= now:
                job.eligible = now + self.requeue_delay + 1
        job.restart_count += 1
        job.state, job.cause, job.exit_code, job.end_time = State.QUEUED, Cause.REQUEUED, None, None
        self._record(f"requeue {job.native_id} restart={job.restart_count} submit={job.submit}")

    def _incarnation_record(self, job: Job) -> Job:
        copy = Job(**{f: getattr(job, f) for f in job.__dataclass_fields__})
        if copy.state not in (State.SUCCEEDED, State.FAILED, State.CANCELLED):
            copy.state, copy.cause = State.QUEUED, Cause.REQUEUED
        copy.comment_kept = self.job_comment
        copy.purged = True
        return copy

    def _purge(self, job: Job) -> None:
        del self.jobs[job.native_id]
        job.purged = True
        self._record(f"purge {job.native_id}")
        if self.shape == "slurm" and self.accounting:
            job.comment_kept = self.job_comment
            self.history.append(job)

    # -- faults (each named for what it does, each recorded) -----------------------------------

    def fault(self, native_id: str, kind: str) -> None:
        """Arm a one-shot fault for the next call of ``kind`` on ``native_id`` (or ``*``):
        ``lose-reply-<op>`` (the write takes effect, its reply is lost), ``timeout-<op>`` (the
        write times out before it takes effect), for ``op`` one of start, stop, hold, release,
        requeue; ``crash-requeue`` (the adapter crashes between its two requeue steps)."""
        self._pending_faults[f"{kind}:{native_id}"] = kind
        self._record(f"fault armed {kind} on {native_id}")

    def armed_faults(self) -> list[str]:
        """The kinds of the one-shot faults :meth:`fault` armed that no call has taken yet, in
        the order they were armed."""
        return list(self._pending_faults.values())

    def take_fault(self, kind: str, native_id: str = "*") -> bool:
        """Consume an armed fault for this call, if any."""
        for key in (f"{kind}:{native_id}", f"{kind}:*"):
            if key in self._pending_faults:
                del self._pending_faults[key]
                self._record(f"fault {kind} on {native_id}")
                return True
        return False

    def lost_reply(self, kind: str, native_id: str = "*") -> None:
        """Raise OutcomeUnknown after a write took effect, if a lost reply is armed."""
        if self.take_fault(f"lose-reply-{kind}", native_id):
            raise OutcomeUnknown(f"{self.name}: the reply to {kind} {native_id} was lost")

    def timed_out(self, kind: str, native_id: str = "*") -> None:
        """Raise OutcomeUnknown before a write takes effect, if a timeout is armed."""
        if self.take_fault(f"timeout-{kind}", native_id):
            raise OutcomeUnknown(f"{self.name}: {kind} {native_id} timed out")

    def require(self, native_id: str) -> Job:
        job = self.jobs.get(native_id)
        if job is None:
            raise KeyError(f"no live object {native_id} on {self.name}")
        return job

    def let_run(self, native_id: str) -> Execution:
        """The scheduler starts a queued, eligible object now."""
        return self.start_execution(self.require(native_id))

    def finish(self, native_id: str, exit_code: int = 0) -> None:
        """A running object's command exits with ``exit_code``."""
        job = self.require(native_id)
        if job.state is not State.RUNNING:
            raise Rejected(f"{native_id} is {job.state.value}, not running")
        if exit_code == 0:
            self.end(job, State.SUCCEEDED, Cause.NONE, 0)
        else:
            self.end(job, State.FAILED, Cause.EXIT_CODE, exit_code)

    def fail(self, native_id: str, cause: Cause) -> None:
        """A running object fails for ``cause`` (out of memory, timeout, preemption, ...)."""
        job = self.require(native_id)
        if job.state is not State.RUNNING:
            raise Rejected(f"{native_id} is {job.state.value}, not running")
        self.end(job, State.FAILED, cause)

    def lose_node(self, native_id: str, after: float = 0.0) -> None:
        """The node under a running object is lost (now, or ``after`` seconds from now): the
        object is requeued when it is requeueable, else it fails with cause node_lost."""

        def happen() -> None:
            job = self.jobs.get(native_id)
            if job is None or job.state is not State.RUNNING:
                return
            if job.requeue_flag:
                self.requeue(job)
            else:
                self.end(job, State.FAILED, Cause.NODE_LOST)

        if after > 0:
            self.at(self.clock.now() + after, f"node lost under {native_id}", happen)
        else:
            self._record(f"node lost under {native_id}")
            happen()

    def requeue_underneath(self, native_id: str) -> None:
        """An administrator requeues the object, without asking its owner."""
        self._record(f"admin requeue {native_id}")
        self.requeue(self.require(native_id))

    def purge(self, native_id: str | None = None) -> None:
        """Drop ended objects from the live view now (all of them, or one)."""
        for job in list(self.jobs.values()):
            if job.ended and (native_id is None or job.native_id == native_id):
                self._purge(job)

    def delete(self, native_id: str) -> None:
        """Delete an object outright (the Kubernetes way); its name can then be reused."""
        job = self.require(native_id)
        if not job.ended:
            self.end(job, State.CANCELLED, Cause.CANCELLED)
        self._purge(job)

    def reuse_id(
        self, native_id: str, name: str = "someone-elses-job", comment: str = "", owner: str = "me"
    ) -> Job:
        """Have ``native_id`` (of an ended object) taken by a new object: by default a foreign
        job; pass the same ``dj-`` name to reuse it within a job (Slurm shape: through the id
        counter). On the kubeflow shape another user creates an object of no job's labels
        under the deleted object's namespace/name."""
        job = self.jobs.get(native_id)
        if job is not None:
            if not job.ended:
                raise Rejected(f"{native_id} has not ended; its id cannot be reused yet")
            self._purge(job)
        if self.shape == "kubeflow":
            namespace, taken = native_id.split("/", 1)
            self._record(f"reuse name {native_id}")
            return self.submit(taken, None, None, None, "someone-else", namespace=namespace)
        self.set_next_id(int(native_id))
        self._record(f"reuse id {native_id}")
        return self.submit(name, comment, None, None, owner=owner)

    def recreate(self, native_id: str) -> Job:
        """Kubeflow shape: delete the object and create it again from its manifest (``kubectl
        replace --force``): the same namespace/name, labels, annotations, spec, job, owner and
        hold; a new uid, created now."""
        if self.shape != "kubeflow":
            raise Rejected(
                "an object is made under an id of one's choosing on the kubeflow shape only"
            )
        job = self.require(native_id)
        self.delete(native_id)
        namespace, name = native_id.split("/", 1)
        copy = self.submit(
            name,
            None,
            job.spec,
            job.job,
            job.owner,
            labels=dict(job.labels),
            annotations=dict(job.annotations),
            namespace=namespace,
        )
        if job.kube_hold is not None and job.state is State.HELD:
            copy.state, copy.kube_hold = State.HELD, job.kube_hold
        self._record(f"recreate {native_id} uid={copy.uid}")
        return copy

    def rewrite_comment(self, native_id: str, comment: str) -> None:
        """The owner rewrites the object's comment."""
        self.require(native_id).comment = comment
        self._record(f"comment of {native_id} rewritten to {comment!r}")

    def rename(self, native_id: str, name: str) -> None:
        """The owner renames the object (allowed until it ends)."""
        job = self.require(native_id)
        if job.ended:
            raise Rejected(f"{native_id} has ended: its name cannot change")
        job.name = name
        if self.shape == "slurm":
            job.uid = name
        self._record(f"{native_id} renamed to {name!r}")

    def ignore_next_cancel(self, native_id: str) -> None:
        """The scheduler acknowledges the next cancel of ``native_id`` but does not end it."""
        self._ignore_cancel.add(native_id)
        self._record(f"fault armed ignore-cancel on {native_id}")

    def ignored_cancels(self) -> list[str]:
        """The native ids whose next cancel :meth:`ignore_next_cancel` armed to be ignored and
        no cancel has met yet, by id."""
        return sorted(self._ignore_cancel)

    def hold_value(self, job: Job, hold: int) -> None:
        """Write a hold as this shape's scheduler stores it."""
        if self.shape == "slurm":
            job.eligible = encode_hold(job.submit, hold)
        else:
            job.kube_hold = hold
        job.holds_placed = hold

    def release_value(self, job: Job) -> None:
        """Clear a hold as this shape's scheduler does (Slurm: ``StartTime=now``)."""
        if self.shape == "slurm":
            job.eligible = self.now()
        else:
            job.kube_hold = None
