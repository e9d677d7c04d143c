"""``dispatch-conformance``: run the conformance checks against adapters, list the checks and
harnesses, print capability matrices, and probe a site's live cluster.

Exit status: 0 when every check passed or was skipped, 1 when a check failed (or a preflight
could not finish), 2 for a usage error (a bad option, a harness that cannot be loaded). Errors
are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import NoReturn

from conformance.checks import Check, Outcome, Result, Skip, checks
from conformance.harness import CannotInject
from conformance.harnesses import GROUP
from conformance.reports import (
    RunInfo,
    capability_table,
    closing_line,
    matrix_markdown,
    write_matrix,
    write_preflight,
    write_reports,
)
from conformance.runner import (
    HarnessError,
    Loaded,
    capability_answers,
    close_all,
    load_all,
    one_line,
)
from dispatch_core import Capability, Preflight, Support

PROG = "dispatch-conformance"
DEFAULT_REPORT_DIR = "conformance-reports"
TIERS = ("smoke", "standard", "full")


class UsageError(Exception):
    """A command line that cannot run (exit status 2)."""


def say(line: str = "") -> None:
    print(line, flush=True)


def complain(line: str) -> None:
    print(f"{PROG}: error: {one_line(line)}", file=sys.stderr, flush=True)


# -- run ---------------------------------------------------------------------------------------


def _selected(tier: str, ids: Sequence[str]) -> list[Check]:
    selected = checks(tier, list(ids) or None)
    if not selected:
        wanted = " ".join(ids)
        raise UsageError(f"no {tier}-tier check matches --check {wanted} (see: {PROG} list)")
    return selected


def _progress(result: Result, width: int) -> list[str]:
    mark = result.outcome.value
    mark = mark.upper() if result.outcome is Outcome.FAILED else mark
    took = f"  ({result.duration:.1f} s)" if result.duration >= 1.0 else ""
    lines = [f"  {mark:<8} {result.check.id:<{width}}  {result.check.rule}{took}"]
    if result.outcome is Outcome.SKIPPED and result.reason:
        lines.append(f"  {'':<8} {'':<{width}}  skipped: {one_line(result.reason)}")
    if result.outcome is Outcome.FAILED:
        lines += [f"      {line}" for line in result.reason.splitlines()]
    return lines


def command_run(args: argparse.Namespace) -> int:
    selected = _selected(args.tier, args.check)
    loaded = load_all(args.harness)
    info = RunInfo(
        runner="cli",
        harnesses=[(h.label, h.spec) for h in loaded],
        seed=args.seed,
        tier=args.tier,
        selection=list(args.check),
    )
    results: list[Result] = []
    width = max(len(c.id) for c in selected)
    try:
        say(
            f"{PROG}: {len(selected)} {args.tier}-tier checks on {len(loaded)} "
            f"harness{'es' if len(loaded) != 1 else ''}, seed {args.seed}"
        )
        for harness in loaded:
            say()
            say(harness.label)
            started = time.perf_counter()
            own: list[Result] = []
            for check in selected:
                result = harness.run(check, args.seed)
                own.append(result)
                for line in _progress(result, width):
                    say(line)
            results += own
            took = time.perf_counter() - started
            say(f"  {harness.label}: {closing_line(own)} in {took:.2f} s")
        answers = [capability_answers(h) for h in loaded]
        written = write_reports(args.report_dir, results, answers, info)
    finally:
        for problem in close_all(loaded):
            complain(problem)
    failed = [r for r in results if r.outcome is Outcome.FAILED]
    say()
    if failed:
        say(f"failed: {', '.join(f'{r.harness}::{r.check.id}' for r in failed)}")
    say(f"reports: {', '.join(str(p) for p in written)}")
    say(closing_line(results))
    return 1 if failed else 0


# -- list, harnesses -------------------------------------------------------------------------


def command_list(args: argparse.Namespace) -> int:
    selected = _selected(args.tier, args.check)
    width = max(len(c.id) for c in selected)
    say(f"{'id':<{width}}  {'tier':<8}  rule  (clause)")
    for check in selected:
        xfail = f"  [strict expected failure: {check.xfail}]" if check.xfail else ""
        say(f"{check.id:<{width}}  {check.tier.value:<8}  {check.rule}  ({check.clause}){xfail}")
    say()
    say(f"{len(selected)} checks")
    return 0


def command_harnesses(args: argparse.Namespace) -> int:
    found = sorted({ep.name: ep.value for ep in entry_points(group=GROUP)}.items())
    if not found:
        say(f"no harness is registered under {GROUP}")
        return 0
    width = max(len(name) for name, _ in found)
    for name, target in found:
        say(f"{name:<{width}}  {target}")
    return 0


# -- matrix ------------------------------------------------------------------------------------


def command_matrix(args: argparse.Namespace) -> int:
    loaded = load_all(args.harness)
    try:
        answers = [capability_answers(h) for h in loaded]
    finally:
        for problem in close_all(loaded):
            complain(problem)
    say(matrix_markdown(answers).rstrip())
    written = write_matrix(args.report_dir, answers)
    say()
    say(f"written: {', '.join(str(p) for p in written)}")
    return 0


# -- preflight ---------------------------------------------------------------------------------


def command_preflight(args: argparse.Namespace) -> int:
    [loaded] = load_all([args.harness])
    try:
        return _preflight(loaded, args)
    finally:
        for problem in close_all([loaded]):
            complain(problem)


def _preflight(loaded: Loaded, args: argparse.Namespace) -> int:
    try:
        backend = loaded.harness.new_backend()
    except (Skip, CannotInject) as skipped:
        raise UsageError(f"harness {loaded.label} has no cluster to probe: {skipped}") from None
    except Exception as error:
        raise UsageError(
            f"harness {loaded.label} could not make a backend: {type(error).__name__}: {error}"
        ) from None
    kind = type(backend).__name__
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        say(f"  {line}")

    probe: Callable[[], dict[Capability, Support]] | None = None
    from adapters.slurm import SlurmBackend

    if isinstance(backend, SlurmBackend):
        from adapters.slurm.preflight import run_preflight

        slurm = backend

        def probe() -> dict[Capability, Support]:
            return run_preflight(
                slurm, probe_dir=args.probe_dir, bound=args.bound, progress=progress
            )

        say(
            f"preflight of {loaded.label} ({kind}): probing the cluster, each probe bounded by "
            f"{args.bound:.0f} s, probe files in {args.probe_dir}"
        )
    elif isinstance(backend, Preflight):
        probe = backend.preflight
        say(f"preflight of {loaded.label} ({kind}): running its preflight()")
    note = ""
    if probe is None:
        note = f"{kind} has no preflight probes: these are its declared answers."
        say(f"preflight of {loaded.label}: {note}")
        answers = dict(backend.capabilities(None))
    else:
        started = time.perf_counter()
        try:
            probed = probe()
        except Exception as error:
            complain(f"preflight of {loaded.label} failed: {type(error).__name__}: {error}")
            return 1
        # The probes answer some capabilities; the adapter's own answers (now informed by
        # what the probes found) fill in the rest.
        answers = {**backend.capabilities(None), **probed}
        say(f"  probes done in {time.perf_counter() - started:.1f} s")
    say()
    say(capability_table(answers))
    written = write_preflight(
        args.report_dir,
        loaded.label,
        answers,
        probed=probe is not None,
        backend=kind,
        progress=lines,
        note=note,
    )
    say()
    say(f"written: {', '.join(str(p) for p in written)}")
    return 0


# -- the command line --------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        complain(message)
        raise SystemExit(2)


def _harness_option(parser: argparse.ArgumentParser, *, required: bool, repeat: bool) -> None:
    parser.add_argument(
        "--harness",
        action="append" if repeat else "store",
        required=required,
        default=None,
        metavar="NAME|module:factory",
        help="a harness registered under dispatch.harnesses (see the harnesses command), or a "
        "module:factory returning a conformance.Harness" + (" (repeatable)" if repeat else ""),
    )


def _report_dir_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--report-dir",
        default=DEFAULT_REPORT_DIR,
        metavar="DIR",
        help=f"where to write {what} (default: {DEFAULT_REPORT_DIR})",
    )


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog=PROG,
        description="The dispatch conformance kit: run the checks against adapters through "
        "their harnesses, and report what each adapter can do.",
    )
    commands = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = commands.add_parser(
        "run",
        help="run the checks against one or more harnesses",
        description="Run the conformance checks against each harness, printing each check as "
        "it ends, each failure with its reason, and the closing line 'N passed, N failed, N "
        "skipped'. Writes report.json, junit.xml and matrix.md to the report directory. Exit "
        "status 1 when any check fails.",
    )
    _harness_option(run, required=True, repeat=True)
    _report_dir_option(run, "report.json, junit.xml and matrix.md")
    run.add_argument("--seed", type=int, default=0, metavar="N", help="the seed (default 0)")
    run.add_argument(
        "--tier",
        choices=TIERS,
        default="standard",
        help="how much to check: smoke < standard < full (default standard)",
    )
    run.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="ID",
        help="only this check id or id prefix, e.g. IDENT- (repeatable)",
    )
    run.set_defaults(handler=command_run)

    listing = commands.add_parser(
        "list",
        help="list every check: id, tier, rule, clause",
        description="List the registered checks: id, tier, the rule (one line) and the seed "
        "clause it comes from.",
    )
    listing.add_argument(
        "--tier", choices=TIERS, default="full", help="only checks of this tier and below"
    )
    listing.add_argument(
        "--check", action="append", default=[], metavar="ID", help="only this id or prefix"
    )
    listing.set_defaults(handler=command_list)

    harnesses = commands.add_parser(
        "harnesses",
        help="list the registered harnesses",
        description=f"List the harnesses registered under the entry-point group {GROUP}, "
        "with the factory each names.",
    )
    harnesses.set_defaults(handler=command_harnesses)

    matrix = commands.add_parser(
        "matrix",
        help="print the capability matrix of harnesses' backends",
        description="Ask a fresh backend of each harness for its fourteen capability answers "
        "and print them as a Markdown matrix (value, source, and the reason as a note); "
        "writes matrix.md and matrix.json to the report directory.",
    )
    _harness_option(matrix, required=True, repeat=True)
    _report_dir_option(matrix, "matrix.md and matrix.json")
    matrix.set_defaults(handler=command_matrix)

    preflight = commands.add_parser(
        "preflight",
        help="probe a live cluster through a harness's backend",
        description="For sites: run the preflight probes of the harness's backend on the live "
        "cluster (progress is shown as probes run) and print the capability table "
        "(capability, value, source, reason); writes preflight.json and preflight.md to the "
        "report directory. A backend without probes shows its declared answers.",
    )
    _harness_option(preflight, required=True, repeat=False)
    _report_dir_option(preflight, "preflight.json and preflight.md")
    preflight.add_argument(
        "--probe-dir",
        default="/tmp",
        metavar="DIR",
        help="a directory on the cluster the probe jobs run in and write to (default /tmp)",
    )
    preflight.add_argument(
        "--bound",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help="how long each probe may wait for its job (default 180)",
    )
    preflight.set_defaults(handler=command_preflight)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    top = parser()
    try:
        args = top.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 2
    if args.command is None:
        top.print_help(sys.stderr)
        return 2
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except (UsageError, HarnessError) as error:
        complain(str(error))
        return 2
    except KeyboardInterrupt:
        complain("interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): stop writing, quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
