"""SlurmBackend: the dispatch SPI over the Slurm command line (seed 001 is its law).

Every write follows the same four steps: read the job by id, check its identity against the
ref (same id; name equal to the ref's UID byte for byte; submit time equal, or same-or-later
when the restart count is above zero), write, read back. A failed check writes nothing: ``stop``
succeeds, every other write raises ``NotFound``. A write whose outcome cannot be read back
raises ``OutcomeUnknown``.

Calls per operation (``backend.calls`` counts them): ``start`` 3 (squeue for an earlier landing
of the same submission, sbatch, squeue for the submit time), or more to resolve a lost reply;
``find`` 2 (squeue by name, sacct by name); ``open`` 1 (2 once the job left squeue); ``stop`` 3
(read, ``scancel --name=<uid> <id>``, read back; 1 when there is nothing to cancel; more while
the job is COMPLETING, which a cancel would not end, as in a requeue); ``hold`` and
``release`` 3; ``requeue`` 4 (read, ``Requeue=1``, ``requeue``, read back).
"""

from __future__ import annotations

import itertools
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Final

from adapters.slurm.identity import HoldBase, decode_hold, parse_slurm_comment
from adapters.slurm.parse import (
    SACCT_FORMAT,
    SQUEUE_FORMAT,
    JobLine,
    ParseError,
    classify,
    parse_sacct,
    parse_sbatch_id,
    parse_squeue,
)
from adapters.slurm.script import batch_submission
from adapters.slurm.transport import Transport
from dispatch_core import (
    Capability,
    Clock,
    Conflict,
    EncodingError,
    HoldBound,
    JobID,
    JobSpec,
    NotFound,
    ObjectRef,
    Observation,
    OutcomeUnknown,
    Plan,
    Policy,
    PreflightOptions,
    Rejected,
    RuleKind,
    RuleSupport,
    Source,
    Support,
    WallClock,
    identity_mismatch,
)
from dispatch_core.clock import pause

ENV: Final = ("env", "SLURM_TIME_FORMAT=%s", "TZ=UTC", "LC_ALL=C")
FINISHED_STAYS: Final = (
    "Slurm requeues no finished job of the adapter's (sbatch --no-requeue, and scontrol update "
    "refuses a finished job: 'Job has already finished')"
)
_ENDED: Final = frozenset(
    {
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    }
)
_INVALID_ID: Final = "Invalid job id specified"
SACCT_END: Final = 4_102_444_800  # 2100-01-01: beyond any hold (submit + ten years + 1e6 s)


class SlurmBackend:
    """A dispatch backend over one Slurm cluster reached through ``transport``.

    ``cluster`` names the cluster in every ObjectRef. ``job_comment`` says whether accounting
    keeps comments (``AccountingStoreFlags=job_comment``); None until ``preflight`` finds out.
    ``clock`` paces the bounded waits for a write to land (a virtual clock with a simulator).
    ``user`` is the user whose jobs accounting is read for (``sacct --user``): squeue's
    ``--me`` sees only the caller's own jobs, but sacct run as root (or without PrivateData)
    shows every user's, so a site running the adapter as such a user names it; None leaves
    sacct's own default."""

    def __init__(
        self,
        transport: Transport,
        cluster: str = "slurm",
        clock: Clock | None = None,
        *,
        job_comment: bool | None = None,
        job_requeue: bool | None = None,
        user: str | None = None,
        timeout: float = 60.0,
        settle: float = 30.0,
    ) -> None:
        self.transport = transport
        self.cluster = cluster
        self.clock: Clock = clock if clock is not None else WallClock()
        self.job_comment = job_comment
        self.job_requeue = job_requeue
        self.user = user
        self.timeout = timeout
        self.settle = settle
        self.calls: Counter[str] = Counter()
        self._hold_count = itertools.count()
        self._probed: dict[Capability, Support] = {}

    @property
    def name(self) -> str:
        return self.cluster

    def reopen(self) -> SlurmBackend:
        """A second adapter instance on the same cluster, as after a process restart."""
        return SlurmBackend(
            self.transport,
            self.cluster,
            self.clock,
            job_comment=self.job_comment,
            job_requeue=self.job_requeue,
            user=self.user,
            timeout=self.timeout,
            settle=self.settle,
        )

    # -- capabilities and rules --------------------------------------------------------------------

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        def history() -> Support:
            if self.job_comment is None:
                return Support.unknown("whether accounting keeps comments is found by preflight")
            if self.job_comment:
                return Support.yes("AccountingStoreFlags=job_comment keeps comments")
            return Support.no("accounting has no job_comment flag: ended jobs lose their comment")

        def requeue() -> Support:
            if self.job_requeue is False:
                return Support.no("JobRequeue=0 on this cluster")
            return Support(
                value="yes", source=Source.CATALOGUE, reason="scontrol requeue of a batch job"
            )

        answers = {
            Capability.CONTAINER_IMAGE: Support.no("no container runtime is configured"),
            Capability.NATIVE_REQUEUE: requeue(),
            Capability.NATIVE_RESTART: Support.no("Slurm has no in-place restart"),
            Capability.HOLD: Support.yes("a far-future StartTime, decoded from EligibleTime"),
            Capability.PRE_TERMINATION_SIGNAL: Support(
                value="yes", source=Source.CATALOGUE, reason="sbatch --signal (slurm.Signal)"
            ),
            Capability.ACCOUNTING_HISTORY: history(),
            Capability.ATTEMPT_INJECTION: Support.yes(
                "the batch script computes DISPATCH_ variables from SLURM_RESTART_COUNT"
            ),
            Capability.READMISSION_GATE: Support.no("Slurm needs no readmission gate"),
            Capability.WORKING_DIRECTORY: Support.yes("sbatch --chdir"),
            Capability.PROCS_PER_NODE: Support.yes("sbatch --ntasks-per-node"),
            Capability.OUTPUT_PATH: Support.yes("sbatch --output"),
            Capability.OUTPUT_READ: Support.unknown("needs preflight: is the output visible"),
            Capability.OUTPUT_FOLLOW: Support.unknown("needs preflight: is the output visible"),
            Capability.OUTPUT_RETAINED: Support.unknown("needs preflight: is the output visible"),
        }
        answers.update(self._probed)
        return answers

    def rules(self, policy: Policy) -> list[RuleSupport]:
        answers = {
            RuleKind.RESUBMIT: Support.yes("a new sbatch of the same job"),
            RuleKind.HOLD: Support.yes("a numbered hold"),
            RuleKind.ESCALATE: Support.yes("reported to the supervisor"),
            # A requeue rule answers a failure, and a failed job has finished: see FINISHED_STAYS.
            RuleKind.REQUEUE: Support.no(f"a failed job has finished, and {FINISHED_STAYS}"),
            RuleKind.RESTART: Support.no("Slurm has no in-place restart"),
        }
        return [RuleSupport(perform=answers[rule.kind]) for rule in policy.rules]

    # -- the command line --------------------------------------------------------------------------

    def command(
        self, op: str, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run one Slurm command through the transport, as the adapter runs each of its own:
        under ``env SLURM_TIME_FORMAT=%s TZ=UTC LC_ALL=C``, within :attr:`timeout`, counted in
        :attr:`calls` under ``op``. Raises ``subprocess.TimeoutExpired`` as the transport does."""
        self.calls[op] += 1
        return self.transport.run([*ENV, *argv], stdin=stdin, timeout=self.timeout)

    def read(self, argv: Sequence[str], what: str) -> str:
        """The stdout of a read that must succeed, or OutcomeUnknown naming ``what`` (nothing
        has been written when it fails)."""
        try:
            done = self.command("read", argv)
        except subprocess.TimeoutExpired:
            raise OutcomeUnknown(f"{self.name}: {what} timed out; nothing was written") from None
        if done.returncode != 0:
            raise OutcomeUnknown(
                f"{self.name}: {what} failed ({done.stderr.strip()}); nothing was written"
            )
        return done.stdout

    def job_line(self, job_id: str) -> JobLine | None:
        """The live job with ``job_id`` as squeue shows it, whatever its name, or None when
        squeue has no such id; OutcomeUnknown when squeue does not answer."""
        argv = ["squeue", "-j", job_id, "-t", "all", "-h", "-O", SQUEUE_FORMAT]
        try:
            done = self.command("read", argv)
        except subprocess.TimeoutExpired:
            raise OutcomeUnknown(f"{self.name}: squeue -j {job_id} timed out") from None
        if done.returncode != 0:
            if _INVALID_ID in done.stderr:
                return None
            raise OutcomeUnknown(f"{self.name}: squeue -j {job_id} failed: {done.stderr.strip()}")
        lines = [
            line for line in self._parse(parse_squeue, done.stdout) if str(line.job_id) == job_id
        ]
        return lines[0] if lines else None

    def _parse(self, parser: object, text: str) -> list[JobLine]:
        try:
            return parser(text)  # type: ignore[operator,no-any-return]
        except ParseError as error:
            raise OutcomeUnknown(f"{self.name}: unreadable scheduler output: {error}") from None

    def _named(self, name: str) -> list[JobLine]:
        """Live jobs named exactly ``name`` (squeue matches without case; we re-match)."""
        argv = ["squeue", "--me", f"--name={name}", "-t", "all", "-h", "-O", SQUEUE_FORMAT]
        text = self.read(argv, f"squeue --name={name}")
        return [line for line in self._parse(parse_squeue, text) if line.name == name]

    def _accounted(self, name: str, since: int) -> list[JobLine] | None:
        """Accounting rows named exactly ``name`` since ``since``; None without accounting."""
        argv = [
            "sacct",
            f"--name={name}",
            "-X",
            "-D",
            "-P",
            "-n",
            "-S",
            f"uts{since}",
            # sacct selects by eligible time, which a requeue or a dispatch hold puts in the
            # future: without an end far out, the newest row of such a job would be left out.
            "-E",
            f"uts{SACCT_END}",
            "-o",
            SACCT_FORMAT,
        ]
        if self.user is not None:
            # squeue --me shows only the user's jobs; sacct run as root shows everyone's.
            argv.append(f"--user={self.user}")
        try:
            done = self.command("read", argv)
        except subprocess.TimeoutExpired:
            raise OutcomeUnknown(f"{self.name}: sacct timed out") from None
        if done.returncode != 0:
            # Only a cluster without accounting has no history; an accounting daemon that does
            # not answer is no answer (find would miss an ended object, and a supervisor
            # resolving an intent through find would submit it again).
            if "accounting storage is disabled" in done.stderr.lower():
                return None
            raise OutcomeUnknown(f"{self.name}: sacct failed: {done.stderr.strip()}")
        return [line for line in self._parse(parse_sacct, done.stdout) if line.name == name]

    # -- identity ----------------------------------------------------------------------------------

    def _checked(self, ref: ObjectRef) -> JobLine:
        """The live job ``ref`` names, if the identity check of seed 001 holds."""
        if ref.backend != self.name:
            raise NotFound(f"{ref.id} belongs to cluster {ref.backend!r}, not {self.name!r}")
        line = self.job_line(ref.id)
        if line is None:
            raise NotFound(f"{self.name}: job {ref.id} is no longer in squeue")
        _require_identity(line, ref, self.name)
        return line

    def _ours(self, ref: ObjectRef, what: str) -> JobLine:
        """The live job ``ref`` names, checked, and dispatch's: a foreign one (a comment that
        does not parse, or none) is never acted on (DESIGN §4), so ``what`` is Rejected."""
        line = self._checked(ref)
        seen = self._observe(line)
        if seen.foreign:
            raise Rejected(
                f"{self.name}: job {ref.id} is not dispatch's ({seen.detail}): no {what}"
            )
        return line

    def _ref(self, line: JobLine) -> ObjectRef:
        return ObjectRef(
            backend=self.name,
            uid=line.name,
            id=str(line.job_id),
            submit=datetime.fromtimestamp(line.submit, UTC),
        )

    def _observe(self, line: JobLine) -> Observation:
        submission = attempt = None
        foreign = False
        detail = f"{line.state}" + (f" ({line.reason})" if line.reason else "")
        if line.comment:
            try:
                submission, attempt = parse_slurm_comment(line.comment)
            except EncodingError:
                foreign = True
                detail += f"; comment {line.comment!r} is not dispatch's"
        elif line.from_accounting and line.end is not None and self.job_comment:
            foreign = True  # accounting keeps comments here, and this job had none
            detail += "; no comment"
        elif line.from_accounting:
            detail += "; accounting kept no comment: submission and attempt unknown"
        else:
            foreign = True
            detail += "; no comment"
        hold = decode_hold(line.eligible, line.submit) if line.state == "PENDING" else None
        state, cause = classify(line, hold)
        return Observation(
            ref=self._ref(line),
            state=state,
            cause=cause,
            submission=submission,
            attempt=attempt,
            restart_count=line.restart_count,
            exit_code=line.exit_code,
            hold=hold,
            foreign=foreign,
            detail=detail + (" [from accounting]" if line.from_accounting else ""),
        )

    # -- the SPI -----------------------------------------------------------------------------------

    def find(self, job_id: JobID) -> list[Observation]:
        name = job_id.discovery_name()
        live = self._named(name)
        since = max(0, int(job_id.ulid.timestamp) - 86_400)
        rows = self._accounted(name, since) or []
        shown = {(line.job_id, line.submit) for line in live}
        live_ids = {line.job_id: line for line in live}
        observations = [self._observe(line) for line in live]
        for line in latest_incarnations(rows):
            current = live_ids.get(line.job_id)
            if (line.job_id, line.submit) in shown:
                continue
            if current is not None and current.submit >= line.submit and current.restart_count:
                continue  # an earlier incarnation of a job squeue still shows
            observations.append(self._observe(line))
        return observations

    def open(self, ref: ObjectRef) -> Observation:
        if ref.backend != self.name:
            raise NotFound(f"{ref.id} belongs to cluster {ref.backend!r}, not {self.name!r}")
        line = self.job_line(ref.id)
        if line is not None:
            _require_identity(line, ref, self.name)
            return self._observe(line)
        rows = self._accounted(ref.uid, ref.submit_epoch - 1) or []
        mine = [
            r
            for r in latest_incarnations(rows)
            if str(r.job_id) == ref.id and r.submit >= ref.submit_epoch
        ]
        if not mine:
            raise NotFound(f"{self.name}: job {ref.id} is in neither squeue nor accounting")
        return self._observe(mine[0])

    def start(self, plan: Plan, submission: int, attempt: int) -> ObjectRef:
        if plan.backend != self.name:
            raise Rejected(f"the plan was made for {plan.backend!r}, not {self.name!r}")
        batch = batch_submission(plan, submission, attempt)
        name = plan.job.discovery_name()
        landed = self._landed(name, submission)
        if landed is not None:
            return self._ref(landed)
        try:
            done = self.command("sbatch", batch.argv, stdin=batch.script)
        except subprocess.TimeoutExpired:
            return self._resolve_lost_submission(plan, submission)
        if done.returncode != 0:
            refusal = done.stderr.strip()
            if "Unable to contact" in refusal:
                return self._resolve_lost_submission(plan, submission)
            raise Rejected(f"{self.name}: sbatch refused the job: {refusal}")
        job_id = parse_sbatch_id(done.stdout)
        if job_id is None:
            return self._resolve_lost_submission(plan, submission)
        line = self.job_line(job_id)
        if line is None or line.name != name:
            # Purged already, or the id taken again: find it by name and submission.
            return self._resolve_lost_submission(plan, submission)
        return self._ref(line)

    def _landed(self, name: str, submission: int) -> JobLine | None:
        for line in self._named(name):
            try:
                if parse_slurm_comment(line.comment).submission == submission:
                    return line
            except EncodingError:
                continue
        return None

    def _resolve_lost_submission(self, plan: Plan, submission: int) -> ObjectRef:
        """sbatch's answer was lost: whether the job landed is decided by find, never assumed."""
        for seen in self.find(plan.job):
            if not seen.foreign and seen.submission == submission:
                return seen.ref
        raise OutcomeUnknown(
            f"{self.name}: sbatch of {plan.job.discovery_name()} submission {submission} gave no "
            "answer and no such job is visible; find again before submitting anew"
        )

    def stop(self, ref: ObjectRef) -> None:
        try:
            line = self._checked(ref)
        except NotFound:
            return  # cancelling by name and id together finds nothing to cancel
        if line.state == "COMPLETING":
            # Ending, or on its way back to the queue (a requeue): a cancel now would not
            # hold, so wait until it is one or the other.
            seen = self._read_back_until(
                ref, lambda seen: seen is None or seen.state != "COMPLETING", "out of COMPLETING"
            )
            if seen is None:
                return
            line = seen
        if line.state in _ENDED:
            return
        argv = ["scancel", f"--name={ref.uid}", ref.id]
        try:
            done = self.command("scancel", argv)
        except subprocess.TimeoutExpired:
            done = None
        if done is not None and done.returncode != 0 and _INVALID_ID not in done.stderr:
            raise OutcomeUnknown(f"{self.name}: scancel {ref.id} failed: {done.stderr.strip()}")
        self._read_back_until(
            ref, lambda seen: seen is None or seen.state in _ENDED, "to end after scancel"
        )

    def _read_back_until(
        self, ref: ObjectRef, landed: Callable[[JobLine | None], bool], what: str
    ) -> JobLine | None:
        """Read the job back until ``landed(line)`` holds, within ``settle`` seconds."""
        waited, step = 0.0, 1.0
        while True:
            line = self.job_line(ref.id)
            if line is not None and not _same_object(line, ref):
                line = None
            if landed(line):
                return line
            if waited >= self.settle:
                raise OutcomeUnknown(
                    f"{self.name}: job {ref.id} did not come {what} within {self.settle:.0f} s"
                )
            pause(self.clock, step)
            waited += step
            step = min(step * 2, 8.0)

    # -- Holder ------------------------------------------------------------------------------------

    def hold(self, ref: ObjectRef) -> int:
        line = self._ours(ref, "hold")
        if line.state != "PENDING":
            raise Rejected(f"{self.name}: job {ref.id} is {line.state}; only a pending job is held")
        number = self._hold_number(decode_hold(line.eligible, line.submit))
        target = line.submit + HoldBase + number
        self._update(ref, f"StartTime=uts{target}", "hold")
        self._read_back_until(
            ref,
            lambda seen: seen is not None and decode_hold(seen.eligible, seen.submit) == number,
            f"to carry hold {number}",
        )
        return number

    def _hold_number(self, current: int | None) -> int:
        """A new hold number, never ``current``: milliseconds of the clock plus this instance's
        count of holds, so a later hold never takes an earlier one's number (within 16
        minutes, and never twice in one instance), and a stale release cannot free it."""
        stamp = int(self.clock.now() * 1000) + next(self._hold_count)
        number = stamp % (HoldBound - 1) + 1
        if number == current:
            number = number % (HoldBound - 1) + 1
        return number

    def release(self, ref: ObjectRef, hold: int) -> None:
        line = self._ours(ref, "release")
        carried = decode_hold(line.eligible, line.submit) if line.state == "PENDING" else None
        if carried is None:
            raise Conflict(f"{self.name}: job {ref.id} carries no hold (asked to release {hold})")
        if carried != hold:
            raise Conflict(f"{self.name}: job {ref.id} carries hold {carried}, not {hold}")
        self._update(ref, "StartTime=now", "release")
        self._read_back_until(
            ref,
            lambda seen: seen is None or decode_hold(seen.eligible, seen.submit) != hold,
            f"to drop hold {hold}",
        )

    def _update(self, ref: ObjectRef, assignment: str, op: str) -> None:
        argv = ["scontrol", "update", f"JobId={ref.id}", assignment]
        try:
            done = self.command(op, argv)
        except subprocess.TimeoutExpired:
            raise OutcomeUnknown(f"{self.name}: scontrol update {ref.id} timed out") from None
        if done.returncode != 0:
            text = done.stderr.strip()
            if "no longer pending" in text:
                raise Rejected(f"{self.name}: job {ref.id} started before the {op} landed")
            if _INVALID_ID in text:
                raise NotFound(f"{self.name}: job {ref.id} left squeue before the {op}")
            if "already finished" in text:
                raise Rejected(f"{self.name}: job {ref.id} ended before the {op} landed")
            raise OutcomeUnknown(f"{self.name}: scontrol update {ref.id} failed: {text}")

    # -- Requeuer ----------------------------------------------------------------------------------

    def requeue(self, ref: ObjectRef) -> None:
        """Two steps: ``Requeue=1``, then ``scontrol requeue``; a failure between them leaves
        the job requeueable but not requeued, and is OutcomeUnknown."""
        line = self._ours(ref, "requeue")
        if line.state in ("PENDING", "SPECIAL_EXIT"):
            raise Rejected(f"{self.name}: job {ref.id} is pending; only a started job is requeued")
        if line.state in _ENDED:
            raise Rejected(f"{self.name}: job {ref.id} is {line.state}: {FINISHED_STAYS}")
        self._update(ref, "Requeue=1", "requeue")
        try:
            done = self.command("requeue", ["scontrol", "requeue", ref.id])
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

    # -- OutputReader ------------------------------------------------------------------------------

    def output_path(self, ref: ObjectRef) -> str:
        """Where the job's stdout goes, as ``scontrol show job`` says (while it is in squeue)."""
        self._checked(ref)
        text = self.read(["scontrol", "show", "job", "-o", ref.id], "scontrol show job")
        match = re.search(r" StdOut=(.*?) Power=", text)
        if match is None or not match.group(1).startswith("/"):
            raise NotFound(f"{self.name}: scontrol show job {ref.id} names no output file")
        return match.group(1)

    def read_output(self, ref: ObjectRef, offset: int = 0) -> bytes:
        """The output written so far from byte ``offset``, read through the transport."""
        path = self.output_path(ref)
        try:
            done = self.transport.run(
                ["tail", "-c", f"+{offset + 1}", "--", path], timeout=self.timeout
            )
        except subprocess.TimeoutExpired:
            raise OutcomeUnknown(f"{self.name}: reading {path} timed out") from None
        if done.returncode != 0:
            raise NotFound(f"{self.name}: the output {path} of job {ref.id} is gone or unreadable")
        return done.stdout.encode("utf-8", "surrogateescape")

    def follow_output(self, ref: ObjectRef) -> Iterator[bytes]:
        """The output as it is written, until the job ends."""
        offset = 0
        while True:
            chunk = self.read_output(ref, offset)
            offset += len(chunk)
            if chunk:
                yield chunk
            line = self.job_line(ref.id)
            if line is None or not _same_object(line, ref) or line.state in _ENDED:
                return
            pause(self.clock, 1.0)

    # -- Preflight ---------------------------------------------------------------------------------

    def preflight(self, options: PreflightOptions | None = None) -> dict[Capability, Support]:
        """Probe what this cluster really does; each answer has source ``probed``. ``options``
        says where the probe jobs may write (``probe_dir``, on the cluster), how long each probe
        may take (``bound``) and where progress goes."""
        from adapters.slurm.preflight import run_preflight

        given = options if options is not None else PreflightOptions()
        self._probed = run_preflight(
            self, probe_dir=given.probe_dir, bound=given.bound, progress=given.progress
        )
        return dict(self._probed)


def _mismatch(line: JobLine, ref: ObjectRef) -> str | None:
    return identity_mismatch(
        ref.uid,
        ref.submit_epoch,
        uid=line.name,
        submit=line.submit,
        restart_count=line.restart_count or 0,
    )


def _same_object(line: JobLine, ref: ObjectRef) -> bool:
    return _mismatch(line, ref) is None


def _require_identity(line: JobLine, ref: ObjectRef, cluster: str) -> None:
    mismatch = _mismatch(line, ref)
    if mismatch is not None:
        raise NotFound(f"{cluster}: job {ref.id} is not the ref's: {mismatch}")


def latest_incarnations(rows: list[JobLine]) -> list[JobLine]:
    """One row per Slurm job object: the newest incarnation, following REQUEUED rows."""
    latest: dict[int, list[JobLine]] = {}
    for row in rows:
        objects = latest.setdefault(row.job_id, [])
        if (
            objects
            and objects[-1].state in ("REQUEUED", "NODE_FAIL", "PREEMPTED")
            and (objects[-1].end is None or row.submit >= objects[-1].end)
        ):
            objects[-1] = row  # the next incarnation of the same object
        else:
            objects.append(row)
    return [row for objects in latest.values() for row in objects]
