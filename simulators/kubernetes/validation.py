"""Name and label validation as k8s.io/apimachinery ``pkg/util/validation`` (v0.32) words it.

Each ``is_*`` function returns the list of messages the Go function of the same name returns
(empty when the value is valid); callers wrap each in a field error as the API server or a
webhook does (``field.Invalid(path, value, msg)``: ``Invalid value: "<value>": <msg>``).
Lengths are counted in bytes, as Go's ``len`` counts a string; patterns match the whole text, as
RE2's ``^...$`` does.
"""

from __future__ import annotations

import re
from typing import Final

QNAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QNAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
LABEL_VALUE_FMT: Final = f"({QNAME_FMT})?"
LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_FMT: Final = rf"{DNS1123_LABEL_FMT}(\.{DNS1123_LABEL_FMT})*"
DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_LABEL_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
LABEL_MAX: Final = 63
SUBDOMAIN_MAX: Final = 253

_QNAME_RE: Final = re.compile(QNAME_FMT)
_LABEL_VALUE_RE: Final = re.compile(LABEL_VALUE_FMT)
DNS1123_LABEL_RE: Final = re.compile(DNS1123_LABEL_FMT)
DNS1123_SUBDOMAIN_RE: Final = re.compile(DNS1123_SUBDOMAIN_FMT)
DNS1035_LABEL_RE: Final = re.compile(DNS1035_LABEL_FMT)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError: the rule, the examples, the expression."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def byte_len(text: str) -> int:
    """Length in bytes, as Go's ``len`` counts a string."""
    return len(text.encode("utf-8", "surrogatepass"))


def _full(pattern: re.Pattern[str], text: str) -> bool:
    # Go's RE2 ``^...$`` anchors at the ends of the text only: fullmatch, never ``$``.
    return pattern.fullmatch(text) is not None


def _checked(
    value: str, limit: int, pattern: re.Pattern[str], msg: str, fmt: str, *examples: str
) -> list[str]:
    """The length check, then the pattern check, as each Is* function makes them."""
    errs: list[str] = []
    if byte_len(value) > limit:
        errs.append(max_len_error(limit))
    if not _full(pattern, value):
        errs.append(regex_error(msg, fmt, *examples))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    """validation.IsDNS1123Label."""
    return _checked(
        value,
        LABEL_MAX,
        DNS1123_LABEL_RE,
        DNS1123_LABEL_MSG,
        DNS1123_LABEL_FMT,
        "my-name",
        "123-abc",
    )


def is_dns1123_subdomain(value: str) -> list[str]:
    """validation.IsDNS1123Subdomain."""
    return _checked(
        value,
        SUBDOMAIN_MAX,
        DNS1123_SUBDOMAIN_RE,
        DNS1123_SUBDOMAIN_MSG,
        DNS1123_SUBDOMAIN_FMT,
        "example.com",
    )


def is_dns1035_label(value: str) -> list[str]:
    """validation.IsDNS1035Label."""
    return _checked(
        value,
        LABEL_MAX,
        DNS1035_LABEL_RE,
        DNS1035_LABEL_MSG,
        DNS1035_LABEL_FMT,
        "my-name",
        "abc-123",
    )


def is_qualified_name(key: str) -> list[str]:
    """validation.IsQualifiedName: ``[prefix/]name`` (label and annotation keys)."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(QNAME_MSG, QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif byte_len(name) > LABEL_MAX:
        errs.append("name part " + max_len_error(LABEL_MAX))
    if not _full(_QNAME_RE, name):
        errs.append(
            "name part " + regex_error(QNAME_MSG, QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """validation.IsValidLabelValue."""
    return _checked(
        value,
        LABEL_MAX,
        _LABEL_VALUE_RE,
        LABEL_VALUE_MSG,
        LABEL_VALUE_FMT,
        "MyValue",
        "my_value",
        "12345",
    )
