"""sbatch: submit a batch script (from a file operand or stdin), with ``#SBATCH`` lines.

Options on the command line override the script's ``#SBATCH`` lines; option parsing stops at
the script operand, whose followers are the script's arguments. Errors print as sbatch 22.05
prints them, with exit status 1. When slurmctld refuses for lack of job ids or records, sbatch
retries 15 times, sleeping 1, 2, ... 15 s of the cluster's clock, as the real one does.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from simulators.slurm.commands.getopt import Opt, Parsed, UsageError, parse
from simulators.slurm.controller import EAGAIN, UNAVAILABLE, Signal, SlurmError, Submission
from simulators.slurm.sim import Output, command
from simulators.slurm.timefmt import TimeSpecError, parse_time

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

PROG: Final = "sbatch"
SPEC: Final = [
    Opt("account", ("account",), "A"),
    Opt("begin", ("begin",), "b"),
    Opt("chdir", ("chdir",), "D"),
    Opt("comment", ("comment",)),
    Opt("constraint", ("constraint",), "C"),
    Opt("cpus-per-task", ("cpus-per-task",), "c"),
    Opt("error", ("error",), "e"),
    Opt("export", ("export",)),
    Opt("gres", ("gres",)),
    Opt("help", ("help",), "h", "none"),
    Opt("hold", ("hold",), "H", "none"),
    Opt("job-name", ("job-name",), "J"),
    Opt("mem", ("mem",)),
    Opt("nodes", ("nodes",), "N"),
    Opt("ntasks", ("ntasks",), "n"),
    Opt("ntasks-per-node", ("ntasks-per-node",)),
    Opt("no-requeue", ("no-requeue",), None, "none"),
    Opt("open-mode", ("open-mode",)),
    Opt("output", ("output",), "o"),
    Opt("parsable", ("parsable",), None, "none"),
    Opt("partition", ("partition",), "p"),
    Opt("qos", ("qos",), "q"),
    Opt("quiet", ("quiet",), "Q", "none"),
    Opt("requeue", ("requeue",), None, "optional"),
    Opt("signal", ("signal",)),
    Opt("time", ("time",), "t"),
    Opt("usage", ("usage",), None, "none"),
    Opt("verbose", ("verbose",), "v", "none"),
    Opt("version", ("version",), "V", "none"),
    Opt("wrap", ("wrap",)),
]
SIGNALS: Final = {
    "HUP": 1,
    "INT": 2,
    "QUIT": 3,
    "KILL": 9,
    "USR1": 10,
    "USR2": 12,
    "TERM": 15,
    "CONT": 18,
    "STOP": 19,
    "URG": 23,
    "XCPU": 24,
}
_RETRIES: Final = 15
_RETRYING: Final = "Slurm temporarily unable to accept job, sleeping and retrying"


class SbatchError(Exception):
    """A refusal sbatch prints before it contacts slurmctld."""


@command(PROG)
def sbatch(sim: SlurmSim, args: list[str], stdin: str | None, env: Mapping[str, str]) -> Output:
    result = Output()
    try:
        cli = parse(PROG, args, SPEC, permute=False)
        if cli.has("help") or cli.has("usage"):
            result.out(f"Usage: {PROG} [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]")
            return result
        if cli.has("version"):
            result.out(f"slurm {sim.config.version}")
            return result
        script, args_after = _script(cli, stdin)
        directives = _directives(script)
        submission = _submission(sim, directives, cli, script, args_after, env)
    except UsageError as error:
        for line in error.lines:
            result.err(line)
        result.returncode = 1
        return result
    except SbatchError as error:
        for line in str(error).split("\n"):
            result.err(f"{PROG}: error: {line}")
        result.returncode = 1
        return result

    controller = sim.controller
    for attempt in range(_RETRIES + 1):
        try:
            if not controller.available():
                raise SlurmError(UNAVAILABLE)
            job = controller.submit(submission)
            break
        except SlurmError as error:
            if error.text == EAGAIN and attempt < _RETRIES and hasattr(sim.clock, "advance"):
                if attempt == 0:
                    result.err(f"{PROG}: error: {_RETRYING}")
                sim.advance(attempt + 1)
                continue
            result.err(f"{PROG}: error: Batch job submission failed: {error.text}")
            result.returncode = 1
            return result
    if cli.has("parsable"):
        result.out(str(job.job_id))
    else:
        result.out(f"Submitted batch job {job.job_id}")
    return result


def _script(cli: Parsed, stdin: str | None) -> tuple[str, tuple[str, ...]]:
    wrap = cli.last("wrap")
    if wrap is not None:
        script = f"#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{wrap}\n"
        return script, tuple(cli.operands)
    if cli.operands:
        path = cli.operands[0]
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as handle:
                script = handle.read()
        except OSError:
            raise SbatchError(f"Unable to open file {path}") from None
        args = tuple(cli.operands[1:])
    else:
        script = stdin or ""
        args = ()
    if not script:
        raise SbatchError("Batch script is empty!")
    if not script.startswith("#!"):
        raise SbatchError(
            "This does not look like a batch script.  The first\n"
            "line must start with #! followed by the path to an interpreter.\n"
            "For instance: #!/bin/sh"
        )
    if "\x00" in script:
        raise SbatchError(
            "The SLURM controller does not allow scripts that contain a NULL character '\\0'."
        )
    return script, args


def _directives(script: str) -> Parsed:
    """The options of the ``#SBATCH`` lines before the first command."""
    words: list[str] = []
    for line in script.split("\n")[1:]:
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if stripped.startswith("#SBATCH"):
            body = stripped[len("#SBATCH") :].split(" #", 1)[0]
            try:
                words.extend(shlex.split(body))
            except ValueError:
                raise SbatchError(f"Unable to parse #SBATCH line: {line}") from None
    return parse(PROG, words, SPEC)


def _submission(
    sim: SlurmSim,
    directives: Parsed,
    cli: Parsed,
    script: str,
    args: tuple[str, ...],
    env: Mapping[str, str],
) -> Submission:
    def value(key: str) -> str | None:
        found = cli.last(key)
        return found if found is not None else directives.last(key)

    def flag(key: str) -> bool:
        return cli.has(key) or directives.has(key)

    now = sim.controller.now
    nodes = _count(value("nodes"), "Invalid node count specification", default=1)
    ntasks = _count(value("ntasks"), "Invalid numeric value for --ntasks", default=None)
    per_node = _count(value("ntasks-per-node"), "Invalid --ntasks-per-node argument", default=None)
    begin = None
    if (spec := value("begin")) is not None:
        try:
            begin = parse_time(spec, now)
        except TimeSpecError:
            raise SbatchError(f"Invalid time specification {spec}") from None
    requeue: bool | None = None
    order = [(k, v) for k, v in directives.options + cli.options if k in ("requeue", "no-requeue")]
    if order:
        requeue = order[-1][0] == "requeue"
    environment = dict(env)
    if cli.operands:
        environment["__SCRIPT_NAME__"] = cli.operands[0].rsplit("/", 1)[-1]
    elif value("wrap") is not None:
        environment["__SCRIPT_NAME__"] = "wrap"
    return Submission(
        script=script,
        args=args,
        name=value("job-name"),
        comment=value("comment") or "",
        partition=value("partition"),
        account=value("account"),
        nodes=nodes if nodes is not None else 1,
        ntasks=ntasks,
        ntasks_per_node=per_node,
        time_limit=_time_limit(value("time")),
        begin=begin,
        work_dir=value("chdir") or env.get("PWD", "/root"),
        stdout=value("output"),
        stderr=value("error"),
        open_mode=value("open-mode") or "truncate",
        requeue=requeue,
        hold=flag("hold"),
        signal=_signal(value("signal")),
        export=value("export") or "ALL",
        environment=environment,
    )


def _count(text: str | None, message: str, default: int | None) -> int | None:
    if text is None:
        return default
    low = text.split("-", 1)[0]
    if not low.isdigit() or int(low) < 1:
        raise SbatchError(message)
    return int(low)


_TIME: Final = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")


def _time_limit(text: str | None) -> int | None:
    """``--time`` in minutes (None: the partition's limit, here unlimited)."""
    if text is None or text.lower() in ("unlimited", "infinite", "-1"):
        return None
    match = _TIME.fullmatch(text)
    if match is None:
        raise SbatchError("Invalid --time specification")
    days, first, second, third = match.groups()
    if days is not None:
        hours, minutes, seconds = int(first), int(second or 0), int(third or 0)
        total = int(days) * 1440 + hours * 60 + minutes + (1 if seconds else 0)
    elif third is not None:
        total = int(first) * 60 + int(second) + (1 if int(third) else 0)
    elif second is not None:
        total = int(first) + (1 if int(second) else 0)
    else:
        total = int(first)
    return max(total, 1) if total or text != "0" else 0


_SIGNAL: Final = re.compile(r"(?:([RB]):)?([A-Za-z0-9]+)(?:@(\d+))?")


def _signal(text: str | None) -> Signal | None:
    if text is None:
        return None
    match = _SIGNAL.fullmatch(text)
    if match is None:
        raise SbatchError("Invalid --signal specification")
    scope, name, seconds = match.groups()
    upper = name.upper().removeprefix("SIG")
    if name.isdigit():
        number = int(name)
        label = next((k for k, v in SIGNALS.items() if v == number), name)
    elif upper in SIGNALS:
        number, label = SIGNALS[upper], upper
    else:
        raise SbatchError("Invalid --signal specification")
    delay = int(seconds) if seconds is not None else 60
    if not 0 <= delay <= 65535:
        raise SbatchError("Invalid --signal specification")
    return Signal(number=number, name=label, seconds=delay, batch_only=scope == "B")
