"""The value model of dispatch_core against seed 000's tables and DESIGN §3/§4."""

from __future__ import annotations

import enum
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from dispatch_core import (
    Capability,
    Cause,
    Enforcer,
    JobID,
    JobSpec,
    ObjectRef,
    Plan,
    Policy,
    Rule,
    RuleKind,
    RuleSupport,
    Source,
    State,
    Support,
    Tristate,
    capabilities,
)

# ---------------------------------------------------------------------------------------------
# The capability table (seed 000, "Capabilities and support")
# ---------------------------------------------------------------------------------------------

# name, needed at submit when, "Unknown may proceed" (None where the seed leaves it blank)
SEED_CAPABILITY_TABLE = [
    ("ContainerImage", "the spec carries dispatch.Image", False),
    ("NativeRequeue", "not checked at submit", None),
    ("NativeRestart", "not checked at submit", None),
    ("Hold", "not checked at submit", None),
    ("PreTerminationSignal", "not checked at submit", None),
    ("AccountingHistory", "not checked at submit", None),
    ("AttemptInjection", "always", False),
    ("ReadmissionGate", "not checked at submit", None),
    ("WorkingDirectory", "JobSpec.WorkDir is set", False),
    ("ProcsPerNode", "JobSpec.ProcsPerNode > 0", False),
    ("OutputPath", "the spec carries dispatch.Output", False),
    ("OutputRead", "not checked at submit", True),
    ("OutputFollow", "not checked at submit", True),
    ("OutputRetained", "not checked at submit", True),
]


def test_capabilities_lists_all_fourteen_in_the_seed_tables_order():
    """capabilities() lists all fourteen capabilities, in the order of the seed's table."""
    assert [str(c) for c in capabilities()] == [row[0] for row in SEED_CAPABILITY_TABLE]
    assert len(capabilities()) == 14
    assert all(isinstance(c, Capability) for c in capabilities())


@pytest.mark.parametrize(("name", "needed_when", "unknown_may_proceed"), SEED_CAPABILITY_TABLE)
def test_capability_value_is_the_seed_name(name, needed_when, unknown_may_proceed):
    """The string value of each capability is the name in the seed table's first column."""
    capability = Capability(name)
    assert capability == name
    assert capability.value == name
    assert str(capability) == name


@pytest.mark.parametrize(("name", "needed_when", "unknown_may_proceed"), SEED_CAPABILITY_TABLE)
def test_visible_on_failure_only_for_the_three_output_capabilities(
    name, needed_when, unknown_may_proceed
):
    """visible_on_failure is true only for OutputRead, OutputFollow and OutputRetained: the
    rows whose "Unknown may proceed" column says yes."""
    assert Capability(name).visible_on_failure is (unknown_may_proceed is True)


def test_hold_capability_constant():
    """The Hold capability's value is "Hold" (the Go dispatch.HoldCapability)."""
    assert Capability.HOLD == "Hold"
    assert Capability.HOLD is Capability("Hold")


def test_visible_on_failure_set_is_exactly_the_output_capabilities():
    """Exactly three capabilities are visible on failure."""
    visible = {c for c in capabilities() if c.visible_on_failure}
    assert visible == {
        Capability.OUTPUT_READ,
        Capability.OUTPUT_FOLLOW,
        Capability.OUTPUT_RETAINED,
    }


# ---------------------------------------------------------------------------------------------
# Zero values and the three-valued Support
# ---------------------------------------------------------------------------------------------


def test_support_zero_value_is_unknown_and_declared():
    """Support() is the zero value: unknown, declared, no reason."""
    support = Support()
    assert support.value is Tristate.UNKNOWN
    assert support.source is Source.DECLARED
    assert support.reason == ""


def test_tristate_and_source_zero_values():
    """Tristate's default is unknown and Source's default is declared."""
    assert Tristate() is Tristate.UNKNOWN
    assert Source() is Source.DECLARED


def test_rule_support_zero_value_is_an_unknown_perform():
    """RuleSupport() performs unknown: a rule nobody answered cannot be assumed doable."""
    assert RuleSupport().perform == Support()


def test_positional_construction_follows_field_order():
    """Support(value, source, reason) and RuleSupport(perform) may be built by position."""
    support = Support(Tristate.YES, Source.PROBED, "r")
    assert support == Support(value=Tristate.YES, source=Source.PROBED, reason="r")
    assert RuleSupport(support).perform is support
    assert RuleSupport(support) == RuleSupport(perform=support)


def test_positional_construction_refuses_too_many_or_doubled_values():
    """More positional values than fields, or a field given twice, is a TypeError."""
    with pytest.raises(TypeError, match="at most 3"):
        Support(Tristate.YES, Source.PROBED, "r", "extra")
    with pytest.raises(TypeError, match="two values for 'value'"):
        Support(Tristate.YES, value=Tristate.NO)


def test_support_constructors_and_frozenness():
    """Support.yes/no/unknown build the matching value; a Support cannot be changed."""
    assert Support.yes("r").value is Tristate.YES
    assert Support.no("why", Source.CATALOGUE) == Support(Tristate.NO, Source.CATALOGUE, "why")
    assert Support.unknown().value is Tristate.UNKNOWN
    support = Support.yes()
    with pytest.raises(ValidationError):
        support.value = Tristate.NO  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Support(value=Tristate.YES, bogus=1)


# ---------------------------------------------------------------------------------------------
# Enums encode as their text and refuse any other text
# ---------------------------------------------------------------------------------------------

ENUMS = [Capability, Tristate, Source, RuleKind, Enforcer, State, Cause]
MEMBERS = [
    pytest.param(member, id=f"{cls.__name__}.{member.name}") for cls in ENUMS for member in cls
]


@pytest.mark.parametrize("member", MEMBERS)
def test_enum_encodes_as_its_text(member):
    """Every enum member dumps to its text in JSON mode and validates back from it."""
    adapter = TypeAdapter(type(member))
    assert adapter.dump_python(member, mode="json") == member.value
    assert type(adapter.dump_python(member, mode="json")) is str
    assert adapter.validate_python(member.value) is member
    assert adapter.validate_json(f'"{member.value}"') is member


def _variants(member: enum.StrEnum) -> list[str]:
    return sorted(
        {member.value.upper(), member.value.lower(), member.value.swapcase()} - {member.value}
    )


CASE_VARIANTS = [
    pytest.param(type(member), text, id=f"{type(member).__name__}-{text}")
    for cls in ENUMS
    for member in cls
    for text in _variants(member)
] + [
    pytest.param(cls, text, id=f"{cls.__name__}-{text!r}")
    for cls in ENUMS
    for text in ("bogus", "", " yes", "yes ")
]


@pytest.mark.parametrize(("cls", "text"), CASE_VARIANTS)
def test_enum_refuses_unknown_text_naming_accepted_values(cls, text):
    """An unknown text, including a case variant such as "YES", is refused; the error names
    every accepted value."""
    accepted = [member.value for member in cls]
    with pytest.raises(ValueError) as direct:
        cls(text)
    with pytest.raises(ValidationError) as validated:
        TypeAdapter(cls).validate_python(text)
    for error in (direct.value, validated.value):
        message = str(error)
        for value in accepted:
            assert value in message, f"{value!r} missing from {message!r}"


def test_support_refuses_YES_in_a_model():  # noqa: N802
    """Support(value="YES") is refused, naming unknown, yes and no."""
    with pytest.raises(ValidationError, match="'unknown', 'yes' or 'no'"):
        Support(value="YES")


def test_models_dump_enums_as_text_and_round_trip():
    """Support, Rule and a Plan dump their enums as text (including dict keys) and validate
    back to equal values."""
    support = Support(Tristate.YES, Source.PROBED, "r")
    assert support.model_dump(mode="json") == {"value": "yes", "source": "probed", "reason": "r"}
    rule = Rule(kind=RuleKind.RESUBMIT, budget=2, causes=(Cause.NODE_LOST,))
    assert rule.model_dump(mode="json") == {
        "kind": "resubmit",
        "budget": 2,
        "causes": ["node_lost"],
    }
    plan = Plan(
        job=JobID(),
        backend="b",
        spec=JobSpec(command=("true",)),
        policy=Policy(rules=(rule,)),
        capabilities={Capability.HOLD: support},
        unverified=(Capability.OUTPUT_READ,),
        enforcers=(Enforcer.SUPERVISOR,),
    )
    dumped = plan.model_dump(mode="json")
    assert dumped["capabilities"] == {"Hold": {"value": "yes", "source": "probed", "reason": "r"}}
    assert dumped["unverified"] == ["OutputRead"]
    assert dumped["enforcers"] == ["supervisor"]
    assert Plan.model_validate(dumped) == plan
    assert Plan.model_validate_json(plan.model_dump_json()) == plan


# ---------------------------------------------------------------------------------------------
# JobID
# ---------------------------------------------------------------------------------------------

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
VALID_ID = "01JZ8Q2N5V0000000000000000"


def test_job_id_is_26_upper_case_crockford_characters():
    """str(JobID) is the 26-character upper-case ULID."""
    for _ in range(20):
        text = str(JobID())
        assert len(text) == 26
        assert set(text) <= set(CROCKFORD)
        assert JobID.parse(text) == JobID(text)


def test_job_id_discovery_name():
    """discovery_name() is "dj-" followed by the ULID (seed 001, "The name")."""
    job = JobID(VALID_ID)
    assert job.discovery_name() == "dj-01JZ8Q2N5V0000000000000000"
    assert JobID.from_discovery_name(job.discovery_name()) == job


def test_job_ids_are_distinct_and_hashable():
    """Fresh ids differ; equal ids hash alike."""
    a, b = JobID.new(), JobID.new()
    assert a != b
    assert {JobID(str(a)), a} == {a}
    assert a != str(a)


@pytest.mark.parametrize(
    "text",
    [
        VALID_ID.lower(),
        "01jz8q2n5v0000000000000000",
        "01JZ8Q2N5V000000000000000I",  # I, L, O, U are not Crockford base32
        "01JZ8Q2N5V000000000000000L",
        "01JZ8Q2N5V000000000000000O",
        "01JZ8Q2N5V000000000000000U",
        VALID_ID[:-1],  # 25 characters
        VALID_ID + "0",  # 27 characters
        "81JZ8Q2N5V0000000000000000",  # beyond 128 bits
        "",
        " " + VALID_ID,
        VALID_ID + "\n",
        "dj-" + VALID_ID,
    ],
)
def test_job_id_refuses_non_canonical_text(text):
    """Only the canonical 26-character upper-case form is a job id."""
    with pytest.raises(ValueError, match="not a job id"):
        JobID.parse(text)


@pytest.mark.parametrize("name", ["DJ-" + VALID_ID, VALID_ID, "dj-" + VALID_ID.lower(), "dj-"])
def test_from_discovery_name_refuses_anything_but_the_exact_form(name):
    """A discovery name is exactly "dj-" plus the canonical ULID."""
    with pytest.raises(ValueError):
        JobID.from_discovery_name(name)


class _Carrier(BaseModel):
    job: JobID


def test_job_id_round_trips_through_a_pydantic_model():
    """A JobID field dumps as its text and validates back from it (or from a JobID)."""
    job = JobID()
    carrier = _Carrier(job=job)
    assert carrier.model_dump(mode="json") == {"job": str(job)}
    assert _Carrier.model_validate(carrier.model_dump(mode="json")).job == job
    assert _Carrier.model_validate_json(carrier.model_dump_json()).job == job
    assert _Carrier(job=str(job)).job == job
    with pytest.raises(ValidationError, match="not a job id"):
        _Carrier(job=str(job).lower())


# ---------------------------------------------------------------------------------------------
# JobSpec
# ---------------------------------------------------------------------------------------------


def test_job_spec_accepts_a_full_valid_spec():
    """A spec with every field set, and extensions of the core and of another namespace."""
    spec = JobSpec(
        command=("python", "train.py", "--lr=0.1"),
        env={"OMP_NUM_THREADS": "4", "_x1": ""},
        work_dir="/scratch/run",
        nodes=2,
        procs_per_node=8,
        extensions={
            "dispatch.Image": "alpine:3",
            "dispatch.Output": "/out/%j.log",
            "slurm.Partition": "gpu",
            "kube-flow.Runtime2": "torch",
        },
    )
    assert spec.command == ("python", "train.py", "--lr=0.1")
    assert spec.namespace_extensions("slurm") == {"Partition": "gpu"}
    assert spec.namespace_extensions("dispatch") == {"Image": "alpine:3", "Output": "/out/%j.log"}


def test_job_spec_defaults():
    """One node, procs_per_node 0 (not asked), no work_dir, no env, no extensions."""
    spec = JobSpec(command=("true",))
    assert (spec.nodes, spec.procs_per_node, spec.work_dir) == (1, 0, None)
    assert spec.env == {} and spec.extensions == {}


@pytest.mark.parametrize("name", ["DISPATCH_JOB", "DISPATCH_EPOCH", "DISPATCH_", "DISPATCH_X"])
def test_job_spec_refuses_dispatch_env_names(name):
    """User env may not set any DISPATCH_ name: the adapter sets those itself."""
    with pytest.raises(ValidationError, match="reserved"):
        JobSpec(command=("true",), env={name: "1"})


@pytest.mark.parametrize("name", ["", "1A", "A-B", "A B", "A=B"])
def test_job_spec_refuses_malformed_env_names(name):
    """An env name must be a valid environment variable name."""
    with pytest.raises(ValidationError, match="not a valid environment variable name"):
        JobSpec(command=("true",), env={name: "1"})


@pytest.mark.parametrize(
    "key",
    [
        "dispatch",
        ".Image",
        "Dispatch.Image",
        "dispatch.image",
        "dispatch.Image.x",
        "dispatch.",
        "slurm.partition",
        "slurm..Partition",
        " slurm.Partition",
    ],
)
def test_job_spec_refuses_malformed_extension_keys(key):
    """Extension keys are namespace.Name: a lower-case namespace, a dot, a capitalised Name."""
    with pytest.raises(ValidationError, match="malformed"):
        JobSpec(command=("true",), extensions={key: "v"})


def test_job_spec_refuses_unknown_dispatch_extension():
    """The dispatch namespace holds only the core's extensions (Image, Output)."""
    with pytest.raises(ValidationError, match="not a dispatch extension"):
        JobSpec(command=("true",), extensions={"dispatch.Foo": "v"})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nodes", 0),
        ("nodes", -1),
        ("nodes", True),
        ("nodes", "2"),
        ("nodes", 2.0),
        ("procs_per_node", -1),
        ("procs_per_node", True),
        ("procs_per_node", False),
    ],
)
def test_job_spec_refuses_bad_shape(field, value):
    """nodes >= 1 and procs_per_node >= 0, both strict ints (a bool is not a count)."""
    with pytest.raises(ValidationError):
        JobSpec(command=("true",), **{field: value})


@pytest.mark.parametrize("command", [(), [], ("",), ("", "x"), "ls"])
def test_job_spec_refuses_empty_command(command):
    """The command must name a program: no empty command, no empty program, no bare string."""
    with pytest.raises(ValidationError):
        JobSpec(command=command)


@pytest.mark.parametrize(
    "fields",
    [
        {"command": ("a\x00b",)},
        {"command": ("true", "x\x00")},
        {"command": ("true",), "env": {"A": "\x00"}},
        {"command": ("true",), "work_dir": "/tmp/\x00"},
        {"command": ("true",), "extensions": {"slurm.Partition": "g\x00"}},
    ],
)
def test_job_spec_refuses_nul_bytes(fields):
    """No scheduler can carry a NUL byte, so no field may hold one."""
    with pytest.raises(ValidationError, match="NUL"):
        JobSpec(**fields)


def test_job_spec_refuses_empty_work_dir():
    """An empty work_dir is refused; leave it unset to use the scheduler's default."""
    with pytest.raises(ValidationError, match="work_dir is empty"):
        JobSpec(command=("true",), work_dir="")


# ---------------------------------------------------------------------------------------------
# ObjectRef
# ---------------------------------------------------------------------------------------------


def _ref(submit: datetime) -> ObjectRef:
    return ObjectRef(backend="c", uid="dj-" + VALID_ID, id="4242", submit=submit)


def test_object_ref_refuses_naive_datetime():
    """submit must be time-zone aware."""
    with pytest.raises(ValidationError, match="time-zone aware"):
        _ref(datetime(2024, 1, 1, 12, 0, 0))


def test_object_ref_refuses_fractional_seconds():
    """submit is whole seconds, as schedulers record it."""
    with pytest.raises(ValidationError, match="whole seconds"):
        _ref(datetime(2024, 1, 1, 12, 0, 0, 500, tzinfo=UTC))


def test_object_ref_normalises_other_time_zones_to_utc():
    """A submit in another zone is the same instant, stored in UTC."""
    plus_two = timezone(timedelta(hours=2))
    ref = _ref(datetime(2024, 1, 1, 14, 0, 0, tzinfo=plus_two))
    assert ref.submit == datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert ref.submit.utcoffset() == timedelta(0)
    assert ref.submit.hour == 12
    assert ref.submit_epoch == int(datetime(2024, 1, 1, 12, tzinfo=UTC).timestamp())
    assert ObjectRef.model_validate_json(ref.model_dump_json()) == ref


@pytest.mark.parametrize("field", ["backend", "uid", "id"])
def test_object_ref_refuses_empty_parts(field):
    """backend, uid and id are all required and non-empty."""
    fields = {"backend": "c", "uid": "u", "id": "1", "submit": datetime(2024, 1, 1, tzinfo=UTC)}
    fields[field] = ""
    with pytest.raises(ValidationError):
        ObjectRef(**fields)


# ---------------------------------------------------------------------------------------------
# Plan serialization
# ---------------------------------------------------------------------------------------------


def _plan(**fields) -> Plan:
    return Plan(job=JobID(), backend="b", spec=JobSpec(command=("true",)), **fields)


@pytest.mark.parametrize("mode", ["python", "json"])
def test_plan_omits_identity_weakened_when_none(mode):
    """An adapter without IdentityWeakener never weakens identity: the field is absent."""
    plan = _plan()
    assert "identity_weakened" not in plan.model_dump(mode=mode)
    assert "identity_weakened" not in plan.model_dump_json()
    assert Plan.model_validate_json(plan.model_dump_json()).identity_weakened is None


@pytest.mark.parametrize("answer", ["", "allowRankRestart reruns one rank"])
@pytest.mark.parametrize("mode", ["python", "json"])
def test_plan_keeps_identity_weakened_when_a_string(answer, mode):
    """An IdentityWeakener's answer is recorded, even "" (it keeps identity intact)."""
    plan = _plan(identity_weakened=answer)
    assert plan.model_dump(mode=mode)["identity_weakened"] == answer
    assert Plan.model_validate_json(plan.model_dump_json()).identity_weakened == answer
