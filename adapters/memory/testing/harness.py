"""The memory adapter's harnesses: ``memory-slurm`` and ``memory-kubeflow``.

Each check gets a fresh in-memory cluster on a virtual clock. The two shapes declare the
identity models of the schedulers they are named for, and turn the fault intents into their
scheduler's encoding: the Slurm shape into names and comments (the same forms as the Slurm
harnesses, :mod:`adapters.slurm.testing.lookalikes`), the kubeflow shape into labels,
annotations and namespaces (:mod:`adapters.memory.kube`) — it has no comment, no name lookup
and no accounting history, so it lacks the faults Kubernetes cannot have.

One class serves both shapes: :class:`MemoryHarness` implements the union of the powers of
:mod:`conformance.powers` the two shapes offer (the faults on its :class:`MemoryFaults` mixin),
and :meth:`MemoryHarness.declines` names, per shape, those its shape cannot give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from adapters.memory import MemoryBackend, Shape
from adapters.memory.cluster import Job, MemoryCluster
from adapters.memory.kube import (
    ANNOTATION_ATTEMPT,
    ANNOTATION_SUBMISSION,
    LABEL_JOB,
    job_label,
    kube_annotations,
)
from adapters.slurm.testing.lookalikes import (
    NEAR_HOLDS,
    OTHER_USER,
    describe_slurm_look_alike,
    slurm_look_alike,
    slurm_look_alike_forms,
)
from conformance.harness import (
    NEAR_DECIMALS,
    OPERATIONS,
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
    look_alike_need,
    race_need,
    reply_loss_need,
)
from conformance.powers import (
    DisablesHistory,
    Evicts,
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
    ObservesExecutions,
    Preempts,
    PreflightsFree,
    Purges,
    RacesWrites,
    Recreates,
    RequeuesUnderneath,
    ReusesIds,
    ReusesIdsNext,
    RunsJobs,
    ShowsInventory,
    ShowsPaths,
    TakesIdsAhead,
    TellsUnfired,
    VanishesBeforeReadBack,
    WritesNearHolds,
)
from dispatch_core import Cause, Clock, JobID, NotFound, ObjectRef, Rejected, State, VirtualClock

SLURM_SHAPE: Final = IdentityModel(
    lookup=Lookup.NAME, reuses_ids=True, requeue_moves_submit=True, history_outlives_live=True
)
"""The Slurm shape: found by exact name, ids reused once purged, a requeue moves submit on,
accounting keeps what the live view forgot."""
KUBEFLOW_SHAPE: Final = IdentityModel(
    lookup=Lookup.LABEL, reuses_ids=True, requeue_moves_submit=False, history_outlives_live=False
)
"""The kubeflow shape: found by exact label; a deleted object's namespace/name is free for
anyone's new object, though a uid is never reused; a requeue keeps the creation time, and a
deleted object leaves no history."""

NO_REPLY_TEXT: Final = (
    reply_loss_need(ReplyLoss.FAILURE),
    reply_loss_need(ReplyLoss.GARBLED),
    Fault.FAIL_EVERY_TRY,
)
"""The memory adapter runs no command and reads no reply: a lost reply is a timeout only;
and it retries no write, so its one try is every try (fail_every_try)."""
IMPOSSIBLE: Final[Mapping[Shape, frozenset[str]]] = {
    "slurm": frozenset(
        [
            Fault.RECREATE,  # the Slurm shape hands out every native id itself
            Fault.TAKE_ID_AHEAD,  # so nobody can take one first
            Fault.STALL_TEARDOWN,  # no teardown another controller owns
            race_need(Race.TOUCHED),  # the memory cluster's writes carry no version
            Probe.SELF_RESTARTS,  # as Slurm, it reruns no failed job by itself
            Probe.IMAGES,  # as Slurm, no container image
            Probe.UNPULLABLE_IMAGE,  # so none to pull
            Probe.RUNTIMES,  # as Slurm, no runtime a spec could name
            look_alike_need(LookAlike.MISNAMED),  # the name is the key; the cluster gives ids
            Fault.EVICT,  # as on Slurm, a node evicts no job for its own sake
            *NO_REPLY_TEXT,
        ]
    ),
    "kubeflow": frozenset(
        [
            race_need(Race.TOUCHED),  # the memory cluster's writes carry no version
            Fault.REUSE_ID_NEXT,  # as on Kubernetes, the client names each object
            Fault.DISABLE_HISTORY,  # as on Kubernetes, no history to switch off
            look_alike_need(LookAlike.COMMA_LIST),  # a label value holds no comma
            look_alike_need(LookAlike.MISNAMED),  # its identity implies no name
            *NO_REPLY_TEXT,
        ]
    ),
}
"""What each shape's target cannot have by its nature (``Harness.impossible``)."""
REFUSED: Final[Mapping[str, str]] = {
    Probe.COMMANDS: (
        "the memory scheduler runs no command: it records each execution's ranks and their "
        "environment"
    ),
    Probe.SIGNALS: (
        "the memory scheduler models no time limit and no signal: its adapter declares "
        "PreTerminationSignal no"
    ),
    Probe.IMAGES: "the memory scheduler runs no container: its adapter declares ContainerImage no",
    Probe.UNPULLABLE_IMAGE: (
        "the memory scheduler pulls no image: its adapter declares ContainerImage no"
    ),
    Probe.SELF_RESTARTS: (
        "the memory scheduler never reruns a failed object by itself: its adapter declares the "
        "restart rule no"
    ),
    Probe.RUNTIMES: (
        "a memory job's spec names no runtime: whether the memory adapter weakens identity is "
        "its identity_weakened setting (a text, or a function of the spec), no runtime's"
    ),
    Probe.BEYOND_CAPACITY: (
        "the memory scheduler models no capacity: every job it is given fits, and runs when "
        "let_run says"
    ),
    Fault.TAKE_QUOTA: (
        "the memory scheduler meters no quota: nothing another user runs holds a job back"
    ),
    Probe.OTHER_TARGETS: (
        "a memory adapter's answers are its settings, given when it is made: it reads nothing "
        "of its target that another target could hold otherwise"
    ),
    Probe.RANK_OUTPUT: (
        "the memory scheduler runs no command and keeps no output: its adapter declares "
        "OutputRead no"
    ),
    Fault.STALL_TEARDOWN: (
        "the memory scheduler takes an ended object's run down at once: no requeue waits for it"
    ),
    Fault.HOLD_EDGE: (
        "the memory adapter numbers an object's holds by their count, not from a clock: no "
        "clock reaches an edge of its numbering"
    ),
    race_need(Race.TOUCHED): (
        "the memory cluster's writes carry no version another writer could move"
    ),
    Fault.FAIL_EVERY_TRY: (
        "the memory adapter retries no write within a call: fail_before_effect is its every try"
    ),
    reply_loss_need(ReplyLoss.FAILURE): (
        "the memory adapter runs no command and reads no reply: a lost reply is a timeout"
    ),
    reply_loss_need(ReplyLoss.GARBLED): (
        "the memory adapter runs no command and reads no reply: a lost reply is a timeout"
    ),
}
"""What neither shape provides, and why (:meth:`MemoryHarness.declines`): a form of a power it
implements (``race_next_write:touched``, ``lose_next_reply:failure|garbled``), or a power it
does not implement at all."""
KUBE_REFUSED: Final[Mapping[str, str]] = {
    Fault.REUSE_ID_NEXT: (
        "the client names each object: the API server hands out no names, so it gives no later "
        "object a name that was another's"
    ),
    Fault.LOSE_IDENTITY_HISTORY: "no accounting history on Kubernetes",
    Fault.NEAR_HOLD: (
        "the kubeflow shape keeps a hold as its number, no start time to be one step off the "
        "encoding"
    ),
    Fault.LAG_HISTORY: "no accounting history on Kubernetes",
    Fault.DISABLE_HISTORY: "no accounting history on Kubernetes to switch off",
    look_alike_need(LookAlike.COMMA_LIST): (
        "a Kubernetes label value cannot hold a comma, and a label selector never splits one"
    ),
    look_alike_need(LookAlike.MISNAMED): (
        "the kubeflow shape carries the identity in its annotations alone and implies no name "
        "by it: an object of the job's label and identity under any name is the job's"
    ),
}
"""What the kubeflow shape declines of the powers the harness implements for the Slurm shape,
and why (:meth:`MemoryHarness.declines`)."""
SLURM_NO_RECREATE: Final = (
    "the Slurm shape hands out every id itself: nobody makes a job under the id of one that is gone"
)
"""Why the Slurm shape declines ``recreate``, which the harness implements for the kubeflow
shape."""
SLURM_NO_TAKE_AHEAD: Final = (
    "the Slurm shape hands out every id itself: nobody can take the id a start will get first"
)
"""Why the Slurm shape declines ``take_id_ahead``, which the harness implements for the
kubeflow shape."""
SLURM_NO_MISNAMED: Final = (
    "the Slurm shape's name is the job's lookup key and the cluster hands out every id: no "
    "object carries the job's key under an id its identity does not imply"
)
"""Why the Slurm shape declines ``look_alike:misnamed``."""
SLURM_NO_EVICT: Final = (
    "as on Slurm, a node of the Slurm shape evicts no job for its own sake: one short of memory "
    "kills it for its memory (oom_kill)"
)
"""Why the Slurm shape declines ``evict``, which the harness implements for the kubeflow
shape."""

CASE_FORMS: Final = ("the ULID in upper case", "odd letters upper", "even letters upper")
UNPARSABLE_ANNOTATIONS: Final[tuple[tuple[str | None, str | None], ...]] = (
    ("01", "1"),
    ("1", "01"),
    ("0", "1"),
    ("1", "0"),
    ("+1", "1"),
    (" 1", "1"),
    ("1 ", "1"),
    ("1.0", "1"),
    ("1000000", "1"),
    ("one", "1"),
    ("", "1"),
    ("1", None),
    (None, "1"),
)
NEAR_ANNOTATIONS: Final[tuple[tuple[str, str, str], ...]] = (
    *((text, "1", f"the submission is {why}") for text, why in NEAR_DECIMALS),
    *(("1", text, f"the attempt is {why}") for text, why in NEAR_DECIMALS),
    ("1\n", "1", "the submission has a newline after it (a regex's $ takes it)"),
)
"""The kubeflow shape's near identities: each annotation's value replaced by each near decimal
in turn (:attr:`LookAlike.NEAR_IDENTITY`)."""
"""(dispatch/submission, dispatch/attempt) annotation values a strict parser refuses (None: the
annotation is missing): leading zeros, zero, a sign, spaces, a fraction, out of range, no
number, empty, one of the two missing."""
OTHER_NAMESPACE: Final = "someone-else"
"""The namespace of another user's objects (the adapter lists its own namespace only)."""


class LaggingHistory(list[Job]):
    """A memory cluster's history that takes no new record of the objects in ``lagging`` (by
    serial): :meth:`MemoryFaults.lag_history`. The records it withheld are in ``withheld``."""

    def __init__(self, records: list[Job]) -> None:
        super().__init__(records)
        self.lagging: set[int] = set()
        self.withheld: list[Job] = []

    def append(self, record: Job) -> None:
        if record.serial in self.lagging:
            self.withheld.append(record)
        else:
            super().append(record)


def _case_variant(label: str, index: int) -> str:
    if index == 0:
        return label.upper()
    return "".join(c.upper() if i % 2 == index % 2 else c for i, c in enumerate(label))


class _Vanish:
    """The cluster's ``lost_reply`` (or, ``early``, its ``timed_out``) for one write, once:
    there, its object ends and is purged (and its id taken by another's, with ``reuse_id``)."""

    def __init__(self, cluster: MemoryCluster, operation: str, reuse_id: bool, early: bool) -> None:
        self.cluster, self.operation, self.reuse_id = cluster, operation, reuse_id
        self.hook = "timed_out" if early else "lost_reply"
        self.replies: Callable[[str, str], None] = getattr(cluster, self.hook)

    def __call__(self, kind: str, native_id: str = "*") -> None:
        self.replies(kind, native_id)
        if kind != self.operation:
            return
        cluster = self.cluster
        delattr(cluster, self.hook)  # one shot: the cluster's own method again
        if native_id == "*":  # start: the object it just made
            native_id = max(cluster.jobs.values(), key=lambda job: job.serial).native_id
        cluster.delete(native_id)
        if self.reuse_id:
            cluster.reuse_id(native_id)


class _Race:
    """The cluster's ``timed_out`` for one write, once: there, after the adapter read the
    object, it starts or vanishes, and the scheduler refuses the write that meets it."""

    def __init__(self, cluster: MemoryCluster, operation: str, race: Race) -> None:
        self.cluster, self.operation, self.race = cluster, operation, race
        self.replies: Callable[[str, str], None] = cluster.timed_out

    def __call__(self, kind: str, native_id: str = "*") -> None:
        self.replies(kind, native_id)
        if kind != self.operation:
            return
        cluster = self.cluster
        delattr(cluster, "timed_out")  # one shot: the cluster's own method again
        if self.race is Race.STARTS:
            job = cluster.require(native_id)
            wait = job.eligible - cluster.now()
            if wait > 0 and isinstance(cluster.clock, VirtualClock):
                cluster.clock.advance(wait)
            cluster.let_run(native_id)
            raise Rejected(f"{cluster.name}: {native_id} is no longer pending")
        if self.race is Race.ENDS:
            cluster.cancel(cluster.require(native_id))
            raise Rejected(f"{cluster.name}: {native_id} has already finished")
        cluster.delete(native_id)
        raise NotFound(f"{cluster.name}: no object {native_id}")


_WRITES: Final[Mapping[str, str]] = {
    "hold": "hold_value",
    "release": "release_value",
    "requeue": "requeue",
}
"""The cluster's method that carries each write an ``ignore_next_write`` can drop."""


class _Ignored:
    """The cluster's method that carries one write, once: it does nothing."""

    def __init__(self, cluster: MemoryCluster, operation: str) -> None:
        self.cluster, self.operation, self.hook = cluster, operation, _WRITES[operation]

    def __call__(self, *args: object) -> None:
        delattr(self.cluster, self.hook)  # one shot: the cluster's own method again


class MemoryFaults(
    RunsJobs[MemoryBackend],
    RequeuesUnderneath[MemoryBackend],
    Purges[MemoryBackend],
    ReusesIds[MemoryBackend],
    ReusesIdsNext[MemoryBackend],
    Recreates[MemoryBackend],
    TakesIdsAhead[MemoryBackend],
    LosesNodes[MemoryBackend],
    KillsForMemory[MemoryBackend],
    Evicts[MemoryBackend],
    Preempts[MemoryBackend],
    LagsHistory[MemoryBackend],
    DisablesHistory[MemoryBackend],
    LosesIdentityHistory[MemoryBackend],
    LosesReplies[MemoryBackend],
    FailsBeforeEffect[MemoryBackend],
    VanishesBeforeReadBack[MemoryBackend],
    IgnoresStops[MemoryBackend],
    IgnoresWrites[MemoryBackend],
    RacesWrites[MemoryBackend],
    FailsBetweenSteps[MemoryBackend],
    TellsUnfired[MemoryBackend],
    WritesNearHolds[MemoryBackend],
    MakesLookAlikes[MemoryBackend],
):
    """Every fault the memory scheduler models, on a backend's cluster, in its shape's
    encoding: the union of both shapes' (:class:`MemoryHarness` inherits it and declines, per
    shape, what its shape cannot give)."""

    shape: Shape
    """The shape whose encoding the look-alikes take (the harness's)."""

    @staticmethod
    def _kube(backend: MemoryBackend) -> bool:
        return backend.cluster.shape == "kubeflow"

    def _refuse(self, backend: MemoryBackend, need: str) -> None:
        if self._kube(backend) and need in KUBE_REFUSED:
            raise CannotInject(need, why=KUBE_REFUSED[need])

    # -- the scheduler --------------------------------------------------------------------------

    def let_run(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        cluster = backend.cluster
        job = cluster.require(ref.id)
        if job.state is State.RUNNING:
            return  # its execution began when it started: every rank saw its variables
        wait = job.eligible - cluster.now()
        clock = cluster.clock
        if wait > 0 and isinstance(clock, VirtualClock):
            clock.advance(wait)
        cluster.tick()
        cluster.let_run(ref.id)

    def finish(self, backend: MemoryBackend, ref: ObjectRef, exit_code: int = 0) -> None:
        backend.cluster.finish(ref.id, exit_code)

    def lose_node(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        backend.cluster.lose_node(ref.id)

    def oom_kill(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        backend.cluster.fail(ref.id, Cause.OUT_OF_MEMORY)

    def evict(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        """Kubeflow shape: the node under a rank evicts it (as a kubelet's node-pressure
        eviction fails the pod, and under an identity-keeping runtime the object), so the
        object fails, evicted. The Slurm shape's nodes evict nothing."""
        if not self._kube(backend):
            raise CannotInject(Fault.EVICT, why=SLURM_NO_EVICT)
        backend.cluster.fail(ref.id, Cause.EVICTED)

    def preempt(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        """Requeued when requeueable (as a lost node requeues it), else failed, preempted."""
        cluster = backend.cluster
        job = cluster.require(ref.id)
        if job.state is not State.RUNNING:
            raise Rejected(f"{ref.id} is {job.state.value}, not running: nothing to preempt")
        cluster.trace.append(f"t={cluster.clock.now():.0f} preempt {ref.id}")
        if job.requeue_flag:
            cluster.requeue(job)
        else:
            cluster.fail(ref.id, Cause.PREEMPTED)

    def lag_history(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        """Accounting takes no new record of the object from now on (its requeues' and its
        purge's): find and open see what history had of it before."""
        self._refuse(backend, Fault.LAG_HISTORY)
        cluster = backend.cluster
        job = cluster.require(ref.id)
        history = cluster.history
        if not isinstance(history, LaggingHistory):
            history = cluster.history = LaggingHistory(history)
        history.lagging.add(job.serial)
        cluster.trace.append(f"t={cluster.clock.now():.0f} lag history {ref.id}")

    def disable_history(self, backend: MemoryBackend) -> None:
        """Accounting off: no new record, and none of the old ones shows."""
        self._refuse(backend, Fault.DISABLE_HISTORY)
        cluster = backend.cluster
        cluster.accounting = False
        cluster.history = []
        cluster.trace.append(f"t={cluster.clock.now():.0f} accounting disabled")

    # -- an administrator -------------------------------------------------------------------------

    def requeue_underneath(
        self,
        backend: MemoryBackend,
        ref: ObjectRef,
        *,
        in_flight: bool = False,
        held: bool = False,
    ) -> None:
        # The memory scheduler requeues at once: no requeue is ever in flight.
        backend.cluster.requeue_underneath(ref.id)
        if held:  # held by the scheduler: pending, never started until released
            backend.cluster.require(ref.id).state = State.HELD

    def purge(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        backend.cluster.purge(ref.id)

    def reuse_id(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        self._refuse(backend, Fault.REUSE_ID)
        backend.cluster.reuse_id(ref.id)

    def recreate(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        if not self._kube(backend):
            raise CannotInject(Fault.RECREATE, why=SLURM_NO_RECREATE)
        backend.cluster.recreate(ref.id)

    def take_id_ahead(self, backend: MemoryBackend, job: JobID, submission: int) -> str:
        """On the kubeflow shape, another client's object of no identity under the name the
        adapter gives ``(job, submission)``, pending."""
        if not self._kube(backend):
            raise CannotInject(Fault.TAKE_ID_AHEAD, why=SLURM_NO_TAKE_AHEAD)
        name = f"{job.discovery_name().lower()}-{submission}"
        return backend.cluster.submit(name, None, None, None, labels={}, annotations={}).native_id

    def reuse_id_next(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        self._refuse(backend, Fault.REUSE_ID_NEXT)
        cluster = backend.cluster
        if cluster.live(ref.id) is not None:
            cluster.purge(ref.id)
        cluster.set_next_id(int(ref.id))

    def lose_identity_history(self, backend: MemoryBackend) -> None:
        self._refuse(backend, Fault.LOSE_IDENTITY_HISTORY)
        backend.cluster.job_comment = False

    # -- the calls --------------------------------------------------------------------------------

    def lose_next_reply(
        self, backend: MemoryBackend, operation: str, form: ReplyLoss = ReplyLoss.TIMEOUT
    ) -> None:
        # The memory adapter runs no command: a reply lost is a timeout, nothing else.
        if operation not in OPERATIONS or form is not ReplyLoss.TIMEOUT:
            raise CannotInject(f"lose_next_reply({operation})")
        backend.cluster.fault("*", f"lose-reply-{operation}")

    def fail_before_effect(self, backend: MemoryBackend, operation: str) -> None:
        if operation not in OPERATIONS:
            raise CannotInject(f"fail_before_effect({operation})")
        backend.cluster.fault("*", f"timeout-{operation}")

    def vanish_before_read_back(
        self,
        backend: MemoryBackend,
        operation: str,
        *,
        reuse_id: bool = False,
        early: bool = False,
    ) -> None:
        if operation not in ("start", "stop") or (early and (operation != "stop" or reuse_id)):
            raise CannotInject(f"vanish_before_read_back({operation})")
        if reuse_id:
            self._refuse(backend, Fault.REUSE_ID)
        # The adapter's write asks the cluster whether it timed out before its effect, and
        # whether its reply is lost once it took effect: the object vanishes at one of those.
        vanish = _Vanish(backend.cluster, operation, reuse_id, early)
        setattr(backend.cluster, vanish.hook, vanish)

    def ignore_next_stop(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        backend.cluster.ignore_next_cancel(ref.id)

    def ignore_next_write(self, backend: MemoryBackend, operation: str) -> None:
        if operation not in _WRITES:
            raise CannotInject(f"ignore_next_write({operation})")
        ignored = _Ignored(backend.cluster, operation)
        setattr(backend.cluster, ignored.hook, ignored)

    def fail_between_steps(self, backend: MemoryBackend, operation: str) -> None:
        if operation != "requeue":
            raise CannotInject(f"fail_between_steps({operation})")
        backend.cluster.fault("*", "crash-requeue")

    def race_next_write(self, backend: MemoryBackend, operation: str, race: Race) -> None:
        if operation not in _WRITES or race is Race.TOUCHED:
            # TOUCHED: the memory cluster's writes carry no precondition (no versions)
            raise CannotInject(f"race_next_write({operation}, {race.value})")
        hook = "timed_out"  # asked by each write before it takes effect
        setattr(backend.cluster, hook, _Race(backend.cluster, operation, race))

    def unfired(self, backend: MemoryBackend) -> list[str]:
        # The cluster's armed one-shot faults, as "<kind>:<native id>" (the memory cluster's
        # own bookkeeping: armed here, consumed by the adapter's calls into the cluster).
        cluster = backend.cluster
        armed = cluster.armed_faults()
        named = []
        for kind in armed:
            for prefix, need in (
                ("lose-reply-", "lose_next_reply"),
                ("timeout-", "fail_before_effect"),
            ):
                if kind.startswith(prefix):
                    named.append(f"{need}({kind.removeprefix(prefix)})")
        named += ["ignore_next_stop" for _ in cluster.ignored_cancels()]
        named += ["fail_between_steps(requeue)" for kind in armed if kind == "crash-requeue"]
        for hook in ("timed_out", "lost_reply"):
            vanish = vars(cluster).get(hook)
            if isinstance(vanish, _Vanish):
                named.append(f"vanish_before_read_back({vanish.operation})")
        for hook in _WRITES.values():
            ignored = vars(cluster).get(hook)
            if isinstance(ignored, _Ignored):
                named.append(f"ignore_next_write({ignored.operation})")
        race = vars(cluster).get("timed_out")
        if isinstance(race, _Race):
            named.append(f"race_next_write({race.operation})")
        return named

    def near_hold_forms(self) -> int:
        return len(NEAR_HOLDS)

    def near_hold(self, backend: MemoryBackend, ref: ObjectRef, variant: int = 0) -> str:
        self._refuse(backend, Fault.NEAR_HOLD)
        job = backend.cluster.require(ref.id)
        if job.state is not State.QUEUED:
            raise CannotInject(f"near_hold ({ref.id} is {job.state.value}, not queued)")
        offset, form = NEAR_HOLDS[variant % len(NEAR_HOLDS)]
        job.eligible = job.submit + offset
        return form

    # -- look-alikes ------------------------------------------------------------------------------

    def look_alike_forms(self, kind: LookAlike) -> int:
        if self.shape != "kubeflow":
            return slurm_look_alike_forms(kind)
        if kind is LookAlike.CASE_VARIANT:
            return len(CASE_FORMS)
        if kind is LookAlike.UNPARSABLE_IDENTITY:
            return len(UNPARSABLE_ANNOTATIONS)
        if kind is LookAlike.NEAR_IDENTITY:
            return len(NEAR_ANNOTATIONS)
        return 1

    def describe_look_alike(self, kind: LookAlike, variant: int = 0) -> str:
        if self.shape != "kubeflow":
            return describe_slurm_look_alike(kind, variant)
        index = variant % self.look_alike_forms(kind)
        if kind is LookAlike.CASE_VARIANT:
            return f"label {LABEL_JOB} in another case ({CASE_FORMS[index]})"
        if kind is LookAlike.UNPARSABLE_IDENTITY:
            submission, attempt = UNPARSABLE_ANNOTATIONS[index]
            return (
                f"the job's label, annotations {ANNOTATION_SUBMISSION}={submission!r} "
                f"{ANNOTATION_ATTEMPT}={attempt!r}"
            )
        if kind is LookAlike.NEAR_IDENTITY:
            submission, attempt, why = NEAR_ANNOTATIONS[index]
            return (
                f"the job's label, annotations {ANNOTATION_SUBMISSION}={submission!r} "
                f"{ANNOTATION_ATTEMPT}={attempt!r} ({why})"
            )
        if kind is LookAlike.NO_IDENTITY:
            return "the job's label, no dispatch annotations"
        if kind is LookAlike.OTHER_USER:
            return f"the job's label and annotations, in namespace {OTHER_NAMESPACE}"
        return f"{kind.value} #{variant}"

    def inject_look_alike(
        self,
        backend: MemoryBackend,
        job_id: JobID,
        kind: LookAlike,
        variant: int = 0,
        *,
        other: JobID | None = None,
        requeued: bool = False,
    ) -> str:
        cluster = backend.cluster
        if self._kube(backend):
            native = self._kube_look_alike(backend, job_id, kind, variant).native_id
        else:
            form = slurm_look_alike(job_id, kind, variant, other)
            owner = OTHER_USER if form.other_user else "me"
            native = cluster.submit(form.name, form.comment, None, None, owner=owner).native_id
        if requeued:
            cluster.let_run(native)
            cluster.requeue_underneath(native)
        return native

    def _kube_look_alike(
        self, backend: MemoryBackend, job_id: JobID, kind: LookAlike, variant: int
    ) -> Job:
        self._refuse(backend, look_alike_need(kind))
        cluster = backend.cluster
        label = job_label(job_id)
        index = variant % self.look_alike_forms(kind)
        annotations = kube_annotations(1, 1)
        namespace, owner = cluster.namespace, "me"
        if kind is LookAlike.CASE_VARIANT:
            label = _case_variant(label, index)
        elif kind is LookAlike.UNPARSABLE_IDENTITY:
            submission, attempt = UNPARSABLE_ANNOTATIONS[index]
            annotations = {
                key: value
                for key, value in (
                    (ANNOTATION_SUBMISSION, submission),
                    (ANNOTATION_ATTEMPT, attempt),
                )
                if value is not None
            }
        elif kind is LookAlike.NEAR_IDENTITY:
            submission, attempt, _ = NEAR_ANNOTATIONS[index]
            annotations = {ANNOTATION_SUBMISSION: submission, ANNOTATION_ATTEMPT: attempt}
        elif kind is LookAlike.NO_IDENTITY:
            annotations = {}
        elif kind is LookAlike.OTHER_USER:
            namespace = owner = OTHER_NAMESPACE
        else:
            raise CannotInject(look_alike_need(kind))
        base = f"{job_id.discovery_name().lower()}-look-alike"
        number = 1
        while f"{namespace}/{base}-{number}" in cluster.jobs:
            number += 1
        return cluster.submit(
            f"{base}-{number}",
            None,
            None,
            None,
            owner=owner,
            labels={LABEL_JOB: label},
            annotations=annotations,
            namespace=namespace,
        )


class MemoryHarness(
    Harness[MemoryBackend],
    MemoryFaults,
    ObservesExecutions[MemoryBackend],
    ShowsPaths[MemoryBackend],
    ShowsInventory[MemoryBackend],
    PreflightsFree,
):
    """The memory adapter, on a fresh in-memory cluster with a virtual clock per check;
    ``cluster`` overrides the cluster's settings (MemoryBackend's keyword arguments). Its
    preflight's probes wait on the virtual clock (:class:`PreflightsFree`)."""

    def __init__(self, shape: Shape = "slurm", **cluster: Any) -> None:
        self.shape = shape
        self.name = f"memory-{shape}"
        self.identity = SLURM_SHAPE if shape == "slurm" else KUBEFLOW_SHAPE
        self.impossible = IMPOSSIBLE[shape]
        self.cluster: dict[str, Any] = {"max_job_id": 50, "min_job_age": 60.0, **cluster}

    def declines(self, need: str) -> str | None:
        """What neither shape gives (:data:`REFUSED`), what the kubeflow shape cannot have of
        the Slurm shape's powers (:data:`KUBE_REFUSED`), and the Slurm shape's ``recreate``,
        ``take_id_ahead``, ``look_alike:misnamed`` and ``evict``."""
        if need in REFUSED:
            return REFUSED[need]
        if self.shape == "kubeflow":
            return KUBE_REFUSED.get(need)
        if need == Fault.RECREATE:
            return SLURM_NO_RECREATE
        if need == Fault.TAKE_ID_AHEAD:
            return SLURM_NO_TAKE_AHEAD
        if need == look_alike_need(LookAlike.MISNAMED):
            return SLURM_NO_MISNAMED
        if need == Fault.EVICT:
            return SLURM_NO_EVICT
        return None

    def new_backend(self) -> MemoryBackend:
        return MemoryBackend(self.shape, clock=VirtualClock(), **self.cluster)

    def reopen(self, backend: MemoryBackend) -> MemoryBackend:
        return backend.reopen()

    def clock(self, backend: MemoryBackend) -> Clock:
        return backend.cluster.clock

    def executions(
        self, backend: MemoryBackend, ref: ObjectRef
    ) -> Sequence[Sequence[Mapping[str, str]]]:
        """The executions of the object the ref was made for, by the cluster's own record:
        never those of a later object the adapter's identity check cannot tell from it (the
        same job's next submission on the same id, requeued, on the Slurm shape)."""
        job = backend.cluster.made_as(ref.id, ref.uid, ref.submit_epoch)
        if job is None:
            return []
        return [e.ranks for e in backend.cluster.executions if e.serial == job.serial]

    def host(self, backend: MemoryBackend) -> Host:
        """This host's filesystem (the memory scheduler's ranks "run" where they are told)."""
        return LocalHost()

    def listing(self, backend: MemoryBackend) -> Mapping[str, Listed]:
        """The user's objects the cluster holds (purged ones are gone), each with its state and
        the job its key names: its name on the Slurm shape, its job label on the other."""
        return {
            j.native_id: Listed(_shown(j.state), _keyed(j))
            for j in backend.cluster.jobs.values()
            if j.owner == "me" and not j.purged
        }

    def inventory(self, backend: MemoryBackend) -> Sequence[str]:
        """The user's objects the cluster holds that have not ended (look-alikes of the
        user's own included; another user's, or another namespace's, not)."""
        return [
            j.native_id for j in backend.cluster.jobs.values() if j.owner == "me" and not j.ended
        ]


def _shown(state: State) -> Shown:
    if state.ended:
        return Shown.ENDED
    return Shown.RUNNING if state is State.RUNNING else Shown.PENDING


def _keyed(job: Job) -> str | None:
    """The job the object's lookup key names exactly: its job label (the job's id in lower
    case), else its ``dj-`` name (the id as it is)."""
    if LABEL_JOB in job.labels:
        value = job.labels[LABEL_JOB]
        return value.upper() if value == value.lower() else None
    return job.name[3:] if job.name.startswith("dj-") else None


def memory_slurm() -> MemoryHarness:
    return MemoryHarness("slurm")


def memory_kubeflow() -> MemoryHarness:
    return MemoryHarness("kubeflow")


__all__ = [
    "KUBEFLOW_SHAPE",
    "KUBE_REFUSED",
    "REFUSED",
    "SLURM_NO_EVICT",
    "SLURM_NO_RECREATE",
    "SLURM_NO_TAKE_AHEAD",
    "SLURM_SHAPE",
    "MemoryFaults",
    "MemoryHarness",
    "memory_kubeflow",
    "memory_slurm",
]
