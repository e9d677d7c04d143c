"""Steps the suites share: one adapter call that fails the check naming itself, letting an
object run, requeueing it, waiting for it back in the queue, and the writes through a stale
ref whose id another object holds. Each step works through the contract only (the backend,
the harness's fault intents and clock), so it applies to any scheduler."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import TypeVar

from conformance.checks import CheckFailed, Context, Skip
from conformance.harness import CannotInject, LookAlike
from dispatch_core import (
    Capability,
    DispatchError,
    Holder,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    Rejected,
    Requeuer,
    State,
    Tristate,
)
from dispatch_core.clock import pause

T = TypeVar("T")

REUSE_GAP = 2.0
"""Seconds between ending an object and handing its id to the next one: a purge takes time on
every scheduler, so the reusing object's submit time (whole seconds) is never the old one's."""

Visible = str
"""What a write on an object would change, as text (see :func:`visible`)."""


def call(ctx: Context, what: str, action: Callable[[], T]) -> T:
    """Run one adapter call; a DispatchError fails the check, naming the call that raised it."""
    try:
        return action()
    except DispatchError as error:
        raise CheckFailed(f"{what} raised {type(error).__name__} ({error})") from None


def timed_out(ctx: Context, what: str, action: Callable[[], T]) -> tuple[bool, T | None]:
    """Run a write whose command the harness made time out before it took effect: whether it
    returned (and what), or raised OutcomeUnknown (re-observe, never assume: an honest answer).
    Any other DispatchError fails the check: nothing happened that the adapter could refuse."""
    try:
        return True, action()
    except OutcomeUnknown:
        return False, None
    except DispatchError as error:
        raise CheckFailed(
            f"{what}, whose command timed out before it took effect, raised "
            f"{type(error).__name__} ({error}); nothing changed on the target: it must read "
            "back and either see its effect or raise OutcomeUnknown"
        ) from None


def fired(ctx: Context, fault: str, what: str) -> None:
    """The call fault ``fault`` (``lose_next_reply(hold)``, ...), armed before ``what``, fired:
    ``what`` returned or raised OutcomeUnknown, so it made the call the fault targets. A fault
    still armed (as the harness's :meth:`~conformance.powers.TellsUnfired.unfired` tells, when
    it can) means the adapter never made that call, or the harness injected nothing: the check
    would pass without testing what it says it tests, so it fails."""
    armed = ctx.faults.unfired()
    if armed is not None and fault in armed:
        raise CheckFailed(
            f"{what} went by with the fault {fault} armed before it unfired: the adapter "
            f"never made the call {fault} targets (or the harness did not inject it), so "
            "what it answers after that fault is untested"
        )


def long_spec(ctx: Context, **fields: object) -> JobSpec:
    """The check's spec for an object that must stay running once started: the harness's job
    command, which runs until a fault (``finish``) or a stop ends it."""
    return ctx.spec(**fields)


def look(ctx: Context, ref: ObjectRef, when: str) -> Observation:
    """``open(ref)``, failing the check (naming ``when``) if the adapter raises."""
    return call(ctx, f"open({ref.id}) {when}", lambda: ctx.backend.open(ref))


def stop(ctx: Context, ref: ObjectRef, when: str = "") -> None:
    """``stop(ref)``, failing the check (naming ``when``) if the adapter raises."""
    call(ctx, f"stop({ref.id}) {when}".rstrip(), lambda: ctx.backend.stop(ref))


def visible(seen: Observation) -> Visible:
    """What a write on the object would change: its state, restart count and hold."""
    restarts = "unknown" if seen.restart_count is None else seen.restart_count
    return f"{seen.state}, restart count {restarts}, hold {seen.hold or 'none'}"


def started_meanwhile(before: Visible | None, after: Visible | None) -> bool:
    """Whether ``after`` is ``before`` but for a queued object the scheduler started between
    the two looks (a real one does that on its own); no write starts a queued object, so no
    write through a stale ref can explain it either."""
    queued, running = f"{State.QUEUED}, ", f"{State.RUNNING}, "
    if before is None or after is None or not before.startswith(queued):
        return False
    return after == running + before.removeprefix(queued)


def ref_text(ref: ObjectRef) -> str:
    """A ref as a failure message shows it."""
    return f"{ref.id} (uid {ref.uid}, submit {ref.submit.isoformat()}, cluster {ref.backend})"


def run(ctx: Context, ref: ObjectRef) -> Observation:
    """Let the queued object run (the harness's ``let_run``) and see it running through open.
    An object the scheduler has started by itself goes through ``let_run`` too: on a real
    cluster its ranks start a moment after the scheduler does, and the harness returns only
    once they have (CI saw IDENT-014 read no execution of a job stopped in that moment)."""
    seen = look(ctx, ref, "before the scheduler starts it")
    ctx.faults.let_run(ref)
    if seen.state is State.RUNNING:
        return seen

    def running() -> Observation | None:
        seen = look(ctx, ref, "after the scheduler started it")
        return seen if seen.state is State.RUNNING else None

    return ctx.wait_until(running, f"open({ref.id}) showing the started object running", 60.0)


def runs_again(ctx: Context, ref: ObjectRef, after: str) -> Observation:
    """``run`` for an object a requeue put back in the queue: a harness that finds it will not
    run (its ``let_run`` raises Rejected: held, ended, or not started within its bound) fails
    the check, naming ``after``: the requeue left the object unable to run."""
    refused = ""
    try:
        return run(ctx, ref)
    except Rejected as error:
        refused = str(error)
    raise CheckFailed(f"{ref.id} never ran again {after}: {refused}")


def is_queued(ctx: Context, ref: ObjectRef) -> bool:
    """Whether ``open(ref)`` shows the object queued (not held, not started)."""
    seen = look(ctx, ref, "to see whether it is pending")
    return seen.state is State.QUEUED


def as_holder(ctx: Context) -> Holder | None:
    backend = ctx.backend
    return backend if isinstance(backend, Holder) else None


def as_requeuer(ctx: Context) -> Requeuer | None:
    backend = ctx.backend
    return backend if isinstance(backend, Requeuer) else None


def requeue(ctx: Context, ref: ObjectRef, how: str) -> None:
    """Requeue the started object through the adapter (``adapter``) or underneath it
    (``underneath``: the harness's fault)."""
    if how == "underneath":
        ctx.faults.requeue_underneath(ref)
        return
    requeuer = as_requeuer(ctx)
    if requeuer is None:
        raise Skip("adapter implements no Requeuer: it has no requeue of its own")
    call(ctx, f"requeue({ref.id}) of the running object", lambda: requeuer.requeue(ref))


def requeue_somehow(ctx: Context, ref: ObjectRef) -> None:
    """Requeue underneath when the harness can, else through the adapter (when it can't
    either, the harness's CannotInject stands)."""
    try:
        requeue(ctx, ref, "underneath")
    except CannotInject:
        if as_requeuer(ctx) is None:
            raise
        requeue(ctx, ref, "adapter")


def back_in_queue(ctx: Context, ref: ObjectRef) -> Observation:
    """Wait until open shows the requeued object back in the queue (a scheduler may take a
    while: Slurm passes through COMPLETING first), or already under a later submit time."""

    def queued() -> Observation | None:
        seen = look(ctx, ref, "through the started ref after the requeue")
        back = seen.state in (State.QUEUED, State.HELD) or seen.ref.submit > ref.submit
        return seen if back else None

    return ctx.wait_until(queued, f"open({ref.id}) showing the requeued object queued", 300.0)


def requeued_since(before: Observation, seen: Observation) -> bool:
    """Whether ``seen`` shows the object requeued since ``before``: back in the queue, a
    higher restart count, or a later submit time (where a requeue moves it)."""
    return (
        seen.state in (State.QUEUED, State.HELD)
        or (seen.restart_count or 0) > (before.restart_count or 0)
        or seen.ref.submit > before.ref.submit
    )


def expect_ended(ctx: Context, ref: ObjectRef, when: str) -> None:
    """``open(ref)`` shows an ended state, or raises NotFound once the object is gone."""
    try:
        seen = ctx.backend.open(ref)
    except NotFound:
        return
    except DispatchError as error:
        ctx.fail(f"open({ref.id}) {when} raised {type(error).__name__} ({error})")
        return
    ctx.expect(seen.state.ended, f"open({ref.id}) {when} showed it {seen.state}, not ended")


def found(ctx: Context, job: JobID, when: str) -> dict[str, Observation]:
    """``find(job)``, keyed by native id."""
    return {o.ref.id: o for o in call(ctx, f"find({job}) {when}", lambda: ctx.backend.find(job))}


def end_and_reuse_next(ctx: Context, ref: ObjectRef) -> None:
    """End the object, have its id handed to the next object the scheduler makes, and let
    time pass as a purge would."""
    stop(ctx, ref)
    expect_ended(ctx, ref, "after stop")
    ctx.faults.reuse_id_next(ref)
    pause(ctx.clock, REUSE_GAP)


def occupied(ctx: Context, stale: ObjectRef, occupant: ObjectRef, how: str) -> None:
    """The occupant must hold the stale ref's id under another identity, or the harness did
    not reuse the id (the check is then skipped with that reason)."""
    if occupant.id != stale.id:
        raise CannotInject(f"{how} (the next object took id {occupant.id}, not {stale.id})")
    if occupant.uid == stale.uid and occupant.submit == stale.submit:
        raise CannotInject(f"{how} (the occupant of {stale.id} has the old uid and submit time)")


def taken_by_a_requeued_case_variant(ctx: Context, plan: Plan) -> ObjectRef:
    """A ref of ``plan`` whose object ended and whose id a look-alike of the job, its key in
    another case, now holds, requeued: its submit is later than the ref's and its restart
    count above 0, so only an exact comparison of the name (or uid) tells it from the ref's.
    CannotInject when the look-alike took another id."""
    stale = ctx.start(plan)
    end_and_reuse_next(ctx, stale)
    native = ctx.faults.inject_look_alike(plan.job, LookAlike.CASE_VARIANT, requeued=True)
    if native != stale.id:
        form = ctx.faults.describe_look_alike(LookAlike.CASE_VARIANT)
        raise CannotInject(
            f"reuse_id_next (the look-alike ({form}) took id {native}, not {stale.id})"
        )
    return stale


def writes_act_on_nothing(ctx: Context, stale: ObjectRef, occupant: ObjectRef | None) -> None:
    """Every write through ``stale``, whose id another object now holds, acts on nothing:
    open, hold, release and requeue raise NotFound and stop succeeds; the occupant, when its
    ref is known, is left exactly as it was."""
    backend = ctx.backend

    def now(when: str) -> Visible | None:
        if occupant is None:
            return None
        try:
            return visible(ctx.backend.open(occupant))
        except NotFound:
            return f"gone (open {when} raised NotFound)"
        except DispatchError:
            return visible(look(ctx, occupant, when))  # fails the check, naming the call

    def untouched(before: Visible | None, write: str) -> None:
        after = now(f"after {write} through the stale ref")
        ctx.expect(
            before == after or started_meanwhile(before, after),
            f"{write} through the stale ref {stale.id} changed the object that now holds that "
            f"id from {before} to {after}",
        )

    ctx.expect_raises(NotFound, lambda: backend.open(stale), f"open({stale.id}) of the stale ref")
    holder = as_holder(ctx)
    if holder is not None:
        before = now("before the stale hold")
        ctx.expect_raises(
            NotFound, lambda: holder.hold(stale), f"hold({stale.id}) of the stale ref"
        )
        untouched(before, "hold")
        number, held = 1, False
        declared = ctx.declared(Capability.HOLD) is Tristate.YES
        if occupant is not None and declared and is_queued(ctx, occupant):
            # The hardest case: the occupant carries the very hold number the stale ref names.
            with suppress(Rejected):  # unless the scheduler has started it meanwhile
                number = holder.hold(occupant)
                held = True
        before = now("before the stale release")
        ctx.expect_raises(
            NotFound,
            lambda: holder.release(stale, number),
            f"release({stale.id}, {number}) of the stale ref",
        )
        untouched(before, "release")
        if held and occupant is not None:
            call(
                ctx,
                f"release({occupant.id}, {number}) of the occupant",
                lambda: holder.release(occupant, number),
            )
    if occupant is not None:
        with suppress(CannotInject):  # a running occupant is what a stray requeue or stop hits
            run(ctx, occupant)
    requeuer = as_requeuer(ctx)
    if requeuer is not None:
        before = now("before the stale requeue")
        ctx.expect_raises(
            NotFound, lambda: requeuer.requeue(stale), f"requeue({stale.id}) of the stale ref"
        )
        untouched(before, "requeue")
    before = now("before the stale stop")
    call(ctx, f"stop({stale.id}) of the stale ref", lambda: backend.stop(stale))
    untouched(before, "stop")
