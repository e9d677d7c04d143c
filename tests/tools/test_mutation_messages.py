"""The rule that tells a mutant changing only text for people from one changing behaviour."""

from __future__ import annotations

import ast
import textwrap

import pytest

from tools.mutation.messages import Callees, MessageParameters, MutantSources, message_only

MODULE = "pkg.mod"

HELPERS = """
def number(value, what, *, bound):
    if not 0 <= value < bound:
        raise ValueError(f"{what} {value} is out of range")
    return value

def steering(value, what):
    if what == "strict":
        raise ValueError(f"{what}: {value}")
    return value

class Backend:
    def command(self, op, argv):
        self.calls[op] += 1
        return argv

    def observe(self, line):
        detail = f"{line.state}"
        detail += "; no comment"
        return Observation(ref=line.ref, detail=detail)
"""


def judge(original: str, mutant: str, *, method: str | None = None, scanned: bool = False) -> bool:
    """Whether ``mutant`` (a function's text) changes only text, against ``original``
    (``scanned``: the original is among the module's functions, as in a real run)."""
    callees = Callees()
    callees.add_module(MODULE, ast.parse(HELPERS + (textwrap.dedent(original) if scanned else "")))
    local = f"xǁBackendǁ{method}" if method else "x_f"
    body = textwrap.dedent(original).replace("def f(", f"def {local}__mutmut_orig(", 1)
    changed = textwrap.dedent(mutant).replace("def f(", f"def {local}__mutmut_1(", 1)
    text = (
        f"class Backend:\n{textwrap.indent(body, '    ')}\n{textwrap.indent(changed, '    ')}"
        if method
        else f"{body}\n{changed}"
    )
    sources = MutantSources.parse(MODULE, text)
    return message_only(f"{MODULE}.{local}__mutmut_1", sources, MessageParameters(callees))


RAISE = """
def f(x):
    if x < 0:
        raise ValueError(f"{x} is negative")
    return x
"""


@pytest.mark.parametrize(
    "mutant",
    [
        "def f(x):\n    if x < 0:\n        raise ValueError(None)\n    return x\n",
        'def f(x):\n    if x < 0:\n        raise ValueError("XX")\n    return x\n',
        'def f(x):\n    if x < 0:\n        raise ValueError(f"{None} is negative")\n    return x\n',
    ],
)
def test_the_text_of_a_raised_error_is_text(mutant: str) -> None:
    assert judge(RAISE, mutant)


@pytest.mark.parametrize(
    "mutant",
    [
        'def f(x):\n    if x <= 0:\n        raise ValueError(f"{x} is negative")\n    return x\n',
        'def f(x):\n    if x < 0:\n        raise TypeError(f"{x} is negative")\n    return x\n',
        'def f(x):\n    if x < 0:\n        raise ValueError(f"{x} is negative")\n    return None\n',
    ],
)
def test_a_condition_an_error_class_or_a_result_is_behaviour(mutant: str) -> None:
    assert not judge(RAISE, mutant)


def test_an_argument_that_only_feeds_a_message_is_text() -> None:
    original = 'def f(x):\n    return number(x, "submission", bound=9)\n'
    assert judge(original, "def f(x):\n    return number(x, None, bound=9)\n")
    assert judge(original, 'def f(x):\n    return number(x, "XXsubmissionXX", bound=9)\n')
    assert not judge(original, 'def f(x):\n    return number(x, "submission", bound=10)\n')


def test_the_default_of_a_parameter_used_only_in_messages_is_text() -> None:
    original = 'def f(x, what="made none"):\n    if x < 0:\n        raise ValueError(f"{x}: {what}")\n    return x\n'
    assert judge(original, original.replace('"made none"', '"XXmade noneXX"'), scanned=True)
    assert judge(original, original.replace('"made none"', '"MADE NONE"'), scanned=True)
    steering = 'def f(x, what="lenient"):\n    if what == "strict":\n        raise ValueError(what)\n    return x\n'
    assert not judge(steering, steering.replace('"lenient"', '"strict"'), scanned=True)
    bound = "def f(x, bound=9):\n    return number(x, 'n', bound=bound)\n"
    assert not judge(bound, bound.replace("bound=9", "bound=10", 1), scanned=True)


def test_a_parameter_that_also_steers_is_not_a_message_parameter() -> None:
    original = 'def f(x):\n    return steering(x, "lenient")\n'
    assert not judge(original, 'def f(x):\n    return steering(x, "strict")\n')
    assert not judge(original, "def f(x):\n    return steering(x, None)\n")


def test_an_attribute_of_a_value_put_in_a_message_can_raise_so_is_behaviour() -> None:
    original = 'def f(x):\n    raise ValueError(f"{x.name} is bad")\n'
    assert not judge(original, 'def f(x):\n    raise ValueError(f"{None.name} is bad")\n')
    wrapped = 'def f(x):\n    raise ValueError(f"{type(x).__name__} is bad")\n'
    assert judge(wrapped, 'def f(x):\n    raise ValueError(f"{type(None).__name__} is bad")\n')


def test_a_counter_label_is_text_and_the_command_is_not() -> None:
    original = 'def f(self):\n    return self.command("read", ["squeue", "-t", "all"])\n'
    mutant = 'def f(self):\n    return self.command("READ", ["squeue", "-t", "all"])\n'
    assert judge(original, mutant, method="f")
    argv = 'def f(self):\n    return self.command("read", ["squeue", "-t", "ALL"])\n'
    assert not judge(original, argv, method="f")


DETAIL = """
def f(self, line):
    detail = f"{line.state}" + (f" ({line.reason})" if line.reason else "")
    detail += "; no comment"
    return Observation(ref=line.ref, state=line.state, detail=detail)
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('detail += "; no comment"', 'detail = "; no comment"'),
        ('detail += "; no comment"', 'detail += "XX; no commentXX"'),
        ("if line.reason else", "if (line.reason) and False else"),
        (", detail=detail)", ")"),
    ],
)
def test_an_observations_free_text_detail_is_text(old: str, new: str) -> None:
    assert judge(DETAIL, DETAIL.replace(old, new), method="f")


VERDICT = """
def f(pod, code):
    return Verdict(State.FAILED, Cause.EXIT_CODE, code, detail=f"pod {pod}: exit code {code}")
"""


@pytest.mark.parametrize(
    ("old", "new", "text"),
    [
        ('detail=f"pod {pod}: exit code {code}"', "detail=None", True),
        (', detail=f"pod {pod}: exit code {code}"', "", True),
        ('f"pod {pod}: exit code {code}"', 'f"XXpod {pod}: exit code {code}XX"', True),
        ("Cause.EXIT_CODE", "None", False),
        ("code, detail", "None, detail", False),
    ],
)
def test_a_kubeflow_verdicts_detail_is_text_and_its_cause_is_not(
    old: str, new: str, text: bool
) -> None:
    assert judge(VERDICT, VERDICT.replace(old, new), method="f") is text


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('detail += "; no comment"', 'detail -= "; no comment"'),  # raises TypeError
        ("state=line.state, ", ""),
        ("ref=line.ref", "ref=None"),
    ],
)
def test_what_else_an_observation_carries_is_behaviour(old: str, new: str) -> None:
    assert not judge(DETAIL, DETAIL.replace(old, new), method="f")


REASON = """
def f(done, names):
    if done is None or done.returncode != 0:
        reason = "timed out" if done is None else done.stderr.strip()
        known = ", ".join(f"x.{n}" for n in sorted(names))
        raise ValueError(f"the requeue {reason} (known: {known})")
    return done
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('reason = "timed out" if done is None else done.stderr.strip()', "reason = None"),
        ('"timed out" if done is None', '"timed out" if (done is None) or True'),
        ('"timed out" if', '"TIMED OUT" if'),
        ('", ".join', '"XX, XX".join'),
    ],
)
def test_a_local_made_without_side_effects_for_a_message_is_text(old: str, new: str) -> None:
    assert judge(REASON, REASON.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("sorted(names)", "sorted(None)"),  # raises TypeError where the original did not
        ("if done is None or", "if done is None and"),  # the condition of the raise
        ('reason = "timed out" if done is None else done.stderr.strip()', "reason = done.kill()"),
    ],
)
def test_a_local_with_a_call_that_acts_or_raises_is_behaviour(old: str, new: str) -> None:
    assert not judge(REASON, REASON.replace(old, new, 1))


def test_a_local_assigned_from_a_call_with_effects_is_not_a_message_local() -> None:
    original = REASON.replace("done.stderr.strip()", "done.read()")
    assert not judge(original, original.replace('"timed out" if', '"TIMED OUT" if', 1))


LOGGED = """
def f(self, workload, error):
    log.warning("workload %s: %s: not judged", name_of(workload), error)
    return False
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"workload %s: %s: not judged"', "None"),
        ('"workload %s: %s: not judged"', '"XXworkload %s: %s: not judgedXX"'),
        ("name_of(workload), error)", "name_of(workload), None)"),
    ],
)
def test_the_text_of_a_log_record_is_text(old: str, new: str) -> None:
    assert judge(LOGGED, LOGGED.replace(old, new), method="f")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("name_of(workload)", "name_of(None)"),  # evaluated before the call: it may raise
        ("return False", "return True"),
        ("log.warning(", "log.warning(None, "),  # an argument more: not a replacement
    ],
)
def test_what_a_logging_function_computes_or_returns_is_behaviour(old: str, new: str) -> None:
    assert not judge(LOGGED, LOGGED.replace(old, new), method="f")
