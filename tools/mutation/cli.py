"""``python -m tools.mutation``: run mutmut on the adapters, then print the figures.

mutmut's configuration is ``[tool.mutmut]`` in pyproject.toml (the modules it mutates, and the
conformance run it tests them with); its working directory is ``mutants/``. mutmut itself
re-tests only the functions whose source changed since the last run. A change on the side of
the tests (the checks, the harnesses, the simulator, the core, an adapter file that is not
mutated) is one mutmut cannot see, so this tool fingerprints those files: when they changed,
it has mutmut collect afresh which checks reach which function, and re-tests every mutant that
was not killed (a new check may kill it; kills are kept, ``--fresh`` re-tests everything).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from adapters.slurm.testing.sim import SCRATCH_ENV
from tools.mutation.messages import MessageParameters, MutantSources, message_only, scan
from tools.mutation.plugin import LEAVE_OUT_OPTION
from tools.mutation.report import (
    GAP,
    KILLED,
    NOT_CHECKED,
    TIMEOUT,
    Mutant,
    Report,
    changed_lines,
    load_equivalents,
    load_mutants,
    render,
    survivors_text,
)

HERE: Final = Path(__file__).resolve().parent
EQUIVALENTS: Final = HERE / "equivalent.toml"
MUTANTS: Final = Path("mutants")
STATE: Final = MUTANTS / "tools-mutation.json"
LOG: Final = MUTANTS / "mutmut-run.log"
TEST_SIDE: Final = (
    "conformance",
    "simulators",
    "dispatch_core",
    "adapters",
    "tools/mutation/plugin.py",
)
"""Where the code the checks run lives (less the mutated modules): its fingerprint says when
the tests changed."""
_KEPT_WHEN_TESTS_CHANGE: Final = (KILLED, TIMEOUT)


def mutmut_config(pyproject: Path = Path("pyproject.toml")) -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads(pyproject.read_text("utf-8"))["tool"]["mutmut"]
    return config


def _files(roots: Iterable[str], skip: set[str]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        given = Path(root)
        for path in [given] if given.is_file() else sorted(given.rglob("*.py")):
            if path.as_posix() not in skip and "__pycache__" not in path.parts:
                found.append(path)
    return found


def fingerprints(sources: Sequence[str]) -> dict[str, str]:
    """``tests``: a hash of the code the checks run, less ``sources``; ``functions``: a hash of
    the names of the functions of ``sources`` (a new one has no record of the checks that
    reach it until mutmut collects them again); ``sources``: a hash of ``sources`` themselves
    (mutmut makes a changed function's mutants anew only when it runs)."""
    tests = hashlib.sha256()
    for path in _files(TEST_SIDE, set(sources)):
        tests.update(path.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    names = hashlib.sha256()
    text = hashlib.sha256()
    for source in sources:
        body = Path(source).read_bytes()
        text.update(source.encode() + b"\0" + body + b"\0")
        for name in _functions(ast.parse(body.decode("utf-8")).body):
            names.update(f"{source}:{name}\n".encode())
    return {"tests": tests.hexdigest(), "functions": names.hexdigest(), "sources": text.hexdigest()}


def _functions(body: list[ast.stmt], prefix: str = "") -> list[str]:
    """The functions and methods of a module body (what mutmut mutates), as ``Class.name``."""
    names: list[str] = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(prefix + node.name)
        elif isinstance(node, ast.ClassDef):
            names += _functions(node.body, f"{prefix}{node.name}.")
    return names


def _load_state() -> dict[str, Any]:
    try:
        state: dict[str, Any] = json.loads(STATE.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return state


def _reset(sources: Sequence[str], keep: tuple[str, ...]) -> int:
    """Forget the result of every mutant whose status is not in ``keep``; how many."""
    from tools.mutation.report import status

    count = 0
    for source in sources:
        meta = MUTANTS / f"{source}.meta"
        if not meta.is_file():
            continue
        data = json.loads(meta.read_text("utf-8"))
        codes: dict[str, int | None] = data["exit_code_by_key"]
        for name, code in codes.items():
            if code is not None and status(code) not in keep:
                codes[name] = None
                count += 1
        meta.write_text(json.dumps(data, indent=4), "utf-8")
    return count


def prepare(sources: Sequence[str], fresh: bool) -> dict[str, str]:
    """Make mutmut's incremental run see the changes it cannot (see the module docstring);
    the fingerprints the run starts from, to keep once it succeeds (a file changed while it
    runs is then seen by the next run)."""
    if fresh and MUTANTS.exists():
        shutil.rmtree(MUTANTS)
        print("fresh: removed mutants/ (every mutant is made and tested again)")
    state = _load_state()
    now = fingerprints(sources)
    if not any((MUTANTS / f"{source}.meta").is_file() for source in sources):
        return now  # no result yet: nothing to keep or forget
    stats = MUTANTS / "mutmut-stats.json"
    if state.get("tests") != now["tests"]:
        # also with no state: a run stopped before it recorded one leaves results whose checks
        # are unknown
        stats.unlink(missing_ok=True)
        count = _reset(sources, _KEPT_WHEN_TESTS_CHANGE)
        print(
            f"the checks' side changed since the last run: mutmut collects again which checks "
            f"reach which function, and re-tests the {count} mutants not killed"
        )
    elif state.get("functions") != now["functions"]:
        stats.unlink(missing_ok=True)
        print("functions were added or removed: mutmut collects again which checks reach them")
    return now


@contextlib.contextmanager
def scratch() -> Iterator[dict[str, str]]:
    """The environment for the test runs: the simulated clusters keep their files in a
    directory of this run's, on disk, removed when the run ends. mutmut ends each mutant's
    process without its cleanup, so in the default place (``/dev/shm``, memory) a run left
    thousands of directories behind."""
    root = tempfile.mkdtemp(prefix="dispatch-mutation-")
    try:
        yield os.environ | {SCRATCH_ENV: root}
    finally:
        shutil.rmtree(root, ignore_errors=True)


LINKED: Final = ("conformance", "simulators", "dispatch_core")
"""The packages the checks run that mutmut does not copy: linked into ``mutants/``. mutmut
takes the project's root off ``sys.path`` (so that only the mutated copy of ``adapters`` can
be imported), and an editable install made with ``editable_mode=compat`` (the Makefile's) puts
the packages on ``sys.path`` by that root alone: without the links, nothing imports them."""


def link_packages() -> None:
    """``mutants/<package>`` for each of :data:`LINKED`, a link to the package itself (never
    a copy: a change to the checks is seen at once)."""
    MUTANTS.mkdir(exist_ok=True)
    for package in LINKED:
        link = MUTANTS / package
        if link.is_symlink() and link.resolve() == Path(package).resolve():
            continue
        if link.is_symlink() or link.is_file():
            link.unlink()
        elif link.exists():
            shutil.rmtree(link)
        link.symlink_to(Path("..") / package, target_is_directory=True)


def run_mutmut(max_children: int, names: Sequence[str] = ()) -> int:
    """``mutmut run`` (of the mutants ``names``, or of every one not yet tested), its output in
    ``mutants/mutmut-run.log``; its exit status."""
    link_packages()
    mutmut = Path(sys.executable).parent / "mutmut"
    argv = [str(mutmut), "run", "--max-children", str(max_children)]
    shown = " ".join(argv) + (f" <{len(names)} mutants>" if names else "")
    print(f"{shown}  (log: {LOG})", flush=True)
    with LOG.open("w", encoding="utf-8") as log, scratch() as env:
        process = subprocess.Popen([*argv, *names], stdout=log, stderr=subprocess.STDOUT, env=env)
        returncode = _await_mutmut(process)
    if returncode != 0:
        how = (
            f"was killed by signal {-returncode}"
            if returncode < 0
            else f"exited with status {returncode}"
        )
        tail = LOG.read_text("utf-8", "replace").replace("\r", "\n").splitlines()[-15:]
        print("\n".join([f"mutmut run {how}; the end of its log:", *tail]), file=sys.stderr)
        return returncode if returncode > 0 else 128 - returncode
    return 0


POLL: Final = 2.0
"""Seconds between two looks at a running mutmut."""
RESULTS_PRINTED: Final = "\nMutant results\n"
"""What mutmut 3.x prints once every result is written, before it lists them."""
EXIT_GRACE: Final = 60.0
"""Seconds mutmut is given to exit once it has printed its results. mutmut 3.x at times
never exits then (its main thread waits on a lock its finished workers held): it is ended,
and the run counts as done, since every result is on disk."""


def _await_mutmut(process: subprocess.Popen[bytes]) -> int:
    """mutmut's exit status; 0 when it was ended after printing its results (see
    :data:`EXIT_GRACE`)."""
    printed_at: float | None = None
    seen = ""
    with LOG.open(encoding="utf-8", errors="replace") as log:
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return process.wait(timeout=POLL)
            if printed_at is None:
                seen = seen[-len(RESULTS_PRINTED) :] + log.read()  # what it printed since
                if RESULTS_PRINTED in seen:
                    printed_at = time.monotonic()
            elif time.monotonic() - printed_at > EXIT_GRACE:
                process.kill()
                process.wait()
                print(f"mutmut printed its results and had not exited {EXIT_GRACE:.0f} s later")
                return 0


def diffs(names_and_paths: Iterable[tuple[str, str]]) -> dict[str, tuple[tuple[str, ...], ...]]:
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    found: dict[str, tuple[tuple[str, ...], ...]] = {}
    for name, path in names_and_paths:
        try:
            found[name] = changed_lines(get_diff_for_mutant(name, path=path))
        except (OSError, ValueError, KeyError):
            continue  # a mutant mutmut no longer has the source of: shown without its diff
    return found


def sync_unmutated(sources: Sequence[str]) -> int:
    """Copy into ``mutants/`` every file of mutmut's source paths that it does not mutate and
    that changed since mutmut copied it (a harness, a broken adapter); how many."""
    copied = 0
    for root in mutmut_config()["source_paths"]:
        for path in Path(root).rglob("*.py"):
            if str(path) in sources or "__pycache__" in path.parts:
                continue
            target = MUTANTS / path
            if not target.is_file() or target.read_bytes() != path.read_bytes():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                copied += 1
    return copied


def harnesses_reaching(name: str) -> list[str]:
    """The harnesses whose checks reached the function of mutant ``name`` in mutmut's last
    stats run (every configured one when the stats do not know it)."""
    configured = [
        a.removeprefix("--dispatch-harness=")
        for a in mutmut_config()["pytest_add_cli_args"]
        if a.startswith("--dispatch-harness=")
    ]
    try:
        stats = json.loads((MUTANTS / "mutmut-stats.json").read_text("utf-8"))
    except (OSError, ValueError):
        return configured
    tests: list[str] = stats["tests_by_mangled_function_name"].get(
        name.partition("__mutmut_")[0], []
    )
    reached = {test.rpartition("::")[0] for test in tests}
    return [h for h in configured if h in reached] or configured


def try_mutants(names: Sequence[str], sources: Sequence[str]) -> int:
    """Test each mutant by every standard check of the harnesses that reach its function
    (not only those mutmut's stats knew: a new check counts), stopping at the first failure;
    print killed (by which check) or survived. 0 when every one was killed."""
    known = {m.name for m in load_mutants(MUTANTS, sources)}
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"error: no such mutant: {', '.join(unknown)} (see mutants/survivors.txt)")
        return 2
    copied = sync_unmutated(sources)
    if copied:
        print(f"copied {copied} changed unmutated files into mutants/")
    fixed = [
        a for a in mutmut_config()["pytest_add_cli_args"] if not a.startswith("--dispatch-harness")
    ]
    survivors = 0
    with scratch() as env:
        for name in names:
            survivors += try_one(name, fixed, env)
    return 1 if survivors else 0


def try_one(name: str, fixed: Sequence[str], env: Mapping[str, str]) -> int:
    """Test one mutant (see :func:`try_mutants`) and print its verdict; 1 when it survived."""
    harnesses = harnesses_reaching(name)
    argv = [sys.executable, "-m", "pytest", "-q", "-x", "-rfE", *fixed]
    argv += [f"--dispatch-harness={h}" for h in harnesses]
    started = time.monotonic()
    done = subprocess.run(
        argv,
        cwd=MUTANTS,
        env={**env, "MUTANT_UNDER_TEST": name},
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - started
    failed = [
        line.split()[1]
        for line in done.stdout.splitlines()
        if line.startswith(("FAILED ", "ERROR ")) and len(line.split()) > 1
    ]
    if done.returncode == 0:
        print(f"survived  {name}  ({', '.join(harnesses)}; {took:.1f} s)")
        return 1
    if failed:
        print(f"killed    {name}  by {failed[0]}  ({took:.1f} s)")
    else:
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        print(f"killed?   {name}  pytest exited {done.returncode}: {' / '.join(tail)}")
    return 0


def text_only(mutants: Sequence[Mutant]) -> frozenset[str]:
    """The names of ``mutants`` that change only text for people (see
    :mod:`tools.mutation.messages`), judged on mutmut's copy of each module."""
    roots = ("adapters", "dispatch_core")
    modules = sorted(
        {
            str(path.with_suffix("")).replace("/", ".").removesuffix(".__init__")
            for root in roots
            for path in Path(root).rglob("*.py")
            if "__pycache__" not in path.parts
        }
    )
    parameters = MessageParameters(scan(Path("."), modules))
    parsed: dict[str, MutantSources] = {}
    found: set[str] = set()
    for mutant in mutants:
        if mutant.path not in parsed:
            text = (MUTANTS / mutant.path).read_text("utf-8")
            parsed[mutant.path] = MutantSources.parse(mutant.module, text)
        if message_only(mutant.name, parsed[mutant.path], parameters):
            found.add(mutant.name)
    return frozenset(found)


SEED_PATTERN: Final = "adapters.slurm.identity.x__number__mutmut_*"
"""The mutants a first run tests to have mutmut make every mutant and collect its stats (a
goal-area function's few: they would be tested anyway)."""


def test_untested(
    sources: Sequence[str],
    max_children: int,
    *,
    every: bool,
    sample: tuple[int, int] | None,
    remake: bool = False,
) -> int:
    """Have mutmut test the mutants that have no result yet: those of the goal areas (every
    one with ``every``), less those that change only text (their result would not count);
    with ``sample`` (size, seed), a seeded random sample of that many of them. mutmut makes
    the mutants on its first run, so a run from nothing starts with :data:`SEED_PATTERN`; it
    makes those of a function whose source changed anew when it starts, so they are tested in
    a second pass; with ``remake`` (a mutated module changed since the last run), mutmut runs
    once first, to make the changed functions' mutants anew. mutmut's exit status."""
    known = load_mutants(MUTANTS, sources)
    if not known or remake:
        if known:
            print("the mutated modules changed since the last run: mutmut remakes their mutants")
        status = run_mutmut(max_children, [SEED_PATTERN])
        if status != 0:
            return status
        known = load_mutants(MUTANTS, sources)
    names = to_test(known, sources, every, quiet=False)
    if not names:
        print("every mutant to test has a result" + ("" if every else " (--all tests the rest)"))
        return 0
    if sample is not None and sample[0] < len(names):
        size, seed = sample
        picked = set(random.Random(seed).sample(sorted(names), size))
        print(
            f"sample: {size} of the {len(names)} mutants to test, drawn with seed {seed} "
            f"(replay: --sample {size} --sample-seed {seed}); the rest stay untested"
        )
        return run_mutmut(max_children, [n for n in names if n in picked])
    status = run_mutmut(max_children, names)
    if status != 0:
        return status
    made = [n for n in to_test(load_mutants(MUTANTS, sources), sources, every) if n not in names]
    if not made:
        return 0
    print(f"{len(made)} mutants mutmut made anew (their function changed): tested now")
    return run_mutmut(max_children, made)


def to_test(
    known: Sequence[Mutant], sources: Sequence[str], every: bool, *, quiet: bool = True
) -> list[str]:
    """The names of the mutants of ``known`` without a result that a run tests (see
    :func:`test_untested`); unless ``quiet``, says how many it leaves out and why."""
    texts = text_only(known)
    names = [
        m.name
        for m in known
        if m.status == NOT_CHECKED and m.name not in texts and (every or m.area is not None)
    ]
    skipped = sum(1 for m in known if m.status == NOT_CHECKED and m.name in texts)
    listed = listed_equivalents([m for m in known if m.name in names], sources)
    if not quiet and skipped:
        print(f"{skipped} mutants change only text for people: not tested (they would not count)")
    if not quiet and listed:
        print(
            f"{len(listed)} mutants are listed in {EQUIVALENTS.name}: not tested (they would not "
            "count; --try tests one)"
        )
    return [n for n in names if n not in listed]


def listed_equivalents(mutants: Sequence[Mutant], sources: Sequence[str]) -> frozenset[str]:
    """The names of ``mutants`` that an entry of equivalent.toml names."""
    modules = {source.removesuffix(".py").replace("/", ".") for source in sources}
    # a [[gap]] entry names a survivor, still tested: a new check may kill it
    entries = [e for e in load_equivalents(EQUIVALENTS) if e.module in modules and e.kind != GAP]
    functions = {(e.module, e.function) for e in entries}
    candidates = [m for m in mutants if (m.module, m.function) in functions]
    found = diffs((m.name, m.path) for m in candidates)
    return frozenset(
        m.name
        for m in candidates
        if m.name in found
        and any(e.matches(m, (found[m.name][0], found[m.name][1])) for e in entries)
    )


def tested_by() -> str:
    """What tests the mutants: the harnesses, the tier, and the checks left out."""
    args = mutmut_config()["pytest_add_cli_args"]

    def values(option: str) -> list[str]:
        return [a.removeprefix(option) for a in args if a.startswith(option)]

    left = values(f"{LEAVE_OUT_OPTION}=")
    tier = ", ".join(values("--dispatch-tier=")) or "standard"
    seed = ", ".join(values("--dispatch-seed=")) or "0"
    harnesses = ", ".join(values("--dispatch-harness="))
    line = f"tested by: the {tier} tier, seed {seed}, on {harnesses}"
    if left:
        line += (
            f"; less the checks {', '.join(p + '-*' for p in left)} (each kill rate is a lower "
            "bound of the tier's)"
        )
    return line


def build_report(sources: Sequence[str]) -> Report:
    mutants = load_mutants(MUTANTS, sources)
    unkilled = [m for m in mutants if m.status not in (KILLED, TIMEOUT)]
    texts = text_only(unkilled)
    # an entry of a module this run leaves out matches nothing here, and says nothing
    modules = {source.removesuffix(".py").replace("/", ".") for source in sources}
    equivalents = [e for e in load_equivalents(EQUIVALENTS) if e.module in modules]
    # an untested mutant of a listed function still has its diff read, so that its entry
    # matches it (a sample or --module run leaves most untested: no false "matches no mutant")
    listed = {(e.module, e.function) for e in equivalents}
    found = diffs(
        (m.name, m.path)
        for m in unkilled
        if m.status != NOT_CHECKED or m.name in texts or (m.module, m.function) in listed
    )
    return Report(
        mutants=mutants,
        equivalents=equivalents,
        diffs={name: (d[0], d[1]) for name, d in found.items()},
        texts=texts,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.mutation",
        description="Mutation testing of the adapters by the conformance suite (standard "
        "tier, seed 0, on the simulator harnesses; never tests/): runs mutmut incrementally "
        "(configured in [tool.mutmut] of pyproject.toml, working directory mutants/), then "
        "prints per module and per goal area of issue 12 the mutants made, killed, survived "
        "and timed out and the kill rate, each against its goal, and the wall time against "
        "its budget. Equivalent mutants are listed in tools/mutation/equivalent.toml.",
    )
    parser.add_argument(
        "--max-children", type=int, default=2, metavar="N", help="mutants tested at once (2)"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="remove mutants/ first: make and test every mutant"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="do not run mutmut: report the last results"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="test every mutant of the mutated modules, not only those of the goal areas "
        "(identity, find, hold, stop, requeue, start, batch-script); slower",
    )
    parser.add_argument(
        "--survivors",
        type=Path,
        default=MUTANTS / "survivors.txt",
        metavar="FILE",
        help="where to list the mutants not killed, those of the goal areas first, each with "
        "its diff (default mutants/survivors.txt)",
    )
    parser.add_argument(
        "--try",
        dest="try_names",
        nargs="+",
        metavar="MUTANT",
        help="test only these mutants (mutmut's names, as mutants/survivors.txt lists them) by "
        "the current checks, and say which check kills each; records nothing",
    )
    parser.add_argument(
        "--module",
        dest="modules",
        action="append",
        metavar="PATH",
        help="test and report only the mutants of this mutated module (a path that "
        "only_mutate lists, e.g. adapters/kubeflow/backend.py; repeatable); the other "
        "modules' results are kept for a later run",
    )
    parser.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="test a seeded random sample of N of the mutants still to test, not all of them "
        "(an estimate of the kill rate when a full run does not fit the budget: the figures "
        "count only mutants tested)",
    )
    parser.add_argument(
        "--sample-seed",
        type=int,
        default=0,
        metavar="S",
        help="the seed the sample is drawn with (0)",
    )
    args = parser.parse_args(argv)
    if not Path("pyproject.toml").is_file() or not Path("adapters").is_dir():
        parser.error("run it from the repository's root")
    if args.max_children < 1:
        parser.error("--max-children must be at least 1")
    if args.sample is not None and args.sample < 1:
        parser.error("--sample must be at least 1")
    every_source: list[str] = list(mutmut_config()["only_mutate"])
    unknown = [m for m in args.modules or () if m not in every_source]
    if unknown:
        parser.error(
            f"--module {unknown[0]} is not mutated (only_mutate lists: {', '.join(every_source)})"
        )
    sources = [s for s in every_source if not args.modules or s in args.modules]
    if args.try_names:
        return try_mutants(args.try_names, every_source)

    wall: float | None = None
    before: dict[str, tuple[str, float]] = {}
    if not args.report_only:
        started = time.monotonic()
        # the fingerprints cover every mutated module, whichever this run tests
        previous = _load_state()
        started_from = prepare(every_source, args.fresh)
        # every result recorded from here on is of these checks, even if the run is stopped
        MUTANTS.mkdir(exist_ok=True)
        STATE.write_text(json.dumps(started_from, indent=2), "utf-8")
        before = {m.name: (m.status, m.seconds) for m in load_mutants(MUTANTS, sources)}
        sample = None if args.sample is None else (args.sample, args.sample_seed)
        status = test_untested(
            sources,
            args.max_children,
            every=args.all,
            sample=sample,
            remake=previous.get("sources") != started_from["sources"],
        )
        wall = time.monotonic() - started
        if status != 0:
            return status
        state = started_from | {"wall_seconds": round(wall, 1)}
        STATE.write_text(json.dumps(state, indent=2), "utf-8")
    report = build_report(sources)
    tested = None
    if wall is not None:
        tested = sum(
            before.get(m.name, (NOT_CHECKED, 0.0)) != (m.status, m.seconds)
            for m in report.mutants
            if m.status != NOT_CHECKED
        )
    from_nothing = all(status == NOT_CHECKED for status, _ in before.values())
    figures = render(report, wall, tested, args.max_children, from_nothing)
    print(tested_by())
    print(figures)
    goal_first = report.survivors(goal_only=True)
    rest = [m for m in report.survivors(goal_only=False) if m not in goal_first]
    texts = report.survivors(goal_only=False, text=True)
    args.survivors.parent.mkdir(parents=True, exist_ok=True)
    args.survivors.write_text(
        "".join(f"# {line}".rstrip() + "\n" for line in figures.splitlines())
        + f"\n# mutants not killed in the goal areas ({len(goal_first)})\n"
        + survivors_text(report, goal_first)
        + f"\n# mutants not killed outside the goal areas ({len(rest)})\n"
        + survivors_text(report, rest)
        + f"\n# survivors that change only text for people, not judged ({len(texts)})\n"
        + survivors_text(report, texts),
        "utf-8",
    )
    print(f"survivors: {args.survivors} ({len(goal_first)} in the goal areas, {len(rest)} other)")
    return 0
