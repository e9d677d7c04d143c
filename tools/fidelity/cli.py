"""The command line, ``python -m tools.fidelity``: ``record``, ``compare``, ``replay``, ``list``
(see :mod:`tools.fidelity`). An error (no Slurm, an unknown scenario, a directory it cannot
make or read, no fixtures) is one line on stderr, exit status 2."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, NoReturn

from tools.fidelity.cluster import ClusterBusy, FidelityError
from tools.fidelity.comparison import compare
from tools.fidelity.reports import Outcome, report
from tools.fidelity.scenario import Scenario
from tools.fidelity.scenarios import SCENARIOS, scenario_named
from tools.fidelity.targets import RealSlurm
from tools.fidelity.transcript import (
    DEFAULT_LOCK,
    Transcript,
    fixture_path,
    fixtures,
    replay_on_sim,
    run_real,
)

DEFAULT_FIXTURES: Final = Path("tests") / "fixtures" / "slurm-real"
"""Where ``record`` writes and ``replay`` reads by default (``<scenario>.<mode>.json``): relative,
so it is resolved from the working directory (the repository's root); ``--out`` and
``--fixtures`` name another."""


def _selected(names: Sequence[str] | None) -> list[Scenario]:
    return [scenario_named(name) for name in names] if names else list(SCENARIOS)


def _live(
    args: argparse.Namespace, write: Callable[[Transcript, Transcript | None], None]
) -> list[Outcome]:
    selected = _selected(args.scenario)
    real = RealSlurm(busy_bound=args.busy_wait)
    try:
        info = real.info()
        outcomes: list[Outcome] = []
        for scenario in selected:
            reason = scenario.skip_reason(info, real.can_lose_nodes)
            if reason is not None:
                print(f"skip {scenario.name} ({info.mode}): {reason}", file=sys.stderr)
                outcomes.append(Outcome(scenario.name, info.mode, skipped=reason))
                continue
            print(f"run {scenario.name} ({info.mode}) ...", file=sys.stderr, flush=True)
            try:
                transcript = run_real(scenario, real, lock=args.lock)
            except ClusterBusy as busy:
                print(f"skip {scenario.name} ({info.mode}): {busy}", file=sys.stderr)
                outcomes.append(Outcome(scenario.name, info.mode, skipped=str(busy)))
                continue
            info = transcript.cluster
            sim = replay_on_sim(transcript) if args.command == "compare" else None
            write(transcript, sim)
            differences = compare(transcript, sim) if sim is not None else []
            outcomes.append(
                Outcome(
                    scenario.name,
                    info.mode,
                    len(transcript.steps),
                    differences,
                    wall=transcript.wall,
                )
            )
            print(
                f"  {len(transcript.steps)} steps in {transcript.wall:.1f} s "
                f"(after {transcript.setup:.1f} s of setup under the lock)"
                + (
                    f", {len(differences)} difference(s), "
                    f"{sum(not d.explained for d in differences)} unexplained"
                    if sim is not None
                    else ""
                ),
                file=sys.stderr,
                flush=True,
            )
        return outcomes
    finally:
        real.close()


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"fidelity: error: {message} (see: {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def _busy_wait(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"wants a finite number of seconds >= 0, not {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(
        prog="python -m tools.fidelity",
        description="Run scripted scenarios on a real Slurm and on SlurmSim and compare them.",
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    record = sub.add_parser(
        "record", help="run the scenarios on the real cluster and write their transcripts"
    )
    live = sub.add_parser(
        "compare", help="run the scenarios on the real cluster and on the simulator; report"
    )
    replay = sub.add_parser(
        "replay", help="compare the recorded transcripts with the simulator (no Slurm needed)"
    )
    sub.add_parser("list", help="name the scenarios and the modes they run in")
    for each in (record, live, replay):
        each.add_argument(
            "--scenario", action="append", metavar="NAME", help="only this scenario (repeatable)"
        )
    for each in (record, live):
        each.add_argument(
            "--busy-wait",
            type=_busy_wait,
            default=900.0,
            metavar="SECONDS",
            help="how long to wait for other jobs to leave squeue before a scenario (default "
            "900); a scenario that finds the cluster still busy is skipped",
        )
        each.add_argument(
            "--lock",
            default=DEFAULT_LOCK,
            metavar="FILE",
            help=f"flock this file around each scenario (default {DEFAULT_LOCK}; '' for none)",
        )
    record.add_argument(
        "--out",
        default=str(DEFAULT_FIXTURES),
        metavar="DIR",
        help=f"where to write (default {DEFAULT_FIXTURES}, in the working directory)",
    )
    live.add_argument(
        "--out", metavar="DIR", help="also write report.md and both transcripts of each scenario"
    )
    live.add_argument(
        "--record",
        metavar="DIR",
        help="also write each real transcript there as a fixture, as record does",
    )
    replay.add_argument(
        "--fixtures",
        default=str(DEFAULT_FIXTURES),
        metavar="DIR",
        help=f"default {DEFAULT_FIXTURES}, in the working directory",
    )
    replay.add_argument("--out", metavar="DIR", help="also write report.md there")
    args = parser.parse_args(argv)
    if getattr(args, "lock", None) == "":
        args.lock = None
    try:
        for option in ("out", "record", "fixtures"):
            given = getattr(args, option, None)
            if given is not None and not given.strip():
                raise FidelityError(f"--{option} is empty: give a directory")
        return _main(args)
    except FidelityError as error:
        print(f"fidelity: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (| head): stop writing, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:  # --out/--record/--fixtures a path that cannot be written or read
        where = f" {error.filename}" if error.filename else ""
        print(f"fidelity: error: cannot use{where}: {error.strerror or error}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace) -> int:
    if args.command == "list":
        for scenario in SCENARIOS:
            print(f"{scenario.name} [{','.join(scenario.modes())}]: {scenario.description}")
        return 0
    if args.command == "replay":
        wanted = {s.name for s in _selected(args.scenario)} if args.scenario else set()
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)  # before the replay, not after
        outcomes = []
        for path in fixtures(args.fixtures):
            if wanted and path.name.split(".", 1)[0] not in wanted:
                continue
            real = _load(path)
            sim = replay_on_sim(real)
            outcome = Outcome(
                real.scenario, real.mode, len(real.steps), compare(real, sim), wall=real.wall
            )
            outcomes.append(outcome)
        if not outcomes:
            which = f" of {', '.join(sorted(wanted))}" if wanted else ""
            raise FidelityError(f"no recorded transcripts{which} in {args.fixtures}")
        text = report(outcomes, "Slurm fidelity report (recorded real output vs SlurmSim)")
        _emit(text, args.out)
        return 1 if any(o.unexplained for o in outcomes) else 0
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)

    record = Path(args.record) if getattr(args, "record", None) else None
    if record is not None:
        record.mkdir(parents=True, exist_ok=True)

    def write(real: Transcript, sim: Transcript | None) -> None:
        if record is not None:
            fixture_path(record, real.scenario, real.mode).write_text(real.dumps(), "utf-8")
        if out is None:
            return
        if sim is None:
            fixture_path(out, real.scenario, real.mode).write_text(real.dumps(), encoding="utf-8")
        else:
            (out / f"{real.scenario}.{real.mode}.real.json").write_text(real.dumps(), "utf-8")
            (out / f"{real.scenario}.{real.mode}.sim.json").write_text(sim.dumps(), "utf-8")

    outcomes = _live(args, write)
    if args.command == "record":
        for o in outcomes:
            state = f"skipped: {o.skipped}" if o.skipped else f"{o.steps} steps, {o.wall:.1f} s"
            print(f"{o.scenario}.{o.mode}: {state}")
        return 0
    _emit(report(outcomes), args.out)
    return 1 if any(o.unexplained for o in outcomes) else 0


def _load(path: Path) -> Transcript:
    """The recorded transcript at ``path``, or a :class:`FidelityError` naming the file."""
    try:
        return Transcript.load(path)
    except (FidelityError, ValueError, KeyError, TypeError) as error:  # JSON, a missing field
        raise FidelityError(f"{path}: not a usable transcript: {error}") from None


def _emit(text: str, out: str | None) -> None:
    print(text, end="")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "report.md").write_text(text, encoding="utf-8")
