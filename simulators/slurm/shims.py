"""PATH shims: ``sbatch``, ``squeue``, ``sacct``, ``scancel`` and ``scontrol`` executables bound
to a simulated cluster's state directory, so a program in any language runs against the
simulator unchanged.

::

    dispatch-slurm-shims install --state-dir DIR --bin-dir BIN [--max-job-id N ...]
    PATH=BIN:$PATH  your-program            # its sbatch/squeue/... talk to the simulator
    dispatch-slurm-shims advance --state-dir DIR SECONDS      # the clock is virtual
    dispatch-slurm-shims finish --state-dir DIR JOB [CODE]
    dispatch-slurm-shims fail --state-dir DIR JOB STATE [CODE]
    dispatch-slurm-shims run-for --state-dir DIR JOB SECONDS [CODE]
    dispatch-slurm-shims fault --state-dir DIR NAME [ARG | KEY=VALUE ...]
    dispatch-slurm-shims schedule --state-dir DIR SEED [--count N] [--within S] [--kinds a,b]
    dispatch-slurm-shims now --state-dir DIR

Each shim is a small ``/bin/sh`` script that runs ``python -m simulators.slurm.shims --state-dir
DIR <command> ARGS...``. The cluster's state *is* its trace (``DIR/trace.jsonl``, see
:mod:`simulators.slurm.trace`): every invocation takes an exclusive ``flock`` on ``DIR/lock``,
rebuilds the simulator by replaying the trace's causes, runs its command, appends the new
records and lets go, so concurrent invocations serialise and the state survives between them.
The simulator is deterministic, so the rebuild is exact; the cost is a replay per invocation.

A shim passes its command only the environment Slurm's commands read (``SLURM_*``, ``SBATCH_*``,
..., ``TZ``) and ``PWD`` set to its working directory, and sbatch its stdin when it reads its
script from there. A call that a fault makes time out exits with status 124 (as ``timeout(1)``)
and a ``dispatch-slurm-shims:`` line on stderr, at once: the shim never sleeps for real.
"""

from __future__ import annotations

import argparse
import fcntl
import inspect
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from dispatch_core import VirtualClock
from dispatch_core.clock import DEFAULT_START
from simulators.slurm.config import SlurmConfig
from simulators.slurm.controller import SlurmError
from simulators.slurm.faults import FAULTS, FaultError, Faults
from simulators.slurm.trace import advance, env_subset, load, rebuild

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

PROG: Final = "dispatch-slurm-shims"
SLURM_COMMANDS: Final = ("sbatch", "squeue", "sacct", "scancel", "scontrol")
STATE_FILE: Final = "trace.jsonl"
LOCK_FILE: Final = "lock"
TIMEOUT_STATUS: Final = 124
SHIM: Final = """#!/bin/sh
# {command} of the simulated Slurm cluster in {state} (dispatch-slurm-shims)
PYTHONPATH={root}${{PYTHONPATH:+:$PYTHONPATH}}
export PYTHONPATH
exec {python} -m simulators.slurm.shims --state-dir {state} {command} "$@"
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 3 and args[0] == "--state-dir" and args[2] in SLURM_COMMANDS:
        return run_command(Path(args[1]), args[2], args[3:])
    return _manage(args)


# -- a Slurm command through a shim ------------------------------------------------------------


def run_command(state_dir: Path, program: str, args: list[str]) -> int:
    """Run one Slurm command on the cluster whose state is in ``state_dir``; print its output."""
    stdin = sys.stdin.read() if program == "sbatch" and _sbatch_reads_stdin(args) else None
    env = env_subset(os.environ)
    env["PWD"] = os.getcwd()
    with cluster(state_dir) as sim:
        try:
            done = sim.run([program, *args], stdin=stdin, env=env)
        except subprocess.TimeoutExpired:
            kind = sim.trace.records[-1].get("timeout", "before")
            what = "its reply was lost" if kind == "reply-lost" else "it never took effect"
            sys.stderr.write(f"{PROG}: {program} timed out (simulated: {what})\n")
            return TIMEOUT_STATUS
    sys.stdout.write(done.stdout)
    sys.stdout.flush()
    sys.stderr.write(done.stderr)
    return done.returncode


def _sbatch_reads_stdin(args: list[str]) -> bool:
    """Does sbatch read its script from stdin (no script operand, no ``--wrap``)?"""
    from simulators.slurm.commands.getopt import UsageError, parse
    from simulators.slurm.commands.sbatch import SPEC

    try:
        parsed = parse("sbatch", args, SPEC, permute=False)
    except UsageError:
        return False
    quick = ("wrap", "help", "usage", "version")
    return not parsed.operands and not any(parsed.has(key) for key in quick)


@contextmanager
def cluster(state_dir: Path) -> Iterator[SlurmSim]:
    """The simulator of ``state_dir``, locked for this process; new trace records are saved."""
    state_dir = Path(state_dir)
    state = state_dir / STATE_FILE
    if not state.exists():
        raise SystemExit(f"{PROG}: no simulated cluster in {state_dir} (run '{PROG} install')")
    with open(state_dir / LOCK_FILE, "a", encoding="ascii") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        sim = rebuild(load(state), skip_reads=True)
        mark = len(sim.trace.records)
        try:
            yield sim
        finally:
            new = sim.trace.lines()[mark:]
            if new:
                with open(state, "a", encoding="ascii") as handle:
                    handle.write("".join(line + "\n" for line in new))
                    handle.flush()
                    os.fsync(handle.fileno())


# -- managing the cluster ----------------------------------------------------------------------


def _manage(args: list[str]) -> int:
    parser = _parser()
    options = parser.parse_args(args)
    if options.action is None:
        parser.print_usage(sys.stderr)
        return 2
    state_dir = Path(options.state_dir).absolute()
    if options.action == "install":
        return _install(options, state_dir)
    if options.action == "fault" and options.name.replace("-", "_") not in FAULTS:
        sys.stderr.write(f"{PROG}: unknown fault {options.name!r}; known: {', '.join(FAULTS)}\n")
        return 2
    with cluster(state_dir) as sim:
        try:
            return _act(sim, options)
        except (SlurmError, FaultError) as error:
            sys.stderr.write(f"{PROG}: {error.text}\n")
            return 1
        except (ValueError, TypeError) as error:
            sys.stderr.write(f"{PROG}: {error}\n")
            return 1


def _act(sim: SlurmSim, options: argparse.Namespace) -> int:
    action = options.action
    if action == "advance":
        advance(sim, options.seconds)
    elif action == "finish":
        sim.finish(options.job, options.code)
    elif action == "fail":
        sim.fail(options.job, options.state.upper(), options.code)
    elif action == "run-for":
        sim.run_for(options.job, options.seconds, options.code)
    elif action == "now":
        sim.controller.sync()
        print(int(sim.clock.now()))
    elif action == "fault":
        name = options.name.replace("-", "_")
        positional, keywords = _fault_arguments(name, options.args)
        result = getattr(sim.faults, name)(*positional, **keywords)
        if result is not None:
            print(json.dumps(result))
    elif action == "schedule":
        kinds = None
        if options.kinds:
            kinds = [kind.replace("-", "_") for kind in options.kinds.split(",")]
        plan = sim.faults.schedule(
            options.seed, count=options.count, within=options.within, kinds=kinds
        )
        for planned in plan:
            print(planned.at, planned.name, json.dumps(planned.args, sort_keys=True))
    return 0


def _fault_arguments(name: str, words: list[str]) -> tuple[list[Any], dict[str, Any]]:
    """A fault's arguments from the command line, converted by its annotations."""
    signature = inspect.signature(getattr(Faults, name))
    parameters = [p for p in signature.parameters.values() if p.name != "self"]
    by_name = {p.name: p for p in parameters}
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if eq and key.replace("-", "_") in by_name:
            parameter = by_name[key.replace("-", "_")]
            keywords[parameter.name] = _convert(parameter, value)
        else:
            if len(positional) >= len(parameters):
                raise ValueError(f"too many arguments for fault {name}")
            positional.append(_convert(parameters[len(positional)], word))
    return positional, keywords


def _convert(parameter: inspect.Parameter, text: str) -> Any:
    annotation = str(parameter.annotation)
    if "None" in annotation and text.lower() in ("none", "null", ""):
        return None
    if annotation.startswith("int"):
        return int(text)
    if annotation.startswith("float"):
        return float(text)
    if annotation.startswith("bool"):
        return text.lower() in ("1", "true", "yes", "y", "on")
    if annotation.startswith("Sequence"):
        return [part for part in text.split(",") if part]
    return text


def _install(options: argparse.Namespace, state_dir: Path) -> int:
    bin_dir = Path(options.bin_dir).absolute()
    state = state_dir / STATE_FILE
    state_dir.mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    if options.reset or not state.exists():
        from simulators.slurm.sim import SlurmSim

        config = _config(options)
        sim = SlurmSim(config, seed=options.seed, clock=VirtualClock(options.start))
        with open(state_dir / LOCK_FILE, "a", encoding="ascii") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            sim.trace.write(state)
    root = Path(__file__).resolve().parents[2]
    for command in SLURM_COMMANDS:
        path = bin_dir / command
        path.write_text(
            SHIM.format(
                command=command,
                state=shlex.quote(str(state_dir)),
                root=shlex.quote(str(root)),
                python=shlex.quote(sys.executable),
            ),
            encoding="utf-8",
        )
        path.chmod(0o755)
    print(bin_dir)
    return 0


def _config(options: argparse.Namespace) -> SlurmConfig:
    values: dict[str, Any] = {}
    for item in fields(SlurmConfig):
        given = getattr(options, item.name, None)
        if given is not None:
            values[item.name] = given
    for assignment in options.set or []:
        key, eq, text = assignment.partition("=")
        known = {item.name: item for item in fields(SlurmConfig)}
        if not eq or key not in known:
            raise SystemExit(f"{PROG}: --set wants FIELD=VALUE with a SlurmConfig field: {key}")
        values[key] = _config_value(str(known[key].type), text)
    return SlurmConfig(**values)


def _config_value(annotation: str, text: str) -> Any:
    if annotation.startswith("tuple"):
        return tuple(part for part in text.split(",") if part)
    if annotation.startswith("bool"):
        return text.lower() in ("1", "true", "yes", "y", "on")
    if annotation.startswith("int"):
        return None if text.lower() in ("none", "") and "None" in annotation else int(text)
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Slurm commands on PATH, backed by a simulated cluster."
    )
    actions = parser.add_subparsers(dest="action")

    def action(name: str, text: str) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=text, description=text)
        sub.add_argument("--state-dir", required=True, help="the cluster's state directory")
        return sub

    install = action("install", "create the cluster (unless it exists) and its shims")
    install.add_argument("--bin-dir", required=True, help="where to put the executables")
    install.add_argument("--reset", action="store_true", help="start a fresh cluster")
    install.add_argument("--seed", type=int, default=0)
    install.add_argument("--start", type=float, default=DEFAULT_START, help="epoch of the clock")
    for name, kind in (
        ("first-job-id", int),
        ("max-job-id", int),
        ("min-job-age", int),
        ("requeue-delay", int),
        ("cpus-per-node", int),
        ("uid", int),
        ("run-time", int),
        ("cluster-name", str),
        ("partition", str),
        ("user", str),
    ):
        install.add_argument(f"--{name}", type=kind, dest=name.replace("-", "_"))
    install.add_argument(
        "--nodes", type=lambda text: tuple(n for n in text.split(",") if n), help="a,b,..."
    )
    for name in ("job-comment", "job-requeue", "accounting"):
        install.add_argument(
            f"--{name}", action=argparse.BooleanOptionalAction, dest=name.replace("-", "_")
        )
    install.add_argument("--set", action="append", metavar="FIELD=VALUE", help="any field")

    step = action("advance", "let SECONDS of virtual time pass")
    step.add_argument("seconds", type=float)
    finish = action("finish", "the running job's script exits with CODE")
    finish.add_argument("job", type=int)
    finish.add_argument("code", type=int, nargs="?", default=0)
    fail = action("fail", "the running job ends in STATE (FAILED, OUT_OF_MEMORY, TIMEOUT, ...)")
    fail.add_argument("job", type=int)
    fail.add_argument("state")
    fail.add_argument("code", type=int, nargs="?", default=0)
    run_for = action("run-for", "the job's script runs SECONDS, then exits with CODE")
    run_for.add_argument("job", type=int)
    run_for.add_argument("seconds", type=int)
    run_for.add_argument("code", type=int, nargs="?", default=0)
    action("now", "print the cluster's virtual time (epoch seconds)")
    fault = action("fault", f"apply a named fault: {', '.join(FAULTS)}")
    fault.add_argument("name")
    fault.add_argument("args", nargs="*", help="its arguments, in order or as KEY=VALUE")
    schedule = action("schedule", "draw and arm a seeded schedule of faults")
    schedule.add_argument("seed", type=int)
    schedule.add_argument("--count", type=int, default=10)
    schedule.add_argument("--within", type=float, default=3600.0)
    schedule.add_argument("--kinds", help="comma-separated fault names (default: all)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
