"""The Slurm adapter's identity encodings (DESIGN §4, seed 001): the comment
``dispatch:s=<N>;a=<attempt>`` and holds as a far-future start time, decoded against the job's
current submit time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from adapters.slurm.identity import (
    COMMENT_PREFIX,
    HoldBase,
    decode_hold,
    encode_hold,
    parse_slurm_comment,
    slurm_comment,
)
from dispatch_core import EncodingError, EpochBound, HoldBound

SUBMISSION = st.integers(1, EpochBound - 1)
ATTEMPT = st.integers(1, EpochBound - 1)
HOLD = st.integers(1, HoldBound - 1)
SUBMIT = st.integers(0, 4_000_000_000)  # epoch seconds
DECIMALISH = st.one_of(
    st.text(alphabet="0123456789+-_ \n\u0661\uff11.e", max_size=22),
    st.integers(-(10**21), 10**21).map(str),
    st.text(max_size=8),
)
NUMBERISH = st.one_of(st.integers(0, EpochBound).map(str), DECIMALISH)


def test_the_comment_prefix():
    assert slurm_comment(1, 1).startswith(COMMENT_PREFIX) and COMMENT_PREFIX == "dispatch:"


# ---------------------------------------------------------------------------------------------
# The Slurm comment: dispatch:s=<N>;a=<attempt>
# ---------------------------------------------------------------------------------------------


def test_slurm_comment_example():
    """The comment records the submission number and the attempt number."""
    assert slurm_comment(3, 2) == "dispatch:s=3;a=2"
    assert parse_slurm_comment("dispatch:s=3;a=2") == (3, 2)
    assert parse_slurm_comment("dispatch:s=999999;a=1").submission == 999_999


@given(SUBMISSION, ATTEMPT)
def test_slurm_comment_round_trips(submission, attempt):
    """parse_slurm_comment gives back what slurm_comment wrote."""
    comment = parse_slurm_comment(slurm_comment(submission, attempt))
    assert (comment.submission, comment.attempt) == (submission, attempt)


@pytest.mark.parametrize(
    "text",
    [
        "dispatch:s=01;a=1",  # leading zero
        "dispatch:s=1;a=01",
        "dispatch:s=0;a=1",  # submissions count from 1
        "dispatch:s=1;a=0",  # attempts count from 1, as submissions do
        "dispatch:s=+1;a=1",  # sign
        "dispatch:s=-1;a=1",
        "dispatch:s= 1;a=1",  # spaces
        "dispatch:s=1 ;a=1",
        "dispatch:s=1; a=1",
        " dispatch:s=1;a=1",
        "dispatch:s=1;a=1 ",
        "dispatch:s=1;a=1\n",  # trailing newline
        "dispatch:s=1_0;a=1",  # underscore
        "dispatch:s=\u0661;a=1",  # unicode digits
        "dispatch:s=1;a=\uff11",
        "dispatch:s=1000000;a=1",  # EpochBound
        "dispatch:s=1;a=1000000",
        "dispatch:s=99999999999999999999999;a=1",  # overflow
        "dispatch:s=;a=1",  # empty parts
        "dispatch:s=1;a=",
        "dispatch:s=;a=",
        "",
        "dispatch:",
        "dispatch:s=1",
        "dispatch:a=1;s=1",  # order
        "dispatch:s=1,a=1",  # wrong separators
        "dispatch:s=1;;a=1",
        "dispatch;s=1;a=1",
        "dispatch:s:1;a:1",
        "dispatch:s=1;a=1;",  # extra text after
        "dispatch:s=1;a=1;x=2",
        "xdispatch:s=1;a=1",  # extra text before
        "note dispatch:s=1;a=1",
        "DISPATCH:s=1;a=1",  # case
        "dispatch:S=1;a=1",
        "dispatch:s=1;A=1",
    ],
)
def test_parse_slurm_comment_refuses(text):
    """Exactly dispatch:s=<N>;a=<attempt>, canonical decimals, nothing else."""
    with pytest.raises(EncodingError):
        parse_slurm_comment(text)


@pytest.mark.parametrize(
    ("submission", "attempt"), [(0, 1), (1, 0), (EpochBound, 1), (1, EpochBound), (True, 1)]
)
def test_slurm_comment_refuses_values_it_could_not_read_back(submission, attempt):
    """The writer refuses what the strict reader would refuse."""
    with pytest.raises(EncodingError):
        slurm_comment(submission, attempt)


COMMENTISH = st.one_of(
    st.builds(lambda s, a: f"dispatch:s={s};a={a}", NUMBERISH, NUMBERISH),
    st.from_regex(r"[dispatch:sa=;0-9 ]{0,24}", fullmatch=True),
    st.text(max_size=24),
)


@given(COMMENTISH)
def test_parse_slurm_comment_is_total_and_canonical(text):
    """Any text is refused with EncodingError or parses to values that re-encode to it."""
    try:
        comment = parse_slurm_comment(text)
    except EncodingError:
        return
    assert slurm_comment(comment.submission, comment.attempt) == text


# ---------------------------------------------------------------------------------------------
# Holds: StartTime = SubmitTime + HoldBase + k, decoded against the current SubmitTime
# ---------------------------------------------------------------------------------------------


def test_hold_base_is_ten_julian_years():
    """HoldBase is 315,576,000 seconds: ten years of 365.25 days."""
    assert HoldBase == 315_576_000 == int(10 * 365.25 * 86_400)


def test_hold_example():
    """Hold 1 on a job submitted at t is placed at t + HoldBase + 1."""
    assert encode_hold(1_700_000_000, 1) == 1_700_000_000 + 315_576_000 + 1
    assert decode_hold(1_700_000_000 + 315_576_001, 1_700_000_000) == 1


@given(SUBMIT, HOLD)
def test_hold_round_trips(submit, hold):
    """decode_hold(encode_hold(s, k), s) == k for every 0 < k < 1,000,000."""
    assert decode_hold(encode_hold(submit, hold), submit) == hold


@given(SUBMIT, HOLD)
def test_hold_round_trips_with_datetimes(submit, hold):
    """Submit and eligible times may be aware datetimes, in any zone."""
    moment = datetime.fromtimestamp(submit, tz=UTC)
    eligible = datetime.fromtimestamp(encode_hold(moment, hold), tz=timezone(timedelta(hours=-5)))
    assert decode_hold(eligible, moment) == hold


@given(SUBMIT, HOLD, st.integers(1, 2 * HoldBase))
def test_hold_never_decodes_to_itself_after_the_submit_time_moved(submit, hold, moved):
    """A requeue moves the submit time forward: the hold no longer decodes to the number that
    was placed. Against submit + d it decodes to k - d, or to nothing."""
    decoded = decode_hold(encode_hold(submit, hold), submit + moved)
    assert decoded != hold
    assert decoded == (hold - moved if hold - moved > 0 else None)


@given(SUBMIT, st.integers(-HoldBase, HoldBase))
def test_eligible_times_near_submit_carry_no_hold(submit, offset):
    """An ordinary eligible time (e.g. a requeue delay, submit + 121) decodes to no hold."""
    assert decode_hold(submit + offset, submit) is None


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (121, None),  # a requeue's delay
        (0, None),
        (HoldBase, None),  # k = 0 is not a hold
        (HoldBase + 1, 1),
        (HoldBase + 999_999, 999_999),
        (HoldBase + 1_000_000, None),  # beyond HoldBound
        (HoldBase + 10**9, None),
        (-1, None),
    ],
)
def test_decode_hold_table(offset, expected):
    """Only 0 < eligible - submit - HoldBase < 1,000,000 is a hold number."""
    submit = 1_700_000_000
    assert decode_hold(submit + offset, submit) == expected


def test_decode_hold_without_eligible_time():
    """No eligible time, no hold."""
    assert decode_hold(None, 1_700_000_000) is None


@pytest.mark.parametrize("hold", [0, -1, 1_000_000, 10**9, True])
def test_encode_hold_refuses_numbers_outside_the_range(hold):
    """Hold numbers are ints with 0 < k < 1,000,000."""
    with pytest.raises(EncodingError):
        encode_hold(1_700_000_000, hold)


@pytest.mark.parametrize(
    "submit",
    [
        datetime(2024, 1, 1),  # naive
        datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=UTC),  # fractional seconds
        1.5,
        "1700000000",
        True,
    ],
)
def test_hold_refuses_bad_times(submit):
    """Times are whole epoch seconds or whole-second aware datetimes."""
    with pytest.raises(EncodingError):
        encode_hold(submit, 1)
    with pytest.raises(EncodingError):
        decode_hold(submit, 1_700_000_000)


@given(SUBMIT, HOLD, st.integers(0, 10))
def test_a_later_hold_number_is_a_later_start_time(submit, hold, step):
    """A new hold takes the next number, which is placed later than the one before."""
    assume(hold + step < 1_000_000)
    assert encode_hold(submit, hold + step) - encode_hold(submit, hold) == step
