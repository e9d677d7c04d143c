"""The stateful suite's machine: random programs of submit, find, hold, release, requeue,
stop and the harness's fault intents on one fresh backend, checked step by step against the
focus's invariant."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from ulid import ULID

from conformance.checks import CheckFailed, Context
from conformance.faults import Faults
from conformance.harness import (
    CannotInject,
    IdentityModel,
    LookAlike,
    look_alike_need,
)
from conformance.suites.stateful.model import (
    MAX_LOOK_ALIKES,
    MAX_OBJECTS,
    REQUEUE_SETTLE,
    USES,
    Focus,
    Injected,
    ObjectState,
    Tracked,
    changed,
    state_text,
)
from dispatch_core import (
    Backend,
    Clock,
    Conflict,
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
    Plan,
    Rejected,
    Requeuer,
    State,
    Unsupported,
    make_plan,
    parse_execution_env,
    with_job,
)
from dispatch_core.clock import pause

LOOK_ALIKE_DRAWS: tuple[LookAlike, ...] = (
    LookAlike.UNPARSABLE_IDENTITY,
    LookAlike.CASE_VARIANT,
    LookAlike.UNPARSABLE_IDENTITY,
    LookAlike.CASE_VARIANT,
    LookAlike.COMMA_LIST,
    LookAlike.NO_IDENTITY,
    LookAlike.OTHER_USER,
    LookAlike.MISNAMED,
)
"""The look-alike kinds a program draws from (those find most often gets wrong, twice)."""


def machine_spec(ctx: Context) -> JobSpec:
    """Two nodes, so that a second rank exists, running the harness's job command (on a
    simulator, ``true`` runs on in virtual time until a fault ends it; on a real cluster, a
    command that runs until the harness finishes it)."""
    return ctx.spec(nodes=2)


def active(
    name: str, extra: Callable[[Machine], bool] | None = None
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The rule ``name`` runs only under a focus that uses it (and when ``extra`` holds)."""

    def condition(self: Machine) -> bool:
        return name in USES[self.focus] and (extra is None or extra(self))

    return precondition(condition)


class Run:
    """One check's run of the machine: the context, the focus, and what the examples saw."""

    def __init__(self, ctx: Context, focus: Focus) -> None:
        self.ctx = ctx
        self.focus = focus
        self.cannot: set[str] = set()
        self.exercised = False
        self.last: Machine | None = None
        self._plans: dict[tuple[str, JobID], Plan] = {}
        self.hypothesis: list[str] = []  # what Hypothesis reported (kept out of the output)
        self.leftovers: list[str] = []  # stops that failed when a program ended

    def heard(self, value: object) -> None:
        self.hypothesis.append(str(value))

    def plans(self, backend: Backend, jobs: dict[str, JobID]) -> dict[str, Plan]:
        """The plan of each job on ``backend`` (made once per backend name: make_plan's answer
        depends on the adapter's answers, not on its cluster's state)."""
        chosen: dict[str, Plan] = {}
        for letter, job in jobs.items():
            key = (backend.name, job)
            if key not in self._plans:
                self._plans[key] = make_plan(backend, machine_spec(self.ctx), None, with_job(job))
            chosen[letter] = self._plans[key]
        return chosen

    def machine(self) -> Machine:
        self.last = Machine(self)
        return self.last


class Machine(RuleBasedStateMachine):
    """Random programs on one fresh backend of the harness."""

    def __init__(self, run: Run) -> None:
        super().__init__()
        self.run = run
        self.focus = run.focus
        ctx = run.ctx
        self.harness = ctx.harness
        self.original: Backend = self.harness.new_backend()
        self.backend: Backend = self.original
        self.clock: Clock = self.harness.clock(self.original)
        self.faults: Faults = self.harness.faults(self.original)
        self.identity: IdentityModel = ctx.identity
        self.rng = random.Random(f"{ctx.seed}:{ctx.check.id}:jobs")
        self.steps: list[str] = []
        self.jobs: dict[str, JobID] = {letter: self._job_id() for letter in "AB"}
        self.plans = run.plans(self.original, self.jobs)
        self.next_submission = dict.fromkeys(self.jobs, 1)
        self.objs: list[Tracked] = []
        self.injected: list[Injected] = []
        self.held = False  # whether any hold was placed in this program

    # -- helpers ------------------------------------------------------------------------------

    def _job_id(self) -> JobID:
        millis = int(self.clock.now() * 1000)
        return JobID(ULID.from_bytes(millis.to_bytes(6, "big") + self.rng.randbytes(10)))

    def note(self, line: str) -> None:
        self.steps.append(line)

    def expect(self, focus: Focus, condition: bool, did: str) -> None:
        if self.focus is focus and not condition:
            self.note(f"   !! {did}")
            raise CheckFailed(did)

    def pick(self, index: int, *, live: bool = True) -> Tracked | None:
        candidates = [o for o in self.objs if o.gone is None] if live else self.objs
        return candidates[index % len(candidates)] if candidates else None

    def peek(self, obj: Tracked) -> Observation | None:
        """``open(ref)``, or None when the adapter reports NotFound."""
        try:
            return self.backend.open(obj.ref)
        except NotFound:
            return None

    def inject(self, fault: str, action: Callable[[], object]) -> bool:
        """Run one fault of the harness; False (noted) when the harness cannot inject it."""
        if fault in self.run.cannot:
            self.note(f"   (harness cannot inject {fault})")
            return False
        try:
            action()
        except CannotInject as missing:
            self.run.cannot.add(fault)
            self.note(f"   ({missing})")
            return False
        except (DispatchError, KeyError, ValueError) as error:
            self.note(f"   (the fault did not apply: {type(error).__name__}: {error})")
            return False
        return True

    def snapshot(self, obj: Tracked) -> ObjectState | None:
        """What a write could change on an object: cancelled or not, its hold and its restart
        count (None when the adapter cannot see it). Not its submit time: a requeue settling
        moves that without any write."""
        if obj.gone is not None:
            return None
        seen = self.peek(obj)
        if seen is None:
            return None
        return seen.state is State.CANCELLED, seen.hold, seen.restart_count

    def snapshots(self, skip: Tracked | None) -> dict[str, ObjectState]:
        """ObjectStates of every object of ours but ``skip``."""
        taken: dict[str, ObjectState] = {}
        for obj in self.objs:
            if obj is not skip:
                shot = self.snapshot(obj)
                if shot is not None:
                    taken[obj.label] = shot
        return taken

    def outcome(self, action: Callable[[], object]) -> tuple[str, object]:
        try:
            return "ok", action()
        except (NotFound, Conflict, Rejected, OutcomeUnknown, Unsupported) as error:
            return type(error).__name__, error

    def occupant(self, obj: Tracked) -> Tracked | None:
        """The object of ours that holds ``obj``'s id now, if any."""
        occupant = obj.occupant
        while occupant is not None and occupant.gone is not None:
            occupant = occupant.occupant
        return occupant

    def named_again(self, obj: Tracked) -> Tracked | None:
        """The object of ours that seed 001's identity check takes ``obj``'s stale ref to name:
        a later submission of the same job (same name) that took its id and was requeued since
        (rule 3 accepts a later submit once the restart count is above zero)."""
        occupant = self.occupant(obj)
        if occupant is None or occupant.ref.uid != obj.ref.uid:
            return None
        seen = self.peek(occupant)
        return occupant if seen is not None and (seen.restart_count or 0) > 0 else None

    def write(self, obj: Tracked, op: str, action: Callable[[], object]) -> tuple[str, object]:
        """One write through ``obj``'s ref: it acts on that object only, and through a stale
        ref on nothing (hold, release and requeue raise NotFound; stop succeeds)."""
        named = self.named_again(obj) if obj.gone else None
        target = named if obj.gone else obj
        before = self.snapshots(target) if self.focus is Focus.WRITES else {}
        kind, result = self.outcome(action)
        shown = f"-> {result}" if kind == "ok" else f"-> {kind}: {result}"
        self.note(f"   {op}({obj.label}) {shown}")
        self.expect_untouched(obj, op, before)
        if obj.gone is None:
            return kind, result
        if named is not None:
            # Not a failed identity check: by seed 001 the stale ref names the requeued object.
            self.note(f"   (seed 001 rule 3: {obj.label}'s ref names {named.label}, requeued)")
            lingering = named.hold
            self.reobserve_hold(named)
            if op == "stop":
                named.lingering = lingering or named.lingering
            return kind, result
        self.run.exercised = self.run.exercised or self.focus is Focus.WRITES
        stale = f"{obj.label}'s ref (the object is gone: {obj.gone})"
        if op == "stop":
            self.expect(
                Focus.WRITES,
                kind == "ok",
                f"stop through {stale} raised {kind} ({result}): a stop whose identity check "
                "fails finds nothing to cancel and succeeds",
            )
        else:
            did = "succeeded" if kind == "ok" else f"raised {kind} ({result})"
            self.expect(
                Focus.WRITES,
                kind == "NotFound",
                f"{op} through {stale} {did}: after a failed identity check a write acts on "
                "nothing and raises NotFound",
            )
        return kind, result

    def expect_untouched(self, obj: Tracked, op: str, before: dict[str, ObjectState]) -> None:
        """Every other object of ours is as it was before a write through ``obj``'s ref."""
        for other in self.objs:
            if other.label not in before:
                continue
            was, now = before[other.label], self.snapshot(other)
            if now is None or not changed(was, now):
                continue
            whose = f"{obj.label}'s stale ref ({obj.gone})" if obj.gone else f"{obj.label}'s ref"
            took = " (it took that id)" if other is self.occupant(obj) else ""
            self.expect(
                Focus.WRITES,
                False,
                f"{op} through {whose} changed {other.label}{took}: {state_text(was)} became "
                f"{state_text(now)}; a write acts only on the object its ref names",
            )

    def reobserve_hold(self, obj: Tracked) -> None:
        seen = self.peek(obj)
        obj.hold = seen.hold if seen is not None else None
        self.note(f"   re-observed {obj.label}: hold {obj.hold}")

    def submit_object(self, letter: str) -> Tracked | None:
        """Start the next submission of job ``letter`` (a retry after a lost reply finds it)."""
        submission = self.next_submission[letter]
        self.next_submission[letter] += 1
        plan = self.plans[letter]
        kind, result = self.outcome(lambda: self.backend.start(plan, submission, 1))
        if kind == "OutcomeUnknown":
            self.note(f"   start({letter}{submission}) -> OutcomeUnknown: retried")
            kind, result = self.outcome(lambda: self.backend.start(plan, submission, 1))
        if kind != "ok" or not isinstance(result, ObjectRef):
            self.note(f"   start({letter}{submission}) -> {kind}: {result}")
            return None
        ref = result
        obj = Tracked(f"{letter}{submission}", letter, self.jobs[letter], submission, ref)
        self.note(f"   start({obj.label}) -> id {ref.id}, submit {ref.submit:%H:%M:%S}")
        for look_alike in self.injected:
            self.expect(
                Focus.FIND,
                ref.id != look_alike.native_id,
                f"start of {obj.label} returned the ref of look-alike {look_alike.native_id} "
                f"({look_alike.kind.value}: {look_alike.form}), not a new object",
            )
        for other in self.objs:
            if other.ref.id != ref.id or other.ref == ref or other.occupant is not None:
                continue
            if other.gone is None:
                # A scheduler hands an id out again only once its object has left the live
                # view (Slurm purges an ended job after MinJobAge): the program's object is gone.
                other.gone = f"purged by the scheduler, its id handed to {obj.label}"
                other.hold = None
            other.occupant = obj
            self.note(f"   {obj.label} took the id of {other.label}")
        seen = self.peek(obj)
        if seen is not None:
            obj.submit, obj.restarts = seen.ref.submit, seen.restart_count
        self.objs.append(obj)
        return obj

    # -- the adapter's operations --------------------------------------------------------------

    @initialize(
        letters=st.lists(st.sampled_from("AB"), min_size=2, max_size=4), underneath=st.booleans()
    )
    def first_submissions(self, letters: list[str], underneath: bool) -> None:
        if self.focus is Focus.STARTS:  # every program retries a start whose reply was lost
            lost = "lose_next_reply(start)"
            if self.inject(lost, lambda: self.faults.lose_next_reply("start")):
                self.note(f"the reply to the next start is lost ({letters[0]})")
                self.run.exercised = True
        for letter in letters:
            self.submit(letter)
        if self.focus in (Focus.ANCHOR, Focus.EXECUTIONS):  # every program has a requeue
            self.run_requeue_run(0, underneath)

    @active("submit", lambda self: len(self.objs) < MAX_OBJECTS)
    @rule(letter=st.sampled_from("AB"))
    def submit(self, letter: str) -> None:
        self.note(f"submit {letter}")
        self.submit_object(letter)

    @active("find")
    @rule(letter=st.sampled_from("AB"))
    def find(self, letter: str) -> None:
        self.note(f"find {letter}")
        job = self.jobs[letter]
        visible = [o for o in self.objs if o.letter == letter and o.gone is None]
        visible = [o for o in visible if self.peek(o) is not None]
        found = list(self.backend.find(job))
        self.note(
            "   -> "
            + (
                ", ".join(
                    f"{o.ref.id}(s={o.submission}{', foreign' if o.foreign else ''})" for o in found
                )
                or "nothing"
            )
        )
        self.expect_found(letter, found)
        for obj in visible:
            self.expect(
                Focus.FIND,
                any(o.ref.id == obj.ref.id and o.ref.uid == obj.ref.uid for o in found),
                f"find({letter}) did not report {obj.label} (id {obj.ref.id}), which open() sees",
            )

    def expect_found(self, letter: str, found: list[Observation]) -> None:
        """Every object find reports as the job's (not foreign, submission known) is one the
        program started, with that submission."""
        if self.focus is Focus.FIND:
            self.run.exercised = True
        for seen in found:
            if seen.foreign or seen.submission is None:
                continue
            ours = self.ours(letter, seen)
            injected = [i for i in self.injected if i.native_id == seen.ref.id]
            what = (
                f"look-alike {injected[0].native_id} ({injected[0].kind.value}: {injected[0].form})"
                if injected
                else f"object {seen.ref.id} (uid {seen.ref.uid})"
            )
            self.expect(
                Focus.FIND,
                bool(ours),
                f"find({letter}) reported {what} as the job's submission {seen.submission}: "
                "only objects keyed exactly as the job, of the user, with a strictly parsed "
                "identity are the job's",
            )

    def ours(self, letter: str, seen: Observation) -> list[Tracked]:
        """The objects of ours ``seen`` is (same id, uid and submission)."""
        return [
            o
            for o in self.objs
            if o.letter == letter
            and o.ref.id == seen.ref.id
            and o.ref.uid == seen.ref.uid
            and o.submission == seen.submission
        ]

    @active("hold", lambda self: bool(self.objs))
    @rule(i=st.integers(0, 63))
    def hold(self, i: int) -> None:
        self.hold_obj(self.pick(i, live=self.focus is not Focus.WRITES), lose_reply=False)

    def hold_obj(self, obj: Tracked | None, *, lose_reply: bool) -> None:
        backend = self.backend
        if obj is None or not isinstance(backend, Holder):
            return
        self.note(f"hold {obj.label}" + (" (reply lost)" if lose_reply else ""))
        kind, result = self.write(obj, "hold", lambda: backend.hold(obj.ref))
        if obj.gone is not None:
            return
        self.held = True
        if kind == "ok" and isinstance(result, int):
            obj.hold = result
            seen = self.peek(obj)
            self.expect(
                Focus.HOLDS,
                seen is None or (seen.state is State.HELD and seen.hold == result),
                f"hold({obj.label}) returned {result}, but open() shows it "
                f"{seen.state if seen else '?'} with hold {seen.hold if seen else None}",
            )
        elif kind == "OutcomeUnknown":
            self.reobserve_hold(obj)

    @active("release", lambda self: bool(self.objs))
    @rule(i=st.integers(0, 63), offset=st.sampled_from([0, 0, 1, -1, 2]))
    def release(self, i: int, offset: int) -> None:
        obj = self.pick(i, live=self.focus is not Focus.WRITES)
        if obj is not None:
            self.release_obj(obj, (obj.hold or obj.lingering or 1) + offset, lose_reply=False)

    def release_obj(self, obj: Tracked, number: int, *, lose_reply: bool) -> None:
        backend = self.backend
        if not isinstance(backend, Holder) or number <= 0:
            return
        self.note(f"release {obj.label} hold {number}" + (" (reply lost)" if lose_reply else ""))
        placed = obj.hold
        kind, result = self.write(obj, "release", lambda: backend.release(obj.ref, number))
        if obj.gone is not None:
            return
        if kind == "ok":
            self.expect(
                Focus.HOLDS,
                number in (placed, obj.lingering),
                f"release({obj.label}, {number}) succeeded, but the hold on it is "
                f"{placed if placed is not None else 'none'}: a release naming another "
                "instance must be refused with Conflict",
            )
            obj.hold = obj.lingering = None
        elif kind == "Conflict":
            self.expect(
                Focus.HOLDS,
                placed != number,
                f"release({obj.label}, {number}) was refused ({result}), yet hold {number} "
                "is the one placed on it",
            )
        elif kind == "OutcomeUnknown":
            self.reobserve_hold(obj)

    @active("hold_cycle", lambda self: len(self.objs) < MAX_OBJECTS)
    @rule(letter=st.sampled_from("AB"), offset=st.sampled_from([1, 2, -1]), reopen=st.booleans())
    def hold_cycle(self, letter: str, offset: int, reopen: bool) -> None:
        """Start an object and hold it while it is pending, perhaps reopen, release another
        number, then its own."""
        self.note(f"submit {letter} to hold it")
        obj = self.submit_object(letter)
        if obj is None:
            return
        self.hold_obj(obj, lose_reply=False)
        if obj.hold is None:
            return
        if reopen:
            self.reopen()
        self.holds_decode_to_their_instance()
        number = obj.hold
        self.release_obj(obj, number + offset, lose_reply=False)
        if obj.hold is not None:
            self.release_obj(obj, number, lose_reply=False)

    @active("requeue", lambda self: bool(self.objs))
    @rule(i=st.integers(0, 63))
    def requeue(self, i: int) -> None:
        self.requeue_obj(self.pick(i, live=self.focus is not Focus.WRITES), lose_reply=False)

    def requeue_obj(self, obj: Tracked | None, *, lose_reply: bool) -> None:
        backend = self.backend
        if obj is None or not isinstance(backend, Requeuer):
            return
        if obj.gone is None:
            seen = self.peek(obj)
            if seen is not None and seen.state is State.CANCELLED:
                return  # a cancelled object is not brought back (Kubernetes deletes it)
        self.note(f"requeue {obj.label}" + (" (reply lost)" if lose_reply else ""))
        kind, _result = self.write(obj, "requeue", lambda: backend.requeue(obj.ref))
        if obj.gone is None and kind in ("ok", "OutcomeUnknown"):
            obj.hold = None
            self.expect_still_named(obj, "requeue through the adapter")

    def expect_still_named(self, obj: Tracked, how: str) -> None:
        if self.focus is Focus.ANCHOR:
            self.run.exercised = True
        self.expect(
            Focus.ANCHOR,
            self.peek(obj) is not None,
            f"after a {how}, open({obj.label}) raises NotFound: a requeue keeps the ref valid",
        )

    @active("stop", lambda self: bool(self.objs))
    @rule(i=st.integers(0, 63))
    def stop(self, i: int) -> None:
        self.stop_obj(self.pick(i, live=False), lose_reply=False)

    def stop_obj(self, obj: Tracked | None, *, lose_reply: bool) -> None:
        if obj is None:
            return
        self.note(f"stop {obj.label}" + (" (reply lost)" if lose_reply else ""))
        kind, _result = self.write(obj, "stop", lambda: self.backend.stop(obj.ref))
        if obj.gone is None and kind in ("ok", "OutcomeUnknown"):
            # The hold of a stopped object may linger unseen: releasing it is not wrong.
            obj.lingering, obj.hold = obj.hold or obj.lingering, None

    # -- the harness's faults ----------------------------------------------------------------

    @active("let_run", lambda self: any(o.gone is None for o in self.objs))
    @rule(i=st.integers(0, 63))
    def let_run(self, i: int) -> None:
        obj = self.pick(i)
        if obj is None:
            return
        seen = self.peek(obj)
        if seen is None or seen.state is not State.QUEUED or seen.hold is not None:
            return
        self.note(f"let {obj.label} run")
        self.inject("let_run", lambda: self.faults.let_run(obj.ref))

    @active("finish", lambda self: any(o.gone is None for o in self.objs))
    @rule(i=st.integers(0, 63), code=st.sampled_from([0, 1]))
    def finish(self, i: int, code: int) -> None:
        obj = self.pick(i)
        if obj is None:
            return
        seen = self.peek(obj)
        if seen is None or seen.state is not State.RUNNING:
            return
        self.note(f"{obj.label} exits {code}")
        self.inject("finish", lambda: self.faults.finish(obj.ref, code))

    @active("requeue_underneath", lambda self: any(o.gone is None for o in self.objs))
    @rule(i=st.integers(0, 63))
    def requeue_underneath(self, i: int) -> None:
        obj = self.pick(i)
        if obj is None:
            return
        seen = self.peek(obj)
        if seen is None or seen.state not in (State.RUNNING, State.SUCCEEDED, State.FAILED):
            return
        self.note(f"an administrator requeues {obj.label}")
        if self.inject("requeue_underneath", lambda: self.faults.requeue_underneath(obj.ref)):
            obj.hold = None
            self.expect_still_named(obj, "requeue underneath")

    @active("lose_node", lambda self: any(o.gone is None for o in self.objs))
    @rule(i=st.integers(0, 63))
    def lose_node(self, i: int) -> None:
        obj = self.pick(i)
        if obj is None:
            return
        seen = self.peek(obj)
        if seen is None or seen.state is not State.RUNNING:
            return
        self.note(f"the node under {obj.label} is lost")
        self.inject("lose_node", lambda: self.faults.lose_node(obj.ref))

    @active("end_and_reuse", lambda self: any(o.gone is None for o in self.objs))
    @rule(
        i=st.integers(0, 63),
        how=st.sampled_from(["reuse_id_next", "reuse_id_next", "reuse_id", "purge"]),
        letter=st.sampled_from("AB"),
        then=st.sampled_from(["hold", "release", "requeue", "stop"]),
    )
    def end_and_reuse(self, i: int, how: str, letter: str, then: str) -> None:
        """Stop the object if it has not ended, then purge it, or hand its id to another object
        (a foreign one, or the next submission of ours); then write through the stale ref."""
        obj = self.pick(i)
        if obj is None:
            return
        seen = self.peek(obj)
        if seen is None:
            return
        if not seen.state.ended:
            self.stop_obj(obj, lose_reply=False)
            seen = self.peek(obj)
            # None: the stop removed the object (Kubernetes deletes what it stops): it ended,
            # and its name is free for the faults below.
            if seen is not None and not seen.state.ended:
                return
        pause(self.clock, 2.0)  # a purge takes time: the id's next object has a later submit
        faults = self.faults
        actions: dict[str, Callable[[], object]] = {
            "reuse_id": lambda: faults.reuse_id(obj.ref),
            "reuse_id_next": lambda: faults.reuse_id_next(obj.ref),
            "purge": lambda: faults.purge(obj.ref),
        }
        # The fault drawn, else the others the harness can inject.
        order = [how, *(h for h in actions if h != how)]
        chosen = next(
            (h for h in order if h not in self.run.cannot and self.injected_on(obj, h, actions[h])),
            None,
        )
        if chosen is None:
            return
        how = chosen
        obj.gone = {
            "reuse_id": "its id was taken by another job",
            "reuse_id_next": "purged, its id handed to the next submission",
            "purge": "purged",
        }[how]
        obj.hold = None
        if how == "reuse_id_next":
            self.submit_object(letter)
        self.write_through(obj, then)

    def injected_on(self, obj: Tracked, how: str, action: Callable[[], object]) -> bool:
        self.note(f"{how} on {obj.label} (id {obj.ref.id})")
        return self.inject(how, action)

    @active("look_alike", lambda self: len(self.injected) < MAX_LOOK_ALIKES)
    @rule(
        letter=st.sampled_from("AB"),
        kind=st.sampled_from(LOOK_ALIKE_DRAWS),
        variant=st.integers(0, 15),
    )
    def look_alike(self, letter: str, kind: LookAlike, variant: int) -> None:
        """An object that looks like the job's: keyed like it (a case variant, a comma list),
        or keyed exactly with an identity a strict parser refuses or none, or with a valid one
        under a native id it does not imply, or another user's."""
        job = self.jobs[letter]
        other = self.jobs["AB"[letter == "A"]]
        faults = self.faults
        native: list[str] = []
        fault = look_alike_need(kind)
        if not self.inject(
            fault,
            lambda: native.append(faults.inject_look_alike(job, kind, variant, other=other)),
        ):
            return
        form = faults.describe_look_alike(kind, variant)
        self.note(f"a look-alike of {letter}: {kind.value}, {form}")
        injected = Injected(native[0], letter, kind, form)
        self.injected.append(injected)
        found = list(self.backend.find(job))
        mine = [o for o in found if o.ref.id == injected.native_id]
        foreign = [o for o in mine if o.foreign]
        # Not the look-alike: an object of ours that had the id, or its record once history
        # lost its identity (unknown, not foreign).
        taken = [o for o in mine if not o.foreign and o.submission is not None]
        taken = [o for o in taken if not self.ours(letter, o)]
        self.note(f"   -> {injected.native_id}; find reports it as {[o.foreign for o in mine]}")
        if injected.foreign:
            self.expect(
                Focus.FIND,
                bool(foreign) and not taken,
                self.not_foreign(letter, injected, mine, taken),
            )
        self.expect_found(letter, found)

    def not_foreign(
        self, letter: str, injected: Injected, mine: list[Observation], taken: list[Observation]
    ) -> str:
        """What find did with a look-alike it must report foreign (keyed exactly as the job,
        with an identity a strict parser refuses, or none) but did not: ``mine`` is what it
        reported on the look-alike's id, ``taken`` those of them it took as the job's own."""
        native, form = injected.native_id, injected.form
        must = "keyed exactly as the job, it must be reported foreign"
        # Taken as the job's own: by submission, or indistinguishable from one of our objects
        # (same id, uid and submission) though no foreign object was reported on the id.
        own = taken or [o for o in mine if not o.foreign and o.submission is not None]
        if own:
            submissions = ", ".join(sorted({str(o.submission) for o in own}))
            also = "; it also reported it foreign" if any(o.foreign for o in mine) else ""
            return (
                f"find({letter}) reported {native} as the job's own (submission "
                f"{submissions}){also}; it is a look-alike ({form}): {must}"
            )
        if mine:
            return (
                f"find({letter}) reported {native} with no identity (submission unknown), not "
                f"foreign; it is a look-alike ({form}): {must}"
            )
        return f"find({letter}) dropped {native}; it is a look-alike ({form}): {must}, not dropped"

    @active("stale_write", lambda self: any(o.gone is not None for o in self.objs))
    @rule(i=st.integers(0, 63), op=st.sampled_from(["hold", "release", "requeue", "stop"]))
    def stale_write(self, i: int, op: str) -> None:
        """A write through the ref of an object that is gone."""
        stale = [o for o in self.objs if o.gone is not None]
        self.write_through(stale[i % len(stale)], op)

    def write_through(self, obj: Tracked, op: str) -> None:
        if op == "hold":
            self.hold_obj(obj, lose_reply=False)
        elif op == "release":
            self.release_obj(obj, obj.hold or obj.lingering or 1, lose_reply=False)
        elif op == "requeue":
            self.requeue_obj(obj, lose_reply=False)
        else:
            self.stop_obj(obj, lose_reply=False)

    @active("lose_identity_history")
    @rule()
    def lose_identity_history(self) -> None:
        self.note("history keeps no identity from now on")
        self.inject("lose_identity_history", self.faults.lose_identity_history)

    @active("lose_reply", lambda self: any(o.gone is None for o in self.objs))
    @rule(i=st.integers(0, 63), op=st.sampled_from(["start", "hold", "release", "stop", "requeue"]))
    def lose_reply(self, i: int, op: str) -> None:
        """The next ``op`` takes effect but its reply is lost; the program re-observes."""
        obj = self.pick(i)
        if obj is None:
            return
        seen = self.peek(obj)
        if seen is None:
            return
        wanted = {
            "start": True,
            "hold": seen.state is State.QUEUED and seen.hold is None,
            "release": obj.hold is not None,
            "stop": not seen.state.ended,
            "requeue": seen.state in (State.RUNNING, State.SUCCEEDED, State.FAILED),
        }[op]
        if not wanted or len(self.objs) >= MAX_OBJECTS:
            return
        self.note(f"the reply to the next {op} is lost")
        if not self.inject(f"lose_next_reply({op})", lambda: self.faults.lose_next_reply(op)):
            return
        if op == "start":
            if self.focus is Focus.STARTS:
                self.run.exercised = True
            self.submit_object(obj.letter)
        elif op == "hold":
            self.hold_obj(obj, lose_reply=True)
        elif op == "release":
            self.release_obj(obj, obj.hold or 1, lose_reply=True)
        elif op == "stop":
            self.stop_obj(obj, lose_reply=True)
        else:
            self.requeue_obj(obj, lose_reply=True)

    @active("run_requeue_run", lambda self: any(o.gone is None for o in self.objs))
    @rule(i=st.integers(0, 63), underneath=st.booleans())
    def run_requeue_run(self, i: int, underneath: bool) -> None:
        """Let the object run, requeue it (underneath, else through the adapter), run it again."""
        obj = self.pick(i)
        if obj is None:
            return
        self.let_run(i)
        seen = self.peek(obj)
        if seen is None or seen.state is not State.RUNNING:
            return
        if underneath and "requeue_underneath" not in self.run.cannot:
            self.requeue_underneath(i)
        else:
            self.requeue_obj(obj, lose_reply=False)
        self.let_run(i)

    @active("advance")
    @rule(seconds=st.sampled_from([1, 30, 150]))
    def advance(self, seconds: int) -> None:
        if callable(getattr(self.clock, "advance", None)):
            self.note(f"{seconds} s pass")
            pause(self.clock, float(seconds))

    @active("reopen")
    @rule()
    def reopen(self) -> None:
        self.note("reopen: a new adapter instance on the same cluster")
        self.backend = self.harness.reopen(self.original)

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def holds_the_focus(self) -> None:
        {
            Focus.WRITES: lambda: None,
            Focus.HOLDS: self.holds_decode_to_their_instance,
            Focus.EXECUTIONS: self.executions_keep_their_identity,
            Focus.FIND: lambda: None,
            Focus.ANCHOR: self.submit_only_moves_forward,
            Focus.STARTS: self.one_object_per_submission,
        }[self.focus]()

    def one_object_per_submission(self) -> None:
        for letter, job in self.jobs.items():
            objects: dict[int, set[str]] = {}
            for seen in self.backend.find(job):
                if not seen.foreign and seen.submission is not None:
                    objects.setdefault(seen.submission, set()).add(seen.ref.id)
            for submission, ids in sorted(objects.items()):
                self.expect(
                    Focus.STARTS,
                    len(ids) == 1,
                    f"find({letter}) shows {len(ids)} objects of submission {submission} "
                    f"(ids {', '.join(sorted(ids))}): a start retried after a lost reply must "
                    "find the object the first one made, never make a second",
                )

    def holds_decode_to_their_instance(self) -> None:
        for obj in self.objs:
            if obj.gone is not None:
                continue
            seen = self.peek(obj)
            if seen is None:
                continue
            if seen.hold is not None or obj.hold is not None:
                self.run.exercised = True
            if seen.hold is not None:
                placed = f"hold {obj.hold}" if obj.hold is not None else "no hold"
                self.expect(
                    Focus.HOLDS,
                    seen.hold in (obj.hold, obj.lingering),
                    f"open({obj.label}) shows hold {seen.hold}, but {placed} was placed on this "
                    "instance and not released: a hold decoded to the wrong instance",
                )
            else:
                self.expect(
                    Focus.HOLDS,
                    obj.hold is None,
                    f"hold {obj.hold} placed on {obj.label} is no longer shown "
                    f"(open() shows it {seen.state}): a hold must survive, a reopen too",
                )
        for letter, job in self.jobs.items() if self.held else ():
            for seen in self.backend.find(job):
                if seen.hold is None or seen.foreign:
                    continue
                ours = [
                    o
                    for o in self.objs
                    if o.gone is None
                    and o.letter == letter
                    and o.ref.id == seen.ref.id
                    and o.submission == seen.submission
                ]
                self.expect(
                    Focus.HOLDS,
                    bool(ours) and seen.hold in (ours[0].hold, ours[0].lingering),
                    f"find({letter}) shows hold {seen.hold} on {seen.ref.id} (submission "
                    f"{seen.submission}), which "
                    + (f"carries hold {ours[0].hold}" if ours else "is no object of ours")
                    + ": a hold decoded to the wrong instance",
                )

    def executions_keep_their_identity(self) -> None:
        # The checks of this focus declare the executions need: a harness that cannot show
        # them skips the check before it starts, never part of it.
        for obj in self.objs:
            if obj.gone is not None:
                continue
            try:
                runs = self.harness.executions(self.original, obj.ref)
            except NotFound:
                continue
            obj.executions = [[dict(env) for env in ranks] for ranks in runs]
        attempts: dict[tuple[JobID, str], str] = {}  # per job: DISPATCH_JOB tells jobs apart
        for obj in self.objs:
            epochs: list[int] = []
            for number, ranks in enumerate(obj.executions, start=1):
                where = f"execution {number} of {obj.label}"
                identity = self.identity_of(where, ranks)
                if identity is None:
                    continue
                self.run.exercised = True
                self.expect(
                    Focus.EXECUTIONS,
                    identity.job == obj.job and identity.submission == obj.submission,
                    f"{where} ran as job {identity.job} submission {identity.submission}, not "
                    f"{obj.job} submission {obj.submission}",
                )
                key = (identity.job, identity.attempt)
                self.expect(
                    Focus.EXECUTIONS,
                    key not in attempts,
                    f"DISPATCH_ATTEMPT {identity.attempt} of {where} repeats that of "
                    f"{attempts.get(key)}: no two executions of a job share an attempt",
                )
                attempts[key] = where
                self.expect(
                    Focus.EXECUTIONS,
                    not epochs or identity.epoch > epochs[-1],
                    f"DISPATCH_EPOCH {identity.epoch} of {where} is not above "
                    f"{epochs[-1] if epochs else 0}, the epoch of the execution before it",
                )
                epochs.append(identity.epoch)

    def identity_of(self, where: str, ranks: list[dict[str, str]]) -> ExecutionIdentity | None:
        """The identity every rank of one execution saw; they must all see the same four."""
        identities: list[ExecutionIdentity] = []
        for rank, env in enumerate(ranks):
            try:
                identities.append(parse_execution_env(env))
            except EncodingError as error:
                self.expect(
                    Focus.EXECUTIONS,
                    False,
                    f"rank {rank} of {where} saw no valid identity: {error}; every rank of "
                    "every execution sees the four DISPATCH_ variables",
                )
                return None
        for rank, identity in enumerate(identities):
            self.expect(
                Focus.EXECUTIONS,
                identity == identities[0],
                f"rank {rank} of {where} saw attempt {identity.attempt}, rank 0 saw "
                f"{identities[0].attempt}: the ranks of one execution share its identity",
            )
        return identities[0] if identities else None

    def submit_only_moves_forward(self) -> None:
        for obj in self.objs:
            if obj.gone is not None:
                continue
            seen = self.peek(obj)
            if seen is None or seen.restart_count is None:
                continue
            submit, restarts = seen.ref.submit, seen.restart_count
            if obj.submit is not None:
                self.expect(
                    Focus.ANCHOR,
                    submit >= obj.submit,
                    f"{obj.label}'s submit moved back from {obj.submit:%H:%M:%S} to "
                    f"{submit:%H:%M:%S}",
                )
            if obj.submit is not None and obj.restarts is not None and restarts > obj.restarts:
                self.run.exercised = True
                moves = self.identity.requeue_moves_submit
                if submit == obj.submit and moves:
                    submit = self.settled_submit(obj, submit)
                self.expect(
                    Focus.ANCHOR,
                    submit > obj.submit or not moves,
                    f"{obj.label} was requeued (restart count {obj.restarts} -> {restarts}) but "
                    f"its submit stayed {submit:%H:%M:%S}: a requeue moves submit forward, so "
                    "that a hold or a ref of the earlier instance cannot name the later one",
                )
            obj.submit, obj.restarts = submit, restarts

    def settled_submit(self, obj: Tracked, submit: datetime) -> datetime:
        """The submit time once a requeue has settled: Slurm shows the old SubmitTime with the
        new restart count while the job is COMPLETING on its way back to the queue."""
        waited = 0.0
        while waited < REQUEUE_SETTLE:
            pause(self.clock, 1.0)
            waited += 1.0
            seen = self.peek(obj)
            if seen is None:
                break
            if seen.ref.submit != submit:
                self.note(f"   ({obj.label}'s requeue settled after {waited:.0f} s)")
                return seen.ref.submit
        return submit

    def teardown(self) -> None:
        """Stop every live object of the program; a stop that raises is reported as the
        check's cleanup failure (through :attr:`Run.leftovers`), never swallowed."""
        for obj in self.objs:
            if obj.gone is None:
                try:
                    self.original.stop(obj.ref)
                except Exception as error:  # the example is over: the check reports it
                    said = f"{type(error).__name__}: {error}"
                    self.run.leftovers.append(f"stop({obj.ref.id}) of {obj.label}: {said}")
