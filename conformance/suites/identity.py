"""Identity (``IDENT-``): the adapter never acts on a scheduler object that is not the ref's
(seed 001), and every execution runs under its own identity (seed 000, DESIGN §4).

The checks read the harness's :class:`~conformance.harness.IdentityModel` (how ``find`` looks
objects up, whether ids are reused, whether a requeue moves ``submit``) and state their faults
as intents (:class:`~conformance.harness.LookAlike`), which each harness encodes for its
scheduler."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import pairwise
from typing import Final, cast

from conformance.checks import CheckFailed, Context, Needs, Skip, SkippedFor, check
from conformance.harness import (
    CannotInject,
    Fault,
    LookAlike,
    Lookup,
    Probe,
    Race,
    ReplyLoss,
    look_alike_need,
    race_need,
    reply_loss_need,
)
from conformance.steps import (
    as_holder,
    as_requeuer,
    back_in_queue,
    call,
    end_and_reuse_next,
    expect_ended,
    fired,
    found,
    long_spec,
    look,
    occupied,
    ref_text,
    requeue,
    requeue_somehow,
    requeued_since,
    run,
    runs_again,
    started_meanwhile,
    stop,
    taken_by_a_requeued_case_variant,
    timed_out,
    visible,
    writes_act_on_nothing,
)
from conformance.suites.clauses import DESIGN_REOBSERVE, DESIGN_STALE_WRITE, SEED_000, SEED_001
from conformance.tiers import Tier
from dispatch_core import (
    Capability,
    Cause,
    DispatchError,
    EncodingError,
    EpochBound,
    ExecutionIdentity,
    Holder,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    Policy,
    Rejected,
    Requeuer,
    Rule,
    RuleKind,
    State,
    Tristate,
    parse_execution_env,
)
from dispatch_core.clock import pause

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
    if ctx.identity.lookup is Lookup.NAME:
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
        mine.ref == ref,
        f"find returned the object as {ref_text(mine.ref)}; start made {ref_text(ref)}",
    )
    ctx.expect(not mine.foreign, "find reported the job's own started object as foreign")
    ctx.expect(
        not mine.restart_count,
        f"find reported restart count {mine.restart_count} for the object just started: a "
        "count above zero says the scheduler requeued it (seed 001)",
    )
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


def injected(
    ctx: Context, job: JobID, kind: LookAlike, other: JobID | None = None, most: int = 0
) -> dict[str, str]:
    """Every form of look-alike ``kind`` the harness makes of ``job``'s objects (at ``most``
    forms spread evenly over them, when given): native id to a description of the form."""
    faults = ctx.faults
    made: dict[str, str] = {}
    forms = faults.look_alike_forms(kind)
    variants = (
        range(forms) if not most or forms <= most else (i * forms // most for i in range(most))
    )
    for variant in variants:
        native = faults.inject_look_alike(job, kind, variant, other=other)
        made[native] = faults.describe_look_alike(kind, variant)
    return made


def look_alikes_are_not_the_job(ctx: Context, kind: LookAlike, other: JobID | None = None) -> None:
    """Objects that look like the job's (every form of ``kind``), carrying a valid identity,
    are neither found as the job's nor taken by start as an earlier submission."""
    plan = ctx.plan()
    job = plan.job
    made = injected(ctx, job, kind, other)
    ref = ctx.start(plan, submission=1, attempt=1)
    ctx.expect(
        ref.id not in made,
        f"start returned {ref.id}, the look-alike {made.get(ref.id)!r}, as the job's "
        "submission 1 instead of submitting it",
    )
    seen = found(ctx, job, f"with look-alikes ({kind.value}) present")
    taken = sorted(made[i] for i in seen if i in made)
    ctx.expect(not taken, f"find reported the look-alikes {taken} as the job's")
    ctx.expect(ref.id in seen, f"find did not return the job's own object {ref.id}")


@check(
    "IDENT-002",
    clause=f"{SEED_001}, The name: squeue matches names without regard to case",
    needs=Needs(faults=(look_alike_need(LookAlike.CASE_VARIANT),)),
)
def case_variants(ctx: Context) -> None:
    """find matches exactly: objects keyed by a case variant of the job's key are not the job's."""
    look_alikes_are_not_the_job(ctx, LookAlike.CASE_VARIANT)


@check(
    "IDENT-003",
    clause=f"{SEED_001}, The name: squeue splits a list of names on commas",
    needs=Needs(faults=(look_alike_need(LookAlike.COMMA_LIST),)),
)
def comma_names(ctx: Context) -> None:
    """find matches exactly: objects whose key lists the job's with commas are not the job's."""
    look_alikes_are_not_the_job(ctx, LookAlike.COMMA_LIST, other=ctx.job_id())


def foreign_look_alikes(ctx: Context, kind: LookAlike) -> None:
    """Objects with the job's exact key and an identity that does not parse, or one under a
    native id it does not imply (every form of ``kind``), are foreign: reported by find, never
    taken by start, untouched by a stop."""
    plan = ctx.plan(long_spec(ctx))
    job = plan.job
    foreign = injected(ctx, job, kind)
    ref = ctx.start(plan, submission=1, attempt=1)
    ctx.expect(
        ref.id not in foreign,
        f"start returned {ref.id}, the object {foreign.get(ref.id)!r}, as the job's "
        "submission 1 instead of submitting it",
    )
    seen = found(ctx, job, "with foreign objects present")
    for native_id, form in foreign.items():
        ctx.expect(native_id in seen, f"find dropped the object {native_id} ({form})")
        shown = seen[native_id]
        ctx.expect(
            shown.foreign,
            f"find reported the object {native_id} ({form}) as the job's (submission "
            f"{shown.submission}, attempt {shown.attempt}), not foreign",
        )
        ctx.expect(
            (shown.submission, shown.attempt) == (None, None),
            f"find guessed submission {shown.submission} and attempt {shown.attempt} from the "
            f"object {native_id} ({form})",
        )
    ctx.expect(ref.id in seen and not seen[ref.id].foreign, f"find lost the job's own {ref.id}")
    again = call(ctx, "a second start of submission 1", lambda: ctx.backend.start(plan, 1, 1))
    ctx.expect(
        again == ref,
        f"a second start of submission 1, with the foreign objects present, made "
        f"{ref_text(again)}, not {ref_text(ref)}",
    )
    before = {i: visible(seen[i]) for i in foreign}
    call(ctx, f"stop({ref.id}) of the job's own object", lambda: ctx.backend.stop(ref))
    after = found(ctx, job, "after stopping the job's own object")
    for native_id, form in foreign.items():
        now = visible(after[native_id]) if native_id in after else None
        ctx.expect(
            now == before[native_id],
            f"stopping the job's own object changed the foreign object {native_id} ({form}) "
            f"from {before[native_id]} to {now}",
        )
    for native_id, form in foreign.items():
        if native_id in after:
            never_acted_on(ctx, after[native_id], form)


def never_acted_on(ctx: Context, shown: Observation, form: str) -> None:
    """A hold or requeue through the ref find gave the foreign object ``shown`` is refused
    (Rejected, or NotFound: DESIGN §4, a foreign object is never acted on), and leaves it as
    it was."""
    ref = shown.ref
    writes: list[tuple[str, Callable[[], object]]] = []
    holder, requeuer = as_holder(ctx), as_requeuer(ctx)
    if holder is not None and ctx.declared(Capability.HOLD) is Tristate.YES:
        writes.append(("hold", lambda: holder.hold(ref)))
    if requeuer is not None:
        writes.append(("requeue", lambda: requeuer.requeue(ref)))
    for name, write in writes:
        what = f"{name}({ref.id}) of the foreign object ({form}), through the ref find gave it"
        try:
            write()
        except (Rejected, NotFound):
            pass
        except Exception as error:  # another answer, or an adapter's bug: the check says which
            ctx.fail(f"{what} raised {type(error).__name__} ({error}), not Rejected nor NotFound")
        else:
            ctx.fail(f"{what} returned: a foreign object is never acted on")
        try:
            now = visible(ctx.backend.open(ref))
        except NotFound:
            continue  # gone meanwhile: nothing was done to it that open could show
        ctx.expect(
            now == visible(shown),
            f"{what} changed it from {visible(shown)} to {now}",
        )


@check(
    "IDENT-004",
    clause=f"{SEED_001}, The comment: a name whose comment does not parse is foreign",
    needs=Needs(faults=(look_alike_need(LookAlike.UNPARSABLE_IDENTITY),)),
)
def unparsable_comment_is_foreign(ctx: Context) -> None:
    """An object with the job's key and an unparsable identity is foreign: reported, never used."""
    foreign_look_alikes(ctx, LookAlike.UNPARSABLE_IDENTITY)


@check(
    "IDENT-023",
    clause=f"{SEED_001}, The comment: exactly that shape; DESIGN §4, canonical decimals",
    needs=Needs(faults=(look_alike_need(LookAlike.NEAR_IDENTITY),)),
)
def near_identity_is_foreign(ctx: Context) -> None:
    """An identity one step off the grammar (a number, the shape) is foreign, reported, not used."""
    foreign_look_alikes(ctx, LookAlike.NEAR_IDENTITY)


@check(
    "IDENT-071",
    clause=(
        f"{SEED_001}, The comment: a name whose comment does not parse is foreign; DESIGN §11: "
        "the TrainJob of submission N is named dj-<ulid>-<N>"
    ),
    needs=Needs(faults=(look_alike_need(LookAlike.MISNAMED),)),
)
def misnamed_is_foreign(ctx: Context) -> None:
    """An object with the job's key and identity under a native id it does not imply is foreign.

    Another submission's id, the implied id with a suffix or a prefix, its number spelled with
    a leading zero, an id of its own: the identity and the id must agree exactly."""
    foreign_look_alikes(ctx, LookAlike.MISNAMED)


@check(
    "IDENT-005",
    clause=f"{SEED_001}, The comment: a comment lost from accounting is unknown",
    needs=Needs(
        faults=(Fault.LOSE_IDENTITY_HISTORY, Fault.LET_RUN, Fault.FINISH, Fault.PURGE),
        identity=("history_outlives_live",),
    ),
)
def lost_comment_is_unknown(ctx: Context) -> None:
    """An ended object whose identity history lost has its submission unknown; it is not foreign."""
    plan = ctx.plan()
    ref = ctx.start(plan, submission=1, attempt=1)
    ctx.faults.lose_identity_history()
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
    ctx.expect(not shown.foreign, "find reported the object whose identity history lost as foreign")
    ctx.expect(
        (shown.submission, shown.attempt) == (None, None),
        f"find reported submission {shown.submission} and attempt {shown.attempt} for an object "
        "whose identity history did not keep: they are unknown",
    )


@check(
    "IDENT-017",
    clause=f"{SEED_001}, The comment: a name whose comment does not parse is foreign",
    needs=Needs(faults=(look_alike_need(LookAlike.NO_IDENTITY),)),
)
def no_identity_is_foreign(ctx: Context) -> None:
    """A live object with the job's key and no identity at all is foreign: reported, never used."""
    foreign_look_alikes(ctx, LookAlike.NO_IDENTITY)


@check(
    "IDENT-018",
    clause=f"{SEED_001}, Find sees only your own jobs",
    needs=Needs(faults=(look_alike_need(LookAlike.OTHER_USER),)),
)
def other_users_objects_are_not_found(ctx: Context) -> None:
    """find sees only the user's own objects: another user's with the job's key is not found."""
    look_alikes_are_not_the_job(ctx, LookAlike.OTHER_USER)


MIXED_FORMS = 6
"""At most this many forms of each kind are present at once in IDENT-019 (each kind's checks
try all of its forms; here the point is the mix, within a small cluster's id space)."""


@check("IDENT-019", clause=f"{SEED_001}, The name; The comment", tier=Tier.FULL)
def every_look_alike_at_once(ctx: Context) -> None:
    """With every look-alike kind the harness makes present at once, find reports only the job's."""
    plan = ctx.plan(long_spec(ctx))
    job = plan.job
    made: dict[str, tuple[LookAlike, str]] = {}
    kinds = [k for k in LookAlike if ctx.harness.lacking(look_alike_need(k)) is None]
    if not kinds:
        raise CannotInject("any look-alike (the harness offers no look_alike:<kind>)")
    for kind in kinds:
        for native, form in injected(ctx, job, kind, ctx.job_id(), MIXED_FORMS).items():
            made[native] = (kind, form)
    ref = ctx.start(plan, submission=1, attempt=1)
    ctx.expect(ref.id not in made, f"start returned the look-alike {made.get(ref.id)}")
    seen = found(ctx, job, f"with {len(made)} look-alikes of {len(kinds)} kinds present")
    ctx.expect(ref.id in seen and not seen[ref.id].foreign, f"find lost the job's own {ref.id}")
    for native, (kind, form) in made.items():
        shown = seen.get(native)
        if kind.foreign:
            how = "dropped" if shown is None else "reported as the job's"
            ctx.expect(
                shown is not None and shown.foreign,
                f"find {how} the {kind.value} look-alike {native} ({form}): it is foreign, "
                "reported",
            )
        else:
            ctx.expect(
                shown is None or shown.foreign,
                f"find reported the {kind.value} look-alike {native} ({form}) as the job's",
            )


# -- find across the live view and history ------------------------------------------------------


def each_once(
    ctx: Context, job: JobID, expected: dict[str, str], when: str
) -> dict[str, Observation]:
    """``find(job)`` reports every object of ``expected`` (native id to what it is) exactly once,
    and nothing else: each object is one observation, whatever history holds of it."""
    listed = call(ctx, f"find({job}) {when}", lambda: ctx.backend.find(job))
    ids = [o.ref.id for o in listed]
    twice = [f"{i} ({expected.get(i, 'unknown')})" for i in sorted(set(ids)) if ids.count(i) > 1]
    ctx.expect(
        not twice,
        f"find {when} reported {', '.join(twice)} more than once: an object is one "
        "observation, whatever history holds of it",
    )
    missing = [f"{i} ({what})" for i, what in expected.items() if i not in ids]
    ctx.expect(not missing, f"find {when} dropped {', '.join(missing)}")
    extra = sorted(set(ids) - set(expected))
    ctx.expect(not extra, f"find {when} reported objects {extra} the check never made")
    return {o.ref.id: o for o in listed}


def gone(ctx: Context, ref: ObjectRef, what: str) -> None:
    """Stop the object and let it leave the live view (history, if kept, stays)."""
    stop(ctx, ref, f"of {what}")
    expect_ended(ctx, ref, f"after stop of {what}")
    ctx.faults.purge(ref)


@check(
    "IDENT-040",
    clause=f"{SEED_001}, The identity check: a requeue moves submit forward; {DESIGN_REOBSERVE}",
    needs=Needs(
        faults=(Fault.LET_RUN, Fault.REQUEUE_UNDERNEATH, Fault.PURGE, Fault.LAG_HISTORY),
        identity=("history_outlives_live",),
    ),
)
def history_behind_the_live_view(ctx: Context) -> None:
    """With history behind a requeue, find shows each object once: live, or only in history."""
    plan = ctx.plan(long_spec(ctx))
    queued = ctx.start(plan, submission=1, attempt=1)
    early = ctx.start(plan, submission=2, attempt=1)
    gone(ctx, early, "submission 2")
    requeued = ctx.start(plan, submission=3, attempt=1)
    late = ctx.start(plan, submission=4, attempt=1)
    gone(ctx, late, "submission 4")
    pause(ctx.clock, 1.0)  # a requeue in the same second could not move submit forward
    run(ctx, requeued)
    ctx.faults.lag_history(requeued)
    requeue(ctx, requeued, "underneath")
    back = back_in_queue(ctx, requeued)
    expected = {
        queued.id: "submission 1, queued",
        early.id: "submission 2, stopped and gone from the live view",
        requeued.id: "submission 3, requeued, history not yet caught up",
        late.id: "submission 4, stopped and gone from the live view",
    }
    seen = each_once(ctx, plan.job, expected, "with history behind the requeue of submission 3")
    shown = seen[requeued.id]
    ctx.expect(
        shown.ref == back.ref and not shown.state.ended,
        f"find showed the requeued {requeued.id} as {ref_text(shown.ref)} {shown.state}; open "
        f"shows it {ref_text(back.ref)} {back.state}: the live object, not its history",
    )
    for ref, submission in ((early, 2), (late, 4)):
        ctx.expect(
            seen[ref.id].state.ended and seen[ref.id].submission in (submission, None),
            f"find showed submission {submission} ({ref.id}) {seen[ref.id].state} with "
            f"submission {seen[ref.id].submission}: it was stopped",
        )


def end_again(ctx: Context, ref: ObjectRef, fault: str, act: Callable[[], None]) -> bool:
    """Run the object, let ``fault`` hit it, and see whether it came back to the queue (True:
    run again next) or ended (False)."""
    run(ctx, ref)
    pause(ctx.clock, 1.0)
    act()
    seen = look(ctx, ref, f"after {fault}")
    if seen.state.ended:
        return False
    back_in_queue(ctx, ref)
    return True


@check(
    "IDENT-041",
    clause=f"{SEED_001}, The object, and Submit as its anchor; DESIGN §4, Observations",
    needs=Needs(
        interfaces=(Requeuer,),
        faults=(Fault.LET_RUN, Fault.FINISH, Fault.PURGE, Fault.LOSE_NODE, Fault.PREEMPT),
        identity=("history_outlives_live",),
    ),
)
def requeued_history_is_one_object(ctx: Context) -> None:
    """Requeued, node-lost and preempted, then ended and gone, an object is still one object."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    plan = ctx.plan(long_spec(ctx))
    ref = ctx.start(plan, submission=1, attempt=1)
    steps: list[tuple[str, Callable[[], None]]] = [
        (f"requeue({ref.id})", lambda: call(ctx, "requeue", lambda: requeuer.requeue(ref))),
        ("the loss of its node", lambda: ctx.faults.lose_node(ref)),
        ("its preemption", lambda: ctx.faults.preempt(ref)),
    ]
    ended = False
    for fault, act in steps:
        if not end_again(ctx, ref, fault, act):
            ended = True
            break
    if not ended:
        run(ctx, ref)
        ctx.faults.finish(ref, LOST_EXIT)
    ctx.faults.purge(ref)
    # A later submission whose node is lost, gone too, then one more that stays queued.
    lost = ctx.start(plan, submission=2, attempt=1)
    run(ctx, lost)
    ctx.faults.lose_node(lost)
    if not look(ctx, lost, "after the loss of its node").state.ended:
        stop(ctx, lost, "of submission 2, requeued by the loss of its node")
    ctx.faults.purge(lost)
    queued = ctx.start(plan, submission=3, attempt=1)
    # find alone judges here: open's late read of an ended object is CAP-017's.
    expected = {
        ref.id: "submission 1: requeued, node lost, preempted, ended, gone from the live view",
        lost.id: "submission 2: its node lost, gone from the live view",
        queued.id: "submission 3, queued",
    }
    listed = each_once(ctx, plan.job, expected, "after submissions 1 and 2 ended and left")
    shown = listed[ref.id]
    ctx.expect(
        shown.state.ended,
        f"find showed submission 1 ({ref.id}) {shown.state} ({shown.cause}): its last "
        "incarnation ended",
    )
    if not ended:
        ctx.expect(
            (shown.state, shown.cause) == (State.FAILED, Cause.EXIT_CODE),
            f"find showed submission 1 ({ref.id}), whose command exited {LOST_EXIT}, "
            f"{shown.state} ({shown.cause}), not failed with cause exit_code",
        )
    ctx.expect(
        listed[lost.id].state.ended and not listed[queued.id].state.ended,
        f"find showed submission 2 ({lost.id}) {listed[lost.id].state} and submission 3 "
        f"({queued.id}) {listed[queued.id].state}",
    )


LOST_EXIT = 3
"""The exit code of IDENT-041's object after its requeues."""


@check(
    "IDENT-042",
    clause=f"{SEED_001}, The comment: a name whose comment does not parse is foreign",
    needs=Needs(
        faults=(
            Fault.LET_RUN,
            Fault.FINISH,
            Fault.PURGE,
            look_alike_need(LookAlike.NO_IDENTITY),
            look_alike_need(LookAlike.UNPARSABLE_IDENTITY),
        ),
        identity=("history_outlives_live",),
    ),
)
def foreign_stays_foreign_in_history(ctx: Context) -> None:
    """A foreign object gone from the live view is foreign still (unknown if history lost it)."""
    plan = ctx.plan(long_spec(ctx))
    job = plan.job
    made = {
        ctx.faults.inject_look_alike(job, kind): ctx.faults.describe_look_alike(kind)
        for kind in (LookAlike.NO_IDENTITY, LookAlike.UNPARSABLE_IDENTITY)
    }
    live = found(ctx, job, "with foreign objects present")
    for native, form in made.items():
        ctx.expect(native in live, f"find dropped the foreign object {native} ({form})")
        ref = live[native].ref
        ctx.faults.let_run(ref)
        ctx.faults.finish(ref, 0)
        ctx.faults.purge(ref)
    kept = ctx.declared(Capability.ACCOUNTING_HISTORY) is Tristate.YES
    seen = found(ctx, job, "after the foreign objects ended and left the live view")
    for native, form in made.items():
        shown = seen.get(native)
        if shown is None:
            ctx.fail(f"find dropped the foreign object {native} ({form}) after it ended")
            return
        ctx.expect(
            (shown.submission, shown.attempt) == (None, None) and (shown.foreign or not kept),
            f"find reported the foreign object {native} ({form}), gone from the live view, with "
            f"submission {shown.submission} and attempt {shown.attempt}, foreign {shown.foreign}"
            + (": the adapter declares AccountingHistory yes, so it is foreign" if kept else ""),
        )


@check(
    "IDENT-043",
    clause=f"{SEED_001}, The name; {SEED_000}, AccountingHistory: a cluster may keep none",
    needs=Needs(faults=(Fault.DISABLE_HISTORY,)),
)
def find_without_history(ctx: Context) -> None:
    """With the target's history switched off, find and open still see the live objects."""
    plan = ctx.plan(long_spec(ctx))
    ref = ctx.start(plan, submission=1, attempt=1)
    ctx.faults.disable_history()
    seen = found(ctx, plan.job, "with the target's history switched off")
    shown = seen.get(ref.id)
    ctx.expect(
        shown is not None and not shown.foreign and shown.submission == 1,
        f"find with the target's history switched off showed the live object {ref.id} as "
        f"{None if shown is None else visible(shown)} (submission "
        f"{None if shown is None else shown.submission}): the live view still shows it",
    )
    seen_open = look(ctx, ref, "with the target's history switched off")
    ctx.expect(not seen_open.state.ended, f"open showed the live {ref.id} {seen_open.state}")


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
        again == first,
        f"a second start of submission 1 made {ref_text(again)}, not {ref_text(first)}",
    )
    reopened = ctx.reopen()
    after = call(ctx, "start of submission 1 after reopen", lambda: reopened.start(plan, 1, 1))
    ctx.expect(
        after == first,
        f"start of submission 1 by a reopened adapter made {ref_text(after)}, "
        f"not {ref_text(first)}",
    )
    second = ctx.start(plan, submission=2, attempt=1)
    ctx.expect(second.id != first.id, f"start of submission 2 returned submission 1's {first.id}")
    repeat = call(ctx, "a second start of submission 2", lambda: ctx.backend.start(plan, 2, 1))
    ctx.expect(
        repeat == second,
        f"a second start of submission 2 made {ref_text(repeat)}, not {ref_text(second)}",
    )
    seen = found(ctx, plan.job, "after starting submissions 1 and 2 twice each")
    ctx.expect(
        sorted(seen) == sorted({first.id, second.id}),
        f"find returned objects {sorted(seen)} after starting submissions 1 and 2 (objects "
        f"{first.id} and {second.id}) twice each",
    )


LOST_CLAUSE = "DESIGN §5, a reply lost after the command took effect"


def lost_start(ctx: Context, fault: str, arm: Callable[[], None]) -> None:
    """The job's submission 1 runs already; submission 2's start under the fault ``arm``
    makes, then again (:func:`lost_start_reply_once`)."""
    plan = ctx.plan()
    earlier = ctx.start(plan, submission=1, attempt=1)
    arm()
    lost_start_reply_once(ctx, plan, earlier, fault)


@check("IDENT-007", clause=LOST_CLAUSE, needs=Needs(faults=(Fault.LOSE_NEXT_REPLY,)))
def lost_start_reply(ctx: Context) -> None:
    """A start whose reply was lost (timeout), started again, leaves one object for that submission.

    Submission 1 runs already: the answers are submission 2's object, never the earlier one."""
    lost_start(
        ctx,
        "lose_next_reply(start) as a timeout",
        lambda: ctx.faults.lose_next_reply("start", ReplyLoss.TIMEOUT),
    )


@check(
    "IDENT-065",
    clause=LOST_CLAUSE,
    needs=Needs(faults=(reply_loss_need(ReplyLoss.FAILURE),)),
)
def lost_start_reply_as_a_failure(ctx: Context) -> None:
    """A start lost as a failure (no scheduler reached), started again, leaves one object for it.

    The failure says the scheduler could not be reached after the request went out."""
    lost_start(
        ctx,
        "lose_next_reply(start) as a failure",
        lambda: ctx.faults.lose_next_reply("start", ReplyLoss.FAILURE),
    )


@check(
    "IDENT-066",
    clause=LOST_CLAUSE,
    needs=Needs(faults=(reply_loss_need(ReplyLoss.GARBLED),)),
)
def lost_start_reply_garbled(ctx: Context) -> None:
    """A start whose success was cut off is read back, or OutcomeUnknown; one object for it.

    The cut-off success names nothing: OutcomeUnknown only when find shows no object of it."""
    lost_start(
        ctx,
        "lose_next_reply(start) as a garbled",
        lambda: ctx.faults.lose_next_reply("start", ReplyLoss.GARBLED),
    )


@check(
    "IDENT-067",
    clause="DESIGN §5, a command that timed out before it took effect",
    needs=Needs(faults=(Fault.FAIL_BEFORE_EFFECT,)),
)
def start_timed_out_before_effect(ctx: Context) -> None:
    """A start timed out before its effect, started again, leaves one object for its submission."""
    lost_start(ctx, "fail_before_effect(start)", lambda: ctx.faults.fail_before_effect("start"))


def start_under_fault(
    ctx: Context, plan: Plan, submission: int, fault: str, what: str
) -> ObjectRef | None:
    """``start`` of ``submission`` (attempt 1) with ``fault`` armed before it: its ref, or
    None when it raised OutcomeUnknown (any other error fails the check); the fault fired."""
    lost: ObjectRef | None = None
    try:
        lost = ctx.start(plan, submission=submission, attempt=1)
    except OutcomeUnknown:
        pass
    except DispatchError as error:
        ctx.fail(f"{what} raised {type(error).__name__} ({error}), not OutcomeUnknown")
    fired(ctx, fault.partition(" ")[0], what)
    return lost


def lost_start_reply_once(ctx: Context, plan: Plan, earlier: ObjectRef, fault: str) -> None:
    """Submission 2's start under ``fault``, then again: one object for it, not ``earlier``
    (submission 1's)."""
    what = f"start of submission 2 with the fault {fault}"
    lost = start_under_fault(ctx, plan, 2, fault, what)
    if lost is None and fault.endswith(ReplyLoss.GARBLED.value):
        # The command said it succeeded: the object is there to be read back.
        seen = found(ctx, plan.job, f"after the {what} raised OutcomeUnknown")
        own = sorted(i for i, o in seen.items() if not o.foreign and o.submission == 2)
        ctx.expect(
            not own,
            f"{what} raised OutcomeUnknown, yet its command said it succeeded and find shows "
            f"submission 2's object {own}",
        )
    ref = call(ctx, f"start again after the {what}", lambda: ctx.start(plan, 2, 1))
    for answer, said in ((lost, what), (ref, f"start again after the {what}")):
        ctx.expect(
            answer is None or answer.id != earlier.id,
            f"{said} returned {ref_text(earlier)}, submission 1's object, as submission 2's",
        )
    if lost is not None:
        ctx.expect(
            ref == lost,
            f"start again made {ref_text(ref)} after the {what} returned {ref_text(lost)}",
        )
    seen = found(ctx, plan.job, f"after the {what} and the second start")
    ids = sorted(i for i, o in seen.items() if not o.foreign and o.submission == 2)
    ctx.expect(
        ids == [ref.id], f"find returned objects {ids} for one submission started twice ({fault})"
    )


LOST_START_FORMS = 1
"""How many forms of each look-alike kind IDENT-072 makes per start it tries, and OBS-006 per
job: every kind the harness makes, for each of IDENT-072's two jobs, all present until the
check ends, must fit a small
cluster's id space beside the jobs' own (slurm-containers: MaxJobId 20; with three forms,
30 held look-alikes left sbatch waiting for a free id, stop 40)."""
START_CLAUSE = "DESIGN §3, Backend.start: idempotent per (job, submission)"


def offered_look_alikes(ctx: Context) -> list[LookAlike]:
    """Every look-alike kind the harness makes (CannotInject, before anything ran, for none)."""
    kinds = [k for k in LookAlike if ctx.harness.lacking(look_alike_need(k)) is None]
    if not kinds:
        raise CannotInject("any look-alike (the harness offers no look_alike:<kind>)")
    return kinds


@check(
    "IDENT-072",
    clause=f"{LOST_CLAUSE}; {START_CLAUSE}",
    needs=Needs(faults=(Fault.FAIL_BEFORE_EFFECT, Fault.LOSE_NEXT_REPLY)),
)
def lost_start_among_look_alikes(ctx: Context) -> None:
    """A start retried after a lost reply never answers with a look-alike of its submission.

    A few forms of every look-alike kind the harness makes are present, the job's key and
    submission 1 on many of them, when submission 1's start times out before its effect, and
    for another job when its reply is lost after it: each start, and the next, answers with the
    submission's own object (or OutcomeUnknown), the only one find shows as submission 1."""
    kinds = offered_look_alikes(ctx)
    lost_start_among(
        ctx, kinds, "fail_before_effect(start)", lambda: ctx.faults.fail_before_effect("start")
    )
    lost_start_among(
        ctx,
        kinds,
        "lose_next_reply(start) as a timeout",
        lambda: ctx.faults.lose_next_reply("start", ReplyLoss.TIMEOUT),
    )


def lost_start_among(
    ctx: Context, kinds: list[LookAlike], fault: str, arm: Callable[[], None]
) -> None:
    """A new job's look-alikes of ``kinds``, then its submission 1's start under ``fault``
    and again: never a look-alike's ref, and one object of submission 1."""
    plan = ctx.plan(long_spec(ctx))
    made: dict[str, str] = {}
    for kind in kinds:
        for native, form in injected(ctx, plan.job, kind, ctx.job_id(), LOST_START_FORMS).items():
            made[native] = f"the {kind.value} look-alike {native} ({form})"
    what = f"start of submission 1 with {len(made)} look-alikes present and the fault {fault}"
    arm()
    lost = start_under_fault(ctx, plan, 1, fault, what)
    ref = call(ctx, f"start again after the {what}", lambda: ctx.start(plan, 1, 1))
    for answer, said in ((lost, what), (ref, f"start again after the {what}")):
        if answer is not None:
            ctx.expect(
                answer.id not in made,
                f"{said} answered with {made.get(answer.id)}, not the submission's own object",
            )
    if lost is not None:
        ctx.expect(
            ref == lost,
            f"start again made {ref_text(ref)} after the {what} returned {ref_text(lost)}",
        )
    seen = found(ctx, plan.job, f"after the {what} and the second start")
    taken = sorted(made[i] for i, o in seen.items() if i in made and not o.foreign)
    ctx.expect(not taken, f"find after the {what} reported {taken} as the job's")
    own = sorted(i for i, o in seen.items() if not o.foreign and o.submission == 1)
    ctx.expect(
        own == [ref.id],
        f"find returned objects {own} as submission 1, started twice ({fault}) as {ref.id}",
    )


@check(
    "IDENT-073",
    clause=f"{START_CLAUSE}; {SEED_001}, The identity check: the uid or submit time anchors it",
    needs=Needs(faults=(Fault.RECREATE,)),
)
def start_after_the_object_was_recreated(ctx: Context) -> None:
    """A start of a submission whose object was recreated answers with the copy, not the gone one.

    The copy, made under the object's id from its manifest, is the submission's object now
    (find shows it so): a start again, by the same adapter and by a reopened one, answers with
    the copy's ref, never with the deleted object's."""
    plan = ctx.plan(long_spec(ctx))
    stale = ctx.start(plan, submission=1, attempt=1)
    ctx.faults.recreate(stale)
    seen = found(ctx, plan.job, "after the object was created again under its id")
    copy = seen.get(stale.id)
    if copy is None:
        raise CheckFailed(
            f"find({plan.job}) after the object {stale.id} was created again from its manifest "
            f"returned {sorted(seen)}: the copy carries the job's key and identity, and is its "
            "object"
        )
    for who, backend in (("the same adapter", ctx.backend), ("a reopened adapter", ctx.reopen())):
        what = f"a start of submission 1 again by {who} once its object was recreated"
        again = call(ctx, what, partial(backend.start, plan, 1, 1))
        ctx.expect(
            again != stale,
            f"{what} answered with {ref_text(stale)}, the object that was deleted (the copy is "
            f"{ref_text(copy.ref)})",
        )
        ctx.expect(
            again == copy.ref,
            f"{what} made {ref_text(again)}, not the copy find shows ({ref_text(copy.ref)})",
        )


@check(
    "IDENT-074",
    clause=(
        f"{START_CLAUSE}; {SEED_001}, The comment: a name whose comment does not parse is "
        "foreign, reported and never used"
    ),
    needs=Needs(faults=(Fault.TAKE_ID_AHEAD,)),
)
def start_meets_its_id_taken(ctx: Context) -> None:
    """A start whose native id another writer took first never answers with the taker's object.

    Another client made an object of its own, with no dispatch identity, under the id the
    start of submission 1 gives its object: that start, and a start again, raise or answer
    with another object; find never shows the taker as the job's; and the taker is left as
    the scheduler's own listing showed it."""
    plan = ctx.plan(long_spec(ctx))
    taken = ctx.faults.take_id_ahead(plan.job, 1)
    was = ctx.listing().get(taken)
    for what in ("a start of submission 1", "a start of submission 1 again"):
        what = f"{what} (whose native id {taken} another writer's object took first)"
        try:
            ref = ctx.backend.start(plan, 1, 1)
        except DispatchError:
            continue
        ctx.expect(
            ref.id != taken,
            f"{what} answered with that object ({ref_text(ref)}): it carries no identity of "
            "the job's and is never used",
        )
    seen = found(ctx, plan.job, f"after two starts met {taken}, taken first")
    ctx.expect(
        taken not in seen or seen[taken].foreign,
        f"find reported {taken}, another writer's object under the id submission 1 would "
        f"take, as the job's (submission {seen[taken].submission if taken in seen else None})",
    )
    now = ctx.listing().get(taken)
    ctx.expect(
        was is None or (now is not None and now.state is was.state),
        f"the object {taken} another writer made was {was.state.value if was else 'unlisted'} "
        f"before the starts and is {now.state.value if now else 'gone'} after them: no write "
        "lands on an object whose identity check failed",
    )


VANISH_CLAUSE = (
    f"{SEED_001}, The identity check: ids are reused; DESIGN §3, re-observe never assume"
)


@check("IDENT-060", clause=VANISH_CLAUSE, needs=Needs(faults=(Fault.VANISH_BEFORE_READ_BACK,)))
def vanished_before_read_back(ctx: Context) -> None:
    """A start or stop whose object vanishes before the read-back answers for it, not another.

    The object ends and leaves the live view right after a start took effect, or just before
    a stop's call: start returns that object, or OutcomeUnknown only when find cannot tell it
    either; stop returns."""
    vanished_start(ctx, reuse=False)
    vanished_stop(ctx, reuse=False, early=True, how="whose object ended and left the live view "
                  "just before its call")  # fmt: skip


@check(
    "IDENT-069",
    clause=VANISH_CLAUSE,
    needs=Needs(faults=(Fault.VANISH_BEFORE_READ_BACK, Fault.REUSE_ID)),
)
def vanished_and_taken_before_read_back(ctx: Context) -> None:
    """A start or stop whose object vanishes and whose id is taken answers for it, not the taker.

    start returns its own object or OutcomeUnknown; stop returns with its own object ended."""
    vanished_start(ctx, reuse=True)
    vanished_stop(ctx, reuse=True, early=False, how="whose object then left the live view and "
                  "had its id taken")  # fmt: skip


def vanished_start(ctx: Context, *, reuse: bool) -> None:
    plan = ctx.plan(long_spec(ctx))
    ctx.faults.vanish_before_read_back("start", reuse_id=reuse)
    what = "start of submission 1 whose object ended, left the live view" + (
        " and had its id taken by another's object" if reuse else ""
    )
    made: ObjectRef | None = None
    try:
        made = ctx.start(plan, submission=1, attempt=1)
    except OutcomeUnknown:
        pass  # allowed: judged by what find shows below
    except DispatchError as error:
        ctx.fail(f"{what} raised {type(error).__name__} ({error}), not a ref")
    fired(ctx, "vanish_before_read_back(start)", what)
    seen = found(ctx, plan.job, f"after the {what}")
    own = sorted(i for i, o in seen.items() if not o.foreign and o.submission == 1)
    if made is None:
        ctx.expect(
            not own,
            f"{what} raised OutcomeUnknown, yet find shows submission 1's object {own}: "
            "its reply named the object, and the adapter can read it",
        )
        return
    ctx.expect(
        all(seen[i].ref == made for i in own),
        f"{what} returned {ref_text(made)}, but find shows submission 1 as "
        f"{[ref_text(seen[i].ref) for i in own]}",
    )
    expect_ended(ctx, made, f"of the ref the {what} returned")


def vanished_stop(ctx: Context, *, reuse: bool, early: bool, how: str) -> None:
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    ctx.faults.vanish_before_read_back("stop", reuse_id=reuse, early=early)
    what = f"stop({ref.id}), {how}"
    stop(ctx, ref, how)
    fired(ctx, "vanish_before_read_back(stop)", what)
    expect_ended(ctx, ref, f"after the {what}")


@check("IDENT-024", clause=f"{SEED_000}, Execution identity; DESIGN §4: N and R below 1,000,000")
def start_refuses_numbers_out_of_range(ctx: Context) -> None:
    """start refuses a submission or attempt outside [1, 1,000,000) and makes no object for it."""
    plan = ctx.plan(long_spec(ctx))
    last = EpochBound - 1
    # Nor is a value that is no int in it: a bool is an int to Python and 1.0 equals 1, yet
    # neither is a submission number; the refusal is a DispatchError, never a crash.
    refused: tuple[tuple[object, object], ...] = (
        (0, 1),
        (1, 0),
        (-1, 1),
        (EpochBound, 1),
        (1, EpochBound),
        (True, 1),
        (1, True),
        (1.0, 1),
        (1, 2.5),
        ("1", 1),
    )
    for submission, attempt in refused:
        try:
            made = ctx.start(plan, submission=cast(int, submission), attempt=cast(int, attempt))
        except DispatchError:
            continue
        except Exception as error:  # the adapter must refuse with its own errors
            ctx.fail(
                f"start(submission={submission!r}, attempt={attempt!r}) raised "
                f"{type(error).__name__} ({error}), not a DispatchError"
            )
        ctx.fail(
            f"start(submission={submission!r}, attempt={attempt!r}) made {ref_text(made)}: both "
            f"numbers must be ints in [1, {EpochBound})"
        )
    edge = call(
        ctx,
        f"start(submission={last}, attempt={last})",
        lambda: ctx.start(plan, submission=last, attempt=last),
    )
    seen = found(ctx, plan.job, "after the refused starts and one at the bound")
    ctx.expect(
        sorted(seen) == [edge.id],
        f"find returned {sorted(seen)} after refused starts and one start at the bound "
        f"({edge.id}): a refused start made an object",
    )
    shown = seen.get(edge.id)
    ctx.expect(
        shown is not None and (shown.submission, shown.attempt) == (last, last),
        f"find reported the start at the bound with submission and attempt "
        f"{(shown.submission, shown.attempt) if shown else None}, not {(last, last)}",
    )


@check("IDENT-025", clause=f"{SEED_001}, The identity check; DESIGN §4, ObjectRef: its cluster")
def a_ref_of_another_cluster_is_not_found(ctx: Context) -> None:
    """A ref naming another cluster is never this adapter's: writes through it act on nothing."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    elsewhere = ref.model_copy(update={"backend": f"{ref.backend}-elsewhere"})
    writes_act_on_nothing(ctx, elsewhere, ref)


def altered_ids(native: str) -> list[str]:
    """``native`` cut just after each separator (a character neither letter nor digit) and
    after its first character, and lengthened by a digit: ``ns/dj-1`` gives ``n``, ``ns/``,
    ``ns/dj-`` and ``ns/dj-10``; ``7`` gives ``70``."""
    cuts = {native[:1]} | {native[: i + 1] for i, c in enumerate(native[:-1]) if not c.isalnum()}
    return [*sorted(cuts - {native}), native + "0"]


@check("IDENT-057", clause=f"{SEED_001}, The identity check; DESIGN §4, ObjectRef: its native id")
def a_ref_with_an_altered_id_is_not_found(ctx: Context) -> None:
    """A ref whose native id was altered names no object: writes through it act on nothing.

    The id is cut short after a separator or lengthened; the uid and submit time stay the
    object's, and the object is left as it was."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    for altered in altered_ids(ref.id):
        writes_act_on_nothing(ctx, ref.model_copy(update={"id": altered}), ref)


# -- writes after id reuse ------------------------------------------------------------------------


@check(
    "IDENT-008",
    clause=f"{SEED_001}, The identity check: ids are reused",
    needs=Needs(faults=(Fault.REUSE_ID,), identity=("reuses_ids",)),
)
def reuse_by_foreign_job(ctx: Context) -> None:
    """After a foreign job takes the id, open/hold/release/requeue raise NotFound; stop succeeds."""
    ref = ctx.start()
    stop(ctx, ref)
    expect_ended(ctx, ref, "after stop")
    ctx.faults.reuse_id(ref)
    writes_act_on_nothing(ctx, ref, None)


@check(
    "IDENT-009",
    clause=f"{SEED_001}, The identity check: ids are reused",
    needs=Needs(faults=(Fault.REUSE_ID_NEXT,), identity=("reuses_ids",)),
)
def reuse_by_another_job(ctx: Context) -> None:
    """After another job's object takes the id, no write through the old ref acts on it."""
    ref = ctx.start()
    other = ctx.plan(long_spec(ctx))
    end_and_reuse_next(ctx, ref)
    occupant = ctx.start(other, submission=1, attempt=1)
    occupied(ctx, ref, occupant, "reuse_id_next")
    writes_act_on_nothing(ctx, ref, occupant)


@check(
    "IDENT-010",
    clause=f"{SEED_001}, The object, and Submit as its anchor",
    needs=Needs(faults=(Fault.REUSE_ID_NEXT,), identity=("reuses_ids",)),
)
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


@check(
    "IDENT-022",
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
def reused_by_a_requeued_case_variant(ctx: Context) -> None:
    """A requeued case variant holding a reused id is not the ref's: writes act on nothing."""
    stale = taken_by_a_requeued_case_variant(ctx, ctx.plan(long_spec(ctx)))
    writes_act_on_nothing(ctx, stale, None)


@check(
    "IDENT-054",
    clause=f"{SEED_001}, The identity check: the uid or submit time anchors the object",
    needs=Needs(faults=(Fault.RECREATE,)),
)
def writes_after_the_object_was_recreated(ctx: Context) -> None:
    """A copy made under the ref's id from its manifest is not the ref's: writes act on nothing."""
    plan = ctx.plan(long_spec(ctx))
    stale = ctx.start(plan)
    ctx.faults.recreate(stale)
    # The copy carries the job's lookup key and identity: find shows it as the job's object, and
    # only the uid or submit time tells the stale ref from it (a write riding on no precondition,
    # a delete by name alone, lands on the copy).
    seen = found(ctx, plan.job, "after the object was created again under its id")
    copy = seen.get(stale.id)
    if copy is None:
        raise CheckFailed(
            f"find({plan.job}) after the object {stale.id} was created again from its manifest "
            f"returned {sorted(seen)}: the copy carries the job's key and identity, and is its "
            "object"
        )
    ctx.expect(
        (copy.submission, copy.attempt) == (1, 1),
        f"find reported the copy of {stale.id} with submission and attempt "
        f"{(copy.submission, copy.attempt)}, not the (1, 1) its manifest carries",
    )
    occupied(ctx, stale, copy.ref, "recreate")
    writes_act_on_nothing(ctx, stale, copy.ref)


# -- requeue and stop -----------------------------------------------------------------------------


def requeue_keeps_the_ref(ctx: Context, how: str) -> None:
    """Run (restart count 0 or unknown), requeue (``how``), then: open through the started ref
    works, shows the same object with a submit never earlier (later when the uid is the name)
    and a higher restart count;
    find shows one object; hold, release and stop still act through the ref."""
    plan = ctx.plan(long_spec(ctx))
    ref = ctx.start(plan, submission=1, attempt=1)
    pause(ctx.clock, 1.0)  # a requeue in the same second could not move submit forward
    before = run(ctx, ref)
    # seed 001: a restart count above zero says the scheduler requeued the object, and loosens
    # its identity check (a later submit time is then allowed)
    ctx.expect(
        not before.restart_count,
        f"open showed restart count {before.restart_count} for {ref.id}, started once and "
        "never requeued: a count above zero says it was",
    )
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
    if ctx.identity.requeue_moves_submit:
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
        f"find showed the requeued object as {', '.join(map(ref_text, shown))}; open showed it as "
        f"{ref_text(after.ref)}",
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


@check(
    "IDENT-011",
    clause=f"{SEED_001}, The identity check: a requeue moves submit forward",
    needs=Needs(interfaces=(Requeuer,), faults=(Fault.LET_RUN,)),
)
def adapter_requeue(ctx: Context) -> None:
    """A requeue through the adapter keeps the ref valid and moves submit forward, never back."""
    requeue_keeps_the_ref(ctx, "adapter")


@check(
    "IDENT-012",
    clause=f"{SEED_001}, The identity check: a requeue moves submit forward",
    needs=Needs(faults=(Fault.LET_RUN, Fault.REQUEUE_UNDERNEATH)),
)
def requeue_underneath_keeps_the_ref(ctx: Context) -> None:
    """A requeue underneath the adapter keeps the ref valid and moves submit forward, never back."""
    requeue_keeps_the_ref(ctx, "underneath")


STOP_CLAUSE = f"{SEED_001}, The identity check: Stop also checks that the job ended"


@check("IDENT-013", clause=STOP_CLAUSE)
def stop_verifies_the_end(ctx: Context) -> None:
    """stop of a queued object returns only once it has ended, and so does a second stop.

    Ended: open shows it ended, or NotFound once it is gone."""
    queued = ctx.start(ctx.plan(long_spec(ctx)))
    call(ctx, f"stop({queued.id}) of a queued object", lambda: ctx.backend.stop(queued))
    expect_ended(ctx, queued, "after stop of the queued object")
    call(ctx, f"a second stop({queued.id})", lambda: ctx.backend.stop(queued))
    expect_ended(ctx, queued, "after a second stop")


@check("IDENT-062", clause=STOP_CLAUSE, needs=Needs(faults=(Fault.IGNORE_NEXT_STOP,)))
def stop_the_scheduler_ignored(ctx: Context) -> None:
    """A stop the scheduler acknowledged but did not carry out is not claimed: OutcomeUnknown.

    The next stop, carried out, ends the object."""
    # Only a read-back tells the acknowledged stop from the one carried out.
    ignored = ctx.start(ctx.plan(long_spec(ctx)))
    ctx.faults.ignore_next_stop(ignored)
    what = f"stop({ignored.id}), which the scheduler acknowledged and did not carry out"
    try:
        ctx.backend.stop(ignored)
    except OutcomeUnknown:
        pass  # what the rule asks for
    except DispatchError as error:
        ctx.fail(f"{what} raised {type(error).__name__} ({error}), not OutcomeUnknown")
    else:
        ctx.fail(f"{what} returned: the object has not ended")
    fired(ctx, "ignore_next_stop", what)
    call(ctx, f"stop({ignored.id}) again", lambda: ctx.backend.stop(ignored))
    expect_ended(ctx, ignored, "after the stop that was carried out")


@check("IDENT-063", clause=STOP_CLAUSE, needs=Needs(faults=(Fault.LET_RUN,)))
def stop_of_a_running_object(ctx: Context) -> None:
    """stop of a running object returns only once it has ended (open shows it ended, or gone)."""
    running = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, running)
    call(ctx, f"stop({running.id}) of a running object", lambda: ctx.backend.stop(running))
    expect_ended(ctx, running, "after stop of the running object")


@check(
    "IDENT-064",
    clause=STOP_CLAUSE,
    needs=Needs(faults=(Fault.LET_RUN, Fault.REQUEUE_UNDERNEATH)),
)
def stop_while_a_requeue_is_under_way(ctx: Context) -> None:
    """A stop while the scheduler's requeue of the object is under way ends it, wherever it is.

    Meanwhile open's restart count says the scheduler requeued it."""
    requeued = ctx.start(ctx.plan(long_spec(ctx)))
    ran = run(ctx, requeued)
    ctx.faults.requeue_underneath(requeued, in_flight=True)
    under_way = look(ctx, requeued, "while a requeue of it is under way")
    if under_way.restart_count is not None and ran.restart_count is not None:
        # seed 001: the restart count is what says the scheduler requeued it
        ctx.expect(
            under_way.restart_count > ran.restart_count,
            f"open while the scheduler's requeue of {requeued.id} is under way showed "
            f"{visible(under_way)}; running, it showed {visible(ran)}: the count does not "
            "say it was requeued",
        )
    what = f"stop({requeued.id}) while a requeue of it is under way"
    call(ctx, what, lambda: ctx.backend.stop(requeued))
    expect_ended(ctx, requeued, f"after the {what}")


# -- writes whose command timed out ------------------------------------------------------------


@check(
    "IDENT-020",
    clause=DESIGN_REOBSERVE,
    needs=Needs(faults=(Fault.LET_RUN, Fault.FAIL_BEFORE_EFFECT)),
)
def timed_out_stop_reads_back(ctx: Context) -> None:
    """A stop timed out before its effect reads back: the object ended, or OutcomeUnknown."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.fail_before_effect("stop")
    what = f"stop({ref.id}) of the running object"
    returned, _ = timed_out(ctx, what, lambda: ctx.backend.stop(ref))
    fired(ctx, "fail_before_effect(stop)", what)
    if returned:
        expect_ended(ctx, ref, f"after {what} returned though its command timed out")
    else:
        # OutcomeUnknown: nothing was assumed; the next stop, whose command answers, ends it.
        stop(ctx, ref, "again, after the first one's OutcomeUnknown")
        expect_ended(ctx, ref, "after the second stop")


@check(
    "IDENT-068",
    clause=DESIGN_REOBSERVE,
    needs=Needs(faults=(Fault.LET_RUN, Fault.FAIL_EVERY_TRY)),
)
def stop_every_try_timed_out(ctx: Context) -> None:
    """A stop whose every try times out before its effect returns only with the object ended.

    Else OutcomeUnknown (Kubernetes: an API server answering 500 for a while)."""
    second = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, second)
    ctx.faults.fail_every_try("stop")
    what = f"stop({second.id}) of the running object, every try timing out before its effect"
    returned, _ = timed_out(ctx, what, lambda: ctx.backend.stop(second))
    fired(ctx, "fail_every_try(stop)", what)
    if returned:
        expect_ended(ctx, second, f"after {what} returned")


@check(
    "IDENT-021",
    clause=DESIGN_REOBSERVE,
    needs=Needs(interfaces=(Requeuer,), faults=(Fault.LET_RUN, Fault.FAIL_BEFORE_EFFECT)),
)
def timed_out_requeue_reads_back(ctx: Context) -> None:
    """A requeue timed out before its effect reads back: the object requeued, or OutcomeUnknown."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    before = run(ctx, ref)
    ctx.faults.fail_before_effect("requeue")
    what = f"requeue({ref.id}) of the running object"
    returned, _ = timed_out(ctx, what, lambda: requeuer.requeue(ref))
    fired(ctx, "fail_before_effect(requeue)", what)
    if not returned:
        return
    seen = look(ctx, ref, f"after {what} returned though its command timed out")
    ctx.expect(
        requeued_since(before, seen),
        f"{what} returned though its command timed out before it took effect, and the object "
        f"was not requeued: open shows {visible(seen)} (before: {visible(before)})",
    )


@check(
    "IDENT-050",
    clause=DESIGN_REOBSERVE,
    needs=Needs(interfaces=(Requeuer,), faults=(Fault.LET_RUN, Fault.LOSE_NEXT_REPLY)),
)
def lost_requeue_reply(ctx: Context) -> None:
    """A requeue whose reply was lost answers what open then shows (requeued), or OutcomeUnknown."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    before = run(ctx, ref)
    ctx.faults.lose_next_reply("requeue")
    what = f"requeue({ref.id}) of the running object"
    try:
        requeuer.requeue(ref)
    except OutcomeUnknown:
        pass
    except DispatchError as error:
        ctx.fail(
            f"{what}, whose reply was lost after it took effect, raised {type(error).__name__} "
            f"({error}), not a return nor OutcomeUnknown"
        )
    fired(ctx, "lose_next_reply(requeue)", what)
    seen = look(ctx, ref, f"after {what}, whose reply was lost")
    ctx.expect(
        requeued_since(before, seen),
        f"{what} took effect and its reply was lost, yet the object is not requeued: open "
        f"shows {visible(seen)} (before: {visible(before)})",
    )


TOUCHED_REQUEUE: Final = (
    " (another writer changed its object just before the requeue's write landed, in nothing "
    "it depends on: the object is still as read, so a re-read and a second write land it)"
)


@check(
    "IDENT-061",
    clause=f"{DESIGN_REOBSERVE}; {DESIGN_STALE_WRITE}",
    needs=Needs(interfaces=(Requeuer,), faults=(Fault.LET_RUN, race_need(Race.TOUCHED))),
)
def requeue_meeting_another_write(ctx: Context) -> None:
    """A requeue lands though another writer touched the object just before its write.

    The write meets a newer version of an object still as the adapter read it (Kubernetes: a
    409 on the version read): it re-reads, judges and writes again, never OutcomeUnknown nor
    Rejected, and the object is requeued and runs again."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    before = run(ctx, ref)
    ctx.faults.race_next_write("requeue", Race.TOUCHED)
    what = f"requeue({ref.id}) of the running object{TOUCHED_REQUEUE}"
    call(ctx, what, lambda: requeuer.requeue(ref))
    fired(ctx, "race_next_write(requeue)", what)
    seen = look(ctx, ref, f"after {what}")
    ctx.expect(
        requeued_since(before, seen),
        f"{what} returned, but the object is not requeued: open shows {visible(seen)} "
        f"(before: {visible(before)})",
    )
    again = runs_again(ctx, ref, f"after {what}")
    ctx.expect(
        (again.restart_count or 0) > (before.restart_count or 0),
        f"{what} returned, and the object ran again with restart count "
        f"{again.restart_count}, as before it ({before.restart_count}): it was not rerun",
    )


@check(
    "IDENT-051",
    clause=DESIGN_REOBSERVE,
    needs=Needs(interfaces=(Requeuer,), faults=(Fault.LET_RUN, Fault.IGNORE_NEXT_WRITE)),
)
def ignored_requeue_not_claimed(ctx: Context) -> None:
    """A requeue the scheduler acknowledged but ignored is not claimed: OutcomeUnknown."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    for times in ("first", "second"):
        before = run(ctx, ref)
        ctx.faults.ignore_next_write("requeue")
        what = f"requeue({ref.id}) of the object running for the {times} time"
        returned, _ = timed_out(ctx, what, lambda: requeuer.requeue(ref))
        fired(ctx, "ignore_next_write(requeue)", what)
        if returned:
            seen = look(ctx, ref, f"after {what} returned")
            ctx.expect(
                requeued_since(before, seen),
                f"{what} returned, though the scheduler ignored it: open shows {visible(seen)} "
                f"(before: {visible(before)})",
            )
            return
        if times == "first":
            # Requeued for real, so that a restart count above 0 is no sign of the next one.
            requeue(ctx, ref, "adapter")
            back_in_queue(ctx, ref)


@check(
    "IDENT-052",
    clause=DESIGN_REOBSERVE,
    needs=Needs(interfaces=(Requeuer,), faults=(Fault.LET_RUN, Fault.FAIL_BETWEEN_STEPS)),
)
def requeue_cut_between_steps(ctx: Context) -> None:
    """A requeue cut between its steps is OutcomeUnknown or shows; a requeue then requeues once.

    The object then runs again (Kubernetes with Kueue: a requeue completed by reactivating the
    Workload its first step deactivated)."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    before = run(ctx, ref)
    ctx.faults.fail_between_steps("requeue")
    what = f"requeue({ref.id}) of the running object, cut between its steps"
    returned, _ = timed_out(ctx, what, lambda: requeuer.requeue(ref))
    fired(ctx, "fail_between_steps(requeue)", what)
    seen = look(ctx, ref, f"after {what}")
    requeued = requeued_since(before, seen)
    if returned:
        ctx.expect(
            requeued,
            f"{what}, returned, and the object was not requeued: open shows {visible(seen)} "
            f"(before: {visible(before)})",
        )
        return
    # OutcomeUnknown: the first step may show (Kubernetes: the TrainJob suspended, its pods
    # gone, no new execution prepared), and nothing was assumed: the next requeue, whose calls
    # answer, completes it, and the object is requeued once in all.
    call(ctx, f"requeue({ref.id}) again, after the cut one", lambda: requeuer.requeue(ref))
    requeued_once(ctx, ref, before, "after the cut requeue and the next")


def requeued_once(ctx: Context, ref: ObjectRef, before: Observation, after: str) -> None:
    """Two requeue calls of which the first did not complete (``after`` says how) requeued the
    object once in all: back in the queue with a restart count one above ``before``'s (or
    unknown), and it runs again."""
    seen = back_in_queue(ctx, ref)
    ctx.expect(
        seen.restart_count is None or seen.restart_count == (before.restart_count or 0) + 1,
        f"{after}, open shows {visible(seen)} (before: {visible(before)}): requeued once, not "
        f"{seen.restart_count}",
    )
    runs_again(ctx, ref, after)


@check(
    "IDENT-053",
    clause=f"{DESIGN_REOBSERVE}; {SEED_001}, What else rides on Submit: a requeue",
    needs=Needs(interfaces=(Requeuer,), faults=(Fault.LET_RUN, Fault.REQUEUE_UNDERNEATH)),
)
def requeue_of_a_held_requeued_object(ctx: Context) -> None:
    """A requeue of an object requeued and held underneath is Rejected: it is pending, held."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.requeue_underneath(ref, held=True)  # CannotInject: the check does not run
    before = back_in_queue(ctx, ref)
    what = f"requeue({ref.id}) of the object requeued and held underneath"
    ctx.expect_raises(Rejected, lambda: requeuer.requeue(ref), what)
    seen = look(ctx, ref, f"after the refused {what}")
    ctx.expect(
        visible(seen) == visible(before),
        f"the refused {what} changed it from {visible(before)} to {visible(seen)}",
    )


@check(
    "IDENT-058",
    clause=f"{SEED_001}, What else rides on Submit: a requeue; DESIGN §4, Slurm holds",
    needs=Needs(interfaces=(Requeuer,)),
)
def requeue_of_a_queued_object(ctx: Context) -> None:
    """A requeue of an object still queued, never started, is Rejected and changes nothing."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    before = look(ctx, ref, "before the requeue of the queued object")
    if before.state is not State.QUEUED:
        raise Skip(
            f"the scheduler started the object at once ({visible(before)})",
            SkippedFor.CIRCUMSTANCE,
        )
    refused_requeue(ctx, requeuer, ref, before, "queued")


@check(
    "IDENT-070",
    clause=f"{SEED_001}, What else rides on Submit: a requeue; DESIGN §4, Slurm holds",
    needs=Needs(capabilities=(Capability.HOLD,), interfaces=(Requeuer, Holder)),
)
def requeue_of_a_held_object(ctx: Context) -> None:
    """A requeue of an object the adapter holds is Rejected: it stays held, by its hold."""
    requeuer, holder = as_requeuer(ctx), as_holder(ctx)
    if requeuer is None or holder is None:  # declared in needs: the runner skipped it already
        raise Skip("adapter implements no Requeuer or no Holder")
    held_ref = ctx.start(ctx.plan(long_spec(ctx)))
    try:
        holder.hold(held_ref)
    except DispatchError:
        # the scheduler started it first: HOLD-006's answer, no verdict here
        raise Skip(
            f"the scheduler started {held_ref.id} before its hold landed", SkippedFor.CIRCUMSTANCE
        ) from None
    held_now = look(ctx, held_ref, "before the requeue of the held object")
    if held_now.state is not State.HELD:
        raise Skip(
            f"the hold left {held_ref.id} {visible(held_now)}, not held", SkippedFor.CIRCUMSTANCE
        )
    refused_requeue(ctx, requeuer, held_ref, held_now, "held")


def refused_requeue(
    ctx: Context, requeuer: Requeuer, ref: ObjectRef, before: Observation, how: str
) -> None:
    """``requeue(ref)`` of the object ``how`` (queued or held, as ``before`` shows it) raises
    Rejected and leaves it as it was."""
    what = f"requeue({ref.id}) of the {how} object"
    try:
        requeuer.requeue(ref)
    except Rejected:
        pass
    except DispatchError as error:
        raise CheckFailed(
            f"{what} raised {type(error).__name__} ({error}), not Rejected: only a started "
            f"object is requeued, and the adapter can see this one is {how}"
        ) from None
    else:
        ctx.fail(f"{what} returned instead of raising Rejected: only a started object is requeued")
    seen = look(ctx, ref, f"after the refused {what}")
    was, now = visible(before), visible(seen)
    ctx.expect(
        now == was or started_meanwhile(was, now),  # a real scheduler starts it on its own
        f"the refused {what} changed it from {was} to {now}",
    )


@check(
    "IDENT-059",
    clause=DESIGN_REOBSERVE,
    needs=Needs(interfaces=(Requeuer,), faults=(Fault.LET_RUN, Fault.FINISH, Fault.STALL_TEARDOWN)),
)
def requeue_whose_old_run_never_goes(ctx: Context) -> None:
    """A requeue waiting for an old run that never goes ends within a bound, then completes.

    The ended object's last run is never taken down (its teardown stalls): the first requeue
    raises OutcomeUnknown (or Rejected, changing nothing) within a bound of the clock, or returns
    with the object requeued; the next, once the teardown is done, requeues it, once in all."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped the check already
        raise Skip("adapter implements no Requeuer")
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.finish(ref, 3)
    before = look(ctx, ref, "after its execution failed (exit 3)")
    what = f"requeue({ref.id}) of the failed object, whose last run's teardown stalled"
    ctx.faults.stall_teardown(ref)
    try:  # the stall ends whatever the first requeue did, so that the cleanup can stop it
        returned = stalled_requeue(ctx, requeuer, ref, before, what)
    finally:
        ctx.faults.end_stall(ref)
    if returned is None:  # refused, and nothing changed
        return
    if not returned:
        again = f"requeue({ref.id}) again, once the teardown completed"
        call(ctx, again, lambda: requeuer.requeue(ref))
    requeued_once(ctx, ref, before, "after the stalled requeue and the next")


def stalled_requeue(
    ctx: Context, requeuer: Requeuer, ref: ObjectRef, before: Observation, what: str
) -> bool | None:
    """IDENT-059's first requeue: True when it returned (the object requeued), False on
    OutcomeUnknown, None when it was refused with nothing changed; anything else fails."""
    try:
        requeuer.requeue(ref)
    except OutcomeUnknown:
        return False
    except Rejected:
        seen = look(ctx, ref, f"after the refused {what}")
        ctx.expect(
            visible(seen) == visible(before),
            f"the refused {what} changed it from {visible(before)} to {visible(seen)}",
        )
        return None
    except DispatchError as error:
        raise CheckFailed(
            f"{what} raised {type(error).__name__} ({error}): it cannot know whether the run "
            "will go, so OutcomeUnknown"
        ) from None
    seen = look(ctx, ref, f"after {what}")
    ctx.expect(
        requeued_since(before, seen),
        f"{what} returned, and the object was not requeued: open shows {visible(seen)} "
        f"(before: {visible(before)})",
    )
    return True


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


@check(
    "IDENT-014",
    clause=f"{SEED_000}, AttemptInjection; DESIGN §4",
    tier=Tier.SMOKE,
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS,)),
    verifies=(Capability.ATTEMPT_INJECTION,),
)
def every_rank_sees_identity(ctx: Context) -> None:
    """Every rank of every execution sees the four DISPATCH_ variables of its job and submission.

    Across a resubmission; across requeues, IDENT-015 and IDENT-016 read every rank's four."""
    identities(ctx, lifetime(ctx, requeues=0))


@check(
    "IDENT-015",
    clause=f"{SEED_000}, Execution identity: its DISPATCH_ATTEMPT differs",
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS,)),
    # Where a gate is declared, every requeue here is a readmission through it (an eviction
    # underneath, or the adapter's deactivation): its new attempts are the gate's doing.
    verifies=(Capability.READMISSION_GATE,),
)
def attempts_never_repeat(ctx: Context) -> None:
    """No two executions of a job share DISPATCH_ATTEMPT, across requeues and resubmissions."""
    attempts = [i.attempt for i in identities(ctx, lifetime(ctx, requeues=2))]
    repeated = sorted({a for a in attempts if attempts.count(a) > 1})
    ctx.expect(
        not repeated, f"executions repeated DISPATCH_ATTEMPT {repeated} (in order: {attempts})"
    )


@check(
    "IDENT-055",
    clause=f"{SEED_000}, Execution identity: a hold and release; {DESIGN_REOBSERVE}",
    needs=Needs(
        capabilities=(Capability.HOLD,),
        interfaces=(Requeuer, Holder),
        faults=(Fault.LET_RUN, Fault.FAIL_BETWEEN_STEPS),
        probes=(Probe.EXECUTIONS,),
    ),
)
def released_after_it_ran(ctx: Context) -> None:
    """An object held after it ran runs, once released, under a new DISPATCH_ATTEMPT and EPOCH.

    Its requeue is cut between its steps, so the object may have stopped running with no new
    execution prepared (Kubernetes: suspended, its pods gone); it is held and released: the
    release, not only a requeue, must give the next run an identity of its own."""
    requeuer, holder = as_requeuer(ctx), as_holder(ctx)
    if requeuer is None or holder is None:  # declared in needs: the runner skipped it already
        raise Skip("adapter implements no Requeuer or no Holder")
    plan = ctx.plan(rank_spec(ctx))
    ref = ctx.start(plan, submission=1, attempt=1)
    run(ctx, ref)
    ctx.faults.fail_between_steps("requeue")
    what = f"requeue({ref.id}) of the running object, cut between its steps"
    timed_out(ctx, what, lambda: requeuer.requeue(ref))
    fired(ctx, "fail_between_steps(requeue)", what)
    number: int | None = None
    for _ in range(3):
        seen = look(ctx, ref, f"after {what}")
        if seen.state is State.QUEUED:
            try:
                number = holder.hold(ref)
                break
            except Rejected:
                pass  # the scheduler started it first: requeue it, and hold it again
        # Still running (the cut left it so: Slurm's Requeue=1 landed, its requeue did not) or
        # started meanwhile: requeued for real, then held back in the queue.
        what = f"requeue({ref.id}), whose object is {seen.state}"
        call(ctx, what, lambda: requeuer.requeue(ref))
        back_in_queue(ctx, ref)
    if number is None:
        raise Skip(
            "the scheduler started the requeued object before every hold of it landed",
            SkippedFor.CIRCUMSTANCE,
        )
    call(ctx, f"release({ref.id}, {number})", lambda: holder.release(ref, number))
    run(ctx, ref)
    stop(ctx, ref, "after its release")
    seen_ids = identities(ctx, (plan.job, [(ref, 1, 2)]))
    attempts = [i.attempt for i in seen_ids]
    epochs = [i.epoch for i in seen_ids]
    ctx.expect(
        len(set(attempts)) == len(attempts) and all(a < b for a, b in pairwise(epochs)),
        f"the executions of {ref.id}, held after it ran and released, saw DISPATCH_ATTEMPT "
        f"{attempts} and DISPATCH_EPOCH {epochs} in order: the release reran it under an "
        "identity it had",
    )


@check(
    "IDENT-016",
    clause=f"{SEED_000}, Execution identity: its DISPATCH_EPOCH is higher",
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS,)),
)
def epochs_increase(ctx: Context) -> None:
    """Each execution's DISPATCH_EPOCH is above all earlier ones, across requeues and resubmits."""
    epochs = [i.epoch for i in identities(ctx, lifetime(ctx, requeues=2))]
    ctx.expect(
        all(a < b for a, b in pairwise(epochs)),
        f"executions saw DISPATCH_EPOCH {epochs} in order: not strictly increasing",
    )


SELF_RESTART_BOUND: Final = 10
"""At most this many failed executions before the check gives up on the object ending (a
scheduler that counts its restarts in one digit allows nine)."""


@check(
    "IDENT-056",
    clause=(
        f"{SEED_001}, The identity check: a requeue moves submit forward; {SEED_000}, "
        "Execution identity: its DISPATCH_EPOCH is higher"
    ),
    needs=Needs(
        interfaces=(Requeuer,),
        faults=(Fault.LET_RUN, Fault.FINISH),
        probes=(Probe.SELF_RESTARTS, Probe.EXECUTIONS),
    ),
)
def requeue_after_the_schedulers_own_restarts(ctx: Context) -> None:
    """A requeue after the scheduler's own reruns shows a restart count above every earlier one.

    The object's scheduler reruns it by itself after each failure until it fails for good:
    open must show each rerun a restart count above the one before. The adapter then requeues
    it: open must show a restart count above every one it showed,
    and its executions, where they can be seen, DISPATCH_EPOCH in increasing order. The
    scheduler's own reruns count on the object (Kubernetes: the JobSet's
    ``status.restarts``, which starts again at 0 on the JobSet a requeue makes): a requeue that
    counts only the adapter's requeues hands a rerun a count the object had."""
    requeuer = as_requeuer(ctx)
    if requeuer is None:  # declared in needs: the runner skipped it already
        raise Skip("adapter implements no Requeuer")
    answer = ctx.backend.rules(Policy(rules=(Rule(kind=RuleKind.REQUEUE),)))[0].perform
    if answer.value is not Tristate.YES:
        raise Skip(f"adapter declares the requeue rule {answer.value}: {answer.reason}")
    spec = ctx.self_restarting_spec(long_spec(ctx))
    plan = ctx.plan(spec)
    ref = ctx.start(plan, submission=1, attempt=1)
    counts: list[int] = []
    running: list[int] = []  # the count open showed while each execution ran
    failed = 0
    seen = look(ctx, ref, "after its start")
    while not seen.state.ended:
        if failed >= SELF_RESTART_BOUND:
            raise CheckFailed(
                f"the scheduler reran {ref.id} after each of {failed} failed executions: it "
                "did not end failed"
            )
        seen = run(ctx, ref)
        if seen.restart_count is not None:
            counts.append(seen.restart_count)
            running.append(seen.restart_count)
        ctx.faults.finish(ref, 3)
        failed += 1
        seen = look(ctx, ref, f"after its execution {failed} failed (exit 3)")
        if seen.restart_count is not None:
            counts.append(seen.restart_count)
    ctx.expect(
        seen.state is State.FAILED,
        f"open showed {ref.id} {seen.state} after its execution {failed} failed (exit 3)",
    )
    ctx.expect(
        failed >= 2,
        f"{ref.id}, whose spec asks its scheduler to rerun it after a failure "
        f"({', '.join(f'{k}={v}' for k, v in sorted(spec.extensions.items()))}), ended at its "
        "first failure: the adapter did not carry what the spec asked for",
    )
    ctx.expect(
        all(a < b for a, b in pairwise(running)),
        f"open showed restart counts {running} while the executions of {ref.id} ran, one "
        "after another, its scheduler rerunning it after each failure: not strictly increasing",
    )
    call(
        ctx, f"requeue({ref.id}) of the object that failed for good", lambda: requeuer.requeue(ref)
    )
    after = look(ctx, ref, "after the requeue")
    ctx.expect(not after.state.ended, f"open after the requeue showed it {after.state}")
    if after.restart_count is not None and counts:
        ctx.expect(
            after.restart_count > max(counts),
            f"open after the requeue showed restart count {after.restart_count}; the object "
            f"had shown {counts} while its scheduler reran it",
        )
    run(ctx, ref)
    stop(ctx, ref, "after the requeue")
    epochs = [i.epoch for i in identities(ctx, (plan.job, [(ref, 1, failed + 1)]))]
    ctx.expect(
        all(a < b for a, b in pairwise(epochs)),
        f"the executions of {ref.id} (rerun by its scheduler, then requeued) saw DISPATCH_EPOCH "
        f"{epochs} in order: not strictly increasing",
    )
