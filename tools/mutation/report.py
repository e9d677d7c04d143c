"""mutmut's results as figures: per module, per goal area, against the goal.

Everything here reads files and returns text: no mutmut run, no mutmut import (its results are
JSON files, ``mutants/<path>.meta``, whose ``exit_code_by_key`` maps each mutant's name to the
exit status of its test run), so that a unit test can give it a fixture.

A mutant's name is mutmut's: ``<module>.x_<function>__mutmut_<n>`` or
``<module>.xǁ<Class>ǁ<method>__mutmut_<n>``. The number is its index within the function, so
it changes when the function does; an equivalent mutant is therefore named by its module, its
function and the lines its mutation removes and adds (see ``equivalent.toml``).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

GOAL: Final = 0.95
"""The issue's goal: the kill rate of the non-equivalent mutants of the goal areas."""
BUDGET_SECONDS: Final = 30 * 60
"""The issue's budget for a full run on 2 cores."""

KILLED: Final = "killed"
SURVIVED: Final = "survived"
TIMEOUT: Final = "timeout"
NO_TESTS: Final = "no tests"
SUSPICIOUS: Final = "suspicious"
NOT_CHECKED: Final = "not checked"

_STATUS_BY_EXIT_CODE: Final[Mapping[int | None, str]] = {
    # as mutmut 3.8.1's mutmut.stats.status_by_exit_code, with its "segfault" (-9, -11: the
    # test run died) counted as killed, and anything it calls "suspicious" kept so
    None: NOT_CHECKED,
    0: SURVIVED,
    1: KILLED,
    3: KILLED,  # pytest's internal error
    -9: KILLED,
    -11: KILLED,
    5: NO_TESTS,
    33: NO_TESTS,
    24: TIMEOUT,  # SIGXCPU: over the CPU or the wall-time limit
    -24: TIMEOUT,
    152: TIMEOUT,
    255: TIMEOUT,
    36: TIMEOUT,
}


def status(exit_code: int | None) -> str:
    """The status of a mutant whose test run ended with ``exit_code`` (None: not run yet)."""
    return _STATUS_BY_EXIT_CODE.get(exit_code, SUSPICIOUS)


# -- areas ----------------------------------------------------------------------------------

AREAS: Final = (
    "identity",
    "find",
    "hold",
    "stop",
    "requeue",
    "start",
    "batch-script",
    "adoption",
    "output",
    "causes",
    "caches",
    "gate",
)
"""The goal areas, in the order the report prints them: issue 12's, then the Kubeflow ones of
issue 18 (item 7): adoption after a lost create, rank 0's output, failure causes, the
caches an instance keeps, and the readmission gate."""

_WHOLE_MODULE: Final[Mapping[str, str]] = {
    "adapters.slurm.identity": "identity",
    "adapters.memory.kube": "identity",
    "adapters.slurm.script": "batch-script",
    # the TrainJob's name, identity labels and annotations and their strict parser
    "adapters.kubeflow.names": "identity",
    # what every rank sees: the DISPATCH_ variables and the execution id they are made from
    "adapters.kubeflow.env": "identity",
    "adapters.kubeflow.holds": "hold",
    # how a TrainJob's end, its pods' and its Workload's conditions read as a cause
    "adapters.kubeflow.causes": "causes",
}
_BY_FUNCTION: Final[Mapping[str, Mapping[str, str]]] = {
    "adapters.slurm.backend": {
        # identity: the identity check of every write (seed 001) and the ref it is made from
        "SlurmBackend._checked": "identity",
        "SlurmBackend._ref": "identity",
        "_mismatch": "identity",
        "_same_object": "identity",
        "_require_identity": "identity",
        "SlurmBackend.find": "find",
        "SlurmBackend._named": "find",
        "SlurmBackend._accounted": "find",
        "SlurmBackend._observe": "find",
        "latest_incarnations": "find",
        "SlurmBackend.hold": "hold",
        "SlurmBackend._hold_number": "hold",
        "SlurmBackend.release": "hold",
        "SlurmBackend._update": "hold",
        "SlurmBackend.stop": "stop",
        "SlurmBackend._read_back_until": "stop",
        "SlurmBackend.requeue": "requeue",
        "SlurmBackend.start": "start",
        "SlurmBackend._landed": "start",
        "SlurmBackend._resolve_lost_submission": "start",
    },
    "adapters.memory.backend": {
        "MemoryBackend._identity_of": "identity",
        "MemoryBackend._carried": "identity",
        "MemoryBackend._checked": "identity",
        "MemoryBackend._ref": "identity",
        "MemoryBackend.find": "find",
        "MemoryBackend._objects_of": "find",
        "MemoryBackend._observe": "find",
        "MemoryBackend.hold": "hold",
        "MemoryBackend.release": "hold",
        "MemoryBackend.stop": "stop",
        "MemoryBackend.requeue": "requeue",
        "MemoryBackend.start": "start",
    },
    "adapters.kubeflow.backend": {
        # identity: the check every write and read-back makes (uid and creationTimestamp)
        "KubeflowBackend._ref": "identity",
        "KubeflowBackend._where": "identity",
        "KubeflowBackend._read": "identity",
        "KubeflowBackend._mine": "identity",
        "KubeflowBackend.find": "find",
        "KubeflowBackend.open": "find",
        "KubeflowBackend._observe": "find",
        "KubeflowBackend._restarts": "find",
        "KubeflowBackend._workload": "find",
        "_active": "find",
        "_evictions": "find",
        "KubeflowBackend.hold": "hold",
        "KubeflowBackend.release": "hold",
        "KubeflowBackend._update": "hold",
        "KubeflowBackend._workload_active": "hold",
        "KubeflowBackend._await_workload": "hold",
        "_deactivation_done": "hold",
        "KubeflowBackend._resume": "hold",
        "KubeflowBackend.stop": "stop",
        "KubeflowBackend._delete": "stop",
        "KubeflowBackend._wait": "stop",
        "KubeflowBackend.requeue": "requeue",
        "KubeflowBackend._drop_finished_jobset": "requeue",
        "KubeflowBackend.start": "start",
        "KubeflowBackend._adopt": "adoption",
        "KubeflowBackend._rank0": "output",
        "KubeflowBackend.read_output": "output",
        "KubeflowBackend.follow_output": "output",
        # what an instance keeps between calls: the runtimes it read, whether the gate is on
        "KubeflowBackend.runtime_of": "caches",
        "KubeflowBackend.gate_missing": "caches",
        "KubeflowBackend._read_gate": "caches",
        # the manifest start sends: Kubeflow's counterpart of the batch script
        "KubeflowBackend.trainjob": "batch-script",
    },
    "adapters.kubeflow.runtimes": {
        "Runtimes.get": "caches",
        "Runtimes.__init__": "caches",
    },
    "adapters.kubeflow.admission": {
        # which Workloads and TrainJobs the gate acts on, and what it writes on them
        "is_dispatch": "gate",
        "evictions": "gate",
        "admission_of": "gate",
        "current_execution": "gate",
        "with_execution": "gate",
        "ReadmissionGate.sync": "gate",
        "ReadmissionGate._workloads": "gate",
        "ReadmissionGate._pending": "gate",
        "ReadmissionGate._owner": "gate",
        "ReadmissionGate._trainjob": "gate",
        "ReadmissionGate._reread": "gate",
        "ReadmissionGate._admit": "gate",
        "ReadmissionGate._judge": "gate",
        "ReadmissionGate.readmit": "gate",
        "ReadmissionGate.mark": "gate",
    },
}


def area_of(module: str, function: str) -> str | None:
    """The goal area of ``function`` (``Class.method`` or a module function) of ``module``, or
    None when it is in none."""
    return _WHOLE_MODULE.get(module) or _BY_FUNCTION.get(module, {}).get(function)


# -- mutants --------------------------------------------------------------------------------


def split_name(name: str) -> tuple[str, str]:
    """``(module, function)`` of a mutmut mutant name; the function as ``Class.method`` or
    ``function``."""
    mangled, marker, _ = name.partition("__mutmut_")
    if not marker:
        raise ValueError(f"{name!r} is not a mutmut mutant name")
    module, _, local = mangled.rpartition(".")
    if local.startswith("xǁ"):
        _, cls, method = local.split("ǁ", 2)
        return module, f"{cls}.{method}"
    if local.startswith("x_"):
        return module, local[2:]
    raise ValueError(f"{name!r} is not a mutmut mutant name")


@dataclass(frozen=True)
class Mutant:
    name: str
    module: str
    function: str
    status: str
    path: str
    """The source file, relative to the repository (``adapters/slurm/backend.py``)."""
    seconds: float = 0.0
    """How long its test run took (wall time of one worker; 0 when it did not run)."""

    @property
    def area(self) -> str | None:
        return area_of(self.module, self.function)


def load_mutants(mutants_dir: Path, sources: Sequence[str]) -> list[Mutant]:
    """Every mutant of ``sources`` (paths like ``adapters/slurm/backend.py``) that
    ``mutants_dir`` holds a result for (a source never mutated has none)."""
    found: list[Mutant] = []
    for source in sources:
        meta = mutants_dir / f"{source}.meta"
        if not meta.is_file():
            continue
        data = json.loads(meta.read_text("utf-8"))
        codes: dict[str, int | None] = data["exit_code_by_key"]
        seconds: dict[str, float] = data.get("durations_by_key", {})
        for name, code in codes.items():
            module, function = split_name(name)
            took = seconds.get(name, 0.0) if code is not None else 0.0
            found.append(Mutant(name, module, function, status(code), source, took))
    return found


def changed_lines(diff: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The lines a unified diff removes and adds, each stripped of its indentation."""
    removed: list[str] = []
    added: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            removed.append(line[1:].strip())
        elif line.startswith("+"):
            added.append(line[1:].strip())
    return tuple(removed), tuple(added)


# -- equivalent mutants -----------------------------------------------------------------------

EQUIVALENT: Final = "equivalent"
ALLOWED: Final = "allowed"
GAP: Final = "gap"
KINDS: Final = (EQUIVALENT, ALLOWED, GAP)
"""The tables of equivalent.toml: ``[[equivalent]]`` (no caller can tell) and ``[[allowed]]``
(a caller can, only where the contract allows both answers), both left out of the
denominators; ``[[gap]]`` (a survivor triaged: the gap of the harnesses that lets it live),
still tested and still counted a survivor."""


@dataclass(frozen=True)
class Equivalent:
    """A mutant that no caller can tell from the original (``kind`` EQUIVALENT), or one that
    differs only where the contract allows both answers (``kind`` ALLOWED: say which clause),
    named by its module, function and the lines its mutation removes and adds (each
    stripped, several joined by newlines)."""

    module: str
    function: str
    removed: str
    added: str
    reason: str
    kind: str = "equivalent"

    def matches(self, mutant: Mutant, diff: tuple[tuple[str, ...], tuple[str, ...]]) -> bool:
        return (
            mutant.module == self.module
            and mutant.function == self.function
            and "\n".join(diff[0]) == self.removed.strip()
            and "\n".join(diff[1]) == self.added.strip()
        )


def load_equivalents(path: Path) -> list[Equivalent]:
    """The ``[[equivalent]]`` and ``[[allowed]]`` tables of ``path`` (module, function,
    removed, added, reason); ValueError naming the entry when one lacks a key or its reason."""
    data = tomllib.loads(path.read_text("utf-8"))
    entries: list[Equivalent] = []
    for kind in KINDS:
        for i, entry in enumerate(data.get(kind, []), 1):
            try:
                equivalent = Equivalent(
                    module=str(entry["module"]),
                    function=str(entry["function"]),
                    removed=str(entry["removed"]),
                    added=str(entry["added"]),
                    reason=str(entry["reason"]).strip(),
                    kind=kind,
                )
            except KeyError as missing:
                raise ValueError(f"{path}: {kind} #{i} has no {missing}") from None
            if not equivalent.reason:
                raise ValueError(f"{path}: {kind} #{i} gives no reason")
            entries.append(equivalent)
    return entries


# -- figures --------------------------------------------------------------------------------


@dataclass
class Figures:
    made: int = 0
    killed: int = 0
    survived: int = 0
    timeout: int = 0
    no_tests: int = 0
    suspicious: int = 0
    not_checked: int = 0
    equivalent: int = 0
    """Survivors listed as equivalent (either kind): out of the denominator."""
    allowed: int = 0
    """Of which those listed as allowed by the contract."""
    text: int = 0
    """Survivors that change only text for people (:mod:`tools.mutation.messages`): out of
    the denominator."""
    seconds: float = 0.0
    """Worker seconds the test runs of these mutants took."""
    survivor_seconds: float = 0.0
    """Of which the runs of the mutants not killed (every check that reaches them runs)."""

    def add(
        self,
        status: str,
        equivalent: str | None,
        seconds: float = 0.0,
        text: bool = False,
    ) -> None:
        """Count one mutant: its ``status``, the kind of its equivalent entry (None: not
        listed), its test run's seconds, whether it changes only text."""
        self.made += 1
        self.seconds += seconds
        if status in (SURVIVED, SUSPICIOUS):
            self.survivor_seconds += seconds
        if equivalent is not None:
            self.equivalent += 1
            self.allowed += equivalent == ALLOWED
        elif text:
            self.text += 1  # whether tested or not: its result would not count
        elif status == KILLED:
            self.killed += 1
        elif status == SURVIVED:
            self.survived += 1
        elif status == TIMEOUT:
            self.timeout += 1
        elif status == NO_TESTS:
            self.no_tests += 1
        elif status == NOT_CHECKED:
            self.not_checked += 1
        else:
            self.suspicious += 1

    @property
    def counted(self) -> int:
        """The denominator: the mutants made, less the equivalents, the text-only survivors and
        those not run yet."""
        return self.made - self.equivalent - self.text - self.not_checked

    @property
    def kill_rate(self) -> float | None:
        """Killed or timed out, of the counted mutants (None when none is counted)."""
        return (self.killed + self.timeout) / self.counted if self.counted else None

    @property
    def strict_kill_rate(self) -> float | None:
        """The kill rate were the mutants allowed by the contract counted as survivors."""
        counted = self.counted + self.allowed
        return (self.killed + self.timeout) / counted if counted else None


@dataclass
class Report:
    mutants: list[Mutant]
    equivalents: list[Equivalent]
    diffs: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]
    """Removed and added lines per mutant name (needed for every mutant not killed)."""
    texts: frozenset[str] = frozenset()
    """The mutants that change only text for people (whatever their status)."""
    by_module: dict[str, Figures] = field(default_factory=dict)
    by_area: dict[str, Figures] = field(default_factory=dict)
    goal: Figures = field(default_factory=Figures)
    total: Figures = field(default_factory=Figures)
    equivalent_of: dict[str, Equivalent] = field(default_factory=dict)
    gap_of: dict[str, Equivalent] = field(default_factory=dict)
    """The survivors a ``[[gap]]`` entry triages (still counted survivors)."""
    detected_but_listed: list[tuple[Equivalent, Mutant]] = field(default_factory=list)
    unmatched: list[Equivalent] = field(default_factory=list)

    def __post_init__(self) -> None:
        used: set[int] = set()
        for mutant in self.mutants:
            diff = self.diffs.get(mutant.name)
            match = None
            if diff is not None:
                for i, entry in enumerate(self.equivalents):
                    if entry.matches(mutant, diff):
                        match = i
                        break
            # untested: a listed equivalent is not run (its result would not count)
            unkilled = mutant.status in (SURVIVED, NO_TESTS, SUSPICIOUS, NOT_CHECKED)
            gap = match is not None and self.equivalents[match].kind == GAP
            listed = match is not None and unkilled and not gap
            if match is not None:
                used.add(match)
                if listed:
                    self.equivalent_of[mutant.name] = self.equivalents[match]
                elif gap and unkilled:
                    self.gap_of[mutant.name] = self.equivalents[match]
                elif mutant.status in (KILLED, TIMEOUT):
                    self.detected_but_listed.append((self.equivalents[match], mutant))
            took = mutant.seconds
            text = mutant.name in self.texts and mutant.status not in (KILLED, TIMEOUT)
            kind = self.equivalents[match].kind if listed and match is not None else None
            row = (mutant.status, kind, took, text)
            self.by_module.setdefault(mutant.path, Figures()).add(*row)
            self.total.add(*row)
            if mutant.area is not None:
                self.by_area.setdefault(mutant.area, Figures()).add(*row)
                self.goal.add(*row)
        self.unmatched = [e for i, e in enumerate(self.equivalents) if i not in used]

    def survivors(self, *, goal_only: bool, text: bool = False) -> list[Mutant]:
        """The mutants not killed (survived, no check reaches them, suspicious), not listed
        as equivalent, that change more than text (only text, when ``text``); those of the
        goal areas only when ``goal_only``."""
        judged = (SURVIVED, NO_TESTS, SUSPICIOUS) + ((NOT_CHECKED,) if text else ())
        return [
            m
            for m in self.mutants
            if m.status in judged
            and m.name not in self.equivalent_of
            and (m.name in self.texts) == text
            and (m.area is not None or not goal_only)
        ]


# -- text -----------------------------------------------------------------------------------


def _rate(figures: Figures) -> str:
    rate = figures.kill_rate
    return "-" if rate is None else f"{100 * rate:.1f}%"


_COLUMNS: Final = (
    ("made", 5),
    ("killed", 6),
    ("survived", 8),
    ("timeout", 7),
    ("no check", 8),
    ("odd", 3),
    ("equiv", 5),
    ("allowed", 7),
    ("text", 4),
    ("not run", 7),
    ("kill rate", 9),
    ("worker s", 8),
    ("on surv.", 8),
)
_HEADER: Final = f"{'':<30} " + " ".join(f"{name:>{width}}" for name, width in _COLUMNS)


def _row(label: str, f: Figures, goal: str = "") -> str:
    cells = (
        f.made,
        f.killed,
        f.survived,
        f.timeout,
        f.no_tests,
        f.suspicious,
        f.equivalent - f.allowed,
        f.allowed,
        f.text,
        f.not_checked,
        _rate(f),
        f"{f.seconds:.0f}",
        f"{f.survivor_seconds:.0f}",
    )
    line = f"{label:<30} " + " ".join(
        f"{cell:>{width}}" for cell, (_, width) in zip(cells, _COLUMNS, strict=True)
    )
    return f"{line}  {goal}" if goal else line


def _against_goal(f: Figures) -> str:
    rate = f.kill_rate
    verdict = "-" if rate is None else ("met" if rate >= GOAL else "NOT met")
    return f"goal >= {100 * GOAL:.0f}%: {verdict}"


def render(
    report: Report,
    wall_seconds: float | None = None,
    tested: int | None = None,
    children: int = 2,
    from_nothing: bool = False,
) -> str:
    """The figures as text: per module, per goal area, the goal areas together, the wall time
    against its budget (a run that ``tested`` every mutant, or ``from_nothing`` every one of
    the goal areas left to test, is judged against it)."""
    lines = [
        "per module (no check: reached by no check; odd: mutmut's suspicious; kill rate: killed "
        "or timed out, of the mutants made less the equivalent and allowed ones, the text-only "
        "survivors and those not run; equiv: listed as equivalent, no caller can tell them from "
        "the original; allowed: listed as differing only where the contract allows both "
        "answers; text: survivors that change only text for people, see "
        "tools/mutation/messages.py; worker s: "
        "the seconds their test runs took, on surv.: of which on the survivors)",
        _HEADER,
    ]
    for path in sorted(report.by_module):
        lines.append(_row(path, report.by_module[path]))
    lines.append(_row("all modules", report.total))
    lines += ["", "per goal area (issue 12)", _HEADER]
    for area in AREAS:
        figures = report.by_area.get(area, Figures())
        lines.append(_row(area, figures, _against_goal(figures)))
    lines.append(_row("goal areas together", report.goal, _against_goal(report.goal)))
    lines.append("")
    allowed = sum(1 for e in report.equivalent_of.values() if e.kind == ALLOWED)
    listed = sum(1 for e in report.equivalents if e.kind != GAP)
    lines.append(
        f"equivalent: {len(report.equivalent_of) - allowed} mutants no caller can tell from the "
        f"original, and allowed: {allowed} that differ only where the contract allows both "
        f"answers, excluded from the denominators ({listed} [[equivalent]] and [[allowed]] "
        "entries in equivalent.toml, each with its reason)"
    )
    judged = report.survivors(goal_only=True)
    gaps = sum(1 for m in judged if m.name in report.gap_of)
    lines.append(
        f"survivors in the goal areas: {len(judged)}, of which {gaps} triaged as gaps of the "
        f"harnesses ([[gap]] in equivalent.toml, each with its reason: still counted "
        f"survivors) and {len(judged) - gaps} not triaged"
    )
    strict = report.goal.strict_kill_rate
    if report.goal.allowed and strict is not None:
        lines.append(
            f"the goal areas' kill rate counting the {report.goal.allowed} allowed mutants as "
            f"survivors: {100 * strict:.1f}%"
        )
    lines.append(
        f"text: {report.total.text} survivors change only text for people (an error's message, "
        "an observation's detail, a counter's label), listed apart in the survivors file"
    )
    for entry, mutant in report.detected_but_listed:
        if entry.kind == GAP:
            lines.append(
                f"warning: {mutant.name} is listed as a gap ({entry.reason}) but was "
                f"{mutant.status}: a check answers it now; drop its entry"
            )
            continue
        lines.append(
            f"warning: {mutant.name} is listed as {entry.kind} ({entry.reason}) but was "
            f"{mutant.status}: it is not {entry.kind}, and is counted as {mutant.status}"
        )
    for entry in report.unmatched:
        lines.append(
            f"warning: equivalent entry {entry.module} {entry.function} "
            f"({entry.removed!r} -> {entry.added!r}) matches no mutant"
        )
    if report.total.not_checked:
        lines.append(
            f"warning: {report.total.not_checked} mutants were not run "
            "(outside the goal areas: --all tests them; or an interrupted run)"
        )
    budget = f"budget {BUDGET_SECONDS // 60} min on 2 cores"
    if wall_seconds is not None:
        left = sum(
            1
            for m in report.mutants
            if m.area is not None
            and m.status == NOT_CHECKED
            and m.name not in report.texts
            and m.name not in report.equivalent_of
        )
        full = tested is None or tested >= report.total.made
        if full:
            what = "a full run"
        elif from_nothing and not left:
            what = f"a run from nothing of every goal-area mutant to test ({tested} tested)"
            full = True
        else:
            what = f"{tested} of {report.total.made} mutants tested"
        verdict = ("within" if wall_seconds <= BUDGET_SECONDS else "OVER") if full else "-"
        lines.append(
            f"wall time: {wall_seconds:.0f} s ({wall_seconds / 60:.1f} min), {what}; "
            f"{budget}: {verdict}"
        )
    scope = [m for m in report.mutants if m.area is not None and m.name not in report.texts]
    estimate = sum(m.seconds for m in scope) / children
    verdict = "within" if estimate <= BUDGET_SECONDS else "OVER"
    run = sum(1 for m in scope if m.status != NOT_CHECKED)
    lines.append(
        f"a run from scratch of the goal areas (text-only mutants untested), from the recorded "
        f"test runs: about {estimate / 60:.0f} min (worker seconds / {children} children, plus "
        f"a few minutes of mutmut's stats and clean runs"
        f"{'' if run == len(scope) else f'; only {run} of {len(scope)} have a result'}); "
        f"{budget}: {verdict}"
    )
    return "\n".join(lines)


def survivors_text(report: Report, mutants: Iterable[Mutant]) -> str:
    """One entry per mutant: module, function, area, status and mutmut's name, then the lines
    its mutation removes (``-``) and adds (``+``)."""
    out: list[str] = []
    for m in mutants:
        removed, added = report.diffs.get(m.name, ((), ()))
        out.append(f"{m.module}  {m.function}  [{m.area or '-'}]  {m.status}  {m.name}")
        out += [f"    - {line}" for line in removed] + [f"    + {line}" for line in added]
        if m.name in report.gap_of:
            out.append(f"    gap: {report.gap_of[m.name].reason}")
    return "\n".join(out) + ("\n" if out else "")
