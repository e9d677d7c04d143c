"""Causes (``CAUSE-``): an object's failure, or its return to the queue, is told with its cause,
never collapsed into a bare exit code and never one cause for another: a preemption, a node's
eviction and an administrator's requeue each read as what they are (DESIGN §4, Observations)."""

from __future__ import annotations

from typing import Final

from conformance.checks import CheckFailed, Context, Needs, check
from conformance.harness import Fault, Probe
from conformance.steps import long_spec, look, run, runs_again
from conformance.suites.capability import declared_yes
from dispatch_core import (
    Capability,
    Cause,
    DispatchError,
    ObjectRef,
    Observation,
    Rejected,
    State,
    Unsupported,
)
from dispatch_core.clock import pause

CAUSES_CLAUSE: Final = (
    "DESIGN §4, Observations: a failure is never collapsed into a bare failed without its cause"
)
TOLD_WITHIN: Final = 300
"""Seconds of the clock a check waits, one look a second, for open to tell what happened to an
object a fault hit (a requeue passes through a stop: Kubernetes suspends, then deletes pods)."""
WATCHED: Final = 30
"""Seconds of the clock a check watches an object a fault put back in the queue, one look a
second, before it lets it run again."""


@check("CAUSE-001", clause=CAUSES_CLAUSE, needs=Needs(faults=(Fault.LET_RUN, Fault.OOM_KILL)))
def killed_for_memory(ctx: Context) -> None:
    """An execution killed for its memory shows cause out_of_memory, not its exit code."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.oom_kill(ref)
    seen = look(ctx, ref, "after its processes were killed for their memory")
    ctx.expect(
        seen.cause is Cause.OUT_OF_MEMORY,
        f"open showed {ref.id} {seen.state.value} with cause {seen.cause.value} (exit code "
        f"{seen.exit_code}) after the scheduler killed it for its memory: not out_of_memory",
    )
    ctx.expect(
        seen.state in (State.FAILED, State.QUEUED, State.RUNNING),
        f"open showed {ref.id} {seen.state.value} after it was killed for its memory",
    )


FAILING_EXIT: Final = 42
"""The exit code of CAUSE-008's failing command: neither 1 nor a signal's 128+n."""


@check("CAUSE-008", clause=CAUSES_CLAUSE, needs=Needs(faults=(Fault.LET_RUN, Fault.FINISH)))
def exit_code_is_told(ctx: Context) -> None:
    """A command that exits N ends its object failed, cause exit_code; one that exits 0, succeeded.

    Two jobs run, and their commands exit: one :data:`FAILING_EXIT`, one 0. Once open shows
    each ended, the first is failed with cause exit_code and exit code 42 (or none, where the
    target does not tell it: what cannot be told is unknown; squeue shows no exit code), and the
    second succeeded with exit code 0 or none."""
    refs = []
    for code in (FAILING_EXIT, 0):
        ref = ctx.start(ctx.plan(long_spec(ctx)))
        run(ctx, ref)
        refs.append((ref, code))
    for ref, code in refs:
        ctx.faults.finish(ref, code)
        seen = told(ctx, ref, f"after its command exited {code}")
        if code:
            ctx.expect(
                (seen.state, seen.cause) == (State.FAILED, Cause.EXIT_CODE)
                and seen.exit_code in (code, None),
                f"open showed {ref.id}, whose command exited {code}, {seen.state.value} with "
                f"cause {seen.cause.value} and exit code {seen.exit_code}: not failed, "
                f"exit_code, {code}",
            )
        else:
            ctx.expect(
                seen.state is State.SUCCEEDED and seen.exit_code in (0, None),
                f"open showed {ref.id}, whose command exited 0, {seen.state.value} with cause "
                f"{seen.cause.value} and exit code {seen.exit_code}: not succeeded",
            )


def told(ctx: Context, ref: ObjectRef, after: str) -> Observation:
    """Look once a second until open tells what ``after`` did to the object: it ended, or it
    left running with a cause (a stop on the way may show it queued with none)."""
    seen = look(ctx, ref, after)
    for _ in range(TOLD_WITHIN):
        if seen.state.ended or (seen.state is not State.RUNNING and seen.cause is not Cause.NONE):
            return seen
        pause(ctx.clock, 1.0)
        seen = look(ctx, ref, after)
    raise CheckFailed(
        f"open showed {ref.id} {seen.state.value} with cause {seen.cause.value} for "
        f"{TOLD_WITHIN} s {after}: it never told what happened to it"
    )


def watch(ctx: Context, ref: ObjectRef, when: str) -> list[Observation]:
    """One look a second for :data:`WATCHED` seconds of the clock, until the object ends or
    runs again (after a look that showed it not running)."""
    seen: list[Observation] = []
    left = False
    for _ in range(WATCHED):
        pause(ctx.clock, 1.0)
        now = look(ctx, ref, when)
        seen.append(now)
        left = left or now.state is not State.RUNNING
        if now.state.ended or (left and now.state is State.RUNNING):
            break
    return seen


@check("CAUSE-002", clause=CAUSES_CLAUSE, needs=Needs(faults=(Fault.LET_RUN, Fault.PREEMPT)))
def preempted_shows_preempted(ctx: Context) -> None:
    """A preempted object shows cause preempted before it runs again, never another cause.

    Requeued, it shows queued (or held) with cause preempted until it runs again; ended, it
    failed preempted, or evidence_lost where the scheduler deleted what told it (Kubernetes
    deletes a preempted pod). A stop on the way may show it with no cause."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.preempt(ref)
    when = "after the scheduler preempted it"
    seen = told(ctx, ref, when)
    if seen.state.ended:
        ctx.expect(
            seen.state is State.FAILED and seen.cause in (Cause.PREEMPTED, Cause.EVIDENCE_LOST),
            f"open showed {ref.id} {seen.state.value} with cause {seen.cause.value} {when}: "
            "not failed, preempted",
        )
    else:
        for shown in [seen, *watch(ctx, ref, f"{when}, before it ran again")]:
            ctx.expect(
                shown.state is State.RUNNING or shown.cause is Cause.PREEMPTED,
                f"open showed {ref.id} {shown.state.value} with cause {shown.cause.value} "
                f"{when} and before it ran again: not preempted",
            )
        runs_again(ctx, ref, when)


@check(
    "CAUSE-003",
    clause=CAUSES_CLAUSE,
    needs=Needs(faults=(Fault.LET_RUN, Fault.REQUEUE_UNDERNEATH)),
)
def requeued_by_an_administrator(ctx: Context) -> None:
    """An object requeued by an administrator never shows cause preempted."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.requeue_underneath(ref, in_flight=True)
    when = "after an administrator requeued it"
    seen = [look(ctx, ref, "while an administrator's requeue of it is under way")]
    seen += watch(ctx, ref, when)
    runs_again(ctx, ref, when)
    seen.append(look(ctx, ref, f"once it ran again {when}"))
    for shown in seen:
        ctx.expect(
            shown.cause is not Cause.PREEMPTED,
            f"open showed {ref.id} {shown.state.value} with cause preempted {when}: no "
            "scheduler preempted it",
        )


@check("CAUSE-004", clause=CAUSES_CLAUSE, needs=Needs(faults=(Fault.LET_RUN, Fault.EVICT)))
def evicted_by_its_node(ctx: Context) -> None:
    """An execution its node evicts shows cause evicted, never preempted."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.evict(ref)
    when = "after its node evicted it (for the node's sake: no scheduler preempted it)"
    seen = look(ctx, ref, when)
    ctx.expect(
        seen.cause is Cause.EVICTED,
        f"open showed {ref.id} {seen.state.value} with cause {seen.cause.value} {when}: not "
        "evicted",
    )
    ctx.expect(
        seen.state in (State.FAILED, State.QUEUED, State.RUNNING),
        f"open showed {ref.id} {seen.state.value} {when}",
    )


WAITING_CLAUSE: Final = (
    "DESIGN §4, Two budgets: a failure before the execution started (image pull, "
    "unschedulable) is told while it is queued, apart from a wait for capacity"
)


@check("CAUSE-005", clause=WAITING_CLAUSE, needs=Needs(probes=(Probe.BEYOND_CAPACITY,)))
def beyond_capacity_is_unschedulable(ctx: Context) -> None:
    """A job the target could never run is refused, or shows queued with cause unschedulable.

    It asks for more than the target has: start refuses it (Rejected or Unsupported), or, the
    scheduling time after its start, open shows it queued, unschedulable (the supervisor's
    signal that waiting will not help)."""
    plan = ctx.plan(ctx.beyond_capacity_spec(long_spec(ctx)))
    try:
        ref = ctx.backend.start(plan, 1, 1)
    except (Rejected, Unsupported):
        return
    except DispatchError as error:
        raise CheckFailed(
            f"start of a job asking for more than the target has raised "
            f"{type(error).__name__} ({error}): it is refused (Rejected, Unsupported) or queued"
        ) from None
    ctx.track(f"stop {ref.id}", lambda: ctx.backend.stop(ref))
    pause(ctx.clock, ctx.harness.schedule_within)
    seen = look(ctx, ref, "the scheduling time after its start")
    ctx.expect(
        (seen.state, seen.cause) == (State.QUEUED, Cause.UNSCHEDULABLE),
        f"open showed {ref.id}, which asks for more than the target could ever give it, "
        f"{seen.state.value} with cause {seen.cause.value} the scheduling time after its "
        "start: not queued, unschedulable",
    )


@check(
    "CAUSE-006",
    clause=WAITING_CLAUSE,
    needs=Needs(faults=(Fault.TAKE_QUOTA, Fault.LET_RUN)),
)
def waiting_for_quota_is_no_capacity(ctx: Context) -> None:
    """A job waiting for quota others hold shows queued, no_capacity, and runs once it is free.

    Another user's work holds the quota the job draws from when it starts: the scheduling
    time after, open shows it queued with cause no_capacity (not unschedulable: waiting
    helps); once the quota is given back it runs."""
    ctx.faults.take_quota()
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    pause(ctx.clock, ctx.harness.schedule_within)
    seen = look(ctx, ref, "while another user's work held the quota it draws from")
    ctx.expect(
        (seen.state, seen.cause) == (State.QUEUED, Cause.NO_CAPACITY),
        f"open showed {ref.id} {seen.state.value} with cause {seen.cause.value} while another "
        "user's work held the quota it draws from: not queued, no_capacity",
    )
    ctx.faults.give_quota_back()
    run(ctx, ref)
    seen = look(ctx, ref, "once the quota was given back and it ran")
    ctx.expect(
        seen.state is State.RUNNING,
        f"open showed {ref.id} {seen.state.value} (cause {seen.cause.value}) once the quota "
        "was given back and the scheduler ran it",
    )


@check("CAUSE-007", clause=WAITING_CLAUSE, needs=Needs(probes=(Probe.UNPULLABLE_IMAGE,)))
def unpullable_image_is_image_pull(ctx: Context) -> None:
    """A job whose image can never be pulled shows queued, image_pull, and stays so.

    Its image is on a registry that cannot exist: once open tells why it has not started, it
    shows queued with cause image_pull (a failure before its execution started, told apart
    from a wait for capacity), and so at every look for :data:`WATCHED` seconds more: nothing
    upstream ends such a job by itself (kubeflow-facts §8.5)."""
    spec = ctx.unpullable_image_spec(long_spec(ctx))
    declared_yes(ctx, spec, Capability.CONTAINER_IMAGE)
    ref = ctx.start(ctx.plan(spec))
    when = "while its image could not be pulled"
    seen = told(ctx, ref, when)
    ctx.expect(
        (seen.state, seen.cause) == (State.QUEUED, Cause.IMAGE_PULL),
        f"open showed {ref.id}, whose image no registry has, {seen.state.value} with cause "
        f"{seen.cause.value}: not queued, image_pull",
    )
    for later in watch(ctx, ref, when):
        ctx.expect(
            (later.state, later.cause) == (State.QUEUED, Cause.IMAGE_PULL),
            f"open showed {ref.id}, whose image no registry has, {later.state.value} with cause "
            f"{later.cause.value} after it had shown queued, image_pull: nothing pulls it later",
        )


__all__ = [
    "beyond_capacity_is_unschedulable",
    "evicted_by_its_node",
    "exit_code_is_told",
    "killed_for_memory",
    "preempted_shows_preempted",
    "requeued_by_an_administrator",
    "told",
    "unpullable_image_is_image_pull",
    "waiting_for_quota_is_no_capacity",
    "watch",
]
