"""The kubelets: pod phases, container states, restarts, logs and graceful termination.

Modelled, for pods bound to a node whose Ready condition is True (one kubelet per node, all in
this one controller; what each container does comes from behaviour.Behaviours):

- ``phase: Pending`` with ``waiting: ContainerCreating`` for ``pod_start_seconds`` after the
  kubelet first sees the pod; then ``running`` (``startedAt``, ``ready``), conditions
  ``PodReadyToStartContainers``, ``Initialized``, ``ContainersReady``, ``Ready``; ``podIP`` from
  the seeded generator, ``hostIP``, ``startTime``, ``qosClass``;
- a run ends at ``run_seconds`` with its exit code: ``terminated`` reason ``Completed`` (0) or
  ``Error``, or ``OOMKilled`` (137) at ``oom_after``; under ``OnFailure`` (non-zero exit) and
  ``Always`` the container restarts: ``lastState`` keeps the run, ``restartCount`` grows, and
  a first crash restarts at once, later ones wait ``CrashLoopBackOff`` for the back-off (10 s
  doubling, capped at 300 s, reset after 600 s without a crash: :func:`schedule_restart`);
- ``phase: Succeeded``/``Failed`` when every container has ended and none will restart;
- image pull failure: ``waiting: ErrImagePull`` at each attempt, ``ImagePullBackOff`` between
  attempts (10 s doubling, capped at KubeConfig.image_pull_backoff_max); the pod stays Pending
  for ever [A5]; ``CreateContainerConfigError`` stays too;
- graceful deletion: SIGTERM at once (a container that does not ignore it exits with its
  ``sigterm_exit_code``), SIGKILL (137) at the end of ``deletionGracePeriodSeconds``; then the
  final status and a delete with grace 0 (the pod goes when its finalizers are gone). A pod
  marked for deletion that never ran a container is removed at once;
- logs per container and run: :func:`logs` (what ``pods/log`` answers) and :func:`write_log`;
- faults: :func:`lose_node`, :func:`evict_pod`, :func:`oom_kill`, :func:`preempt_pod`.

Not modelled: init and sidecar containers, probes (ready = running), the node lifecycle
controller's timings other than the taint manager's 300 s, pod GC of pods on lost nodes (they
stay Terminating, as on a real cluster until the node object goes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Final

from simulators.kubernetes import errors
from simulators.kubernetes.behaviour import Behaviour, Behaviours
from simulators.kubernetes.controllers.base import Cluster, Controller
from simulators.kubernetes.controllers.scheduler import UNREACHABLE_TAINT, node_ready
from simulators.kubernetes.env import container_env
from simulators.kubernetes.errors import ApiError
from simulators.kubernetes.faults import FaultError
from simulators.kubernetes.objects import (
    JSON,
    annotations_of,
    clone,
    labels_of,
    meta,
    set_condition,
    timestamp,
)
from simulators.kubernetes.resources import NODES, PODS, ResourceType
from simulators.kubernetes.store import Event, Key

STATE_KEY: Final = "kubelet"
RESTART_BACKOFF: Final = 10.0
RESTART_BACKOFF_MAX: Final = 300.0
IMAGE_BACKOFF: Final = 10.0
SIGKILL_EXIT: Final = 137
TAINT_EVICTION_SECONDS: Final = 300.0
"""plugin/pkg/admission/defaulttolerationseconds: not-ready/unreachable tolerated for 300 s."""


@dataclass
class Run:
    """One run of a container: when it started and ended, and what it wrote."""

    started: float
    ended: float | None = None
    exit_code: int | None = None
    reason: str = ""
    written: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class ContainerRuntime:
    name: str
    image: str
    behaviour: Behaviour
    runs: list[Run] = field(default_factory=list)
    waiting: str = "ContainerCreating"
    waiting_message: str = ""
    next_at: float | None = None
    """When it (re)starts or retries its image pull."""
    pull_attempts: int = 0
    backoff: float = RESTART_BACKOFF
    backoff_at: float | None = None
    """The kubelet's flowcontrol.Backoff entry for this container: its period and lastUpdate."""

    @property
    def current(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    def running(self) -> bool:
        run = self.current
        return run is not None and run.ended is None

    def restarts(self) -> int:
        return max(0, len(self.runs) - 1)


@dataclass
class PodRuntime:
    uid: str
    seen_at: float
    containers: list[ContainerRuntime]
    pod_ip: str = ""
    started: bool = False
    sigterm_at: float | None = None
    kill_at: float | None = None
    done: bool = False
    evicted: tuple[str, str] | None = None


@dataclass(frozen=True)
class Start:
    """One container start, as its kubelet saw it: the pod then, the environment and the image
    the container runs."""

    at: float
    namespace: str
    pod: str
    pod_uid: str
    container: str
    labels: dict[str, str]
    annotations: dict[str, str]
    env: dict[str, str]
    image: str


STARTS_KEY: Final = "kubelet-starts"


def starts(cluster: Cluster) -> list[Start]:
    """Every container start so far, in order (kept after the pods are gone)."""
    found = cluster.extras.setdefault(STARTS_KEY, [])
    assert isinstance(found, list)
    return found


def _state(cluster: Cluster) -> dict[str, PodRuntime]:
    found = cluster.extras.setdefault(STATE_KEY, {})
    assert isinstance(found, dict)
    return found


def _behaviours(cluster: Cluster) -> Behaviours:
    if cluster.behaviours is None:
        cluster.behaviours = Behaviours.from_config(cluster.config)
    assert isinstance(cluster.behaviours, Behaviours)
    return cluster.behaviours


def _restart_policy(pod: JSON) -> str:
    return str(pod.get("spec", {}).get("restartPolicy", "Always"))


class Kubelet(Controller):
    """Every node's kubelet: runs the pods bound to Ready nodes on the virtual clock."""

    name: ClassVar[str] = "kubelet"
    primary: ClassVar[ResourceType] = PODS
    watches: ClassVar[tuple[ResourceType, ...]] = (NODES,)

    def keys_for(self, event: Event) -> Iterable[Key]:
        if event.resource is NODES:
            node = str(meta(event.object).get("name", ""))
            return [
                (str(meta(p).get("namespace", "")), str(meta(p).get("name", "")))
                for p in self.store.select(PODS)
                if p.get("spec", {}).get("nodeName") == node
            ]
        m = meta(event.object)
        if event.type == "DELETED":
            _state(self.cluster).pop(str(m.get("uid", "")), None)
            return []
        if not event.object.get("spec", {}).get("nodeName"):
            return []
        return [(str(m.get("namespace", "")), str(m.get("name", "")))]

    def reconcile(self, namespace: str, name: str) -> float | None:
        pod = self.store.peek(PODS, namespace, name)
        if pod is None:
            return None
        node_name = pod.get("spec", {}).get("nodeName")
        if not node_name:
            return None
        node = self.store.peek(NODES, "", str(node_name))
        if node is None or node_ready(node) != "True":
            return None
        now = self.cluster.now()
        state = _state(self.cluster)
        uid = str(meta(pod).get("uid", ""))
        runtime = state.get(uid)
        phase = pod.get("status", {}).get("phase")
        if runtime is None:
            if phase in ("Succeeded", "Failed"):
                return self._finish_if_deleted(pod, None)
            runtime = self._admit(pod, now)
            state[uid] = runtime
        if runtime.done:
            return self._finish_if_deleted(pod, runtime)
        if meta(pod).get("deletionTimestamp"):
            return self._terminate(pod, runtime, now)
        again = self._step(pod, runtime, now)
        self._write(pod, runtime, now)
        if runtime.done:
            return self._finish_if_deleted(self.store.peek(PODS, namespace, name), runtime)
        return again

    # -- lifecycle -----------------------------------------------------------------------------

    def _admit(self, pod: JSON, now: float) -> PodRuntime:
        behaviours = _behaviours(self.cluster)
        containers = [
            ContainerRuntime(
                str(c.get("name", "")),
                str(c.get("image", "")),
                behaviours.for_container(pod, c),
                next_at=now + float(self.cluster.config.pod_start_seconds),
            )
            for c in pod.get("spec", {}).get("containers") or []
            if isinstance(c, dict)
        ]
        return PodRuntime(str(meta(pod).get("uid", "")), now, containers)

    def _start(
        self, runtime: PodRuntime, container: ContainerRuntime, at: float, pod: JSON
    ) -> None:
        b = container.behaviour
        container.next_at = None
        if b.config_error:
            container.waiting = "CreateContainerConfigError"
            container.waiting_message = b.config_message
            return
        if b.image_pull is not None:
            container.pull_attempts += 1
            container.waiting = "ErrImagePull"
            container.waiting_message = (
                f'failed to pull and unpack image "{container.image}": failed to resolve '
                "reference: not found"
            )
            delay = min(
                IMAGE_BACKOFF * 2 ** (container.pull_attempts - 1),
                float(self.cluster.config.image_pull_backoff_max),
            )
            container.next_at = at + delay
            return
        container.waiting = ""
        container.waiting_message = ""
        container.runs.append(Run(started=at))
        if not runtime.pod_ip:
            rng = self.cluster.rng
            runtime.pod_ip = f"10.244.{rng.randrange(0, 256)}.{rng.randrange(2, 255)}"
        runtime.started = True
        spec = next(
            (
                c
                for c in pod.get("spec", {}).get("containers") or []
                if isinstance(c, dict) and c.get("name") == container.name
            ),
            {},
        )
        seen = clone(pod)
        seen.setdefault("status", {})["podIP"] = runtime.pod_ip
        m = meta(pod)
        starts(self.cluster).append(
            Start(
                at,
                str(m.get("namespace", "")),
                str(m.get("name", "")),
                runtime.uid,
                container.name,
                dict(labels_of(pod)),
                dict(annotations_of(pod)),
                container_env(seen, spec),
                container.image,
            )
        )

    def _end(self, container: ContainerRuntime, at: float, code: int, reason: str) -> None:
        run = container.current
        assert run is not None
        run.ended = at
        run.exit_code = code
        run.reason = reason

    def _step(self, pod: JSON, runtime: PodRuntime, now: float) -> float | None:
        """Move every container to where it is at ``now``; the next time something happens."""
        policy = _restart_policy(pod)
        default_run = self.cluster.config.default_run_seconds
        wake: list[float] = []
        for c in runtime.containers:
            for _ in range(10_000):
                if c.next_at is not None and c.next_at <= now:
                    self._start(runtime, c, c.next_at, pod)
                    if c.waiting == "ErrImagePull" and c.next_at is not None and c.next_at <= now:
                        continue
                    if c.waiting == "CreateContainerConfigError":
                        break
                run = c.current
                if run is None or run.ended is not None or c.next_at is not None:
                    break
                end = _planned_end(c.behaviour, run, c.restarts(), default_run)
                if end is None or end[0] > now:
                    break
                self._end(c, end[0], end[1], end[2])
                if policy == "Always" or (policy == "OnFailure" and end[1] != 0):
                    schedule_restart(pod, runtime, c, end[0])
            if c.waiting == "ErrImagePull" and c.next_at is not None:
                # ErrImagePull shows for the sync after the attempt, then ImagePullBackOff.
                attempt = c.next_at - min(
                    IMAGE_BACKOFF * 2 ** (c.pull_attempts - 1),
                    float(self.cluster.config.image_pull_backoff_max),
                )
                if now >= attempt + 1:
                    c.waiting = "ImagePullBackOff"
                    c.waiting_message = f'Back-off pulling image "{c.image}"'
                else:
                    wake.append(attempt + 1)
            if c.next_at is not None:
                wake.append(c.next_at)
            run = c.current
            if run is not None and run.ended is None:
                end = _planned_end(c.behaviour, run, c.restarts(), default_run)
                if end is not None:
                    wake.append(end[0])
        if runtime.containers and all(
            not c.running() and c.next_at is None and c.current is not None
            for c in runtime.containers
        ):
            runtime.done = True
        return min(wake) if wake else None

    def _terminate(self, pod: JSON, runtime: PodRuntime, now: float) -> float | None:
        if not runtime.started:
            runtime.done = True
            self._delete_now(pod)
            return None
        if runtime.sigterm_at is None:
            self._step(pod, runtime, now)
            runtime.sigterm_at = now
            grace = float(meta(pod).get("deletionGracePeriodSeconds", 30) or 0)
            runtime.kill_at = now + grace
            for c in runtime.containers:
                c.next_at = None
                if c.running() and not c.behaviour.ignores_sigterm:
                    self._end(c, now, c.behaviour.sigterm_exit_code, "Error")
        assert runtime.kill_at is not None
        if now >= runtime.kill_at:
            for c in runtime.containers:
                if c.running():
                    self._end(c, runtime.kill_at, SIGKILL_EXIT, "Error")
        for c in runtime.containers:
            if c.waiting in ("CrashLoopBackOff", "ContainerCreating"):
                c.waiting = ""
        if any(c.running() for c in runtime.containers):
            self._write(pod, runtime, now)
            return runtime.kill_at
        runtime.done = True
        self._write(pod, runtime, now)
        current = self.store.peek(PODS, str(meta(pod)["namespace"]), str(meta(pod)["name"]))
        if current is not None:
            self._delete_now(current)
        return None

    def _finish_if_deleted(self, pod: JSON | None, runtime: PodRuntime | None) -> float | None:
        if pod is not None and meta(pod).get("deletionTimestamp"):
            self._delete_now(pod)
        del runtime
        return None

    def _delete_now(self, pod: JSON) -> None:
        m = meta(pod)
        with contextlib.suppress(ApiError):
            self.store.delete(
                PODS,
                str(m["namespace"]),
                str(m["name"]),
                uid=str(m.get("uid")),
                grace_seconds=0,
                internal=True,
                copy=False,
            )

    # -- status --------------------------------------------------------------------------------

    def _write(self, pod: JSON, runtime: PodRuntime, now: float) -> None:
        m = meta(pod)
        node = str(pod.get("spec", {}).get("nodeName"))
        policy = _restart_policy(pod)

        def change(current: JSON) -> None:
            status = current.setdefault("status", {})
            status["hostIP"] = _host_ip(self.cluster, node)
            status["hostIPs"] = [{"ip": status["hostIP"]}]
            status.setdefault("startTime", timestamp(runtime.seen_at))
            status["qosClass"] = _qos(current)
            if runtime.pod_ip:
                status["podIP"] = runtime.pod_ip
                status["podIPs"] = [{"ip": runtime.pod_ip}]
            statuses = [_container_status(c) for c in runtime.containers]
            status["containerStatuses"] = statuses
            all_ready = bool(statuses) and all(s["ready"] for s in statuses)
            if runtime.done:
                codes = [c.current.exit_code for c in runtime.containers if c.current is not None]
                failed = any(code != 0 for code in codes)
                if runtime.evicted is not None:
                    failed = True
                status["phase"] = "Failed" if failed else "Succeeded"
                if policy != "Never" and not failed and meta(current).get("deletionTimestamp"):
                    status["phase"] = "Succeeded"
            elif any(c.current is not None for c in runtime.containers):
                status["phase"] = "Running"
            else:
                status["phase"] = "Pending"
            if runtime.evicted is not None:
                status["reason"], status["message"] = runtime.evicted
            started = runtime.started or any(
                c.waiting not in ("ContainerCreating",) for c in runtime.containers
            )
            set_condition(current, "PodReadyToStartContainers", started, "", "", now)
            set_condition(current, "Initialized", True, "", "", now)
            reason = "" if all_ready else ("PodCompleted" if runtime.done else "ContainersNotReady")
            not_ready = [s["name"] for s in statuses if not s["ready"]]
            message = (
                ""
                if all_ready or runtime.done
                else f"containers with unready status: [{' '.join(not_ready)}]"
            )
            set_condition(current, "ContainersReady", all_ready, reason, message, now)
            set_condition(current, "Ready", all_ready, reason, message, now)
            for c in status["conditions"]:
                c.setdefault("lastProbeTime", None)
                if not c.get("reason"):
                    c.pop("reason", None)
                if not c.get("message"):
                    c.pop("message", None)

        # Work out the new status on a copy of the status alone: most syncs change nothing,
        # and a write that changes nothing need not copy the whole pod twice.
        stored = self.store.peek(PODS, str(m["namespace"]), str(m["name"]))
        if stored is None:
            return
        trial = {k: v for k, v in stored.items() if k != "status"}
        trial["status"] = clone(stored.get("status") or {})
        change(trial)
        if trial["status"] == stored.get("status"):
            return
        new_status = trial["status"]

        def put(current: JSON) -> None:
            current["status"] = new_status

        with contextlib.suppress(ApiError):
            self.store.mutate(
                PODS, str(m["namespace"]), str(m["name"]), put, subresource="status", copy=False
            )


def go_duration(seconds: float) -> str:
    """A whole number of seconds as Go's time.Duration.String() writes it ("10s", "5m0s")."""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def schedule_restart(pod: JSON, runtime: PodRuntime, c: ContainerRuntime, finished: float) -> None:
    """When the exited container restarts, as the kubelet's doBackOff decides.

    pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff over client-go flowcontrol.Backoff
    (10 s initial, 300 s max): a first crash, or one more than 2 x 300 s after the last
    back-off update, restarts at once; otherwise the container waits ``CrashLoopBackOff`` for
    the current period ("back-off 10s restarting failed container=c pod=p_ns(uid)"), which then
    doubles, capped at 300 s.
    """
    if c.backoff_at is None or finished - c.backoff_at > 2 * RESTART_BACKOFF_MAX:
        c.backoff = RESTART_BACKOFF
        c.backoff_at = finished
        c.waiting = ""
        c.waiting_message = ""
        c.next_at = finished
        return
    delay = c.backoff
    c.waiting = "CrashLoopBackOff"
    c.waiting_message = (
        f"back-off {go_duration(delay)} restarting failed container={c.name} "
        f"pod={meta(pod).get('name')}_{meta(pod).get('namespace')}({runtime.uid})"
    )
    c.next_at = finished + delay
    c.backoff = min(c.backoff * 2, RESTART_BACKOFF_MAX)
    c.backoff_at = finished


def _planned_end(
    b: Behaviour, run: Run, index: int, default_run: float | None
) -> tuple[float, int, str] | None:
    """When and how the running ``run`` ends on its own: (time, exit code, reason), or None."""
    duration = b.duration(default_run)
    ends: list[tuple[float, int, str]] = []
    if b.oom_after is not None:
        ends.append((run.started + b.oom_after, SIGKILL_EXIT, "OOMKilled"))
    if duration is not None:
        code = b.exit_code(index)
        ends.append((run.started + duration, code, "Completed" if code == 0 else "Error"))
    if not ends:
        return None
    return min(ends, key=lambda e: e[0])


def _container_id(c: ContainerRuntime, run: Run) -> str:
    digest = hashlib.sha256(f"{c.name}/{c.image}/{run.started}".encode()).hexdigest()
    return f"containerd://{digest}"


def _container_status(c: ContainerRuntime) -> JSON:
    run = c.current
    status: JSON = {
        "name": c.name,
        "image": c.image,
        "imageID": "",
        "ready": False,
        "restartCount": c.restarts(),
        "started": False,
    }
    if run is not None:
        status["imageID"] = f"{c.image}@sha256:{hashlib.sha256(c.image.encode()).hexdigest()}"
        status["containerID"] = _container_id(c, run)
    if c.waiting:
        waiting: JSON = {"reason": c.waiting}
        if c.waiting_message:
            waiting["message"] = c.waiting_message
        status["state"] = {"waiting": waiting}
    elif run is not None and run.ended is None:
        status["state"] = {"running": {"startedAt": timestamp(run.started)}}
        status["ready"] = True
        status["started"] = True
    elif run is not None:
        status["state"] = {"terminated": _terminated(c, run)}
    else:
        status["state"] = {"waiting": {"reason": "ContainerCreating"}}
    if c.waiting and run is not None and run.ended is not None:
        status["lastState"] = {"terminated": _terminated(c, run)}
    elif len(c.runs) >= 2:
        status["lastState"] = {"terminated": _terminated(c, c.runs[-2])}
    else:
        status["lastState"] = {}
    return status


def _terminated(c: ContainerRuntime, run: Run) -> JSON:
    return {
        "exitCode": run.exit_code if run.exit_code is not None else 0,
        "reason": run.reason,
        "startedAt": timestamp(run.started),
        "finishedAt": timestamp(run.ended if run.ended is not None else run.started),
        "containerID": _container_id(c, run),
    }


def _host_ip(cluster: Cluster, node: str) -> str:
    names = [str(meta(n).get("name")) for n in cluster.store.select(NODES)]
    index = names.index(node) if node in names else 0
    return f"172.18.0.{index + 2}"


def _qos(pod: JSON) -> str:
    containers = pod.get("spec", {}).get("containers") or []
    any_set = False
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        if (
            not lim
            or any(req.get(k, lim[k]) != lim[k] for k in lim)
            or set(lim) < {"cpu", "memory"}
        ):
            guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if any_set else "BestEffort"


# -- logs -----------------------------------------------------------------------------------


def _runtime_of(cluster: Cluster, namespace: str, pod_name: str) -> tuple[JSON, PodRuntime | None]:
    pod = cluster.store.peek(PODS, namespace, pod_name)
    if pod is None:
        raise errors.not_found("pods", "", pod_name)
    return pod, _state(cluster).get(str(meta(pod).get("uid", "")))


def _lines(run: Run, behaviour: Behaviour, now: float) -> list[str]:
    until = run.ended if run.ended is not None else now
    out = [(run.started + at, text) for at, text in behaviour.logs if run.started + at <= until]
    out.extend((at, text) for at, text in run.written)
    out.sort(key=lambda entry: entry[0])
    return [text for _, text in out]


def logs(
    cluster: Cluster,
    namespace: str,
    pod: str,
    container: str | None = None,
    *,
    previous: bool = False,
    tail_lines: int | None = None,
) -> str:
    """What ``GET pods/<pod>/log`` answers: the lines written so far, each ending in a newline."""
    obj, runtime = _runtime_of(cluster, namespace, pod)
    names = [str(c.get("name")) for c in obj.get("spec", {}).get("containers") or []]
    if container is None:
        if len(names) != 1:
            raise errors.bad_request(
                f"a container name must be specified for pod {pod}, choose one of: "
                f"[{' '.join(names)}]"
            )
        container = names[0]
    if container not in names:
        raise errors.bad_request(f"container {container} is not valid for pod {pod}")
    c = None
    if runtime is not None:
        c = next((x for x in runtime.containers if x.name == container), None)
    if c is None or not c.runs:
        reason = c.waiting if c is not None and c.waiting else "ContainerCreating"
        raise errors.bad_request(
            f'container "{container}" in pod "{pod}" is waiting to start: {reason}'
        )
    if previous:
        if c.current is not None and c.current.ended is None:
            run = c.runs[-2] if len(c.runs) >= 2 else None
        else:
            run = c.runs[-2] if len(c.runs) >= 2 else None
        if run is None:
            raise errors.bad_request(
                f'previous terminated container "{container}" in pod "{pod}" not found'
            )
    else:
        run = c.runs[-1]
    lines = _lines(run, c.behaviour, cluster.now())
    if tail_lines is not None:
        lines = lines[-tail_lines:] if tail_lines > 0 else []
    return "".join(f"{line}\n" for line in lines)


def write_log(cluster: Cluster, namespace: str, pod: str, container: str, line: str) -> None:
    """Append ``line`` to the running container's log now (a test writing what a process would)."""
    _, runtime = _runtime_of(cluster, namespace, pod)
    c = (
        None
        if runtime is None
        else next((x for x in runtime.containers if x.name == container), None)
    )
    if c is None or c.current is None or c.current.ended is not None:
        raise FaultError(f"container {container} of pod {namespace}/{pod} is not running")
    c.current.written.append((cluster.now(), line))


# -- faults ---------------------------------------------------------------------------------


def _pod_or_fail(cluster: Cluster, namespace: str, name: str) -> JSON:
    pod = cluster.store.peek(PODS, namespace, name)
    if pod is None:
        raise FaultError(f"no pod {namespace}/{name}")
    return pod


def _add_condition(cluster: Cluster, pod: JSON, kind: str, reason: str, message: str) -> None:
    m = meta(pod)
    now = cluster.now()

    def change(current: JSON) -> None:
        set_condition(current, kind, True, reason, message, now)

    cluster.store.mutate(
        PODS, str(m["namespace"]), str(m["name"]), change, subresource="status", copy=False
    )


def lose_node(cluster: Cluster, node: str) -> str:
    """The node stops reporting: Ready=Unknown and the unreachable taints; its kubelet stops.

    As the node lifecycle controller and taint eviction controller do
    (pkg/controller/nodelifecycle, pkg/controller/tainteviction): the node gets
    ``node.kubernetes.io/unreachable`` NoSchedule and NoExecute taints; pods tolerate NoExecute
    for their ``tolerationSeconds`` (300 by default) and are then marked ``DisruptionTarget``
    reason ``DeletionByTaintManager`` and deleted (they stay Terminating, nobody confirms).
    Call :func:`evict_tainted` as time passes (the Kubelet controller's node watch does it).
    """
    obj = cluster.store.peek(NODES, "", node)
    if obj is None:
        raise FaultError(f"no node {node}")
    now = cluster.now()

    def change(current: JSON) -> None:
        set_condition(
            current,
            "Ready",
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
            now,
        )

    cluster.store.mutate(NODES, "", node, change, subresource="status", copy=False)

    def taint(current: JSON) -> None:
        taints = [
            t
            for t in current.get("spec", {}).get("taints") or []
            if t.get("key") != UNREACHABLE_TAINT
        ]
        taints.append(
            {"key": UNREACHABLE_TAINT, "effect": "NoSchedule", "timeAdded": timestamp(now)}
        )
        taints.append(
            {"key": UNREACHABLE_TAINT, "effect": "NoExecute", "timeAdded": timestamp(now)}
        )
        current.setdefault("spec", {})["taints"] = taints

    cluster.store.mutate(NODES, "", node, taint, copy=False)
    cluster.extras.setdefault("lost-nodes", {})[node] = now
    pods = [p for p in cluster.store.select(PODS) if p.get("spec", {}).get("nodeName") == node]
    for pod in pods:
        _mark_not_ready(cluster, pod, now)
    return f"node {node} lost with {len(pods)} pod(s)"


def _mark_not_ready(cluster: Cluster, pod: JSON, now: float) -> None:
    """pkg/controller/util/node MarkPodsNotReady, as the node lifecycle controller calls it when
    a node stops being Ready: the pod's ``Ready`` condition turns False (reason and message
    kept, ``lastTransitionTime`` now); nothing else changes, and its stopped kubelet never
    writes it back."""
    ready = next(
        (c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    if ready is None or ready.get("status") != "True":
        return

    def change(current: JSON) -> None:
        for c in current.get("status", {}).get("conditions") or []:
            if c.get("type") == "Ready":
                c["status"] = "False"
                c["lastTransitionTime"] = timestamp(now)

    m = meta(pod)
    cluster.store.mutate(
        PODS,
        str(m.get("namespace", "")),
        str(m.get("name", "")),
        change,
        subresource="status",
        copy=False,
    )


def evict_tainted(cluster: Cluster) -> float | None:
    """Delete the pods of lost nodes whose toleration ran out; the next time one will."""
    lost: dict[str, float] = cluster.extras.get("lost-nodes", {})
    now = cluster.now()
    wake: list[float] = []
    for node, since in sorted(lost.items()):
        for pod in list(cluster.store.select(PODS)):
            if pod.get("spec", {}).get("nodeName") != node or meta(pod).get("deletionTimestamp"):
                continue
            if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                continue
            seconds = _toleration_seconds(pod)
            if seconds is None:
                continue
            due = since + seconds
            if due > now:
                wake.append(due)
                continue
            _add_condition(
                cluster,
                pod,
                "DisruptionTarget",
                "DeletionByTaintManager",
                "Taint manager: deleting due to NoExecute taint",
            )
            m = meta(pod)
            with contextlib.suppress(ApiError):
                cluster.store.delete(
                    PODS, str(m["namespace"]), str(m["name"]), internal=True, copy=False
                )
    return min(wake) if wake else None


def _toleration_seconds(pod: JSON) -> float | None:
    """Seconds the pod tolerates the unreachable NoExecute taint (0: none; None: for ever)."""
    for t in pod.get("spec", {}).get("tolerations") or []:
        if (
            t.get("key") == UNREACHABLE_TAINT
            or (not t.get("key") and t.get("operator") == "Exists")
        ) and t.get("effect") in (None, "", "NoExecute"):
            seconds = t.get("tolerationSeconds")
            return None if seconds is None else float(seconds)
    return 0.0


class TaintEviction(Controller):
    """The taint eviction controller for lost nodes (see :func:`lose_node`)."""

    name: ClassVar[str] = "taint-eviction"
    primary: ClassVar[ResourceType] = NODES

    def reconcile(self, namespace: str, name: str) -> float | None:
        del namespace
        if name not in self.cluster.extras.get("lost-nodes", {}):
            return None
        return evict_tainted(self.cluster)


def evict_pod(cluster: Cluster, namespace: str, name: str, reason: str = "Evicted") -> str:
    """Node-pressure eviction: the kubelet kills the pod with grace 0, phase Failed [A4].

    ``status.reason`` Evicted, condition ``DisruptionTarget`` reason ``TerminationByKubelet``.
    """
    pod = _pod_or_fail(cluster, namespace, name)
    runtime = _state(cluster).get(str(meta(pod).get("uid", "")))
    if runtime is None or not pod.get("spec", {}).get("nodeName"):
        raise FaultError(f"pod {namespace}/{name} is not running on a node")
    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        raise FaultError(f"pod {namespace}/{name} has already ended")
    now = cluster.now()
    _add_condition(
        cluster,
        pod,
        "DisruptionTarget",
        "TerminationByKubelet",
        "The node was low on resource: memory.",
    )
    for c in runtime.containers:
        c.next_at = None
        c.waiting = ""
        if c.running():
            c.current.ended = now  # type: ignore[union-attr]
            c.current.exit_code = SIGKILL_EXIT  # type: ignore[union-attr]
            c.current.reason = "Error"  # type: ignore[union-attr]
        elif c.current is None:
            c.runs.append(Run(now, now, SIGKILL_EXIT, "Error"))
    runtime.done = True
    runtime.evicted = (reason, "The node was low on resource: memory. ")
    kubelet = Kubelet(cluster)
    kubelet._write(_pod_or_fail(cluster, namespace, name), runtime, now)
    return f"pod {namespace}/{name} evicted"


def end_containers(cluster: Cluster, pod: JSON, exit_code: int) -> bool:
    """Every running container of ``pod`` ends now with ``exit_code``, as if its process exited
    (its behaviour's run is cut to now; the kubelet writes the end when it next reconciles the
    pod, which the caller enqueues). False when none of them runs."""
    runtime = _state(cluster).get(str(meta(pod).get("uid", "")))
    if runtime is None:
        return False
    now, ended = cluster.now(), False
    for container in runtime.containers:
        run = container.current
        if run is None or run.ended is not None:
            continue
        container.behaviour = dataclasses.replace(
            container.behaviour,
            run_seconds=now - run.started,
            exit_codes=(exit_code,),
            oom_after=None,
        )
        ended = True
    return ended


def oom_kill(cluster: Cluster, namespace: str, name: str, container: str | None = None) -> str:
    """The container (the first running one by default) is OOM-killed now (137, OOMKilled)."""
    pod = _pod_or_fail(cluster, namespace, name)
    runtime = _state(cluster).get(str(meta(pod).get("uid", "")))
    running = [] if runtime is None else [c for c in runtime.containers if c.running()]
    if container is not None:
        running = [c for c in running if c.name == container]
    if runtime is None or not running:
        raise FaultError(f"no running container {container or ''} in pod {namespace}/{name}")
    target = running[0]
    now = cluster.now()
    run = target.current
    assert run is not None
    # End the run now: its behaviour's own end is replaced by the OOM kill.
    run.ended, run.exit_code, run.reason = now, SIGKILL_EXIT, "OOMKilled"
    policy = _restart_policy(pod)
    if policy != "Never":
        schedule_restart(pod, runtime, target, now)
    if all(
        not c.running() and c.next_at is None and c.current is not None for c in runtime.containers
    ):
        runtime.done = True
    Kubelet(cluster)._write(pod, runtime, now)
    return f"container {target.name} of pod {namespace}/{name} OOM-killed"


def preempt_pod(cluster: Cluster, namespace: str, name: str) -> str:
    """The scheduler preempts the pod: ``DisruptionTarget`` PreemptionByScheduler, then delete."""
    pod = _pod_or_fail(cluster, namespace, name)
    _add_condition(
        cluster,
        pod,
        "DisruptionTarget",
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
    )
    m = meta(pod)
    cluster.store.delete(PODS, namespace, name, uid=str(m.get("uid")), internal=True, copy=False)
    return f"pod {namespace}/{name} preempted"
