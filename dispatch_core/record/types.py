"""The record's values: what a supervisor writes ahead of and after each act (DESIGN §12).

A job's record is a sequence of entries with a gapless ``seq`` from 0. Entry 0 is the
:class:`HeaderRecord` (the plan); then, per submission N, an :class:`IntentRecord` committed
before ``backend.start`` and an :class:`ObservedRecord` after it; :class:`ObservationRecord` and
:class:`TransitionRecord` as the job goes; and last a :class:`TerminalRecord`. Every record is a
frozen model of the style of :mod:`dispatch_core.model` and is stored as its JSON, told apart by
``kind``.
"""

from __future__ import annotations

import enum
import importlib.metadata
import math
from typing import Annotated, Any, Final, Literal

from pydantic import (
    Field,
    StrictInt,
    TypeAdapter,
    field_validator,
    model_serializer,
    model_validator,
)

from dispatch_core.identity import EpochBound
from dispatch_core.model import (
    Capability,
    Cause,
    Enforcer,
    JobID,
    JobSpec,
    NativeOffer,
    ObjectRef,
    Observation,
    Plan,
    Policy,
    State,
    Support,
    Value,
)
from dispatch_core.record.redact import (
    redact_command,
    redact_text,
    spec_digest,
    withheld_env,
)

Number = Annotated[StrictInt, Field(ge=1, lt=EpochBound)]
"""A submission or attempt number: from 1, below ``EpochBound``."""

_DIGEST: Final = r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}"


def tool_version() -> str:
    """This kit's version, as an intent records it (``unknown`` when not installed)."""
    try:
        return importlib.metadata.version("dispatch-kit")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class RecordedSpec(Value):
    """A job spec as a record holds it: every credential taken out (:mod:`.redact`).

    ``withheld_env`` names the env entries whose values were left out; ``redacted`` says that
    something was taken out, so this spec cannot be submitted again as it stands: after a crash
    the host supplies the spec again (or the job is held for a person, saying why)."""

    command: tuple[str, ...]
    env: dict[str, str] = Field(default_factory=dict)
    withheld_env: tuple[str, ...] = ()
    work_dir: str | None = None
    nodes: Annotated[StrictInt, Field(ge=1)] = 1
    procs_per_node: Annotated[StrictInt, Field(ge=0)] = 0
    extensions: dict[str, str] = Field(default_factory=dict)
    redacted: bool = False

    @classmethod
    def of(cls, spec: JobSpec) -> RecordedSpec:
        """``spec`` with its credentials taken out."""
        withheld = withheld_env(spec)
        command = redact_command(spec.command)
        env = {k: redact_text(v) for k, v in spec.env.items() if k not in withheld}
        work_dir = None if spec.work_dir is None else redact_text(spec.work_dir)
        extensions = {k: redact_text(v) for k, v in spec.extensions.items()}
        redacted = (
            bool(withheld)
            or command != spec.command
            or any(env[k] != spec.env[k] for k in env)
            or work_dir != spec.work_dir
            or extensions != spec.extensions
        )
        return cls(
            command=command,
            env=env,
            withheld_env=withheld,
            work_dir=work_dir,
            nodes=spec.nodes,
            procs_per_node=spec.procs_per_node,
            extensions=extensions,
            redacted=redacted,
        )

    def fingerprint(self) -> str:
        """``sha256:`` and the digest of this (redacted) spec's canonical JSON.

        Taken over the redacted spec on purpose: a digest of a credential is a way to test
        guesses of it offline, so it is never written either. Two specs that differ only in a
        credential have the same fingerprint (a rotated token is the same job)."""
        return spec_digest(self.model_dump(mode="json"))


def spec_fingerprint(spec: JobSpec) -> str:
    """The fingerprint an intent records for ``spec`` (see :meth:`RecordedSpec.fingerprint`)."""
    return RecordedSpec.of(spec).fingerprint()


class HeaderRecord(Value):
    """Entry 0 of every job: the plan, as every actor must see it (seed 000, "Rule support" and
    "Execution identity"). ``identity_weakened`` is absent when the adapter cannot weaken
    execution identity, as in the plan; ``time_bound`` (the seconds an execution may run before
    the supervisor stops it) is absent when there is none."""

    kind: Literal["header"] = "header"
    backend: str = Field(min_length=1)
    spec: RecordedSpec
    spec_fingerprint: str
    policy: Policy = Policy()
    enforcers: tuple[Enforcer, ...] = ()
    unverified: tuple[Capability, ...] = ()
    unverified_rules: tuple[int, ...] = ()
    capabilities: dict[Capability, Support] = Field(default_factory=dict)
    native: NativeOffer | None = None
    identity_weakened: str | None = None
    time_bound: float | None = None

    @field_validator("time_bound")
    @classmethod
    def _bound(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"a time bound is a finite number of seconds above 0, not {value}")
        return value

    @classmethod
    def of(cls, plan: Plan, time_bound: float | None = None) -> HeaderRecord:
        """The header of ``plan``'s job, with the supervisor's time bound for its executions."""
        spec = RecordedSpec.of(plan.spec)
        return cls(
            backend=plan.backend,
            spec=spec,
            spec_fingerprint=spec.fingerprint(),
            policy=plan.policy,
            enforcers=plan.enforcers,
            unverified=plan.unverified,
            unverified_rules=plan.unverified_rules,
            capabilities=plan.capabilities,
            native=plan.native,
            identity_weakened=plan.identity_weakened,
            time_bound=time_bound,
        )

    @model_serializer(mode="wrap")
    def _drop_absent_weakening(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.identity_weakened is None:
            data.pop("identity_weakened", None)
        if self.time_bound is None:
            data.pop("time_bound", None)
        return data


class IntentRecord(Value):
    """What the supervisor is about to start, committed before ``backend.start``: submission N
    of attempt A, the spec it starts, where, with what, and the object name it intends."""

    kind: Literal["intent"] = "intent"
    submission: Number
    attempt: Number
    spec_fingerprint: str = Field(min_length=1)
    adapter: str = Field(min_length=1)
    """The adapter (its entry point name: ``slurm``, ``memory``, ...)."""
    cluster: str = Field(min_length=1)
    """The adapter instance's cluster name (``Backend.name``, every ``ObjectRef.backend``)."""
    tool_version: str = Field(min_length=1)
    image_digest: str | None = Field(default=None, pattern=_DIGEST)
    """The image's content digest (``sha256:...``) where it is known before the start."""
    object_name: str = Field(min_length=1)
    """The name the started object will carry (``dj-<job>`` on Slurm)."""


class ObservedRecord(Value):
    """What ``start`` (or ``find``, adopting after a crash) returned for submission N: the
    object's identity, and the host where known (the node it was placed on, or the submit host
    the adapter reports)."""

    kind: Literal["observed"] = "observed"
    submission: Number
    ref: ObjectRef
    host: str | None = None


class ObservationRecord(Value):
    """An observation of one of the job's objects (written when it tells something new)."""

    kind: Literal["observation"] = "observation"
    observation: Observation


class Action(enum.StrEnum):
    """What a supervisor decided, as a transition records it."""

    WAIT = "wait"
    LAUNCH_RETRY = "launch_retry"
    RESUBMIT = "resubmit"
    REQUEUE = "requeue"
    RESTART = "restart"
    HOLD = "hold"
    RELEASE = "release"
    ESCALATE = "escalate"
    STOP = "stop"
    CANCEL = "cancel"


class TransitionRecord(Value):
    """A decision of the supervisor: the action it takes, on which cause, which rule of the
    policy it spends (``None`` for a launch retry or a cancel), and when the next act may come
    (the backoff, as a time on the supervisor's clock). Budgets are counted from these."""

    kind: Literal["transition"] = "transition"
    action: Action
    state: State
    cause: Cause = Cause.NONE
    submission: Number | None = None
    attempt: Number | None = None
    rule: Annotated[StrictInt, Field(ge=0)] | None = None
    not_before: float | None = None
    detail: str = ""

    @field_validator("not_before")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("not_before must be a finite time")
        return value


class TerminalRecord(Value):
    """The job's end: an ended state with its cause. A failure always names its cause; what
    could not be told is ``evidence_lost``, never success. Nothing follows it."""

    kind: Literal["terminal"] = "terminal"
    state: State
    cause: Cause = Cause.NONE
    submission: Number | None = None
    attempt: Number | None = None
    detail: str = ""

    @field_validator("state")
    @classmethod
    def _ended(cls, state: State) -> State:
        if not state.ended:
            raise ValueError(f"a terminal record's state must be an ended one, not {state}")
        return state

    @model_validator(mode="after")
    def _cause(self) -> TerminalRecord:
        if self.state is State.FAILED and self.cause is Cause.NONE:
            raise ValueError("a failed terminal record must name its cause")
        if self.state is State.SUCCEEDED and self.cause is not Cause.NONE:
            raise ValueError(f"a succeeded terminal record has no cause, not {self.cause}")
        return self


Record = Annotated[
    HeaderRecord
    | IntentRecord
    | ObservedRecord
    | ObservationRecord
    | TransitionRecord
    | TerminalRecord,
    Field(discriminator="kind"),
]
"""Any record; its JSON's ``kind`` says which."""

RECORD: Final[TypeAdapter[Record]] = TypeAdapter(Record)


class Entry(Value):
    """One stored record: its job, its place (``seq``), the time its writer gave (``at``, on the
    writer's clock), the writer (the lease's owner and token), and the record."""

    job: JobID
    seq: Annotated[StrictInt, Field(ge=0)]
    at: float
    writer: str
    token: Annotated[StrictInt, Field(ge=1)]
    record: Record


class Lease(Value):
    """The right to write a job's record: its owner, a fencing ``token`` that grows with every
    acquisition of the job's lease, and the clock time it expires at."""

    job: JobID
    owner: str = Field(min_length=1)
    token: Annotated[StrictInt, Field(ge=1)]
    expires: float

    def live(self, now: float) -> bool:
        """Whether the lease still holds at clock time ``now``."""
        return now < self.expires


__all__ = [
    "RECORD",
    "Action",
    "Entry",
    "HeaderRecord",
    "IntentRecord",
    "Lease",
    "Number",
    "ObservationRecord",
    "ObservedRecord",
    "Record",
    "RecordedSpec",
    "TerminalRecord",
    "TransitionRecord",
    "spec_fingerprint",
    "tool_version",
]
