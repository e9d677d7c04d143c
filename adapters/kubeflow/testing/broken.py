"""Deliberately broken Kubeflow adapters, and a broken readmission gate, on the simulated
cluster: the proof that the checks have teeth where only the Kubeflow adapter can go wrong
(a delete's precondition, a label lookup, the execution id, a runtime's identity).

Each entry of :data:`CATALOGUE` is :class:`~adapters.kubeflow.KubeflowBackend` (or the gate)
wrong in exactly one way, on the ``kubeflow-sim`` or ``kubeflow-sim-kueue`` cluster, with a
harness factory of the same name, so that any of them can be named where a harness is
expected::

    dispatch-conformance run --harness adapters.kubeflow.testing.broken:find_by_name_prefix

``tests/conformance/test_kubeflow_suites.py`` runs the checks against each and names the
checks that catch it (``only``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubernetes.client.exceptions import ApiException

from adapters.kubeflow import KubeflowBackend
from adapters.kubeflow.admission import ReadmissionGate
from adapters.kubeflow.kube import KUEUE, TRAINER, ApiFailure, LostReply
from adapters.kubeflow.runtimes import Runtime
from adapters.kubeflow.testing.sim import KubeflowSimHarness
from dispatch_core import JobID, JobSpec, ObjectRef, Observation, OutcomeUnknown, Plan

# -- the broken gate -------------------------------------------------------------------------


class ReadyBeforeWrite(ReadmissionGate):
    """The gate marks its check Ready before it writes the next execution id: Kueue unsuspends
    the TrainJob at once, the Trainer webhook then refuses the id's write (the TrainJob is no
    longer suspended), and the readmission runs under the identity the last admission had."""

    def readmit(
        self,
        workload: dict[str, Any],
        trainjob: Mapping[str, Any],
        execution: int,
        admission: str,
    ) -> bool:
        acted = self.mark(workload, "Ready", self._ready_message(trainjob, execution))
        with contextlib.suppress(ApiException):  # too late: refused; the broken gate never looks
            self.write_execution(trainjob, execution, admission)
        return acted


# -- broken adapters ---------------------------------------------------------------------------


JSON = dict[str, Any]


class DeleteWithoutUid(KubeflowBackend):
    """stop deletes the TrainJob by namespace/name alone, without ``preconditions.uid``: once
    the ref's object is gone, a stop through it deletes whatever now has that name."""

    def _delete(self, ref: ObjectRef, namespace: str, name: str) -> bool:
        try:
            self.kube.call(
                "delete trainjobs",
                self.kube.custom.delete_namespaced_custom_object,
                *TRAINER,
                namespace,
                "trainjobs",
                name,
                body={"apiVersion": "v1", "kind": "DeleteOptions"},
            )
        except Exception as error:
            if getattr(error, "status", None) == 404:
                return False
        return True


class FindByNamePrefix(KubeflowBackend):
    """find lists every TrainJob of the namespace and keeps those whose name starts with the
    job's ``dj-<ulid lower>-`` prefix, instead of selecting by the exact ``dispatch/job``
    label: a TrainJob named like the job's whose labels are not the job's is taken for it."""

    def find(self, job_id: JobID) -> list[Observation]:
        items = self.kube.list_objects(TRAINER, "trainjobs", self.namespace, "")
        prefix = f"dj-{str(job_id).lower()}-"
        return [
            self._observe(obj)
            for obj in items
            if str((obj.get("metadata") or {}).get("name", "")).startswith(prefix)
        ]


class StockRuntimeUnflagged(KubeflowBackend):
    """A stock runtime (JobSet's OnFailure, Job's backoffLimit 6: a failed rank reruns under
    the identity it had) is read as if it kept identity: accepted without
    ``allow_rank_restart``, ``identity_weakened`` "" for it, no rerun of its own declared."""

    def runtime_of(self, spec: JobSpec | None) -> Runtime:
        return dataclasses.replace(super().runtime_of(spec), weakening=())


class HoldIgnoresResourceVersion(KubeflowBackend):
    """hold writes its annotation and ``suspend`` with a merge patch that carries no
    ``resourceVersion``: it lands on whatever the object has become since the adapter read it
    (a TrainJob that started in between is suspended under a hold it should have refused)."""

    def _update(
        self,
        ref: ObjectRef,
        obj: JSON,
        change: Callable[[JSON], None],
        landed: Callable[[JSON], bool],
        judge: Callable[[JSON], None],
        what: str,
    ) -> JSON:
        if not what.startswith("hold"):
            return super()._update(ref, obj, change, landed, judge, what)
        body = copy.deepcopy(obj)
        change(body)
        namespace, name = self._where(ref)
        patch = {
            "metadata": {"annotations": (body.get("metadata") or {}).get("annotations") or {}},
            "spec": {"suspend": (body.get("spec") or {}).get("suspend", False)},
        }
        return dict(
            self.kube.call(
                "patch trainjobs",
                self.kube.custom.patch_namespaced_custom_object,
                *TRAINER,
                namespace,
                "trainjobs",
                name,
                patch,
            )
        )


class WhereAllowsAnEmptyName(KubeflowBackend):
    """A ref's ``namespace/name`` is refused only when both parts are empty: ``default/``
    reaches the API server as the collection's URL, and a stop through it is a DELETE of the
    namespace's TrainJobs (kept from the object with the ref's uid only by the precondition,
    which the object the ref was cut from meets)."""

    def _where(self, ref: ObjectRef) -> tuple[str, str]:
        if ref.backend != self.name:
            return super()._where(ref)
        namespace, sep, name = ref.id.partition("/")
        if not sep or (not namespace and not name) or "/" in name:
            return super()._where(ref)
        return namespace, name


class WorkloadConflictGivesUp(KubeflowBackend):
    """The Workload's ``spec.active`` write takes a 409 for a verdict: OutcomeUnknown at once,
    no re-read. A hold or release that meets Kueue's own write of the Workload (its status, at
    any moment) is never placed, though the object is still as the adapter read it."""

    def _workload_active(
        self, ref: ObjectRef, obj: Mapping[str, Any], active: bool, what: str
    ) -> None:
        workload = self._await_workload(ref, obj, what)
        if (workload.get("spec") or {}).get("active", True) is active:
            return
        body = copy.deepcopy(workload)
        body.setdefault("spec", {})["active"] = active
        meta = body["metadata"]
        try:
            self.kube.replace(
                KUEUE, "workloads", str(meta.get("namespace")), str(meta.get("name")), body
            )
        except ApiFailure as failure:
            if failure.status == 409:
                raise OutcomeUnknown(f"{self.name}: {what}: the Workload: {failure}") from None
            super()._workload_active(ref, obj, active, what)  # the rest as the adapter does
        except LostReply:
            super()._workload_active(ref, obj, active, what)


class RequeueConflictGivesUp(KubeflowBackend):
    """A requeue's first write (the suspension) takes a 409 for a verdict: OutcomeUnknown at
    once, no re-read. A requeue that meets another writer's change of the running TrainJob is
    never made, though the object is still as the adapter read it."""

    def _update(
        self,
        ref: ObjectRef,
        obj: JSON,
        change: Callable[[JSON], None],
        landed: Callable[[JSON], bool],
        judge: Callable[[JSON], None],
        what: str,
    ) -> JSON:
        if what != "requeue (suspend)":
            return super()._update(ref, obj, change, landed, judge, what)
        body = copy.deepcopy(obj)
        change(body)
        namespace, name = self._where(ref)
        try:
            return dict(self.kube.replace(TRAINER, "trainjobs", namespace, name, body))
        except ApiFailure as failure:
            if failure.status == 409:
                raise OutcomeUnknown(f"{self.name}: the {what} of {ref.id}: {failure}") from None
        except LostReply:
            pass  # as the adapter does: the re-read and judged write below decide
        return super()._update(ref, self._read(ref), change, landed, judge, what)


class ReleaseKeepsExecution(KubeflowBackend):
    """release unsuspends the TrainJob without bumping ``dispatch/execution``: an object held
    after it ran (a requeue, a hold of a requeued object) runs again under the identity it
    had before."""

    def _resume(
        self, ref: ObjectRef, obj: JSON, what: str, hold: int | None, step: int = 1
    ) -> None:
        if not what.startswith("release"):
            super()._resume(ref, obj, what, hold, step)
            return

        def change(body: JSON) -> None:
            body["metadata"].get("annotations", {}).pop("dispatch/hold", None)
            body["spec"]["suspend"] = False

        def landed(now: JSON) -> bool:
            return (now.get("spec") or {}).get("suspend") is not True

        self._update(ref, obj, change, landed, lambda now: None, what)


class ReleaseLeavesHoldMark(KubeflowBackend):
    """release resumes the TrainJob (the execution bumped, ``suspend`` false) but leaves its
    ``dispatch/hold`` annotation: the next time the TrainJob is suspended for another reason (a
    requeue cut between its steps), it reads as held again by the hold already released."""

    def _update(
        self,
        ref: ObjectRef,
        obj: JSON,
        change: Callable[[JSON], None],
        landed: Callable[[JSON], bool],
        judge: Callable[[JSON], None],
        what: str,
    ) -> JSON:
        if not what.startswith("release"):
            return super()._update(ref, obj, change, landed, judge, what)

        def keeping_the_mark(body: JSON) -> None:
            mark = body["metadata"].get("annotations", {}).get("dispatch/hold")
            change(body)
            if mark is not None:
                body["metadata"].setdefault("annotations", {})["dispatch/hold"] = mark

        return super()._update(ref, obj, keeping_the_mark, landed, judge, what)


class JobSetWaitUnbounded(KubeflowBackend):
    """A requeue of a failed TrainJob waits for its old JobSet to go with no bound: a JobSet
    whose deletion never completes (a finalizer nobody removes) holds the call forever."""

    def _drop_finished_jobset(self, ref: ObjectRef, obj: Mapping[str, Any]) -> int:
        settle, self.settle = self.settle, math.inf
        try:
            return super()._drop_finished_jobset(ref, obj)
        finally:
            self.settle = settle


class StopTrustsItsRetry(KubeflowBackend):
    """A stop whose DELETE did not land, tried twice (an API server answering 500), returns as
    if the deletion stood: the object runs on, and the caller believes it stopped."""

    def stop(self, ref: ObjectRef) -> None:
        try:
            super().stop(ref)
        except OutcomeUnknown as error:
            if "did not land, tried twice" not in str(error):
                raise


class RequeueForgetsRestarts(KubeflowBackend):
    """A requeue of a failed TrainJob replaces its terminal JobSet but counts only its own
    step: the new JobSet's restarts start again at 0, so the restart count the object showed
    after its JobSet's own restarts comes back, and falls below the highest it showed."""

    def _drop_finished_jobset(self, ref: ObjectRef, obj: Mapping[str, Any]) -> int:
        super()._drop_finished_jobset(ref, obj)
        return 0


class ImageDropped(KubeflowBackend):
    """The TrainJob leaves ``spec.trainer.image`` out whatever dispatch.Image says (ContainerImage
    is still answered yes): every rank runs the runtime's own image."""

    def trainjob(self, plan: Plan, submission: int, attempt: int) -> JSON:
        body = super().trainjob(plan, submission, attempt)
        body["spec"]["trainer"].pop("image", None)
        return body


class EnvUnescaped(KubeflowBackend):
    """The spec's env values go into the TrainJob as they are, with no ``$`` doubled: the API
    server's env expansion then turns ``$$`` into ``$`` and ``$(NAME)`` into NAME's value, so a
    rank sees another value than the spec's."""

    def trainjob(self, plan: Plan, submission: int, attempt: int) -> JSON:
        body = super().trainjob(plan, submission, attempt)
        for entry in body["spec"]["trainer"]["env"]:
            if entry.get("name") in plan.spec.env:
                entry["value"] = plan.spec.env[entry["name"]]
        return body


class ReadIgnoresOffset(KubeflowBackend):
    """read_output returns rank 0's whole log whatever the offset: a reader that follows by
    offsets reads everything again each time."""

    def read_output(self, ref: ObjectRef, offset: int = 0) -> bytes:
        return super().read_output(ref, 0)


class FollowFromTheEnd(KubeflowBackend):
    """follow_output starts where the log is when it is called (``tail -f -n 0``): what the job
    printed before is never yielded."""

    def follow_output(self, ref: ObjectRef) -> Iterator[bytes]:
        skip = len(self.read_output(ref))
        for chunk in super().follow_output(ref):
            cut = min(skip, len(chunk))
            skip -= cut
            if chunk[cut:]:
                yield chunk[cut:]


# -- the catalogue -----------------------------------------------------------------------------


class OomReadAsItsExitCode(KubeflowBackend):
    """A container killed for its memory (OOMKilled, exit 137) is read by its exit code alone:
    the TrainJob failed with an exit code, not out of memory."""

    def _pods(self, namespace: str, name: str) -> list[JSON]:
        return [_without_oom(pod) for pod in super()._pods(namespace, name)]


def _without_oom(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "Error" if v == "OOMKilled" else _without_oom(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_oom(v) for v in value]
    return value


@dataclass(frozen=True)
class Broken:
    """One broken Kubeflow adapter (or gate): its name, the one thing wrong with it, what is
    broken, on which cluster, and the checks that catch it."""

    name: str
    fault: str
    backend: type[KubeflowBackend] = KubeflowBackend
    gate: type[ReadmissionGate] = ReadmissionGate
    kueue: bool = False
    default_runtime: str = "dispatch-identity"
    only: tuple[str, ...] = ()

    def harness(self) -> KubeflowSimHarness:
        return KubeflowSimHarness(
            kueue=self.kueue,
            backend_type=self.backend,
            gate_type=self.gate,
            default_runtime=self.default_runtime,
            name=f"{__name__}:{self.name}",
        )


def _doc(kind: type) -> str:
    return " ".join((kind.__doc__ or "").split())


CATALOGUE: Final[Sequence[Broken]] = (
    Broken("delete_without_uid", _doc(DeleteWithoutUid), DeleteWithoutUid, only=("IDENT-054",)),
    Broken(
        "gate_ready_before_write",
        _doc(ReadyBeforeWrite),
        gate=ReadyBeforeWrite,
        kueue=True,
        only=("IDENT-015", "IDENT-016"),
    ),
    Broken("find_by_name_prefix", _doc(FindByNamePrefix), FindByNamePrefix, only=("IDENT-002",)),
    Broken(
        "stock_runtime_unflagged",
        _doc(StockRuntimeUnflagged),
        StockRuntimeUnflagged,
        default_runtime="torch-distributed",
        only=("STATE-003",),
    ),
    Broken(
        "hold_ignores_resource_version",
        _doc(HoldIgnoresResourceVersion),
        HoldIgnoresResourceVersion,
        only=("HOLD-008", "HOLD-009", "HOLD-012", "STATE-002"),
    ),
    Broken("env_unescaped", _doc(EnvUnescaped), EnvUnescaped, only=("SAFE-001",)),
    Broken(
        "oom_read_as_its_exit_code",
        _doc(OomReadAsItsExitCode),
        OomReadAsItsExitCode,
        only=("CAUSE-001",),
    ),
    Broken("read_ignores_offset", _doc(ReadIgnoresOffset), ReadIgnoresOffset, only=("CAP-020",)),
    Broken("follow_from_the_end", _doc(FollowFromTheEnd), FollowFromTheEnd, only=("CAP-021",)),
    Broken(
        "release_keeps_execution",
        _doc(ReleaseKeepsExecution),
        ReleaseKeepsExecution,
        only=("IDENT-055",),
    ),
    Broken("image_dropped", _doc(ImageDropped), ImageDropped, only=("CAP-022",)),
    Broken(
        "where_allows_an_empty_name",
        _doc(WhereAllowsAnEmptyName),
        WhereAllowsAnEmptyName,
        only=("IDENT-057",),
    ),
    Broken(
        "workload_conflict_gives_up",
        _doc(WorkloadConflictGivesUp),
        WorkloadConflictGivesUp,
        kueue=True,
        only=("HOLD-014",),
    ),
    Broken(
        "requeue_conflict_gives_up",
        _doc(RequeueConflictGivesUp),
        RequeueConflictGivesUp,
        only=("IDENT-061",),
    ),
    Broken(
        "release_leaves_hold_mark",
        _doc(ReleaseLeavesHoldMark),
        ReleaseLeavesHoldMark,
        only=("HOLD-015",),
    ),
    Broken(
        "jobset_wait_unbounded",
        _doc(JobSetWaitUnbounded),
        JobSetWaitUnbounded,
        only=("IDENT-059",),
    ),
    Broken(
        "stop_trusts_its_retry",
        _doc(StopTrustsItsRetry),
        StopTrustsItsRetry,
        only=("IDENT-068",),
    ),
    Broken(
        "requeue_forgets_restarts",
        _doc(RequeueForgetsRestarts),
        RequeueForgetsRestarts,
        only=("IDENT-056",),
    ),
)
"""Every broken Kubeflow adapter, each wrong in exactly one way."""

BY_NAME: Final = {broken.name: broken for broken in CATALOGUE}


def _factory(name: str) -> Callable[[], KubeflowSimHarness]:
    def factory() -> KubeflowSimHarness:
        return BY_NAME[name].harness()

    factory.__name__ = name
    factory.__doc__ = f"The harness of the broken Kubeflow adapter {name}: {BY_NAME[name].fault}"
    return factory


delete_without_uid = _factory("delete_without_uid")
gate_ready_before_write = _factory("gate_ready_before_write")
find_by_name_prefix = _factory("find_by_name_prefix")
stock_runtime_unflagged = _factory("stock_runtime_unflagged")
hold_ignores_resource_version = _factory("hold_ignores_resource_version")
env_unescaped = _factory("env_unescaped")
read_ignores_offset = _factory("read_ignores_offset")
follow_from_the_end = _factory("follow_from_the_end")
release_keeps_execution = _factory("release_keeps_execution")
requeue_forgets_restarts = _factory("requeue_forgets_restarts")
release_leaves_hold_mark = _factory("release_leaves_hold_mark")
requeue_conflict_gives_up = _factory("requeue_conflict_gives_up")
jobset_wait_unbounded = _factory("jobset_wait_unbounded")
stop_trusts_its_retry = _factory("stop_trusts_its_retry")
image_dropped = _factory("image_dropped")
workload_conflict_gives_up = _factory("workload_conflict_gives_up")
where_allows_an_empty_name = _factory("where_allows_an_empty_name")
oom_read_as_its_exit_code = _factory("oom_read_as_its_exit_code")

__all__ = [
    "BY_NAME",
    "CATALOGUE",
    "Broken",
    "DeleteWithoutUid",
    "EnvUnescaped",
    "FindByNamePrefix",
    "FollowFromTheEnd",
    "HoldIgnoresResourceVersion",
    "ImageDropped",
    "JobSetWaitUnbounded",
    "ReadIgnoresOffset",
    "ReadyBeforeWrite",
    "ReleaseKeepsExecution",
    "ReleaseLeavesHoldMark",
    "RequeueForgetsRestarts",
    "StockRuntimeUnflagged",
    "OomReadAsItsExitCode",
    "StopTrustsItsRetry",
    "WhereAllowsAnEmptyName",
    "WorkloadConflictGivesUp",
    *BY_NAME,
]
