"""The JobSet controller: Jobs per replicatedJob, headless Service, suspend, success, failure.

As kubernetes-sigs/jobset v0.12.0 pkg/controllers/jobset_controller.go [J3] and
failure_policy.go [J4] behave (alpha gates RestartJob, InPlaceRestart and ElasticJobSet off):

- Child Jobs are found by their controller owner **uid** [J3 getChildJobs], never by name; a Job
  whose ``restart-attempt`` label is below ``status.restarts`` is "previous" and is deleted with
  Foreground propagation [J3 deleteJobs]; the others are active, failed or successful by their
  Complete/Failed conditions.
- Jobs are named ``<jobset>-<rjob>-<idx>`` [J8], labelled and annotated on the Job and its pod
  template [J3 labelAndAnnotateObject], created suspended when the JobSet is, and only when no
  owned Job of that name exists (``Recreate``) or no previous Job is left (``BlockingRecreate``);
  ``dependsOn`` holds back a replicatedJob until its dependency is Ready or Complete.
- Suspend suspends the active Jobs; resume clears ``status.startTime`` and merges the pod
  template's labels, annotations, nodeSelector, tolerations and schedulingGates into each
  suspended Job before unsuspending it [J3 resumeJob].
- Success policy All/Any → ``Completed/AllJobsCompleted``; a failed Job without a failurePolicy
  → ``Failed/FailedJobs``; with one, the first matching rule's action, default RestartJobSet,
  bounded by ``maxRestarts`` → ``Failed/ReachedMaxRestarts`` [J4]. A finished JobSet deletes its
  active Jobs.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterator
from typing import Any, ClassVar, Final

from simulators.kubernetes.controllers.base import Controller
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.objects import (
    JSON,
    clone,
    condition,
    controller_of,
    is_true,
    labels_of,
    meta,
    name_of,
    namespace_of,
    owner_reference,
    parse_timestamp,
    set_condition,
    uid_of,
)
from simulators.kubernetes.resources import JOBS, JOBSETS, SERVICES, ResourceType

PREFIX: Final = "jobset.sigs.k8s.io/"
JOBSET_NAME: Final = PREFIX + "jobset-name"
JOBSET_UID: Final = PREFIX + "jobset-uid"
RJOB_NAME: Final = PREFIX + "replicatedjob-name"
RJOB_REPLICAS: Final = PREFIX + "replicatedjob-replicas"
GLOBAL_REPLICAS: Final = PREFIX + "global-replicas"
JOB_INDEX: Final = PREFIX + "job-index"
JOB_GLOBAL_INDEX: Final = PREFIX + "job-global-index"
JOB_KEY: Final = PREFIX + "job-key"
GROUP_NAME: Final = PREFIX + "group-name"
GROUP_REPLICAS: Final = PREFIX + "group-replicas"
JOB_GROUP_INDEX: Final = PREFIX + "job-group-index"
COORDINATOR: Final = PREFIX + "coordinator"
RESTART_ATTEMPT: Final = PREFIX + "restart-attempt"
"""pkg/constants/constants.go RestartsKey [J2]."""
JOBSET_CONTROLLER: Final = "jobset.sigs.k8s.io/jobset-controller"

FAILED_JOBS: Final = ("FailedJobs", "jobset failed due to one or more job failures")
MAX_RESTARTS: Final = ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
FAIL_ACTION: Final = ("FailJobSetFailurePolicyAction", "applying FailJobSet failure policy action")
RESTART_MESSAGE: Final = "applying RestartJobSet failure policy action"
RESTART_IGNORE_MESSAGE: Final = "applying RestartJobSetAndIgnoreMaxRestarts failure policy action"
COMPLETED: Final = ("AllJobsCompleted", "jobset completed successfully")
SUSPENDED: Final = ("SuspendedJobs", "jobset is suspended")
RESUMED: Final = ("ResumeJobs", "jobset is resumed")
IN_ORDER_PROGRESS: Final = (
    "InOrderStartupPolicyInProgress",
    "in order startup policy is in progress",
)
IN_ORDER_DONE: Final = ("InOrderStartupPolicyCompleted", "in order startup policy has completed")


def job_name(jobset: str, rjob: str, index: int) -> str:
    """pkg/util/placement GenJobName [J8]."""
    return f"{jobset}-{rjob}-{index}"


def job_key(namespace: str, name: str) -> str:
    """J3 jobHashKey: sha1 of ``namespace/name``, hex."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def subdomain(js: JSON) -> str:
    """J3 GetSubdomain: ``spec.network.subdomain``, else the JobSet's name."""
    network = js.get("spec", {}).get("network") or {}
    return str(network.get("subdomain") or name_of(js))


def _finished_type(job: JSON) -> str:
    """``Complete`` or ``Failed`` when that condition of the Job is True, else empty."""
    return next((kind for kind in ("Complete", "Failed") if is_true(job, kind)), "")


def _failure(job: JSON) -> JSON | None:
    """A copy of the Job's Failed condition when it is True."""
    return dict(c) if is_true(job, "Failed") and (c := condition(job, "Failed")) else None


EXCLUSIVE_CONDITIONS: Final = {
    "StartupPolicyInProgress": "StartupPolicyCompleted",
    "StartupPolicyCompleted": "StartupPolicyInProgress",
}


def update_condition(
    js: JSON, kind: str, status: bool, reason: str, message: str, now: float
) -> bool:
    """J3 updateCondition: a new False condition is not added; InOrder conditions exclude."""
    status_obj = js.setdefault("status", {})
    changed = set_condition(js, kind, status, reason, message, now, add_false=False)
    if status:
        for cur in status_obj.get("conditions") or []:
            if cur.get("type") == EXCLUSIVE_CONDITIONS.get(kind) and cur.get("status") == "True":
                cur["status"] = "False"
                changed = True
    if not status_obj.get("conditions"):
        status_obj.pop("conditions", None)
    return changed


def _finished(js: JSON) -> bool:
    return is_true(js, "Completed") or is_true(js, "Failed")


class _Children:
    def __init__(self) -> None:
        self.active: list[JSON] = []
        self.successful: list[JSON] = []
        self.failed: list[JSON] = []
        self.previous: list[JSON] = []

    def all(self) -> list[JSON]:
        return [*self.active, *self.successful, *self.failed, *self.previous]


class JobSetController(Controller):
    """Reconciles JobSets into Jobs and a headless Service; keeps the JobSet's status."""

    name: ClassVar[str] = "jobset"
    primary: ClassVar[ResourceType] = JOBSETS
    watches: ClassVar[tuple[ResourceType, ...]] = (JOBS,)

    # -- reading ------------------------------------------------------------------------------

    def _children(self, js: JSON) -> _Children:
        """J3 getChildJobs: Jobs whose controller reference has the JobSet's uid."""
        out = _Children()
        uid = uid_of(js)
        restarts = int(js.get("status", {}).get("restarts", 0))
        jobs = [
            obj
            for rtype, obj in self.store.dependents(uid)
            if rtype is JOBS and (controller_of(obj) or {}).get("uid") == uid
        ]
        for job in sorted(jobs, key=name_of):
            try:
                attempt = int(labels_of(job).get(RESTART_ATTEMPT, ""))
            except ValueError:
                out.previous.append(job)
                continue
            if attempt < restarts:
                out.previous.append(job)
                continue
            kind = _finished_type(job)
            if kind == "Failed":
                out.failed.append(job)
            elif kind == "Complete":
                out.successful.append(job)
            else:
                out.active.append(job)
        return out

    def _statuses(self, js: JSON, children: _Children) -> list[JSON]:
        """J3 calculateReplicatedJobStatuses, in spec order (upstream's order is a map's)."""
        counts: dict[str, dict[str, int]] = {}
        for rjob in js.get("spec", {}).get("replicatedJobs") or []:
            counts[str(rjob.get("name"))] = dict.fromkeys(
                ("ready", "succeeded", "failed", "active", "suspended"), 0
            )
        for job in children.active:
            c = counts.get(labels_of(job).get(RJOB_NAME, ""))
            if c is None:
                continue
            spec = job.get("spec", {})
            status = job.get("status", {})
            pods = int(spec.get("parallelism", 1))
            if spec.get("completions") is not None and int(spec["completions"]) < pods:
                pods = int(spec["completions"])
            if int(status.get("succeeded", 0)) + int(status.get("ready", 0)) >= pods:
                c["ready"] += 1
            if int(status.get("active", 0)) > 0:
                c["active"] += 1
            if spec.get("suspend"):
                c["suspended"] += 1
        for job in children.successful:
            if (c := counts.get(labels_of(job).get(RJOB_NAME, ""))) is not None:
                c["succeeded"] += 1
        for job in children.failed:
            if (c := counts.get(labels_of(job).get(RJOB_NAME, ""))) is not None:
                c["failed"] += 1
        return [{"name": name, **c} for name, c in counts.items()]

    # -- the loop -----------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> float | None:
        stored = self.store.peek(JOBSETS, namespace, name)
        if stored is None or meta(stored).get("deletionTimestamp"):
            return None
        js = clone(stored)
        spec = js.get("spec", {})
        if spec.get("managedBy") not in (None, "", JOBSET_CONTROLLER):
            return None
        before = stored.get("status")  # the stored object is never changed: no copy to compare
        now = self.cluster.now()
        children = self._children(js)
        statuses = self._statuses(js, children)
        status = js.setdefault("status", {})
        # J1 JobSetStatus.Restarts is `json:"restarts"` (no omitempty): 0 is written, and
        # kubectl's RESTARTS column shows it
        status.setdefault("restarts", 0)
        status["replicatedJobsStatus"] = statuses
        wake: float | None = None
        if _finished(js):
            self._delete_jobs(children.active)
            wake = self._ttl(js, now)
        else:
            self._step(js, children, statuses, now)
        self._write_status(js, before)
        return wake

    def _step(self, js: JSON, children: _Children, statuses: list[JSON], now: float) -> None:
        spec = js.get("spec", {})
        self._delete_jobs(children.previous)
        suspended = bool(spec.get("suspend"))
        if not suspended and self._all_ready(js, statuses):
            update_condition(js, "RestartingJobSet", False, "JobsReady", "all jobs are ready", now)
        if children.failed:
            self._failure_policy(js, children, now)
            return
        if children.successful and self._succeeded(js, children):
            update_condition(js, "Completed", True, *COMPLETED, now)
            update_condition(js, "RestartingJobSet", False, "JobSetCompleted", COMPLETED[1], now)
            js["status"]["terminalState"] = "Completed"
            return
        self._service(js)
        self._create_jobs(js, children, statuses, now)
        if suspended:
            for job in children.active:
                if not job.get("spec", {}).get("suspend"):
                    self._write_job(job, lambda j: j["spec"].__setitem__("suspend", True))
            update_condition(js, "Suspended", True, *SUSPENDED, now)
            update_condition(js, "RestartingJobSet", False, "JobSetSuspended", SUSPENDED[1], now)
        else:
            self._resume(js, children, statuses, now)

    def _all_ready(self, js: JSON, statuses: list[JSON]) -> bool:
        total = sum(int(r.get("replicas", 1)) for r in js["spec"].get("replicatedJobs") or [])
        ready = sum(int(s["ready"]) + int(s["succeeded"]) for s in statuses)
        return total == ready

    def _succeeded(self, js: JSON, children: _Children) -> bool:
        """J3 executeSuccessPolicy / success_policy.go: All counts target replicas, Any one Job."""
        policy = js["spec"].get("successPolicy") or {"operator": "All"}
        targets = policy.get("targetReplicatedJobs") or []

        def matches(rjob_name: str) -> bool:
            return not targets or rjob_name in targets

        done = sum(1 for j in children.successful if matches(labels_of(j).get(RJOB_NAME, "")))
        if policy.get("operator") == "Any":
            expected = 1
        else:
            expected = sum(
                int(r.get("replicas", 1))
                for r in js["spec"].get("replicatedJobs") or []
                if matches(str(r.get("name")))
            )
        return done >= expected

    # -- failure policy (J4) --------------------------------------------------------------------

    def _failure_policy(self, js: JSON, children: _Children, now: float) -> None:
        policy = js["spec"].get("failurePolicy")
        first = _first_failed(children.failed)
        if policy is None:
            self._fail(js, FAILED_JOBS[0], _with_job(FAILED_JOBS[1], first), now)
            return
        rule, job = _matching_rule(policy.get("rules") or [], children.failed)
        action = "RestartJobSet" if rule is None else str(rule.get("action"))
        if rule is None:
            job = first
        if action == "FailJobSet":
            self._fail(js, FAIL_ACTION[0], _with_job(FAIL_ACTION[1], job), now)
            return
        status = js["status"]
        if action == "RestartJobSet":
            if int(status.get("restartsCountTowardsMax", 0)) >= int(policy.get("maxRestarts", 0)):
                self._fail(js, MAX_RESTARTS[0], _with_job(MAX_RESTARTS[1], job), now)
                return
            message = _with_job(RESTART_MESSAGE, job)
            counts = True
        elif action == "RestartJobSetAndIgnoreMaxRestarts":
            message = _with_job(RESTART_IGNORE_MESSAGE, job)
            counts = False
        else:
            return  # RestartJob / RestartJobAndIgnoreMaxRestarts: alpha gate off, an error upstream
        reason = "DefaultFailurePolicy" if rule is None else f"FailurePolicy_{rule.get('name')}"
        status["restarts"] = int(status.get("restarts", 0)) + 1
        if counts:
            status["restartsCountTowardsMax"] = int(status.get("restartsCountTowardsMax", 0)) + 1
        update_condition(js, "RestartingJobSet", True, reason, message, now)

    def _fail(self, js: JSON, reason: str, message: str, now: float) -> None:
        """J4 setJobSetFailedCondition."""
        update_condition(js, "Failed", True, reason, message, now)
        update_condition(js, "RestartingJobSet", False, "JobSetFailed", "jobset failed", now)
        js["status"]["terminalState"] = "Failed"

    # -- children -----------------------------------------------------------------------------

    def _delete_jobs(self, jobs: list[JSON]) -> None:
        """J3 deleteJobs: Foreground propagation, skipping Jobs already being deleted."""
        for job in jobs:
            if not meta(job).get("deletionTimestamp"):
                self._delete_foreground(JOBS, job)

    def _delete_foreground(self, resource: ResourceType, obj: JSON) -> None:
        """Delete ``obj`` (this very uid) with Foreground propagation; a refusal is ignored."""
        with contextlib.suppress(ApiError):
            self.store.delete(
                resource,
                namespace_of(obj),
                name_of(obj),
                uid=uid_of(obj),
                propagation="Foreground",
                internal=True,
                copy=False,
            )

    def _write_job(self, job: JSON, change: Any, subresource: str = "") -> bool:
        try:
            self.store.mutate(
                JOBS, namespace_of(job), name_of(job), change, subresource=subresource, copy=False
            )
        except ApiError:
            return False
        return True

    def _service(self, js: JSON) -> None:
        """J3 createHeadlessSvcIfNecessary."""
        network = js["spec"].get("network") or {}
        if network.get("enableDNSHostnames") is not True:
            return
        name = subdomain(js)
        namespace = namespace_of(js)
        if self.store.peek(SERVICES, namespace, name) is not None:
            return
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "ownerReferences": [owner_reference(js)],
            },
            "spec": {
                "clusterIP": "None",
                "selector": {JOBSET_NAME: name_of(js)},
                "publishNotReadyAddresses": bool(network.get("publishNotReadyAddresses", True)),
            },
        }
        with contextlib.suppress(ApiError):
            self.store.create(SERVICES, namespace, svc, internal=True, copy=False)

    def _create_jobs(self, js: JSON, children: _Children, statuses: list[JSON], now: float) -> None:
        """J3 reconcileReplicatedJobs with constructJobsFromTemplate."""
        spec = js["spec"]
        suspended = bool(spec.get("suspend"))
        in_order = (spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"
        blocking = (spec.get("failurePolicy") or {}).get("restartStrategy") == "BlockingRecreate"
        existing = {name_of(j) for j in children.all()}
        for rjob, rname, count in _due(spec, statuses, not suspended and in_order):
            if not (children.previous and blocking):
                for index in range(count):
                    name = job_name(name_of(js), rname, index)
                    if name in existing:
                        continue
                    try:
                        self.store.create(
                            JOBS,
                            namespace_of(js),
                            self._job(js, rjob, index),
                            internal=True,
                            copy=False,
                        )
                    except ApiError:
                        return  # J3: JobCreationFailed, retried
            if not suspended and in_order:
                update_condition(js, "StartupPolicyInProgress", True, *IN_ORDER_PROGRESS, now)
                return
        if not suspended and in_order:
            update_condition(js, "StartupPolicyCompleted", True, *IN_ORDER_DONE, now)

    def _job(self, js: JSON, rjob: JSON, index: int) -> JSON:
        """J3 constructJob."""
        template = rjob.get("template") or {}
        tmeta = template.get("metadata") or {}
        name = job_name(name_of(js), str(rjob.get("name")), index)
        m: JSON = {
            "name": name,
            "namespace": namespace_of(js),
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [owner_reference(js)],
        }
        spec = clone(template.get("spec") or {})
        pod = spec.setdefault("template", {})
        pod_meta = pod.setdefault("metadata", {})
        self._label(m, js, rjob, index)
        self._label(pod_meta, js, rjob, index)
        network = js["spec"].get("network") or {}
        if network.get("enableDNSHostnames") is True:
            pod.setdefault("spec", {})["subdomain"] = subdomain(js)
        spec["suspend"] = bool(js["spec"].get("suspend"))
        return {"apiVersion": JOBS.api_version, "kind": JOBS.kind, "metadata": m, "spec": spec}

    def _label(self, m: JSON, js: JSON, rjob: JSON, index: int) -> None:
        """J3 labelAndAnnotateObject: the same keys as labels and as annotations."""
        rjobs = js["spec"].get("replicatedJobs") or []
        rname = str(rjob.get("name"))
        group = str(rjob.get("groupName", "default"))
        name = job_name(name_of(js), rname, index)
        global_index = ""
        total = 0
        for r in rjobs:
            if r.get("name") == rname:
                global_index = str(total + index)
                break
            total += int(r.get("replicas", 1))
        group_index = ""
        group_total = 0
        for r in rjobs:
            if str(r.get("groupName", "default")) == group:
                if r.get("name") == rname:
                    group_index = str(group_total + index)
                    break
                group_total += int(r.get("replicas", 1))
        values = {
            JOBSET_NAME: name_of(js),
            JOBSET_UID: uid_of(js),
            RJOB_NAME: rname,
            RESTART_ATTEMPT: str(int(js.get("status", {}).get("restarts", 0))),
            RJOB_REPLICAS: str(int(rjob.get("replicas", 1))),
            GLOBAL_REPLICAS: str(sum(int(r.get("replicas", 1)) for r in rjobs)),
            JOB_INDEX: str(index),
            JOB_KEY: job_key(namespace_of(js), name),
            JOB_GLOBAL_INDEX: global_index,
            GROUP_NAME: group,
            GROUP_REPLICAS: str(
                sum(
                    int(r.get("replicas", 1))
                    for r in rjobs
                    if r.get("groupName", "default") == group
                )
            ),
            JOB_GROUP_INDEX: group_index,
        }
        coordinator = js["spec"].get("coordinator")
        if isinstance(coordinator, dict):
            values[COORDINATOR] = (
                f"{name_of(js)}-{coordinator.get('replicatedJob')}-"
                f"{int(coordinator.get('jobIndex', 0))}-{int(coordinator.get('podIndex', 0))}"
                f".{subdomain(js)}"
            )
        m["labels"] = {**(m.get("labels") or {}), **values}
        m["annotations"] = {**(m.get("annotations") or {}), **values}

    def _resume(self, js: JSON, children: _Children, statuses: list[JSON], now: float) -> None:
        """J3 resumeJobsIfNecessary / resumeJob."""
        spec = js["spec"]
        in_order = (spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"
        templates = {
            str(r.get("name")): (r.get("template") or {}).get("spec", {}).get("template") or {}
            for r in spec.get("replicatedJobs") or []
        }
        for _, rname, _ in _due(spec, statuses, in_order):
            for job in children.active:
                if labels_of(job).get(RJOB_NAME) != rname or not job.get("spec", {}).get("suspend"):
                    continue
                self._resume_job(job, templates.get(rname, {}))
            if in_order:
                update_condition(js, "StartupPolicyInProgress", True, *IN_ORDER_PROGRESS, now)
                return
        update_condition(js, "Suspended", False, *RESUMED, now)

    def _resume_job(self, job: JSON, template: JSON) -> None:
        if job.get("status", {}).get("startTime") is not None:

            def clear(j: JSON) -> None:
                j.get("status", {}).pop("startTime", None)

            if not self._write_job(job, clear, "status"):
                return
        tmeta = template.get("metadata") or {}
        tspec = template.get("spec") or {}

        def resume(j: JSON) -> None:
            pod = j["spec"].setdefault("template", {})
            pm = pod.setdefault("metadata", {})
            ps = pod.setdefault("spec", {})
            if labels_of(j).get(RJOB_NAME):
                for fld, src in (("labels", tmeta), ("annotations", tmeta)):
                    merged = {**(pm.get(fld) or {}), **(src.get(fld) or {})}
                    if merged:
                        pm[fld] = merged
                merged_ns = {**(ps.get("nodeSelector") or {}), **(tspec.get("nodeSelector") or {})}
                if merged_ns:
                    ps["nodeSelector"] = merged_ns
                for fld in ("tolerations", "schedulingGates"):
                    items = list(ps.get(fld) or [])
                    for item in tspec.get(fld) or []:
                        if item not in items:
                            items.append(clone(item))
                    if items:
                        ps[fld] = items
            j["spec"]["suspend"] = False

        self._write_job(job, resume)

    # -- status -------------------------------------------------------------------------------

    def _ttl(self, js: JSON, now: float) -> float | None:
        """ttl_after_finished.go: delete the JobSet ``ttlSecondsAfterFinished`` after its end."""
        ttl = js["spec"].get("ttlSecondsAfterFinished")
        if ttl is None:
            return None
        finished_at: float | None = None
        for kind in ("Completed", "Failed"):
            c = condition(js, kind)
            if c is not None and c.get("status") == "True" and c.get("lastTransitionTime"):
                finished_at = parse_timestamp(str(c["lastTransitionTime"]))
        if finished_at is None:
            return None
        expiry = finished_at + int(ttl)
        if now < expiry:
            return expiry
        self._delete_foreground(JOBSETS, js)
        return None

    def _write_status(self, js: JSON, before: Any) -> None:
        status = js.get("status", {})
        if not status.get("conditions"):
            status.pop("conditions", None)
        if status == (before or {}):
            return
        # A refusal or a conflict: the newer version's event brings this JobSet back.
        with contextlib.suppress(ApiError):
            self.store.update(
                JOBSETS,
                namespace_of(js),
                name_of(js),
                js,
                subresource="status",
                internal=True,
                owned=True,
                copy=False,
            )


def _with_job(message: str, job: JSON | None) -> str:
    """J4 messageWithFirstFailedJob."""
    return f"{message} (first failed job: {name_of(job) if job is not None else ''})"


def _first_failed(jobs: list[JSON]) -> JSON | None:
    """J4 findFirstFailedJob: the earliest Failed lastTransitionTime."""
    first: JSON | None = None
    first_time = ""
    for job in jobs:
        c = _failure(job)
        if c is None:
            continue
        when = str(c.get("lastTransitionTime", ""))
        if first is None or when < first_time:
            first, first_time = job, when
    return first


def _matching_rule(rules: list[JSON], jobs: list[JSON]) -> tuple[JSON | None, JSON | None]:
    """J4 findFirstFailedPolicyRuleAndJob: first rule in order; its earliest-failed Job."""
    for rule in rules:
        matched: JSON | None = None
        matched_time = ""
        for job in jobs:
            c = _failure(job)
            if c is None:
                continue
            when = str(c.get("lastTransitionTime", ""))
            if _rule_applies(rule, job, c) and (matched is None or when < matched_time):
                matched, matched_time = job, when
        if matched is not None:
            return rule, matched
    return None, None


def _rule_applies(rule: JSON, job: JSON, failure: JSON) -> bool:
    reasons = rule.get("onJobFailureReasons") or []
    if reasons and failure.get("reason") not in reasons:
        return False
    patterns = rule.get("onJobFailureMessagePatterns") or []
    if patterns:
        message = str(failure.get("message", ""))
        found = False
        for pattern in patterns:
            try:
                if re.search(str(pattern), message):
                    found = True
                    break
            except re.error:
                continue
        if not found:
            return False
    parent = labels_of(job).get(RJOB_NAME)
    if parent is None:
        return False
    targets = rule.get("targetReplicatedJobs") or []
    return not targets or parent in targets


def _due(spec: JSON, statuses: list[JSON], skip_started: bool) -> Iterator[tuple[JSON, str, int]]:
    """(replicatedJob, name, replicas) in order, for those whose ``dependsOn`` is reached and,
    with ``skip_started`` (an InOrder startup), whose Jobs have not all started (J3)."""
    replicas: dict[str, int] = {}
    for rjob in spec.get("replicatedJobs") or []:
        rname = str(rjob.get("name"))
        replicas[rname] = int(rjob.get("replicas", 1))
        if not _dependency_reached(rjob, replicas, statuses):
            continue
        status = next((s for s in statuses if s["name"] == rname), None)
        if skip_started and status is not None and _all_started(replicas[rname], status):
            continue
        yield rjob, rname, replicas[rname]


def _dependency_reached(rjob: JSON, replicas: dict[str, int], statuses: list[JSON]) -> bool:
    """depends_on.go dependencyReachedStatus."""
    for dep in rjob.get("dependsOn") or []:
        status = next((s for s in statuses if s["name"] == dep.get("name")), None)
        if status is None:
            return False
        want = replicas.get(str(dep.get("name")))
        if dep.get("status") == "Complete" and want != status["succeeded"]:
            return False
        if dep.get("status") == "Ready" and want != (
            status["failed"] + status["ready"] + status["succeeded"]
        ):
            return False
    return True


def _all_started(replicas: int, status: JSON) -> bool:
    """startup_policy.go allReplicasStarted."""
    return replicas == int(status["failed"]) + int(status["ready"]) + int(status["succeeded"])


__all__ = ["JobSetController", "job_key", "job_name", "subdomain", "update_condition"]
