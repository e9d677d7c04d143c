"""The kubeflow-sim harnesses themselves: their identity model, powers and refusals, the
executions probe, the gate on the clock, the faults as the cluster shows them, the per-check
lifetime, and kubeflow-remote's answer when no cluster is there, and its listing and inventory
on a served simulator."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from adapters.kubeflow.holds import HoldNumbers
from adapters.kubeflow.kube import KUEUE as KUEUE_API
from adapters.kubeflow.kube import TRAINER as TRAINER_API
from adapters.kubeflow.kube import ApiFailure
from adapters.kubeflow.testing.lookalikes import (
    JOB_LABEL,
    SUBMISSION_LABEL,
    dispatch_trainjob,
    look_alike_forms,
)
from adapters.kubeflow.testing.remote import KubeflowRemoteHarness
from adapters.kubeflow.testing.sim import (
    KUBE_IDENTITY,
    REFUSED,
    KubeflowSimHarness,
    SimCluster,
    kubeflow_sim,
    kubeflow_sim_kueue,
)
from conformance.checks import CheckFailed
from conformance.faults import Faults
from conformance.harness import (
    STALL_BOUND,
    CannotInject,
    Fault,
    HarnessUnavailable,
    Listed,
    LookAlike,
    Lookup,
    Probe,
    ReplyLoss,
    Shown,
    look_alike_need,
    reply_loss_need,
)
from conformance.powers import RequeuesUnderneath, StallsTeardown, lacking, offers_power
from conformance.runner import known_needs
from dispatch_core import (
    HoldBound,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    OutcomeUnknown,
    State,
    make_plan,
    with_job,
)
from dispatch_core.identity import parse_execution_env
from simulators.kubernetes import KubeConfig, KubeSim
from simulators.kubernetes.controllers.kubelet import logs
from simulators.kubernetes.inprocess import InProcessPool
from simulators.kubernetes.resources import TRAINJOBS


def started(harness: KubeflowSimHarness, nodes: int = 2) -> tuple[Any, ObjectRef]:
    harness.begin("test")
    backend = harness.new_backend()
    plan = make_plan(backend, JobSpec(command=("true",), nodes=nodes))
    ref = backend.start(plan, 1, 1)
    jobs[ref.id] = plan.job
    return backend, ref


jobs: dict[str, JobID] = {}


def test_the_identity_model_and_every_refusal_has_its_reason() -> None:
    for harness in (kubeflow_sim(), kubeflow_sim_kueue()):
        assert harness.identity == KUBE_IDENTITY
        assert KUBE_IDENTITY.lookup is Lookup.LABEL and KUBE_IDENTITY.reuses_ids  # names, not uids
        assert not KUBE_IDENTITY.requeue_moves_submit and not KUBE_IDENTITY.history_outlives_live
        for need in known_needs():
            why = lacking(harness, need)
            if need in REFUSED:
                assert why is not None and f"({REFUSED[need]})" in why, need
            elif need not in (Fault.REQUEUE_UNDERNEATH, Fault.TAKE_QUOTA):
                assert why is None, (need, why)
        # A form of a power it implements is declined; a power it lacks is never offered.
        for need in (look_alike_need(LookAlike.COMMA_LIST), reply_loss_need(ReplyLoss.GARBLED)):
            assert offers_power(harness, need) and harness.declines(need) == REFUSED[need]
        assert not offers_power(harness, Probe.SIGNALS)
    # One class for both clusters: each implements both powers; only Kueue requeues underneath,
    # and a JobSet's teardown can be held on either.
    for harness in (kubeflow_sim(), kubeflow_sim_kueue()):
        assert isinstance(harness, RequeuesUnderneath) and isinstance(harness, StallsTeardown)
        assert lacking(harness, Fault.STALL_TEARDOWN) is None
    assert lacking(kubeflow_sim(), Fault.REQUEUE_UNDERNEATH) is not None
    assert lacking(kubeflow_sim_kueue(), Fault.REQUEUE_UNDERNEATH) is None
    # Without Kueue nothing meters a quota; with it, another user's Workload can hold it.
    assert lacking(kubeflow_sim(), Fault.TAKE_QUOTA) is not None
    assert lacking(kubeflow_sim_kueue(), Fault.TAKE_QUOTA) is None
    assert look_alike_forms(LookAlike.COMMA_LIST) == 0


def test_recreate_makes_the_job_s_copy_under_the_name_with_a_new_uid() -> None:
    for harness in (kubeflow_sim(), kubeflow_sim_kueue()):
        backend, ref = started(harness)
        Faults(harness, backend).recreate(ref)
        (copy,) = backend.find(jobs[ref.id])
        assert copy.ref.id == ref.id and copy.ref.uid != ref.uid
        assert (copy.submission, copy.attempt, copy.foreign) == (1, 1, False)
        with pytest.raises(NotFound):
            backend.open(ref)
        harness.end("test")


def test_reuse_id_gives_the_deleted_trainjob_s_name_to_another_user_s() -> None:
    harness = kubeflow_sim()
    backend, ref = started(harness)
    backend.stop(ref)
    Faults(harness, backend).reuse_id(ref)
    namespace, _, name = ref.id.partition("/")
    taken = harness.cluster_of(backend).sim.store.peek(TRAINJOBS, namespace, name)
    assert taken is not None and taken["metadata"]["uid"] != ref.uid
    assert JOB_LABEL not in (taken["metadata"].get("labels") or {})
    assert backend.find(jobs[ref.id]) == []
    harness.end("test")


def test_a_cut_requeue_stays_cut_until_the_check_asks_what_fired() -> None:
    """The resume and the adapter's retry of it are refused: the TrainJob stays suspended."""
    harness = kubeflow_sim()
    backend, ref = started(harness)
    faults = Faults(harness, backend)
    faults.let_run(ref)
    faults.fail_between_steps("requeue")
    with pytest.raises(OutcomeUnknown):
        backend.requeue(ref)
    assert faults.unfired() == []
    namespace, _, name = ref.id.partition("/")
    trainjob = harness.cluster_of(backend).sim.store.peek(TRAINJOBS, namespace, name)
    assert trainjob is not None and trainjob["spec"]["suspend"] is True
    backend.requeue(ref)  # the cut is over: this one completes it
    assert backend.open(ref).restart_count == 1
    harness.end("test")


def test_executions_group_ranks_by_execution_in_index_order_through_requeues() -> None:
    harness = kubeflow_sim()
    backend, ref = started(harness)
    faults = Faults(harness, backend)
    faults.let_run(ref)
    backend.requeue(ref)
    faults.let_run(ref)
    runs = harness.executions(backend, ref)
    assert [len(ranks) for ranks in runs] == [2, 2]
    identities = [[parse_execution_env(env) for env in ranks] for ranks in runs]
    assert all(len({i.attempt for i in ranks}) == 1 for ranks in identities)
    epochs = [ranks[0].epoch for ranks in identities]
    assert epochs == sorted(set(epochs))
    assert [env["JOB_COMPLETION_INDEX"] for env in runs[0]] == ["0", "1"]
    harness.end("test")


def test_a_rank_restarted_in_place_is_a_new_execution_under_the_same_identity() -> None:
    harness = KubeflowSimHarness(default_runtime="torch-distributed")
    harness.begin("test")
    backend = harness.new_backend()
    backend.allow_rank_restart = True
    plan = make_plan(backend, JobSpec(command=("true",), nodes=1))
    ref = backend.start(plan, 1, 1)
    faults = Faults(harness, backend)
    faults.let_run(ref)
    cluster = harness.cluster_of(backend)
    (pod,) = cluster.pods(cluster.require(ref))
    cluster.sim.faults.oom_kill("default", pod["metadata"]["name"])  # OnFailure: in place
    cluster.clock.advance(30)
    runs = harness.executions(backend, ref)
    assert len(runs) == 2
    assert runs[0][0]["DISPATCH_ATTEMPT"] == runs[1][0]["DISPATCH_ATTEMPT"]
    harness.end("test")


def test_under_kueue_the_gate_admits_when_the_clock_moves_and_readmits_after_an_eviction() -> None:
    harness = kubeflow_sim_kueue()
    backend, ref = started(harness)
    assert backend.open(ref).state is State.QUEUED  # the gate's next pass is not made yet
    faults = Faults(harness, backend)
    faults.let_run(ref)
    faults.requeue_underneath(ref)
    faults.let_run(ref)
    faults.preempt(ref)
    faults.let_run(ref)
    attempts = [ranks[0]["DISPATCH_ATTEMPT"] for ranks in harness.executions(backend, ref)]
    assert len(attempts) == 3 and len(set(attempts)) == 3, attempts
    with pytest.raises(CannotInject, match="held"):
        faults.requeue_underneath(ref, held=True)
    harness.end("test")


def test_finish_ends_the_object_with_its_exit_code_and_lose_node_ends_it() -> None:
    harness = kubeflow_sim()
    backend, ref = started(harness)
    Faults(harness, backend).finish(ref, 3)
    seen = backend.open(ref)
    assert seen.state is State.FAILED and seen.exit_code == 3
    second = backend.start(make_plan(backend, JobSpec(command=("true",), nodes=2)), 2, 1)
    Faults(harness, backend).lose_node(second)
    assert backend.open(second).state.ended
    harness.end("test")


def test_a_stalled_teardown_keeps_the_deleted_jobset_until_the_stall_ends() -> None:
    harness = kubeflow_sim()
    backend, ref = started(harness)
    faults = Faults(harness, backend)
    cluster = harness.by_backend[id(backend)][1]
    faults.finish(ref, 3)
    faults.stall_teardown(ref)
    with pytest.raises(OutcomeUnknown, match="did not go within the bound"):
        backend.requeue(ref)
    (jobset,) = cluster.jobsets(cluster.require(ref))
    assert jobset["metadata"].get("deletionTimestamp")
    faults.end_stall(ref)
    uids = {js["metadata"]["uid"] for js in cluster.jobsets(cluster.require(ref))}
    assert jobset["metadata"]["uid"] not in uids  # gone (the Trainer makes a new one, suspended)
    backend.requeue(ref)  # the teardown done, the requeue completes
    assert backend.open(ref).restart_count == 1
    harness.end("test")


def test_a_wait_past_the_stall_bound_fails_the_check_and_lifts_the_stall() -> None:
    harness = kubeflow_sim()
    backend, ref = started(harness)
    faults = Faults(harness, backend)
    cluster = harness.by_backend[id(backend)][1]
    faults.finish(ref, 3)
    faults.stall_teardown(ref)
    with pytest.raises(CheckFailed, match="every wait of an adapter must be bounded"):
        cluster.clock.advance(STALL_BOUND + 1)
    assert cluster.stalled_since is None and cluster.stalled == []
    assert "finalizers" not in cluster.jobsets(cluster.require(ref))[0]["metadata"]
    harness.end("test")


def test_the_adapters_credentials_are_namespaced() -> None:
    harness = kubeflow_sim_kueue()
    backend, _ = started(harness)
    kube = backend.kube
    assert isinstance(kube.list_objects(KUEUE_API, "workloads", "default"), list)  # its own
    with pytest.raises(ApiFailure) as refused:
        kube.list_objects(KUEUE_API, "workloads", None)  # every namespace
    assert refused.value.status == 403 and "at the cluster scope" in refused.value.message
    with pytest.raises(ApiFailure) as elsewhere:
        kube.list_objects(KUEUE_API, "workloads", "someone-else")  # another namespace
    assert elsewhere.value.status == 403 and 'namespace "someone-else"' in elsewhere.value.message
    assert kube.list_objects(TRAINER_API, "clustertrainingruntimes", None)  # cluster-scoped
    harness.end("test")


def test_hold_edge_moves_the_clock_to_the_edges_of_the_hold_numbering() -> None:
    harness = kubeflow_sim()
    backend, _ = started(harness)
    faults = Faults(harness, backend)
    assert faults.hold_edges() == 3
    numbers = []
    for variant in range(3):
        faults.hold_edge(variant)
        numbers.append(HoldNumbers(backend.clock).next(None))
    assert numbers == [HoldBound - 1, 1, HoldBound - 2]
    harness.end("test")


def test_call_faults_fire_on_the_adapters_next_write_of_the_operation() -> None:
    harness = kubeflow_sim()
    backend, ref = started(harness)
    faults = Faults(harness, backend)
    faults.lose_next_reply("stop")
    assert faults.unfired() == ["lose_next_reply(stop)"]
    backend.open(ref)  # a read fires nothing
    assert faults.unfired() == ["lose_next_reply(stop)"]
    backend.stop(ref)
    assert faults.unfired() == []
    assert backend.find(jobs[ref.id]) == []
    with pytest.raises(CannotInject, match="garbled"):
        faults.lose_next_reply("start", ReplyLoss.GARBLED)
    harness.end("test")


@pytest.mark.parametrize(
    "kind", [k for k in LookAlike if k not in (LookAlike.COMMA_LIST, LookAlike.MISNAMED)]
)
def test_look_alikes_are_trainjobs_named_like_the_jobs(kind: LookAlike) -> None:
    harness = kubeflow_sim()
    harness.begin("test")
    backend = harness.new_backend()
    job = JobID.new()
    faults = Faults(harness, backend)
    for variant in range(faults.look_alike_forms(kind)):
        native = faults.inject_look_alike(job, kind, variant)
        namespace, _, name = native.partition("/")
        obj = harness.cluster_of(backend).sim.get(TRAINJOBS, name, namespace)
        assert name.startswith(f"dj-{str(job).lower()}-")
        labels = obj["metadata"]["labels"]
        if kind is LookAlike.CASE_VARIANT:
            assert labels[JOB_LABEL] != str(job) and labels[JOB_LABEL].upper() == str(job)
        else:
            assert labels[JOB_LABEL] == str(job)
        if kind is LookAlike.OTHER_USER:
            assert namespace != "default" and labels[SUBMISSION_LABEL] == "1"
        assert faults.describe_look_alike(kind, variant)
    seen = backend.find(job)
    assert all(o.foreign for o in seen) and len(seen) == (
        faults.look_alike_forms(kind) if kind.foreign else 0
    )
    with pytest.raises(CannotInject, match="comma"):
        faults.inject_look_alike(job, LookAlike.COMMA_LIST)
    harness.end("test")


def test_misnamed_look_alikes_carry_submission_1_under_other_names() -> None:
    harness = kubeflow_sim()
    harness.begin("test")
    backend = harness.new_backend()
    job = JobID.new()
    ulid = str(job).lower()
    faults = Faults(harness, backend)
    kind = LookAlike.MISNAMED
    assert faults.look_alike_forms(kind) == 5 and kind.foreign
    made = [faults.inject_look_alike(job, kind, v) for v in range(5)]
    again = faults.inject_look_alike(job, kind, 3)  # the leading zero, made twice
    names = [native.partition("/")[2] for native in made]
    assert names[0].startswith(f"dj-{ulid}-9") and names[0] != f"dj-{ulid}-1"
    assert names[1].startswith(f"dj-{ulid}-1-copy-")
    assert names[2].startswith("copy-") and names[2].endswith(f"-dj-{ulid}-1")
    assert names[3] == f"dj-{ulid}-01" and again == f"default/dj-{ulid}-001"
    assert names[4].startswith("training-run-")
    cluster = harness.cluster_of(backend)
    for native in [*made, again]:
        assert len(native.partition("/")[2]) <= 63
        obj = cluster.sim.get(TRAINJOBS, native.partition("/")[2], "default")
        labels = obj["metadata"]["labels"]
        assert (labels[JOB_LABEL], labels[SUBMISSION_LABEL]) == (str(job), "1")
        assert obj["metadata"]["annotations"] == {"dispatch/attempt": "1"}
    assert all("misnamed: named " in faults.describe_look_alike(kind, v) for v in range(5))
    seen = {o.ref.id: o for o in backend.find(job)}
    assert set(seen) == {*made, again}
    assert all(o.foreign and (o.submission, o.attempt) == (None, None) for o in seen.values())
    ref = backend.start(make_plan(backend, JobSpec(command=("true",)), None, with_job(job)), 1, 1)
    assert ref.id == f"default/dj-{ulid}-1" and not backend.open(ref).foreign
    harness.end("test")


def test_end_stops_every_server_the_check_started() -> None:
    harness = kubeflow_sim_kueue()
    harness.begin("test")
    backend = harness.new_backend()
    url = harness.cluster_of(backend).server.url
    with urllib.request.urlopen(f"{url}/version") as answer:
        assert answer.status == 200
    harness.end("test")
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(f"{url}/version", timeout=2)
    with pytest.raises(TypeError):
        harness.clock(backend)


@pytest.mark.parametrize("over_http", [False, True])
def test_the_harness_cluster_is_reached_in_process_or_over_http(over_http: bool) -> None:
    cluster = SimCluster(kueue=False, seed=1, over_http=over_http)
    api = cluster.api()
    version: Any = client.VersionApi(api)
    assert version.get_code().git_version.startswith("v1.")
    pool = api.rest_client.pool_manager
    assert isinstance(pool, InProcessPool) is not over_http
    if not over_http:
        assert pool.requests == 1
    cluster.close()


def test_kubeflow_remote_without_a_cluster_says_what_is_missing(tmp_path: Path) -> None:
    harness = KubeflowRemoteHarness({"KUBECONFIG": str(tmp_path / "none")})
    with pytest.raises(CannotInject) as missing:
        harness.new_backend()
    assert "no kubeconfig at" in missing.value.missing
    assert "DISPATCH_KUBECONFIG" in missing.value.missing
    explicit = KubeflowRemoteHarness({"DISPATCH_KUBECONFIG": str(tmp_path / "none")})
    with pytest.raises(HarnessUnavailable):
        explicit.new_backend()
    under_ci = KubeflowRemoteHarness({"KUBECONFIG": str(tmp_path / "none"), "CI": "true"})
    with pytest.raises(HarnessUnavailable):
        under_ci.new_backend()
    assert harness.declines(Probe.PREFLIGHT) is not None
    assert lacking(harness, Probe.PREFLIGHT) is not None
    assert lacking(harness, Fault.LET_RUN) is not None
    assert lacking(harness, Probe.INVENTORY) is None


def test_kubeflow_remote_on_a_served_cluster_makes_backends() -> None:
    sim = KubeSim(KubeConfig(default_run_seconds=None), seed=2)
    with sim.serve() as server:
        harness = KubeflowRemoteHarness({"DISPATCH_KUBECONFIG": str(server.kubeconfig)})
        backend = harness.new_backend()
        assert backend.namespace == "default"
        answers = backend.capabilities(None)
        assert answers
        plan = make_plan(backend, JobSpec(command=harness.job_command(), nodes=1))
        ref = backend.start(plan, 1, 1)
        assert harness.inventory(backend) == [ref.id]
        assert backend.open(ref).ref == ref
        harness.end("test")


def test_kubeflow_remote_lists_the_namespace_s_trainjobs_as_the_simulated_clusters_do() -> None:
    """The remote harness reads the TrainJobs, JobSets and pods over the API (its own client),
    and shows each as the simulated cluster's own listing shows it, as it goes from pending to
    running to ended; another namespace's TrainJobs are not the user's."""
    harness = kubeflow_sim()
    harness.begin("test")
    sim_backend = harness.new_backend()
    cluster = harness.cluster_of(sim_backend)
    remote = KubeflowRemoteHarness({"DISPATCH_KUBECONFIG": str(cluster.server.kubeconfig)})
    backend = remote.new_backend()
    assert remote.listing(backend) == {}
    plan = make_plan(backend, JobSpec(command=("true",), nodes=2))
    ref = backend.start(plan, 1, 1)
    elsewhere = dispatch_trainjob("dj-elsewhere-1", {JOB_LABEL: str(plan.job)}, {}, suspend=True)
    cluster.sim.create(TRAINJOBS, elsewhere, "kube-public")
    faults = Faults(harness, sim_backend)
    seen: list[Shown] = []
    for step in (lambda: None, lambda: faults.let_run(ref), lambda: faults.finish(ref, 0)):
        step()
        listed = remote.listing(backend)
        assert listed == cluster.listing(), listed
        assert set(listed) == {ref.id}
        seen.append(listed[ref.id].state)
        assert listed[ref.id] == Listed(listed[ref.id].state, str(plan.job))
        assert remote.inventory(backend) == ([] if seen[-1] is Shown.ENDED else [ref.id])
    assert seen == [Shown.PENDING, Shown.RUNNING, Shown.ENDED]
    remote.end("test")
    harness.end("test")


def test_a_rank_writes_to_its_own_pod_s_log_and_rank_zero_s_is_the_output() -> None:
    """rank_writes lands in the log of the pod of that completion index (of the current
    execution), as the kubelet keeps it; read_output reads rank 0's pod only."""
    for harness in (kubeflow_sim(), kubeflow_sim_kueue()):
        backend, ref = started(harness, nodes=3)
        Faults(harness, backend).let_run(ref)
        harness.rank_writes(backend, ref, 2, "from rank 2")
        harness.rank_writes(backend, ref, 1, "from rank 1")
        assert backend.read_output(ref) == b""
        harness.rank_writes(backend, ref, 0, "from rank 0")
        assert backend.read_output(ref) == b"from rank 0\n"
        cluster = harness.cluster_of(backend)
        trainjob = cluster.require(ref)
        for rank in (1, 2):
            pod = cluster.rank_pod(trainjob, rank)["metadata"]
            log = logs(cluster.sim.cluster, pod["namespace"], pod["name"], "node")
            assert log == f"from rank {rank}\n"
        with pytest.raises(KeyError, match="rank 3"):
            harness.rank_writes(backend, ref, 3, "no such rank")
        backend.requeue(ref)  # a new execution: its pods write afresh
        Faults(harness, backend).let_run(ref)
        harness.rank_writes(backend, ref, 0, "again")
        assert backend.read_output(ref) == b"again\n"
        harness.end("test")


@pytest.mark.parametrize("default", ["dispatch-identity", "torch-distributed"])
def test_the_runtime_specs_name_a_weakening_and_a_keeping_runtime_not_the_default(
    default: str,
) -> None:
    harness = KubeflowSimHarness(default_runtime=default)
    harness.begin("test")
    backend = harness.new_backend()
    spec = JobSpec(command=("true",), nodes=1)
    weakening, keeping = harness.weakening_spec(spec), harness.keeping_spec(spec)
    assert backend.runtime_of(weakening).weakening and backend.runtime_of(weakening).name != default
    assert not backend.runtime_of(keeping).weakening and backend.runtime_of(keeping).name != default
    assert backend.refusal(weakening) and not backend.refusal(keeping)
    assert (weakening.command, keeping.nodes) == (spec.command, spec.nodes)
    harness.end("test")
