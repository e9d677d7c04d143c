"""KubeflowBackend: the dispatch SPI over Kubeflow Trainer v2 TrainJobs (DESIGN §11).

The identity check of seed 001 rides on every write: a DELETE carries ``preconditions.uid``,
an update carries the ``resourceVersion`` just read (after the read found the ref's uid and
creationTimestamp exactly: Kubernetes never reuses a uid and never moves
creationTimestamp). A 409 is re-read and judged again, never retried blindly; a reply that
never came (or a 500) is resolved by reading the object back, never by a second create.

"With Kueue" means the adapter was given a ``queue``: its TrainJobs carry Kueue's queue
label, so Kueue owns their suspend; holds and requeues then go through the Workload's
``spec.active``, and the readmission gate gives every admission its execution id.

Calls per operation (``backend.calls`` counts them by request): see docs/decisions.md, "The
Kubeflow adapter (issue 14)", where the figures the tests print are kept.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes import client

from adapters.kubeflow.causes import classify, condition, current_pods
from adapters.kubeflow.env import (
    EXECUTION_BOUND,
    HELPER_ENV,
    execution_patch,
    read_execution,
    trainer_env,
    with_execution,
)
from adapters.kubeflow.holds import HoldNumbers
from adapters.kubeflow.kube import JOBSET, KUEUE, TRAINER, ApiFailure, Kube, LostReply
from adapters.kubeflow.names import (
    ANNOTATION_HOLD,
    LABEL_QUEUE,
    identity_annotations,
    identity_labels,
    job_selector,
    parse_hold,
    parse_identity,
    trainjob_name,
)
from adapters.kubeflow.runtimes import Runtime, Runtimes
from dispatch_core import (
    CORE_EXTENSIONS,
    IMAGE,
    OUTPUT,
    Capability,
    Clock,
    Conflict,
    EncodingError,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    Policy,
    PreflightOptions,
    Rejected,
    RuleKind,
    RuleSupport,
    Source,
    State,
    Support,
    Unsupported,
    WallClock,
)
from dispatch_core.clock import pause

JSON = dict[str, Any]
EXTENSION_NAMESPACE: Final = "kubeflow"
RUNTIME_EXTENSION: Final = "kubeflow.Runtime"
KNOWN_EXTENSIONS: Final = CORE_EXTENSIONS | {RUNTIME_EXTENSION}
"""The core's own (``dispatch.Output`` is refused through OutputPath), ``kubeflow.Runtime``."""
JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL: Final = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL: Final = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
WORKLOAD_JOB_UID: Final = "kueue.x-k8s.io/job-uid"
GATE_CHECK: Final = "dispatch-readmission"
GATE_CONTROLLER: Final = "dispatch.io/readmission-gate"
PROPAGATION: Final = "Foreground"
"""Deletion waits for the JobSet and its pods: stop verifies that the ranks are gone."""
WORKLOAD_PACE: Final = 0.1
"""Seconds of the first pause while a TrainJob's Workload is not there yet, or not yet as a
hold awaits it (doubled after each read, to 8 s): Kueue acts on a write only after it has
answered (it creates the Workload after the TrainJob's create, evicts it after its
deactivation), within moments, so a hold right after a start reads again soon."""
_TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"


def parse_time(text: object) -> datetime:
    """A Kubernetes timestamp (RFC 3339, UTC, whole seconds), strictly."""
    if not isinstance(text, str):
        raise EncodingError(f"timestamp {text!r} is not text")
    try:
        return datetime.strptime(text, _TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise EncodingError(f"timestamp {text!r} is not of the form {_TIME_FORMAT}") from None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (_meta(obj).get("labels") or {}).items()}


def _annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in (_meta(obj).get("annotations") or {}).items()}


def _active(trainjob: Mapping[str, Any]) -> int:
    """Replicated Jobs with active pods, as the TrainJob's ``status.jobsStatus`` mirrors them."""
    total = 0
    for status in (trainjob.get("status") or {}).get("jobsStatus") or []:
        value = status.get("active", 0) if isinstance(status, Mapping) else 0
        total += value if isinstance(value, int) and not isinstance(value, bool) else 1
    return total


def _evictions(workload: Mapping[str, Any] | None) -> int:
    """The Workload's evictions so far (``status.schedulingStats.evictions[].count`` summed)."""
    total = 0
    stats = ((workload or {}).get("status") or {}).get("schedulingStats") or {}
    for entry in stats.get("evictions") or []:
        count = entry.get("count", 0) if isinstance(entry, Mapping) else 0
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            total += count
    return total


def _deactivation_done(workload: JSON) -> bool:
    """Kueue has acted on the Workload's deactivation (``Evicted=True``, its eviction counted),
    or someone has reactivated it since."""
    active = (workload.get("spec") or {}).get("active")
    return active is not False or condition(workload, "Evicted") is not None


class KubeflowBackend:
    """A dispatch backend over one Kubernetes namespace's TrainJobs.

    ``api_client``: a ``kubernetes.client.ApiClient`` (from a kubeconfig); ``namespace``: where
    the TrainJobs live; ``cluster``: the name in every ObjectRef; ``queue``: a Kueue LocalQueue
    (None: no Kueue); ``allow_rank_restart``: the site opt-in that accepts runtimes whose
    failed ranks rerun under the identity they had. ``default_runtime``: the runtime of a spec
    without ``kubeflow.Runtime``; ``clock`` paces the bounded waits; ``settle`` bounds each.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        namespace: str,
        cluster: str,
        queue: str | None = None,
        allow_rank_restart: bool = False,
        *,
        default_runtime: str = "dispatch-identity",
        clock: Clock | None = None,
        settle: float = 120.0,
        timeout: float = 30.0,
    ) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self.cluster = cluster
        self.queue = queue
        self.allow_rank_restart = allow_rank_restart
        self.default_runtime = default_runtime
        self.clock: Clock = clock if clock is not None else WallClock()
        self.settle = settle
        self.kube = Kube(api_client, timeout=timeout)
        self.runtimes = Runtimes(self.kube, namespace)
        self.holds = HoldNumbers(self.clock)
        self._gate: str | None = None
        self._gate_read = False
        self._probed: dict[Capability, Support] = {}
        self._probed_per_runtime: dict[Capability, Support] = {}
        self._probed_runtime = ""

    @property
    def name(self) -> str:
        return self.cluster

    @property
    def calls(self) -> Counter[str]:
        """Requests made so far, by ``"<verb> <resource>"``."""
        return self.kube.calls

    def reopen(self) -> KubeflowBackend:
        """A second adapter instance on the same cluster, as after a process restart."""
        return KubeflowBackend(
            self.api_client,
            self.namespace,
            self.cluster,
            self.queue,
            self.allow_rank_restart,
            default_runtime=self.default_runtime,
            clock=self.clock,
            settle=self.settle,
            timeout=self.kube.timeout,
        )

    @property
    def kueue(self) -> bool:
        return self.queue is not None

    # -- what a spec names -------------------------------------------------------------------

    def _extension_refusal(self, spec: JobSpec) -> str:
        for key in sorted(spec.extensions):
            namespace = key.split(".", 1)[0]
            if namespace not in ("dispatch", EXTENSION_NAMESPACE):
                return f"extension {key!r} is of namespace {namespace!r}: this adapter is kubeflow"
            if key not in KNOWN_EXTENSIONS:
                return f"extension {key!r} is not one this adapter knows ({RUNTIME_EXTENSION})"
        return ""

    def runtime_of(self, spec: JobSpec | None) -> Runtime:
        """The runtime ``spec`` names (``kubeflow.Runtime``), else the default one."""
        name = self.default_runtime
        if spec is not None:
            name = spec.extensions.get(RUNTIME_EXTENSION, name)
        return self.runtimes.get(name)

    def gate_missing(self) -> str:
        """With Kueue, why the readmission gate does not guard the queue ("" when it does):
        LocalQueue → ClusterQueue → ``admissionChecksStrategy`` lists the gate's
        AdmissionCheck, whose controllerName is the gate's. Read once per instance."""
        if not self.kueue:
            return ""
        if not self._gate_read:
            self._gate = self._read_gate()
            self._gate_read = True
        return self._gate or ""

    def _read_gate(self) -> str:
        try:
            local = self.kube.get(KUEUE, "localqueues", self.namespace, str(self.queue))
            cq_name = str((local.get("spec") or {}).get("clusterQueue", ""))
            cq = self.kube.get(KUEUE, "clusterqueues", None, cq_name)
            strategy = (cq.get("spec") or {}).get("admissionChecksStrategy") or {}
            names = {str(c.get("name")) for c in strategy.get("admissionChecks") or []}
            if GATE_CHECK not in names:
                return (
                    f"with Kueue, ClusterQueue {cq_name} (of LocalQueue {self.queue}) lists no "
                    f"AdmissionCheck {GATE_CHECK}: a readmission would rerun under the identity "
                    "it had (no readmission gate)"
                )
            check = self.kube.get(KUEUE, "admissionchecks", None, GATE_CHECK)
            controller = (check.get("spec") or {}).get("controllerName")
            if controller != GATE_CONTROLLER:
                return (
                    f"AdmissionCheck {GATE_CHECK} names controller {controller!r}, not the "
                    f"readmission gate's {GATE_CONTROLLER}"
                )
        except ApiFailure as failure:
            return f"with Kueue, the readmission gate could not be found: {failure}"
        except LostReply as lost:
            raise OutcomeUnknown(
                f"{self.name}: reading the queue's admission checks: {lost}"
            ) from None
        return ""

    def refusal(self, spec: JobSpec) -> str:
        """Why ``spec`` cannot be submitted here with its execution identity kept, or ""."""
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
        if runtime.weakening and not self.allow_rank_restart:
            return f"{runtime.weakened()} (allow_rank_restart is off)"
        return self.gate_missing()

    # -- capabilities and rules --------------------------------------------------------------

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        runtime: Runtime | None = None
        missing = ""
        try:
            runtime = self.runtime_of(spec)
        except Unsupported as error:
            missing = str(error)

        def per_runtime(answer: Callable[[Runtime], Support]) -> Support:
            return answer(runtime) if runtime is not None else Support.no(missing)

        refusal = self.refusal(spec) if spec is not None else ""
        if spec is None:
            refusal = missing or (runtime.injection_gap() if runtime else "")
            if (
                not refusal
                and runtime is not None
                and runtime.weakening
                and not self.allow_rank_restart
            ):
                refusal = f"{runtime.weakened()} (allow_rank_restart is off)"
            refusal = refusal or self.gate_missing()
        injection = (
            Support.no(refusal)
            if refusal
            else Support.yes(
                "DISPATCH_ variables as Trainer env: static values literal, the execution "
                "from dispatch's runtime patch and JobSet's restart-attempt (downward API)"
                + (", each readmission's through the readmission gate" if self.kueue else "")
            )
        )
        gate = self.gate_missing() if self.kueue else ""
        answers = {
            Capability.CONTAINER_IMAGE: per_runtime(Runtime.container_image),
            Capability.NATIVE_REQUEUE: (
                Support.yes("Kueue requeues an evicted Workload (the same TrainJob)")
                if self.kueue
                else Support.no("without Kueue nothing requeues a TrainJob by itself")
            ),
            Capability.NATIVE_RESTART: per_runtime(Runtime.native_restart),
            Capability.HOLD: Support.yes(
                "annotation dispatch/hold, with the Workload's spec.active=false"
                if self.kueue
                else "annotation dispatch/hold and spec.suspend=true in one update"
            ),
            Capability.PRE_TERMINATION_SIGNAL: Support(
                value="yes",
                source=Source.CATALOGUE,
                reason="SIGTERM, then the pod's terminationGracePeriodSeconds (30 s by default)",
            ),
            Capability.ACCOUNTING_HISTORY: Support.no(
                "a deleted TrainJob is gone, with its JobSet and pods"
            ),
            Capability.ATTEMPT_INJECTION: injection,
            Capability.READMISSION_GATE: (
                Support.no(gate)
                if gate
                else Support.yes(f"AdmissionCheck {GATE_CHECK} on the queue's ClusterQueue")
                if self.kueue
                else Support.no("no Kueue: the adapter writes each execution itself")
            ),
            Capability.WORKING_DIRECTORY: Support.no(
                "a TrainJob and its runtime patches have no workingDir, and a shell wrapper "
                "would assume /bin/sh in the image"
            ),
            Capability.PROCS_PER_NODE: per_runtime(Runtime.procs_per_node),
            Capability.OUTPUT_PATH: Support.no(
                "output is the pods' logs; a TrainJob names no file"
            ),
            Capability.OUTPUT_READ: Support.yes("the pod log of rank 0's node container"),
            Capability.OUTPUT_FOLLOW: Support.yes("the pod log of rank 0's node container"),
            Capability.OUTPUT_RETAINED: Support.no("pod logs go with their pods"),
        }
        answers.update(self._probed)
        if runtime is not None and runtime.name == self._probed_runtime:
            # The preflight probed the default runtime: the same answer, now from the probe.
            for cap, seen in self._probed_per_runtime.items():
                if answers[cap].value == seen.value:
                    answers[cap] = seen
        return answers

    def rules(self, policy: Policy) -> list[RuleSupport]:
        try:
            restart = self.runtime_of(None).native_restart()
        except Unsupported as error:
            restart = Support.no(str(error))
        requeue = (
            Support.no(
                "a requeue rule follows a failure, and a failed TrainJob's Workload is Finished: "
                "Kueue readmits it no more (requeue() reruns a running one)"
            )
            if self.kueue
            else Support.yes(
                "suspend, a new JobSet if the old one ended, a new execution and resume: the "
                "same TrainJob"
            )
        )
        answers = {
            RuleKind.RESUBMIT: Support.yes("a new TrainJob for the next submission"),
            RuleKind.HOLD: Support.yes("a numbered hold"),
            RuleKind.ESCALATE: Support.yes("reported to the supervisor"),
            RuleKind.REQUEUE: requeue,
            RuleKind.RESTART: restart,
        }
        return [RuleSupport(perform=answers[rule.kind]) for rule in policy.rules]

    def identity_weakened(self, spec: JobSpec) -> str:
        """Why ``spec``'s runtime reruns a failed rank under the identity it had, or ""."""
        return self.runtime_of(spec).weakened()

    def own_retries(self, spec: JobSpec) -> str:
        """Why the scheduler reruns ``spec``'s job unasked (JobSet maxRestarts, rank reruns)."""
        return self.runtime_of(spec).own_retries()

    # -- start --------------------------------------------------------------------------------

    def _redact(self, text: str, spec: JobSpec) -> str:
        for key in spec.secret_env:
            value = spec.env.get(key, "")
            if value:
                text = text.replace(value.replace("$", "$$"), "<secret>")
                text = text.replace(value, "<secret>")
        return text

    def trainjob(self, plan: Plan, submission: int, attempt: int) -> JSON:
        """The TrainJob of submission ``submission`` of ``plan``'s job (refused specs raise
        Unsupported)."""
        spec = plan.spec
        why = self.refusal(spec)
        if why:
            raise Unsupported(f"{self.name}: {why}")
        runtime = self.runtime_of(spec)
        if OUTPUT in spec.extensions:
            raise Unsupported(
                f"{self.name}: {self.capabilities(spec)[Capability.OUTPUT_PATH].reason}"
            )
        if spec.work_dir is not None:
            raise Unsupported(
                f"{self.name}: {self.capabilities(spec)[Capability.WORKING_DIRECTORY].reason}"
            )
        if spec.procs_per_node and runtime.procs_per_node().value != "yes":
            raise Unsupported(f"{self.name}: {runtime.procs_per_node().reason}")
        clash = sorted(set(spec.env) & set(HELPER_ENV))
        if clash:
            raise Unsupported(f"{self.name}: env {', '.join(clash)} is the adapter's own")
        name = trainjob_name(plan.job, submission)
        trainer: JSON = {
            "numNodes": spec.nodes,
            "command": list(spec.command),
            "env": trainer_env(plan.job, submission, name, spec.env),
        }
        if IMAGE in spec.extensions:
            trainer["image"] = spec.extensions[IMAGE]
        if spec.procs_per_node:
            trainer["numProcPerNode"] = spec.procs_per_node
        labels = identity_labels(plan.job, submission)
        if self.queue is not None:
            labels[LABEL_QUEUE] = self.queue
        return {
            "apiVersion": f"{TRAINER[0]}/{TRAINER[1]}",
            "kind": "TrainJob",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": labels,
                "annotations": identity_annotations(attempt),
            },
            "spec": {
                "runtimeRef": dict(runtime.ref),
                "trainer": trainer,
                "runtimePatches": [execution_patch(runtime.replicated_jobs, 1)],
            },
        }

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        if plan.backend != self.name:
            raise Rejected(f"the plan was made for {plan.backend!r}, not {self.name!r}")
        body = self.trainjob(plan, submission, attempt)
        name = str(body["metadata"]["name"])
        try:
            made = self.kube.create(TRAINER, "trainjobs", self.namespace, body)
        except ApiFailure as failure:
            if failure.status == 409:
                return self._adopt(plan, submission, attempt, name, "it exists already")
            if failure.status >= 500:
                return self._adopt(
                    plan, submission, attempt, name, f"the create got {failure.status}"
                )
            message = self._redact(failure.message, plan.spec)
            raise Rejected(
                f"{self.name}: the TrainJob {name} was refused: {failure.status} {message}"
            ) from None
        except LostReply:
            return self._adopt(plan, submission, attempt, name, "the create's reply was lost")
        return self._ref(made)

    def _adopt(self, plan: Plan, submission: int, attempt: int, name: str, why: str) -> ObjectRef:
        """The create's outcome is read back and judged, never created again."""
        try:
            obj = self.kube.get(TRAINER, "trainjobs", self.namespace, name)
        except ApiFailure as failure:
            if failure.status == 404:
                raise OutcomeUnknown(
                    f"{self.name}: {why}, and TrainJob {name} is not there (now): find again "
                    "before submitting anew"
                ) from None
            raise OutcomeUnknown(f"{self.name}: {why}; reading {name} back: {failure}") from None
        except LostReply as lost:
            raise OutcomeUnknown(f"{self.name}: {why}; reading {name} back: {lost}") from None
        try:
            found = parse_identity(name, _labels(obj), _annotations(obj))
        except EncodingError as error:
            raise Conflict(
                f"{self.name}: TrainJob {name} holds the name but not dispatch's identity ({error})"
            ) from None
        if (found.job, found.submission) != (plan.job, submission):
            raise Conflict(f"{self.name}: TrainJob {name} is another job's or submission's")
        if found.attempt != attempt:
            raise Conflict(
                f"{self.name}: TrainJob {name} is submission {submission} of attempt "
                f"{found.attempt}, not {attempt}"
            )
        return self._ref(obj)

    # -- reading -------------------------------------------------------------------------------

    def _ref(self, obj: Mapping[str, Any]) -> ObjectRef:
        meta = _meta(obj)
        try:
            submit = parse_time(meta.get("creationTimestamp"))
        except EncodingError as error:
            raise OutcomeUnknown(f"{self.name}: an unreadable TrainJob: {error}") from None
        return ObjectRef(
            backend=self.name,
            uid=str(meta.get("uid", "")),
            id=f"{meta.get('namespace', self.namespace)}/{meta.get('name', '')}",
            submit=submit,
        )

    def _where(self, ref: ObjectRef) -> tuple[str, str]:
        if ref.backend != self.name:
            raise NotFound(f"{ref.id} belongs to cluster {ref.backend!r}, not {self.name!r}")
        namespace, sep, name = ref.id.partition("/")
        if not sep or not namespace or not name or "/" in name:
            raise NotFound(f"{self.name}: {ref.id!r} is not namespace/name")
        return namespace, name

    def _read(self, ref: ObjectRef) -> JSON:
        """The TrainJob ``ref`` names, after the identity check (uid and creationTimestamp
        exactly); NotFound when it is gone or another object holds the name."""
        namespace, name = self._where(ref)
        try:
            obj = self.kube.get(TRAINER, "trainjobs", namespace, name)
        except ApiFailure as failure:
            if failure.status == 404:
                raise NotFound(f"{self.name}: TrainJob {ref.id} is gone") from None
            raise OutcomeUnknown(f"{self.name}: reading {ref.id}: {failure}") from None
        except LostReply as lost:
            raise OutcomeUnknown(f"{self.name}: reading {ref.id}: {lost}") from None
        meta = _meta(obj)
        if meta.get("uid") != ref.uid:
            raise NotFound(f"{self.name}: {ref.id} is now uid {meta.get('uid')!r}, not {ref.uid!r}")
        if self._ref(obj).submit != ref.submit:
            raise NotFound(
                f"{self.name}: {ref.id} was created at {meta.get('creationTimestamp')}, "
                f"not {ref.submit.isoformat()}"
            )
        return obj

    def _read_quiet(self, what: str, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except ApiFailure as failure:
            if failure.status == 404:
                return None
            raise OutcomeUnknown(f"{self.name}: reading {what}: {failure}") from None
        except LostReply as lost:
            raise OutcomeUnknown(f"{self.name}: reading {what}: {lost}") from None

    def _pods(self, namespace: str, name: str) -> list[JSON]:
        found = self._read_quiet(
            f"the pods of {name}",
            lambda: self.kube.pods(namespace, f"{JOBSET_NAME_LABEL}={name}"),
        )
        return list(found or [])

    def _workload(self, obj: Mapping[str, Any]) -> JSON | None:
        meta = _meta(obj)
        namespace = str(meta.get("namespace", self.namespace))
        found = self._read_quiet(
            f"the Workload of {meta.get('name')}",
            lambda: self.kube.list_objects(
                KUEUE, "workloads", namespace, f"{WORKLOAD_JOB_UID}={meta.get('uid')}"
            ),
        )
        return dict(found[0]) if found else None

    def _restarts(self, obj: Mapping[str, Any]) -> int:
        """JobSet ``status.restarts`` of the TrainJob's own JobSet (owner uid checked)."""
        meta = _meta(obj)
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        jobset = self._read_quiet(
            f"the JobSet {name}", lambda: self.kube.get(JOBSET, "jobsets", namespace, name)
        )
        if not jobset:
            return 0
        owners = _meta(jobset).get("ownerReferences") or []
        if not any(o.get("uid") == meta.get("uid") for o in owners if isinstance(o, Mapping)):
            return 0
        value = (jobset.get("status") or {}).get("restarts", 0)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    def _observe(self, obj: Mapping[str, Any], *, restarts: bool = True) -> Observation:
        meta = _meta(obj)
        name = str(meta.get("name", ""))
        namespace = str(meta.get("namespace", self.namespace))
        annotations = _annotations(obj)
        details: list[str] = []
        foreign = False
        submission = attempt = execution = None
        try:
            found = parse_identity(name, _labels(obj), annotations)
            submission, attempt = found.submission, found.attempt
            execution = read_execution(obj)
        except EncodingError as error:
            foreign = True
            submission = attempt = None
            details.append(f"not dispatch's: {error}")
        hold: int | None = None
        try:
            hold = parse_hold(annotations)
        except EncodingError as error:
            details.append(f"{ANNOTATION_HOLD}: {error}")
        pods: list[JSON] = []
        workload: JSON | None = None
        restart_count: int | None = None
        if not foreign:
            pods = self._pods(namespace, name)
            if self.kueue:
                workload = self._workload(obj)
                if hold is not None and (workload or {}).get("spec", {}).get("active") is not False:
                    hold = None  # annotated, the Workload not (yet) deactivated: no hold yet
            elif (obj.get("spec") or {}).get("suspend") is not True:
                hold = None
            if restarts and execution is not None:
                executions = execution - 1
                if self.kueue:
                    # The gate bumps at each admission (the first makes 2); an eviction is
                    # counted at once, before its readmission bumps.
                    executions = max(execution - 2, _evictions(workload), 0)
                restart_count = executions + self._restarts(obj)
        verdict = classify(obj, pods, hold=hold, kueue=self.kueue, workload=workload)
        if verdict.state is not State.HELD:
            hold = None
        if verdict.detail:
            details.insert(0, verdict.detail)
        if execution is not None:
            details.append(f"execution {execution}")
        return Observation(
            ref=self._ref(obj),
            state=verdict.state,
            cause=verdict.cause,
            submission=submission,
            attempt=attempt,
            restart_count=restart_count,
            exit_code=verdict.exit_code,
            hold=hold,
            foreign=foreign,
            detail="; ".join(details),
        )

    def find(self, job_id: JobID) -> list[Observation]:
        try:
            items = self.kube.list_objects(
                TRAINER, "trainjobs", self.namespace, job_selector(job_id)
            )
        except (ApiFailure, LostReply) as error:
            raise OutcomeUnknown(
                f"{self.name}: listing the TrainJobs of {job_id}: {error}"
            ) from None
        return [
            self._observe(obj) for obj in items if _labels(obj).get("dispatch/job") == str(job_id)
        ]

    def open(self, ref: ObjectRef) -> Observation:
        return self._observe(self._read(ref))

    # -- stop ----------------------------------------------------------------------------------

    def stop(self, ref: ObjectRef) -> None:
        """DELETE with ``preconditions.uid`` (Foreground: the TrainJob stays, cancelled, until its
        JobSet and pods are gone), then read until it is gone, within ``settle`` seconds; past
        that the deletion still stands (``deletionTimestamp`` set: open shows it cancelled)."""
        try:
            namespace, name = self._where(ref)
        except NotFound:
            return
        if not self._delete(ref, namespace, name):
            return
        waited, step = 0.0, 1.0
        retried = False
        while True:
            obj = self._read_quiet(
                ref.id, lambda: self.kube.get(TRAINER, "trainjobs", namespace, name)
            )
            if obj is None or _meta(obj).get("uid") != ref.uid:
                return
            if not _meta(obj).get("deletionTimestamp"):
                # The delete did not land (a 500, or a lost reply before its effect): the API
                # server marks a Foreground deletion within the request, so once more, then
                # OutcomeUnknown (the object is still running, no deletion stands).
                if retried:
                    raise OutcomeUnknown(
                        f"{self.name}: the deletion of {ref.id} did not land, tried twice"
                    )
                retried = True
                if not self._delete(ref, namespace, name):
                    return
                continue
            if waited >= self.settle:
                # Accepted and irrevocable: open shows it cancelled while the last pods
                # (say, on a lost node, which stay Terminating until it goes) are removed.
                return
            pause(self.clock, step)
            waited += step
            step = min(step * 2, 8.0)

    def _delete(self, ref: ObjectRef, namespace: str, name: str) -> bool:
        """One DELETE; False when there is nothing (left) to cancel."""
        try:
            self.kube.delete(TRAINER, "trainjobs", namespace, name, ref.uid, PROPAGATION)
        except ApiFailure as failure:
            if failure.status == 404:
                return False
            if failure.status == 409:
                # The uid precondition failed, or the object changed: re-read and judge.
                obj = self._read_quiet(
                    ref.id, lambda: self.kube.get(TRAINER, "trainjobs", namespace, name)
                )
                return obj is not None and _meta(obj).get("uid") == ref.uid
            if failure.status < 500:
                raise OutcomeUnknown(f"{self.name}: deleting {ref.id}: {failure}") from None
        except LostReply:
            pass  # a lost reply is no verdict: the read-back that follows decides
        return True

    # -- writes by update ----------------------------------------------------------------------

    def _update(
        self,
        ref: ObjectRef,
        obj: JSON,
        change: Callable[[JSON], None],
        landed: Callable[[JSON], bool],
        judge: Callable[[JSON], None],
        what: str,
    ) -> JSON:
        """PUT ``change(obj)`` carrying ``obj``'s resourceVersion; on a 409, a 500 or a lost
        reply the object is re-read (identity checked), ``landed`` decides success, ``judge``
        raises when the write no longer applies, and the write is made once more at most."""
        namespace, name = self._where(ref)
        for _ in range(2):
            body = copy.deepcopy(obj)
            change(body)
            try:
                return self.kube.replace(TRAINER, "trainjobs", namespace, name, body)
            except ApiFailure as failure:
                if failure.status == 404:
                    raise NotFound(
                        f"{self.name}: TrainJob {ref.id} went before the {what}"
                    ) from None
                if failure.status in (403, 422):
                    raise Rejected(
                        f"{self.name}: the {what} of {ref.id} was refused: {failure.message}"
                    ) from None
                if failure.status != 409 and failure.status < 500:
                    raise OutcomeUnknown(
                        f"{self.name}: the {what} of {ref.id}: {failure}"
                    ) from None
            except LostReply:
                pass  # a lost reply is no verdict: the read-back that follows decides
            obj = self._read(ref)
            if landed(obj):
                return obj
            judge(obj)
        raise OutcomeUnknown(f"{self.name}: the {what} of {ref.id} did not land after a re-read")

    def _workload_active(
        self, ref: ObjectRef, obj: Mapping[str, Any], active: bool, what: str
    ) -> None:
        """Set the TrainJob's Workload ``spec.active`` (with its resourceVersion; a 409 or a
        lost reply re-read and judged once)."""
        for _ in range(2):
            workload = self._await_workload(ref, obj, what)
            if (workload.get("spec") or {}).get("active", True) is active:
                return
            body = copy.deepcopy(workload)
            body.setdefault("spec", {})["active"] = active
            meta = _meta(workload)
            try:
                self.kube.replace(
                    KUEUE, "workloads", str(meta.get("namespace")), str(meta.get("name")), body
                )
                return
            except ApiFailure as failure:
                if failure.status != 409 and failure.status < 500:
                    raise OutcomeUnknown(f"{self.name}: {what}: the Workload: {failure}") from None
            except LostReply:
                pass  # a lost reply is no verdict: the read-back that follows decides
        raise OutcomeUnknown(
            f"{self.name}: {what}: the Workload's spec.active={active} did not land"
        )

    def _await_workload(
        self,
        ref: ObjectRef,
        obj: Mapping[str, Any],
        what: str,
        until: Callable[[JSON], bool] | None = None,
        awaited: str = "made none",
    ) -> JSON:
        """The TrainJob's Workload, once ``until`` holds of it. Kueue's controllers act after
        the write that moves them has answered: its job reconciler creates the Workload once
        the TrainJob's create has (it reacts to the TrainJob's event, jobframework
        reconciler.go), so a hold right after start may find none yet, and its Workload
        controller evicts a Workload after its deactivation. The TrainJob is read again
        (NotFound once it is gone) and its Workload looked at, within ``settle``."""
        waited, step = 0.0, WORKLOAD_PACE
        while True:
            workload = self._workload(obj)
            if workload is not None and (until is None or until(workload)):
                return workload
            if waited >= self.settle:
                found = "has no Workload" if workload is None else "has a Workload Kueue"
                raise OutcomeUnknown(
                    f"{self.name}: {what}: TrainJob {ref.id} {found} "
                    f"(Kueue {awaited} within {self.settle:.0f} s)"
                )
            pause(self.clock, step)
            waited += step
            step = min(step * 2, 8.0)
            obj = self._read(ref)

    def _wait(self, ref: ObjectRef, until: Callable[[JSON], bool], what: str) -> JSON:
        """Re-read the TrainJob until ``until`` holds, within ``settle`` seconds of the clock."""
        waited, step = 0.0, 1.0
        while True:
            obj = self._read(ref)
            if until(obj):
                return obj
            if waited >= self.settle:
                raise OutcomeUnknown(
                    f"{self.name}: {ref.id} did not come {what} within {self.settle:.0f} s"
                )
            pause(self.clock, step)
            waited += step
            step = min(step * 2, 8.0)

    # -- Holder --------------------------------------------------------------------------------

    def _mine(self, ref: ObjectRef, seen: Observation, what: str) -> None:
        if seen.foreign:
            raise Rejected(f"{self.name}: {ref.id} is not dispatch's ({seen.detail}): no {what}")

    def hold(self, ref: ObjectRef) -> int:
        obj = self._read(ref)
        seen = self._observe(obj, restarts=False)
        self._mine(ref, seen, "hold")
        if seen.state not in (State.QUEUED, State.HELD):
            raise Rejected(f"{self.name}: {ref.id} is {seen.state}; only a queued object is held")
        if self.kueue and (obj.get("spec") or {}).get("suspend") is not True:
            raise Rejected(f"{self.name}: {ref.id} is admitted; only a queued object is held")
        try:
            current = parse_hold(_annotations(obj))
        except EncodingError:
            current = None
        number = self.holds.next(current)

        def change(body: JSON) -> None:
            body["metadata"].setdefault("annotations", {})[ANNOTATION_HOLD] = str(number)
            if not self.kueue:
                body["spec"]["suspend"] = True

        def landed(now: JSON) -> bool:
            marked = _annotations(now).get(ANNOTATION_HOLD) == str(number)
            return marked and (self.kueue or (now.get("spec") or {}).get("suspend") is True)

        def judge(now: JSON) -> None:
            again = self._observe(now, restarts=False)
            if again.state not in (State.QUEUED, State.HELD):
                raise Rejected(f"{self.name}: {ref.id} started before the hold landed")

        written = self._update(ref, obj, change, landed, judge, f"hold {number}")
        if self.kueue:
            self._workload_active(ref, written, False, f"hold {number} (annotated)")
            # Kueue evicts the deactivated Workload (counted in its schedulingStats, which the
            # restart count reads) after the write: the hold answers once it has, so that what
            # open shows of the held object stays as it is until someone acts on it.
            self._await_workload(
                ref,
                written,
                f"hold {number} (deactivated)",
                _deactivation_done,
                "evicted none",
            )
        return number

    def release(self, ref: ObjectRef, hold: int) -> None:
        obj = self._read(ref)
        try:
            carried = parse_hold(_annotations(obj))
        except EncodingError as error:
            raise Conflict(f"{self.name}: {ref.id} carries no readable hold ({error})") from None
        if carried is None:
            raise Conflict(f"{self.name}: {ref.id} carries no hold (asked to release {hold})")
        if carried != hold:
            raise Conflict(f"{self.name}: {ref.id} carries hold {carried}, not {hold}")
        if self.kueue:
            self._workload_active(ref, obj, True, f"release {hold}")

            def drop(body: JSON) -> None:
                body["metadata"].get("annotations", {}).pop(ANNOTATION_HOLD, None)

            def gone(now: JSON) -> bool:
                return ANNOTATION_HOLD not in _annotations(now)

            def still(now: JSON) -> None:
                if _annotations(now).get(ANNOTATION_HOLD) != str(hold):
                    raise Conflict(f"{self.name}: {ref.id} now carries another hold")

            self._update(ref, obj, drop, gone, still, f"release {hold}")
            return
        if (obj.get("spec") or {}).get("suspend") is not True:
            raise Conflict(f"{self.name}: {ref.id} carries hold {hold} but is not suspended")
        self._resume(ref, obj, f"release {hold}", hold)

    def _resume(
        self, ref: ObjectRef, obj: JSON, what: str, hold: int | None, step: int = 1
    ) -> None:
        """Without Kueue: once no replicatedJob is active, one update bumps the execution,
        drops the hold and unsuspends (the webhook allows it: suspended before the update)."""
        obj = obj if _active(obj) == 0 else self._wait(ref, lambda o: _active(o) == 0, "inactive")
        try:
            execution = read_execution(obj)
        except EncodingError as error:
            raise Rejected(f"{self.name}: {ref.id}: {error}") from None
        if execution + step >= EXECUTION_BOUND:
            raise Unsupported(f"{self.name}: {ref.id} has used every execution id")

        def change(body: JSON) -> None:
            with_execution(body, execution + step)
            body["metadata"].get("annotations", {}).pop(ANNOTATION_HOLD, None)
            body["spec"]["suspend"] = False

        def landed(now: JSON) -> bool:
            try:
                bumped = read_execution(now) == execution + step
            except EncodingError:
                return False
            return bumped and (now.get("spec") or {}).get("suspend") is not True

        def judge(now: JSON) -> None:
            if hold is not None and _annotations(now).get(ANNOTATION_HOLD) != str(hold):
                raise Conflict(f"{self.name}: {ref.id} no longer carries hold {hold}")
            if (now.get("spec") or {}).get("suspend") is not True:
                raise OutcomeUnknown(f"{self.name}: {ref.id} was resumed by someone else")

        self._update(ref, obj, change, landed, judge, what)

    # -- Requeuer ------------------------------------------------------------------------------

    def requeue(self, ref: ObjectRef) -> None:
        obj = self._read(ref)
        seen = self._observe(obj, restarts=False)
        self._mine(ref, seen, "requeue")
        suspended = (obj.get("spec") or {}).get("suspend") is True
        # Suspended, carrying no hold, not ended: a requeue cut after its first step (ours, or an
        # administrator's suspension), which this requeue completes (with Kueue: reactivates).
        resuming = suspended and seen.hold is None and not seen.state.ended
        if self.kueue:
            workload = self._workload(obj) if resuming else None
            if workload is not None and (workload.get("spec") or {}).get("active") is False:
                self._workload_active(ref, obj, True, "requeue (reactivate after a cut)")
                return
            if seen.state is not State.RUNNING:
                raise Rejected(
                    f"{self.name}: {ref.id} is {seen.state}; only a started object is requeued"
                )
            self._workload_active(ref, obj, False, "requeue (deactivate)")
            try:
                self._wait(
                    ref,
                    lambda o: (o.get("spec") or {}).get("suspend") is True and _active(o) == 0,
                    "suspended by Kueue",
                )
                self._workload_active(ref, obj, True, "requeue (reactivate)")
            except (OutcomeUnknown, Rejected) as error:
                raise OutcomeUnknown(
                    f"{self.name}: requeue of {ref.id} cut after its deactivation: {error}"
                ) from None
            return
        failed = seen.state is State.FAILED
        if seen.state is not State.RUNNING and not resuming and not failed:
            raise Rejected(
                f"{self.name}: {ref.id} is {seen.state}; only a started object is requeued"
            )
        if not resuming:

            def suspend(body: JSON) -> None:
                body["spec"]["suspend"] = True

            def landed(now: JSON) -> bool:
                return (now.get("spec") or {}).get("suspend") is True

            def judge(now: JSON) -> None:
                state = self._observe(now, restarts=False).state
                if state.ended and not (failed and state is State.FAILED):
                    raise Rejected(f"{self.name}: {ref.id} ended before the requeue landed")

            obj = self._update(ref, obj, suspend, landed, judge, "requeue (suspend)")
        try:
            step = 1 + self._drop_finished_jobset(ref, obj)
            self._resume(ref, obj, "requeue (resume)", None, step)
        except (OutcomeUnknown, Rejected) as error:
            raise OutcomeUnknown(
                f"{self.name}: {ref.id} was suspended for the requeue, then: {error}"
            ) from None

    def _drop_finished_jobset(self, ref: ObjectRef, obj: Mapping[str, Any]) -> int:
        """A failed TrainJob's JobSet is terminal: it is deleted (its uid as precondition,
        Foreground) while the TrainJob is suspended, so the Trainer makes a new one on resume.
        Its restarts are returned: the execution then grows by one more than they, so that
        restart_count (execution + restarts) still rises although the new JobSet starts at 0."""
        namespace, name = self._where(ref)
        jobset = self._read_quiet(
            f"the JobSet {name}", lambda: self.kube.get(JOBSET, "jobsets", namespace, name)
        )
        if not jobset:
            return 0
        meta = _meta(jobset)
        owners = meta.get("ownerReferences") or []
        if not any(o.get("uid") == ref.uid for o in owners if isinstance(o, Mapping)):
            return 0
        status = jobset.get("status") or {}
        if not status.get("terminalState") and condition(jobset, "Failed") is None:
            return 0
        restarts = status.get("restarts", 0)
        restarts = restarts if isinstance(restarts, int) and not isinstance(restarts, bool) else 0
        uid = str(meta.get("uid"))
        try:
            self.kube.delete(JOBSET, "jobsets", namespace, name, uid, PROPAGATION)
        except ApiFailure as failure:
            if failure.status not in (404, 409) and failure.status < 500:
                raise OutcomeUnknown(f"{self.name}: deleting JobSet {name}: {failure}") from None
        except LostReply:
            pass  # a lost reply is no verdict: the read-back that follows decides
        waited, pace = 0.0, 1.0
        while True:
            left = self._read_quiet(
                f"the JobSet {name}", lambda: self.kube.get(JOBSET, "jobsets", namespace, name)
            )
            if not left or _meta(left).get("uid") != uid:
                return max(0, restarts)
            if waited >= self.settle:
                raise OutcomeUnknown(f"{self.name}: JobSet {name} did not go within the bound")
            pause(self.clock, pace)
            waited += pace
            pace = min(pace * 2, 8.0)

    # -- OutputReader --------------------------------------------------------------------------

    def _rank0(self, ref: ObjectRef) -> tuple[str, Mapping[str, Any] | None, JSON]:
        obj = self._read(ref)
        namespace, name = self._where(ref)
        runtime_name = str(((obj.get("spec") or {}).get("runtimeRef") or {}).get("name", ""))
        runtime = self.runtimes.get(runtime_name)
        pods = current_pods(
            [
                p
                for p in self._pods(namespace, name)
                if _labels(p).get(REPLICATED_JOB_LABEL) == runtime.trainer_job
                and _labels(p).get(JOB_INDEX_LABEL, "0") == "0"
                and (_annotations(p).get(COMPLETION_INDEX) or _labels(p).get(COMPLETION_INDEX))
                == "0"
            ]
        )
        pods.sort(key=lambda p: str(_meta(p).get("creationTimestamp", "")))
        return namespace, (pods[-1] if pods else None), obj

    def read_output(self, ref: ObjectRef, offset: int = 0) -> bytes:
        """Rank 0's ``node`` container log from byte ``offset``; NotFound when it is gone."""
        namespace, pod, _ = self._rank0(ref)
        if pod is None:
            raise NotFound(f"{self.name}: {ref.id} has no rank-0 pod (now)")
        return self._log(namespace, pod)[offset:]

    def _log(self, namespace: str, pod: Mapping[str, Any]) -> bytes:
        name = str(_meta(pod).get("name"))
        try:
            return self.kube.log(namespace, name, "node")
        except ApiFailure as failure:
            if failure.status == 404:
                raise NotFound(f"{self.name}: pod {name} is gone") from None
            if failure.status == 400:
                return b""  # the container has not started
            raise OutcomeUnknown(f"{self.name}: the log of {name}: {failure}") from None
        except LostReply as lost:
            raise OutcomeUnknown(f"{self.name}: the log of {name}: {lost}") from None

    def follow_output(self, ref: ObjectRef) -> Iterator[bytes]:
        """Rank 0's log as it is written, until the TrainJob ends or is gone."""
        offset = 0
        while True:
            try:
                namespace, pod, obj = self._rank0(ref)
            except NotFound:
                return
            if pod is not None:
                chunk = self._log(namespace, pod)[offset:]
                offset += len(chunk)
                if chunk:
                    yield chunk
            if self._observe(obj, restarts=False).state.ended:
                return
            pause(self.clock, 1.0)

    # -- Preflight -----------------------------------------------------------------------------

    def preflight(self, options: PreflightOptions | None = None) -> dict[Capability, Support]:
        """Probe the cluster (runtimes, Kueue, the gate, pod logs); every answer ``probed``."""
        from adapters.kubeflow.preflight import kept, run_preflight

        answers = run_preflight(self, options if options is not None else PreflightOptions())
        self._probed = kept(answers)
        self._probed_per_runtime = {c: a for c, a in answers.items() if c not in self._probed}
        self._probed_runtime = self.default_runtime
        return answers


__all__ = ["KubeflowBackend", "parse_time"]
