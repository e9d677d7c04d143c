"""Figures for the conformance kit (a benchmark, not a test: it prints, it asserts nothing).

    .venv/bin/python benchmarks/conformance_suite.py [--harness NAME ...] [--tier standard]
                                                     [--seed 0] [--processes 2]

The wall time of the whole suite (every registered check of the tier: by default ``standard``,
what ``make demo`` and CI's gate run, and what the 30 s budget of DESIGN §8 is about; ``full``
adds the long stateful runs) per harness: by default
``memory-slurm``, ``memory-kubeflow`` and, when they are registered, ``slurm-sim``,
``slurm-sim-nocomment``, ``kubeflow-sim`` and ``kubeflow-sim-kueue`` (each budgeted at 30 s);
with the outcome counts, the wall and CPU time (the process's: on a shared machine the wall
time includes what others took), the time per suite, and the slowest checks.
Then the totals: all harnesses one after the other, the simulator harnesses alone, and, with
``--processes N`` (default 2; 0 skips it), the wall time of the same run spread over N processes
(one harness per process). Issue 17's goals are printed beside their figures ("met" or "NOT
MET"): each Slurm simulator harness at least 100x faster than a real Slurm on the same checks,
and every simulator harness together under 30 s on 2 processes.

The same checks: those that passed both on the simulator harness and on ``slurm-local`` (a real
Slurm 22.05), each side's time being the sum of those checks' durations. ``slurm-local``'s come
from ``--slurm-local``: ``live`` runs it in this run (this machine's Slurm must be up:
``ci/slurm-up.sh``; about 12 minutes), a path reads them from that run's report.json, and by
default they are those recorded in ``benchmarks/recorded/slurm-local-standard.json`` (a
report.json of the standard tier, its ``run`` saying when and where).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from conformance.checks import Outcome, checks, run_check
from conformance.harnesses import harness_names, load_harness
from conformance.tiers import TIERS

SIMULATORS = ("slurm-sim", "slurm-sim-nocomment", "kubeflow-sim", "kubeflow-sim-kueue")
RECORDED_SLURM_LOCAL = Path(__file__).parent / "recorded" / "slurm-local-standard.json"
"""The standard tier on ``slurm-local`` (a real Slurm 22.05 on this machine's kind), as
report.json holds it: what the Slurm simulator harnesses are compared with by default."""
GOAL_SPEEDUP = 100
GOAL_SIMULATORS_SECONDS = 30.0
"""Every simulator harness together, on the processes asked for (issue 17: on 2 cores)."""
DEFAULT = ("memory-slurm", "memory-kubeflow", *SIMULATORS)


@dataclass
class Figures:
    """One harness's run of the suite."""

    harness: str
    wall: float = 0.0
    cpu: float = 0.0
    """The process's CPU seconds (every thread: a simulator's server too)."""
    outcomes: Counter[str] = field(default_factory=Counter)
    suites: dict[str, float] = field(default_factory=dict)
    slowest: list[tuple[float, str, str]] = field(default_factory=list)
    checks: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Each check's outcome and duration."""


def run_suite(harness_name: str, tier: str, seed: int) -> Figures:
    """Every check of ``tier`` on ``harness_name``, timed."""
    harness = load_harness(harness_name)
    figures = Figures(harness_name)
    suites: defaultdict[str, float] = defaultdict(float)
    started = time.perf_counter()
    cpu_started = time.process_time()
    try:
        for check in checks(tier):
            result = run_check(check, harness, seed)
            figures.outcomes[result.outcome.value] += 1
            suites[check.suite] += result.duration
            figures.slowest.append((result.duration, check.id, result.outcome.value))
            figures.checks[check.id] = (result.outcome.value, result.duration)
    finally:
        harness.close()
        gc.collect()  # a pool's worker ends in os._exit: run the harness's finalizers now
    figures.wall = time.perf_counter() - started
    figures.cpu = time.process_time() - cpu_started
    figures.suites = dict(suites)
    figures.slowest = sorted(figures.slowest, reverse=True)[:3]
    return figures


def verdict(met: bool) -> str:
    return "met" if met else "NOT MET"


def recorded_checks(path: Path) -> tuple[dict[str, tuple[str, float]], str]:
    """Each check's outcome and duration in a report.json of ``slurm-local``, and what its run
    says of when it ran."""
    document = json.loads(path.read_text())
    results = {
        str(row["id"]): (str(row["outcome"]), float(row["duration"]))
        for row in document["results"]
        if row.get("harness", "slurm-local") == "slurm-local"
    }
    run = document.get("run", {})
    return results, f"{path.name}, {run.get('started', 'undated')}"


def same_checks(
    simulated: dict[str, tuple[str, float]], real: dict[str, tuple[str, float]]
) -> tuple[int, float, float]:
    """How many checks passed on both, and the seconds each side spent on them."""
    both = [c for c, (outcome, _) in simulated.items() if outcome == "passed"]
    both = [c for c in both if real.get(c, ("", 0.0))[0] == "passed"]
    return len(both), sum(simulated[c][1] for c in both), sum(real[c][1] for c in both)


def show(figures: Figures, real: tuple[dict[str, tuple[str, float]], str] | None) -> None:
    counts = ", ".join(f"{figures.outcomes[o.value]} {o.value}" for o in Outcome)
    suites = "  ".join(f"{name} {secs:5.2f}s" for name, secs in sorted(figures.suites.items()))
    slow = ", ".join(f"{cid} {secs:.2f}s" for secs, cid, _ in figures.slowest)
    print(f"{figures.harness:22} {figures.wall:7.2f} s   ({figures.cpu:.2f} s CPU)   {counts}")
    print(f"{'':22}   per suite: {suites}")
    print(f"{'':22}   slowest:   {slow}")
    if figures.harness.startswith("slurm-sim") and real is not None:
        count, simulated, on_slurm = same_checks(figures.checks, real[0])
        speedup = on_slurm / simulated if simulated else 0.0
        print(
            f"{'':22}   the {count} checks passed on both: {simulated:.2f} s here, "
            f"{on_slurm:.0f} s on slurm-local ({real[1]}): x{speedup:.0f}   "
            f"goal x{GOAL_SPEEDUP}   {verdict(speedup >= GOAL_SPEEDUP)}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", action="append", help="a harness name or module:factory")
    parser.add_argument("--tier", default="standard", choices=TIERS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--processes", type=int, default=2, help="also time N processes, one harness each (0: no)"
    )
    parser.add_argument(
        "--slurm-local",
        default=str(RECORDED_SLURM_LOCAL),
        metavar="live|REPORT",
        help="what the Slurm simulator harnesses are compared with: 'live' runs slurm-local "
        "now (this machine's Slurm must be up), else a report.json of its run (default: the "
        "recorded one)",
    )
    args = parser.parse_args(argv)
    real: tuple[dict[str, tuple[str, float]], str] | None
    if args.slurm_local == "live":
        print("slurm-local, live (the Slurm of this machine) ...", flush=True)
        live = run_suite("slurm-local", args.tier, args.seed)
        show(live, None)
        real = live.checks, "live, this run"
    else:
        try:
            real = recorded_checks(Path(args.slurm_local))
        except (OSError, ValueError, KeyError, TypeError) as error:
            parser.error(f"--slurm-local {args.slurm_local}: not a readable report.json ({error})")
    known = set(harness_names())
    chosen = args.harness or [name for name in DEFAULT if name in known]
    missing = [name for name in DEFAULT if name not in known and not args.harness]
    print(
        f"the {args.tier} suite ({len(checks(args.tier))} checks), seed {args.seed}"
        + (f"; not registered: {', '.join(missing)}" if missing else "")
    )
    results = []
    for name in chosen:
        figures = run_suite(name, args.tier, args.seed)
        show(figures, real)
        results.append(figures)
    total = sum(f.wall for f in results)
    simulated = sum(f.wall for f in results if f.harness in SIMULATORS)
    print(f"{'total, one after another':34} {total:7.2f} s")
    if any(f.harness in SIMULATORS for f in results):
        print(f"{'the simulator harnesses alone':34} {simulated:7.2f} s")
    if args.processes > 0:
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=args.processes) as pool:
            list(pool.map(run_suite, chosen, [args.tier] * len(chosen), [args.seed] * len(chosen)))
        wall = time.perf_counter() - started
        print(f"{f'total on {args.processes} processes':34} {wall:7.2f} s")
        sims = [name for name in chosen if name in SIMULATORS]
        if sims:
            started = time.perf_counter()
            with ProcessPoolExecutor(max_workers=args.processes) as pool:
                list(pool.map(run_suite, sims, [args.tier] * len(sims), [args.seed] * len(sims)))
            wall = time.perf_counter() - started
            print(
                f"{f'simulators on {args.processes} processes':34} {wall:7.2f} s   "
                f"goal < {GOAL_SIMULATORS_SECONDS:.0f} s   "
                f"{verdict(wall < GOAL_SIMULATORS_SECONDS)}"
            )


if __name__ == "__main__":
    main()
