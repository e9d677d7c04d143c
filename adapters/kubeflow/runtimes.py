"""The training runtimes a TrainJob names, read from the cluster, and what each one means for
dispatch: the answers that depend on the runtime (facts §4, §12; DESIGN §11).

Which runtime a name means: a namespaced ``TrainingRuntime`` of that name in the adapter's
namespace when there is one (the namespace's own choice wins, as it is the narrower one),
else the ``ClusterTrainingRuntime``; neither is :class:`~dispatch_core.Unsupported`. Each is
read once per adapter instance (cached; a new instance reads again).

Per runtime:

- the ML policy (``torch``, ``mpi``, ``jax``, ``xgboost``, ``flux``, else plain);
- identity: a runtime keeps it only if every replicatedJob's Job template has
  ``restartPolicy: Never``, ``backoffLimit: 0`` and neither ``podFailurePolicy`` nor
  ``backoffLimitPerIndex`` (JobSet defaults ``OnFailure``, Job defaults ``backoffLimit: 6``:
  a failed rank would rerun under the identity it had);
- JobSet restarts: ``failurePolicy.maxRestarts`` above 9, a rule whose action is
  ``RestartJobSetAndIgnoreMaxRestarts``, or ``restartStrategy: InPlaceRestart`` cannot be
  carried by the one restart digit of R: refused;
- whether the Trainer env reaches every rank: a trainer-step replicatedJob with a ``node``
  container, and for MPI ``runLauncherAsNode`` (else the worker ranks are started over ssh
  and never see the Trainer env).

Every field is parsed strictly: a runtime whose spec is not of the documented shape is
answered ``no`` with what was wrong, never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from adapters.kubeflow.env import MAX_RESTARTS
from adapters.kubeflow.kube import TRAINER, ApiFailure, Kube, LostReply
from dispatch_core import OutcomeUnknown, Support, Unsupported

ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
NODE: Final = "node"
POLICIES: Final = ("torch", "mpi", "jax", "xgboost", "flux")


@dataclass(frozen=True)
class Runtime:
    """What the adapter needs to know of one runtime."""

    name: str
    kind: str
    policy: str = "plain"
    replicated_jobs: tuple[str, ...] = ()
    trainer_node: bool = False
    trainer_job: str = ""
    """The first trainer-step replicatedJob with a ``node`` container (rank 0's)."""
    launcher_as_node: bool = True
    max_restarts: int = 0
    restart_refusal: str = ""
    weakening: tuple[str, ...] = ()
    broken: str = ""
    ref: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"runtime {self.name}"

    def weakened(self) -> str:
        """Why a failed rank of this runtime reruns under the identity it had, or ""."""
        if not self.weakening:
            return ""
        return (
            f"{self.label}: {'; '.join(self.weakening)}, so a failed rank reruns under the "
            "identity it had"
        )

    def injection_gap(self) -> str:
        """Why the Trainer env would not reach every rank, or ""."""
        if self.broken:
            return f"{self.label} is unreadable: {self.broken}"
        if not self.trainer_node:
            return (
                f"{self.label} has no trainer-step replicatedJob with a '{NODE}' container: "
                "the Trainer env (and DISPATCH_ variables) would reach no rank"
            )
        if self.policy == "mpi" and not self.launcher_as_node:
            return (
                f"{self.label}: MPI without runLauncherAsNode starts worker ranks over ssh, "
                "which never see the Trainer env"
            )
        return self.restart_refusal

    def own_retries(self) -> str:
        """Why the scheduler reruns a job of this runtime unasked, or ""."""
        reasons = []
        if self.max_restarts > 0:
            reasons.append(
                f"{self.label}: its JobSet failurePolicy.maxRestarts is {self.max_restarts}, "
                "so JobSet restarts a failed job itself"
            )
        weakened = self.weakened()
        if weakened:
            reasons.append(weakened)
        return "; ".join(reasons)

    def procs_per_node(self) -> Support:
        if self.policy == "torch":
            return Support.yes(f"{self.label}: torch takes numProcPerNode (PET_NPROC_PER_NODE)")
        if self.policy == "mpi":
            return Support.yes(f"{self.label}: MPI takes numProcPerNode (hostfile slots)")
        if self.policy == "jax":
            return Support.no(f"{self.label}: JAX runs one process per node")
        return Support.no(f"{self.label}: a {self.policy} runtime gives numProcPerNode no meaning")

    def container_image(self) -> Support:
        if self.trainer_node:
            return Support.yes(f"{self.label}: spec.trainer.image sets its trainer '{NODE}' image")
        return Support.no(f"{self.label} has no trainer-step '{NODE}' container to set")

    def native_restart(self) -> Support:
        if self.restart_refusal:
            return Support.no(self.restart_refusal)
        if self.max_restarts > 0:
            return Support.yes(
                f"{self.label}: JobSet failurePolicy.maxRestarts {self.max_restarts} "
                "(JobSet restarts every Job; restart-attempt gives each restart its identity)"
            )
        return Support.no(f"{self.label}: its JobSet failurePolicy allows no restart")


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} is {type(value).__name__}, not an object")
    return value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} is {value!r}, not an integer")
    return value


def parse_runtime(obj: Mapping[str, Any], kind: str) -> Runtime:
    """The :class:`Runtime` of a ClusterTrainingRuntime or TrainingRuntime object."""
    name = str(_mapping(obj.get("metadata"), "metadata").get("name", ""))
    ref = {"name": name, "apiGroup": TRAINER[0], "kind": kind}
    try:
        return _parse(obj, name, kind, ref)
    except ValueError as error:
        return Runtime(name=name, kind=kind, broken=str(error), ref=ref)


def _parse(obj: Mapping[str, Any], name: str, kind: str, ref: dict[str, str]) -> Runtime:
    spec = _mapping(obj.get("spec"), "spec")
    ml = _mapping(spec.get("mlPolicy"), "spec.mlPolicy")
    present = [p for p in POLICIES if ml.get(p) is not None]
    if len(present) > 1:
        raise ValueError(f"spec.mlPolicy names {', '.join(present)}: at most one")
    policy = present[0] if present else "plain"
    launcher = True
    if policy == "mpi":
        value = _mapping(ml["mpi"], "mlPolicy.mpi").get("runLauncherAsNode", False)
        if not isinstance(value, bool):
            raise ValueError(f"mlPolicy.mpi.runLauncherAsNode is {value!r}")
        launcher = value
    jobset = _mapping(_mapping(spec.get("template"), "spec.template").get("spec"), "template.spec")
    rjobs = jobset.get("replicatedJobs")
    if not isinstance(rjobs, list) or not rjobs:
        raise ValueError("template.spec.replicatedJobs is empty or not a list")
    names: list[str] = []
    trainer_node = False
    trainer_job = ""
    weakening: list[str] = []
    for i, rjob in enumerate(rjobs):
        rjob = _mapping(rjob, f"replicatedJobs[{i}]")
        rname = rjob.get("name")
        if not isinstance(rname, str) or not rname:
            raise ValueError(f"replicatedJobs[{i}].name is {rname!r}")
        names.append(rname)
        template = _mapping(rjob.get("template"), f"replicatedJobs[{i}].template")
        labels = _mapping(_mapping(template.get("metadata"), "metadata").get("labels"), "labels")
        job = _mapping(template.get("spec"), f"{rname}.template.spec")
        pod = _mapping(_mapping(job.get("template"), "pod template").get("spec"), "pod spec")
        containers = pod.get("containers") or []
        if not isinstance(containers, list):
            raise ValueError(f"{rname}: containers is not a list")
        if labels.get(ANCESTOR_LABEL) == "trainer" and any(
            isinstance(c, Mapping) and c.get("name") == NODE for c in containers
        ):
            trainer_node = True
            trainer_job = trainer_job or rname
        weakening.extend(_weakening(rname, job, pod))
    policy_spec = _mapping(jobset.get("failurePolicy"), "failurePolicy")
    max_restarts = _int(policy_spec.get("maxRestarts", 0), "failurePolicy.maxRestarts")
    refusal = ""
    rules = policy_spec.get("rules") or []
    if not isinstance(rules, list):
        raise ValueError("failurePolicy.rules is not a list")
    actions = {str(_mapping(r, "rule").get("action", "")) for r in rules}
    label = f"runtime {name}"
    if max_restarts > MAX_RESTARTS:
        refusal = (
            f"{label}: its JobSet failurePolicy.maxRestarts is {max_restarts}; the execution "
            f"identity carries at most {MAX_RESTARTS} JobSet restarts (one digit of R)"
        )
    elif "RestartJobSetAndIgnoreMaxRestarts" in actions:
        refusal = (
            f"{label}: a failurePolicy rule restarts with RestartJobSetAndIgnoreMaxRestarts, so "
            "restarts are unbounded and the execution identity cannot carry them"
        )
    elif policy_spec.get("restartStrategy") == "InPlaceRestart":
        refusal = f"{label}: restartStrategy InPlaceRestart keeps restart-attempt unchanged"
    return Runtime(
        name=name,
        kind=kind,
        policy=policy,
        replicated_jobs=tuple(names),
        trainer_node=trainer_node,
        trainer_job=trainer_job,
        launcher_as_node=launcher,
        max_restarts=max_restarts,
        restart_refusal=refusal,
        weakening=tuple(weakening),
        ref=ref,
    )


def _weakening(rname: str, job: Mapping[str, Any], pod: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    policy = pod.get("restartPolicy")
    if policy is None:
        found.append(f"its {rname} Job defaults restartPolicy OnFailure (JobSet webhook)")
    elif policy != "Never":
        found.append(f"its {rname} Job has restartPolicy {policy}")
    limit = job.get("backoffLimit")
    if limit is None:
        found.append(f"its {rname} Job defaults backoffLimit 6")
    elif _int(limit, f"{rname}.backoffLimit") != 0:
        found.append(f"its {rname} Job has backoffLimit {limit}")
    if job.get("podFailurePolicy") is not None:
        found.append(f"its {rname} Job has a podFailurePolicy")
    if job.get("backoffLimitPerIndex") is not None:
        found.append(f"its {rname} Job has backoffLimitPerIndex")
    return found


class Runtimes:
    """The runtimes of one adapter instance, read through its client and cached."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self._cache: dict[str, Runtime] = {}

    def get(self, name: str) -> Runtime:
        """The runtime ``name`` means in this namespace; Unsupported when there is none."""
        cached = self._cache.get(name)
        if cached is not None:
            return cached
        found: Runtime | None = None
        for kind, plural, namespace in (
            ("TrainingRuntime", "trainingruntimes", self.namespace),
            ("ClusterTrainingRuntime", "clustertrainingruntimes", None),
        ):
            try:
                obj = self.kube.get(TRAINER, plural, namespace, name)
            except ApiFailure as failure:
                if failure.status == 404:
                    continue
                raise OutcomeUnknown(f"reading {kind} {name}: {failure}") from None
            except LostReply as lost:
                raise OutcomeUnknown(f"reading {kind} {name}: {lost}") from None
            found = parse_runtime(obj, kind)
            break
        if found is None:
            raise Unsupported(
                f"no TrainingRuntime {name!r} in namespace {self.namespace} and no "
                f"ClusterTrainingRuntime {name!r}"
            )
        self._cache[name] = found
        return found


__all__ = ["ANCESTOR_LABEL", "Runtime", "Runtimes", "parse_runtime"]
