"""Observation (``OBS-``): the adapter's answers held to what the scheduler itself shows.

Each check here needs no fault: it reads the harness's listing (:meth:`Harness.listing`, the
oracle: which of the user's objects the scheduler's live view holds and in what state, read
without the adapter) around the adapter's calls, so that a rule is checked on every harness
that can list, not only on those that can inject. A listing is judged only where it is steady
around the adapter's answer (the same before and after it), so a scheduler that moves on its
own between two reads never makes a check fail."""

from __future__ import annotations

from functools import partial
from typing import Final

from conformance.checks import CheckFailed, Context, Needs, check
from conformance.harness import (
    LOOK_ALIKES_HELD,
    Fault,
    Listed,
    LookAlike,
    Shown,
    look_alike_need,
)
from conformance.steps import (
    call,
    found,
    long_spec,
    look,
    run,
    stop,
    taken_by_a_requeued_case_variant,
)
from conformance.suites.clauses import SEED_001
from conformance.suites.identity import LOST_START_FORMS, injected, offered_look_alikes
from dispatch_core import DispatchError, JobID, NotFound, ObjectRef, Observation, State
from dispatch_core.clock import pause

STOP_CLAUSE: Final = f"{SEED_001}, The identity check: Stop also checks that the job ended"
SHOWN: Final = {
    State.QUEUED: Shown.PENDING,
    State.HELD: Shown.PENDING,
    State.RUNNING: Shown.RUNNING,
    State.SUCCEEDED: Shown.ENDED,
    State.FAILED: Shown.ENDED,
    State.CANCELLED: Shown.ENDED,
}
"""What the scheduler's listing shows of an object open answers in each state (unknown: no
claim to hold it to)."""


def listed(ctx: Context, ref: ObjectRef) -> Listed | None:
    """The ref's object in the scheduler's own listing (None: its live view has it no more)."""
    return ctx.listing().get(ref.id)


def of_job(ctx: Context, job: JobID) -> list[str]:
    """The objects whose key names ``job``, in the scheduler's own listing."""
    return sorted(native for native, seen in ctx.listing().items() if seen.job == str(job))


def ended_by_the_scheduler(ctx: Context, ref: ObjectRef, what: str) -> None:
    seen = listed(ctx, ref)
    ctx.expect(
        seen is None or seen.state is Shown.ENDED,
        f"{what} returned, but the scheduler's own listing shows {ref.id} "
        f"{seen.state.value if seen else 'gone'}: the object has not ended",
    )


@check("OBS-001", clause=STOP_CLAUSE)
def stop_ends_it_by_the_scheduler(ctx: Context) -> None:
    """stop returns only once the scheduler's own listing shows the object ended, or gone."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    stop(ctx, ref)
    ended_by_the_scheduler(ctx, ref, f"stop({ref.id})")
    stop(ctx, ref, "again")
    ended_by_the_scheduler(ctx, ref, f"a second stop({ref.id})")


HELD_TEARDOWN_LOOKS: Final = 30
"""Seconds of the clock OBS-007 looks at a stopped object, one look a second, while its run's
teardown is held."""


@check("OBS-007", clause=STOP_CLAUSE, needs=Needs(faults=(Fault.LET_RUN, Fault.STALL_TEARDOWN)))
def stop_ends_it_while_its_teardown_is_held(ctx: Context) -> None:
    """A stop ends the object even while another controller holds its run's teardown.

    The running object's teardown is held (a finalizer nobody removes, as a controller that is
    down leaves it): stop returns, and until the teardown is let go open shows the object
    cancelled at every look for :data:`HELD_TEARDOWN_LOOKS` seconds, never running or queued:
    nothing of it runs again."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.stall_teardown(ref)
    try:
        stop(ctx, ref, "while its teardown is held")
        for _ in range(HELD_TEARDOWN_LOOKS):
            seen = look(ctx, ref, "after its stop, while its teardown is held")
            ctx.expect(
                seen.state is State.CANCELLED,
                f"open showed {ref.id} {seen.state.value} (cause {seen.cause.value}) after "
                "its stop returned, while its run's teardown was held: not cancelled",
            )
            pause(ctx.clock, 1.0)
    finally:
        ctx.faults.end_stall(ref)


def agrees(ctx: Context, ref: ObjectRef, when: str) -> Shown | None:
    """open's state against the listing read just before and just after it: where the two
    readings agree, open must show the same (NotFound only for an object the listing no
    longer holds). The steady state, or None."""
    before = listed(ctx, ref)
    try:
        seen: Observation | None = ctx.backend.open(ref)
    except NotFound as error:
        seen, gone = None, error
    except DispatchError as error:
        raise CheckFailed(
            f"open({ref.id}) {when} raised {type(error).__name__} ({error})"
        ) from None
    after = listed(ctx, ref)
    if seen is None:
        if before is not None and after is not None:
            ctx.fail(
                f"open({ref.id}) {when} raised NotFound ({gone}), while the scheduler's own "
                f"listing shows it {after.state.value}"
            )
        return None
    if before is None or after is None or before.state is not after.state:
        return None
    claimed = SHOWN.get(seen.state)
    ctx.expect(
        claimed is None or claimed is before.state,
        f"open({ref.id}) {when} showed it {seen.state.value}, while the scheduler's own listing "
        f"showed it {before.state.value} just before and just after",
    )
    return before.state


@check(
    "OBS-002",
    clause="DESIGN §4, Observations: a coarse state; what cannot be told is unknown",
)
def open_agrees_with_the_scheduler(ctx: Context) -> None:
    """open's state is the scheduler's own: pending as pending, running as running, ended too."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    agrees(ctx, ref, "right after its start")
    pause(ctx.clock, ctx.harness.schedule_within)  # the scheduler may start it meanwhile
    agrees(ctx, ref, f"{ctx.harness.schedule_within:.0f} s after its start")
    stop(ctx, ref)
    agrees(ctx, ref, "after its stop")


@check(
    "OBS-003",
    clause=f"{SEED_001}, The name: Find asks for your jobs with that name, in any state",
)
def find_keeps_what_the_scheduler_lists(ctx: Context) -> None:
    """find reports every object of the job that the scheduler's own listing holds, ended too."""
    plan = ctx.plan(long_spec(ctx))
    ended = ctx.start(plan, submission=1, attempt=1)
    stop(ctx, ended, "of submission 1")
    live = ctx.start(plan, submission=2, attempt=1)
    listing = ctx.listing()
    seen = found(ctx, plan.job, "with submission 1 stopped and submission 2 started")
    mine = sorted(native for native, entry in listing.items() if entry.job == str(plan.job))
    after = ctx.listing()
    # Held to what the listing shows steadily around find: the stopped object is among it
    # where the scheduler keeps ended objects in its live view (Slurm, for MinJobAge).
    steady = [n for n in mine if n in after and after[n].state is listing[n].state]
    missing = [n for n in steady if n not in seen]
    ctx.expect(
        not missing,
        f"find left out {missing}, which the scheduler's own listing shows as the job's "
        f"({', '.join(f'{n}: {listing[n].state.value}' for n in steady)}; submission 1 is "
        f"{ended.id}, submission 2 {live.id})",
    )


@check(
    "OBS-004",
    clause="DESIGN §12, Idempotent on (job, submission)",
)
def one_object_per_submission_by_the_scheduler(ctx: Context) -> None:
    """Starting a submission again, or from a reopened adapter, makes no second object of it."""
    plan = ctx.plan(long_spec(ctx))
    first = ctx.start(plan, submission=1, attempt=1)
    call(ctx, "a second start of submission 1", lambda: ctx.backend.start(plan, 1, 1))
    reopened = ctx.reopen()
    call(ctx, "start of submission 1 by a reopened adapter", lambda: reopened.start(plan, 1, 1))
    second = ctx.start(plan, submission=2, attempt=1)
    objects = of_job(ctx, plan.job)
    ctx.expect(
        objects == sorted({first.id, second.id}),
        f"the scheduler's own listing shows objects {objects} for the job after submission 1 "
        f"was started three times ({first.id}) and submission 2 once ({second.id})",
    )


@check(
    "OBS-005",
    clause=f"{SEED_001}, The identity check: ids are reused; the name is compared exactly",
    needs=Needs(
        faults=(
            Fault.REUSE_ID_NEXT,
            Fault.REQUEUE_UNDERNEATH,
            look_alike_need(LookAlike.CASE_VARIANT),
        ),
        identity=("reuses_ids",),
    ),
)
def stop_spares_a_requeued_case_variant(ctx: Context) -> None:
    """stop through a ref whose id a requeued case variant now holds leaves that object alone."""
    stale = taken_by_a_requeued_case_variant(ctx, ctx.plan(long_spec(ctx)))
    form = ctx.faults.describe_look_alike(LookAlike.CASE_VARIANT)
    before = listed(ctx, stale)
    stop(ctx, stale, "through the stale ref")
    after = listed(ctx, stale)
    was, now = (seen.state.value if seen else "gone" for seen in (before, after))
    ctx.expect(
        before is not None and after is not None and after.state is not Shown.ENDED,
        f"stop({stale.id}) through the stale ref ended the look-alike ({form}, requeued) that "
        f"now holds the id: the scheduler's own listing showed it {was}, then {now}",
    )


def _none_pending(made: int) -> None:
    raise RuntimeError(
        f"the harness's listing shows none of the {made} look-alikes it made pending, though "
        f"it offers {LOOK_ALIKES_HELD} (its look-alikes wait until someone acts on them)"
    )


@check(
    "OBS-006",
    clause=(
        f"{SEED_001}, The comment: a foreign object is reported and never used; DESIGN §9: no "
        "write lands on an object whose identity check failed"
    ),
    needs=Needs(faults=(LOOK_ALIKES_HELD,)),
)
def look_alikes_stay_held(ctx: Context) -> None:
    """Look-alikes kept from running stay so while the adapter runs a job of theirs.

    One form of every look-alike kind the harness makes of the job's objects, each held or
    queued (with Kueue, on the job's queue, where the readmission gate judges it): the
    scheduler's own listing shows each still pending after the job's start, a wait of the
    scheduling time and its stop. Nothing of the adapter's (its calls, its gate) admitted,
    released or ran one."""
    kinds = offered_look_alikes(ctx)
    plan = ctx.plan(long_spec(ctx))
    made: dict[str, str] = {}
    for kind in kinds:
        for native, form in injected(ctx, plan.job, kind, ctx.job_id(), LOST_START_FORMS).items():
            made[native] = f"the {kind.value} look-alike {native} ({form})"
    before = ctx.listing()
    held = sorted(n for n in made if n in before and before[n].state is Shown.PENDING)
    if not held:
        # The harness keeps its look-alikes waiting (it declines no look_alike:held), and its
        # own listing shows none of them so: its fault, not the adapter's.
        ctx.harness.guard("listing()", partial(_none_pending, len(made)))
    ref = ctx.start(plan, submission=1, attempt=1)
    pause(ctx.clock, ctx.harness.schedule_within)
    stop(ctx, ref)
    after = ctx.listing()
    moved = [
        f"{made[n]}: {after[n].state.value if n in after else 'gone'}"
        for n in held
        if n not in after or after[n].state is not Shown.PENDING
    ]
    ctx.expect(
        not moved,
        f"the scheduler's own listing showed {len(held)} look-alikes pending before the job "
        f"{plan.job} was started, waited on for {ctx.harness.schedule_within:.0f} s and "
        f"stopped, and then: {'; '.join(moved)}",
    )


__all__ = [
    "find_keeps_what_the_scheduler_lists",
    "look_alikes_stay_held",
    "one_object_per_submission_by_the_scheduler",
    "open_agrees_with_the_scheduler",
    "stop_ends_it_by_the_scheduler",
    "stop_ends_it_while_its_teardown_is_held",
    "stop_spares_a_requeued_case_variant",
]
