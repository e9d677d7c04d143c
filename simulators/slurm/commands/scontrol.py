"""scontrol: ``show job [-o] [id]``, ``show config``, ``update JobId=...``, ``requeue``,
``requeuehold``, ``hold``, ``uhold`` and ``release``, with 22.05's messages and exit statuses,
from the command line or, without one, read from stdin (interactive mode).

As src/scontrol/scontrol.c (22.05.8) does it: options are parsed without stopping at the
command; getopt_long's ``'?'`` prints ``Try "scontrol --help"`` and exits 1. Commands, show
entities and update tags may be abbreviated down to a least length each (``sho j``), matched
case-insensitively in the source's order (``_process_command``, ``_show_it``, ``_update_it``,
and ``scontrol_update_job`` in src/scontrol/update_job.c); one real scontrol knows and the
simulator does not answer is refused as not supported. Any error makes the exit status 1 (the
global ``exit_code``). In interactive mode each line is echoed after the ``scontrol: ``
prompt, as readline does when stdin is no terminal, until the end of input or ``quit``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from simulators.slurm.commands.common import strtol
from simulators.slurm.commands.getopt import Opt, parse, refuse
from simulators.slurm.controller import (
    ALREADY_DONE,
    INVALID_JOB_ID,
    NOT_PENDING,
    UNAVAILABLE,
    HoldKind,
    Job,
    JobState,
    SlurmError,
)
from simulators.slurm.sim import Output, command
from simulators.slurm.timefmt import TimeSpecError, format_time, parse_time

if TYPE_CHECKING:
    from simulators.slurm.controller import Controller
    from simulators.slurm.sim import SlurmSim

T = TypeVar("T")
PROG: Final = "scontrol"
SPEC: Final = [
    # long_options[] of main() in src/scontrol/scontrol.c, in its order
    Opt("all", ("all",), "a", "none"),
    Opt("clusters", ("cluster", "clusters"), "M", simulated=False),
    Opt("details", ("details",), "d", "none"),
    Opt("federation", ("federation",), None, "none"),  # one cluster: nothing changes
    Opt("future", ("future",), "F", "none"),  # nodes only
    Opt("help", ("help",), "h", "none", simulated=False),
    Opt("hide", ("hide",), None, "none"),
    Opt("local", ("local",), None, "none"),
    Opt("oneliner", ("oneliner",), "o", "none"),
    Opt("quiet", ("quiet",), "Q", "none"),
    Opt("sibling", ("sibling",), None, "none"),
    Opt("uid", ("uid",), "u", simulated=False),
    Opt("help", ("usage",), None, "none", simulated=False),
    Opt("verbose", ("verbose",), "v", "none"),
    Opt("version", ("version",), "V", "none"),
]
PROMPT: Final = "scontrol: "

KEYWORDS: Final[tuple[tuple[str, int, bool], ...]] = (
    # _process_command's keywords in its order: (keyword, least length, whether the compare
    # is over exactly that length rather than MAX(len(tag), least))
    ("abort", 5, False),
    ("all", 2, False),
    ("cancel_reboot", 3, False),
    ("completing", 2, False),
    ("cluster", 2, False),
    ("create", 2, False),
    ("details", 1, False),
    ("errnumstr", 2, False),
    ("errnostr", 2, False),
    ("exit", 2, False),
    ("gethost", 7, False),
    ("hash_file", 15, False),
    ("hash", 9, False),
    ("help", 2, False),
    ("hide", 2, False),
    ("oneliner", 1, False),
    ("pidinfo", 3, False),
    ("ping", 3, False),
    ("\\q", 2, True),
    ("quiet", 4, False),
    ("quit", 4, False),
    ("reboot_nodes", 3, False),
    ("reconfigure", 3, False),
    ("requeue", 3, False),
    ("requeuehold", 11, True),
    ("hold", 4, True),
    ("holdu", 5, True),
    ("uhold", 5, True),
    ("release", 3, False),
    ("suspend", 2, False),
    ("resume", 3, False),
    ("top", 3, False),
    ("token", 3, False),
    ("wait_job", 2, False),
    ("setdebugflags", 9, False),
    ("fsdampeningfactor", 3, False),
    ("fairsharedampeningfactor", 3, False),
    ("setdebug", 2, False),
    ("schedloglevel", 3, False),
    ("show", 3, False),
    ("write", 5, False),
    ("takeover", 8, False),
    ("shutdown", 8, False),
    ("update", 1, False),
    ("delete", 1, False),
    ("verbose", 4, False),
    ("version", 4, False),
    ("listpids", 1, False),
    ("getent", 6, False),
    ("notify", 1, False),
    ("callerid", 3, False),
)
ANSWERED: Final = frozenset(
    {"all", "details", "exit", "hide", "oneliner", "quit", "requeue", "requeuehold"}
    | {"hold", "holdu", "uhold", "release", "show", "update", "version"}
)
"""The keywords the simulator answers (flags it does not model are taken and ignored)."""
ENTITIES: Final[tuple[tuple[str, int], ...]] = (
    # _show_it's entities in its order (least length); the simulator shows jobs and config
    ("aliases", 1),
    ("bbstat", 2),
    ("dwstat", 2),
    ("burstbuffer", 2),
    ("assoc_mgr", 2),
    ("cache", 2),
    ("config", 1),
    ("daemons", 1),
    ("Federations", 1),
    ("FrontendName", 1),
    ("hostnames", 5),
    ("hostlist", 5),
    ("hostlistsorted", 9),
    ("jobs", 1),
    ("jobid", 1),
    ("licenses", 2),
    ("nodes", 1),
    ("partitions", 2),
    ("partitionname", 2),
    ("reservations", 1),
    ("reservationname", 1),
    ("slurmd", 2),
    ("steps", 2),
    ("topology", 1),
)
UPDATE_ENTITIES: Final[tuple[tuple[str, int], ...]] = (
    # _update_it's entity tags in its order; the simulator updates jobs
    ("NodeName", 3),
    ("PartitionName", 3),
    ("JobId", 3),
    ("JobNAME", 3),
    ("StepId", 4),
    ("FrontendName", 2),
    ("ReservationName", 3),
    ("SlurmctldDebug", 2),
)
JOB_TAGS: Final[tuple[tuple[str, int], ...]] = (
    # scontrol_update_job's tags in its order (least length); the simulator answers JobId,
    # Comment, Requeue, Name/JobName and EligibleTime/StartTime
    ("JobId", 3),
    ("AdminComment", 6),
    ("SiteFactor", 5),
    ("ArrayTaskThrottle", 10),
    ("Comment", 3),
    ("Clusters", 8),
    ("ClusterFeatures", 8),
    ("DelayBoot", 5),
    ("TimeLimit", 5),
    ("TimeMin", 5),
    ("Priority", 2),
    ("Nice", 2),
    ("CPUsPerTask", 9),
    ("CpusPerTres", 9),
    ("NumCPUs", 6),
    ("NumTasks", 8),
    ("ReqProcs", 8),
    ("Requeue", 4),
    ("ReqNodes", 8),
    ("NumNodes", 8),
    ("ReqSockets", 4),
    ("ReqCores", 4),
    ("TasksPerNode", 2),
    ("ReqThreads", 4),
    ("MinCPUsNode", 4),
    ("MinMemoryNode", 10),
    ("MinMemoryCPU", 10),
    ("MinTmpDiskNode", 5),
    ("Partition", 2),
    ("QOS", 2),
    ("ReservationName", 3),
    ("Name", 2),
    ("JobName", 4),
    ("WCKey", 1),
    ("StdOut", 6),
    ("Switches", 5),
    ("wait-for-switch", 5),
    ("OverSubscribe", 2),
    ("Shared", 2),
    ("Contiguous", 3),
    ("CoreSpec", 4),
    ("MemPerTres", 5),
    ("ThreadSpec", 4),
    ("TresBind", 5),
    ("TresFreq", 5),
    ("TresPerJob", 8),
    ("TresPerNode", 8),
    ("TresPerSocket", 8),
    ("TresPerTask", 8),
    ("ExcNodeList", 3),
    ("NodeList", 8),
    ("ReqNodeList", 8),
    ("Features", 1),
    ("Prefer", 3),
    ("Gres", 2),
    ("Account", 1),
    ("BurstBuffer", 1),
    ("Dependency", 1),
    ("Licenses", 1),
    ("EligibleTime", 2),
    ("StartTime", 2),
    ("EndTime", 2),
    ("Reboot", 3),
    ("UserID", 3),
    ("Deadline", 3),
    ("WorkDir", 2),
    ("MailType", 5),
    ("MailUser", 5),
)


def same(text: str, word: str, length: int) -> bool:
    """``xstrncasecmp(text, word, length) == 0``: the first ``length`` characters agree in
    any case, the end of a string counting as a NUL."""
    if text.isascii() and word.isascii():  # lowering keeps the length: slice first
        mine, theirs = text[:length].lower(), word[:length].lower()
        if len(mine) == len(theirs):
            return mine == theirs
        return mine.ljust(length, "\0") == theirs.ljust(length, "\0")
    pad = "\0" * length
    return (text.lower() + pad)[:length] == (word.lower() + pad)[:length]


_Row = TypeVar("_Row", tuple[str, int], tuple[str, int, bool])
_BY_LETTER: dict[int, tuple[object, dict[str, tuple[Any, ...]]]] = {}
"""Each table's rows by the lowered first letter of their word, in table order (the tables
are module constants, never changed)."""


def _candidates(text: str, table: tuple[_Row, ...]) -> tuple[_Row, ...]:
    """The rows of ``table`` (a word, its least length >= 1, ...) that ``same(text, word, n)``
    can match for any n >= 1, in table order: for an ASCII ``text``, those whose word begins
    with its first letter in any case (what the first compared character requires); else
    every row (the case-blind compare of other text is left to :func:`same`)."""
    if not text or not text.isascii():
        return table
    found = _BY_LETTER.get(id(table))
    if found is None or found[0] is not table:
        index: dict[str, list[_Row]] = {}
        for row in table:
            if row[1] < 1 or not row[0].isascii():
                raise ValueError(f"a row the first letter cannot index: {row}")
            index.setdefault(row[0][0].lower(), []).append(row)
        found = _BY_LETTER[id(table)] = (table, {k: tuple(v) for k, v in index.items()})
    rows: tuple[_Row, ...] = found[1].get(text[0].lower(), ())
    return rows


def _match(text: str, size: int, words: tuple[tuple[str, int], ...]) -> str | None:
    """The first of ``words`` for which ``xstrncasecmp(text, word, MAX(size, least))`` is 0
    (``size``: the length of the tag in ``text``, which may go on with ``=value``)."""
    return next(
        (word for word, least in _candidates(text, words) if same(text, word, max(size, least))),
        None,
    )


@command(PROG)
def scontrol(sim: SlurmSim, args: list[str], stdin: str | None, env: Mapping[str, str]) -> Output:
    result = Output()
    session = _Session(sim, env, result)
    cli = parse(PROG, args, SPEC, defer=True)
    for key, _ in cli.options:
        if key == "oneliner":
            session.oneliner = True
        elif key == "version":
            result.out(f"slurm {sim.config.version}")
            return result
    if cli.error is not None:  # "case (int)'?': ... exit(1);"
        result.returncode = refuse(result, cli.error)
        return result
    if cli.operands:
        session.process(cli.operands)
    else:
        session.interactive(stdin or "")
    result.returncode = session.exit_code
    return result


class _Session:
    """One scontrol process: its flags and its exit code (1 once anything failed)."""

    def __init__(self, sim: SlurmSim, env: Mapping[str, str], result: Output) -> None:
        self.sim = sim
        self.env = env
        self.result = result
        self.oneliner = False
        self.exit_code = 0
        self.done = False

    def fail(self, *lines: str) -> None:
        for line in lines:
            self.result.err(line)
        self.exit_code = 1

    def interactive(self, stdin: str) -> None:
        """``_get_command`` in a loop; readline echoes each line after the prompt."""
        lines = stdin.split("\n")
        if lines[-1] == "":
            lines.pop()
        for line in lines:
            self.result.out(PROMPT + line)
            self.process(_tokens(line))
            if self.done:
                return
        self.result.out(PROMPT)  # the prompt that met the end of input, then putchar('\n')

    def process(self, words: list[str]) -> None:
        """``_process_command``."""
        if not words:
            self.exit_code = 1
            return
        tag = words[0]
        keyword = next(
            (
                kw
                for kw, n, exact in _candidates(tag, KEYWORDS)
                if same(tag, kw, n if exact else max(len(tag), n))
            ),
            None,
        )
        if keyword is None:
            self.fail(f"invalid keyword: {tag}")
        elif keyword not in ANSWERED:
            self.fail(f"{PROG}: error: {keyword} is not supported by this simulator")
        elif keyword == "show":
            self.show(words)
        elif keyword == "update":
            if len(words) < 2:
                self.fail(f"too few arguments for {tag} keyword")
            else:
                self.update(words[1:])
        elif len(words) < 2 and keyword not in ("all", "details", "exit", "hide", "oneliner"):
            if keyword in ("quit", "version"):
                self._flag(keyword, tag, words)
            else:
                self.fail(f"too few arguments for keyword:{tag}")
        elif keyword in ("requeue", "requeuehold"):
            self.requeue(words[1:], keyword == "requeuehold")
        elif keyword in ("hold", "holdu", "uhold", "release"):
            for word in words[1:]:
                self.hold(tag, word)
        else:
            self._flag(keyword, tag, words)

    def _flag(self, keyword: str, tag: str, words: list[str]) -> None:
        """A keyword that sets a flag, prints the version or ends the session."""
        if len(words) > 1 and keyword != "all":
            many = "many arguments for"
            self.fail(
                f"too {many} {tag} keyword" if keyword == "version" else f"too {many} keyword:{tag}"
            )
        if keyword == "oneliner":
            self.oneliner = True
        elif keyword in ("exit", "quit"):
            self.done = True
        elif keyword == "version":
            self.result.out(f"slurm {self.sim.config.version}")

    # -- show ------------------------------------------------------------------------------

    def show(self, words: list[str]) -> None:
        """``_show_it``."""
        if len(words) < 2:
            self.fail(f"too few arguments for keyword:{words[0]}")
            return
        options = any(same(words[1], kw, 2) for kw in ("assoc_mgr", "bbstat", "dwstat"))
        if len(words) > 3 and not options:
            self.fail(f"too many arguments for keyword:{words[0]}")
            return
        word = words[1]
        name, eq, value = word.partition("=")
        val = value if eq else (words[2] if len(words) == 3 else None)
        entity = _match(word, len(name), ENTITIES)
        if entity is None:
            self.fail(f"invalid entity:{word} for keyword:{words[0]} ")
        elif entity in ("jobs", "jobid"):
            self.print_job(val)
        elif entity == "config":
            _show_config(self.sim, self.env, self.result)
        else:
            self.fail(f"{PROG}: error: show {entity} is not supported by this simulator")

    def print_job(self, text: str | None) -> None:
        """``scontrol_print_job`` (src/scontrol/info_job.c): one id, ``id_task`` or
        ``id+offset`` (the simulator has neither arrays nor heterogeneous jobs), or all."""
        controller = self.sim.controller
        job_id, array, offset = 0, None, None
        if text is not None:
            if any(char not in "0123456789_+" for char in text):
                self.fail("scontrol_print_job error: Invalid job id specified")
                return
            job_id, rest = strtol(text)
            if rest[:1] == "_":
                array, rest = strtol(rest[1:])
            if rest[:1] == "+":
                offset, rest = strtol(rest[1:])
        if not controller.available():
            self.fail(f"slurm_load_jobs error: {UNAVAILABLE}")
            return
        if job_id:
            if job_id not in controller.jobs:
                self.fail(f"slurm_load_jobs error: {INVALID_JOB_ID}")
                return
            jobs = [controller.jobs[job_id]]
        else:
            jobs = sorted(controller.jobs.values(), key=lambda j: j.seq)
        if array is not None or offset is not None:
            jobs = []
        # slurm_sprint_job_info: lines end with line_end ("\n   ", or " " for -o), the last
        # (Power=) too, then the record ends with "\n\n" (or "\n").
        line_end = " " if self.oneliner else "\n   "
        for job in jobs:
            fields = [line for line in job_fields(job, controller, self.env) if line]
            self.result.stdout += line_end.join(" ".join(line) for line in fields) + line_end
            self.result.stdout += "\n" if self.oneliner else "\n\n"
        if jobs:
            return
        if text is None:
            self.result.out("No jobs in the system")
            return
        self.exit_code = 1
        suffix = f"_{array}" if array is not None else f"+{offset}" if offset is not None else ""
        self.result.out(f"Job {job_id}{suffix} not found")

    # -- update ----------------------------------------------------------------------------

    def update(self, words: list[str]) -> None:
        """``_update_it``: the entities the words name; a job's update is simulated."""
        tags: list[str] = []
        i = 0
        while i < len(words):
            word = words[i]
            name, eq, _ = word.partition("=")
            if not eq:
                i += 1  # "Tag value": the next word is the value
            found = _match(word, len(name), UPDATE_ENTITIES)
            if found is not None:
                tags.append(found)
            i += 1
        if "JobId" in tags or "JobNAME" in tags:
            self.update_job(words)
        elif tags:
            self.fail(f"{PROG}: error: update of {tags[0]} is not supported by this simulator")
        else:
            self.fail(
                "No valid entity in update command",
                'Input line must include "NodeName", "PartitionName", "Reservation", "JobId", '
                'or "SlurmctldDebug"',
            )

    def update_job(self, words: list[str]) -> None:
        """``scontrol_update_job`` (src/scontrol/update_job.c)."""
        controller = self.sim.controller
        changes: list[tuple[str, Callable[[Job], None]]] = []
        job_ids: str | None = None
        name: str | None = None
        i = 0
        while i < len(words):
            word = words[i]
            eq = word.find("=")
            add = False
            if eq >= 0:
                size, value = eq, word[eq + 1 :]
                if size > 0 and word[eq - 1] in "+-":
                    add, size = True, size - 1
            elif same(word, "Nice", max(len(word), 2)) or same(
                word, "ResetAccrueTime", max(len(word), 3)
            ):
                self.fail(f"{PROG}: error: update of {word} is not supported by this simulator")
                return
            elif i + 1 < len(words):
                size, value = len(word), words[i + 1]
                i += 1
            else:
                self.fail(f"Invalid input: {word}", "Request aborted")
                return
            tag = _match(word, size, JOB_TAGS)
            if tag is None:  # argv[i]: the value, when it was the next word
                self.fail(f"Update of this parameter is not supported: {words[i]}")
                self.fail("Request aborted")
                return
            if tag == "JobId":
                job_ids = value
            elif tag == "Comment":
                changes.append(("comment", _with(controller.set_comment, value)))
            elif tag == "Requeue":
                number, rest = strtol(value)
                if rest or not value or not 0 <= number < 0xFFFE:  # parse_uint16
                    self.fail(f"{PROG}: error: Invalid Requeue value: {value}")
                    return
                changes.append(("requeue", _with(controller.set_requeue, number != 0)))
            elif tag in ("Name", "JobName"):
                name = value
                changes.append(("name", _with(controller.set_name, value)))
            elif tag in ("EligibleTime", "StartTime"):
                try:
                    begin = parse_time(value, controller.now)
                except TimeSpecError as error:  # parse_time printed it: no change counted
                    self.result.err(str(error))
                else:
                    changes.append(("begin", _with(controller.set_begin, begin)))
            else:
                self.fail(f"{PROG}: error: update of {tag} is not supported by this simulator")
                return
            if add:
                self.fail(f"{PROG}: error: Option {word} does not accept [+|-]= syntax")
                return
            i += 1
        if not changes:
            self.fail("No changes specified")
            return
        if job_ids is None and name is not None:
            job_ids = self._name_to_ids(name)
            if job_ids is None:
                self.exit_code = 1
                return
        if job_ids is None:
            self.fail(f"{PROG}: error: No job ID specified")
            return
        tokens = _job_ids(job_ids)
        if tokens is None:
            self.fail(f"{INVALID_JOB_ID} for job {job_ids}")
            return
        for token in tokens:
            try:
                job = self._job(token)
                _precheck(job, [change for change, _ in changes])
                for _, apply in changes:
                    apply(job)
            except SlurmError as error:
                self.fail(f"{error.text} for job {token}")

    def _name_to_ids(self, name: str) -> str | None:
        """``_job_name2id``: the ids of the jobs of that name, or None (said why)."""
        jobs = sorted(self.sim.controller.jobs.values(), key=lambda j: j.seq)
        if not jobs:
            self.result.err(f"{PROG}: error: JobName {name} not found")
            return None
        ids = [str(job.job_id) for job in jobs if job.name == name]
        if not ids:
            self.result.err(f"{PROG}: error: No jobs with name '{name}'")
            return None
        return ",".join(ids)

    def _job(self, token: str) -> Job:
        """The job a token of a checked id list names (an array task or a heterogeneous
        component names none: the simulator has neither)."""
        controller = self.sim.controller
        if not controller.available():
            raise SlurmError(UNAVAILABLE)
        if not token.isdigit():
            raise SlurmError(INVALID_JOB_ID)
        return controller.get(int(token))

    # -- requeue, hold, release ------------------------------------------------------------

    def requeue(self, words: list[str], hold: bool) -> None:
        """``requeue``/``requeuehold``: leading flags (``parse_requeue_flags``:
        ``Incomplete``, ``State=SpecialExit``), then job id lists."""
        special = False
        start = 0
        while start < len(words) and (flag := _requeue_flag(words[start])) is not None:
            special = special or flag
            start += 1
        for word in words[start:]:
            text = word
            if not hold:  # scontrol_requeue; scontrol_requeue_hold takes the word as it is
                if not text:
                    self.exit_code = 1
                    continue
                text = _strip_job_prefix(text)
            tokens = _job_ids(text)
            if tokens is None:
                self.fail(f"{INVALID_JOB_ID} for job {text}")
                continue
            for token in tokens:
                try:
                    job = self._job(token)
                    kind = HoldKind.REQUEUE if hold else None
                    self.sim.controller.requeue(job, kind, special_exit=special)
                except SlurmError as error:
                    self.fail(f"{error.text} for job {token}")

    def hold(self, op: str, word: str) -> None:
        """``scontrol_hold(op, word)``, then ``slurm_perror("slurm_suspend error")`` when it
        failed (with the last error)."""
        controller = self.sim.controller
        text = _strip_job_prefix(word)
        tokens = _job_ids(text)
        if tokens is None:
            if same(text, "Name=", 5) or same(text, "JobName=", 8):
                self.fail(f"{PROG}: error: {op} by job name is not supported by this simulator")
                return
            self.fail(f"{INVALID_JOB_ID} for job {text}", f"slurm_suspend error: {INVALID_JOB_ID}")
            return
        last: str | None = None
        for token in tokens:
            try:
                job = self._job(token)
                if same(op, "holdu", 5) or same(op, "uhold", 5):
                    controller.hold(job, HoldKind.USER)
                elif same(op, "hold", 4):
                    admin = self.sim.config.uid == 0
                    controller.hold(job, HoldKind.ADMIN if admin else HoldKind.USER)
                else:
                    controller.release(job)
            except SlurmError as error:
                self.fail(f"{error.text} for job {token}")
                last = error.text
        if last is not None:
            self.fail(f"slurm_suspend error: {last}")


def _tokens(line: str) -> list[str]:
    """``_get_command``'s words: blanks split them, except inside quotes (kept in the word)."""
    words: list[str] = []
    word = ""
    double = single = False
    for char in line:
        if not word and char.isspace():
            continue
        if char == '"':
            double = not double
        elif char == "'":
            single = not single
        elif char.isspace() and not (double or single):
            words.append(word)
            word, double, single = "", False, False
            continue
        word += char
    if word:
        words.append(word)
    return words


def _strip_job_prefix(text: str) -> str:
    """What ``scontrol_hold`` and ``scontrol_requeue`` strip: ``JobId=``, then ``Job=``."""
    for prefix in ("jobid=", "job="):
        if same(text, prefix, len(prefix)):
            text = text[len(prefix) :]
    return text


def _requeue_flag(word: str) -> bool | None:
    """``parse_requeue_flags``: None for no flag, else whether it asks for SpecialExit."""
    if "incomplete".startswith(word.lower()):
        return False
    if same(word, "state=", 6) and (same(word[6:], "specialexit", 11) or same(word[6:], "se", 2)):
        return True
    return None


def _job_ids(text: str) -> list[str] | None:
    """``_is_job_id`` then ``_next_job_id`` (src/scontrol/update_job.c): the tokens of a list
    of ids (commas or blanks between; ``_`` and ``+`` once each, ``-`` only in brackets or
    after ``_``), or None when it is no such list."""
    plus = under = False
    depth = 0
    tokens = [""]
    for char in text:
        if char == "+":
            if plus:
                return None
            plus = True
        elif char == "_":
            if under:
                return None
            under = True
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "-":
            if depth == 0 and not under:
                return None
        elif char in ", ":
            if depth == 0:
                tokens.append("")
                plus = under = False
                continue
        elif not "0" <= char <= "9":
            return None
        tokens[-1] += char
    if depth != 0:
        return None
    return [token for token in tokens if token]


def job_fields(job: Job, controller: Controller, env: Mapping[str, str]) -> list[list[str]]:
    """``scontrol show job``'s lines of ``Key=Value`` pairs."""
    sub = job.submission
    now = controller.now
    config = controller.config

    def when(epoch: int, absent: str = "Unknown") -> str:
        return format_time(epoch, env) if epoch else absent

    if job.state is JobState.PENDING:
        start = when(job.begin_time if job.begin_time > now else 0)
        end = "Unknown"
    else:
        start = when(job.start_time)
        end = when(job.end_time)
    run = max(0, (job.end_time or now) - job.start_time) if job.start_time else 0
    limit = "UNLIMITED" if job.time_limit is None else _duration(job.time_limit * 60)
    stdout = expand_path(sub.stdout or "slurm-%j.out", job, sub.work_dir)
    stderr = expand_path(sub.stderr, job, sub.work_dir) if sub.stderr else stdout
    exit_code = f"{job.exit_code}:{job.exit_signal}"
    return [
        [f"JobId={job.job_id}", f"JobName={job.name}"],
        [f"UserId={job.user}({job.uid})", f"GroupId={job.user}({job.uid})", "MCS_label=N/A"],
        [f"Priority={job.priority}", "Nice=0", f"Account={job.account}", "QOS=normal"],
        [f"JobState={job.state}", f"Reason={job.reason.replace(' ', '_')}", "Dependency=(null)"],
        [
            f"Requeue={int(job.requeue)}",
            f"Restarts={job.restart_count}",
            "BatchFlag=1",
            "Reboot=0",
            f"ExitCode={exit_code}",
        ],
        [f"RunTime={_duration(run)}", f"TimeLimit={limit}", "TimeMin=N/A"],
        [f"SubmitTime={when(job.submit_time)}", f"EligibleTime={when(job.begin_time)}"],
        [f"AccrueTime={when(job.begin_time if job.begin_time and not job.held else 0)}"],
        [f"StartTime={start}", f"EndTime={end}", "Deadline=N/A"],
        [
            "SuspendTime=None",
            "SecsPreSuspend=0",
            f"LastSchedEval={when(job.last_eval or job.submit_time)}",
            "Scheduler=Main",
        ],
        [
            f"Partition={job.partition}",
            f"AllocNode:Sid={config.alloc_node or config.submit_host}:1",
        ],
        ["ReqNodeList=(null)", "ExcNodeList=(null)"],
        [f"NodeList={job.nodelist}"],  # empty while pending, as 22.05 prints it
        [f"BatchHost={job.nodelist.split(',')[0]}"] if job.nodelist else [],
        [
            f"NumNodes={sub.nodes}",
            f"NumCPUs={job.cpus}",
            f"NumTasks={sub.ntasks or sub.nodes * (sub.ntasks_per_node or 1)}",
            "CPUs/Task=1",
            "ReqB:S:C:T=0:0:*:*",
        ],
        [f"TRES={_tres(job, config.pending_mem)}"],
        ["Socks/Node=*", f"NtasksPerN:B:S:C={sub.ntasks_per_node or 0}:0:*:*", "CoreSpec=*"],
        ["MinCPUsNode=1", "MinMemoryNode=0", "MinTmpDiskNode=0"],
        ["Features=(null)", "DelayBoot=00:00:00"],
        ["OverSubscribe=OK", "Contiguous=0", "Licenses=(null)", "Network=(null)"],
        [f"Command={_command(job)}"],
        [f"WorkDir={sub.work_dir}"],
        [f"Comment={job.comment} "] if job.comment else [],
        [f"StdErr={stderr}"],
        ["StdIn=/dev/null"],
        [f"StdOut={stdout}"],
        ["Power="],
    ]


def _tres(job: Job, pending_mem: str | None) -> str:
    """What the job asked for while it is pending (with the memory slurmctld gives a job
    that asked for none, when the configuration knows it), what it holds once it runs."""
    mem = f"mem={pending_mem}," if pending_mem and job.state is JobState.PENDING else ""
    return f"cpu={job.cpus},{mem}node={job.submission.nodes},billing={job.cpus}"


def _command(job: Job) -> str:
    name = job.submission.environment.get("__SCRIPT_NAME__")
    if name is None:
        return "(null)"
    return f"{job.submission.work_dir}/{name}"


def expand_path(pattern: str | None, job: Job, work_dir: str) -> str:
    """An output path with sbatch's ``%`` patterns filled in, made absolute."""
    if pattern is None:
        return ""
    replacements = {
        "j": str(job.job_id),
        "x": job.name,
        "u": job.user,
        "N": (job.nodelist or "").split(",")[0],
        "%": "%",
        "A": str(job.job_id),
        "a": "4294967294",
    }
    out = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern) and pattern[i + 1] in replacements:
            out.append(replacements[pattern[i + 1]])
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    path = "".join(out)
    return path if path.startswith("/") else f"{work_dir.rstrip('/')}/{path}"


def _duration(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def _show_config(sim: SlurmSim, env: Mapping[str, str], result: Output) -> None:
    config = sim.config
    values = {
        "AccountingStorageType": "accounting_storage/slurmdbd"
        if config.accounting
        else "accounting_storage/none",
        "AccountingStoreFlags": "job_comment" if config.job_comment else "(null)",
        "AuthInfo": f"cred_expire={config.requeue_delay}"
        if config.requeue_delay != 120
        else "(null)",
        "ClusterName": config.cluster_name,
        "FirstJobId": str(config.first_job_id),
        "JobRequeue": str(int(config.job_requeue)),
        "KillWait": f"{config.kill_wait} sec",
        "MaxJobCount": str(config.effective_max_job_count),
        "MaxJobId": str(config.max_job_id),
        "MinJobAge": f"{config.effective_min_job_age} sec",
        "PreemptMode": "OFF",
        "PriorityType": "priority/basic",
        "SchedulerParameters": "(null)",
        "SchedulerType": "sched/backfill",
        "SLURM_VERSION": config.version,
    }
    result.out(f"Configuration data as of {format_time(sim.controller.now, env)}")
    for key in sorted(values, key=str.lower):
        result.out(f"{key:<23} = {values[key]}")
    result.out("")


def _with(setter: Callable[[Job, T], None], value: T) -> Callable[[Job], None]:
    """``setter`` with its value bound, applied to a job later."""

    def apply(job: Job) -> None:
        setter(job, value)

    return apply


def _precheck(job: Job, changes: list[str]) -> None:
    """One update RPC either lands whole or not at all. A finished job takes no change at all
    (22.05 ``_update_job``: ``IS_JOB_FINISHED`` is ESLURM_JOB_FINISHED before any field is
    looked at; a real Slurm answers ``Requeue=1`` on a finished job so, transcript of stop 23)."""
    if job.state.finished:
        raise SlurmError(ALREADY_DONE)
    if "begin" in changes and job.state is not JobState.PENDING:
        raise SlurmError(NOT_PENDING)
