"""MemoryBackend: the whole dispatch SPI over an in-memory scheduler, in two shapes.

It implements ``Backend``, ``Holder`` and ``Requeuer`` always, ``NativePolicyCompiler`` when
``native`` is given and ``IdentityWeakener`` when ``identity_weakened`` is given (an adapter
without those interfaces is a different case for the core, so the memory adapter can be both).
It never implements ``OutputReader``.

Every write follows seed 001: read, check identity (same id; name or UID equal exactly; submit
equal, or same-or-later after a requeue), write, read back. A failed check acts on nothing.

The Slurm shape finds a job's objects by their exact name and reads submission and attempt from
the Slurm comment (:mod:`adapters.slurm.identity`); the kubeflow shape finds them by the exact
``dispatch/job`` label and reads them from annotations (:mod:`adapters.memory.kube`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from adapters.memory.cluster import DEFAULT_REQUEUE_DELAY, Execution, Job, MemoryCluster
from adapters.memory.kube import (
    LABEL_JOB,
    job_label,
    kube_annotations,
    kube_labels,
    parse_kube_identity,
)
from adapters.memory.tables import (
    SHAPES,
    Shape,
    SupportLike,
    as_support,
    declared_capabilities,
    declared_rules,
)
from adapters.slurm.identity import parse_slurm_comment, slurm_comment
from dispatch_core import (
    NAMESPACE,
    Capability,
    Clock,
    Conflict,
    EncodingError,
    JobID,
    JobSpec,
    NativeOffer,
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
    Tristate,
    Unsupported,
    VirtualClock,
    identity_mismatch,
)

NativeConfig = Mapping[RuleKind, SupportLike] | Iterable[RuleKind]
WeakenerConfig = str | Callable[[JobSpec], str]


class MemoryBackend:
    """A dispatch backend whose scheduler lives in memory; shaped like Slurm or like Kubeflow.

    Tables: ``capabilities`` and ``rules`` override the declared answers entry by entry (a bare
    ``Tristate`` or text becomes a declared answer); ``native`` (rule kinds, or kind → answer)
    makes it a NativePolicyCompiler; ``identity_weakened`` (text, or a function of the spec)
    makes it an IdentityWeakener. Cluster: ``cluster`` shares another backend's cluster (as
    :meth:`reopen` does); otherwise the keyword arguments configure a new one."""

    _variants: ClassVar[dict[tuple[type, ...], type]] = {}

    def __new__(cls, *args: Any, **kwargs: Any) -> MemoryBackend:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
        mixins: list[type] = []
        if bound.arguments.get("native") is not None:
            mixins.append(_NativeCompiling)
        if bound.arguments.get("identity_weakened") is not None:
            mixins.append(_Weakening)
        if mixins and cls is MemoryBackend:
            key = tuple(mixins)
            if key not in cls._variants:
                name = "MemoryBackend" + "".join(m.__name__ for m in mixins)
                cls._variants[key] = type(name, (*mixins, MemoryBackend), {})
            cls = cls._variants[key]
        return super().__new__(cls)

    def __init__(
        self,
        shape: Shape = "slurm",
        clock: Clock | None = None,
        capabilities: Mapping[Capability, SupportLike] | None = None,
        rules: Mapping[RuleKind, SupportLike] | None = None,
        native: NativeConfig | None = None,
        identity_weakened: WeakenerConfig | None = None,
        *,
        name: str | None = None,
        cluster: MemoryCluster | None = None,
        seed: int = 0,
        first_job_id: int = 1,
        max_job_id: int = 999,
        min_job_age: float = 300.0,
        job_comment: bool = True,
        accounting: bool = True,
        requeue_delay: int = DEFAULT_REQUEUE_DELAY,
        namespace: str = "default",
    ) -> None:
        if shape not in SHAPES:
            raise ValueError(f"shape {shape!r} is not one of {', '.join(SHAPES)}")
        if cluster is None:
            cluster = MemoryCluster(
                shape=shape,
                clock=clock if clock is not None else VirtualClock(),
                name=name or f"memory-{shape}",
                seed=seed,
                first_job_id=first_job_id,
                max_job_id=max_job_id,
                min_job_age=min_job_age,
                job_comment=job_comment,
                accounting=accounting,
                requeue_delay=requeue_delay,
                namespace=namespace,
            )
        elif cluster.shape != shape:
            raise ValueError(f"cluster {cluster.name} is {cluster.shape}-shaped, not {shape}")
        self.cluster = cluster
        self.shape: Shape = shape
        self._init = dict(
            shape=shape,
            capabilities=capabilities,
            rules=rules,
            native=native,
            identity_weakened=identity_weakened,
        )
        self._capabilities = declared_capabilities(shape)
        for capability, answer in (capabilities or {}).items():
            self._capabilities[Capability(capability)] = as_support(
                answer, f"memory adapter configured {capability}"
            )
        self._rules = declared_rules(shape)
        for kind, answer in (rules or {}).items():
            self._rules[RuleKind(kind)] = as_support(answer, f"memory adapter configured {kind}")
        self._native = _native_table(native)
        self._weakened = identity_weakened

    # -- the SPI --------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def clock(self) -> Clock:
        return self.cluster.clock

    @property
    def init_options(self) -> dict[str, Any]:
        """The options this instance was made with, but its cluster (a copy): ``type(b)(
        **b.init_options, cluster=b.cluster)`` is a like instance on the same cluster."""
        return dict(self._init)

    def reopen(self) -> MemoryBackend:
        """A second adapter instance on the same cluster, as after a process restart."""
        return MemoryBackend(**self._init, cluster=self.cluster)  # type: ignore[arg-type]

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        return dict(self._capabilities)

    def rules(self, policy: Policy) -> list[RuleSupport]:
        return [RuleSupport(perform=self._rules[rule.kind]) for rule in policy.rules]

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        self.cluster.tick()
        if plan.backend != self.name:
            raise Rejected(f"the plan was made for {plan.backend!r}, not {self.name!r}")
        foreign = sorted(k for k in plan.spec.extensions if not k.startswith(NAMESPACE + "."))
        if foreign:
            raise Unsupported(f"{self.name} honours no extension outside dispatch.*: {foreign}")
        try:
            if self.shape == "slurm":
                comment: str | None = slurm_comment(submission, attempt)
                annotations: dict[str, str] = {}
            else:
                comment, annotations = None, kube_annotations(submission, attempt)
        except EncodingError as error:
            raise Rejected(f"{self.name}: {error}") from None
        # Idempotent per (job, submission): an earlier start whose reply was lost is found.
        for existing in self._objects_of(plan.job):
            if self._carried(existing) == submission:
                return self._ref(existing)
        self.cluster.timed_out("start")
        name = plan.job.discovery_name()
        if self.shape == "slurm":
            job = self.cluster.submit(name, comment, plan.spec, plan.job)
        else:
            job = self.cluster.submit(
                f"{name.lower()}-{submission}",
                None,
                plan.spec,
                plan.job,
                labels=kube_labels(plan.job),
                annotations=annotations,
            )
        self.cluster.lost_reply("start")
        return self._ref(job)

    def find(self, job_id: JobID) -> list[Observation]:
        self.cluster.tick()
        return [self._observe(job) for job in self._objects_of(job_id)]

    def open(self, ref: ObjectRef) -> Observation:
        self.cluster.tick()
        return self._observe(self._resolve(ref))

    def stop(self, ref: ObjectRef) -> None:
        self.cluster.tick()
        try:
            job = self._checked(ref)
        except NotFound:
            return  # cancelling by name and id together finds nothing to cancel
        self.cluster.timed_out("stop", job.native_id)
        self.cluster.cancel(job)
        self.cluster.lost_reply("stop", job.native_id)
        after = self.cluster.live(ref.id)
        if after is job and not job.ended:
            raise OutcomeUnknown(f"{self.name}: {ref.id} has not ended after its cancel")

    # -- Holder -----------------------------------------------------------------------------------

    def hold(self, ref: ObjectRef) -> int:
        self.cluster.tick()
        job = self._ours(ref, "hold")
        if job.state is not State.QUEUED:
            raise Rejected(
                f"{self.name}: {ref.id} is {job.state.value}; only a pending job is held"
            )
        self.cluster.timed_out("hold", job.native_id)
        number = job.holds_placed + 1
        self.cluster.hold_value(job, number)
        self.cluster.lost_reply("hold", job.native_id)
        if job.hold_number() != number:
            raise OutcomeUnknown(f"{self.name}: hold {number} on {ref.id} did not read back")
        return number

    def release(self, ref: ObjectRef, hold: int) -> None:
        self.cluster.tick()
        job = self._ours(ref, "release")
        carried = job.hold_number()
        if carried is None:
            raise Conflict(f"{self.name}: {ref.id} carries no hold (asked to release {hold})")
        if carried != hold:
            raise Conflict(f"{self.name}: {ref.id} carries hold {carried}, not {hold}")
        self.cluster.timed_out("release", job.native_id)
        self.cluster.release_value(job)
        self.cluster.lost_reply("release", job.native_id)
        if job.hold_number() == hold:
            raise OutcomeUnknown(
                f"{self.name}: release of hold {hold} on {ref.id} did not read back"
            )

    # -- Requeuer ---------------------------------------------------------------------------------

    def requeue(self, ref: ObjectRef) -> None:
        """Two steps, as on Slurm: mark the job requeueable, then requeue it; a crash between
        the steps is OutcomeUnknown with the mark left set."""
        self.cluster.tick()
        job = self._ours(ref, "requeue")
        if job.state in (State.QUEUED, State.HELD):
            raise Rejected(f"{self.name}: {ref.id} is pending; only a started job is requeued")
        self.cluster.timed_out("requeue", job.native_id)
        job.requeue_flag = True
        if self.cluster.take_fault("crash-requeue", job.native_id):
            raise OutcomeUnknown(f"{self.name}: crashed after marking {ref.id} requeueable")
        restarts = job.restart_count
        self.cluster.requeue(job)
        self.cluster.lost_reply("requeue", job.native_id)
        if job.restart_count == restarts:
            raise OutcomeUnknown(f"{self.name}: requeue of {ref.id} did not read back")

    # -- what a harness reads ----------------------------------------------------------------------

    def executions(self, ref: ObjectRef) -> list[Execution]:
        """Every execution of the object ``ref`` names, with the environment each rank saw."""
        job = self._resolve(ref)
        return [e for e in self.cluster.executions if e.serial == job.serial]

    # -- internals --------------------------------------------------------------------------------

    def _objects_of(self, job_id: JobID) -> list[Job]:
        if self.shape == "slurm":
            return self.cluster.named(job_id.discovery_name())
        return self.cluster.labelled(LABEL_JOB, job_label(job_id))

    def _identity_of(self, job: Job) -> tuple[int, int] | None:
        """The submission and attempt the object carries, None when the scheduler kept none
        (a Slurm accounting record without job_comment: unknown, not foreign), or
        EncodingError when it carries none it should, or one that does not parse (foreign)."""
        if self.shape == "kubeflow":
            return parse_kube_identity(job.annotations)
        comment = self.cluster.shown_comment(job)
        if comment is None:
            return None
        carried = parse_slurm_comment(comment)
        return carried.submission, carried.attempt

    def _carried(self, job: Job) -> int | None:
        try:
            carried = self._identity_of(job)
        except EncodingError:
            return None
        return None if carried is None else carried[0]

    def _ref(self, job: Job) -> ObjectRef:
        return ObjectRef(
            backend=self.name,
            uid=job.uid,
            id=job.native_id,
            submit=datetime.fromtimestamp(job.submit, UTC),
        )

    def _checked(self, ref: ObjectRef) -> Job:
        """The live object ``ref`` names, if the identity check of seed 001 holds."""
        job = self.cluster.live(ref.id) if ref.backend == self.name else None
        if job is None or job.owner != "me":
            raise NotFound(f"{self.name}: no job {ref.id} of yours")
        mismatch = identity_mismatch(
            ref.uid,
            ref.submit_epoch,
            uid=job.uid,
            submit=job.submit,
            restart_count=job.restart_count,
        )
        if mismatch is not None:
            raise NotFound(f"{self.name}: job {ref.id} is not the ref's: {mismatch}")
        return job

    def _ours(self, ref: ObjectRef, what: str) -> Job:
        """The live object ``ref`` names, checked, and dispatch's: a foreign one (its identity
        does not parse) is never acted on (DESIGN §4), so ``what`` is Rejected."""
        job = self._checked(ref)
        if self._observe(job).foreign:
            raise Rejected(f"{self.name}: {ref.id} is not dispatch's: no {what}")
        return job

    def _resolve(self, ref: ObjectRef) -> Job:
        """The object, live or (Slurm shape) from accounting once purged."""
        if ref.backend == self.name and self.cluster.live(ref.id) is None:
            record = self.cluster.accounted(ref.id, ref.uid, ref.submit_epoch)
            if record is not None:
                return record
        return self._checked(ref)

    def _observe(self, job: Job) -> Observation:
        submission = attempt = None
        foreign = False
        try:
            carried = self._identity_of(job)
        except EncodingError:
            foreign = True
        else:
            if carried is not None:
                submission, attempt = carried
        hold = job.hold_number()
        state = State.HELD if job.state is State.QUEUED and hold is not None else job.state
        return Observation(
            ref=self._ref(job),
            state=state,
            cause=job.cause,
            submission=submission,
            attempt=attempt,
            restart_count=None if job.purged else job.restart_count,
            exit_code=job.exit_code,
            hold=hold if state is State.HELD else None,
            foreign=foreign,
            detail="from accounting" if job.purged else "",
        )


class _NativeCompiling:
    """Mixed in when ``native`` is configured: the NativePolicyCompiler interface."""

    _native: dict[RuleKind, Support]

    def native(self, policy: Policy) -> list[Support]:
        return [self._native.get(rule.kind, Support.no("not native")) for rule in policy.rules]

    def compile(self, policy: Policy) -> NativeOffer:
        answers = self.native(policy)
        chosen = [i for i, answer in enumerate(answers) if answer.value is Tristate.YES]
        return NativeOffer(
            rules=tuple(chosen),
            detail={str(i): f"{policy.rules[i].kind} x{policy.rules[i].budget}" for i in chosen},
        )


class _Weakening:
    """Mixed in when ``identity_weakened`` is configured: the IdentityWeakener interface."""

    _weakened: WeakenerConfig | None

    def identity_weakened(self, spec: JobSpec) -> str:
        weakened = self._weakened
        if weakened is None:
            return ""
        return weakened if isinstance(weakened, str) else weakened(spec)


def _native_table(native: NativeConfig | None) -> dict[RuleKind, Support]:
    if native is None:
        return {}
    if isinstance(native, Mapping):
        return {
            RuleKind(kind): as_support(answer, f"memory adapter enforces {kind} natively")
            for kind, answer in native.items()
        }
    return {
        RuleKind(kind): Support.yes(f"memory adapter enforces {kind} natively") for kind in native
    }
