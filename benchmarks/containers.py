"""Figures for the Slurm in containers (issue 16; a benchmark, not a test: it prints, it
asserts nothing). Needs a Docker engine (``sudo ci/docker-up.sh``) and runs as root.

    .venv/bin/python benchmarks/containers.py [--cold] [--losses 3]
        [--report REPORT.json ...]

- the engine's bring-up when it is already up (``ci/docker-up.sh`` a second time: warm);
- the Slurm image: built from the base image (``--cold`` removes it first: a cold build, apt
  included), then found (cached);
- a cluster (a head and two nodes) up until every node is idle, and removed;
- node loss: a running job's node container stopped, to the job NODE_FAIL (``--losses`` times,
  the median), and the node back;
- with ``--report`` (``report.json`` files of ``dispatch-conformance run``), the time per check
  of each harness in them, on the checks they share, beside the slurm-containers one.

The cold bring-up of the engine (apt, debootstrap) is what ``ci/docker-up.sh`` prints on a
machine without it; CI's log has it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from adapters.slurm.testing.containers import (
    BASE_IMAGE,
    SlurmCluster,
    bring_up_files,
    dockerfile,
    engine_problem,
    host_sources,
    image_tag,
    require,
)

REPO = Path(__file__).resolve().parents[1]


def timed(what: str, seconds: float, note: str = "") -> None:
    print(f"  {what:<44} {seconds:8.2f} s{('  ' + note) if note else ''}")


def engine_warm() -> None:
    began = time.perf_counter()
    done = subprocess.run(
        ["bash", str(REPO / "ci" / "docker-up.sh")], capture_output=True, text=True, check=False
    )
    timed(
        "ci/docker-up.sh, engine already up", time.perf_counter() - began, f"exit {done.returncode}"
    )


def image(cold: bool) -> None:
    client = require("docker").from_env()
    errors = require("docker.errors")
    base = client.images.get(BASE_IMAGE)
    files = {**bring_up_files(), "debian.sources": host_sources()}
    tag = image_tag(dockerfile(), files, str(base.id))
    if cold:
        with contextlib.suppress(errors.ImageNotFound):
            client.images.remove(tag, force=True)
    cluster = SlurmCluster()
    for what in ("cold" if cold else "first", "cached"):
        began = time.perf_counter()
        cluster.image(client, errors)
        timed(f"Slurm image ({what})", time.perf_counter() - began, tag)
    client.close()


def cluster_and_losses(losses: int) -> None:
    cluster = SlurmCluster()
    began = time.perf_counter()
    cluster.start()
    timed("cluster up (head + 2 nodes idle)", time.perf_counter() - began, str(cluster.timings))
    head = cluster.exec_transport()
    took: list[float] = []
    try:
        for _ in range(losses):
            job = head.run(
                ["sbatch", "--parsable", "--no-requeue", "-w", "node2", "-o", "/dev/null",
                 "--wrap", "sleep 300"]
            ).stdout.strip()  # fmt: skip
            while "RUNNING" not in head.run(["squeue", "-h", "-j", job, "-o", "%T"]).stdout:
                time.sleep(0.25)
            lost = time.perf_counter()
            cluster.lose("node2")
            while "NODE_FAIL" not in head.run(["squeue", "-h", "-t", "all", "-j", job,
                                               "-o", "%T"]).stdout:  # fmt: skip
                time.sleep(0.25)
            took.append(time.perf_counter() - lost)
            back = time.perf_counter()
            cluster.bring_back("node2")  # returns once node2 is back in the partition
            timed("node2 back in the partition", time.perf_counter() - back)
        timed(
            f"node loss to NODE_FAIL (median of {losses})",
            statistics.median(took),
            " ".join(f"{t:.1f}" for t in took),
        )
    finally:
        began = time.perf_counter()
        left = cluster.stop()
        timed("cluster removed", time.perf_counter() - began, f"left: {left or 'nothing'}")


def per_check(reports: list[Path]) -> None:
    runs: dict[str, dict[str, float]] = {}
    for path in reports:
        for result in json.loads(path.read_text())["results"]:
            if result["outcome"] == "passed":
                runs.setdefault(result["harness"], {})[result["id"]] = result["duration"]
    if "slurm-containers" not in runs:
        print("  (no slurm-containers results in the reports)")
        return
    mine = runs["slurm-containers"]
    for harness, durations in sorted(runs.items()):
        shared = sorted(set(durations) & set(mine))
        if not shared:
            continue
        theirs, ours = sum(durations[c] for c in shared), sum(mine[c] for c in shared)
        print(
            f"  {harness:<24} {len(shared):3d} checks passed on both: {theirs:8.1f} s, "
            f"{theirs / len(shared):6.2f} s per check; slurm-containers {ours:8.1f} s "
            f"({ours / theirs if theirs else float('inf'):.1f}x)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="remove the Slurm image first")
    parser.add_argument("--losses", type=int, default=3, help="node losses to time (default 3)")
    parser.add_argument("--report", type=Path, action="append", default=[],
                        help="a report.json to compare per check (repeatable)")  # fmt: skip
    args = parser.parse_args()
    why = engine_problem()
    if why is not None:
        print(f"containers benchmark: {why}", file=sys.stderr)
        return 2
    print("The Slurm in containers (issue 16)")
    engine_warm()
    image(args.cold)
    cluster_and_losses(max(1, args.losses))
    if args.report:
        print("Time per check")
        per_check(args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
