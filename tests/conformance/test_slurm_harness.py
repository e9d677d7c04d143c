"""The Slurm harnesses (``adapters.slurm.testing``) keep their obligations (conformance.Harness
and the powers of conformance.powers they implement): fresh clusters, reopen on the same
cluster, each fault observable through the adapter, the look-alike intents in Slurm's encoding,
the environment of every rank of every execution, the identity model, the powers offered and
those declined with their reasons, host paths; slurm-local skips with its reason when there is
no Slurm, cancels a check's jobs at its end, and works against the simulator's PATH shims when
they stand in for one.

Every registered check runs on slurm-sim and slurm-sim-nocomment; a check that fails there but
passes on memory-slurm is a harness, adapter or simulator bug (KNOWN lists the open ones).
Nothing here sleeps for real: the clusters run on virtual clocks."""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.slurm import LocalTransport, SlurmBackend
from adapters.slurm.testing.local import (
    OTHER_USER_REFUSED,
    LocalSlurm,
    SlurmLocalHarness,
    TransportHost,
)
from adapters.slurm.testing.lookalikes import (
    NEAR_COMMENTS,
    NEAR_HOLDS,
    UNPARSABLE_COMMENTS,
    sibling,
)
from adapters.slurm.testing.sim import (
    ELIGIBLE_LOOK_ALIKES,
    KEEPS_COMMENTS,
    SLURM_IMPOSSIBLE_WHY,
    SlurmSimHarness,
    sim_cluster,
)
from conformance import CannotInject, HarnessUnavailable, Outcome, Tier, checks, run_check
from conformance.checks import Check, Context
from conformance.faults import Faults
from conformance.harness import (
    LOOK_ALIKES_HELD,
    NEAR_DECIMALS,
    OPERATIONS,
    Fault,
    IdentityModel,
    LocalHost,
    LookAlike,
    Lookup,
    Probe,
    Race,
    look_alike_need,
    race_need,
)
from conformance.harnesses import load_harness
from conformance.powers import POWER_OF, LosesNodes, lacking, offers_power
from conformance.runner import known_needs
from dispatch_core import (
    Cause,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    OutcomeUnknown,
    Rejected,
    State,
    make_plan,
    with_job,
)
from simulators.slurm.shim_client import stop

ROOT = Path(__file__).resolve().parents[2]


def probe_check() -> Check:
    """A check value for a hand-made Context (the tests below drive the harness directly)."""
    return Check("TEST-000", "the harness keeps its obligations", "test", "test", Tier.SMOKE, print)


class Cluster:
    """One backend of a Slurm sim harness, with its faults and a context to plan jobs in."""

    def __init__(self, job_comment: bool = True) -> None:
        self.harness = SlurmSimHarness(job_comment=job_comment)
        self.ctx = Context(self.harness, probe_check(), seed=7)
        self.backend = self.ctx.backend
        assert isinstance(self.backend, SlurmBackend)
        self.faults = Faults(self.harness, self.backend)
        self.cluster = sim_cluster(self.backend)
        self.sim = self.cluster.sim

    def start(self, spec: JobSpec | None = None) -> ObjectRef:
        return self.ctx.start(self.ctx.plan(spec))

    def slurm_state(self, ref: ObjectRef) -> str:
        return str(self.sim.job(int(ref.id)).state)


@pytest.fixture
def c() -> Cluster:
    return Cluster()


# -- registration and the cluster each backend gets ---------------------------------------------------


def test_the_three_harnesses_are_registered() -> None:
    sim, nocomment, local = (
        load_harness(n) for n in ("slurm-sim", "slurm-sim-nocomment", "slurm-local")
    )
    assert isinstance(sim, SlurmSimHarness) and sim.job_comment and sim.name == "slurm-sim"
    assert isinstance(nocomment, SlurmSimHarness) and not nocomment.job_comment
    assert nocomment.name == "slurm-sim-nocomment"
    assert isinstance(local, SlurmLocalHarness) and local.name == "slurm-local"


def test_new_backend_gives_independent_clusters_on_a_wall_time_virtual_clock() -> None:
    harness = SlurmSimHarness()
    first, second = harness.new_backend(), harness.new_backend()
    assert harness.clock(first) is not harness.clock(second)
    assert abs(harness.clock(first).now() - time.time()) < 60
    spec = JobSpec(command=("true",))
    plan = make_plan(first, spec)
    ref = first.start(plan, 1, 1)
    assert [o.ref for o in first.find(plan.job)] == [ref]
    assert second.find(plan.job) == []
    with pytest.raises(NotFound):
        second.open(ref)  # the same id names nothing there
    config = sim_cluster(first).sim.config
    assert (config.max_job_id, config.min_job_age, config.job_comment) == (60, 30, True)
    assert (config.nodes, config.cpus_per_node) == (("n1", "n2"), 4)


def test_reopen_shares_the_cluster_and_nothing_else(c: Cluster) -> None:
    ref = c.start()
    other = c.harness.reopen(c.backend)
    assert other is not c.backend and isinstance(other, SlurmBackend)
    assert c.harness.clock(other) is c.harness.clock(c.backend)
    assert other.open(ref).ref == ref
    number = c.backend.hold(ref)
    assert other.open(ref).hold == number
    other.release(ref, number)
    assert c.backend.open(ref).hold is None


def test_the_nocomment_harness_tells_the_adapter() -> None:
    harness = SlurmSimHarness(job_comment=False)
    backend = harness.new_backend()
    assert isinstance(backend, SlurmBackend) and backend.job_comment is False
    assert sim_cluster(backend).sim.config.job_comment is False


# -- faults, each seen through the adapter -------------------------------------------------------------


def test_jobs_wait_for_let_run_and_let_run_starts_them(c: Cluster) -> None:
    ref = c.start()
    assert c.backend.open(ref).state is State.QUEUED
    c.faults.let_run(ref)
    assert c.backend.open(ref).state is State.RUNNING
    c.faults.let_run(ref)  # already running: nothing to do


def test_let_run_refuses_a_held_job(c: Cluster) -> None:
    ref = c.start()
    c.backend.hold(ref)
    with pytest.raises(Rejected, match="held"):
        c.faults.let_run(ref)


@pytest.mark.parametrize(
    ("code", "state", "cause"),
    [(0, State.SUCCEEDED, Cause.NONE), (3, State.FAILED, Cause.EXIT_CODE)],
)
def test_finish_ends_the_job_with_its_exit_code(
    c: Cluster, code: int, state: State, cause: Cause
) -> None:
    ref = c.start()
    c.faults.let_run(ref)
    c.faults.finish(ref, code)
    seen = c.backend.open(ref)
    assert (seen.state, seen.cause) == (state, cause)
    c.faults.purge(ref)  # from accounting, the exit code too
    seen = c.backend.open(ref)
    assert (seen.state, seen.exit_code) == (state, code)


def test_requeue_underneath_keeps_the_ref_valid_and_moves_submit_on(c: Cluster) -> None:
    ref = c.start()
    c.faults.let_run(ref)
    c.faults.requeue_underneath(ref)
    seen = c.backend.open(ref)
    assert (seen.state, seen.cause, seen.restart_count) == (State.QUEUED, Cause.REQUEUED, 1)
    assert seen.ref.submit > ref.submit
    number = c.backend.hold(ref)  # a write through the old ref still works
    assert c.backend.open(ref).hold == number
    assert c.slurm_state(ref) == "PENDING"


def test_purge_leaves_history_only(c: Cluster) -> None:
    ref = c.start()
    c.faults.purge(ref)  # ends it first (an administrator's scancel)
    assert int(ref.id) not in c.sim.controller.jobs
    seen = c.backend.open(ref)
    assert seen.state is State.CANCELLED and "accounting" in seen.detail


def test_purge_of_a_running_job_and_find_from_accounting(c: Cluster) -> None:
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.faults.let_run(ref)
    c.faults.finish(ref)
    c.faults.purge(ref)
    [seen] = c.backend.find(plan.job)
    assert (seen.ref.id, seen.state, seen.submission, seen.foreign) == (
        ref.id,
        State.SUCCEEDED,
        1,
        False,
    )


def test_reuse_id_gives_the_id_to_a_foreign_job_and_writes_act_on_nothing(c: Cluster) -> None:
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.faults.let_run(ref)
    c.faults.finish(ref)
    c.faults.reuse_id(ref)
    occupant = c.sim.job(int(ref.id))
    assert occupant.name != ref.uid and occupant.user != c.sim.config.user
    c.backend.stop(ref)  # succeeds, cancels nothing
    assert c.sim.job(int(ref.id)).state == "PENDING"
    for write in (c.backend.hold, c.backend.requeue, lambda r: c.backend.release(r, 1)):
        with pytest.raises(NotFound):
            write(ref)
    [seen] = c.backend.find(plan.job)  # the old job, from accounting
    assert seen.ref == ref and seen.state is State.SUCCEEDED


def test_reuse_id_next_hands_the_id_to_the_next_submission(c: Cluster) -> None:
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.start()  # another job holds the next id
    c.faults.reuse_id_next(ref)  # ends (cancels) the job, purges it, drives the counter
    again = c.ctx.start(make_plan(c.backend, plan.spec, None, with_job(plan.job)), submission=2)
    assert (again.id, again.uid) == (ref.id, ref.uid)
    assert again.submit > ref.submit  # never in the second the old job was submitted
    with pytest.raises(NotFound):
        c.backend.open(ref)
    with pytest.raises(NotFound):
        c.backend.hold(ref)
    assert c.backend.open(again).submission == 2


def test_lose_identity_history_is_the_nocomment_cluster_s_configuration() -> None:
    with pytest.raises(CannotInject, match="lose_identity_history"):
        Cluster(job_comment=True).faults.lose_identity_history()
    c = Cluster(job_comment=False)
    c.faults.lose_identity_history()
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.faults.let_run(ref)
    c.faults.finish(ref)
    c.faults.purge(ref)
    [seen] = c.backend.find(plan.job)
    assert seen.ref == ref and not seen.foreign
    assert (seen.submission, seen.attempt) == (None, None)  # unknown, not foreign


def test_lose_node_fails_a_job_that_may_not_be_requeued(c: Cluster) -> None:
    bystander = c.start()
    ref = c.start()
    c.faults.let_run(ref)
    assert c.backend.open(bystander).state is State.RUNNING  # on the same node
    c.faults.lose_node(ref)
    seen = c.backend.open(ref)
    assert (seen.state, seen.cause) == (State.FAILED, Cause.NODE_LOST)
    assert c.backend.open(bystander).state is State.RUNNING  # the fault hit one object


def test_a_task_s_line_goes_to_the_end_of_the_job_s_output_file(c: Cluster) -> None:
    """rank_writes appends to the job's StdOut, where srun puts every task's output: the
    adapter's read_output shows each line; a task the job does not run, or a job that does not
    run, writes nothing."""
    backend = c.backend
    assert isinstance(backend, SlurmBackend)
    ref = c.start(c.ctx.spec(nodes=2))
    with pytest.raises(Rejected, match="runs no task 0"):
        c.harness.rank_writes(backend, ref, 0, "too early")
    c.faults.let_run(ref)
    c.harness.rank_writes(backend, ref, 1, "from task 1")
    c.harness.rank_writes(backend, ref, 0, "from task 0")
    assert backend.read_output(ref).endswith(b"from task 1\nfrom task 0\n")
    with pytest.raises(Rejected, match="runs no task 2"):
        c.harness.rank_writes(backend, ref, 2, "no such task")


def test_near_hold_sets_a_start_time_just_outside_the_hold_encoding(c: Cluster) -> None:
    assert c.faults.near_hold_forms() == len(NEAR_HOLDS)
    for variant, (offset, words) in enumerate(NEAR_HOLDS):
        ref = c.start()
        assert c.faults.near_hold(ref, variant) == words
        job = c.sim.job(int(ref.id))
        assert job.begin_time - job.submit_time == offset
        seen = c.backend.open(ref)
        assert (seen.state, seen.hold) == (State.QUEUED, None)
    running = c.start()
    c.faults.let_run(running)
    with pytest.raises(CannotInject, match="not pending"):
        c.faults.near_hold(running)


@pytest.mark.parametrize("alone", [True, False])
def test_lose_node_requeues_a_requeueable_job(c: Cluster, alone: bool) -> None:
    ref = c.start()
    if not alone:
        c.start()
    c.faults.let_run(ref)
    # The adapter submits --no-requeue (it compiles no native rule); an adapter requeue or an
    # administrator raises the flag.
    c.cluster.admin("scontrol", "update", f"JobId={ref.id}", "Requeue=1")
    c.faults.lose_node(ref)
    seen = c.backend.open(ref)
    assert (seen.state, seen.cause, seen.restart_count) == (State.QUEUED, Cause.REQUEUED, 1)
    assert c.sim.controller.records(int(ref.id))[0].state == "NODE_FAIL"


def test_a_lost_sbatch_reply_is_resolved_by_the_adapter(c: Cluster) -> None:
    c.faults.lose_next_reply("start")
    plan = c.ctx.plan()
    before = c.harness.clock(c.backend).now()
    ref = c.ctx.start(plan)  # sbatch took effect; the adapter finds the job it made
    assert c.harness.clock(c.backend).now() >= before + 60  # the reply was awaited in vain
    assert [o.ref for o in c.backend.find(plan.job)] == [ref]
    assert len(c.sim.controller.named(ref.uid)) == 1
    assert any(r.get("name") == "lose_reply" for r in c.sim.trace.records)


def test_lost_replies_of_each_write(c: Cluster) -> None:
    ref = c.start()
    c.faults.lose_next_reply("hold")
    with pytest.raises(OutcomeUnknown):
        c.backend.hold(ref)
    number = c.backend.open(ref).hold
    assert number is not None  # it took effect
    c.faults.lose_next_reply("release")
    with pytest.raises(OutcomeUnknown):
        c.backend.release(ref, number)
    assert c.backend.open(ref).hold is None
    c.faults.let_run(ref)
    c.faults.lose_next_reply("requeue")
    with pytest.raises(OutcomeUnknown):
        c.backend.requeue(ref)
    assert c.sim.job(int(ref.id)).restart_count == 1
    c.faults.let_run(ref)
    c.faults.lose_next_reply("stop")
    c.backend.stop(ref)  # the adapter reads the end back
    assert c.backend.open(ref).state is State.CANCELLED
    with pytest.raises(CannotInject, match=r"lose_next_reply\(restart\)"):
        c.faults.lose_next_reply("restart")


def test_look_alikes_in_slurm_s_encoding_that_the_adapter_tells_apart(c: Cluster) -> None:
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    name, job = plan.job.discovery_name(), plan.job
    other = JobID.new()
    variant = c.faults.inject_look_alike(job, LookAlike.CASE_VARIANT, 0)
    comma = c.faults.inject_look_alike(job, LookAlike.COMMA_LIST, 0, other=other)
    garbage = c.faults.inject_look_alike(job, LookAlike.UNPARSABLE_IDENTITY, 0)
    bare = c.faults.inject_look_alike(job, LookAlike.NO_IDENTITY)
    theirs = c.faults.inject_look_alike(job, LookAlike.OTHER_USER)
    assert c.sim.job(int(variant)).name == name.lower()
    assert c.sim.job(int(comma)).name == f"{name},{other.discovery_name()}"
    assert (c.sim.job(int(garbage)).name, c.sim.job(int(garbage)).comment) == (
        name,
        "dispatch:s=01;a=1",
    )
    assert (c.sim.job(int(bare)).name, c.sim.job(int(bare)).comment) == (name, "")
    assert c.sim.job(int(theirs)).user != c.sim.config.user
    c.sim.advance(2)  # eligible look-alikes show in accounting too
    found = {o.ref.id: o for o in c.backend.find(plan.job)}
    assert set(found) == {ref.id, garbage, bare}
    assert found[garbage].foreign and found[bare].foreign and not found[ref.id].foreign


def test_every_form_of_every_look_alike_kind() -> None:
    c = Cluster()
    job = c.ctx.job_id()
    # Every kind but misnamed, which Slurm cannot have (its ids are slurmctld's): impossible.
    kinds = [kind for kind in LookAlike if kind is not LookAlike.MISNAMED]
    forms = {kind: c.faults.look_alike_forms(kind) for kind in kinds}
    assert forms == {
        LookAlike.CASE_VARIANT: 4,
        LookAlike.COMMA_LIST: 3,
        LookAlike.UNPARSABLE_IDENTITY: len(UNPARSABLE_COMMENTS),
        LookAlike.NO_IDENTITY: 1,
        LookAlike.OTHER_USER: 1,
        LookAlike.NEAR_IDENTITY: len(NEAR_COMMENTS),
    }
    ulid = str(job)
    names = {
        c.sim.job(int(c.faults.inject_look_alike(job, LookAlike.CASE_VARIANT, v))).name
        for v in range(forms[LookAlike.CASE_VARIANT])
    }
    assert names == {"dj-" + ulid.lower(), "DJ-" + ulid, "Dj-" + ulid, "DJ-" + ulid.lower()}
    lists = [
        c.sim.job(int(c.faults.inject_look_alike(job, LookAlike.COMMA_LIST, v))).name
        for v in range(3)
    ]
    second = sibling(job).discovery_name()
    assert second != job.discovery_name()
    assert lists == [f"{job.discovery_name()},{second}", f"{second},{job.discovery_name()}",
                     f"{job.discovery_name()},"]  # fmt: skip
    comments = [
        c.sim.job(int(c.faults.inject_look_alike(job, LookAlike.UNPARSABLE_IDENTITY, v))).comment
        for v in range(forms[LookAlike.UNPARSABLE_IDENTITY])
    ]
    assert comments == list(UNPARSABLE_COMMENTS)
    # Variants beyond the forms wrap around; each form is described for failure messages.
    wrapped = c.faults.inject_look_alike(job, LookAlike.UNPARSABLE_IDENTITY, len(comments))
    assert c.sim.job(int(wrapped)).comment == UNPARSABLE_COMMENTS[0]
    assert "dispatch:s=01;a=1" in c.faults.describe_look_alike(LookAlike.UNPARSABLE_IDENTITY, 0)
    near = c.faults.inject_look_alike(job, LookAlike.NEAR_IDENTITY, len(NEAR_DECIMALS) + 11)
    assert c.sim.job(int(near)).comment == "dispatch:s=1;a=\uff11"
    described = c.faults.describe_look_alike(LookAlike.NEAR_IDENTITY, len(NEAR_DECIMALS) + 11)
    assert "the attempt is a fullwidth digit one" in described


@pytest.mark.parametrize("operation", OPERATIONS)
def test_fail_before_effect_times_out_and_changes_nothing(c: Cluster, operation: str) -> None:
    ref = c.start()
    if operation == "requeue":
        c.faults.let_run(ref)
    number = c.backend.hold(ref) if operation == "release" else 0
    plan = c.ctx.plan()
    actions = {
        "start": lambda: c.backend.start(plan, 1, 1),
        "stop": lambda: c.backend.stop(ref),
        "hold": lambda: c.backend.hold(ref),
        "release": lambda: c.backend.release(ref, number),
        "requeue": lambda: c.backend.requeue(ref),
    }
    c.faults.fail_before_effect(operation)
    with contextlib.suppress(OutcomeUnknown):  # what a timeout is: the outcome is not known
        actions[operation]()
    assert any(r.get("name") == "timeout_before" for r in c.sim.trace.records)
    job = c.sim.job(int(ref.id))
    unchanged = {
        "start": lambda: c.sim.controller.named(plan.job.discovery_name()) == [],
        "stop": lambda: not job.state.finished,
        "hold": lambda: c.backend.open(ref).hold is None,
        "release": lambda: c.backend.open(ref).hold == number,
        "requeue": lambda: (job.restart_count, job.requeue) == (0, False),  # not even marked
    }
    assert unchanged[operation]()
    with pytest.raises(CannotInject, match=r"fail_before_effect\(restart\)"):
        c.faults.fail_before_effect("restart")


# -- what each harness declares -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["slurm-sim", "slurm-sim-nocomment", "slurm-local"])
def test_the_slurm_identity_model(name: str) -> None:
    harness = load_harness(name)
    assert harness.identity == IdentityModel(
        lookup=Lookup.NAME, reuses_ids=True, requeue_moves_submit=True, history_outlives_live=True
    )


def unmet(need: str, why: str) -> str:
    """What :func:`lacking` says of a need whose power the harness does not implement."""
    return (
        f"harness offers no {need} ({why}): implement "
        f"conformance.powers.{POWER_OF[need].__name__} to offer it"
    )


def test_the_simulated_clusters_offer_every_fault_and_probe_slurm_can_have() -> None:
    for job_comment in (True, False):
        harness = SlurmSimHarness(job_comment=job_comment)
        said = {need: lacking(harness, need) for need in known_needs()}
        # slurmctld hands out every job id itself; a failed command ends the job; no container
        # image; a finished job is never requeued; no version on a write; no retried write.
        expected = {need: unmet(need, why) for need, why in SLURM_IMPOSSIBLE_WHY.items()}
        touched = race_need(Race.TOUCHED)  # a form of race_next_write, which it implements
        assert offers_power(harness, touched)
        expected[touched] = f"harness cannot inject {touched} ({SLURM_IMPOSSIBLE_WHY[touched]})"
        misnamed = look_alike_need(LookAlike.MISNAMED)  # a look-alike kind, whose power it has
        expected[misnamed] = f"harness cannot inject {misnamed} ({SLURM_IMPOSSIBLE_WHY[misnamed]})"
        # its look-alikes are eligible (for accounting), and it opens no second cluster
        expected[LOOK_ALIKES_HELD] = (
            f"harness cannot inject {LOOK_ALIKES_HELD} ({ELIGIBLE_LOOK_ALIKES})"
        )
        expected[Probe.OTHER_TARGETS] = unmet(Probe.OTHER_TARGETS, "").replace(" ()", "")
        expected[Fault.TAKE_QUOTA] = unmet(Fault.TAKE_QUOTA, "").replace(" ()", "")
        if job_comment:
            expected[Fault.LOSE_IDENTITY_HISTORY] = (
                f"harness cannot inject lose_identity_history ({KEEPS_COMMENTS})"
            )
        assert {need: why for need, why in said.items() if why is not None} == expected


def test_slurm_local_lacks_what_a_real_cluster_cannot_do_and_nothing_without_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    harness = SlurmLocalHarness()
    # Only root may submit another user's job (sbatch --uid).
    other_user = harness.declines(look_alike_need(LookAlike.OTHER_USER))
    assert other_user == (None if os.geteuid() == 0 else OTHER_USER_REFUSED)
    assert OTHER_USER_REFUSED.startswith("slurm-local runs as a user other than root")
    assert not isinstance(harness, LosesNodes)
    assert lacking(harness, Fault.LOSE_NODE) == unmet(
        Fault.LOSE_NODE, "downing a real node would hit every job on it"
    )
    near = lacking(harness, look_alike_need(LookAlike.NEAR_IDENTITY)) or ""
    assert near.startswith("harness cannot inject look_alike:near_identity (")  # a form of one
    monkeypatch.setenv("PATH", str(tmp_path))  # no Slurm: the backend will say why
    for need in (Fault.PURGE, Fault.REUSE_ID, Fault.LOSE_IDENTITY_HISTORY, Probe.HOST_PATHS):
        assert lacking(SlurmLocalHarness(), need) is None


def test_slurm_local_lacks_by_the_cluster_s_configuration() -> None:
    harness = SlurmLocalHarness()
    harness._config = {
        "AccountingStorageType": "accounting_storage/slurmdbd",
        "AccountingStoreFlags": "",
        "FirstJobId": "1",
        "MaxJobId": "67043328",
        "MinJobAge": "300 sec",
    }
    assert lacking(harness, Fault.LOSE_IDENTITY_HISTORY) is None  # accounting keeps no comments
    assert lacking(harness, Fault.PURGE) == (
        "harness cannot inject purge (MinJobAge is 300 s here: too long to wait for)"
    )
    assert harness.declines(Fault.REUSE_ID) == "MinJobAge is 300 s here: too long to wait for"
    harness._config["MinJobAge"] = "2 sec"
    assert lacking(harness, Fault.PURGE) is None
    assert lacking(harness, Fault.REUSE_ID) == (
        "harness cannot inject reuse_id (MaxJobId 67043328 - FirstJobId 1: too many ids to "
        "drive the counter around; ci/slurm-up.sh --max-job-id sets a small one)"
    )
    harness._config["MaxJobId"] = "20"
    assert lacking(harness, Fault.REUSE_ID) is None
    assert lacking(harness, Fault.REUSE_ID_NEXT) is None
    harness._config["AccountingStorageType"] = "accounting_storage/none"
    assert "no accounting" in (lacking(harness, Fault.LOSE_IDENTITY_HISTORY) or "")


def test_hosts() -> None:
    sim = SlurmSimHarness()
    assert isinstance(sim.host(sim.new_backend()), LocalHost)
    local = SlurmLocalHarness()
    assert isinstance(local.host(SlurmBackend(LocalTransport())), TransportHost)


def test_the_transport_host_works_through_commands(tmp_path: Path) -> None:
    host = TransportHost(lambda argv: LocalTransport().run(argv))
    scratch = host.scratch_dir()
    try:
        assert host.exists(scratch) and not host.exists(f"{scratch}/x")
        Path(scratch, "x").write_text("hello\n")
        assert host.read(f"{scratch}/x") == "hello\n" and host.read(f"{scratch}/y") is None
        os.symlink(scratch, tmp_path / "link")
        assert host.realpath(str(tmp_path / "link")) == os.path.realpath(scratch)
    finally:
        host.remove(scratch)
    assert not os.path.exists(scratch)


def test_slurm_local_cleans_a_check_s_jobs_at_its_end_not_at_the_next_begin() -> None:
    cancelled: list[list[str]] = []

    class Recording:
        def run(self, argv, stdin=None, timeout=None):  # type: ignore[no-untyped-def]
            words = [w for w in argv if "=" not in w and w != "env"]
            if words[:1] == ["scancel"]:
                cancelled.append(words[1:])
            return subprocess.CompletedProcess(list(argv), 0, "", "")

    harness = SlurmLocalHarness(transport=Recording())
    harness.handed_out("7")
    harness.handed_out("8")
    harness.begin("TEST-002")
    assert cancelled == []  # begin leaves nothing to clean
    harness.end("TEST-002")
    assert cancelled == [["7", "8"]] and harness.ours == []
    harness.end("TEST-003")
    assert cancelled == [["7", "8"]]  # nothing left


def test_a_lost_reply_and_a_timeout_before_effect_on_slurm_local() -> None:
    calls: list[list[str]] = []

    class Recording:
        def run(self, argv, stdin=None, timeout=None):  # type: ignore[no-untyped-def]
            calls.append(list(argv))
            return subprocess.CompletedProcess(list(argv), 0, "42\n", "")

    harness = SlurmLocalHarness(transport=Recording())
    backend = SlurmBackend(LocalSlurm(Recording(), harness.handed_out))
    faults = Faults(harness, backend)
    faults.fail_before_effect("start")
    with pytest.raises(subprocess.TimeoutExpired):
        backend.transport.run(["env", "TZ=UTC", "sbatch", "--parsable"])
    assert calls == []  # never run
    faults.lose_next_reply("start")
    with pytest.raises(subprocess.TimeoutExpired):
        backend.transport.run(["env", "TZ=UTC", "sbatch", "--parsable"])
    assert len(calls) == 1 and harness.ours == ["42"]  # it ran, and its id is the harness's


# -- executions ----------------------------------------------------------------------------------------


def test_executions_give_every_rank_of_every_execution(c: Cluster) -> None:
    spec = JobSpec(command=("true",), nodes=2, procs_per_node=2, env={"MINE": "x"})
    plan = c.ctx.plan(spec)
    ref = c.ctx.start(plan)
    assert c.harness.executions(c.backend, ref) == []
    c.faults.let_run(ref)
    c.backend.requeue(ref)
    c.faults.let_run(ref)
    runs = c.harness.executions(c.backend, ref)
    assert len(runs) == 2 and all(len(ranks) == 4 for ranks in runs)
    for restart, ranks in enumerate(runs):
        for procid, env in enumerate(ranks):
            assert env["SLURM_PROCID"] == str(procid)
            assert env["DISPATCH_JOB"] == str(plan.job)
            assert env["DISPATCH_SUBMISSION"] == "1"
            assert env["DISPATCH_ATTEMPT"] == f"1-{ref.id}-{restart}"
            assert env["DISPATCH_EPOCH"] == str(1_000_000 + restart)
            assert env["MINE"] == "x"
    # Another submission of the same job, on the same id: its executions are its own.
    c.faults.reuse_id_next(ref)
    again = c.ctx.start(make_plan(c.backend, spec, None, with_job(plan.job)), submission=2)
    c.faults.let_run(again)
    assert again.id == ref.id
    assert len(c.harness.executions(c.backend, ref)) == 2
    [ranks] = c.harness.executions(c.backend, again)
    assert {env["DISPATCH_ATTEMPT"] for env in ranks} == {f"2-{ref.id}-0"}


def test_scratch_is_the_login_directory_and_goes_with_the_cluster() -> None:
    harness = SlurmSimHarness()
    backend = harness.new_backend()
    faults = Faults(harness, backend)
    ref = backend.start(make_plan(backend, JobSpec(command=("true",))), 1, 1)
    faults.let_run(ref)
    scratch = sim_cluster(backend).scratch
    assert (scratch / f"slurm-{ref.id}.out").exists()  # not in the host's home directory
    del backend, faults
    gc.collect()
    assert not scratch.exists()


# -- every registered check ---------------------------------------------------------------------------

SIM_HARNESSES = ("slurm-sim", "slurm-sim-nocomment")
CANNOT = {
    # The faults and probes each harness cannot provide, by design (the skip it must give).
    # race_next_write:touched: slurmctld's writes carry no precondition to miss;
    # fail_every_try: the Slurm adapter retries no write; evict: a Slurm node evicts no job;
    # look_alike:misnamed: the name is the key and slurmctld hands out the ids; runtimes: no
    # Slurm job names a runtime that reruns a task under its identity; other_targets: the
    # Slurm adapter keeps nothing it read of its cluster but its own preflight's answers, and
    # no Slurm harness opens a second cluster; look_alike:held: slurm-sim's look-alikes are eligible
    # (for accounting to show them), and its scheduler runs them; take_quota: no QOS
    # limits on the simulator
    "slurm-sim": (
        "lose_identity_history",
        "recreate",
        "take_id_ahead",
        "self_restarts",
        "images",
        "unpullable_image",
        "race_next_write:touched",
        "fail_every_try",
        "stall_teardown",
        "evict",
        "look_alike:misnamed",
        "runtimes",
        "other_targets",
        "look_alike:held",
        "take_quota",
    ),
    "slurm-sim-nocomment": (
        "recreate",
        "take_id_ahead",
        "self_restarts",
        "images",
        "unpullable_image",
        "race_next_write:touched",
        "fail_every_try",
        "stall_teardown",
        "evict",
        "look_alike:misnamed",
        "runtimes",
        "other_targets",
        "look_alike:held",
        "take_quota",
    ),
}
KNOWN: dict[tuple[str, str], str] = {}
"""(check id, harness) -> the open adapter or simulator bug that makes it fail there."""


@pytest.mark.parametrize("harness_name", SIM_HARNESSES)
@pytest.mark.parametrize("check", checks(), ids=lambda check: check.id)
def test_every_registered_check_on_the_simulated_clusters(check: Check, harness_name: str) -> None:
    result = run_check(check, load_harness(harness_name), seed=0)
    assert result.outcome is not Outcome.ERROR, result.reason  # the harness's own error
    for prefix in ("harness cannot inject ", "harness offers no "):
        if result.outcome is Outcome.SKIPPED and result.reason.startswith(prefix):
            fault = result.reason.removeprefix(prefix)
            assert fault.startswith(CANNOT[harness_name]), f"{check.id}: {result.reason}"
    if result.outcome is not Outcome.FAILED:
        return
    if (check.id, harness_name) in KNOWN:
        pytest.xfail(KNOWN[check.id, harness_name])
    on_memory = run_check(check, load_harness("memory-slurm"), seed=0)
    if on_memory.outcome is Outcome.FAILED:
        pytest.skip(
            f"{check.id} fails on memory-slurm too (a suite or core matter): {on_memory.reason}"
        )
    pytest.fail(
        f"{check.id} fails on {harness_name} but not on memory-slurm: a harness, adapter or "
        f"simulator bug\n{result.reason}"
    )


# -- adapter bugs the harness showed (now fixed) ------------------------------------------------------------


@pytest.mark.parametrize("job_comment", [True, False])
def test_a_job_cancelled_after_a_requeue_reads_back_cancelled_once_purged(
    job_comment: bool,
) -> None:
    c = Cluster(job_comment=job_comment)
    plan = c.ctx.plan()
    ref = c.ctx.start(plan)
    c.faults.let_run(ref)
    c.backend.requeue(ref)
    c.sim.advance(2)  # back in the queue, eligible in 121 s
    c.backend.stop(ref)
    assert c.backend.open(ref).state is State.CANCELLED
    c.faults.purge(ref)
    assert c.backend.open(ref).state is State.CANCELLED
    assert [o.state for o in c.backend.find(plan.job)] == [State.CANCELLED]


# -- slurm-local ---------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def not_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests see slurm-local as a developer does (CI exports CI=true)."""
    monkeypatch.delenv("CI", raising=False)


def test_under_ci_a_missing_slurm_fails_every_check_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    harness = SlurmLocalHarness()
    with pytest.raises(HarnessUnavailable, match="needs a real Slurm under CI=true"):
        harness.new_backend()
    result = run_check(checks()[0], harness)
    assert result.outcome is Outcome.FAILED
    assert result.reason == (
        "harness slurm-local unavailable: slurm-local needs a real Slurm under CI=true "
        "(start it with ci/slurm-up.sh): no sbatch on PATH"
    )


def test_slurm_local_without_slurm_skips_every_check_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    harness = SlurmLocalHarness()
    with pytest.raises(CannotInject, match="a real Slurm: no sbatch on PATH"):
        harness.new_backend()
    for check in checks()[:3]:
        result = run_check(check, harness)
        assert result.outcome is Outcome.SKIPPED
        assert result.reason == "harness cannot inject a real Slurm: no sbatch on PATH"


def test_slurm_local_when_slurmctld_does_not_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for program, text in (
        ("sbatch", "exit 1"),
        (
            "scontrol",
            "echo 'slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)' >&2; exit 1",
        ),
    ):
        (tmp_path / program).write_text(f"#!/bin/sh\n{text}\n")
        (tmp_path / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin:/bin")
    with pytest.raises(CannotInject, match="Unable to contact slurm controller"):
        SlurmLocalHarness().new_backend()


class ShimClock:
    """The shims' virtual clock: waiting advances the simulated cluster, never sleeps."""

    def __init__(self, state: Path) -> None:
        self.state = state

    def _ctl(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "simulators.slurm.shims", *args, "--state-dir", str(self.state)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=True,
            timeout=60,
        )
        return done.stdout

    def now(self) -> float:
        return float(self._ctl("now").split()[0])

    def sleep(self, seconds: float) -> None:
        self._ctl("advance", str(seconds))


def test_slurm_local_against_the_simulator_s_path_shims(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    subprocess.run(
        [sys.executable, "-m", "simulators.slurm.shims", "install", "--state-dir", str(state),
         "--bin-dir", str(bin_dir), "--start", str(int(time.time())), "--min-job-age", "2",
         "--cluster-name", "shimmed"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    # The shims run no job command: a started job records no tasks, so do not wait for them.
    harness = SlurmLocalHarness(clock=ShimClock(state), bound=30, task_bound=0)
    backend = harness.new_backend()
    assert isinstance(backend, SlurmBackend)
    assert (backend.name, backend.job_comment) == ("shimmed", True)
    faults = Faults(harness, backend)
    plan = make_plan(backend, JobSpec(command=("true",)), None, with_job(JobID.new()))
    ref = backend.start(plan, 1, 1)
    faults.let_run(ref)
    assert backend.open(ref).state is State.RUNNING
    faults.requeue_underneath(ref)
    seen = backend.open(ref)
    assert (seen.state, seen.restart_count) == (State.QUEUED, 1)
    garbage = faults.inject_look_alike(plan.job, LookAlike.UNPARSABLE_IDENTITY, 10)  # "garbage"
    assert {o.ref.id: o.foreign for o in backend.find(plan.job)} == {ref.id: False, garbage: True}
    faults.lose_next_reply("hold")
    with pytest.raises(OutcomeUnknown):
        backend.hold(ref)
    assert backend.open(ref).hold is not None
    other = backend.start(make_plan(backend, JobSpec(command=("true",))), 1, 1)
    faults.let_run(other)
    faults.purge(other)  # cancelled, then MinJobAge waited for on the cluster's clock
    assert backend.open(other).state is State.CANCELLED
    assert "accounting" in backend.open(other).detail
    with pytest.raises(Rejected, match="held"):
        faults.let_run(ref)  # held through StartTime: told at once, not waited for
    third = backend.start(make_plan(backend, JobSpec(command=("true",))), 1, 1)
    for fault, call in (
        ("finish", lambda: faults.finish(third, 1)),  # it runs ``true``, not the job command
        ("lose_node", lambda: faults.lose_node(ref)),  # no such power: LosesNodes
        ("lose_identity_history", faults.lose_identity_history),
        ("other_user", lambda: faults.inject_look_alike(plan.job, LookAlike.OTHER_USER)),
    ):
        with pytest.raises(CannotInject, match=fault):
            call()
    assert harness.executions(backend, ref) == []  # nothing ran the harness's job command
    # What the harness declines, from the cluster's configuration, before any backend is made.
    assert lacking(harness, Fault.LOSE_IDENTITY_HISTORY) == (
        "harness cannot inject lose_identity_history (this cluster's accounting keeps "
        "comments: run the suite again after ci/slurm-up.sh --no-job-comment)"
    )
    assert lacking(harness, Fault.PURGE) is None  # MinJobAge 2 s
    assert "too many ids to drive the counter around" in (lacking(harness, Fault.REUSE_ID) or "")
    assert lacking(harness, Fault.LOSE_NODE) == unmet(
        Fault.LOSE_NODE, "downing a real node would hit every job on it"
    )
    # The cluster's paths, through the harness's own commands.
    host = harness.host(backend)
    scratch = host.scratch_dir()
    assert host.exists(scratch) and host.read(f"{scratch}/nothing") is None
    host.remove(scratch)
    assert not host.exists(scratch)
    harness.end("TEST-000")  # cancels every job of the check
    seen = harness.command(["squeue", "-h", "-t", "all", "-o", "%i %T"]).stdout.split("\n")
    assert {f"{garbage} CANCELLED", f"{ref.id} CANCELLED"} <= set(seen)
    harness.close()  # and removes its control directory
    stop(str(state))  # the cluster's server, which the first shim call started


def test_commands_run_but_are_never_waited_on(c: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    echo = c.start(JobSpec(command=("echo", "marker"), extensions={"dispatch.Output": str(out)}))
    c.faults.let_run(echo)
    assert out.read_text() == "marker\n"  # the command ran, its output where asked
    started = time.monotonic()
    ref = c.start(JobSpec(command=("sleep", "3600"), nodes=2))
    c.faults.let_run(ref)
    assert time.monotonic() - started < 5  # not waited on: it runs in the background
    assert c.backend.open(ref).state is State.RUNNING
    [ranks] = c.harness.executions(c.backend, ref)
    assert [env["SLURM_PROCID"] for env in ranks] == ["0", "1"]  # both recorded up front
    assert all(env["DISPATCH_ATTEMPT"] == f"1-{ref.id}-0" for env in ranks)
    process = c.cluster.execute.running[int(ref.id)].process
    assert process.poll() is None
    c.backend.stop(ref)  # the job ends: its command is killed, as slurmd would
    assert process.poll() is not None and int(ref.id) not in c.cluster.execute.running


def test_a_dropped_cluster_kills_the_commands_still_running() -> None:
    harness = SlurmSimHarness()
    backend = harness.new_backend()
    faults = Faults(harness, backend)
    ref = backend.start(make_plan(backend, JobSpec(command=("sleep", "3600"))), 1, 1)
    faults.let_run(ref)
    process = sim_cluster(backend).execute.running[int(ref.id)].process
    del backend, faults
    gc.collect()
    assert process.wait(timeout=5) is not None


# -- slurm-local's job command, run here as srun would run each task -----------------------------


def run_task(
    harness: SlurmLocalHarness, job: str, name: str, rank: int, restart: int | None
) -> int:
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": job, "SLURM_JOB_NAME": name}
    env["SLURM_PROCID"] = str(rank)
    if restart is not None:
        env["SLURM_RESTART_COUNT"] = str(restart)
    done = subprocess.run(list(harness.job_command()), env=env, timeout=30, check=False)
    return done.returncode


def test_the_job_command_records_every_task_and_exits_with_the_code_finish_wrote() -> None:
    harness = SlurmLocalHarness()
    ref = ObjectRef(backend="lab", uid="dj-x", id="7", submit=datetime(2026, 11, 30, tzinfo=UTC))
    control = Path(harness.control_dir())
    try:
        # finish wrote the code before the tasks started: they record themselves, then exit.
        for restart, code in ((None, 3), (1, 0)):
            run = control / f"7.dj-x.{restart or 0}"
            run.mkdir()
            (run / "exit").write_text(f"{code}\n")
            assert [run_task(harness, "7", "dj-x", rank, restart) for rank in (1, 0)] == [code] * 2
        other = ObjectRef(
            backend="lab", uid="dj-y", id="7", submit=datetime(2026, 11, 30, tzinfo=UTC)
        )
        executions = [tasks for _, tasks in harness.runs(ref)]
        assert [[env["SLURM_PROCID"] for env in tasks] for tasks in executions] == [["0", "1"]] * 2
        assert [tasks[0].get("SLURM_RESTART_COUNT") for tasks in executions] == [None, "1"]
        assert harness.runs(other) == []  # another job that had the id records apart
        harness.forget(ref)
        assert harness.runs(ref) == []
    finally:
        harness.close()
    assert not control.exists()
