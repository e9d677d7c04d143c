"""The interleaving simulator: seeds pass on the real supervisor, a broken one is caught by a
named invariant with a replay command, and a replay is the same trace byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.interleave import Config, run
from tools.interleave.__main__ import main
from tools.interleave.broken import BROKEN, StartsWithoutFind


def test_a_few_hundred_seeds_pass() -> None:
    failed = [o for o in (run(Config(seed=s)) for s in range(200)) if not o.ok]
    assert not failed, [(o.seed, str(o.violation), o.replay) for o in failed[:3]]


@pytest.mark.parametrize("harness", ["memory-kubeflow"])
def test_seeds_pass_on_the_kubeflow_shape(harness: str) -> None:
    failed = [o for o in (run(Config(seed=s, harness=harness)) for s in range(40)) if not o.ok]
    assert not failed, [(o.seed, str(o.violation)) for o in failed[:3]]


def test_the_real_supervisor_keeps_one_object_over_a_start_that_is_not_idempotent() -> None:
    assert all(run(Config(seed=s, start_not_idempotent=True)).ok for s in range(60))


def test_a_supervisor_that_starts_again_without_find_is_caught(
    capsys: pytest.CaptureFixture[str],
) -> None:
    caught = None
    for seed in range(60):
        outcome = run(
            Config(seed=seed, start_not_idempotent=True, supervisor_class=StartsWithoutFind)
        )
        if not outcome.ok:
            caught = outcome
            break
    assert caught is not None and caught.violation is not None
    assert caught.violation.name == "one-object-per-submission"
    argv = ["--seed", str(caught.seed), "--broken", "starts-without-find"]
    argv += ["--start-not-idempotent"]
    assert main(argv) == 1
    said = capsys.readouterr().out
    replay = f"--seed {caught.seed} --broken starts-without-find --start-not-idempotent"
    assert f"replay: python -m tools.interleave {replay} --stop-at {caught.step}" in said
    assert "invariant one-object-per-submission" in said
    # The replay stops at the step and dumps the record and the ground truth.
    assert main([*argv, "--stop-at", str(caught.step)]) == 1
    dumped = capsys.readouterr().out
    assert f"-- at step {caught.step}:" in dumped and "object " in dumped
    assert "intent(N=" in dumped and "executions:" in dumped


def test_a_replay_is_the_same_trace_byte_for_byte(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(Config(seed=11))
    second = run(Config(seed=11))
    assert "\n".join(first.trace) == "\n".join(second.trace) and len(first.trace) > 50
    main(["--seed", "11", "--trace"])
    one = capsys.readouterr().out
    main(["--seed", "11", "--trace"])
    assert capsys.readouterr().out == one


def test_stop_at_dumps_the_state_at_that_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "5", "--stop-at", "30"]) == 0
    said = capsys.readouterr().out
    assert said.splitlines()[30].startswith("0030 ") and "-- at step 30:" in said
    assert "lease:" in said


def test_seeds_pass_on_the_slurm_simulator_and_replay_the_same() -> None:
    outcomes = [run(Config(seed=s, harness="slurm-sim")) for s in range(4)]
    assert all(o.ok for o in outcomes), [str(o.violation) for o in outcomes if not o.ok]
    again = run(Config(seed=2, harness="slurm-sim"))
    assert again.trace == outcomes[2].trace  # its clock starts at the wall time: ids do not


@pytest.mark.parametrize(
    ("broken", "invariant"),
    [("cancels-foreign-objects", "no-foreign-write"), ("ignores-rule-budgets", "rule-budget")],
)
def test_each_broken_supervisor_is_caught_by_its_invariant(broken: str, invariant: str) -> None:
    supervisor = BROKEN[broken]
    for seed in range(60):
        outcome = run(Config(seed=seed, supervisor_class=supervisor))
        if not outcome.ok:
            assert outcome.violation is not None and outcome.violation.name == invariant
            assert outcome.replay.startswith(
                f"python -m tools.interleave --seed {seed} --broken {broken}"
            )
            return
    pytest.fail(f"{broken} passed 60 seeds")


def test_cancel_writes_only_under_a_live_lease() -> None:
    from adapters.memory import MemoryBackend
    from adapters.memory.testing.harness import MemoryHarness
    from dispatch_core import JobSpec, ObjectRef, OutcomeUnknown, VirtualClock
    from dispatch_core.record import MemoryRecordStore
    from dispatch_core.supervise import Supervisor

    clock = VirtualClock()
    backend = MemoryBackend("slurm", clock=clock)
    store = MemoryRecordStore()
    sup = Supervisor(backend, store, clock, owner="A", lease_ttl=10.0, shutdown_budget=30.0)
    job = sup.submit(JobSpec(command=("true",)))
    ref = sup.status(job).ref
    assert ref is not None
    MemoryHarness("slurm").let_run(backend, ref)
    sup.step()
    unleased: list[float] = []

    def stop(ref: ObjectRef) -> None:  # the scheduler takes its time to end the object
        lease = store.lease(job)
        if lease is None or lease.owner != "A" or not lease.live(clock.now()):
            unleased.append(clock.now())

    backend.stop = stop  # type: ignore[method-assign]
    with pytest.raises(OutcomeUnknown):
        sup.cancel(job)
    assert unleased == []


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["--seed", "1", "--supervisors", "0"],
            "argument --supervisors: wants a whole number >= 1, not '0'",
        ),
        (["--seeds", "-5"], "argument --seeds: wants a whole number >= 1, not '-5'"),
        (["--seeds", "0"], "argument --seeds: wants a whole number >= 1, not '0'"),
        (["--seed", "1", "--jobs", "-1"], "argument --jobs: wants a whole number >= 1, not '-1'"),
        (["--seed", "1", "--calm", "-1"], "argument --calm: wants a whole number >= 0, not '-1'"),
        (["--seed", "1", "--stop-at", "x"], "argument --stop-at: wants a whole number, not 'x'"),
        (
            ["--seed", "1", "--start-not-idempotent", "--harness", "memory-kubeflow"],
            "--start-not-idempotent is a memory-slurm adapter: give --harness memory-slurm",
        ),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    prog = "python -m tools.interleave"
    assert err == f"{prog}: error: {says} (see: {prog} --help)\n"


def test_a_closed_stdout_is_exit_141_without_a_traceback() -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tools.interleave", "--seed", "1"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_k_counts_from_a_persons_late_release_not_from_the_end_of_the_faults() -> None:
    """Seed 30181 (4 jobs, 3 supervisors): the person releases two held jobs near the end of
    the calm steps; the jobs are waiting on the person until then, not on the supervisor, so
    each gets its K steps after the release (it failed terminal-within-k before)."""
    config = Config(seed=30181, jobs=4, supervisors=3)
    outcome = run(config)
    assert outcome.violation is None, outcome.violation
    released = [line for line in outcome.trace if "person releases" in line]
    assert released and int(released[-1][:4]) >= config.faults + config.calm - 10
    assert outcome.steps > config.faults + config.calm  # ran past the first deadline
