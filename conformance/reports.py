"""The reports one run produces: ``report.json``, ``junit.xml`` and ``matrix.md`` in a report
directory, and the closing line ``N passed, N failed, N skipped`` (``, N harness errors`` when
a harness raised).

Every report is written by :func:`write_atomic` (a temporary file in the same directory, then
``os.replace``), so an interrupted run leaves the previous report or the new one, never half of
one; :func:`prepare_report_dir` checks a report directory before a run spends time on checks.

Results come as :class:`~conformance.checks.Result` values or as their ``as_dict()`` (the
pytest plugin gets them back as dictionaries from pytest-xdist workers). Capability answers
come per harness as :class:`~conformance.runner.Answers`.

``report.json`` carries ``schema_version`` (:data:`SCHEMA_VERSION`, an integer raised whenever
a field changes meaning or goes away; added fields do not raise it) and the run's ``verdict``
(:func:`verdict`). A failure carries, beside its whole message (``reason``), its parts as
fields of their own: the ``rule``, what the ``adapter`` did and the ``replay`` command, in
JSON and in JUnit (where the ``<failure message>`` is :func:`junit_message`, the same from the
CLI's ``junit.xml`` and from pytest's ``--junitxml``, as are the testcases' ``classname``,
:func:`junit_classname`). ``matrix.md`` says, for each capability a harness's adapter answers
``yes``, which check verified that answer in the run (:func:`verification`).

Nothing in a report comes from the environment: no environment variables, user names or
command lines, and no host name but the ``hostname`` of junit.xml's ``<testsuite>``
(``socket.gethostname()``, as pytest's ``--junitxml`` writes it). What adapters say (reasons)
is written as said, except that the value of any environment variable whose name looks like a
secret (``*TOKEN*``, ``*PASSWORD*``, ``*SECRET*``, ``*KEY*``, ...) is replaced by
``<redacted>`` should an adapter echo it.
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from conformance.checks import Check, Result, checks, one_line
from conformance.profiles import ProfileResult, judge_profiles, lacked, unmet
from conformance.runner import Answers
from dispatch_core import Capability, Support, Tristate, capabilities
from dispatch_core.files import write_atomic

JSON_NAME = "report.json"
JUNIT_NAME = "junit.xml"
MATRIX_NAME = "matrix.md"
MATRIX_JSON = "matrix.json"
PREFLIGHT_JSON = "preflight.json"
PREFLIGHT_MD = "preflight.md"
OUTCOMES = ("passed", "failed", "skipped", "error")
SCHEMA_VERSION = 3
"""The version of report.json's layout. 3: each harness entry's ``profiles``, ``required``,
a verdict ``failed`` for a required profile not passed, each result's ``needs``,
``skipped_for`` and ``lacking``. 2: ``schema_version``, ``verdict``, ``failures`` and each
result's ``adapter`` added (1 is the unversioned layout before them)."""
VERDICTS = ("passed", "failed", "error")

Row = Mapping[str, object]


def rows(results: Iterable[Result | Row]) -> list[dict[str, object]]:
    """Results as dictionaries (``Result.as_dict()``), in the order given."""
    return [dict(r.as_dict()) if isinstance(r, Result) else dict(r) for r in results]


def totals(results: Iterable[Result | Row]) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for row in rows(results):
        outcome = str(row.get("outcome", ""))
        counts[outcome] = counts.get(outcome, 0) + 1
    counts["total"] = sum(counts[o] for o in OUTCOMES)
    return counts


def verdict(
    results: Iterable[Result | Row],
    answers: Sequence[Answers] = (),
    required: Sequence[str] = (),
    tier: str | None = None,
) -> str:
    """The run's verdict, one of :data:`VERDICTS`: ``error`` when the harness erred anywhere (a
    check's outcome is ``error``, or a harness raised making the backend its capability
    answers come from), else ``failed`` when any check failed (a strict expected failure
    that passed is a failed check) or a profile ``required`` names is not passed whole on a
    harness (:func:`~conformance.profiles.unmet`), else ``passed`` (skipped checks, expected
    failures that failed as expected, and no checks at all included); ``tier`` names the run's
    tier, whose checks a profile is judged on. As the CLI's exit status: 3, 1, 0."""
    listed = rows(results)
    outcomes = {str(row.get("outcome", "")) for row in listed}
    if "error" in outcomes or any(a.blame == "harness" for a in answers):
        return "error"
    if "failed" in outcomes:
        return "failed"
    if not required:
        return "passed"
    judged = judge_profiles(listed, answers, [c.id for c in checks(tier)] if tier else ())
    return "failed" if unmet(judged, required) else "passed"


def closing_line(results: Iterable[Result | Row]) -> str:
    """``N passed, N failed, N skipped``, and ``, N harness error(s)`` when there are any."""
    counts = totals(results)
    line = ", ".join(f"{counts[o]} {o}" for o in ("passed", "failed", "skipped"))
    errors = counts["error"]
    return line + (f", {errors} harness error{'s' if errors != 1 else ''}" if errors else "")


# -- writing ---------------------------------------------------------------------------------


class ReportDirError(Exception):
    """A report directory that cannot take the reports (the message is one line)."""


def prepare_report_dir(
    report_dir: str | os.PathLike[str], names: Sequence[str] = (), option: str = "--report-dir"
) -> Path:
    """``report_dir``, created if missing, once it is known that the reports ``names`` can be
    written into it (a file is made there and removed); else :class:`ReportDirError` naming
    ``option`` and saying why (not a directory, cannot be created, cannot be written)."""
    text = os.fspath(report_dir)
    if not text.strip():
        raise ReportDirError(f"{option} is empty: give a directory to write the reports to")
    directory = Path(text)
    shown = f"{option} {text}"
    try:
        if directory.exists() and not directory.is_dir():
            raise ReportDirError(f"{shown}: not a directory")
        directory.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        raise ReportDirError(f"{shown}: cannot create it ({_why(error)})") from None
    for name in names:
        if (directory / name).is_dir():
            raise ReportDirError(f"{shown}: {name} there is a directory, not a report")
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".dispatch-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise ReportDirError(f"{shown}: cannot write into it ({_why(error)})") from None
    return directory


def _why(error: OSError | ValueError) -> str:
    return (error.strerror if isinstance(error, OSError) else "") or str(error)


def tool_version() -> str:
    try:
        return version("dispatch-kit")
    except PackageNotFoundError:
        return "unknown"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class RunInfo:
    """What a run was: its harnesses (label and spec), seed, tier and check selection, and
    each harness's identity model (``IdentityModel.as_dict()``, by label), which report.json
    gives beside the harness's label and spec."""

    runner: str
    harnesses: list[tuple[str, str]]
    seed: int
    tier: str
    selection: list[str] = field(default_factory=list)
    started: str = field(default_factory=now)
    finished: str = ""
    identities: Mapping[str, Mapping[str, object] | None] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    """The profiles ``--require`` names (``all``: every one that applies)."""
    profiles: Mapping[str, Sequence[ProfileResult]] = field(default_factory=dict)
    """Each harness's profile results (:func:`~conformance.profiles.judge_profiles`), set by
    :func:`report_json`."""

    def _harness(self, label: str, spec: str) -> dict[str, object]:
        entry: dict[str, object] = {"label": label, "spec": spec}
        identity = self.identities.get(label)
        if identity is not None:
            entry["identity"] = dict(identity)
        entry["profiles"] = [p.as_dict() for p in self.profiles.get(label, ())]
        return entry

    def as_dict(self) -> dict[str, object]:
        return {
            "tool": "dispatch-conformance",
            "version": tool_version(),
            "runner": self.runner,
            "python": platform.python_version(),
            "started": self.started,
            "finished": self.finished or now(),
            "seed": self.seed,
            "tier": self.tier,
            "checks": list(self.selection),
            "required": list(self.required),
            "harnesses": [self._harness(label, spec) for label, spec in self.harnesses],
        }


# -- secrets ---------------------------------------------------------------------------------

_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|API_?KEY|PRIVATE|AUTH|_KEY$")


def _secrets() -> list[str]:
    found = {
        value
        for name, value in os.environ.items()
        if _SECRET_NAME.search(name.upper()) and len(value) >= 6
    }
    return sorted(found, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str] | None = None) -> str:
    """``text`` with the value of every secret-looking environment variable redacted."""
    for secret in _secrets() if secrets is None else secrets:
        text = text.replace(secret, "<redacted>")
    return text


def _scrubbed(value: object, secrets: Sequence[str]) -> object:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {k: _scrubbed(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, secrets) for v in value]
    return value


# -- capability answers ----------------------------------------------------------------------


def support_dict(support: Support) -> dict[str, str]:
    return {
        "value": support.value.value,
        "source": support.source.value,
        "reason": support.reason,
    }


def answers_dict(answers: Mapping[Capability, Support]) -> dict[str, dict[str, str]]:
    """Answers in the seed's capability order (unanswered ones left out)."""
    return {c.value: support_dict(answers[c]) for c in capabilities() if c in answers}


def capability_table(answers: Mapping[Capability, Support]) -> str:
    """A plain-text table: capability, value, source, reason (for a terminal)."""
    lines = [("capability", "value", "source", "reason")]
    for capability in capabilities():
        support = answers.get(capability)
        if support is None:
            lines.append((capability.value, "-", "-", "not answered"))
        else:
            lines.append(
                (capability.value, support.value.value, support.source.value, support.reason)
            )
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    return "\n".join(
        f"{c:<{widths[0]}}  {v:<{widths[1]}}  {s:<{widths[2]}}  {r}".rstrip()
        for c, v, s, r in lines
    )


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def matrix_markdown(
    answers: Sequence[Answers],
    results: Iterable[Result | Row] = (),
    title: str = "Capability matrix",
    judged: Mapping[str, Sequence[ProfileResult]] | None = None,
) -> str:
    """Harness by capability, each cell ``value (source)`` with a note number; the notes table
    below gives each reason (identical reasons share a note). With ``results``, a last row
    gives each harness's check totals, and a last table gives, for each capability a harness
    answers ``yes``, the check that verified it in the run (:func:`verification`)."""
    secrets = _secrets()
    notes: dict[str, int] = {}

    def note(reason: str) -> str:
        reason = _cell(scrub(reason, secrets))
        if not reason:
            return ""
        number = notes.setdefault(reason, len(notes) + 1)
        return f" [{number}]"

    header = ["capability", *(_cell(a.label) for a in answers)]
    out = [
        f"# {title}",
        "",
        "Each cell is `value (source)`; [n] is the note that gives the adapter's reason.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for capability in capabilities():
        cells = [capability.value]
        for harness in answers:
            support = harness.answers.get(capability)
            if support is None:
                cells.append("—" + note(harness.note) if harness.note else "not answered")
            else:
                cells.append(
                    f"{support.value.value} ({support.source.value}){note(support.reason)}"
                )
        out.append("| " + " | ".join(cells) + " |")
    listed = rows(results)
    if listed:
        cells = ["**checks**"]
        for harness in answers:
            own = [r for r in listed if r.get("harness") == harness.label]
            cells.append(closing_line(own) if own else "not run")
        out.append("| " + " | ".join(cells) + " |")
    if notes:
        out += ["", "| note | reason |", "|---|---|"]
        out += [f"| [{number}] | {reason} |" for reason, number in notes.items()]
    if listed:
        out += profiles_markdown(judged if judged is not None else judge_profiles(listed, answers))
        out += [
            "",
            "## Declared yes: verified by",
            "",
            "Each `yes` answer, and the check of this run that verified it by behaviour "
            "(`Check.verifies`): `verified by` a check that passed, `FAILED:` a check that "
            "failed, else `not verified`, with why.",
            "",
            "| harness | capability | verified |",
            "|---|---|---|",
        ]
        said = [(h, c, _cell(scrub(text, secrets))) for h, c, text in verification(answers, listed)]
        out += [f"| {_cell(h)} | {c.value} | {text} |" for h, c, text in said]
        if not said:
            out.append("| — | — | no harness answers yes to any capability |")
    return "\n".join(out) + "\n"


def profiles_markdown(judged: Mapping[str, Sequence[ProfileResult]]) -> list[str]:
    """The ``## Profiles`` section: each harness's result on each profile, and what the
    checks not run lacked."""
    names = list(dict.fromkeys(p.name for ps in judged.values() for p in ps))
    out = [
        "",
        "## Profiles",
        "",
        "What each harness's verdict covers (`conformance/profiles.py`): `passed` whole, "
        "`partial` (checks not run, with what they lacked), `failed`, or `not applicable`.",
        "",
        "| profile | " + " | ".join(_cell(h) for h in judged) + " |",
        "|" + "---|" * (len(judged) + 1),
    ]
    for name in names:
        cells = [name]
        for profiles in judged.values():
            found = next((p for p in profiles if p.name == name), None)
            if found is None:
                cells.append("—")
                continue
            text = found.result
            if found.result in ("passed", "partial", "failed"):
                text += f" ({found.passed} passed"
                text += f", {found.failed} failed" if found.failed else ""
                text += f", {len(found.not_run)} not run" if found.not_run else ""
                text += ")"
            cells.append(text)
        out.append("| " + " | ".join(cells) + " |")
    gaps = [(h, p) for h, ps in judged.items() for p in ps if p.not_run]
    if gaps:
        out += ["", "| harness | profile | not run | lacking |", "|---|---|---|---|"]
        for harness, profile in gaps:
            ids = ", ".join(str(e["id"]) for e in profile.not_run)
            out.append(
                f"| {_cell(harness)} | {profile.name} | {ids} | {_cell(lacked(profile.not_run))} |"
            )
    return out


def verifiers(capability: Capability, registry: Iterable[Check] | None = None) -> list[Check]:
    """The registered checks (of every tier) whose ``verifies`` names ``capability``."""
    return [c for c in (checks() if registry is None else registry) if capability in c.verifies]


def verification(
    answers: Sequence[Answers],
    results: Iterable[Result | Row],
    registry: Iterable[Check] | None = None,
) -> list[tuple[str, Capability, str]]:
    """For each harness and each capability its adapter answers ``yes`` (in the seed's
    order), what the run says of that answer, from the checks that verify it
    (:func:`verifiers`, from the registry) and their results on that harness:

    - ``FAILED: ID`` when one failed (``; verified by ID`` added when another passed);
    - else ``verified by ID`` when one passed;
    - else ``not verified``, with why: each verifier's skip reason, harness error, or that it
      did not run (not of the tier, or not selected), or that no check verifies it.
    """
    listed = rows(results)
    known = list(checks() if registry is None else registry)
    tiers = {c.id: c.tier.value for c in known}
    out: list[tuple[str, Capability, str]] = []
    for harness in answers:
        outcomes = {str(r.get("id")): r for r in listed if r.get("harness") == harness.label}
        for capability in capabilities():
            support = harness.answers.get(capability)
            if support is None or support.value is not Tristate.YES:
                continue
            ids = [c.id for c in verifiers(capability, known)]
            by = {o: [i for i in ids if outcomes.get(i, {}).get("outcome") == o] for o in OUTCOMES}
            if by["failed"]:
                text = "FAILED: " + ", ".join(by["failed"])
                if by["passed"]:
                    text += "; verified by " + ", ".join(by["passed"])
            elif by["passed"]:
                text = "verified by " + ", ".join(by["passed"])
            elif not ids:
                text = "not verified: no check verifies it"
            else:
                why = []
                for check_id in ids:
                    row = outcomes.get(check_id)
                    if row is None:
                        why.append(f"{check_id} not run ({tiers[check_id]} tier)")
                    elif row.get("outcome") == "error":
                        why.append(f"{check_id} harness error")
                    else:
                        why.append(f"{check_id} skipped: {one_line(str(row.get('reason', '')))}")
                text = "not verified: " + "; ".join(why)
            out.append((harness.label, capability, text))
    return out


# -- the checks' declared needs -------------------------------------------------------------

NEEDS_COLUMNS = ("capabilities", "interfaces", "faults", "probes", "identity")


def needs_markdown(listed: Iterable[Mapping[str, object]]) -> str:
    """A Markdown table of check → declared needs, from the objects ``dispatch-conformance
    list --json`` prints (``Check.as_dict()``): one row per check, in the order given, with
    its tier, each kind of need (``—`` for none) and the harnesses it is a strict expected
    failure on."""
    header = ["check", "tier", *NEEDS_COLUMNS, "xfail_on"]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in listed:
        needs = row.get("needs")
        needs = needs if isinstance(needs, Mapping) else {}
        cells = [f"`{row.get('id')}`", str(row.get("tier", ""))]
        for column in NEEDS_COLUMNS:
            values = needs.get(column) or []
            listed_values = values if isinstance(values, list | tuple) else [values]
            cells.append(", ".join(f"`{v}`" for v in listed_values) or "—")
        xfail = row.get("xfail_on")
        xfail = xfail if isinstance(xfail, Mapping) else {}
        cells.append(
            "; ".join(f"`{h}`: {_cell(str(why))}" for h, why in sorted(xfail.items())) or "—"
        )
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# -- the run reports -------------------------------------------------------------------------


def report_json(
    results: Iterable[Result | Row], answers: Sequence[Answers], info: RunInfo
) -> dict[str, object]:
    """The document report.json holds (schema :data:`SCHEMA_VERSION`):

    - ``schema_version``: an integer; ``verdict``: ``passed``, ``failed`` or ``error``
      (:func:`verdict`);
    - ``run``: the tool, its version, the runner, Python, start and end, seed, tier, the
      checks asked for, the profiles required, and each harness's label, spec, identity model
      and ``profiles``: ``{name, result, passed, failed, not_applicable, not_run: [{id,
      needs}]}`` per profile (:mod:`conformance.profiles`);
    - ``required``: each required profile not passed whole, ``{harness, profile, result}``;
    - ``totals`` (and ``totals_by_harness``): passed, failed, skipped, error, total;
    - ``results``: one per check and harness: id, rule, clause, suite, tier, harness,
      outcome, reason (the whole message), duration, seed, replay, and ``adapter`` (what the
      adapter did, for a failure of the adapter's; '' otherwise);
    - ``failures``: the failed results alone, each with harness, id, rule, clause, adapter
      and replay as separate fields;
    - ``capabilities``: each harness's answers (value, source, reason) and note.
    """
    listed = rows(results)
    harnesses = [label for label, _ in info.harnesses]
    info.profiles = judge_profiles(listed, answers, [c.id for c in checks(info.tier)])
    document: dict[str, object] = {
        "schema_version": SCHEMA_VERSION,
        "verdict": verdict(listed, answers, info.required, info.tier),
        "run": info.as_dict(),
        "totals": totals(listed),
        "totals_by_harness": {
            h: totals(r for r in listed if r.get("harness") == h) for h in harnesses
        },
        "results": listed,
        "failures": [_failure(row) for row in listed if row.get("outcome") == "failed"],
        "required": [
            {"harness": h, "profile": name, "result": found.result if found else "not run"}
            for h, found, name in unmet(info.profiles, info.required)
        ]
        if info.required
        else [],
        "capabilities": {
            a.label: {"answers": answers_dict(a.answers), "note": a.note} for a in answers
        },
    }
    scrubbed = _scrubbed(document, _secrets())
    assert isinstance(scrubbed, dict)
    return scrubbed


JUNIT_MESSAGE_BUDGET = 480
"""The longest ``message`` attribute a failure or an error gets (pytest cuts its own at 500)."""


def junit_classname(harness: str) -> str:
    """The ``classname`` of a check's testcase on ``harness`` (its label), the same in the
    CLI's junit.xml and in pytest's ``--junitxml``."""
    return f"dispatch.conformance.{harness}"


def junit_message(row: Result | Row) -> str:
    """The one-line ``message`` of a check's ``<failure>`` or ``<error>``: for a failure of
    the adapter's, ``[ID] adapter: `` and the first line of what the adapter did; else (a
    harness error, a harness unavailable) the first line of the reason. At most
    :data:`JUNIT_MESSAGE_BUDGET` characters; the element's text keeps the whole message."""
    [found] = rows([row])
    did = str(found.get("adapter") or "").strip()
    if found.get("outcome") == "failed" and did:
        message = f"[{found.get('id')}] adapter: {did.splitlines()[0]}"
    else:
        reason = str(found.get("reason") or "").strip()
        fallback = "harness error" if found.get("outcome") == "error" else "failed"
        message = reason.splitlines()[0] if reason else fallback
    if len(message) > JUNIT_MESSAGE_BUDGET:
        message = message[: JUNIT_MESSAGE_BUDGET - 1] + "\N{HORIZONTAL ELLIPSIS}"
    return message


FAILURE_FIELDS = ("harness", "id", "rule", "clause", "adapter", "replay")


def _failure(row: Row) -> dict[str, object]:
    return {key: row.get(key, "") for key in FAILURE_FIELDS}


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: object, secrets: Sequence[str]) -> str:
    return _XML_ILLEGAL.sub("\N{REPLACEMENT CHARACTER}", scrub(str(text), secrets))


def junit_xml(results: Iterable[Result | Row], info: RunInfo | None = None) -> str:
    """JUnit XML: one testsuite per harness (with this host's ``hostname``), one testcase per
    check (``classname`` :func:`junit_classname`) with the properties ``harness``, ``check``,
    ``seed``, ``rule`` and ``clause``; a failure (the adapter's: ``<failure>``), an error (the
    harness's: ``<error>``) or a skip carries the reason, a failure's and an error's
    ``message`` being :func:`junit_message` and their text the whole message."""
    secrets = _secrets()
    hostname = socket.gethostname()
    listed = rows(results)
    order = [label for label, _ in info.harnesses] if info else []
    for row in listed:
        if str(row.get("harness")) not in order:
            order.append(str(row.get("harness")))
    counts = totals(listed)
    judged = info.profiles if info is not None and info.profiles else judge_profiles(listed)
    root = ET.Element(
        "testsuites",
        name="dispatch-conformance",
        tests=str(counts["total"]),
        failures=str(counts["failed"]),
        errors=str(counts["error"]),
        skipped=str(counts["skipped"]),
        time=f"{sum(_duration(r) for r in listed):.3f}",
    )
    for harness in order:
        own = [r for r in listed if str(r.get("harness")) == harness]
        own_counts = totals(own)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=_xml(harness, secrets),
            tests=str(own_counts["total"]),
            failures=str(own_counts["failed"]),
            errors=str(own_counts["error"]),
            skipped=str(own_counts["skipped"]),
            time=f"{sum(_duration(r) for r in own):.3f}",
            timestamp=info.started if info else now(),
            hostname=_xml(hostname, secrets),
        )
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="harness", value=_xml(harness, secrets))
        if info is not None:
            ET.SubElement(props, "property", name="seed", value=str(info.seed))
            ET.SubElement(props, "property", name="tier", value=info.tier)
        for profile in judged.get(harness, ()):
            ET.SubElement(
                props,
                "property",
                name=f"profile:{profile.name}",
                value=_xml(profile.words(), secrets),
            )
        for row in own:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=_xml(junit_classname(harness), secrets),
                name=_xml(row.get("id"), secrets),
                time=f"{_duration(row):.3f}",
            )
            case_props = ET.SubElement(case, "properties")
            for name, key in (
                ("harness", "harness"),
                ("check", "id"),
                ("seed", "seed"),
                ("rule", "rule"),
                ("clause", "clause"),
            ):
                ET.SubElement(case_props, "property", name=name, value=_xml(row.get(key), secrets))
            reason = _xml(row.get("reason", ""), secrets)
            if row.get("outcome") in ("failed", "error"):
                tag = "failure" if row.get("outcome") == "failed" else "error"
                element = ET.SubElement(case, tag, message=_xml(junit_message(row), secrets))
                element.text = reason
            elif row.get("outcome") == "skipped":
                ET.SubElement(case, "skipped", message=reason)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _duration(row: Row) -> float:
    value = row.get("duration", 0.0)
    return float(value) if isinstance(value, int | float) else 0.0


def write_reports(
    report_dir: str | os.PathLike[str],
    results: Iterable[Result | Row],
    answers: Sequence[Answers],
    info: RunInfo,
    *,
    junit: bool = True,
) -> list[Path]:
    """Write ``report.json``, ``junit.xml`` (unless ``junit`` is false) and ``matrix.md``
    into ``report_dir`` (created if missing), each atomically; returns the paths written."""
    listed = rows(results)
    info.finished = info.finished or now()
    directory = Path(report_dir)
    directory.mkdir(parents=True, exist_ok=True)
    written = [
        write_atomic(
            directory / JSON_NAME, json.dumps(report_json(listed, answers, info), indent=2) + "\n"
        )
    ]
    if junit:
        written.append(write_atomic(directory / JUNIT_NAME, junit_xml(listed, info)))
    written.append(
        write_atomic(
            directory / MATRIX_NAME, matrix_markdown(answers, listed, judged=info.profiles)
        )
    )
    return written


def write_matrix(report_dir: str | os.PathLike[str], answers: Sequence[Answers]) -> list[Path]:
    """The capability matrix alone: ``matrix.md`` and ``matrix.json``."""
    directory = Path(report_dir)
    directory.mkdir(parents=True, exist_ok=True)
    markdown = write_atomic(directory / MATRIX_NAME, matrix_markdown(answers))
    document = {
        "tool": "dispatch-conformance",
        "version": tool_version(),
        "written": now(),
        "capabilities": {
            a.label: {"answers": answers_dict(a.answers), "note": a.note} for a in answers
        },
    }
    data = write_atomic(
        directory / MATRIX_JSON, json.dumps(_scrubbed(document, _secrets()), indent=2) + "\n"
    )
    return [markdown, data]


def write_preflight(
    report_dir: str | os.PathLike[str],
    label: str,
    answers: Mapping[Capability, Support],
    *,
    probed: bool,
    backend: str,
    progress: Sequence[str] = (),
    note: str = "",
) -> list[Path]:
    """A preflight's capability table: ``preflight.json`` and ``preflight.md``."""
    secrets = _secrets()
    directory = Path(report_dir)
    directory.mkdir(parents=True, exist_ok=True)
    document = {
        "tool": "dispatch-conformance",
        "version": tool_version(),
        "written": now(),
        "harness": label,
        "backend": backend,
        "probed": probed,
        "note": note,
        "progress": list(progress),
        "capabilities": answers_dict(answers),
    }
    data = write_atomic(
        directory / PREFLIGHT_JSON, json.dumps(_scrubbed(document, secrets), indent=2) + "\n"
    )
    lines = [
        f"# Preflight: {_cell(label)}",
        "",
        note
        or (
            f"Probed on the live cluster through `{backend}`; answers with source `probed` come "
            "from the probes, the others are the adapter's own."
        ),
        "",
        "| capability | value | source | reason |",
        "|---|---|---|---|",
    ]
    for capability in capabilities():
        support = answers.get(capability)
        if support is None:
            lines.append(f"| {capability.value} | — | — | not answered |")
        else:
            reason = _cell(scrub(support.reason, secrets))
            lines.append(
                f"| {capability.value} | {support.value.value} | {support.source.value} "
                f"| {reason} |"
            )
    markdown = write_atomic(directory / PREFLIGHT_MD, "\n".join(lines) + "\n")
    return [data, markdown]


RUN_REPORTS = (JSON_NAME, JUNIT_NAME, MATRIX_NAME)
MATRIX_REPORTS = (MATRIX_NAME, MATRIX_JSON)
PREFLIGHT_REPORTS = (PREFLIGHT_JSON, PREFLIGHT_MD)


__all__ = [
    "JSON_NAME",
    "JUNIT_NAME",
    "MATRIX_JSON",
    "MATRIX_NAME",
    "MATRIX_REPORTS",
    "PREFLIGHT_REPORTS",
    "RUN_REPORTS",
    "ReportDirError",
    "RunInfo",
    "capability_table",
    "closing_line",
    "junit_xml",
    "matrix_markdown",
    "needs_markdown",
    "prepare_report_dir",
    "profiles_markdown",
    "report_json",
    "rows",
    "scrub",
    "totals",
    "verdict",
    "write_atomic",
    "write_matrix",
    "write_preflight",
    "write_reports",
]
