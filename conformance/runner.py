"""What the two runners (``conformance.plugin`` and ``conformance.cli``) share: loading the
harnesses a run names, running one check on one of them, and asking each harness's backend
for its capability answers (for the matrix).

A harness is named on the command line by a registered name (``memory-slurm``) or a
``module:factory`` path. Results and reports call it by its *label*: the registered name, or
the harness's own ``name`` for a factory (its spec when the harness leaves ``name`` unset);
the replay command in a failure always repeats the spec as given, so it can be pasted back.

A harness that cannot be loaded is the caller's input error (:class:`HarnessError`); so is one
that breaks the contract before any check could use it: one that declares no identity model
(``identity = IdentityModel(...)``), or offers a need no check can declare (a misspelt fault
would skip its checks forever). :func:`load` refuses both, in one line, before anything runs
(:func:`~conformance.checks.run_check` still reports a harness without an identity model per
check, as a harness error, for a harness it is handed directly). A loaded harness that raises
while it is used (making a backend, closing) is the harness's error, told apart from the
adapter's wherever it is reported.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.checks import (
    Check,
    HarnessCrash,
    Outcome,
    Result,
    Skip,
    one_line,
    replay_command,
    run_check,
    where,
)
from conformance.harness import (
    CannotInject,
    Harness,
    HarnessUnavailable,
    IdentityModel,
    Probe,
    fault_needs,
)
from conformance.harnesses import HarnessError, load_harness
from dispatch_core import Capability, Support


@dataclass
class Loaded:
    """One harness of a run: the spec it was named by, its label, and the harness."""

    spec: str
    label: str
    harness: Harness[Any]
    closed: bool = field(default=False, compare=False)

    def run(self, check: Check, seed: int) -> Result:
        """Run ``check`` on this harness; the result is labelled, and its replay command names
        the harness as the run did. A skip's reason is one line, so that the progress line,
        JUnit's ``<skipped message>`` and report.json all say the same text."""
        result = run_check(check, self.harness, seed)
        replay = replay_command(self.spec, check.id, seed)
        reason = result.reason.replace(result.replay, replay) if result.replay else result.reason
        if result.outcome is Outcome.SKIPPED:
            reason = one_line(reason)
        return dataclasses.replace(result, harness=self.label, reason=reason, replay=replay)

    def xfail(self, check: Check) -> str | None:
        """Why ``check`` is a strict expected failure on this harness (its ``xfail_on`` names
        the harness's ``name``), or None."""
        return check.xfail(self.harness.name)

    def identity(self) -> dict[str, object] | None:
        """The harness's identity model as data (for report.json), or None without one."""
        model = getattr(self.harness, "identity", None)
        return model.as_dict() if isinstance(model, IdentityModel) else None

    def close(self) -> str:
        """Close the harness (once: later calls do nothing); returns a one-line complaint when
        closing failed, else ''."""
        if self.closed:
            return ""
        self.closed = True
        try:
            self.harness.close()
        except (Exception, SystemExit) as error:
            said = one_line(f"{type(error).__name__}: {error}")
            return f"harness error: closing harness {self.label} failed: {said} (at {where(error)})"
        return ""


def load(spec: str) -> Harness[Any]:
    """:func:`load_harness`, with any failure (an import that raises, a factory that
    crashes) turned into a one-line :class:`HarnessError`, and the harness refused when it
    breaks the contract before any check runs (:func:`contract_error`)."""
    try:
        harness = load_harness(spec)
    except HarnessError as error:
        raise HarnessError(one_line(str(error))) from None
    except (Exception, SystemExit) as error:  # a module or factory may even call sys.exit
        raise HarnessError(
            one_line(f"harness {spec!r} failed to load: {type(error).__name__}: {error}")
        ) from None
    problem = contract_error(harness)
    if problem:
        with contextlib.suppress(Exception, SystemExit):  # the harness is refused: release it
            harness.close()
        raise HarnessError(one_line(f"harness {spec!r} {problem}"))
    return harness


def known_needs() -> list[str]:
    """Every need a check can declare of a harness: the faults, then the probes."""
    return [*fault_needs(), *(p.value for p in Probe)]


def contract_error(harness: Harness[Any]) -> str:
    """What makes ``harness`` unusable by every check ('' when nothing does): no identity
    model, an ``impossible`` that is not a set of known needs, or the ``offers`` set of the
    contract before powers (the kit reads none: a harness offers a power by implementing its
    protocol, :mod:`conformance.powers`)."""
    try:
        model: object = getattr(harness, "identity", None)
        impossible: object = getattr(harness, "impossible", frozenset())
        old_offers = hasattr(harness, "offers") or hasattr(harness, "faults")
    except Exception as error:  # a property that raises
        return f"cannot be read: {type(error).__name__}: {error}"
    if model is None:
        return (
            "declares no identity model: set identity = IdentityModel(lookup=..., "
            "reuses_ids=..., requeue_moves_submit=..., history_outlives_live=...) on it"
        )
    if not isinstance(model, IdentityModel):
        return f"has identity = {type(model).__name__}, not a conformance.IdentityModel"
    if old_offers:
        return (
            "declares offers or faults(), which the kit no longer reads: offer each power by "
            "implementing its protocol of conformance.powers (see docs/writing-a-harness.md)"
        )
    if isinstance(impossible, str) or not isinstance(impossible, Iterable):
        return f"has impossible = {impossible!r}: give a frozenset of needs"
    known = known_needs()
    unknown = sorted(str(o) for o in impossible if _bare(str(o)) not in known)
    if unknown:
        return (
            f"lists {', '.join(repr(u) for u in unknown)} as impossible, which no check can "
            f"need (known: {', '.join(known)})"
        )
    return ""


def _bare(need: str) -> str:
    """A need as :class:`CannotInject` names a form of it (``requeue_underneath(held)``),
    without the form."""
    return need.partition("(")[0]


def load_all(specs: Sequence[str]) -> list[Loaded]:
    """Load every harness ``specs`` names, in order; labels are made unique. On an error the
    harnesses already loaded are closed and the :class:`HarnessError` propagates."""
    loaded: list[Loaded] = []
    taken: set[str] = set()
    try:
        for spec in specs:
            harness = load(spec)
            label = _label(spec, harness)
            unique, n = label, 2
            while unique in taken:
                unique, n = f"{label}-{n}", n + 1
            taken.add(unique)
            loaded.append(Loaded(spec, unique, harness))
    except HarnessError:
        for done in loaded:
            done.close()
        raise
    return loaded


def _label(spec: str, harness: Harness[Any]) -> str:
    if ":" not in spec:
        return spec
    name = getattr(harness, "name", "") or ""
    return name if isinstance(name, str) and name and name != "unnamed" else spec


@dataclass
class Answers:
    """A harness's capability answers, or why there are none (``note``); ``blame`` is
    ``"harness"`` when the harness raised making the backend, ``"unavailable"`` when its
    target must be there and is not (:class:`HarnessUnavailable`), ``"adapter"`` when the
    backend's ``capabilities`` raised, else empty."""

    label: str
    answers: dict[Capability, Support] = field(default_factory=dict)
    note: str = ""
    blame: str = ""


def capability_answers(loaded: Loaded) -> Answers:
    """The answers of a fresh backend of ``loaded`` to ``capabilities(None)``."""
    try:
        backend = loaded.harness.new_backend()
    except (Skip, CannotInject) as skipped:
        return Answers(loaded.label, note=one_line(f"skipped: {skipped}"))
    except HarnessUnavailable as missing:
        return Answers(loaded.label, note=one_line(f"unavailable: {missing}"), blame="unavailable")
    except (Exception, SystemExit) as error:
        crash = HarnessCrash("new_backend()", error)
        note = f"no answers: harness error: {crash} (at {crash.location})"
        return Answers(loaded.label, note=note, blame="harness")
    try:
        answers = dict(backend.capabilities(None))
    except (Exception, SystemExit) as error:
        note = one_line(f"no answers: capabilities() raised {type(error).__name__}: {error}")
        return Answers(loaded.label, note=note, blame="adapter")
    return Answers(loaded.label, answers)


def close_all(loaded: Iterable[Loaded]) -> list[str]:
    """Close every harness; the complaints of those that failed to close."""
    return [c for c in (h.close() for h in loaded) if c]


__all__ = [
    "Answers",
    "HarnessError",
    "Loaded",
    "capability_answers",
    "close_all",
    "contract_error",
    "known_needs",
    "load",
    "load_all",
    "one_line",
]
