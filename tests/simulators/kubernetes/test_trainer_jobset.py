"""Golden tests of the Trainer and JobSet controllers and webhooks, one upstream fact each.

Sources: kubeflow/trainer v2.3.0 (T refs) and kubernetes-sigs/jobset v0.12.0 (J refs), as listed
in ../shared/reference/kubeflow-facts.md §16. Jobs are driven by writing their status here; no
Job controller, scheduler or kubelet runs.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest

from dispatch_core import VirtualClock
from simulators.kubernetes.controllers.base import Cluster, Runner
from simulators.kubernetes.controllers.gc import GarbageCollector
from simulators.kubernetes.controllers.jobset import JobSetController
from simulators.kubernetes.controllers.trainer import TrainerController, render_jobset
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import JSON, condition, timestamp
from simulators.kubernetes.resources import (
    CLUSTERTRAININGRUNTIMES,
    CONFIGMAPS,
    JOBS,
    JOBSETS,
    NAMESPACES,
    SECRETS,
    SERVICES,
    TRAINJOBS,
)
from simulators.kubernetes.runtimes import catalogue, torch_distributed
from simulators.kubernetes.store import Store
from simulators.kubernetes.webhooks import JobSetWebhook, TrainJobWebhook

NS = "default"
RUNTIMES = ["torch-distributed", "deepspeed-distributed", "jax-distributed", "dispatch-identity"]


class Sim:
    """A store, the Trainer, JobSet and garbage collector, the webhooks, the catalogue."""

    def __init__(self, *, webhooks: bool = True, seed: int = 0) -> None:
        self.clock = VirtualClock()
        rng = random.Random(seed)
        self.store = Store(rng=rng, now=self.clock.now)
        self.store.create(NAMESPACES, "", {"metadata": {"name": NS}})
        if webhooks:
            self.store.admission += [TrainJobWebhook(self.store), JobSetWebhook()]
        cluster = Cluster(self.store, self.clock, rng, None)
        self.runner = Runner(
            cluster,
            [TrainerController(cluster), JobSetController(cluster), GarbageCollector(cluster)],
        )
        for runtime in catalogue(RUNTIMES):
            self.store.create(CLUSTERTRAININGRUNTIMES, "", runtime, internal=True)
        self.runner.settle()

    def trainjob(self, name: str = "t1", runtime: str = "torch-distributed", **spec: Any) -> JSON:
        body: JSON = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": runtime}, **spec},
        }
        made = self.store.create(TRAINJOBS, NS, body)
        self.runner.settle()
        return made

    def get(self, resource: Any, name: str) -> JSON | None:
        obj = self.store.peek(resource, NS, name)
        return obj

    def must(self, resource: Any, name: str) -> JSON:
        obj = self.store.peek(resource, NS, name)
        assert obj is not None, name
        return obj

    def update_tj(self, name: str, change: Any) -> JSON:
        tj = self.store.get(TRAINJOBS, NS, name)
        change(tj)
        made = self.store.update(TRAINJOBS, NS, name, tj)
        self.runner.settle()
        return made

    def job_status(self, name: str, **status: Any) -> None:
        job = self.store.get(JOBS, NS, name)
        job["status"] = status
        self.store.update(JOBS, NS, name, job, subresource="status")
        self.runner.settle()

    def fail_job(self, name: str, reason: str = "BackoffLimitExceeded") -> None:
        self.job_status(
            name,
            failed=1,
            conditions=[
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": reason,
                    "message": "Job has reached the specified backoff limit",
                    "lastTransitionTime": timestamp(self.clock.now()),
                }
            ],
        )

    def complete_job(self, name: str) -> None:
        self.job_status(
            name,
            succeeded=1,
            conditions=[
                {
                    "type": "Complete",
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                    "lastTransitionTime": timestamp(self.clock.now()),
                }
            ],
        )


def env_of(container: JSON) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def node_container(job: JSON) -> JSON:
    pod = job["spec"]["template"]["spec"]
    return next(c for c in pod["containers"] if c["name"] == "node")


def cond(obj: JSON | None, kind: str) -> tuple[str, str, str] | None:
    assert obj is not None
    c = condition(obj, kind)
    return None if c is None else (c["status"], c["reason"], c["message"])


def restart_runtime(sim: Sim, name: str, policy: JSON) -> None:
    runtime = torch_distributed()
    runtime["metadata"]["name"] = name
    runtime["spec"]["template"]["spec"]["failurePolicy"] = policy
    sim.store.create(CLUSTERTRAININGRUNTIMES, "", runtime, internal=True)


def plain_jobset(name: str, replicas: int) -> JSON:
    pod = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    rjob = {"name": "w", "replicas": replicas, "template": {"spec": {"template": pod}}}
    return {"metadata": {"name": name}, "spec": {"replicatedJobs": [rjob]}}


# -- TrainJob → JobSet --------------------------------------------------------------------------


def test_jobset_has_the_trainjob_name_and_a_controller_owner_reference() -> None:
    # T4 Build: same name and namespace, ownerReference controller + blockOwnerDeletion;
    # TrainJob labels are not propagated (T6 newRuntimeInfo takes only the runtime's).
    sim = Sim()
    body: JSON = {
        "metadata": {"name": "t1", "labels": {"team": "a"}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }
    tj = sim.store.create(TRAINJOBS, NS, body)
    sim.runner.settle()
    js = sim.must(JOBSETS, "t1")
    assert js["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "t1",
            "uid": tj["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert "team" not in (js["metadata"].get("labels") or {})


def test_jobs_are_named_and_labelled_as_jobset_writes_them() -> None:
    # J8 GenJobName <jobset>-<rjob>-<idx>; J3 labelAndAnnotateObject (labels and annotations,
    # Job and pod template); J3 createHeadlessSvcIfNecessary; J5 defaults.
    sim = Sim()
    sim.trainjob(trainer={"numNodes": 2})
    js = sim.must(JOBSETS, "t1")
    job = sim.must(JOBS, "t1-node-0")
    expected = {
        "jobset.sigs.k8s.io/jobset-name": "t1",
        "jobset.sigs.k8s.io/jobset-uid": js["metadata"]["uid"],
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
        "jobset.sigs.k8s.io/global-replicas": "1",
        "jobset.sigs.k8s.io/job-index": "0",
        "jobset.sigs.k8s.io/job-global-index": "0",
        "jobset.sigs.k8s.io/job-key": hashlib.sha1(b"default/t1-node-0").hexdigest(),
        "jobset.sigs.k8s.io/restart-attempt": "0",
        "jobset.sigs.k8s.io/group-name": "default",
    }
    for target in (job["metadata"], job["spec"]["template"]["metadata"]):
        for key, value in expected.items():
            assert target["labels"][key] == value, key
            assert target["annotations"][key] == value, key
    assert job["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"
    assert job["metadata"]["ownerReferences"][0]["uid"] == js["metadata"]["uid"]
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert job["spec"]["template"]["spec"]["subdomain"] == "t1"
    assert job["spec"]["suspend"] is False
    svc = sim.must(SERVICES, "t1")
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "t1"}
    assert svc["spec"]["publishNotReadyAddresses"] is True


def test_num_nodes_becomes_one_replica_with_parallelism_and_completions() -> None:
    # T5 Builder.Trainer replicas 1; T4 SyncParallelCount parallelism = completions = numNodes.
    sim = Sim()
    sim.trainjob(trainer={"numNodes": 4})
    rjob = sim.must(JOBSETS, "t1")["spec"]["replicatedJobs"][0]
    assert rjob["replicas"] == 1
    assert (rjob["template"]["spec"]["parallelism"], rjob["template"]["spec"]["completions"]) == (
        4,
        4,
    )
    assert sorted(k[1] for k in sim.store.keys(JOBS)) == ["t1-node-0"]


def test_torch_env_and_trainer_overrides_reach_the_node_container() -> None:
    # T7 EnforceMLPolicy: PET_* values; T5 image/command/args/env upserted into `node`.
    sim = Sim()
    sim.trainjob(
        trainer={
            "numNodes": 3,
            "image": "busybox:1",
            "command": ["python"],
            "args": ["train.py"],
            "env": [{"name": "DISPATCH_JOB", "value": "j1"}],
            "resourcesPerNode": {"requests": {"cpu": "1500m"}},
        }
    )
    node = node_container(sim.must(JOBS, "t1-node-0"))
    assert (node["image"], node["command"], node["args"]) == ("busybox:1", ["python"], ["train.py"])
    env = env_of(node)
    assert env["DISPATCH_JOB"] == "j1"
    assert env["PET_NNODES"] == "3"
    assert env["PET_NPROC_PER_NODE"] == "2"  # "auto" without GPUs: the cpu count, rounded up
    assert env["PET_NODE_RANK"] == {
        "fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        }
    }
    assert env["PET_MASTER_ADDR"] == "t1-node-0-0.t1"
    assert env["PET_MASTER_PORT"] == "29500"
    assert node["resources"] == {"requests": {"cpu": "1500m"}}


def test_torch_num_proc_per_node_given_is_used() -> None:
    # T7: numProcPerNode from the TrainJob overrides "auto".
    sim = Sim()
    sim.trainjob(trainer={"numNodes": 1, "numProcPerNode": 8})
    assert env_of(node_container(sim.must(JOBS, "t1-node-0")))["PET_NPROC_PER_NODE"] == "8"


def test_jax_env() -> None:
    # T9 EnforceMLPolicy: JAX_NUM_PROCESSES, JAX_PROCESS_ID, JAX_COORDINATOR_ADDRESS.
    sim = Sim()
    sim.trainjob(runtime="jax-distributed", trainer={"numNodes": 2})
    env = env_of(node_container(sim.must(JOBS, "t1-node-0")))
    assert env["JAX_NUM_PROCESSES"] == "2"
    assert "fieldRef" in env["JAX_PROCESS_ID"]
    assert env["JAX_COORDINATOR_ADDRESS"] == "t1-node-0-0.t1:29500"
    assert not any(k.startswith("PET_") for k in env)


def test_deepspeed_launcher_waits_for_ready_nodes_and_gets_openmpi_env() -> None:
    # T11 deepspeed_distributed.yaml: launcher dependsOn node Ready; T8: node count numNodes-1
    # with runLauncherAsNode, OpenMPI variables on the launcher; J3 dependencyReachedStatus.
    sim = Sim()
    sim.trainjob(runtime="deepspeed-distributed", trainer={"numNodes": 3})
    node_job = sim.must(JOBS, "t1-node-0")
    assert node_job["spec"]["parallelism"] == 2
    assert sim.get(JOBS, "t1-launcher-0") is None
    sim.job_status("t1-node-0", active=2, ready=2)
    launcher = sim.must(JOBS, "t1-launcher-0")
    env = env_of(node_container(launcher))
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert env["OMPI_MCA_orte_set_default_slots"] == "1"
    assert launcher["spec"]["parallelism"] == 1


def test_dispatch_identity_runtime_never_reruns_a_rank() -> None:
    # dispatch-identity: plain (plainml.go: trainer env only), restartPolicy Never, backoffLimit 0.
    sim = Sim()
    sim.trainjob(
        runtime="dispatch-identity",
        trainer={"numNodes": 2, "env": [{"name": "DISPATCH_JOB", "value": "j1"}]},
    )
    job = sim.must(JOBS, "t1-node-0")
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["parallelism"] == 2
    assert env_of(node_container(job)) == {"DISPATCH_JOB": "j1"}


def test_runtime_patch_reaches_the_pod_template() -> None:
    # T6 mergeRuntimePatches (strategic merge) and newRuntimeInfo (patch metadata → JobSet).
    sim = Sim()
    patch = {
        "manager": "dispatch.io/adapter",
        "trainingRuntimeSpec": {
            "template": {
                "metadata": {"labels": {"js-label": "x"}},
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "metadata": {"annotations": {"dispatch.io/epoch": "1"}},
                                        "spec": {
                                            "nodeSelector": {"pool": "a"},
                                            "terminationGracePeriodSeconds": 5,
                                        },
                                    }
                                }
                            },
                        }
                    ]
                },
            }
        },
    }
    sim.trainjob(runtimePatches=[patch])
    assert sim.must(JOBSETS, "t1")["metadata"]["labels"] == {"js-label": "x"}
    job = sim.must(JOBS, "t1-node-0")
    pod = job["spec"]["template"]
    assert pod["metadata"]["annotations"]["dispatch.io/epoch"] == "1"
    assert pod["spec"]["nodeSelector"] == {"pool": "a"}
    assert pod["spec"]["terminationGracePeriodSeconds"] == 5
    # the webhook stamps the entry's time (trainjob_webhook.go Default)
    tj = sim.must(TRAINJOBS, "t1")
    assert tj["spec"]["runtimePatches"][0]["time"] == timestamp(sim.clock.now())


# -- suspend and resume --------------------------------------------------------------------------


def test_suspend_and_resume_conditions_and_the_same_jobs() -> None:
    # T3 setSuspendedCondition; J3 suspendJobs / resumeJob; facts §5.1.
    sim = Sim()
    sim.trainjob(suspend=True)
    tj = sim.must(TRAINJOBS, "t1")
    assert cond(tj, "Suspended") == ("True", "Suspended", "TrainJob is suspended")
    assert cond(sim.get(JOBSETS, "t1"), "Suspended") == (
        "True",
        "SuspendedJobs",
        "jobset is suspended",
    )
    job = sim.must(JOBS, "t1-node-0")
    assert job["spec"]["suspend"] is True
    uid = job["metadata"]["uid"]
    sim.update_tj("t1", lambda t: t["spec"].__setitem__("suspend", False))
    assert cond(sim.get(TRAINJOBS, "t1"), "Suspended") == (
        "False",
        "Resumed",
        "TrainJob is resumed",
    )
    assert cond(sim.get(JOBSETS, "t1"), "Suspended") == ("False", "ResumeJobs", "jobset is resumed")
    job = sim.must(JOBS, "t1-node-0")
    assert job["spec"]["suspend"] is False
    assert job["metadata"]["uid"] == uid


def test_patch_changed_while_suspended_is_merged_into_the_resumed_job() -> None:
    # T4 Build re-applies while suspended; J5 lets pod-template metadata change while suspended;
    # J3 resumeJob merges it into the existing Job.
    sim = Sim()

    def patch(epoch: str) -> JSON:
        pod = {"metadata": {"annotations": {"dispatch.io/epoch": epoch}}}
        rjob = {"name": "node", "template": {"spec": {"template": pod}}}
        return {
            "manager": "dispatch.io/adapter",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [rjob]}}},
        }

    sim.trainjob(suspend=True, runtimePatches=[patch("1")])

    def resume(tj: JSON) -> None:
        tj["spec"]["runtimePatches"] = [patch("2")]
        tj["spec"]["suspend"] = False

    sim.update_tj("t1", resume)
    job = sim.must(JOBS, "t1-node-0")
    assert job["spec"]["suspend"] is False
    assert job["spec"]["template"]["metadata"]["annotations"]["dispatch.io/epoch"] == "2"


def test_running_jobset_is_not_rebuilt() -> None:
    # T4 Build: an existing JobSet that is not suspended, for a TrainJob that is not, is left.
    sim = Sim()
    sim.trainjob()
    before = sim.must(JOBSETS, "t1")["metadata"]["resourceVersion"]
    sim.runner.enqueue_all()
    sim.runner.settle()
    assert sim.must(JOBSETS, "t1")["metadata"]["resourceVersion"] == before


# -- completion and failure ----------------------------------------------------------------------


def test_complete_is_copied_from_the_jobset_completed() -> None:
    # J3 executeSuccessPolicy; T4 Status copies Completed → Complete with reason and message.
    sim = Sim()
    sim.trainjob(trainer={"numNodes": 2})
    sim.complete_job("t1-node-0")
    js = sim.must(JOBSETS, "t1")
    assert cond(js, "Completed") == ("True", "AllJobsCompleted", "jobset completed successfully")
    assert js["status"]["terminalState"] == "Completed"
    tj = sim.must(TRAINJOBS, "t1")
    assert cond(tj, "Complete") == ("True", "AllJobsCompleted", "jobset completed successfully")
    assert tj["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    ]


def test_failed_job_without_policy_fails_the_jobset_and_the_trainjob() -> None:
    # J4 executeFailurePolicy (no policy): FailedJobs with the first failed Job's name; T4 copies.
    sim = Sim()
    sim.trainjob()
    sim.fail_job("t1-node-0")
    message = "jobset failed due to one or more job failures (first failed job: t1-node-0)"
    js = sim.must(JOBSETS, "t1")
    assert cond(js, "Failed") == ("True", "FailedJobs", message)
    assert js["status"]["terminalState"] == "Failed"
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed") == ("True", "FailedJobs", message)


def test_restart_jobset_recreates_jobs_with_the_same_names_then_reaches_max_restarts() -> None:
    # J4 restartJobSetActionApplier (default action), J3 getChildJobs/deleteJobs (Foreground)
    # and constructJobsFromTemplate (same names, restart-attempt = status.restarts).
    sim = Sim()
    restart_runtime(sim, "torch-restart", {"maxRestarts": 1})
    sim.trainjob(runtime="torch-restart")
    old_uid = sim.must(JOBS, "t1-node-0")["metadata"]["uid"]
    sim.fail_job("t1-node-0")
    js = sim.must(JOBSETS, "t1")
    assert js["status"]["restarts"] == 1
    assert js["status"]["restartsCountTowardsMax"] == 1
    assert cond(js, "RestartingJobSet") == (
        "True",
        "DefaultFailurePolicy",
        "applying RestartJobSet failure policy action (first failed job: t1-node-0)",
    )
    job = sim.must(JOBS, "t1-node-0")
    assert job["metadata"]["uid"] != old_uid
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
    assert job["metadata"]["annotations"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
    pod_labels = job["spec"]["template"]["metadata"]["labels"]
    assert pod_labels["jobset.sigs.k8s.io/restart-attempt"] == "1"
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed") is None
    sim.fail_job("t1-node-0")
    message = "jobset failed due to reaching max number of restarts (first failed job: t1-node-0)"
    assert cond(sim.get(JOBSETS, "t1"), "Failed") == ("True", "ReachedMaxRestarts", message)
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed") == ("True", "ReachedMaxRestarts", message)


def test_failure_policy_rules_match_reasons_and_name_the_rule() -> None:
    # J4 findFirstFailedPolicyRuleAndJob: rules in order on onJobFailureReasons; the
    # RestartingJobSet reason FailurePolicy_<rule>; FailJobSet fails at once.
    sim = Sim()
    restart_runtime(
        sim,
        "torch-rules",
        {
            "maxRestarts": 5,
            "rules": [
                {
                    "name": "deadline",
                    "action": "FailJobSet",
                    "onJobFailureReasons": ["DeadlineExceeded"],
                },
                {"name": "retry", "action": "RestartJobSetAndIgnoreMaxRestarts"},
            ],
        },
    )
    sim.trainjob(runtime="torch-rules")
    sim.fail_job("t1-node-0", reason="BackoffLimitExceeded")
    js = sim.must(JOBSETS, "t1")
    assert cond(js, "RestartingJobSet")[:2] == ("True", "FailurePolicy_retry")  # type: ignore[index]
    assert js["status"]["restarts"] == 1
    assert js["status"].get("restartsCountTowardsMax", 0) == 0
    sim.fail_job("t1-node-0", reason="DeadlineExceeded")
    assert cond(sim.get(JOBSETS, "t1"), "Failed") == (
        "True",
        "FailJobSetFailurePolicyAction",
        "applying FailJobSet failure policy action (first failed job: t1-node-0)",
    )


def test_finished_jobset_deletes_its_active_jobs() -> None:
    # J3 reconcile: jobSetFinished → deleteJobs(active), Foreground; facts §10.
    sim = Sim()
    sim.store.create(JOBSETS, NS, plain_jobset("js", replicas=2))
    sim.runner.settle()
    assert sim.get(JOBS, "js-w-1") is not None
    sim.fail_job("js-w-0")
    assert cond(sim.get(JOBSETS, "js"), "Failed")[1] == "FailedJobs"  # type: ignore[index]
    assert sim.get(JOBS, "js-w-1") is None


def test_jobs_are_adopted_by_owner_uid_not_by_name() -> None:
    # J3 getChildJobs indexes Jobs by the controller owner's uid: a Job that merely has the
    # right name and labels is not the JobSet's, and its failure does not fail the JobSet.
    sim = Sim()
    stray = {
        "metadata": {
            "name": "js-w-0",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": "js",
                "jobset.sigs.k8s.io/replicatedjob-name": "w",
                "jobset.sigs.k8s.io/restart-attempt": "0",
            },
        },
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }
    sim.store.create(JOBS, NS, stray)
    sim.store.create(JOBSETS, NS, plain_jobset("js", replicas=1))
    sim.runner.settle()
    sim.fail_job("js-w-0")
    js = sim.must(JOBSETS, "js")
    assert cond(js, "Failed") is None
    assert js["status"]["replicatedJobsStatus"] == [
        {"name": "w", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    ]


# -- deadline ------------------------------------------------------------------------------------


def test_deadline_fails_the_trainjob_and_deletes_the_jobset() -> None:
    # T3 reconcileDeadline: Failed/DeadlineExceeded, sticky, and the JobSet deleted.
    sim = Sim()
    sim.trainjob(activeDeadlineSeconds=60)
    sim.runner.advance(59)
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed") is None
    sim.runner.advance(1)
    tj = sim.must(TRAINJOBS, "t1")
    assert cond(tj, "Failed") == (
        "True",
        "DeadlineExceeded",
        "TrainJob exceeded its active deadline",
    )
    assert sim.get(JOBSETS, "t1") is None
    assert sim.get(JOBS, "t1-node-0") is None


def test_deadline_counts_from_the_last_resume() -> None:
    # T3 reconcileDeadline: start = Suspended=False lastTransitionTime; T12.
    sim = Sim()
    sim.trainjob(activeDeadlineSeconds=60, suspend=True)
    sim.runner.advance(100)
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed") is None
    sim.update_tj("t1", lambda t: t["spec"].__setitem__("suspend", False))
    sim.runner.advance(59)
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed") is None
    sim.runner.advance(1)
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed")[1] == "DeadlineExceeded"  # type: ignore[index]


# -- admission -----------------------------------------------------------------------------------


def refusal(sim: Sim, body: JSON) -> ApiError:
    with pytest.raises(ApiError) as caught:
        sim.store.create(TRAINJOBS, NS, body)
    return caught.value


def test_name_must_be_an_rfc_1035_label_of_63_characters() -> None:
    # T1 CEL rules on the TrainJob type.
    sim = Sim()
    err = refusal(
        sim, {"metadata": {"name": "a.b"}, "spec": {"runtimeRef": {"name": "torch-distributed"}}}
    )
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.details["causes"][0]["message"] == (
        'Invalid value: "object": metadata.name must match RFC 1035 DNS label format'
    )
    err = refusal(
        sim, {"metadata": {"name": "a" * 64}, "spec": {"runtimeRef": {"name": "torch-distributed"}}}
    )
    assert [c["message"] for c in err.details["causes"]] == [
        'Invalid value: "object": metadata.name must be no more than 63 characters'
    ]


def test_a_name_that_is_no_dns_subdomain_gets_the_crd_rule_causes_too() -> None:
    # apiextensions-apiserver customresource strategy.go Validate (v0.32): the validator's
    # ValidateObjectMetaAccessor errors, then the x-kubernetes-validations rules' (an Invalid
    # error is not blocking), one NewInvalid; T1's rule message.
    sim = Sim()
    err = refusal(
        sim,
        {"metadata": {"name": "TJ-Upper"}, "spec": {"runtimeRef": {"name": "torch-distributed"}}},
    )
    rfc1123 = (
        'Invalid value: "TJ-Upper": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    rfc1035 = 'Invalid value: "object": metadata.name must match RFC 1035 DNS label format'
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == (
        'TrainJob.trainer.kubeflow.org "TJ-Upper" is invalid: '
        f"[metadata.name: {rfc1123}, <nil>: {rfc1035}]"
    )
    assert err.details == {
        "name": "TJ-Upper",
        "group": "trainer.kubeflow.org",
        "kind": "TrainJob",
        "causes": [
            {"reason": "FieldValueInvalid", "message": rfc1123, "field": "metadata.name"},
            {"reason": "FieldValueInvalid", "message": rfc1035, "field": "<nil>"},
        ],
    }
    assert sim.get(TRAINJOBS, "TJ-Upper") is None
    # without the Trainer's CRD rules (no webhooks), the name's cause alone, as for other kinds
    bare = refusal(
        Sim(webhooks=False),
        {"metadata": {"name": "TJ-Upper"}, "spec": {"runtimeRef": {"name": "torch-distributed"}}},
    )
    assert [c["field"] for c in bare.details["causes"]] == ["metadata.name"]


def test_trainer_is_immutable() -> None:
    # T1: spec.trainer `self == oldSelf`, "field is immutable".
    sim = Sim()
    sim.trainjob(trainer={"numNodes": 1})
    with pytest.raises(ApiError) as caught:
        sim.update_tj("t1", lambda t: t["spec"]["trainer"].__setitem__("numNodes", 2))
    assert caught.value.code == 422
    assert caught.value.details["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": field is immutable',
            "field": "spec.trainer",
        }
    ]


def test_runtime_patches_refused_while_running() -> None:
    # T4 checkRuntimePatchesImmutability: suspended before or after, and no active replicatedJob.
    sim = Sim()
    sim.trainjob()
    entry = {"manager": "dispatch.io/adapter"}
    with pytest.raises(ApiError) as caught:
        sim.update_tj("t1", lambda t: t["spec"].__setitem__("runtimePatches", [entry]))
    assert (caught.value.code, caught.value.reason) == (403, "Forbidden")
    assert caught.value.message == (
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
        "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is "
        "suspended before or after the update"
    )
    sim.job_status("t1-node-0", active=1)

    def suspend_and_patch(tj: JSON) -> None:
        tj["spec"]["suspend"] = True
        tj["spec"]["runtimePatches"] = [entry]

    with pytest.raises(ApiError) as caught:
        sim.update_tj("t1", suspend_and_patch)
    assert caught.value.message.endswith(
        "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's "
        "ReplicatedJob node is still active"
    )


def test_torch_reserved_env_names_are_refused() -> None:
    # T7 Torch.Validate: TorchRunReservedEnvNames.
    sim = Sim()
    body = {
        "metadata": {"name": "t1"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"env": [{"name": "PET_NNODES", "value": "2"}]},
        },
    }
    err = refusal(sim, body)
    assert err.code == 403
    assert "must not have reserved envs, invalid envs configured: [PET_NNODES]" in err.message
    assert sim.get(TRAINJOBS, "t1") is None


def test_patch_env_on_the_node_container_is_refused() -> None:
    # T4 JobSet.Validate: no env for node / initializer containers in a ContainerPatch (T1).
    sim = Sim()
    container = {"name": "node", "env": [{"name": "X", "value": "1"}]}
    rjob = {
        "name": "node",
        "template": {"spec": {"template": {"spec": {"containers": [container]}}}},
    }
    body = {
        "metadata": {"name": "t1"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "runtimePatches": [
                {
                    "manager": "dispatch.io/adapter",
                    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [rjob]}}},
                }
            ],
        },
    }
    err = refusal(sim, body)
    assert err.message.endswith(
        "must not have envs for the dataset-initializer, model-initializer, node containers"
    )


def test_missing_runtime_is_refused_at_creation() -> None:
    # clustertrainingruntime.go ValidateObjects: the runtime must exist before the TrainJob.
    sim = Sim()
    err = refusal(sim, {"metadata": {"name": "t1"}, "spec": {"runtimeRef": {"name": "nope"}}})
    assert err.code == 403
    assert err.message.endswith(
        'clustertrainingruntimes.trainer.kubeflow.org "nope" not found: specified '
        "clusterTrainingRuntime must be created before the TrainJob is created"
    )


def test_unsupported_runtime_kind_fails_with_training_runtime_not_supported() -> None:
    # T3 Reconcile: an unregistered runtime kind → Failed/TrainingRuntimeNotSupported.
    sim = Sim(webhooks=False)
    sim.trainjob(runtimeRef={"name": "x", "kind": "MyRuntime", "apiGroup": "trainer.kubeflow.org"})
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed") == (
        "True",
        "TrainingRuntimeNotSupported",
        "unsupported runtime: MyRuntime.trainer.kubeflow.org",
    )
    assert sim.get(JOBSETS, "t1") is None


def test_runtime_missing_at_reconcile_builds_nothing_and_sets_no_condition() -> None:
    # T6 NewObjects: errorNotFoundSpecifiedClusterTrainingRuntime is an error (retried, an
    # Event), not a condition; render_jobset answers None.
    sim = Sim(webhooks=False)
    tj = sim.trainjob(runtime="nope")
    assert render_jobset(sim.store, tj) is None
    assert sim.get(JOBSETS, "t1") is None
    assert cond(sim.get(TRAINJOBS, "t1"), "Failed") is None


def test_runtime_snapshot_outlives_the_runtime() -> None:
    # pkg/runtime/core/snapshot.go: the runtime is kept in <trainjob>-runtime-snapshot.
    sim = Sim()
    tj = sim.trainjob()
    assert sim.get(CONFIGMAPS, "t1-runtime-snapshot") is not None
    sim.store.delete(CLUSTERTRAININGRUNTIMES, "", "torch-distributed")
    rendered = render_jobset(sim.store, tj)
    assert rendered is not None
    assert rendered["spec"]["replicatedJobs"][0]["name"] == "node"


def test_jobset_replicated_jobs_are_immutable_while_running() -> None:
    # J5 ValidateUpdate: ValidateImmutableField on spec.replicatedJobs.
    sim = Sim()
    sim.trainjob()
    js = sim.store.get(JOBSETS, NS, "t1")
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"] = {
        "annotations": {"a": "b"}
    }
    with pytest.raises(ApiError) as caught:
        sim.store.update(JOBSETS, NS, "t1", js)
    assert caught.value.code == 422
    assert caught.value.message.startswith(
        'admission webhook "vjobset.kb.io" denied the request: JobSet.jobset.x-k8s.io "t1" is '
        "invalid: spec.replicatedJobs: Invalid value: "
    )
    assert caught.value.message.endswith(": field is immutable")


def test_rendering_is_deterministic() -> None:
    # The same seed and calls give the same objects (DESIGN §10).
    def run() -> JSON:
        sim = Sim(seed=7)
        sim.trainjob(trainer={"numNodes": 2})
        return sim.must(JOBS, "t1-node-0")

    assert run() == run()


def test_mpi_runtime_gets_its_ssh_secret_and_hostfile() -> None:
    # T8 MPI Build: <trainjob>-mpi-ssh-auth (ssh-auth, immutable) and <trainjob>-mpi-hostfile
    # listing node and (runLauncherAsNode) launcher endpoints with their slots.
    sim = Sim()
    sim.trainjob(runtime="deepspeed-distributed", trainer={"numNodes": 3})
    secret = sim.must(SECRETS, "t1-mpi-ssh-auth")
    assert (secret["type"], secret["immutable"]) == ("kubernetes.io/ssh-auth", True)
    assert sorted(secret["data"]) == ["ssh-privatekey", "ssh-publickey"]
    hostfile = sim.must(CONFIGMAPS, "t1-mpi-hostfile")["data"]["hostfile"]
    assert hostfile == (
        "t1-node-0-0.t1 slots=1\nt1-node-0-1.t1 slots=1\nt1-launcher-0-0.t1 slots=1\n"
    )


def test_blocking_recreate_waits_until_every_old_job_is_gone() -> None:
    # J3 constructJobsFromTemplate: BlockingRecreate creates nothing while previous Jobs remain.
    sim = Sim()
    body = plain_jobset("js", replicas=2)
    body["spec"]["failurePolicy"] = {"maxRestarts": 3, "restartStrategy": "BlockingRecreate"}
    sim.store.create(JOBSETS, NS, body)
    sim.runner.settle()
    keep = sim.store.get(JOBS, NS, "js-w-1")
    keep["metadata"]["finalizers"] = ["test/hold"]
    sim.store.update(JOBS, NS, "js-w-1", keep)
    sim.fail_job("js-w-0")
    assert sim.must(JOBSETS, "js")["status"]["restarts"] == 1
    assert sim.get(JOBS, "js-w-0") is None  # deleted, and not recreated while js-w-1 lingers
    held = sim.store.get(JOBS, NS, "js-w-1")
    held["metadata"]["finalizers"] = [f for f in held["metadata"]["finalizers"] if f != "test/hold"]
    sim.store.update(JOBS, NS, "js-w-1", held)
    sim.runner.settle()
    attempts = [
        sim.must(JOBS, n)["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]
        for n in ("js-w-0", "js-w-1")
    ]
    assert attempts == ["1", "1"]
