"""Golden tests of the pod/Job half: the Job controller, scheduler and kubelet on a virtual clock."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from dispatch_core import VirtualClock
from simulators.kubernetes.behaviour import Behaviour, Behaviours
from simulators.kubernetes.config import KubeConfig, NodeConfig
from simulators.kubernetes.controllers.base import Cluster, Runner
from simulators.kubernetes.controllers.gc import GarbageCollector
from simulators.kubernetes.controllers.job import JobController, JobDefaults
from simulators.kubernetes.controllers.kubelet import Kubelet, TaintEviction, logs, oom_kill
from simulators.kubernetes.controllers.scheduler import PodValidation, Scheduler
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import JSON, condition, meta
from simulators.kubernetes.resources import JOBS, NAMESPACES, NODES, PODS
from simulators.kubernetes.sim import _namespace, _node
from simulators.kubernetes.store import Store


class World:
    def __init__(self, *, seed: int = 0, nodes: tuple[NodeConfig, ...] | None = None) -> None:
        self.config = KubeConfig(nodes=nodes) if nodes is not None else KubeConfig()
        self.clock = VirtualClock()
        rng = random.Random(seed)
        self.store = Store(rng=rng, now=self.clock.now)
        self.store.admission.extend([PodValidation(), JobDefaults()])
        self.behaviours = Behaviours.from_config(self.config)
        self.cluster = Cluster(self.store, self.clock, rng, self.config, self.behaviours)
        self.runner = Runner(
            self.cluster,
            [
                JobController(self.cluster),
                Scheduler(self.cluster),
                Kubelet(self.cluster),
                TaintEviction(self.cluster),
                GarbageCollector(self.cluster),
            ],
        )
        self.store.create(NAMESPACES, "", _namespace("default"), internal=True)
        for node in self.config.nodes:
            self.add_node(node)
        self.runner.settle()

    def add_node(self, node: NodeConfig) -> None:
        obj = _node(node)
        status = obj["status"]
        made = self.store.create(NODES, "", obj, internal=True)
        made["status"] = status
        self.store.update(NODES, "", node.name, made, subresource="status", internal=True)

    def job(self, name: str, **spec: Any) -> JSON:
        container: JSON = {"name": "main", "image": "busybox"}
        container.update(spec.pop("container", {}))
        body: JSON = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "restartPolicy": spec.pop("restartPolicy", "Never"),
                        "containers": [container],
                    },
                },
                **spec,
            },
        }
        made = self.store.create(JOBS, "default", body)
        self.runner.settle()
        return made

    def pods(self, job: str | None = None) -> list[JSON]:
        pods = self.store.select(PODS, "default")
        if job is not None:
            pods = [p for p in pods if p["metadata"].get("labels", {}).get("job-name") == job]
        return pods

    def get_job(self, name: str) -> JSON:
        return self.store.get(JOBS, "default", name)

    def advance(self, seconds: float) -> None:
        self.runner.advance(seconds)


def _cond(obj: JSON, kind: str) -> tuple[str, str, str] | None:
    c = condition(obj, kind)
    return None if c is None else (str(c["status"]), str(c.get("reason")), str(c.get("message")))


def _sr(obj: JSON, kind: str) -> tuple[str, str]:
    """The (status, reason) of a condition, ("", "") when it is absent."""
    found = _cond(obj, kind)
    return ("", "") if found is None else found[:2]


def _field(obj: JSON, kind: str, key: str) -> str:
    found = condition(obj, kind)
    return "" if found is None else str(found.get(key, ""))


def test_indexed_pod_names_labels_and_annotation() -> None:
    # pkg/controller/job/indexed_job_utils.go podGenerateNameWithIndex, addCompletionIndexLabel,
    # addCompletionIndexAnnotation; pkg/registry/batch/job/strategy.go generateSelector.
    w = World()
    job = w.job("train", completionMode="Indexed", completions=2, parallelism=2)
    uid = job["metadata"]["uid"]
    pods = w.pods("train")
    assert len(pods) == 2
    by_index = {
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p for p in pods
    }
    assert set(by_index) == {"0", "1"}
    for index, pod in by_index.items():
        name = pod["metadata"]["name"]
        assert name.startswith(f"train-{index}-") and len(name) == len(f"train-{index}-") + 5
        assert pod["spec"]["hostname"] == f"train-{index}"
        assert pod["metadata"]["labels"] == {
            "app": "train",
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "train",
            "controller-uid": uid,
            "job-name": "train",
            "batch.kubernetes.io/job-completion-index": index,
        }
        ref = pod["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
            "Job",
            "train",
            uid,
            True,
        )
    stored = w.get_job("train")
    assert stored["spec"]["selector"]["matchLabels"] == {"batch.kubernetes.io/controller-uid": uid}
    assert stored["spec"]["backoffLimit"] == 6  # pkg/apis/batch/v1/defaults.go


def test_job_runs_to_complete_with_success_criteria_first() -> None:
    # job_controller.go newSuccessCondition (1.33+): SuccessCriteriaMet then Complete,
    # reason CompletionsReached, "Reached expected number of succeeded pods".
    w = World()
    w.behaviours.add(Behaviour(run_seconds=30))
    w.job("ok", completionMode="Indexed", completions=2, parallelism=2)
    w.advance(1)
    assert {p["status"]["phase"] for p in w.pods("ok")} == {"Pending"}
    waiting = w.pods("ok")[0]["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ContainerCreating"
    w.advance(2)
    assert {p["status"]["phase"] for p in w.pods("ok")} == {"Running"}
    job = w.get_job("ok")
    assert job["status"]["active"] == 2 and job["status"]["ready"] == 2
    w.advance(40)
    job = w.get_job("ok")
    expected = ("True", "CompletionsReached", "Reached expected number of succeeded pods")
    assert _cond(job, "SuccessCriteriaMet") == expected
    assert _cond(job, "Complete") == expected
    types = [c["type"] for c in job["status"]["conditions"]]
    assert types.index("SuccessCriteriaMet") < types.index("Complete")
    assert job["status"]["succeeded"] == 2 and job["status"]["completedIndexes"] == "0,1"
    assert "completionTime" in job["status"]
    # Counted pods lose the tracking finalizer.
    assert all(not p["metadata"].get("finalizers") for p in w.pods("ok"))


def test_restart_count_under_on_failure_then_backoff_limit() -> None:
    # kuberuntime_manager.go doBackOff (flowcontrol.Backoff 10 s .. 300 s): a first crash
    # restarts at once, the second waits "back-off 10s restarting failed container=..."; the Job's
    # pastBackoffLimitOnFailure: restartCounts of running pods reach backoffLimit →
    # BackoffLimitExceeded, "Job has reached the specified backoff limit".
    w = World()
    w.behaviours.add(Behaviour(exit_codes=(1,), run_seconds=5))
    w.job("crash", restartPolicy="OnFailure", backoffLimit=3)
    w.advance(8)  # started at 2, crashed at 7, restarted at once
    status = w.pods("crash")[0]["status"]["containerStatuses"][0]
    assert status["restartCount"] == 1 and "running" in status["state"]
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["lastState"]["terminated"]["reason"] == "Error"
    w.advance(5)  # crashed again at 12: back-off 10 s
    pod = w.pods("crash")[0]
    status = pod["status"]["containerStatuses"][0]
    waiting = status["state"]["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    uid = pod["metadata"]["uid"]
    name = pod["metadata"]["name"]
    assert waiting["message"] == (
        f"back-off 10s restarting failed container=main pod={name}_default({uid})"
    )
    assert status["restartCount"] == 1
    w.advance(10)  # restarted at 22
    assert w.pods("crash")[0]["status"]["containerStatuses"][0]["restartCount"] == 2
    w.advance(60)  # crash at 27, back-off 20 s, restart at 47: restartCount 3 = backoffLimit
    job = w.get_job("crash")
    expected = ("True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert _cond(job, "FailureTarget") == expected
    assert _cond(job, "Failed") == expected
    assert all(p["status"]["phase"] in ("Failed", "Succeeded") for p in w.pods("crash"))


def test_never_replaces_failed_pods_after_backoff_then_fails() -> None:
    # Never: a replacement pod per failure after 10 s, 20 s, ... (DefaultJobPodFailureBackOff);
    # failed > backoffLimit → Failed BackoffLimitExceeded.
    w = World()
    w.behaviours.add(Behaviour(exit_codes=(1,), run_seconds=5))
    w.job("fail", backoffLimit=1)
    w.advance(8)
    assert len(w.pods("fail")) == 1 and w.pods("fail")[0]["status"]["phase"] == "Failed"
    assert w.get_job("fail")["status"]["failed"] == 1
    w.advance(8)  # failed at t=7; the replacement waits until t=17
    assert len(w.pods("fail")) == 1
    w.advance(2)
    assert len(w.pods("fail")) == 2
    w.advance(30)
    job = w.get_job("fail")
    assert job["status"]["failed"] == 2
    assert _cond(job, "Failed") == (
        "True",
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )


def test_pod_failure_policy_fail_job_on_exit_code() -> None:
    # pod_failure_policy.go: "Container %s for pod %s/%s failed with exit code %v matching %v
    # rule at index %d"; reason PodFailurePolicy.
    w = World()
    w.behaviours.add(Behaviour(exit_codes=(42,), run_seconds=5))
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    w.job("pfp", podFailurePolicy=policy)
    w.advance(10)
    job = w.get_job("pfp")
    pod = w.pods("pfp")[0]["metadata"]["name"]
    message = f"Container main for pod default/{pod} failed with exit code 42 matching FailJob rule at index 0"
    assert _cond(job, "Failed") == ("True", "PodFailurePolicy", message)
    assert len(w.pods("pfp")) == 1  # no replacement


def test_backoff_limit_per_index() -> None:
    # backoffLimitPerIndex: index failed when job-index-failure-count >= limit; "Job has failed
    # indexes" (kubernetes.io/docs/tasks/job/backoff-limit-per-index).
    w = World()
    w.behaviours.add(Behaviour(exit_codes=(1,), run_seconds=5), pod_name_prefix="per-1-")
    w.behaviours.add(Behaviour(exit_codes=(0,), run_seconds=5), pod_name_prefix="per-0-")
    w.job("per", completionMode="Indexed", completions=2, parallelism=2, backoffLimitPerIndex=1)
    w.advance(100)
    job = w.get_job("per")
    assert job["status"]["failedIndexes"] == "1"
    assert job["status"]["completedIndexes"] == "0"
    assert job["status"]["failed"] == 2
    counts = sorted(
        p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"]
        for p in w.pods("per")
        if p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1"
    )
    assert counts == ["0", "1"]
    assert _cond(job, "Failed") == ("True", "FailedIndexes", "Job has failed indexes")


def test_suspend_deletes_pods_and_resume_recreates_them() -> None:
    # job_controller.go: suspended → active pods deleted, Suspended JobSuspended "Job suspended",
    # startTime cleared; resume → JobResumed "Job resumed", startTime now, new pods. deleteJobPods
    # drops the tracking finalizer before the delete, so the deleted pods are not failures.
    w = World()
    w.behaviours.add(Behaviour(run_seconds=None))
    w.job("sus", completionMode="Indexed", completions=2, parallelism=2)
    w.advance(5)
    before = {p["metadata"]["name"] for p in w.pods("sus")}
    w.store.mutate(JOBS, "default", "sus", lambda j: j["spec"].update(suspend=True), internal=False)
    w.advance(31)
    job = w.get_job("sus")
    assert _cond(job, "Suspended") == ("True", "JobSuspended", "Job suspended")
    assert "startTime" not in job["status"] and "active" not in job["status"]
    assert w.pods("sus") == []
    w.store.mutate(
        JOBS, "default", "sus", lambda j: j["spec"].update(suspend=False), internal=False
    )
    w.advance(1)
    job = w.get_job("sus")
    assert _cond(job, "Suspended") == ("False", "JobResumed", "Job resumed")
    after = {p["metadata"]["name"] for p in w.pods("sus")}
    assert len(after) == 2 and not after & before
    assert "failed" not in job["status"]


def test_unschedulable_message_then_scheduled_when_node_added() -> None:
    # framework/types.go FitError + DefaultPreemption's "preemption: " message; fit.go
    # "Insufficient cpu".
    w = World(nodes=(NodeConfig("node-0", cpu=1), NodeConfig("node-1", cpu=1)))
    w.job("big", container={"resources": {"requests": {"cpu": "2"}}})
    pod = w.pods("big")[0]
    assert _cond(pod, "PodScheduled") == (
        "False",
        "Unschedulable",
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling.",
    )
    assert pod["status"]["phase"] == "Pending"
    w.add_node(NodeConfig("node-2", cpu=4))
    w.runner.settle()
    pod = w.pods("big")[0]
    assert pod["spec"]["nodeName"] == "node-2"
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None and scheduled["status"] == "True"


def test_insufficient_when_used_then_retried_when_freed() -> None:
    w = World(nodes=(NodeConfig("node-0", cpu=1),))
    w.behaviours.add(Behaviour(run_seconds=20))
    w.job("a", container={"resources": {"requests": {"cpu": "1"}}})
    w.job("b", container={"resources": {"requests": {"cpu": "500m"}}})
    pod = w.pods("b")[0]
    assert _field(pod, "PodScheduled", "message") == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )
    w.advance(25)
    assert w.pods("b")[0]["spec"].get("nodeName") == "node-0"


def test_bad_quantity_is_refused_at_create() -> None:
    w = World()
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "two"}}}]
        },
    }
    with pytest.raises(ApiError) as refused:
        w.store.create(PODS, "default", pod)
    assert refused.value.code == 422
    assert "spec.containers[0].resources.requests[cpu]" in refused.value.message


def test_image_pull_backoff_stays_pending() -> None:
    # [A5]: ErrImagePull then ImagePullBackOff, Pending for ever, never fails the Job.
    w = World()
    w.behaviours.add(Behaviour(image_pull="ErrImagePull"))
    w.job("img")
    w.advance(2)
    state = w.pods("img")[0]["status"]["containerStatuses"][0]["state"]
    assert state["waiting"]["reason"] == "ErrImagePull"
    w.advance(5)
    state = w.pods("img")[0]["status"]["containerStatuses"][0]["state"]
    assert state["waiting"]["reason"] == "ImagePullBackOff"
    w.advance(3600)
    pod = w.pods("img")[0]
    assert pod["status"]["phase"] == "Pending"
    assert _cond(w.get_job("img"), "Failed") is None


def test_env_behaviour_and_bad_env_is_config_error() -> None:
    w = World()
    env = [
        {"name": "KUBE_SIM_EXIT_CODES", "value": "3"},
        {"name": "KUBE_SIM_RUN_SECONDS", "value": "4"},
    ]
    w.job("envjob", container={"env": env}, backoffLimit=0)
    w.advance(10)
    pod = w.pods("envjob")[0]
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    w.job("badenv", container={"env": [{"name": "KUBE_SIM_RUN_SECONDS", "value": "soon"}]})
    w.advance(5)
    waiting = w.pods("badenv")[0]["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "CreateContainerConfigError"
    assert "KUBE_SIM_RUN_SECONDS" in waiting["message"]


def test_oom_killed() -> None:
    # [verify] terminated.reason OOMKilled, exit code 137.
    w = World()
    w.behaviours.add(Behaviour(oom_after=4, run_seconds=100))
    w.job("oom", backoffLimit=0)
    w.advance(10)
    terminated = w.pods("oom")[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
    w2 = World()
    w2.behaviours.add(Behaviour(run_seconds=None))
    w2.job("oom2", backoffLimit=0)
    w2.advance(5)
    name = w2.pods("oom2")[0]["metadata"]["name"]
    oom_kill(w2.cluster, "default", name)
    w2.runner.settle()
    terminated = w2.pods("oom2")[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["reason"] == "OOMKilled"


def test_sigterm_then_kill_after_grace() -> None:
    w = World()
    w.behaviours.add(Behaviour(run_seconds=None, ignores_sigterm=True), container="stubborn")
    w.behaviours.add(Behaviour(run_seconds=None), container="polite")
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "terminationGracePeriodSeconds": 20,
            "containers": [{"name": "polite", "image": "i"}, {"name": "stubborn", "image": "i"}],
        },
    }
    w.store.create(PODS, "default", pod)
    w.advance(5)
    w.store.delete(PODS, "default", "p")
    w.runner.settle()
    statuses = {
        s["name"]: s["state"]
        for s in w.store.get(PODS, "default", "p")["status"]["containerStatuses"]
    }
    assert statuses["polite"]["terminated"]["exitCode"] == 143
    assert "running" in statuses["stubborn"]
    w.advance(19)
    assert w.store.peek(PODS, "default", "p") is not None
    w.advance(2)
    assert w.store.peek(PODS, "default", "p") is None


def test_logs_over_time() -> None:
    w = World()
    w.behaviours.add(
        Behaviour(run_seconds=None, logs=((0, "start"), (10, "step 1"), (20, "step 2")))
    )
    w.store.create(
        PODS,
        "default",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    w.advance(1)
    with pytest.raises(ApiError) as waiting:
        logs(w.cluster, "default", "p", "c")
    assert "is waiting to start: ContainerCreating" in waiting.value.message
    w.advance(12)
    assert logs(w.cluster, "default", "p", "c") == "start\nstep 1\n"
    w.advance(10)
    assert logs(w.cluster, "default", "p") == "start\nstep 1\nstep 2\n"
    assert logs(w.cluster, "default", "p", "c", tail_lines=1) == "step 2\n"


def test_echo_is_modelled_its_words_logged_and_it_exits_0_unless_a_rule_says_otherwise() -> None:
    w = World()
    w.job("said", container={"command": ["echo", "hello", "world"]})
    w.job("opt", container={"command": ["echo"], "args": ["-n", "x"]})
    w.behaviours.add(Behaviour(run_seconds=None), pod_labels={"app": "ruled"})
    w.job("ruled", container={"command": ["/bin/echo", "y"]})
    w.advance(5)
    (said,) = w.pods("said")
    assert logs(w.cluster, "default", said["metadata"]["name"]) == "hello world\n"
    assert said["status"]["phase"] == "Succeeded"
    assert _sr(w.get_job("said"), "Complete") == ("True", "CompletionsReached")
    (opt,) = w.pods("opt")  # an option: not modelled, the default (60 s) runs on
    assert opt["status"]["phase"] == "Running"
    assert logs(w.cluster, "default", opt["metadata"]["name"]) == ""
    (ruled,) = w.pods("ruled")  # a rule beats the model
    assert ruled["status"]["phase"] == "Running"


def test_deleting_job_background_removes_pods() -> None:
    w = World()
    w.behaviours.add(Behaviour(run_seconds=None))
    w.job("gone", completionMode="Indexed", completions=2, parallelism=2)
    w.advance(5)
    w.store.delete(JOBS, "default", "gone", propagation="Background")
    w.advance(40)
    assert w.pods() == []


def test_determinism() -> None:
    def run() -> str:
        w = World(seed=7)
        w.behaviours.add(Behaviour(exit_codes=(1, 0), run_seconds=5))
        w.job("d", completionMode="Indexed", completions=3, parallelism=3, backoffLimit=5)
        w.advance(120)
        return json.dumps([w.get_job("d"), *w.pods()], sort_keys=True)

    assert run() == run()
    assert meta(json.loads(run())[0])["name"] == "d"


def _running_pod(w: World, job: str) -> str:
    return str(w.pods(job)[0]["metadata"]["name"])


def test_lose_node_taint_manager_deletes_after_300s_and_job_replaces() -> None:
    # pkg/controller/tainteviction: DisruptionTarget DeletionByTaintManager after the default
    # 300 s toleration (plugin/pkg/admission/defaulttolerationseconds); the Job replaces the pod.
    from simulators.kubernetes.controllers.kubelet import lose_node

    w = World(nodes=(NodeConfig("node-0"), NodeConfig("node-1")))
    w.behaviours.add(Behaviour(run_seconds=None))
    w.job("lost")
    w.advance(5)
    pod = w.pods("lost")[0]
    node = pod["spec"]["nodeName"]
    lose_node(w.cluster, node)
    w.runner.settle()
    assert _field(w.store.get(NODES, "", node), "Ready", "status") == "Unknown"
    w.advance(299)
    assert not w.store.get(PODS, "default", pod["metadata"]["name"])["metadata"].get(
        "deletionTimestamp"
    )
    w.advance(2)
    old = w.store.get(PODS, "default", pod["metadata"]["name"])
    assert old["metadata"].get("deletionTimestamp")  # stays Terminating: nobody confirms
    assert _cond(old, "DisruptionTarget") == (
        "True",
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    fresh = [p for p in w.pods("lost") if p["metadata"]["name"] != pod["metadata"]["name"]]
    assert fresh == []  # the pod failure back-off (10 s) first
    w.advance(15)
    fresh = [p for p in w.pods("lost") if p["metadata"]["name"] != pod["metadata"]["name"]]
    assert fresh[0]["spec"]["nodeName"] != node
    assert fresh[0]["status"]["phase"] == "Running"
    assert w.get_job("lost")["status"]["failed"] == 1


def test_evict_pod_is_failed_evicted_and_ignored_by_policy() -> None:
    # [A4]: node-pressure eviction, phase Failed, status.reason Evicted, DisruptionTarget
    # TerminationByKubelet; podFailurePolicy Ignore onPodConditions does not count it (A8).
    from simulators.kubernetes.controllers.kubelet import evict_pod

    w = World()
    w.behaviours.add(Behaviour(run_seconds=None))
    policy = {
        "rules": [
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            }
        ]
    }
    w.job("ev", podFailurePolicy=policy, backoffLimit=0)
    w.advance(5)
    name = _running_pod(w, "ev")
    evict_pod(w.cluster, "default", name)
    w.runner.settle()
    pod = w.store.get(PODS, "default", name)
    assert pod["status"]["phase"] == "Failed" and pod["status"]["reason"] == "Evicted"
    assert _sr(pod, "DisruptionTarget") == ("True", "TerminationByKubelet")
    job = w.get_job("ev")
    assert "failed" not in job["status"] and _cond(job, "Failed") is None
    assert len(w.pods("ev")) == 2  # the replacement (Ignore: no back-off)


def test_preempt_pod_counts_as_failure_without_policy() -> None:
    # DisruptionTarget PreemptionByScheduler, then a graceful delete; a deleted pod counts as
    # failed (isPodFailed: deletionTimestamp and not Succeeded).
    from simulators.kubernetes.controllers.kubelet import preempt_pod

    w = World()
    w.behaviours.add(Behaviour(run_seconds=None))
    w.job("pre", backoffLimit=0)
    w.advance(5)
    name = _running_pod(w, "pre")
    preempt_pod(w.cluster, "default", name)
    w.runner.settle()
    job = w.get_job("pre")
    assert job["status"]["failed"] == 1
    assert _sr(job, "FailureTarget")[1] == "BackoffLimitExceeded"
    w.advance(5)
    assert _sr(w.get_job("pre"), "Failed")[1] == "BackoffLimitExceeded"


def test_fault_on_missing_target_raises_fault_error() -> None:
    from simulators.kubernetes.controllers.kubelet import evict_pod, lose_node
    from simulators.kubernetes.faults import FaultError

    w = World()
    with pytest.raises(FaultError):
        lose_node(w.cluster, "nowhere")
    with pytest.raises(FaultError):
        evict_pod(w.cluster, "default", "nobody")
    with pytest.raises(FaultError):
        oom_kill(w.cluster, "default", "nobody")


def test_active_deadline_seconds() -> None:
    # job_controller.go: DeadlineExceeded "Job was active longer than specified deadline".
    w = World()
    w.behaviours.add(Behaviour(run_seconds=None))
    w.job("late", activeDeadlineSeconds=30)
    w.advance(29)
    assert _cond(w.get_job("late"), "FailureTarget") is None
    w.advance(5)
    job = w.get_job("late")
    assert _cond(job, "Failed") == (
        "True",
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )
    assert w.pods("late") == [] or all(p["status"]["phase"] == "Failed" for p in w.pods("late"))


def test_previous_logs_after_restart_and_env_log_format() -> None:
    w = World()
    env = [
        {"name": "KUBE_SIM_LOG", "value": "0:hello\n2:bye"},
        {"name": "KUBE_SIM_EXIT_CODES", "value": "1,0"},
        {"name": "KUBE_SIM_RUN_SECONDS", "value": "3"},
    ]
    w.job("lg", container={"env": env}, restartPolicy="OnFailure")
    w.advance(4)  # started at 2
    name = _running_pod(w, "lg")
    assert logs(w.cluster, "default", name) == "hello\nbye\n"
    with pytest.raises(ApiError) as missing:
        logs(w.cluster, "default", name, previous=True)
    assert missing.value.message == (
        f'previous terminated container "main" in pod "{name}" not found'
    )
    w.advance(2)  # exit 1 at 5, restarted at once (a first crash), "hello" again at 5
    assert w.pods("lg")[0]["status"]["containerStatuses"][0]["restartCount"] == 1
    assert logs(w.cluster, "default", name) == "hello\n"
    assert logs(w.cluster, "default", name, previous=True) == "hello\nbye\n"
    w.advance(3)  # exit 0 at 8
    assert w.pods("lg")[0]["status"]["phase"] == "Succeeded"


def test_scheduling_gates_and_cordon() -> None:
    # PodScheduled=False SchedulingGated; nodeunschedulable "node(s) were unschedulable".
    w = World(nodes=(NodeConfig("node-0"),))
    gated = {
        "metadata": {"name": "g"},
        "spec": {"schedulingGates": [{"name": "x"}], "containers": [{"name": "c", "image": "i"}]},
    }
    w.store.create(PODS, "default", gated)
    w.runner.settle()
    assert _sr(w.store.get(PODS, "default", "g"), "PodScheduled") == (
        "False",
        "SchedulingGated",
    )
    w.store.mutate(
        NODES, "", "node-0", lambda n: n["spec"].update(unschedulable=True), internal=False
    )
    w.store.create(
        PODS,
        "default",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    w.runner.settle()
    message = _field(w.store.get(PODS, "default", "p"), "PodScheduled", "message")
    assert message.startswith("0/1 nodes are available: 1 node(s) were unschedulable.")
    w.store.mutate(
        NODES, "", "node-0", lambda n: n["spec"].update(unschedulable=False), internal=False
    )
    w.runner.settle()
    assert w.store.get(PODS, "default", "p")["spec"]["nodeName"] == "node-0"


def test_fail_index_and_not_in_with_container_name() -> None:
    # pod_failure_policy.go: onExitCodes NotIn with containerName; FailIndex marks the index
    # failed at once (isIndexFailed), the other index completes; "Job has failed indexes".
    w = World()
    w.behaviours.add(Behaviour(exit_codes=(7,), run_seconds=5), pod_name_prefix="fi-0-")
    w.behaviours.add(Behaviour(exit_codes=(0,), run_seconds=5), pod_name_prefix="fi-1-")
    policy = {
        "rules": [
            {
                "action": "FailIndex",
                "onExitCodes": {"containerName": "main", "operator": "NotIn", "values": [0, 1]},
            }
        ]
    }
    w.job(
        "fi",
        completionMode="Indexed",
        completions=2,
        parallelism=2,
        backoffLimitPerIndex=3,
        podFailurePolicy=policy,
    )
    w.advance(60)
    job = w.get_job("fi")
    assert job["status"]["failedIndexes"] == "0"
    assert job["status"]["completedIndexes"] == "1"
    assert len(w.pods("fi")) == 2  # no retry of index 0
    assert _cond(job, "Failed") == ("True", "FailedIndexes", "Job has failed indexes")


def test_official_client_reads_pods_and_jobs() -> None:
    # The official client's models require name, image, imageID, ready, restartCount on every
    # containerStatuses entry and status on every condition.
    from kubernetes.client import ApiClient

    w = World()
    w.behaviours.add(Behaviour(exit_codes=(1, 0), run_seconds=5))
    w.job("m", completionMode="Indexed", completions=2, parallelism=2, restartPolicy="OnFailure")
    api = ApiClient()
    phases: set[str] = set()
    for step in (1, 3, 4, 12, 30):
        w.advance(step)
        for pod in w.pods("m"):
            model = api.deserialize(json.dumps(pod), "V1Pod", "application/json")
            phases.add(model.status.phase)
        job = api.deserialize(json.dumps(w.get_job("m")), "V1Job", "application/json")
    assert phases == {"Pending", "Running", "Succeeded"}
    assert job.status.conditions[-1].type == "Complete" and job.status.succeeded == 2
