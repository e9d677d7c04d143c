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
from typing import Any, ClassVar, Final

from kubernetes.client.exceptions import ApiException

from adapters.kubeflow import KubeflowBackend
from adapters.kubeflow.admission import ReadmissionGate
from adapters.kubeflow.backend import REPLICATED_JOB_LABEL, RUNTIME_EXTENSION
from adapters.kubeflow.causes import condition, current_pods
from adapters.kubeflow.env import read_execution
from adapters.kubeflow.kube import KUEUE, TRAINER, ApiFailure, LostReply
from adapters.kubeflow.names import LABEL_JOB, LABEL_SUBMISSION, parse_identity, trainjob_name
from adapters.kubeflow.runtimes import Runtime
from adapters.kubeflow.testing.sim import KubeflowSimHarness
from dispatch_core import (
    Cause,
    EncodingError,
    EpochBound,
    JobID,
    JobSpec,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    State,
    Unsupported,
    parse_decimal,
)

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


class GateTakesAnyJobLabel(ReadmissionGate):
    """The gate acts on every TrainJob that carries a ``dispatch/job`` label, its name and
    identity unread: another user's look-alike on the gated queue is written on and admitted."""

    def ours(self, trainjob: Mapping[str, Any]) -> bool:
        labels = (trainjob.get("metadata") or {}).get("labels") or {}
        return LABEL_JOB in labels


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


class ParseIgnoresName(KubeflowBackend):
    """The identity is read from the labels and the annotation alone, the name never compared
    with the one they imply (``names.parse_identity`` without its last step): a TrainJob of the
    job's label and a valid identity under another name (another submission's, the implied
    one with a suffix or a prefix, one of its own) is read as the job's, not foreign."""

    def _observe(self, obj: Mapping[str, Any], *, restarts: bool = True) -> Observation:
        seen = super()._observe(obj, restarts=restarts)
        if not seen.foreign:
            return seen
        meta = obj.get("metadata") or {}
        labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
        try:
            job = JobID.parse(str(labels.get(LABEL_JOB, "")))
            submission = parse_decimal(
                str(labels.get(LABEL_SUBMISSION, "")), LABEL_SUBMISSION, minimum=1, bound=EpochBound
            )
            found = parse_identity(trainjob_name(job, submission), labels, annotations)
            read_execution(obj)
        except (ValueError, EncodingError):
            return seen  # foreign for more than its name
        details = [d for d in seen.detail.split("; ") if not d.startswith("not dispatch's")]
        return seen.model_copy(
            update={
                "foreign": False,
                "submission": found.submission,
                "attempt": found.attempt,
                "detail": "; ".join(details),
            }
        )


class AdoptByLabels(KubeflowBackend):
    """A start whose create failed or lost its reply adopts the first TrainJob that the labels
    of its job and submission select (``dispatch/job=J,dispatch/submission=N``), as find
    selects, instead of reading back the one name it creates: another writer's TrainJob
    carrying those labels under another name is taken for the start's own."""

    def _adopt(self, plan: Plan, submission: int, attempt: int, name: str, why: str) -> ObjectRef:
        selector = f"{LABEL_JOB}={plan.job},{LABEL_SUBMISSION}={submission}"
        try:
            items = self.kube.list_objects(TRAINER, "trainjobs", self.namespace, selector)
        except (ApiFailure, LostReply) as error:
            raise OutcomeUnknown(f"{self.name}: {why}; listing {selector}: {error}") from None
        if not items:
            raise OutcomeUnknown(f"{self.name}: {why}, and no TrainJob carries {selector} (now)")
        return self._ref(items[0])


class AdoptTrustsName(KubeflowBackend):
    """A start whose create met a TrainJob of the name it creates (409, or a lost reply)
    adopts that TrainJob on its name alone, its identity unread: another writer's TrainJob
    that took the name first is taken for the start's own."""

    def _adopt(self, plan: Plan, submission: int, attempt: int, name: str, why: str) -> ObjectRef:
        try:
            obj = self.kube.get(TRAINER, "trainjobs", self.namespace, name)
        except (ApiFailure, LostReply) as error:
            raise OutcomeUnknown(f"{self.name}: {why}; reading {name} back: {error}") from None
        return self._ref(obj)


class StartRemembersRefs(KubeflowBackend):
    """start remembers the ref it answered for each (job, submission) and answers a start of
    it again from that memory, without reading the cluster: once the TrainJob was deleted and
    created again from its manifest (``kubectl replace --force``), a start answers with the
    ref of the object that is gone, not the copy that is the submission's now."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started: dict[tuple[JobID, int], ObjectRef] = {}

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        known = self.started.get((plan.job, submission))
        if known is not None and plan.backend == self.name:
            return known
        ref = super().start(plan, submission, attempt)
        self.started[(plan.job, submission)] = ref
        return ref


class StockRuntimeUnflagged(KubeflowBackend):
    """A stock runtime (JobSet's OnFailure, Job's backoffLimit 6: a failed rank reruns under
    the identity it had) is read as if it kept identity: accepted without
    ``allow_rank_restart``, ``identity_weakened`` "" for it, no rerun of its own declared."""

    def runtime_of(self, spec: JobSpec | None) -> Runtime:
        return dataclasses.replace(super().runtime_of(spec), weakening=())


class WeakeningJudgedOnDefault(KubeflowBackend):
    """Whether a spec's runtime weakens execution identity is judged on the default runtime,
    not on the one the spec names (``kubeflow.Runtime``): with an identity-keeping default, a
    spec naming a stock runtime is accepted without ``allow_rank_restart``."""

    def refusal(self, spec: JobSpec) -> str:
        why = self._extension_refusal(spec)
        if why:
            return why
        try:
            runtime = self.runtime_of(spec)
        except Unsupported as missing:
            return str(missing)
        why = runtime.injection_gap()
        if why:
            return why
        default = self.runtime_of(None)
        if default.weakening and not self.allow_rank_restart:
            return f"{default.weakened()} (allow_rank_restart is off)"
        return self.gate_missing()


class RuntimesKeptByName(KubeflowBackend):
    """The runtimes it reads are kept for the process, by name alone: an instance on another
    namespace or cluster judges a spec on the runtime of that name the first instance read."""

    read: ClassVar[dict[str, Runtime]] = {}

    def runtime_of(self, spec: JobSpec | None) -> Runtime:
        name = self.default_runtime
        if spec is not None:
            name = spec.extensions.get(RUNTIME_EXTENSION, name)
        kept = RuntimesKeptByName.read.get(name)
        if kept is None:
            kept = RuntimesKeptByName.read[name] = super().runtime_of(spec)
        return kept


class GateReadOncePerProcess(KubeflowBackend):
    """Whether the readmission gate guards the queue is read once for the process: an
    instance on a queue no gate guards accepts what an instance on a gated one did."""

    read: ClassVar[dict[str, str]] = {}

    def gate_missing(self) -> str:
        if "gate" not in GateReadOncePerProcess.read:
            GateReadOncePerProcess.read["gate"] = super().gate_missing()
        return GateReadOncePerProcess.read["gate"]


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


class ReadsLastRank(KubeflowBackend):
    """Rank 0's pod is taken as the newest pod of the trainer replicatedJob's current restart
    attempt (by creationTimestamp, then name), its completion index unread: on a job of two
    nodes or more, read_output and follow_output give the last rank's log, not rank 0's."""

    def _rank0(self, ref: ObjectRef) -> tuple[str, Mapping[str, Any] | None, JSON]:
        obj = self._read(ref)
        namespace, name = self._where(ref)
        runtime_ref = (obj.get("spec") or {}).get("runtimeRef") or {}
        runtime = self.runtimes.get(str(runtime_ref.get("name", "")))

        def trainer(pod: Mapping[str, Any]) -> bool:
            labels = (pod.get("metadata") or {}).get("labels") or {}
            return labels.get(REPLICATED_JOB_LABEL) == runtime.trainer_job

        def made(pod: Mapping[str, Any]) -> tuple[str, str]:
            meta = pod.get("metadata") or {}
            return str(meta.get("creationTimestamp", "")), str(meta.get("name", ""))

        pods = sorted(
            current_pods([p for p in self._pods(namespace, name) if trainer(p)]), key=made
        )
        return namespace, (pods[-1] if pods else None), obj


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


class QueuedCauseMisread(KubeflowBackend):
    """A queued object the adapter reads with cause :attr:`read` shows :attr:`shown`."""

    read: ClassVar[Cause]
    shown: ClassVar[Cause]

    def _observe(self, obj: Mapping[str, Any], *, restarts: bool = True) -> Observation:
        seen = super()._observe(obj, restarts=restarts)
        if seen.state is State.QUEUED and seen.cause is self.read:
            return seen.model_copy(update={"cause": self.shown})
        return seen


class PreemptionReadAsEvicted(QueuedCauseMisread):
    """A Workload Kueue evicted is read by its condition's type, whatever its reason: a
    TrainJob whose Workload was preempted for another (``Evicted``, reason ``Preempted``)
    waits in the queue with cause evicted, not preempted."""

    read = Cause.PREEMPTED
    shown = Cause.EVICTED


class EveryQuotaWaitIsCapacity(QueuedCauseMisread):
    """Every reason Kueue gives for reserving no quota reads as a wait for capacity: a
    TrainJob that asks for more than the ClusterQueue's whole quota (``ExceedsMaxQuota``),
    which can never run, shows queued, no_capacity, and a supervisor waits on it."""

    read = Cause.UNSCHEDULABLE
    shown = Cause.NO_CAPACITY


class QuotaWaitIsUnschedulable(QueuedCauseMisread):
    """A Workload waiting for quota others hold (``WaitingForQuota``) reads as one that can
    never be admitted: queued, unschedulable, and a supervisor gives up on a job that only had
    to wait."""

    read = Cause.NO_CAPACITY
    shown = Cause.UNSCHEDULABLE


class ImagePullIsJustWaiting(QueuedCauseMisread):
    """The pods' container states are not read, only their scheduling: a TrainJob whose image
    no registry has (every container waiting, ``ErrImagePull``, then ``ImagePullBackOff``)
    shows queued with no cause, like one the scheduler has not reached yet, and a supervisor
    waits on it forever."""

    read = Cause.IMAGE_PULL
    shown = Cause.NONE


class EvictionReadAsPreempted(KubeflowBackend):
    """Any eviction is read as a preemption: a TrainJob failed by a pod its kubelet evicted
    (``status.reason`` Evicted) shows cause preempted, and so does a queued TrainJob whose
    Workload Kueue evicted for any reason but node failures (an administrator's deactivation,
    an admission check's Retry)."""

    def _observe(self, obj: Mapping[str, Any], *, restarts: bool = True) -> Observation:
        seen = super()._observe(obj, restarts=restarts)
        if seen.cause is Cause.EVICTED:
            return seen.model_copy(update={"cause": Cause.PREEMPTED})
        if not self.kueue or seen.state is not State.QUEUED or seen.cause is not Cause.NONE:
            return seen
        workload = self._workload(obj)
        evicted = condition(workload, "Evicted") or condition(workload, "Requeued")
        if evicted is not None and evicted.get("reason") != "NodeFailures":
            return seen.model_copy(update={"cause": Cause.PREEMPTED})
        return seen


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
        "parse_ignores_name",
        _doc(ParseIgnoresName),
        ParseIgnoresName,
        only=("IDENT-071", "IDENT-072", "STATE-004"),
    ),
    Broken("adopt_by_labels", _doc(AdoptByLabels), AdoptByLabels, only=("IDENT-071", "IDENT-072")),
    Broken("adopt_trusts_name", _doc(AdoptTrustsName), AdoptTrustsName, only=("IDENT-074",)),
    Broken(
        "start_remembers_refs", _doc(StartRemembersRefs), StartRemembersRefs, only=("IDENT-073",)
    ),
    Broken(
        "gate_ready_before_write",
        _doc(ReadyBeforeWrite),
        gate=ReadyBeforeWrite,
        kueue=True,
        only=("IDENT-015", "IDENT-016"),
    ),
    Broken(
        "gate_takes_any_job_label",
        _doc(GateTakesAnyJobLabel),
        gate=GateTakesAnyJobLabel,
        kueue=True,
        only=("OBS-006",),
    ),
    Broken(
        "find_by_name_prefix",
        _doc(FindByNamePrefix),
        FindByNamePrefix,
        only=("IDENT-002", "IDENT-071"),
    ),
    Broken(
        "stock_runtime_unflagged",
        _doc(StockRuntimeUnflagged),
        StockRuntimeUnflagged,
        default_runtime="torch-distributed",
        # CAUSE-002 too: the preempted rank reruns in place, and the object never shows why.
        only=("CAP-024", "CAUSE-002", "STATE-003"),
    ),
    Broken(
        "weakening_judged_on_default",
        _doc(WeakeningJudgedOnDefault),
        WeakeningJudgedOnDefault,
        only=("CAP-024",),
    ),
    Broken(
        "runtimes_kept_by_name",
        _doc(RuntimesKeptByName),
        RuntimesKeptByName,
        only=("CAP-025",),
    ),
    Broken(
        "gate_read_once_per_process",
        _doc(GateReadOncePerProcess),
        GateReadOncePerProcess,
        kueue=True,
        only=("CAP-025",),
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
    Broken(
        "preemption_read_as_evicted",
        _doc(PreemptionReadAsEvicted),
        PreemptionReadAsEvicted,
        kueue=True,
        only=("CAUSE-002",),
    ),
    Broken(
        "eviction_read_as_preempted",
        _doc(EvictionReadAsPreempted),
        EvictionReadAsPreempted,
        kueue=True,
        only=("CAUSE-003", "CAUSE-004"),
    ),
    Broken(
        "every_quota_wait_is_capacity",
        _doc(EveryQuotaWaitIsCapacity),
        EveryQuotaWaitIsCapacity,
        kueue=True,
        only=("CAUSE-005",),
    ),
    Broken(
        "quota_wait_is_unschedulable",
        _doc(QuotaWaitIsUnschedulable),
        QuotaWaitIsUnschedulable,
        kueue=True,
        only=("CAUSE-006",),
    ),
    Broken(
        "image_pull_is_just_waiting",
        _doc(ImagePullIsJustWaiting),
        ImagePullIsJustWaiting,
        only=("CAUSE-007",),
    ),
    Broken("read_ignores_offset", _doc(ReadIgnoresOffset), ReadIgnoresOffset, only=("CAP-020",)),
    Broken("follow_from_the_end", _doc(FollowFromTheEnd), FollowFromTheEnd, only=("CAP-021",)),
    Broken("reads_last_rank", _doc(ReadsLastRank), ReadsLastRank, only=("CAP-023",)),
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
gate_takes_any_job_label = _factory("gate_takes_any_job_label")
find_by_name_prefix = _factory("find_by_name_prefix")
parse_ignores_name = _factory("parse_ignores_name")
adopt_by_labels = _factory("adopt_by_labels")
start_remembers_refs = _factory("start_remembers_refs")
adopt_trusts_name = _factory("adopt_trusts_name")
stock_runtime_unflagged = _factory("stock_runtime_unflagged")
hold_ignores_resource_version = _factory("hold_ignores_resource_version")
env_unescaped = _factory("env_unescaped")
read_ignores_offset = _factory("read_ignores_offset")
follow_from_the_end = _factory("follow_from_the_end")
reads_last_rank = _factory("reads_last_rank")
weakening_judged_on_default = _factory("weakening_judged_on_default")
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
preemption_read_as_evicted = _factory("preemption_read_as_evicted")
eviction_read_as_preempted = _factory("eviction_read_as_preempted")
every_quota_wait_is_capacity = _factory("every_quota_wait_is_capacity")
quota_wait_is_unschedulable = _factory("quota_wait_is_unschedulable")
image_pull_is_just_waiting = _factory("image_pull_is_just_waiting")
runtimes_kept_by_name = _factory("runtimes_kept_by_name")
gate_read_once_per_process = _factory("gate_read_once_per_process")

__all__ = [
    "BY_NAME",
    "CATALOGUE",
    "AdoptByLabels",
    "AdoptTrustsName",
    "Broken",
    "DeleteWithoutUid",
    "EnvUnescaped",
    "EveryQuotaWaitIsCapacity",
    "FindByNamePrefix",
    "FollowFromTheEnd",
    "GateReadOncePerProcess",
    "GateTakesAnyJobLabel",
    "HoldIgnoresResourceVersion",
    "ImageDropped",
    "ImagePullIsJustWaiting",
    "JobSetWaitUnbounded",
    "ParseIgnoresName",
    "ReadIgnoresOffset",
    "QuotaWaitIsUnschedulable",
    "ReadsLastRank",
    "ReadyBeforeWrite",
    "ReleaseKeepsExecution",
    "ReleaseLeavesHoldMark",
    "RequeueForgetsRestarts",
    "RuntimesKeptByName",
    "StartRemembersRefs",
    "StockRuntimeUnflagged",
    "OomReadAsItsExitCode",
    "PreemptionReadAsEvicted",
    "EvictionReadAsPreempted",
    "StopTrustsItsRetry",
    "WeakeningJudgedOnDefault",
    "WhereAllowsAnEmptyName",
    "WorkloadConflictGivesUp",
    *BY_NAME,
]
