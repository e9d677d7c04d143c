"""One seed of the interleaving simulator: several supervisors on one record store and one
cluster, driven step by step in an order drawn from ``random.Random(seed)``.

Each step is one event: a supervisor steps (and may crash at its k-th write, before or after
the write took effect: :class:`~conformance.suites.core.Crashing`), a supervisor is killed and
replaced, the virtual clock moves (leases expire), the scheduler runs or ends an object (with
a chosen cause), an adapter fault is armed (a lost reply, a timeout before the effect), a
look-alike object appears, a host submits or cancels a job, a person releases a held job.
After ``faults`` steps only supervisors, the scheduler (successes) and the clock act, and
every job must reach a terminal record within ``calm`` steps.

After every step the invariants are checked against the record and the cluster's own ground
truth (the memory adapter's :class:`~adapters.memory.cluster.MemoryCluster`; on ``slurm-sim``
the adapter's ``find`` on a fresh reopened backend and the harness's executions).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import Any, Final

from ulid import ULID

from adapters.memory import MemoryBackend, Shape
from adapters.memory.cluster import Job
from adapters.memory.kube import parse_kube_identity
from adapters.memory.testing.broken import StartNotIdempotent
from adapters.memory.testing.harness import MemoryHarness
from adapters.slurm.identity import parse_slurm_comment
from adapters.slurm.testing.sim import SlurmSimHarness, sim_cluster
from conformance.faults import Faults
from conformance.harness import CannotInject, LookAlike
from conformance.suites.core import Crash, Crashing
from dispatch_core import (
    Cause,
    DispatchError,
    EncodingError,
    JobID,
    JobSpec,
    ObjectRef,
    Observation,
    Policy,
    Rule,
    RuleKind,
    State,
    VirtualClock,
    with_job,
)
from dispatch_core.clock import DEFAULT_START
from dispatch_core.identity import ENV_ATTEMPT, ENV_EPOCH
from dispatch_core.record import MemoryRecordStore
from dispatch_core.record.types import (
    Entry,
    HeaderRecord,
    IntentRecord,
    TerminalRecord,
    TransitionRecord,
)
from dispatch_core.supervise import Backoff, Supervisor
from tools.interleave.broken import BROKEN

HARNESSES: Final = ("memory-slurm", "memory-kubeflow", "slurm-sim")
LEASE_TTL: Final = 30.0
LAUNCH_RETRIES: Final = 1
CAUSES: Final = (
    Cause.EXIT_CODE,
    Cause.NODE_LOST,
    Cause.OUT_OF_MEMORY,
    Cause.PREEMPTED,
    Cause.TIMEOUT,
)
"""The causes an execution is made to fail with."""
SPEC: Final = JobSpec(command=("true",))
EPOCH: Final = DEFAULT_START
"""The time job ids are drawn from, plus the elapsed virtual time (the memory cluster's
virtual clock starts there, so its ids are its clock's)."""


class Violation(Exception):
    """An invariant broken: ``name`` says which."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.detail = detail


@dataclass
class Config:
    seed: int
    harness: str = "memory-slurm"
    jobs: int = 3
    supervisors: int = 2
    faults: int = 80
    """Steps with faults (crashes, lost replies, failures, look-alikes); then calm."""
    calm: int = 150
    """K: steps after the faults stop within which every job must reach a terminal record."""
    stop_at: int | None = None
    start_not_idempotent: bool = False
    """The memory adapter's start submits again on a retry (broken.StartNotIdempotent): only
    the supervisor's find-first keeps one object per (job, submission) then."""
    supervisor_class: type[Supervisor] = Supervisor


@dataclass
class Slot:
    index: int
    generation: int
    sup: Supervisor
    crashing: Crashing
    owner: str


@dataclass
class Outcome:
    seed: int
    steps: int
    trace: list[str]
    violation: Violation | None = None
    step: int | None = None
    dump: str = ""
    replay: str = ""

    @property
    def ok(self) -> bool:
        return self.violation is None


@dataclass
class World:
    config: Config
    rng: random.Random
    backend: Any
    clock: VirtualClock
    faults: Any
    store: MemoryRecordStore = field(default_factory=MemoryRecordStore)
    slots: list[Slot] = field(default_factory=list)
    jobs: list[JobID] = field(default_factory=list)
    policies: dict[JobID, Policy] = field(default_factory=dict)
    trace: list[str] = field(default_factory=list)
    foreign_writes: list[str] = field(default_factory=list)
    harness: SlurmSimHarness | None = None
    cache: dict[JobID, list[Entry]] = field(default_factory=dict)
    lookalikes: list[str] = field(default_factory=list)
    began: float = 0.0
    calm_from: int = 0
    """The step K counts from: the faults' end, or a later host's submit or person's release
    (a job a person has not released yet is waiting on the person, not on the supervisor)."""

    def deadline(self) -> int:
        """The step by which every job must be terminal."""
        return max(self.config.faults, self.calm_from) + self.config.calm

    def entries(self, job: JobID) -> list[Entry]:
        """The job's records, read incrementally (records never change once written)."""
        known = self.cache.setdefault(job, [])
        if self.store.next_seq(job) != len(known):
            known.extend(self.store.records(job, len(known)))
        return known

    @property
    def memory(self) -> bool:
        return self.harness is None

    # -- making things ---------------------------------------------------------------------------

    def reopen(self) -> Any:
        if self.harness is not None:
            return self.harness.reopen(self.backend)
        kind = StartNotIdempotent if self.config.start_not_idempotent else MemoryBackend
        return kind(
            self.backend.shape, rules={RuleKind.REQUEUE: "yes"}, cluster=self.backend.cluster
        )

    def supervisor(self, index: int, generation: int) -> Slot:
        crashing = Crashing()
        owner = f"s{index}.{generation}"
        guarded = _WriteGuard(self.reopen(), self, owner)
        sup = self.config.supervisor_class(
            crashing.wrap(guarded),
            crashing.wrap(self.store),
            self.clock,
            owner=owner,
            launch_retries=LAUNCH_RETRIES,
            launch_bound=60.0,
            backoff=Backoff(base=5.0, factor=2.0, cap=40.0),
            lease_ttl=LEASE_TTL,
            shutdown_budget=10.0,
            specs={},
            adapter="memory" if self.memory else "slurm",
        )
        return Slot(index, generation, sup, crashing, owner)

    def policy(self) -> Policy:
        rules: list[Rule] = []
        for _ in range(self.rng.randint(0, 3)):
            kind = self.rng.choice(
                [
                    RuleKind.RESUBMIT,
                    RuleKind.RESUBMIT,
                    RuleKind.REQUEUE,
                    RuleKind.HOLD,
                    RuleKind.ESCALATE,
                ]
            )
            causes: tuple[Cause, ...] = ()
            if self.rng.random() < 0.3:
                causes = (self.rng.choice(CAUSES),)
            rules.append(Rule(kind=kind, budget=self.rng.randint(0, 2), causes=causes))
        return Policy(rules=tuple(rules), shared_checkpoint=self.rng.random() < 0.1)

    def elapsed(self) -> float:
        """Seconds since the world began (slurm-sim's clock starts at the wall time)."""
        return self.clock.now() - self.began

    def job_id(self) -> JobID:
        # From the elapsed time, not the clock's: the same seed makes the same ids.
        millis = int((EPOCH + self.elapsed()) * 1000)
        return JobID(ULID.from_bytes(millis.to_bytes(6, "big") + self.rng.randbytes(10)))

    # -- ground truth ----------------------------------------------------------------------------

    def objects(self, job: JobID) -> list[tuple[int, bool, State, str]]:
        """(submission, live, state, native id) of every object the cluster ever made for
        ``job`` (its own: a look-alike is nobody's job)."""
        if self.harness is not None:
            found = self.harness.reopen(self.backend).find(job)
            return [
                (o.submission or 0, not o.state.ended, o.state, o.ref.id)
                for o in found
                if not o.foreign
            ]
        cluster = self.backend.cluster
        made: dict[int, Job] = {}
        for j in [*cluster.history, *cluster.jobs.values()]:
            if j.job == job and j.owner == "me":
                made[j.serial] = j  # the live one (last) wins over its history copies
        out = []
        for j in made.values():
            live = cluster.jobs.get(j.native_id) is j and not j.ended
            out.append((carried(j), live, j.state, j.native_id))
        return out

    def executions(self, job: JobID) -> list[tuple[str, int]]:
        """(DISPATCH_ATTEMPT, DISPATCH_EPOCH) of every execution of ``job``, in order."""
        if self.harness is not None:
            backend = self.harness.reopen(self.backend)
            runs: list[tuple[str, int]] = []
            # In the order the objects were made (their submissions): find keeps none.
            mine = sorted((o for o in backend.find(job) if not o.foreign), key=_made)
            for o in mine:
                for ranks in self.harness.executions(self.backend, o.ref):
                    if ranks:
                        runs.append((ranks[0][ENV_ATTEMPT], int(ranks[0][ENV_EPOCH])))
            return runs
        cluster = self.backend.cluster
        serials = {j.serial for j in [*cluster.history, *cluster.jobs.values()] if j.job == job}
        found = []
        for e in cluster.executions:
            if e.serial in serials and e.ranks:
                found.append((e.ranks[0][ENV_ATTEMPT], int(e.ranks[0][ENV_EPOCH])))
        return found

    def owner_of(self, ref: ObjectRef) -> tuple[JobID | None, int | None]:
        """The job and submission the object a ref names belongs to, by the cluster."""
        if self.harness is not None:
            return None, None
        cluster = self.backend.cluster
        j = cluster.made_as(ref.id, ref.uid, ref.submit_epoch)
        if j is None:
            return None, -1  # gone from the cluster: the write meets nothing
        if j.job is None or j.owner != "me":
            return None, None
        return j.job, carried(j)


def _made(seen: Observation) -> tuple[int, str]:
    return (seen.submission or 0, seen.ref.id)


def carried(j: Job) -> int:
    try:
        if j.comment is not None:
            return parse_slurm_comment(j.comment).submission
        return parse_kube_identity(j.annotations)[0]
    except EncodingError:
        return 0


class _WriteGuard:
    """The backend of one supervisor: every write on an object is checked to be on one of the
    job's own objects (never a look-alike, never another job's), by a supervisor that holds the
    job's live lease."""

    def __init__(self, inner: Any, world: World, owner: str) -> None:
        self._inner = inner
        self._world = world
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name not in ("stop", "requeue", "restart", "hold", "release"):
            return value

        def write(ref: ObjectRef, *args: Any) -> Any:
            self._check(name, ref)
            return value(ref, *args)

        return write

    def _check(self, name: str, ref: ObjectRef) -> None:
        world = self._world
        if not world.memory:
            return
        job, submission = world.owner_of(ref)
        if job is None and submission == -1:
            return
        if job is None:
            world.foreign_writes.append(f"{self._owner} {name}({ref.id}) on an object of no job")
            return
        intents = [
            e.record.submission for e in world.entries(job) if isinstance(e.record, IntentRecord)
        ]
        if submission not in intents:
            world.foreign_writes.append(
                f"{self._owner} {name}({ref.id}) on submission {submission} of {job}, "
                f"which the record never intended"
            )
        lease = world.store.lease(job)
        if lease is None or lease.owner != self._owner or not lease.live(world.clock.now()):
            holder = "nobody" if lease is None else lease.owner
            world.foreign_writes.append(
                f"{self._owner} {name}({ref.id}) of job {job} without its live lease "
                f"(held by {holder})"
            )


def make_world(config: Config) -> World:
    rng = random.Random(config.seed)
    if config.harness == "slurm-sim":
        harness = SlurmSimHarness()
        backend: Any = harness.new_backend()
        clock = harness.clock(backend)
        assert isinstance(clock, VirtualClock)
        world = World(config, rng, backend, clock, Faults(harness, backend), harness=harness)
    else:
        shape: Shape = "kubeflow" if config.harness == "memory-kubeflow" else "slurm"
        if config.start_not_idempotent and shape != "slurm":
            raise ValueError("start_not_idempotent is a memory-slurm adapter")
        kind = StartNotIdempotent if config.start_not_idempotent else MemoryBackend
        clock = VirtualClock()
        backend = kind(
            shape, clock=clock, rules={RuleKind.REQUEUE: "yes"}, max_job_id=400, min_job_age=60.0
        )
        world = World(config, rng, backend, clock, Faults(MemoryHarness(shape), backend))
    world.began = world.clock.now()
    world.slots = [world.supervisor(i, 1) for i in range(config.supervisors)]
    return world


# -- the events ------------------------------------------------------------------------------------


def step_supervisor(world: World, slot: Slot, crash: bool) -> str:
    what = f"{slot.owner} step"
    if crash:
        slot.crashing.at = slot.crashing.count + world.rng.randint(1, 4)
        slot.crashing.before = world.rng.random() < 0.5
        when = "before" if slot.crashing.before else "after"
        what += f" (crash armed at write {slot.crashing.at}, {when})"
    try:
        acted = slot.sup.step()
        what += f": {acted} acted"
    except Crash as crashed:
        what += f": {crashed}; replaced"
        replace(world, slot)
    slot.crashing.at = None
    return what


def replace(world: World, slot: Slot) -> None:
    world.slots[slot.index] = world.supervisor(slot.index, slot.generation + 1)


def host_call(
    world: World, slot: Slot, what: str, action: Callable[[], object], crash: bool = False
) -> str:
    if crash:
        slot.crashing.at = slot.crashing.count + world.rng.randint(1, 4)
        slot.crashing.before = world.rng.random() < 0.5
    try:
        action()
        return f"{slot.owner} {what}: done"
    except Crash as crashed:
        replace(world, slot)
        return f"{slot.owner} {what}: {crashed}; replaced"
    except DispatchError as error:
        return f"{slot.owner} {what}: {type(error).__name__}"
    finally:
        slot.crashing.at = None


def play(world: World, job: JobID, calm: bool) -> str:
    """The scheduler acts on the job's live object: run it, or end it (a chosen cause)."""
    live = [o for o in world.objects(job) if o[1]]
    if not live:
        return f"scheduler: nothing live of {short(job)}"
    _, _, state, native = world.rng.choice(live)
    ref_id = native
    refs = [o.ref for o in world.reopen().find(job) if o.ref.id == native and not o.foreign]
    if not refs:
        return f"scheduler: {native} gone"
    ref = refs[0]
    try:
        if state is State.QUEUED and world.memory and not calm and world.rng.random() < 0.2:
            j = world.backend.cluster.jobs[native]
            if world.rng.random() < 0.5:
                world.backend.cluster.end(j, State.FAILED, Cause.LAUNCH_FAILED)
                return f"scheduler: {ref_id}'s launch fails"
            j.cause = Cause.UNSCHEDULABLE
            return f"scheduler: {ref_id} stays queued, unschedulable"
        if state is State.QUEUED:
            world.faults.let_run(ref)
            return f"scheduler: run {ref_id}"
        if state is State.RUNNING:
            if calm or world.rng.random() < 0.4:
                world.faults.finish(ref, 0)
                return f"scheduler: {ref_id} succeeds"
            cause = world.rng.choice(CAUSES)
            if cause is Cause.EXIT_CODE or world.harness is not None:
                world.faults.finish(ref, 3)
            else:
                world.backend.cluster.fail(native, cause)
            return f"scheduler: {ref_id} fails ({cause.value})"
    except (DispatchError, CannotInject, KeyError) as error:
        return f"scheduler: {ref_id} {type(error).__name__}"
    return f"scheduler: {ref_id} is {state.value}"


def short(job: JobID) -> str:
    return str(job)[-6:]


def event(world: World, step: int) -> str:
    rng = world.rng
    config = world.config
    calm = step >= config.faults
    roll = rng.random()
    slot = rng.choice(world.slots)
    if not world.jobs or (len(world.jobs) < config.jobs and roll < 0.08):
        if calm:
            world.calm_from = step + 1
        job = world.job_id()
        policy = world.policy()
        world.jobs.append(job)
        world.policies[job] = policy
        return host_call(
            world,
            slot,
            f"submit {short(job)} {policy_text(policy)}",
            lambda: slot.sup.submit(SPEC, policy, with_job(job)),
            crash=not calm and rng.random() < 0.15,
        )
    if step == config.faults and world.harness is not None and world.lookalikes:
        # Their owners end them: on slurm-sim a look-alike runs, and holds a node's CPUs.
        cluster = sim_cluster(world.backend)
        for native in world.lookalikes:
            with suppress(RuntimeError):
                cluster.admin("scancel", native)
        return f"look-alikes ended: {', '.join(world.lookalikes)}"
    if calm:
        return calm_event(world, slot, roll, step)
    if roll < 0.45:
        return step_supervisor(world, slot, not calm and rng.random() < 0.15)
    if roll < 0.65:
        return play(world, rng.choice(world.jobs), calm)
    if roll < 0.78:
        seconds = rng.choice([1.0, 5.0, 10.0, 20.0, 40.0])
        world.clock.advance(seconds)
        return f"clock +{seconds:g} s"
    if roll < 0.84:
        replace(world, slot)
        return f"{slot.owner} killed; replaced"
    if roll < 0.92:
        op = rng.choice(["start", "stop", "requeue"])
        if rng.random() < 0.5:
            world.faults.lose_next_reply(op)
            return f"fault: the next {op}'s reply is lost"
        world.faults.fail_before_effect(op)
        return f"fault: the next {op} times out before its effect"
    if roll < 0.95:
        job = rng.choice(world.jobs)
        kind = rng.choice(
            [LookAlike.NO_IDENTITY, LookAlike.UNPARSABLE_IDENTITY, LookAlike.CASE_VARIANT]
        )
        try:
            native = world.faults.inject_look_alike(job, kind, rng.randrange(3))
        except CannotInject:
            return "fault: no look-alike"
        world.lookalikes.append(native)
        return f"fault: look-alike {kind.value} {native} of {short(job)}"
    job = rng.choice(world.jobs)
    if roll < 0.97:
        return host_call(
            world,
            slot,
            f"cancel {short(job)}",
            lambda: slot.sup.cancel(job),
            crash=rng.random() < 0.15,
        )
    return host_call(world, slot, f"person releases {short(job)}", lambda: slot.sup.release(job))


def calm_event(world: World, slot: Slot, roll: float, step: int) -> str:
    """After the faults: a supervisor steps, the scheduler runs or ends (succeeds) an object
    of an unfinished job, the clock moves (leases of dead supervisors expire), or a person
    releases a job held for a person."""
    rng = world.rng
    if roll < 0.4:
        return step_supervisor(world, slot, False)
    unfinished = set(world.store.unfinished())
    waiting = [j for j in world.jobs if j in unfinished]
    if roll < 0.7:
        return play(world, rng.choice(waiting or world.jobs), True)
    if roll < 0.9:
        seconds = rng.choice([5.0, 10.0, 20.0, 40.0])
        world.clock.advance(seconds)
        return f"clock +{seconds:g} s"
    for job in waiting:
        with suppress(DispatchError):
            status = slot.sup.status(job)
            if status.waiting_for_person:
                world.calm_from = step + 1
                return host_call(
                    world, slot, f"person releases {short(job)}", partial(slot.sup.release, job)
                )
    return step_supervisor(world, slot, False)


def policy_text(policy: Policy) -> str:
    rules = ",".join(
        f"{r.kind.value}x{r.budget}" + (f"[{r.causes[0].value}]" if r.causes else "")
        for r in policy.rules
    )
    return f"[{rules}]" + (" shared" if policy.shared_checkpoint else "")


# -- the invariants --------------------------------------------------------------------------------


def check(world: World, step: int) -> None:
    if world.foreign_writes:
        raise Violation("no-foreign-write", world.foreign_writes[0])
    for job in world.jobs:
        entries = world.entries(job)
        if not entries:
            continue
        seqs = [e.seq for e in entries]
        if seqs != list(range(len(entries))):
            raise Violation("gapless-seq", f"job {job} has seqs {seqs}")
        header = entries[0].record
        if not isinstance(header, HeaderRecord):
            raise Violation("gapless-seq", f"job {job} starts with a {header.kind}")
        objects = world.objects(job)
        per = Counter(n for n, _, _, _ in objects)
        for n, count in per.items():
            if count > 1:
                raise Violation(
                    "one-object-per-submission",
                    f"job {job} has {count} objects for submission {n}: "
                    f"{[o[3] for o in objects if o[0] == n]}",
                )
        live = [o for o in objects if o[1]]
        if len(live) > 1:
            raise Violation(
                "one-live-object-per-job",
                f"job {job} has live objects {[(o[0], o[3]) for o in live]}",
            )
        runs = world.executions(job)
        attempts = [a for a, _ in runs]
        if len(set(attempts)) != len(attempts):
            raise Violation("no-repeated-attempt", f"job {job} ran attempts {attempts}")
        epochs = [e for _, e in runs]
        if any(b <= a for a, b in pairwise(epochs)):
            raise Violation("epochs-increasing", f"job {job} ran epochs {epochs}")
        transitions = [e.record for e in entries if isinstance(e.record, TransitionRecord)]
        retries = sum(1 for t in transitions if t.action.value == "launch_retry")
        if retries > LAUNCH_RETRIES:
            raise Violation(
                "launch-budget", f"job {job} made {retries} launch retries of {LAUNCH_RETRIES}"
            )
        uses = Counter(t.rule for t in transitions if t.rule is not None)
        for index, used in uses.items():
            budget = header.policy.rules[index].budget
            if used > budget:
                raise Violation(
                    "rule-budget", f"job {job} used rule {index} {used} times (budget {budget})"
                )
        last = entries[-1].record
        if isinstance(last, TerminalRecord) and last.state is State.SUCCEEDED and world.memory:
            mine = [o for o in objects if o[0] == last.submission]
            if mine and mine[0][2] is not State.SUCCEEDED:
                raise Violation(
                    "success-is-real",
                    f"job {job} recorded succeeded, but submission {last.submission}'s object "
                    f"is {mine[0][2].value}",
                )
    if step >= world.deadline():
        unfinished = [j for j in world.jobs if j in set(world.store.unfinished())]
        if unfinished:
            after = (
                "the faults stopped"
                if world.calm_from <= world.config.faults
                else f"the last host's or person's act (step {world.calm_from - 1})"
            )
            raise Violation(
                "terminal-within-k",
                f"{len(unfinished)} job(s) not terminal {world.config.calm} steps after {after}: "
                f"{[dump_job(world, j) for j in unfinished]}",
            )


# -- dumps and the run -----------------------------------------------------------------------------


def dump_job(world: World, job: JobID) -> str:
    parts = []
    for e in world.store.records(job):
        r = e.record
        text = f"{e.seq}:{r.kind}"
        if isinstance(r, IntentRecord):
            text += f"(N={r.submission},A={r.attempt})"
        elif isinstance(r, TransitionRecord):
            text += f"({r.action.value},rule={r.rule})"
        elif isinstance(r, TerminalRecord):
            text += f"({r.state.value},{r.cause.value})"
        parts.append(text)
    return f"{job}: " + " ".join(parts)


def dump(world: World) -> str:
    lines = [f"clock +{world.elapsed():.0f} s"]
    for job in world.jobs:
        lease = world.store.lease(job)
        lines.append(dump_job(world, job))
        lines.append(
            f"  lease: {lease.owner} until +{lease.expires - world.began:.0f} s"
            if lease
            else "  lease: none"
        )
        for n, live, state, native in sorted(world.objects(job)):
            lines.append(f"  object {native}: submission {n}, {state.value}, live={live}")
        lines.append(f"  executions: {world.executions(job)}")
    return "\n".join(lines)


def replay_command(config: Config) -> str:
    """The command that runs ``config`` again (its seed, harness and every option not at its
    default)."""
    made = f"python -m tools.interleave --seed {config.seed}"
    if config.harness != "memory-slurm":
        made += f" --harness {config.harness}"
    names = {kind: name for name, kind in BROKEN.items()}
    if config.supervisor_class is not Supervisor:
        made += f" --broken {names.get(config.supervisor_class, config.supervisor_class.__name__)}"
    if config.start_not_idempotent:
        made += " --start-not-idempotent"
    default = Config(seed=config.seed)
    for name in ("jobs", "supervisors", "faults", "calm"):
        if getattr(config, name) != getattr(default, name):
            made += f" --{name} {getattr(config, name)}"
    return made


def run(config: Config) -> Outcome:
    world = make_world(config)
    outcome = Outcome(config.seed, config.faults + config.calm, world.trace)
    step = -1
    while step < world.deadline():
        step += 1
        if step < world.deadline():
            world.trace.append(f"{step:04d} {event(world, step)}")
        try:
            check(world, step)
        except Violation as violation:
            outcome.violation, outcome.step = violation, step
            outcome.dump = dump(world)
            outcome.replay = f"{replay_command(config)} --stop-at {step}"
            return outcome
        if config.stop_at is not None and step >= config.stop_at:
            outcome.steps = step
            outcome.dump = dump(world)
            return outcome
        if step >= config.faults and all(
            j not in set(world.store.unfinished()) for j in world.jobs
        ):
            outcome.steps = step
            break
    return outcome


__all__ = ["HARNESSES", "Config", "Outcome", "Violation", "run"]
