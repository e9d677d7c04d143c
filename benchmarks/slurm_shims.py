"""Figures for the Slurm PATH shims (a benchmark, not a test: it prints, it asserts nothing).

    .venv/bin/python benchmarks/slurm_shims.py [--calls 10000] [--samples 31]

1. per call: the median wall time of one shim call, a new process each as a program makes it
   (``squeue -j ID -h -o ...`` and ``sbatch --parsable`` through the executables in BIN), after
   10, 1,000 and 10,000 calls of history; goal: under 50 ms, and within 2x of each other;
2. where the time goes: the interpreter alone (``python -I -S -c pass``), and an action
   (``advance``) through ``BIN/dispatch-slurm-shims`` (sent to the server, as the shims) and
   through ``python -m simulators.slurm.shims`` (the console script: it imports the package);
3. the one-off cost a history does have: the first call after the server stopped (it starts a
   server, which replays the trace once).

The history between the measured calls is made of the same calls (sbatch, squeue, scontrol show
job, sacct, scancel, and the clock advanced), sent to the same server from this process, so
that 10,000 of them take seconds, not minutes; they are recorded in the trace as any call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulators.slurm import shims  # noqa: E402
from simulators.slurm.shim_client import request, stop  # noqa: E402

GOAL_MS = 50.0
SCRIPT = "#!/bin/sh\nsleep 5\n"


class Bench:
    def __init__(self, scratch: Path) -> None:
        self.state, self.bin = scratch / "state", scratch / "bin"
        self.cwd = scratch
        argv = ["install", "--state-dir", str(self.state), "--bin-dir", str(self.bin)]
        with open(os.devnull, "w") as quiet:
            stdout, stderr = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = quiet
            try:
                assert shims.main([*argv, "--min-job-age", "30", "--cpus-per-node", "8"]) == 0
            finally:
                sys.stdout, sys.stderr = stdout, stderr
        self.calls = 0
        self.cycle = 0
        self.env = {"PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return request(str(self.state), message, stdin=lambda: SCRIPT)

    def slurm(self, program: str, *args: str, stdin: str | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {
            "kind": "slurm",
            "program": program,
            "args": list(args),
            "env": {},
            "cwd": str(self.cwd),
        }
        if stdin is not None:
            message["stdin"] = stdin
        return self.send(message)

    def fill(self, until: int) -> None:
        """Calls an adapter makes, until ``until`` calls have been made."""
        while self.calls < until:
            self.cycle += 1
            name = f"dj-B{self.cycle}"
            job = self.slurm("sbatch", "--parsable", f"--job-name={name}", stdin=SCRIPT)
            job_id = job["stdout"].strip()
            self.slurm("squeue", "-j", job_id, "-h", "-o", "%i|%j|%T|%k|%V|%r")
            self.slurm("scontrol", "show", "job", job_id)
            self.slurm("sacct", "-j", job_id, "-X", "-P", "-n", "-o", "JobID,State,Submit")
            self.slurm("scancel", job_id)
            self.send({"kind": "manage", "op": "advance", "seconds": 3.0})

    def timed(self, argv: list[str], stdin: str | None = None) -> float:
        started = time.perf_counter()
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, cwd=self.cwd, env=self.env
        )
        elapsed = (time.perf_counter() - started) * 1000
        self.calls += 1
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        return elapsed

    def per_call(self, samples: int) -> tuple[float, float]:
        """Median ms of ``squeue -j`` and of ``sbatch --parsable`` through the shims."""
        job = self.slurm("sbatch", "--parsable", stdin=SCRIPT)["stdout"].strip()
        squeue = [str(self.bin / "squeue"), "-j", job, "-h", "-o", "%i|%j|%T|%r"]
        reads = [self.timed(squeue) for _ in range(samples)]
        writes = [
            self.timed([str(self.bin / "sbatch"), "--parsable"], stdin=SCRIPT)
            for _ in range(samples)
        ]
        self.send({"kind": "manage", "op": "advance", "seconds": 40.0})
        return statistics.median(reads), statistics.median(writes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000, help="the last checkpoint")
    parser.add_argument("--samples", type=int, default=31, help="measured calls per figure")
    args = parser.parse_args()
    checkpoints = sorted({10, 1_000, args.calls})

    with tempfile.TemporaryDirectory(prefix="slurm-shims-bench-") as scratch:
        bench = Bench(Path(scratch))
        try:
            print("per shim call, median of", args.samples, "(a new process each, as a program")
            print("makes it); goal: under 50 ms, and within 2x of each other")
            figures = []
            for checkpoint in checkpoints:
                if checkpoint == 10:
                    bench.slurm("squeue")  # the server starts (not a per-call cost: see 3.)
                bench.fill(checkpoint)
                made = bench.calls
                read, write = bench.per_call(args.samples)
                figures.extend([read, write])
                print(
                    f"  after {made:>6,} calls: squeue -j {read:6.1f} ms   "
                    f"sbatch --parsable {write:6.1f} ms"
                )
            spread = max(figures) / min(figures)
            met = max(figures) < GOAL_MS and spread <= 2.0
            print(
                f"  slowest {max(figures):.1f} ms, slowest/fastest {spread:.2f}: "
                f"{'goal met' if met else 'GOAL MISSED'}"
            )

            print(f"where the time goes (median of {args.samples}):")
            floor = statistics.median(
                bench.timed([sys.executable, "-I", "-S", "-c", "pass"]) for _ in range(args.samples)
            )
            print(f"  the interpreter alone (python -I -S -c pass):   {floor:6.1f} ms")
            fast = [str(bench.bin / "dispatch-slurm-shims"), "advance", "--state-dir"]
            advance = statistics.median(
                bench.timed([*fast, str(bench.state), "1"]) for _ in range(args.samples)
            )
            print(f"  BIN/dispatch-slurm-shims advance (sent to the server):   {advance:6.1f} ms")
            ctl = [sys.executable, "-m", "simulators.slurm.shims", "advance", "--state-dir"]
            bench.env["PYTHONPATH"] = str(ROOT)
            whole = statistics.median(bench.timed([*ctl, str(bench.state), "1"]) for _ in range(5))
            print(f"  python -m simulators.slurm.shims advance (imports all): {whole:6.1f} ms")

            print(f"one-off: the first call after the server stopped, {bench.calls:,} calls in")
            stop(str(bench.state))
            size = (bench.state / shims.STATE_FILE).stat().st_size
            first = bench.timed([str(bench.bin / "squeue"), "-h", "-o", "%i"])
            print(f"  {first / 1000:.2f} s (a new server replays the {size / 2**20:.1f} MiB trace)")
        finally:
            stop(str(bench.state))


if __name__ == "__main__":
    main()
