"""Records to append in tests: one of each kind, for a job with a minimal plan."""

from __future__ import annotations

from datetime import UTC, datetime

from dispatch_core import (
    Cause,
    Enforcer,
    JobID,
    JobSpec,
    ObjectRef,
    Observation,
    Plan,
    Policy,
    Rule,
    RuleKind,
    State,
)
from dispatch_core.record import (
    Action,
    HeaderRecord,
    IntentRecord,
    ObservationRecord,
    ObservedRecord,
    TerminalRecord,
    TransitionRecord,
    spec_fingerprint,
)

SPEC = JobSpec(command=("train", "--epochs", "3"), env={"SEED": "7"}, nodes=2)
CLUSTER = "test-cluster"
SUBMIT = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def plan(job: JobID | None = None) -> Plan:
    return Plan(
        job=job or JobID(),
        backend=CLUSTER,
        spec=SPEC,
        policy=Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=2),)),
        enforcers=(Enforcer.SUPERVISOR,),
    )


def header(job: JobID) -> HeaderRecord:
    return HeaderRecord.of(plan(job))


def intent(job: JobID, submission: int = 1, attempt: int = 1) -> IntentRecord:
    return IntentRecord(
        submission=submission,
        attempt=attempt,
        spec_fingerprint=spec_fingerprint(SPEC),
        adapter="memory",
        cluster=CLUSTER,
        tool_version="0.1.0",
        image_digest="sha256:" + "ab" * 32,
        object_name=job.discovery_name(),
    )


def ref(job: JobID, submission: int = 1) -> ObjectRef:
    return ObjectRef(
        backend=CLUSTER, uid=job.discovery_name(), id=str(4000 + submission), submit=SUBMIT
    )


def observed(job: JobID, submission: int = 1) -> ObservedRecord:
    return ObservedRecord(submission=submission, ref=ref(job, submission), host="node-1")


def observation(job: JobID, state: State = State.RUNNING, detail: str = "") -> ObservationRecord:
    return ObservationRecord(
        observation=Observation(
            ref=ref(job), state=state, submission=1, attempt=1, restart_count=0, detail=detail
        )
    )


def transition(detail: str = "") -> TransitionRecord:
    return TransitionRecord(
        action=Action.RESUBMIT,
        state=State.FAILED,
        cause=Cause.NODE_LOST,
        submission=1,
        attempt=1,
        rule=0,
        not_before=1_767_225_700.0,
        detail=detail,
    )


def terminal(state: State = State.SUCCEEDED, cause: Cause = Cause.NONE) -> TerminalRecord:
    return TerminalRecord(state=state, cause=cause, submission=1, attempt=1)
