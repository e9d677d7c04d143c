"""Figures for the Slurm simulator (a benchmark, not a test: it prints, it asserts nothing).

    .venv/bin/python benchmarks/slurm_sim.py [--jobs 100000] [--seed 0]

1. throughput: jobs per second through sbatch -> run -> end -> purge, with the id counter
   wrapping (MaxJobId 10,001), all through the command-line facade;
2. squeue by name at size: the median latency of ``squeue --me --name=...`` with 1,000 and with
   50,000 jobs in memory (flat if the lookup does not scan);
3. the growth of the resident memory over each throughput run (each in a process of its own);
4. per-command latency against real Slurm 22.05: the simulator's medians beside the same
   commands on the Slurm cluster of this machine when one answers (CI starts one), else beside
   the medians of slurm-lab.md §5.1, and the speed-up.

Each figure is printed next to its goal (issue 17) and says "met" or "NOT MET".
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Final

from simulators.slurm import SlurmConfig, SlurmSim

SCRIPT = "#!/bin/sh\nsleep 5\n"
REAL_MEDIANS_MS = {  # slurm-lab.md §5.1, median of 20 calls on the lab cluster
    "sbatch --parsable --hold": 4.2,
    "squeue --me --name=X -h -o ...": 4.7,
    "squeue -h -O (incl. RestartCnt)": 4.1,
    "squeue -j ID -h -o ...": 4.2,
    "scontrol show job ID": 4.2,
    "scontrol update StartTime=far": 3.7,
    "sacct -j ID -X -P -o ...": 89.5,
    "scancel ID": 3.1,
}


def throughput(jobs: int, seed: int, *, traced: bool = True) -> tuple[float, int, int, float]:
    """Wall seconds, jobs purged, id wraps, and the growth of the process's resident memory
    (MiB, peak over the start) for ``jobs`` jobs end to end. Memory is read from the kernel,
    not traced: tracemalloc slows every allocation about fourfold, which would be the figure."""
    config = SlurmConfig(
        max_job_id=10_001,
        min_job_age=2,
        nodes=tuple(f"n{i}" for i in range(8)),
        cpus_per_node=64,
        run_time=5,
    )
    sim = SlurmSim(config, seed=seed)
    sim.trace.enabled = traced
    gc.collect()
    _reset_peak()
    resident = _resident_mib()
    started = time.perf_counter()
    last_id, wraps = 0, 0
    for i in range(jobs):
        done = sim.run(
            [
                "sbatch",
                "--parsable",
                f"--job-name=dj-BENCH{i}",
                "--comment=dispatch:s=1;a=1",
                "--output=/dev/null",
            ],
            stdin=SCRIPT,
        )
        job_id = int(done.stdout)
        wraps += job_id < last_id
        last_id = job_id
        if i % 100 == 99:
            sim.advance(1)
    sim.advance(60)
    elapsed = time.perf_counter() - started
    grown = _peak_mib() - resident
    purged = sum(1 for line in sim.controller.log if " purge " in line)
    return elapsed, purged, wraps, grown


def _resident_mib() -> float:
    """The process's resident memory now, in MiB (Linux: /proc/self/statm)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _reset_peak() -> None:
    """Start the peak (VmHWM) over from what is resident now (Linux 4.0+: clear_refs 5)."""
    Path("/proc/self/clear_refs").write_text("5")


def _peak_mib() -> float:
    """The peak resident memory since the last :func:`_reset_peak`, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("/proc/self/status has no VmHWM")


def median_ms(call: Callable[[], object], repeat: int = 200) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def squeue_at_size(size: int) -> float:
    """Median ms of a squeue by name with ``size`` held jobs in memory."""
    sim = SlurmSim(SlurmConfig(max_job_id=size + 10, max_job_count=size + 10, min_job_age=2))
    for i in range(size):
        sim.controller.submit(_held(f"dj-SIZE{i}"))
    argv = ["squeue", "--me", f"--name=dj-SIZE{size // 2}", "-h", "-o", "%i|%j|%T|%k|%V|%r"]
    return median_ms(lambda: sim.run(argv))


def _held(name: str):  # type: ignore[no-untyped-def]
    from simulators.slurm.controller import Submission

    return Submission(script=SCRIPT, name=name, comment="dispatch:s=1;a=1", hold=True)


BASE: Final = ("--parsable", "--hold", "--comment=dispatch:s=1;a=0", "--output=/dev/null")


def commands(job: str) -> dict[str, list[str]]:
    """The commands of slurm-lab.md §5.1 (their argv, ``job`` a held job's id); sbatch reads
    its script from stdin."""
    return {
        "sbatch --parsable --hold": ["sbatch", *BASE, "--job-name=dj-BENCH01"],
        "squeue --me --name=X -h -o ...": [
            "squeue",
            "--me",
            "--name=dj-BENCH00",
            "-h",
            "-o",
            "%i|%j|%T|%k|%V|%r",
        ],
        "squeue -h -O (incl. RestartCnt)": [
            "squeue",
            "--me",
            "-h",
            "-O",
            "JobID:|,Name:|,State:|,Comment:|,SubmitTime:|,RestartCnt:",
        ],
        "squeue -j ID -h -o ...": ["squeue", "-j", job, "-h", "-o", "%i|%T"],
        "scontrol show job ID": ["scontrol", "show", "job", job],
        "scontrol update StartTime=far": [
            "scontrol",
            "update",
            f"jobid={job}",
            "StartTime=2100-01-01T00:00:00",
        ],
        "sacct -j ID -X -P -o ...": [
            "sacct",
            "-j",
            job,
            "-X",
            "-P",
            "-o",
            "JobID,JobName,Comment,State,Submit",
        ],
        "scancel ID": ["scancel", "999999"],
    }


def _stdin(argv: list[str]) -> str | None:
    return SCRIPT if argv[0] == "sbatch" else None


def timed_commands(run: Callable[[list[str]], str]) -> dict[str, float]:
    """Median ms of each of :func:`commands` through ``run`` (argv to stdout), after one held
    job to name. sbatch 20 times, as in the lab: the jobs it leaves are the rows of the
    squeue -O after it; the others 200 times."""
    job = run(["sbatch", *BASE, "--job-name=dj-BENCH00"]).strip().split(";")[0]
    return {
        name: median_ms(functools.partial(run, argv), 20 if name.startswith("sbatch") else 200)
        for name, argv in commands(job).items()
    }


def per_command() -> dict[str, float]:
    """The commands on a simulator, in process."""
    sim = SlurmSim(SlurmConfig(max_job_id=1_000, min_job_age=2))
    return timed_commands(lambda argv: sim.run(argv, stdin=_stdin(argv)).stdout)


GOAL_SPEEDUP = 100
"""Every command at least 100x faster than on the real cluster (issue 17)."""
GOAL_JOBS_PER_S = 5_000
GOAL_MIB = 100
GOAL_FLAT = 2.0
"""A lookup at 50,000 jobs within twice its time at 1,000."""


def verdict(met: bool) -> str:
    return "met" if met else "NOT MET"


def real_per_command() -> dict[str, float] | None:
    """The same commands on the Slurm cluster of this machine, when one answers (CI starts
    one), their held jobs cancelled after; None without a cluster."""
    if shutil.which("sbatch") is None:
        return None
    if subprocess.run(["scontrol", "ping"], capture_output=True, check=False).returncode != 0:
        return None

    def run(argv: list[str]) -> str:
        done = subprocess.run(argv, input=_stdin(argv), capture_output=True, text=True, check=False)
        return done.stdout

    try:
        return timed_commands(run)
    finally:  # one name per scancel: 22.05 takes --name=a,b as one name, matching nothing
        for name in ("dj-BENCH00", "dj-BENCH01"):
            run(["scancel", "--me", f"--name={name}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs through the throughput run")
    parser.add_argument("--seed", type=int, default=0, help="the simulator's seed")
    args = parser.parse_args()

    print(
        f"throughput: {args.jobs:,} jobs through sbatch -> run -> end -> purge (seed {args.seed})"
    )
    for traced, what in ((True, "with its trace (the default)"), (False, "trace.enabled = False")):
        # each in a process of its own: one run would reuse the memory the other freed
        with ProcessPoolExecutor(max_workers=1, mp_context=get_context("fork")) as fresh:
            done = fresh.submit(functools.partial(throughput, traced=traced), args.jobs, args.seed)
            elapsed, purged, wraps, grown = done.result()
        rate = args.jobs / elapsed
        print(f"  {what}: {elapsed:.1f} s, {purged:,} purged, the id counter wrapped {wraps} times")
        print(
            f"    {rate:8,.0f} jobs/s              goal >= {GOAL_JOBS_PER_S:,}   "
            f"x{rate / GOAL_JOBS_PER_S:.2f}   {verdict(rate >= GOAL_JOBS_PER_S)}"
        )
        print(
            f"    {grown:8.1f} MiB resident growth   goal < {GOAL_MIB}       "
            f"{verdict(grown < GOAL_MIB)}"
        )

    print("squeue --me --name=X at size (median of 200):")
    small, large = squeue_at_size(1_000), squeue_at_size(50_000)
    flat = large / small
    print(
        f"  1,000 jobs: {small:.3f} ms   50,000 jobs: {large:.3f} ms   ratio {flat:.2f}   "
        f"goal <= {GOAL_FLAT}   {verdict(flat <= GOAL_FLAT)}"
    )

    live = real_per_command()
    against = "the Slurm cluster of this machine, live" if live else "slurm-lab.md §5.1, recorded"
    real = live or REAL_MEDIANS_MS
    print(
        f"per command, median ms: simulator vs real Slurm 22.05 ({against}); goal x{GOAL_SPEEDUP}"
    )
    for name, ms in per_command().items():
        speedup = real[name] / ms
        print(
            f"  {name:<34} {ms:7.3f}  real {real[name]:6.1f}  x{speedup:6.0f}   "
            f"{verdict(speedup >= GOAL_SPEEDUP)}"
        )


if __name__ == "__main__":
    main()
