"""The record values: what each kind accepts and refuses, and the header's view of the plan."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from dispatch_core import Cause, JobID, State
from dispatch_core.identity import EpochBound
from dispatch_core.record import (
    Action,
    HeaderRecord,
    TerminalRecord,
    TransitionRecord,
    tool_version,
)
from dispatch_core.record.store import decode, encode

from .records import SPEC, intent, plan


def test_the_header_holds_the_plans_decisions_and_a_redacted_spec() -> None:
    made = plan()
    head = HeaderRecord.of(made)
    assert (head.backend, head.policy, head.enforcers) == (
        made.backend,
        made.policy,
        made.enforcers,
    )
    assert head.spec.command == SPEC.command and head.spec.redacted is False
    assert head.spec_fingerprint == head.spec.fingerprint()
    assert decode(encode(head)) == head


def test_identity_weakened_is_absent_from_the_header_unless_the_adapter_said_why() -> None:
    assert "identity_weakened" not in json.loads(encode(HeaderRecord.of(plan())))
    weakened = plan().model_copy(update={"identity_weakened": "allowRankRestart"})
    head = HeaderRecord.of(weakened)
    assert json.loads(encode(head))["identity_weakened"] == "allowRankRestart"
    assert decode(encode(head)) == head
    empty = plan().model_copy(update={"identity_weakened": ""})  # asked, and kept it
    assert json.loads(encode(HeaderRecord.of(empty)))["identity_weakened"] == ""


@pytest.mark.parametrize("number", [0, EpochBound, True, "1"])
def test_submission_and_attempt_numbers_are_ints_from_1_below_the_epoch_bound(
    number: object,
) -> None:
    job = JobID()
    with pytest.raises(ValidationError):
        intent(job, submission=number)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        intent(job, attempt=number)  # type: ignore[arg-type]
    assert intent(job, EpochBound - 1, EpochBound - 1).submission == EpochBound - 1


def test_an_image_digest_is_an_algorithm_and_hex() -> None:
    good = intent(JobID())
    assert good.image_digest is not None
    with pytest.raises(ValidationError):
        good.model_validate({**good.model_dump(), "image_digest": "latest"})


def test_a_terminal_record_is_an_ended_state_and_a_failure_names_its_cause() -> None:
    with pytest.raises(ValidationError, match="ended"):
        TerminalRecord(state=State.RUNNING)
    with pytest.raises(ValidationError, match="cause"):
        TerminalRecord(state=State.FAILED)
    with pytest.raises(ValidationError, match="no cause"):
        TerminalRecord(state=State.SUCCEEDED, cause=Cause.EXIT_CODE)
    assert (
        TerminalRecord(state=State.FAILED, cause=Cause.EVIDENCE_LOST).cause is Cause.EVIDENCE_LOST
    )
    assert TerminalRecord(state=State.CANCELLED, cause=Cause.CANCELLED).state.ended


def test_a_transitions_backoff_is_a_finite_time() -> None:
    with pytest.raises(ValidationError):
        TransitionRecord(action=Action.RESUBMIT, state=State.FAILED, not_before=float("inf"))


def test_a_record_refuses_unknown_fields_and_kinds() -> None:
    with pytest.raises(ValidationError):
        decode('{"kind": "terminal", "state": "succeeded", "surprise": 1}')
    with pytest.raises(ValidationError):
        decode('{"kind": "gossip"}')


def test_tool_version_is_the_installed_kits() -> None:
    assert tool_version() not in ("", "unknown")
