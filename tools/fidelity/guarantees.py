"""Guarantees: what real Slurm promises about a scenario whatever its timing, judged on a live
run and on its replay alike (:func:`judge`).

A text differential (:func:`~tools.fidelity.comparison.compare`) is exact and right for a
recorded fixture, replayed the same way every time. Against a live cluster it is not: when a
purge pass, a scheduler pass or a node's ping comes is the cluster's own business, and a
listing taken a second earlier or later reads differently. So a live run is judged on what
Slurm guarantees, in three kinds:

- **order**: each job's states, in the order the steps saw them, follow a path the scheduler
  can take (:class:`Path`);
- **outcome**: final states, reasons, restart counts, accounting rows: the same on both sides;
- **windows**: each moment the scenario depends on falls in a window computed from the
  cluster's own configuration (:class:`Windows`: SlurmdTimeout, MessageTimeout,
  sched_interval, MinJobAge, cred_expire), never from one recording's seconds.

The facts behind each window are cited beside it (Slurm 22.05.8, the files of the tag
``slurm-22-05-8-1``)."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from tools.fidelity.cluster import ClusterInfo
from tools.fidelity.scenario import GONE, LoseNode, Run, WaitState
from tools.fidelity.transcript import Transcript

ENDED: Final = frozenset(
    {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
     "BOOT_FAIL", "DEADLINE"}
)  # fmt: skip
_ROUNDING: Final = 1
"""Slurm's times are whole seconds and a step's start is read from the host's clock: a moment
may read up to a second either side of the step that saw it."""


@dataclass(frozen=True)
class Windows:
    """The timing windows a cluster's configuration gives (seconds)."""

    requeue_delay: int
    """A job requeued by slurmctld becomes eligible exactly this long after its new
    SubmitTime, the requeue: ``cred_expire + 1`` (job_mgr.c ``batch_requeue_fini``, 16109:
    ``begin_time = now + cred_lifetime + 1``; 16117: ``submit_time = now``)."""
    schedule: int
    """An eligible job that fits starts within this long: nothing fires when a begin time
    passes (``job_independent``), but the main scheduler's full pass runs once
    ``sched_interval`` s have passed since the last (controller.c ``_slurmctld_background``,
    2213), checked about once a second. An earlier pass (a submission, a node back, a job's
    end; or backfill, which runs only when something changed) may start it sooner."""
    purge: tuple[int, int]
    """An ended job leaves squeue within this window after its end: ``_list_find_job_old``
    takes a job with ``end_time <= now - MinJobAge`` (job_mgr.c 10083), on a pass every
    ``MAX(10, MinJobAge)`` s when 0 < MinJobAge < 60, else every 60 s (controller.c 2021-2026),
    retried a second later while backfill runs."""
    node_down: int
    """A node whose machine is gone is marked DOWN, and its jobs end (``set_node_down_ptr``
    then ``kill_running_job_by_node_name``, in the same pass), within this long: a ping pass
    runs every ``I = SlurmdTimeout / 3`` s and sets DOWN a node not heard from for
    SlurmdTimeout s before the previous pass (ping_nodes.c 179, 277), so DOWN comes at most
    ``SlurmdTimeout + 2 I'`` after its last answer, where ``I'`` is ``I + 1`` or, when a pass
    to a vanished address outlasts it, that pass, cut off at ``MAX(MessageTimeout, 30)`` s
    (agent.c 1749)."""

    @classmethod
    def of(cls, info: ClusterInfo) -> Windows:
        age = info.min_job_age
        every = max(10, age) if 0 < age < 60 else 60
        ping = max(info.slurmd_timeout // 3 + 1, max(info.message_timeout, 30))
        return cls(
            requeue_delay=info.cred_expire + 1,
            schedule=info.sched_interval + 1,
            purge=(age, age + every + 1),
            node_down=info.slurmd_timeout + 2 * ping + 2,
        )

    def describe(self) -> str:
        return (
            f"requeue delay {self.requeue_delay} s, schedule within {self.schedule} s, purge "
            f"{self.purge[0]}-{self.purge[1]} s after the end, node down within "
            f"{self.node_down} s"
        )


@dataclass(frozen=True)
class Sighting:
    """What one step showed of one job: its state (``GONE``: squeue no longer knows it) and the
    fields it printed; ``at`` is the step's start (epoch seconds)."""

    step: int
    at: float
    source: str
    state: str
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Story:
    """Everything a transcript showed of one job (by its label), in step order."""

    label: str
    sightings: list[Sighting] = field(default_factory=list)
    accounting: list[list[dict[str, str]]] = field(default_factory=list)
    """Each sacct step's rows for the job."""

    def states(self) -> list[str]:
        """The live states seen, in order, repeats folded."""
        seen: list[str] = []
        for sighting in self.sightings:
            if not seen or seen[-1] != sighting.state:
                seen.append(sighting.state)
        return seen

    def shown(self, key: str) -> list[tuple[Sighting, str]]:
        """Each sighting that printed ``key``, with its value."""
        return [(s, s.fields[key]) for s in self.sightings if key in s.fields]

    def last(self, key: str) -> str | None:
        values = self.shown(key)
        return values[-1][1] if values else None

    def ended(self) -> int | None:
        """The job's end (epoch seconds): scontrol's EndTime, else accounting's End (which
        outlives the purge)."""
        shown = _number(self.last("EndTime"))
        if shown is not None:
            return shown
        rows = [row for rows in self.accounting for row in rows if "End" in row]
        return _number(rows[-1]["End"]) if rows else None


def stories(transcript: Transcript) -> dict[str, Story]:
    """Each bound job's :class:`Story`, read from the transcript's listings."""
    labels = {value: key for key, value in transcript.bindings.items()}
    found = {label: Story(label) for label in transcript.bindings}
    for result in transcript.steps:
        at = transcript.start + result.t
        step = result.step
        if isinstance(step, WaitState) and result.reached in (*step.states, GONE):
            found[step.job].sightings.append(Sighting(result.index, at, "wait", result.reached))
        if not isinstance(step, Run) or result.argv is None or result.rc is None:
            continue
        argv = [word for word in result.argv if not _is_env(word)]
        if not argv:
            continue
        if argv[0] == "squeue":
            for job_id, sighting in _squeue(argv, result.stdout, result.index, at).items():
                if job_id in labels:
                    found[labels[job_id]].sightings.append(sighting)
        elif argv[:3] == ["scontrol", "show", "job"] and argv[-1] in labels:
            story = found[labels[argv[-1]]]
            if result.rc != 0 and "Invalid job id specified" in result.stderr:
                story.sightings.append(Sighting(result.index, at, "scontrol", GONE))
            elif result.rc == 0:
                fields = _show_fields(result.stdout)
                state = fields.get("JobState", "")
                story.sightings.append(Sighting(result.index, at, "scontrol", state, fields))
        elif argv[0] == "sacct" and result.rc == 0:
            rows = _sacct_rows(result.stdout)
            for job_id, label in labels.items():
                mine = [row for row in rows if row.get("JobID") == job_id]
                if _asked(argv, job_id):
                    found[label].accounting.append(mine)
    return found


def _is_env(word: str) -> bool:
    return word == "env" or bool(re.fullmatch(r"[A-Z_]+=.*", word))


def _option(argv: Sequence[str], short: str) -> str | None:
    for index, word in enumerate(argv[:-1]):
        if word == short:
            return argv[index + 1]
    return None


def _asked(argv: Sequence[str], job_id: str) -> bool:
    return job_id in (_option(argv, "-j") or "").split(",")


_SQUEUE_LETTERS: Final = {"i": "JobId", "j": "JobName", "T": "JobState", "r": "Reason",
                          "N": "NodeList"}  # fmt: skip


def _squeue(argv: Sequence[str], stdout: str, index: int, at: float) -> dict[str, Sighting]:
    """The jobs a ``squeue -o 'a|b|...'`` listing showed, and those of its ``-j`` list it left
    out (``GONE``, where ``-t all`` asked for ended jobs too)."""
    spec = _option(argv, "-o") or ""
    names = [_SQUEUE_LETTERS.get(part.removeprefix("%"), part) for part in spec.split("|")]
    if "JobId" not in names or "JobState" not in names:
        return {}
    seen: dict[str, Sighting] = {}
    for line in stdout.splitlines():
        values = line.split("|")
        if len(values) != len(names):
            continue
        fields = dict(zip(names, values, strict=True))
        seen[fields["JobId"]] = Sighting(index, at, "squeue", fields["JobState"], fields)
    if _option(argv, "-t") == "all":
        for job_id in (_option(argv, "-j") or "").split(","):
            if job_id and job_id not in seen:
                seen[job_id] = Sighting(index, at, "squeue", GONE)
    return seen


def _show_fields(stdout: str) -> dict[str, str]:
    """``scontrol show job -o``'s ``Key=value`` words (values without spaces: the ones read
    here)."""
    fields: dict[str, str] = {}
    for word in shlex.split(stdout.strip(), posix=False) if stdout.strip() else []:
        key, sep, value = word.partition("=")
        if sep and key not in fields:
            fields[key] = value
    return fields


def _sacct_rows(stdout: str) -> list[dict[str, str]]:
    lines = stdout.splitlines()
    if not lines:
        return []
    header = lines[0].split("|")
    rows = []
    for line in lines[1:]:
        values = line.split("|")
        if len(values) == len(header):
            rows.append(dict(zip(header, values, strict=True)))
    return rows


@dataclass(frozen=True)
class Path:
    """The states a job may pass through, in order: each entry is a set of states that may
    repeat, be skipped when ``optional``, and must be left only for a later entry."""

    stages: tuple[tuple[frozenset[str], bool], ...]

    def follows(self, states: Sequence[str]) -> bool:
        """Whether ``states`` (repeats folded) walk the stages in order, skipping only
        optional ones and leaving each only for a later one."""
        position, entered = 0, False
        for state in states:
            while position < len(self.stages) and state not in self.stages[position][0]:
                if not (entered or self.stages[position][1]):
                    return False
                position, entered = position + 1, False
            if position == len(self.stages):
                return False
            entered = True
        rest = self.stages[position + 1 if entered else position :]
        return all(optional for _, optional in rest)

    def describe(self) -> str:
        parts = []
        for states, optional in self.stages:
            text = "|".join(sorted(states))
            parts.append(f"({text})?" if optional else text)
        return " -> ".join(parts)


def path(*stages: str) -> Path:
    """A :class:`Path` from ``"RUNNING"``, ``"PENDING|COMPLETING?"`` (``?``: optional)."""
    return Path(
        tuple(
            (frozenset(stage.removesuffix("?").split("|")), stage.endswith("?")) for stage in stages
        )
    )


@dataclass(frozen=True)
class Breach:
    """A guarantee a side did not keep, or an outcome the two sides do not share."""

    side: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.side}: {self.rule}: {self.detail}"


Rule = Callable[[Mapping[str, Story], Transcript, Windows], list[str]]


@dataclass(frozen=True)
class Guarantees:
    """A scenario's guarantees: its rules (each a name and a function of the stories that
    returns what broke it) and its outcome (facts both sides must share)."""

    scenario: str
    rules: tuple[tuple[str, Rule], ...]
    outcome: Callable[[Mapping[str, Story]], dict[str, str]]


def _moment(transcript: Transcript, kind: type) -> tuple[float, float]:
    """The start and end (epoch seconds) of the first step of ``kind``."""
    for result in transcript.steps:
        if isinstance(result.step, kind):
            began = transcript.start + result.t
            return began, began + result.elapsed
    raise ValueError(f"{transcript.scenario} has no {kind.__name__} step")


def _number(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _in(value: float, low: float, high: float) -> bool:
    return math.floor(low) - _ROUNDING <= value <= math.ceil(high) + _ROUNDING


# -- node-loss ------------------------------------------------------------------------------------

_LOST: Final = path("RUNNING", "NODE_FAIL?", "GONE?")
_REQUEUED: Final = path("RUNNING", "COMPLETING|REQUEUED|PENDING?", "RUNNING?")


def _order(stories_: Mapping[str, Story], _: Transcript, __: Windows) -> list[str]:
    broken = []
    for label, expected in (("A", _LOST), ("B", _REQUEUED)):
        states = stories_[label].states()
        if not expected.follows(states):
            broken.append(f"{label} went {' -> '.join(states)}, not {expected.describe()}")
    return broken


def _ends_with_the_node(stories_: Mapping[str, Story], real: Transcript, w: Windows) -> list[str]:
    """A ends, and B is requeued, while slurmctld marks the node down: after the node is lost,
    no later than the lose step's end (it waits for DOWN), and within ``node_down``."""
    lost, marked = _moment(real, LoseNode)
    broken = []
    ended = stories_["A"].ended()
    requeued = _number(stories_["B"].last("SubmitTime"))
    for what, when in (("A's EndTime", ended), ("B's new SubmitTime", requeued)):
        if when is None:
            broken.append(f"{what} was never shown")
        elif not _in(when, lost, marked):
            broken.append(f"{what} {when - lost:+.0f} s after the node was lost, outside the "
                          f"lose step (0 to {marked - lost:.0f} s)")  # fmt: skip
    if marked - lost > w.node_down + _ROUNDING:
        broken.append(f"the node was marked down {marked - lost:.0f} s after it was lost, "
                      f"over the window of {w.node_down} s")  # fmt: skip
    return broken


def _requeue_delay(stories_: Mapping[str, Story], _: Transcript, w: Windows) -> list[str]:
    submit = _number(stories_["B"].last("SubmitTime"))
    eligible = _number(stories_["B"].last("EligibleTime"))
    if submit is None or eligible is None:
        return ["B's SubmitTime and EligibleTime were never shown"]
    if eligible - submit != w.requeue_delay:
        return [f"B became eligible {eligible - submit} s after its requeue, not "
                f"cred_expire + 1 = {w.requeue_delay} s"]  # fmt: skip
    return []


def _restart(stories_: Mapping[str, Story], _: Transcript, w: Windows) -> list[str]:
    eligible = _number(stories_["B"].last("EligibleTime"))
    started = _number(stories_["B"].last("StartTime"))
    if eligible is None or started is None:
        return ["B's EligibleTime and StartTime were never shown"]
    if not 0 <= started - eligible <= w.schedule + _ROUNDING:
        return [f"B restarted {started - eligible} s after it became eligible, outside 0 to "
                f"{w.schedule} s (the first scheduler pass)"]  # fmt: skip
    return []


def _purge(stories_: Mapping[str, Story], _: Transcript, w: Windows) -> list[str]:
    """A leaves squeue no sooner than MinJobAge after its end and no later than the purge
    pass after that."""
    story = stories_["A"]
    ended = story.ended()
    broken = []
    for sighting in story.sightings:
        if ended is None or sighting.at < ended:
            continue
        age = sighting.at - ended
        if sighting.state == GONE and age < w.purge[0] - _ROUNDING:
            broken.append(f"A was gone {age:.0f} s after its end (step {sighting.step}), "
                          f"before MinJobAge ({w.purge[0]} s)")  # fmt: skip
        if sighting.state in ENDED and age > w.purge[1] + _ROUNDING:
            broken.append(f"A was still listed {age:.0f} s after its end (step "
                          f"{sighting.step}), past the purge window ({w.purge[1]} s)")  # fmt: skip
    return broken


def _accounting(stories_: Mapping[str, Story], _: Transcript, __: Windows) -> list[str]:
    """Accounting keeps both: A's one NODE_FAIL record, B's ended record first (its
    requeued record may lag: slurmdbd gets it with the start or on the db_inx pass)."""
    broken = []
    lost = stories_["A"].accounting
    if not lost or [row.get("State") for row in lost[-1]] != ["NODE_FAIL"]:
        broken.append(f"sacct of A: {[[r.get('State') for r in rows] for rows in lost]}, "
                      "not one NODE_FAIL row")  # fmt: skip
    requeued = stories_["B"].accounting
    states = [row.get("State") for row in requeued[-1]] if requeued else []
    if not states or states[0] != "NODE_FAIL" or not set(states[1:]) <= {"PENDING", "RUNNING"}:
        broken.append(f"sacct -D of B: {states}, not NODE_FAIL then the requeued record")
    return broken


def _node_loss_outcome(stories_: Mapping[str, Story]) -> dict[str, str]:
    a, b = stories_["A"], stories_["B"]
    outcome = {
        "A's accounting": ",".join(r.get("State", "") for r in (a.accounting or [[]])[-1]),
        "A's exit code": ",".join(r.get("ExitCode", "") for r in (a.accounting or [[]])[-1]),
        "B's end": b.states()[-1] if b.states() else "none",
        "B's restarts": b.last("Restarts") or "none",
        "B's first record": next(
            (rows[0].get("State", "") for rows in b.accounting if rows), "none"
        ),
    }
    reasons = [value for s, value in a.shown("Reason") if s.state == "NODE_FAIL"]
    if reasons:  # only while slurmctld still lists A
        outcome["A's reason"] = reasons[-1]
    return outcome


NODE_LOSS: Final = Guarantees(
    "node-loss",
    (
        ("order of states", _order),
        ("the jobs end with their node", _ends_with_the_node),
        ("requeue delay", _requeue_delay),
        ("restart at a scheduler pass", _restart),
        ("purge window", _purge),
        ("accounting keeps both records", _accounting),
    ),
    _node_loss_outcome,
)
GUARANTEES: Final = {g.scenario: g for g in (NODE_LOSS,)}
"""The scenarios judged by guarantees when run live."""


def judge(real: Transcript, sim: Transcript) -> list[Breach]:
    """Every guarantee either side broke, and every outcome they do not share (each judged
    with the windows of the real cluster's configuration)."""
    guarantees = GUARANTEES[real.scenario]
    windows = Windows.of(real.cluster)
    breaches: list[Breach] = []
    outcomes = []
    for side, transcript in (("real", real), ("simulator", sim)):
        told = stories(transcript)
        for name, rule in guarantees.rules:
            breaches += [Breach(side, name, detail) for detail in rule(told, real, windows)]
        outcomes.append(guarantees.outcome(told))
    mine, theirs = outcomes
    for key in sorted(mine.keys() & theirs.keys()):
        if mine[key] != theirs[key]:
            breaches.append(Breach("both", "outcome", f"{key}: real {mine[key]}, simulator "
                                                      f"{theirs[key]}"))  # fmt: skip
    breaches += [Breach("both", "outcome", f"{key}: only the real cluster showed it")
                 for key in sorted(mine.keys() - theirs.keys()) if key != "A's reason"]  # fmt: skip
    return breaches
