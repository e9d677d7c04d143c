"""Execute mode: each time a job starts, its real batch script runs as a subprocess.

The script gets the environment a Slurm 22.05 batch step gets (the submission environment as
``--export`` says, plus ``SLURM_JOB_ID``, ``SLURM_JOB_NAME``, ..., and ``SLURM_RESTART_COUNT``
only when the job has been restarted), runs in its ``--chdir``, and writes to its ``--output``
and ``--error`` files (truncated at each start unless ``--open-mode=append``, as slurm-lab §7.12
saw). An ``srun`` on its PATH starts the command once per task, one after the other, with
``SLURM_PROCID``, ``SLURM_LOCALID`` and ``SLURM_NODEID`` set, so a test can read what every rank
saw. The job then ends with the script's exit status, ``run_for`` virtual seconds after its
start (1 s unless set), unless something ends it first.

The script runs on the host, synchronously, bounded by ``timeout`` seconds of real time: use
it only with scripts you trust, in a scratch directory.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import Final

from simulators.slurm.commands.scontrol import expand_path
from simulators.slurm.controller import Job
from simulators.slurm.sim import SlurmSim

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
    """Run every started job's script for real. Attach with ``ExecuteMode(sim)``."""

    def __init__(self, sim: SlurmSim, timeout: float = 60.0, default_run: int = 1) -> None:
        self.sim = sim
        self.timeout = timeout
        self.default_run = default_run
        self.bin_dir = Path(tempfile.mkdtemp(prefix="dispatch-srun-"))
        weakref.finalize(self, shutil.rmtree, self.bin_dir, ignore_errors=True)
        srun = self.bin_dir / "srun"
        srun.write_text(SRUN)
        srun.chmod(srun.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self.results: list[tuple[int, int, int]] = []  # (job id, restart count, exit status)
        sim.controller.observe(self._on_event)

    def _on_event(self, event: str, job: Job) -> None:
        if event == "start":
            status = self.run(job)
            self.results.append((job.job_id, job.restart_count, status))
            seconds = job.run_for if job.run_for is not None else self.default_run
            self.sim.controller.set_run_time(job, seconds, status)

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
        """Run ``job``'s script now; returns its exit status (a signal as 128 + number)."""
        sub = job.submission
        work_dir = Path(sub.work_dir)
        stdout_path = Path(expand_path(sub.stdout or "slurm-%j.out", job, sub.work_dir))
        stderr_path = (
            Path(expand_path(sub.stderr, job, sub.work_dir)) if sub.stderr else stdout_path
        )
        mode = "a" if sub.open_mode == "append" else "w"
        script = Path(tempfile.mkdtemp(prefix="dispatch-job-")) / f"slurm_script.{job.job_id}"
        script.write_text(sub.script)
        script.chmod(0o700)
        cwd = work_dir if work_dir.is_dir() else Path(tempfile.gettempdir())
        with open(stdout_path, mode) as out:
            err = out if stderr_path == stdout_path else open(stderr_path, mode)  # noqa: SIM115
            try:
                completed = subprocess.run(
                    [str(script), *sub.args],
                    cwd=cwd,
                    env=self.environment(job),
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    timeout=self.timeout,
                    check=False,
                )
                status = completed.returncode
            except subprocess.TimeoutExpired:
                status = 128 + 9
            finally:
                if err is not out:
                    err.close()
        script.unlink()
        script.parent.rmdir()
        return status if status >= 0 else 128 - status
