"""Random sequences of submissions, holds, releases, requeues, stops and faults on the memory
adapter's Slurm shape, against invariants the seed states:

- no write lands on an object whose identity check failed (the occupant of a reused id is
  left exactly as it was);
- a hold never decodes to the wrong instance, and a release of another number is refused;
- no two executions share DISPATCH_ATTEMPT, and each execution of a scheduler object has a
  higher DISPATCH_EPOCH than every earlier one.
"""

from __future__ import annotations

import copy

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from adapters.memory import MemoryBackend
from adapters.memory.cluster import Job
from dispatch_core import (
    Conflict,
    JobSpec,
    NotFound,
    ObjectRef,
    Rejected,
    State,
    identity_mismatch,
    make_plan,
    parse_execution_env,
)


class SlurmShapeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.backend = MemoryBackend("slurm", max_job_id=4, min_job_age=30, requeue_delay=5)
        self.cluster = self.backend.cluster
        self.plan = make_plan(self.backend, JobSpec(command=("train",), nodes=2))
        self.submissions = 0
        self.refs: list[tuple[ObjectRef, int]] = []  # (ref, serial of the object it names)
        # serial -> (hold number we placed and did not release, the submit time it was placed at)
        self.holds: dict[int, tuple[int, int]] = {}

    # -- helpers ------------------------------------------------------------------------------

    def names_its_object(self, ref: ObjectRef, serial: int) -> bool:
        live = self.cluster.live(ref.id)
        return live is not None and live.serial == serial

    def occupant(self, ref: ObjectRef) -> Job | None:
        live = self.cluster.live(ref.id)
        return copy.deepcopy(live) if live is not None else None

    def accepted_by_the_seed(self, ref: ObjectRef) -> bool:
        """Whether seed 001's identity check takes ``ref`` to name the object now under its
        id: a later submission of the same job that took the id and was requeued since (rule
        3 accepts a later submit once the restart count is above zero). A write through such
        a ref lands on that object by the seed's own rule (docs/decisions.md)."""
        live = self.cluster.live(ref.id)
        return live is not None and (
            identity_mismatch(
                ref.uid,
                int(ref.submit.timestamp()),
                uid=live.name,
                submit=live.submit,
                restart_count=live.restart_count,
            )
            is None
        )

    def write(self, index: int, action, refused=()) -> None:
        ref, serial = self.refs[index % len(self.refs)]
        valid = self.names_its_object(ref, serial) or self.accepted_by_the_seed(ref)
        before = self.occupant(ref)
        try:
            action(ref)
        except NotFound:
            assert not valid, "the identity check failed on the ref's own object"
            return
        except refused:
            return
        if not valid:
            assert self.occupant(ref) == before, "a write landed on another object"

    # -- rules --------------------------------------------------------------------------------

    @precondition(lambda self: self.submissions < 30)
    @rule()
    def submit(self) -> None:
        self.submissions += 1
        try:
            ref = self.backend.start(self.plan, self.submissions, 1)
        except Rejected:
            return  # every id in use
        self.refs.append((ref, self.cluster.live(ref.id).serial))

    @precondition(lambda self: self.refs)
    @rule(i=st.integers(0, 100))
    def hold(self, i: int) -> None:
        def place(ref: ObjectRef) -> None:
            number = self.backend.hold(ref)
            job = self.cluster.live(ref.id)
            self.holds[job.serial] = (number, job.submit)

        self.write(i, place, refused=(Rejected,))

    @precondition(lambda self: self.refs)
    @rule(i=st.integers(0, 100), offset=st.sampled_from([0, 0, 1, -1]))
    def release(self, i: int, offset: int) -> None:
        _ref, serial = self.refs[i % len(self.refs)]
        placed, placed_at = self.holds.get(serial, (None, 0))
        number = (placed or 1) + offset

        def release(ref: ObjectRef) -> None:
            job = self.cluster.live(ref.id)
            stale = job is not None and placed is not None and job.submit != placed_at
            gap = not self.names_its_object(ref, serial) and self.accepted_by_the_seed(ref)
            self.backend.release(ref, number)
            # A hold that a requeue made stale decodes to another number, which a release
            # may name (DESIGN §4; docs/decisions.md); a ref the seed's rule 3 takes to name
            # a later, requeued submission releases that one's hold; any other release must
            # name the hold.
            assert stale or gap or (placed is not None and number == placed), (
                "released a hold it did not place"
            )
            self.holds.pop(serial, None)

        self.write(i, release, refused=(Conflict,))

    @precondition(lambda self: self.refs)
    @rule(i=st.integers(0, 100))
    def requeue(self, i: int) -> None:
        self.write(i, self.backend.requeue, refused=(Rejected,))

    @precondition(lambda self: self.refs)
    @rule(i=st.integers(0, 100))
    def stop(self, i: int) -> None:
        self.write(i, self.backend.stop)

    @precondition(lambda self: self.refs)
    @rule(i=st.integers(0, 100))
    def run(self, i: int) -> None:
        ref, _ = self.refs[i % len(self.refs)]
        job = self.cluster.live(ref.id)
        runnable = job is not None and job.state is State.QUEUED and job.hold_number() is None
        if runnable and job.eligible <= self.cluster.now():
            self.cluster.let_run(ref.id)

    @precondition(lambda self: self.refs)
    @rule(i=st.integers(0, 100), code=st.sampled_from([0, 1]))
    def finish(self, i: int, code: int) -> None:
        ref, _ = self.refs[i % len(self.refs)]
        job = self.cluster.live(ref.id)
        if job is not None and job.state is State.RUNNING:
            self.cluster.finish(ref.id, code)

    @precondition(lambda self: self.refs)
    @rule(i=st.integers(0, 100))
    def requeue_underneath(self, i: int) -> None:
        ref, _ = self.refs[i % len(self.refs)]
        job = self.cluster.live(ref.id)
        if job is not None and job.state in (State.RUNNING, State.SUCCEEDED, State.FAILED):
            self.cluster.requeue_underneath(ref.id)

    @rule(seconds=st.sampled_from([1, 10, 40]))
    def advance(self, seconds: int) -> None:
        self.backend.clock.advance(seconds)
        self.cluster.tick()

    @precondition(lambda self: self.refs)
    @rule(i=st.integers(0, 100))
    def reuse_id(self, i: int) -> None:
        ref, _ = self.refs[i % len(self.refs)]
        job = self.cluster.live(ref.id)
        if job is not None and job.ended:
            self.cluster.reuse_id(ref.id)

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def attempts_never_repeat_and_epochs_grow(self) -> None:
        ours = [e for e in self.cluster.executions if e.ranks]  # a foreign job has none of ours
        identities = [parse_execution_env(e.ranks[0]) for e in ours]
        attempts = [i.attempt for i in identities]
        assert len(attempts) == len(set(attempts)), attempts
        epochs_by_object: dict[int, list[int]] = {}
        for execution, identity in zip(ours, identities, strict=True):
            epochs = epochs_by_object.setdefault(execution.serial, [])
            assert all(e < identity.epoch for e in epochs), (epochs, identity)
            epochs.append(identity.epoch)

    @invariant()
    def holds_decode_to_their_instance(self) -> None:
        """A hold decodes to the number placed while the object keeps the submit time it was
        placed at. Once a requeue moved SubmitTime (a cancelled, held job requeued by an
        administrator keeps its far-future begin time), it decodes to another number or none:
        DESIGN §4's "does not decode to the instance that was placed"."""
        for job in self.cluster.jobs.values():
            carried = job.hold_number()
            placed = self.holds.get(job.serial)
            if carried is None or placed is None:
                continue
            number, submit = placed
            if job.submit == submit:
                assert carried == number, (job.serial, carried, placed)
            else:
                assert carried != number, (job.serial, carried, placed)

    @invariant()
    def find_reports_only_this_job_s_objects(self) -> None:
        for seen in self.backend.find(self.plan.job):
            assert seen.ref.uid == self.plan.job.discovery_name()
            assert not seen.foreign


SlurmShapeMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None
)
TestSlurmShape = SlurmShapeMachine.TestCase
