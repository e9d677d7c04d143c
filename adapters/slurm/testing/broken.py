"""Deliberately broken Slurm adapters, on the simulated cluster: the proof that the checks of
what only a real adapter does (a batch script's options, a preflight's probe jobs) have teeth.

Each entry of :data:`CATALOGUE` is :class:`~adapters.slurm.SlurmBackend` wrong in exactly one
way, on the ``slurm-sim`` cluster, with a harness factory of the same name, so that any of them
can be named where a harness is expected::

    dispatch-conformance run --harness adapters.slurm.testing.broken:signal_dropped

They live beside the Slurm adapter, not in :mod:`adapters.memory.testing.broken`: the memory
adapter has no batch script and no preflight, so these bugs can only be made in the real
adapter. ``tests/conformance/test_kill_rate.py`` runs the standard tier against each (the full
tier's long stateful programs take minutes per adapter on the simulator) and checks that the
check each was written for, alone, catches it.
"""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from adapters.slurm import SlurmBackend
from adapters.slurm.backend import latest_incarnations
from adapters.slurm.identity import decode_hold
from adapters.slurm.parse import JobLine
from adapters.slurm.testing.sim import SimCluster, SlurmSimHarness, sim_cluster
from dispatch_core import (
    Conflict,
    HoldBound,
    JobID,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    Rejected,
)

# -- broken adapters ----------------------------------------------------------------------------


class SignalDropped(SlurmBackend):
    """The batch submission leaves out the pre-termination signal the spec asks for
    (``slurm.Signal`` never becomes ``sbatch --signal``), though PreTerminationSignal is
    declared yes: the job is killed at its time limit without warning."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if op == "sbatch":
            argv = [arg for arg in argv if not arg.startswith("--signal")]
        return super().command(op, argv, stdin)


class PreflightLeavesProbeJobs(SlurmBackend):
    """preflight never cancels its probe jobs: one that has not ended within its bound stays
    queued or running on the cluster after preflight returned."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if op == "preflight" and "scancel" in argv:
            return subprocess.CompletedProcess(list(argv), 0, "", "")
        return super().command(op, argv, stdin)


class EnvDoubleQuoted(SlurmBackend):
    """The batch script exports the spec's env values in double quotes instead of through
    ``shlex.quote``: a ``$(...)``, a backtick or a ``"`` in a value is the shell's."""

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        self._env = dict(plan.spec.env)
        return super().start(plan, submission, attempt)

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if op == "sbatch" and stdin is not None:
            for name, value in getattr(self, "_env", {}).items():
                quoted = f"export {name}={shlex.quote(value)}"
                stdin = stdin.replace(quoted, f'export {name}="{value}"')
        return super().command(op, argv, stdin)


class WorkDirCdInScript(SlurmBackend):
    """The work directory is entered by a ``cd`` in the batch script, its path unquoted,
    instead of through ``sbatch --chdir``: a space, a quote or a ``$`` in it is the shell's."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        chdir = [arg for arg in argv if arg.startswith("--chdir=")]
        if op == "sbatch" and stdin is not None and chdir:
            argv = [arg for arg in argv if not arg.startswith("--chdir=")]
            first, _, rest = stdin.partition("\n")
            stdin = f"{first}\ncd {chdir[0].removeprefix('--chdir=')}\n{rest}"
        return super().command(op, argv, stdin)


class SubmittedRequeueable(SlurmBackend):
    """The job is submitted with ``sbatch --requeue`` instead of ``--no-requeue``: Slurm
    requeues it by itself after a node failure, an execution no rule ordered and no budget
    counts."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if op == "sbatch":
            argv = ["--requeue" if arg == "--no-requeue" else arg for arg in argv]
        return super().command(op, argv, stdin)


class CommandUnquoted(SlurmBackend):
    """The batch script's ``srun`` line joins the command's arguments with spaces, unquoted,
    instead of through ``shlex.quote``: an argument with a space, a quote, a ``$`` or a ``;``
    is split, expanded or run by the batch shell."""

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        self._argv = plan.spec.command
        return super().start(plan, submission, attempt)

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        words = getattr(self, "_argv", ())
        if op == "sbatch" and stdin is not None and words:
            quoted = " ".join(shlex.quote(arg) for arg in words)
            stdin = stdin.replace(f" -- {quoted}\n", f" -- {' '.join(words)}\n")
        return super().command(op, argv, stdin)


class _FindHooks(SlurmBackend):
    """``find`` as the Slurm adapter's, with its two merges of history and the live view as
    methods a broken adapter overrides: which accounting rows are one object, and which row is
    an earlier incarnation of a job squeue still shows."""

    def incarnations(self, rows: list[JobLine]) -> list[JobLine]:
        return latest_incarnations(rows)

    def earlier(self, current: JobLine | None, line: JobLine) -> bool:
        return current is not None and current.submit >= line.submit and bool(current.restart_count)

    def find(self, job_id: JobID) -> list[Observation]:
        name = job_id.discovery_name()
        live = self._named(name)
        rows = self._accounted(name, max(0, int(job_id.ulid.timestamp) - 86_400)) or []
        shown = {(line.job_id, line.submit) for line in live}
        live_ids = {line.job_id: line for line in live}
        observations = [self._observe(line) for line in live]
        for line in self.incarnations(rows):
            if (line.job_id, line.submit) in shown or self.earlier(live_ids.get(line.job_id), line):
                continue
            observations.append(self._observe(line))
        return observations


class EveryRowAnObject(_FindHooks):
    """find takes every accounting row for an object of its own: a requeued object's earlier
    incarnations (its REQUEUED, NODE_FAIL and PREEMPTED rows) show beside its last once it has
    left squeue."""

    def incarnations(self, rows: list[JobLine]) -> list[JobLine]:
        return rows


class LaggingRowAnObject(_FindHooks):
    """find shows an accounting row of a job squeue still shows, under an earlier submit time,
    as an object of its own: while accounting lags a requeue, the requeued object shows twice."""

    def earlier(self, current: JobLine | None, line: JobLine) -> bool:
        return False


class NoCommentInHistoryUnknown(SlurmBackend):
    """An accounting row without a comment is read as unknown (submission and attempt lost),
    even where accounting keeps comments (job_comment): a foreign job with the job's name and
    no comment is the job's own once it has left squeue."""

    def _observe(self, line: JobLine) -> Observation:
        seen = super()._observe(line)
        if line.from_accounting and not line.comment:
            return seen.model_copy(update={"foreign": False})
        return seen


class TrustsTheSbatchId(SlurmBackend):
    """start takes the job squeue shows under the id sbatch printed for the job it submitted,
    whatever its name: when that job has ended and its id was taken by another's object before
    the read-back, start returns a ref made of the other's line."""

    _starting: str | None = None

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        self._starting = plan.job.discovery_name()
        try:
            return super().start(plan, submission, attempt)
        finally:
            self._starting = None

    def job_line(self, job_id: str) -> JobLine | None:
        line = super().job_line(job_id)
        if line is not None and self._starting is not None:
            return dataclasses.replace(line, name=self._starting)
        return line


class FailureIsARefusal(SlurmBackend):
    """start reads sbatch's "Unable to contact slurm controller" as a refusal (Rejected): the
    job may well have landed, and the caller is told it never will."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = super().command(op, argv, stdin)
        if op == "sbatch" and "Unable to contact" in done.stderr:
            done.stderr = "sbatch: error: Batch job submission failed: refused\n"
        return done


class EmptyAnswerLandedNothing(SlurmBackend):
    """start takes an sbatch that exited 0 and printed nothing for one that submitted nothing:
    OutcomeUnknown at once, without looking for the job it may have submitted."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = super().command(op, argv, stdin)
        if op == "sbatch" and done.returncode == 0 and not done.stdout.strip():
            raise OutcomeUnknown(f"{self.name}: sbatch printed no job id")
        return done


class AccountingWindowEndsNow(SlurmBackend):
    """find and open ask accounting for the jobs eligible up to now (``sacct -E now``): a job
    held (its eligible time far ahead), then stopped and purged, is in no such window, and
    vanishes from find and open."""

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if argv and argv[0] == "sacct" and "-E" in argv:
            at = list(argv).index("-E") + 1
            argv = [*argv[:at], "now", *argv[at + 1 :]]
        return super().command(op, argv, stdin)


class StopMatchesAnyCase(SlurmBackend):
    """stop compares the job's name with the ref's without regard to case and cancels by id
    alone: a requeued job holding the ref's id whose name differs only in case passes for the
    ref's, and stop cancels it."""

    _stopping = False

    def stop(self, ref: ObjectRef) -> None:
        self._stopping = True
        try:
            super().stop(ref)
        finally:
            self._stopping = False

    def job_line(self, job_id: str) -> JobLine | None:
        line = super().job_line(job_id)
        if self._stopping and line is not None and line.name.lower().startswith("dj-"):
            return dataclasses.replace(line, name="dj-" + line.name[3:].upper())
        return line

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if op == "scancel":
            argv = [word for word in argv if not word.startswith("--name=")]
        return super().command(op, argv, stdin)


class DisabledHistoryUnknown(SlurmBackend):
    """A sacct that says accounting storage is disabled is taken for a failed read: on a
    cluster that keeps no history, find raises OutcomeUnknown instead of showing the live
    objects."""

    def _accounted(self, name: str, since: int) -> list[JobLine] | None:
        rows = super()._accounted(name, since)
        if rows is None:
            raise OutcomeUnknown(f"{self.name}: sacct failed")
        return rows


# -- the catalogue and its harnesses ---------------------------------------------------------------


class HoldNumberPerSecond(SlurmBackend):
    """A hold's number comes from the clock's whole seconds alone (not its milliseconds plus the
    instance's count of holds): two holds on one object within a second take one number, and a
    release naming the earlier one frees the later."""

    def _hold_number(self, current: int | None) -> int:
        number = int(self.clock.now()) % (HoldBound - 1) + 1
        return number % (HoldBound - 1) + 1 if number == current else number


class HoldNumberFromZero(SlurmBackend):
    """A hold's number is the clock's milliseconds plus the instance's count folded into
    ``[0, HoldBound - 1)``, without the ``+ 1``: where the numbering wraps it is 0, which is no
    hold number (``0 < k``), so that hold never reads back."""

    def _hold_number(self, current: int | None) -> int:
        number = (int(self.clock.now() * 1000) + next(self._hold_count)) % (HoldBound - 1)
        return (number + 1) % (HoldBound - 1) if number == current else number


class ActsOnForeignJobs(SlurmBackend):
    """hold, release and requeue check the ref's identity but not whose the job is: a job with
    the job's name whose comment does not parse (or that has none), reported foreign by find,
    is held and requeued through the ref find gave it."""

    def _ours(self, ref: ObjectRef, what: str) -> JobLine:
        return self._checked(ref)


class HoldTrustsTheUpdate(SlurmBackend):
    """hold and release take ``scontrol update``'s exit 0 for the hold placed or dropped, and
    read nothing back: a hold the scheduler acknowledged and ignored is claimed."""

    def _read_back_until(
        self, ref: ObjectRef, landed: Callable[[JobLine | None], bool], what: str
    ) -> JobLine | None:
        if what.startswith(("to carry hold", "to drop hold")):
            return None
        return super()._read_back_until(ref, landed, what)


class RequeueTrustsTheReply(SlurmBackend):
    """requeue takes ``scontrol requeue``'s exit 0 for the requeue done, and reads nothing back:
    a requeue the scheduler acknowledged and ignored is claimed."""

    def _read_back_until(
        self, ref: ObjectRef, landed: Callable[[JobLine | None], bool], what: str
    ) -> JobLine | None:
        if what == "back with a higher restart count":
            return None
        return super()._read_back_until(ref, landed, what)


class UpdateFailureUnknown(SlurmBackend):
    """Every failed ``scontrol update`` is OutcomeUnknown: a hold whose job started first, or
    left squeue, before it landed is not told apart (Rejected, NotFound) though Slurm says
    which."""

    def _update(self, ref: ObjectRef, assignment: str, op: str) -> None:
        argv = ["scontrol", "update", f"JobId={ref.id}", assignment]
        try:
            done = self.command(op, argv)
        except subprocess.TimeoutExpired:
            raise OutcomeUnknown(f"{self.name}: scontrol update {ref.id} timed out") from None
        if done.returncode != 0:
            raise OutcomeUnknown(f"{self.name}: scontrol update {ref.id} failed")


class EndedUpdateUnknown(SlurmBackend):
    """A failed ``scontrol update`` tells a started job (Rejected) and a purged one (NotFound)
    apart, but takes ``Job has already finished`` for OutcomeUnknown: a hold whose job was
    cancelled just before it landed is not said to be refused, though Slurm says it was."""

    def _update(self, ref: ObjectRef, assignment: str, op: str) -> None:
        try:
            super()._update(ref, assignment, op)
        except Rejected as refused:
            if "ended before" not in str(refused):
                raise
            raise OutcomeUnknown(f"{self.name}: scontrol update {ref.id} failed") from None


class ReleaseReadsAnEndedHold(SlurmBackend):
    """release decodes a hold from the job's eligible time whatever its state: a held job that
    was then cancelled still shows its far-off start time, so its release is not refused with
    Conflict (an ended job carries no hold) but sent to scontrol."""

    def release(self, ref: ObjectRef, hold: int) -> None:
        line = self._checked(ref)
        carried = decode_hold(line.eligible, line.submit)
        if carried != hold:
            raise Conflict(f"{self.name}: job {ref.id} carries hold {carried}, not {hold}")
        self._update(ref, "StartTime=now", "release")
        self._read_back_until(
            ref,
            lambda seen: seen is None or decode_hold(seen.eligible, seen.submit) != hold,
            f"to drop hold {hold}",
        )


class RequeueAssumesCutLanded(SlurmBackend):
    """requeue takes ``scontrol requeue`` timing out after ``Requeue=1`` landed for a requeue
    done: it returns, and the job was marked requeueable but never requeued."""

    def requeue(self, ref: ObjectRef) -> None:
        try:
            super().requeue(ref)
        except OutcomeUnknown as unknown:
            if "then the requeue timed out" not in str(unknown):
                raise


class RequeuesASpecialExit(SlurmBackend):
    """requeue refuses only a PENDING job: one in SPECIAL_EXIT (requeued and held, pending
    underneath) is sent ``Requeue=1`` and ``scontrol requeue`` instead of Rejected."""

    def requeue(self, ref: ObjectRef) -> None:
        line = self._checked(ref)
        if line.state == "PENDING":
            raise Rejected(f"{self.name}: job {ref.id} is pending; only a started job is requeued")
        self._update(ref, "Requeue=1", "requeue")
        try:
            done: subprocess.CompletedProcess[str] | None = self.command(
                "requeue", ["scontrol", "requeue", ref.id]
            )
        except subprocess.TimeoutExpired:
            done = None
        if done is None or done.returncode != 0:
            reason = "timed out" if done is None else done.stderr.strip()
            raise OutcomeUnknown(
                f"{self.name}: job {ref.id} was marked requeueable, then the requeue {reason}"
            )
        before = line.restart_count or 0
        self._read_back_until(
            ref,
            lambda seen: seen is not None and (seen.restart_count or 0) > before,
            "back with a higher restart count",
        )


class RequeuesAPendingJob(SlurmBackend):
    """requeue refuses only a job in SPECIAL_EXIT (requeued and held) or ended: a PENDING one,
    never started, is sent ``Requeue=1`` and ``scontrol requeue``, which Slurm refuses (the job
    is pending) after the flag landed, and the adapter answers OutcomeUnknown, not Rejected."""

    _requeuing = False

    def requeue(self, ref: ObjectRef) -> None:
        self._requeuing = True  # requeue's own first read sees no PENDING
        try:
            super().requeue(ref)
        finally:
            self._requeuing = False

    def _checked(self, ref: ObjectRef) -> JobLine:
        line = super()._checked(ref)
        if self._requeuing and line.state == "PENDING":
            self._requeuing = False
            return dataclasses.replace(line, state="RUNNING")
        return line


@dataclass(frozen=True)
class Broken:
    """One broken Slurm adapter: its name, the one thing wrong with it, its class, and the
    checks that alone catch it (the checks it was written for)."""

    name: str
    fault: str
    backend: type[SlurmBackend]
    only: tuple[str, ...] = ()

    def harness(self) -> BrokenSimHarness:
        return BrokenSimHarness(self)


class BrokenSimHarness(SlurmSimHarness):
    """The ``slurm-sim`` harness (accounting with ``job_comment``) around one broken adapter;
    reopen keeps it broken."""

    def __init__(self, broken: Broken) -> None:
        super().__init__(job_comment=True)
        self.broken = broken
        self.name = f"{__name__}:{broken.name}"

    def new_backend(self) -> SlurmBackend:
        cluster = SimCluster(self.config)
        return self.broken.backend(
            cluster,
            self.config.cluster_name,
            clock=cluster.sim.clock,
            job_comment=self.job_comment,
            user=self.config.user,
        )

    def reopen(self, backend: SlurmBackend) -> SlurmBackend:
        return self.broken.backend(
            sim_cluster(backend),
            backend.cluster,
            clock=backend.clock,
            job_comment=backend.job_comment,
            job_requeue=backend.job_requeue,
            user=backend.user,
            timeout=backend.timeout,
            settle=backend.settle,
        )


CATALOGUE: Final[Sequence[Broken]] = (
    Broken(
        "env_double_quoted",
        EnvDoubleQuoted.__doc__ or "",
        EnvDoubleQuoted,
        only=("SAFE-001", "SAFE-006"),
    ),
    Broken(
        "work_dir_cd_in_script",
        WorkDirCdInScript.__doc__ or "",
        WorkDirCdInScript,
        only=("SAFE-007",),
    ),
    Broken("command_unquoted", CommandUnquoted.__doc__ or "", CommandUnquoted, only=("SAFE-003",)),
    Broken(
        "submitted_requeueable",
        SubmittedRequeueable.__doc__ or "",
        SubmittedRequeueable,
        # CAUSE-002 too: a preemption requeues the job, which then shows cause requeued.
        only=("CAUSE-002", "SAFE-005"),
    ),
    Broken("signal_dropped", SignalDropped.__doc__ or "", SignalDropped, only=("CAP-018",)),
    Broken(
        "preflight_leaves_probe_jobs",
        PreflightLeavesProbeJobs.__doc__ or "",
        PreflightLeavesProbeJobs,
        only=("CAP-019",),
    ),
    Broken(
        "every_row_an_object", EveryRowAnObject.__doc__ or "", EveryRowAnObject, only=("IDENT-041",)
    ),
    Broken(
        "lagging_row_an_object",
        LaggingRowAnObject.__doc__ or "",
        LaggingRowAnObject,
        only=("IDENT-040",),
    ),
    Broken(
        "failure_is_a_refusal",
        FailureIsARefusal.__doc__ or "",
        FailureIsARefusal,
        only=("IDENT-065",),
    ),
    Broken(
        "empty_answer_landed_nothing",
        EmptyAnswerLandedNothing.__doc__ or "",
        EmptyAnswerLandedNothing,
        only=("IDENT-066",),
    ),
    Broken(
        "accounting_window_ends_now",
        AccountingWindowEndsNow.__doc__ or "",
        AccountingWindowEndsNow,
        only=("HOLD-018",),
    ),
    Broken(
        "stop_matches_any_case",
        StopMatchesAnyCase.__doc__ or "",
        StopMatchesAnyCase,
        only=("OBS-005",),
    ),
    Broken(
        "trusts_the_sbatch_id",
        TrustsTheSbatchId.__doc__ or "",
        TrustsTheSbatchId,
        only=("IDENT-069",),
    ),
    Broken(
        "disabled_history_unknown",
        DisabledHistoryUnknown.__doc__ or "",
        DisabledHistoryUnknown,
        # CORE-007 too: the supervisor's recovery reads through find, which this break fails
        only=("CORE-007", "IDENT-043"),
    ),
    Broken(
        "no_comment_in_history_unknown",
        NoCommentInHistoryUnknown.__doc__ or "",
        NoCommentInHistoryUnknown,
        only=("IDENT-042",),
    ),
    Broken(
        "hold_number_per_second",
        HoldNumberPerSecond.__doc__ or "",
        HoldNumberPerSecond,
        only=("HOLD-010",),
    ),
    Broken(
        "hold_number_from_zero",
        HoldNumberFromZero.__doc__ or "",
        HoldNumberFromZero,
        only=("HOLD-016",),
    ),
    Broken(
        "acts_on_foreign_jobs",
        ActsOnForeignJobs.__doc__ or "",
        ActsOnForeignJobs,
        only=("IDENT-004", "IDENT-017", "IDENT-023"),
    ),
    Broken(
        "hold_trusts_the_update",
        HoldTrustsTheUpdate.__doc__ or "",
        HoldTrustsTheUpdate,
        only=("HOLD-011",),
    ),
    Broken(
        "requeue_trusts_the_reply",
        RequeueTrustsTheReply.__doc__ or "",
        RequeueTrustsTheReply,
        only=("IDENT-051",),
    ),
    Broken(
        "update_failure_unknown",
        UpdateFailureUnknown.__doc__ or "",
        UpdateFailureUnknown,
        only=("HOLD-012",),
    ),
    Broken(
        "ended_update_unknown",
        EndedUpdateUnknown.__doc__ or "",
        EndedUpdateUnknown,
        only=("HOLD-012",),
    ),
    Broken(
        "release_reads_an_ended_hold",
        ReleaseReadsAnEndedHold.__doc__ or "",
        ReleaseReadsAnEndedHold,
        only=("HOLD-013",),
    ),
    Broken(
        "requeue_assumes_cut_landed",
        RequeueAssumesCutLanded.__doc__ or "",
        RequeueAssumesCutLanded,
        only=("IDENT-052",),
    ),
    Broken(
        "requeues_a_special_exit",
        RequeuesASpecialExit.__doc__ or "",
        RequeuesASpecialExit,
        only=("IDENT-053",),
    ),
    Broken(
        "requeues_a_pending_job",
        RequeuesAPendingJob.__doc__ or "",
        RequeuesAPendingJob,
        only=("IDENT-058", "IDENT-070"),
    ),
)
"""Every broken Slurm adapter, each wrong in exactly one way."""

BY_NAME: Final = {broken.name: broken for broken in CATALOGUE}


def _factory(name: str) -> Callable[[], BrokenSimHarness]:
    def factory() -> BrokenSimHarness:
        return BY_NAME[name].harness()

    factory.__name__ = name
    factory.__doc__ = f"The harness of the broken Slurm adapter {name}: {BY_NAME[name].fault}"
    return factory


signal_dropped = _factory("signal_dropped")
preflight_leaves_probe_jobs = _factory("preflight_leaves_probe_jobs")
env_double_quoted = _factory("env_double_quoted")
work_dir_cd_in_script = _factory("work_dir_cd_in_script")
command_unquoted = _factory("command_unquoted")
submitted_requeueable = _factory("submitted_requeueable")
trusts_the_sbatch_id = _factory("trusts_the_sbatch_id")
hold_number_per_second = _factory("hold_number_per_second")
hold_number_from_zero = _factory("hold_number_from_zero")
acts_on_foreign_jobs = _factory("acts_on_foreign_jobs")
hold_trusts_the_update = _factory("hold_trusts_the_update")
requeue_trusts_the_reply = _factory("requeue_trusts_the_reply")
update_failure_unknown = _factory("update_failure_unknown")
ended_update_unknown = _factory("ended_update_unknown")
release_reads_an_ended_hold = _factory("release_reads_an_ended_hold")
requeue_assumes_cut_landed = _factory("requeue_assumes_cut_landed")
requeues_a_special_exit = _factory("requeues_a_special_exit")
requeues_a_pending_job = _factory("requeues_a_pending_job")


__all__ = ["BY_NAME", "CATALOGUE", "Broken", "BrokenSimHarness", *BY_NAME]
every_row_an_object = _factory("every_row_an_object")
lagging_row_an_object = _factory("lagging_row_an_object")
disabled_history_unknown = _factory("disabled_history_unknown")
no_comment_in_history_unknown = _factory("no_comment_in_history_unknown")
failure_is_a_refusal = _factory("failure_is_a_refusal")
empty_answer_landed_nothing = _factory("empty_answer_landed_nothing")
accounting_window_ends_now = _factory("accounting_window_ends_now")
stop_matches_any_case = _factory("stop_matches_any_case")
