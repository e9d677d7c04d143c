"""The stateful suite's driver: Hypothesis runs the machine under a focus, seeded from the
run's seed with no example database, within the harness's budget; a failure says what broke,
the seed, and the shrunk program."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.internal.conjecture import engine
from hypothesis.reporting import with_reporter
from hypothesis.stateful import run_state_machine_as_test

from conformance.checks import CheckFailed, Context, Skip
from conformance.harness import CannotInject, Harness
from conformance.suites.stateful.machine import Machine, Run, machine_spec
from conformance.suites.stateful.model import EXAMPLES, SHRINK_SECONDS, STEPS, Focus
from dispatch_core import Unsupported, make_plan, with_job


def machine_settings(harness: Harness[Any], scale: int = 1) -> settings:
    """Hypothesis's settings: the harness's budget of programs and steps (a real cluster's
    steps take real seconds), the suite's by default; a full-tier run takes ``scale`` times as
    many programs of twice the length."""
    return settings(
        max_examples=(harness.stateful_examples or EXAMPLES) * scale,
        stateful_step_count=(harness.stateful_steps or STEPS) * (2 if scale > 1 else 1),
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=False,
        report_multiple_bugs=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )


def drive(ctx: Context, focus: Focus, needs: tuple[str, ...], scale: int = 1) -> None:
    """Run the machine under ``focus`` with Hypothesis seeded from the run's seed (``scale``
    times the budget, see :func:`machine_settings`); a failure says what broke, the seed, and
    the shrunk program. ``needs`` are the faults of which the focus needs one: when no program
    could exercise it, the check is skipped naming those the harness lacked."""
    try:
        make_plan(ctx.backend, machine_spec(ctx), None, with_job(ctx.job_id()))
    except Unsupported as refused:
        raise Skip(f"the adapter cannot plan a two-node job: {refused}") from None
    run = Run(ctx, focus)

    def stopped_all() -> None:
        if run.leftovers:
            raise RuntimeError("; ".join(run.leftovers))

    ctx.track("stop the objects of the generated programs", stopped_all)

    def factory() -> Machine:
        return run.machine()

    factory = seed(ctx.seed)(factory)
    try:
        with shrinking_budget(SHRINK_SECONDS), with_reporter(run.heard):
            run_state_machine_as_test(factory, settings=machine_settings(ctx.harness, scale))  # type: ignore[arg-type]
    except Exception as failure:  # a CheckFailed, an adapter's error, or Flaky
        raise CheckFailed(report(ctx, run, failure)) from None
    if not run.exercised:
        missing = [n for n in needs if n in run.cannot]
        if missing:
            raise CannotInject(", ".join(missing))
        raise Skip(f"no program could exercise the {focus} invariant on this harness")


@contextmanager
def shrinking_budget(seconds: float) -> Iterator[None]:
    """Bound the wall time Hypothesis spends shrinking (its engine's limit, minutes by default,
    is a module constant); left as is when this Hypothesis has no such constant."""
    name = "MAX_SHRINKING_SECONDS"
    before = getattr(engine, name, None)
    if not isinstance(before, int | float):
        yield
        return
    setattr(engine, name, seconds)
    try:
        yield
    finally:
        setattr(engine, name, before)


def report(ctx: Context, run: Run, failure: BaseException) -> str:
    if isinstance(failure, CheckFailed):
        what = str(failure)
    elif isinstance(failure, BaseExceptionGroup):
        what = "; ".join(f"{type(e).__name__}: {e}" for e in failure.exceptions)
        what = f"the failure did not replay ({type(failure).__name__}): {what}"
    else:
        what = f"raised {type(failure).__name__}: {failure}"
    steps = run.last.steps if run.last is not None else []
    program = "\n".join(f"      {line}" for line in numbered(steps))
    skipped = f"\n    not injectable here: {', '.join(sorted(run.cannot))}" if run.cannot else ""
    return (
        f"{what}\n"
        f"    seed {ctx.seed} (Hypothesis seeded with it, no example database); "
        f"the shrunk program, on a fresh backend of {ctx.harness.name}:\n{program}{skipped}"
    )


def numbered(steps: list[str]) -> Iterator[str]:
    number = 0
    for line in steps:
        if line.startswith(" "):
            yield f"    {line.strip()}"
        else:
            number += 1
            yield f"{number:>3}. {line}"
