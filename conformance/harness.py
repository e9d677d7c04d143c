"""The harness an adapter author implements: how the suites reach the adapter under test.

A harness is small (the Go CDK ``drivertest`` idea): it makes fresh backends on its target,
re-opens one as a new process would, gives the suites its clock, declares its target's
identity model as data, and lists the scheduler's own view of the user's objects (the
oracle). Whatever more it can do is a power of :mod:`conformance.powers`, offered by
implementing its protocol. Every obligation is in the docstrings. A check declares what it
needs (:class:`~conformance.checks.Needs`); a need the harness lacks
(:func:`~conformance.powers.lacking`) skips the check with the reason before any backend is
made, never passes it.

Nothing here knows a scheduler: faults are intents (:class:`LookAlike`, :class:`Fault`) that
each harness turns into its scheduler's encoding (a Slurm comment, a Kubernetes label).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Generic, TypeVar

from dispatch_core import Backend, Clock, HoldBound


class CannotInject(Exception):
    """Raised by a harness for a fault or a probe it cannot provide (a form of it, an argument).

    A harness whose whole target is absent (no cluster answers) says what is missing in
    ``missing``, in words a site's administrator reads (``dispatch-conformance preflight``
    prints it); the message stays ``harness cannot inject <fault>`` for the checks. ``why``
    adds the reason to the message, ``harness cannot inject <fault> (<why>)``, and leaves
    ``fault`` the need alone (compared with :attr:`Harness.impossible`)."""

    def __init__(self, fault: str, *, missing: str = "", why: str = "") -> None:
        super().__init__(f"harness cannot inject {fault}" + (f" ({why})" if why else ""))
        self.fault = fault
        self.missing = missing


class HarnessUnavailable(Exception):
    """Raised by a harness whose target is missing where it must not be skipped (a real
    cluster under ``CI=true``): every check fails with this reason instead of skipping.
    ``missing`` is as for :class:`CannotInject`."""

    def __init__(self, message: str, *, missing: str = "") -> None:
        super().__init__(message)
        self.missing = missing


# -- the identity model ------------------------------------------------------------------------


class Lookup(StrEnum):
    """How the scheduler lets ``find`` look a job's objects up."""

    NAME = "name"
    """By the object's name, which the job determines (Slurm: ``squeue --name``, which matches
    without regard to case and splits on commas, so ``find`` must compare exactly itself)."""
    LABEL = "label"
    """By a label the job determines (Kubernetes: a label selector, exact by construction); the
    object's name is the adapter's choice, and several objects may carry the label."""


@dataclass(frozen=True)
class IdentityModel:
    """What a harness's target does to object identity, declared as data: the checks read it,
    and nothing sniffs an id's or a name's shape."""

    lookup: Lookup
    """How ``find`` looks objects up."""
    reuses_ids: bool
    """Whether a native id (``ObjectRef.id``) is handed to a new object once the old one is
    gone (Slurm after ``MaxJobId``; never on Kubernetes, where ``metadata.uid`` is unique)."""
    requeue_moves_submit: bool
    """Whether a requeue moves the object's ``submit`` forward (Slurm's SubmitTime) rather than
    keeping it (a Kubernetes object's creationTimestamp)."""
    history_outlives_live: bool
    """Whether an object gone from the live view can still be read from history (Slurm's
    accounting), so that ``find`` and ``open`` may see it after a purge."""

    def as_dict(self) -> dict[str, object]:
        return {
            "lookup": self.lookup.value,
            "reuses_ids": self.reuses_ids,
            "requeue_moves_submit": self.requeue_moves_submit,
            "history_outlives_live": self.history_outlives_live,
        }


# -- faults, as intents --------------------------------------------------------------------------


class LookAlike(StrEnum):
    """Kinds of objects that resemble a job's without being its own (seed 001)."""

    CASE_VARIANT = "case_variant"
    """The job's lookup key (name or label value) with its letters' case changed, carrying a
    valid identity (submission 1, attempt 1): a lookup that ignores case returns it."""
    COMMA_LIST = "comma_list"
    """A lookup key that lists the job's with another's (a comma list), carrying a valid
    identity: a lookup that splits on commas returns it."""
    UNPARSABLE_IDENTITY = "unparsable_identity"
    """The job's exact lookup key, with an identity (submission and attempt) that a strict
    parser refuses: it is foreign, reported and never used."""
    NO_IDENTITY = "no_identity"
    """The job's exact lookup key, live, with no identity at all: foreign, never used."""
    OTHER_USER = "other_user"
    """The job's exact lookup key and a valid identity, but another user's object: ``find``
    never returns it (seed 001: "Find sees only your own jobs")."""
    NEAR_IDENTITY = "near_identity"
    """The job's exact lookup key, with an identity one step off the grammar: one number not
    a canonical decimal in range (each of :data:`NEAR_DECIMALS`, in the submission or the
    attempt), or the shape off in one place (a field repeated, reordered, renamed or left
    trailing, as the encoding allows). A parser that is lenient anywhere takes it for the
    job's; it is foreign, reported and never used (seed 001: "exactly that shape")."""
    MISNAMED = "misnamed"
    """The job's exact lookup key and a valid identity (submission 1, attempt 1) under a
    native id that identity does not imply, where the encoding ties the two (Kubernetes: the
    TrainJob of submission N is named ``dj-<ulid>-<N>``): another submission's id, the implied
    id with a suffix or a prefix, its number spelled otherwise, an id of its own. A lenient
    comparison of the id (a prefix, a number read from it, none at all) takes it for the
    job's; it is foreign, reported and never used. Where the scheduler hands out the native
    ids (Slurm), or the identity implies none, no object can be it: ``impossible``."""

    @property
    def foreign(self) -> bool:
        """Whether ``find`` must report a look-alike of this kind as foreign (the job's exact
        key, an identity that does not parse or none, or one under a native id it does not
        imply) rather than not at all."""
        return self in _FOREIGN_KINDS


_FOREIGN_KINDS: Final = frozenset(
    {
        LookAlike.UNPARSABLE_IDENTITY,
        LookAlike.NO_IDENTITY,
        LookAlike.NEAR_IDENTITY,
        LookAlike.MISNAMED,
    }
)

NEAR_DECIMALS: Final[tuple[tuple[str, str], ...]] = (
    ("01", "a leading zero"),
    ("+1", "a sign"),
    ("-1", "a negative number"),
    ("0", "zero (numbers start at 1)"),
    ("1000000", "the epoch bound (numbers stay below 1,000,000)"),
    ("9" * 40, "forty digits"),
    (" 1", "a space before (int() strips it)"),
    ("1 ", "a space after"),
    ("\t1", "a tab before"),
    ("1_0", "a digit separator (int() takes 1_0 as 10)"),
    ("\u0661", "an Arabic-Indic digit one (int() and \\d take it)"),
    ("\uff11", "a fullwidth digit one (int() and \\d take it)"),
    ("1\u0661", "a 1 then an Arabic-Indic digit (\\d after an ASCII first digit)"),
    ("\u00b9", "a superscript one (str.isdigit() is true, int() refuses it)"),
    ("1.0", "a decimal point"),
    ("1e0", "an exponent"),
    ("0x1", "hexadecimal"),
    ("", "nothing"),
)
"""Number texts one step off the canonical decimal grammar (DESIGN §4: canonical decimals from
1, below the epoch bound, no leading zeros, nothing else), each with why it is off: what a
lenient parser (Python's ``int()``, a regex's unicode ``\\d``, ``str.isdigit()``) takes for a
number. Every harness builds its :attr:`LookAlike.NEAR_IDENTITY` forms from these."""


STALL_BOUND: Final = 3600.0
"""Seconds of a virtual clock an adapter call may wait while a stall lasts
(:class:`~conformance.powers.StallsTeardown`) before the harness fails the check: far above
any bound an adapter sets itself (the Kubeflow adapter's is 120 s)."""


def advance_to_residue(
    now: Callable[[], float], advance: Callable[[float], object], residue: int, modulus: int
) -> bool:
    """Advance a clock (``now`` reads it, ``advance`` moves it, at most ``modulus``
    milliseconds in all) until its whole milliseconds are ``residue`` modulo ``modulus``: what a
    harness does to put an adapter whose numbers come from the clock at an edge of its
    numbering (:class:`~conformance.powers.MovesToHoldEdges`). False when its float time could
    not be brought to that millisecond."""
    for _ in range(4):
        gap = (residue - int(now() * 1000)) % modulus
        if gap == 0:
            return True
        advance(gap / 1000)
    return False


CLOCK_HOLD_EDGES: Final[tuple[tuple[int, str], ...]] = (
    (HoldBound - 2, "its largest hold number, 999999"),
    (0, "its smallest hold number, 1, where the numbering wraps"),
    (HoldBound - 3, "its next-to-largest hold number, 999998, which another must step over"),
)
"""For an adapter that numbers holds from its clock, as ``(milliseconds + the instance's count
of holds) % (HoldBound - 1) + 1`` (both built-in ones): the residues of the clock's
milliseconds modulo ``HoldBound - 1`` at which a new instance's first hold takes an edge
number, each with a few words (:meth:`~conformance.powers.MovesToHoldEdges.hold_edge`)."""


class Fault(StrEnum):
    """What a fault injector can be asked for: each value names one of its methods (a
    look-alike kind is needed as ``look_alike:<kind>``, see :func:`look_alike_need`)."""

    LET_RUN = "let_run"
    FINISH = "finish"
    REQUEUE_UNDERNEATH = "requeue_underneath"
    PURGE = "purge"
    REUSE_ID = "reuse_id"
    REUSE_ID_NEXT = "reuse_id_next"
    LOSE_IDENTITY_HISTORY = "lose_identity_history"
    LOSE_NODE = "lose_node"
    OOM_KILL = "oom_kill"
    EVICT = "evict"
    LOSE_NEXT_REPLY = "lose_next_reply"
    FAIL_BEFORE_EFFECT = "fail_before_effect"
    FAIL_EVERY_TRY = "fail_every_try"
    VANISH_BEFORE_READ_BACK = "vanish_before_read_back"
    IGNORE_NEXT_STOP = "ignore_next_stop"
    IGNORE_NEXT_WRITE = "ignore_next_write"
    RACE_NEXT_WRITE = "race_next_write"
    FAIL_BETWEEN_STEPS = "fail_between_steps"
    PREEMPT = "preempt"
    LAG_HISTORY = "lag_history"
    DISABLE_HISTORY = "disable_history"
    NEAR_HOLD = "near_hold"
    HOLD_EDGE = "hold_edge"
    RECREATE = "recreate"
    TAKE_ID_AHEAD = "take_id_ahead"
    TAKE_QUOTA = "take_quota"
    STALL_TEARDOWN = "stall_teardown"


class Race(StrEnum):
    """What the scheduler does to the object between the adapter's read of it and its write
    (:meth:`~conformance.powers.RacesWrites.race_next_write`)."""

    STARTS = "starts"
    """The queued object starts (its execution begins)."""
    VANISHES = "vanishes"
    """The object ends and leaves the live view (its history, if kept, stays)."""
    ENDS = "ends"
    """The object ends and stays in the live view, ended (someone cancelled it; Slurm:
    ``scontrol update`` answers ``Job has already finished``). Where a queued object can end
    only by running (Kubernetes), it runs first."""
    TOUCHED = "touched"
    """Another writer changes the object in nothing the write depends on, so the write meets a
    newer version of an object still as the adapter read it (Kubernetes: a controller's write
    moves the resourceVersion, and an update carrying the one read is a 409 Conflict). The
    write can still land: the adapter re-reads, judges and writes again. A scheduler whose
    writes carry no precondition (Slurm) cannot inject it. On an operation of two writes, each
    object written is touched once, before its first write."""


class ReplyLoss(StrEnum):
    """How a reply lost after the command took effect shows to the adapter
    (:meth:`~conformance.powers.LosesReplies.lose_next_reply`)."""

    TIMEOUT = "timeout"
    """The command does not answer within the adapter's timeout."""
    FAILURE = "failure"
    """The command fails at once, saying the scheduler could not be reached after the request
    went out (Slurm: ``Unable to contact slurm controller (receive failure)``)."""
    GARBLED = "garbled"
    """The command says it succeeded, but its output is cut off (empty): nothing in it names
    what was done."""


class Probe(StrEnum):
    """What a harness can show a check, or let it do, besides faults (each the need for a
    power of :mod:`conformance.powers`)."""

    EXECUTIONS = "executions"
    """:class:`~conformance.powers.ObservesExecutions`: the environment each rank of each
    execution saw."""
    HOST_PATHS = "host_paths"
    """:class:`~conformance.powers.ShowsPaths`: scratch directories and files on the cluster's
    filesystem."""
    COMMANDS = "commands"
    """:class:`~conformance.powers.RunsCommands`: the jobs' commands really run, on the
    filesystem its host shows, once a job runs (``let_run``): a check sees what they print to
    their output and write to files (a scheduler model that only records executions lacks
    it)."""
    SIGNALS = "signals"
    """:class:`~conformance.powers.ObservesSignals`: a spec that asks for
    a time limit and a signal before it, and when the processes got the signal and ended."""
    INVENTORY = "inventory"
    """:class:`~conformance.powers.ShowsInventory`: the user's objects on the target that have
    not ended, whoever made them."""
    PREFLIGHT = "preflight"
    """:class:`~conformance.powers.PreflightsFree`: a check may run the adapter's preflight on
    this target: its probes' waits cost no real time here (a virtual clock). A harness on a
    real cluster, where the probes hold real jobs for minutes, lacks it with the reason
    (``dispatch-conformance preflight`` runs them)."""
    IMAGES = "images"
    """:class:`~conformance.powers.ObservesImages`: the container image each rank of each
    execution ran in, as the target saw it."""
    SELF_RESTARTS = "self_restarts"
    """:class:`~conformance.powers.RerunsFailures`: a spec whose object the scheduler itself
    reruns in place after a failed execution, a bounded number of times, before it ends
    failed."""
    RANK_OUTPUT = "rank_output"
    """:class:`~conformance.powers.WritesRankOutput`: one rank of a running object's current
    execution writes a line to its output, now."""
    RUNTIMES = "runtimes"
    """:class:`~conformance.powers.WeakensIdentity`: a spec naming a runtime under which a
    failed rank reruns with the identity it had, and one naming a runtime that keeps it."""
    BEYOND_CAPACITY = "beyond_capacity"
    """:class:`~conformance.powers.AsksBeyondCapacity`: a spec asking for more than the
    target could ever give it."""
    UNPULLABLE_IMAGE = "unpullable_image"
    """:class:`~conformance.powers.AsksUnpullableImage`: a spec naming a container image the
    target can never pull."""
    OTHER_TARGETS = "other_targets"
    """:class:`~conformance.powers.OpensOtherTargets`: a second adapter instance in the same
    process, on another target of the scheduler that refuses a spec the check's target
    accepts."""


class Shown(StrEnum):
    """An object's state as the scheduler's own listing shows it (:meth:`Harness.listing`)."""

    PENDING = "pending"
    """Queued or held: not started (Slurm: PENDING; Kubernetes: a suspended or not yet running
    TrainJob)."""
    RUNNING = "running"
    """Started and not yet ended, ending included (Slurm: RUNNING, COMPLETING)."""
    ENDED = "ended"
    """Ended, still in the live view (Slurm: COMPLETED, CANCELLED, FAILED, ...)."""


@dataclass(frozen=True)
class Listed:
    """One object of :meth:`Harness.listing`: its state and the job its lookup key names (the
    ``JobID`` text; None when the key names no job: someone else's object)."""

    state: Shown
    job: str | None


@dataclass(frozen=True)
class Signalled:
    """What the processes of one execution were sent before their end (:meth:`Harness.signals`),
    in seconds of the harness clock."""

    received: tuple[float, ...]
    """When the processes received a signal before their end, in order (the pre-termination
    signal the spec asked for; empty when none came)."""
    ended: float | None
    """When the processes were killed, or otherwise ended; None while they still run."""


OPERATIONS: tuple[str, ...] = ("start", "stop", "hold", "release", "requeue")
"""The writes a reply-losing or failing-before-effect fault can target."""


def look_alike_need(kind: LookAlike) -> str:
    """The need a check declares for a look-alike of ``kind``."""
    return f"look_alike:{kind.value}"


LOOK_ALIKES_HELD: Final = "look_alike:held"
"""The need of a check that holds the adapter to leaving look-alikes as they wait: those
:class:`~conformance.powers.MakesLookAlikes` makes stay pending until someone acts on them
(held, suspended, waiting on an admission check). A harness whose look-alikes the scheduler
runs by itself (slurm-sim's are eligible, so that accounting shows them) declines it."""


def race_need(race: Race) -> str:
    """The need a check declares for :class:`~conformance.powers.RacesWrites` with ``race``
    (``race_next_write`` alone is the need for the races a scheduler without write
    preconditions can make: starts, ends, vanishes)."""
    return f"{Fault.RACE_NEXT_WRITE.value}:{race.value}"


def reply_loss_need(form: ReplyLoss) -> str:
    """The need a check declares for :class:`~conformance.powers.LosesReplies` in ``form``
    (``lose_next_reply`` alone for the timeout, which every harness that loses replies makes)."""
    if form is ReplyLoss.TIMEOUT:
        return Fault.LOSE_NEXT_REPLY.value
    return f"{Fault.LOSE_NEXT_REPLY.value}:{form.value}"


def fault_needs() -> list[str]:
    """Every fault need a check may declare, in a stable order."""
    return (
        [f.value for f in Fault]
        + [look_alike_need(k) for k in LookAlike]
        + [LOOK_ALIKES_HELD]
        + [race_need(Race.TOUCHED)]
        + [reply_loss_need(form) for form in (ReplyLoss.FAILURE, ReplyLoss.GARBLED)]
    )


# -- paths on the cluster ----------------------------------------------------------------------


class Host(ABC):
    """Paths on the cluster's filesystem, as its jobs see them: where a check's work
    directories and output files live, and what they hold (a :class:`~conformance.powers.ShowsPaths`
    harness gives one). The checks never touch the runner's filesystem themselves, so they run
    on remote clusters too."""

    @abstractmethod
    def scratch_dir(self) -> str:
        """A fresh, empty directory the jobs can use, removed by :meth:`remove`."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` exists."""

    @abstractmethod
    def read(self, path: str) -> str | None:
        """The text of the file at ``path`` (undecodable bytes replaced), or None when there is
        none."""

    @abstractmethod
    def realpath(self, path: str) -> str:
        """``path`` with every symbolic link resolved."""

    @abstractmethod
    def remove(self, path: str) -> None:
        """Remove the directory tree at ``path`` (a scratch directory)."""

    @abstractmethod
    def make_dir(self, path: str) -> None:
        """Make the directory ``path`` (inside a scratch directory; any bytes but NUL in its
        name): a work directory a check names."""


class LocalHost(Host):
    """This machine's filesystem: for a target whose jobs run here (a simulator, the memory
    adapter, a real cluster whose login node this is). Scratch directories are made in
    ``root``, by default the temp directory."""

    def __init__(self, root: str | None = None) -> None:
        self.root = root

    def scratch_dir(self) -> str:
        return tempfile.mkdtemp(prefix="dispatch-conformance-", dir=self.root)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def read(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                return file.read()
        except FileNotFoundError:
            return None

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def remove(self, path: str) -> None:
        shutil.rmtree(path)

    def make_dir(self, path: str) -> None:
        os.mkdir(path)


# -- the harness ---------------------------------------------------------------------------------


B = TypeVar("B", bound=Backend)


class Harness(ABC, Generic[B]):
    """What an adapter author writes to run the suites against an adapter, generic over its
    backend type ``B`` so that it needs no casts: the contract every harness keeps. Whatever
    more it can do (drive the scheduler, lose replies, make look-alikes, act underneath the
    adapter, observe executions) it offers by implementing the protocols of
    :mod:`conformance.powers`; the kit finds them by type.

    One harness value serves a run. Around each check the runner calls :meth:`begin` once
    before and :meth:`end` once after it (the Go CDK "called once per test"); within it the
    suites call :meth:`new_backend` once (a stateful check once per generated program) and
    never share a backend between checks. :meth:`close` is called once, after the last."""

    name: str = "unnamed"
    identity: IdentityModel
    """The target's identity model. Every harness declares it (the runner refuses one that
    does not)."""
    impossible: frozenset[str] = frozenset()
    """The needs its target cannot have by its nature, whoever wrote the harness (Slurm hands
    out every native id itself, so nobody can recreate an object under one; its writes carry
    no precondition another writer could break): a check needing one does not apply there, and
    its skip is no gap in the verdict's coverage (:mod:`conformance.profiles`). Needs the
    harness merely does not offer are not listed here. A fault the target has in one form only
    is listed as :class:`CannotInject` names the form it lacks (``requeue_underneath(held)``)."""
    schedule_within: float = 30.0
    """Seconds (on the harness clock) within which the scheduler starts a queued, eligible
    object when it has room: how long a check watches a held object to see it does not."""
    stateful_examples: int | None = None
    """How many programs each stateful check generates (None: the suite's own number); a
    harness whose every step takes real seconds lowers it, and says so in its docs."""
    stateful_steps: int | None = None
    """How many steps each generated program takes at most (None: the suite's own number)."""
    crash_points: int | None = None
    """How many of CORE-009's crash points (each a scenario and a lease expiry) it tries,
    chosen by the run's seed (None: every one); a harness whose every step takes real seconds
    lowers it, and says so in its docs."""

    def declines(self, need: str) -> str | None:
        """Why this harness's target, as configured, cannot give ``need`` (a need whose power
        it implements: a form of it, or one the cluster's configuration rules out), or None.
        For a need whose power it does not implement it may say why (the skip shows it); it is
        unmet either way. Called before any backend is made: it must create nothing on the
        target (reading the target's configuration is fine). The default declines nothing."""
        return None

    def begin(self, check_id: str) -> None:
        """Called once before the check ``check_id`` runs (after its needs were met)."""

    def end(self, check_id: str) -> None:
        """Called once after the check ``check_id`` ran and its tracker cleaned up, whatever
        its outcome: remove what the harness made for it. What it raises is the check's
        error."""

    @abstractmethod
    def new_backend(self) -> B:
        """A fresh backend on a clean target (a new cluster for a simulator), ready to use.
        Called once per check, or once per program of a stateful check."""

    @abstractmethod
    def reopen(self, backend: B) -> B:
        """A second adapter instance on the same cluster as ``backend``, as after a process
        restart: it shares nothing with ``backend`` but the scheduler."""

    @abstractmethod
    def clock(self, backend: B) -> Clock:
        """The clock ``backend``'s cluster runs on; every wait in a check goes through it (a
        virtual clock makes waits free)."""

    @abstractmethod
    def listing(self, backend: B) -> Mapping[str, Listed]:
        """The scheduler's own view of the user's objects on ``backend``'s target: each object
        its live view holds (ended ones included until they leave it), by native id as
        ``ObjectRef.id`` names it, with its state and the job its lookup key names. Read from
        the target, never through the adapter: it is the oracle that the observation checks
        hold the adapter's answers to, so every harness gives it. Cheap enough to call a few
        times in a check."""

    def job_command(self) -> tuple[str, ...]:
        """The command of the checks' jobs when a check names none. The default, ``true``,
        suits a harness whose scheduler decides when a job ends (a simulator); a harness on a
        real scheduler returns a command that runs until its ``finish`` or a stop ends it, so
        that a started object stays running as the checks expect."""
        return ("true",)

    def close(self) -> None:
        """Release what the harness holds (called once, after the last check)."""


__all__ = [
    "OPERATIONS",
    "STALL_BOUND",
    "CannotInject",
    "Fault",
    "Harness",
    "HarnessUnavailable",
    "Host",
    "IdentityModel",
    "Listed",
    "LocalHost",
    "LookAlike",
    "Lookup",
    "Probe",
    "Race",
    "ReplyLoss",
    "Shown",
    "Signalled",
    "advance_to_residue",
    "fault_needs",
    "look_alike_need",
    "race_need",
    "reply_loss_need",
]
