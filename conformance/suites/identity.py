"""Identity (``IDENT-``): the adapter never acts on a scheduler object that is not the ref's
(seed 001), and every execution runs under its own identity (seed 000, DESIGN §4).

The steps the checks share (an adapter call that fails the check naming itself, letting an
object run, requeueing it, the writes through a stale ref) are here too; the hold suite uses
them."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from itertools import pairwise
from typing import TypeVar

from conformance.checks import CheckFailed, Context, Skip, Tier, check
from conformance.harness import CannotInject
from dispatch_core import (
    Capability,
    DispatchError,
    EncodingError,
    ExecutionIdentity,
    Holder,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Rejected,
    Requeuer,
    State,
    Tristate,
    parse_execution_env,
    slurm_comment,
)
from dispatch_core.clock import pause

SEED_000 = "seed 000"
SEED_001 = "seed 001"

T = TypeVar("T")

UNPARSABLE_COMMENTS = (
    "dispatch:s=01;a=1",
    "dispatch:s=1;a=1;x=2",
    "dispatch:s=1",
    "s=1;a=1",
)
"""Comments a strict parser refuses: a leading zero, an extra field, a missing one, no prefix."""

REUSE_GAP = 2.0
"""Seconds between ending an object and handing its id to the next one: a purge takes time on
every scheduler, so the reusing object's submit time (whole seconds) is never the old one's."""

Snapshot = str


# -- steps the identity and hold suites share -----------------------------------------------------


def call(ctx: Context, what: str, action: Callable[[], T]) -> T:
    """Run one adapter call; a DispatchError fails the check, naming the call that raised it."""
    try:
        return action()
    except DispatchError as error:
        raise CheckFailed(f"{what} raised {type(error).__name__} ({error})") from None


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


def snapshot(seen: Observation) -> Snapshot:
    """What a write on the object would change: its state, restart count and hold."""
    restarts = "unknown" if seen.restart_count is None else seen.restart_count
    return f"{seen.state}, restart count {restarts}, hold {seen.hold or 'none'}"


def show(ref: ObjectRef) -> str:
    """A ref as a failure message shows it."""
    return f"{ref.id} (uid {ref.uid}, submit {ref.submit.isoformat()}, cluster {ref.backend})"


def run(ctx: Context, ref: ObjectRef) -> Observation:
    """Let the queued object run (the harness's ``let_run``) and see it running through open;
    an object the scheduler has started by itself is left as it is."""
    seen = look(ctx, ref, "before the scheduler starts it")
    if seen.state is State.RUNNING:
        return seen
    ctx.faults.let_run(ref)

    def running() -> Observation | None:
        seen = look(ctx, ref, "after the scheduler started it")
        return seen if seen.state is State.RUNNING else None

    return ctx.wait_until(running, f"open({ref.id}) showing the started object running", 60.0)


def pending(ctx: Context, ref: ObjectRef) -> bool:
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


def named_by_job(ref: ObjectRef) -> bool:
    """Whether the scheduler identifies the object by the job's name (Slurm: its uid is the
    ``dj-`` name); otherwise the uid is one the scheduler never reuses (Kubernetes)."""
    return ref.uid.lower().startswith(JobID.DISCOVERY_PREFIX)


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


def writes_act_on_nothing(ctx: Context, stale: ObjectRef, occupant: ObjectRef | None) -> None:
    """Every write through ``stale``, whose id another object now holds, acts on nothing:
    open, hold, release and requeue raise NotFound and stop succeeds; the occupant, when its
    ref is known, is left exactly as it was."""
    backend = ctx.backend

    def now(when: str) -> Snapshot | None:
        return None if occupant is None else snapshot(look(ctx, occupant, when))

    def untouched(before: Snapshot | None, write: str) -> None:
        after = now(f"after {write} through the stale ref")
        ctx.expect(
            before == after,
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
        if occupant is not None and declared and pending(ctx, occupant):
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


# -- the name and find ----------------------------------------------------------------------------


@check("IDENT-001", clause=f"{SEED_001}, The name", tier=Tier.SMOKE)
def discovery_name(ctx: Context) -> None:
    """find(job) returns the started object by the job's name, with its submission and attempt."""
    plan = ctx.plan()
    ref = ctx.start(plan, submission=2, attempt=1)
    name = plan.job.discovery_name()
    ctx.expect(
        ref.backend == ctx.backend.name,
        f"start made a ref of cluster {ref.backend!r}, not {ctx.backend.name!r}",
    )
    if named_by_job(ref):
        ctx.expect(
            ref.uid == name, f"start made a ref with uid {ref.uid!r}, not the job's name {name!r}"
        )
    seen = found(ctx, plan.job, "after one start")
    ctx.expect(
        ref.id in seen,
        f"find({plan.job}) did not return the started object {ref.id} (it returned {sorted(seen)})",
    )
    mine = seen[ref.id]
    ctx.expect(
        mine.ref == ref, f"find returned the object as {show(mine.ref)}; start made {show(ref)}"
    )
    ctx.expect(not mine.foreign, "find reported the job's own started object as foreign")
    ctx.expect(
        (mine.submission, mine.attempt) == (2, 1),
        f"find reported submission {mine.submission} and attempt {mine.attempt} for the object "
        "started as submission 2 of attempt 1",
    )
    ctx.expect(len(seen) == 1, f"find returned {len(seen)} objects for a job started once")
    other = ctx.job_id()
    ctx.expect(
        ref.id not in found(ctx, other, "of another job"),
        f"find of another job id returned the started object {ref.id}",
    )


def look_alikes_are_not_the_job(ctx: Context, variants: Callable[[str], list[str]]) -> None:
    """Objects named like the job (``variants`` of its name), carrying a valid comment, are
    neither found as the job's nor taken by start as an earlier submission."""
    plan = ctx.plan()
    job = plan.job
    comment = slurm_comment(1, 1)
    injected = {
        ctx.faults.inject_named(job, name, comment): name for name in variants(job.discovery_name())
    }
    ref = ctx.start(plan, submission=1, attempt=1)
    ctx.expect(
        ref.id not in injected,
        f"start returned {ref.id}, the object named {injected.get(ref.id)!r}, as the job's "
        "submission 1 instead of submitting it",
    )
    seen = found(ctx, job, "with look-alike names present")
    taken = sorted(injected[i] for i in seen if i in injected)
    ctx.expect(not taken, f"find reported the objects named {taken} as the job's")
    ctx.expect(ref.id in seen, f"find did not return the job's own object {ref.id}")


@check("IDENT-002", clause=f"{SEED_001}, The name: squeue matches names without regard to case")
def case_variants(ctx: Context) -> None:
    """find matches the name exactly: objects named with a case variant of it are not the job's."""
    look_alikes_are_not_the_job(
        ctx, lambda name: [name.lower(), "DJ-" + name[3:], "dj-" + name[3:].lower()]
    )


@check("IDENT-003", clause=f"{SEED_001}, The name: squeue splits a list of names on commas")
def comma_names(ctx: Context) -> None:
    """find matches the name exactly: objects whose name lists it with commas are not the job's."""
    other = ctx.job_id().discovery_name()
    look_alikes_are_not_the_job(
        ctx, lambda name: [f"{name},{other}", f"{other},{name}", f"{name},"]
    )


@check(
    "IDENT-004", clause=f"{SEED_001}, The comment: a name whose comment does not parse is foreign"
)
def unparsable_comment_is_foreign(ctx: Context) -> None:
    """An object with the job's name and an unparsable comment is foreign: reported, never used."""
    plan = ctx.plan(long_spec(ctx))
    job = plan.job
    name = job.discovery_name()
    foreign = {ctx.faults.inject_named(job, name, c): c for c in UNPARSABLE_COMMENTS}
    ref = ctx.start(plan, submission=1, attempt=1)
    ctx.expect(
        ref.id not in foreign,
        f"start returned {ref.id}, the object commented {foreign.get(ref.id)!r}, as the job's "
        "submission 1 instead of submitting it",
    )
    seen = found(ctx, job, "with foreign objects present")
    for native_id, comment in foreign.items():
        ctx.expect(native_id in seen, f"find dropped the object {native_id} commented {comment!r}")
        shown = seen[native_id]
        ctx.expect(
            shown.foreign,
            f"find reported the object commented {comment!r} as the job's (submission "
            f"{shown.submission}, attempt {shown.attempt}), not foreign",
        )
        ctx.expect(
            (shown.submission, shown.attempt) == (None, None),
            f"find guessed submission {shown.submission} and attempt {shown.attempt} from the "
            f"unparsable comment {comment!r}",
        )
    ctx.expect(ref.id in seen and not seen[ref.id].foreign, f"find lost the job's own {ref.id}")
    before = {i: snapshot(seen[i]) for i in foreign}
    call(ctx, f"stop({ref.id}) of the job's own object", lambda: ctx.backend.stop(ref))
    after = found(ctx, job, "after stopping the job's own object")
    for native_id, comment in foreign.items():
        now = snapshot(after[native_id]) if native_id in after else None
        ctx.expect(
            now == before[native_id],
            f"stopping the job's own object changed the foreign object commented {comment!r} "
            f"from {before[native_id]} to {now}",
        )


@check("IDENT-005", clause=f"{SEED_001}, The comment: a comment lost from accounting is unknown")
def lost_comment_is_unknown(ctx: Context) -> None:
    """An ended object whose comment history lost has its submission unknown; it is not foreign."""
    plan = ctx.plan()
    ref = ctx.start(plan, submission=1, attempt=1)
    ctx.faults.lose_comments()
    run(ctx, ref)
    ctx.faults.finish(ref, 0)
    ctx.faults.purge(ref)
    seen = found(ctx, plan.job, "after the object ended and left the live view")
    if ref.id not in seen:
        history = ctx.declared(Capability.ACCOUNTING_HISTORY)
        if history is not Tristate.YES:
            raise Skip(
                f"adapter declares AccountingHistory {history} and kept no history of the "
                "purged object"
            )
        ctx.fail(f"find dropped the purged object {ref.id} though AccountingHistory is yes")
    shown = seen[ref.id]
    ctx.expect(not shown.foreign, "find reported the object whose comment history lost as foreign")
    ctx.expect(
        (shown.submission, shown.attempt) == (None, None),
        f"find reported submission {shown.submission} and attempt {shown.attempt} for an object "
        "whose comment history did not keep: they are unknown",
    )


# -- start ----------------------------------------------------------------------------------------


@check(
    "IDENT-006",
    clause="DESIGN §3, Backend.start: idempotent per (job, submission)",
    tier=Tier.SMOKE,
)
def start_is_idempotent(ctx: Context) -> None:
    """start is idempotent per (job, submission): starting it again returns the same object."""
    plan = ctx.plan()
    first = ctx.start(plan, submission=1, attempt=1)
    again = call(ctx, "a second start of submission 1", lambda: ctx.backend.start(plan, 1, 1))
    ctx.expect(
        again == first, f"a second start of submission 1 made {show(again)}, not {show(first)}"
    )
    reopened = ctx.reopen()
    after = call(ctx, "start of submission 1 after reopen", lambda: reopened.start(plan, 1, 1))
    ctx.expect(
        after == first,
        f"start of submission 1 by a reopened adapter made {show(after)}, not {show(first)}",
    )
    second = ctx.start(plan, submission=2, attempt=1)
    ctx.expect(second.id != first.id, f"start of submission 2 returned submission 1's {first.id}")
    repeat = call(ctx, "a second start of submission 2", lambda: ctx.backend.start(plan, 2, 1))
    ctx.expect(
        repeat == second, f"a second start of submission 2 made {show(repeat)}, not {show(second)}"
    )
    seen = found(ctx, plan.job, "after starting submissions 1 and 2 twice each")
    ctx.expect(
        sorted(seen) == sorted({first.id, second.id}),
        f"find returned objects {sorted(seen)} after starting submissions 1 and 2 (objects "
        f"{first.id} and {second.id}) twice each",
    )


@check("IDENT-007", clause="DESIGN §5, a reply lost after the command took effect")
def lost_start_reply(ctx: Context) -> None:
    """A start whose reply was lost, started again, leaves one object for that submission."""
    plan = ctx.plan()
    ctx.faults.lose_next_reply("start")
    lost: ObjectRef | None = None
    try:
        lost = ctx.start(plan, submission=1, attempt=1)
    except OutcomeUnknown:
        pass
    except DispatchError as error:
        ctx.fail(
            f"start with its reply lost raised {type(error).__name__} ({error}), not OutcomeUnknown"
        )
    ref = call(ctx, "start again after the lost reply", lambda: ctx.start(plan, 1, 1))
    if lost is not None:
        ctx.expect(
            ref == lost, f"start again made {show(ref)} after the first returned {show(lost)}"
        )
    seen = found(ctx, plan.job, "after the lost reply and the second start")
    ids = sorted(i for i, o in seen.items() if not o.foreign)
    ctx.expect(ids == [ref.id], f"find returned objects {ids} for one submission started twice")


# -- writes after id reuse ------------------------------------------------------------------------


@check("IDENT-008", clause=f"{SEED_001}, The identity check: ids are reused")
def reuse_by_foreign_job(ctx: Context) -> None:
    """After a foreign job takes the id, open/hold/release/requeue raise NotFound; stop succeeds."""
    ref = ctx.start()
    stop(ctx, ref)
    expect_ended(ctx, ref, "after stop")
    ctx.faults.reuse_id(ref)
    writes_act_on_nothing(ctx, ref, None)


@check("IDENT-009", clause=f"{SEED_001}, The identity check: ids are reused")
def reuse_by_another_job(ctx: Context) -> None:
    """After another job's object takes the id, no write through the old ref acts on it."""
    ref = ctx.start()
    other = ctx.job_id()
    end_and_reuse_next(ctx, ref)
    ctx.faults.inject_named(other, other.discovery_name(), slurm_comment(1, 1))
    seen = found(ctx, other, "of the job that took the id")
    ctx.expect(len(seen) == 1, f"find of the job that took id {ref.id} returned {sorted(seen)}")
    [occupant] = [o.ref for o in seen.values()]
    occupied(ctx, ref, occupant, "reuse_id_next")
    writes_act_on_nothing(ctx, ref, occupant)


@check("IDENT-010", clause=f"{SEED_001}, The object, and Submit as its anchor")
def reuse_by_later_submission(ctx: Context) -> None:
    """After a later submission of the job takes the id, no write through the old ref acts on it."""
    plan = ctx.plan(long_spec(ctx))
    ref = ctx.start(plan, submission=1, attempt=1)
    end_and_reuse_next(ctx, ref)
    occupant = ctx.start(plan, submission=2, attempt=1)
    occupied(ctx, ref, occupant, "reuse_id_next")
    writes_act_on_nothing(ctx, ref, occupant)
    seen = look(ctx, occupant, "of submission 2 after the stale writes")
    ctx.expect(
        seen.submission == 2 and not seen.state.ended,
        f"open of submission 2 after the stale writes showed submission {seen.submission} "
        f"{seen.state}",
    )


# -- requeue and stop -----------------------------------------------------------------------------


def requeue_keeps_the_ref(ctx: Context, how: str) -> None:
    """Run, requeue (``how``), then: open through the started ref works, shows the same object
    with a submit never earlier (later when the uid is the name) and a higher restart count;
    find shows one object; hold, release and stop still act through the ref."""
    plan = ctx.plan(long_spec(ctx))
    ref = ctx.start(plan, submission=1, attempt=1)
    pause(ctx.clock, 1.0)  # a requeue in the same second could not move submit forward
    before = run(ctx, ref)
    requeue(ctx, ref, how)
    look(ctx, ref, "through the started ref right after the requeue")
    after = back_in_queue(ctx, ref)
    ctx.expect(
        (after.ref.id, after.ref.uid) == (ref.id, ref.uid),
        f"open after the requeue showed object {after.ref.id} ({after.ref.uid}), "
        f"not {ref.id} ({ref.uid})",
    )
    ctx.expect(
        after.ref.submit >= ref.submit,
        f"open after the requeue showed submit {after.ref.submit.isoformat()}, earlier than "
        f"the started ref's {ref.submit.isoformat()}",
    )
    if named_by_job(ref):
        ctx.expect(
            after.ref.submit > ref.submit,
            f"open after the requeue showed submit {after.ref.submit.isoformat()}, not later "
            f"than the started ref's {ref.submit.isoformat()}: a requeue moves submit forward",
        )
    if after.restart_count is not None and before.restart_count is not None:
        ctx.expect(
            after.restart_count > before.restart_count,
            f"open after the requeue showed restart count {after.restart_count} "
            f"(it was {before.restart_count})",
        )
    ctx.expect(not after.state.ended, f"open after the requeue showed it {after.state}")
    listed = call(ctx, f"find({plan.job}) after the requeue", lambda: ctx.backend.find(plan.job))
    ids = sorted({o.ref.id for o in listed})
    ctx.expect(ids == [ref.id], f"find returned objects {ids} after the requeue of {ref.id}")
    shown = [o.ref for o in listed]
    ctx.expect(
        after.ref in shown,
        f"find showed the requeued object as {', '.join(map(show, shown))}; open showed it as "
        f"{show(after.ref)}",
    )
    holder = as_holder(ctx)
    declared = ctx.declared(Capability.HOLD) is Tristate.YES
    if holder is not None and declared and after.state is State.QUEUED:
        number = call(
            ctx, "hold through the started ref after the requeue", lambda: holder.hold(ref)
        )
        call(
            ctx,
            f"release({ref.id}, {number}) through the started ref after the requeue",
            lambda: holder.release(ref, number),
        )
    call(ctx, "stop through the started ref after the requeue", lambda: ctx.backend.stop(ref))
    expect_ended(ctx, ref, "after stop through the started ref")


@check("IDENT-011", clause=f"{SEED_001}, The identity check: a requeue moves submit forward")
def adapter_requeue(ctx: Context) -> None:
    """A requeue through the adapter keeps the ref valid and moves submit forward, never back."""
    if as_requeuer(ctx) is None:
        raise Skip("adapter implements no Requeuer: it has no requeue of its own")
    requeue_keeps_the_ref(ctx, "adapter")


@check("IDENT-012", clause=f"{SEED_001}, The identity check: a requeue moves submit forward")
def requeue_underneath_keeps_the_ref(ctx: Context) -> None:
    """A requeue underneath the adapter keeps the ref valid and moves submit forward, never back."""
    requeue_keeps_the_ref(ctx, "underneath")


@check("IDENT-013", clause=f"{SEED_001}, The identity check: Stop also checks that the job ended")
def stop_verifies_the_end(ctx: Context) -> None:
    """stop returns only once the object has ended (open shows it ended, or NotFound once gone)."""
    queued = ctx.start(ctx.plan(long_spec(ctx)))
    call(ctx, f"stop({queued.id}) of a queued object", lambda: ctx.backend.stop(queued))
    expect_ended(ctx, queued, "after stop of the queued object")
    call(ctx, f"a second stop({queued.id})", lambda: ctx.backend.stop(queued))
    expect_ended(ctx, queued, "after a second stop")
    running = ctx.start(ctx.plan(long_spec(ctx)))
    try:
        run(ctx, running)
    except CannotInject:
        return  # the queued case is all this harness can show
    call(ctx, f"stop({running.id}) of a running object", lambda: ctx.backend.stop(running))
    expect_ended(ctx, running, "after stop of the running object")


# -- identity inside the job ----------------------------------------------------------------------


def rank_spec(ctx: Context) -> JobSpec:
    """Two nodes, and two processes on each when the adapter honours ProcsPerNode."""
    per_node = 2 if ctx.declared(Capability.PROCS_PER_NODE) is Tristate.YES else 0
    return long_spec(ctx, nodes=2, procs_per_node=per_node)


Lifetime = tuple[JobID, list[tuple[ObjectRef, int, int]]]


def lifetime(ctx: Context, requeues: int) -> Lifetime:
    """One job's objects over a life of requeues and a resubmission: submission 1 runs and is
    requeued ``requeues`` times (running again after each) and is stopped; then submission 2
    runs, is requeued at most once and is stopped. The job, and each object with its
    submission and how many times it ran, in order."""
    plan = ctx.plan(rank_spec(ctx))
    objects: list[tuple[ObjectRef, int, int]] = []
    for submission, times in ((1, requeues), (2, min(requeues, 1))):
        ref = ctx.start(plan, submission=submission, attempt=1)
        run(ctx, ref)
        for _ in range(times):
            requeue_somehow(ctx, ref)
            run(ctx, ref)
        stop(ctx, ref, f"of submission {submission}")
        objects.append((ref, submission, 1 + times))
    return plan.job, objects


def identities(ctx: Context, life: Lifetime) -> list[ExecutionIdentity]:
    """The identity of every execution, in order. Every rank's environment must parse and agree
    with the job, the object's submission and the execution's rank 0."""
    job, objects = life
    seen: list[ExecutionIdentity] = []
    for ref, submission, runs in objects:
        executions = ctx.executions(ref)
        ctx.expect(
            len(executions) >= runs,
            f"the object {ref.id} ran {runs} time(s) but showed {len(executions)} execution(s)",
        )
        for number, ranks in enumerate(executions, 1):
            ctx.expect(bool(ranks), f"execution {number} of {ref.id} showed no rank")
            first: ExecutionIdentity | None = None
            for rank, env in enumerate(ranks):
                where = f"rank {rank} of execution {number} of {ref.id} (submission {submission})"
                try:
                    identity = parse_execution_env(env)
                except EncodingError as error:
                    raise CheckFailed(f"{where} saw no valid identity: {error}") from None
                ctx.expect(
                    identity.job == job,
                    f"{where} saw DISPATCH_JOB={identity.job}, not the job's {job}",
                )
                ctx.expect(
                    identity.submission == submission,
                    f"{where} saw DISPATCH_SUBMISSION={identity.submission}, not {submission}",
                )
                first = first or identity
                ctx.expect(
                    identity == first,
                    f"{where} saw DISPATCH_ATTEMPT={identity.attempt}, but rank 0 of the same "
                    f"execution saw {first.attempt}",
                )
            if first is not None:
                seen.append(first)
    return seen


@check("IDENT-014", clause=f"{SEED_000}, AttemptInjection; DESIGN §4", tier=Tier.SMOKE)
def every_rank_sees_identity(ctx: Context) -> None:
    """Every rank of every execution sees the four DISPATCH_ variables of its job and submission."""
    try:
        life = lifetime(ctx, requeues=1)
    except CannotInject as missing:
        if not missing.fault.startswith("requeue"):
            raise
        life = lifetime(ctx, requeues=0)  # no requeue here: resubmission is what it can show
    identities(ctx, life)


@check("IDENT-015", clause=f"{SEED_000}, Execution identity: its DISPATCH_ATTEMPT differs")
def attempts_never_repeat(ctx: Context) -> None:
    """No two executions of a job share DISPATCH_ATTEMPT, across requeues and resubmissions."""
    attempts = [i.attempt for i in identities(ctx, lifetime(ctx, requeues=2))]
    repeated = sorted({a for a in attempts if attempts.count(a) > 1})
    ctx.expect(
        not repeated, f"executions repeated DISPATCH_ATTEMPT {repeated} (in order: {attempts})"
    )


@check("IDENT-016", clause=f"{SEED_000}, Execution identity: its DISPATCH_EPOCH is higher")
def epochs_increase(ctx: Context) -> None:
    """Each execution's DISPATCH_EPOCH is above all earlier ones, across requeues and resubmits."""
    epochs = [i.epoch for i in identities(ctx, lifetime(ctx, requeues=2))]
    ctx.expect(
        all(a < b for a, b in pairwise(epochs)),
        f"executions saw DISPATCH_EPOCH {epochs} in order: not strictly increasing",
    )
