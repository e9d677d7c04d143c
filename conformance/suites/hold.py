"""Hold (``HOLD-``): numbered holds that survive a reopen and refuse a release naming another
instance, as ``Holder`` requires (seed 000, the Hold capability; seed 001; DESIGN §4).

Every check is skipped unless the adapter declares Hold ``yes``; an adapter that declares it
but does not implement ``Holder`` fails, since behaviour contradicts a declared yes."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Final

from conformance.checks import CheckFailed, Context, Needs, Skip, SkippedFor, check
from conformance.harness import Fault, Probe, Race, race_need
from conformance.steps import (
    as_holder,
    as_requeuer,
    back_in_queue,
    call,
    end_and_reuse_next,
    fired,
    long_spec,
    look,
    occupied,
    requeue_somehow,
    run,
    runs_again,
    stop,
    timed_out,
    visible,
)
from conformance.suites.clauses import (
    DESIGN_HOLDS,
    DESIGN_REOBSERVE,
    DESIGN_STALE_WRITE,
    SEED_000_HOLD,
    SEED_001,
)
from dispatch_core import (
    Capability,
    Conflict,
    DispatchError,
    HoldBound,
    Holder,
    NotFound,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    Rejected,
    Requeuer,
    State,
)
from dispatch_core.clock import pause

"""Seconds a held object is watched: long enough for a scheduler to start an eligible one."""


def holder_of(ctx: Context) -> Holder:
    """The adapter as a Holder; skipped unless it declares Hold yes, failed if it does but
    implements no Holder."""
    ctx.require(Capability.HOLD)
    holder = as_holder(ctx)
    if holder is None:
        raise CheckFailed("declares Hold yes but does not implement Holder (hold and release)")
    return holder


PENDING_TRIES = 3
"""How many new objects a check starts to get one the scheduler has not started before its
hold lands (a real cluster starts an eligible job within seconds of its submission)."""


def start_held(
    ctx: Context, holder: Holder, make: Callable[[], Plan]
) -> tuple[Plan, ObjectRef, int]:
    """Start a new object of ``make()`` and hold it while it is pending. A hold refused with
    Rejected because the scheduler started the object first (open shows it running or ended:
    HOLD-006 allows that answer) is no verdict: the object is stopped and a new one tried, up to
    :data:`PENDING_TRIES`; Rejected for an object still queued fails the check."""
    for _ in range(PENDING_TRIES):
        plan = make()
        ref = ctx.start(plan)
        try:
            number = holder.hold(ref)
        except Rejected as refused:
            seen = look(ctx, ref, f"after hold({ref.id}) was refused")
            if seen.state in (State.QUEUED, State.HELD):
                ctx.fail(f"hold({ref.id}) of the {seen.state} object raised Rejected ({refused})")
            stop(ctx, ref, "(started before its hold landed)")
            continue
        except DispatchError as error:
            raise CheckFailed(f"hold({ref.id}) raised {type(error).__name__} ({error})") from None
        return plan, ref, checked_hold(ctx, ref, number, "")
    raise Skip(
        f"the scheduler started each of {PENDING_TRIES} new objects before a hold could land",
        SkippedFor.CIRCUMSTANCE,
    )


def held(ctx: Context, holder: Holder, ref: ObjectRef, when: str = "") -> int:
    """Place a hold on the pending object and see it read back through open."""
    number = call(ctx, f"hold({ref.id}){when}", lambda: holder.hold(ref))
    return checked_hold(ctx, ref, number, when)


def held_unless_started(ctx: Context, holder: Holder, ref: ObjectRef, when: str) -> int | None:
    """``held``, except that a hold refused with Rejected because the scheduler started the
    object first (open shows it running or ended) gives None: a real scheduler may start a
    pending object at any moment. Rejected for an object still queued fails the check."""
    try:
        number = holder.hold(ref)
    except Rejected as refused:
        seen = look(ctx, ref, f"after hold({ref.id}){when} was refused")
        if seen.state in (State.QUEUED, State.HELD):
            ctx.fail(f"hold({ref.id}){when} of the {seen.state} object raised Rejected ({refused})")
        return None
    except DispatchError as error:
        raise CheckFailed(f"hold({ref.id}){when} raised {type(error).__name__} ({error})") from None
    return checked_hold(ctx, ref, number, when)


def checked_hold(ctx: Context, ref: ObjectRef, number: object, when: str) -> int:
    """``number``, answered by a hold, is a positive hold number that open reads back."""
    ctx.expect(
        isinstance(number, int) and not isinstance(number, bool) and number > 0,
        f"hold({ref.id}){when} returned {number!r}, not a positive hold number",
    )
    seen = look(ctx, ref, f"after hold {number}{when}")
    ctx.expect(
        (seen.state, seen.hold) == (State.HELD, number),
        f"open after hold {number}{when} showed the object {seen.state} with hold {seen.hold}",
    )
    assert isinstance(number, int)
    return number


def expect_conflict(ctx: Context, holder: Holder, ref: ObjectRef, number: int, why: str) -> None:
    """``release(ref, number)`` is refused with Conflict, and leaves the object as it was."""
    before = look(ctx, ref, f"before release {number} ({why})")
    ctx.expect_raises(
        Conflict, lambda: holder.release(ref, number), f"release({ref.id}, {number}) ({why})"
    )
    after = look(ctx, ref, f"after the refused release {number} ({why})")
    # A queued object without a hold may be started by the scheduler meanwhile: its own doing.
    started = (before.state, before.hold, after.state, after.hold) == (
        State.QUEUED,
        None,
        State.RUNNING,
        None,
    ) and after.restart_count == before.restart_count
    ctx.expect(
        started or (after.state, after.hold) == (before.state, before.hold),
        f"the refused release {number} ({why}) changed the object from {before.state} with "
        f"hold {before.hold} to {after.state} with hold {after.hold}",
    )


@check(
    "HOLD-001",
    clause=f"{SEED_000_HOLD}: place and release a numbered hold",
    needs=Needs(capabilities=(Capability.HOLD,), faults=(Fault.LET_RUN,)),
)
def placed_and_released(ctx: Context) -> None:
    """A numbered hold keeps the object from running, as it left it, until released; then it runs.

    While held, open shows what it showed right after the hold: the same state, hold and
    restart count (nothing reran it, and the hold answered once the scheduler had done)."""
    holder = holder_of(ctx)
    _, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    at_once = visible(look(ctx, ref, f"right after hold {number}"))
    held_wait = ctx.harness.schedule_within
    pause(ctx.clock, held_wait)
    seen = look(ctx, ref, f"{held_wait:.0f} s after hold {number}")
    ctx.expect(
        (seen.state, seen.hold) == (State.HELD, number),
        f"open {held_wait:.0f} s after hold {number} showed the object {seen.state} "
        f"with hold {seen.hold}",
    )
    ctx.expect(
        visible(seen) == at_once,
        f"the held object changed with nobody acting on it: open showed {at_once} right after "
        f"hold {number} returned, {visible(seen)} {held_wait:.0f} s later (the hold answered "
        "before the scheduler had done with it)",
    )
    call(ctx, f"release({ref.id}, {number})", lambda: holder.release(ref, number))
    seen = look(ctx, ref, f"after release {number}")
    ctx.expect(
        seen.state is not State.HELD and seen.hold is None,
        f"open after release {number} showed the object {seen.state} with hold {seen.hold}",
    )
    run(ctx, ref)


@check(
    "HOLD-017",
    clause=f"{SEED_000_HOLD}: place and release a numbered hold",
    needs=Needs(capabilities=(Capability.HOLD,), probes=(Probe.EXECUTIONS,)),
)
def held_object_never_runs(ctx: Context) -> None:
    """A held object runs no execution while held, by the target's record, not the adapter's."""
    holder = holder_of(ctx)
    _, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    pause(ctx.clock, ctx.harness.schedule_within)
    executions = ctx.executions(ref)
    ctx.expect(
        not executions,
        f"the object held by hold {number} ran {len(executions)} time(s) while held "
        f"({ctx.harness.schedule_within:.0f} s, by the target's record)",
    )


@check(
    "HOLD-018",
    clause=f"{SEED_001}, The comment: accounting keeps what squeue forgot; {SEED_000_HOLD}",
    needs=Needs(
        capabilities=(Capability.HOLD, Capability.ACCOUNTING_HISTORY),
        faults=(Fault.PURGE,),
        identity=("history_outlives_live",),
    ),
)
def held_stopped_and_gone_stays_in_history(ctx: Context) -> None:
    """A held object, stopped and gone from the live view, is still found and opened."""
    holder = holder_of(ctx)
    plan, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    stop(ctx, ref, f"of the object held by hold {number}")
    ctx.faults.purge(ref)
    what = f"the object held by hold {number}, stopped and gone from the live view"
    seen = call(ctx, f"find({plan.job}) of {what}", lambda: ctx.backend.find(plan.job))
    ctx.expect(
        ref.id in {o.ref.id for o in seen},
        f"find left out {ref.id}, {what}, though the adapter declares AccountingHistory yes "
        "(its eligible time was far ahead while held: a history query whose window ends now "
        "does not reach it)",
    )
    shown = call(ctx, f"open({ref.id}) of {what}", lambda: ctx.backend.open(ref))
    ctx.expect(shown.state.ended, f"open showed {what} {shown.state}, not ended")


@check(
    "HOLD-002",
    clause=f"{SEED_000_HOLD}: a hold survives Open",
    needs=Needs(capabilities=(Capability.HOLD,)),
)
def survives_reopen(ctx: Context) -> None:
    """A hold survives reopen: a new adapter instance sees it by number and can release it."""
    holder = holder_of(ctx)
    plan, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    reopened = ctx.reopen()
    if not isinstance(reopened, Holder):
        raise CheckFailed("reopen gave an adapter instance that does not implement Holder")
    seen = call(ctx, f"open({ref.id}) by the reopened adapter", lambda: reopened.open(ref))
    ctx.expect(
        (seen.state, seen.hold) == (State.HELD, number),
        f"the reopened adapter's open showed the object {seen.state} with hold {seen.hold}, "
        f"not held with hold {number}",
    )
    listed = {
        o.ref.id: o
        for o in call(
            ctx, f"find({plan.job}) by the reopened adapter", lambda: reopened.find(plan.job)
        )
    }
    shown = listed.get(ref.id)
    ctx.expect(shown is not None, f"the reopened adapter's find did not return {ref.id}")
    assert shown is not None
    ctx.expect(
        (shown.state, shown.hold) == (State.HELD, number),
        f"the reopened adapter's find showed the object {shown.state} with hold {shown.hold}, "
        f"not held with hold {number}",
    )
    call(
        ctx,
        f"release({ref.id}, {number}) by the reopened adapter",
        lambda: reopened.release(ref, number),
    )
    seen = look(ctx, ref, f"after the reopened adapter released hold {number}")
    ctx.expect(
        seen.state is not State.HELD and seen.hold is None,
        f"open after the reopened adapter released hold {number} showed the object "
        f"{seen.state} with hold {seen.hold}",
    )


@check(
    "HOLD-003",
    clause=f"{SEED_000_HOLD}: refuses a release naming another instance",
    needs=Needs(capabilities=(Capability.HOLD,)),
)
def another_number(ctx: Context) -> None:
    """A release naming another hold number is refused with Conflict, and the hold stays."""
    holder = holder_of(ctx)
    _, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    candidates = {number - 1, number + 1, ctx.rng.randrange(1, HoldBound)} - {number}
    for other in sorted(k for k in candidates if 0 < k < HoldBound):
        expect_conflict(ctx, holder, ref, other, f"the object carries hold {number}")
    call(ctx, f"release({ref.id}, {number})", lambda: holder.release(ref, number))


@check(
    "HOLD-004",
    clause=f"{SEED_001}, What else rides on Submit: a hold before a requeue",
    needs=Needs(capabilities=(Capability.HOLD,), faults=(Fault.LET_RUN,)),
)
def hold_before_requeue(ctx: Context) -> None:
    """A hold number placed before a requeue is refused with Conflict after it; new holds differ."""
    holder = holder_of(ctx)
    _, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    call(ctx, f"release({ref.id}, {number})", lambda: holder.release(ref, number))
    run(ctx, ref)
    requeue_somehow(ctx, ref)
    expect_conflict(ctx, holder, ref, number, "placed and released before the requeue")
    seen = back_in_queue(ctx, ref)
    if seen.state is not State.QUEUED:
        return  # the scheduler started it again at once: nothing more can be held
    later = held(ctx, holder, ref, " after the requeue")
    ctx.expect(
        later != number,
        f"hold after the requeue returned {later}, the number of the hold placed before it",
    )
    expect_conflict(ctx, holder, ref, number, f"placed before the requeue; {later} is carried")
    call(ctx, f"release({ref.id}, {later})", lambda: holder.release(ref, later))


@check(
    "HOLD-005",
    clause=f"{SEED_001}, What else rides on Submit: a hold on a reused id",
    needs=Needs(
        capabilities=(Capability.HOLD,), faults=(Fault.REUSE_ID_NEXT,), identity=("reuses_ids",)
    ),
)
def hold_on_reused_id(ctx: Context) -> None:
    """hold and release through a ref whose id was reused raise NotFound: identity fails first."""
    holder = holder_of(ctx)
    plan = ctx.plan(long_spec(ctx))
    stale = ctx.start(plan, submission=1, attempt=1)
    # On a real scheduler either object may start before its hold lands: the stale ref's
    # release then names hold 1 (NotFound comes before any number is judged), and the occupant's
    # part is left out.
    placed = held_unless_started(ctx, holder, stale, " before the id was reused")
    old = 1 if placed is None else placed
    end_and_reuse_next(ctx, stale)
    occupant = ctx.start(plan, submission=2, attempt=1)
    occupied(ctx, stale, occupant, "reuse_id_next")
    ctx.expect_raises(
        NotFound,
        lambda: holder.release(stale, old),
        f"release({stale.id}, {old}) of the hold placed before the id was reused",
    )
    ctx.expect_raises(NotFound, lambda: holder.hold(stale), f"hold({stale.id}) of the stale ref")
    seen = look(ctx, occupant, "of the object now holding the id")
    ctx.expect(
        seen.state is not State.HELD and seen.hold is None,
        f"hold through the stale ref left the object now holding {stale.id} {seen.state} with "
        f"hold {seen.hold}",
    )
    number = held_unless_started(ctx, holder, occupant, " of the object now holding the id")
    if number is None:
        return  # the scheduler started the occupant first: nothing of it can be held
    ctx.expect_raises(
        NotFound,
        lambda: holder.release(stale, number),
        f"release({stale.id}, {number}) of the stale ref, naming the occupant's hold",
    )
    seen = look(ctx, occupant, "after the stale release")
    ctx.expect(
        (seen.state, seen.hold) == (State.HELD, number),
        f"release through the stale ref left the object now holding {stale.id} {seen.state} "
        f"with hold {seen.hold}, not held with hold {number}",
    )
    call(ctx, f"release({occupant.id}, {number})", lambda: holder.release(occupant, number))


def hold_not_pending(ctx: Context, holder: Holder, ref: ObjectRef, what: str) -> None:
    """Hold an object that is not pending: Rejected (the object is left as it was), or a hold
    that reads back through open; for an ended object that is gone, NotFound."""
    try:
        before: Observation | None = ctx.backend.open(ref)
    except NotFound:
        before = None
    if before is None:
        ctx.expect_raises(NotFound, lambda: holder.hold(ref), f"hold({ref.id}) of the gone object")
        return
    try:
        number = holder.hold(ref)
    except Rejected:
        after = look(ctx, ref, f"after the refused hold of the {what} object")
        ctx.expect(
            (after.state, after.hold) == (before.state, before.hold),
            f"the refused hold changed the {what} object from {before.state} with hold "
            f"{before.hold} to {after.state} with hold {after.hold}",
        )
        return
    except DispatchError as error:
        ctx.fail(
            f"hold of the {what} object raised {type(error).__name__} ({error}), not Rejected "
            "(nor a hold that reads back)"
        )
        return
    after = look(ctx, ref, f"after hold {number} of the {what} object")
    ctx.expect(
        after.hold == number,
        f"hold of the {what} object returned {number}, but open then showed it {after.state} "
        f"with hold {after.hold}: neither Rejected nor a hold that reads back",
    )
    call(
        ctx,
        f"release({ref.id}, {number}) of the {what} object",
        lambda: holder.release(ref, number),
    )


@check(
    "HOLD-006",
    clause=f"{DESIGN_HOLDS}: only a pending job can be held",
    needs=Needs(capabilities=(Capability.HOLD,), faults=(Fault.LET_RUN,)),
)
def not_pending(ctx: Context) -> None:
    """Holding a running or ended object is Rejected, or is a hold that reads back; nothing else."""
    holder = holder_of(ctx)
    running = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, running)
    hold_not_pending(ctx, holder, running, "running")
    ended = ctx.start(ctx.plan(long_spec(ctx)))
    call(ctx, f"stop({ended.id})", lambda: ctx.backend.stop(ended))
    hold_not_pending(ctx, holder, ended, "ended")


@check(
    "HOLD-007",
    clause=f"{DESIGN_HOLDS}: release refuses with Conflict a job carrying none",
    needs=Needs(capabilities=(Capability.HOLD,)),
)
def second_release(ctx: Context) -> None:
    """A second release of the same hold is refused with Conflict."""
    holder = holder_of(ctx)
    _, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    call(ctx, f"release({ref.id}, {number})", lambda: holder.release(ref, number))
    expect_conflict(ctx, holder, ref, number, "already released")


@check(
    "HOLD-008",
    clause=DESIGN_REOBSERVE,
    needs=Needs(capabilities=(Capability.HOLD,), faults=(Fault.FAIL_BEFORE_EFFECT,)),
)
def timed_out_hold_and_release_read_back(ctx: Context) -> None:
    """A hold or release timed out before its effect reads back: it shows, or OutcomeUnknown."""
    holder = holder_of(ctx)
    _, held_ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    ctx.faults.fail_before_effect("release")
    what = f"release({held_ref.id}, {number})"
    released, _ = timed_out(ctx, what, lambda: holder.release(held_ref, number))
    fired(ctx, "fail_before_effect(release)", what)
    if released:
        seen = look(ctx, held_ref, f"after {what} returned though its command timed out")
        ctx.expect(
            seen.state is not State.HELD and seen.hold != number,
            f"{what} returned though its command timed out before it took effect, and the "
            f"hold is still there: open shows {visible(seen)}",
        )
    # The hold last: if the scheduler starts the object first, the armed timeout stays unused,
    # and nothing after it in this check holds.
    ref = ctx.start(ctx.plan(long_spec(ctx)))

    def hold() -> int | None:
        try:
            return holder.hold(ref)
        except Rejected:
            if look(ctx, ref, "after its hold was refused").state in (State.QUEUED, State.HELD):
                raise
            return None  # the scheduler started it first: HOLD-006's answer, no verdict here

    ctx.faults.fail_before_effect("hold")
    placed, placed_number = timed_out(ctx, f"hold({ref.id})", hold)
    if not placed or placed_number is not None:
        fired(ctx, "fail_before_effect(hold)", f"hold({ref.id})")
    if placed and placed_number is not None:
        checked_hold(ctx, ref, placed_number, ", which returned though its command timed out")


@check(
    "HOLD-009",
    clause=DESIGN_REOBSERVE,
    needs=Needs(capabilities=(Capability.HOLD,), faults=(Fault.LOSE_NEXT_REPLY,)),
)
def lost_hold_and_release_replies(ctx: Context) -> None:
    """A hold or release whose reply was lost answers what open then shows, or OutcomeUnknown."""
    holder = holder_of(ctx)
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    ctx.faults.lose_next_reply("hold")
    try:
        number: int | None = holder.hold(ref)
    except OutcomeUnknown:
        number = None
    except Rejected:
        if look(ctx, ref, "after its hold was refused").state in (State.QUEUED, State.HELD):
            raise CheckFailed(f"hold({ref.id}) of the pending object raised Rejected") from None
        raise Skip(
            "the scheduler started the object before its hold landed", SkippedFor.CIRCUMSTANCE
        ) from None
    except DispatchError as error:
        raise CheckFailed(
            f"hold({ref.id}), whose reply was lost after it took effect, raised "
            f"{type(error).__name__} ({error}), not a hold number nor OutcomeUnknown"
        ) from None
    fired(ctx, "lose_next_reply(hold)", f"hold({ref.id})")
    seen = look(ctx, ref, "after the hold whose reply was lost")
    if number is None and (seen.state is State.RUNNING or seen.state.ended):
        # The command ran, but on a real scheduler the object may have started first: then
        # the hold was refused, which the lost reply hid from the adapter and the check alike.
        raise Skip(
            "the scheduler started the object before its hold landed", SkippedFor.CIRCUMSTANCE
        )
    ctx.expect(
        seen.state is State.HELD and seen.hold is not None,
        f"the hold of {ref.id} took effect and its reply was lost, yet open shows {visible(seen)}",
    )
    if number is not None:
        ctx.expect(
            seen.hold == number,
            f"hold({ref.id}), whose reply was lost, returned {number}, but open shows "
            f"{visible(seen)}",
        )
    carried = seen.hold
    assert carried is not None
    ctx.faults.lose_next_reply("release")
    what = f"release({ref.id}, {carried})"
    try:
        holder.release(ref, carried)
    except OutcomeUnknown:
        pass
    except DispatchError as error:
        raise CheckFailed(
            f"{what}, whose reply was lost after it took effect, raised {type(error).__name__} "
            f"({error}), not a return nor OutcomeUnknown"
        ) from None
    fired(ctx, "lose_next_reply(release)", what)
    seen = look(ctx, ref, f"after {what}, whose reply was lost")
    ctx.expect(
        seen.state is not State.HELD and seen.hold is None,
        f"{what} took effect and its reply was lost, yet open shows {visible(seen)}",
    )


@check(
    "HOLD-010",
    clause=f"{SEED_000_HOLD}: refuses a release naming another instance",
    needs=Needs(capabilities=(Capability.HOLD,)),
)
def every_hold_a_new_number(ctx: Context) -> None:
    """Each hold on an object takes a number none before it took, whichever instance placed it."""
    holder = holder_of(ctx)
    _, ref, first = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    numbers = [first]
    # Holds on the held object: by a reopened instance at once, by the first instance a
    # millisecond on, by a new instance seconds on. Each replaces the hold carried (or, where
    # the adapter refuses to hold a held object, follows its release).
    steps = ((0.0, True, "a reopened adapter"), (0.001, False, "the first adapter"))
    for gap, fresh, who in (*steps, (2.0, True, "a new adapter")):
        pause(ctx.clock, gap)
        placer = ctx.reopen() if fresh else holder
        if not isinstance(placer, Holder):
            raise CheckFailed("reopen gave an adapter instance that does not implement Holder")
        when = f" by {who}, {gap:g} s after holds {numbers}"
        carried = numbers[-1]
        try:
            number = placer.hold(ref)
        except Rejected:
            call(ctx, f"release({ref.id}, {carried})", partial(placer.release, ref, carried))
            number = call(ctx, f"hold({ref.id}){when}", partial(placer.hold, ref))
        except DispatchError as error:
            raise CheckFailed(
                f"hold({ref.id}) of the held object{when} raised {type(error).__name__} "
                f"({error}), not a new hold nor Rejected"
            ) from None
        ctx.expect(
            number not in numbers,
            f"hold({ref.id}){when} returned {number}, a number the object carried before: a "
            "stale release naming it would free the new hold",
        )
        checked_hold(ctx, ref, number, when)
        for stale in numbers:
            expect_conflict(ctx, holder, ref, stale, f"an earlier hold; {number} is carried")
        numbers.append(number)
    last = numbers[-1]
    call(ctx, f"release({ref.id}, {last})", lambda: holder.release(ref, last))


@check(
    "HOLD-011",
    clause=DESIGN_REOBSERVE,
    needs=Needs(capabilities=(Capability.HOLD,), faults=(Fault.IGNORE_NEXT_WRITE,)),
)
def ignored_hold_and_release_not_claimed(ctx: Context) -> None:
    """A hold or release the scheduler acknowledged but ignored is not claimed: OutcomeUnknown."""
    holder = holder_of(ctx)
    _, held_ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    ctx.faults.ignore_next_write("release")
    what = f"release({held_ref.id}, {number})"
    released, _ = timed_out(ctx, what, lambda: holder.release(held_ref, number))
    fired(ctx, "ignore_next_write(release)", what)
    if released:
        seen = look(ctx, held_ref, f"after {what} returned")
        ctx.expect(
            seen.state is not State.HELD and seen.hold is None,
            f"{what} returned, though the scheduler ignored it: open shows {visible(seen)}",
        )
    # The hold last: the scheduler may start the object while the adapter reads it back.
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    ctx.faults.ignore_next_write("hold")
    try:
        placed: int | None = holder.hold(ref)
    except (OutcomeUnknown, Rejected):
        placed = None  # Rejected: the scheduler started it meanwhile (HOLD-006's answer)
    except DispatchError as error:
        raise CheckFailed(
            f"hold({ref.id}), which the scheduler acknowledged and ignored, raised "
            f"{type(error).__name__} ({error}), not OutcomeUnknown"
        ) from None
    fired(ctx, "ignore_next_write(hold)", f"hold({ref.id})")
    if placed is not None:
        seen = look(ctx, ref, f"after hold({ref.id}) returned {placed}")
        ctx.expect(
            (seen.state, seen.hold) == (State.HELD, placed),
            f"hold({ref.id}) returned {placed}, though the scheduler ignored it: open shows "
            f"{visible(seen)}: a hold the adapter did not make",
        )


@check(
    "HOLD-012",
    clause=f"{DESIGN_REOBSERVE}; {DESIGN_HOLDS}: only a pending job can be held",
    needs=Needs(capabilities=(Capability.HOLD,), faults=(Fault.RACE_NEXT_WRITE,)),
)
def hold_racing_the_scheduler(ctx: Context) -> None:
    """A hold whose object started, ended or vanished just before it landed says so."""
    holder = holder_of(ctx)
    races = ((Race.STARTS, Rejected), (Race.ENDS, Rejected), (Race.VANISHES, NotFound))
    for race, answer in races:
        ref = ctx.start(ctx.plan(long_spec(ctx)))
        ctx.faults.race_next_write("hold", race)
        what = f"hold({ref.id}), whose object {race.value} just before the hold landed"
        try:
            number = holder.hold(ref)
        except answer:
            number = None
        except DispatchError as error:
            raise CheckFailed(
                f"{what}, raised {type(error).__name__} ({error}), not {answer.__name__}: the "
                "adapter can see what happened, and must say it (it placed no hold)"
            ) from None
        fired(ctx, "race_next_write(hold)", what)
        if race is Race.VANISHES:
            ctx.expect(number is None, f"{what}, returned {number}: a hold it did not make")
            continue
        seen = look(ctx, ref, f"after {what}")
        ctx.expect(
            number is None or (seen.state, seen.hold) == (State.HELD, number),
            f"{what}, returned {number}, but open shows {visible(seen)}: a hold it did not make",
        )
        ctx.expect(
            seen.state is not State.HELD and seen.hold is None,
            f"after {what}, open shows {visible(seen)}",
        )


TOUCHED: Final = (
    " (another writer changed its object just before it landed, in nothing it depends on: the "
    "object is still as read, so a re-read and a second write land it)"
)


@check(
    "HOLD-014",
    clause=f"{DESIGN_REOBSERVE}; {DESIGN_STALE_WRITE}",
    needs=Needs(capabilities=(Capability.HOLD,), faults=(race_need(Race.TOUCHED),)),
)
def hold_meeting_another_write(ctx: Context) -> None:
    """A hold and its release land though another writer touched the object just before each.

    The write meets a newer version of an object still as the adapter read it (Kubernetes: a
    409 on the version read): it re-reads, judges and writes again, never OutcomeUnknown nor
    Rejected."""
    holder = holder_of(ctx)
    ctx.faults.race_next_write("hold", Race.TOUCHED)
    for _ in range(PENDING_TRIES):
        ref = ctx.start(ctx.plan(long_spec(ctx)))
        number = held_unless_started(ctx, holder, ref, TOUCHED)
        if number is not None:
            break
        stop(ctx, ref, "(started before its hold landed)")
    else:
        raise Skip(
            f"the scheduler started each of {PENDING_TRIES} new objects before a hold could land",
            SkippedFor.CIRCUMSTANCE,
        )
    fired(ctx, "race_next_write(hold)", f"hold({ref.id}){TOUCHED}")
    ctx.faults.race_next_write("release", Race.TOUCHED)
    what = f"release({ref.id}, {number}){TOUCHED}"
    call(ctx, what, lambda: holder.release(ref, number))
    fired(ctx, "race_next_write(release)", what)
    seen = look(ctx, ref, f"after {what}")
    ctx.expect(
        seen.hold is None and seen.state is not State.HELD,
        f"{what} returned, but open shows {visible(seen)}",
    )


@check(
    "HOLD-015",
    clause=f"{SEED_000_HOLD}; {DESIGN_HOLDS}: release removes the hold; {DESIGN_REOBSERVE}",
    needs=Needs(
        capabilities=(Capability.HOLD,),
        interfaces=(Requeuer,),
        faults=(Fault.LET_RUN, Fault.FAIL_BETWEEN_STEPS),
    ),
)
def released_hold_stays_gone(ctx: Context) -> None:
    """A released hold leaves no trace: a requeue cut later shows no hold, and completes.

    The object, held and released, runs; a requeue of it is cut between its steps: open shows
    no hold, and the next requeue completes it. Kubernetes: a hold annotation left on the
    TrainJob after its release reads as that hold again the moment the TrainJob is suspended
    for another reason."""
    holder = holder_of(ctx)
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    _, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    call(ctx, f"release({ref.id}, {number})", lambda: holder.release(ref, number))
    run(ctx, ref)
    ctx.faults.fail_between_steps("requeue")
    what = (
        f"requeue({ref.id}) of the object once held ({number}) and released, cut between its steps"
    )
    returned, _ = timed_out(ctx, what, lambda: requeuer.requeue(ref))
    fired(ctx, "fail_between_steps(requeue)", what)
    seen = look(ctx, ref, f"after {what}")
    ctx.expect(
        seen.hold is None and seen.state is not State.HELD,
        f"after {what}, open shows {visible(seen)}: the released hold came back",
    )
    if not returned:
        again = f"requeue({ref.id}) again, after the cut one"
        call(ctx, again, lambda: requeuer.requeue(ref))
        back_in_queue(ctx, ref)
    runs_again(ctx, ref, f"after {what}")


@check(
    "HOLD-016",
    clause=f"{DESIGN_HOLDS}: valid only for 0 < k < 1_000_000; a new hold takes the next number",
    needs=Needs(capabilities=(Capability.HOLD,), faults=(Fault.HOLD_EDGE,)),
)
def holds_at_the_edges_of_the_numbering(ctx: Context) -> None:
    """Holds at the edges of the adapter's numbering take valid numbers, never the one carried.

    The harness moves the clock to where a new adapter instance's first hold takes the largest
    or the smallest number the adapter hands out: the hold reads back, and a second new
    instance's hold there, whose number would equal the one the object carries, takes another
    that reads back too and releases."""
    holder_of(ctx)
    tested = 0
    for variant in range(ctx.faults.hold_edges()):
        edge = ctx.faults.hold_edge(variant)
        when = f" (a new instance, at {edge})"
        ref = ctx.start(ctx.plan(long_spec(ctx)))
        first = reopened_holder(ctx)
        number = held_unless_started(ctx, first, ref, when)
        if number is None:  # the scheduler started it first: no hold at this edge
            continue
        tested += 1
        ctx.faults.hold_edge(variant)
        second = reopened_holder(ctx)
        again = held(ctx, second, ref, f" (another new instance, at {edge} again)")
        ctx.expect(
            again != number,
            f"the second hold{when} took {again}, the number the object carried: a stale "
            f"release({number}) would free it",
        )
        call(ctx, f"release({ref.id}, {again})", partial(second.release, ref, again))
        seen = look(ctx, ref, f"after release({ref.id}, {again})")
        ctx.expect(seen.hold is None, f"after release({again}), open shows {visible(seen)}")
        stop(ctx, ref)
    if not tested:
        raise Skip(
            "the scheduler started the object at each edge before a hold could land",
            SkippedFor.CIRCUMSTANCE,
        )


def reopened_holder(ctx: Context) -> Holder:
    """A new adapter instance (``reopen``), as a Holder (HOLD-002 checks the same of one it
    also reads through, as a Backend)."""
    reopened = ctx.reopen()
    if not isinstance(reopened, Holder):
        raise CheckFailed("reopen gave an adapter instance that does not implement Holder")
    return reopened


@check(
    "HOLD-013",
    clause=f"{DESIGN_HOLDS}: release refuses with Conflict a job carrying none",
    needs=Needs(capabilities=(Capability.HOLD,)),
)
def release_of_a_stopped_hold(ctx: Context) -> None:
    """The release of a hold whose object was then stopped is refused: Conflict (or NotFound)."""
    holder = holder_of(ctx)
    _, ref, number = start_held(ctx, holder, lambda: ctx.plan(long_spec(ctx)))
    stop(ctx, ref, f"of the object carrying hold {number}")
    what = f"release({ref.id}, {number}) of the stopped object"
    try:
        holder.release(ref, number)
    except (Conflict, NotFound):
        return
    except DispatchError as error:
        ctx.fail(
            f"{what} raised {type(error).__name__} ({error}), not Conflict: an ended object "
            "carries no hold"
        )
        return
    ctx.fail(f"{what} succeeded instead of raising Conflict: an ended object carries no hold")
