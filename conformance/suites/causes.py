"""Causes (``CAUSE-``): an ended object's failure is told with its cause, never collapsed into
a bare exit code (DESIGN §4, Observations)."""

from __future__ import annotations

from typing import Final

from conformance.checks import Context, Needs, check
from conformance.harness import Fault
from conformance.steps import long_spec, look, run
from dispatch_core import Cause, State

CAUSES_CLAUSE: Final = (
    "DESIGN §4, Observations: a failure is never collapsed into a bare failed without its cause"
)


@check("CAUSE-001", clause=CAUSES_CLAUSE, needs=Needs(faults=(Fault.LET_RUN, Fault.OOM_KILL)))
def killed_for_memory(ctx: Context) -> None:
    """An execution killed for its memory shows cause out_of_memory, not its exit code."""
    ref = ctx.start(ctx.plan(long_spec(ctx)))
    run(ctx, ref)
    ctx.faults.oom_kill(ref)
    seen = look(ctx, ref, "after its processes were killed for their memory")
    ctx.expect(
        seen.cause is Cause.OUT_OF_MEMORY,
        f"open showed {ref.id} {seen.state.value} with cause {seen.cause.value} (exit code "
        f"{seen.exit_code}) after the scheduler killed it for its memory: not out_of_memory",
    )
    ctx.expect(
        seen.state in (State.FAILED, State.QUEUED, State.RUNNING),
        f"open showed {ref.id} {seen.state.value} after it was killed for its memory",
    )


__all__ = ["killed_for_memory"]
