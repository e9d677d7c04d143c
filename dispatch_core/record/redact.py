"""What a record may hold of a job spec: no credential-bearing value, ever (DESIGN §9, §12).

A credential reaches a spec in three recognisable ways, and each is taken out before anything is
written:

- **an env entry**: its value is left out when the spec marks the name secret
  (``JobSpec.secret_env``) or when the name itself says so (``API_TOKEN``, ``PGPASSWORD``, ...;
  :func:`is_secret_name`); the record keeps the name, in ``RecordedSpec.withheld_env``;
- **a URI** anywhere in any text (``scheme://...``): its userinfo is removed, and the value of
  every query, fragment or path parameter whose name is secret is replaced by ``<redacted>``;
- **a value a secret name introduces** in free text outside a URI: ``--password=x`` and
  ``PGPASSWORD=x cmd`` (to the next space), ``Authorization: Bearer x`` and YAML's
  ``password: x`` (to the end of the line), JSON's ``"password": "x"`` (to the closing quote),
  the word after ``Bearer`` or ``Basic``, the userinfo of a scheme-less ``user:password@host``,
  and in a command the argument after a secret-named flag (``--token x``).

A bare credential anywhere else (a positional argument, a path) cannot be told from any other
text: pass it in an env entry marked secret. Redaction is idempotent, and it is applied to every
text of every record by the store itself (:func:`scrub`), not only to the spec.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote_plus

from dispatch_core.model import JobSpec

REDACTED: Final = "<redacted>"
"""What stands in a record where a credential was."""

_SECRET_WORDS: Final = re.compile(
    r"token|passw|pwd|secret|key|sig|auth|credential|cookie|session|bearer|jwt|private|cert",
    re.IGNORECASE,
)
_URI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'`]*")
_NAME_EQ: Final = re.compile(r"(?P<name>[A-Za-z0-9_.\-]+)=")
_SPACE: Final = re.compile(r"\s")
_NAME_COLON: Final = re.compile(r"(?P<name>[A-Za-z0-9_.\-]+)[\"']?[ \t]*(?P<colon>:)(?!//)[ \t]*")
_LINE_END: Final = re.compile(r"[\r\n]")
_SCHEME: Final = re.compile(r"\b(?:bearer|basic|token)[ \t]+(?=\S)", re.IGNORECASE)
_BARE_USERINFO: Final = re.compile(r"(?<![\w.+\-])[^\s:/@\"'`<>=]+:[^\s/\"'`]+@(?=[A-Za-z0-9\[])")
_FLAG: Final = re.compile(r"-{1,2}[A-Za-z0-9_.\-]+")


def is_secret_name(name: str) -> bool:
    """Whether a parameter, flag or env name says its value is a credential (case-insensitive;
    ``token``, ``password``, ``secret``, ``key``, ``signature``/``sig``, ``auth``, ``credential``,
    ``cookie``, ``session``, ...). It errs on the side of leaving a value out."""
    return _SECRET_WORDS.search(unquote_plus(name)) is not None


def _params(text: str, separators: str) -> str:
    """``text`` (``a=1&token=x``) with the value of every secret-named parameter redacted."""
    out = []
    for part in re.split(f"([{re.escape(separators)}])", text):
        name, eq, _value = part.partition("=")
        out.append(f"{name}={REDACTED}" if eq and is_secret_name(name) else part)
    return "".join(out)


def redact_uri(uri: str) -> str:
    """``uri`` without its userinfo and with its secret parameters' values redacted.

    The userinfo is everything up to the last ``@`` before the first ``/`` after the scheme, so
    a password holding an unencoded ``@``, ``:``, ``?`` or ``#`` still goes (a host that is then
    lost is the lesser harm); an unencoded ``/`` in a password is not a URI (RFC 3986) and ends
    the authority."""
    scheme, _, rest = uri.partition("://")
    slash = rest.find("/")
    authority = rest if slash < 0 else rest[:slash]
    at = authority.rfind("@")
    if at >= 0:
        rest = rest[at + 1 :]
    rest, hash_, fragment = rest.partition("#")
    rest, question, query = rest.partition("?")
    rest = _params(rest, ";/")  # path parameters (;jsessionid=...), and any name=value
    query = _params(query, "&;")
    fragment = _params(fragment, "&;")
    return f"{scheme}://{rest}{question}{query}{hash_}{fragment}"


def _value_end(text: str, start: int, stop: re.Pattern[str]) -> int:
    found = stop.search(text, start)
    return len(text) if found is None else found.start()


def _cuts(text: str, uris: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans of ``text``, outside URIs, that hold a credential's value."""

    def outside(index: int) -> bool:
        return not any(start <= index < end for start, end in uris)

    cuts: list[tuple[int, int]] = []
    for match in _NAME_EQ.finditer(text):  # token=x, --password=x: up to white space
        eq = match.end() - 1
        if outside(eq) and is_secret_name(match["name"]):
            cuts.append((eq + 1, _value_end(text, eq + 1, _SPACE)))
    for match in _NAME_COLON.finditer(text):  # Authorization: Bearer x, "password": "x", key: x
        colon = match.start("colon")
        if outside(colon) and is_secret_name(match["name"]):
            value = match.end()
            if value < len(text) and text[value] in "\"'":
                quote = re.compile(r"(?<!\\)" + re.escape(text[value]))  # not an escaped one
                cuts.append((value + 1, _value_end(text, value + 1, quote)))
            else:
                cuts.append((value, _value_end(text, value, _LINE_END)))
    for match in _SCHEME.finditer(text):  # Bearer x, Basic x
        if outside(match.start()):
            cuts.append((match.end(), _value_end(text, match.end(), _SPACE)))
    for match in _BARE_USERINFO.finditer(text):  # user:password@host, without a scheme
        if outside(match.start()):
            cuts.append((match.start(), match.end() - 1))
    # Merged, and grown over any URI they touch (the safe side), until nothing changes.
    spans = sorted(c for c in cuts if c[0] < c[1])
    changed = True
    while changed:
        changed = False
        for start, end in uris:
            for i, (c0, c1) in enumerate(spans):
                if start < c1 and c0 < end and not (c0 <= start and end <= c1):
                    spans[i] = (min(c0, start), max(c1, end))
                    changed = True
        merged: list[tuple[int, int]] = []
        for c0, c1 in sorted(spans):
            if merged and c0 <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], c1))
            else:
                merged.append((c0, c1))
        spans = merged
    return spans


def redact_text(text: str) -> str:
    """``text`` with every URI redacted (:func:`redact_uri`) and, outside URIs, every value a
    secret name introduces: ``name=value`` up to the next white space (so a value holding
    ``&``, ``;`` or even ``://`` goes whole), ``name: value`` (a header, YAML) to the end of the
    line or ``"name": "value"`` to the closing quote, the word after ``Bearer`` or ``Basic``,
    and the userinfo of a ``user:password@host`` without a scheme."""
    uris = [(m.start(), m.end()) for m in _URI.finditer(text)]
    cuts = _cuts(text, uris)
    spans = sorted(
        [(start, end, REDACTED) for start, end in cuts]
        + [
            (start, end, redact_uri(text[start:end]))
            for start, end in uris
            if not any(c0 <= start < c1 for c0, c1 in cuts)
        ]
    )
    out, last = [], 0
    for start, end, replacement in spans:
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out)


def redact_command(command: tuple[str, ...]) -> tuple[str, ...]:
    """Each argument redacted, and the argument after a secret-named flag (``--token x``)."""
    out: list[str] = []
    for arg in command:
        previous = out[-1] if out else ""
        flag = _FLAG.fullmatch(previous) is not None and is_secret_name(previous)
        out.append(REDACTED if flag else redact_text(arg))
    return tuple(out)


def scrub(value: object) -> object:
    """A JSON value (as ``model_dump(mode="json")`` makes) with every text redacted, keys too."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {redact_text(str(k)): scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


def canonical_json(value: object) -> str:
    """The one text of a JSON value: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_digest(data: object) -> str:
    """``sha256:`` and the hex digest of ``data``'s canonical JSON."""
    return "sha256:" + hashlib.sha256(canonical_json(data).encode()).hexdigest()


def withheld_env(spec: JobSpec) -> tuple[str, ...]:
    """The env names whose values a record leaves out: marked secret, or named like a secret."""
    return tuple(sorted(n for n in spec.env if n in spec.secret_env or is_secret_name(n)))


__all__ = [
    "REDACTED",
    "canonical_json",
    "is_secret_name",
    "redact_command",
    "redact_text",
    "redact_uri",
    "scrub",
    "spec_digest",
    "withheld_env",
]
