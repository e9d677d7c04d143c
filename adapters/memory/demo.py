"""``dispatch-demo``: the memory adapter through a short scripted scenario.

For each shape it prints the capability table (value, source, reason), then plans, starts,
holds, reopens, releases, runs, requeues and stops one job, checking at each step what the
contract promises, and prints what every rank of every execution saw. It exits non-zero if
any promise is broken, so it doubles as an end-to-end check.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable

from ulid import ULID

from adapters.memory.backend import MemoryBackend
from adapters.memory.tables import SHAPES, Shape
from dispatch_core import (
    IDENTITY_ENV,
    Conflict,
    JobID,
    JobSpec,
    Policy,
    Rule,
    RuleKind,
    State,
    VirtualClock,
    capabilities,
    make_plan,
    parse_execution_env,
    with_job,
    with_supervisor,
)


class ScenarioFailed(Exception):
    """A step of the scenario did not behave as the contract says."""


def capability_table(backend: MemoryBackend) -> str:
    """The fourteen answers of ``backend``, one row each, in the seed's order."""
    answers = backend.capabilities(None)
    rows = [("capability", "value", "source", "reason")]
    for capability in capabilities():
        support = answers[capability]
        rows.append((capability.value, support.value.value, support.source.value, support.reason))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(3)]
        lines.append("  ".join(cells) + "  " + row[3])
    return "\n".join(lines)


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise ScenarioFailed(what)


def scenario(shape: Shape, say: Callable[[str], None], seed: int = 0) -> None:
    """One job's life on a fresh memory cluster of ``shape``, checked step by step."""
    clock = VirtualClock()
    backend = MemoryBackend(shape, clock=clock, seed=seed)
    job = JobID(ULID.from_bytes(random.Random(seed).randbytes(16)))
    spec = JobSpec(command=("python", "train.py", "--epochs", "3"), nodes=2, procs_per_node=2)
    policy = Policy(rules=(Rule(kind=RuleKind.RESUBMIT, budget=2), Rule(kind=RuleKind.HOLD)))
    plan = make_plan(backend, spec, policy, with_supervisor(), with_job(job))
    say(f"plan: job {plan.job}, enforcers {[e.value for e in plan.enforcers]}")

    ref = backend.start(plan, 1, 1)
    say(f"start: {ref.id} uid={ref.uid} submit={ref.submit.isoformat()}")
    expect(backend.start(plan, 1, 1) == ref, "a second start of submission 1 made a new object")

    hold = backend.hold(ref)
    reopened = backend.reopen()
    seen = reopened.open(ref)
    say(f"hold: number {hold}; after reopen the job is {seen.state.value} with hold {seen.hold}")
    expect(seen.state is State.HELD and seen.hold == hold, "the hold did not survive reopen")
    try:
        reopened.release(ref, hold + 1)
        raise ScenarioFailed("a release naming another hold number was accepted")
    except Conflict as refusal:
        say(f"release {hold + 1}: refused ({refusal})")
    reopened.release(ref, hold)
    say(f"release {hold}: done; job is {reopened.open(ref).state.value}")

    backend.cluster.let_run(ref.id)
    backend.requeue(ref)
    requeued = backend.open(ref)
    say(
        f"requeue: restart count {requeued.restart_count}, "
        f"submit {ref.submit.isoformat()} -> {requeued.ref.submit.isoformat()}"
    )
    expect(requeued.ref.submit >= ref.submit, "a requeue moved the submit time back")
    clock.advance(backend.cluster.requeue_delay + 1)
    backend.cluster.let_run(ref.id)

    epochs: list[int] = []
    for execution in backend.executions(ref):
        for rank, env in enumerate(execution.ranks):
            epochs.append(parse_execution_env(env).epoch)
            values = " ".join(f"{name}={env[name]}" for name in IDENTITY_ENV[1:])
            say(f"  rank {rank}: {values}")
    per_execution = sorted(set(epochs))
    expect(epochs == sorted(epochs) and len(per_execution) == 2, f"epochs: {epochs}")

    backend.stop(ref)
    expect(backend.open(ref).state is State.CANCELLED, "stop did not end the job")
    say(f"stop: job is {backend.open(ref).state.value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dispatch-demo",
        description="Run the memory adapter (Slurm and Kubeflow shapes) through a scripted "
        "scenario and print each shape's capability table.",
    )
    parser.add_argument("--shape", choices=SHAPES, action="append", help="only this shape")
    parser.add_argument("--seed", type=int, default=0, help="seed of the job ids and UIDs")
    args = parser.parse_args(argv)
    failed = 0
    for shape in args.shape or SHAPES:
        print(f"== memory adapter, {shape} shape ==")
        print(capability_table(MemoryBackend(shape)))
        print()
        try:
            scenario(shape, lambda line: print(f"  {line}"), seed=args.seed)
            print("  scenario: ok\n")
        except ScenarioFailed as failure:
            failed += 1
            print(f"  scenario: FAILED: {failure}")
            print(f"  replay: dispatch-demo --shape {shape} --seed {args.seed}\n")
    print("all scenarios passed" if not failed else f"{failed} scenario(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
