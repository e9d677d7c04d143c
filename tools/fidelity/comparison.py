"""Comparison: every :class:`TranscriptDifference` between a real and a simulated transcript
(:func:`compare`), and the differences left on purpose (:class:`Known`,
:data:`KNOWN_DIFFERENCES`)."""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from tools.fidelity.normalisation import TOKEN, Context, normalise, similar
from tools.fidelity.scenario import BringBack, LoseNode, Run, Runs, Sleep, Step, WaitState
from tools.fidelity.transcript import Transcript


@dataclass(frozen=True)
class Known:
    """An explained difference, and why it remains.

    It applies to a :class:`TranscriptDifference` of scenario ``scenario`` (``*``: any), in ``mode``
    (None: both), of field ``field`` (``stdout``, ``stderr``, ``rc``, ``reached``,
    ``capture``; ``*``: any), at a step whose normalised command line matches ``command``
    (a regex searched; None: any step), when

    - ``real`` / ``sim`` (regexes) are found in the real / the simulator's answer at that
      step (its exit status as ``rc=N``, stdout and stderr, normalised);
    - with ``times_only``, the texts are the same apart from their ``T+n``/``E+n`` values;

    and it covers the changed lines (those that differ beyond the time tolerance, paired up
    as ``diff`` pairs them) in whose real or simulated version ``lines`` (a regex) is found;
    None covers them all; with ``real_only``, only the lines the real side has and the
    simulator lacks. A difference is explained when the entries that apply to it cover every
    changed line between them (:func:`explain`).

    ``timing`` marks a difference that depends on the real cluster's timing (a periodic pass
    whose phase is unknown), so a given run may not show it."""

    scenario: str
    command: str | None
    field: str
    reason: str
    lines: str | None = None
    real: str | None = None
    sim: str | None = None
    mode: str | None = None
    timing: bool = False
    times_only: bool = False
    real_only: bool = False

    def applies(self, difference: TranscriptDifference) -> bool:
        if self.scenario not in ("*", difference.scenario):
            return False
        if self.mode is not None and self.mode != difference.mode:
            return False
        if self.field not in ("*", difference.field):
            return False
        if self.command is not None and not re.search(self.command, difference.command):
            return False
        if self.real is not None and not re.search(self.real, difference.real_step, re.M):
            return False
        if self.sim is not None and not re.search(self.sim, difference.sim_step, re.M):
            return False
        return not (self.times_only and not similar(difference.real, difference.sim, 10**9))

    def covers(self, line: tuple[str | None, str | None]) -> bool:
        if self.real_only and line[1] is not None:
            return False
        if self.lines is None:
            return True
        return any(re.search(self.lines, side) for side in line if side is not None)

    def explains(self, difference: TranscriptDifference) -> bool:
        """Whether this entry alone explains ``difference``."""
        return bool(explaining(difference, (self,)))


def explaining(difference: TranscriptDifference, known: Sequence[Known]) -> list[Known]:
    """The entries of ``known`` that explain ``difference`` between them: each applies to it,
    and together they cover every changed line (empty: unexplained)."""
    applying = [k for k in known if k.applies(difference)]
    if not applying:
        return []
    lines = changed_lines(difference.real, difference.sim, difference.tolerance) or [
        (difference.real, difference.sim)
    ]
    used: list[Known] = []
    for line in lines:
        entry = next((k for k in applying if k.covers(line)), None)
        if entry is None:
            return []
        if entry not in used:
            used.append(entry)
    return used


def explain(difference: TranscriptDifference, known: Sequence[Known]) -> str | None:
    """Why ``difference`` remains (the reasons of :func:`explaining`), or None."""
    used = explaining(difference, known)
    return "; ".join(dict.fromkeys(k.reason for k in used)) if used else None


def changed_lines(real: str, sim: str, tolerance: int) -> list[tuple[str | None, str | None]]:
    """The lines of two texts that differ beyond ``tolerance``, paired as ``diff`` pairs
    them (None where one side has no line)."""
    left, right = real.splitlines(), sim.splitlines()
    masked = [[TOKEN.sub(r"\1~", line) for line in side] for side in (left, right)]
    changed: list[tuple[str | None, str | None]] = []
    matcher = difflib.SequenceMatcher(a=masked[0], b=masked[1], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        pairs = list(itertools.zip_longest(left[i1:i2], right[j1:j2]))
        if tag == "equal":
            changed += [(a, b) for a, b in pairs if not similar(a or "", b or "", tolerance)]
        else:
            changed += pairs
    return changed


@dataclass(frozen=True)
class TranscriptDifference:
    """One field of one step that the real cluster and the simulator answered differently."""

    scenario: str
    mode: str
    step: int
    command: str
    field: str
    real: str
    sim: str
    reason: str | None = None
    tolerance: int = 2
    real_step: str = ""
    sim_step: str = ""
    """The whole answer of each side at that step: ``rc=N``, stdout, stderr (normalised)."""

    @property
    def explained(self) -> bool:
        return self.reason is not None


_ACCOUNTING_LAG: Final = (
    "accounting lags slurmctld: a pending job's record reaches slurmdbd on slurmctld's db_inx "
    "pass (every 5 s) or with the job's start or end; until then sacct lacks the row (sacct -j "
    "shows the id's previous record, if any), or shows a placeholder named 'allocation' in state "
    "PENDING; the simulator's accounting has every row at once (the pass's phase is unknown)"
)
_PURGE: Final = (
    "slurmctld purges finished jobs on a pass every MAX(10, MinJobAge) s (MinJobAge < 60; "
    "controller.c, _slurmctld_background), a job at the first pass MinJobAge s after its end "
    "(job_mgr.c, purge_old_job), so a job stays in squeue 2-12 s after it ends; the simulator "
    "purges exactly MinJobAge after the end (docs/decisions.md), so it may already answer "
    "'Invalid job id specified', or leave the job's line out of a listing of several ids"
)
_RESTART: Final = (
    "a requeued job restarts at a scheduler pass after its begin time; on the real cluster any "
    "activity triggers one and the periodic pass has an unknown phase (0-55 s after eligibility "
    "seen), the simulator's runs at multiples of sched_interval (60 s unless "
    "SchedulerParameters says otherwise), so the restart time differs (only the times)"
)
_BACKFILLED: Final = (
    "a job without a time limit that the backfill pass (every bf_interval, phase unknown) "
    "starts before the main scheduler does gets the partition's limit, a year where the "
    "partition has none, as its time limit, and its start plus that as its end "
    "(backfill.c 2211-2219, 2697-2702, 2724-2728, at slurm-22-05-8-1: scontrol says "
    "TimeLimit=365-00:00:00 and an EndTime, squeue %e a date); the main scheduler keeps "
    "UNLIMITED and an Unknown end, as the simulator, which runs the main scheduler only, does"
)
KNOWN_DIFFERENCES: tuple[Known, ...] = (
    Known(
        "*", r"^sacct", "stdout", _ACCOUNTING_LAG,
        lines=r"(^|[|\s])(PENDING|allocation)([|\s]|$)", timing=True,
    ),
    Known(
        "*", r"^(squeue|scontrol)", "*", _PURGE,
        real=r"\A(?![\s\S]*Invalid job id specified)", sim=r"Invalid job id specified",
        timing=True,
    ),
    Known(
        "*", r"^squeue", "stdout", _PURGE,
        lines=r"\|(COMPLETED|CANCELLED|FAILED|TIMEOUT|NODE_FAIL|PREEMPTED|OUT_OF_MEMORY|"
        r"BOOT_FAIL|DEADLINE)(\||$)", real_only=True, timing=True,
    ),
    Known(
        "requeue-running", r"^(squeue|sacct)", "stdout", _RESTART,
        lines=r"RUNNING|CANCELLED", times_only=True, timing=True,
    ),
    Known(
        "node-loss", r"^scontrol show job", "stdout", _RESTART,
        lines=r"JobName=fid-requeued ", times_only=True, timing=True,
    ),
    Known(
        "node-loss", r"^scontrol show job", "stdout",
        "a requeued job restarts at the first scheduler pass after its begin time; on the real "
        "cluster that may be the backfill pass (every bf_interval, 30 s, phase unknown), and "
        "scontrol then says Scheduler=Backfill; the simulator runs the main scheduler only "
        "(Scheduler=Main), so that word and the restart's times differ",
        lines=r"JobName=fid-requeued .*Scheduler=Backfill", real=r"Scheduler=Backfill",
        sim=r"Scheduler=Main", timing=True,
    ),
    Known(
        "holds", r"^squeue", "stdout",
        "right after a release (or a StartTime update) the reason reads None until the next "
        "scheduler pass sets BeginTime; that pass runs at once unless one ran less than "
        "sched_min_interval (2 s) before, so the real cluster shows None or BeginTime by timing; "
        "the simulator shows BeginTime at once after a release (slurm-lab 7.7)",
        lines=r"\|PENDING\|(None|BeginTime)\||^\d+\|\d+\|(None|BeginTime)$", timing=True,
    ),
    Known(
        "node-loss", r"^squeue", "stdout",
        "right after the requeue of the job whose node was lost the reason reads None until "
        "the next scheduler pass sets BeginTime (as after a release); that pass runs at once "
        "unless one ran less than sched_min_interval (2 s) before, so the real cluster shows "
        "None or BeginTime by timing; the simulator shows BeginTime at once",
        lines=r"\|fid-requeued\|PENDING\|(None|BeginTime)$",
        real=r"\|fid-requeued\|PENDING\|None$", sim=r"\|fid-requeued\|PENDING\|BeginTime$",
        timing=True,
    ),
    Known(
        "holds", r"^(squeue|sacct)", "stdout",
        "scontrol hold of a running job made its EligibleTime N/A (sacct: Eligible Unknown) here, "
        "while slurm-lab 7.7 saw it kept for a job that had been submitted --hold and released; "
        "the rule is not known, the simulator keeps it",
        lines=r"JobHeldAdmin|fid-HoldBegin",
        real=r"JobHeldAdmin\|N/A\||fid-HoldBegin\|CANCELLED by 0\|Unknown\|",
    ),
    Known(
        "*", r"^sacct", "stdout",
        "a cancelled job's batch step shows CANCELLED 0:15 when SIGTERM reached its shell, and "
        "FAILED 15:0 when only the shell's child got it: proctrack/linuxproc scans /proc once "
        "(kill_tree.c 206-207, 279-284) and skips a task still named slurmstepd (forked, not "
        "yet exec'd, mgr.c 2100 vs 1421), so under load only `sleep` is signalled, the shell "
        "exits 143, which is not WIFSIGNALED (as_mysql_job.c 1489-1501: FAILED), and sacct "
        "prints 143 - 128 (print.c 814-823), at slurm-22-05-8-1; the simulator signals the "
        "shell. Either way the job is CANCELLED and the 15 is in one field",
        lines=r"\.batch\|(CANCELLED\|0:15|FAILED\|15:0)$",
        real=r"\.batch\|FAILED\|15:0$", sim=r"\.batch\|CANCELLED\|0:15$", timing=True,
    ),
    Known(
        "*", r"^scontrol show job", "stdout", _BACKFILLED,
        lines=r"^\s*(RunTime=.*TimeLimit=|StartTime=.*EndTime=|SuspendTime=.*Scheduler=)",
        real=r"Scheduler=Backfill", sim=r"Scheduler=Main", timing=True,
    ),
    Known(
        "*", r"^squeue .*%e", "stdout", _BACKFILLED,
        lines=r"\|(NONE|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)$",
        real=r"\|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$", sim=r"\|NONE$", timing=True,
    ),
    Known(
        "*", r"^scontrol show job", "stdout",
        "AccrueTime is set by the scheduler when it first evaluates an eligible job and is not "
        "moved by a later StartTime update; the simulator derives it from the begin time",
        lines=r"^\s*AccrueTime=",
    ),
)  # fmt: skip
"""The differences left on purpose, each with its reason (also in ``docs/fidelity.md``)."""


def _command_line(argv: Sequence[str] | None, context: Context) -> str:
    if not argv:
        return ""
    words = list(argv)
    while words and words[0] == "env":
        words = words[1:]
        while words and "=" in words[0]:
            words = words[1:]
    return normalise(" ".join(_quote(word) for word in words), context)


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./{}\-]+", word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def _describe(step: Step) -> str:
    if isinstance(step, Runs):
        return f"runs {step.job} {step.seconds}"
    if isinstance(step, WaitState):
        return f"wait_state {step.job} {'|'.join(step.states)} {step.bound:g}"
    if isinstance(step, Sleep):
        return f"sleep {step.seconds:g}"
    if isinstance(step, LoseNode):
        return f"lose_node {step.node}"
    if isinstance(step, BringBack):
        return f"bring_back {step.node}"
    return " ".join(step.argv)


def compare(
    real: Transcript, sim: Transcript, known: Sequence[Known] = KNOWN_DIFFERENCES
) -> list[TranscriptDifference]:
    """Every difference between two runs of one scenario, each explained when one of
    ``known`` matches it."""
    aligned = real.bindings == sim.bindings
    real_ids = {} if aligned else {v: f"{{{k}}}" for k, v in real.bindings.items()}
    sim_ids = {} if aligned else {v: f"{{{k}}}" for k, v in sim.bindings.items()}
    left, right = Context.of(real, real_ids), Context.of(sim, sim_ids)
    tolerance = real.tolerance
    found: list[TranscriptDifference] = []

    def add(
        index: int, command: str, name: str, a: str, b: str, context: tuple[str, str] = ("", "")
    ) -> None:
        difference = TranscriptDifference(
            real.scenario,
            real.mode,
            index,
            command,
            name,
            a,
            b,
            tolerance=tolerance,
            real_step=context[0] or a,
            sim_step=context[1] or b,
        )
        found.append(dataclasses.replace(difference, reason=explain(difference, known)))

    for index in range(max(len(real.steps), len(sim.steps))):
        if index >= len(real.steps) or index >= len(sim.steps):
            have = real.steps if index < len(real.steps) else sim.steps
            text = _describe(have[index].step)
            add(
                index,
                text,
                "step",
                text if have is real.steps else "",
                text if have is sim.steps else "",
            )
            continue
        mine, theirs = real.steps[index], sim.steps[index]
        if mine.step != theirs.step:
            add(index, _describe(mine.step), "step", _describe(mine.step), _describe(theirs.step))
            continue
        if isinstance(mine.step, Run):
            command = _command_line(mine.argv, left) or _describe(mine.step)
            texts = {
                name: (
                    normalise(getattr(mine, name), left),
                    normalise(getattr(theirs, name), right),
                )
                for name in ("stdout", "stderr")
            }
            context = (
                f"rc={mine.rc}\n{texts['stdout'][0]}{texts['stderr'][0]}",
                f"rc={theirs.rc}\n{texts['stdout'][1]}{texts['stderr'][1]}",
            )
            if mine.rc != theirs.rc:
                add(index, command, "rc", str(mine.rc), str(theirs.rc), context)
            if not aligned and mine.step.capture is not None and mine.captured != theirs.captured:
                add(index, command, "capture", str(mine.captured), str(theirs.captured), context)
            for name, (a, b) in texts.items():
                if not similar(a, b, tolerance):
                    add(index, command, name, a, b, context)
        elif isinstance(mine.step, WaitState) and mine.reached != theirs.reached:
            add(index, _describe(mine.step), "reached", str(mine.reached), str(theirs.reached))
    return found
