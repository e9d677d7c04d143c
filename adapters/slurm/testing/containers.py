"""A Slurm cluster in a container, for users who have a Docker engine: the optional extra
``containers`` (``pip install 'dispatch-kit[containers]'``, which brings docker and
testcontainers).

- :class:`SlurmContainer` builds an image (Debian 12, Slurm 22.05 from Debian's packages, the
  project's bring-up script ``ci/slurm-up.sh`` with ``ci/slurm-lab-lib.sh``, which it sources)
  and runs one container holding a one-node cluster (slurmctld, slurmd, slurmdbd on MariaDB,
  munge); stopping it removes the container.
- :class:`DockerExecTransport` is the Slurm adapter's transport into a running container:
  ``docker exec``, so at run time it needs only the docker CLI.
- :class:`SlurmContainerHarness` (the ``slurm-container`` harness) is ``slurm-local``'s harness
  on such a container, started on first need and removed by ``close()``. Without the extra or
  without a Docker engine, every check is skipped with the reason.

docker and testcontainers are imported only when a container is started or an engine is
looked for: importing this module needs neither.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.resources
import json
import logging
import shlex
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Final

from adapters.slurm.testing.local import SlurmLocalHarness
from conformance.harness import CannotInject
from dispatch_core import Clock, WallClock
from dispatch_core.clock import pause

EXTRA: Final = "containers"
INSTALL_HINT: Final = "pip install 'dispatch-kit[containers]'"
BASE_IMAGE: Final = "debian:12"
PACKAGES: Final = ("slurm-wlm", "slurmdbd", "slurm-client", "munge", "mariadb-server")
"""Debian 12's packages of a one-node Slurm 22.05 with accounting (installed without their
recommends)."""
SCRIPT_RESOURCE: Final = "slurm-up.sh"
"""The bring-up script, package data of :mod:`adapters.slurm.testing` (``ci/slurm-up.sh``)."""
LIB_RESOURCE: Final = "slurm-lab-lib.sh"
"""The library the bring-up script sources from its own directory, package data as well
(``ci/slurm-lab-lib.sh``)."""
BRING_UP_FILES: Final = (SCRIPT_RESOURCE, LIB_RESOURCE)
"""What the image gets in :data:`SCRIPT_DIR`, each under its package data name."""
SCRIPT_DIR: Final = "/usr/local/sbin"
"""The one directory of the image holding the script and its library."""
SCRIPT_PATH: Final = f"{SCRIPT_DIR}/{SCRIPT_RESOURCE}"
LOG_DIR: Final = "/var/log/slurm-lab"
"""Where the bring-up script writes its logs, inside the container."""
READY_LINE: Final = "dispatch-kit: cluster up"
"""The line the container prints once the bring-up script has exited 0 (the node is idle)."""
IMAGE_REPOSITORY: Final = "dispatch-kit/slurm"
LOG_TAIL: Final = 40

log = logging.getLogger(__name__)


class MissingExtra(ImportError):
    """The optional extra ``containers`` (docker, testcontainers) is not installed."""


class ScriptMissing(FileNotFoundError):
    """The bring-up script, or the library it sources, is not in the installed package."""


class ContainerNotReady(RuntimeError):
    """The image did not build, or the cluster in the container did not come up; the message's
    first line says why, the lines after it hold the logs."""


def require(module: str) -> ModuleType:
    """Import ``module`` of the extra, or raise :class:`MissingExtra` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtra(
            f"the {EXTRA!r} extra is not installed ({error}): {INSTALL_HINT}", name=error.name
        ) from error


def _package_file(name: str, what: str) -> bytes:
    """The bytes of ``adapters/slurm/testing/<name>`` (a link to ``ci/<name>``), or
    :class:`ScriptMissing` saying where ``what`` was looked for."""
    resource = importlib.resources.files("adapters.slurm.testing").joinpath(name)
    try:
        return resource.read_bytes()
    except OSError as error:
        raise ScriptMissing(
            f"{what} is missing: adapters/slurm/testing/{name} (the project's ci/{name}, shipped "
            f"as package data) cannot be read at {resource} ({type(error).__name__})"
        ) from error


def bring_up_script() -> bytes:
    """The bring-up script's bytes, or :class:`ScriptMissing` saying where it was looked for."""
    return _package_file(SCRIPT_RESOURCE, "the bring-up script")


def bring_up_files() -> dict[str, bytes]:
    """The files the image gets in :data:`SCRIPT_DIR`, by name (:data:`BRING_UP_FILES`): the
    bring-up script and the library it sources; :class:`ScriptMissing` when one is missing."""
    return {
        SCRIPT_RESOURCE: bring_up_script(),
        LIB_RESOURCE: _package_file(LIB_RESOURCE, "the bring-up script's library"),
    }


def _positive(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive whole number, not {value!r}")


@dataclass(frozen=True)
class Knobs:
    """The cluster's settings, passed to the bring-up script as flags; ``None`` leaves the
    script's default."""

    job_comment: bool = True
    """``AccountingStoreFlags=job_comment`` (``--job-comment``/``--no-job-comment``)."""
    max_job_id: int | None = None
    min_job_age: int | None = None
    cred_expire: int | None = None

    def __post_init__(self) -> None:
        _positive("max_job_id", self.max_job_id)
        _positive("min_job_age", self.min_job_age)
        _positive("cred_expire", self.cred_expire)

    def flags(self) -> list[str]:
        """The bring-up script's flags for these settings."""
        flags = ["--job-comment" if self.job_comment else "--no-job-comment"]
        for flag, value in (
            ("--max-job-id", self.max_job_id),
            ("--min-job-age", self.min_job_age),
            ("--cred-expire", self.cred_expire),
        ):
            if value is not None:
                flags += [flag, str(value)]
        return flags


def container_command(knobs: Knobs) -> list[str]:
    """The container's command: bring the cluster up (the packages are in the image), print
    :data:`READY_LINE`, then keep the container alive. A failing script ends the container."""
    bring_up = shlex.join([SCRIPT_PATH, "--no-install", *knobs.flags()])
    return [
        "/bin/sh",
        "-c",
        f"set -e; {bring_up}; echo {shlex.quote(READY_LINE)}; exec sleep infinity",
    ]


def dockerfile(knobs: Knobs, packages: Sequence[str] = PACKAGES) -> str:
    """The image's Dockerfile: Debian 12, ``packages`` without recommends, the bring-up script
    and its library (:data:`BRING_UP_FILES` in the build context, copied together into
    :data:`SCRIPT_DIR`) and :func:`container_command` as its command."""
    return "\n".join(
        [
            "# Generated by adapters.slurm.testing.containers: a one-node Slurm 22.05.",
            f"FROM {BASE_IMAGE}",
            "ENV DEBIAN_FRONTEND=noninteractive",
            "RUN apt-get update \\",
            f" && apt-get install -y --no-install-recommends {' '.join(packages)} \\",
            " && rm -rf /var/lib/apt/lists/*",
            f"COPY {' '.join(BRING_UP_FILES)} {SCRIPT_DIR}/",
            f"RUN chmod 0755 {SCRIPT_PATH}",
            f"CMD {json.dumps(container_command(knobs))}",
            "",
        ]
    )


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _tail(text: str, lines: int = LOG_TAIL) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def engine_problem(docker_cli: str = "docker") -> str | None:
    """Why no container can be started here (the extra is missing, no docker CLI, or no Docker
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
        return f"no Docker engine answers ({type(error).__name__}: {_first_line(str(error))})"
    return None


def wait_until_up(
    read_logs: Callable[[], str],
    status: Callable[[], str],
    *,
    bound: float,
    clock: Clock,
    interval: float = 2.0,
) -> None:
    """Return once the container's logs hold :data:`READY_LINE`; raise
    :class:`ContainerNotReady`, with the end of the logs, when the container has ended
    (``status`` says ``exited`` or ``dead``) or ``bound`` seconds of ``clock`` have passed."""
    deadline = clock.now() + bound
    while True:
        logs = read_logs()
        if READY_LINE in (line.strip() for line in logs.splitlines()):
            return
        state = status()
        if state in ("exited", "dead"):
            why = f"the Slurm container {state} before its cluster was up"
        elif clock.now() >= deadline:
            why = f"the Slurm cluster in the container was not up within {bound:.0f} s"
        else:
            pause(clock, interval)
            continue
        raise ContainerNotReady(f"{why}; the container's log ends:\n{_tail(logs)}")


class SlurmContainer:
    """One container running a one-node Slurm 22.05, brought up by ``ci/slurm-up.sh`` with the
    given knobs. :meth:`start` builds the image (once per Dockerfile, script and library: the tag
    is their digest), starts the container and waits, up to ``bound`` seconds, for the cluster;
    :meth:`stop` removes the container. Needs the extra and a Docker engine; testcontainers
    also starts its reaper container (``TESTCONTAINERS_RYUK_DISABLED=true`` turns it off)."""

    def __init__(
        self,
        *,
        job_comment: bool = True,
        max_job_id: int | None = None,
        min_job_age: int | None = None,
        cred_expire: int | None = None,
        packages: Sequence[str] = PACKAGES,
        name: str | None = None,
        hostname: str = "slurm",
        privileged: bool = False,
        bound: float = 300.0,
        build_timeout: float = 1800.0,
        clock: Clock | None = None,
    ) -> None:
        self.knobs = Knobs(job_comment, max_job_id, min_job_age, cred_expire)
        self.packages = tuple(packages)
        self.name = name if name is not None else f"dispatch-slurm-{uuid.uuid4().hex[:10]}"
        if not self.name or self.name.startswith("-"):
            raise ValueError(f"{self.name!r} is not a container name")
        self.hostname = hostname
        self.privileged = privileged
        self.bound = bound
        self.build_timeout = build_timeout
        self.clock: Clock = clock if clock is not None else WallClock()
        self._container: Any = None

    # -- the image ----------------------------------------------------------------------------

    def dockerfile(self) -> str:
        return dockerfile(self.knobs, self.packages)

    def image_tag(self, files: Mapping[str, bytes]) -> str:
        """The image's tag: a digest of its Dockerfile and the files of its build context
        (:func:`bring_up_files`: the bring-up script and its library), names included."""
        digest = hashlib.sha256(self.dockerfile().encode())
        for name, data in sorted(files.items()):
            digest.update(b"\0%s\0%d\0" % (name.encode(), len(data)))
            digest.update(data)
        return f"{IMAGE_REPOSITORY}:{digest.hexdigest()[:16]}"

    def _image(self, client: Any, errors: ModuleType) -> str:
        """Build the image unless the engine has it; its tag."""
        files = bring_up_files()
        tag = self.image_tag(files)
        try:
            client.images.get(tag)
            return tag
        except errors.ImageNotFound:
            pass
        with tempfile.TemporaryDirectory(prefix="dispatch-slurm-image-") as context:
            Path(context, "Dockerfile").write_text(self.dockerfile())
            for name, data in files.items():
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

    # -- the container --------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._container is not None

    def start(self) -> SlurmContainer:
        """Build the image if needed, start the container, and return once its cluster is up
        (:class:`ContainerNotReady` otherwise, the container then removed). Starting a started
        container does nothing."""
        if self._container is not None:
            return self
        docker = require("docker")
        errors = require("docker.errors")
        testcontainers = require("testcontainers.core.container")
        client = docker.from_env()
        try:
            tag = self._image(client, errors)
        finally:
            client.close()
        self._container = testcontainers.DockerContainer(tag).with_name(self.name)
        self._container.with_kwargs(hostname=self.hostname, privileged=self.privileged)
        try:
            self._container.start()
            wait_until_up(self._logs, self._status, bound=self.bound, clock=self.clock)
        except ContainerNotReady as error:
            lab = self._lab_logs()
            self.stop()
            raise ContainerNotReady(f"{error}{lab}") from None
        except BaseException:
            self.stop()
            raise
        return self

    def _wrapped(self) -> Any:
        return self._container.get_wrapped_container()

    def _logs(self) -> str:
        return str(self._wrapped().logs(stdout=True, stderr=True).decode(errors="replace"))

    def _status(self) -> str:
        wrapped = self._wrapped()
        wrapped.reload()
        return str(wrapped.status)

    def _lab_logs(self) -> str:
        """The end of the bring-up script's logs, when the container still runs ('' if not)."""
        try:
            code, out = self._wrapped().exec_run(
                ["sh", "-c", f'tail -n 20 "{LOG_DIR}"/* 2>/dev/null'], demux=False
            )
        except Exception:
            return ""
        text = out.decode(errors="replace").strip() if code == 0 and out else ""
        return f"\nthe end of {LOG_DIR}/* in the container:\n{text}" if text else ""

    def stop(self) -> None:
        """Remove the container (and its volumes); stopping a stopped one does nothing."""
        container, self._container = self._container, None
        if container is not None:
            container.stop()

    def transport(self, docker: str = "docker", user: str | None = None) -> DockerExecTransport:
        """A transport running commands in this container (as ``user``, root by default)."""
        return DockerExecTransport(self.name, docker=docker, user=user)

    def __enter__(self) -> SlurmContainer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


# -- the transport -------------------------------------------------------------------------------

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


# -- the harness ---------------------------------------------------------------------------------


class SlurmContainerHarness(SlurmLocalHarness):
    """``slurm-local``'s harness on a Slurm in a container: its transport is the
    :class:`DockerExecTransport` of ``container``, which is started on first need (the first
    backend) and removed by :meth:`close`. When the container cannot be had (the extra is
    not installed, no Docker engine answers, or the cluster did not come up), every check is
    skipped with the reason "harness cannot inject a Slurm in containers: <why>", by
    ``slurm-local``'s own path (the probe behind :meth:`slurm_config`)."""

    name = "slurm-container"
    required_under_ci = False  # CI has no Docker engine: its checks skip with the reason

    def __init__(
        self,
        container: SlurmContainer | None = None,
        *,
        docker: str = "docker",
        clock: Clock | None = None,
        bound: float = 300.0,
    ) -> None:
        self.container = (
            container
            if container is not None
            else SlurmContainer(max_job_id=20, min_job_age=2, cred_expire=5)
        )
        self.docker = docker
        super().__init__(transport=self.container.transport(docker), clock=clock, bound=bound)

    def _probe(self) -> str | None:
        """Start the container (once), then probe its Slurm as ``slurm-local`` does."""
        why = engine_problem(self.docker)
        if why is None and not self.container.started:
            try:
                self.container.start()
            except Exception as error:
                log.warning("the Slurm container did not start: %s", error)
                said = _first_line(str(error)) or type(error).__name__
                why = f"the container did not start ({said})"
        return why if why is not None else super()._probe()

    def slurm_config(self) -> dict[str, str]:
        """``scontrol show config`` in the container, or CannotInject("a Slurm in containers:
        <why there is none>")."""
        try:
            return super().slurm_config()
        except CannotInject as cannot:
            raise CannotInject(f"a Slurm in containers: {self._reason or cannot.fault}") from None

    def close(self) -> None:
        """Release what ``slurm-local`` holds on the cluster, then remove the container."""
        try:
            if self.container.started:
                super().close()
        finally:
            self.container.stop()


def slurm_container() -> SlurmContainerHarness:
    """The ``slurm-container`` harness on the cluster CI runs (ci/slurm-up.sh): MaxJobId 20,
    MinJobAge 2 s and a 5 s credential lifetime, so that id reuse, purges and requeues can be
    driven in the suite's time."""
    return SlurmContainerHarness()


__all__ = [
    "BASE_IMAGE",
    "INSTALL_HINT",
    "PACKAGES",
    "READY_LINE",
    "ContainerNotReady",
    "DockerExecTransport",
    "Knobs",
    "MissingExtra",
    "Runner",
    "ScriptMissing",
    "SlurmContainer",
    "SlurmContainerHarness",
    "bring_up_files",
    "bring_up_script",
    "container_command",
    "dockerfile",
    "engine_problem",
    "require",
    "run_process",
    "slurm_container",
    "wait_until_up",
]
