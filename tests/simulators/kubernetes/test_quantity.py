"""Quantities as apimachinery's resource.ParseQuantity reads them, and Kueue's formatting."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulators.kubernetes.quantity import (
    BINARY_SUFFIXES,
    DECIMAL_SUFFIXES,
    FORMAT_WRONG,
    NUMERIC,
    SUFFIX,
    QuantityError,
    format_amount,
    parse_quantity,
    pod_requests,
    quantity,
    resource_value,
    value_of,
)

SPLIT = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", Fraction(0)),
        ("500m", Fraction(1, 2)),
        ("4Gi", Fraction(4 * 2**30)),
        ("1e3", Fraction(1000)),
        ("1E", Fraction(10**18)),
        ("1.G", Fraction(10**9)),
        (".5", Fraction(1, 2)),
        ("-1.5", Fraction(-3, 2)),
        ("+2k", Fraction(2000)),
        ("-", Fraction(0)),
        (".", Fraction(0)),
        ("1e-10", Fraction(1, 10**9)),
        ("1.0000000001", Fraction(1_000_000_001, 10**9)),
        ("100Ei", Fraction(2**63 - 1)),
    ],
)
def test_parse_reads_as_apimachinery(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", FORMAT_WRONG),
        (" 1", FORMAT_WRONG),
        ("1KiB", FORMAT_WRONG),
        ("abc", FORMAT_WRONG),
        ("1K", SUFFIX),
        ("1e", SUFFIX),
        ("1e+", SUFFIX),
        ("1Mi5", SUFFIX),
        ("1-", SUFFIX),
        (".Pi", NUMERIC),
    ],
)
def test_parse_refuses_with_apimachinery_errors(text: str, error: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert str(caught.value) == error


def test_json_values() -> None:
    assert quantity(None) == 0
    assert quantity(" 2 ") == 2
    assert quantity(3) == 3
    assert quantity(0.25) == Fraction(1, 4)
    bad: object
    for bad in (True, [], {}):
        with pytest.raises(QuantityError):
            quantity(bad)
    assert value_of("1.5") == 2
    assert value_of("-1.5") == -2
    assert resource_value("cpu", "250m") == 250
    assert resource_value("memory", "1Ki") == 1024


_SUFFIXES = sorted(DECIMAL_SUFFIXES) + sorted(BINARY_SUFFIXES)


@given(
    whole=st.integers(min_value=0, max_value=10**12),
    frac=st.text(alphabet="0123456789", max_size=6),
    suffix=st.sampled_from(_SUFFIXES) | st.integers(-12, 24).map(lambda e: f"e{e}"),
    sign=st.sampled_from(["", "+", "-"]),
)
@settings(max_examples=300, deadline=None)
def test_well_formed_text_parses_to_its_value(
    whole: int, frac: str, suffix: str, sign: str
) -> None:
    text = f"{sign}{whole}.{frac}{suffix}" if frac else f"{sign}{whole}{suffix}"
    number = Fraction(f"{whole}.{frac or '0'}")
    if suffix in BINARY_SUFFIXES:
        value = number * 2 ** BINARY_SUFFIXES[suffix]
        value = min(value, Fraction(2**63 - 1))
    else:
        exponent = DECIMAL_SUFFIXES[suffix] if suffix in DECIMAL_SUFFIXES else int(suffix[1:])
        value = number * Fraction(10) ** exponent
    nanos = -((-value * 10**9) // 1)  # rounded up to a whole nano
    expected = Fraction(nanos, 10**9)
    assert parse_quantity(text) == (-expected if sign == "-" else expected)


SCANNER = re.compile(r"[+-]?[0-9]*(\.[0-9]*)?[eEinumkKMGTP]*[-+]?[0-9]*")
"""What parseQuantityString reads (looser than its error's expression: "P" and "." read as 0)."""


@given(st.text(alphabet=st.sampled_from("+-.0123456789eEinumkKMGTPi xB"), max_size=10) | st.text())
@settings(max_examples=500, deadline=None)
def test_text_is_read_or_refused_with_an_apimachinery_error(text: str) -> None:
    """Every text gets a number or one of the three errors; a digitless one reads as zero."""
    try:
        value = parse_quantity(text)
    except QuantityError as exc:
        assert str(exc) in (FORMAT_WRONG, NUMERIC, SUFFIX)
        return
    assert SCANNER.fullmatch(text) is not None
    if not any(c.isdigit() for c in text):
        assert value == 0


@given(
    resource=st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi", "pods"]),
    value=st.integers(min_value=0, max_value=2**62),
)
@settings(max_examples=300, deadline=None)
def test_format_amount_round_trips(resource: str, value: int) -> None:
    text = format_amount(resource, value)
    assert resource_value(resource, text) == value
    assert SPLIT.match(text) is not None


def test_pod_requests_sum_containers_max_init_and_overhead() -> None:
    pod = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}},
                {"resources": {"requests": {"cpu": "1", "memory": "512Mi"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
            "overhead": {"cpu": "100m"},
        }
    }
    assert pod_requests(pod) == {
        "cpu": Fraction(21, 10),
        "memory": Fraction(3 * 2**29),
    }
