"""Label and field selectors as the Kubernetes API server parses and matches them.

A port of k8s.io/apimachinery v0.32 (the server line the simulator reports): the label grammar,
lexer and messages of ``pkg/labels/selector.go`` (with ``pkg/util/validation`` for keys and
values), ``LabelSelectorAsSelector`` of ``pkg/apis/meta/v1/helpers.go`` for the object form, and
``pkg/fields/selector.go`` for field selectors. Parsing is total: any text gives a selector or a
:class:`SelectorError` carrying the message the API server would put in its 400 Status.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from simulators.kubernetes.errors import aggregate
from simulators.kubernetes.validation import is_qualified_name, is_valid_label_value

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "SelectorError",
]


class SelectorError(ValueError):
    """A selector the API server refuses; ``str()`` is its message."""


_GO_ESCAPES: Final = {
    "\a": r"\a",
    "\b": r"\b",
    "\f": r"\f",
    "\n": r"\n",
    "\r": r"\r",
    "\t": r"\t",
    "\v": r"\v",
    "\\": r"\\",
    '"': r"\"",
}


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (``strconv.Quote``), as field errors print bad values."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif ch == " " or ch.isprintable():
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _invalid(path: str, value: str, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()``."""
    return f"{path}: Invalid value: {go_quote(value)}: {detail}"


def _parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``, or ``None`` where Go would fail."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


# --- requirements --------------------------------------------------------------------------

#: The operators of a :class:`Requirement` (``==`` is normalised to ``=``). ``gt``/``lt`` are the
#: apimachinery ``>``/``<`` (integer comparison), which the string form accepts.
OPERATORS: Final = ("=", "!=", "in", "notin", "exists", "!", "gt", "lt")

_BINARY_OPERATORS_TEXT: Final = "in, notin, =, ==, !=, gt, lt"


@dataclass(frozen=True)
class Requirement:
    """One requirement: ``key``, an operator of :data:`OPERATORS`, sorted distinct ``values``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """The rule of ``Requirement.Matches``: ``notin``/``!=`` also match an absent key."""
        op = self.operator
        if op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if self.key not in labels or len(self.values) != 1:
            return False
        have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "gt" else have < want

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return "!" + self.key
        joined = ",".join(self.values)
        if op in ("in", "notin"):
            return f"{self.key} {op} ({joined})"
        symbol = {"=": "=", "!=": "!=", "gt": ">", "lt": "<"}[op]
        return f"{self.key}{symbol}{joined}"


def _new_requirement(key: str, op: str, values: list[str], path: str = "") -> Requirement:
    """``labels.NewRequirement``: validate the key, the value count and each value."""
    prefix = f"{path}." if path else ""
    errs: list[str] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        errs.append(_invalid(prefix + "key", key, "; ".join(key_errs)))
    values_path = prefix + "values"
    if op in ("in", "notin") and not values:
        errs.append(
            f"{values_path}: Invalid value: []string(nil): "
            "for 'in', 'notin' operators, values set can't be empty"
        )
    if op in ("exists", "!") and values:
        shown = ", ".join(go_quote(v) for v in values)
        errs.append(
            f"{values_path}: Invalid value: []string{{{shown}}}: "
            "values set must be empty for exists and does not exist"
        )
    if op in ("gt", "lt"):
        for i, v in enumerate(values):
            if _parse_int64(v) is None:
                errs.append(
                    _invalid(
                        f"{values_path}[{i}]",
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    for i, v in enumerate(values):
        value_errs = is_valid_label_value(v)
        if value_errs:
            errs.append(_invalid(f"{values_path}[{i}][{key}]", v, "; ".join(value_errs)))
    if errs:
        raise SelectorError(aggregate(errs))
    return Requirement(key, op, tuple(sorted(set(values))))


# --- the lexer and parser of labels.Parse --------------------------------------------------

_ERROR, _EOS, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(14)
_TOKENS: Final = {
    ")": _CLOSE,
    ",": _COMMA,
    "!": _NOT,
    "==": _DEQ,
    "=": _EQ,
    ">": _GT,
    "in": _IN,
    "<": _LT,
    "!=": _NEQ,
    "notin": _NOTIN,
    "(": _OPEN,
}
_SPECIAL: Final = frozenset("=!(),><")
_SPACE: Final = frozenset(" \t\r\n")


def _lex(text: str) -> list[tuple[int, str]]:
    """The token stream of ``Lexer.Lex`` (a NUL reads as end of string, as Go's ``read`` does)."""
    items: list[tuple[int, str]] = []
    pos, n = 0, len(text)

    def read() -> str:
        nonlocal pos
        ch = text[pos] if pos < n else "\0"
        pos += 1
        return ch

    while True:
        ch = read()
        while ch in _SPACE:
            ch = read()
        if ch == "\0":
            items.append((_EOS, ""))
            return items
        pos -= 1
        if ch in _SPECIAL:
            buffer, last_tok, last_lit = "", _ERROR, ""
            while True:
                c = read()
                if c == "\0":
                    break
                if c not in _SPECIAL:
                    pos -= 1
                    break
                buffer += c
                if buffer in _TOKENS:
                    last_tok, last_lit = _TOKENS[buffer], buffer
                elif last_tok != _ERROR:
                    pos -= 1
                    break
            if last_tok == _ERROR:
                items.append((_ERROR, f"error expected: keyword found '{buffer}'"))
            else:
                items.append((last_tok, last_lit))
        else:
            start = pos
            while True:
                c = read()
                if c == "\0":
                    word = text[start : pos - 1]
                    break
                if c in _SPECIAL or c in _SPACE:
                    pos -= 1
                    word = text[start:pos]
                    break
            items.append((_TOKENS.get(word, _ID), word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def _get(self, index: int, values: bool) -> tuple[int, str]:
        tok, lit = self.items[min(index, len(self.items) - 1)]
        if values and tok in (_IN, _NOTIN):
            tok = _ID
        return tok, lit

    def lookahead(self, values: bool = True) -> tuple[int, str]:
        return self._get(self.position, values)

    def consume(self, values: bool = True) -> tuple[int, str]:
        self.position += 1
        return self._get(self.position - 1, values)

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok in (_ID, _NOT):
                try:
                    requirements.append(self.requirement())
                except SelectorError as err:
                    raise SelectorError(f"unable to parse requirement: {err}") from None
                t, lit2 = self.consume()
                if t == _EOS:
                    return requirements
                if t == _COMMA:
                    t2, l2 = self.lookahead()
                    if t2 not in (_ID, _NOT):
                        raise SelectorError(f"found '{l2}', expected: identifier after ','")
                else:
                    raise SelectorError(f"found '{lit2}', expected: ',' or 'end of string'")
            elif tok == _EOS:
                return requirements
            else:
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        key, op = self.key_and_operator()
        if op in ("exists", "!"):
            return _new_requirement(key, op, [])
        op = self.operator()
        values = self.set_values() if op in ("in", "notin") else self.exact_value()
        return _new_requirement(key, op, sorted(values))

    def key_and_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume()
        if tok == _NOT:
            op = "!"
            tok, lit = self.consume()
        if tok != _ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key_errs = is_qualified_name(lit)
        if key_errs:
            raise SelectorError(_invalid("<nil>", lit, "; ".join(key_errs)))
        if self.lookahead()[0] in (_EOS, _COMMA) and op != "!":
            op = "exists"
        return lit, op

    def operator(self) -> str:
        tok, lit = self.consume(values=False)
        ops = {_IN: "in", _EQ: "=", _DEQ: "=", _GT: "gt", _LT: "lt", _NOTIN: "notin", _NEQ: "!="}
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: {_BINARY_OPERATORS_TEXT}")
        return ops[tok]

    def set_values(self) -> set[str]:
        tok, lit = self.consume()
        if tok != _OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (_ID, _COMMA):
            found = self.identifiers()
            if self.consume()[0] != _CLOSE:
                raise SelectorError(f"found '{lit}', expected: ')'")
            return found
        if tok == _CLOSE:
            self.consume()
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == _ID:
                found.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == _COMMA:
                    continue
                if tok2 == _CLOSE:
                    return found
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _COMMA:
                if not found:
                    found.add("")
                tok2, _ = self.lookahead()
                if tok2 == _CLOSE:
                    found.add("")
                    return found
                if tok2 == _COMMA:
                    self.consume()  # v0.32 consumes the second comma here
                    found.add("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.lookahead()
        if tok in (_EOS, _COMMA):
            return {""}
        tok, lit = self.consume()
        if tok == _ID:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: the AND of its requirements, sorted by key (stably)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False  # a nil object selector: matches no labels at all

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """``labels.Parse``: the string form; ``""`` selects everything."""
        found = _Parser(text).parse()
        return cls(tuple(sorted(found, key=lambda r: r.key)))

    @classmethod
    def from_object(cls, sel: Mapping[str, Any] | None) -> LabelSelector:
        """``metav1.LabelSelectorAsSelector``: ``matchLabels`` and ``matchExpressions``.

        ``None`` (a nil selector) matches nothing; ``{}`` matches everything.
        """
        if sel is None:
            return cls(nothing=True)
        if not isinstance(sel, Mapping):
            raise SelectorError("label selector must be an object")
        match_labels = sel.get("matchLabels") or {}
        expressions = sel.get("matchExpressions") or []
        if not isinstance(match_labels, Mapping):
            raise SelectorError("matchLabels must be an object of strings")
        if not isinstance(expressions, list):
            raise SelectorError("matchExpressions must be a list")
        found: list[Requirement] = []
        for key in sorted(match_labels, key=str):
            value = match_labels[key]
            if not isinstance(key, str) or not isinstance(value, str):
                raise SelectorError("matchLabels must be an object of strings")
            found.append(_new_requirement(key, "=", [value]))
        ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
        for expr in expressions:
            if not isinstance(expr, Mapping):
                raise SelectorError("matchExpressions entries must be objects")
            operator = expr.get("operator", "")
            key = expr.get("key", "")
            values = expr.get("values") or []
            if not isinstance(operator, str) or operator not in ops:
                shown = operator if isinstance(operator, str) else str(operator)
                raise SelectorError(f"{go_quote(shown)} is not a valid label selector operator")
            if not isinstance(key, str):
                raise SelectorError("matchExpressions key must be a string")
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise SelectorError("matchExpressions values must be a list of strings")
            found.append(_new_requirement(key, ops[operator], list(values)))
        return cls(tuple(sorted(found, key=lambda r: r.key)))

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (``Selector.Empty``)."""
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Every requirement holds for ``labels``."""
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def index_hint(self) -> list[tuple[str, tuple[str, ...] | None]]:
        """What a label index answers without a scan: ``=``/``in`` as values, ``exists`` as None.

        The candidates are the intersection of these; :meth:`matches` decides.
        """
        hints: list[tuple[str, tuple[str, ...] | None]] = []
        for r in self.requirements:
            if r.operator in ("=", "in"):
                hints.append((r.key, r.values))
            elif r.operator == "exists":
                hints.append((r.key, None))
        return hints

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


# --- field selectors (k8s.io/apimachinery/pkg/fields/selector.go) -------------------------


@dataclass(frozen=True)
class FieldRequirement:
    """``field=value`` (``operator`` ``"="``) or ``field!=value`` (``"!="``)."""

    field: str
    operator: str
    value: str

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{self.operator}{escaped}"


def _split_terms(text: str) -> list[str]:
    if not text:
        return []
    terms: list[str] = []
    start, in_slash = 0, False
    for i, c in enumerate(text):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape(value: str) -> str:
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    in_slash = False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            # Go prints the rune with %v: its code point.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _field_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return ""


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: the AND of its terms, in the sorted order of their text."""

    requirements: tuple[FieldRequirement, ...] = ()

    @classmethod
    def parse(cls, text: str, supported: frozenset[str]) -> FieldSelector:
        """``fields.ParseSelector`` then the kind's field-label conversion.

        A field outside ``supported`` is ``field label not supported: <field>``.
        """
        found: list[FieldRequirement] = []
        for part in sorted(_split_terms(text)):
            if not part:
                continue
            split = _split_term(part)
            if split is None:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
            lhs, op, rhs = split
            found.append(FieldRequirement(lhs, "!=" if op == "!=" else "=", _unescape(rhs)))
        for r in found:
            if r.field not in supported:
                raise SelectorError(f"field label not supported: {r.field}")
        return cls(tuple(found))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Each term compared with the dotted path of ``obj`` (a missing field reads as ``""``)."""
        for r in self.requirements:
            node: Any = obj
            for part in r.field.split("."):
                node = node.get(part) if isinstance(node, Mapping) else None
            if (_field_text(node) == r.value) != (r.operator == "="):
                return False
        return True

    def exact(self, field: str) -> str | None:
        """The value when a ``=`` term pins ``field`` (``RequiresExactMatch``), else None."""
        for r in self.requirements:
            if r.field == field and r.operator == "=":
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)
