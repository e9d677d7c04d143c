"""Where a scenario's commands go (:class:`Target`): :class:`RealSlurm`, this host's commands
as subprocesses, or :class:`SimSlurm`, a SlurmSim configured from the real cluster's
:class:`~tools.fidelity.cluster.ClusterInfo`."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from typing import Final, Protocol

from adapters.slurm.parse import parse_sbatch_id
from dispatch_core import Clock, VirtualClock, WallClock
from dispatch_core.clock import pause
from simulators.slurm.sim import SlurmSim
from tools.fidelity.cluster import ACTIVE, ClusterBusy, ClusterInfo, FidelityError, Foreign, NoSlurm
from tools.fidelity.scenario import NAME_PREFIX, script

_TEST_ONLY: Final = re.compile(r"^sbatch: Job (\d+) to start at ", re.MULTILINE)
"""The line ``sbatch --test-only`` answers with (``src/api/allocate.c``, slurm_job_will_run)."""

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

    def lose_node(self, node: str) -> None:
        """The node's machine is lost (:class:`~tools.fidelity.LoseNode`)."""
        ...

    def bring_back(self, node: str) -> None:
        """The lost node comes back (:class:`~tools.fidelity.BringBack`)."""
        ...


class RealSlurm:
    """This host's Slurm commands, run as subprocesses (no shell) in a scratch directory."""

    name = "real"
    poll_interval = 0.2
    can_lose_nodes = False
    """This host's nodes are not to be lost: a subclass on a cluster of its own may."""

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

    def lose_node(self, node: str) -> None:
        raise FidelityError(f"{self.name} cannot lose node {node}")

    def bring_back(self, node: str) -> None:
        raise FidelityError(f"{self.name} cannot bring node {node} back")

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
            self.require_commands()
            shown = self.command(["scontrol", "show", "config"], None)
            if shown.returncode != 0:
                why = (shown.stderr.strip() or shown.stdout.strip() or "no output").splitlines()
                raise NoSlurm(f"no Slurm: scontrol show config failed: {why[0]}")
            nodes = self.command(["sinfo", "-h", "-N", "-o", "%N|%c|%P"], None)
            if nodes.returncode != 0:
                raise NoSlurm(f"no Slurm: sinfo failed: {nodes.stderr.strip()}")
            user, uid, host = self.identity()
            account = self.command(
                ["sacctmgr", "-n", "-P", "show", "user", user, "format=DefaultAccount"], None
            )
            self._info = ClusterInfo.parse(
                shown.stdout,
                nodes.stdout,
                user=user,
                uid=uid,
                account=account.stdout.strip().splitlines()[0] if account.stdout.strip() else None,
                host=host,
            )
        return self._info

    def require_commands(self) -> None:
        """:class:`NoSlurm` unless the Slurm commands are on this host's PATH."""
        if shutil.which("scontrol") is None or shutil.which("sbatch") is None:
            raise NoSlurm("no Slurm: scontrol/sbatch are not on PATH")

    def identity(self) -> tuple[str, int, str]:
        """Who submits, and from where: the user, the uid and the short host name."""
        return _user(), os.getuid(), socket.gethostname().split(".", 1)[0]

    def forget_info(self) -> None:
        """Read the configuration again at the next :meth:`info` (the cluster may have been
        reconfigured meanwhile)."""
        self._info = None

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

    def wait_quiet(self, quiet: float = 3.0) -> tuple[Foreign, ...]:
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
        native = parse_sbatch_id(done.stdout)
        if native is None:
            raise FidelityError(f"sbatch of {name} printed no job id: {done.stdout.strip()!r}")
        return int(native)

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
        self.wait_quiet()
        probe = self._submit(f"{NAME_PREFIX}probe", "--begin=now+1hour")
        shown = self.command(["scontrol", "show", "job", "-o", str(probe)], None).stdout
        self.command(["scancel", str(probe)], None)
        priority = re.search(r"\bPriority=(\d+)", shown)
        self.next_priority = int(priority.group(1)) - 1 if priority else None
        node = re.search(r"\bAllocNode:Sid=([^:\s]+):", shown)
        self.alloc_node = node.group(1) if node else None
        mem = re.search(r"\bTRES=[^ ]*\bmem=([^, ]+)", shown)
        self.pending_mem = mem.group(1) if mem else None
        self.foreign = self.wait_quiet()
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

    def lose_node(self, node: str) -> None:
        """A node failure: each running job of the node requeued when it may be, else ended
        NODE_FAIL (the simulator's nodes do not go down)."""
        self.sim.faults.node_failure(node)

    def bring_back(self, node: str) -> None:
        """Its nodes never went down."""


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
