"""Safety (``SAFE-``): what DESIGN §9 requires of every adapter, tried through the suite with
the values an attacker (or an unlucky user) puts in a spec, not only in the adapter's own unit
tests."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence

from conformance.checks import CheckFailed, Context, Needs, Skip, check
from conformance.harness import Fault, Probe
from conformance.steps import found, long_spec, look, ref_text, run
from conformance.suites.capability import answer_for
from conformance.suites.clauses import DESIGN_HOLDS, SEED_000
from dispatch_core import (
    OUTPUT,
    Capability,
    DispatchError,
    JobSpec,
    State,
    Tristate,
    Unsupported,
)
from dispatch_core.clock import pause

SHELL_CLAUSE = (
    "DESIGN §9, Safety: no shell injection, JobSpec fields reach the batch script only through "
    "proper quoting"
)

CANARY = "pwned"
"""The file a value's shell syntax would make in the check's scratch directory if it ran."""


def hostile_env(canary: str) -> dict[str, str]:
    """Environment values that a shell would run, split, expand or end early if a value met it
    unquoted (or only double-quoted): each must reach every rank byte for byte."""
    return {
        "DK_SUBSTITUTION": f"$(touch {canary})",
        "DK_BACKTICKS": f"`touch {canary}`",
        "DK_SEMICOLON": f"x; touch {canary}",
        "DK_AND": f"x && touch {canary} #",
        "DK_QUOTES": "it's a \"quoted\" 'value'",
        "DK_DOLLARS": "$HOME ${PATH} $1 $$ $(",
        "DK_NEWLINE": f"first line\ntouch {canary}\n",
        "DK_GLOB": "* ? [a-z]",
        "DK_BACKSLASHES": "a\\b\\\\c\\n\\",
        "DK_SPACES": "  leading and trailing  ",
        "DK_EMPTY": "",
        "DK_DASHES": "-n -e --",
        "DK_HISTORY": "!! !$",
        "DK_UNICODE": "naïve ✓ 日本 ß",
        "DK_PERCENT": "%j %u %x %%",
        "DK_TAB": "a\tb",
    }


HOSTILE_DIR_NAME = 'it\'s a "dir" $(echo x) `echo y`; $HOME * \\'
"""A directory name that a shell would split, expand or end early if the path met it unquoted:
any of that changes the directory the ranks run in, which the check compares."""


def first_execution(ctx: Context, spec: JobSpec) -> list[dict[str, str]]:
    """Start ``spec``, let it run, and the environment each rank of its first execution saw;
    a job with no rank run, ended or not, fails the check (a value broke its batch script)."""
    ref = ctx.start(ctx.plan(spec))
    ctx.faults.let_run(ref)
    waited, bound = 0.0, 120.0
    while True:
        runs = ctx.executions(ref)
        if runs and runs[0]:
            return runs[0]
        seen = look(ctx, ref, "while waiting for its first execution")
        if seen.state.ended or waited >= bound:
            how = "ended" if seen.state.ended else f"is still {seen.state} after {bound:.0f} s"
            raise CheckFailed(
                f"no rank of the job with hostile values ran, and open shows it {how} "
                f"({seen.cause}, exit code {seen.exit_code}): a value of the spec broke its "
                "batch script or its launch"
            )
        pause(ctx.clock, 5.0)
        waited += 5.0


@check(
    "SAFE-001",
    clause=SHELL_CLAUSE,
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS,)),
)
def hostile_values_reach_the_job(ctx: Context) -> None:
    """Hostile env values reach every rank exactly as given.

    A Kubernetes API server expands ``$(VAR)`` and turns ``$$`` into ``$`` in env values: the
    adapter must escape them."""
    env = hostile_env(f"/tmp/dispatch-conformance-{ctx.job_id()}/{CANARY}")
    same_env(ctx, env, first_execution(ctx, ctx.spec(env=env)))


@check(
    "SAFE-006",
    clause=SHELL_CLAUSE,
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS, Probe.HOST_PATHS)),
)
def hostile_values_never_run(ctx: Context) -> None:
    """Nothing in hostile env values runs as shell: the canary they would make is never made."""
    canary = f"{ctx.scratch_dir()}/{CANARY}"
    env = hostile_env(canary)
    ranks = first_execution(ctx, ctx.spec(env=env))
    ctx.expect(
        not ctx.host.exists(canary),
        f"a value of the spec ran as shell: {canary} exists after the job ran (env values "
        f"{sorted(env)})",
    )
    same_env(ctx, env, ranks)


@check(
    "SAFE-007",
    clause=SHELL_CLAUSE,
    needs=Needs(
        capabilities=(Capability.WORKING_DIRECTORY,),
        faults=(Fault.LET_RUN,),
        probes=(Probe.EXECUTIONS, Probe.HOST_PATHS),
    ),
)
def hostile_work_dir_reaches_the_job(ctx: Context) -> None:
    """A hostile work_dir is where every rank runs, exactly; nothing in it runs as shell."""
    scratch = ctx.scratch_dir()
    canary = f"{scratch}/{CANARY}"
    work_dir = f"{scratch}/{HOSTILE_DIR_NAME}"
    ctx.host.make_dir(work_dir)
    ranks = first_execution(ctx, ctx.spec(work_dir=work_dir))
    host = ctx.host
    ctx.expect(
        not host.exists(canary),
        f"the work_dir ran as shell: {canary} exists after the job ran (work_dir {work_dir!r})",
    )
    wanted = host.realpath(work_dir)
    wrong_dirs = [
        (rank, seen.get("PWD"))
        for rank, seen in enumerate(ranks)
        if seen.get("PWD") is None or host.realpath(str(seen.get("PWD"))) != wanted
    ]
    ctx.expect(
        not wrong_dirs,
        f"ranks ran in {', '.join(f'rank {r}: {p!r}' for r, p in wrong_dirs)}, not the work_dir "
        f"{work_dir!r}",
    )


def same_env(ctx: Context, env: Mapping[str, str], ranks: Sequence[Mapping[str, str]]) -> None:
    """Every rank saw each of ``env``'s values exactly."""
    for rank, seen in enumerate(ranks):
        wrong = {name: seen.get(name) for name, value in env.items() if seen.get(name) != value}
        ctx.expect(
            not wrong,
            "rank {} saw env values other than the spec's: {}".format(
                rank,
                "; ".join(f"{n}={v!r}, not {env[n]!r}" for n, v in sorted(wrong.items())),
            ),
        )


FOREIGN_NAMESPACE = "x-conformance"
"""A namespace no adapter honours; it sorts after ``dispatch``, so an adapter that stops
reading the extensions at the core's own ones never meets it."""
FOREIGN_NAMES = ("Partition", "Queue", "Image")
"""Names adapters honour in their own namespaces (a Slurm partition, a Kubernetes queue, the
core's image): under another namespace each is still foreign."""


def refused_as_foreign(ctx: Context, spec: JobSpec, what: str) -> None:
    """make_plan or start refuses ``spec`` with Unsupported (a plan made is started)."""
    try:
        made = ctx.start(ctx.plan(spec))
    except Unsupported:
        return
    except DispatchError as error:
        ctx.fail(f"{what} was refused with {type(error).__name__} ({error}), not Unsupported")
        return
    ctx.fail(
        f"{what} was started as {ref_text(made)}: an extension from another namespace must be "
        "refused with Unsupported, never ignored or read as the adapter's own"
    )


@check(
    "SAFE-002",
    clause=(
        f"{SEED_000}, How Submit uses the answers: an adapter refuses an extension from another "
        "namespace itself, with ErrUnsupported"
    ),
)
def foreign_extensions_are_refused(ctx: Context) -> None:
    """An extension from another namespace is refused with Unsupported, even beside dispatch.*."""
    for name in FOREIGN_NAMES:
        key = f"{FOREIGN_NAMESPACE}.{name}"
        refused_as_foreign(ctx, ctx.spec(extensions={key: "x"}), f"a spec with {key}=x")
    key = f"{FOREIGN_NAMESPACE}.{FOREIGN_NAMES[0]}"
    beside = ctx.spec(extensions={OUTPUT: "/tmp/dispatch-conformance.out"})
    if answer_for(ctx, beside, Capability.OUTPUT_PATH).value is Tristate.YES:
        spec = ctx.spec(extensions={**beside.extensions, key: "x"})
        refused_as_foreign(ctx, spec, f"a spec with {OUTPUT} and {key}=x")


def hostile_args(canary: str) -> tuple[str, ...]:
    """Command arguments that a shell would run, split, expand, join or end early if the batch
    script met them unquoted: each must reach the command as one argument, byte for byte."""
    return (
        f"$(touch {canary})",
        f"`touch {canary}`",
        f"x; touch {canary}",
        f"x && touch {canary} #",
        f"| touch {canary}",
        "it's a \"quoted\" 'value'",
        "$HOME ${PATH} $1 $$",
        "first line\nsecond line",
        "* ? [a-z] {a,b} ~",
        "a\\b\\\\c\\n\\",
        "  leading and trailing  ",
        "",
        "-n",
        "--",
        "!! !$",
        "naïve ✓ 日本 ß",
        "%s %d %%",
        "a\tb",
        "#not a comment",
    )


@check(
    "SAFE-003",
    clause=SHELL_CLAUSE,
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.HOST_PATHS, Probe.COMMANDS)),
)
def hostile_arguments_reach_the_command(ctx: Context) -> None:
    """Hostile command arguments reach the command exactly; nothing else runs or prints."""
    scratch = ctx.scratch_dir()
    canary = f"{scratch}/{CANARY}"
    output = f"{scratch}/output.txt"
    args = hostile_args(canary)
    spec = ctx.spec(command=("printf", "%s\\n", *args), extensions={OUTPUT: output})
    answer = answer_for(ctx, spec, Capability.OUTPUT_PATH)
    if answer.value is not Tristate.YES:
        raise Skip(f"adapter declares OutputPath {answer.value}: the command's output is unseen")
    ref = ctx.start(ctx.plan(spec))
    ctx.faults.let_run(ref)
    host = ctx.host
    wanted = "".join(f"{arg}\n" for arg in args)

    def settled() -> bool | None:
        # All of it printed, or the job ended (a job the harness keeps running may not end).
        return host.read(output) == wanted or look(ctx, ref, "while it runs").state.ended or None

    with contextlib.suppress(CheckFailed):
        ctx.wait_until(settled, "the job's output", 60.0)
    ctx.expect(
        not host.exists(canary),
        f"a command argument ran as shell: {canary} exists after the job ran",
    )
    text = host.read(output)
    if text == wanted:
        return
    if text is None:
        ctx.fail(f"the job printing its arguments left no output at {output!r}")
        return
    lines, expected = text.split("\n"), wanted.split("\n")
    wrong = [
        f"line {i + 1}: {got!r}, not {want!r}"
        for i, (got, want) in enumerate(zip(lines, expected, strict=False))
        if got != want
    ]
    if len(lines) != len(expected):
        wrong.append(f"{len(lines) - 1} lines, not {len(expected) - 1}")
    ctx.fail(
        "the job's output is not exactly the command's arguments, one a line (an argument was "
        f"split, expanded or changed, or the batch script printed something): {'; '.join(wrong)}"
    )


@check(
    "SAFE-004",
    clause=(
        f"{DESIGN_HOLDS}: valid only for 0 < k < 1_000_000; DESIGN §9, parsers are strict and "
        "total, never a guess"
    ),
    needs=Needs(faults=(Fault.NEAR_HOLD,)),
)
def near_holds_are_no_holds(ctx: Context) -> None:
    """A value just outside the hold encoding is no hold: open and find show no hold number."""
    for variant in range(ctx.faults.near_hold_forms()):
        plan = ctx.plan(long_spec(ctx))
        ref = ctx.start(plan)
        form = ctx.faults.near_hold(ref, variant)
        seen = look(ctx, ref, f"after someone else set {form}")
        ctx.expect(
            seen.hold is None and seen.state is not State.HELD,
            f"open showed the object {seen.state} with hold {seen.hold} after someone else "
            f"set {form}: that value carries no hold number",
        )
        shown = found(ctx, plan.job, f"after someone else set {form}").get(ref.id)
        ctx.expect(
            shown is not None and shown.hold is None and shown.state is not State.HELD,
            f"find showed the object {shown.state if shown else 'nowhere'} with hold "
            f"{shown.hold if shown else None} after someone else set {form}",
        )


@check(
    "SAFE-005",
    clause=(
        f"{SEED_000}, Rule support: the backend enforces a rule only when its native offer "
        "includes it (recorded in Plan.Native and passed to every Start)"
    ),
    needs=Needs(faults=(Fault.LET_RUN, Fault.LOSE_NODE)),
)
def nothing_requeues_unasked(ctx: Context) -> None:
    """A lost node ends an object whose plan pushed no rule down: the scheduler requeues nothing."""
    plan = ctx.plan(long_spec(ctx))
    if plan.native is not None and plan.native.rules:
        raise Skip(f"the plan of an empty policy carries native rules {plan.native.rules}")
    ref = ctx.start(plan)
    before = run(ctx, ref)
    ctx.faults.lose_node(ref)
    pause(ctx.clock, 5.0)
    seen = look(ctx, ref, "after its node was lost")
    restarts = (before.restart_count or 0, seen.restart_count or 0)
    ctx.expect(
        seen.state.ended and restarts[1] == restarts[0],
        f"after its node was lost the object is {seen.state} with restart count {restarts[1]} "
        f"(it was {restarts[0]}): the scheduler requeued it, though its plan pushed no requeue "
        "rule down (an execution no rule ordered, outside every budget)",
    )
