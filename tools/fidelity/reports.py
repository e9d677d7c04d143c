"""Reports: one :class:`Outcome` per scenario and mode, their :func:`summary` and the
markdown :func:`report`; :func:`replay_fixture` gives the outcome of a recorded transcript."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from tools.fidelity.comparison import TranscriptDifference, compare
from tools.fidelity.transcript import Transcript, replay_on_sim


@dataclass
class Outcome:
    """One scenario in one mode: compared (with its differences) or skipped (with why)."""

    scenario: str
    mode: str
    steps: int = 0
    differences: list[TranscriptDifference] = field(default_factory=list)
    skipped: str | None = None
    wall: float = 0.0

    @property
    def unexplained(self) -> list[TranscriptDifference]:
        return [d for d in self.differences if not d.explained]


def summary(outcomes: Sequence[Outcome]) -> dict[str, int]:
    compared = [o for o in outcomes if o.skipped is None]
    differences = [d for o in compared for d in o.differences]
    return {
        "scenarios": len(compared),
        "skipped": len(outcomes) - len(compared),
        "steps": sum(o.steps for o in compared),
        "differences": len(differences),
        "explained": sum(d.explained for d in differences),
        "unexplained": sum(not d.explained for d in differences),
    }


def _block(text: str) -> str:
    body = text if text.endswith("\n") or not text else text + "\n"
    return "```\n" + (body or "(empty)\n") + "```\n"


def report(outcomes: Sequence[Outcome], title: str = "Slurm fidelity report") -> str:
    """Markdown: the totals, a table of scenarios, then every difference with both texts."""
    totals = summary(outcomes)
    lines = [
        f"# {title}",
        "",
        f"{totals['scenarios']} scenario run(s) compared, {totals['skipped']} skipped; "
        f"{totals['steps']} steps; {totals['differences']} difference(s): "
        f"{totals['explained']} explained, {totals['unexplained']} unexplained.",
        "",
        "| scenario | mode | steps | differences | explained | unexplained | wall (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        if o.skipped is not None:
            lines.append(f"| {o.scenario} | {o.mode} | skipped: {o.skipped} | | | | |")
            continue
        explained = len(o.differences) - len(o.unexplained)
        lines.append(
            f"| {o.scenario} | {o.mode} | {o.steps} | {len(o.differences)} | {explained} "
            f"| {len(o.unexplained)} | {o.wall:.1f} |"
        )
    for o in outcomes:
        if not o.differences:
            continue
        lines += ["", f"## {o.scenario} ({o.mode})"]
        for d in o.differences:
            verdict = f"explained: {d.reason}" if d.reason else "**UNEXPLAINED**"
            lines += ["", f"### step {d.step} `{d.command}`: {d.field}", "", verdict, ""]
            lines += ["real:", "", _block(d.real), "simulator:", "", _block(d.sim)]
    return "\n".join(lines).rstrip("\n") + "\n"


def replay_fixture(path: str | os.PathLike[str]) -> tuple[Transcript, Transcript, Outcome]:
    """A recorded real transcript, its replay on the simulator, and their comparison."""
    real = Transcript.load(path)
    sim = replay_on_sim(real)
    outcome = Outcome(real.scenario, real.mode, len(real.steps), compare(real, sim), wall=real.wall)
    return real, sim, outcome
