"""The runner's contract with a harness: declared needs are met (or the check skipped) before
any backend is made, ``begin`` and ``end`` bracket every check once, the cleanup tracker undoes
what a check made (last first) and reports a failed undo as the check's error, and
``xfail_on`` is strict per harness."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest

from adapters.memory import MemoryBackend
from conformance.checks import Check, Context, Needs, Outcome, Tier, run_check
from conformance.harness import (
    Fault,
    Harness,
    IdentityModel,
    Listed,
    LookAlike,
    Lookup,
    Probe,
    look_alike_need,
)
from conformance.powers import ObservesExecutions, Purges
from dispatch_core import Capability, Clock, Holder, ObjectRef, VirtualClock

LABELLED = IdentityModel(
    lookup=Lookup.LABEL, reuses_ids=False, requeue_moves_submit=False, history_outlives_live=False
)


class Toy(Harness[MemoryBackend]):
    """A harness that records every call the runner makes into it."""

    name = "toy"
    identity = LABELLED

    def __init__(self, end_raises: bool = False) -> None:
        self.end_raises = end_raises
        self.calls: list[str] = []

    def begin(self, check_id: str) -> None:
        self.calls.append(f"begin {check_id}")

    def end(self, check_id: str) -> None:
        self.calls.append(f"end {check_id}")
        if self.end_raises:
            raise RuntimeError("the scratch namespace would not delete")

    def new_backend(self) -> MemoryBackend:
        self.calls.append("new_backend")
        return MemoryBackend("kubeflow", clock=VirtualClock())

    def reopen(self, backend: MemoryBackend) -> MemoryBackend:
        return backend.reopen()

    def clock(self, backend: MemoryBackend) -> Clock:
        return backend.cluster.clock

    def listing(self, backend: MemoryBackend) -> Mapping[str, Listed]:
        return {}


class Offering(Toy, Purges[MemoryBackend], ObservesExecutions[MemoryBackend]):
    """The toy, offering purge and executions by implementing their protocols."""

    def purge(self, backend: MemoryBackend, ref: ObjectRef) -> None:
        backend.cluster.purge(ref.id)

    def executions(
        self, backend: MemoryBackend, ref: ObjectRef
    ) -> Sequence[Sequence[Mapping[str, str]]]:
        return []


def a_check(
    func: Callable[[Context], None],
    needs: Needs | None = None,
    xfail_on: dict[str, str] | None = None,
) -> Check:
    return Check(
        "TEST-001",
        "a rule",
        "a clause",
        "test",
        Tier.STANDARD,
        func,
        needs or Needs(),
        xfail_on or {},
    )


def uses_the_backend(ctx: Context) -> None:
    ctx.backend.capabilities(None)


@pytest.mark.parametrize(
    "needs",
    [
        Needs(faults=(Fault.PURGE,)),
        Needs(faults=(look_alike_need(LookAlike.COMMA_LIST),)),
        Needs(probes=(Probe.HOST_PATHS,)),
        Needs(identity=("reuses_ids",)),
    ],
)
def test_a_lacking_need_skips_before_any_backend_is_made(needs: Needs) -> None:
    harness = Toy()
    result = run_check(a_check(uses_the_backend, needs), harness)
    assert result.outcome is Outcome.SKIPPED
    assert harness.calls == []  # not even begin: nothing was made for the check
    assert result.reason  # says what is lacking


def test_the_lacking_reason_is_the_harness_s() -> None:
    class Says(Toy):
        def declines(self, need: str) -> str | None:
            return "a label value holds no comma"

    result = run_check(a_check(uses_the_backend, Needs(faults=("lose_node",))), Says())
    assert result.reason == (
        "harness offers no lose_node (a label value holds no comma): implement "
        "conformance.powers.LosesNodes to offer it"
    )


def test_identity_needs_name_the_flag() -> None:
    result = run_check(a_check(uses_the_backend, Needs(identity=("reuses_ids",))), Toy())
    assert "reuses_ids" in result.reason


def test_offered_needs_run_the_check_between_begin_and_end() -> None:
    harness = Offering()
    needs = Needs(faults=(Fault.PURGE,), probes=(Probe.EXECUTIONS,))
    result = run_check(a_check(uses_the_backend, needs), harness)
    assert result.outcome is Outcome.PASSED, result.reason
    assert harness.calls == ["begin TEST-001", "new_backend", "end TEST-001"]


def test_a_capability_need_asks_the_backend_and_skips_with_the_adapter_s_reason() -> None:
    # The kubeflow shape of the memory adapter declares OutputRetained no.
    harness = Toy()
    result = run_check(
        a_check(uses_the_backend, Needs(capabilities=(Capability.OUTPUT_RETAINED,))), harness
    )
    assert result.outcome is Outcome.SKIPPED
    assert result.reason.startswith("adapter declares OutputRetained no")
    assert harness.calls == ["begin TEST-001", "new_backend", "end TEST-001"]


def test_an_interface_need_skips_an_adapter_without_it() -> None:
    class NotAHolder(Toy):
        def new_backend(self) -> MemoryBackend:
            backend = super().new_backend()
            return backend

    result = run_check(a_check(uses_the_backend, Needs(interfaces=(Holder,))), NotAHolder())
    assert result.outcome is Outcome.PASSED  # the memory adapter is a Holder

    class Plain:
        """Not a Holder."""

    result = run_check(a_check(uses_the_backend, Needs(interfaces=(Plain,))), Toy())
    assert result.outcome is Outcome.SKIPPED
    assert result.reason.startswith("adapter implements no Plain")


def test_cleanups_run_last_first_and_a_failed_one_is_the_check_s_error() -> None:
    undone: list[str] = []

    def tracks(ctx: Context) -> None:
        ctx.track("first", lambda: undone.append("first"))

        def fails() -> None:
            undone.append("second")
            raise OSError("the namespace is terminating")

        ctx.track("second", fails)
        ctx.track("third", lambda: undone.append("third"))

    result = run_check(a_check(tracks), Toy())
    assert undone == ["third", "second", "first"]
    assert result.outcome is Outcome.ERROR
    assert "cleanup failed after the check passed" in result.reason
    assert "second raised OSError: the namespace is terminating" in result.reason


def test_a_failed_cleanup_after_a_failure_keeps_the_failure() -> None:
    def fails(ctx: Context) -> None:
        ctx.track("undo", lambda: (_ for _ in ()).throw(OSError("gone")))
        ctx.fail("the adapter did something wrong")

    result = run_check(a_check(fails), Toy())
    assert result.outcome is Outcome.FAILED
    assert "the adapter did something wrong" in result.reason
    assert "cleanup failed too: undo raised OSError: gone" in result.reason


def test_an_end_that_raises_is_the_check_s_error() -> None:
    harness = Toy(end_raises=True)
    result = run_check(a_check(uses_the_backend), harness)
    assert result.outcome is Outcome.ERROR
    assert "end(TEST-001) raised RuntimeError: the scratch namespace would not delete" in (
        result.reason
    )
    assert harness.calls[-1] == "end TEST-001"


def test_started_objects_are_stopped_when_the_check_ends() -> None:
    seen: list[MemoryBackend] = []

    def starts(ctx: Context) -> None:
        ctx.start()
        assert isinstance(ctx.backend, MemoryBackend)
        seen.append(ctx.backend)

    result = run_check(a_check(starts), Toy())
    assert result.outcome is Outcome.PASSED, result.reason
    [backend] = seen
    assert all(job.state.ended for job in backend.cluster.jobs.values())


def test_xfail_on_is_strict_and_per_harness() -> None:
    def fails(ctx: Context) -> None:
        ctx.fail("known bug")

    expected = a_check(fails, xfail_on={"toy": "the toy scheduler is known to lose it"})
    result = run_check(expected, Toy())
    assert result.outcome is Outcome.SKIPPED
    assert result.reason == "expected failure: the toy scheduler is known to lose it"
    passes = a_check(uses_the_backend, xfail_on={"toy": "known"})
    result = run_check(passes, Toy())
    assert result.outcome is Outcome.FAILED
    assert "strict expected failure" in result.reason
    other = a_check(fails, xfail_on={"another": "known there"})
    assert run_check(other, Toy()).outcome is Outcome.FAILED


def test_a_harness_without_an_identity_model_is_an_error() -> None:
    class Undeclared(Harness[MemoryBackend]):
        name = "undeclared"

        def new_backend(self) -> MemoryBackend:
            raise AssertionError("no backend is made for a harness that declares no model")

        def reopen(self, backend: MemoryBackend) -> MemoryBackend:
            return backend

        def clock(self, backend: MemoryBackend) -> Clock:
            return backend.cluster.clock

        def listing(self, backend: MemoryBackend) -> Mapping[str, Listed]:
            return {}

    result = run_check(a_check(uses_the_backend), Undeclared())
    assert result.outcome is Outcome.ERROR
    assert "declares no identity model" in result.reason


def test_unknown_needs_are_refused_at_registration() -> None:
    with pytest.raises(ValueError, match="unknown fault need"):
        Needs(faults=("lose_comments",))
    with pytest.raises(ValueError, match="unknown identity need"):
        Needs(identity=("uses_comments",))
