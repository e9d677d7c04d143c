"""The call faults of a Slurm harness's transport: the reply of an operation's call lost after
it took effect, or the call timing out before it took effect.

Each operation of the adapter (:data:`~conformance.harness.OPERATIONS`) is carried by Slurm
calls: :data:`LOSABLE` names the call whose effect a lost reply follows (the last one of a
two-step requeue), :data:`FIRST_CALLS` the call a timeout before effect stops (the first one,
so that nothing of the operation changed). :class:`CallFaults` matches each call of the
adapter against the faults armed; the harness's transport then drops the reply or raises the
timeout.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal

from conformance.harness import CannotInject

SLURM_COMMANDS: Final = ("sbatch", "squeue", "sacct", "scancel", "scontrol")

Matcher = Callable[[Sequence[str]], bool]


def command_words(argv: Sequence[str]) -> list[str]:
    """``argv`` without a leading ``env NAME=value ...`` (how the adapter sets its time format
    on the far side of any transport)."""
    words = list(argv)
    while words and words[0].rsplit("/", 1)[-1] == "env":
        words = words[1:]
        while words and "=" in words[0] and not words[0].startswith("="):
            words = words[1:]
    return words


def program(words: Sequence[str]) -> str:
    """The program a call runs (its base name)."""
    return words[0].rsplit("/", 1)[-1] if words else ""


def _scontrol(words: Sequence[str], command: str) -> list[str] | None:
    """The arguments of ``scontrol <command>``, lower-cased, or None for another call
    (scontrol's commands and keywords are case-insensitive, as a fault's match must be)."""
    if program(words) != "scontrol" or [w.lower() for w in words[1:2]] != [command]:
        return None
    return [w.lower() for w in words[2:]]


def _update(words: Sequence[str]) -> bool:
    return _scontrol(words, "update") is not None


def _is_hold(words: Sequence[str]) -> bool:
    args = _scontrol(words, "update") or []
    return any(w.startswith("starttime=") and w != "starttime=now" for w in args)


def _is_release(words: Sequence[str]) -> bool:
    return "starttime=now" in (_scontrol(words, "update") or [])


LOSABLE: Final[Mapping[str, Matcher]] = {
    "start": lambda words: program(words) == "sbatch",
    "stop": lambda words: program(words) == "scancel",
    "hold": _is_hold,
    "release": _is_release,
    # The adapter requeues in two steps (Requeue=1, then requeue): the second one takes effect.
    "requeue": lambda words: _scontrol(words, "requeue") is not None,
}
"""Which call carries each operation's effect: its reply is the one a lost-reply fault loses."""

FIRST_CALLS: Final[Mapping[str, Matcher]] = {
    **LOSABLE,
    # Before the requeue took effect means before its first step: the job is not even marked
    # requeueable.
    "requeue": lambda words: "requeue=1" in (_scontrol(words, "update") or []),
}
"""Which call starts each operation: a timeout before effect stops it, so nothing changed."""

Kind = Literal["lose_reply", "before_effect", "reply_failure", "reply_garbled"]

REPLY_FORMS: Final[Mapping[str, Kind]] = {
    "timeout": "lose_reply",
    "failure": "reply_failure",
    "garbled": "reply_garbled",
}
"""The call fault each form of a lost reply (:class:`~conformance.harness.ReplyLoss`) arms."""

RECEIVE_FAILURE: Final = "Unable to contact slurm controller (receive failure)"
"""What a Slurm command prints when its request went out and no answer came back
(SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR): the request may have taken effect."""


def lost_reply(
    kind: Kind, words: Sequence[str], done: subprocess.CompletedProcess[str]
) -> subprocess.CompletedProcess[str]:
    """The reply the caller gets of a call that took effect (``done``) under the call fault
    ``kind``: a failure saying no answer came (sbatch's own wording, and the others'), or a
    success whose output is cut off."""
    if kind == "reply_garbled":
        return subprocess.CompletedProcess(done.args, 0, "", "")
    name = program(words)
    what = "Batch job submission failed" if name == "sbatch" else "error"
    text = f"{name}: error: {what}: {RECEIVE_FAILURE}\n"
    return subprocess.CompletedProcess(done.args, 1, "", text)


class CallFaults:
    """The call faults armed on a transport, matched against each call, first armed first."""

    def __init__(self) -> None:
        self.armed: list[tuple[Kind, str]] = []

    def arm(self, operation: str, form: str = "timeout") -> None:
        """The next ``operation`` takes effect and its reply is lost, in ``form`` (one of
        :data:`REPLY_FORMS`)."""
        if operation not in LOSABLE or form not in REPLY_FORMS:
            raise CannotInject(f"lose_next_reply({operation})")
        self.armed.append((REPLY_FORMS[form], operation))

    def arm_before(self, operation: str) -> None:
        """The next ``operation`` times out before it takes effect."""
        if operation not in FIRST_CALLS:
            raise CannotInject(f"fail_before_effect({operation})")
        self.armed.append(("before_effect", operation))

    def unfired(self) -> list[str]:
        """The faults armed and not yet fired, as ``lose_next_reply(<op>)`` or
        ``fail_before_effect(<op>)``, first armed first."""
        names = {
            "lose_reply": "lose_next_reply",
            "reply_failure": "lose_next_reply",
            "reply_garbled": "lose_next_reply",
            "before_effect": "fail_before_effect",
        }
        return [f"{names[kind]}({operation})" for kind, operation in self.armed]

    def take(self, words: Sequence[str]) -> Kind | None:
        """The fault that hits this call (it is disarmed), or None."""
        for index, (kind, operation) in enumerate(self.armed):
            table = FIRST_CALLS if kind == "before_effect" else LOSABLE
            if table[operation](words):
                del self.armed[index]
                return kind
        return None


__all__ = [
    "FIRST_CALLS",
    "LOSABLE",
    "RECEIVE_FAILURE",
    "REPLY_FORMS",
    "SLURM_COMMANDS",
    "CallFaults",
    "command_words",
    "lost_reply",
    "program",
]
