"""Kubernetes resource quantities, read as k8s.io/apimachinery ``resource.Quantity`` reads them.

The one parser of quantities in the simulator (the scheduler, the Trainer and Kueue all use it).
Values are exact :class:`~fractions.Fraction` s. :func:`parse_quantity` is
apimachinery pkg/api/resource/quantity.go ``ParseQuantity``: the scanner
``parseQuantityString`` (sign, digits, an optional ``.`` and digits, then a suffix of
``eEinumkKMGTP`` letters with an optional signed integer), the suffix table of suffix.go
(``n u m "" k M G T P E``, ``Ki .. Ei``, ``e<int>``/``E<int>``), non-zero values rounded up in
magnitude to a whole nano, binary (``Ki``...) values capped at 2^63-1. Its three errors keep
apimachinery's text (:data:`FORMAT_WRONG`, :data:`NUMERIC`, :data:`SUFFIX`).

Where the simulator stops short of Go: an exponent whose value would need more than
:data:`MAX_DIGITS` decimal digits is refused with :data:`NUMERIC` (Go's ``inf.Dec`` keeps it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from fractions import Fraction
from typing import Any, Final

JSON = dict[str, Any]

SPLIT_RE: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
FORMAT_WRONG: Final = f"quantities must match the regular expression '{SPLIT_RE}'"
NUMERIC: Final = "unable to parse numeric part of quantity"
SUFFIX: Final = "unable to parse quantity's suffix"
"""quantity.go ErrFormatWrong, ErrNumeric, ErrSuffix."""

MAX_DIGITS: Final = 4096
NANO: Final = Fraction(1, 10**9)
MAX_ALLOWED: Final = Fraction(2**63 - 1)
"""quantity.go maxAllowed: the cap of a BinarySI quantity."""

DECIMAL_SUFFIXES: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9}
DECIMAL_SUFFIXES.update({"T": 12, "P": 15, "E": 18})
BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
"""suffix.go newSuffixer: base-10 and base-2 exponents of each suffix."""

_SCAN: Final = re.compile(r"([+-]?)(0*)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*)([-+]?[0-9]*)")


class QuantityError(ValueError):
    """A text ``ParseQuantity`` refuses; ``str()`` is apimachinery's error text."""


def _interpret(suffix: str) -> tuple[int, int, bool] | None:
    """suffix.go ``interpret``: (base, exponent, binary) or None for an unknown suffix."""
    if suffix in DECIMAL_SUFFIXES:
        return 10, DECIMAL_SUFFIXES[suffix], False
    if suffix in BINARY_SUFFIXES:
        return 2, BINARY_SUFFIXES[suffix], True
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        # strconv.ParseInt(s, 10, 64): an optional sign then at least one digit, in int64.
        if re.fullmatch(r"[+-]?[0-9]+", digits) is None:
            return None
        exponent = int(digits)
        if not -(2**63) <= exponent < 2**63:
            return None
        exponent = (exponent + 2**31) % 2**32 - 2**31  # Go's int32(parsed)
        return 10, exponent, False
    return None


@functools.lru_cache(maxsize=8192)
def parse_quantity(text: str) -> Fraction:
    """``resource.ParseQuantity(text)`` as an exact number; :class:`QuantityError` otherwise."""
    if not isinstance(text, str) or not text:
        raise QuantityError(FORMAT_WRONG)
    found = _SCAN.fullmatch(text)
    if found is None:
        raise QuantityError(FORMAT_WRONG)
    sign, zeros, num, denom, letters, tail = found.groups()
    if not num and denom is None and not letters and not tail:
        return Fraction(0)  # parseQuantityString: a sign and zeros only read as "0"
    interpreted = _interpret(letters + tail)
    if interpreted is None:
        raise QuantityError(SUFFIX)
    base, exponent, binary = interpreted
    fraction = denom or ""
    if not zeros and not num and not fraction:
        # No digit at all ("." or "-.Ki"): the int64 fast path reads "0"; inf.Dec's SetString,
        # taken when the precision or scale rules out the fast path, finds no digit.
        fast = exponent >= -9 if base == 10 else 13 - int(exponent * 3 / 10) >= 0
        if fast:
            return Fraction(0)
        raise QuantityError(NUMERIC)
    mantissa = Fraction(int(num + fraction or "0"), 10 ** len(fraction))
    if mantissa == 0:
        return Fraction(0)
    if base == 10 and exponent + len(num) < -10:
        value = NANO  # far below a nano: RoundUp gives the least non-zero amount
    elif base == 10 and exponent > MAX_DIGITS:
        raise QuantityError(NUMERIC)
    else:
        value = mantissa * Fraction(base) ** exponent
    if (value / NANO).denominator != 1:
        value = -((-value) // NANO) * NANO  # inf.RoundUp to a nano, on the magnitude
    if binary and value > MAX_ALLOWED:
        value = MAX_ALLOWED
    return -value if sign == "-" else value


def quantity(value: Any) -> Fraction:
    """A quantity as it stands in a decoded JSON object (Quantity.UnmarshalJSON).

    ``null`` is zero, a string is trimmed of white space, a number is read from its text; a
    boolean or any other JSON value is refused.
    """
    if value is None:
        return Fraction(0)
    if isinstance(value, bool):
        raise QuantityError(FORMAT_WRONG)
    if isinstance(value, int | float):
        return parse_quantity(str(value))
    if isinstance(value, str):
        return parse_quantity(value.strip())
    raise QuantityError(FORMAT_WRONG)


def round_up(value: Fraction) -> int:
    """The whole number away from zero (quantity.go ``RoundUp``/``ScaledValue`` rounding)."""
    whole = -((-abs(value)) // 1)
    return int(whole) if value >= 0 else -int(whole)


def value_of(value: Any) -> int:
    """``Quantity.Value()``: the quantity rounded up to a whole number."""
    return round_up(quantity(value))


def milli_value_of(value: Any) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up."""
    return round_up(quantity(value) * 1000)


def resource_value(resource: str, value: Any) -> int:
    """Kueue's int64 amount (pkg/resources ResourceValue): MilliValue for cpu, Value otherwise."""
    if isinstance(value, str):
        return _resource_value(resource, value)
    return milli_value_of(value) if resource == "cpu" else value_of(value)


@functools.lru_cache(maxsize=8192)
def _resource_value(resource: str, value: str) -> int:
    return milli_value_of(value) if resource == "cpu" else value_of(value)


BINARY_RESOURCES: Final = ("memory", "ephemeral-storage")


def format_amount(resource: str, value: int) -> str:
    """pkg/resources/resource_formatter.go: cpu as milli DecimalSI, memory as canonical BinarySI.

    The inverse of :func:`resource_value` on whole amounts.
    """
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if resource in BINARY_RESOURCES or resource.startswith("hugepages-"):
        for suffix, power in sorted(BINARY_SUFFIXES.items(), key=lambda s: -s[1]):
            if value and value % (1 << power) == 0:
                return f"{value >> power}{suffix}"
    return str(value)


def _container_requests(container: Any) -> dict[str, Fraction]:
    """A container's requests, its limits standing in for requests it does not set.

    pkg/apis/core/v1/defaults.go SetDefaults_ResourceList: the API server defaults a missing
    request to the limit; an unreadable quantity counts as zero (validation refuses it).
    """
    if not isinstance(container, dict):
        return {}
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    out: dict[str, Fraction] = {}
    for name, raw in merged.items():
        try:
            out[str(name)] = quantity(raw)
        except QuantityError:
            out[str(name)] = Fraction(0)
    return out


def pod_requests(pod: JSON) -> dict[str, Fraction]:
    """A pod's (or pod template's) requests: containers summed, at least each init container's.

    k8s.io/component-helpers/resource PodRequests: the sum over ``containers``, the maximum
    with every ``initContainers`` entry, plus ``spec.overhead``.
    """
    spec = pod.get("spec") or {}
    total = sum_requests(_container_requests(c) for c in spec.get("containers") or [])
    for container in spec.get("initContainers") or []:
        for k, v in _container_requests(container).items():
            if k not in total or v > total[k]:
                total[k] = v
    if spec.get("overhead"):
        total = sum_requests(
            [total, _container_requests({"resources": {"requests": spec["overhead"]}})]
        )
    return total


def sum_requests(requests: Iterable[dict[str, Fraction]]) -> dict[str, Fraction]:
    """The resource-wise sum of several request maps."""
    total: dict[str, Fraction] = {}
    for r in requests:
        for k, v in r.items():
            total[k] = total[k] + v if k in total else v
    return total


__all__ = [
    "FORMAT_WRONG",
    "NUMERIC",
    "SUFFIX",
    "QuantityError",
    "format_amount",
    "milli_value_of",
    "parse_quantity",
    "pod_requests",
    "quantity",
    "resource_value",
    "round_up",
    "sum_requests",
    "value_of",
]
