"""``dispatch``: the host CLI of the supervisor.

- ``dispatch submit --harness NAME [--policy FILE] [--record PATH|DSN] [--seed S] -- CMD...``
  plans and submits a job through the harness's backend (NAME is a ``dispatch.harnesses``
  entry point name or a ``module:factory`` path, loaded by :mod:`dispatch_core.plugins`), then
  supervises it until it is idle, one progress line per action, and prints its final status.
  The built-in harnesses are in-process (their cluster ends with this process), so ``submit``
  always supervises, and plays the scheduler meanwhile: it lets each queued object run and
  ends each execution (exit 0; with ``--seed S`` above 0, each execution fails with exit 1
  with a chance of one in three, drawn from S, so a policy can be watched at work).
  ``--detach`` returns after the submission, for a harness whose cluster outlives the process
  (one that says ``outlives_process = True``); for the others it is refused.
- ``dispatch status [JOB] [--json]``: the record's jobs as a table (or JSON), read from the
  record alone.
- ``dispatch supervise --harness NAME``: supervises every unfinished job of the record until
  idle, one progress line per action.
- ``dispatch release JOB --harness NAME``: a person releases a job held for them (a failure's
  hold: it runs again as its next submission), then every unfinished job is supervised until
  idle; ``dispatch cancel JOB --harness NAME`` stops the job's live objects and records it
  cancelled.

The record is ``--record`` (a path, or a ``postgresql://`` DSN), or ``$DISPATCH_RECORD``, or
``$XDG_DATA_HOME/dispatch/record.sqlite`` (``~/.local/share/dispatch/record.sqlite``). Bad
input is one line on stderr and exit status 2, never a traceback. Exit status: 0 when every job
shown succeeded, 1 when one failed or was cancelled, 3 when one waits for a person or is not
finished.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, NoReturn

from pydantic import ValidationError

from dispatch_core import plugins
from dispatch_core.clock import WallClock
from dispatch_core.errors import DispatchError
from dispatch_core.model import JobID, JobSpec, Policy, State
from dispatch_core.record.redact import redact_text
from dispatch_core.record.sqlite import SqliteRecordStore
from dispatch_core.record.store import LeaseConflict, RecordStore
from dispatch_core.record.types import Entry, HeaderRecord, Lease, Record
from dispatch_core.supervise.status import Status, status_of
from dispatch_core.supervise.supervisor import Supervisor
from dispatch_core.supervise.view import rebuild

BAD_INPUT: Final = 2
FAILED: Final = 1
UNFINISHED: Final = 3
FAILURE_CHANCE: Final = 1 / 3


class BadInput(Exception):
    """What the user typed cannot be used: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise BadInput(message)


def default_record() -> Path:
    """Where the record is kept when neither ``--record`` nor ``$DISPATCH_RECORD`` says."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dispatch" / "record.sqlite"


def record_location(where: str | None) -> str:
    """Where the record is: ``where`` (a path or a PostgreSQL DSN), ``$DISPATCH_RECORD``, or
    the default path."""
    if where is not None and not where.strip():
        raise BadInput(
            "--record is empty: give a path or a postgresql:// DSN (or leave it out for the "
            "default record)"
        )
    return where or os.environ.get("DISPATCH_RECORD") or str(default_record())


def _is_dsn(where: str) -> bool:
    return where.startswith(("postgresql://", "postgres://"))


def open_record(where: str | None) -> RecordStore:
    """The record store at ``where`` (a path or a PostgreSQL DSN), or the default one."""
    where = record_location(where)
    if _is_dsn(where):
        from dispatch_core import record

        store = getattr(record, "PostgresRecordStore", None)
        if store is None:
            raise BadInput("this installation has no PostgreSQL record store")
        opened: RecordStore = store(where)
        return opened
    path = Path(where).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return SqliteRecordStore(str(path))


def _local_process(owner: str) -> bool | None:
    """Whether the lease owner ``owner`` (named as :func:`default_owner` names it: host, pid,
    a random part) is a running process of this host: True, False (it is gone), or None (another
    host's, this process, or an owner named otherwise)."""
    parts = owner.split(":")
    if len(parts) < 3 or not parts[-2].isdigit():
        return None
    host, pid = ":".join(parts[:-2]), int(parts[-2])
    if host != socket.gethostname() or pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (another user's)
    return True


def _gone(owner: str) -> bool:
    return _local_process(owner) is False


class HostLeases:
    """The record store as a ``dispatch`` process on a harness's own clock uses it: a job whose
    lease a running process of this host holds is never taken, whatever the lease's expiry
    says. Every process's virtual clock is its own (each starts at one instant and moves by its
    own waits), so an expiry written on one process's clock and compared on another's means
    nothing: a process whose clock had run ahead through its backoffs took the jobs of
    processes still supervising them, and found their objects lost."""

    def __init__(self, store: RecordStore) -> None:
        self.store = store

    def append(
        self, job: JobID, expected_seq: int, record: Record, lease: Lease, now: float
    ) -> Entry:
        return self.store.append(job, expected_seq, record, lease, now)

    def records(self, job: JobID, start: int = 0) -> list[Entry]:
        return self.store.records(job, start)

    def next_seq(self, job: JobID) -> int:
        return self.store.next_seq(job)

    def jobs(self) -> list[JobID]:
        return self.store.jobs()

    def unfinished(self) -> list[JobID]:
        return self.store.unfinished()

    def lease(self, job: JobID) -> Lease | None:
        return self.store.lease(job)

    def acquire(self, job: JobID, owner: str, now: float, ttl: float) -> Lease:
        current = self.store.lease(job)
        if current is not None and current.owner != owner and _local_process(current.owner):
            raise LeaseConflict(f"job {job}: supervised by {current.owner}, a running process")
        return self.store.acquire(job, owner, now, ttl)

    def renew(self, lease: Lease, now: float, ttl: float) -> Lease:
        return self.store.renew(lease, now, ttl)

    def release(self, lease: Lease) -> bool:
        return self.store.release(lease)

    def close(self) -> None:
        self.store.close()


def _own_clock(clock: Any) -> bool:
    """Whether ``clock`` is this process's own (virtual) time, not the wall clock."""
    return not isinstance(clock, WallClock)


def release_orphans(store: RecordStore) -> None:
    """Release the lease of every unfinished job whose owner was a ``dispatch`` process of this
    host that is gone (killed before it could release it). Its lease would hold for its whole
    ttl on the clock, and each process's virtual clock starts at the same instant: no later
    process could ever take the job over."""
    for job in store.unfinished():
        lease = store.lease(job)
        if lease is not None and _gone(lease.owner) and store.release(lease):
            _out(f"{job}: released the lease of {lease.owner}, a process that is gone")


def load_harness(spec: str) -> Any:
    """The harness ``spec`` names: a ``dispatch.harnesses`` entry point name, or
    ``module:factory``."""
    try:
        harness = plugins.load(plugins.HARNESS_GROUP, spec, kind="harness")
    except plugins.PluginError as error:
        raise BadInput(str(error)) from None
    if not callable(getattr(harness, "new_backend", None)):
        raise BadInput(f"{spec!r} gave {type(harness).__name__}, not a harness (no new_backend)")
    return harness


@contextlib.contextmanager
def _harness_open(harness: Any, outlives: bool) -> Iterator[None]:
    """Use ``harness``, then close it when its cluster ends with this process: an in-process
    cluster may hold threads (kubeflow-sim serves its API over HTTP) that, left to the
    interpreter's exit, stop it from ever exiting."""
    try:
        yield
    finally:
        close = getattr(harness, "close", None)
        if not outlives and callable(close):
            close()


def new_backend(harness: Any, name: str) -> Any:
    """A backend from ``harness`` (named ``name``); a harness that cannot reach its cluster (no
    kubeconfig, no sbatch on PATH, an extra not installed) says so in one line."""
    try:
        return harness.new_backend()
    except DispatchError:
        raise
    except Exception as error:  # a plugin's own exception (conformance's CannotInject, ...)
        reason = " ".join(str(error).split()) or type(error).__name__
        raise BadInput(f"harness {name} has no backend to give: {reason}") from None


def load_policy(path: str | None) -> Policy | None:
    """The policy in ``path``: JSON, or TOML for a ``.toml`` file (``rules = [...]`` and
    ``shared_checkpoint``)."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise BadInput(f"cannot read the policy {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise BadInput(f"the policy {path} is not UTF-8 text: {error.reason}") from None
    try:
        data = tomllib.loads(text) if path.endswith(".toml") else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise BadInput(f"the policy {path} is not valid {_format(path)}: {error}") from None
    try:
        return Policy.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the policy"
        raise BadInput(f"the policy {path}: {where}: {first['msg']}") from None


def _format(path: str) -> str:
    return "TOML" if path.endswith(".toml") else "JSON"


def _env(pairs: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq:
            raise BadInput(f"--env takes NAME=VALUE, not {pair!r}")
        env[name] = value
    return env


def parser() -> argparse.ArgumentParser:
    """The ``dispatch`` argument parser."""
    top = _Parser(
        prog="dispatch",
        description="Submit and supervise dispatch jobs, writing ahead to a record.",
    )
    commands = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    record_help = (
        "the record: a SQLite path or a postgresql:// DSN (default: $DISPATCH_RECORD, else "
        "$XDG_DATA_HOME/dispatch/record.sqlite, else ~/.local/share/dispatch/record.sqlite)"
    )

    submit = commands.add_parser(
        "submit",
        help="submit a job and supervise it",
        description="Plan and submit CMD through a harness's backend, then supervise it until "
        "idle (in-process harnesses: their cluster ends with this process).",
    )
    submit.add_argument(
        "--harness", required=True, help="a dispatch.harnesses entry point name, or module:factory"
    )
    submit.add_argument("--policy", metavar="FILE", help="the recovery policy, JSON or .toml")
    submit.add_argument("--record", metavar="PATH|DSN", help=record_help)
    submit.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="with S above 0, each execution the in-process scheduler runs fails (exit 1) "
        "with a chance of one in three, drawn from S (default 0: every execution succeeds)",
    )
    submit.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="an env entry (repeat)"
    )
    submit.add_argument(
        "--secret-env",
        action="append",
        default=[],
        metavar="NAME",
        help="an env name whose value is a credential: never written to the record (repeat)",
    )
    submit.add_argument("--work-dir", help="the job's working directory")
    submit.add_argument("--nodes", type=int, default=1, help="how many nodes (default 1)")
    submit.add_argument(
        "--time-bound",
        type=float,
        metavar="SECONDS",
        help="stop an execution running longer than this, as a failure with cause timeout",
    )
    submit.add_argument(
        "--launch-retries", type=int, default=2, help="retries of a failed launch (default 2)"
    )
    submit.add_argument(
        "--max-steps", type=int, default=10_000, help="supervise at most this many steps"
    )
    submit.add_argument(
        "--detach",
        action="store_true",
        help="return once submitted (only for a harness whose cluster outlives the process)",
    )
    submit.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD...")

    status = commands.add_parser(
        "status", help="show jobs from the record", description="Show jobs from the record."
    )
    status.add_argument("job", nargs="?", metavar="JOB", help="one job id (default: every job)")
    status.add_argument("--json", action="store_true", help="JSON instead of a table")
    status.add_argument("--record", metavar="PATH|DSN", help=record_help)

    supervise = commands.add_parser(
        "supervise",
        help="supervise every unfinished job until idle",
        description="Supervise every unfinished job of the record until idle, with progress.",
    )
    _cluster_options(supervise, record_help, supervises=True)

    release = commands.add_parser(
        "release",
        help="release a job held for a person, then supervise until idle",
        description="Release JOB from its hold for a person (a failure's hold: the job runs "
        "again as its next submission), then supervise every unfinished job of the record "
        "until idle, with progress. Refused when JOB is not held for a person.",
    )
    release.add_argument("job", metavar="JOB", help="the job id (as dispatch status shows it)")
    _cluster_options(release, record_help, supervises=True)

    cancel = commands.add_parser(
        "cancel",
        help="cancel a job: stop its live objects, record it cancelled",
        description="Cancel JOB: stop every live object of it within the shutdown budget and "
        "record it cancelled (a cancel that has not seen every object end goes on at the next "
        "supervise). Exit status 1: the job ended cancelled.",
    )
    cancel.add_argument("job", metavar="JOB", help="the job id (as dispatch status shows it)")
    _cluster_options(cancel, record_help, supervises=False)
    return top


def _cluster_options(
    command: argparse.ArgumentParser, record_help: str, *, supervises: bool
) -> None:
    """The options of a command that acts through a harness's backend on the record: --harness
    and --record; with ``supervises`` (it runs until idle), --seed and --max-steps too."""
    command.add_argument(
        "--harness", required=True, help="a dispatch.harnesses entry point name, or module:factory"
    )
    command.add_argument("--record", metavar="PATH|DSN", help=record_help)
    if supervises:
        command.add_argument("--seed", type=int, default=0, metavar="S", help="as for submit")
        command.add_argument(
            "--max-steps", type=int, default=10_000, help="supervise at most this many steps"
        )


class Driver:
    """The scheduler's part, for an in-process harness: before each step it lets every queued
    object of the supervisor's jobs run and ends every running one (exit 0, or exit 1 with
    :data:`FAILURE_CHANCE` when seeded), through the harness's ``let_run`` and ``finish`` (its
    ``conformance.powers.RunsJobs``, which every in-process harness implements), as its
    cluster's scheduler would."""

    def __init__(self, harness: Any, backend: Any, supervisor: Supervisor, seed: int) -> None:
        self.harness = harness
        self.backend = backend
        self.supervisor = supervisor
        self.random = random.Random(seed) if seed > 0 else None

    def __call__(self) -> None:
        store = self.supervisor.store
        for job in store.unfinished():
            ref = status_of(rebuild(job, store.records(job))).ref
            if ref is None:
                continue
            try:
                seen = self.backend.open(ref)
                if seen.state is State.QUEUED:
                    self.harness.let_run(self.backend, ref)
                elif seen.state is State.RUNNING:
                    fails = self.random is not None and self.random.random() < FAILURE_CHANCE
                    self.harness.finish(self.backend, ref, 1 if fails else 0)
            except Exception:  # the scheduler's part may fail; the supervisor sees it
                continue


def _table(statuses: Sequence[Status]) -> str:
    heads = ("JOB", "STATE", "CAUSE", "SUB", "ATTEMPT", "OBJECT", "DETAIL")
    rows = [
        (
            str(s.job),
            s.state.value,
            s.cause.value,
            str(s.submission),
            str(s.attempt),
            s.ref.id if s.ref is not None else "-",
            s.detail
            + (f" [identity weakened: {s.identity_weakened()}]" if s.identity_weakened() else ""),
        )
        for s in statuses
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads[:-1])]
    lines = []
    for row in [heads, *rows]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def _exit_code(statuses: Sequence[Status]) -> int:
    if any(s.finished and s.state is not State.SUCCEEDED for s in statuses):
        return FAILED
    if any(not s.finished for s in statuses):
        return UNFINISHED
    return 0


def _out(line: str) -> None:
    try:
        print(redact_text(line), flush=True)
    except BrokenPipeError:
        # The reader went away (``dispatch submit ... | head``): the rest of the output goes
        # nowhere, and the supervision goes on to its end (it was cut short, exit 2).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _submit(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise BadInput("submit needs a command after --")
    if args.nodes < 1:
        raise BadInput(f"--nodes must be 1 or more, not {args.nodes}")
    if args.launch_retries < 0:
        raise BadInput(f"--launch-retries must be 0 or more, not {args.launch_retries}")
    _check_counts(args)
    if args.time_bound is not None and not 0 < args.time_bound < float("inf"):
        raise BadInput(f"--time-bound must be a number of seconds above 0, not {args.time_bound}")
    policy = load_policy(args.policy)
    try:
        spec = JobSpec(
            command=tuple(cmd),
            env=_env(args.env),
            secret_env=tuple(args.secret_env),
            work_dir=args.work_dir,
            nodes=args.nodes,
        )
    except ValidationError as error:
        raise BadInput(f"the job: {error.errors()[0]['msg']}") from None
    harness = load_harness(args.harness)
    outlives = bool(getattr(harness, "outlives_process", False))
    if args.detach and not outlives:
        raise BadInput(
            f"--detach: harness {args.harness} is in-process, its cluster ends with this "
            "process; submit supervises it until idle instead"
        )
    with _harness_open(harness, outlives):
        backend = new_backend(harness, args.harness)
        store = open_record(args.record)
        try:
            clock = harness.clock(backend)
            supervisor = Supervisor(
                backend,
                HostLeases(store) if _own_clock(clock) else store,
                clock,
                launch_retries=args.launch_retries,
                progress=_out,
            )
            release_orphans(store)
            job = supervisor.submit(spec, policy, time_bound=args.time_bound)
            _out(f"submitted {job}")
            if not args.detach:
                driver = None if outlives else Driver(harness, backend, supervisor, args.seed)
                supervisor.run_until_idle(args.max_steps, between=driver)
            final = supervisor.status(job)
            supervisor.close()
            _out(_table([final]))
            return 0 if args.detach else _exit_code([final])
        finally:
            store.close()


def _status(args: argparse.Namespace) -> int:
    where = record_location(args.record)
    if not _is_dsn(where) and not Path(where).expanduser().exists():
        # A read: a record that is not there has no jobs, and is not created by looking.
        if args.job is not None:
            try:
                JobID.parse(args.job)
            except ValueError as error:
                raise BadInput(str(error)) from None
            raise BadInput(f"no job {args.job} in the record: there is no record at {where}")
        _out("[]" if args.json else f"no jobs in the record (there is none at {where})")
        return 0
    store = open_record(where)
    try:
        if args.job is not None:
            try:
                jobs = [JobID.parse(args.job)]
            except ValueError as error:
                raise BadInput(str(error)) from None
        else:
            jobs = store.jobs()
        statuses = []
        for job in jobs:
            entries = store.records(job)
            if not entries:
                raise BadInput(f"no job {job} in the record")
            statuses.append(status_of(rebuild(job, entries)))
    finally:
        store.close()
    if args.json:
        payload: Any = [s.as_dict() for s in statuses]
        if args.job is not None:
            payload = payload[0]
        _out(json.dumps(payload, indent=2))
    elif statuses:
        _out(_table(statuses))
    else:
        _out("no jobs in the record")
    return _exit_code(statuses)


def _left_alone(store: RecordStore, job: JobID, cluster: str, owner: str) -> None:
    """Say why ``supervise`` left an unfinished job alone: another cluster's, or another
    supervisor's (a live lease)."""
    header = store.records(job, 0)[0].record
    if isinstance(header, HeaderRecord) and header.backend != cluster:
        _out(f"{job}: left alone, it is a job of {header.backend}, not of {cluster}")
        return
    lease = store.lease(job)
    if lease is not None and lease.owner != owner:
        _out(f"{job}: left alone, supervised by {lease.owner}")


def _check_counts(args: argparse.Namespace) -> None:
    """The counts submit, supervise and release take, which cannot be negative."""
    if args.max_steps < 0:
        raise BadInput(f"--max-steps must be 0 or more, not {args.max_steps}")
    if args.seed < 0:
        raise BadInput(f"--seed must be 0 or more, not {args.seed}")


def _supervise(args: argparse.Namespace) -> int:
    _check_counts(args)
    statuses = _supervising(args, None, until_idle=True)
    if statuses:
        _out(_table(statuses))
    else:
        _out("no unfinished jobs in the record")
    return _exit_code(statuses)


def _release(args: argparse.Namespace) -> int:
    _check_counts(args)
    job = _job_arg(args.job)

    def release(supervisor: Supervisor) -> Status:
        return _tell(supervisor.release(job), "released")

    return _acted_on(job, _supervising(args, release, until_idle=True))


def _cancel(args: argparse.Namespace) -> int:
    job = _job_arg(args.job)

    def cancel(supervisor: Supervisor) -> Status:
        return _tell(supervisor.cancel(job), "cancelled")

    return _acted_on(job, _supervising(args, cancel, until_idle=False))


def _acted_on(job: JobID, statuses: Sequence[Status]) -> int:
    """Print the status of the job a person acted on; the exit status is its own."""
    mine = [s for s in statuses if s.job == job]
    _out(_table(mine))
    return _exit_code(mine)


def _job_arg(text: str) -> JobID:
    try:
        return JobID.parse(text)
    except ValueError as error:
        raise BadInput(str(error)) from None


def _tell(status: Status, what: str) -> Status:
    _out(f"{what} {status.job}")
    return status


Act = Callable[[Supervisor], Status]
"""What a person does to one job through a supervisor (release, cancel): its status after."""


def _supervising(args: argparse.Namespace, act: Act | None, *, until_idle: bool) -> list[Status]:
    """A supervisor on the harness's backend and the record: ``act`` first, then, with
    ``until_idle``, every unfinished job supervised until idle. The status of each unfinished
    job and of the one acted on; why each unfinished one was left alone is printed."""
    harness = load_harness(args.harness)
    outlives = bool(getattr(harness, "outlives_process", False))
    with _harness_open(harness, outlives):
        backend = new_backend(harness, args.harness)
        store = open_record(args.record)
        try:
            clock = harness.clock(backend)
            leases = HostLeases(store) if _own_clock(clock) else store
            supervisor = Supervisor(backend, leases, clock, progress=_out)
            release_orphans(store)
            before = store.unfinished()
            acted = act(supervisor) if act is not None else None
            if until_idle:
                driver = None if outlives else Driver(harness, backend, supervisor, args.seed)
                supervisor.run_until_idle(args.max_steps, between=driver)
            statuses = [supervisor.status(job) for job in before]
            if acted is not None and acted.job not in before:
                statuses.append(supervisor.status(acted.job))
            supervisor.close()
            for status in statuses:
                if not status.finished:
                    _left_alone(store, status.job, backend.name, supervisor.owner)
        finally:
            store.close()
    return statuses


COMMANDS: Final[dict[str, Callable[[argparse.Namespace], int]]] = {
    "submit": _submit,
    "status": _status,
    "supervise": _supervise,
    "release": _release,
    "cancel": _cancel,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dispatch`` with ``argv`` (the process's arguments by default); the exit status."""
    try:
        args = parser().parse_args(argv)
        if args.command is None:
            raise BadInput(
                "a command is needed: submit, status, supervise, release or cancel (see --help)"
            )
        return COMMANDS[args.command](args)
    except BadInput as error:
        print(f"dispatch: {redact_text(str(error))}", file=sys.stderr)
        return BAD_INPUT
    except (DispatchError, ValueError, OSError) as error:
        line = " ".join(str(error).split())
        print(f"dispatch: {redact_text(line)}", file=sys.stderr)
        return BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
