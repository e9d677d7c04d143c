"""PATH shims: ``sbatch``, ``squeue``, ``sacct``, ``scancel`` and ``scontrol`` executables bound
to a simulated cluster's state directory, so a program in any language runs against the
simulator unchanged.

::

    eval "$(dispatch-slurm-shims install --state-dir DIR --bin-dir BIN [--nodes 2 ...])"
    your-program                                    # its sbatch/squeue/... talk to the simulator
    dispatch-slurm-shims advance --state-dir DIR SECONDS      # the clock is virtual
    dispatch-slurm-shims finish --state-dir DIR JOB [CODE]
    dispatch-slurm-shims fail --state-dir DIR JOB STATE [CODE]
    dispatch-slurm-shims run-for --state-dir DIR JOB SECONDS [CODE]
    dispatch-slurm-shims fault --state-dir DIR NAME [ARG | KEY=VALUE ...]
    dispatch-slurm-shims schedule --state-dir DIR SEED [--count N] [--within S] [--kinds a,b]
    dispatch-slurm-shims now --state-dir DIR
    dispatch-slurm-shims stop --state-dir DIR                 # stop the cluster's server

``install`` prints the ``export PATH=BIN:$PATH`` line (hence the ``eval``). Slurm's other client
commands (``sinfo``, ``srun``, ``salloc``, ``sacctmgr``, ...) get shims too, which refuse with one
line (exit 1), so that nothing falls through to a real Slurm further down the PATH. What the
simulated ``scontrol`` does not answer (``show node``, ``show partition``, ``ping``, ...) it
refuses itself (``scontrol: error: show nodes is not supported by this simulator``, exit 1).

**Batch scripts are not executed** unless the cluster was installed with ``--execute``: a job
"runs" on the virtual clock until ``finish``, ``fail`` or ``run-for`` (or ``--run-time``) ends
it. With ``--execute`` (:class:`~simulators.slurm.execute.ExecuteMode`), each job's script runs
for real on this host when the job starts, with Slurm's environment and a per-task ``srun``; its
exit status ends the job. Only for scripts you trust.

How the state is kept: ``DIR/trace.jsonl`` (see :mod:`simulators.slurm.trace`) is the cluster's
append-only history and its source of truth. A server process (``python -m
simulators.slurm.shims --state-dir DIR serve``, started by the first call that finds none, and
gone after ``--idle-exit`` seconds without a call, or on ``stop``) holds the simulator in memory,
rebuilt once from the trace when it starts (:func:`simulators.slurm.replay.rebuild`), and
answers the shims on the Unix socket ``DIR/sock`` (:mod:`simulators.slurm.shim_client`). Each
call's new records are appended to the trace (and fsynced) before its answer is sent, so a crash
loses at most a call whose caller got no answer, and a torn last line is dropped when the next
server starts. The server holds ``DIR/lock`` for its life, so calls serialise and one server
owns the directory; when the simulator's code or the trace changes under it, it stops and the
next call starts a fresh one.

Exit statuses of ``dispatch-slurm-shims``: 0 done; 1 the simulated cluster refused (an unknown
job, a job not running, a fault that cannot hit, a command that is not simulated); 2 bad usage
(a bad number, an unknown action, option, fault, field or KEY=VALUE); 3 the state directory
cannot be used (missing, not a directory, not installed, a damaged trace, the server failed).
Every error is one line on stderr, and a refused input writes nothing. A shim exits with its
command's status, 124 when a fault makes the call time out (at once: nothing sleeps for real),
and 3 when the state directory cannot be used.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import inspect
import json
import math
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from dispatch_core.clock import DEFAULT_START
from dispatch_core.files import write_atomic
from simulators.slurm.config import MAX_JOB_ID_CAP, SlurmConfig
from simulators.slurm.controller import Job, JobState, SlurmError
from simulators.slurm.execute import ExecuteMode
from simulators.slurm.faults import FAULTS, FaultError, Faults, check_arguments
from simulators.slurm.replay import check_record, rebuild
from simulators.slurm.shim_client import (
    EXIT_REFUSED,
    EXIT_STATE,
    EXIT_USAGE,
    LOCK_FILE,
    LOG_FILE,
    PROG,
    REFUSED,
    ROOT,
    SERVED,
    SOCKET_FILE,
    STATE_FILE,
    TIMEOUT_STATUS,
    ShimError,
    receive,
    refusal,
    request,
    send,
    stop,
)
from simulators.slurm.trace import TRACE_VERSION, advance, config_from, dumps, env_subset

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

SLURM_COMMANDS: Final = SERVED
__all__ = [
    "EXIT_REFUSED",
    "EXIT_STATE",
    "EXIT_USAGE",
    "SLURM_COMMANDS",
    "STATE_FILE",
    "TIMEOUT_STATUS",
    "Server",
    "main",
]

MAX_TIME: Final = 253_402_300_799.0
"""9999-12-31T23:59:59Z: the clock never goes past a time Slurm's formats can print."""
DEFAULT_NODES: Final = ("n1", "n2")
DEFAULT_IDLE_EXIT: Final = 600.0
DEFAULT_EXECUTE_TIMEOUT: Final = 60.0
REQUEST_TIMEOUT: Final = 30.0
PID_FILE: Final = "server.pid"
FAIL_STATES: Final = (
    "FAILED",
    "OUT_OF_MEMORY",
    "TIMEOUT",
    "DEADLINE",
    "PREEMPTED",
    "BOOT_FAIL",
    "NODE_FAIL",
)
SHIM: Final = """#!/bin/sh
# {command} of the simulated Slurm cluster in {state} (dispatch-slurm-shims)
exec {python} -I -S -c 'import sys; sys.path.insert(0, sys.argv.pop(1)); import shim_client; \
del sys.path[0]; sys.exit(shim_client.main())' {here} --state-dir {state} {command} "$@"
"""
CTL_SHIM: Final = """#!/bin/sh
# the actions on the simulated Slurm cluster in {state}, sent to its server (dispatch-slurm-shims)
exec {python} -I -S -c 'import sys; sys.path.insert(0, sys.argv.pop(1)); import shim_client; \
del sys.path[0]; sys.exit(shim_client.main())' {here} "$@"
"""
REFUSING_SHIM: Final = """#!/bin/sh
# {command}: not simulated by the cluster in {state} (dispatch-slurm-shims)
echo {line} >&2
exit {status}
"""


class UsageError(Exception):
    """Bad usage of ``dispatch-slurm-shims`` (exit 2): ``text`` names the problem."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class StateError(Exception):
    """The state directory cannot be used (exit 3): ``text`` names the file and the problem."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 3 and args[0] == "--state-dir" and args[2] == "serve":
        return serve(Path(args[1]))
    if len(args) >= 3 and args[0] == "--state-dir" and args[2] in (*SERVED, *REFUSED):
        from simulators.slurm.shim_client import shim

        return shim(args[1], args[2], args[3:])
    try:
        return _manage(args)
    except UsageError as error:
        sys.stderr.write(f"{PROG}: {error.text}\n")
        return EXIT_USAGE
    except (StateError, ShimError) as error:
        sys.stderr.write(f"{PROG}: {error.text}\n")
        return EXIT_STATE
    except OSError as error:  # a path the system refuses outright (a name too long, a loop)
        where = error.filename or "the state directory"
        sys.stderr.write(f"{PROG}: cannot use {where}: {error.strerror or error}\n")
        return EXIT_STATE


# -- the command line --------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, with every error on one line (and exit 2), and ``-inf``, ``-nan``, ``-1e3``
    taken for numbers (refused by their type) rather than for unknown options."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(
            r"^-(\d+\.?\d*(e[-+]?\d+)?|\.\d+(e[-+]?\d+)?|inf|infinity|nan)$", re.IGNORECASE
        )

    def error(self, message: str) -> Any:  # argparse's NoReturn
        where = self.prog.removeprefix(PROG).strip() or "usage"
        raise UsageError(f"{where}: {message} (see '{self.prog} --help')")


def _manage(args: list[str]) -> int:
    parser = _parser()
    if not args:
        raise UsageError(f"no action given (one of {', '.join(_ACTIONS)}; see '{PROG} --help')")
    if args[0] == "--state-dir" or args[0].startswith("--state-dir="):
        raise UsageError(
            f"usage: the action comes first, then its options: '{PROG} ACTION --state-dir DIR "
            f"...' (see '{PROG} --help')"
        )
    options = parser.parse_args(args)
    for option in ("state_dir", "bin_dir"):
        if getattr(options, option, None) == "":
            raise UsageError(f"{options.action}: --{option.replace('_', '-')} is empty")
    state_dir = Path(options.state_dir).absolute()
    if options.action == "install":
        return _install(options, state_dir)
    _check_state_dir(state_dir)
    if options.action == "stop":
        stop(str(state_dir))
        return 0
    reply = request(str(state_dir), _message(options))
    from simulators.slurm.shim_client import print_reply

    return print_reply(reply)


def _check_state_dir(state_dir: Path) -> None:
    if not state_dir.exists():
        raise StateError(f"no simulated cluster in {state_dir}: no such directory")
    if not state_dir.is_dir():
        raise StateError(f"state dir {state_dir} is not a directory")
    if not (state_dir / STATE_FILE).is_file():
        raise StateError(
            f"no simulated cluster in {state_dir}: no {STATE_FILE} "
            f"(run '{PROG} install --state-dir {state_dir} --bin-dir BIN')"
        )


def _message(options: argparse.Namespace) -> dict[str, Any]:
    """The request an action sends to the server, its arguments checked."""
    action = options.action
    if action == "advance":
        return {"kind": "manage", "op": "advance", "seconds": options.seconds}
    if action in ("finish", "fail", "run-for"):
        message = {"kind": "manage", "op": action.replace("-", "_"), "job": options.job}
        message["code"] = options.code
        if action == "fail":
            message["state"] = options.state
        if action == "run-for":
            message["seconds"] = options.seconds
        return message
    if action == "now":
        return {"kind": "manage", "op": "now"}
    if action == "fault":
        name = options.name.replace("-", "_")
        if name not in FAULTS:
            raise UsageError(f"unknown fault {options.name!r}; known: {', '.join(FAULTS)}")
        return {
            "kind": "manage",
            "op": "fault",
            "name": name,
            "args": fault_arguments(name, options.args),
        }
    assert action == "schedule"
    kinds = None
    if options.kinds is not None:
        kinds = [kind.replace("-", "_") for kind in options.kinds.split(",") if kind]
        unknown = [kind for kind in kinds if kind not in FAULTS]
        if unknown or not kinds:
            raise UsageError(
                f"schedule: unknown fault kinds {', '.join(unknown) or '(none given)'}; "
                f"known: {', '.join(FAULTS)}"
            )
    return {
        "kind": "manage",
        "op": "schedule",
        "seed": options.seed,
        "count": options.count,
        "within": options.within,
        "kinds": kinds,
    }


def fault_arguments(name: str, words: Sequence[str]) -> dict[str, Any]:
    """A fault's arguments from the command line (in order, or ``KEY=VALUE``), by name,
    converted by the fault's annotations and checked (:func:`~simulators.slurm.faults.
    check_arguments`); ``UsageError`` names the first problem."""
    signature = inspect.signature(getattr(Faults, name))
    parameters = [p for p in signature.parameters.values() if p.name != "self"]
    by_name = {p.name: p for p in parameters}
    given: dict[str, Any] = {}
    position = 0
    for word in words:
        key, eq, value = word.partition("=")
        ident = key.replace("-", "_")
        if eq and ident.isidentifier():
            if ident not in by_name:
                known = ", ".join(p.name for p in parameters)
                raise UsageError(f"fault {name} has no argument {key!r} (its arguments: {known})")
            parameter = by_name[ident]
        else:
            free = [p for p in parameters[position:] if p.name not in given]
            if not free:
                raise UsageError(f"fault {name}: too many arguments ({word!r})")
            parameter, value = free[0], word
            position = parameters.index(parameter) + 1
        if parameter.name in given:
            raise UsageError(f"fault {name}: {parameter.name} given twice")
        given[parameter.name] = _convert(name, parameter, value)
    missing = [
        p.name for p in parameters if p.default is inspect.Parameter.empty and p.name not in given
    ]
    if missing:
        raise UsageError(f"fault {name} needs {', '.join(missing)}")
    try:
        check_arguments(name, given)
    except FaultError as error:
        raise UsageError(_fault_refusal(name, error)) from None
    return given


def _fault_refusal(name: str, error: FaultError) -> str:
    text = error.text
    return f"fault {text}" if text.startswith(f"{name}:") else f"fault {name}: {text}"


_TRUE: Final = ("1", "true", "yes", "y", "on")
_FALSE: Final = ("0", "false", "no", "n", "off")


def _convert(fault: str, parameter: inspect.Parameter, text: str) -> Any:
    annotation = str(parameter.annotation)
    what = f"fault {fault}: {parameter.name}"
    if "None" in annotation and text.lower() in ("none", "null", ""):
        return None
    try:
        if annotation.startswith("int"):
            return int(text)
        if annotation.startswith("float"):
            return float(text)
    except ValueError:
        kind = "an integer" if annotation.startswith("int") else "a number"
        raise UsageError(f"{what} wants {kind}, not {text!r}") from None
    if annotation.startswith("bool"):
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise UsageError(f"{what} wants true or false, not {text!r}")
    if annotation.startswith("Sequence"):
        return [part for part in text.split(",") if part]
    return text


# -- argument types: each refuses with the reason ----------------------------------------------


def _integer(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"wants an integer, not {text!r}") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            low = "" if minimum is None else f">= {minimum}"
            high = "" if maximum is None else f"<= {maximum}"
            bounds = " and ".join(bound for bound in (low, high) if bound)
            raise argparse.ArgumentTypeError(f"wants an integer {bounds}, not {text!r}")
        return value

    convert.__name__ = "integer"
    return convert


def _seconds(text: str) -> float:
    """A finite, non-negative number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a number of seconds, not {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"wants a finite number of seconds >= 0, not {text!r}")
    return value


def _name(text: str) -> str:
    if not text or any(c.isspace() or c in ",|" for c in text) or not text.isprintable():
        raise argparse.ArgumentTypeError(f"wants a name without spaces, commas or '|': {text!r}")
    return text


def _optional(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def optional(text: str) -> Any:
        return None if text.lower() in ("none", "") else convert(text)

    optional.__name__ = getattr(convert, "__name__", "value")
    return optional


def _nodes(text: str) -> tuple[str, ...]:
    """``N`` (nodes n1..nN) or ``a,b,...`` (those names)."""
    if text.lstrip("+-").isdigit():  # '-1' is a count of nodes, refused, not a node's name
        count = int(text)
        if not 1 <= count <= 4096:
            raise argparse.ArgumentTypeError(f"wants 1..4096 nodes, not {text!r}")
        return tuple(f"n{i}" for i in range(1, count + 1))
    names = tuple(_name(part) for part in text.split(","))
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"names a node twice: {text!r}")
    return names


def _names(text: str) -> tuple[str, ...]:
    return tuple(_name(part) for part in text.split(","))


_BOOL: Final = "bool"
CONFIG_OPTIONS: Final[tuple[tuple[str, Any, str], ...]] = (
    ("nodes", _nodes, "the nodes: N (named n1..nN) or NAME,NAME,... (default 2: n1,n2)"),
    ("cpus_per_node", _integer(1, 4096), "CPUs of each node (default 2)"),
    ("partition", _name, "the default partition (default debug)"),
    ("partitions", _names, "every partition, comma-separated (default: the default partition)"),
    ("first_job_id", _integer(1, MAX_JOB_ID_CAP - 1), "FirstJobId (default 1)"),
    (
        "max_job_id",
        _integer(2, MAX_JOB_ID_CAP),
        f"MaxJobId: ids run from FirstJobId to MaxJobId-1, then wrap (default {MAX_JOB_ID_CAP})",
    ),
    ("max_job_count", _integer(1), "MaxJobCount: job records kept before refusing (10000)"),
    ("min_job_age", _integer(0), "MinJobAge: seconds a finished job stays in squeue (300)"),
    ("job_comment", _BOOL, "AccountingStoreFlags=job_comment: accounting keeps comments (on)"),
    ("job_requeue", _BOOL, "JobRequeue: the default of a job's --requeue (on)"),
    ("accounting", _BOOL, "slurmdbd accounting, which sacct reads (on)"),
    ("requeue_delay", _integer(0), "seconds before a requeued job is eligible again (120)"),
    ("run_time", _optional(_integer(0)), "seconds every job runs, or none: until told (none)"),
    ("sched_latency", _integer(0), "seconds from a submission to its scheduler pass (1)"),
    ("sched_interval", _integer(1), "seconds between periodic scheduler passes (60)"),
    ("kill_wait", _integer(0), "KillWait seconds (30)"),
    ("cluster_name", _name, "ClusterName (default lab)"),
    ("user", _name, "the user every job runs as (default root)"),
    ("uid", _integer(0), "that user's uid (default 0)"),
    ("account", _name, "the default account (default lab)"),
    ("submit_host", _name, "the submit host's name (default vm)"),
    ("alloc_node", _optional(_name), "scontrol's AllocNode, or none: the submit host (none)"),
    ("pending_mem", _optional(_name), "memory in a pending job's TRES, e.g. 10847M (none)"),
    ("version", _name, "the Slurm version the commands report (22.05.8)"),
)


_ACTIONS: Final = (
    "install",
    "advance",
    "finish",
    "fail",
    "run-for",
    "fault",
    "schedule",
    "now",
    "stop",
)
_EPILOG: Final = """\
Batch scripts are NOT executed unless the cluster is installed with --execute: a job "runs" on
the virtual clock until finish, fail or run-for (or --run-time) ends it.

Exit statuses: 0 done; 1 the simulated cluster refused (unknown job, job not running, a fault
that cannot hit); 2 bad usage; 3 the state directory cannot be used (missing, not a directory,
not installed, damaged trace). Every error is one line; a refused input writes nothing. The
shims exit with their command's status, 124 on a simulated timeout, 3 on an unusable state
directory, 141 when their stdout is closed early (| head), as a shell reports a real command
killed by SIGPIPE; sinfo, srun and Slurm's other client commands are refused (exit 1).
"""


def _parser() -> _Parser:
    parser = _Parser(
        prog=PROG,
        description="Slurm commands on PATH, backed by a simulated cluster (a state directory).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    def action(name: str, text: str, epilog: str | None = None) -> argparse.ArgumentParser:
        sub = actions.add_parser(
            name,
            help=text,
            description=text,
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.add_argument("--state-dir", required=True, help="the cluster's state directory")
        return sub

    install = action(
        "install",
        "create the cluster (unless DIR has one) and its shims; print the export PATH= line",
        "Batch scripts are not executed unless --execute is given. Every option but --bin-dir\n"
        "and --reset describes the cluster: given for a DIR that has one, it must match (or\n"
        "--reset replaces the cluster).",
    )
    install.add_argument("--bin-dir", required=True, help="where to put the executables")
    install.add_argument("--reset", action="store_true", help="replace DIR's cluster by a new one")
    install.add_argument(
        "--seed", type=_integer(), metavar="N", help="the seed of its choices (default 0)"
    )
    install.add_argument(
        "--start",
        type=_seconds,
        metavar="EPOCH",
        help="its clock's start, epoch seconds (default 1767225600: 2026-01-01T00:00:00Z)",
    )
    install.add_argument(
        "--execute",
        action=argparse.BooleanOptionalAction,
        help="run each job's batch script for real when it starts, with Slurm's environment and "
        "a per-task srun; its exit status ends the job (default: off, scripts never run)",
    )
    install.add_argument(
        "--execute-timeout",
        type=_seconds,
        metavar="SECONDS",
        help=f"real seconds a script may run with --execute (default {DEFAULT_EXECUTE_TIMEOUT:g})",
    )
    install.add_argument(
        "--idle-exit",
        type=_seconds,
        metavar="SECONDS",
        help=f"real seconds the server waits for a call before it exits (default "
        f"{DEFAULT_IDLE_EXIT:g}); the next call starts it again",
    )
    for name, kind, text in CONFIG_OPTIONS:
        flag = f"--{name.replace('_', '-')}"
        if kind is _BOOL:
            install.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, help=text)
        else:
            metavar = "N" if getattr(kind, "__name__", "") == "integer" else name.upper()
            metavar = "N|NAME,..." if name == "nodes" else metavar
            install.add_argument(flag, dest=name, type=kind, help=text, metavar=metavar)
    install.add_argument(
        "--set",
        action="append",
        metavar="FIELD=VALUE",
        help="any SlurmConfig field by its name (as the options above)",
    )

    step = action("advance", "let SECONDS of virtual time pass")
    step.add_argument("seconds", type=_seconds, metavar="SECONDS")
    finish = action("finish", "the running job's script exits with CODE (0..255, default 0)")
    finish.add_argument("job", type=_integer(1), metavar="JOB")
    finish.add_argument("code", type=_integer(0, 255), nargs="?", default=0, metavar="CODE")
    fail = action("fail", f"the running job ends in STATE: {', '.join(FAIL_STATES)}")
    fail.add_argument("job", type=_integer(1), metavar="JOB")
    fail.add_argument("state", type=_fail_state, metavar="STATE")
    fail.add_argument("code", type=_integer(0, 255), nargs="?", default=0, metavar="CODE")
    run_for = action("run-for", "the job's script runs SECONDS once started, then exits CODE")
    run_for.add_argument("job", type=_integer(1), metavar="JOB")
    run_for.add_argument("seconds", type=_integer(0, int(MAX_TIME)), metavar="SECONDS")
    run_for.add_argument("code", type=_integer(0, 255), nargs="?", default=0, metavar="CODE")
    action("now", "print the cluster's virtual time (epoch seconds)")
    fault = action(
        "fault",
        "apply a named fault (prints its result as JSON, if any)",
        "faults:\n"
        + "\n".join(f"  {name.replace('_', '-'):<20} {text}" for name, text in FAULTS.items())
        + "\n\nArguments go in order or as KEY=VALUE (a value holding '=' needs its KEY=).",
    )
    fault.add_argument("name", metavar="NAME")
    fault.add_argument("args", nargs="*", metavar="ARG", help="in order or as KEY=VALUE")
    schedule = action("schedule", "draw and arm a seeded schedule of faults")
    schedule.add_argument("seed", type=_integer(), metavar="SEED")
    schedule.add_argument("--count", type=_integer(0, 100_000), default=10)
    schedule.add_argument("--within", type=_seconds, default=3600.0, metavar="SECONDS")
    schedule.add_argument("--kinds", help="comma-separated fault names (default: all)")
    action("stop", "stop the cluster's server, if one runs (the next call starts one)")
    return parser


def _fail_state(text: str) -> str:
    if text.upper() not in FAIL_STATES:
        raise argparse.ArgumentTypeError(f"wants one of {', '.join(FAIL_STATES)}, not {text!r}")
    return text.upper()


# -- install -----------------------------------------------------------------------------------


def _install(options: argparse.Namespace, state_dir: Path) -> int:
    bin_dir = Path(options.bin_dir).absolute()
    config, given = _config(options)
    settings = {
        "execute": bool(options.execute),
        "execute_timeout": options.execute_timeout or DEFAULT_EXECUTE_TIMEOUT,
        "idle_exit": options.idle_exit if options.idle_exit is not None else DEFAULT_IDLE_EXIT,
    }
    seed = options.seed if options.seed is not None else 0
    start = options.start if options.start is not None else DEFAULT_START
    if start > MAX_TIME:
        raise UsageError(f"install: --start {start:g} is past 9999-12-31")
    for path, what in ((state_dir, "state dir"), (bin_dir, "bin dir")):
        if path.exists() and not path.is_dir():
            raise StateError(f"{what} {path} is not a directory")
    for command in (*SERVED, PROG, *REFUSED):
        _ours_or_absent(bin_dir / command)
    state = state_dir / STATE_FILE
    if state.exists() and not options.reset:
        _same_cluster(options, state, given, settings)
    made = [_first_missing(state_dir), _first_missing(bin_dir)]
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        bin_dir.mkdir(parents=True, exist_ok=True)
        if options.reset or not state.exists():
            _create(state_dir, config, seed, start, settings)
        _write_shims(state_dir, bin_dir)
    except OSError as error:
        for top, leaf in reversed(list(zip(made, (state_dir, bin_dir), strict=True))):
            _remove_empty(leaf, top)  # a refused install leaves no directory behind
        where = error.filename or state_dir
        raise StateError(f"cannot install in {where}: {error.strerror}") from None
    execute = "run for real (--execute)" if settings["execute"] else "not run (see --execute)"
    sys.stderr.write(
        f"{PROG}: a simulated cluster in {state_dir}: nodes {','.join(config.nodes)}, "
        f"{config.cpus_per_node} CPUs each; batch scripts are {execute}\n"
    )
    print(f'export PATH={shlex.quote(str(bin_dir))}:"$PATH"')
    return 0


def _first_missing(path: Path) -> Path | None:
    """The outermost directory of ``path`` that does not exist yet (``mkdir(parents=True)``
    would make it and those under it), or None when ``path`` exists."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            break
        missing = folder
    return missing


def _remove_empty(leaf: Path, top: Path | None) -> None:
    """Remove the empty directories from ``leaf`` up to ``top``, which this install made."""
    if top is None:
        return
    for folder in (leaf, *leaf.parents):
        try:
            folder.rmdir()
        except OSError:
            return
        if folder == top:
            return


def _ours_or_absent(path: Path) -> None:
    """Refuse to replace a file that is not a shim (``--bin-dir /usr/bin`` would replace the
    real Slurm's commands)."""
    if not path.exists() and not path.is_symlink():
        return
    try:
        with open(path, "rb") as handle:
            lines = handle.read(4096).split(b"\n")
    except OSError:
        lines = []
    mark = lines[1] if len(lines) > 1 and lines[0] == b"#!/bin/sh" else b""
    if path.is_symlink() or not path.is_file() or not mark.endswith(f"({PROG})".encode()):
        raise UsageError(
            f"install: {path} exists and is not a shim of {PROG}: refusing to replace it "
            "(choose another --bin-dir)"
        )


def _config(options: argparse.Namespace) -> tuple[SlurmConfig, dict[str, Any]]:
    """The cluster's configuration, and the fields given on the command line."""
    given: dict[str, Any] = {}
    for item in fields(SlurmConfig):
        value = getattr(options, item.name, None)
        if value is not None:
            given[item.name] = value
    kinds = {name: kind for name, kind, _ in CONFIG_OPTIONS}
    for assignment in options.set or []:
        key, eq, text = assignment.partition("=")
        if not eq or key not in kinds:
            raise UsageError(
                f"install: --set wants FIELD=VALUE with a SlurmConfig field ({', '.join(kinds)}), "
                f"not {assignment!r}"
            )
        kind = kinds[key]
        try:
            if kind is _BOOL:
                if text.lower() not in _TRUE + _FALSE:
                    raise argparse.ArgumentTypeError(f"wants true or false, not {text!r}")
                given[key] = text.lower() in _TRUE
            else:
                given[key] = kind(text)
        except argparse.ArgumentTypeError as error:
            raise UsageError(f"install: --set {key}: {error}") from None
    values = {"nodes": DEFAULT_NODES, **given}
    try:
        return SlurmConfig(**values), given
    except (TypeError, ValueError) as error:
        raise UsageError(f"install: {error}") from None


def _same_cluster(
    options: argparse.Namespace, state: Path, given: dict[str, Any], settings: dict[str, Any]
) -> None:
    """Refuse options that contradict the cluster already in the state directory."""
    try:
        with open(state, encoding="ascii") as handle:
            first = handle.readline()
        header = json.loads(first)
        check_record(header, first=True)
        config = config_from(header)
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise StateError(f"damaged trace {state}: line 1: {error}") from None
    have = {item.name: getattr(config, item.name) for item in fields(config)}
    have.update(seed=header["seed"], start=header["start"])
    have.update(header.get("shims") or _default_settings())
    asked = dict(given)
    for key in ("seed", "start", "execute", "execute_timeout", "idle_exit"):
        if getattr(options, key) is not None:
            asked[key] = getattr(options, key)
    differ = [key for key, value in asked.items() if have.get(key) != value]
    if differ:
        shown = ", ".join(f"{key}={have.get(key)!r} (asked {asked[key]!r})" for key in differ)
        raise UsageError(
            f"install: {state.parent} already holds a cluster with {shown}; "
            "add --reset to replace it"
        )


def _default_settings() -> dict[str, Any]:
    return {
        "execute": False,
        "execute_timeout": DEFAULT_EXECUTE_TIMEOUT,
        "idle_exit": DEFAULT_IDLE_EXIT,
    }


def _create(
    state_dir: Path, config: SlurmConfig, seed: int, start: float, settings: dict[str, Any]
) -> None:
    """A new cluster's trace, written whole (temporary file, then rename) under the lock, once
    any server of the old one has stopped."""
    from dispatch_core import VirtualClock
    from simulators.slurm.sim import SlurmSim

    sim = SlurmSim(config, seed=seed, clock=VirtualClock(start))
    header = dict(sim.trace.header, shims=settings)
    with _locked(state_dir):
        stop(str(state_dir))
        write_atomic(state_dir / STATE_FILE, dumps(header) + "\n", 0o644)
        with contextlib.suppress(FileNotFoundError):
            (state_dir / SOCKET_FILE).unlink()


@contextlib.contextmanager
def _locked(state_dir: Path) -> Iterator[None]:
    """DIR/start.lock: no call starts a server meanwhile (a running one is stopped first)."""
    from simulators.slurm.shim_client import START_LOCK

    with open(state_dir / START_LOCK, "a", encoding="ascii") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        yield


def _write_shims(state_dir: Path, bin_dir: Path) -> None:
    here = Path(__file__).resolve().parent
    state = shlex.quote(str(state_dir))
    for command in SERVED:
        text = SHIM.format(
            command=command,
            state=state,
            here=shlex.quote(str(here)),
            python=shlex.quote(sys.executable),
        )
        write_atomic(bin_dir / command, text, 0o755)
    text = CTL_SHIM.format(
        state=state, here=shlex.quote(str(here)), python=shlex.quote(sys.executable)
    )
    write_atomic(bin_dir / PROG, text, 0o755)
    for command in REFUSED:
        text = REFUSING_SHIM.format(
            command=command,
            state=state,
            line=shlex.quote(refusal(command)),
            status=EXIT_REFUSED,
        )
        write_atomic(bin_dir / command, text, 0o755)
    # Its bytecode cached now, so that the first shim call does not compile it.
    import py_compile

    with contextlib.suppress(OSError, py_compile.PyCompileError):
        py_compile.compile(str(here / "shim_client.py"), doraise=True)


# -- the server --------------------------------------------------------------------------------


class ShimExecute(ExecuteMode):
    """:class:`ExecuteMode` that records each script's outcome in the trace (``execution``
    records), so that a replay reaches the same state without running the scripts again."""

    def __init__(self, sim: SlurmSim, timeout: float) -> None:
        super().__init__(sim, timeout=timeout)
        self._event = "start"

    def _on_event(self, event: str, job: Job) -> None:
        self._event = event
        super()._on_event(event, job)

    def _ended(self, job: Job, status: int | None, after: int | None = None) -> None:
        super()._ended(job, status, after)
        assert job.run_for is not None  # _ended has just set it
        self.sim.trace.execution(
            self.sim.controller.now, self._event, job, job.run_for, job.exit_after
        )

    def close(self) -> None:
        """End the scripts still waiting, in real time, for a signal."""
        for job_id in list(self.running):
            self._on_event("end", self.sim.controller.jobs[job_id])


class Server:
    """The simulator of one state directory, in memory: :meth:`handle` answers one request and
    appends what it recorded to the trace. The trace must be locked (``DIR/lock``) by the caller
    for the server's life."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = Path(state_dir).absolute()
        self.path = self.state_dir / STATE_FILE
        self.code = _fingerprint()
        self.settings = _default_settings()
        self.executor: ShimExecute | None = None
        self.sim = self._load()
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        stat = os.fstat(self.fd)
        self.inode, self.offset = (stat.st_dev, stat.st_ino), stat.st_size

    def _load(self) -> SlurmSim:
        """The simulator rebuilt from the trace; a torn last line (a crash while it was being
        written) is dropped; anything else wrong is a :class:`StateError` naming the line."""
        path = self.path
        try:
            data = path.read_bytes()
        except OSError as error:
            raise StateError(f"cannot read {path}: {error.strerror}") from None
        if data and not data.endswith(b"\n"):
            kept = data.rfind(b"\n") + 1
            sys.stderr.write(f"{PROG}: dropping the torn last line of {path} (a crash)\n")
            with open(path, "r+b") as handle:
                handle.truncate(kept)
                os.fsync(handle.fileno())
            data = data[:kept]
        records = []
        for number, line in enumerate(data.split(b"\n")[:-1], 1):
            try:
                text = line.decode("ascii")
            except UnicodeDecodeError:
                raise StateError(_damaged(path, number, "not ASCII text")) from None
            try:
                record = json.loads(text)
            except ValueError as error:
                raise StateError(_damaged(path, number, f"not JSON ({error})")) from None
            try:
                check_record(record, first=number == 1)
            except (ValueError, TypeError, KeyError) as error:
                raise StateError(_damaged(path, number, str(error))) from None
            records.append(record)
        if not records:
            raise StateError(_damaged(path, None, "empty (no header line)"))
        header = records[0]
        if header.get("version") != TRACE_VERSION:
            raise StateError(_damaged(path, 1, f"trace version {header.get('version')!r}"))
        self.settings.update(header.get("shims") or {})
        try:
            sim = rebuild(records, skip_reads=True)
        except Exception as error:
            why = f"it does not replay ({type(error).__name__}: {error})"
            raise StateError(_damaged(path, None, why)) from None
        sim.trace.truncate(1)  # the history is in the file; memory keeps the header
        if self.settings.get("execute"):
            self.executor = ShimExecute(sim, float(self.settings["execute_timeout"]))
        return sim

    # -- requests ----------------------------------------------------------------------------

    def stale(self) -> str | None:
        """Why this server must not answer any more (its code or its trace changed), if so."""
        if _fingerprint() != self.code:
            return "the simulator's code changed"
        try:
            stat = os.stat(self.path)
        except OSError:
            return f"{self.path} is gone"
        if (stat.st_dev, stat.st_ino) != self.inode or stat.st_size != self.offset:
            return f"{self.path} was changed by another program"
        return None

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        """Answer one request (see :mod:`simulators.slurm.shim_client`)."""
        kind = message.get("kind")
        if kind == "slurm":
            return self._slurm(message)
        if kind == "manage":
            return self._manage(message)
        if kind == "cli":
            return self._cli(list(message["argv"]))
        return _answer(f"{PROG}: unknown request {kind!r}\n", EXIT_USAGE)

    def _slurm(self, message: dict[str, Any]) -> dict[str, Any]:
        program, args = message["program"], list(message["args"])
        if program not in SERVED:
            return _answer(refusal(program) + "\n", EXIT_REFUSED)
        if program == "sbatch" and "stdin" not in message and _sbatch_reads_stdin(args):
            return {"need": "stdin"}
        env = env_subset(message["env"])
        env["PWD"] = message["cwd"]
        sim = self.sim
        mark = len(sim.trace.records)
        with _inside(message["cwd"]):
            try:
                done = sim.run([program, *args], stdin=message.get("stdin"), env=env)
                reply = {"stdout": done.stdout, "stderr": done.stderr, "status": done.returncode}
            except subprocess.TimeoutExpired:
                kind = sim.trace.records[-1].get("timeout", "before")
                what = "its reply was lost" if kind == "reply-lost" else "it never took effect"
                reply = _answer(f"{PROG}: {program} timed out (simulated: {what})\n")
                reply["status"] = TIMEOUT_STATUS
        self._commit(mark)
        return reply

    def _cli(self, argv: list[str]) -> dict[str, Any]:
        """An action's command line, parsed and checked here as ``dispatch-slurm-shims`` does
        (``BIN/dispatch-slurm-shims`` sends it, so that it need not import the simulator)."""
        try:
            options = _parser().parse_args(argv)
            if options.action in ("install", "stop"):
                raise UsageError(f"{options.action} is not sent to a cluster's server")
            return self._manage(_message(options))
        except UsageError as error:
            return _answer(f"{PROG}: {error.text}\n", EXIT_USAGE)
        except SystemExit:  # an abbreviated --help: argparse would print it here
            return _answer(f"{PROG}: see '{PROG} --help'\n", EXIT_USAGE)

    def _manage(self, message: dict[str, Any]) -> dict[str, Any]:
        sim, op = self.sim, message.get("op")
        mark = len(sim.trace.records)
        out = ""
        try:
            if op == "advance":
                seconds = message["seconds"]
                if sim.clock.now() + seconds > MAX_TIME:
                    raise UsageError(f"advance: {seconds:g} s would take the clock past 9999-12-31")
                advance(sim, seconds)
            elif op == "finish":
                sim.finish(message["job"], message["code"])
            elif op == "fail":
                sim.fail(message["job"], JobState(message["state"]), message["code"])
            elif op == "run_for":
                sim.run_for(message["job"], message["seconds"], message["code"])
            elif op == "now":
                sim.controller.sync()
                out = f"{int(sim.clock.now())}\n"
            elif op == "fault":
                name, args = message["name"], dict(message["args"])
                try:
                    check_arguments(name, args)
                except FaultError as error:
                    raise UsageError(_fault_refusal(name, error)) from None
                result = getattr(sim.faults, name)(**args)
                out = "" if result is None else json.dumps(result) + "\n"
            elif op == "schedule":
                plan = sim.faults.schedule(
                    message["seed"],
                    count=message["count"],
                    within=message["within"],
                    kinds=message["kinds"],
                )
                for planned in plan:
                    out += (
                        f"{planned.at} {planned.name} {json.dumps(planned.args, sort_keys=True)}\n"
                    )
            else:
                raise UsageError(f"unknown action {op!r}")
        except UsageError as error:
            self._commit(mark)
            return _answer(f"{PROG}: {error.text}\n", EXIT_USAGE)
        except (SlurmError, FaultError) as error:
            self._commit(mark)  # what the fault recorded (an error a fault aimed right met)
            return _answer(f"{PROG}: {error.text}\n", EXIT_REFUSED)
        self._commit(mark)
        return {"stdout": out, "stderr": "", "status": 0}

    def _commit(self, mark: int) -> None:
        """Append the records since ``mark`` to the trace, durably, and forget them."""
        trace = self.sim.trace
        new = trace.lines(mark)
        if new:
            data = "".join(line + "\n" for line in new).encode("ascii")
            written = os.write(self.fd, data)
            while written < len(data):  # a regular file takes it whole; never loop silently
                written += os.write(self.fd, data[written:])
            os.fsync(self.fd)
            self.offset += len(data)
        trace.truncate(1)

    def busy(self) -> bool:
        """Scripts are waiting, in real time, for a signal (only with --execute)."""
        return self.executor is not None and bool(self.executor.running)

    def close(self) -> None:
        if self.executor is not None:
            self.executor.close()
        os.close(self.fd)


def _damaged(path: Path, line: int | None, why: str) -> str:
    where = f"line {line}: " if line is not None else ""
    return (
        f"damaged trace {path}: {where}{why} (mend or remove the line, or start again with "
        f"'{PROG} install --reset')"
    )


def _answer(stderr: str, status: int = EXIT_STATE) -> dict[str, Any]:
    return {"stdout": "", "stderr": stderr, "status": status}


@contextlib.contextmanager
def _inside(directory: str) -> Iterator[None]:
    """Work in the caller's directory (relative script and output paths), if it exists."""
    here = os.getcwd()
    try:
        os.chdir(directory)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        os.chdir(here)


def _sbatch_reads_stdin(args: list[str]) -> bool:
    """Does sbatch read its script from stdin (no script operand, no ``--wrap``)?"""
    from simulators.slurm.commands.getopt import UsageError as SlurmUsage
    from simulators.slurm.commands.getopt import parse
    from simulators.slurm.commands.sbatch import SPEC

    try:
        parsed = parse("sbatch", args, SPEC, permute=False)
    except SlurmUsage:
        return False
    quick = ("wrap", "help", "usage", "version")
    return not parsed.operands and not any(parsed.has(key) for key in quick)


def _fingerprint() -> tuple[tuple[str, int, int], ...]:
    """The simulator's source files (name, mtime, size): a server whose code changed stops."""
    found = []
    for package in ("simulators", "dispatch_core"):
        for folder, _, names in os.walk(os.path.join(ROOT, package)):
            for name in names:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with contextlib.suppress(OSError):
                        stat = os.stat(path)
                        found.append((path, stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(found))


def serve(state_dir: Path) -> int:
    """Run the server of ``state_dir`` until it is stopped, idle or stale. It prints ``ready``
    once it listens, or ``error <reason>`` (and exits 3) when the directory cannot be used."""
    state_dir = state_dir.absolute()
    try:
        os.chdir(state_dir)
        lock = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        name = f": {state_dir / error.filename}" if isinstance(error.filename, str) else ""
        print(f"error cannot use state dir {state_dir}{name}: {error.strerror}", flush=True)
        return EXIT_STATE
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        server = Server(state_dir)
    except StateError as error:
        print(f"error {error.text}", flush=True)
        return EXIT_STATE
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET_FILE)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(SOCKET_FILE)
    listener.listen(128)
    ours = os.stat(SOCKET_FILE).st_ino
    idle = float(server.settings.get("idle_exit", DEFAULT_IDLE_EXIT))
    listener.settimeout(min(max(idle, 0.1), 30.0))
    write_atomic(state_dir / PID_FILE, f"{os.getpid()}\n", 0o644)
    print("ready", flush=True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    last = time.monotonic()
    try:
        while True:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                gone = not os.path.isdir(state_dir) or server.stale() is not None
                if gone or (time.monotonic() - last >= idle and not server.busy()):
                    break
                continue
            with connection:
                # A client sends its request as soon as it connects; one that does not is not
                # let to hold the others up for long.
                connection.settimeout(REQUEST_TIMEOUT)
                keep = _converse(server, connection, listener)
            last = time.monotonic()
            if not keep:
                break
    finally:
        with contextlib.suppress(OSError):
            if os.stat(SOCKET_FILE).st_ino == ours:
                os.unlink(SOCKET_FILE)
        with contextlib.suppress(OSError):
            os.unlink(PID_FILE)
        listener.close()
        server.close()
    return 0


def _converse(server: Server, connection: socket.socket, listener: socket.socket) -> bool:
    """Answer one connection; False when the server must stop."""
    from simulators.slurm.shim_client import SOCKET_FILE as NAME

    def retire() -> None:  # no new call reaches this server: the next one starts another
        with contextlib.suppress(OSError):
            os.unlink(NAME)
        listener.close()

    try:
        message = receive(connection)
        if message is None:
            return True
        if message.get("kind") == "stop":
            retire()
            send(connection, {"stopped": True})
            return False
        why = server.stale()
        if why is not None:
            sys.stderr.write(f"{PROG}: restarting: {why}\n")
            retire()
            send(connection, {"restart": True})
            return False
        send(connection, server.handle(message))
        return True
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        return True  # the caller went away (or never spoke); what it asked is done, recorded
    except Exception as error:
        # A bug: what the simulator holds may not match its trace any more. Say so, stop, and
        # let the next call rebuild from the trace (this call's records were not appended).
        traceback.print_exc()
        retire()
        with contextlib.suppress(OSError):
            text = f"{PROG}: internal error ({type(error).__name__}: {error}; see {LOG_FILE})\n"
            send(connection, _answer(text))
        return False


if __name__ == "__main__":
    raise SystemExit(main())
