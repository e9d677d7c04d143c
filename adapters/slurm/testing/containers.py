"""A multi-node Slurm 22.05 in containers, for users who have a Docker engine: the optional
extra ``containers`` (``pip install 'dispatch-kit[containers]'``: docker and testcontainers).

- :class:`SlurmCluster` builds one image (the base image ``ci/docker-up.sh`` makes from
  ``debootstrap``, Debian 12's Slurm packages, the project's ``ci/slurm-up.sh`` and the
  entrypoint ``ci/slurm-node-entrypoint.sh``) and runs, through testcontainers, on one
  user-defined network with fixed addresses, a head container (slurmctld, slurmdbd on MariaDB,
  munge, sshd) and two or more node containers (munge, slurmd each). Nothing is pulled from a
  registry: a missing base image is an error that says how to build it.
- :class:`DockerExecTransport` runs a command in the head container (``docker exec``); the
  adapter's own :class:`~adapters.slurm.SshTransport` reaches the head's sshd with a key made
  for the cluster and its host key checked.
- :class:`SlurmContainersHarness` (``slurm-containers``, ``slurm-containers-ssh``) is
  ``slurm-local``'s harness on such a cluster, plus the real loss of a node (it implements
  :class:`~conformance.powers.LosesNodes`): the node's container is stopped, slurmctld marks it
  down and ends (or requeues) the job, and the node is started again.

Everything the cluster makes carries the label :data:`CLUSTER_LABEL`; :meth:`SlurmCluster.stop`
removes its containers, network and directories, and is also run when the process exits, and
:func:`reap` removes what a killed process left (there is no Ryuk here). docker and
testcontainers are imported only when a cluster starts or an engine is looked for.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib
import importlib.resources
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from adapters.slurm import SlurmBackend, SshTransport, Transport
from adapters.slurm.testing.local import LOCAL_REFUSED, SlurmLocalHarness
from conformance.harness import CannotInject, Fault, HarnessUnavailable, LookAlike, look_alike_need
from conformance.powers import LosesNodes
from dispatch_core import Clock, ObjectRef, Rejected, WallClock
from dispatch_core.clock import pause

EXTRA: Final = "containers"
INSTALL_HINT: Final = "pip install 'dispatch-kit[containers]'"
BASE_IMAGE: Final = "dispatch/bookworm-min:latest"
BUILD_BASE_HINT: Final = (
    "build it with ci/docker-up.sh (debootstrap --variant=minbase bookworm, then docker import: "
    "nothing is pulled from a registry)"
)
PACKAGES: Final = (
    "slurm-wlm",
    "slurmdbd",
    "slurm-client",
    "munge",
    "mariadb-server",
    "openssh-server",
    "procps",
    "iproute2",
)
"""Debian 12's packages of a Slurm 22.05 with accounting, and sshd (without recommends)."""
SCRIPT_RESOURCE: Final = "slurm-up.sh"
LIB_RESOURCE: Final = "slurm-lab-lib.sh"
ENTRYPOINT_RESOURCE: Final = "slurm-node-entrypoint.sh"
BRING_UP_FILES: Final = (SCRIPT_RESOURCE, LIB_RESOURCE, ENTRYPOINT_RESOURCE)
"""Package data of :mod:`adapters.slurm.testing` (links to ``ci/``), copied together into
:data:`SCRIPT_DIR`: the entrypoint runs the bring-up script, which sources its library."""
SCRIPT_DIR: Final = "/usr/local/sbin"
IMAGE_REPOSITORY: Final = "dispatch-kit/slurm"
CLUSTER_LABEL: Final = "org.dispatch.slurm-cluster"
"""Every container and network of a cluster carries it; its value is the cluster's name."""
OWNER_LABEL: Final = "org.dispatch.owner"
"""``<host>:<pid>`` of the process that made the cluster: :func:`reap` removes the clusters
of processes that are gone."""
HEAD: Final = "head"
SHARED_DIR: Final = "/shared"
"""A directory every container of a cluster mounts (read-write): the harness's control and
scratch directories live there, so that a job on a node sees what the head made."""
CONFIG_DIR: Final = "/cluster"
LOG_DIR: Final = "/var/log/slurm-lab"
LOG_TAIL: Final = 40
SUBNET_PREFIX: Final = "172.30"

log = logging.getLogger(__name__)


class MissingExtra(ImportError):
    """The optional extra ``containers`` (docker, testcontainers) is not installed."""


class ScriptMissing(FileNotFoundError):
    """A bring-up file is not in the installed package."""


class ContainerNotReady(RuntimeError):
    """The image did not build, or the cluster did not come up; the message's first line says
    why, the lines after it hold the logs."""


def require(module: str) -> ModuleType:
    """Import ``module`` of the extra, or raise :class:`MissingExtra` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtra(
            f"the {EXTRA!r} extra is not installed ({error}): {INSTALL_HINT}", name=error.name
        ) from error


def bring_up_files() -> dict[str, bytes]:
    """The files the image gets in :data:`SCRIPT_DIR`, by name; :class:`ScriptMissing` names
    the one that cannot be read."""
    files = {}
    for name in BRING_UP_FILES:
        resource = importlib.resources.files("adapters.slurm.testing").joinpath(name)
        try:
            files[name] = resource.read_bytes()
        except OSError as error:
            raise ScriptMissing(
                f"adapters/slurm/testing/{name} (the project's ci/{name}, shipped as package "
                f"data) cannot be read at {resource} ({type(error).__name__})"
            ) from error
    return files


def _positive(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive whole number, not {value!r}")


@dataclass(frozen=True)
class Knobs:
    """The cluster's settings, passed to ``ci/slurm-up.sh`` on every host of the cluster as
    flags (the same on each, so that each writes the same slurm.conf); ``None`` leaves the
    script's default."""

    job_comment: bool = True
    max_job_id: int | None = 20
    min_job_age: int | None = 2
    cred_expire: int | None = 5
    cpus: int | None = 4
    sched_interval: int | None = 5
    slurmd_timeout: int | None = 5
    message_timeout: int | None = None
    tcp_timeout: int | None = 1
    """Node loss: the job NODE_FAIL 26 s after its node's container stops (measured:
    benchmarks/containers.py; docker-engine.md §8.5 saw 15 s with MessageTimeout 3). SlurmdTimeout
    5 and the default MessageTimeout (10) leave room for a loaded machine: a node that merely
    answers late is not lost."""

    def __post_init__(self) -> None:
        for field in (
            "max_job_id",
            "min_job_age",
            "cred_expire",
            "cpus",
            "sched_interval",
            "slurmd_timeout",
            "message_timeout",
            "tcp_timeout",
        ):
            _positive(field, getattr(self, field))

    def flags(self) -> list[str]:
        """The bring-up script's flags for these settings."""
        flags = ["--job-comment" if self.job_comment else "--no-job-comment"]
        for flag, value in (
            ("--max-job-id", self.max_job_id),
            ("--min-job-age", self.min_job_age),
            ("--cred-expire", self.cred_expire),
            ("--cpus", self.cpus),
            ("--sched-interval", self.sched_interval),
            ("--slurmd-timeout", self.slurmd_timeout),
            ("--message-timeout", self.message_timeout),
            ("--tcp-timeout", self.tcp_timeout),
        ):
            if value is not None:
                flags += [flag, str(value)]
        return flags


@dataclass(frozen=True)
class Layout:
    """Who is where on the cluster's network: the head at ``.10``, node ``i`` (1-based) at
    ``.10+i`` of ``subnet`` (a /24)."""

    subnet: str
    nodes: int

    def __post_init__(self) -> None:
        if not 1 <= self.nodes <= 8:
            raise ValueError(f"a cluster has 1 to 8 nodes, not {self.nodes}")

    def address(self, host: str) -> str:
        base = self.subnet.rsplit(".", 1)[0]
        return f"{base}.10" if host == HEAD else f"{base}.{10 + int(host.removeprefix('node'))}"

    @property
    def node_names(self) -> list[str]:
        return [f"node{i}" for i in range(1, self.nodes + 1)]

    def role_flags(self) -> list[str]:
        """The flags that place a host in the cluster (the same on every host)."""
        addrs = ",".join(f"{name}={self.address(name)}" for name in self.node_names)
        return ["--controller", f"{HEAD}={self.address(HEAD)}", "--node-addrs", addrs]


def container_command(role: str, layout: Layout, knobs: Knobs) -> list[str]:
    """A container's command: the entrypoint with its role and the bring-up script's flags."""
    return [f"{SCRIPT_DIR}/{ENTRYPOINT_RESOURCE}", role, *layout.role_flags(), *knobs.flags()]


def ready_line(role: str, host: str) -> str:
    """What the entrypoint prints once the host's part of the cluster is up."""
    return f"dispatch-kit: {role} {host} up"


def dockerfile(base: str = BASE_IMAGE, packages: Sequence[str] = PACKAGES) -> str:
    """The image's Dockerfile: the base image, the host's Debian sources (``debian.sources`` in
    the context; empty when the host has none, and the base's own are kept), ``packages``
    without recommends, nothing started, no munge key and no ssh host keys (each cluster makes
    its own), and the bring-up files."""
    return "\n".join(
        [
            "# Generated by adapters.slurm.testing.containers: Slurm 22.05, multi-node.",
            f"FROM {base}",
            "ENV DEBIAN_FRONTEND=noninteractive LC_ALL=C",
            "COPY debian.sources /tmp/debian.sources",
            "RUN if [ -s /tmp/debian.sources ]; then rm -f /etc/apt/sources.list \\",
            "      && mv /tmp/debian.sources /etc/apt/sources.list.d/debian.sources; \\",
            "    else rm -f /tmp/debian.sources; fi \\",
            " && printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d \\",
            " && chmod 0755 /usr/sbin/policy-rc.d \\",
            " && apt-get update -q \\",
            " && apt-get install -y -q --no-install-recommends \\",
            "      -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \\",
            f"      {' '.join(packages)} \\",
            " && apt-get clean && rm -rf /var/lib/apt/lists/* \\",
            " && rm -f /etc/munge/munge.key /etc/ssh/ssh_host_*",
            f"COPY {' '.join(BRING_UP_FILES)} {SCRIPT_DIR}/",
            f"RUN chmod 0755 {' '.join(f'{SCRIPT_DIR}/{name}' for name in BRING_UP_FILES)}",
            "",
        ]
    )


def host_sources() -> bytes:
    """The host's Debian sources (deb822 ``debian.sources``, else ``sources.list``), so that the
    image installs what the host would; empty when the host has neither."""
    for path in ("/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"):
        try:
            return Path(path).read_bytes()
        except OSError:
            continue
    return b""


def image_tag(docker_file: str, files: Mapping[str, bytes], base_id: str) -> str:
    """A digest of the Dockerfile, the base image's id and the build context (names included)."""
    digest = hashlib.sha256(docker_file.encode())
    digest.update(b"\0base\0" + base_id.encode())
    for name, data in sorted(files.items()):
        digest.update(b"\0%s\0%d\0" % (name.encode(), len(data)))
        digest.update(data)
    return f"{IMAGE_REPOSITORY}:{digest.hexdigest()[:16]}"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _tail(text: str, lines: int = LOG_TAIL) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def engine_problem(docker_cli: str = "docker") -> str | None:
    """Why no cluster can be started here (the extra is missing, no docker CLI, or no Docker
    engine answers ``ping``), or None when one can."""
    try:
        docker = require("docker")
        require("testcontainers.core.container")
    except MissingExtra as missing:
        return str(missing)
    if shutil.which(docker_cli) is None:
        return f"no {docker_cli} command on PATH (the transport runs docker exec)"
    try:
        client = docker.from_env()
        try:
            client.ping()
        finally:
            client.close()
    except Exception as error:
        return (
            f"no Docker engine answers ({type(error).__name__}: {_first_line(str(error))}); "
            "start one with ci/docker-up.sh"
        )
    return None


def wait_until_up(
    read_logs: Callable[[], str],
    status: Callable[[], str],
    line: str,
    *,
    bound: float,
    clock: Clock,
    interval: float = 0.5,
    seen: int = 0,
) -> None:
    """Return once a container's logs hold ``line`` more than ``seen`` times (a container
    started again prints it once more); raise :class:`ContainerNotReady`, with the end of the
    logs, when the container has ended (``status`` says ``exited`` or ``dead``) or ``bound``
    seconds of ``clock`` have passed."""
    deadline = clock.now() + bound
    while True:
        logs = read_logs()
        if ready_count(logs, line) > seen:
            return
        state = status()
        if state in ("exited", "dead"):
            why = f"the container {state} before it printed {line!r}"
        elif clock.now() >= deadline:
            why = f"the container did not print {line!r} within {bound:.0f} s"
        else:
            pause(clock, interval)
            continue
        raise ContainerNotReady(f"{why}; its log ends:\n{_tail(logs)}")


def ready_count(logs: str, line: str) -> int:
    """How many times ``line`` stands alone on a line of ``logs``."""
    return sum(1 for text in logs.splitlines() if text.strip() == line)


UP_STATES: Final = frozenset({"idle", "mixed", "allocated"})
"""sinfo's states of a node back in the partition."""


def _new_name() -> str:
    return f"dispatch-slurm-{uuid.uuid4().hex[:8]}"


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's, or unreadable: not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap(client: Any) -> list[str]:
    """Remove the containers and networks of clusters whose process is gone (on this host);
    the names of what was removed."""
    removed: list[str] = []
    # ignore_removed: a container another process removes between the list and its inspect
    listed = client.containers.list(all=True, filters={"label": CLUSTER_LABEL}, ignore_removed=True)
    for container in listed:
        if not _alive(container.labels.get(OWNER_LABEL, "")):
            container.remove(force=True, v=True)
            removed.append(f"container {container.name}")
    for network in client.networks.list(filters={"label": CLUSTER_LABEL}):
        if not _alive(network.attrs.get("Labels", {}).get(OWNER_LABEL, "")):
            network.remove()
            removed.append(f"network {network.name}")
    return removed


def leftovers(client: Any, cluster: str | None = None) -> list[str]:
    """The containers and networks of ``cluster`` (of every cluster when None) the engine
    still has: what a cleanup left behind."""
    label = CLUSTER_LABEL if cluster is None else f"{CLUSTER_LABEL}={cluster}"
    listed = client.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    found = [f"container {c.name}" for c in listed]
    found += [f"network {n.name}" for n in client.networks.list(filters={"label": label})]
    return found


class SlurmCluster:
    """A head and ``nodes`` node containers running one Slurm 22.05 with the given knobs.
    :meth:`start` builds the image (once per recipe: the tag is its digest), makes the network
    and the cluster's secrets (a munge key and an ssh key, in a 0700 directory of this host),
    starts the nodes, then the head, and returns once every node is idle; :meth:`stop` removes
    everything it made, and runs at the latest when the process exits."""

    def __init__(
        self,
        knobs: Knobs | None = None,
        *,
        nodes: int = 2,
        name: str | None = None,
        bound: float = 180.0,
        build_timeout: float = 900.0,
        clock: Clock | None = None,
    ) -> None:
        self.knobs = knobs if knobs is not None else Knobs()
        self.nodes = nodes
        self.named = name is not None
        """Whether the name was given: a made-up one is made again in a forked process (a
        harness dealt over several processes makes one cluster in each)."""
        self._made_in = os.getpid()
        self.name = name if name is not None else _new_name()
        if not self.name or self.name.startswith("-") or not self.name.replace("-", "").isalnum():
            raise ValueError(f"{self.name!r} is not a cluster name")
        self.bound = bound
        self.build_timeout = build_timeout
        self.clock: Clock = clock if clock is not None else WallClock()
        self.layout: Layout | None = None
        self.secrets: Path | None = None
        self.shared: Path | None = None
        self._containers: dict[str, Any] = {}
        self._network: Any = None
        self.timings: dict[str, float] = {}
        """Seconds of each step of the last start: image, network, nodes, head, idle."""

    # -- names -------------------------------------------------------------------------------------

    def name_for_this_process(self) -> str:
        """The cluster's name, made again when it was made up in another process (a fork)."""
        if not self.named and os.getpid() != self._made_in:
            self.name, self._made_in = _new_name(), os.getpid()
        return self.name

    def container_name(self, host: str) -> str:
        return f"{self.name}-{host}"

    @property
    def hosts(self) -> list[str]:
        return [HEAD, *Layout("0.0.0.0/24", self.nodes).node_names]

    @property
    def started(self) -> bool:
        return bool(self._containers)

    def labels(self) -> dict[str, str]:
        return {CLUSTER_LABEL: self.name, OWNER_LABEL: _owner()}

    # -- the image -----------------------------------------------------------------------------

    def image(self, client: Any, errors: ModuleType) -> str:
        """Build the cluster's image unless the engine has it; its tag. A missing base image
        is :class:`ContainerNotReady` saying how to build it (nothing is pulled)."""
        try:
            base = client.images.get(BASE_IMAGE)
        except errors.ImageNotFound:
            raise ContainerNotReady(
                f"the base image {BASE_IMAGE} is not in the Docker engine: {BUILD_BASE_HINT}"
            ) from None
        files = bring_up_files()
        context_files = {**files, "debian.sources": host_sources()}
        docker_file = dockerfile()
        tag = image_tag(docker_file, context_files, str(base.id))
        try:
            client.images.get(tag)
            return tag
        except errors.ImageNotFound:
            pass
        log.info("building %s from %s", tag, BASE_IMAGE)
        with tempfile.TemporaryDirectory(prefix="dispatch-slurm-image-") as context:
            Path(context, "Dockerfile").write_text(docker_file)
            for name, data in context_files.items():
                Path(context, name).write_bytes(data)
            try:
                client.images.build(
                    path=context, tag=tag, rm=True, forcerm=True, timeout=self.build_timeout
                )
            except errors.BuildError as error:
                built = "".join(
                    str(chunk.get("stream") or chunk.get("error") or "")
                    for chunk in error.build_log
                    if isinstance(chunk, dict)
                )
                raise ContainerNotReady(
                    f"the Slurm image did not build ({_first_line(str(error.msg))}); "
                    f"the build log ends:\n{_tail(built)}"
                ) from error
        return tag

    # -- bring-up --------------------------------------------------------------------------------

    def _make_network(self, client: Any, types: ModuleType, errors: ModuleType) -> Layout:
        """A bridge network on the first free 172.30.X.0/24 (from one the name picks)."""
        start = int(hashlib.sha256(self.name.encode()).hexdigest(), 16) % 256
        for step in range(256):
            subnet = f"{SUBNET_PREFIX}.{(start + step) % 256}.0/24"
            ipam = types.IPAMConfig(pool_configs=[types.IPAMPool(subnet=subnet)])
            try:
                self._network = client.networks.create(
                    self.name, driver="bridge", ipam=ipam, labels=self.labels()
                )
            except errors.APIError as error:
                if "overlap" in str(error).lower():
                    continue
                raise
            return Layout(subnet, self.nodes)
        raise ContainerNotReady(f"no free /24 under {SUBNET_PREFIX}.0.0/16 for the network")

    def _make_secrets(self) -> None:
        """The munge key and the ssh key of this cluster, in a 0700 directory of this host
        (mounted read-only at /cluster); the shared directory every container mounts."""
        self.secrets = Path(tempfile.mkdtemp(prefix="dispatch-cluster-"))
        munge_key = self.secrets / "munge.key"
        munge_key.touch(mode=0o600)  # installed 0400 munge:munge inside, by the container's root
        munge_key.write_bytes(os.urandom(1024))
        key = self.secrets / "id_ed25519"
        if shutil.which("ssh-keygen") is not None:
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.name, "-f", str(key)],
                check=True,
                capture_output=True,
            )
            (self.secrets / "authorized_keys").write_bytes(key.with_suffix(".pub").read_bytes())
        else:
            (self.secrets / "authorized_keys").write_bytes(b"")
        # The directory stays 0700 (mkdtemp's): the containers' root reads it all the same.
        self.shared = Path(tempfile.mkdtemp(prefix="dispatch-shared-"))
        os.chmod(self.shared, 0o1777)

    def _container(self, testcontainers: ModuleType, types: Any, tag: str, host: str) -> Any:
        assert self.layout is not None and self.secrets is not None and self.shared is not None
        role = "head" if host == HEAD else "node"
        network = self._network.name
        endpoint = types.EndpointConfig(
            "1.41", ipv4_address=self.layout.address(host), aliases=[host]
        )
        box = testcontainers.DockerContainer(tag).with_name(self.container_name(host))
        box.with_command(container_command(role, self.layout, self.knobs))
        box.with_volume_mapping(str(self.secrets), CONFIG_DIR, "ro")
        box.with_volume_mapping(str(self.shared), SHARED_DIR, "rw")
        box.with_kwargs(
            hostname=host,
            init=True,
            labels=self.labels(),
            network=network,
            networking_config={network: endpoint},
        )
        return box

    def start(self) -> SlurmCluster:
        """Build, start and wait (see the class); :class:`ContainerNotReady` with the logs of
        the container that failed, everything removed, when the cluster does not come up.
        Starting a started cluster does nothing."""
        if self.started:
            return self
        self.name_for_this_process()
        docker = require("docker")
        errors = require("docker.errors")
        types = require("docker.types")
        testcontainers = require("testcontainers.core.container")
        # Ryuk, testcontainers' reaper, is an image from Docker Hub, which is not reachable
        # here (docker-engine.md §4): the cluster reaps its own (stop at exit, and reap()).
        require("testcontainers.core.config").testcontainers_config.ryuk_disabled = True
        client = docker.from_env()
        self.timings = {}
        try:
            for what in reap(client):
                log.warning("removed %s, left by a process that is gone", what)
            began = self.clock.now()
            tag = self.image(client, errors)
            self.timings["image"] = self.clock.now() - began
            atexit.register(self.stop)
            began = self.clock.now()
            self._make_secrets()
            self.layout = self._make_network(client, types, errors)
            self.timings["network"] = self.clock.now() - began
            # The nodes first: their slurmd registers once slurmctld answers (docker-engine.md
            # §8.3); the head waits until every node is idle before it prints its line.
            for phase, hosts in (("nodes", self.hosts[1:]), ("head", [HEAD])):
                began = self.clock.now()
                for host in hosts:
                    box = self._container(testcontainers, types, tag, host)
                    self._containers[host] = box
                    box.start()
                for host in hosts:
                    role = "head" if host == HEAD else "node"
                    self._wait_line(host, ready_line(role, host))
                self.timings[phase] = self.clock.now() - began
        except BaseException as error:
            logs = self._bring_up_logs() if isinstance(error, ContainerNotReady) else ""
            self.stop()
            if logs:
                raise ContainerNotReady(f"{error}{logs}") from None
            raise
        finally:
            client.close()
        return self

    def _wrapped(self, host: str) -> Any:
        return self._containers[host].get_wrapped_container()

    def logs(self, host: str) -> str:
        return str(self._wrapped(host).logs(stdout=True, stderr=True).decode(errors="replace"))

    def status(self, host: str) -> str:
        wrapped = self._wrapped(host)
        wrapped.reload()
        return str(wrapped.status)

    def _wait_line(self, host: str, line: str, seen: int = 0) -> None:
        """Wait until ``line`` is in ``host``'s log more than ``seen`` times."""
        try:
            wait_until_up(
                lambda: self.logs(host),
                lambda: self.status(host),
                line,
                bound=self.bound,
                clock=self.clock,
                seen=seen,
            )
        except ContainerNotReady as error:
            raise ContainerNotReady(f"{host} of cluster {self.name}: {error}") from None

    def _bring_up_logs(self) -> str:
        """The end of the daemons' logs in every container still running ('' if none)."""
        parts = []
        for host in self._containers:
            try:
                code, out = self._wrapped(host).exec_run(
                    ["sh", "-c", f'tail -n 15 "{LOG_DIR}"/* 2>/dev/null'], demux=False
                )
            except Exception:
                continue
            text = out.decode(errors="replace").strip() if code == 0 and out else ""
            if text:
                parts.append(f"\nthe end of {LOG_DIR}/* on {host}:\n{text}")
        return "".join(parts)

    # -- faults ----------------------------------------------------------------------------------

    def lose(self, host: str) -> None:
        """The node's machine is gone: its container stops at once (SIGKILL)."""
        if host == HEAD or host not in self._containers:
            raise ValueError(f"{host!r} is not a node of cluster {self.name}")
        self._wrapped(host).stop(timeout=0)

    def bring_back(self, host: str) -> None:
        """Start a lost node's container again; returns once it is back in the partition (its
        entrypoint printed its line once more, and slurmctld shows it up)."""
        line = ready_line("node", host)
        seen = ready_count(self.logs(host), line)
        self._wrapped(host).start()
        self._wait_line(host, line, seen)
        self.await_node(host, lambda state: state in UP_STATES, "back in the partition")

    def node_state(self, host: str) -> str:
        """sinfo's state of node ``host``, asked on the head (``down*`` for a lost one)."""
        code, out = self._wrapped(HEAD).exec_run(["sinfo", "-h", "-n", host, "-o", "%T"])
        return out.decode(errors="replace").strip() if code == 0 else ""

    def await_node(self, host: str, ready: Callable[[str], bool], what: str) -> None:
        """Poll :meth:`node_state` until ``ready``; :class:`ContainerNotReady` after
        :attr:`bound` seconds, saying ``what`` did not happen."""
        deadline = self.clock.now() + self.bound
        while not ready(state := self.node_state(host)):
            if self.clock.now() >= deadline:
                raise ContainerNotReady(
                    f"{host} of cluster {self.name} was not {what} within {self.bound:.0f} s "
                    f"(sinfo: {state or 'no answer'})"
                )
            pause(self.clock, 0.25)

    # -- teardown --------------------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Remove the cluster's containers (and their volumes), its network and its directories;
        stopping a stopped cluster does nothing. Returns what could not be removed (each with
        why), after one more look at the engine for anything left with the cluster's label."""
        atexit.unregister(self.stop)
        failed: list[str] = []
        containers, self._containers = self._containers, {}
        if self.shared is not None and HEAD in containers:
            # The jobs' files are root's: removed from inside, where root owns them.
            with contextlib.suppress(Exception):
                containers[HEAD].get_wrapped_container().exec_run(
                    ["sh", "-c", f"rm -rf {SHARED_DIR}/* {SHARED_DIR}/.[!.]*"]
                )
        for host, box in containers.items():
            try:
                box.stop()
            except Exception as error:
                failed.append(f"container {self.container_name(host)} ({_first_line(str(error))})")
        network, self._network = self._network, None
        if network is not None:
            try:
                network.remove()
            except Exception as error:
                failed.append(f"network {self.name} ({_first_line(str(error))})")
        for path in (self.secrets, self.shared):
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)
                if path.exists():
                    failed.append(f"directory {path}")
        self.secrets = self.shared = None
        if containers or network is not None:
            try:
                docker = require("docker")
                client = docker.from_env()
                try:
                    left = leftovers(client, self.name)
                finally:
                    client.close()
                failed += [f"{what} (still in the engine)" for what in left if what not in failed]
            except Exception as error:
                failed.append(f"the engine's list ({_first_line(str(error))})")
        for what in failed:
            log.warning("cluster %s: could not remove %s", self.name, what)
        return failed

    # -- transports ------------------------------------------------------------------------------

    def exec_transport(self, docker: str = "docker") -> DockerExecTransport:
        """The head's commands through ``docker exec``."""
        return DockerExecTransport(self.container_name(HEAD), docker=docker)

    def ssh_transport(self) -> SshTransport:
        """The adapter's :class:`SshTransport` to the head's sshd, as root with the cluster's
        key, the head's host key (read from the container) the only one accepted."""
        if self.layout is None or self.secrets is None:
            raise ContainerNotReady(f"cluster {self.name} is not started")
        key = self.secrets / "id_ed25519"
        if not key.exists():
            raise ContainerNotReady("no ssh-keygen on this host: no key for the SSH transport")
        address = self.layout.address(HEAD)
        code, out = self._wrapped(HEAD).exec_run(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"])
        if code != 0:
            raise ContainerNotReady(f"the head has no ssh host key ({_first_line(out.decode())})")
        kind, blob = out.decode().split()[:2]
        known = self.secrets / "known_hosts"
        known.write_text(f"{address} {kind} {blob}\n")
        return SshTransport(
            address,
            user="root",
            identity_file=str(key),
            control_dir=str(self.secrets),
            options=[
                "-o",
                f"UserKnownHostsFile={known}",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "ConnectTimeout=10",
            ],
        )


# -- the docker exec transport ---------------------------------------------------------------

Runner = Callable[[list[str], str, float | None], subprocess.CompletedProcess[str]]
"""Runs a local argv with its stdin and timeout, without a shell; raises
``subprocess.TimeoutExpired`` on timeout."""


def run_process(
    argv: list[str], stdin: str, timeout: float | None
) -> subprocess.CompletedProcess[str]:
    """The default :data:`Runner`: ``subprocess.run``, output captured as text."""
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )


class DockerExecTransport:
    """The Slurm commands of a running container, through ``docker exec -i`` (the docker CLI;
    no shell on either side: each argv element reaches the command as it is). A timeout
    raises ``subprocess.TimeoutExpired`` naming the command; the docker CLI is killed, the
    command in the container may run on."""

    def __init__(
        self,
        container: str,
        *,
        docker: str = "docker",
        user: str | None = None,
        runner: Runner = run_process,
    ) -> None:
        for what, value in (("container", container), ("user", user)):
            if value is not None and (not value or value.startswith("-")):
                raise ValueError(f"{value!r} is not a {what} name")
        self.container = container
        self.docker = docker
        self.user = user
        self.runner = runner

    def command(self, argv: Sequence[str]) -> list[str]:
        """The local argv that runs ``argv`` in the container."""
        if not argv:
            raise ValueError("no command to run")
        user = ["--user", self.user] if self.user is not None else []
        return [self.docker, "exec", "-i", *user, self.container, *argv]

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        local = self.command(argv)
        try:
            done = self.runner(local, stdin if stdin is not None else "", timeout)
        except subprocess.TimeoutExpired as expired:
            raise subprocess.TimeoutExpired(
                list(argv), expired.timeout, output=expired.output, stderr=expired.stderr
            ) from expired
        return subprocess.CompletedProcess(list(argv), done.returncode, done.stdout, done.stderr)


class ClusterTransport:
    """The transport of a cluster that starts on first need: each call starts the cluster
    (once) and goes through the transport ``make`` returns for it."""

    def __init__(self, cluster: SlurmCluster, make: Callable[[SlurmCluster], Transport]) -> None:
        self.cluster = cluster
        self.make = make
        self._transport: Transport | None = None

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        if self._transport is None:
            self._transport = self.make(self.cluster.start())
        return self._transport.run(argv, stdin=stdin, timeout=timeout)

    def forget(self) -> None:
        self._transport = None


# -- the harness -----------------------------------------------------------------------------

CONTAINERS_REFUSED: Final[Mapping[str, str]] = {
    need: why for need, why in LOCAL_REFUSED.items() if need != Fault.LOSE_NODE
}
"""What the containers harness never gives: slurm-local's list, but the loss of a node, which a
node container can really suffer."""


class SlurmContainersHarness(SlurmLocalHarness, LosesNodes[SlurmBackend]):
    """``slurm-local``'s harness on a :class:`SlurmCluster` in containers, started on first
    need and removed by :meth:`close`; its commands (the adapter's and the harness's) reach the
    head by ``docker exec``, or by SSH with ``ssh=True``. It offers slurm-local's powers and the
    real loss of a node. Without the extra or an engine, every check is skipped with the reason;
    under ``CI=true``, where ``.ci/run`` starts an engine, a missing one fails."""

    name = "slurm-containers"
    required_under_ci = True
    refused = CONTAINERS_REFUSED
    scratch_root = SHARED_DIR
    node_loss_bound = 90.0
    """Seconds a lost node may take to end (or requeue) its job; coming back is bounded by the
    cluster's own ``bound``."""

    def __init__(
        self,
        cluster: SlurmCluster | None = None,
        *,
        ssh: bool = False,
        docker: str = "docker",
        clock: Clock | None = None,
        bound: float = 300.0,
    ) -> None:
        self.cluster = cluster if cluster is not None else SlurmCluster()
        self.docker = docker
        self.ssh = ssh
        if ssh:
            self.name = "slurm-containers-ssh"
        make: Callable[[SlurmCluster], Transport] = (
            SlurmCluster.ssh_transport if ssh else (lambda c: c.exec_transport(docker))
        )
        self.cluster_transport = ClusterTransport(self.cluster, make)
        super().__init__(transport=self.cluster_transport, clock=clock, bound=bound)

    def _probe(self) -> str | None:
        """Start the cluster (once), then probe its Slurm as ``slurm-local`` does."""
        why = engine_problem(self.docker)
        if why is None and not self.cluster.started:
            try:
                self.cluster.start()
            except Exception as error:
                log.warning("the Slurm cluster did not start: %s", error)
                said = _first_line(str(error)) or type(error).__name__
                why = f"the cluster did not start ({said})"
        return why if why is not None else super()._probe()

    def slurm_config(self) -> dict[str, str]:
        """``scontrol show config`` on the head, or CannotInject("a Slurm in containers:
        <why there is none>") (HarnessUnavailable under ``CI=true``)."""
        try:
            return super().slurm_config()
        except CannotInject as cannot:
            raise CannotInject(f"a Slurm in containers: {self._reason or cannot.fault}") from None
        except HarnessUnavailable as unavailable:
            raise HarnessUnavailable(
                f"{self.name} needs a Docker engine and its cluster under CI=true (start one "
                f"with ci/docker-up.sh): {self._reason}",
                missing=unavailable.missing,
            ) from None

    def declines(self, need: str) -> str | None:
        if need == look_alike_need(LookAlike.OTHER_USER):
            return None  # the commands run as root in the head container
        return super().declines(need)

    # -- the loss of a node ------------------------------------------------------------------------

    def _nodes_of(self, ref: ObjectRef) -> list[str]:
        done = self._run("squeue", "-j", ref.id, "-h", "-o", "%T|%N|%j")
        for line in done.stdout.splitlines():
            state, nodes, name = [*line.split("|", 2), "", ""][:3]
            if name == ref.uid and state == "RUNNING" and nodes:
                shown = self._run("scontrol", "show", "hostnames", nodes)
                return shown.stdout.split()
        return []

    def lose_node(self, backend: SlurmBackend, ref: ObjectRef) -> None:
        """Stop the container of the first node the running job holds (SIGKILL: the machine
        is gone); wait until slurmctld has ended or requeued the job (NODE_FAIL), then start
        the node again and wait until it is back in the partition. Refused when another job
        runs on that node: a real node's loss would end it too."""
        self.let_run(backend, ref)
        nodes = self._nodes_of(ref)
        if not nodes:
            raise Rejected(f"job {ref.id} is not running: it has no node to lose")
        node = nodes[0]
        sharing = [
            other
            for other in self._run(
                "squeue", "-h", "-t", "running", "-w", node, "-o", "%i"
            ).stdout.split()
            if other != ref.id
        ]
        if sharing:
            raise CannotInject(
                f"lose_node (job {', '.join(sharing)} also runs on {node}: a real node's loss "
                "would end it too)"
            )
        cluster = self.cluster
        cluster.lose(node)
        try:
            bound = self.node_loss_bound
            if not self._wait(
                backend,
                lambda row: row is None or row.state not in ("RUNNING", "COMPLETING"),
                ref,
                bound,
            ):
                raise CannotInject(
                    f"lose_node (job {ref.id} still ran {bound:.0f} s after {node} was lost)"
                )
        finally:
            try:
                cluster.bring_back(node)
            except ContainerNotReady as error:
                raise CannotInject(f"lose_node ({_first_line(str(error))})") from None

    def close(self) -> None:
        """Release what ``slurm-local`` holds on the cluster, then remove the cluster."""
        try:
            if self.cluster.started:
                super().close()
        finally:
            self.cluster.stop()
            self.cluster_transport.forget()


def slurm_containers() -> SlurmContainersHarness:
    """The ``slurm-containers`` harness: a head and two nodes, commands by ``docker exec``."""
    return SlurmContainersHarness()


def slurm_containers_ssh() -> SlurmContainersHarness:
    """The ``slurm-containers-ssh`` harness: the same cluster, commands over SSH to the head."""
    return SlurmContainersHarness(ssh=True)


__all__ = [
    "BASE_IMAGE",
    "CLUSTER_LABEL",
    "INSTALL_HINT",
    "PACKAGES",
    "UP_STATES",
    "ClusterTransport",
    "ContainerNotReady",
    "DockerExecTransport",
    "Knobs",
    "Layout",
    "MissingExtra",
    "Runner",
    "ScriptMissing",
    "SlurmCluster",
    "SlurmContainersHarness",
    "bring_up_files",
    "container_command",
    "dockerfile",
    "engine_problem",
    "image_tag",
    "leftovers",
    "ready_count",
    "ready_line",
    "reap",
    "require",
    "run_process",
    "slurm_containers",
    "slurm_containers_ssh",
    "wait_until_up",
]
