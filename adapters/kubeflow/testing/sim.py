"""The Kubeflow adapter on the Kubernetes simulator: the ``kubeflow-sim`` and
``kubeflow-sim-kueue`` harnesses.

- ``kubeflow-sim``: :class:`~adapters.kubeflow.KubeflowBackend` on a fresh
  :class:`~simulators.kubernetes.KubeSim` per backend (four nodes, the stock runtimes,
  ``dispatch-identity`` and the harness's ``dispatch-restarts``, containers that run until
  something ends them), no Kueue;
- ``kubeflow-sim-kueue``: the same cluster with Kueue, whose ClusterQueue lists the readmission
  gate's AdmissionCheck, and the gate (:class:`~adapters.kubeflow.admission.ReadmissionGate`)
  run in process: it makes a pass whenever the harness moves the clock (before time moves, and
  at every time a controller is due on the way) and before every probe and fault of the
  harness, so it is never late in virtual time. Requests the adapter sends at one instant see
  the cluster as it is at that instant, the gate's next pass not yet made (as a real gate is
  a moment behind a write). The adapter gets ``queue="user-queue"``. The ClusterQueue also
  covers Kueue's ``pods`` resource (:data:`POD_QUOTA`), the one quota a dispatch TrainJob
  holds: a preemption is for a preemptor that takes it (:meth:`SimCluster.preemptor_for`), and
  an administrator requeues by deactivating and reactivating the Workload.

Each simulator is served over HTTP on loopback (its server in a thread, stopped when the check
ends: :meth:`KubeflowSimHarness.end`); the adapter and the gate reach it only through the
official client with the server's kubeconfig, as they reach a real cluster. The client's
requests are answered in process (:class:`~simulators.kubernetes.inprocess.InProcessPool`:
the same requests and answers, without the socket, as the Slurm harnesses run ``sbatch`` in
process); ``over_http=True`` sends them over the loopback connection instead. Faults act as the
scheduler, an administrator or another user would, through the simulator's fault API and its
store (never through the adapter); call faults (a lost reply, a refusal before effect, a race)
are armed on the server for the next matching request the adapter sends.

The harness offers its powers by implementing the protocols of :mod:`conformance.powers`: the
faults on :class:`SimPowers`, each acting on the cluster of the backend it is given, the probes
on :class:`KubeflowSimHarness`. What Kubernetes cannot have is declined with the reason
(:data:`REFUSED`, :meth:`KubeflowSimHarness.declines`): the API server hands out no names (a
name is reused only when someone creates it again), there is no accounting history, a label
value holds no comma, the API server answers a JSON body or nothing (no garbled success), and
it never acknowledges a write it did not store. Its listing (:func:`trainjob_listing`) is the
one ``kubeflow-remote`` reads a real cluster with.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import json
import urllib.parse
import zlib
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from adapters.kubeflow import KubeflowBackend
from adapters.kubeflow.admission import CHECK_NAME, CONTROLLER_NAME, ReadmissionGate
from adapters.kubeflow.backend import RUNTIME_EXTENSION
from adapters.kubeflow.names import trainjob_name
from adapters.kubeflow.testing.lookalikes import (
    ATTEMPT_ANNOTATION,
    COMMA_LIST_WHY,
    JOB_LABEL,
    OTHER_NAMESPACE,
    SUBMISSION_LABEL,
    Form,
    describe,
    dispatch_trainjob,
    look_alike,
    look_alike_forms,
    misnamed_name,
)
from conformance.checks import CheckFailed
from conformance.harness import (
    CLOCK_HOLD_EDGES,
    STALL_BOUND,
    CannotInject,
    Fault,
    Harness,
    IdentityModel,
    Listed,
    LookAlike,
    Lookup,
    Probe,
    Race,
    ReplyLoss,
    Shown,
    advance_to_residue,
    look_alike_need,
    reply_loss_need,
)
from conformance.powers import (
    AsksBeyondCapacity,
    AsksUnpullableImage,
    Evicts,
    FailsBeforeEffect,
    FailsBetweenSteps,
    FailsEveryTry,
    KillsForMemory,
    LosesNodes,
    LosesReplies,
    MakesLookAlikes,
    MovesToHoldEdges,
    ObservesExecutions,
    ObservesImages,
    OpensOtherTargets,
    OtherTarget,
    Preempts,
    PreflightsFree,
    Purges,
    RacesWrites,
    Recreates,
    RequeuesUnderneath,
    RerunsFailures,
    ReusesIds,
    RunsJobs,
    ShowsInventory,
    StallsTeardown,
    TakesIdsAhead,
    TakesQuota,
    TellsUnfired,
    VanishesBeforeReadBack,
    WeakensIdentity,
    WritesNearHolds,
    WritesRankOutput,
)
from dispatch_core import IMAGE, Clock, HoldBound, JobID, JobSpec, ObjectRef, Rejected
from simulators.kubernetes import KubeConfig, KubeSim, QueueConfig
from simulators.kubernetes.behaviour import Behaviour
from simulators.kubernetes.controllers.kubelet import (
    Kubelet,
    Start,
    end_containers,
    starts,
    write_log,
)
from simulators.kubernetes.controllers.kueue import PODS_RESOURCE
from simulators.kubernetes.controllers.kueue import bootstrap as kueue_bootstrap
from simulators.kubernetes.controllers.kueue import has_quota as kueue_has_quota
from simulators.kubernetes.controllers.kueue import is_evicted as kueue_is_evicted
from simulators.kubernetes.controllers.kueue import is_finished as kueue_is_finished
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.faults import FaultError
from simulators.kubernetes.faults import Faults as KubeFaults
from simulators.kubernetes.inprocess import InProcessPool
from simulators.kubernetes.objects import JSON
from simulators.kubernetes.resources import (
    CLUSTERQUEUES,
    CLUSTERTRAININGRUNTIMES,
    JOBSETS,
    LOCALQUEUES,
    PODS,
    RESOURCES,
    TRAININGRUNTIMES,
    TRAINJOBS,
    WORKLOADS,
    ResourceType,
)
from simulators.kubernetes.runtimes import catalogue, dispatch_identity
from simulators.kubernetes.server import Server

NAMESPACE: Final = "default"
QUEUE: Final = "user-queue"
CLUSTER_QUEUE: Final = "cluster-queue"
CLUSTER: Final = "kube-sim"
JOBSET_NAME: Final = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID: Final = "jobset.sigs.k8s.io/jobset-uid"
RESTART_ATTEMPT: Final = "jobset.sigs.k8s.io/restart-attempt"
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
REPLICATED_JOB: Final = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX: Final = "jobset.sigs.k8s.io/job-index"
TRAINER_JOB: Final = "node"
"""The trainer-step replicatedJob of every runtime the harnesses run a job on (the simulator's
catalogue, :mod:`simulators.kubernetes.runtimes`): a rank is its Job 0's pod of that
completion index (kubeflow/trainer v2.3.0 pkg/constants/constants.go: the rank is the
``batch.kubernetes.io/job-completion-index`` annotation; /work/shared/reference/kubeflow-facts.md
§4.3, T10)."""
WEAKENING_RUNTIMES: Final = ("torch-distributed", "jax-distributed")
"""Stock runtimes every cluster of the harnesses has, whose failed ranks rerun under the
identity they had (JobSet's ``OnFailure``, Job's ``backoffLimit: 6``: kubeflow-facts.md §4.2):
:meth:`KubeflowSimHarness.weakening_spec` names the first that is not the adapter's default."""
EXECUTION: Final = "dispatch/execution"
HOLD: Final = "dispatch/hold"
CONTAINER: Final = "node"
NAMED_AS_IMPLIED: Final = frozenset({LookAlike.NEAR_IDENTITY, LookAlike.UNPARSABLE_IDENTITY})
"""The look-alikes named as their labels imply when their submission is valid."""
LOOK_ALIKE_SUBMISSIONS: Final = 900
"""Their submissions start here: numbers no check starts."""
MISNAMED_ZEROS: Final = 32
"""The most leading zeros of a misnamed look-alike's submission in its name: ``dj-<ulid>-``
and the zeros and ``1`` fill a TrainJob name's 63 characters."""
LET_RUN_BOUND: Final = 600
"""Virtual seconds let_run waits for the object's pods to run (a readmission, a pull)."""
SETTLE_BOUND: Final = 1800
"""Virtual seconds a fault waits for what it started to settle (an end, a requeue; a stock
runtime's rank fails seven times with the kubelet's back-off before its Job gives up)."""

KUBE_IDENTITY: Final = IdentityModel(
    lookup=Lookup.LABEL, reuses_ids=True, requeue_moves_submit=False, history_outlives_live=False
)
"""Kubernetes' identity model: found by exact label; a name (``ObjectRef.id`` is
namespace/name) is free for anyone's new object once its own is deleted, though a uid is never
reused; a requeue keeps the creationTimestamp; nothing outlives the live view."""

GARBLED_REPLY: Final = (
    "the API server answers a JSON body or closes the connection: nothing says success and "
    "names nothing"
)
REFUSED: Final[Mapping[str, str]] = {
    Fault.REUSE_ID_NEXT: (
        "the client names each TrainJob: the API server hands out no names, so it gives no "
        "later object a name that was another's"
    ),
    Fault.LOSE_IDENTITY_HISTORY: "no accounting history on Kubernetes",
    Fault.LAG_HISTORY: "no accounting history on Kubernetes",
    Fault.DISABLE_HISTORY: "no accounting history on Kubernetes to switch off",
    Fault.IGNORE_NEXT_STOP: (
        "the API server's delete removes the object or answers it with its deletionTimestamp "
        "set; nothing acknowledges a delete and keeps the object as it was"
    ),
    Fault.IGNORE_NEXT_WRITE: (
        "an update the API server answered 200 is stored: it never acknowledges a write it "
        "did not make"
    ),
    look_alike_need(LookAlike.COMMA_LIST): COMMA_LIST_WHY,
    reply_loss_need(ReplyLoss.GARBLED): GARBLED_REPLY,
    Probe.HOST_PATHS: (
        "the simulated kubelet runs no process: there is no filesystem its pods write to"
    ),
    Probe.COMMANDS: (
        "the simulated kubelet runs no process: it records each container start and the "
        "environment it saw"
    ),
    Probe.SIGNALS: (
        "the Kubeflow adapter asks for no time limit with a signal before it: a TrainJob's "
        "activeDeadlineSeconds deletes its pods with the grace period it has"
    ),
}
"""What both simulated clusters lack, and why (:meth:`KubeflowSimHarness.declines`): forms of
powers the harness implements (a comma-list look-alike, a garbled reply) and powers it does not
(the skip shows the reason)."""
KUBE_IMPOSSIBLE: Final = frozenset(
    [
        Fault.REUSE_ID_NEXT,
        Fault.LOSE_IDENTITY_HISTORY,
        Fault.LAG_HISTORY,
        Fault.DISABLE_HISTORY,
        Fault.IGNORE_NEXT_STOP,
        Fault.IGNORE_NEXT_WRITE,
        look_alike_need(LookAlike.COMMA_LIST),
        Probe.SIGNALS,
        reply_loss_need(ReplyLoss.GARBLED),  # a reply is a JSON body or nothing
    ]
)
"""Of :data:`REFUSED`, what no harness of Kubernetes with the Kubeflow adapter can show, by
their nature (``Harness.impossible``); the rest is the simulator's own limit."""
NO_KUEUE_REQUEUE: Final = (
    "without Kueue nothing on Kubernetes requeues a TrainJob underneath its owner: an "
    "administrator's suspend and resume by hand reruns it under the execution id it had, which "
    "no adapter sees coming; kubeflow-sim-kueue requeues by an administrator's deactivation "
    "and reactivation of its Workload, which the readmission gate readmits"
)
"""Why ``kubeflow-sim`` declines ``requeue_underneath``."""
NO_KUEUE_QUOTA: Final = (
    "without Kueue nothing meters a quota: a pod waiting for room and one that could never "
    "fit read the same (PodScheduled=False, Unschedulable)"
)
"""Why ``kubeflow-sim`` cannot ``take_quota``."""
POD_QUOTA: Final = sum(node.pods for node in KubeConfig().nodes)
"""The ClusterQueue's quota of Kueue's ``pods`` resource (kueue ff69552e
site/content/en/docs/concepts/cluster_queue.md, "pods": Kueue computes the pods a Workload
requires): what the nodes hold (110 each, the kubelet's default maxPods). A dispatch
TrainJob's pods request no cpu or memory, so pods are the only quota its Workload holds, and
the only one a preemptor can take from it."""
PREEMPTOR_PRIORITY: Final = 1
"""A preemptor Workload's ``spec.priority``: above the TrainJobs' Workloads (0), so that Kueue
takes it before the Workload it preempted once that one has released its quota."""
PREEMPTOR_IMAGE: Final = "registry.k8s.io/pause:3.10"
UNPULLABLE_IMAGE: Final = "registry.invalid/dispatch-conformance/unpullable:0"
"""An image on a registry that cannot exist (RFC 2606's ``.invalid``): a kubelet's pull of it
fails, ``ErrImagePull``, then ``ImagePullBackOff`` between tries, and the pod stays Pending; the
simulated clusters pull it so (https://kubernetes.io/docs/concepts/containers/images/ [A5];
/work/shared/reference/kubeflow-facts.md §8.3)."""
HELD_REQUEUE: Final = (
    "Kueue readmits an evicted Workload by itself: there is no state in which the scheduler "
    "keeps a requeued TrainJob held"
)
RESTARTING_RUNTIME: Final = "dispatch-restarts"
"""A ClusterTrainingRuntime each cluster of the harnesses has, as a site would make it:
``dispatch-identity`` whose JobSet restarts once after a failed Job
(``failurePolicy.maxRestarts: 1``): :meth:`KubeflowSimHarness.self_restarting_spec`."""


def restarting_runtime() -> JSON:
    """The :data:`RESTARTING_RUNTIME` object."""
    runtime = dispatch_identity()
    runtime["metadata"]["name"] = RESTARTING_RUNTIME
    runtime["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    return runtime


KEEPING_RUNTIMES: Final = ("dispatch-identity", RESTARTING_RUNTIME)
"""Runtimes every cluster of the harnesses has that keep execution identity (``restartPolicy:
Never``, ``backoffLimit: 0``; the second's JobSet restarts, each time under a new
restart-attempt): :meth:`KubeflowSimHarness.keeping_spec` names the first that is not the
adapter's default."""


def naming(spec: JobSpec, runtime: str) -> JobSpec:
    """``spec`` naming ``runtime`` (the adapter's ``kubeflow.Runtime`` extension)."""
    extensions = {**spec.extensions, RUNTIME_EXTENSION: runtime}
    return spec.model_copy(update={"extensions": extensions})


SECOND_NAMESPACE: Final = "dispatch-b"
"""A namespace of the clusters of the harnesses where a second adapter instance may have a
Role (an other target of :meth:`KubeflowSimHarness.other_target`)."""
OTHER_CLUSTER: Final = "kube-sim-other"
"""The cluster name (in every ObjectRef) of the second cluster an other target opens."""
OTHER_QUEUE: Final = "other-queue"
"""With Kueue, a LocalQueue of ``default`` on :data:`OTHER_CLUSTER_QUEUE`."""
OTHER_CLUSTER_QUEUE: Final = "other-cluster-queue"
"""With Kueue, a ClusterQueue that lists no AdmissionCheck: no readmission gate guards it."""
OTHER_TARGETS: Final = ("namespace", "cluster", "queue")
"""The kinds of other target :meth:`KubeflowSimHarness.other_target` opens, by variant (the
queue only with Kueue)."""


def queue_config(
    cluster_queue: str = CLUSTER_QUEUE,
    local_queue: str = QUEUE,
    namespace: str = NAMESPACE,
    *,
    gated: bool = True,
) -> QueueConfig:
    """Kueue's objects on the clusters of the harnesses: the ClusterQueue holds
    :data:`POD_QUOTA` pods and, when ``gated``, lists the readmission gate's AdmissionCheck."""
    return QueueConfig(
        cluster_queue=cluster_queue,
        local_queue=local_queue,
        namespace=namespace,
        pods=POD_QUOTA,
        admission_checks=(CHECK_NAME,) if gated else (),
        admission_check_controller=CONTROLLER_NAME,
    )


def queue_objects(config: QueueConfig) -> list[tuple[ResourceType, JSON]]:
    """The ClusterQueue and LocalQueue of ``config``, as Kueue's bootstrap makes them."""
    made = kueue_bootstrap(config, KubeConfig().nodes)
    return [(kind, obj) for kind, obj in made if kind in (CLUSTERQUEUES, LOCALQUEUES)]


def quota_workload(name: str, namespace: str, count: int, priority: int) -> JSON:
    """A Workload made directly (as a controller Kueue has no integration for makes one:
    Kueue admits Workloads that represent an arbitrary workload, kueue ff69552e
    site/content/en/docs/concepts/workload.md) on :data:`QUEUE`, asking for ``count`` pods
    of :data:`PREEMPTOR_IMAGE`; the readmission gate never marks its check, so it holds its
    quota and never runs a pod."""
    container = {"name": "main", "image": PREEMPTOR_IMAGE}
    return {
        "apiVersion": WORKLOADS.api_version,
        "kind": WORKLOADS.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "active": True,
            "priority": priority,
            "queueName": QUEUE,
            "podSets": [
                {"name": "main", "count": count, "template": {"spec": {"containers": [container]}}}
            ],
        },
    }


def weakening_as(name: str, kind: ResourceType) -> JSON:
    """A stock runtime (:data:`WEAKENING_RUNTIMES`' first: a failed rank reruns under the
    identity it had) as a ``kind`` object named ``name``."""
    runtime = catalogue([WEAKENING_RUNTIMES[0]])[0]
    runtime["kind"] = kind.kind
    runtime["metadata"] = {"name": name}
    return runtime


NEAR_HOLDS: Final[tuple[tuple[str, str], ...]] = (
    ("0", "dispatch/hold=0 (numbers start at 1)"),
    ("1000000", "dispatch/hold=1000000 (the hold bound)"),
    ("01", "dispatch/hold=01 (a leading zero)"),
    ("-1", "dispatch/hold=-1 (a sign)"),
    ("", "dispatch/hold empty"),
    (" 1", "dispatch/hold=' 1' (a space before)"),
)
"""Values just outside the hold encoding, each written with the object deferred."""
GC_SECONDS: Final = 0.5
"""The garbage collector's delay here (KubeConfig.gc_seconds): a read right after a cascading
DELETE finds the owner still there, marked, as on a real cluster."""
REACTION_SECONDS: Final = 0.2
"""The controllers' reaction on both clusters (KubeConfig.reaction_seconds): a read right after
a write finds what the controllers make of it not done yet (with Kueue: no Workload right after
a TrainJob's create, no eviction right after a Workload's deactivation)."""
EVICTION_STEPS: Final = 50
"""Steps of one reaction an administrator waits, after deactivating a Workload, to see Kueue
evict it before reactivating it (``requeue_underneath``): ten seconds of the clock."""
STALLED_BY: Final = "sim.dispatch.dev/stalled"
"""The finalizer nobody removes while a stall lasts (``stall_teardown``): the JobSet's deletion
never completes."""
TOUCHED_BY: Final = "sim.dispatch.dev/touched"
"""The annotation another writer sets on an object (``race_next_write(op, Race.TOUCHED)``)."""
WRITE_VERBS: Final[Mapping[str, tuple[str, ...]]] = {
    "start": ("POST",),
    "stop": ("DELETE",),
    "hold": ("PUT", "PATCH"),
    "release": ("PUT", "PATCH"),
    "requeue": ("PUT", "PATCH"),
}
"""The HTTP methods of each operation's writes."""
VERBS: Final = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
M = TypeVar("M", bound=Mapping[str, Any])


@dataclass
class Armed:
    """A call fault waiting for the adapter's next write of ``operation``."""

    need: str
    operation: str
    before: Callable[[Route], None] | None = None
    after: Callable[[Route], None] | None = None
    skip: int = 0
    """How many of the operation's writes to let through first (fail_between_steps: 1)."""
    lasting: bool = False
    """Once fired, it fires again for every later write of the operation until the check asks
    what is still armed (:meth:`SimCluster.unfired`, which a check asks once the call that
    the fault targets returned): the retries the adapter makes inside that call fail too."""


@dataclass(frozen=True)
class Route:
    """What one request of the adapter names."""

    method: str
    plural: str
    """The resource's plural, with ``/<subresource>`` when it names one."""
    namespace: str
    name: str


def route(method: str, url: str) -> Route:
    """The resource a request's URL names (``/api/v1/...`` or ``/apis/<g>/<v>/...``)."""
    path = urllib.parse.urlsplit(url).path.strip("/").split("/")
    rest = path[2:] if path[:1] == ["api"] else path[3:]
    namespace = ""
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    plural = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        plural = f"{plural}/{rest[2]}"
    return Route(method, plural, namespace, name)


NAMESPACED_PLURALS: Final = frozenset(r.plural for r in RESOURCES if r.namespaced)
"""The resources a namespaced Role grants in its namespace only."""


def forbidden(request: Route, namespace: str = NAMESPACE) -> ApiException:
    """What the API server answers a namespaced service account's request for a namespaced
    resource across every namespace, or in another namespace (RBAC: a Role grants its own
    namespace only): the account is ``dispatch`` of ``namespace``."""
    resource = request.plural.split("/")[0]
    verb = VERBS.get(request.method) or ("get" if request.name else "list")
    where = "at the cluster scope"
    if request.namespace:
        where = f'in the namespace "{request.namespace}"'
    error = ApiException(status=403, reason="Forbidden")
    error.body = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "Forbidden",
            "code": 403,
            "message": f'{resource} is forbidden: User "system:serviceaccount:{namespace}:'
            f'dispatch" cannot {verb} resource "{resource}" '
            f"{where}",
        }
    )
    return error


class HookedApiClient(client.ApiClient):
    """The adapter's ApiClient: before each request armed call faults fire (on the server, for
    exactly that request); after it, their follow-ups. Its credentials are namespaced, as a
    site gives an adapter a Role in its namespace: a request for a namespaced resource across
    every namespace, or in another, is Forbidden (:func:`forbidden`)."""

    def __init__(
        self, cluster: SimCluster, configuration: client.Configuration, namespace: str
    ) -> None:
        super().__init__(configuration)
        self.cluster = cluster
        self.namespace = namespace

    def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        request = route(method, url)
        namespaced = request.plural.split("/")[0] in NAMESPACED_PLURALS
        if namespaced and request.namespace != self.namespace:
            raise forbidden(request, self.namespace)
        after = self.cluster.arm(request)
        try:
            return super().call_api(method, url, *args, **kwargs)
        finally:
            if after is not None:
                after(route(method, url))


def trainjob_finished(trainjob: Mapping[str, Any]) -> bool:
    """Whether the TrainJob has ended: a Complete or Failed condition of it is true."""
    for condition in (trainjob.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return True
    return False


def owned_jobsets(trainjob: Mapping[str, Any], jobsets: Iterable[M]) -> list[M]:
    """Of ``jobsets``, those the TrainJob owns (by uid), a terminating one included."""
    uid = str(trainjob["metadata"]["uid"])
    return [
        js
        for js in jobsets
        if any(r.get("uid") == uid for r in js["metadata"].get("ownerReferences") or [])
    ]


def trainjob_listing(
    namespace: str,
    trainjobs: Iterable[Mapping[str, Any]],
    jobsets: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
) -> dict[str, Listed]:
    """The listing (:meth:`~conformance.harness.Harness.listing`) of ``namespace``'s
    TrainJobs, from its TrainJobs, JobSets and pods as the API server shows them, by
    ``namespace/name``: ended when a Complete or Failed condition is true; running while a pod
    of it runs (a terminating one too: its processes have not ended); else pending (ended once
    its deletion began). Its job is what its ``dispatch/job`` label names (the job's id,
    exactly). Both the simulated clusters and ``kubeflow-remote`` list with it."""
    listed: dict[str, Listed] = {}
    for tj in trainjobs:
        metadata = tj["metadata"]
        owned = {str(js["metadata"]["uid"]) for js in owned_jobsets(tj, jobsets)}
        running = any(
            (pod["metadata"].get("labels") or {}).get(JOBSET_UID) in owned
            and (pod.get("status") or {}).get("phase") == "Running"
            for pod in pods
        )
        if trainjob_finished(tj):
            shown = Shown.ENDED
        elif running:
            shown = Shown.RUNNING
        else:
            shown = Shown.ENDED if metadata.get("deletionTimestamp") else Shown.PENDING
        job = (metadata.get("labels") or {}).get("dispatch/job")
        listed[f"{namespace}/{metadata['name']}"] = Listed(shown, str(job) if job else None)
    return listed


class SimClock:
    """The harness clock: virtual time of the simulator, advanced through it (so that every
    controller reconciles on the way) and stopping at each due time for the gate's pass."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster

    def now(self) -> float:
        return self.cluster.sim.clock.now()

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        sim = self.cluster.sim
        target = sim.clock.now() + seconds
        stalled = self.cluster.stalled_since
        if stalled is not None and target - stalled > STALL_BOUND:
            self.cluster.end_stall()  # so that the check's cleanup can stop what it made
            raise CheckFailed(
                f"a call was still waiting {target - stalled:.0f} s of the clock after the "
                f"scheduler's teardown stalled (more than {STALL_BOUND:.0f} s): every wait of "
                "an adapter must be bounded, and end in OutcomeUnknown"
            )
        for _ in range(100_000):
            self.cluster.sync()
            now = sim.clock.now()
            if now >= target:
                break
            due = sim.runner.next_due()
            step = target - now if due is None or due >= target else max(due - now, 0.0)
            sim.advance(step if step > 0 else min(1.0, target - now))
        self.cluster.sync()
        return sim.clock.now()

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)


class SimCluster:
    """One simulated cluster, its gate (with Kueue), and its call faults. Its clients reach
    the API server in process (:class:`~simulators.kubernetes.inprocess.InProcessPool`), or,
    with ``over_http``, over loopback HTTP; it serves HTTP either way (kubectl, the fidelity
    tools, a stream)."""

    def __init__(self, kueue: bool, seed: int, *, over_http: bool = False) -> None:
        queue = queue_config()
        namespaces = ("default", "kube-system", "kube-public", OTHER_NAMESPACE, SECOND_NAMESPACE)
        config = KubeConfig(
            kueue=kueue,
            queue=queue,
            default_run_seconds=None,
            namespaces=namespaces,
            gc_seconds=GC_SECONDS,
            reaction_seconds=REACTION_SECONDS,
        )
        self.kueue = kueue
        self.over_http = over_http
        self.sim = KubeSim(config, seed=seed)
        unpullable = Behaviour(image_pull="ErrImagePull")
        self.sim.cluster.behaviours.add(unpullable, image=UNPULLABLE_IMAGE)
        self._stack = contextlib.ExitStack()
        self.server: Server = self._stack.enter_context(self.sim.serve())
        self._configuration: client.Configuration | None = None
        self.clock = SimClock(self)
        self.armed: list[Armed] = []
        self.lasting: list[Armed] = []
        self.owners: dict[str, str] = {}
        """JobSet uid to the uid of the TrainJob that owned it (kept after both are gone)."""
        self.stalled: list[tuple[str, str]] = []
        """The JobSets (namespace, name) a stall holds back (``stall_teardown``)."""
        self.stalled_since: float | None = None
        """The clock's time the stall began, while it lasts."""
        self._seen = -1
        self._gated = False
        self.clients: list[client.ApiClient] = []
        self.gate: ReadmissionGate | None = None
        if kueue:
            self.gate = ReadmissionGate(self.plain_client(), namespace=None, clock=self.sim.clock)
        self.kubelet = next(c for c in self.sim.controllers if isinstance(c, Kubelet))
        self.serial = itertools.count(1)
        self.preemptors: list[tuple[str, str]] = []
        self.quota_holders: list[tuple[str, str]] = []
        """Another user's Workloads holding the quota until give_quota_back (take_quota)."""
        """The preemptor Workloads (namespace, name) holding quota until the next let_run."""
        self.sim.create(CLUSTERTRAININGRUNTIMES, restarting_runtime())

    def ensure(self, kind: ResourceType, obj: JSON, namespace: str = "") -> None:
        """Create ``obj`` as a client would unless an object of its name is there."""
        if self.sim.store.peek(kind, namespace, str(obj["metadata"]["name"])) is None:
            self.sim.create(kind, obj, namespace)

    def ensure_all(self, objects: Iterable[tuple[ResourceType, JSON]]) -> None:
        """:meth:`ensure` each of ``objects``, in its own namespace."""
        for kind, obj in objects:
            self.ensure(kind, obj, str(obj["metadata"].get("namespace", "")))

    def configuration(self) -> client.Configuration:
        """The client configuration of the server's kubeconfig: loaded once per cluster (YAML
        parsing costs milliseconds), a copy for each ApiClient."""
        if self._configuration is None:
            configuration = client.Configuration()
            kube_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=str(self.server.kubeconfig), client_configuration=configuration
            )
            self._configuration = configuration
        return copy.deepcopy(self._configuration)

    def plain_client(self) -> client.ApiClient:
        """An ApiClient with no call faults (the gate's, the harness's own reads)."""
        return self._connected(client.ApiClient(self.configuration()))

    def api(self, namespace: str = NAMESPACE) -> client.ApiClient:
        """A new ApiClient for an adapter instance (its own connection pool), with the
        credentials of a Role in ``namespace``."""
        return self._connected(HookedApiClient(self, self.configuration(), namespace))

    def _connected(self, made: client.ApiClient) -> client.ApiClient:
        if not self.over_http:
            made.rest_client.pool_manager = InProcessPool(self.server)
        self.clients.append(made)
        return made

    def close(self) -> None:
        for made in self.clients:
            with contextlib.suppress(Exception):
                made.close()  # type: ignore[no-untyped-call]
        self._stack.close()

    # -- the gate, and what the harness remembers ------------------------------------------------

    def sync(self) -> None:
        """The gate's pass (with Kueue) when anything changed since the last one; and the
        JobSet owners seen so far."""
        store = self.sim.store
        if store.revision == self._seen:
            return
        for jobset in store.select(JOBSETS):
            metadata = jobset.get("metadata", {})
            for ref in metadata.get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == "TrainJob":
                    self.owners[str(metadata.get("uid"))] = str(ref.get("uid"))
        if self.gate is not None and (
            not self._gated or any(self.gate.waits_on(wl) for wl in store.select(WORKLOADS))
        ):
            # A pass over HTTP only when a Workload waits on the gate (read in process: the
            # harness's shortcut, not the gate's), and once at first (it marks its check Active).
            self.gate.sync()
            self._gated = True
        self._seen = store.revision

    # -- a stalled teardown --------------------------------------------------------------------

    def stall(self, jobsets: Sequence[JSON]) -> None:
        """Each JobSet gets the finalizer :data:`STALLED_BY`, which nobody removes until
        :meth:`end_stall`; the clock fails the check past :data:`STALL_BOUND` meanwhile."""
        for jobset in jobsets:
            metadata = jobset["metadata"]
            self.stalled.append((str(metadata["namespace"]), str(metadata["name"])))
        self._finalize(stalled=True)
        self.stalled_since = self.sim.clock.now()

    def end_stall(self) -> None:
        """The stall ends: the finalizer goes, and a deletion it held back completes."""
        self.stalled_since = None
        self._finalize(stalled=False)
        self.stalled.clear()

    def _finalize(self, *, stalled: bool) -> None:
        def change(obj: JSON) -> None:
            kept = [f for f in obj["metadata"].get("finalizers") or [] if f != STALLED_BY]
            if stalled:
                kept.append(STALLED_BY)
            if kept:
                obj["metadata"]["finalizers"] = kept
            else:
                obj["metadata"].pop("finalizers", None)

        with self.sim.lock:
            for namespace, name in self.stalled:
                with contextlib.suppress(ApiError):  # gone already
                    self.sim.store.mutate(
                        JOBSETS, namespace, name, change, internal=False, copy=False
                    )
            self.sim.runner.settle()

    # -- call faults ---------------------------------------------------------------------------

    def arm(self, request: Route) -> Callable[[Route], None] | None:
        """Fire the first armed call fault this request is a write of; its follow-up."""
        if request.method not in VERBS:
            return None
        for index, armed in enumerate(self.armed):
            if request.method not in WRITE_VERBS[armed.operation]:
                continue
            if armed.skip:
                armed.skip -= 1
                return None
            del self.armed[index]
            if armed.lasting:
                self.lasting.append(dataclasses.replace(armed, lasting=False))
            if armed.before is not None:
                armed.before(request)
            return armed.after
        for armed in self.lasting:
            if request.method in WRITE_VERBS[armed.operation]:
                if armed.before is not None:
                    armed.before(request)
                return armed.after
        return None

    def unfired(self) -> list[str]:
        """The call faults still armed; a lasting one that fired ends here (its call returned)."""
        self.lasting.clear()
        return [armed.need for armed in self.armed]

    # -- which objects a ref names -------------------------------------------------------------

    def trainjob(self, ref: ObjectRef) -> JSON | None:
        """The ref's TrainJob while it exists (the same uid under its namespace/name)."""
        namespace, _, name = ref.id.partition("/")
        found = self.sim.store.peek(TRAINJOBS, namespace, name)
        if found is None or found.get("metadata", {}).get("uid") != ref.uid:
            return None
        return found

    def require(self, ref: ObjectRef) -> JSON:
        self.sync()
        found = self.trainjob(ref)
        if found is None:
            raise KeyError(f"TrainJob {ref.id} (uid {ref.uid}) is not on the cluster")
        return found

    def jobsets(self, trainjob: JSON) -> list[JSON]:
        """The JobSets the TrainJob owns (by uid), a terminating one included."""
        namespace = str(trainjob["metadata"]["namespace"])
        return owned_jobsets(trainjob, self.sim.store.select(JOBSETS, namespace))

    def pods(self, trainjob: JSON) -> list[JSON]:
        """The live (not terminating) pods of the TrainJob's current JobSet."""
        metadata = trainjob["metadata"]
        jobsets = {str(js["metadata"]["uid"]) for js in self.jobsets(trainjob)}
        return [
            pod
            for pod in self.sim.store.select(PODS, str(metadata["namespace"]))
            if pod["metadata"].get("labels", {}).get(JOBSET_UID) in jobsets
            and not pod["metadata"].get("deletionTimestamp")
        ]

    def rank_pod(self, trainjob: JSON, rank: int) -> JSON:
        """The pod of rank ``rank`` of the TrainJob's current execution: of its trainer
        replicatedJob's Job 0 (:data:`TRAINER_JOB`), of completion index ``rank``, of the
        newest restart attempt (KeyError when there is none)."""

        def attempt(pod: JSON) -> int:
            text = str(pod["metadata"].get("labels", {}).get(RESTART_ATTEMPT, "0"))
            return int(text) if text.isdigit() else 0

        pods = [
            pod
            for pod in self.pods(trainjob)
            if (labels := pod["metadata"].get("labels", {})).get(REPLICATED_JOB) == TRAINER_JOB
            and labels.get(JOB_INDEX, "0") == "0"
            and labels.get(COMPLETION_INDEX) == str(rank)
        ]
        if not pods:
            raise KeyError(
                f"TrainJob {trainjob['metadata']['name']} has no live pod of rank {rank}"
            )
        return max(pods, key=attempt)

    def ranks(self, trainjob: JSON) -> int:
        """How many pods the TrainJob's JobSet runs (replicas times parallelism), 0 if none."""
        metadata = trainjob["metadata"]
        jobset = self.sim.store.peek(JOBSETS, str(metadata["namespace"]), str(metadata["name"]))
        if jobset is None:
            return 0
        total = 0
        for rjob in jobset.get("spec", {}).get("replicatedJobs") or []:
            parallelism = rjob.get("template", {}).get("spec", {}).get("parallelism", 1)
            total += int(rjob.get("replicas", 1)) * int(parallelism)
        return total

    def running(self, trainjob: JSON) -> bool:
        """Whether every rank of the TrainJob's current execution runs."""
        pods = self.pods(trainjob)
        expected = self.ranks(trainjob)
        if expected == 0 or len(pods) < expected:
            return False
        for pod in pods:
            statuses = pod.get("status", {}).get("containerStatuses") or []
            if pod.get("status", {}).get("phase") != "Running" or not statuses:
                return False
            if not all("running" in (s.get("state") or {}) for s in statuses):
                return False
        return True

    def restarts(self, trainjob: JSON) -> int:
        """How many times the TrainJob's current JobSet has restarted (0 without one)."""
        counts = [
            int((js.get("status") or {}).get("restarts") or 0)
            for js in self.jobsets(trainjob)
            if not js["metadata"].get("deletionTimestamp")
        ]
        return max(counts, default=0)

    def finished(self, trainjob: JSON) -> bool:
        return trainjob_finished(trainjob)

    def workload(self, trainjob: JSON) -> JSON | None:
        uid = trainjob["metadata"]["uid"]
        for wl in self.sim.store.select(WORKLOADS, str(trainjob["metadata"]["namespace"])):
            refs = wl["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid and r.get("controller") for r in refs):
                return wl
        return None

    # -- a preemptor -----------------------------------------------------------------------------

    def preemptor_for(self, victim: JSON) -> str:
        """Make another user's Workload (made directly, as a controller Kueue has no
        integration for makes one: Kueue admits Workloads that represent an arbitrary
        workload, kueue ff69552e site/content/en/docs/concepts/workload.md) of a higher
        priority, :data:`PREEMPTOR_PRIORITY`, asking for every pod of the quota that the
        Workloads holding quota, ``victim`` aside, leave: it fits only once ``victim`` has
        released its own. It is pending now, as a preemptor is when Kueue preempts for it
        (pkg/scheduler/preemption/preemption.go [K6]); once ``victim`` is evicted and requeued,
        Kueue reserves quota for it first (by priority: ``KueueScheduler.order``), and
        ``victim`` waits (``QuotaReserved=False``, ``WaitingForQuota``, ``Evicted=True``
        ``Preempted``) until :meth:`end_preemptions`. The readmission gate never marks its
        check (it is no dispatch TrainJob's), so it is never admitted and runs no pod: it holds
        the quota, which is all the preempted Workload sees of a preemptor. Returns its name."""
        namespace = str(victim["metadata"]["namespace"])
        name = f"preemptor-{next(self.serial)}"
        count = POD_QUOTA - self.pods_held(but=str(victim["metadata"].get("uid")))
        body = quota_workload(name, namespace, count, PREEMPTOR_PRIORITY)
        self.sim.create(WORKLOADS, body, namespace)
        self.preemptors.append((namespace, name))
        return name

    def pods_held(self, but: str = "") -> int:
        """The pods of the quota that the Workloads holding quota hold (but the one of uid
        ``but``)."""
        held = 0
        for wl in self.sim.store.select(WORKLOADS):
            if wl["metadata"].get("uid") == but:
                continue
            if not kueue_has_quota(wl) or kueue_is_finished(wl):
                continue
            for assigned in (wl["status"].get("admission") or {}).get("podSetAssignments") or []:
                held += int((assigned.get("resourceUsage") or {}).get(PODS_RESOURCE, 0))
        return held

    def take_quota(self) -> None:
        """Another user's Workload of priority 0 asks for every pod of the quota left: Kueue
        reserves it (FIFO), and the gate never marks its check (no dispatch TrainJob's), so it
        holds the quota until :meth:`give_quota_back`."""
        name = f"quota-holder-{next(self.serial)}"
        count = POD_QUOTA - self.pods_held()
        self.sim.create(WORKLOADS, quota_workload(name, NAMESPACE, count, 0), NAMESPACE)
        self.quota_holders.append((NAMESPACE, name))

    def give_quota_back(self) -> None:
        """The quota holders' owner deletes them: Kueue admits what waited for their quota."""
        holders, self.quota_holders = self.quota_holders, []
        for namespace, name in holders:
            self.sim.faults.admin_delete(WORKLOADS, namespace, name)

    def end_preemptions(self) -> None:
        """Each preemptor's owner deletes it, its work done: its quota is free again, and Kueue
        readmits the Workloads it kept waiting."""
        preemptors, self.preemptors = self.preemptors, []
        for namespace, name in preemptors:
            with contextlib.suppress(FaultError):  # gone already
                self.sim.faults.admin_delete(WORKLOADS, namespace, name)

    def executions(self, ref: ObjectRef) -> list[list[dict[str, str]]]:
        """The env each rank of each execution of the ref's TrainJob saw (:meth:`runs`)."""
        return [[start.env for start in ranks] for ranks in self.runs(ref)]

    def images(self, ref: ObjectRef) -> list[list[str]]:
        """The image each rank of each execution of the ref's TrainJob ran (:meth:`runs`)."""
        return [[start.image for start in ranks] for ranks in self.runs(ref)]

    def runs(self, ref: ObjectRef) -> list[list[Start]]:
        """The container starts of the ref's TrainJob, grouped into executions by (execution
        annotation, restart-attempt) in start order, each its ranks' by completion index.
        A rank that starts again within one group (a container restarted in place, a Job's
        replacement pod) begins a new execution under that key: it ran again, whatever
        identity it saw."""
        self.sync()
        namespace, _, name = ref.id.partition("/")
        groups: dict[tuple[str, str, int], list[tuple[int, Start]]] = {}
        runs: dict[tuple[str, str, int], int] = {}
        for start in starts(self.sim.cluster):
            if start.namespace != namespace or start.container != CONTAINER:
                continue
            if start.labels.get(JOBSET_NAME) != name:
                continue
            if self.owners.get(start.labels.get(JOBSET_UID, "")) != ref.uid:
                continue
            text = start.labels.get(COMPLETION_INDEX, "0")
            index = int(text) if text.isdigit() else 0
            key = (start.annotations.get(EXECUTION, ""), start.labels.get(RESTART_ATTEMPT, ""))
            run = runs.get((*key, index), 0)
            runs[(*key, index)] = run + 1
            groups.setdefault((*key, run), []).append((index, start))
        return [[s for _, s in sorted(ranks, key=lambda r: r[0])] for ranks in groups.values()]

    def listing(self) -> dict[str, Listed]:
        """Every TrainJob of the user's namespace, as the API server shows it
        (:func:`trainjob_listing`)."""
        self.sync()
        store = self.sim.store
        return trainjob_listing(
            NAMESPACE,
            store.select(TRAINJOBS, NAMESPACE),
            store.select(JOBSETS, NAMESPACE),
            store.select(PODS, NAMESPACE),
        )

    def inventory(self) -> list[str]:
        """Every TrainJob in the user's namespace that has not ended."""
        self.sync()
        return [
            f"{NAMESPACE}/{tj['metadata']['name']}"
            for tj in self.sim.store.select(TRAINJOBS, NAMESPACE)
            if not self.finished(tj) and not tj["metadata"].get("deletionTimestamp")
        ]


class SimPowers(
    RunsJobs[KubeflowBackend],
    RequeuesUnderneath[KubeflowBackend],
    Purges[KubeflowBackend],
    ReusesIds[KubeflowBackend],
    Recreates[KubeflowBackend],
    TakesIdsAhead[KubeflowBackend],
    TakesQuota[KubeflowBackend],
    LosesNodes[KubeflowBackend],
    KillsForMemory[KubeflowBackend],
    Evicts[KubeflowBackend],
    Preempts[KubeflowBackend],
    StallsTeardown[KubeflowBackend],
    LosesReplies[KubeflowBackend],
    FailsBeforeEffect[KubeflowBackend],
    FailsEveryTry[KubeflowBackend],
    VanishesBeforeReadBack[KubeflowBackend],
    RacesWrites[KubeflowBackend],
    FailsBetweenSteps[KubeflowBackend],
    TellsUnfired[KubeflowBackend],
    WritesNearHolds[KubeflowBackend],
    MovesToHoldEdges[KubeflowBackend],
    MakesLookAlikes[KubeflowBackend],
):
    """Every fault the simulator allows, each on the simulated cluster of the backend it is
    given (:meth:`cluster_of`): the powers :class:`KubeflowSimHarness` offers besides its
    probes. What one of its clusters cannot give is named by the harness's ``declines``."""

    @abstractmethod
    def cluster_of(self, backend: KubeflowBackend) -> SimCluster:
        """The simulated cluster ``backend`` was made on."""

    # -- the scheduler -------------------------------------------------------------------------

    def let_run(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        self._let_run(self.cluster_of(backend), ref)

    def _let_run(self, cluster: SimCluster, ref: ObjectRef) -> JSON:
        """Let virtual time pass until every rank of the object runs (bounded); an execution
        that began meanwhile and has already ended (a command that exits at once) counts. A
        preemptor still holding quota (``preempt``) is done first: the scheduler is asked to
        run the object, and the quota is free for it."""
        cluster.end_preemptions()
        ran = len(cluster.executions(ref))
        for waited in range(LET_RUN_BOUND + 1):
            trainjob = cluster.require(ref)
            if cluster.running(trainjob):
                return trainjob
            if cluster.finished(trainjob):
                if len(cluster.executions(ref)) > ran:
                    return trainjob
                raise Rejected(f"TrainJob {ref.id} has ended: it will not run again")
            annotations = trainjob["metadata"].get("annotations") or {}
            wl = cluster.workload(trainjob) if cluster.kueue else None
            held = HOLD in annotations and (
                trainjob.get("spec", {}).get("suspend") is True
                or (wl is not None and wl.get("spec", {}).get("active") is False)
            )
            if held:
                raise Rejected(f"TrainJob {ref.id} is held ({HOLD}={annotations[HOLD]})")
            if waited < LET_RUN_BOUND:
                cluster.clock.advance(1)
        raise Rejected(f"TrainJob {ref.id} did not run within {LET_RUN_BOUND} s")

    def finish(self, backend: KubeflowBackend, ref: ObjectRef, exit_code: int = 0) -> None:
        """Every running container of the object ends now with ``exit_code``; the end then
        travels up (Job, JobSet, TrainJob) in virtual time, until the TrainJob has ended or
        its JobSet has restarted (a runtime with ``maxRestarts``)."""
        cluster = self.cluster_of(backend)
        trainjob = self._let_run(cluster, ref)
        restarts = cluster.restarts(trainjob)
        with cluster.sim.lock:
            for pod in cluster.pods(trainjob):
                if end_containers(cluster.sim.cluster, pod, exit_code):
                    metadata = pod["metadata"]
                    cluster.sim.runner.enqueue(
                        cluster.kubelet, (str(metadata["namespace"]), str(metadata["name"]))
                    )
            cluster.sim.runner.settle()
        self._until(
            cluster,
            ref,
            lambda tj: cluster.finished(tj) or cluster.restarts(tj) > restarts,
            "end or restart",
        )

    def _until(
        self, cluster: SimCluster, ref: ObjectRef, done: Callable[[JSON], bool], what: str
    ) -> None:
        for _ in range(SETTLE_BOUND):
            trainjob = cluster.trainjob(ref)
            if trainjob is None or done(trainjob):
                return
            cluster.clock.advance(1)
        raise Rejected(f"TrainJob {ref.id} did not {what} within {SETTLE_BOUND} s")

    def lose_node(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        """The node of the object's first rank stops reporting; virtual time then passes until
        the cluster has acted on it (the taint manager deletes the pods when their 300 s
        unreachable toleration runs out, and their Job counts them failed), as a node loss
        ends a Slurm job at once."""
        cluster = self.cluster_of(backend)
        trainjob = self._let_run(cluster, ref)
        pods = cluster.pods(trainjob)
        node = str(pods[0]["spec"]["nodeName"])
        lost = {str(p["metadata"]["uid"]) for p in pods if p["spec"].get("nodeName") == node}
        cluster.sim.faults.lose_node(node)

        def acted(tj: JSON) -> bool:
            live = {str(p["metadata"]["uid"]) for p in cluster.pods(tj)}
            return cluster.finished(tj) or not lost & live

        self._until(cluster, ref, acted, "notice its lost node")
        cluster.clock.advance(1)

    def oom_kill(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        """The first rank's container is killed for its memory (OOMKilled, exit 137); virtual
        time then passes until the TrainJob has ended or its JobSet restarted."""
        self._end_first_rank(backend, ref, "the OOM kill", lambda f: f.oom_kill)

    def evict(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        """The kubelet of the node under the object's first rank evicts that rank's pod for
        node pressure: phase Failed, ``status.reason`` Evicted, ``DisruptionTarget``
        ``TerminationByKubelet``, grace 0 (https://kubernetes.io/docs/concepts/scheduling-eviction/
        node-pressure-eviction/ [A4]; /work/shared/reference/kubeflow-facts.md §8.3); virtual
        time then passes until the TrainJob has ended or its JobSet restarted."""
        self._end_first_rank(backend, ref, "the eviction", lambda f: f.evict_pod)

    def _end_first_rank(
        self,
        backend: KubeflowBackend,
        ref: ObjectRef,
        what: str,
        fault: Callable[[KubeFaults], Callable[[str, str], object]],
    ) -> None:
        """The running object's first rank's pod ends by ``fault`` (a kubelet's act on it);
        virtual time then passes until the TrainJob has ended or its JobSet restarted."""
        cluster = self.cluster_of(backend)
        trainjob = self._let_run(cluster, ref)
        pod = cluster.pods(trainjob)[0]["metadata"]
        restarts = cluster.restarts(trainjob)
        fault(cluster.sim.faults)(str(pod["namespace"]), str(pod["name"]))
        self._until(
            cluster,
            ref,
            lambda tj: cluster.finished(tj) or cluster.restarts(tj) > restarts,
            f"act on {what}",
        )

    def preempt(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        """With Kueue, Kueue preempts the object's Workload for a preemptor of a higher
        priority (:meth:`SimCluster.preemptor_for`): ``Evicted`` and ``Preempted``, the
        message naming the preemptor [K6]; the TrainJob is stopped and its Workload requeued
        (``Requeued=True`` ``Preempted``) [K4; kubeflow-facts.md §8.4, §9 I]. It then waits,
        queued, for the quota the preemptor holds until the next ``let_run`` (of any object:
        the preemptor's owner is done, :meth:`SimCluster.end_preemptions`). Returns once the
        evicted execution's pods have gone. Without Kueue the scheduler preempts one of its
        pods (``DisruptionTarget`` ``PreemptionByScheduler``)."""
        cluster = self.cluster_of(backend)
        trainjob = self._let_run(cluster, ref)
        if not cluster.kueue:
            pod = cluster.pods(trainjob)[0]["metadata"]
            cluster.sim.faults.preempt_pod(str(pod["namespace"]), str(pod["name"]))
            return
        namespace, name, wl = self._workload_of(cluster, ref, trainjob)
        before = self._live_pods(cluster, trainjob)
        cluster.sim.faults.kueue_preempt(namespace, name, cluster.preemptor_for(wl))
        self._until(cluster, ref, self._left(cluster, before), "leave its evicted execution")

    def requeue_underneath(
        self,
        backend: KubeflowBackend,
        ref: ObjectRef,
        *,
        in_flight: bool = False,
        held: bool = False,
    ) -> None:
        """An administrator requeues the running object through Kueue, as its documentation
        gives it: deactivates its Workload (``spec.active=false``: ``Evicted``
        ``Deactivated``, the TrainJob stopped, the Workload not requeued) and, once Kueue has
        evicted it, reactivates it (``Requeued=True`` ``Reactivated``) [K12, K10;
        kubeflow-facts.md §5.2, §9 J]; Kueue then readmits it through the gate. Without
        ``in_flight`` the reactivation waits until the evicted execution's pods have gone;
        with it, it comes at once, and this returns while the TrainJob is being stopped."""
        cluster = self.cluster_of(backend)
        if not cluster.kueue:
            raise CannotInject(Fault.REQUEUE_UNDERNEATH, why=NO_KUEUE_REQUEUE)
        if held:
            raise CannotInject("requeue_underneath(held)", why=HELD_REQUEUE)
        trainjob = self._let_run(cluster, ref)
        namespace, name, _ = self._workload_of(cluster, ref, trainjob)
        before = self._live_pods(cluster, trainjob)
        cluster.sim.faults.deactivate(namespace, name)
        for _ in range(EVICTION_STEPS):
            wl = cluster.sim.store.peek(WORKLOADS, namespace, name)
            if wl is None or kueue_is_evicted(wl):
                break
            cluster.clock.advance(REACTION_SECONDS)
        else:
            raise Rejected(f"Kueue did not evict the deactivated Workload {namespace}/{name}")
        if not in_flight:
            self._until(cluster, ref, self._left(cluster, before), "leave its evicted execution")
        cluster.sim.faults.reactivate(namespace, name)

    def _workload_of(
        self, cluster: SimCluster, ref: ObjectRef, trainjob: JSON
    ) -> tuple[str, str, JSON]:
        """The TrainJob's Workload: its namespace, name and object."""
        wl = cluster.workload(trainjob)
        if wl is None:
            raise Rejected(f"TrainJob {ref.id} has no Workload")
        return str(wl["metadata"]["namespace"]), str(wl["metadata"]["name"]), wl

    def _live_pods(self, cluster: SimCluster, trainjob: JSON) -> set[str]:
        return {str(p["metadata"]["uid"]) for p in cluster.pods(trainjob)}

    def _left(self, cluster: SimCluster, before: set[str]) -> Callable[[JSON], bool]:
        """Whether none of the pods ``before`` names is left (terminating ones included)."""

        def left(trainjob: JSON) -> bool:
            namespace = str(trainjob["metadata"]["namespace"])
            live = {str(p["metadata"]["uid"]) for p in cluster.sim.store.select(PODS, namespace)}
            return not before & live

        return left

    def purge(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        """An administrator deletes the object (a finished TrainJob stays until someone does)."""
        cluster = self.cluster_of(backend)
        trainjob = cluster.trainjob(ref)
        if trainjob is None:
            return
        metadata = trainjob["metadata"]
        cluster.sim.faults.admin_delete(
            TRAINJOBS, str(metadata["namespace"]), str(metadata["name"])
        )
        self._gone(cluster, str(metadata["namespace"]), str(metadata["name"]), str(metadata["uid"]))

    def reuse_id(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        """The ended TrainJob is deleted, and another user makes one under its name (suspended,
        labelled as nobody's job)."""
        self.purge(backend, ref)
        self._take_name(self.cluster_of(backend), *ref.id.split("/", 1))

    def _take_name(self, cluster: SimCluster, namespace: str, name: str) -> None:
        body = dispatch_trainjob(name, {"app": "someone-elses"}, {}, suspend=True)
        cluster.sim.create(TRAINJOBS, body, namespace)

    def take_id_ahead(self, backend: KubeflowBackend, job: JobID, submission: int) -> str:
        """Another client creates a TrainJob, suspended and of no dispatch identity (no
        labels, no annotations), under the name the adapter gives submission ``submission`` of
        ``job`` (:func:`~adapters.kubeflow.names.trainjob_name`)."""
        cluster = self.cluster_of(backend)
        name = trainjob_name(job, submission)
        with cluster.sim.lock:
            cluster.sim.create(TRAINJOBS, dispatch_trainjob(name, {}, {}, suspend=True), NAMESPACE)
        return f"{NAMESPACE}/{name}"

    def take_quota(self, backend: KubeflowBackend) -> None:
        """With Kueue, another user's Workload holds the ClusterQueue's quota
        (:meth:`SimCluster.take_quota`)."""
        cluster = self.cluster_of(backend)
        if not cluster.kueue:
            raise CannotInject(Fault.TAKE_QUOTA, why=NO_KUEUE_QUOTA)
        cluster.take_quota()
        cluster.sync()

    def give_quota_back(self, backend: KubeflowBackend) -> None:
        cluster = self.cluster_of(backend)
        cluster.give_quota_back()
        cluster.sync()

    def recreate(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        """``kubectl replace --force``: the TrainJob is deleted (its JobSet and pods with it) and
        created again from its labels, annotations and spec; Kueue makes the copy a Workload of
        its own."""
        cluster = self.cluster_of(backend)
        trainjob = cluster.require(ref)
        metadata = trainjob["metadata"]
        namespace, name = str(metadata["namespace"]), str(metadata["name"])
        manifest = {
            "apiVersion": trainjob["apiVersion"],
            "kind": trainjob["kind"],
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": copy.deepcopy(metadata.get("labels") or {}),
                "annotations": copy.deepcopy(metadata.get("annotations") or {}),
            },
            "spec": copy.deepcopy(trainjob["spec"]),
        }
        cluster.sim.faults.admin_delete(TRAINJOBS, namespace, name)
        self._gone(cluster, namespace, name, str(metadata["uid"]))
        cluster.sim.create(TRAINJOBS, manifest, namespace)
        cluster.sync()

    def _gone(self, cluster: SimCluster, namespace: str, name: str, uid: str) -> None:
        for _ in range(SETTLE_BOUND):
            found = cluster.sim.store.peek(TRAINJOBS, namespace, name)
            if found is None or found["metadata"].get("uid") != uid:
                return
            cluster.clock.advance(1)

    def stall_teardown(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        """The TrainJob's JobSet gets a finalizer nobody removes (as a controller that is down
        would leave it): its deletion marks it and it never goes, until ``end_stall``."""
        cluster = self.cluster_of(backend)
        jobsets = cluster.jobsets(cluster.require(ref))
        if not jobsets:
            raise CannotInject(f"stall_teardown (TrainJob {ref.id} has no JobSet)")
        cluster.stall(jobsets)
        cluster.clock.advance(1)

    def end_stall(self, backend: KubeflowBackend, ref: ObjectRef) -> None:
        cluster = self.cluster_of(backend)
        cluster.end_stall()
        cluster.clock.advance(1)

    # -- the calls -----------------------------------------------------------------------------

    def lose_next_reply(
        self, backend: KubeflowBackend, operation: str, form: ReplyLoss = ReplyLoss.TIMEOUT
    ) -> None:
        """The next write of ``operation`` is applied and its answer lost: as a timeout, the
        server closes the connection unanswered; as a failure, the API server's timeout filter
        answers 504 Timeout while the write goes on and lands. A garbled success cannot be had
        (a reply is JSON or nothing)."""
        cluster = self.cluster_of(backend)
        if form is ReplyLoss.GARBLED:
            raise CannotInject(f"lose_next_reply({operation}, garbled)", why=GARBLED_REPLY)

        def lose(request: Route) -> None:
            arm = (
                cluster.sim.faults.time_out_after_effect
                if form is ReplyLoss.FAILURE
                else cluster.sim.faults.lose_next_reply
            )
            arm(VERBS[request.method], request.plural, request.name or None)

        self._arm(cluster, f"lose_next_reply({operation})", operation, before=lose)

    def fail_before_effect(self, backend: KubeflowBackend, operation: str) -> None:
        """The next write of ``operation`` is refused with 500 before it applies."""
        cluster = self.cluster_of(backend)
        self._arm(
            cluster,
            f"fail_before_effect({operation})",
            operation,
            before=lambda request: self._refuse(cluster, request),
        )

    def fail_every_try(self, backend: KubeflowBackend, operation: str) -> None:
        """The next write of ``operation``, and every one the adapter retries within the same
        call, is refused with 500 before it applies."""
        cluster = self.cluster_of(backend)
        self._arm(
            cluster,
            f"fail_every_try({operation})",
            operation,
            before=lambda request: self._refuse(cluster, request),
            lasting=True,
        )

    def _refuse(self, cluster: SimCluster, request: Route) -> None:
        cluster.sim.faults.refuse_next(
            VERBS[request.method], request.plural, request.name or None, code=500
        )

    def fail_between_steps(self, backend: KubeflowBackend, operation: str) -> None:
        """The second write of ``operation`` (its first landed) is refused with 500, and so is
        every write the adapter retries within the same call (an API server that stays
        unavailable that long: etcd electing a leader), so that the operation is left cut."""
        cluster = self.cluster_of(backend)
        if operation != "requeue":
            raise CannotInject(f"fail_between_steps({operation})")

        def refuse(request: Route) -> None:
            cluster.sim.faults.refuse_next(
                VERBS[request.method], request.plural, request.name or None, code=500
            )

        self._arm(
            cluster,
            f"fail_between_steps({operation})",
            operation,
            before=refuse,
            skip=1,
            lasting=True,
        )

    def vanish_before_read_back(
        self,
        backend: KubeflowBackend,
        operation: str,
        *,
        reuse_id: bool = False,
        early: bool = False,
    ) -> None:
        cluster = self.cluster_of(backend)
        if operation not in ("start", "stop") or (early and (operation != "stop" or reuse_id)):
            raise CannotInject(f"vanish_before_read_back({operation})")

        def vanish(request: Route) -> None:
            if request.name:
                names = [request.name]
            else:  # a create: the TrainJob it made is the newest in the namespace
                made = cluster.sim.store.select(TRAINJOBS, request.namespace)
                names = [str(made[-1]["metadata"]["name"])] if made else []
            for name in names:
                found = cluster.sim.store.peek(TRAINJOBS, request.namespace, name)
                if found is None:
                    continue
                with contextlib.suppress(Exception):
                    cluster.sim.faults.admin_delete(TRAINJOBS, request.namespace, name)
                self._gone(cluster, request.namespace, name, str(found["metadata"]["uid"]))
                if reuse_id:
                    self._take_name(cluster, request.namespace, name)

        need = f"vanish_before_read_back({operation})"
        if early:
            self._arm(cluster, need, operation, before=vanish)
        else:
            self._arm(cluster, need, operation, after=vanish)

    def race_next_write(self, backend: KubeflowBackend, operation: str, race: Race) -> None:
        cluster = self.cluster_of(backend)
        if operation not in ("hold", "release", "requeue"):
            raise CannotInject(f"race_next_write({operation}, {race.value})")
        if race is Race.TOUCHED:
            touched: set[tuple[str, str, str]] = set()
            self._arm(
                cluster,
                f"race_next_write({operation})",
                operation,
                before=lambda request: self._touch(cluster, request, touched),
                lasting=True,
            )
            return

        def change(request: Route) -> None:
            name = request.name
            found = cluster.sim.store.peek(TRAINJOBS, request.namespace, name)
            if found is None and request.plural.startswith("workloads"):
                wl = cluster.sim.store.peek(WORKLOADS, request.namespace, name)
                owner = (wl or {}).get("metadata", {}).get("ownerReferences") or [{}]
                name = str(owner[0].get("name", ""))
                found = cluster.sim.store.peek(TRAINJOBS, request.namespace, name)
            if found is None:
                return
            ref = ObjectRef(
                backend=CLUSTER,
                uid=str(found["metadata"]["uid"]),
                id=f"{request.namespace}/{name}",
                submit=found["metadata"]["creationTimestamp"],
            )
            if race is Race.STARTS:
                with contextlib.suppress(Rejected):
                    self._starts(cluster, ref)
            elif race is Race.ENDS:  # a queued TrainJob ends only by running: it runs, fails
                with contextlib.suppress(Rejected):
                    self.finish(backend, ref, 1)
            else:
                cluster.sim.faults.admin_delete(TRAINJOBS, request.namespace, name)
                self._gone(cluster, request.namespace, name, ref.uid)

        self._arm(cluster, f"race_next_write({operation})", operation, before=change)

    def _touch(
        self, cluster: SimCluster, request: Route, touched: set[tuple[str, str, str]]
    ) -> None:
        """Another writer annotates the TrainJob or Workload the request writes, the first time
        a request of the armed operation writes it: its resourceVersion moves past the one the
        adapter read."""
        resource = {"trainjobs": TRAINJOBS, "workloads": WORKLOADS}.get(request.plural)
        key = (request.plural, request.namespace, request.name)
        if resource is None or not request.name or key in touched:
            return
        touched.add(key)

        def annotate(obj: JSON) -> None:
            obj["metadata"].setdefault("annotations", {})[TOUCHED_BY] = str(len(touched))

        with cluster.sim.lock, contextlib.suppress(ApiError):  # gone: the write finds that out
            cluster.sim.store.mutate(
                resource, request.namespace, request.name, annotate, internal=False, copy=False
            )
            cluster.sim.runner.settle()

    def _starts(self, cluster: SimCluster, ref: ObjectRef) -> None:
        """The queued object starts: as the scheduler would once it is eligible (a hold by
        suspend is lifted by nobody here, so only an unsuspended object can start)."""
        self._let_run(cluster, ref)

    def _arm(
        self,
        cluster: SimCluster,
        need: str,
        operation: str,
        *,
        before: Callable[[Route], None] | None = None,
        after: Callable[[Route], None] | None = None,
        skip: int = 0,
        lasting: bool = False,
    ) -> None:
        if operation not in WRITE_VERBS:
            raise CannotInject(need)
        cluster.armed.append(Armed(need, operation, before, after, skip, lasting))

    def unfired(self, backend: KubeflowBackend) -> list[str]:
        return self.cluster_of(backend).unfired()

    # -- a hold's field ------------------------------------------------------------------------

    def hold_edges(self) -> int:
        return len(CLOCK_HOLD_EDGES)

    def hold_edge(self, backend: KubeflowBackend, variant: int = 0) -> str:
        """The clock moved to the millisecond where the adapter's numbering
        (:class:`~adapters.kubeflow.holds.HoldNumbers`) reaches the edge."""
        cluster = self.cluster_of(backend)
        residue, form = CLOCK_HOLD_EDGES[variant % len(CLOCK_HOLD_EDGES)]
        if not advance_to_residue(cluster.clock.now, cluster.clock.advance, residue, HoldBound - 1):
            raise CannotInject(f"hold_edge (the clock did not stop at {form})")
        return form

    def near_hold_forms(self) -> int:
        return len(NEAR_HOLDS)

    def near_hold(self, backend: KubeflowBackend, ref: ObjectRef, variant: int = 0) -> str:
        """The user writes ``dispatch/hold`` with a value just outside the encoding and defers
        the queued object (suspend; with Kueue, the Workload's ``spec.active=false``)."""
        cluster = self.cluster_of(backend)
        trainjob = cluster.require(ref)
        if cluster.running(trainjob) or cluster.finished(trainjob):
            raise CannotInject(f"near_hold (TrainJob {ref.id} is not queued)")
        text, form = NEAR_HOLDS[variant % len(NEAR_HOLDS)]
        metadata = trainjob["metadata"]
        namespace, name = str(metadata["namespace"]), str(metadata["name"])

        def change(obj: JSON) -> None:
            obj["metadata"].setdefault("annotations", {})[HOLD] = text
            if not cluster.kueue:
                obj["spec"]["suspend"] = True

        with cluster.sim.lock:
            cluster.sim.store.mutate(TRAINJOBS, namespace, name, change, internal=False, copy=False)
            if cluster.kueue:
                wl = cluster.workload(trainjob)
                if wl is not None:

                    def deactivate(obj: JSON) -> None:
                        obj["spec"]["active"] = False

                    cluster.sim.store.mutate(
                        WORKLOADS,
                        namespace,
                        str(wl["metadata"]["name"]),
                        deactivate,
                        internal=False,
                        copy=False,
                    )
            cluster.sim.runner.settle()
        return form

    # -- look-alikes ---------------------------------------------------------------------------

    def look_alike_forms(self, kind: LookAlike) -> int:
        return max(1, look_alike_forms(kind))

    def describe_look_alike(self, kind: LookAlike, variant: int = 0) -> str:
        return describe(kind, variant)

    def inject_look_alike(
        self,
        backend: KubeflowBackend,
        job_id: JobID,
        kind: LookAlike,
        variant: int = 0,
        *,
        other: JobID | None = None,
        requeued: bool = False,
    ) -> str:
        """A TrainJob of the look-alike's labels, made by another user (suspended, so it stays
        queued, with Kueue on the job's LocalQueue unless ``requeued``; another namespace for
        :attr:`LookAlike.OTHER_USER`), named after the job's
        TrainJobs so that only the labels tell it apart; a :attr:`LookAlike.MISNAMED` one
        carries the labels of the job's submission 1 under its form's name, so that only the
        name does."""
        cluster = self.cluster_of(backend)
        if kind is LookAlike.COMMA_LIST:
            raise CannotInject(look_alike_need(LookAlike.COMMA_LIST), why=COMMA_LIST_WHY)
        form = look_alike(job_id, kind, variant)
        labels = {JOB_LABEL: form.job, **dict(form.extra_labels)}
        serial = next(cluster.serial)
        submission = form.submission
        name = f"dj-{str(job_id).lower()}-la{serial}"
        if kind in NAMED_AS_IMPLIED and submission == "1":
            # The name its labels imply (a submission nobody started), so that only the field
            # under test tells it from the job's: a name of its own alone makes it foreign, and
            # would hide a parser lenient on the attempt or the execution.
            submission = str(LOOK_ALIKE_SUBMISSIONS + serial)
            name = f"dj-{str(job_id).lower()}-{submission}"
        if form.name:
            name = self._misnamed(cluster, form, job_id, serial)
        if submission is not None:
            labels[SUBMISSION_LABEL] = submission
        annotations = {} if form.attempt is None else {ATTEMPT_ANNOTATION: form.attempt}
        namespace = OTHER_NAMESPACE if form.other_namespace else NAMESPACE
        # With Kueue, on the job's queue, where the readmission gate judges it; a requeued one
        # its owner runs outside Kueue (Kueue suspends again a queued job it did not admit).
        queue = QUEUE if cluster.kueue and not requeued else None
        body = dispatch_trainjob(
            name, labels, annotations, queue=queue, suspend=True, execution=form.execution
        )
        with cluster.sim.lock:
            cluster.sim.create(TRAINJOBS, body, namespace)
        if requeued:
            self._requeue_look_alike(cluster, namespace, name)
        return f"{namespace}/{name}"

    def _misnamed(self, cluster: SimCluster, form: Form, job_id: JobID, serial: int) -> str:
        """The name of the misnamed look-alike ``form`` of ``job_id``: another submission's is
        one no check starts; the leading zeros are as many as keep the name free (``dj-..-01``
        unless the job has one already)."""
        for zeros in range(1, MISNAMED_ZEROS + 1):
            name = misnamed_name(form, job_id, serial, LOOK_ALIKE_SUBMISSIONS + serial, zeros)
            if cluster.sim.store.peek(TRAINJOBS, NAMESPACE, name) is None:
                return name
        raise CannotInject(
            look_alike_need(LookAlike.MISNAMED),
            why=f"{form.about}: every such name up to 63 characters is taken",
        )

    def _requeue_look_alike(self, cluster: SimCluster, namespace: str, name: str) -> None:
        """The look-alike runs, then is suspended again by its owner (back in the queue)."""

        def suspend(value: bool) -> Callable[[JSON], None]:
            def change(obj: JSON) -> None:
                obj["spec"]["suspend"] = value

            return change

        with cluster.sim.lock:
            cluster.sim.store.mutate(
                TRAINJOBS, namespace, name, suspend(False), internal=False, copy=False
            )
            cluster.sim.runner.settle()
        cluster.clock.advance(10)
        with cluster.sim.lock:
            cluster.sim.store.mutate(
                TRAINJOBS, namespace, name, suspend(True), internal=False, copy=False
            )
            cluster.sim.runner.settle()


@dataclass
class _Made:
    cluster: SimCluster
    backends: list[KubeflowBackend] = field(default_factory=list)


class KubeflowSimHarness(
    Harness[KubeflowBackend],
    SimPowers,
    ObservesExecutions[KubeflowBackend],
    ObservesImages[KubeflowBackend],
    ShowsInventory[KubeflowBackend],
    RerunsFailures,
    WeakensIdentity,
    WritesRankOutput[KubeflowBackend],
    OpensOtherTargets[KubeflowBackend],
    AsksBeyondCapacity,
    AsksUnpullableImage,
    PreflightsFree,
):
    """The Kubeflow adapter on a fresh simulated cluster per backend, with or without Kueue
    (and then the gate); ``backend_type`` and ``gate_type`` let a broken variant stand in.
    ``stateful_examples`` lowers the stateful checks' programs (None: the suite's own number;
    each program costs a few hundred requests of about 1 ms in process, 2.5 ms over HTTP);
    ``over_http``: the adapter's requests go over loopback HTTP, not in process.

    Both configurations implement the same powers (:class:`SimPowers` and the probes here):
    without Kueue it declines ``requeue_underneath`` (:data:`NO_KUEUE_REQUEUE`) and
    ``take_quota`` (:data:`NO_KUEUE_QUOTA`)."""

    identity = KUBE_IDENTITY
    schedule_within = 30.0

    def __init__(
        self,
        kueue: bool = False,
        *,
        seed: int = 0,
        backend_type: type[KubeflowBackend] = KubeflowBackend,
        gate_type: type[ReadmissionGate] = ReadmissionGate,
        default_runtime: str = "dispatch-identity",
        name: str | None = None,
        stateful_examples: int | None = None,
        over_http: bool = False,
    ) -> None:
        self.kueue = kueue
        self.over_http = over_http
        self.name = name or ("kubeflow-sim-kueue" if kueue else "kubeflow-sim")
        # With Kueue, Kueue readmits an evicted Workload by itself: nothing keeps a requeued
        # TrainJob held; without it, nothing requeues a TrainJob underneath at all.
        self.impossible = (
            KUBE_IMPOSSIBLE | {"requeue_underneath(held)"}
            if kueue
            else KUBE_IMPOSSIBLE | {Fault.REQUEUE_UNDERNEATH, Fault.TAKE_QUOTA}
        )
        self.seed = seed
        self.seeds = itertools.count(seed)
        self.backend_type = backend_type
        self.gate_type = gate_type
        self.default_runtime = default_runtime
        self.stateful_examples = stateful_examples
        self.made: list[SimCluster] = []
        self.by_backend: dict[int, tuple[KubeflowBackend, SimCluster]] = {}

    def declines(self, need: str) -> str | None:
        if need in REFUSED:
            return REFUSED[need]
        if need == Fault.REQUEUE_UNDERNEATH and not self.kueue:
            return NO_KUEUE_REQUEUE
        if need == Fault.TAKE_QUOTA and not self.kueue:
            return NO_KUEUE_QUOTA
        return None

    def begin(self, check_id: str) -> None:
        """Each check's clusters are seeded from the harness's seed and the check's id."""
        self.seeds = itertools.count(self.seed * 1_000_003 + zlib.crc32(check_id.encode()))

    def end(self, check_id: str) -> None:
        """Stop every server started for the check, and forget its clusters."""
        made, self.made = self.made, []
        self.by_backend.clear()
        for cluster in made:
            cluster.close()

    def close(self) -> None:
        self.end("")

    def _backend(
        self,
        cluster: SimCluster,
        *,
        namespace: str = NAMESPACE,
        name: str = CLUSTER,
        queue: str = QUEUE,
    ) -> KubeflowBackend:
        backend = self.backend_type(
            cluster.api(namespace),
            namespace,
            name,
            queue=queue if self.kueue else None,
            default_runtime=self.default_runtime,
            clock=cluster.clock,
        )
        self.by_backend[id(backend)] = (backend, cluster)
        return backend

    def _cluster(self) -> SimCluster:
        cluster = SimCluster(self.kueue, next(self.seeds), over_http=self.over_http)
        if cluster.gate is not None and self.gate_type is not ReadmissionGate:
            cluster.gate = self.gate_type(cluster.plain_client(), clock=cluster.sim.clock)
        self.made.append(cluster)
        return cluster

    def new_backend(self) -> KubeflowBackend:
        return self._backend(self._cluster())

    def cluster_of(self, backend: KubeflowBackend) -> SimCluster:
        found = self.by_backend.get(id(backend))
        if found is None or found[0] is not backend:
            raise TypeError(f"the {self.name} harness was given a backend it did not make")
        return found[1]

    def reopen(self, backend: KubeflowBackend) -> KubeflowBackend:
        return self._backend(
            self.cluster_of(backend),
            namespace=backend.namespace,
            name=backend.cluster,
            queue=backend.queue or QUEUE,
        )

    def self_restarting_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` on the runtime every cluster of the harness has, whose JobSet restarts
        once after a failure (:func:`restarting_runtime`)."""
        return naming(spec, RESTARTING_RUNTIME)

    def weakening_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` naming a stock runtime, not the adapter's default
        (:data:`WEAKENING_RUNTIMES`); the harness's adapter has no ``allow_rank_restart``."""
        return naming(spec, next(r for r in WEAKENING_RUNTIMES if r != self.default_runtime))

    def keeping_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` naming an identity-keeping runtime, not the adapter's default
        (:data:`KEEPING_RUNTIMES`)."""
        return naming(spec, next(r for r in KEEPING_RUNTIMES if r != self.default_runtime))

    def beyond_capacity_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` on one node more than the cluster holds pods (:data:`POD_QUOTA`, the
        ClusterQueue's quota with Kueue: ``ExceedsMaxQuota``; without, the last pod stays
        ``Unschedulable``)."""
        return spec.model_copy(update={"nodes": POD_QUOTA + 1})

    def unpullable_image_spec(self, spec: JobSpec) -> JobSpec:
        """``spec`` in :data:`UNPULLABLE_IMAGE`."""
        extensions = {**spec.extensions, IMAGE: UNPULLABLE_IMAGE}
        return spec.model_copy(update={"extensions": extensions})

    def other_target_forms(self) -> int:
        """Another namespace and another cluster; with Kueue, another queue too."""
        return len(OTHER_TARGETS) if self.kueue else len(OTHER_TARGETS) - 1

    def other_target(
        self, backend: KubeflowBackend, spec: JobSpec, variant: int = 0
    ) -> OtherTarget:
        """``spec`` naming the runtime :meth:`keeping_spec` names, on another namespace of
        ``backend``'s cluster whose TrainingRuntime of that name weakens identity (with Kueue,
        on a LocalQueue of that namespace on the gated ClusterQueue), or on a second cluster
        whose ClusterTrainingRuntime of that name does; with Kueue, ``spec`` as it is on a
        LocalQueue whose ClusterQueue lists no AdmissionCheck."""
        kind = OTHER_TARGETS[variant % self.other_target_forms()]
        cluster = self.cluster_of(backend)
        keeping = self.keeping_spec(spec)
        runtime = str(keeping.extensions[RUNTIME_EXTENSION])
        weakens = f"reruns a failed rank under the identity it had (as {WEAKENING_RUNTIMES[0]})"
        if kind == "namespace":
            cluster.ensure(
                TRAININGRUNTIMES, weakening_as(runtime, TRAININGRUNTIMES), SECOND_NAMESPACE
            )
            if self.kueue:
                cluster.ensure_all(queue_objects(queue_config(namespace=SECOND_NAMESPACE)))
            other = self._backend(cluster, namespace=SECOND_NAMESPACE)
            about = f"namespace {SECOND_NAMESPACE}, whose TrainingRuntime {runtime} {weakens}"
            return OtherTarget(other, keeping, about)
        if kind == "cluster":
            second = self._cluster()
            with second.sim.lock:
                second.sim.store.delete(CLUSTERTRAININGRUNTIMES, "", runtime, internal=True)
            second.sim.create(
                CLUSTERTRAININGRUNTIMES, weakening_as(runtime, CLUSTERTRAININGRUNTIMES)
            )
            other = self._backend(second, name=OTHER_CLUSTER)
            about = f"cluster {OTHER_CLUSTER}, whose ClusterTrainingRuntime {runtime} {weakens}"
            return OtherTarget(other, keeping, about)
        ungated = queue_config(OTHER_CLUSTER_QUEUE, OTHER_QUEUE, gated=False)
        cluster.ensure_all(queue_objects(ungated))
        other = self._backend(cluster, queue=OTHER_QUEUE)
        about = (
            f"LocalQueue {OTHER_QUEUE}, whose ClusterQueue {OTHER_CLUSTER_QUEUE} lists no "
            f"AdmissionCheck {CHECK_NAME} (no readmission gate)"
        )
        return OtherTarget(other, spec, about)

    def rank_writes(self, backend: KubeflowBackend, ref: ObjectRef, rank: int, text: str) -> None:
        """The ``node`` container of rank ``rank``'s pod (:meth:`SimCluster.rank_pod`) writes
        ``text`` to its log now, as its process would: the simulated kubelet keeps it with the
        container's run, and ``GET pods/<pod>/log`` answers it (kubelet.write_log)."""
        cluster = self.cluster_of(backend)
        pod = cluster.rank_pod(cluster.require(ref), rank)["metadata"]
        with cluster.sim.lock:
            write_log(cluster.sim.cluster, str(pod["namespace"]), str(pod["name"]), CONTAINER, text)

    def clock(self, backend: KubeflowBackend) -> Clock:
        return self.cluster_of(backend).clock

    def executions(
        self, backend: KubeflowBackend, ref: ObjectRef
    ) -> Sequence[Sequence[Mapping[str, str]]]:
        return self.cluster_of(backend).executions(ref)

    def images(self, backend: KubeflowBackend, ref: ObjectRef) -> Sequence[Sequence[str]]:
        return self.cluster_of(backend).images(ref)

    def inventory(self, backend: KubeflowBackend) -> Sequence[str]:
        return self.cluster_of(backend).inventory()

    def listing(self, backend: KubeflowBackend) -> Mapping[str, Listed]:
        return self.cluster_of(backend).listing()


def kubeflow_sim() -> KubeflowSimHarness:
    return KubeflowSimHarness(kueue=False)


def kubeflow_sim_kueue() -> KubeflowSimHarness:
    return KubeflowSimHarness(kueue=True)


__all__ = [
    "KUBE_IDENTITY",
    "REFUSED",
    "HookedApiClient",
    "KubeflowSimHarness",
    "SimClock",
    "SimCluster",
    "SimPowers",
    "kubeflow_sim",
    "kubeflow_sim_kueue",
    "trainjob_listing",
]
