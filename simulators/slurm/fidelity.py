"""Fidelity: the same scripted scenarios on a real Slurm and on :class:`SlurmSim`, compared.

A :class:`Scenario` is a named list of steps:

- :func:`run` ``(argv, stdin=None, capture=None)``: one Slurm command (sbatch, squeue, sacct,
  scancel, scontrol). Its argv and stdin may hold ``{A}`` placeholders, bound to the id an
  earlier ``sbatch --parsable`` step captured (``capture="A"``), and ``{START}``, the scenario's
  start as an ISO time (for ``sacct -S``). Every command runs as ``env TZ=UTC LC_ALL=C
  SLURM_TIME_FORMAT=%s <argv>`` (``time_format=`` changes the last), as the Slurm adapter runs
  its commands;
- :func:`runs` ``(A, seconds)``: how long job A's script runs. The real job's script was chosen
  by the scenario when it was submitted (``sleep N``); the simulator is told with
  ``SlurmSim.run_for`` (None: it runs until cancelled);
- :func:`wait_state` ``(A, states, bound)``: poll ``squeue -t all -j A`` until A is in one of
  ``states`` (``GONE``: purged) or ``bound`` seconds have passed. A real cluster is polled every
  0.2 s of wall time, the simulator every virtual second;
- :func:`sleep` ``(seconds)``: wall time on a real cluster, virtual time on the simulator.

Commands go to a :class:`Target`: :class:`RealSlurm` (this host's commands, as subprocesses)
or :class:`SimSlurm` (a SlurmSim whose :class:`~simulators.slurm.SlurmConfig` is derived from
the real cluster's ``scontrol show config`` and ``sinfo``, see :class:`ClusterInfo`).

A scenario run gives a :class:`Transcript`: per step the argv, stdin, exit status, stdout,
stderr and the time it started. :func:`replay_on_sim` runs a real transcript's steps on a
fresh simulator whose clock starts at the real run's start, whose next job id is the real one
(so ids compare literally, wrap included), and whose clock is moved to each step's real start
time before the step. :func:`compare` normalises both transcripts (:func:`normalise`: times
become ``T+n`` relative to the start, durations ``E+n``, host and node names, scratch paths
and pids placeholders; ids stay literal while both sides captured the same ones) and lists
every :class:`Difference`; times within the scenario's tolerance (2 s) count as equal, because
the real scheduler starts a job 0-3 s after it is told and the simulator after exactly 1 s.
:data:`KNOWN_DIFFERENCES` explains the differences that remain on purpose; :func:`report`
writes the markdown report, explained and unexplained alike.

Command line (``python -m simulators.slurm.fidelity --help``): ``record`` runs the scenarios on
the real cluster and writes ``tests/fixtures/slurm-real/<scenario>.<mode>.json`` (raw output;
normalised at compare time); ``compare`` runs them on the real cluster and on the simulator and
prints the report (exit status 1 on an unexplained difference); ``replay`` compares the recorded
fixtures with the simulator (no Slurm needed); ``list`` names the scenarios.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import fcntl
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Protocol

from dispatch_core import Clock, VirtualClock, WallClock
from dispatch_core.clock import pause
from simulators.slurm.config import SlurmConfig
from simulators.slurm.sim import SlurmSim

FORMAT_VERSION: Final = 1
FIXTURES: Final = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "slurm-real"
"""Where ``record`` writes and the golden tests read (``<scenario>.<mode>.json``)."""
DEFAULT_LOCK: Final = "/tmp/slurm-cluster.lock"
MODES: Final = ("comment", "nocomment")
GONE: Final = "GONE"
"""The pseudo-state of :func:`wait_state` for a job squeue no longer knows (purged)."""
LONG_RUN: Final = 300
"""What a job runs that :func:`runs` gives no end: ``sleep 300``, cancelled by the scenario."""
NAME_PREFIX: Final = "fid-"
"""Every job a scenario or the runner submits is named ``fid-...``; the runner cancels only
those."""
_PLACEHOLDER: Final = re.compile(r"\{([A-Z][A-Za-z0-9_]*)\}")


class FidelityError(Exception):
    """A scenario cannot run: no Slurm, a busy cluster, a malformed fixture."""


class NoSlurm(FidelityError):
    """No real Slurm answers on this host."""


class ClusterBusy(FidelityError):
    """Other jobs stayed in squeue: a scenario needs the cluster to itself."""


# -- the scenario model -------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One Slurm command; ``capture`` binds the id an ``sbatch --parsable`` printed."""

    argv: tuple[str, ...]
    stdin: str | None = None
    capture: str | None = None
    time_format: str = "%s"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "run",
            "argv": list(self.argv),
            "stdin": self.stdin,
            "capture": self.capture,
            "time_format": self.time_format,
        }


@dataclass(frozen=True)
class Runs:
    """Job ``job``'s script runs ``seconds`` once started (None: until it is cancelled)."""

    job: str
    seconds: int | None

    def to_json(self) -> dict[str, Any]:
        return {"kind": "runs", "job": self.job, "seconds": self.seconds}


@dataclass(frozen=True)
class WaitState:
    """Poll squeue until job ``job`` is in one of ``states`` (or ``bound`` seconds pass)."""

    job: str
    states: tuple[str, ...]
    bound: float = 30.0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "wait_state",
            "job": self.job,
            "states": list(self.states),
            "bound": self.bound,
        }


@dataclass(frozen=True)
class Sleep:
    """Let ``seconds`` pass."""

    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"kind": "sleep", "seconds": self.seconds}


Step = Run | Runs | WaitState | Sleep


def run(
    *argv: str, stdin: str | None = None, capture: str | None = None, time_format: str = "%s"
) -> Run:
    """A command step (see :class:`Run`)."""
    if not argv:
        raise ValueError("a run step needs a command")
    return Run(tuple(argv), stdin, capture, time_format)


def runs(job: str, seconds: int | None) -> Runs:
    return Runs(job, seconds)


def wait_state(job: str, states: str | Sequence[str], bound: float = 30.0) -> WaitState:
    wanted = (states,) if isinstance(states, str) else tuple(states)
    return WaitState(job, wanted, bound)


def sleep(seconds: float) -> Sleep:
    return Sleep(seconds)


def step_from_json(data: Mapping[str, Any]) -> Step:
    kind = data.get("kind")
    if kind == "run":
        return Run(
            tuple(data["argv"]),
            data.get("stdin"),
            data.get("capture"),
            data.get("time_format", "%s"),
        )
    if kind == "runs":
        return Runs(data["job"], data["seconds"])
    if kind == "wait_state":
        return WaitState(data["job"], tuple(data["states"]), float(data["bound"]))
    if kind == "sleep":
        return Sleep(float(data["seconds"]))
    raise FidelityError(f"unknown step kind {kind!r}")


_TEST_ONLY: Final = re.compile(r"^sbatch: Job (\d+) to start at ", re.MULTILINE)
"""The line ``sbatch --test-only`` answers with (``src/api/allocate.c``, slurm_job_will_run)."""


def script(seconds: int | None) -> str:
    """The batch script of a scenario's job: ``sleep N`` (or :data:`LONG_RUN`)."""
    return f"#!/bin/sh\nsleep {LONG_RUN if seconds is None else seconds}\n"


def submit(
    label: str, name: str, *options: str, seconds: int | None = None, hold: bool = False
) -> list[Step]:
    """``sbatch --parsable`` of a ``sleep`` job named ``name`` (output to /dev/null), its id
    bound to ``label``, and the matching :func:`runs` step."""
    if not name.startswith(NAME_PREFIX):
        raise ValueError(f"scenario jobs are named {NAME_PREFIX}...: {name!r}")
    argv = ["sbatch", "--parsable", f"--job-name={name}", "--output=/dev/null", *options]
    if hold:
        argv.append("--hold")
    return [run(*argv, stdin=script(seconds), capture=label), runs(label, seconds)]


@dataclass(frozen=True)
class Scenario:
    """A named, scripted exchange with a Slurm cluster.

    ``build`` gives the steps for a cluster (most ignore it); ``job_comment`` is the
    accounting mode the scenario needs (None: either, and it is recorded in both, or in
    one of them when ``mode_free``);
    ``requires`` returns why a cluster cannot run it (None: it can); ``start_id`` asks the
    runner to drive the real id counter there first (unrecorded filler jobs)."""

    name: str
    description: str
    build: Callable[[ClusterInfo], Sequence[Step]]
    job_comment: bool | None = None
    start_id: Callable[[ClusterInfo], int | None] | None = None
    requires: Callable[[ClusterInfo], str | None] | None = None
    tolerance: int = 2
    mode_free: bool = False

    def steps(self, info: ClusterInfo) -> list[Step]:
        return list(self.build(info))

    def skip_reason(self, info: ClusterInfo) -> str | None:
        if self.job_comment is not None and self.job_comment != info.job_comment:
            want = "with" if self.job_comment else "without"
            switch = "" if self.job_comment else " --no-job-comment"
            return (
                f"needs AccountingStoreFlags {want} job_comment; the cluster is in "
                f"{info.mode} mode (switch with ci/slurm-up.sh --cred-expire 5{switch})"
            )
        return self.requires(info) if self.requires is not None else None

    def modes(self) -> tuple[str, ...]:
        if self.job_comment is None:
            return MODES
        return ("comment",) if self.job_comment else ("nocomment",)


# -- the cluster --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterInfo:
    """What the simulator must know of the real cluster, from ``scontrol show config``,
    ``sinfo`` and ``sacctmgr``."""

    cluster_name: str = "lab"
    first_job_id: int = 1
    max_job_id: int = 20
    max_job_count: int = 20
    min_job_age: int = 2
    job_comment: bool = True
    job_requeue: bool = True
    cred_expire: int = 120
    accounting: bool = True
    nodes: tuple[str, ...] = ("vm",)
    cpus_per_node: int = 2
    partition: str = "debug"
    partitions: tuple[str, ...] = ()
    user: str = "root"
    uid: int = 0
    account: str = "lab"
    host: str = "vm"
    kill_wait: int = 30
    version: str = "22.05.8"
    alloc_node: str | None = None
    pending_mem: str | None = None
    sched_interval: int = 60

    @property
    def mode(self) -> str:
        return "comment" if self.job_comment else "nocomment"

    @property
    def id_count(self) -> int:
        """How many ids slurmctld hands out: FirstJobId .. MaxJobId - 1."""
        return self.max_job_id - self.first_job_id

    def next_id(self, job_id: int) -> int:
        """The id slurmctld tries after ``job_id``."""
        return job_id + 1 if job_id + 1 < self.max_job_id else self.first_job_id

    def sim_config(self) -> SlurmConfig:
        return SlurmConfig(
            cluster_name=self.cluster_name,
            first_job_id=self.first_job_id,
            max_job_id=self.max_job_id,
            max_job_count=self.max_job_count,
            min_job_age=self.min_job_age,
            job_comment=self.job_comment,
            job_requeue=self.job_requeue,
            requeue_delay=self.cred_expire,
            accounting=self.accounting,
            nodes=self.nodes,
            cpus_per_node=self.cpus_per_node,
            partition=self.partition,
            partitions=self.partitions if len(self.partitions) > 1 else (),
            user=self.user,
            uid=self.uid,
            account=self.account,
            submit_host=self.host,
            alloc_node=self.alloc_node,
            pending_mem=self.pending_mem,
            sched_interval=self.sched_interval,
            kill_wait=self.kill_wait,
            version=self.version,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            item.name: list(value)
            if isinstance(value := getattr(self, item.name), tuple)
            else value
            for item in dataclasses.fields(self)
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterInfo:
        known = {item.name for item in dataclasses.fields(cls)}
        values: dict[str, Any] = {
            key: tuple(value) if isinstance(value, list) else value
            for key, value in data.items()
            if key in known
        }
        return cls(**values)

    @classmethod
    def parse(
        cls,
        config_text: str,
        sinfo_text: str,
        *,
        user: str,
        uid: int,
        account: str | None,
        host: str,
    ) -> ClusterInfo:
        """From ``scontrol show config`` and ``sinfo -h -N -o '%N|%c|%P'``."""
        config: dict[str, str] = {}
        for line in config_text.splitlines():
            key, sep, value = line.partition(" = ")
            if sep:
                config[key.strip()] = value.strip()
        if not config:
            raise FidelityError("scontrol show config printed no configuration")

        def number(key: str, default: int) -> int:
            words = config.get(key, "").split()
            return int(words[0]) if words and words[0].isdigit() else default

        cred = re.search(r"cred_expire=(\d+)", config.get("AuthInfo", ""))
        interval = re.search(r"\bsched_interval=(\d+)", config.get("SchedulerParameters", ""))
        nodes: list[str] = []
        cpus: dict[str, int] = {}
        partitions: list[str] = []
        default_partition: str | None = None
        for line in sinfo_text.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 3:
                continue
            node, count, partition = parts
            if node not in cpus:
                nodes.append(node)
                cpus[node] = int(count) if count.isdigit() else 1
            name = partition.rstrip("*")
            if name not in partitions:
                partitions.append(name)
            if partition.endswith("*"):
                default_partition = name
        if not nodes:
            raise FidelityError("sinfo listed no nodes")
        flags = config.get("AccountingStoreFlags", "")
        storage = config.get("AccountingStorageType", "accounting_storage/slurmdbd")
        return cls(
            cluster_name=config.get("ClusterName", "lab"),
            first_job_id=number("FirstJobId", 1),
            max_job_id=number("MaxJobId", 67_043_328),
            max_job_count=number("MaxJobCount", 10_000),
            min_job_age=number("MinJobAge", 300),
            job_comment="job_comment" in flags.split(","),
            job_requeue=config.get("JobRequeue", "1") == "1",
            cred_expire=int(cred.group(1)) if cred else 120,
            accounting=storage != "accounting_storage/none",
            nodes=tuple(nodes),
            cpus_per_node=min(cpus.values()),
            partition=default_partition or partitions[0],
            partitions=tuple(partitions),
            user=user,
            uid=uid,
            account=account or "lab",
            host=host,
            kill_wait=number("KillWait", 30),
            version=config.get("SLURM_VERSION", "22.05.8"),
            sched_interval=int(interval.group(1)) if interval else 60,
        )


@dataclass(frozen=True, order=True)
class Foreign:
    """A job of someone else that was active (pending or running) when a scenario started;
    the simulator gets a stand-in with the same id, name, CPUs and nodes (held unless it
    was running), so ids, resources and listings stay comparable."""

    job_id: int
    name: str
    state: str
    cpus: int = 1
    nodes: int = 1

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Foreign:
        return cls(int(data["job_id"]), data["name"], data["state"], data["cpus"], data["nodes"])


ACTIVE: Final = frozenset(
    {"PENDING", "RUNNING", "SUSPENDED", "CONFIGURING", "RESIZING", "REQUEUED", "SPECIAL_EXIT"}
)
"""States of a job that will not leave squeue on its own soon."""


# -- targets ------------------------------------------------------------------------------------


SECOND_MARGIN: Final = 0.2
"""How much of a second a real command needs at most to be answered in the second it started
in (sbatch, squeue and scontrol take 5-10 ms here, sacct about 90 ms)."""


class Target(Protocol):
    """Where a scenario's commands go."""

    name: str
    scratch: str
    poll_interval: float

    def command(
        self, argv: Sequence[str], stdin: str | None
    ) -> subprocess.CompletedProcess[str]: ...

    def runs(self, job_id: str, seconds: int | None) -> None: ...

    def now(self) -> float: ...

    def pause(self, seconds: float) -> None: ...

    def align(self, when: float) -> None:
        """Let the target's time reach ``when`` (epoch) if it is not there yet."""
        ...

    def steady(self) -> None:
        """Before a command: let it start early enough in a second to be answered in that
        second (slurmctld stamps what it does with whole seconds)."""
        ...


class RealSlurm:
    """This host's Slurm commands, run as subprocesses (no shell) in a scratch directory."""

    name = "real"
    poll_interval = 0.2

    def __init__(
        self, timeout: float = 60.0, busy_bound: float = 180.0, clock: Clock | None = None
    ) -> None:
        self.timeout = timeout
        self.busy_bound = busy_bound
        self.clock: Clock = clock if clock is not None else WallClock()
        self.scratch = tempfile.mkdtemp(prefix="fid-")
        self._info: ClusterInfo | None = None
        self.next_priority: int | None = None
        self.alloc_node: str | None = None
        self.pending_mem: str | None = None
        self.foreign: tuple[Foreign, ...] = ()

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- Target -----------------------------------------------------------------------------------

    def command(self, argv: Sequence[str], stdin: str | None) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                list(argv),
                input=stdin if stdin is not None else "",
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
                cwd=self.scratch,
            )
        except FileNotFoundError as error:
            raise NoSlurm(f"no Slurm: {error.filename or argv[0]} is not on PATH") from None
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(
                list(argv), 124, "", f"fidelity: no answer within {self.timeout:g} s\n"
            )

    def runs(self, job_id: str, seconds: int | None) -> None:
        """Nothing to tell: the script the scenario submitted decides."""

    def now(self) -> float:
        return self.clock.now()

    def pause(self, seconds: float) -> None:
        pause(self.clock, seconds)

    def align(self, when: float) -> None:
        """Real time needs no help."""

    def steady(self) -> None:
        """Wait for the next second when less than :data:`SECOND_MARGIN` of this one is left.
        A replay puts each command at the second it started in; one that slurmctld answered in
        the next second (a cancel, say) would order jobs by their end time differently on the
        two sides: "names" once listed 8 before 6 on the real cluster and 6 before 8 on the
        simulator, the cancel of 8 having crossed a second."""
        left = 1.0 - self.now() % 1.0
        if left < SECOND_MARGIN:
            self.pause(left + 0.005)

    # -- the cluster ------------------------------------------------------------------------------

    def info(self) -> ClusterInfo:
        """The cluster's configuration (raises :class:`NoSlurm` when none answers)."""
        if self._info is None:
            if shutil.which("scontrol") is None or shutil.which("sbatch") is None:
                raise NoSlurm("no Slurm: scontrol/sbatch are not on PATH")
            shown = self.command(["scontrol", "show", "config"], None)
            if shown.returncode != 0:
                why = (shown.stderr.strip() or shown.stdout.strip() or "no output").splitlines()
                raise NoSlurm(f"no Slurm: scontrol show config failed: {why[0]}")
            nodes = self.command(["sinfo", "-h", "-N", "-o", "%N|%c|%P"], None)
            if nodes.returncode != 0:
                raise NoSlurm(f"no Slurm: sinfo failed: {nodes.stderr.strip()}")
            user = _user()
            account = self.command(
                ["sacctmgr", "-n", "-P", "show", "user", user, "format=DefaultAccount"], None
            )
            self._info = ClusterInfo.parse(
                shown.stdout,
                nodes.stdout,
                user=user,
                uid=os.getuid(),
                account=account.stdout.strip().splitlines()[0] if account.stdout.strip() else None,
                host=socket.gethostname().split(".", 1)[0],
            )
        return self._info

    def cleanup(self) -> None:
        """Cancel this runner's jobs (named ``fid-...``) that are still in squeue."""
        mine = [str(r.job_id) for r in self.listing() if r.name.startswith(NAME_PREFIX)]
        if mine:
            self.command(["scancel", *mine], None)

    def listing(self) -> list[Foreign]:
        """Every job in slurmctld's memory, as ``squeue -t all`` lists it."""
        done = self.command(["squeue", "-t", "all", "-h", "-o", "%i|%T|%C|%D|%j"], None)
        if done.returncode != 0:
            raise FidelityError(f"squeue failed: {done.stderr.strip()}")
        rows = []
        for line in done.stdout.splitlines():
            parts = line.split("|", 4)
            if len(parts) == 5 and parts[0].isdigit():
                job_id, state, cpus, nodes, name = parts
                rows.append(
                    Foreign(
                        int(job_id),
                        name,
                        state,
                        int(cpus) if cpus.isdigit() else 1,
                        int(nodes) if nodes.isdigit() else 1,
                    )
                )
        return rows

    def settle(self, quiet: float = 3.0) -> tuple[Foreign, ...]:
        """Until squeue lists no job of this runner and no finished job (this runner's are
        cancelled first), and the other jobs (active ones of someone else) have stayed the
        same for ``quiet`` seconds; returns those others. :class:`ClusterBusy` after
        :attr:`busy_bound` seconds."""
        deadline = self.now() + self.busy_bound
        cancelled = False
        seen: tuple[Foreign, ...] | None = None
        since = self.now()
        while True:
            rows = self.listing()
            mine = [r for r in rows if r.name.startswith(NAME_PREFIX)]
            if mine and not cancelled:
                self.cleanup()
                cancelled = True
            others = tuple(sorted(r for r in rows if r not in mine))
            if not mine and all(r.state in ACTIVE for r in others):
                if not others:
                    return others
                if others != seen:
                    seen, since = others, self.now()
                elif self.now() - since >= quiet:
                    return others
            if self.now() > deadline:
                listed = ", ".join(f"{r.job_id} {r.name} {r.state}" for r in rows[:5])
                raise ClusterBusy(
                    f"the cluster is busy: squeue -t all still lists {listed} after "
                    f"{self.busy_bound:g} s"
                )
            self.pause(0.5)

    def _submit(self, name: str, *options: str) -> int:
        argv = ["sbatch", "--parsable", f"--job-name={name}", "--output=/dev/null", *options]
        done = self.command(argv, script(1))
        if done.returncode != 0:
            raise FidelityError(f"sbatch of {name} failed: {done.stderr.strip()}")
        return int(done.stdout.strip().split(";", 1)[0])

    def take_id(self) -> int:
        """The id slurmctld hands out next, taken: ``sbatch --test-only --hold`` makes a job
        record (so the id is used up), answers its id and drops the record. No job is left
        to cancel or purge, and a held job takes no priority from priority/basic."""
        argv = ["sbatch", "--test-only", "--hold", f"--job-name={NAME_PREFIX}counter"]
        done = self.command([*argv, "--output=/dev/null"], script(1))
        taken = _TEST_ONLY.search(done.stderr)
        if done.returncode != 0 or taken is None:
            why = done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}"
            raise FidelityError(f"sbatch --test-only failed: {why}")
        return int(taken.group(1))

    def prepare(self, start_id: int | None) -> int:
        """An empty cluster whose next job id is known (and is ``start_id`` when given).
        A probe job (pending on a begin time an hour away) shows the priority priority/basic
        hands out next (:attr:`next_priority`), the name slurmctld gives this client
        (:attr:`alloc_node`) and a pending job's memory; it is cancelled and purged. The id
        counter is read last, right before the scenario's first step, by :meth:`take_id`,
        which also drives it to ``start_id``: nothing waits between the reading and the
        scenario, so an id that another client takes meanwhile (a submission slurmctld
        refuses after it made the job record takes one too) cannot shift the scenario's."""
        info = self.info()
        self.settle()
        probe = self._submit(f"{NAME_PREFIX}probe", "--begin=now+1hour")
        shown = self.command(["scontrol", "show", "job", "-o", str(probe)], None).stdout
        self.command(["scancel", str(probe)], None)
        priority = re.search(r"\bPriority=(\d+)", shown)
        self.next_priority = int(priority.group(1)) - 1 if priority else None
        node = re.search(r"\bAllocNode:Sid=([^:\s]+):", shown)
        self.alloc_node = node.group(1) if node else None
        mem = re.search(r"\bTRES=[^ ]*\bmem=([^, ]+)", shown)
        self.pending_mem = mem.group(1) if mem else None
        self.foreign = self.settle()
        taken = self.take_id()
        if start_id is not None:
            if not info.first_job_id <= start_id < info.max_job_id:
                raise FidelityError(f"start id {start_id} is outside FirstJobId..MaxJobId-1")
            for _ in range(info.id_count + 1):
                if info.next_id(taken) == start_id:
                    break
                taken = self.take_id()
            else:
                raise FidelityError(f"could not drive the job id counter to {start_id}")
        return info.next_id(taken)


class SimSlurm:
    """A :class:`SlurmSim` as a target: polls and sleeps move its virtual clock."""

    name = "sim"
    poll_interval = 1.0

    def __init__(self, sim: SlurmSim, scratch: str = "/fidelity/scratch") -> None:
        self.sim = sim
        self.scratch = scratch

    @classmethod
    def for_cluster(
        cls,
        info: ClusterInfo,
        start: float,
        next_job_id: int | None = None,
        next_priority: int | None = None,
        seed: int = 0,
        foreign: Sequence[Foreign] = (),
    ) -> SimSlurm:
        """A fresh simulator of ``info`` whose clock reaches ``start`` with stand-ins for the
        ``foreign`` jobs in place, and whose next job id and priority are the real cluster's."""
        lead = 2.0 if foreign else 0.0
        sim = SlurmSim(info.sim_config(), seed=seed, clock=VirtualClock(start - lead))
        for job in foreign:
            sim.controller.set_next_job_id(job.job_id)
            argv = ["sbatch", "--parsable", f"--job-name={job.name}", "--output=/dev/null"]
            argv += [f"--ntasks={job.cpus}", f"--nodes={job.nodes}"]
            if job.state != "RUNNING":
                argv.append("--hold")
            sim.run(argv, stdin=script(None))
        if lead:
            sim.advance(lead)
        if next_job_id is not None:
            sim.controller.set_next_job_id(next_job_id)
        if next_priority is not None:
            sim.controller.set_next_priority(next_priority)
        return cls(sim)

    def command(self, argv: Sequence[str], stdin: str | None) -> subprocess.CompletedProcess[str]:
        return self.sim.run(argv, stdin=stdin, env={"PWD": self.scratch})

    def runs(self, job_id: str, seconds: int | None) -> None:
        if seconds is not None and job_id.isdigit():
            with contextlib.suppress(Exception):  # the job may be gone: nothing to tell
                self.sim.run_for(int(job_id), seconds)

    def now(self) -> float:
        return self.sim.clock.now()

    def pause(self, seconds: float) -> None:
        self.sim.advance(seconds)

    def align(self, when: float) -> None:
        now = self.sim.clock.now()
        if when > now:
            self.sim.advance(when - now)

    def steady(self) -> None:
        """A virtual clock answers in the second it is at."""


# -- transcripts --------------------------------------------------------------------------------


@dataclass
class StepResult:
    """What one step did on one target; ``t`` is its start in seconds after the scenario's."""

    index: int
    step: Step
    t: float = 0.0
    elapsed: float = 0.0
    argv: list[str] | None = None
    stdin: str | None = None
    rc: int | None = None
    stdout: str = ""
    stderr: str = ""
    captured: str | None = None
    reached: str | None = None
    polls: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"index": self.index, "step": self.step.to_json()}
        data["t"] = round(self.t, 3)
        data["elapsed"] = round(self.elapsed, 3)
        if isinstance(self.step, Run):
            data.update(
                argv=self.argv, stdin=self.stdin, rc=self.rc, stdout=self.stdout, stderr=self.stderr
            )
            if self.step.capture is not None:
                data["captured"] = self.captured
        elif isinstance(self.step, WaitState):
            data.update(reached=self.reached, polls=self.polls)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepResult:
        return cls(
            index=int(data["index"]),
            step=step_from_json(data["step"]),
            t=float(data.get("t", 0.0)),
            elapsed=float(data.get("elapsed", 0.0)),
            argv=data.get("argv"),
            stdin=data.get("stdin"),
            rc=data.get("rc"),
            stdout=data.get("stdout", ""),
            stderr=data.get("stderr", ""),
            captured=data.get("captured"),
            reached=data.get("reached"),
            polls=int(data.get("polls", 0)),
        )


@dataclass
class Transcript:
    """One scenario's run on one target."""

    scenario: str
    target: str
    cluster: ClusterInfo
    start: float
    next_job_id: int | None
    scratch: str
    steps: list[StepResult] = field(default_factory=list)
    next_priority: int | None = None
    foreign: list[Foreign] = field(default_factory=list)
    bindings: dict[str, str] = field(default_factory=dict)
    description: str = ""
    tolerance: int = 2
    recorded: str = ""
    wall: float = 0.0
    setup: float = 0.0
    """Seconds the real runner spent between taking the lock and the first step."""

    @property
    def mode(self) -> str:
        return self.cluster.mode

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "scenario": self.scenario,
            "mode": self.mode,
            "description": self.description,
            "target": self.target,
            "recorded": self.recorded,
            "cluster": self.cluster.to_json(),
            "start": self.start,
            "next_job_id": self.next_job_id,
            "next_priority": self.next_priority,
            "foreign": [job.to_json() for job in self.foreign],
            "scratch": self.scratch,
            "tolerance": self.tolerance,
            "wall": round(self.wall, 3),
            "setup": round(self.setup, 3),
            "bindings": self.bindings,
            "steps": [step.to_json() for step in self.steps],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Transcript:
        if data.get("format") != FORMAT_VERSION:
            raise FidelityError(f"unknown transcript format {data.get('format')!r}")
        return cls(
            scenario=data["scenario"],
            target=data.get("target", "real"),
            cluster=ClusterInfo.from_json(data["cluster"]),
            start=float(data["start"]),
            next_job_id=data.get("next_job_id"),
            next_priority=data.get("next_priority"),
            foreign=[Foreign.from_json(job) for job in data.get("foreign", [])],
            scratch=data.get("scratch", ""),
            steps=[StepResult.from_json(step) for step in data["steps"]],
            bindings=dict(data.get("bindings", {})),
            description=data.get("description", ""),
            tolerance=int(data.get("tolerance", 2)),
            recorded=data.get("recorded", ""),
            wall=float(data.get("wall", 0.0)),
            setup=float(data.get("setup", 0.0)),
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Transcript:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _resolve(text: str, bindings: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in bindings:
            raise KeyError(name)
        return bindings[name]

    return _PLACEHOLDER.sub(value, text)


def execute(
    steps: Sequence[Step],
    target: Target,
    start: float,
    times: Sequence[float] | None = None,
) -> tuple[list[StepResult], dict[str, str]]:
    """Run ``steps`` on ``target``; with ``times`` (each step's start, seconds after
    ``start``, from another run), the target's time is first moved there (the simulator
    following a real run)."""
    bindings: dict[str, str] = {"START": iso(start)}
    results: list[StepResult] = []
    for index, step in enumerate(steps):
        if times is not None and index < len(times):
            target.align(start + times[index])
        if isinstance(step, Run):
            target.steady()
        began = target.now()
        result = StepResult(index, step, t=began - start)
        try:
            _do(step, target, bindings, result)
        except KeyError as unbound:
            result.rc = None
            result.stderr = f"fidelity: unbound placeholder {{{unbound.args[0]}}}\n"
        result.elapsed = target.now() - began
        results.append(result)
    del bindings["START"]
    return results, bindings


def _do(step: Step, target: Target, bindings: dict[str, str], result: StepResult) -> None:
    if isinstance(step, Run):
        argv = [_resolve(word, bindings) for word in step.argv]
        stdin = _resolve(step.stdin, bindings) if step.stdin is not None else None
        full = ["env", "TZ=UTC", "LC_ALL=C", f"SLURM_TIME_FORMAT={step.time_format}", *argv]
        result.argv, result.stdin = full, stdin
        done = target.command(full, stdin)
        result.rc, result.stdout, result.stderr = done.returncode, done.stdout, done.stderr
        if step.capture is not None:
            captured = done.stdout.strip().split(";", 1)[0]
            if done.returncode == 0 and captured.isdigit():
                bindings[step.capture] = result.captured = captured
    elif isinstance(step, Runs):
        target.runs(bindings[step.job], step.seconds)
    elif isinstance(step, WaitState):
        job_id = bindings[step.job]
        began = target.now()
        while True:
            state = _state(target, job_id)
            result.polls += 1
            if state in step.states:
                result.reached = state
                return
            if target.now() - began >= step.bound:
                result.reached = f"timeout (last {state})"
                return
            target.pause(target.poll_interval)
    else:
        target.pause(step.seconds)


def _state(target: Target, job_id: str) -> str:
    done = target.command(["squeue", "-t", "all", "-h", "-j", job_id, "-o", "%T"], None)
    state = done.stdout.strip()
    if not state and (done.returncode == 0 or "Invalid job id" in done.stderr):
        return GONE
    return state or f"rc={done.returncode}"


def run_real(scenario: Scenario, real: RealSlurm, lock: str | None = None) -> Transcript:
    """Run ``scenario`` on the real cluster (under ``lock``, an exclusive ``flock`` on that
    file, as ``flock(1)`` takes it): an empty cluster, the id counter known, the steps, then
    this runner's jobs cancelled."""
    info = real.info()
    reason = scenario.skip_reason(info)
    if reason is not None:
        raise FidelityError(f"{scenario.name}: {reason}")
    with cluster_lock(lock):
        locked = real.now()
        real._info = None  # the cluster may have been reconfigured while we waited
        info = real.info()
        reason = scenario.skip_reason(info)
        if reason is not None:
            raise FidelityError(f"{scenario.name}: {reason}")
        start_id = scenario.start_id(info) if scenario.start_id is not None else None
        next_job_id = real.prepare(start_id)
        info = dataclasses.replace(info, alloc_node=real.alloc_node, pending_mem=real.pending_mem)
        steps = scenario.steps(info)
        start = real.now()
        try:
            results, bindings = execute(steps, real, start)
        finally:
            real.cleanup()
        wall = real.now() - start
    return Transcript(
        setup=start - locked,
        scenario=scenario.name,
        target="real",
        cluster=info,
        start=start,
        next_job_id=next_job_id,
        next_priority=real.next_priority,
        foreign=list(real.foreign),
        scratch=real.scratch,
        steps=results,
        bindings=bindings,
        description=scenario.description,
        tolerance=scenario.tolerance,
        recorded=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        wall=wall,
    )


def run_on_sim(
    scenario: Scenario,
    info: ClusterInfo,
    start: float = 1_796_040_000.0,
    next_job_id: int | None = None,
    seed: int = 0,
) -> Transcript:
    """``scenario`` on a simulator of ``info`` alone (its own clock; ids from ``next_job_id``,
    else from ``start_id`` or FirstJobId)."""
    if next_job_id is None and scenario.start_id is not None:
        next_job_id = scenario.start_id(info)
    target = SimSlurm.for_cluster(info, start, next_job_id, seed=seed)
    results, bindings = execute(scenario.steps(info), target, start)
    return Transcript(
        scenario=scenario.name,
        target="sim",
        cluster=info,
        start=start,
        next_job_id=next_job_id,
        scratch=target.scratch,
        steps=results,
        bindings=bindings,
        description=scenario.description,
        tolerance=scenario.tolerance,
        wall=target.now() - start,
    )


def replay_on_sim(real: Transcript, seed: int = 0) -> Transcript:
    """The real transcript's steps on a fresh simulator that follows the real run's clock."""
    target = SimSlurm.for_cluster(
        real.cluster, real.start, real.next_job_id, real.next_priority, seed, real.foreign
    )
    steps = [result.step for result in real.steps]
    times = [result.t for result in real.steps]
    results, bindings = execute(steps, target, real.start, times)
    return Transcript(
        scenario=real.scenario,
        target="sim",
        cluster=real.cluster,
        start=real.start,
        next_job_id=real.next_job_id,
        next_priority=real.next_priority,
        foreign=list(real.foreign),
        scratch=target.scratch,
        steps=results,
        bindings=bindings,
        description=real.description,
        tolerance=real.tolerance,
        wall=target.now() - real.start,
    )


@contextlib.contextmanager
def cluster_lock(path: str | None) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (the one ``flock(1)`` takes), or nothing."""
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


# -- normalisation ------------------------------------------------------------------------------

WINDOW: Final = 7 * 86_400
"""Times within this many seconds of the start become ``T+n``; others stay literal (the
far-future StartTime of a hold, 2100-01-01T00:00:00, is a value, not a moment of the run)."""
_ISO: Final = re.compile(r"(?<![0-9])(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?![0-9])")
_EPOCH: Final = re.compile(r"(?<![0-9.+\-])(\d{10})(?![0-9])")
_ELAPSED: Final = re.compile(r"(?<![0-9:\-T])(?:(\d+)-)?(\d\d):(\d\d):(\d\d)(?![0-9:])")
_PID: Final = re.compile(r"(?<![A-Za-z_])(pid[=: ]|Sid=[^:\s]+:)(\d+)")
_TOKEN: Final = re.compile(r"(?<![A-Za-z0-9_])([TE])([+-]\d+)(?![0-9])")


@dataclass(frozen=True)
class Context:
    """What :func:`normalise` replaces: times around ``start``, ``hosts`` (name ->
    placeholder), ``scratch`` paths and ``ids`` (id -> label; empty while ids are aligned)."""

    start: int
    hosts: Mapping[str, str] = field(default_factory=dict)
    scratch: tuple[str, ...] = ()
    ids: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, transcript: Transcript, ids: Mapping[str, str] | None = None) -> Context:
        hosts: dict[str, str] = {transcript.cluster.host: "<host>"}
        for number, node in enumerate(transcript.cluster.nodes, 1):
            hosts.setdefault(node, f"<node{number}>")
        scratch = (transcript.scratch,) if transcript.scratch else ()
        return cls(int(transcript.start), hosts, scratch, dict(ids or {}))


def _relative(epoch: int, start: int) -> str | None:
    delta = epoch - start
    if abs(delta) > WINDOW:
        return None
    return f"T{delta:+d}"


def normalise(text: str, context: Context) -> str:
    """``text`` with the run's accidents replaced: scratch paths by ``$SCRATCH``, times near
    the start by ``T+n`` (ISO and epoch forms alike), ``HH:MM:SS`` durations by ``E+n``,
    mapped ids by their labels, host and node names by placeholders, pids by ``<pid>``.
    Idempotent: what it writes matches none of its patterns."""
    for path in sorted(context.scratch, key=len, reverse=True):
        if path and len(path) > 1:
            text = text.replace(path, "$SCRATCH")

    def iso_time(match: re.Match[str]) -> str:
        try:
            year, month, day, hour, minute, second = (int(part) for part in match.groups())
            moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:
            return match.group(0)
        return _relative(int(moment.timestamp()), context.start) or match.group(0)

    text = _ISO.sub(iso_time, text)
    text = _EPOCH.sub(lambda m: _relative(int(m.group(1)), context.start) or m.group(0), text)

    def elapsed(match: re.Match[str]) -> str:
        days, hours, minutes, seconds = match.groups()
        total = int(days or 0) * 86_400 + int(hours) * 3600 + int(minutes) * 60 + int(seconds)
        return f"E+{total}"

    text = _ELAPSED.sub(elapsed, text)
    if context.ids:
        pattern = "|".join(re.escape(i) for i in sorted(context.ids, key=len, reverse=True))
        text = re.sub(
            rf"(?<![A-Za-z0-9_.+\-:{{<])({pattern})(?![0-9A-Za-z_])",
            lambda m: context.ids[m.group(1)],
            text,
        )
    names = [name for name in context.hosts if len(name) > 1 and not name.isdigit()]
    if names:
        pattern = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
        text = re.sub(
            rf"(?<![A-Za-z0-9_<{{$])({pattern})(?![A-Za-z0-9_>}}])",
            lambda m: context.hosts[m.group(1)],
            text,
        )
    return _PID.sub(lambda m: f"{m.group(1)}<pid>", text)


def similar(real: str, sim: str, tolerance: int) -> bool:
    """Equal once normalised, ``T+n``/``E+n`` tokens within ``tolerance`` seconds."""
    if real == sim:
        return True
    left, right = _TOKEN.split(real), _TOKEN.split(sim)
    if len(left) != len(right):
        return False
    for index, (a, b) in enumerate(zip(left, right, strict=True)):
        if index % 3 == 2:
            if abs(int(a) - int(b)) > tolerance:
                return False
        elif a != b:
            return False
    return True


# -- comparison ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Known:
    """An explained difference, and why it remains.

    It applies to a :class:`Difference` of scenario ``scenario`` (``*``: any), in ``mode``
    (None: both), of field ``field`` (``stdout``, ``stderr``, ``rc``, ``reached``,
    ``capture``; ``*``: any), at a step whose normalised command line matches ``command``
    (a regex searched; None: any step), when

    - ``real`` / ``sim`` (regexes) are found in the real / the simulator's answer at that
      step (its exit status as ``rc=N``, stdout and stderr, normalised);
    - with ``times_only``, the texts are the same apart from their ``T+n``/``E+n`` values;

    and it covers the changed lines (those that differ beyond the time tolerance, paired up
    as ``diff`` pairs them) in whose real or simulated version ``lines`` (a regex) is found;
    None covers them all. A difference is explained when the entries that apply to it cover
    every changed line between them (:func:`explain`).

    ``timing`` marks a difference that depends on the real cluster's timing (a periodic pass
    whose phase is unknown), so a given run may not show it."""

    scenario: str
    command: str | None
    field: str
    reason: str
    lines: str | None = None
    real: str | None = None
    sim: str | None = None
    mode: str | None = None
    timing: bool = False
    times_only: bool = False

    def applies(self, difference: Difference) -> bool:
        if self.scenario not in ("*", difference.scenario):
            return False
        if self.mode is not None and self.mode != difference.mode:
            return False
        if self.field not in ("*", difference.field):
            return False
        if self.command is not None and not re.search(self.command, difference.command):
            return False
        if self.real is not None and not re.search(self.real, difference.real_step, re.M):
            return False
        if self.sim is not None and not re.search(self.sim, difference.sim_step, re.M):
            return False
        return not (self.times_only and not similar(difference.real, difference.sim, 10**9))

    def covers(self, line: tuple[str | None, str | None]) -> bool:
        if self.lines is None:
            return True
        return any(re.search(self.lines, side) for side in line if side is not None)

    def explains(self, difference: Difference) -> bool:
        """Whether this entry alone explains ``difference``."""
        return bool(explaining(difference, (self,)))


def explaining(difference: Difference, known: Sequence[Known]) -> list[Known]:
    """The entries of ``known`` that explain ``difference`` between them: each applies to it,
    and together they cover every changed line (empty: unexplained)."""
    applying = [k for k in known if k.applies(difference)]
    if not applying:
        return []
    lines = changed_lines(difference.real, difference.sim, difference.tolerance) or [
        (difference.real, difference.sim)
    ]
    used: list[Known] = []
    for line in lines:
        entry = next((k for k in applying if k.covers(line)), None)
        if entry is None:
            return []
        if entry not in used:
            used.append(entry)
    return used


def explain(difference: Difference, known: Sequence[Known]) -> str | None:
    """Why ``difference`` remains (the reasons of :func:`explaining`), or None."""
    used = explaining(difference, known)
    return "; ".join(dict.fromkeys(k.reason for k in used)) if used else None


def changed_lines(real: str, sim: str, tolerance: int) -> list[tuple[str | None, str | None]]:
    """The lines of two texts that differ beyond ``tolerance``, paired as ``diff`` pairs
    them (None where one side has no line)."""
    left, right = real.splitlines(), sim.splitlines()
    masked = [[_TOKEN.sub(r"\1~", line) for line in side] for side in (left, right)]
    changed: list[tuple[str | None, str | None]] = []
    matcher = difflib.SequenceMatcher(a=masked[0], b=masked[1], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        pairs = list(itertools.zip_longest(left[i1:i2], right[j1:j2]))
        if tag == "equal":
            changed += [(a, b) for a, b in pairs if not similar(a or "", b or "", tolerance)]
        else:
            changed += pairs
    return changed


@dataclass(frozen=True)
class Difference:
    """One field of one step that the real cluster and the simulator answered differently."""

    scenario: str
    mode: str
    step: int
    command: str
    field: str
    real: str
    sim: str
    reason: str | None = None
    tolerance: int = 2
    real_step: str = ""
    sim_step: str = ""
    """The whole answer of each side at that step: ``rc=N``, stdout, stderr (normalised)."""

    @property
    def explained(self) -> bool:
        return self.reason is not None


_ACCOUNTING_LAG: Final = (
    "accounting lags slurmctld: a pending job's record reaches slurmdbd on slurmctld's db_inx "
    "pass (every 5 s) or with the job's start or end; until then sacct lacks the row (sacct -j "
    "shows the id's previous record, if any), or shows a placeholder named 'allocation' in state "
    "PENDING; the simulator's accounting has every row at once (the pass's phase is unknown)"
)
_PURGE: Final = (
    "slurmctld purges finished jobs on a pass every MAX(10, MinJobAge) s, so a job stays in "
    "squeue 2-12 s after it ends; the simulator purges exactly MinJobAge after the end "
    "(docs/decisions.md), so it may already answer 'Invalid job id specified'"
)
_RESTART: Final = (
    "a requeued job restarts at a scheduler pass after its begin time; on the real cluster any "
    "activity triggers one and the periodic pass has an unknown phase (0-55 s after eligibility "
    "seen), the simulator's runs at multiples of sched_interval (60 s unless "
    "SchedulerParameters says otherwise), so the restart time differs (only the times)"
)
KNOWN_DIFFERENCES: tuple[Known, ...] = (
    Known(
        "*", r"^sacct", "stdout", _ACCOUNTING_LAG,
        lines=r"(^|[|\s])(PENDING|allocation)([|\s]|$)", timing=True,
    ),
    Known(
        "*", r"^(squeue|scontrol)", "*", _PURGE,
        real=r"\A(?![\s\S]*Invalid job id specified)", sim=r"Invalid job id specified",
        timing=True,
    ),
    Known(
        "requeue-running", r"^(squeue|sacct)", "stdout", _RESTART,
        lines=r"RUNNING|CANCELLED", times_only=True, timing=True,
    ),
    Known(
        "holds", r"^squeue", "stdout",
        "right after a release (or a StartTime update) the reason reads None until the next "
        "scheduler pass sets BeginTime; that pass runs at once unless one ran less than "
        "sched_min_interval (2 s) before, so the real cluster shows None or BeginTime by timing; "
        "the simulator shows BeginTime at once after a release (slurm-lab 7.7)",
        lines=r"\|PENDING\|(None|BeginTime)\||^\d+\|\d+\|(None|BeginTime)$", timing=True,
    ),
    Known(
        "holds", r"^(squeue|sacct)", "stdout",
        "scontrol hold of a running job made its EligibleTime N/A (sacct: Eligible Unknown) here, "
        "while slurm-lab 7.7 saw it kept for a job that had been submitted --hold and released; "
        "the rule is not known, the simulator keeps it",
        lines=r"JobHeldAdmin|fid-HoldBegin",
        real=r"JobHeldAdmin\|N/A\||fid-HoldBegin\|CANCELLED by 0\|Unknown\|",
    ),
    Known(
        "*", r"^scontrol show job", "stdout",
        "AccrueTime is set by the scheduler when it first evaluates an eligible job and is not "
        "moved by a later StartTime update; the simulator derives it from the begin time",
        lines=r"^\s*AccrueTime=",
    ),
)  # fmt: skip
"""The differences left on purpose, each with its reason (also in ``docs/fidelity.md``)."""


def _command_line(argv: Sequence[str] | None, context: Context) -> str:
    if not argv:
        return ""
    words = list(argv)
    while words and words[0] == "env":
        words = words[1:]
        while words and "=" in words[0]:
            words = words[1:]
    return normalise(" ".join(_quote(word) for word in words), context)


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./{}\-]+", word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def _describe(step: Step) -> str:
    if isinstance(step, Runs):
        return f"runs {step.job} {step.seconds}"
    if isinstance(step, WaitState):
        return f"wait_state {step.job} {'|'.join(step.states)} {step.bound:g}"
    if isinstance(step, Sleep):
        return f"sleep {step.seconds:g}"
    return " ".join(step.argv)


def compare(
    real: Transcript, sim: Transcript, known: Sequence[Known] = KNOWN_DIFFERENCES
) -> list[Difference]:
    """Every difference between two runs of one scenario, each explained when one of
    ``known`` matches it."""
    aligned = real.bindings == sim.bindings
    real_ids = {} if aligned else {v: f"{{{k}}}" for k, v in real.bindings.items()}
    sim_ids = {} if aligned else {v: f"{{{k}}}" for k, v in sim.bindings.items()}
    left, right = Context.of(real, real_ids), Context.of(sim, sim_ids)
    tolerance = real.tolerance
    found: list[Difference] = []

    def add(
        index: int, command: str, name: str, a: str, b: str, context: tuple[str, str] = ("", "")
    ) -> None:
        difference = Difference(
            real.scenario,
            real.mode,
            index,
            command,
            name,
            a,
            b,
            tolerance=tolerance,
            real_step=context[0] or a,
            sim_step=context[1] or b,
        )
        found.append(dataclasses.replace(difference, reason=explain(difference, known)))

    for index in range(max(len(real.steps), len(sim.steps))):
        if index >= len(real.steps) or index >= len(sim.steps):
            have = real.steps if index < len(real.steps) else sim.steps
            text = _describe(have[index].step)
            add(
                index,
                text,
                "step",
                text if have is real.steps else "",
                text if have is sim.steps else "",
            )
            continue
        mine, theirs = real.steps[index], sim.steps[index]
        if mine.step != theirs.step:
            add(index, _describe(mine.step), "step", _describe(mine.step), _describe(theirs.step))
            continue
        if isinstance(mine.step, Run):
            command = _command_line(mine.argv, left) or _describe(mine.step)
            texts = {
                name: (
                    normalise(getattr(mine, name), left),
                    normalise(getattr(theirs, name), right),
                )
                for name in ("stdout", "stderr")
            }
            context = (
                f"rc={mine.rc}\n{texts['stdout'][0]}{texts['stderr'][0]}",
                f"rc={theirs.rc}\n{texts['stdout'][1]}{texts['stderr'][1]}",
            )
            if mine.rc != theirs.rc:
                add(index, command, "rc", str(mine.rc), str(theirs.rc), context)
            if not aligned and mine.step.capture is not None and mine.captured != theirs.captured:
                add(index, command, "capture", str(mine.captured), str(theirs.captured), context)
            for name, (a, b) in texts.items():
                if not similar(a, b, tolerance):
                    add(index, command, name, a, b, context)
        elif isinstance(mine.step, WaitState) and mine.reached != theirs.reached:
            add(index, _describe(mine.step), "reached", str(mine.reached), str(theirs.reached))
    return found


# -- reports ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One scenario in one mode: compared (with its differences) or skipped (with why)."""

    scenario: str
    mode: str
    steps: int = 0
    differences: list[Difference] = field(default_factory=list)
    skipped: str | None = None
    wall: float = 0.0

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if not d.explained]


def summary(outcomes: Sequence[Outcome]) -> dict[str, int]:
    compared = [o for o in outcomes if o.skipped is None]
    differences = [d for o in compared for d in o.differences]
    return {
        "scenarios": len(compared),
        "skipped": len(outcomes) - len(compared),
        "steps": sum(o.steps for o in compared),
        "differences": len(differences),
        "explained": sum(d.explained for d in differences),
        "unexplained": sum(not d.explained for d in differences),
    }


def _block(text: str) -> str:
    body = text if text.endswith("\n") or not text else text + "\n"
    return "```\n" + (body or "(empty)\n") + "```\n"


def report(outcomes: Sequence[Outcome], title: str = "Slurm fidelity report") -> str:
    """Markdown: the totals, a table of scenarios, then every difference with both texts."""
    totals = summary(outcomes)
    lines = [
        f"# {title}",
        "",
        f"{totals['scenarios']} scenario run(s) compared, {totals['skipped']} skipped; "
        f"{totals['steps']} steps; {totals['differences']} difference(s): "
        f"{totals['explained']} explained, {totals['unexplained']} unexplained.",
        "",
        "| scenario | mode | steps | differences | explained | unexplained | wall (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        if o.skipped is not None:
            lines.append(f"| {o.scenario} | {o.mode} | skipped: {o.skipped} | | | | |")
            continue
        explained = len(o.differences) - len(o.unexplained)
        lines.append(
            f"| {o.scenario} | {o.mode} | {o.steps} | {len(o.differences)} | {explained} "
            f"| {len(o.unexplained)} | {o.wall:.1f} |"
        )
    for o in outcomes:
        if not o.differences:
            continue
        lines += ["", f"## {o.scenario} ({o.mode})"]
        for d in o.differences:
            verdict = f"explained: {d.reason}" if d.reason else "**UNEXPLAINED**"
            lines += ["", f"### step {d.step} `{d.command}`: {d.field}", "", verdict, ""]
            lines += ["real:", "", _block(d.real), "simulator:", "", _block(d.sim)]
    return "\n".join(lines).rstrip("\n") + "\n"


# -- the scenarios ------------------------------------------------------------------------------

_LONG_FIELDS: Final = (
    "JobID:|,Name:|,State:|,Reason:|,SubmitTime:|,EligibleTime:|,StartTime:|,RestartCnt:|,Comment:|"
)
_ACCT: Final = "JobID,JobName,State,Comment,Submit,Eligible,Start,End,ExitCode"


def _formats(_: ClusterInfo) -> list[Step]:
    return [
        *submit("A", "fid-Formats", "--comment=dispatch:s=1;a=1 | spaced"),
        wait_state("A", "RUNNING", 15),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%j|%T|%k|%V|%r|%P|%u|%D|%C"),
        run("squeue", "-j", "{A}", "-h", "-O", _LONG_FIELDS),
        run("squeue", "-j", "{A}", "-h", "-O", "JobID,Name,State,Partition"),
        run("squeue", "-j", "{A}", "-h", "-O", "JobID|,Name|,State:0|"),
        run("squeue", "-j", "{A}", "-o", "%.10i %.9P %.20j %.8T %R"),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%V|%S|%e", time_format="standard"),
        run("scontrol", "show", "job", "{A}"),
        run("sacct", "-j", "{A}", "-X", "-P", "-o", _ACCT),
        run("sacct", "-j", "{A}", "-P", "-o", "JobID,JobName%40,State,ExitCode"),
        run("sacct", "-j", "{A}", "-X", "-o", "JobID,JobName,State,ExitCode"),
        run("scancel", "{A}"),
        wait_state("A", "CANCELLED", 15),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-o", "%i|%T|%r"),
        run("sacct", "-j", "{A}", "-X", "-P", "-o", _ACCT),
        run("sacct", "-j", "{A}", "-n", "-P", "-o", "JobID,State,ExitCode"),
    ]


def _names(_: ClusterInfo) -> list[Step]:
    return [
        *submit("A", "fid-CaseName", hold=True),
        *submit("B", "fid-casename", hold=True),
        *submit("C", "fid-x,fid-y", hold=True),
        run("squeue", "-j", "{A},{B},{C}", "-h", "-o", "%i|%j|%T|%r"),
        run("squeue", "--name=fid-CASENAME", "-h", "-o", "%i|%j"),
        run("squeue", "--name=fid-casename,fid-nothing", "-h", "-o", "%i|%j"),
        run("squeue", "--name=fid-x,fid-y", "-h", "-o", "%i|%j"),
        run("squeue", "--name=fid-x", "-h", "-o", "%i|%j"),
        run("squeue", "--name=fid-nothing", "-h", "-o", "%i|%j"),
        run("scancel", "--name=fid-casename", "{A}"),
        run("scancel", "--name=fid-other", "{A}"),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-o", "%i|%j|%T"),
        run("scancel", "--name=fid-CaseName", "{A}"),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-o", "%i|%j|%T"),
        run("scancel", "--name=fid-CaseName", "{A}"),
        run("scancel", "{A}"),
        run("scancel", "--name=fid-x,fid-y"),
        run("squeue", "-t", "all", "-j", "{A},{B},{C}", "-h", "-o", "%i|%j|%T"),
        run("scancel", "--name=fid-casename"),
        run("squeue", "-t", "all", "-j", "{A},{B},{C}", "-h", "-o", "%i|%j|%T"),
        run(
            "sacct", "--name=fid-casename", "-S", "{START}", "-X", "-P", "-o", "JobID,JobName,State"
        ),
        run("sacct", "-j", "{C}", "-X", "-P", "-o", "JobID,JobName,State"),
    ]


def _requeue_running(_: ClusterInfo) -> list[Step]:
    acct = ["sacct", "-j", "{A}", "-D", "-X", "-P", "-S", "{START}", "-o", _ACCT]
    observe = ["squeue", "-j", "{A}", "-h", "-O", _LONG_FIELDS]
    return [
        *submit("A", "fid-Requeue", "--comment=dispatch:s=1;a=1"),
        wait_state("A", "RUNNING", 15),
        run(*observe),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%Q"),
        run("scontrol", "requeue", "{A}"),
        run(*observe),
        wait_state("A", "PENDING", 15),
        run(*observe),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%Q"),
        run("scontrol", "show", "job", "{A}"),
        run(*acct),
        run("sacct", "-j", "{A}", "-X", "-P", "-o", "JobID,JobName,State,Comment"),
        wait_state("A", "RUNNING", 75),
        run(*observe),
        run(*acct),
        run("scancel", "{A}"),
        wait_state("A", "CANCELLED", 15),
        run(*observe[:1], "-t", "all", *observe[1:]),
        run(*acct),
    ]


def _requeue_pending(_: ClusterInfo) -> list[Step]:
    observe = ["-h", "-O", "JobID:|,State:|,Reason:|,RestartCnt:|,EligibleTime:|,StartTime:|"]
    return [
        *submit("A", "fid-ReqHeld", hold=True),
        *submit("B", "fid-ReqBegin", "--begin=now+1hour"),
        *submit("C", "fid-ReqNo", "--no-requeue"),
        wait_state("C", "RUNNING", 15),
        run("scontrol", "requeue", "{A}"),
        run("scontrol", "requeuehold", "{A}"),
        run("scontrol", "requeue", "{B}"),
        run("squeue", "-j", "{A},{B}", *observe),
        run("scontrol", "requeue", "{C}"),
        run("scontrol", "update", "JobId={C}", "Requeue=1"),
        run("scontrol", "show", "job", "-o", "{C}"),
        run("scontrol", "requeue", "{C}"),
        wait_state("C", "PENDING", 15),
        run("squeue", "-j", "{C}", *observe),
        run("scontrol", "requeue", "{C}"),
        run("scancel", "{A}", "{B}", "{C}"),
        run("squeue", "-t", "all", "-j", "{A},{B},{C}", "-h", "-o", "%i|%T|%r"),
    ]


def _holds(_: ClusterInfo) -> list[Step]:
    observe = ["-h", "-O", "JobID:|,State:|,Reason:|,EligibleTime:|,StartTime:|"]
    return [
        *submit("A", "fid-HoldBegin", "--begin=now+1hour"),
        sleep(1),
        run("squeue", "-j", "{A}", *observe),
        run("scontrol", "update", "JobId={A}", "StartTime=2100-01-01T00:00:00"),
        run("squeue", "-j", "{A}", *observe),
        run("scontrol", "show", "job", "{A}"),
        sleep(4),
        run("squeue", "-j", "{A}", *observe),
        run("scontrol", "update", "JobId={A}", "StartTime=10000-01-01T00:00:00"),
        run("scontrol", "update", "JobId={A}", "StartTime=uts0"),
        run("scontrol", "update", "JobId={A}", "StartTime=now"),
        wait_state("A", "RUNNING", 15),
        run("squeue", "-j", "{A}", *observe),
        run("scontrol", "update", "JobId={A}", "StartTime=2100-01-01T00:00:00"),
        run("scontrol", "hold", "{A}"),
        run("squeue", "-j", "{A}", *observe),
        *submit("B", "fid-HoldHeld", hold=True),
        *submit("C", "fid-HoldOther", "--begin=now+1hour"),
        run("squeue", "-j", "{A},{B},{C}", "-h", "-o", "%i|%Q|%r"),
        run("squeue", "-j", "{B}", *observe),
        run("scontrol", "update", "JobId={B}", "StartTime=2100-01-01T00:00:00"),
        run("scontrol", "release", "{B}"),
        run("squeue", "-j", "{B}", *observe),
        run("squeue", "-j", "{A},{B},{C}", "-h", "-o", "%i|%Q|%r"),
        run("scontrol", "hold", "{B}"),
        run("squeue", "-j", "{B}", *observe),
        run("scontrol", "uhold", "{B}"),
        run("scontrol", "update", "JobId={B}", "StartTime=now"),
        run("squeue", "-j", "{B}", *observe),
        run("scontrol", "release", "{B}"),
        wait_state("B", "RUNNING", 15),
        run("squeue", "-j", "{B}", *observe),
        run("squeue", "-j", "{A},{B},{C}", "-h", "-o", "%i|%Q|%r"),
        run("scancel", "{A}", "{B}", "{C}"),
        wait_state("B", "CANCELLED", 15),
        run("squeue", "-t", "all", "-j", "{A},{B},{C}", "-h", "-o", "%i|%T|%r"),
        run(
            "sacct",
            "-j",
            "{A},{B},{C}",
            "-X",
            "-P",
            "-o",
            "JobID,JobName,State,Eligible,Start,End,ExitCode",
        ),
    ]


def _unknown_ids(_: ClusterInfo) -> list[Step]:
    return [
        *submit("A", "fid-Gone", seconds=1),
        wait_state("A", "COMPLETED", 20),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-o", "%i|%j|%T|%r"),
        wait_state("A", GONE, 30),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%T"),
        run("squeue", "-j", "999", "-h", "-o", "%i|%T"),
        run("squeue", "-j", "{A},999", "-h", "-o", "%i|%T"),
        run("scontrol", "show", "job", "{A}"),
        run("scontrol", "update", "JobId={A}", "StartTime=now"),
        run("scontrol", "update", "JobId={A}", "Comment=late"),
        run("scontrol", "requeue", "{A}"),
        run("scontrol", "hold", "{A}"),
        run("scontrol", "release", "{A}"),
        run("scancel", "{A}"),
        run("scancel", "--name=fid-Gone", "{A}"),
        run("sacct", "-j", "{A}", "-X", "-n", "-P", "-o", "JobID,JobName,State,ExitCode"),
        run("sacct", "-j", "{A}", "-P", "-o", "JobID,JobName,State,ExitCode,Elapsed"),
    ]


_BAD_SCRIPT: Final = "#!/bin/sh\ntrue\n"


def _bad_sbatch(*bad: str, stdin: str = _BAD_SCRIPT) -> Run:
    """An sbatch the client or slurmctld refuses, ``bad`` last: should it pass after all, the
    job is held and named ``fid-Bad`` (the runner cancels it)."""
    argv = ["sbatch", "--parsable", "--hold", "--job-name=fid-Bad", "--output=/dev/null"]
    return run(*argv, *bad, stdin=stdin)


def _bad_input(info: ClusterInfo) -> list[Step]:
    """Bad options and arguments of every command, refused before anything changes: by
    getopt_long, by the command's own checks, or by slurmctld before a job exists. Ids are
    MaxJobId and above, which slurmctld never issues. (``sbatch --nodes=0`` is left out: a
    held one is accepted with no nodes, and without ``--hold`` slurmctld refuses it only
    after the job record, and so its id, exists.)"""
    never, never2 = str(info.max_job_id), str(info.max_job_id + 1)
    both = f"{never},,{never2}"
    return [
        # sbatch: getopt_long's '?' and the first pass's checks exit(-1): 255 ...
        _bad_sbatch("--no-such-option"),
        _bad_sbatch("-Z"),
        _bad_sbatch("--job-name"),
        _bad_sbatch("-J"),
        _bad_sbatch("-N"),
        _bad_sbatch("--hold=1"),
        _bad_sbatch("--requeue=1"),
        _bad_sbatch("--no"),
        _bad_sbatch("--nodes=abc"),
        _bad_sbatch("--nodes=3-1"),
        _bad_sbatch("--time=xx"),
        _bad_sbatch("--signal=NOPE"),
        _bad_sbatch("--signal=B:USR1@99999"),
        _bad_sbatch("--begin=garbage"),
        _bad_sbatch("--mem=abc"),
        _bad_sbatch("--open-mode=x"),
        _bad_sbatch("--no-such-option", "--nodes=abc"),
        _bad_sbatch("--nodes=abc", "--no-such-option"),
        # ... parse_int exits 1 ...
        _bad_sbatch("--ntasks=abc"),
        _bad_sbatch("--cpus-per-task=0"),
        _bad_sbatch("--ntasks-per-node=x"),
        _bad_sbatch("--ntasks=abc", "--nodes=abc"),
        # ... the script's directives: the second pass, after the script is read ...
        _bad_sbatch(stdin="#!/bin/sh\n#SBATCH --no-such-option\ntrue\n"),
        _bad_sbatch(stdin="#!/bin/sh\n#SBATCH --nodes=abc\ntrue\n"),
        _bad_sbatch(stdin="#!/bin/sh\n#SBATCH --ntasks=abc\ntrue\n"),
        _bad_sbatch("--nodes=1", stdin="#!/bin/sh\n#SBATCH --nodes=abc\ntrue\n"),
        # ... the script itself and the final checks: exit 1 ...
        _bad_sbatch(stdin=""),
        _bad_sbatch(stdin="echo no interpreter\n"),
        _bad_sbatch("/nonexistent/script.sh"),
        _bad_sbatch("--wrap=true", "extra"),
        _bad_sbatch("--quiet", "--verbose"),
        # ... and slurmctld's refusal before a job record exists: exit 1.
        _bad_sbatch("--partition=fid-nosuch"),
        # squeue: exit 1, except a bad -o/-O field, user or empty id item (reported, exit 0).
        run("squeue", "--no-such-option"),
        run("squeue", "-Z"),
        run("squeue", "--name"),
        run("squeue", "-n"),
        run("squeue", "--sort"),
        run("squeue", "--no"),
        run("squeue", "-j", "abc"),
        run("squeue", "-jabc"),
        run("squeue", "--jobs=abc"),
        run("squeue", "-j", both, "-h"),
        run("squeue", "-j", never, "-h"),
        run("squeue", "-h", "-j", never, "-o", "%i|%Z"),
        run("squeue", "-h", "-t", "all", "-o", "%i|%_"),
        run("squeue", "-h", "-t", "all", "-O", "JobID,nosuchfield"),
        run("squeue", "-h", "-t", "NOPE"),
        run("squeue", "-h", "-u", "fid-nosuchuser"),
        run("squeue", "-h", "-S", "Z"),
        run("squeue", "--iterate=abc"),
        run("squeue", "extra"),
        run("squeue", "-j", never, "extra"),
        run("squeue", "-o", "%i", "-O", "JobID"),
        run("squeue", "-l", "-o", "%i"),
        run("squeue", "-t", "NOPE", "--no-such-option"),
        # sacct: getopt_long's message alone, exit 1.
        run("sacct", "--no-such-option"),
        run("sacct", "-Z"),
        run("sacct", "--name"),
        run("sacct", "-j"),
        run("sacct", "--no"),
        run("sacct", "--u=1"),
        run("sacct", "-j", "abc"),
        run("sacct", "-j", f"{never}.x"),
        run("sacct", "-S", "garbage"),
        run("sacct", "-E", "garbage"),
        run("sacct", "-s", "NOPE"),
        run("sacct", "-j", never, "-o", "nosuchfield"),
        run("sacct", "-n", "-u", "fid-nosuchuser"),
        run("sacct", "-S", "now", "-E", "now-1hour"),
        run("sacct", "--whole-hetjob=x"),
        run("sacct", "-l", "-o", "jobid"),
        run("sacct", "extra"),
        run("sacct", "-S", "garbage", "--no-such-option"),
        # scancel: exit 1, before anything is sent.
        run("scancel", "--no-such-option", never),
        run("scancel", "-Z", never),
        run("scancel", "--name"),
        run("scancel", "-n"),
        run("scancel", "--s=1", never),
        run("scancel"),
        run("scancel", "abc"),
        run("scancel", both),
        run("scancel", f"{never}.x"),
        run("scancel", f"{never}_abc"),
        run("scancel", "0"),
        run("scancel", "--", "-5"),
        run("scancel", "--signal=NOPE", never),
        run("scancel", "-t", "NOPE", never),
        run("scancel", "-u", "fid-nosuchuser"),
        run("scancel", "--signal=NOPE", "--no-such-option", never),
        # scontrol: exit 1.
        run("scontrol", "--no-such-option", "show", "job"),
        run("scontrol", "-Z", "show", "job"),
        run("scontrol", "--u"),
        run("scontrol"),
        run("scontrol", stdin=f"show job {never}\nnosuchcommand\n"),
        run("scontrol", "nosuchcommand"),
        run("scontrol", "sh", "job", never),
        run("scontrol", "sho", "job", never),
        run("scontrol", "show"),
        run("scontrol", "show", "nosuchentity"),
        run("scontrol", "show", "job", "abc"),
        run("scontrol", "show", "job", both),
        run("scontrol", "show", "job", never, "extra"),
        run("scontrol", "show", f"job={never}"),
        run("scontrol", "update"),
        run("scontrol", "update", "Foo=1"),
        run("scontrol", "update", "JobId=abc", "Foo=1"),
        run("scontrol", "update", f"JobId={never}", "Comment=x", "Foo=1"),
        run("scontrol", "update", "JobId=abc", "StartTime=now"),
        run("scontrol", "update", f"JobId={never}-1", "Comment=x"),
        run("scontrol", "update", f"JobId={never}", "junk"),
        run("scontrol", "update", f"JobId={never}", "Comment"),
        run("scontrol", "update", "JobId", never, "Comment", "x"),
        run("scontrol", "update", f"JobId={never}", "StartTime=garbage"),
        run("scontrol", "update", f"JobId={never}", "Requeue=x"),
        run("scontrol", "update", "JobId="),
        run("scontrol", "update", "JobName=fid-nosuch", "Comment=x"),
        run("scontrol", "hold"),
        run("scontrol", "hold", "abc"),
        run("scontrol", "uhold", never),
        run("scontrol", "release", both),
        run("scontrol", "release", never, never2),
        run("scontrol", "requeue"),
        run("scontrol", "requeue", "abc"),
        run("scontrol", "requeuehold", "abc"),
    ]


def _wrap_start(info: ClusterInfo) -> int:
    return info.max_job_id - 3


def _wrap_requires(info: ClusterInfo) -> str | None:
    if not 5 <= info.id_count <= 40:
        return (
            f"needs 5 to 40 job ids to wrap in a short scenario (MaxJobId {info.max_job_id} - "
            f"FirstJobId {info.first_job_id}; ci/slurm-up.sh --max-job-id sets it)"
        )
    return None


def _id_wrap(info: ClusterInfo) -> list[Step]:
    """A held keeper at MaxJobId - 3; held fillers (cancelled in batches, waited out of
    memory) take the ids round past MaxJobId - 1 to FirstJobId and on, until the counter
    comes back to the keeper, which is still in memory and so skipped."""
    room = max(2, min(10, min(info.max_job_count, info.id_count + 1) - 4))
    steps: list[Step] = [*submit("K", "fid-WrapKeep", hold=True)]
    remaining = info.id_count - 1  # ids between the keeper and itself, round the wrap
    number = 0
    while remaining > 0:
        batch = min(room, remaining)
        labels = []
        for _ in range(batch):
            number += 1
            label = f"F{number}"
            labels.append(label)
            steps += submit(label, f"fid-WrapFill{number:02d}", hold=True)
        remaining -= batch
        steps.append(run("squeue", "-t", "all", "-h", "-o", "%i|%j|%T|%r"))
        steps.append(run("scancel", *(f"{{{label}}}" for label in labels)))
        steps.append(wait_state(labels[-1], GONE, 30))
    steps += submit("S", "fid-WrapSkip", hold=True)
    steps.append(run("squeue", "-t", "all", "-h", "-o", "%i|%j|%T|%r"))
    steps.append(run("scancel", "{K}", "{S}"))
    return steps


def _comment_steps(_: ClusterInfo) -> list[Step]:
    fields = ["-X", "-P", "-o", "JobID,JobName,State,Comment"]
    return [
        *submit("A", "fid-Comment", "--comment=dispatch:s=1;a=1", seconds=4),
        wait_state("A", "RUNNING", 15),
        run("sacct", "-j", "{A}", *fields),
        run("scontrol", "update", "JobId={A}", "Comment=dispatch:s=1;a=2"),
        run("squeue", "-j", "{A}", "-h", "-o", "%i|%T|%k"),
        wait_state("A", "COMPLETED", 20),
        run("squeue", "-t", "all", "-j", "{A}", "-h", "-O", "JobID:|,State:|,Comment:|"),
        run("sacct", "-j", "{A}", *fields),
        run("sacct", "-j", "{A}", "-P", "-o", "JobID,State,Comment,ExitCode"),
        run("scontrol", "update", "JobId={A}", "Comment=after-end"),
        *submit("B", "fid-CommentCancel", "--comment=dispatch:s=2;a=1", hold=True),
        run("sacct", "-j", "{B}", *fields),
        run("scancel", "{B}"),
        wait_state("B", "CANCELLED", 15),
        run("sacct", "-j", "{B}", *fields),
    ]


def _requeue_ok(info: ClusterInfo) -> str | None:
    if not info.job_requeue:
        return "needs JobRequeue=1"
    if info.cred_expire > 30:
        return (
            f"waits the requeue delay (AuthInfo cred_expire {info.cred_expire} s + 1): needs "
            "cred_expire <= 30 (ci/slurm-up.sh --cred-expire 5)"
        )
    return None


def _short_age(info: ClusterInfo) -> str | None:
    if info.min_job_age > 10:
        return f"waits for purges: needs MinJobAge <= 10 (it is {info.min_job_age})"
    return None


SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        "formats",
        "squeue -o/-O (comment last, widths, a bad spec), scontrol show job, sacct -P and "
        "fixed columns, of a running and then a cancelled job whose comment holds '|' and spaces",
        _formats,
    ),
    Scenario(
        "names",
        "squeue --name is case-insensitive and splits commas; scancel --name is "
        "case-sensitive and ANDed with ids; a name holding a comma; sacct --name",
        _names,
    ),
    Scenario(
        "requeue-running",
        "scontrol requeue of a running job: COMPLETING, RestartCnt, SubmitTime moves, the "
        "requeue delay, the restart, sacct -D rows",
        _requeue_running,
        requires=_requeue_ok,
    ),
    Scenario(
        "requeue-pending",
        "scontrol requeue/requeuehold of pending jobs (held, future begin), of a --no-requeue "
        "job, then after Requeue=1",
        _requeue_pending,
        requires=_requeue_ok,
    ),
    Scenario(
        "holds",
        "holds through scontrol update StartTime=... and release with StartTime=now; hold, "
        "uhold and release of a --hold job; bad times; hold of a running job",
        _holds,
    ),
    Scenario(
        "unknown-ids",
        "a purged id: squeue -j, scontrol show/update/requeue/hold/release, scancel with and "
        "without a filter; accounting still remembers it",
        _unknown_ids,
        requires=_short_age,
    ),
    Scenario(
        "bad-input",
        "bad options and arguments of sbatch, squeue, sacct, scancel and scontrol: getopt_long's "
        "refusals, bad values, ids and fields, missing operands; the messages and exit statuses",
        _bad_input,
        mode_free=True,
    ),
    Scenario(
        "id-wrap",
        "ids wrap from MaxJobId - 1 to FirstJobId (MaxJobId itself is never issued) and skip "
        "an id still in memory",
        _id_wrap,
        start_id=_wrap_start,
        requires=lambda info: _wrap_requires(info) or _short_age(info),
    ),
    Scenario(
        "comment-at-end",
        "with AccountingStoreFlags=job_comment, accounting gets the comment only when a record "
        "ends (the value at the end), for a completed and a cancelled job",
        _comment_steps,
        job_comment=True,
    ),
    Scenario(
        "comment-absent",
        "without AccountingStoreFlags=job_comment, accounting never gets the comment",
        _comment_steps,
        job_comment=False,
    ),
)


def scenario_named(name: str) -> Scenario:
    for scenario in SCENARIOS:
        if scenario.name == name:
            return scenario
    raise FidelityError(f"no scenario {name!r} (known: {', '.join(s.name for s in SCENARIOS)})")


# -- fixtures -----------------------------------------------------------------------------------


def fixture_path(directory: str | os.PathLike[str], scenario: str, mode: str) -> Path:
    return Path(directory) / f"{scenario}.{mode}.json"


def fixtures(directory: str | os.PathLike[str] = FIXTURES) -> list[Path]:
    return sorted(Path(directory).glob("*.json"))


def replay_fixture(path: str | os.PathLike[str]) -> tuple[Transcript, Transcript, Outcome]:
    """A recorded real transcript, its replay on the simulator, and their comparison."""
    real = Transcript.load(path)
    sim = replay_on_sim(real)
    outcome = Outcome(real.scenario, real.mode, len(real.steps), compare(real, sim), wall=real.wall)
    return real, sim, outcome


# -- command line -------------------------------------------------------------------------------


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
            reason = scenario.skip_reason(info)
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simulators.slurm.fidelity",
        description="Run scripted scenarios on a real Slurm and on SlurmSim and compare them.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
            type=float,
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
        "--out", default=str(FIXTURES), metavar="DIR", help=f"where to write (default {FIXTURES})"
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
        "--fixtures", default=str(FIXTURES), metavar="DIR", help=f"default {FIXTURES}"
    )
    replay.add_argument("--out", metavar="DIR", help="also write report.md there")
    args = parser.parse_args(argv)
    if getattr(args, "lock", None) == "":
        args.lock = None
    try:
        return _main(args)
    except FidelityError as error:
        print(f"fidelity: error: {error}", file=sys.stderr)
        return 2
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
        wanted = set(args.scenario or ())
        outcomes = []
        for path in fixtures(args.fixtures):
            if wanted and path.name.split(".", 1)[0] not in wanted:
                continue
            outcomes.append(replay_fixture(path)[2])
        if not outcomes:
            raise FidelityError(f"no recorded transcripts in {args.fixtures}")
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


def _emit(text: str, out: str | None) -> None:
    print(text, end="")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "report.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
