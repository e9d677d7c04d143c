"""What a harness may offer besides the contract every harness keeps (:class:`Harness`): each
power a typed protocol, grouped by what it makes possible.

A harness offers a power by implementing its protocol (its methods, each taking the backend the
check works on first); the kit finds it with ``isinstance``, never by a name, an attribute read
by ``getattr`` or a message. Subclassing a protocol is allowed (mypy then checks the methods'
signatures where the class is written); it is not required.

A check declares its needs by name (:class:`Fault`, :class:`Probe`, :func:`look_alike_need`,
...): :data:`POWER_OF` maps each to the protocol that provides it, and :func:`lacking` says why
a harness does not meet one. Where one harness class serves targets of several configurations
(a cluster with or without Kueue, Slurm with or without ``job_comment``), it implements the
union and :meth:`Harness.declines` names what its target, as configured, cannot give: a need
whose protocol it does not implement is never met, whatever ``declines`` says.

Every method's obligations are in its docstring, as in Go CDK's drivertest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

from conformance.harness import (
    LOOK_ALIKES_HELD,
    Fault,
    Host,
    LookAlike,
    Probe,
    Race,
    ReplyLoss,
    Signalled,
    look_alike_need,
    race_need,
    reply_loss_need,
)
from dispatch_core import Backend, JobID, JobSpec, ObjectRef

if TYPE_CHECKING:
    from conformance.harness import Harness
    from dispatch_core.supervise import Supervisor

B_contra = TypeVar("B_contra", bound=Backend, contravariant=True)


# -- the scheduler runs the jobs -----------------------------------------------------------------


@runtime_checkable
class RunsJobs(Protocol[B_contra]):
    """The scheduler's own progress, on a check's demand (needs ``let_run``, ``finish``)."""

    def let_run(self, backend: B_contra, ref: ObjectRef) -> None:
        """The scheduler starts the (queued, eligible) object now, and its execution begins.
        Called on an object already running, it starts nothing and returns once that
        execution has begun (every rank the harness can see has started)."""

    def finish(self, backend: B_contra, ref: ObjectRef, exit_code: int = 0) -> None:
        """The running object's command exits with ``exit_code``."""


# -- someone acts underneath the adapter ---------------------------------------------------------


@runtime_checkable
class RequeuesUnderneath(Protocol[B_contra]):
    """An administrator requeues an object (needs ``requeue_underneath``)."""

    def requeue_underneath(
        self, backend: B_contra, ref: ObjectRef, *, in_flight: bool = False, held: bool = False
    ) -> None:
        """An administrator requeues the started object without asking the adapter. With
        ``in_flight``, this returns while the requeue is still under way, where the scheduler
        shows that (Slurm: COMPLETING, until the job is back in the queue). With ``held``, the
        object comes back held by the scheduler, pending until someone releases it (Slurm:
        ``scontrol requeuehold State=SpecialExit``); raise :class:`CannotInject`
        (``requeue_underneath(held)``) where the target has no such state, and list that in
        :attr:`Harness.impossible`."""


@runtime_checkable
class Purges(Protocol[B_contra]):
    """Ended objects leave the live view (needs ``purge``)."""

    def purge(self, backend: B_contra, ref: ObjectRef) -> None:
        """The ended object leaves the scheduler's live view (its history, if kept, stays)."""


@runtime_checkable
class ReusesIds(Protocol[B_contra]):
    """A gone object's native id is given to another object (needs ``reuse_id``)."""

    def reuse_id(self, backend: B_contra, ref: ObjectRef) -> None:
        """The ended object is purged and its native id is taken by a new object that is not
        the ref's (another user's, or another job's, as the harness can)."""


@runtime_checkable
class ReusesIdsNext(Protocol[B_contra]):
    """A gone object's native id is the next the scheduler hands out (needs
    ``reuse_id_next``)."""

    def reuse_id_next(self, backend: B_contra, ref: ObjectRef) -> None:
        """The ended object is purged and its native id becomes the next one the scheduler
        hands out, so the next submission (of any job, this one included) takes it."""


@runtime_checkable
class Recreates(Protocol[B_contra]):
    """Someone replaces an object by a copy of itself (needs ``recreate``)."""

    def recreate(self, backend: B_contra, ref: ObjectRef) -> None:
        """Someone deletes the object and creates it again from its own manifest (Kubernetes:
        ``kubectl replace --force``): the copy has the ref's native id, lookup key, identity
        and hold, and a uid and submit time of its own, so ``find`` shows it as the job's
        object while it is not the ref's. Returns once the copy is in the live view."""


@runtime_checkable
class TakesIdsAhead(Protocol[B_contra]):
    """Someone takes the native id a start will take, first (needs ``take_id_ahead``)."""

    def take_id_ahead(self, backend: B_contra, job: JobID, submission: int) -> str:
        """Another writer makes an object of its own, with no dispatch identity, under the
        native id the adapter's start of ``(job, submission)`` would give its object, before
        that start (Kubernetes: a TrainJob of the name the adapter gives it, made by another
        client). Where the scheduler hands out every id (Slurm), nobody can: ``impossible``.
        Returns the object's native id."""


@runtime_checkable
class TakesQuota(Protocol[B_contra]):
    """Another user's work takes the quota a job draws from (needs ``take_quota``)."""

    def take_quota(self, backend: B_contra) -> None:
        """Another user's work takes every unit left of the quota the adapter's jobs draw
        from, and keeps it until :meth:`give_quota_back` (Kueue: a Workload of the
        ClusterQueue's whole nominal quota; Slurm: a QOS's group limit). A job started now
        waits for quota; nothing else keeps it from running."""

    def give_quota_back(self, backend: B_contra) -> None:
        """That work ends and gives back what it held: a job that waited for quota can run."""


@runtime_checkable
class LosesNodes(Protocol[B_contra]):
    """A node under a running object is lost (needs ``lose_node``)."""

    def lose_node(self, backend: B_contra, ref: ObjectRef) -> None:
        """The node under the running object is lost."""


@runtime_checkable
class KillsForMemory(Protocol[B_contra]):
    """A running object is killed for its memory (needs ``oom_kill``)."""

    def oom_kill(self, backend: B_contra, ref: ObjectRef) -> None:
        """The running object's processes are killed for exceeding their memory (Slurm: the
        job ends OUT_OF_MEMORY; Kubernetes: a rank's container ends OOMKilled, exit 137);
        returns once the scheduler has acted on it (the object ended, or rerun where its
        runtime reruns)."""


@runtime_checkable
class Evicts(Protocol[B_contra]):
    """The node under a running object evicts it (needs ``evict``)."""

    def evict(self, backend: B_contra, ref: ObjectRef) -> None:
        """The node under the running object evicts it for the node's own sake, neither the
        scheduler nor an administrator asking (Kubernetes: the kubelet's node-pressure
        eviction of a rank's pod, phase Failed, reason Evicted); returns once the scheduler
        has acted on it (the object ended, or rerun where its runtime reruns). A scheduler
        whose nodes evict nothing (Slurm: a node short of memory kills a step for its memory,
        which is ``oom_kill``) lists it in :attr:`Harness.impossible`."""


@runtime_checkable
class Preempts(Protocol[B_contra]):
    """The scheduler preempts a running object (needs ``preempt``)."""

    def preempt(self, backend: B_contra, ref: ObjectRef) -> None:
        """The scheduler preempts the running object: it is requeued when it is requeueable
        (as a lost node requeues it), else it ends, preempted."""


@runtime_checkable
class StallsTeardown(Protocol[B_contra]):
    """An ended run's teardown never completes, for a while (needs ``stall_teardown``)."""

    def stall_teardown(self, backend: B_contra, ref: ObjectRef) -> None:
        """From now until :meth:`end_stall`, the scheduler never finishes taking down the ended
        object's last run, which a requeue must wait to go (Kubernetes: the TrainJob's JobSet
        keeps a finalizer nobody removes). While the stall lasts, a harness on a virtual clock
        fails the check once an adapter call has waited :data:`STALL_BOUND` seconds of it."""

    def end_stall(self, backend: B_contra, ref: ObjectRef) -> None:
        """The stall :meth:`stall_teardown` began ends: the teardown completes now."""


# -- history -------------------------------------------------------------------------------------


@runtime_checkable
class LagsHistory(Protocol[B_contra]):
    """History falls behind the live view (needs ``lag_history``)."""

    def lag_history(self, backend: B_contra, ref: ObjectRef) -> None:
        """From now on, history takes no new record of the object: its later incarnations (a
        requeue's) show in the live view only (Slurm sends a requeued job's new record to
        accounting seconds later)."""


@runtime_checkable
class DisablesHistory(Protocol[B_contra]):
    """An administrator switches history off (needs ``disable_history``)."""

    def disable_history(self, backend: B_contra) -> None:
        """From now on every read of history says there is none (Slurm:
        ``AccountingStorageType=accounting_storage/none``), and what leaves the live view is
        gone."""


@runtime_checkable
class LosesIdentityHistory(Protocol[B_contra]):
    """History keeps no identity (needs ``lose_identity_history``)."""

    def lose_identity_history(self, backend: B_contra) -> None:
        """From now on, history keeps no identity of the objects that end (Slurm without
        ``AccountingStoreFlags=job_comment``): an object read from history has its submission
        and attempt unknown."""


# -- the adapter's calls meet trouble ------------------------------------------------------------


@runtime_checkable
class LosesReplies(Protocol[B_contra]):
    """A write takes effect and its reply is lost (needs ``lose_next_reply``, and
    ``lose_next_reply:<form>`` for the forms but the timeout)."""

    def lose_next_reply(
        self, backend: B_contra, operation: str, form: ReplyLoss = ReplyLoss.TIMEOUT
    ) -> None:
        """The next ``operation`` (one of :data:`OPERATIONS`) takes effect but its reply is
        lost, as ``form`` says: a timeout (the default), a failure that says the scheduler
        could not be reached, or a success it cannot read. A form the target cannot make is
        named by :meth:`Harness.declines`."""


@runtime_checkable
class FailsBeforeEffect(Protocol[B_contra]):
    """A write times out before it took effect (needs ``fail_before_effect``)."""

    def fail_before_effect(self, backend: B_contra, operation: str) -> None:
        """The next ``operation`` (one of :data:`OPERATIONS`) times out before it took effect:
        the adapter sees a timeout, and nothing changed on the target."""


@runtime_checkable
class FailsEveryTry(Protocol[B_contra]):
    """A write and all its retries fail (needs ``fail_every_try``)."""

    def fail_every_try(self, backend: B_contra, operation: str) -> None:
        """As :meth:`FailsBeforeEffect.fail_before_effect`, and so do the retries the adapter
        makes of it within the same call, until the check asks :meth:`TellsUnfired.unfired`
        (Kubernetes: an API server that answers 500 for a while)."""


@runtime_checkable
class VanishesBeforeReadBack(Protocol[B_contra]):
    """A written object is gone before the adapter reads it back (needs
    ``vanish_before_read_back``)."""

    def vanish_before_read_back(
        self, backend: B_contra, operation: str, *, reuse_id: bool = False, early: bool = False
    ) -> None:
        """The next ``operation`` (``start`` or ``stop``) takes effect and its reply arrives,
        but before the adapter can read its object back the object ends, leaves the live view
        (its history, if kept, stays) and, with ``reuse_id``, its native id is taken by a new
        object that is not the job's (another user's, held). The object of a start ends as a
        cancel ends it. A harness whose adapter reads nothing back still ends and purges it.
        With ``early`` (a stop, without ``reuse_id``), the object ends and leaves the live view
        just before the stop's own call instead, which then meets no object."""


@runtime_checkable
class IgnoresStops(Protocol[B_contra]):
    """The scheduler acknowledges a stop it does not carry out (needs ``ignore_next_stop``)."""

    def ignore_next_stop(self, backend: B_contra, ref: ObjectRef) -> None:
        """The scheduler acknowledges the next stop of the object (its command succeeds) but
        does not carry it out (Slurm: ``scancel`` exits 0 having signalled nothing)."""


@runtime_checkable
class IgnoresWrites(Protocol[B_contra]):
    """The scheduler acknowledges a write it does not carry out (needs
    ``ignore_next_write``)."""

    def ignore_next_write(self, backend: B_contra, operation: str) -> None:
        """The scheduler acknowledges the next ``operation`` (``hold``, ``release`` or
        ``requeue``; its command succeeds) but does not carry it out: the object goes on as
        before (Slurm: the ``scontrol`` call that carries it exits 0 having changed nothing).
        Named ``ignore_next_write(<operation>)`` by :meth:`TellsUnfired.unfired` until it
        fires."""


@runtime_checkable
class RacesWrites(Protocol[B_contra]):
    """The scheduler changes an object between the adapter's read and its write (needs
    ``race_next_write``, and ``race_next_write:touched`` for :attr:`Race.TOUCHED`)."""

    def race_next_write(self, backend: B_contra, operation: str, race: Race) -> None:
        """The scheduler changes the object as ``race`` says just before the next
        ``operation``'s (``hold``, ``release`` or ``requeue``) first write on it lands, after
        the adapter read it: the write meets the changed object (Slurm: ``scontrol update``
        answers ``Job is no longer pending execution`` or ``Invalid job id specified``). Named
        ``race_next_write(<operation>)`` by :meth:`TellsUnfired.unfired` until it fires."""


@runtime_checkable
class FailsBetweenSteps(Protocol[B_contra]):
    """An operation of two writes is cut between them (needs ``fail_between_steps``)."""

    def fail_between_steps(self, backend: B_contra, operation: str) -> None:
        """The next ``operation`` that takes more than one call (``requeue``) is cut between
        them: its first step takes effect, the next times out before it took effect, and so
        do the retries the adapter makes of it within the same call, until the check asks
        :meth:`TellsUnfired.unfired` (Slurm: ``Requeue=1`` lands, ``scontrol requeue`` times
        out; Kubernetes: the TrainJob is suspended, its resume refused)."""


@runtime_checkable
class TellsUnfired(Protocol[B_contra]):
    """Which armed fault has not fired yet (no need: a check asks it when the harness tells)."""

    def unfired(self, backend: B_contra) -> Sequence[str]:
        """The call faults armed on ``backend``'s target that have not fired yet, each named
        as its need and operation (``lose_next_reply(hold)``), in the order they were armed. A
        check that armed one, and whose operation then made its call (it returned, or raised
        OutcomeUnknown), asks: a fault still armed means the adapter never made the call the
        fault targets, and the check has not tested what it says it did."""


# -- look-alikes ---------------------------------------------------------------------------------


@runtime_checkable
class MakesLookAlikes(Protocol[B_contra]):
    """Objects that resemble a job's without being its own (needs ``look_alike:<kind>``; a
    kind the target cannot make is named by :meth:`Harness.declines`)."""

    def look_alike_forms(self, kind: LookAlike) -> int:
        """How many forms of ``kind`` this harness's encoding has; ``inject_look_alike`` takes
        ``variant`` modulo it."""

    def inject_look_alike(
        self,
        backend: B_contra,
        job_id: JobID,
        kind: LookAlike,
        variant: int = 0,
        *,
        other: JobID | None = None,
        requeued: bool = False,
    ) -> str:
        """Make one look-alike of ``job_id``'s objects of ``kind``, in form ``variant``, held
        or otherwise kept from running where the target allows; a :attr:`LookAlike.COMMA_LIST`
        lists ``other``'s key with the job's (a fresh job's when None). With ``requeued``, it
        is then started and requeued underneath (its submit time moves past every earlier
        one's and its restart count is above 0). Returns its native id."""

    def describe_look_alike(self, kind: LookAlike, variant: int = 0) -> str:
        """A few words on form ``variant`` of ``kind`` (for failure messages)."""


# -- holds ---------------------------------------------------------------------------------------


@runtime_checkable
class WritesNearHolds(Protocol[B_contra]):
    """Someone writes a value just outside the hold encoding (needs ``near_hold``)."""

    def near_hold_forms(self) -> int:
        """How many forms :meth:`near_hold` has here (``variant`` is taken modulo it)."""

    def near_hold(self, backend: B_contra, ref: ObjectRef, variant: int = 0) -> str:
        """Someone other than the adapter writes in the queued object's field that the
        adapter's holds live in a value just outside the hold encoding, in form ``variant``:
        the object is deferred but carries no hold number. Returns a few words on the form."""


@runtime_checkable
class MovesToHoldEdges(Protocol[B_contra]):
    """The clock moves to where a new instance's first hold takes an edge number (needs
    ``hold_edge``)."""

    def hold_edges(self) -> int:
        """How many edges :meth:`hold_edge` knows here (``variant`` is taken modulo it)."""

    def hold_edge(self, backend: B_contra, variant: int = 0) -> str:
        """Move the target's clock forward to where the first hold of a new adapter instance
        takes a number at an edge of the adapter's hold numbering, in form ``variant``
        (:func:`advance_to_residue`, :data:`CLOCK_HOLD_EDGES`). Called before the object is
        started, and again before a second new instance holds it. Returns a few words."""


# -- what ran, as the target saw it --------------------------------------------------------------


@runtime_checkable
class ObservesExecutions(Protocol[B_contra]):
    """The environment each rank of each execution saw (needs ``executions``)."""

    def executions(
        self, backend: B_contra, ref: ObjectRef
    ) -> Sequence[Sequence[Mapping[str, str]]]:
        """For each execution of the object ``ref`` names, in order, the environment each rank
        saw, by the target's own record (never a later object the ref does not name)."""


@runtime_checkable
class ObservesImages(Protocol[B_contra]):
    """The container image each rank ran in (needs ``images``)."""

    def images(self, backend: B_contra, ref: ObjectRef) -> Sequence[Sequence[str]]:
        """For each execution of the object ``ref`` names, in order, the container image each
        rank ran in, as the target saw it (the node's runtime, never the adapter's word)."""


@runtime_checkable
class ObservesSignals(Protocol[B_contra]):
    """A time limit with a signal before it, and what the processes got (needs
    ``signals``)."""

    def pre_termination_spec(self, spec: JobSpec, lead: int, limit: int) -> JobSpec:
        """``spec`` as this scheduler's adapter asks for a time limit of ``limit`` seconds and
        a pre-termination signal ``lead`` seconds before it. The job's processes must not end
        on the signal. Raise :class:`CannotInject` ("signals") for a ``limit`` or ``lead`` the
        scheduler cannot say."""

    def signals(self, backend: B_contra, ref: ObjectRef) -> Signalled:
        """What the processes of the first execution of the object ``ref`` names were sent
        before their end, and when they ended, as the target saw it."""


@runtime_checkable
class ShowsInventory(Protocol[B_contra]):
    """The user's objects that have not ended, whoever made them (needs ``inventory``)."""

    def inventory(self, backend: B_contra) -> Sequence[str]:
        """The native ids of every object of the user's on ``backend``'s target that has not
        ended (queued, held or running), whoever made it. Read from the target, never through
        the adapter; cheap enough to call twice in a check."""


@runtime_checkable
class RerunsFailures(Protocol):
    """Objects the scheduler itself reruns after a failed execution (needs
    ``self_restarts``)."""

    def self_restarting_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` as this scheduler's adapter asks for the scheduler to rerun the object in
        place after an execution fails, at least once and a bounded number of times, before
        it ends failed (Kubeflow: a runtime whose JobSet ``failurePolicy.maxRestarts`` > 0).
        ``finish`` with a non-zero code then returns once the object has ended or its restart
        count has risen."""


@runtime_checkable
class WeakensIdentity(Protocol):
    """Specs that name the runtime their object runs under, one that weakens execution
    identity and one that keeps it (needs ``runtimes``)."""

    def weakening_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` naming, as this scheduler's adapter takes it, a runtime under which a
        failed rank reruns with the identity it had (Kubeflow: a stock runtime, JobSet's
        ``OnFailure``, Job's ``backoffLimit: 6``), other than the adapter's default where the
        target has one (so that a spec judged on the default shows): the adapter as the
        harness makes it is not allowed to weaken identity, so it refuses the spec (DESIGN §11:
        without ``allow_rank_restart``, ``Unsupported``)."""

    def keeping_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` naming, as :meth:`weakening_spec` does, a runtime that keeps execution
        identity (a rank that runs again runs under an identity of its own), which the
        adapter accepts."""


@runtime_checkable
class AsksUnpullableImage(Protocol):
    """Specs naming an image the target cannot pull (needs ``unpullable_image``)."""

    def unpullable_image_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` naming (``dispatch.Image``) a container image the target can never pull (a
        registry that does not exist), so that every rank's container waits, ``ErrImagePull``
        then ``ImagePullBackOff``, and nothing upstream ever ends the job."""


@runtime_checkable
class AsksBeyondCapacity(Protocol):
    """Specs asking for more than the target could ever give (needs ``beyond_capacity``)."""

    def beyond_capacity_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` asking for more than the target could ever give it (more nodes than it
        has; with Kueue, more pods than the ClusterQueue's quota), so that the scheduler
        can never run it, and says so (Kueue: ``QuotaReserved=False ExceedsMaxQuota``;
        Kubernetes: a pod ``Unschedulable``) or refuses it at once."""


@dataclass(frozen=True)
class OtherTarget:
    """What :meth:`OpensOtherTargets.other_target` opens: an adapter instance on another
    target, a spec that target refuses and the check's accepts, and what differs (for
    failure messages)."""

    backend: Backend
    spec: JobSpec
    about: str


@runtime_checkable
class OpensOtherTargets(Protocol[B_contra]):
    """Other targets of the same scheduler, each served by an adapter instance of its own in
    the check's process (needs ``other_targets``): what one instance read of its target must
    not answer for another's."""

    def other_target_forms(self) -> int:
        """How many kinds of other target the harness opens (at least 1);
        :meth:`other_target` takes ``variant`` modulo it."""

    def other_target(self, backend: B_contra, spec: JobSpec, variant: int = 0) -> OtherTarget:
        """Open another target of ``backend``'s scheduler (kind ``variant``: another
        namespace, another cluster, another queue) with a new adapter instance on it, made as
        the harness makes ``backend``'s; and ``spec`` as ``backend``'s target accepts it and
        the other refuses it with ``Unsupported`` (Kubeflow: a TrainingRuntime of the spec's runtime
        name in the other namespace that reruns a failed rank under the identity it had; with
        Kueue, a LocalQueue whose ClusterQueue lists no readmission gate). Each call opens a
        new instance, which has read nothing yet; the target is removed when the check ends,
        as :meth:`Harness.end` removes what :meth:`Harness.new_backend` made."""


@runtime_checkable
class WritesRankOutput(Protocol[B_contra]):
    """One rank of a running object writes to its output (needs ``rank_output``)."""

    def rank_writes(self, backend: B_contra, ref: ObjectRef, rank: int, text: str) -> None:
        """Rank ``rank`` (0-based, below the object's node count) of the running object's
        current execution writes the line ``text`` to its output now, where the scheduler
        keeps that rank's output (Kubernetes: its pod's ``node`` container log; Slurm: the
        job's output file, which srun fills with every task's)."""


@runtime_checkable
class ShowsPaths(Protocol[B_contra]):
    """Paths on the cluster's filesystem, as its jobs see them (needs ``host_paths``)."""

    def host(self, backend: B_contra) -> Host:
        """The filesystem ``backend``'s jobs run on."""


class RunsCommands:
    """A marker: the jobs' commands really run, on the filesystem
    :meth:`ShowsPaths.host` shows, once a job runs (needs ``commands``). A harness offers it by
    subclassing it (a scheduler model that only records executions does not)."""


class PreflightsFree:
    """A marker: a check may run the adapter's preflight here, whose probes' waits cost no real
    time (a virtual clock) (needs ``preflight``). A harness on a real cluster, where the probes
    hold real jobs for minutes, does not subclass it (``dispatch-conformance preflight`` runs
    them)."""


# -- the supervisor ------------------------------------------------------------------------------


@runtime_checkable
class SuppliesSupervisor(Protocol):
    """The supervisor the core suite runs, where it is not the reference one (no need)."""

    def supervisor_type(self) -> type[Supervisor]:
        """The :class:`~dispatch_core.supervise.Supervisor` class the core suite's checks
        run (a subclass, to test a supervisor of one's own)."""


# -- needs to powers -----------------------------------------------------------------------------


POWER_OF: Final[Mapping[str, type]] = {
    Fault.LET_RUN: RunsJobs,
    Fault.FINISH: RunsJobs,
    Fault.REQUEUE_UNDERNEATH: RequeuesUnderneath,
    Fault.PURGE: Purges,
    Fault.REUSE_ID: ReusesIds,
    Fault.REUSE_ID_NEXT: ReusesIdsNext,
    Fault.RECREATE: Recreates,
    Fault.TAKE_ID_AHEAD: TakesIdsAhead,
    Fault.TAKE_QUOTA: TakesQuota,
    Fault.LOSE_NODE: LosesNodes,
    Fault.OOM_KILL: KillsForMemory,
    Fault.EVICT: Evicts,
    Fault.PREEMPT: Preempts,
    Fault.STALL_TEARDOWN: StallsTeardown,
    Fault.LAG_HISTORY: LagsHistory,
    Fault.DISABLE_HISTORY: DisablesHistory,
    Fault.LOSE_IDENTITY_HISTORY: LosesIdentityHistory,
    Fault.LOSE_NEXT_REPLY: LosesReplies,
    reply_loss_need(ReplyLoss.FAILURE): LosesReplies,
    reply_loss_need(ReplyLoss.GARBLED): LosesReplies,
    Fault.FAIL_BEFORE_EFFECT: FailsBeforeEffect,
    Fault.FAIL_EVERY_TRY: FailsEveryTry,
    Fault.VANISH_BEFORE_READ_BACK: VanishesBeforeReadBack,
    Fault.IGNORE_NEXT_STOP: IgnoresStops,
    Fault.IGNORE_NEXT_WRITE: IgnoresWrites,
    Fault.RACE_NEXT_WRITE: RacesWrites,
    race_need(Race.TOUCHED): RacesWrites,
    Fault.FAIL_BETWEEN_STEPS: FailsBetweenSteps,
    Fault.NEAR_HOLD: WritesNearHolds,
    Fault.HOLD_EDGE: MovesToHoldEdges,
    **{look_alike_need(kind): MakesLookAlikes for kind in LookAlike},
    LOOK_ALIKES_HELD: MakesLookAlikes,
    Probe.EXECUTIONS: ObservesExecutions,
    Probe.IMAGES: ObservesImages,
    Probe.SIGNALS: ObservesSignals,
    Probe.INVENTORY: ShowsInventory,
    Probe.SELF_RESTARTS: RerunsFailures,
    Probe.RUNTIMES: WeakensIdentity,
    Probe.OTHER_TARGETS: OpensOtherTargets,
    Probe.BEYOND_CAPACITY: AsksBeyondCapacity,
    Probe.UNPULLABLE_IMAGE: AsksUnpullableImage,
    Probe.RANK_OUTPUT: WritesRankOutput,
    Probe.HOST_PATHS: ShowsPaths,
    Probe.COMMANDS: RunsCommands,
    Probe.PREFLIGHT: PreflightsFree,
}
"""Each need a check may declare of a harness, and the power (a protocol, or a marker class)
that provides it."""

POWERS: Final[tuple[type, ...]] = tuple(dict.fromkeys(POWER_OF.values()))
"""Every power that meets a need, once each, in the order of :data:`POWER_OF`."""


def power_of(need: str) -> type:
    """The power that provides ``need`` (KeyError for a need no check can declare)."""
    return POWER_OF[need]


def offers_power(harness: object, need: str) -> bool:
    """Whether ``harness`` implements the power ``need`` asks for (by type alone)."""
    return isinstance(harness, POWER_OF[need])


def lacking(harness: Harness[Any], need: str) -> str | None:
    """Why ``harness`` does not meet ``need``, or None when it does: it implements no power
    that provides it (the message names the protocol to implement), or it does and its target
    declines it (:meth:`Harness.declines`, read from its configuration: it makes nothing)."""
    power = POWER_OF[need]
    declined = harness.declines(need)
    if not isinstance(harness, power):
        because = f" ({declined})" if declined else ""
        return (
            f"harness offers no {need}{because}: implement "
            f"conformance.powers.{power.__name__} to offer it"
        )
    if declined:
        return f"harness cannot inject {need} ({declined})"
    return None


__all__ = [
    "POWERS",
    "POWER_OF",
    "AsksBeyondCapacity",
    "AsksUnpullableImage",
    "DisablesHistory",
    "Evicts",
    "FailsBeforeEffect",
    "FailsBetweenSteps",
    "FailsEveryTry",
    "IgnoresStops",
    "IgnoresWrites",
    "KillsForMemory",
    "LagsHistory",
    "LosesIdentityHistory",
    "LosesNodes",
    "LosesReplies",
    "MakesLookAlikes",
    "MovesToHoldEdges",
    "ObservesExecutions",
    "ObservesImages",
    "ObservesSignals",
    "OpensOtherTargets",
    "OtherTarget",
    "Preempts",
    "PreflightsFree",
    "Purges",
    "RacesWrites",
    "Recreates",
    "RequeuesUnderneath",
    "RerunsFailures",
    "ReusesIds",
    "ReusesIdsNext",
    "RunsCommands",
    "RunsJobs",
    "ShowsInventory",
    "ShowsPaths",
    "StallsTeardown",
    "SuppliesSupervisor",
    "TakesIdsAhead",
    "TakesQuota",
    "TellsUnfired",
    "VanishesBeforeReadBack",
    "WeakensIdentity",
    "WritesNearHolds",
    "WritesRankOutput",
    "lacking",
    "offers_power",
    "power_of",
]
