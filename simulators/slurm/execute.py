"""Execute mode: each time a job starts, its real batch script runs as a subprocess.

The script gets the environment a Slurm 22.05 batch step gets (the submission environment as
``--export`` says, plus ``SLURM_JOB_ID``, ``SLURM_JOB_NAME``, ..., and ``SLURM_RESTART_COUNT``
only when the job has been restarted), runs in its ``--chdir``, and writes to its ``--output``
and ``--error`` files (truncated at each start unless ``--open-mode=append``, as slurm-lab §7.12
saw). An ``srun`` on its PATH starts the command once per task, one after the other, with
``SLURM_PROCID``, ``SLURM_LOCALID`` and ``SLURM_NODEID`` set, so a test can read what every rank
saw (with ``rank_env_dir``, each task's environment is also written to a directory per
execution, listed in :attr:`ExecuteMode.recorded`). The job then ends with the script's exit
status, ``run_for`` virtual seconds after its start (1 s unless set), unless something ends it
first.

A job submitted with ``--signal`` runs on in real time after its start, waiting for its
signal: when the cluster's clock reaches the signal's time, the signal is sent (to the batch
shell for ``B:``, else to the process group), and the job ends a second later with the
script's status if it exits; otherwise its time limit ends it and the process is terminated.

The script runs on the host, synchronously, bounded by ``timeout`` seconds of real time: use
it only with scripts you trust, in a scratch directory.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from simulators.slurm.commands.scontrol import expand_path
from simulators.slurm.controller import Job
from simulators.slurm.sim import SlurmSim

LAUNCH_FAILED: Final = 1
"""The exit status of a job whose batch step could not start (its output file would not open)."""

SRUN: Final = r"""#!/bin/sh
# srun of the dispatch-kit Slurm simulator: one process per task, in order.
while [ $# -gt 0 ]; do
  case "$1" in
    -n|-N|--ntasks|--nodes|-c|--cpus-per-task|--ntasks-per-node|-J|--job-name) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
tasks=${SLURM_NTASKS:-1}
per_node=${SLURM_NTASKS_PER_NODE:-$tasks}
# SLURMSIM_RANK_ENV_DIR (set by ExecuteMode(rank_env_dir=...)): every task's environment is
# written there first, as <procid>.env (NUL-separated, as env -0 prints it; each file whole
# once it appears: written in its .partial directory, then moved, all with one mv), so that it
# is recorded even if an earlier task never ends; the tasks never see the variable.
record=${SLURMSIM_RANK_ENV_DIR-}
unset SLURMSIM_RANK_ENV_DIR
i=0
while [ -n "$record" ] && [ "$i" -lt "$tasks" ]; do
  SLURM_PROCID=$i SLURM_LOCALID=$((i % per_node)) SLURM_NODEID=$((i / per_node)) \
    SLURM_STEP_ID=0 env -0 >"$record/.partial/$i.env"
  i=$((i + 1))
done
if [ -n "$record" ] && [ "$tasks" -gt 0 ]; then
  mv -f "$record/.partial/"*.env "$record/"
fi
status=0
i=0
while [ "$i" -lt "$tasks" ]; do
  SLURM_PROCID=$i SLURM_LOCALID=$((i % per_node)) SLURM_NODEID=$((i / per_node)) \
    SLURM_STEP_ID=0 "$@" || status=$?
  i=$((i + 1))
done
exit $status
"""


class ExecuteMode:
    """Run every started job's script for real. Attach with ``ExecuteMode(sim)``. Each
    script is written to a directory of its own, made in ``scratch_root`` (by default the temp
    directory) and removed once the script is reaped."""

    def __init__(
        self,
        sim: SlurmSim,
        timeout: float = 60.0,
        default_run: int = 1,
        settle: float = 0.5,
        rank_env_dir: str | os.PathLike[str] | None = None,
        scratch_root: str | os.PathLike[str] | None = None,
    ) -> None:
        self.sim = sim
        self.scratch_root = scratch_root
        self.rank_env_dir = Path(rank_env_dir) if rank_env_dir is not None else None
        self.recorded: list[RankRecord] = []  # one per execution, with rank_env_dir
        self.settle = settle
        self.timeout = timeout
        self.default_run = default_run
        self.bin_dir = Path(tempfile.mkdtemp(prefix="dispatch-srun-", dir=scratch_root))
        weakref.finalize(self, shutil.rmtree, self.bin_dir, ignore_errors=True)
        srun = self.bin_dir / "srun"
        srun.write_text(SRUN)
        srun.chmod(srun.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self.results: list[tuple[int, int, int]] = []  # (job id, restart count, exit status)
        self.running: dict[int, Running] = {}  # jobs whose script runs on, in real time
        sim.controller.observe(self._on_event)

    # -- what a subclass may change or use -----------------------------------------------------

    def on_start(self, job: Job) -> None:
        """The scheduler started ``job``: run its script. By default a script runs to its end
        (bounded by ``timeout``) and the job ends ``run_for`` virtual seconds later with its
        status; a job that expects a ``--signal`` runs on in real time until it comes. A
        subclass may run scripts otherwise, with :meth:`launch`, :meth:`reap`,
        :meth:`ended` and :attr:`running` (a job in it is killed when it ends or is
        requeued)."""
        running = self.launch(job)
        if running is None:
            self.ended(job, LAUNCH_FAILED)
            return
        if job.submission.signal is not None:
            # It expects a signal before its time limit: it runs on until one comes.
            self.running[job.job_id] = running
            return
        self.ended(job, self.reap(running, self.timeout))

    def on_signal(self, job: Job) -> None:
        """The controller sent ``job``, whose script runs on (:attr:`running`), its
        ``--signal``: by default it is delivered (:meth:`deliver`), and the job ends a second
        later with the script's status once the script exits (within ``timeout``; killed
        then). A subclass may decide otherwise what the signal does to the job."""
        running = self.running[job.job_id]
        self.deliver(job, running)
        status = self._reap(running, self.timeout)
        if status is not None:
            del self.running[job.job_id]
            self._ended(job, status, after=1)

    def deliver(self, job: Job, running: Running) -> None:
        """Send ``job``'s script the signal the controller last sent the job: to the batch
        shell for ``B:``, else to its process group (the steps are the shell's children)."""
        # Virtual time may reach the signal an instant after the start: give the script the
        # moment of real time it needs to install its traps, as a real minute would.
        settle = running.started + self.settle - time.monotonic()
        if settle > 0:
            time.sleep(settle)
        number, scope = job.signals[-1][1], job.signals[-1][2]
        with contextlib.suppress(ProcessLookupError):
            if scope == "batch":
                running.process.send_signal(number)
            else:
                os.killpg(running.process.pid, number)

    def launch(self, job: Job) -> Running | None:
        """Start ``job``'s script in its own process group, its output to its output files
        (with ``rank_env_dir``, its tasks' environments recorded); None when its output file
        cannot be opened (slurmstepd fails the batch step then: end it with LAUNCH_FAILED)."""
        return self._launch(job)

    @staticmethod
    def reap(running: Running, timeout: float | None) -> int | None:
        """The exit status once the script ends (within ``timeout`` real seconds; a timeout of
        2 s or more kills it then), else None."""
        return ExecuteMode._reap(running, timeout)

    def ended(self, job: Job, status: int | None, after: int | None = None) -> None:
        """The script of ``job`` ended with ``status`` (None: killed): the job ends with it
        ``after`` virtual seconds from now (``run_for`` from its start by default)."""
        self._ended(job, status, after)

    # -- the controller's events ---------------------------------------------------------------

    def _on_event(self, event: str, job: Job) -> None:
        if event == "start":
            self.on_start(job)
        elif event == "signal" and job.job_id in self.running:
            self.on_signal(job)
        elif event in ("end", "requeue") and job.job_id in self.running:
            running = self.running.pop(job.job_id)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, signal.SIGTERM)
            if self._reap(running, 2.0) is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(running.process.pid, signal.SIGKILL)
                self._reap(running, None)

    def _ended(self, job: Job, status: int | None, after: int | None = None) -> None:
        code = status if status is not None else 128 + 9
        self.results.append((job.job_id, job.restart_count, code))
        if after is None:
            after = job.run_for if job.run_for is not None else self.default_run
        else:
            after += self.sim.controller.now - job.start_time
        self.sim.controller.set_run_time(job, after, code)

    def environment(self, job: Job) -> dict[str, str]:
        """The batch step's environment."""
        sub = job.submission
        config = self.sim.config
        base = {k: v for k, v in sub.environment.items() if not k.startswith("__")}
        if sub.export.upper() in ("NONE", "NIL"):
            base = {k: v for k, v in base.items() if k in ("PATH", "HOME")}
        elif sub.export.upper() != "ALL":
            chosen: dict[str, str] = {}
            for item in sub.export.split(","):
                name, eq, value = item.partition("=")
                if name.upper() == "ALL":
                    chosen.update(base)
                elif eq:
                    chosen[name] = value
                elif name in base:
                    chosen[name] = base[name]
            base = chosen
        per_node = sub.ntasks_per_node or 1
        tasks = sub.ntasks or sub.nodes * per_node
        env = dict(base)
        env.update(
            {
                "SLURM_CLUSTER_NAME": config.cluster_name,
                "SLURM_JOB_ACCOUNT": job.account,
                "SLURM_JOB_ID": str(job.job_id),
                "SLURM_JOBID": str(job.job_id),
                "SLURM_JOB_NAME": job.name,
                "SLURM_JOB_PARTITION": job.partition,
                "SLURM_SUBMIT_DIR": sub.environment.get("PWD", sub.work_dir),
                "SLURM_SUBMIT_HOST": config.submit_host,
                "SLURM_JOB_NUM_NODES": str(sub.nodes),
                "SLURM_NNODES": str(sub.nodes),
                "SLURM_JOB_NODELIST": job.nodelist,
                "SLURM_NODELIST": job.nodelist,
                "SLURM_NTASKS": str(tasks),
                "SLURM_NPROCS": str(tasks),
                "SLURM_NTASKS_PER_NODE": str(per_node),
                "SLURMD_NODENAME": job.nodelist.split(",")[0],
                "PATH": f"{self.bin_dir}{os.pathsep}{base.get('PATH', os.defpath)}",
            }
        )
        env.pop("SLURM_RESTART_COUNT", None)
        if job.restart_count > 0:  # unset on a first execution, as in every 22.05 run
            env["SLURM_RESTART_COUNT"] = str(job.restart_count)
        return env

    def run(self, job: Job) -> int:
        """Run ``job``'s script now, to its end; returns its exit status."""
        running = self._launch(job)
        if running is None:
            return LAUNCH_FAILED
        status = self._reap(running, self.timeout)
        return status if status is not None else 128 + 9

    def _launch(self, job: Job) -> Running | None:
        """Start ``job``'s script in its own process group, its output to its output files;
        None when its output file cannot be opened (slurmstepd fails the batch step then)."""
        sub = job.submission
        work_dir = Path(sub.work_dir)
        stdout_path = Path(expand_path(sub.stdout or "slurm-%j.out", job, sub.work_dir))
        stderr_path = (
            Path(expand_path(sub.stderr, job, sub.work_dir)) if sub.stderr else stdout_path
        )
        mode = "a" if sub.open_mode == "append" else "w"
        scratch = Path(tempfile.mkdtemp(prefix="dispatch-job-", dir=self.scratch_root))
        script = scratch / f"slurm_script.{job.job_id}"
        script.write_text(sub.script)
        script.chmod(0o700)
        cwd = work_dir if work_dir.is_dir() else Path(tempfile.gettempdir())
        try:
            out = open(stdout_path, mode)  # noqa: SIM115  (closed when the process is reaped)
            err = out if stderr_path == stdout_path else open(stderr_path, mode)  # noqa: SIM115
        except OSError as error:
            self.sim.controller.log.append(
                f"t={self.sim.controller.now} launch failed {job.job_id}: {error.strerror}"
            )
            shutil.rmtree(scratch, ignore_errors=True)
            return None
        env = self.environment(job)
        if self.rank_env_dir is not None:
            ranks = self.rank_env_dir / f"{job.job_id}.{job.seq}.{job.restart_count}"
            (ranks / ".partial").mkdir(parents=True, exist_ok=True)  # srun writes there first
            env["SLURMSIM_RANK_ENV_DIR"] = str(ranks)
            self.recorded.append(RankRecord(job.job_id, job.seq, job.restart_count, ranks))
        process = subprocess.Popen(
            [str(script), *sub.args],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        return Running(process, (out, err), scratch, time.monotonic(), ExitWatch(process))

    @staticmethod
    def _reap(running: Running, timeout: float | None) -> int | None:
        """The exit status once the script ends (within ``timeout`` real seconds), else None.
        A script killed by a signal reports 128 + its number, as a shell would."""
        if timeout is None or running.exit.wait(timeout):
            status = running.process.wait()
        elif timeout >= 2.0:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, signal.SIGKILL)
            running.process.wait()
            status = -signal.SIGKILL
        else:
            return None
        running.exit.close()
        for handle in set(running.files):
            handle.close()
        shutil.rmtree(running.scratch, ignore_errors=True)
        return status if status >= 0 else 128 - status


@dataclass
class Running:
    """A job's script running: its process (a process group of its own), its output files,
    its scratch directory and when it started (monotonic seconds)."""

    process: subprocess.Popen[bytes]
    files: tuple[IO[str], IO[str]]
    scratch: Path
    started: float
    exit: ExitWatch


class ExitWatch:
    """Waits for a process to end, and wakes the moment it does: on a pidfd (Linux 5.3+),
    which becomes readable when the process exits; elsewhere by polling, as
    ``Popen.wait(timeout)`` does (its sleeps, up to 50 ms each, would be most of the time a
    short script takes). It never reaps: the exit status stays for ``Popen.wait``."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._poll: select.poll | None = None
        fd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            fd = os.pidfd_open(process.pid)
            self._poll = select.poll()
            self._poll.register(fd, select.POLLIN)
        self._release = weakref.finalize(self, _close_fd, fd)  # runs once, whoever calls it

    def wait(self, timeout: float) -> bool:
        """Whether the process has ended, waiting up to ``timeout`` real seconds for it."""
        if self._poll is None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        if self.process.returncode is not None:
            return True
        return bool(self._poll.poll(max(0, math.ceil(timeout * 1000))))

    def close(self) -> None:
        """Release the pidfd now (otherwise when the watch is collected); waiting after
        this polls."""
        self._poll = None
        self._release()


def _close_fd(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


_Running = Running


@dataclass(frozen=True)
class RankRecord:
    """One execution whose tasks' environments were recorded: the job id, the job record's
    submission sequence number (unique per submission, unlike a reused id), its restart count,
    and the directory holding ``<procid>.env`` for each task srun started."""

    job_id: int
    seq: int
    restart_count: int
    directory: Path

    def ranks(self) -> list[dict[str, str]]:
        """The environment each task saw, in SLURM_PROCID order (none if srun never ran)."""
        found = []
        for path in self.directory.glob("*.env"):
            if path.stem.isdigit():
                found.append((int(path.stem), parse_env0(path.read_bytes())))
        return [env for _, env in sorted(found, key=lambda pair: pair[0])]


def parse_env0(data: bytes) -> dict[str, str]:
    """``env -0`` output as a dictionary."""
    env = {}
    for entry in data.decode("utf-8", "surrogateescape").split("\0"):
        name, sep, value = entry.partition("=")
        if sep and name:
            env[name] = value
    return env
