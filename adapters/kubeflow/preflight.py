"""Preflight: probes of what this cluster and namespace really give the Kubeflow adapter.

Each probe is bounded by ``options.bound`` seconds of the adapter's clock, removes what it
submitted, and answers with source ``probed`` and a reason saying what it saw:

- the runtimes present (ClusterTrainingRuntimes, and TrainingRuntimes of the namespace), and
  the default runtime's answers (ContainerImage, ProcsPerNode, NativeRestart, and
  AttemptInjection with its refusal, if any);
- Kueue installed (API discovery lists ``kueue.x-k8s.io``): NativeRequeue;
- with a queue, the readmission gate's AdmissionCheck on the queue's ClusterQueue:
  ReadmissionGate;
- OutputRead and OutputFollow: a probe TrainJob of the default runtime whose command writes
  one line (``echo``; ``KUBE_SIM_LOG`` says the same line to a simulator, whose containers
  run no process), read back from rank 0's pod log, then deleted (``stop``).

Only the cluster-wide answers (NativeRequeue, ReadmissionGate, OutputRead, OutputFollow) are
kept by the adapter for later ``capabilities``; the per-runtime ones depend on the spec.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adapters.kubeflow.kube import KUEUE, TRAINER, ApiFailure, LostReply
from dispatch_core import (
    Capability,
    DispatchError,
    JobID,
    JobSpec,
    Plan,
    PreflightOptions,
    Source,
    Support,
    Tristate,
)
from dispatch_core.clock import pause

if TYPE_CHECKING:
    from adapters.kubeflow.backend import KubeflowBackend

PROBE_MARK: Final = "dispatch-preflight"
KEPT: Final = (
    Capability.NATIVE_REQUEUE,
    Capability.READMISSION_GATE,
    Capability.OUTPUT_READ,
    Capability.OUTPUT_FOLLOW,
)


def probed(value: Tristate | str, reason: str) -> Support:
    return Support(value=value, source=Source.PROBED, reason=reason)


def _as_probed(answer: Support) -> Support:
    return probed(answer.value, answer.reason)


def run_preflight(backend: KubeflowBackend, options: PreflightOptions) -> dict[Capability, Support]:
    say = options.progress or (lambda line: None)
    answers: dict[Capability, Support] = {}
    kube = backend.kube

    say("runtimes: listing ClusterTrainingRuntimes and TrainingRuntimes")
    try:
        found = kube.list_objects(TRAINER, "clustertrainingruntimes", None)
        found += kube.list_objects(TRAINER, "trainingruntimes", backend.namespace)
        names = sorted({str((o.get("metadata") or {}).get("name")) for o in found})
    except (ApiFailure, LostReply) as error:
        names = []
        say(f"runtimes: unreadable ({error})")
    spec = JobSpec(command=("echo", PROBE_MARK), env={"KUBE_SIM_LOG": f"0:{PROBE_MARK}"})
    general = backend.capabilities(spec)
    for cap in (
        Capability.CONTAINER_IMAGE,
        Capability.PROCS_PER_NODE,
        Capability.NATIVE_RESTART,
        Capability.ATTEMPT_INJECTION,
    ):
        answer = general[cap]
        answers[cap] = probed(
            answer.value, f"{answer.reason} (runtimes present: {', '.join(names) or 'none'})"
        )

    say("kueue: API discovery")
    try:
        kueue = KUEUE[0] in kube.api_groups()
    except (ApiFailure, LostReply) as error:
        kueue = False
        answers[Capability.NATIVE_REQUEUE] = probed(Tristate.UNKNOWN, f"discovery failed: {error}")
    if Capability.NATIVE_REQUEUE not in answers:
        if kueue and backend.queue is not None:
            answers[Capability.NATIVE_REQUEUE] = probed(
                Tristate.YES, f"Kueue is installed and jobs go to LocalQueue {backend.queue}"
            )
        elif kueue:
            answers[Capability.NATIVE_REQUEUE] = probed(
                Tristate.NO, "Kueue is installed, but the adapter was given no queue"
            )
        else:
            answers[Capability.NATIVE_REQUEUE] = probed(Tristate.NO, "Kueue is not installed")
    if backend.queue is None:
        answers[Capability.READMISSION_GATE] = probed(
            Tristate.NO, "no queue: the adapter writes each execution itself"
        )
    elif not kueue:
        answers[Capability.READMISSION_GATE] = probed(
            Tristate.NO, f"queue {backend.queue} was named, but Kueue is not installed"
        )
    else:
        say(f"gate: the AdmissionChecks of LocalQueue {backend.queue}'s ClusterQueue")
        missing = backend.gate_missing()
        answers[Capability.READMISSION_GATE] = (
            probed(Tristate.NO, missing)
            if missing
            else probed(Tristate.YES, "the gate's AdmissionCheck is on the queue's ClusterQueue")
        )

    say("logs: a probe TrainJob that writes one line")
    logs = _log_probe(backend, spec, options)
    answers[Capability.OUTPUT_READ] = logs
    answers[Capability.OUTPUT_FOLLOW] = probed(logs.value, logs.reason)
    return answers


def kept(answers: dict[Capability, Support]) -> dict[Capability, Support]:
    """The cluster-wide answers an adapter keeps after its preflight."""
    return {cap: answers[cap] for cap in KEPT if cap in answers}


def _log_probe(backend: KubeflowBackend, spec: JobSpec, options: PreflightOptions) -> Support:
    plan = Plan(job=JobID(), backend=backend.name, spec=spec)
    try:
        ref = backend.start(plan, 1, 1)
    except DispatchError as error:
        return probed(Tristate.UNKNOWN, f"the probe TrainJob could not be submitted: {error}")
    try:
        waited, step = 0.0, 1.0
        seen = b""
        answered = False
        while waited <= options.bound:
            try:
                seen = backend.read_output(ref, 0)
                answered = True
            except DispatchError:
                pass
            if PROBE_MARK.encode() in seen:
                return probed(Tristate.YES, "rank 0's pod log of a probe TrainJob was read back")
            pause(backend.clock, step)
            waited += step
            step = min(step * 2, 8.0)
        if answered:
            return probed(
                Tristate.YES,
                f"rank 0's pod log of a probe TrainJob was readable, but its line did not show "
                f"within {options.bound:.0f} s",
            )
        return probed(
            Tristate.UNKNOWN,
            f"the probe TrainJob's log was not readable within {options.bound:.0f} s",
        )
    finally:
        try:
            backend.stop(ref)
        except DispatchError as error:
            say = options.progress or (lambda line: None)
            say(f"logs: the probe {ref.id} was not removed: {error}")
