"""How the Slurm adapter reaches the Slurm commands: on this host, over SSH, or any object with
the same ``run`` (``SlurmSim.run`` plugs in directly).

A transport never starts a local shell. The adapter prefixes every command with
``env SLURM_TIME_FORMAT=%s TZ=UTC`` itself, so times are epoch seconds on the far side of any
transport (ssh does not forward the environment). A command that does not answer within its
timeout raises ``subprocess.TimeoutExpired``: the adapter treats its outcome as unknown.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Transport(Protocol):
    """Run one command; ``stdin`` is fed to it; raise ``subprocess.TimeoutExpired`` on timeout."""

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]: ...


class LocalTransport:
    """The Slurm commands of this host (a login node), run without a shell, in ``cwd`` when
    given (the submit directory: where sbatch puts ``slurm-<id>.out`` for a job that names no
    output), else in this process's working directory."""

    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.cwd,
        )


class SshTransport:
    """The Slurm commands of a login node over OpenSSH: batch mode (never a password prompt),
    one shared connection, and every argv element quoted for the remote shell."""

    def __init__(
        self,
        host: str,
        *,
        user: str | None = None,
        port: int | None = None,
        identity_file: str | None = None,
        control_dir: str | None = None,
        ssh: str = "ssh",
        options: Sequence[str] = (),
    ) -> None:
        if not host or host.startswith("-"):
            raise ValueError(f"{host!r} is not a host name")
        self.host = host if user is None else f"{user}@{host}"
        control = control_dir or os.path.join(os.path.expanduser("~"), ".ssh")
        self.base = [
            ssh,
            "-o",
            "BatchMode=yes",
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={control}/dispatch-%C",
            "-o",
            "ControlPersist=60",
            *(["-p", str(port)] if port is not None else []),
            *(["-i", identity_file] if identity_file is not None else []),
            *options,
        ]

    def command(self, argv: Sequence[str]) -> list[str]:
        """The local argv that runs ``argv`` on the remote host, quoted for its shell."""
        return [*self.base, "--", self.host, " ".join(shlex.quote(arg) for arg in argv)]

    def run(
        self, argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.command(argv),
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return subprocess.CompletedProcess(list(argv), done.returncode, done.stdout, done.stderr)
