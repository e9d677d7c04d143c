"""The value model of the dispatch contract.

Python names follow the Go original's in snake_case. Every enum encodes as its text and refuses
a text it does not know; every model is a frozen pydantic v2 model that refuses unknown fields.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    StrictBool,
    StrictInt,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import core_schema
from ulid import ULID

NAMESPACE: Final = "dispatch"
"""The namespace of the core's own JobSpec extensions."""

RESERVED_ENV_PREFIX: Final = "DISPATCH_"
"""User environment may not set any name with this prefix: the adapter injects those."""

IMAGE: Final = "dispatch.Image"
"""Extension naming the container image a job runs in (needs ContainerImage)."""

OUTPUT: Final = "dispatch.Output"
"""Extension naming where a job's stdout and stderr go (needs OutputPath)."""

CORE_EXTENSIONS: Final = frozenset({IMAGE, OUTPUT})


class _TextEnumType(enum.EnumType):
    """Lets an enum that has a zero value (as Go's zero value) be called with no argument."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and cls in _ZERO_VALUES:
            return _ZERO_VALUES[cls]
        return super().__call__(*args, **kwargs)


class _TextEnum(enum.StrEnum, metaclass=_TextEnumType):
    """A StrEnum whose refusal of an unknown text lists the texts it knows."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        known = ", ".join(member.value for member in cls)
        raise ValueError(f"{value!r} is not a {cls.__name__}; expected one of: {known}")


class Capability(_TextEnum):
    """What a cluster can do for a job; the values are the seed table's names, in its order."""

    CONTAINER_IMAGE = "ContainerImage"
    NATIVE_REQUEUE = "NativeRequeue"
    NATIVE_RESTART = "NativeRestart"
    HOLD = "Hold"
    PRE_TERMINATION_SIGNAL = "PreTerminationSignal"
    ACCOUNTING_HISTORY = "AccountingHistory"
    ATTEMPT_INJECTION = "AttemptInjection"
    READMISSION_GATE = "ReadmissionGate"
    WORKING_DIRECTORY = "WorkingDirectory"
    PROCS_PER_NODE = "ProcsPerNode"
    OUTPUT_PATH = "OutputPath"
    OUTPUT_READ = "OutputRead"
    OUTPUT_FOLLOW = "OutputFollow"
    OUTPUT_RETAINED = "OutputRetained"

    @property
    def visible_on_failure(self) -> bool:
        """True where an unsupported request surfaces as an error, not as a job that quietly
        runs differently: OutputRead, OutputFollow and OutputRetained."""
        return self in _VISIBLE_ON_FAILURE


_VISIBLE_ON_FAILURE: Final = frozenset(
    {Capability.OUTPUT_READ, Capability.OUTPUT_FOLLOW, Capability.OUTPUT_RETAINED}
)


def capabilities() -> tuple[Capability, ...]:
    """All fourteen capabilities, in the order of the seed's table."""
    return tuple(Capability)


class Tristate(_TextEnum):
    """A three-valued answer; ``unknown`` is the zero value."""

    UNKNOWN = "unknown"
    YES = "yes"
    NO = "no"


class Source(_TextEnum):
    """Where an answer comes from; ``declared`` is the zero value."""

    DECLARED = "declared"
    PROBED = "probed"
    CATALOGUE = "catalogue"


_ZERO_VALUES: Final[dict[type, Any]] = {Tristate: Tristate.UNKNOWN, Source: Source.DECLARED}
"""``Tristate()`` is ``unknown`` and ``Source()`` is ``declared``, their zero values."""


class RuleKind(_TextEnum):
    """The action a recovery rule takes."""

    RESUBMIT = "resubmit"
    HOLD = "hold"
    ESCALATE = "escalate"
    REQUEUE = "requeue"
    RESTART = "restart"


class Enforcer(_TextEnum):
    """Who carries out a recovery rule."""

    BACKEND = "backend"
    SUPERVISOR = "supervisor"
    NOBODY = "nobody"


class State(_TextEnum):
    """The coarse state of an observed scheduler object."""

    QUEUED = "queued"
    HELD = "held"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    @property
    def ended(self) -> bool:
        """True for the states an object never leaves by itself."""
        return self in (State.SUCCEEDED, State.FAILED, State.CANCELLED)


class Cause(_TextEnum):
    """Why an object is in its state; a failure always carries one."""

    NONE = "none"
    EXIT_CODE = "exit_code"
    PREEMPTED = "preempted"
    NODE_LOST = "node_lost"
    OUT_OF_MEMORY = "out_of_memory"
    TIMEOUT = "timeout"
    DEADLINE = "deadline"
    NO_CAPACITY = "no_capacity"
    LAUNCH_FAILED = "launch_failed"
    IMAGE_PULL = "image_pull"
    EVICTED = "evicted"
    UNSCHEDULABLE = "unschedulable"
    CANCELLED = "cancelled"
    REQUEUED = "requeued"
    EVIDENCE_LOST = "evidence_lost"


class Value(BaseModel):
    """A frozen value; fields may also be given by position, in declaration order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = list(type(self).model_fields)
        if len(args) > len(names):
            raise TypeError(
                f"{type(self).__name__} takes at most {len(names)} positional values "
                f"({', '.join(names)}), got {len(args)}"
            )
        for name, arg in zip(names, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__} got two values for {name!r}")
            kwargs[name] = arg
        super().__init__(**kwargs)


class Support(Value):
    """An adapter's answer for one capability: its value, where it comes from, and why."""

    value: Tristate = Tristate.UNKNOWN
    source: Source = Source.DECLARED
    reason: str = ""

    @classmethod
    def yes(cls, reason: str = "", source: Source = Source.DECLARED) -> Support:
        return cls(value=Tristate.YES, source=source, reason=reason)

    @classmethod
    def no(cls, reason: str = "", source: Source = Source.DECLARED) -> Support:
        return cls(value=Tristate.NO, source=source, reason=reason)

    @classmethod
    def unknown(cls, reason: str = "", source: Source = Source.DECLARED) -> Support:
        return cls(value=Tristate.UNKNOWN, source=source, reason=reason)


class Rule(Value):
    """A recovery rule: what to do, how many times at most, and on which causes (empty: any)."""

    kind: RuleKind
    budget: Annotated[StrictInt, Field(ge=0)] = 1
    causes: tuple[Cause, ...] = ()


class Policy(Value):
    """The ordered recovery rules of a job, and whether its ranks share a checkpoint."""

    rules: tuple[Rule, ...] = ()
    shared_checkpoint: StrictBool = False


class RuleSupport(Value):
    """An adapter's answer for one rule: can its action be carried out on this cluster by anyone."""

    perform: Support = Support()


class NativeOffer(Value):
    """What a NativePolicyCompiler agreed to enforce itself: rule indices, and its compiled form."""

    rules: tuple[Annotated[StrictInt, Field(ge=0)], ...] = ()
    detail: dict[str, str] = Field(default_factory=dict)


_ULID_TEXT: Final = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")


class JobID:
    """The identity of a dispatch job: a ULID, written as its 26-character upper-case form."""

    __slots__ = ("_ulid",)
    DISCOVERY_PREFIX: ClassVar[str] = "dj-"

    def __init__(self, value: ULID | str | None = None) -> None:
        if value is None:
            value = ULID()
        elif isinstance(value, str):
            value = self._parse_ulid(value)
        elif not isinstance(value, ULID):
            raise TypeError(f"JobID takes a ULID or its text, not {type(value).__name__}")
        self._ulid: ULID = value

    @staticmethod
    def _parse_ulid(text: str) -> ULID:
        if not _ULID_TEXT.fullmatch(text):
            raise ValueError(
                f"{text!r} is not a job id: expected 26 upper-case Crockford base32 characters"
            )
        return ULID.from_str(text)

    @classmethod
    def new(cls) -> JobID:
        """A fresh job id."""
        return cls()

    @classmethod
    def parse(cls, text: str) -> JobID:
        """The job id written as ``text``; only the canonical upper-case form is accepted."""
        return cls(text)

    @classmethod
    def from_discovery_name(cls, name: str) -> JobID:
        """The job id a ``dj-`` name carries; refuses anything but the exact form."""
        if not name.startswith(cls.DISCOVERY_PREFIX):
            raise ValueError(f"{name!r} is not a discovery name: it must start with 'dj-'")
        return cls(name[len(cls.DISCOVERY_PREFIX) :])

    def discovery_name(self) -> str:
        """The scheduler-visible name of every object of this job: ``dj-`` plus the ULID."""
        return self.DISCOVERY_PREFIX + str(self)

    @property
    def ulid(self) -> ULID:
        return self._ulid

    def __str__(self) -> str:
        return str(self._ulid)

    def __repr__(self) -> str:
        return f"JobID('{self}')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobID) and other._ulid == self._ulid

    def __hash__(self) -> int:
        return hash(("JobID", bytes(self._ulid)))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def validate(value: Any) -> JobID:
            if isinstance(value, JobID):
                return value
            if not isinstance(value, str | ULID):
                raise ValueError(f"a job id is a ULID or its text, not {type(value).__name__}")
            return cls(value)

        return core_schema.no_info_plain_validator_function(
            validate, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )


_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXTENSION_KEY: Final = re.compile(r"[a-z][a-z0-9-]*\.[A-Z][A-Za-z0-9]*")


def _refuse_nul(what: str, text: str) -> None:
    if "\x00" in text:
        raise ValueError(f"{what} contains a NUL byte, which no scheduler can carry")


class JobSpec(Value):
    """What to run: the command, its environment and directory, its shape, and extensions."""

    command: tuple[str, ...] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    work_dir: str | None = None
    nodes: Annotated[StrictInt, Field(ge=1)] = 1
    procs_per_node: Annotated[StrictInt, Field(ge=0)] = 0
    extensions: dict[str, str] = Field(default_factory=dict)
    secret_env: tuple[str, ...] = ()
    """The names of the ``env`` entries whose values are credentials: the job sees them, but no
    record, report or log holds their values (DESIGN §12). Kept sorted and without repeats."""

    @field_validator("command")
    @classmethod
    def _command(cls, command: tuple[str, ...]) -> tuple[str, ...]:
        if command[0] == "":
            raise ValueError("command[0] is empty: it must name a program")
        for i, arg in enumerate(command):
            _refuse_nul(f"command[{i}]", arg)
        return command

    @field_validator("env")
    @classmethod
    def _env(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"env name {name!r} is not a valid environment variable name")
            if name.startswith(RESERVED_ENV_PREFIX):
                raise ValueError(
                    f"env name {name!r} is reserved: the adapter sets every "
                    f"{RESERVED_ENV_PREFIX}* variable itself"
                )
            _refuse_nul(f"env[{name!r}]", value)
        return env

    @field_validator("work_dir")
    @classmethod
    def _work_dir(cls, work_dir: str | None) -> str | None:
        if work_dir is not None:
            if work_dir == "":
                raise ValueError("work_dir is empty: leave it unset to use the scheduler's default")
            _refuse_nul("work_dir", work_dir)
        return work_dir

    @field_validator("extensions")
    @classmethod
    def _extensions(cls, extensions: dict[str, str]) -> dict[str, str]:
        for key, value in extensions.items():
            if not _EXTENSION_KEY.fullmatch(key):
                raise ValueError(
                    f"extension key {key!r} is malformed: expected namespace.Name, "
                    "e.g. 'dispatch.Image' or 'slurm.Partition'"
                )
            if key.startswith(NAMESPACE + ".") and key not in CORE_EXTENSIONS:
                raise ValueError(
                    f"{key!r} is not a dispatch extension; "
                    f"known: {', '.join(sorted(CORE_EXTENSIONS))}"
                )
            _refuse_nul(f"extensions[{key!r}]", value)
        return extensions

    @field_validator("secret_env")
    @classmethod
    def _secret_env(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(names)))

    @model_validator(mode="after")
    def _secret_env_in_env(self) -> JobSpec:
        # A mark naming no env entry is a typo that would leave the real credential unmarked.
        unknown = [name for name in self.secret_env if name not in self.env]
        if unknown:
            raise ValueError(f"secret_env names {unknown} that env does not set")
        return self

    @model_serializer(mode="wrap")
    def _drop_empty_secret_env(self, handler: Any) -> dict[str, Any]:
        # Absent when nothing is marked, so every dump made before the field existed is unchanged.
        data: dict[str, Any] = handler(self)
        if not self.secret_env:
            data.pop("secret_env", None)
        return data

    def __repr_args__(self) -> Any:
        # A repr ends up in logs and tracebacks: it shows a secret env entry's name, not its value.
        for name, value in super().__repr_args__():
            if name == "env" and self.secret_env:
                value = {k: "<secret>" if k in self.secret_env else v for k, v in self.env.items()}
            yield name, value

    def namespace_extensions(self, namespace: str) -> dict[str, str]:
        """The extensions of one namespace, keyed by their Name part."""
        prefix = namespace + "."
        return {k[len(prefix) :]: v for k, v in self.extensions.items() if k.startswith(prefix)}


class ObjectRef(Value):
    """One scheduler object of a job: its cluster, the identity the scheduler keeps, its native
    handle, and its submit time (UTC, whole seconds), which is the anchor of identity."""

    backend: str = Field(min_length=1)
    uid: str = Field(min_length=1)
    id: str = Field(min_length=1)
    submit: datetime

    @field_validator("submit")
    @classmethod
    def _submit(cls, submit: datetime) -> datetime:
        if submit.tzinfo is None or submit.utcoffset() is None:
            raise ValueError("submit must be time-zone aware (UTC)")
        if submit.microsecond:
            raise ValueError("submit must be whole seconds, as schedulers record it")
        return submit.astimezone(UTC)

    @property
    def submit_epoch(self) -> int:
        return int(self.submit.timestamp())


class Observation(Value):
    """What an adapter saw of one scheduler object: a coarse state and a typed cause, plus the
    identity it carries (submission, attempt, restart count), its hold number, and whether it is
    foreign (it carries the job's name but not its identity; never acted on)."""

    ref: ObjectRef
    state: State
    cause: Cause = Cause.NONE
    submission: int | None = None
    attempt: int | None = None
    restart_count: int | None = None
    exit_code: int | None = None
    hold: int | None = None
    foreign: bool = False
    detail: str = ""
    """Free text for people (what the adapter saw, in its words); no rule reads it."""


class Plan(Value):
    """The outcome of make_plan: what was checked and decided, passed to every ``start``."""

    job: JobID
    backend: str
    spec: JobSpec
    policy: Policy = Policy()
    capabilities: dict[Capability, Support] = Field(default_factory=dict)
    unverified: tuple[Capability, ...] = ()
    enforcers: tuple[Enforcer, ...] = ()
    unverified_rules: tuple[int, ...] = ()
    native: NativeOffer | None = None
    identity_weakened: str | None = None

    @model_serializer(mode="wrap")
    def _drop_absent_weakening(self, handler: Any) -> dict[str, Any]:
        # The Go original omits the field from the record when the adapter cannot weaken identity.
        data: dict[str, Any] = handler(self)
        if self.identity_weakened is None:
            data.pop("identity_weakened", None)
        return data


def support_table(answers: Mapping[Capability, Support]) -> dict[Capability, Support]:
    """All fourteen capabilities in the seed's order; a missing answer is ``unknown``."""
    return {cap: answers.get(cap, Support()) for cap in capabilities()}


__all__ = [
    "CORE_EXTENSIONS",
    "IMAGE",
    "NAMESPACE",
    "OUTPUT",
    "RESERVED_ENV_PREFIX",
    "Capability",
    "Cause",
    "Enforcer",
    "JobID",
    "JobSpec",
    "NativeOffer",
    "ObjectRef",
    "Observation",
    "Plan",
    "Policy",
    "Rule",
    "RuleKind",
    "RuleSupport",
    "Source",
    "State",
    "Support",
    "Tristate",
    "Value",
    "capabilities",
    "support_table",
]
