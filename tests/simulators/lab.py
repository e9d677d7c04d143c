"""Replaying the real cluster's transcripts (tests/fixtures/slurm-lab/) on SlurmSim.

A :class:`Lab` is a simulator whose clock starts on the lab's day, with a tiny shell that
understands the command lines of the transcripts: ``;`` lists (the exit status is the last
command's), ``$(...)``, pipes into ``grep -o``/``grep -E``/``head -N``, ``date +FMT`` and
``echo``. Output is merged as a terminal shows a piped command's: each command's stderr
(unbuffered) before its stdout (flushed at exit)."""

from __future__ import annotations

import dataclasses
import re
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dispatch_core import VirtualClock
from simulators.slurm import SlurmConfig, SlurmSim

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm-lab"
DAY = "2026-11-30"
JOB_SH = "#!/bin/bash\n# the lab's job.sh (slurm-lab §1.4): sleeps $1 seconds\nsleep $1\n"


def epoch(clock: str) -> int:
    """``HH:MM:SS`` on the lab's day, as epoch seconds (the lab ran in UTC)."""
    return int(datetime.fromisoformat(f"{DAY}T{clock}+00:00").timestamp())


@dataclass(frozen=True)
class Exchange:
    command: str
    output: str  # with the closing "[rc=N]" line


def transcript(section: str) -> list[Exchange]:
    """The ``$`` exchanges of one subsection's fixture, in order."""
    text = (FIXTURES / f"{section}.txt").read_text()
    exchanges: list[Exchange] = []
    command: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        if command is None:
            if line.startswith("$ "):
                command, body = line[2:], []
            continue
        body.append(line)
        if re.search(r"\[rc=\d+\]$", line):
            exchanges.append(Exchange(command, "\n".join(body) + "\n"))
            command = None
    return exchanges


class Lab:
    """One simulated lab cluster and the transcript being replayed on it."""

    def __init__(self, tmp_path: Path, section: str, start: str, **config: object) -> None:
        settings: dict[str, object] = {"max_job_id": 20, "min_job_age": 2, **config}
        self.sim = SlurmSim(SlurmConfig(**settings), clock=VirtualClock(epoch(start)))  # type: ignore[arg-type]
        self.scratch = tmp_path
        (tmp_path / "out").mkdir(exist_ok=True)
        self.job_sh = tmp_path / "job.sh"
        self.job_sh.write_text(JOB_SH)
        self.exchanges = transcript(section)
        self.used: set[int] = set()

    # -- time and scheduling ---------------------------------------------------------------------

    def at(self, clock: str) -> None:
        """Let the cluster's time run to ``HH:MM:SS``."""
        target = epoch(clock)
        now = int(self.sim.clock.now())
        assert target >= now, f"{clock} is in the past"
        self.sim.advance(target - now)

    def latency(self, seconds: int) -> None:
        """The scheduler's latency for the next submissions (the lab's varied, 0 to 2 s)."""
        config = dataclasses.replace(self.sim.config, sched_latency=seconds)
        self.sim.config = config
        self.sim.controller.config = config

    # -- the transcript --------------------------------------------------------------------------

    def exchange(self, command: str, nth: int = 0) -> Exchange:
        """The ``nth`` exchange whose command line is ``command``."""
        found = [i for i, ex in enumerate(self.exchanges) if ex.command == command]
        assert len(found) > nth, f"no exchange {command!r} (#{nth}) in the fixture"
        self.used.add(found[nth])
        return self.exchanges[found[nth]]

    def check(self, command: str, nth: int = 0) -> None:
        """Run the transcript's ``command`` and compare its output and status byte for byte."""
        expected = self.exchange(command, nth).output
        got = self.sh(command)
        assert got == expected, f"\n$ {command}\n--- simulator\n{got}--- lab\n{expected}"

    def check_all(self, *commands: str) -> None:
        for command in commands:
            self.check(command)

    # -- the shell -------------------------------------------------------------------------------

    def sh(self, line: str) -> str:
        """Run a transcript command line; its merged output and a closing ``[rc=N]`` line."""
        out, rc = "", 0
        for command in _split(line, ";"):
            text, rc = self._pipeline(command)
            out += text
        return out + f"[rc={rc}]\n"

    def _pipeline(self, command: str) -> tuple[str, int]:
        stages = _split(command, "|")
        err, out, rc = self._simple(stages[0])
        for stage in stages[1:]:
            out, rc = _filter(stage, out)
        return err + out, rc

    def _simple(self, command: str) -> tuple[str, str, int]:
        command = re.sub(r"\$\(([^)]*)\)", lambda m: self._capture(m.group(1)), command)
        command = command.replace("$SCRATCH", str(self.scratch))
        argv = shlex.split(command)
        argv = [str(self.job_sh) if a == "job.sh" else a for a in argv]
        if argv[0] == "date":
            return "", _strftime(self.sim.controller.now, argv[1][1:]) + "\n", 0
        if argv[0] == "echo":
            return "", " ".join(argv[1:]) + "\n", 0
        done = self.sim.run(argv)
        return done.stderr, done.stdout, done.returncode

    def _capture(self, command: str) -> str:
        _, out, _ = self._simple(command)
        return out.rstrip("\n")


def _split(line: str, separator: str) -> list[str]:
    """``line`` cut at ``separator`` outside quotes."""
    parts, current, quote = [], "", ""
    for char in line:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == separator:
            parts.append(current.strip())
            current = ""
            continue
        current += char
    parts.append(current.strip())
    return parts


def _filter(stage: str, text: str) -> tuple[str, int]:
    argv = shlex.split(stage)
    lines = text.splitlines()
    if argv[0] == "head":
        return "".join(f"{x}\n" for x in lines[: int(argv[1].lstrip("-"))]), 0
    if argv[:2] == ["grep", "-o"]:
        found = [m.group(0) for x in lines for m in re.finditer(argv[2], x)]
        return "".join(f"{x}\n" for x in found), 0 if found else 1
    if argv[:2] == ["grep", "-E"]:
        found = [x for x in lines if re.search(argv[2], x)]
        return "".join(f"{x}\n" for x in found), 0 if found else 1
    raise AssertionError(f"the lab shell does not know {stage!r}")


def _strftime(now: int, fmt: str) -> str:
    return datetime.fromtimestamp(now, UTC).strftime(fmt.replace("%T", "%H:%M:%S"))
