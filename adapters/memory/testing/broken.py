"""Deliberately broken adapters: the proof that the suites have teeth.

Each entry of :data:`CATALOGUE` is the memory adapter (Slurm shape) wrong in exactly one way,
with a harness factory of the same name, so that any of them can be named where a harness is
expected::

    dispatch-conformance run --harness adapters.memory.testing.broken:case_insensitive_find
    pytest --dispatch-harness=adapters.memory.testing.broken:lenient_comment_parser

A conforming suite fails every one of them with a message that names the rule broken;
``tests/conformance/test_kill_rate.py`` checks that and prints the kill rate. Bugs only the real
Slurm adapter can have (its batch script, its preflight) are in
:mod:`adapters.slurm.testing.broken`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from adapters.memory import MemoryBackend, MemoryCluster
from adapters.memory.cluster import Execution, Job
from adapters.memory.testing.harness import MemoryHarness
from adapters.slurm.identity import HoldBase, slurm_comment
from dispatch_core import (
    Capability,
    Conflict,
    EpochBound,
    ExecutionIdentity,
    HoldBound,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    Policy,
    Rejected,
    RuleKind,
    RuleSupport,
    State,
    Support,
    VirtualClock,
    identity_mismatch,
)

# -- broken schedulers (the memory adapter's cluster side) ---------------------------------------


class EpochIgnoresRestarts(MemoryCluster):
    """DISPATCH_ATTEMPT and DISPATCH_EPOCH leave out the restart count: every execution of a
    requeued object runs under the identity of its first (baked in at submit)."""

    def _identity(self, job: Job) -> ExecutionIdentity | None:
        identity = super()._identity(job)
        if identity is None:
            return None
        return ExecutionIdentity(identity.job, identity.submission, identity.native_id, 0)


class SecondRankLosesEpoch(MemoryCluster):
    """The second rank of every execution does not see DISPATCH_EPOCH (the variable is exported
    to the batch step only, not to every task)."""

    def start_execution(self, job: Job) -> Execution:
        execution = super().start_execution(job)
        if len(execution.ranks) > 1:
            execution.ranks[1].pop("DISPATCH_EPOCH", None)
        return execution


class RequeueKeepsSubmit(MemoryCluster):
    """A requeue leaves the object's submit time where it was (the adapter reports the
    original submit time instead of the scheduler's current one)."""

    def requeue(self, job: Job) -> None:
        submit = job.submit
        super().requeue(job)
        job.submit = submit


# -- broken adapters ------------------------------------------------------------------------------


class CaseInsensitiveFind(MemoryBackend):
    """find trusts the scheduler's name match, which ignores case."""

    def find(self, job_id: JobID) -> list[Observation]:
        self.cluster.tick()
        wanted = job_id.discovery_name().lower()
        names = {j.name for j in [*self.cluster.jobs.values(), *self.cluster.history]}
        found: list[Job] = []
        for name in sorted(names):
            if name.lower() == wanted:
                found += self.cluster.named(name)
        return [self._observe(job) for job in found]


class FindDropsForeign(MemoryBackend):
    """find leaves out the objects it reports foreign, instead of reporting them."""

    def find(self, job_id: JobID) -> list[Observation]:
        return [seen for seen in super().find(job_id) if not seen.foreign]


class FindDropsEnded(MemoryBackend):
    """find leaves out the job's objects that have ended, though the scheduler still lists
    them (a query of live jobs only)."""

    def find(self, job_id: JobID) -> list[Observation]:
        return [seen for seen in super().find(job_id) if not seen.state.ended]


class PendingShownRunning(MemoryBackend):
    """open reports a queued object as running (a scheduler state word read as the wrong
    coarse state)."""

    def _observe(self, job: Job) -> Observation:
        seen = super()._observe(job)
        if seen.state is State.QUEUED:
            return seen.model_copy(update={"state": State.RUNNING})
        return seen


class StopReturnsBeforeTheEnd(MemoryBackend):
    """stop sends the cancel and returns at once, and from then on reports the object
    cancelled from its own note, while the scheduler has not ended it (the cancel never
    arrives here: a scheduler that ends jobs some time after the request)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: set[str] = set()

    def stop(self, ref: ObjectRef) -> None:
        self.cluster.tick()
        try:
            self._checked(ref)
        except NotFound:
            return
        self.asked.add(ref.uid)

    def _observe(self, job: Job) -> Observation:
        seen = super()._observe(job)
        if job.uid in self.asked and not seen.state.ended:
            return seen.model_copy(update={"state": State.CANCELLED})
        return seen


_LENIENT: Final = re.compile(r"\s*dispatch\s*:\s*s\s*=\s*\+?(\d+)\s*;\s*a\s*=\s*\+?(\d+)\s*", re.I)


class LenientCommentParser(MemoryBackend):
    """The comment parser accepts leading zeros, signs, spaces and any case
    (``dispatch:s=01;a=1`` reads as submission 1)."""

    @staticmethod
    def _lenient(comment: str | None) -> tuple[int, int] | None:
        match = _LENIENT.fullmatch(comment or "")
        return (int(match[1]), int(match[2])) if match else None

    def _carried(self, job: Job) -> int | None:
        parsed = self._lenient(self.cluster.shown_comment(job))
        return parsed[0] if parsed else None

    def _observe(self, job: Job) -> Observation:
        seen = super()._observe(job)
        parsed = self._lenient(self.cluster.shown_comment(job))
        if not seen.foreign or parsed is None:
            return seen
        return seen.model_copy(
            update={"foreign": False, "submission": parsed[0], "attempt": parsed[1]}
        )


_UNICODE_DIGITS: Final = re.compile(r"dispatch:s=([1-9]\d*);a=([1-9]\d*)$")


class UnicodeDigitCommentParser(LenientCommentParser):
    """The comment parser's pattern is strict about the shape, but its ``\\d`` takes any
    Unicode digit after the first and its ``$`` a trailing newline (no ``re.ASCII``, no
    fullmatch): ``dispatch:s=1\u0661;a=1`` reads as submission 11."""

    @staticmethod
    def _lenient(comment: str | None) -> tuple[int, int] | None:
        match = _UNICODE_DIGITS.match(comment or "")
        return (int(match[1]), int(match[2])) if match else None


class ReleaseIgnoresNumber(MemoryBackend):
    """release frees whatever hold the object carries, whatever number it is asked to release."""

    def release(self, ref: ObjectRef, hold: int) -> None:
        self.cluster.tick()
        job = self._checked(ref)
        if job.hold_number() is None:
            raise Conflict(f"{self.name}: {ref.id} carries no hold (asked to release {hold})")
        self.cluster.release_value(job)


class StopByNameOnly(MemoryBackend):
    """stop cancels by name alone (``scancel --name``): every live object of the job, whatever
    its id or submit time, instead of the one the ref names."""

    def stop(self, ref: ObjectRef) -> None:
        self.cluster.tick()
        for job in list(self.cluster.jobs.values()):
            if job.owner == "me" and job.uid == ref.uid and not job.ended:
                self.cluster.cancel(job)


class StopByIdOnly(MemoryBackend):
    """stop cancels whatever has the ref's id (``scancel <id>``), without the identity check."""

    def stop(self, ref: ObjectRef) -> None:
        self.cluster.tick()
        job = self.cluster.live(ref.id)
        if job is not None and not job.ended:
            self.cluster.cancel(job)


class WriteWithoutIdentityCheck(MemoryBackend):
    """hold and requeue act on whatever job of the user's has the ref's id: no name or submit
    time comparison before the write."""

    def _by_id(self, ref: ObjectRef) -> Job:
        job = self.cluster.live(ref.id)
        if job is None or job.owner != "me":
            raise NotFound(f"{self.name}: no job {ref.id} of yours")
        return job

    def hold(self, ref: ObjectRef) -> int:
        self.cluster.tick()
        job = self._by_id(ref)
        if job.state is not State.QUEUED:
            raise Rejected(f"{self.name}: {ref.id} is {job.state.value}; only a pending job")
        number = job.holds_placed + 1
        self.cluster.hold_value(job, number)
        return number

    def requeue(self, ref: ObjectRef) -> None:
        self.cluster.tick()
        job = self._by_id(ref)
        if job.state in (State.QUEUED, State.HELD):
            raise Rejected(f"{self.name}: {ref.id} is pending; only a started job is requeued")
        job.requeue_flag = True
        self.cluster.requeue(job)


class StartNotIdempotent(MemoryBackend):
    """A start retried after a lost reply submits again: two objects for one submission."""

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        self.cluster.tick()
        if plan.backend != self.name:
            raise Rejected(f"the plan was made for {plan.backend!r}, not {self.name!r}")
        comment = slurm_comment(submission, attempt)
        # No search for an object an earlier start of this submission made.
        self.cluster.timed_out("start")
        job = self.cluster.submit(plan.job.discovery_name(), comment, plan.spec, plan.job)
        self.cluster.lost_reply("start")
        return self._ref(job)


class NoAttemptInjection(MemoryBackend):
    """capabilities leaves AttemptInjection out of its answers (so it is unknown)."""

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        answers = super().capabilities(spec)
        del answers[Capability.ATTEMPT_INJECTION]
        return answers


class RulesInTableOrder(MemoryBackend):
    """rules answers in the adapter's own table order, not in the policy's."""

    def rules(self, policy: Policy) -> list[RuleSupport]:
        order = list(RuleKind)
        kinds = sorted((r.kind for r in policy.rules), key=order.index)
        return [RuleSupport(perform=self._rules[kind]) for kind in kinds]


class HoldKeptInProcess(MemoryBackend):
    """The hold number lives in the adapter instance: the scheduler only sees a far-future
    start time that carries no number, so the hold does not survive a reopen."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._holds: dict[tuple[str, str, int], int] = {}

    @staticmethod
    def _key(job: Job) -> tuple[str, str, int]:
        return job.native_id, job.uid, job.submit

    def hold(self, ref: ObjectRef) -> int:
        self.cluster.tick()
        job = self._checked(ref)
        if job.state is not State.QUEUED:
            raise Rejected(f"{self.name}: {ref.id} is {job.state.value}; only a pending job")
        number = job.holds_placed + 1
        job.holds_placed = number
        job.eligible = job.submit + HoldBase + HoldBound + 1
        self._holds[self._key(job)] = number
        return number

    def release(self, ref: ObjectRef, hold: int) -> None:
        self.cluster.tick()
        job = self._checked(ref)
        carried = self._holds.get(self._key(job)) if job.state is State.QUEUED else None
        if carried != hold:
            raise Conflict(f"{self.name}: {ref.id} carries hold {carried}, not {hold}")
        del self._holds[self._key(job)]
        job.eligible = self.cluster.now()

    def _observe(self, job: Job) -> Observation:
        seen = super()._observe(job)
        carried = self._holds.get(self._key(job)) if job.state is State.QUEUED else None
        if carried is None:
            return seen
        return seen.model_copy(update={"state": State.HELD, "hold": carried})


class NumbersUnchecked(MemoryBackend):
    """start writes any submission and attempt into the comment, 0, negatives and
    1,000,000 included, instead of refusing them."""

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        if 0 < submission < EpochBound and 0 < attempt < EpochBound:
            return super().start(plan, submission, attempt)
        self.cluster.tick()
        comment = f"dispatch:s={submission};a={attempt}"
        return self._ref(
            self.cluster.submit(plan.job.discovery_name(), comment, plan.spec, plan.job)
        )


class IgnoresRefCluster(MemoryBackend):
    """The identity check leaves out the ref's cluster: a ref of another cluster with this
    one's id, name and submit time is taken for this cluster's object."""

    def _checked(self, ref: ObjectRef) -> Job:
        return super()._checked(ref.model_copy(update={"backend": self.name}))

    def _resolve(self, ref: ObjectRef) -> Job:
        return super()._resolve(ref.model_copy(update={"backend": self.name}))


class StopAssumesTimeoutLanded(MemoryBackend):
    """stop takes a cancel that timed out for one that landed: it returns without reading
    the object back, which is still running (as ``scancel`` retried never, nor checked)."""

    def stop(self, ref: ObjectRef) -> None:
        try:
            super().stop(ref)
        except OutcomeUnknown as unknown:
            if not _timed_out(unknown):
                raise


class RequeueAssumesTimeoutLanded(MemoryBackend):
    """requeue takes a requeue command that timed out for one that landed: it returns, and
    the object was never requeued."""

    def requeue(self, ref: ObjectRef) -> None:
        try:
            super().requeue(ref)
        except OutcomeUnknown as unknown:
            if not _timed_out(unknown):
                raise


def _timed_out(error: OutcomeUnknown) -> bool:
    """Whether ``error`` is the memory cluster's timeout of a write (MemoryCluster.timed_out),
    not another OutcomeUnknown (a lost reply, a write that did not read back)."""
    return str(error).endswith(" timed out")


class HoldAssumesTimeoutLanded(MemoryBackend):
    """hold and release take an update that timed out for one that landed: hold returns the
    number it meant to place, release returns, and neither reads the object back."""

    def hold(self, ref: ObjectRef) -> int:
        number = self._checked(ref).holds_placed + 1
        try:
            return super().hold(ref)
        except OutcomeUnknown as unknown:
            if not _timed_out(unknown):
                raise
            return number

    def release(self, ref: ObjectRef, hold: int) -> None:
        try:
            super().release(ref, hold)
        except OutcomeUnknown as unknown:
            if not _timed_out(unknown):
                raise


class HoldsBesideTheCall(MemoryBackend):
    """hold and release write the object's hold directly, not through the scheduler's call for
    them that a lost reply hits: a check arming a lost reply for them tests nothing, and a
    harness whose target replies so would see an adapter that never met it."""

    def hold(self, ref: ObjectRef) -> int:
        self.cluster.tick()
        job = self._ours(ref, "hold")
        if job.state is not State.QUEUED:
            raise Rejected(f"{self.name}: {ref.id} is {job.state.value}; only pending is held")
        self.cluster.timed_out("hold", job.native_id)
        number = job.holds_placed + 1
        self.cluster.hold_value(job, number)
        if job.hold_number() != number:
            raise OutcomeUnknown(f"{self.name}: hold {number} on {ref.id} did not read back")
        return number

    def release(self, ref: ObjectRef, hold: int) -> None:
        self.cluster.tick()
        job = self._ours(ref, "release")
        carried = job.hold_number()
        if carried != hold:
            raise Conflict(f"{self.name}: {ref.id} carries hold {carried}, not {hold}")
        self.cluster.timed_out("release", job.native_id)
        self.cluster.release_value(job)
        if job.hold_number() == hold:
            raise OutcomeUnknown(
                f"{self.name}: release of hold {hold} on {ref.id} did not read back"
            )


class HoldNumbersPerInstance(MemoryBackend):
    """Hold numbers count this instance's holds, from 1: a reopened instance hands out the
    numbers an earlier one did, and a release naming the earlier hold frees the later."""

    def hold(self, ref: ObjectRef) -> int:
        self.cluster.tick()
        job = self._checked(ref)
        if job.state is not State.QUEUED:
            raise Rejected(f"{self.name}: {ref.id} is {job.state.value}; only pending is held")
        self.cluster.timed_out("hold", job.native_id)
        number: int = self.__dict__.get("_holds", 0) + 1
        self.__dict__["_holds"] = number
        self.cluster.hold_value(job, number)
        self.cluster.lost_reply("hold", job.native_id)
        if job.hold_number() != number:
            raise OutcomeUnknown(f"{self.name}: hold {number} on {ref.id} did not read back")
        return number


class ReleaseTrustsTheWrite(MemoryBackend):
    """release returns once its write went out, reading nothing back: a release the scheduler
    acknowledged and ignored is claimed."""

    def release(self, ref: ObjectRef, hold: int) -> None:
        self.cluster.tick()
        job = self._checked(ref)
        carried = job.hold_number()
        if carried != hold:
            raise Conflict(f"{self.name}: {ref.id} carries hold {carried}, not {hold}")
        self.cluster.timed_out("release", job.native_id)
        self.cluster.release_value(job)
        self.cluster.lost_reply("release", job.native_id)


class ReleaseReadsAnEndedHold(MemoryBackend):
    """release takes the last hold placed on the object for the one it carries, whatever its
    state: the release of a hold whose object has ended (or was released) is not refused."""

    def release(self, ref: ObjectRef, hold: int) -> None:
        self.cluster.tick()
        job = self._checked(ref)
        if (job.holds_placed or None) != hold:
            raise Conflict(f"{self.name}: {ref.id} carries hold {job.holds_placed}, not {hold}")
        self.cluster.release_value(job)


class RequeueTrustsTheWrite(MemoryBackend):
    """requeue returns once its write went out, reading nothing back: a requeue the scheduler
    acknowledged and ignored is claimed."""

    def requeue(self, ref: ObjectRef) -> None:
        self.cluster.tick()
        job = self._checked(ref)
        if job.state in (State.QUEUED, State.HELD):
            raise Rejected(f"{self.name}: {ref.id} is pending; only a started job is requeued")
        self.cluster.timed_out("requeue", job.native_id)
        job.requeue_flag = True
        self.cluster.requeue(job)
        self.cluster.lost_reply("requeue", job.native_id)


class RequeueAssumesCutLanded(MemoryBackend):
    """requeue takes a requeue cut between its steps (marked requeueable, never requeued) for
    one that landed: it returns, and the object was never requeued."""

    def requeue(self, ref: ObjectRef) -> None:
        try:
            super().requeue(ref)
        except OutcomeUnknown as unknown:
            if "crashed after marking" not in str(unknown):
                raise


class StartTrustsTheNewId(MemoryBackend):
    """start returns the object the scheduler shows under the id it just handed out, whatever
    it is: when its own object ended and the id went to another's before that read, start
    returns the other's."""

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        ref = super().start(plan, submission, attempt)
        live = self.cluster.live(ref.id)
        return self._ref(live) if live is not None else ref


class RequeuesAHeldObject(MemoryBackend):
    """requeue refuses only a queued object: one the scheduler holds (requeued and held
    underneath) is pending too, yet it is marked requeueable and sent the requeue, whose
    refusal is then OutcomeUnknown instead of Rejected."""

    def requeue(self, ref: ObjectRef) -> None:
        self.cluster.tick()
        job = self._checked(ref)
        if job.state is State.QUEUED:
            raise Rejected(f"{self.name}: {ref.id} is pending; only a started job is requeued")
        job.requeue_flag = True
        try:
            self.cluster.requeue(job)
        except Rejected:
            raise OutcomeUnknown(f"{self.name}: {ref.id} was marked, then refused") from None


class HoldRaceUnknown(MemoryBackend):
    """A hold whose write the scheduler refused (the object started, or vanished, after the
    adapter read it) is OutcomeUnknown, though the scheduler said which."""

    def hold(self, ref: ObjectRef) -> int:
        if self._checked(ref).state is not State.QUEUED:
            return super().hold(ref)
        try:
            return super().hold(ref)
        except (Rejected, NotFound):
            raise OutcomeUnknown(f"{self.name}: the hold of {ref.id} failed") from None


class RequeueRetriesLostReply(MemoryBackend):
    """requeue takes OutcomeUnknown for a requeue that did not land and sends it again without
    reading the object back: when the first one landed, the second finds the object pending
    (Rejected)."""

    def requeue(self, ref: ObjectRef) -> None:
        try:
            super().requeue(ref)
        except OutcomeUnknown:
            super().requeue(ref)


class CaseInsensitiveIdentityCheck(MemoryBackend):
    """The identity check compares the object's name with the ref's without regard to case,
    as ``squeue --name`` matches (the submit-time rule is kept)."""

    def _checked(self, ref: ObjectRef) -> Job:
        job = self.cluster.live(ref.id) if ref.backend == self.name else None
        if job is None or job.owner != "me":
            raise NotFound(f"{self.name}: no job {ref.id} of yours")
        mismatch = identity_mismatch(
            ref.uid.lower(),
            ref.submit_epoch,
            uid=job.uid.lower(),
            submit=job.submit,
            restart_count=job.restart_count,
        )
        if mismatch is not None:
            raise NotFound(f"{self.name}: job {ref.id} is not the ref's: {mismatch}")
        return job


class ForeignExtensionsIgnored(MemoryBackend):
    """start drops the extensions of namespaces other than ``dispatch`` and runs the job
    without them, instead of refusing them with Unsupported: it runs otherwise than asked."""

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        kept = {k: v for k, v in plan.spec.extensions.items() if k.startswith("dispatch.")}
        spec = plan.spec.model_copy(update={"extensions": kept})
        return super().start(plan.model_copy(update={"spec": spec}), submission, attempt)


class LenientHoldDecoding(MemoryBackend):
    """A pending object's start time decodes to a hold number without the range check: one
    HoldBase after its submit time reads as hold 0, one HoldBase + HoldBound after it as hold
    HoldBound, though neither is a hold anyone placed."""

    def _observe(self, job: Job) -> Observation:
        seen = super()._observe(job)
        number = job.eligible - job.submit - HoldBase
        if job.state is State.QUEUED and seen.hold is None and 0 <= number <= HoldBound:
            return seen.model_copy(update={"state": State.HELD, "hold": number})
        return seen


class OpenIgnoresHistory(MemoryBackend):
    """Declares AccountingHistory yes, but open reads only the live view (``squeue``, never
    ``sacct``): an object that ended and left the live view is NotFound, its end never read
    late."""

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        answers = super().capabilities(spec)
        answers[Capability.ACCOUNTING_HISTORY] = Support.yes("accounting keeps ended jobs")
        return answers

    def open(self, ref: ObjectRef) -> Observation:
        self.cluster.tick()
        return self._observe(self._checked(ref))


class StartReturnsAnEarlierSubmission(MemoryBackend):
    """start of submission N hands back the job's submission N-1 object when that one has ended
    (cancelled), instead of making submission N's."""

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        for existing in self._objects_of(plan.job):
            if self._carried(existing) == submission - 1 and existing.state is State.CANCELLED:
                return self._ref(existing)
        return super().start(plan, submission, attempt)


# -- the catalogue and its harnesses ---------------------------------------------------------------


@dataclass(frozen=True)
class Broken:
    """One broken adapter: its name, the one thing wrong with it, and how it is built."""

    name: str
    fault: str
    backend: type[MemoryBackend] = MemoryBackend
    cluster: type[MemoryCluster] = MemoryCluster
    only: tuple[str, ...] = ()
    """The checks that alone catch it, where it was written for them: the proof that each of
    those checks catches a bug no other check does."""

    def harness(self) -> BrokenHarness:
        return BrokenHarness(self)


class BrokenHarness(MemoryHarness):
    """The memory harness (Slurm shape) around one broken adapter; reopen keeps it broken."""

    def __init__(self, broken: Broken) -> None:
        super().__init__("slurm")
        self.broken = broken
        self.name = f"{__name__}:{broken.name}"

    def new_backend(self) -> MemoryBackend:
        options: dict[str, Any] = {"max_job_id": 50, "min_job_age": 60.0}
        cluster = self.broken.cluster(
            shape="slurm", clock=VirtualClock(), name=f"broken-{self.broken.name}", **options
        )
        return self.broken.backend("slurm", cluster=cluster)

    def reopen(self, backend: MemoryBackend) -> MemoryBackend:
        return type(backend)(**backend.init_options, cluster=backend.cluster)


CATALOGUE: Final[Sequence[Broken]] = (
    Broken("case_insensitive_find", CaseInsensitiveFind.__doc__ or "", CaseInsensitiveFind),
    Broken("release_ignores_number", ReleaseIgnoresNumber.__doc__ or "", ReleaseIgnoresNumber),
    Broken("stop_by_name_only", StopByNameOnly.__doc__ or "", StopByNameOnly),
    Broken("stop_by_id_only", StopByIdOnly.__doc__ or "", StopByIdOnly),
    Broken(
        "write_without_identity_check",
        WriteWithoutIdentityCheck.__doc__ or "",
        WriteWithoutIdentityCheck,
    ),
    Broken(
        "epoch_ignores_restarts",
        EpochIgnoresRestarts.__doc__ or "",
        cluster=EpochIgnoresRestarts,
    ),
    Broken("lenient_comment_parser", LenientCommentParser.__doc__ or "", LenientCommentParser),
    Broken(
        "second_rank_loses_epoch",
        SecondRankLosesEpoch.__doc__ or "",
        cluster=SecondRankLosesEpoch,
    ),
    Broken("find_drops_foreign", FindDropsForeign.__doc__ or "", FindDropsForeign),
    Broken("find_drops_ended", FindDropsEnded.__doc__ or "", FindDropsEnded),
    Broken("pending_shown_running", PendingShownRunning.__doc__ or "", PendingShownRunning),
    Broken(
        "stop_returns_before_the_end",
        StopReturnsBeforeTheEnd.__doc__ or "",
        StopReturnsBeforeTheEnd,
    ),
    Broken("requeue_keeps_submit", RequeueKeepsSubmit.__doc__ or "", cluster=RequeueKeepsSubmit),
    Broken("no_attempt_injection", NoAttemptInjection.__doc__ or "", NoAttemptInjection),
    Broken("rules_in_table_order", RulesInTableOrder.__doc__ or "", RulesInTableOrder),
    Broken("hold_kept_in_process", HoldKeptInProcess.__doc__ or "", HoldKeptInProcess),
    Broken("start_not_idempotent", StartNotIdempotent.__doc__ or "", StartNotIdempotent),
    Broken(
        "start_returns_an_earlier_submission",
        StartReturnsAnEarlierSubmission.__doc__ or "",
        StartReturnsAnEarlierSubmission,
    ),
    Broken(
        "case_insensitive_identity_check",
        CaseInsensitiveIdentityCheck.__doc__ or "",
        CaseInsensitiveIdentityCheck,
        only=("IDENT-022", "OBS-005"),
    ),
    Broken(
        "unicode_digit_comment_parser",
        UnicodeDigitCommentParser.__doc__ or "",
        UnicodeDigitCommentParser,
        only=("IDENT-023",),
    ),
    Broken(
        "numbers_unchecked", NumbersUnchecked.__doc__ or "", NumbersUnchecked, only=("IDENT-024",)
    ),
    Broken(
        "ignores_ref_cluster",
        IgnoresRefCluster.__doc__ or "",
        IgnoresRefCluster,
        only=("IDENT-025",),
    ),
    Broken(
        "stop_assumes_timeout_landed",
        StopAssumesTimeoutLanded.__doc__ or "",
        StopAssumesTimeoutLanded,
        only=("IDENT-020",),
    ),
    Broken(
        "requeue_assumes_timeout_landed",
        RequeueAssumesTimeoutLanded.__doc__ or "",
        RequeueAssumesTimeoutLanded,
        only=("IDENT-021",),
    ),
    Broken(
        "hold_assumes_timeout_landed",
        HoldAssumesTimeoutLanded.__doc__ or "",
        HoldAssumesTimeoutLanded,
        only=("HOLD-008",),
    ),
    Broken(
        "holds_beside_the_call",
        HoldsBesideTheCall.__doc__ or "",
        HoldsBesideTheCall,
        only=("HOLD-009",),
    ),
    Broken(
        "requeue_retries_lost_reply",
        RequeueRetriesLostReply.__doc__ or "",
        RequeueRetriesLostReply,
        only=("IDENT-050",),
    ),
    Broken(
        "foreign_extensions_ignored",
        ForeignExtensionsIgnored.__doc__ or "",
        ForeignExtensionsIgnored,
        only=("SAFE-002",),
    ),
    Broken(
        "lenient_hold_decoding",
        LenientHoldDecoding.__doc__ or "",
        LenientHoldDecoding,
        only=("SAFE-004",),
    ),
    Broken(
        "open_ignores_history",
        OpenIgnoresHistory.__doc__ or "",
        OpenIgnoresHistory,
        only=("CAP-017", "HOLD-018"),
    ),
)
"""Every broken adapter, each wrong in exactly one way."""

BY_NAME: Final = {broken.name: broken for broken in CATALOGUE}


def _factory(name: str) -> Callable[[], BrokenHarness]:
    def factory() -> BrokenHarness:
        return BY_NAME[name].harness()

    factory.__name__ = name
    factory.__doc__ = f"The harness of the broken adapter {name}: {BY_NAME[name].fault}"
    return factory


case_insensitive_find = _factory("case_insensitive_find")
release_ignores_number = _factory("release_ignores_number")
stop_by_name_only = _factory("stop_by_name_only")
stop_by_id_only = _factory("stop_by_id_only")
write_without_identity_check = _factory("write_without_identity_check")
epoch_ignores_restarts = _factory("epoch_ignores_restarts")
lenient_comment_parser = _factory("lenient_comment_parser")
second_rank_loses_epoch = _factory("second_rank_loses_epoch")
find_drops_foreign = _factory("find_drops_foreign")
requeue_keeps_submit = _factory("requeue_keeps_submit")
no_attempt_injection = _factory("no_attempt_injection")
rules_in_table_order = _factory("rules_in_table_order")
hold_kept_in_process = _factory("hold_kept_in_process")
start_not_idempotent = _factory("start_not_idempotent")
case_insensitive_identity_check = _factory("case_insensitive_identity_check")
unicode_digit_comment_parser = _factory("unicode_digit_comment_parser")
numbers_unchecked = _factory("numbers_unchecked")
ignores_ref_cluster = _factory("ignores_ref_cluster")
stop_assumes_timeout_landed = _factory("stop_assumes_timeout_landed")
requeue_assumes_timeout_landed = _factory("requeue_assumes_timeout_landed")
hold_assumes_timeout_landed = _factory("hold_assumes_timeout_landed")
holds_beside_the_call = _factory("holds_beside_the_call")
requeue_retries_lost_reply = _factory("requeue_retries_lost_reply")
foreign_extensions_ignored = _factory("foreign_extensions_ignored")
lenient_hold_decoding = _factory("lenient_hold_decoding")
open_ignores_history = _factory("open_ignores_history")


__all__ = ["BY_NAME", "CATALOGUE", "Broken", "BrokenHarness", *BY_NAME]
start_returns_an_earlier_submission = _factory("start_returns_an_earlier_submission")
find_drops_ended = _factory("find_drops_ended")
pending_shown_running = _factory("pending_shown_running")
stop_returns_before_the_end = _factory("stop_returns_before_the_end")
