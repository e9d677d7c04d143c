"""Figures for the Slurm simulator (a benchmark, not a test: it prints, it asserts nothing).

    .venv/bin/python benchmarks/slurm_sim.py [--jobs 100000] [--seed 0]

1. throughput: jobs per second through sbatch -> run -> end -> purge, with the id counter
   wrapping (MaxJobId 10,001), all through the command-line facade;
2. squeue by name at size: the median latency of ``squeue --me --name=...`` with 1,000 and with
   50,000 jobs in memory (flat if the lookup does not scan);
3. peak memory of the throughput run (tracemalloc);
4. per-command latency against real Slurm 22.05: the medians of slurm-lab.md §5.1 beside the
   simulator's, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable

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


def throughput(jobs: int, seed: int) -> tuple[float, int, int, float]:
    """Wall seconds, jobs purged, id wraps, peak MiB for ``jobs`` jobs end to end."""
    config = SlurmConfig(
        max_job_id=10_001,
        min_job_age=2,
        nodes=tuple(f"n{i}" for i in range(8)),
        cpus_per_node=64,
        run_time=5,
    )
    sim = SlurmSim(config, seed=seed)
    tracemalloc.start()
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
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    purged = sum(1 for line in sim.controller.log if " purge " in line)
    return elapsed, purged, wraps, peak / 2**20


def median_ms(call: Callable[[], object], repeat: int = 20) -> float:
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


def per_command() -> dict[str, float]:
    sim = SlurmSim(SlurmConfig(max_job_id=1_000, min_job_age=2))
    base = ["--parsable", "--hold", "--comment=dispatch:s=1;a=0", "--output=/dev/null"]
    job = int(sim.run(["sbatch", *base, "--job-name=dj-BENCH00"], stdin=SCRIPT).stdout)
    calls: dict[str, Callable[[], object]] = {
        "sbatch --parsable --hold": lambda: sim.run(
            ["sbatch", *base, "--job-name=dj-BENCH01"], stdin=SCRIPT
        ),
        "squeue --me --name=X -h -o ...": lambda: sim.run(
            ["squeue", "--me", "--name=dj-BENCH00", "-h", "-o", "%i|%j|%T|%k|%V|%r"]
        ),
        "squeue -h -O (incl. RestartCnt)": lambda: sim.run(
            [
                "squeue",
                "--me",
                "-h",
                "-O",
                "JobID:|,Name:|,State:|,Comment:|,SubmitTime:|,RestartCnt:",
            ]
        ),
        "squeue -j ID -h -o ...": lambda: sim.run(["squeue", "-j", str(job), "-h", "-o", "%i|%T"]),
        "scontrol show job ID": lambda: sim.run(["scontrol", "show", "job", str(job)]),
        "scontrol update StartTime=far": lambda: sim.run(
            ["scontrol", "update", f"jobid={job}", "StartTime=2100-01-01T00:00:00"]
        ),
        "sacct -j ID -X -P -o ...": lambda: sim.run(
            ["sacct", "-j", str(job), "-X", "-P", "-o", "JobID,JobName,Comment,State,Submit"]
        ),
        "scancel ID": lambda: sim.run(["scancel", "999"]),
    }
    return {name: median_ms(call) for name, call in calls.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    print(f"throughput: {args.jobs} jobs through sbatch -> run -> end -> purge (seed {args.seed})")
    elapsed, purged, wraps, peak = throughput(args.jobs, args.seed)
    print(f"  {elapsed:.1f} s wall, {args.jobs / elapsed:,.0f} jobs/s, {purged} purged, ")
    print(f"  id counter wrapped {wraps} times, peak traced memory {peak:.1f} MiB")

    print("squeue --me --name=X at size (median of 20):")
    small, large = squeue_at_size(1_000), squeue_at_size(50_000)
    print(f"  1,000 jobs: {small:.3f} ms   50,000 jobs: {large:.3f} ms   ratio {large / small:.2f}")

    print("per command, median of 20 (ms): simulator vs real Slurm 22.05 (slurm-lab.md §5.1)")
    for name, ms in per_command().items():
        real = REAL_MEDIANS_MS[name]
        print(f"  {name:<34} {ms:8.3f}  real {real:6.1f}  sim/real {ms / real:6.3f}")


if __name__ == "__main__":
    main()
