"""Safety (``SAFE-``): what DESIGN §9 requires of every adapter, tried through the suite with
the values an attacker (or an unlucky user) puts in a spec, not only in the adapter's own unit
tests."""

from __future__ import annotations

from conformance.checks import CheckFailed, Context, Needs, check
from conformance.harness import Fault, Probe
from conformance.steps import look
from conformance.suites.capability import answer_for
from dispatch_core import Capability, JobSpec, Tristate
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
    needs=Needs(faults=(Fault.LET_RUN,), probes=(Probe.EXECUTIONS, Probe.HOST_PATHS)),
)
def hostile_values_reach_the_job(ctx: Context) -> None:
    """Hostile env values and work_dir reach every rank exactly as given; nothing in them runs."""
    scratch = ctx.scratch_dir()
    canary = f"{scratch}/{CANARY}"
    env = hostile_env(canary)
    fields: dict[str, object] = {"env": env}
    work_dir = None
    probe = ctx.spec(work_dir=f"{scratch}/probe")
    if answer_for(ctx, probe, Capability.WORKING_DIRECTORY).value is Tristate.YES:
        work_dir = f"{scratch}/{HOSTILE_DIR_NAME}"
        ctx.host.make_dir(work_dir)
        fields["work_dir"] = work_dir
    spec = ctx.spec(**fields)
    ranks = first_execution(ctx, spec)
    host = ctx.host
    ctx.expect(
        not host.exists(canary),
        f"a value of the spec ran as shell: {canary} exists after the job ran (env values "
        f"{sorted(env)}{', work_dir ' + repr(work_dir) if work_dir else ''})",
    )
    for rank, seen in enumerate(ranks):
        wrong = {name: seen.get(name) for name, value in env.items() if seen.get(name) != value}
        ctx.expect(
            not wrong,
            "rank {} saw env values other than the spec's: {}".format(
                rank,
                "; ".join(f"{n}={v!r}, not {env[n]!r}" for n, v in sorted(wrong.items())),
            ),
        )
    if work_dir is None:
        return
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
