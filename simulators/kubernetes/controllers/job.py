"""The Job controller (batch/v1), as pkg/controller/job/job_controller.go behaves in 1.33+.

Modelled:

- defaults (``JobDefaults`` admission, pkg/apis/batch/v1/defaults.go): parallelism and
  completions 1 when both unset, ``backoffLimit`` 6 (MaxInt32 with ``backoffLimitPerIndex``),
  ``completionMode`` NonIndexed, ``suspend`` false, ``podReplacementPolicy``
  TerminatingOrFailed (Failed with a ``podFailurePolicy``);
- the selector and pod-template labels the API server's Job strategy generates
  (pkg/registry/batch/job/strategy.go generateSelector): ``batch.kubernetes.io/controller-uid``,
  ``batch.kubernetes.io/job-name``, ``controller-uid``, ``job-name``. Upstream writes them at
  create; here the controller's first reconcile writes them (the uid is only known after
  admission), so the Job's ``generation`` is 2 afterwards;
- pods named ``<job>-<index>-<5 random>`` for Indexed Jobs (indexed_job_utils.go
  podGenerateNameWithIndex), ``<job>-<5 random>`` otherwise; hostname ``<job>-<index>``; label
  and annotation ``batch.kubernetes.io/job-completion-index``; ``JOB_COMPLETION_INDEX`` env;
  the ``batch.kubernetes.io/job-tracking`` finalizer, removed once the pod is counted;
- ``status``: startTime, active, ready, terminating, succeeded, failed, completedIndexes,
  failedIndexes, completionTime, uncountedTerminatedPods ``{}``;
- ``backoffLimit`` (pod failures, and under OnFailure the sum of restartCounts of running
  pods: pastBackoffLimitOnFailure), ``backoffLimitPerIndex`` with ``failedIndexes`` and the pod
  annotation ``batch.kubernetes.io/job-index-failure-count``, ``maxFailedIndexes``,
  ``podFailurePolicy`` (FailJob, FailIndex, Ignore, Count; onExitCodes In/NotIn with
  containerName; onPodConditions; pod_failure_policy.go messages);
- replacement pods after the pod failure back-off: 10 s doubling, capped at 10 min
  (DefaultJobPodFailureBackOff / MaxJobPodFailureBackOff in job_controller.go; the Job docs
  say six minutes, the code says ten), per index under ``backoffLimitPerIndex``;
- conditions: ``Suspended`` (JobSuspended "Job suspended" / JobResumed "Job resumed");
  ``FailureTarget`` first, then ``Failed`` with the same reason and message once no pod is left
  terminating (BackoffLimitExceeded "Job has reached the specified backoff limit",
  PodFailurePolicy, FailedIndexes "Job has failed indexes", MaxFailedIndexesExceeded,
  DeadlineExceeded "Job was active longer than specified deadline"); ``SuccessCriteriaMet``
  then ``Complete`` (CompletionsReached "Reached expected number of succeeded pods");
- suspend deletes the active pods and clears ``startTime``; resume sets it again and creates
  pods. As deleteJobPods does, a suspension removes a pod's tracking finalizer before deleting
  it, so those pods are never counted as failed; a finishing Job's remaining pods are deleted
  with the finalizer kept (deleteActivePods), so they are counted.

Not modelled: successPolicy, managedBy, podReplacementPolicy Failed's wait (terminating pods are
replaced at once unless a podFailurePolicy is set), pod adoption/orphan matching by selector
(pods are found by owner uid), expectations, Events.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from simulators.kubernetes import errors
from simulators.kubernetes.controllers.base import Controller
from simulators.kubernetes.errors import ApiError, Cause
from simulators.kubernetes.objects import (
    JSON,
    annotations_of,
    clone,
    condition,
    controller_of,
    is_true,
    labels_of,
    meta,
    owner_reference,
    parse_timestamp,
    remove_finalizer,
    set_condition,
    timestamp,
)
from simulators.kubernetes.resources import JOBS, PODS, ResourceType
from simulators.kubernetes.store import Event, Key, Request

INDEX_KEY: Final = "batch.kubernetes.io/job-completion-index"
FAILURE_COUNT_KEY: Final = "batch.kubernetes.io/job-index-failure-count"
IGNORED_COUNT_KEY: Final = "batch.kubernetes.io/job-index-ignored-failure-count"
TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
CONTROLLER_UID: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME: Final = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID: Final = "controller-uid"
LEGACY_JOB_NAME: Final = "job-name"
MAX_INT32: Final = 2**31 - 1
POD_BACKOFF: Final = 10.0
POD_BACKOFF_MAX: Final = 600.0
MAX_GENERATED_NAME: Final = 58
"""k8s.io/apiserver/pkg/storage/names.MaxGeneratedNameLength (63 - 5)."""
STATE_KEY: Final = "job-controller"

BACKOFF_MESSAGE: Final = "Job has reached the specified backoff limit"
DEADLINE_MESSAGE: Final = "Job was active longer than specified deadline"
COMPLETE_MESSAGE: Final = "Reached expected number of succeeded pods"


def pod_generate_name(job: str, index: int | None) -> str:
    """podGenerateNameWithIndex: ``<job>-<index>-``, the job part cut to fit 58 characters."""
    if index is None:
        prefix = f"{job}-"
        return prefix if len(prefix) <= MAX_GENERATED_NAME else prefix[:MAX_GENERATED_NAME]
    tail = f"-{index}-"
    prefix = job + tail
    if len(prefix) > MAX_GENERATED_NAME:
        prefix = prefix[: MAX_GENERATED_NAME - len(tail)] + tail
    return prefix


def _index(pod: JSON) -> int | None:
    value = annotations_of(pod).get(INDEX_KEY)
    try:
        index = int(str(value))
    except ValueError:
        return None
    return index if index >= 0 else None


def parse_indexes(text: str | None) -> set[int]:
    out: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if last else lo
        except ValueError:
            continue
        out.update(range(lo, hi + 1))
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """orderedIntervals.String(): ``1,3-5,7,8`` (two in a row are listed, not ranged)."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j == i:
            parts.append(str(ordered[i]))
        elif j == i + 1:
            parts.append(f"{ordered[i]},{ordered[j]}")
        else:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


class JobDefaults:
    """Admission for Jobs: the defaults of pkg/apis/batch/v1/defaults.go and basic validation."""

    def admit(self, request: Request) -> None:
        if request.resource is not JOBS or request.operation != "CREATE":
            return
        job = request.object
        spec = job.setdefault("spec", {})
        name = str(meta(job).get("name", ""))
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
            spec["parallelism"] = 1
        spec.setdefault("parallelism", 1)
        spec.setdefault("completionMode", "NonIndexed")
        per_index = spec.get("backoffLimitPerIndex") is not None
        spec.setdefault("backoffLimit", MAX_INT32 if per_index else 6)
        spec.setdefault("suspend", False)
        spec.setdefault(
            "podReplacementPolicy",
            "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed",
        )
        template = spec.get("template") or {}
        policy = (template.get("spec") or {}).get("restartPolicy")
        causes: list[Cause] = []
        if policy not in ("Never", "OnFailure"):
            causes.append(
                Cause(
                    "spec.template.spec.restartPolicy",
                    f'Unsupported value: "{policy or "Always"}": supported values: '
                    '"OnFailure", "Never"',
                    "FieldValueNotSupported",
                )
            )
        if spec["completionMode"] == "Indexed" and spec.get("completions") is None:
            causes.append(
                Cause(
                    "spec.completions",
                    "Required value: when completion mode is Indexed",
                    "FieldValueRequired",
                )
            )
        if spec.get("podFailurePolicy") and policy != "Never":
            causes.append(
                Cause(
                    "spec.podFailurePolicy",
                    'Invalid value: "": only "Never" is supported for restartPolicy when '
                    "podFailurePolicy is specified",
                )
            )
        if per_index and (spec["completionMode"] != "Indexed"):
            causes.append(
                Cause(
                    "spec.backoffLimitPerIndex",
                    "Invalid value: requires indexed completion mode",
                )
            )
        if causes:
            raise errors.invalid("Job", "batch", name, causes)


@dataclass
class _Backoff:
    failures: int = 0
    last_failure: float = 0.0
    per_index: dict[int, tuple[int, float]] = field(default_factory=dict)


class JobController(Controller):
    """Runs batch/v1 Jobs: creates, counts and replaces their pods; finishes the Job."""

    name: ClassVar[str] = "job-controller"
    primary: ClassVar[ResourceType] = JOBS
    watches: ClassVar[tuple[ResourceType, ...]] = (PODS,)

    def _state(self) -> dict[str, _Backoff]:
        found = self.cluster.extras.setdefault(STATE_KEY, {})
        assert isinstance(found, dict)
        return found

    def keys_for(self, event: Event) -> Iterable[Key]:
        m = meta(event.object)
        namespace = str(m.get("namespace", ""))
        if event.resource is JOBS:
            keys: list[Key] = [(namespace, str(m.get("name", "")))]
            if event.type == "DELETED":
                uid = str(m.get("uid", ""))
                self._state().pop(uid, None)
                for resource, dep in self.store.dependents(uid):
                    if resource is PODS and TRACKING_FINALIZER in (
                        meta(dep).get("finalizers") or []
                    ):
                        keys.append((namespace, "pod/" + str(meta(dep).get("name"))))
            return keys
        owner = controller_of(event.object)
        if owner is None or owner.get("kind") != "Job":
            return []
        job = self.store.peek(JOBS, namespace, str(owner.get("name", "")))
        if job is None or meta(job).get("uid") != owner.get("uid"):
            if event.type != "DELETED" and TRACKING_FINALIZER in (m.get("finalizers") or []):
                return [(namespace, "pod/" + str(m.get("name", "")))]
            return []
        return [(namespace, str(owner.get("name", "")))]

    # -- reconcile -------------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> float | None:
        if name.startswith("pod/"):
            self._release_orphan(namespace, name[4:])
            return None
        job = self.store.peek(JOBS, namespace, name)
        if job is None:
            return None
        uid = str(meta(job).get("uid", ""))
        if labels_of(job.get("spec", {}).get("template", {})).get(CONTROLLER_UID) != uid:
            self._label(job)
            job = self.store.peek(JOBS, namespace, name)
            assert job is not None
        now = self.cluster.now()
        spec = job.get("spec", {})
        state = self._state().setdefault(uid, _Backoff())
        pods = [p for r, p in self.store.dependents(uid) if r is PODS and _owned(p, uid)]
        finished = is_true(job, "Complete") or is_true(job, "Failed")
        status = clone(job.get("status") or {})
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        suspended = bool(spec.get("suspend"))
        only_failed = spec.get("podReplacementPolicy") == "Failed"

        # Count finished pods still carrying the tracking finalizer.
        succeeded = int(status.get("succeeded", 0))
        failed = int(status.get("failed", 0))
        completed = parse_indexes(status.get("completedIndexes"))
        failed_indexes = parse_indexes(status.get("failedIndexes"))
        fail_job: tuple[str, str] | None = None
        to_release: list[JSON] = []
        new_success = new_failure = False
        for pod in pods:
            if TRACKING_FINALIZER not in (meta(pod).get("finalizers") or []):
                continue
            phase = pod.get("status", {}).get("phase")
            terminating = bool(meta(pod).get("deletionTimestamp"))
            index = _index(pod)
            if phase == "Succeeded":
                to_release.append(pod)
                new_success = True
                if indexed:
                    if index is not None and completions is not None and index < completions:
                        completed.add(index)
                else:
                    succeeded += 1
                continue
            is_failed = phase == "Failed" or (terminating and not only_failed)
            if not is_failed:
                continue
            to_release.append(pod)
            message, counts, action = match_pod_failure_policy(spec.get("podFailurePolicy"), pod)
            if counts:
                failed += 1
                new_failure = True
                state.failures += 1
                state.last_failure = now
            if index is not None and spec.get("backoffLimitPerIndex") is not None:
                count = _int_annotation(pod, FAILURE_COUNT_KEY)
                if action == "FailIndex" or (counts and count >= int(spec["backoffLimitPerIndex"])):
                    failed_indexes.add(index)
                prior = state.per_index.get(index, (0, 0.0))
                if counts:
                    state.per_index[index] = (prior[0] + 1, now)
            if action == "FailJob" and message is not None and fail_job is None:
                fail_job = ("PodFailurePolicy", message)
        if indexed:
            succeeded = len(completed)
            failed_indexes -= completed
        for index_done in completed:
            state.per_index.pop(index_done, None)
        if new_success and not new_failure:
            # backoff_utils.go newBackoffRecord: a success after the last failure resets it.
            state.failures = 0

        active = [
            p
            for p in pods
            if not meta(p).get("deletionTimestamp")
            and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        ]
        if indexed:
            active = [p for p in active if _index(p) not in completed]

        # Decide whether the Job ends.
        target = condition(job, "FailureTarget")
        success = condition(job, "SuccessCriteriaMet")
        finish: tuple[str, str, str] | None = None
        if success is not None and success.get("status") == "True":
            finish = ("SuccessCriteriaMet", str(success.get("reason")), str(success.get("message")))
        elif target is not None and target.get("status") == "True":
            finish = ("FailureTarget", str(target.get("reason")), str(target.get("message")))
        elif fail_job is not None:
            finish = ("FailureTarget", *fail_job)
        elif failed > int(spec.get("backoffLimit", 6)) or _past_backoff_on_failure(spec, pods):
            finish = ("FailureTarget", "BackoffLimitExceeded", BACKOFF_MESSAGE)
        elif self._past_deadline(job, now):
            finish = ("FailureTarget", "DeadlineExceeded", DEADLINE_MESSAGE)
        elif indexed and spec.get("backoffLimitPerIndex") is not None:
            maximum = spec.get("maxFailedIndexes")
            if maximum is not None and len(failed_indexes) > int(maximum):
                finish = (
                    "FailureTarget",
                    "MaxFailedIndexesExceeded",
                    "Job has exceeded the specified maximal number of failed indexes",
                )
            elif failed_indexes and len(failed_indexes) + len(completed) >= int(completions or 0):
                finish = ("FailureTarget", "FailedIndexes", "Job has failed indexes")
        if finish is None and not finished:
            done = (
                succeeded > 0 and not active
                if completions is None
                else succeeded >= int(completions) and not active
            )
            if done:
                finish = ("SuccessCriteriaMet", "CompletionsReached", COMPLETE_MESSAGE)

        if finished:
            for pod in active:
                self._delete_pod(pod)
            self._release(to_release)
            return None

        wake: float | None = None
        if finish is not None:
            set_condition(
                status_holder := {"status": status}, finish[0], True, finish[1], finish[2], now
            )
            for pod in active:
                self._delete_pod(pod)
            active = []
        elif suspended:
            for pod in active:
                self._delete_pod(pod, counted=False)
            active = []
            status.pop("startTime", None)
            set_condition(
                status_holder := {"status": status},
                "Suspended",
                True,
                "JobSuspended",
                "Job suspended",
                now,
            )
        else:
            status_holder = {"status": status}
            if condition(job, "Suspended") is not None and is_true(job, "Suspended"):
                set_condition(status_holder, "Suspended", False, "JobResumed", "Job resumed", now)
                status["startTime"] = timestamp(now)
            status.setdefault("startTime", timestamp(now))
            if meta(job).get("deletionTimestamp") is None:
                active, wake = self._manage(
                    job, state, active, pods, completed, failed_indexes, now
                )
            deadline = spec.get("activeDeadlineSeconds")
            if deadline is not None and status.get("startTime"):
                due = parse_timestamp(str(status["startTime"])) + float(deadline)
                wake = due if wake is None else min(wake, due)
        leaving = sum(1 for p in self._current_pods(uid) if meta(p).get("deletionTimestamp"))
        if finish is not None and leaving == 0:
            final = "Complete" if finish[0] == "SuccessCriteriaMet" else "Failed"
            set_condition(status_holder, final, True, finish[1], finish[2], now)
            if final == "Complete":
                status["completionTime"] = timestamp(now)
        for c in status.get("conditions") or []:
            c.setdefault("lastProbeTime", c.get("lastTransitionTime"))
        live = [p for p in self._current_pods(uid) if _is_active(p)]
        _set_count(status, "active", len(live))
        status["ready"] = sum(1 for p in live if is_true(p, "Ready"))
        status["terminating"] = leaving
        _set_count(status, "succeeded", succeeded)
        _set_count(status, "failed", failed)
        if indexed:
            text = format_indexes(completed)
            if text:
                status["completedIndexes"] = text
            else:
                status.pop("completedIndexes", None)
            if spec.get("backoffLimitPerIndex") is not None:
                status["failedIndexes"] = format_indexes(failed_indexes)
        status["uncountedTerminatedPods"] = {}
        self._write_status(job, status)
        self._release(to_release)
        if finish is not None and leaving:
            return None
        if finish is not None and not (
            is_true({"status": status}, "Complete") or is_true({"status": status}, "Failed")
        ):
            return now
        return wake

    # -- helpers ---------------------------------------------------------------------------------

    def _current_pods(self, uid: str) -> list[JSON]:
        return [p for r, p in self.store.dependents(uid) if r is PODS and _owned(p, uid)]

    def _past_deadline(self, job: JSON, now: float) -> bool:
        spec = job.get("spec", {})
        deadline = spec.get("activeDeadlineSeconds")
        start = (job.get("status") or {}).get("startTime")
        if deadline is None or not start or spec.get("suspend"):
            return False
        return now >= parse_timestamp(str(start)) + float(deadline)

    def _manage(
        self,
        job: JSON,
        state: _Backoff,
        active: list[JSON],
        pods: list[JSON],
        completed: set[int],
        failed_indexes: set[int],
        now: float,
    ) -> tuple[list[JSON], float | None]:
        """Create the pods the Job lacks (after the failure back-off); the next time to look."""
        spec = job.get("spec", {})
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        indexed = spec.get("completionMode") == "Indexed"
        per_index = spec.get("backoffLimitPerIndex") is not None
        wake: list[float] = []
        if indexed:
            assert completions is not None
            busy = {_index(p) for p in active}
            # Indexes whose pod is terminating wait (podReplacementPolicy), unless replaceable.
            waiting = {
                _index(p)
                for p in pods
                if meta(p).get("deletionTimestamp")
                and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                and spec.get("podReplacementPolicy") == "Failed"
            }
            wanted = [
                i
                for i in range(int(completions))
                if i not in completed
                and i not in busy
                and i not in failed_indexes
                and i not in waiting
            ]
            room = max(0, parallelism - len(active))
            for i in wanted[:room]:
                delay = self._delay(state, i if per_index else None)
                if delay is not None and delay > now:
                    wake.append(delay)
                    continue
                failures = state.per_index.get(i, (0, 0.0))[0] if per_index else None
                active.append(self._create_pod(job, i, failures))
        else:
            succeeded = int((job.get("status") or {}).get("succeeded", 0))
            if completions is not None:
                remaining = min(parallelism, int(completions) - succeeded)
            else:
                # A work queue: once one pod succeeded, no new pods (job_controller manageJob).
                remaining = 0 if succeeded else parallelism
            missing = max(0, remaining - len(active))
            if missing:
                delay = self._delay(state, None)
                if delay is not None and delay > now:
                    wake.append(delay)
                else:
                    for _ in range(missing):
                        active.append(self._create_pod(job, None, None))
        return active, (min(wake) if wake else None)

    def _delay(self, state: _Backoff, index: int | None) -> float | None:
        """When a replacement may be created: last failure + 10 s * 2^(n-1), at most 10 min."""
        if index is not None:
            failures, last = state.per_index.get(index, (0, 0.0))
        else:
            failures, last = state.failures, state.last_failure
        if failures <= 0:
            return None
        return last + min(POD_BACKOFF * float(2 ** (failures - 1)), POD_BACKOFF_MAX)

    def _label(self, job: JSON) -> None:
        uid = str(meta(job).get("uid", ""))
        name = str(meta(job).get("name", ""))

        def change(current: JSON) -> None:
            spec = current.setdefault("spec", {})
            template = spec.setdefault("template", {})
            labels = meta(template).setdefault("labels", {})
            for key, value in (
                (LEGACY_CONTROLLER_UID, uid),
                (CONTROLLER_UID, uid),
                (LEGACY_JOB_NAME, name),
                (JOB_NAME, name),
            ):
                labels.setdefault(key, value)
            selector = spec.setdefault("selector", {})
            selector.setdefault("matchLabels", {})[CONTROLLER_UID] = uid

        self.store.mutate(JOBS, str(meta(job)["namespace"]), name, change, copy=False)

    def _create_pod(self, job: JSON, index: int | None, failures: int | None) -> JSON:
        m = meta(job)
        name = str(m["name"])
        template = clone(job.get("spec", {}).get("template") or {})
        pod_meta = clone(template.get("metadata") or {})
        labels = dict(pod_meta.get("labels") or {})
        annotations = dict(pod_meta.get("annotations") or {})
        spec = clone(template.get("spec") or {})
        if index is not None:
            labels[INDEX_KEY] = str(index)
            annotations[INDEX_KEY] = str(index)
            if failures is not None:
                annotations[FAILURE_COUNT_KEY] = str(failures)
            spec.setdefault("hostname", f"{name}-{index}")
            for c in spec.get("containers") or []:
                env = c.setdefault("env", [])
                if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in env):
                    env.append(
                        {
                            "name": "JOB_COMPLETION_INDEX",
                            "valueFrom": {
                                "fieldRef": {"fieldPath": f"metadata.labels['{INDEX_KEY}']"}
                            },
                        }
                    )
        generate = pod_generate_name(name, index)
        pod_name = f"{generate}{self.store.random_suffix()}"
        pod: JSON = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "generateName": generate,
                "namespace": m["namespace"],
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [owner_reference(job)],
                "finalizers": [TRACKING_FINALIZER],
            },
            "spec": spec,
        }
        if not annotations:
            del pod["metadata"]["annotations"]
        try:
            return self.store.create(PODS, str(m["namespace"]), pod, internal=True)
        except ApiError:
            return pod

    def _delete_pod(self, pod: JSON, *, counted: bool = True) -> None:
        """Delete a pod; ``counted=False`` drops its tracking finalizer first (deleteJobPods)."""
        m = meta(pod)
        if not counted:
            self._drop_finalizer(str(m["namespace"]), str(m["name"]))
        with contextlib.suppress(ApiError):
            self.store.delete(
                PODS,
                str(m["namespace"]),
                str(m["name"]),
                uid=str(m.get("uid")),
                internal=True,
                copy=False,
            )

    def _release(self, pods: list[JSON]) -> None:
        for pod in pods:
            m = meta(pod)
            self._drop_finalizer(str(m["namespace"]), str(m["name"]))

    def _drop_finalizer(self, namespace: str, name: str) -> None:
        def change(current: JSON) -> None:
            remove_finalizer(current, TRACKING_FINALIZER)

        with contextlib.suppress(ApiError):
            self.store.mutate(PODS, namespace, name, change, copy=False)

    def _release_orphan(self, namespace: str, name: str) -> None:
        pod = self.store.peek(PODS, namespace, name)
        if pod is None or TRACKING_FINALIZER not in (meta(pod).get("finalizers") or []):
            return
        owner = controller_of(pod)
        if owner is not None:
            job = self.store.peek(JOBS, namespace, str(owner.get("name", "")))
            if job is not None and meta(job).get("uid") == owner.get("uid"):
                return
        self._drop_finalizer(namespace, name)

    def _write_status(self, job: JSON, status: JSON) -> None:
        m = meta(job)
        if (job.get("status") or {}) == status:
            return

        def change(current: JSON) -> None:
            current["status"] = status

        with contextlib.suppress(ApiError):
            self.store.mutate(
                JOBS, str(m["namespace"]), str(m["name"]), change, subresource="status", copy=False
            )


def _owned(pod: JSON, uid: str) -> bool:
    owner = controller_of(pod)
    return owner is not None and owner.get("uid") == uid


def _is_active(pod: JSON) -> bool:
    return not meta(pod).get("deletionTimestamp") and pod.get("status", {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def _set_count(status: JSON, key: str, value: int) -> None:
    if value:
        status[key] = value
    else:
        status.pop(key, None)


def _int_annotation(pod: JSON, key: str) -> int:
    try:
        return max(0, int(str(annotations_of(pod).get(key, "0"))))
    except ValueError:
        return 0


def _past_backoff_on_failure(spec: JSON, pods: list[JSON]) -> bool:
    """pastBackoffLimitOnFailure: restartCounts of Pending/Running pods reach backoffLimit."""
    template = spec.get("template") or {}
    if (template.get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    total = 0
    for pod in pods:
        if pod.get("status", {}).get("phase") in ("Running", "Pending"):
            for s in pod.get("status", {}).get("containerStatuses") or []:
                total += int(s.get("restartCount", 0))
    limit = int(spec.get("backoffLimit", 6))
    return total > 0 if limit == 0 else total >= limit


def match_pod_failure_policy(policy: Any, pod: JSON) -> tuple[str | None, bool, str | None]:
    """matchPodFailurePolicy: (FailJob message, whether it counts, the action matched)."""
    if not isinstance(policy, dict):
        return None, True, None
    m = meta(pod)
    pod_path = f"{m.get('namespace')}/{m.get('name')}"
    for index, rule in enumerate(policy.get("rules") or []):
        action = str(rule.get("action", ""))
        on_exit = rule.get("onExitCodes")
        patterns = rule.get("onPodConditions")
        if on_exit is not None:  # a rule has one requirement or the other
            matched = _match_exit_codes(pod, on_exit)
            if matched is None:
                continue
            message = (
                f"Container {matched[0]} for pod {pod_path} failed with exit code {matched[1]} "
                f"matching FailJob rule at index {index}"
            )
        elif patterns is not None:
            found = _match_conditions(pod, patterns)
            if found is None:
                continue
            message = f"Pod {pod_path} has condition {found} matching FailJob rule at index {index}"
        else:
            continue
        if action == "Ignore":
            return None, False, action
        return (message if action == "FailJob" else None), True, action
    return None, True, None


def _match_exit_codes(pod: JSON, requirement: JSON) -> tuple[str, int] | None:
    container = requirement.get("containerName")
    values = [int(v) for v in requirement.get("values") or []]
    operator = requirement.get("operator")
    status = pod.get("status", {})
    for s in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        terminated = (s.get("state") or {}).get("terminated")
        if not terminated:
            continue
        if container is not None and s.get("name") != container:
            continue
        code = int(terminated.get("exitCode", 0))
        if code == 0:
            continue
        if (operator == "In" and code in values) or (operator == "NotIn" and code not in values):
            return str(s.get("name")), code
    return None


def _match_conditions(pod: JSON, patterns: list[JSON]) -> str | None:
    for c in pod.get("status", {}).get("conditions") or []:
        for pattern in patterns:
            if c.get("type") == pattern.get("type") and c.get("status") == pattern.get(
                "status", "True"
            ):
                return str(c.get("type"))
    return None
