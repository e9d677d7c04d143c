"""Profiles: what a verdict covers, in the manner of the Kubernetes Gateway API's conformance
profiles. ``core`` is what every adapter must pass whole; each ``extended/<area>`` is a part
of the contract an adapter may offer (holds, requeue, history, ...).

Each registered check belongs to exactly one profile (:data:`PROFILES`; a test keeps the
table whole). Per harness and profile a run's result is (:func:`judge_profiles`):

- ``failed``: a check of the profile failed;
- ``partial``: none failed, but some did not run, each listed with the needs it lacked (a
  power the harness does not offer, a circumstance of the run, a known failure, a harness
  error);
- ``passed``: every check of the profile that applies to the adapter passed;
- ``not applicable``: none applies (the adapter declares the capability ``no``, or the
  target cannot show it), so there is nothing to cover.

A check skipped because the adapter declares ``no`` or its target cannot show the rule does
not apply: it is not a gap. Only the checks of the run's tier and selection are judged."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from conformance.checks import Result, SkippedFor, one_line
from conformance.runner import Answers
from dispatch_core import Capability, Tristate

Row = Mapping[str, object]


@dataclass(frozen=True)
class Profile:
    """A named part of the contract and the checks that cover it."""

    name: str
    covers: str
    checks: frozenset[str]

    @property
    def short(self) -> str:
        """The name without ``extended/`` (``holds``), as ``--require`` also takes it."""
        return self.name.removeprefix("extended/")


def _ids(*names: str) -> frozenset[str]:
    return frozenset(names)


CORE: Final = Profile(
    "core",
    "every adapter: capability answers and plans, find/open/stop and start's idempotence, "
    "look-alikes and foreign objects, lost and timed-out writes, execution identity, safety",
    _ids(
        *(f"CAP-{n:03d}" for n in range(1, 13)),
        *(f"IDENT-{n:03d}" for n in (1, 2, 3, 4, 6, 7, 8, 9, 10, 13, 14, 17, 18, 19, 20)),
        *(f"IDENT-{n:03d}" for n in (23, 24, 25, 54, 57, 60, 62, 63, 65, 66, 67, 68, 69)),
        "IDENT-071", "IDENT-072", "IDENT-073", "IDENT-074",
        "SAFE-001", "SAFE-002", "SAFE-003", "SAFE-006", "SAFE-007",
        "OBS-001", "OBS-002", "OBS-003", "OBS-004", "OBS-005", "OBS-006", "OBS-007", "CAUSE-008",
        "STATE-001", "STATE-003", "STATE-004", "STATE-006",
        "STATE-011", "STATE-013", "STATE-014", "STATE-016",
    ),
)  # fmt: skip
PROFILES: Final[tuple[Profile, ...]] = (
    CORE,
    Profile(
        "extended/holds",
        "numbered holds and releases (Holder), near-holds, holds across requeues",
        _ids(
            *(f"HOLD-{n:03d}" for n in range(1, 18)),
            "CAP-016",
            "IDENT-070",
            "IDENT-055",
            "SAFE-004",
            "STATE-002",
            "STATE-012",
        ),
    ),
    Profile(
        "extended/requeue",
        "requeues through the adapter (Requeuer) and underneath it, attempts and epochs across "
        "them and across Kueue readmissions",
        _ids(
            *(f"IDENT-{n:03d}" for n in (11, 12, 15, 16, 21, 22, 50, 51, 52, 53, 56, 58, 59, 61)),
            "IDENT-064",
            "STATE-005",
            "STATE-015",
        ),
    ),
    Profile(
        "extended/history",
        "what outlives the live view: accounting history, purges, lost or lagging history",
        _ids("CAP-017", "IDENT-005", "IDENT-040", "IDENT-042", "IDENT-043", "HOLD-018"),
    ),
    Profile(
        "extended/causes",
        "node loss, preemption and eviction: the object's end or requeue and its cause; a job "
        "that can never run, one waiting for quota and one whose image cannot be pulled, told "
        "apart while queued",
        _ids(
            "IDENT-041",
            "SAFE-005",
            *(f"CAUSE-{n:03d}" for n in range(1, 8)),
        ),
    ),
    Profile(
        "extended/job-spec",
        "what a declared yes promises of the spec: work dir, procs per node on several nodes, "
        "output path, container image, a signal before the time limit; a spec judged on the "
        "runtime it names, and on the target each instance serves",
        _ids("CAP-013", "CAP-014", "CAP-015", "CAP-018", "CAP-022", "CAP-024", "CAP-025"),
    ),
    Profile(
        "extended/output",
        "reading and following a job's output (OutputReader), rank 0's",
        _ids("CAP-020", "CAP-021", "CAP-023"),
    ),
    Profile(
        "extended/preflight",
        "the adapter's probes of a live target (Preflight)",
        _ids("CAP-019"),
    ),
    Profile(
        "extended/supervisor",
        "the supervisor's recovery policies applied through the adapter and the record",
        _ids(*(f"CORE-{n:03d}" for n in range(1, 11))),
    ),
)
"""Every profile, ``core`` first."""

REQUIRE_ALL: Final = "all"


def profile_of(check_id: str) -> Profile:
    """The profile check ``check_id`` belongs to (:class:`KeyError` for one in none)."""
    for profile in PROFILES:
        if check_id in profile.checks:
            return profile
    raise KeyError(f"check {check_id} belongs to no profile (conformance/profiles.py)")


def profile_named(name: str) -> Profile:
    """The profile ``name`` names (``core``, ``extended/holds`` or ``holds``), else
    :class:`KeyError` listing the names."""
    for profile in PROFILES:
        if name in (profile.name, profile.short):
            return profile
    known = ", ".join(p.name for p in PROFILES)
    raise KeyError(f"no profile {name!r} (profiles: {known}, or {REQUIRE_ALL})")


@dataclass
class ProfileResult:
    """One harness's result on one profile."""

    name: str
    result: str
    passed: int = 0
    failed: int = 0
    not_applicable: int = 0
    not_run: list[dict[str, object]] = field(default_factory=list)
    """Each check that did not run: ``{"id", "needs"}``."""

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "result": self.result,
            "passed": self.passed,
            "failed": self.failed,
            "not_applicable": self.not_applicable,
            "not_run": [dict(entry) for entry in self.not_run],
        }

    def words(self) -> str:
        """``holds partial, 3 checks not run: harness offers no lose_next_reply``."""
        name = self.name.removeprefix("extended/")
        if self.result == "passed":
            return f"{name} passed ({self.passed})"
        if self.result == "not applicable":
            return f"{name} not applicable"
        text = f"{name} {self.result}"
        if self.failed:
            text += f", {self.failed} failed"
        if self.not_run:
            count = len(self.not_run)
            text += f", {count} check{'s' if count != 1 else ''} not run: {lacked(self.not_run)}"
        return text


def lacked(not_run: Sequence[Mapping[str, object]]) -> str:
    """What the checks not run lacked, each need once: ``harness offers no X, Y; ...``."""
    powers: list[str] = []
    other: list[str] = []
    for entry in not_run:
        needs = entry.get("needs")
        for need in needs if isinstance(needs, list) else []:
            text = str(need)
            if text.startswith(
                ("circumstance:", "expected failure:", "harness error", NOT_SELECTED)
            ):
                if text not in other:
                    other.append(text)
            elif text not in powers:
                powers.append(text)
    said = [f"harness offers no {', '.join(powers)}"] if powers else []
    return "; ".join(said + other)


def _declared_no(row: Row, answers: Answers | None) -> bool:
    """Whether the harness's adapter answers other than yes to a capability the check needs
    (then the check does not apply, whatever else it lacked)."""
    if answers is None:
        return False
    needs = row.get("needs")
    for name in needs if isinstance(needs, list) else []:
        try:
            capability = Capability(str(name))
        except ValueError:
            continue
        support = answers.answers.get(capability)
        if support is not None and support.value is not Tristate.YES:
            return True
    return False


def _needs(row: Row, answers: Answers | None = None) -> list[str] | None:
    """What a result lacked, when it is a check not run; None when it ran or does not apply."""
    outcome = str(row.get("outcome", ""))
    if outcome == "error":
        return ["harness error"]
    if outcome != "skipped":
        return None
    kind = str(row.get("skipped_for", ""))
    reason = one_line(str(row.get("reason", "")))
    if kind == SkippedFor.HARNESS and _declared_no(row, answers):
        return None
    if kind == SkippedFor.HARNESS:
        lacking = row.get("lacking")
        listed = [str(n) for n in lacking] if isinstance(lacking, list | tuple) else []
        return listed or [reason]
    if kind == SkippedFor.CIRCUMSTANCE:
        return [f"circumstance: {reason}"]
    if kind == SkippedFor.EXPECTED_FAILURE:
        return [f"expected failure: {reason.removeprefix('expected failure: ')}"]
    return None


NOT_SELECTED: Final = "not selected (--check)"


def judge_profiles(
    results: Iterable[Result | Row],
    answers: Sequence[Answers] = (),
    tier_checks: Iterable[str] = (),
) -> dict[str, list[ProfileResult]]:
    """Per harness (in the order the results give them), the result of each profile that has
    a check among the results, in :data:`PROFILES`' order. With each harness's capability
    ``answers``, a check skipped for the harness that needs a capability its adapter does not
    answer yes does not apply (the harness's needs are asked first, before any backend). A
    check of ``tier_checks`` (the ids of the run's tier) that has no result was left out by
    the run's selection: it is not run, :data:`NOT_SELECTED`."""
    declared = {a.label: a for a in answers}
    of_tier = set(tier_checks)
    by_harness: dict[str, list[Row]] = {}
    for row in results:
        found = row.as_dict() if isinstance(row, Result) else row
        by_harness.setdefault(str(found.get("harness", "")), []).append(found)
    judged: dict[str, list[ProfileResult]] = {}
    for harness, own in by_harness.items():
        judged[harness] = []
        for profile in PROFILES:
            mine = [r for r in own if r.get("id") in profile.checks]
            left_out = sorted((profile.checks & of_tier) - {str(r.get("id")) for r in own})
            if not mine:
                continue
            verdict = ProfileResult(profile.name, "passed")
            verdict.not_run += [{"id": i, "needs": [NOT_SELECTED]} for i in left_out]
            for row in sorted(mine, key=lambda r: str(r.get("id"))):
                outcome = row.get("outcome")
                if outcome == "passed":
                    verdict.passed += 1
                elif outcome == "failed":
                    verdict.failed += 1
                elif (needs := _needs(row, declared.get(harness))) is not None:
                    verdict.not_run.append({"id": row.get("id"), "needs": needs})
                else:
                    verdict.not_applicable += 1
            if verdict.failed:
                verdict.result = "failed"
            elif verdict.not_run:
                verdict.result = "partial"
            elif not verdict.passed:
                verdict.result = "not applicable"
            judged[harness].append(verdict)
    return judged


def coverage_line(harness: str, profiles: Sequence[ProfileResult]) -> str:
    """``H: core passed (52); holds partial, 3 checks not run: harness offers no X; ...``."""
    return f"{harness}: " + "; ".join(p.words() for p in profiles)


def unmet(
    judged: Mapping[str, Sequence[ProfileResult]], required: Sequence[str]
) -> list[tuple[str, ProfileResult | None, str]]:
    """Each (harness, profile result, profile name) of ``required`` (names, or ``all``) that
    is not ``passed`` (None: the run judged no check of that profile)."""
    names = (
        [p.name for p in PROFILES]
        if REQUIRE_ALL in required
        else [profile_named(name).name for name in required]
    )
    missing: list[tuple[str, ProfileResult | None, str]] = []
    for harness, profiles in judged.items():
        by_name = {p.name: p for p in profiles}
        for name in dict.fromkeys(names):
            found = by_name.get(name)
            if found is None:
                if REQUIRE_ALL not in required:
                    missing.append((harness, None, name))
            elif found.result != "passed":
                if REQUIRE_ALL in required and found.result == "not applicable":
                    continue  # all: every profile that applies
                missing.append((harness, found, name))
    return missing


def verdict_line(
    verdict: str, judged: Mapping[str, Sequence[ProfileResult]], missing: Sequence[object] = ()
) -> str:
    """The run's last line: its verdict and what it covered, in words."""
    harnesses = len(judged)
    core_whole = [h for h, ps in judged.items() if any(p.name == CORE.name and p.result == "passed"
                                                        for p in ps)]  # fmt: skip
    partial = {
        h: sum(len(p.not_run) for p in ps if p.result == "partial")
        for h, ps in judged.items()
        if any(p.result == "partial" for p in ps)
    }
    text = f"{verdict}: core passed whole on {len(core_whole)} of {harnesses} harness"
    text += "es" if harnesses != 1 else ""
    if partial:
        count = sum(partial.values())
        text += (
            f"; partial on {', '.join(partial)} ({count} check{'s' if count != 1 else ''} not run)"
        )
    if missing:
        text += f"; {len(missing)} required profile result{'s' if len(missing) != 1 else ''} "
        text += "not passed"
    return text


__all__ = [
    "CORE",
    "PROFILES",
    "REQUIRE_ALL",
    "Profile",
    "ProfileResult",
    "coverage_line",
    "judge_profiles",
    "lacked",
    "profile_named",
    "profile_of",
    "unmet",
    "verdict_line",
]
