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

from simulators.slurm.commands.common import SIGNALS, sig_name2num, strtol
from simulators.slurm.commands.getopt import Opt, Parsed, UsageError, parse, refuse
from simulators.slurm.commands.squeue import ranged
from simulators.slurm.controller import (
    BAD_PARTITION,
    EAGAIN,
    UNAVAILABLE,
    Signal,
    SlurmError,
    Submission,
)
from simulators.slurm.sim import Output, command
from simulators.slurm.timefmt import TimeSpecError, format_time, parse_time

if TYPE_CHECKING:
    from simulators.slurm.sim import SlurmSim

PROG: Final = "sbatch"
FATAL: Final = 255
"""What ``slurm_process_option_or_exit`` exits with (``exit(-1)``, src/common/slurm_opt.c):
an option getopt_long refuses, or a value its ``arg_set_*`` function refuses."""


def _real(name: str, short: str | None = None, arg: str = "required") -> Opt:
    """An option of real sbatch that the simulator does not implement."""
    return Opt(name, (name,), short, arg, simulated=False)


SPEC: Final = [
    # slurm_option_table_create()'s table for sbatch: common_options[] of
    # src/common/slurm_opt.c (22.05.8) in its order, the entries sbatch can set.
    Opt("account", ("account",), "A"),
    _real("acctg-freq"),
    _real("array", "a"),
    _real("batch"),
    Opt("begin", ("begin",), "b"),
    _real("bb"),
    _real("bbf"),
    _real("cluster-constraint"),
    Opt("chdir", ("chdir",), "D"),
    _real("cluster"),
    _real("clusters", "M"),
    Opt("comment", ("comment",)),
    _real("container"),
    _real("context"),
    _real("contiguous", arg="none"),
    Opt("constraint", ("constraint",), "C"),
    _real("core-spec", "S"),
    _real("cores-per-socket"),
    _real("cpu-freq"),
    _real("cpus-per-gpu"),
    Opt("cpus-per-task", ("cpus-per-task",), "c"),
    _real("deadline"),
    _real("delay-boot"),
    _real("dependency", "d"),
    _real("distribution", "m"),
    Opt("error", ("error",), "e"),
    _real("exclude", "x"),
    _real("exclusive", arg="optional"),
    Opt("export", ("export",)),
    _real("export-file"),
    _real("extra-node-info", "B"),
    _real("get-user-env", arg="optional"),
    _real("gid"),
    _real("gpu-bind"),
    _real("gpu-freq"),
    _real("gpus", "G"),
    _real("gpus-per-node"),
    _real("gpus-per-socket"),
    _real("gpus-per-task"),
    Opt("gres", ("gres",)),
    _real("gres-flags"),
    Opt("help", ("help",), "h", "none"),
    _real("hint"),
    Opt("hold", ("hold",), "H", "none"),
    _real("ignore-pbs", arg="none"),
    _real("input", "i"),
    Opt("job-name", ("job-name",), "J"),
    _real("kill-on-invalid-dep"),
    _real("licenses", "L"),
    _real("mail-type"),
    _real("mail-user"),
    _real("mcs-label"),
    Opt("mem", ("mem",)),
    _real("mem-bind"),
    _real("mem-per-cpu"),
    _real("mem-per-gpu"),
    _real("mincpus"),
    _real("network"),
    _real("nice", arg="optional"),
    _real("no-kill", "k", "optional"),
    Opt("no-requeue", ("no-requeue",), None, "none"),
    _real("nodefile", "F"),
    _real("nodelist", "w"),
    Opt("nodes", ("nodes",), "N"),
    Opt("ntasks", ("ntasks",), "n"),
    _real("ntasks-per-core"),
    _real("ntasks-per-gpu"),
    Opt("ntasks-per-node", ("ntasks-per-node",)),
    _real("ntasks-per-socket"),
    _real("ntasks-per-tres"),
    Opt("open-mode", ("open-mode",)),
    Opt("output", ("output",), "o"),
    _real("overcommit", "O", "none"),
    _real("oversubscribe", "s", "none"),
    Opt("parsable", ("parsable",), None, "none"),
    Opt("partition", ("partition",), "p"),
    _real("power"),
    _real("prefer"),
    _real("priority"),
    _real("profile"),
    _real("propagate", arg="optional"),
    Opt("qos", ("qos",), "q"),
    Opt("quiet", ("quiet",), "Q", "none"),
    _real("reboot", arg="none"),
    Opt("requeue", ("requeue",), None, "none"),
    _real("reservation"),
    Opt("signal", ("signal",)),
    _real("sockets-per-node"),
    _real("spread-job", arg="none"),
    _real("switches"),
    Opt("ntasks-per-node", ("tasks-per-node",)),
    Opt("test-only", ("test-only",), None, "none"),
    _real("thread-spec"),
    _real("threads-per-core"),
    Opt("time", ("time",), "t"),
    _real("time-min"),
    _real("tmp"),
    _real("uid"),
    _real("use-min-nodes", arg="none"),
    Opt("verbose", ("verbose",), "v", "none"),
    Opt("version", ("version",), "V", "none"),
    Opt("usage", ("usage",), None, "none"),
    _real("wait", "W", "none"),
    _real("wait-all-nodes"),
    _real("wckey"),
    Opt("wrap", ("wrap",)),
]
_RETRIES: Final = 15
_RETRYING: Final = "Slurm temporarily unable to accept job, sleeping and retrying"


class SbatchError(Exception):
    """A refusal sbatch prints before it contacts slurmctld: its ``sbatch: error:`` lines,
    after ``raw`` lines printed as they are, and its exit status."""

    def __init__(self, message: str, status: int = 1, raw: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.raw = raw


@command(PROG)
def sbatch(sim: SlurmSim, args: list[str], stdin: str | None, env: Mapping[str, str]) -> Output:
    result = Output()
    now = sim.controller.now
    try:
        # process_options_first_pass (src/sbatch/opt.c): the command line, option by option;
        # a refused one ends sbatch there, before the script is read.
        cli = parse(PROG, args, SPEC, permute=False, defer=True)
        for key, value in cli.options:
            if key in ("help", "usage"):
                result.out(
                    f"Usage: {PROG} [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]"
                )
                return result
            if key == "version":
                result.out(f"slurm {sim.config.version}")
                return result
            _check(key, value, now)
        cli.check()
        if cli.operands and cli.has("wrap"):
            raise SbatchError("Script arguments not permitted with --wrap option")
        script, args_after = _script(cli, stdin)
        directives = _directives(script, now)
        # _opt_verify, after the second pass (directives, then the command line again)
        if (cli.has("quiet") or directives.has("quiet")) and (
            cli.has("verbose") or directives.has("verbose")
        ):
            raise SbatchError("don't specify both --verbose (-v) and --quiet (-Q)")
        submission = _submission(sim, directives, cli, script, args_after, env)
    except UsageError as error:
        result.returncode = refuse(result, error, status=FATAL)
        return result
    except SbatchError as error:
        for line in error.raw:
            result.err(line)
        for line in str(error).split("\n"):
            result.err(f"{PROG}: error: {line}")
        result.returncode = error.status
        return result

    controller = sim.controller
    for attempt in range(_RETRIES + 1):
        try:
            if not controller.available():
                raise SlurmError(UNAVAILABLE)
            if cli.has("test-only"):
                return _test_only(sim, submission, env)
            job = controller.submit(submission)
            break
        except SlurmError as error:
            if error.text == EAGAIN and attempt < _RETRIES and hasattr(sim.clock, "advance"):
                if attempt == 0:
                    result.err(f"{PROG}: error: {_RETRYING}")
                sim.advance(attempt + 1)
                continue
            if error.text == BAD_PARTITION:
                # slurmctld's err_msg, which the client logs as it unpacks the reply
                # (_unpack_return_code2_msg, src/common/slurm_protocol_pack.c)
                partition = submission.partition or sim.config.partition
                result.err(f"{PROG}: error: invalid partition specified: {partition}")
            result.err(f"{PROG}: error: Batch job submission failed: {error.text}")
            result.returncode = 1
            return result
    if cli.has("parsable"):
        result.out(str(job.job_id))
    else:
        result.out(f"Submitted batch job {job.job_id}")
    return result


def _test_only(sim: SlurmSim, submission: Submission, env: Mapping[str, str]) -> Output:
    """``--test-only``: slurmctld's will-run answer, logged by the client as ``info``
    (``src/api/allocate.c``, slurm_job_will_run); the id is used up and no job is left. The
    start time is the earliest the job could start (real Slurm prints a far-future one for
    some jobs, docs/fidelity.md)."""
    job_id, start, cpus, nodes, partition = sim.controller.will_run(submission)
    result = Output()
    result.err(
        f"{PROG}: Job {job_id} to start at {format_time(start, env)} using {cpus} processors "
        f"on nodes {ranged(list(nodes))} in partition {partition}"
    )
    return result


def _check(key: str, value: str | None, now: int) -> None:
    """The ``arg_set_*`` checks of src/common/slurm_opt.c for the options the simulator reads
    (raises :class:`SbatchError`)."""
    if value is None:
        return
    if key == "nodes":
        _node_count(value)
    elif key in _NUMERIC:
        _parse_int(f"--{key}", value)
    elif key == "time":
        _time_limit(value)
    elif key == "signal":
        _signal(value)
    elif key == "begin":
        _begin(value, now)
    elif key == "mem":
        _mbytes(value)
    elif key == "open-mode":
        _open_mode(value)


_NUMERIC: Final = ("ntasks", "cpus-per-task", "ntasks-per-node")
"""Options set by ``parse_int(name, arg, true)`` (src/common/proc_args.c)."""


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


def _directives(script: str, now: int) -> Parsed:
    """The options of the ``#SBATCH`` lines before the first command, checked in order as
    ``_opt_batch_script`` does (src/sbatch/opt.c): getopt_long stops at a word that is no
    option, which is then an invalid directive."""
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
    directives = parse(PROG, words, SPEC, permute=False, defer=True)
    for key, value in directives.options:
        _check(key, value, now)
    directives.check()
    if directives.operands:
        raise SbatchError(
            f"Invalid directive found in batch script: {directives.operands[0]}", FATAL
        )
    return directives


def _submission(
    sim: SlurmSim,
    directives: Parsed,
    cli: Parsed,
    script: str,
    args: tuple[str, ...],
    env: Mapping[str, str],
) -> Submission:
    # value(key): the command line's last value of key, else the directives' (an option the
    # command line gives without a value leaves the directives')
    values = directives.last_values()
    values.update((k, v) for k, v in cli.last_values().items() if v is not None)
    value = values.get

    def flag(key: str) -> bool:
        return cli.has(key) or directives.has(key)

    def number(key: str) -> int | None:
        text = value(key)
        return _parse_int(f"--{key}", text) if text is not None else None

    now = sim.controller.now
    nodes = value("nodes")
    begin = _begin(spec, now) if (spec := value("begin")) is not None else None
    requeue: bool | None = None
    order = [(k, v) for k, v in directives.options + cli.options if k in ("requeue", "no-requeue")]
    if order:
        requeue = order[-1][0] == "requeue"
    environment = dict(env)
    if cli.operands:
        environment["__SCRIPT_NAME__"] = cli.operands[0].rsplit("/", 1)[-1]
    elif value("wrap") is not None:
        environment["__SCRIPT_NAME__"] = "wrap"
    mode = value("open-mode")
    return Submission(
        script=script,
        args=args,
        name=value("job-name"),
        comment=value("comment") or "",
        partition=value("partition"),
        account=value("account"),
        nodes=_node_count(nodes)[0] if nodes is not None else 1,
        ntasks=number("ntasks"),
        ntasks_per_node=number("ntasks-per-node"),
        time_limit=_time_limit(value("time")),
        begin=begin,
        work_dir=value("chdir") or env.get("PWD", "/root"),
        stdout=value("output"),
        stderr=value("error"),
        open_mode=_open_mode(mode) if mode is not None else "truncate",
        requeue=requeue,
        hold=flag("hold"),
        signal=_signal(value("signal")),
        constraint=value("constraint") or None,
        export=value("export") or "ALL",
        environment=environment,
    )


def _parse_int(name: str, text: str) -> int:
    """``parse_int(name, text, true)``: a whole positive number, or sbatch exits 1."""
    number, rest = strtol(text)
    if rest or number <= 0:
        raise SbatchError(f'Invalid numeric value "{text}" for {name}.')
    return number


def _node_count(text: str) -> tuple[int, int]:
    """``verify_node_count`` (src/common/proc_args.c): ``N`` or ``min-max``, each a number
    with an optional k/m multiplier; (min, max)."""

    def count(part: str) -> int:  # _str_to_nodes, whose leftover must be blank
        number, rest = strtol(part)
        if rest == part:  # no digits
            number = -1
        else:
            if rest[:1] in ("k", "K"):
                number, rest = number * 1024, rest[1:]
            if rest[:1] in ("m", "M"):
                number, rest = number * 1024 * 1024, rest[1:]
        if rest.strip(" \t\n\v\f\r"):
            raise SbatchError(f'"{part}" is not a valid node count', FATAL)
        return number

    low_text, dash, high_text = text.partition("-")
    if dash:
        low, high = max(count(low_text), 1), count(high_text)
    else:
        low = high = count(text)
        if low < 0:
            raise SbatchError(f'"{text}" is not a valid node count', FATAL)
    if high and high < low:
        raise SbatchError(f"Maximum node count {high} is less than minimum node count {low}", FATAL)
    return low, high


_TIME: Final = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")


def _time_limit(text: str | None) -> int | None:
    """``--time`` in minutes (None: the partition's limit, here unlimited)."""
    if text is None or text.lower() in ("unlimited", "infinite", "-1"):
        return None
    match = _TIME.fullmatch(text)
    if match is None:
        raise SbatchError("Invalid --time specification", FATAL)
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


def _signal(text: str | None) -> Signal | None:
    """``get_signal_opts`` (src/common/proc_args.c): ``[R][B][:]<signal>[@<seconds>]``."""
    if text is None:
        return None
    rest = text
    batch = False
    if rest[:1] in ("R", "r"):
        rest = rest[1:]
    if rest[:1] in ("B", "b"):
        batch, rest = True, rest[1:]
        if rest[:1] in ("R", "r"):
            rest = rest[1:]
    if rest[:1] == ":":
        rest = rest[1:]
    name, at, seconds = rest.partition("@")
    number = sig_name2num(name)
    if number < 1:
        raise SbatchError("Invalid --signal specification", FATAL)
    delay, after = strtol(seconds) if at else (60, "")
    if not 0 <= delay <= 0xFFFF or after:
        raise SbatchError("Invalid --signal specification", FATAL)
    label = next((k for k, v in SIGNALS.items() if v == number), str(number))
    return Signal(number=number, name=label, seconds=delay, batch_only=batch)


def _begin(text: str, now: int) -> int:
    try:
        return parse_time(text, now)
    except TimeSpecError as error:
        raise SbatchError("Invalid --begin specification", FATAL, raw=(str(error),)) from None


def _mbytes(text: str) -> None:
    """``str_to_mbytes`` (src/common/proc_args.c): a number, then nothing or one of K, M, G,
    T (any case) alone or followed by B (the simulator keeps no memory size)."""
    number, rest = strtol(text)
    unit_ok = not rest or (rest[:1] in "kKmMgGtT" and rest[1:] in ("", "B", "b"))
    if rest == text or number < 0 or not unit_ok:
        raise SbatchError("Invalid --mem specification", FATAL)


def _open_mode(text: str) -> str:
    """``arg_set_open_mode``: its first letter, a(ppend) or t(runcate), any case."""
    if text[:1] in ("a", "A"):
        return "append"
    if text[:1] in ("t", "T"):
        return "truncate"
    raise SbatchError("Invalid --open-mode specification", FATAL)
