"""``dispatch-conformance``: run the conformance checks against adapters, list the checks (with
their declared needs and known failures; ``list --json`` for programs) and harnesses, print
capability matrices, and probe a site's live cluster through any backend's ``preflight``.

The CLI imports no adapter and no simulator: harnesses are loaded by entry point or
``module:factory``, and preflight asks whatever backend the harness makes.

Exit status (:data:`EXIT_STATUSES`, also in ``--help``): 0 when every check passed or was
skipped, 1 when a check failed (the adapter's fault), 2 for bad usage or input (nothing, or
not all, could run as asked), 3 for a harness error (the harness raised while in use), 70 for
an internal error of the kit, 130 when interrupted, 141 when stdout was closed early. When
several apply, the highest wins. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from conformance.checks import (
    Check,
    HarnessCrash,
    Outcome,
    Result,
    SelectionError,
    Skip,
    checks,
    select,
    where,
)
from conformance.harness import CannotInject, HarnessUnavailable, IdentityModel
from conformance.harnesses import GROUP, registered
from conformance.parallel import HarnessRun, run_side_by_side
from conformance.powers import lacking, power_of
from conformance.profiles import (
    PROFILES,
    REQUIRE_ALL,
    coverage_line,
    judge_profiles,
    profile_named,
    profile_of,
    unmet,
    verdict_line,
)
from conformance.reports import (
    MATRIX_NAME,
    MATRIX_REPORTS,
    PREFLIGHT_REPORTS,
    RUN_REPORTS,
    ReportDirError,
    RunInfo,
    capability_table,
    closing_line,
    matrix_markdown,
    needs_markdown,
    prepare_report_dir,
    verdict,
    write_matrix,
    write_preflight,
    write_reports,
)
from conformance.runner import (
    Answers,
    HarnessError,
    Loaded,
    capability_answers,
    close_all,
    load_all,
    one_line,
)
from conformance.tiers import TIERS
from dispatch_core import Backend, Preflight, PreflightOptions

PROG = "dispatch-conformance"
DEFAULT_REPORT_DIR = "conformance-reports"

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_HARNESS = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141

EXIT_STATUSES = f"""exit status:
  {EXIT_PASSED}    every check passed, or was skipped with its reason
  {EXIT_FAILED}    a check failed: the adapter broke a rule, or a profile --require names was not
       passed whole on a harness (matrix, preflight: the adapter's
       answers or probes raised, or a cluster required under CI=true is missing)
  {EXIT_USAGE}    bad usage or input: an unknown option or a bad value, a harness that cannot be
       loaded or declares no identity model, a --check that selects nothing, a
       --report-dir that cannot be written, no cluster to probe
  {EXIT_HARNESS}    a harness error: the harness, not the adapter, raised while in use (making a
       backend, reopen, clock, its fault injector, close)
  {EXIT_INTERNAL}   an internal error of {PROG} (a bug: please report it)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)
  {EXIT_PIPE}  stdout was closed before the end (| head)
when several apply, the highest wins; errors are one line on stderr"""


class UsageError(Exception):
    """A command line that cannot run (exit status 2)."""


def say(line: str = "") -> None:
    print(line, flush=True)


def complain(line: str) -> None:
    print(f"{PROG}: error: {one_line(line)}", file=sys.stderr, flush=True)


# -- run ---------------------------------------------------------------------------------------


def _selected(tier: str, ids: Sequence[str]) -> list[Check]:
    try:
        return select(tier, ids)
    except SelectionError as error:
        raise UsageError(str(error)) from None


def _report_dir(text: str, names: Sequence[str]) -> Path:
    """The report directory, checked before anything runs (so a run is not lost at its end)."""
    try:
        return prepare_report_dir(text, names)
    except ReportDirError as error:
        raise UsageError(str(error)) from None


def _dir_and_loaded(
    specs: Sequence[str], text: str, names: Sequence[str]
) -> tuple[Path, list[Loaded]]:
    """The report directory, checked before anything runs (even before a harness is made),
    then the harnesses ``specs`` names; when one cannot be loaded, the directories the check
    made are removed again, so that a refused command line leaves nothing behind."""
    made = None
    for folder in (Path(text), *Path(text).parents) if text.strip() else ():
        try:
            if os.path.lexists(folder):
                break
        except (OSError, ValueError):  # a name too long, a NUL: _report_dir says so
            break
        made = folder
    directory = _report_dir(text, names)
    try:
        return directory, load_all(specs)
    except HarnessError:
        for folder in (directory, *directory.parents) if made is not None else ():
            try:
                folder.rmdir()
            except OSError:
                break
            if folder == made:
                break
        raise


def _write(what: Callable[[], list[Path]], directory: Path) -> list[Path] | None:
    """The reports ``what`` writes, or None (said on stderr) when writing them failed."""
    try:
        return what()
    except OSError as error:
        why = error.strerror or str(error)
        complain(f"cannot write the reports to --report-dir {directory}: {why}")
        return None


def _closed(loaded: Sequence[Loaded]) -> bool:
    """Close every harness, saying each that failed; whether all closed cleanly."""
    problems = close_all(loaded)
    for problem in problems:
        complain(problem)
    return not problems


def _progress(result: Result, width: int) -> list[str]:
    loud = result.outcome in (Outcome.FAILED, Outcome.ERROR)
    mark = result.outcome.value.upper() if loud else result.outcome.value
    took = f"  ({result.duration:.1f} s)" if result.duration >= 1.0 else ""
    lines = [f"  {mark:<8} {result.check.id:<{width}}  {result.check.rule}{took}"]
    if result.outcome is Outcome.SKIPPED and result.reason:
        lines.append(f"  {'':<8} {'':<{width}}  skipped: {one_line(result.reason)}")
    if loud:
        lines += [f"      {line}" for line in result.reason.splitlines()]
    return lines


def _say_result(result: Result, width: int) -> None:
    for line in _progress(result, width):
        say(line)


def _say_totals(label: str, results: Sequence[Result], took: float) -> None:
    say(f"  {label}: {closing_line(results)} in {took:.2f} s")


def _one_after_another(
    loaded: Sequence[Loaded], selected: Sequence[Check], seed: int, width: int
) -> tuple[list[Result], list[Answers]]:
    """Each harness in turn, each check printed as it ends."""
    results: list[Result] = []
    for harness in loaded:
        say()
        say(harness.label)
        started = time.perf_counter()
        own: list[Result] = []
        for check in selected:
            result = harness.run(check, seed)
            own.append(result)
            _say_result(result, width)
        results += own
        _say_totals(harness.label, own, time.perf_counter() - started)
    return results, [capability_answers(h) for h in loaded]


def _side_by_side(
    loaded: Sequence[Loaded],
    selected: Sequence[Check],
    seed: int,
    width: int,
    jobs: int,
    shards: int,
) -> tuple[list[Result], list[Answers], bool]:
    """Each harness in processes of its own (:mod:`conformance.parallel`: ``shards`` each),
    printed whole as it ends; the results in the run's harness order; whether every worker
    closed its harness."""
    runs: dict[str, HarnessRun] = {}
    for run in run_side_by_side(loaded, selected, seed, jobs, shards):
        say()
        say(run.loaded.label)
        for result in run.results:
            _say_result(result, width)
        _say_totals(run.loaded.label, run.results, run.took)
        runs[run.loaded.label] = run
    for run in runs.values():
        if run.closing:
            complain(run.closing)
    results = [result for one in loaded for result in runs[one.label].results]
    answers = [runs[one.label].answers for one in loaded]
    return results, answers, not any(run.closing for run in runs.values())


def command_run(args: argparse.Namespace) -> int:
    selected = _selected(args.tier, args.check)
    directory, loaded = _dir_and_loaded(args.harness, args.report_dir, RUN_REPORTS)
    info = RunInfo(
        runner="cli",
        harnesses=[(h.label, h.spec) for h in loaded],
        seed=args.seed,
        tier=args.tier,
        selection=list(args.check),
        identities={h.label: h.identity() for h in loaded},
        required=list(dict.fromkeys(args.require)),
    )
    width = max(len(c.id) for c in selected)
    shards = min(args.shards, len(selected))
    jobs = min(args.jobs, len(loaded) * shards)
    closed = workers_closed = False
    try:
        at_once = f", {jobs} at once" if jobs > 1 else ""
        dealt = f", each dealt over {shards} instances" if shards > 1 else ""
        say(
            f"{PROG}: {len(selected)} {args.tier}-tier checks on {len(loaded)} "
            f"harness{'es' if len(loaded) != 1 else ''}{dealt}{at_once}, seed {args.seed}"
        )
        if jobs > 1 or shards > 1:
            results, answers, workers_closed = _side_by_side(
                loaded, selected, args.seed, width, jobs, shards
            )
        else:
            results, answers = _one_after_another(loaded, selected, args.seed, width)
            workers_closed = True
    finally:
        closed = _closed(loaded) and workers_closed
    written = _write(lambda: write_reports(directory, results, answers, info), directory)
    failed = [r for r in results if r.outcome is Outcome.FAILED]
    errors = [r for r in results if r.outcome is Outcome.ERROR]
    say()
    if failed:
        say(f"failed: {', '.join(f'{r.harness}::{r.check.id}' for r in failed)}")
    if errors:
        say(f"harness errors: {', '.join(f'{r.harness}::{r.check.id}' for r in errors)}")
    if written is not None:
        say(f"reports: {', '.join(str(p) for p in written)}")
    if args.print_matrix and written is not None:
        say()
        say((directory / MATRIX_NAME).read_text().rstrip())
        say()
    erred = {r.harness for r in errors}
    for answer in answers:
        if answer.blame == "harness" and answer.label not in erred:  # else said with the checks
            complain(f"{answer.label}: {answer.note}")
    judged = judge_profiles(results, answers, [c.id for c in checks(args.tier)])
    missing = unmet(judged, info.required)
    say("coverage:")
    for label, profiles in judged.items():
        say(f"  {coverage_line(label, profiles)}")
    for label, found, name in missing:
        said = found.words() if found is not None else f"{name}: no check of it ran"
        say(f"required profile not passed: {label}: {said}")
    say(closing_line(results))
    harness_failed = errors or not closed or any(a.blame == "harness" for a in answers)
    outcome = verdict(results, answers, info.required, tier=args.tier)
    say(verdict_line(outcome, judged, missing))
    return max(
        EXIT_FAILED if failed or missing else EXIT_PASSED,
        EXIT_USAGE if written is None else EXIT_PASSED,
        EXIT_HARNESS if harness_failed else EXIT_PASSED,
    )


# -- list, harnesses -------------------------------------------------------------------------


def command_list(args: argparse.Namespace) -> int:
    selected = _selected(args.tier, args.check)
    if args.json:
        say(json.dumps([c.as_dict() for c in selected], indent=2))
        return 0
    if args.markdown:
        say(needs_markdown(c.as_dict() for c in selected).rstrip())
        return 0
    width = max(len(c.id) for c in selected)
    say(f"{'id':<{width}}  {'tier':<8}  rule  (clause)")
    for check in selected:
        say(f"{check.id:<{width}}  {check.tier.value:<8}  {check.rule}  ({check.clause})")
        needs = _needs_line(check)
        if needs:
            say(f"{'':<{width}}  {'':<8}  needs: {needs}")
        for harness, why in sorted(check.xfail_on.items()):
            say(f"{'':<{width}}  {'':<8}  strict expected failure on {harness}: {one_line(why)}")
    say()
    say(f"{len(selected)} checks")
    return 0


def _needs_line(check: Check) -> str:
    """A check's declared needs on one line (``kind: a, b; kind: c``), '' when none."""
    parts = []
    for kind, values in check.needs.as_dict().items():
        if values:
            parts.append(f"{kind}: {', '.join(str(v) for v in values)}")
    return "; ".join(parts)


def command_harnesses(args: argparse.Namespace) -> int:
    found = list(registered().items())
    if not found:
        say(f"no harness is registered under {GROUP}")
        return 0
    width = max(len(name) for name, _ in found)
    for name, target in found:
        say(f"{name:<{width}}  {target}")
    return 0


# -- needs -------------------------------------------------------------------------------------


def harness_needs(loaded: Loaded, selected: Sequence[Check]) -> dict[str, Any]:
    """What ``loaded`` offers of the needs ``selected`` declare, what its target cannot have
    (``Harness.impossible``), and for each need it lacks, the checks it would unlock (a check
    that lacks several is unlocked by all of them together), with their profiles, and the
    power (a protocol of :mod:`conformance.powers`) that would meet it. Asks only the
    harness's type and ``declines()``, which makes nothing on the target."""
    harness = loaded.harness
    impossible: frozenset[str] = getattr(harness, "impossible", frozenset())
    model = getattr(harness, "identity", None)
    declared = sorted({n for c in selected for n in c.needs.harness_needs()})
    said = {need: lacking(harness, need) for need in declared}
    unlocks: dict[str, list[dict[str, Any]]] = {}
    for check in selected:
        unmet_identity = (
            check.needs.unmet_identity(model) if isinstance(model, IdentityModel) else None
        )
        missing = [n for n in check.needs.harness_needs() if said[n] is not None]
        if unmet_identity or not missing or any(n in impossible for n in missing):
            continue
        for need in missing:
            unlocks.setdefault(need, []).append(
                {
                    "id": check.id,
                    "profile": profile_of(check.id).name,
                    "together_with": [n for n in missing if n != need],
                }
            )
    ordered = sorted(unlocks.items(), key=lambda item: (-len(item[1]), item[0]))
    return {
        "harness": loaded.label,
        "offers": [n for n in declared if said[n] is None],
        "impossible": [n for n in declared if n in impossible],
        "lacks": [
            {"need": n, "power": power_of(n).__name__, "why": said[n], "unlocks": found}
            for n, found in ordered
        ],
    }


def command_needs(args: argparse.Namespace) -> int:
    selected = _selected(args.tier, [])
    try:
        loaded = load_all(args.harness)
    except HarnessError as error:
        raise UsageError(str(error)) from None
    try:
        documents = [harness_needs(one, selected) for one in loaded]
    finally:
        closed = _closed(loaded)
    if args.json:
        say(json.dumps(documents, indent=2))
        return 0 if closed else EXIT_HARNESS
    for document in documents:
        say(f"{document['harness']} ({args.tier} tier)")
        offers, impossible, lacks = document["offers"], document["impossible"], document["lacks"]
        say(f"  offers: {', '.join(offers) or 'nothing a check needs'}")
        if impossible:
            say(f"  its target cannot have (Harness.impossible): {', '.join(impossible)}")
        if not lacks:
            say("  lacks nothing a check of this tier needs")
        for entry in lacks:
            unlocks = entry["unlocks"]
            count = f"{len(unlocks)} check{'s' if len(unlocks) != 1 else ''}"
            say(f"  lacks {entry['need']} (implement {entry['power']}): {count}")
            for one in unlocks:
                also = one["together_with"]
                more = f" (with {', '.join(also)})" if also else ""
                say(f"    {one['id']:<10} {one['profile']}{more}")
        say()
    return 0 if closed else EXIT_HARNESS


# -- matrix ------------------------------------------------------------------------------------


def command_matrix(args: argparse.Namespace) -> int:
    directory, loaded = _dir_and_loaded(args.harness, args.report_dir, MATRIX_REPORTS)
    closed = False
    try:
        answers = [capability_answers(h) for h in loaded]
    finally:
        closed = _closed(loaded)
    for answer in answers:
        if answer.blame:
            complain(f"{answer.label}: {answer.note}")
    say(matrix_markdown(answers).rstrip())
    written = _write(lambda: write_matrix(directory, answers), directory)
    if written is not None:
        say()
        say(f"written: {', '.join(str(p) for p in written)}")
    blames = {a.blame for a in answers}
    return max(
        EXIT_FAILED if blames & {"adapter", "unavailable"} else EXIT_PASSED,
        EXIT_USAGE if written is None else EXIT_PASSED,
        EXIT_HARNESS if "harness" in blames or not closed else EXIT_PASSED,
    )


# -- preflight ---------------------------------------------------------------------------------


def command_preflight(args: argparse.Namespace) -> int:
    if len(args.harness) != 1:
        raise UsageError(
            f"preflight probes one harness: --harness is given {len(args.harness)} times"
        )
    directory, [loaded] = _dir_and_loaded(args.harness, args.report_dir, PREFLIGHT_REPORTS)
    status = EXIT_INTERNAL
    try:
        status = _preflight(loaded, args, directory)
    finally:
        closed = _closed([loaded])
    return status if closed else max(status, EXIT_HARNESS)


def _missing(error: Exception) -> str:
    """What a harness without its target says is missing, in a site administrator's words
    when it gives them (``missing``)."""
    missing = getattr(error, "missing", "")
    if isinstance(missing, str) and missing:
        return missing
    return "no cluster to probe: " + (
        error.fault if isinstance(error, CannotInject) else str(error)
    )


def _preflight(loaded: Loaded, args: argparse.Namespace, directory: Path) -> int:
    try:
        backend: Backend = loaded.harness.new_backend()
    except (Skip, CannotInject, HarnessUnavailable) as missing:
        complain(f"preflight of {loaded.label}: {_missing(missing)}")
        return EXIT_USAGE
    except (Exception, SystemExit) as error:
        crash = HarnessCrash("new_backend()", error)
        complain(
            f"harness error: harness {loaded.label} could not make a backend: {crash} "
            f"(at {crash.location})"
        )
        return EXIT_HARNESS
    kind = type(backend).__name__
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        say(f"  {line}")

    probes = isinstance(backend, Preflight)
    note = ""
    started = time.perf_counter()
    try:
        if isinstance(backend, Preflight):
            say(
                f"preflight of {loaded.label} ({kind}): probing the cluster through its "
                f"preflight(), each probe bounded by {args.bound:g} s, probe files in "
                f"{args.probe_dir}"
            )
            options = PreflightOptions(
                probe_dir=args.probe_dir, bound=args.bound, progress=progress
            )
            probed = backend.preflight(options)
            # The probes answer some capabilities; the adapter's own answers (now informed by
            # what the probes found) fill in the rest.
            answers = {**backend.capabilities(None), **probed}
            say(f"  probes done in {time.perf_counter() - started:.1f} s")
        else:
            note = f"{kind} has no preflight probes: these are its declared answers."
            say(f"preflight of {loaded.label}: {note}")
            answers = dict(backend.capabilities(None))
    except (Exception, SystemExit) as error:
        complain(
            f"preflight of {loaded.label} failed: {type(error).__name__}: {error} "
            f"(at {where(error)})"
        )
        return EXIT_FAILED
    say()
    say(capability_table(answers))
    written = _write(
        lambda: write_preflight(
            directory,
            loaded.label,
            answers,
            probed=probes,
            backend=kind,
            progress=lines,
            note=note,
        ),
        directory,
    )
    if written is None:
        return EXIT_USAGE
    say()
    say(f"written: {', '.join(str(p) for p in written)}")
    return EXIT_PASSED


# -- the command line --------------------------------------------------------------------------


class _Formatter(argparse.HelpFormatter):
    """argparse's help, except that text with line breaks of its own (the exit statuses) is
    printed as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose every help ends with the exit statuses, and whose errors are
    one line (with where to read more), exit status 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        kwargs.setdefault("epilog", EXIT_STATUSES)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        complain(f"{message} (see: {self.prog} --help)")
        raise SystemExit(EXIT_USAGE)


def _seed(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _jobs(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1 process, not {value}")
    return value


def _tier(text: str) -> str:
    return text.strip().lower()


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return value


def _cluster_dir(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give an absolute directory on the cluster")
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an absolute path (the probe jobs run on the cluster's nodes: "
            "give one such as /scratch/me)"
        )
    return text


def _harness_option(parser: argparse.ArgumentParser, *, required: bool, repeat: bool) -> None:
    parser.add_argument(
        "--harness",
        action="append",
        required=required,
        default=None,
        metavar="NAME|module:factory",
        help="a harness registered under dispatch.harnesses (see the harnesses command), or a "
        "module:factory returning a conformance.Harness"
        + (" (repeatable)" if repeat else " (one)"),
    )


def _profile(text: str) -> str:
    if text == REQUIRE_ALL:
        return text
    try:
        return profile_named(text).name
    except KeyError as error:
        raise argparse.ArgumentTypeError(str(error.args[0])) from None


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
        "skipped', then what the run covered per harness and profile (core, extended/...: "
        "passed, partial with the checks not run and what they lacked, failed, not applicable) "
        "and, last, the verdict in words. Writes report.json, junit.xml and matrix.md to the "
        "report directory (checked before any check runs). Exit status 1 when any check fails "
        "or a --require profile is not passed whole, 3 when a harness errs.",
    )
    _harness_option(run, required=True, repeat=True)
    _report_dir_option(run, "report.json, junit.xml and matrix.md")
    run.add_argument("--seed", type=_seed, default=0, metavar="N", help="the seed (default 0)")
    run.add_argument(
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="run up to N harnesses at once, each in a process of its own, and print each "
        "harness's lines together when it ends (default 1: one harness after another, each "
        "check printed as it ends); results and reports are the same either way. Harnesses "
        "that share one cluster (two on the same real Slurm) must not run at once",
    )
    run.add_argument(
        "--shards",
        type=_jobs,
        default=1,
        metavar="N",
        help="deal each harness's checks over N instances of it, each in a process of its own "
        "(every Nth check, in the run's order; a harness that makes its own cluster, such as "
        "slurm-containers, makes one per instance), and report them as one harness; --jobs "
        "caps the processes of all harnesses together (default 1: no dealing). Each check's "
        "seed and result do not depend on the instance that runs it",
    )
    run.add_argument(
        "--tier",
        type=_tier,
        choices=TIERS,
        default="standard",
        help="how much to check: smoke < standard < full (default standard)",
    )
    run.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="ID",
        help="only this check id or id prefix, e.g. IDENT- (any case; repeatable)",
    )
    run.add_argument(
        "--require",
        action="append",
        default=[],
        type=_profile,
        metavar="PROFILE",
        help="fail the run (exit status 1) unless every harness passes this profile whole: "
        f"{', '.join(p.name for p in PROFILES)} (the part after extended/ will do), or "
        f"{REQUIRE_ALL} for every profile that applies to the adapter; repeatable. A partial "
        "profile (checks not run for a power the harness lacks) is not passed",
    )
    run.add_argument(
        "--print-matrix",
        action="store_true",
        help="print matrix.md before the coverage and the verdict, which stay the last lines",
    )
    run.set_defaults(handler=command_run)

    needs = commands.add_parser(
        "needs",
        help="what a harness offers, and the checks each power it lacks would unlock",
        description="An author's to-do list: for each harness, the faults and probes it offers "
        "of those the checks need, those its target cannot have by its nature "
        "(Harness.impossible), and for each it lacks, the checks (with their profiles) it "
        "would unlock, most first, with the power (a protocol of conformance.powers) to "
        "implement; a check lacking several is unlocked by all of them. Reads the harness's "
        "type and declines() only: nothing is made on its target.",
    )
    _harness_option(needs, required=True, repeat=True)
    needs.add_argument(
        "--tier",
        type=_tier,
        choices=TIERS,
        default="standard",
        help="the checks of this tier (default standard)",
    )
    needs.add_argument("--json", action="store_true", help="print it as JSON")
    needs.set_defaults(handler=command_needs)

    listing = commands.add_parser(
        "list",
        help="list every check: id, tier, rule, clause, needs, known failures",
        description="List the registered checks: id, tier, the rule (one line) and the seed "
        "clause it comes from, with what each check declares it needs (capabilities the "
        "adapter must answer yes, optional interfaces its backend must implement, faults and "
        "probes the harness must offer, identity-model flags its target must have; a harness "
        "lacking one skips the check, with the reason, before any backend is made) and the "
        "harnesses it is a strict expected failure on (xfail_on: there a failure is expected, "
        "and a pass fails the run).",
    )
    listing.add_argument(
        "--tier",
        type=_tier,
        choices=TIERS,
        default="full",
        help="only checks of this tier and below",
    )
    listing.add_argument(
        "--check", action="append", default=[], metavar="ID", help="only this id or prefix"
    )
    shape = listing.add_mutually_exclusive_group()
    shape.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array with one object per check: id, tier, suite, rule, clause, "
        "needs (capabilities, interfaces, faults, probes, identity: lists of names) and "
        "xfail_on (harness name to reason)",
    )
    shape.add_argument(
        "--markdown",
        action="store_true",
        help="print a Markdown table of check to declared needs (made from what --json "
        "prints; docs/writing-a-harness.md carries it)",
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
        type=_cluster_dir,
        default="/tmp",
        metavar="DIR",
        help="a directory on the cluster the probe jobs run in and write to (default /tmp)",
    )
    preflight.add_argument(
        "--bound",
        type=_seconds,
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
        complain(
            f"a command is required: run, list, harnesses, matrix or preflight (see: {PROG} --help)"
        )
        return EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except (UsageError, HarnessError) as error:
        complain(str(error))
        return EXIT_USAGE
    except KeyboardInterrupt:
        complain("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): stop writing, quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as error:  # a bug: still one line, and a status of its own
        complain(
            f"internal error: {type(error).__name__}: {error} (at {where(error)}; please report it)"
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
