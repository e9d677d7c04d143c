"""Execution identity's neutral rules (DESIGN §4, seed 001): the four DISPATCH_ variables, the
strict decimal parser under every adapter's encoding, and the identity check. The Slurm
adapter's encodings (the comment, holds as a far-future start time) are tested in
``tests/slurm/test_identity.py``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dispatch_core import (
    ENV_ATTEMPT,
    ENV_EPOCH,
    ENV_JOB,
    ENV_SUBMISSION,
    IDENTITY_ENV,
    EncodingError,
    EpochBound,
    JobID,
    attempt_id,
    epoch,
    execution_env,
    parse_attempt_id,
    parse_decimal,
    parse_execution_env,
)

JOB = JobID("01JZ8Q2N5V0000000000000000")

SUBMISSION = st.integers(1, EpochBound - 1)
RESTART = st.integers(0, EpochBound - 1)
ATTEMPT = st.integers(1, EpochBound - 1)
HOLD = st.integers(1, 999_999)
SUBMIT = st.integers(0, 4_000_000_000)  # epoch seconds
# Printable text without spaces: what a native id may be (Slurm ids, "namespace/name", ...).
NATIVE_ID = st.one_of(
    st.integers(1, 2**32).map(str),
    st.from_regex(r"[a-z0-9-]{1,12}/[a-z0-9-]{1,12}", fullmatch=True),
    st.text(
        st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp")),
        min_size=1,
        max_size=16,
    ),
)
JOB_IDS = st.builds(JobID)

# Text that is not a canonical decimal, though it may look like one.
NOT_CANONICAL = [
    "",
    "01",
    "00",
    "007",
    "+1",
    "-1",
    "-0",
    " 1",
    "1 ",
    "1\n",
    "\n1",
    "1\t",
    "1_0",
    "1_000",
    "1,000",
    "1.0",
    "1e3",
    "0x10",
    "\u0661",  # ARABIC-INDIC DIGIT ONE
    "\uff11",  # FULLWIDTH DIGIT ONE
    "1\uff11",
    "\u00b2",  # SUPERSCRIPT TWO
    "9" * 20,  # longer than any epoch or Slurm number: overflow, not a number we carry
    "1" + "0" * 30,
    "one",
]

# ---------------------------------------------------------------------------------------------
# parse_decimal: canonical decimals only
# ---------------------------------------------------------------------------------------------


@given(st.integers(0, 10**19 - 1))
def test_parse_decimal_round_trips_canonical_text(value):
    """str(n) parses back to n for every n a scheduler can carry."""
    assert parse_decimal(str(value), "n") == value


@pytest.mark.parametrize("text", NOT_CANONICAL)
def test_parse_decimal_refuses_non_canonical_text(text):
    """ASCII digits only, no sign, no leading zero, no spaces, underscores or newline."""
    with pytest.raises(EncodingError, match="not a canonical decimal"):
        parse_decimal(text, "n")


@pytest.mark.parametrize(
    ("text", "minimum", "bound"),
    [("0", 1, None), ("1000000", 0, EpochBound), ("999999999", 1, EpochBound), ("4", 5, None)],
)
def test_parse_decimal_refuses_out_of_range(text, minimum, bound):
    """A canonical decimal outside [minimum, bound) is refused as out of range."""
    with pytest.raises(EncodingError, match="out of range"):
        parse_decimal(text, "n", minimum=minimum, bound=bound)


def test_parse_decimal_bounds_are_inclusive_then_exclusive():
    """minimum is allowed, bound is not: 1 and 999,999 are the extreme submission numbers."""
    assert parse_decimal("1", "n", minimum=1, bound=EpochBound) == 1
    assert parse_decimal("999999", "n", minimum=1, bound=EpochBound) == EpochBound - 1
    assert parse_decimal("0", "n") == 0


DECIMALISH = st.one_of(
    st.text(alphabet="0123456789+-_ \n\u0661\uff11.e", max_size=22),
    st.integers(-(10**21), 10**21).map(str),
    st.text(max_size=8),
)


@given(DECIMALISH)
def test_parse_decimal_is_total_and_canonical(text):
    """Any text is refused with EncodingError or parses to a value written exactly as it."""
    try:
        value = parse_decimal(text, "n")
    except EncodingError:
        return
    assert str(value) == text


# ---------------------------------------------------------------------------------------------
# DISPATCH_EPOCH and DISPATCH_ATTEMPT
# ---------------------------------------------------------------------------------------------


def test_epoch_and_attempt_examples():
    """DESIGN §4's example: submission 3 of Slurm job 4242, restart 1."""
    assert epoch(3, 1) == 3_000_001
    assert attempt_id(3, "4242", 1) == "3-4242-1"
    assert epoch(1, 0) == 1_000_000
    assert epoch(999_999, 999_999) == 999_999_999_999


@given(SUBMISSION, RESTART, SUBMISSION, RESTART)
def test_epoch_grows_with_every_later_execution(n1, r1, n2, r2):
    """Later executions (a later submission, or a later restart of the same submission) have
    a higher DISPATCH_EPOCH, and equal ones only for the same execution."""
    assert (epoch(n1, r1) < epoch(n2, r2)) == ((n1, r1) < (n2, r2))
    assert (epoch(n1, r1) == epoch(n2, r2)) == ((n1, r1) == (n2, r2))


@pytest.mark.parametrize(
    ("submission", "restart"),
    [(0, 0), (-1, 0), (EpochBound, 0), (1, -1), (1, EpochBound), (True, 0), (1, False), ("1", 0)],
)
def test_epoch_refuses_values_outside_the_bound(submission, restart):
    """N counts from 1 and R from 0, both below EpochBound (1,000,000), both ints."""
    with pytest.raises(EncodingError):
        epoch(submission, restart)
    with pytest.raises(EncodingError):
        attempt_id(submission, "4242", restart)


@pytest.mark.parametrize("native_id", ["", "42 42", " 4242", "4242\n", "a\tb", "x\x00", "\u00a0"])
def test_attempt_id_refuses_native_ids_with_spaces_or_unprintable(native_id):
    """A native id is non-empty printable text without spaces."""
    with pytest.raises(EncodingError, match="native id"):
        attempt_id(1, native_id, 0)


@given(SUBMISSION, NATIVE_ID, RESTART)
def test_attempt_id_round_trips(submission, native_id, restart):
    """parse_attempt_id gives back (N, native id, R), dashes in the native id included; so no
    two executions share DISPATCH_ATTEMPT."""
    text = attempt_id(submission, native_id, restart)
    assert parse_attempt_id(text) == (submission, native_id, restart)


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("3-ns/name-x-1", (3, "ns/name-x", 1)),
        ("1-a-b-c-0", (1, "a-b-c", 0)),
        ("2--x-5", (2, "-x", 5)),
        ("7-4242--0", (7, "4242-", 0)),
    ],
)
def test_attempt_id_with_dashes_in_the_native_id(text, parts):
    """N is before the first dash and R after the last; the native id keeps the rest."""
    assert parse_attempt_id(text) == parts
    assert attempt_id(*parts) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "3",
        "3-4242",
        "3--1",  # empty native id
        "-4242-1",
        "3-4242-",
        "03-4242-1",
        "3-4242-01",
        "0-4242-0",  # submissions count from 1
        "1000000-4242-0",
        "3-4242-1000000",
        "+3-4242-1",
        "3-4242-+1",
        "3-42 42-1",
        " 3-4242-1",
        "3-4242-1 ",
        "3-4242-1\n",
        "3-4242-1_0",
        "\u0661-4242-1",
        "3-4242-\uff11",
        "3_4242_1",
        "3:4242:1",
    ],
)
def test_parse_attempt_id_refuses(text):
    """Exactly N-<native id>-R with canonical, bounded N and R."""
    with pytest.raises(EncodingError):
        parse_attempt_id(text)


# Numbers, mostly in range, now and then not canonical at all.
NUMBERISH = st.one_of(st.integers(0, EpochBound).map(str), DECIMALISH)
ATTEMPTISH = st.one_of(
    st.text(alphabet="0123456789-+ _/ax\u0661\n", max_size=16),
    st.builds(
        lambda a, b, c: f"{a}-{b}-{c}",
        NUMBERISH,
        st.one_of(NATIVE_ID, st.text(alphabet="ab-/ 1\t", max_size=5)),
        NUMBERISH,
    ),
)


@given(ATTEMPTISH)
def test_parse_attempt_id_is_total_and_canonical(text):
    """Any text is refused with EncodingError or parses to parts that re-encode to it."""
    try:
        parts = parse_attempt_id(text)
    except EncodingError:
        return
    assert attempt_id(*parts) == text


# ---------------------------------------------------------------------------------------------
# The four DISPATCH_ variables
# ---------------------------------------------------------------------------------------------


def test_execution_env_is_exactly_the_four_variables():
    """Every execution sees DISPATCH_JOB, _SUBMISSION, _ATTEMPT and _EPOCH, as DESIGN §4."""
    env = execution_env(JOB, 3, "4242", 1)
    assert env == {
        "DISPATCH_JOB": "01JZ8Q2N5V0000000000000000",
        "DISPATCH_SUBMISSION": "3",
        "DISPATCH_ATTEMPT": "3-4242-1",
        "DISPATCH_EPOCH": "3000001",
    }
    assert tuple(env) == IDENTITY_ENV


@given(JOB_IDS, SUBMISSION, NATIVE_ID, RESTART)
def test_execution_env_round_trips(job, submission, native_id, restart):
    """parse_execution_env gives back the identity execution_env wrote."""
    env = execution_env(job, submission, native_id, restart)
    identity = parse_execution_env(env)
    assert (identity.job, identity.submission, identity.native_id, identity.restart) == (
        job,
        submission,
        native_id,
        restart,
    )
    assert identity.env() == env


def test_execution_env_with_dashes_in_a_kubernetes_native_id():
    """A namespace/name native id with dashes ("ns/name-x") round-trips."""
    env = execution_env(JOB, 2, "ns/name-x", 0)
    assert env[ENV_ATTEMPT] == "2-ns/name-x-0"
    assert parse_execution_env(env).native_id == "ns/name-x"


def test_parse_execution_env_ignores_other_variables():
    """The rest of the process environment is no concern of the parser."""
    env = {"PATH": "/bin", "DISPATCH_OTHER": "x", **execution_env(JOB, 1, "7", 0)}
    assert parse_execution_env(env).attempt == "1-7-0"


@pytest.mark.parametrize("missing", IDENTITY_ENV)
def test_parse_execution_env_refuses_a_missing_variable(missing):
    """All four variables must be present."""
    env = execution_env(JOB, 3, "4242", 1)
    del env[missing]
    with pytest.raises(EncodingError, match=missing):
        parse_execution_env(env)


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        (ENV_EPOCH, "3000002", "requires 3000001"),  # disagrees with DISPATCH_ATTEMPT's R
        (ENV_EPOCH, "2000001", "requires 3000001"),  # disagrees with its N
        (ENV_EPOCH, "03000001", "canonical"),
        (ENV_EPOCH, "", "canonical"),
        (ENV_SUBMISSION, "2", "names submission 3"),  # disagrees with DISPATCH_ATTEMPT
        (ENV_SUBMISSION, "03", "canonical"),
        (ENV_SUBMISSION, "0", "out of range"),
        (ENV_ATTEMPT, "2-4242-1", "names submission 2"),
        (ENV_ATTEMPT, "3-4242", "not of the form"),
        (ENV_JOB, "01jz8q2n5v0000000000000000", "DISPATCH_JOB"),
        (ENV_JOB, "dj-01JZ8Q2N5V0000000000000000", "DISPATCH_JOB"),
    ],
)
def test_parse_execution_env_refuses_disagreement(name, value, why):
    """The four variables must each be canonical and must agree with one another."""
    env = execution_env(JOB, 3, "4242", 1)
    env[name] = value
    with pytest.raises(EncodingError, match=why):
        parse_execution_env(env)


@st.composite
def envish(draw: st.DrawFn) -> dict[str, str]:
    """A valid environment with some of its four variables replaced by arbitrary values."""
    env = execution_env(draw(JOB_IDS), draw(SUBMISSION), draw(NATIVE_ID), draw(RESTART))
    noise = {
        ENV_JOB: st.sampled_from([str(JOB), str(JOB).lower(), "", str(JOB)[1:]]),
        ENV_SUBMISSION: NUMBERISH,
        ENV_ATTEMPT: ATTEMPTISH,
        ENV_EPOCH: st.one_of(NUMBERISH, st.integers(0, 10**13).map(str)),
    }
    for name in draw(st.sets(st.sampled_from(IDENTITY_ENV))):
        env[name] = draw(noise[name])
    return env


@given(envish())
def test_parse_execution_env_is_total(env):
    """Any environment is refused with EncodingError or parses to an identity whose four
    variables are exactly the ones given."""
    try:
        identity = parse_execution_env(env)
    except EncodingError:
        return
    assert identity.env() == env


@pytest.mark.parametrize(
    ("uid", "submit", "restarts", "same"),
    [
        ("dj-A", 100, 0, True),  # the same object
        ("dj-A", 101, 0, False),  # same id and name, another submit: a reused id
        ("dj-A", 99, 0, False),
        ("dj-A", 101, 1, True),  # requeued: submit moved forward
        ("dj-A", 100, 2, True),
        ("dj-A", 99, 1, False),  # requeue never moves submit back
        ("dj-a", 100, 0, False),  # the name must match byte for byte
        ("dj-A,dj-B", 100, 0, False),
    ],
)
def test_the_identity_check_of_seed_001(uid: str, submit: int, restarts: int, same: bool) -> None:
    from dispatch_core import identity_mismatch

    mismatch = identity_mismatch("dj-A", 100, uid=uid, submit=submit, restart_count=restarts)
    assert (mismatch is None) is same
    if not same:
        assert mismatch
