"""Which mutants change only the text of an error message.

The contract types an adapter's errors (``Rejected``, ``OutcomeUnknown``, ``EncodingError``,
...); their text is for people, and no check reads it. A mutant whose every change lies in such
text changes nothing the kit may judge, so the report counts it apart ("message"), lists it,
and leaves it out of the kill rate's denominator, as it does an equivalent one.

The rule, decided on the syntax trees of the original function and of the mutant (mutmut
keeps both in ``mutants/<path>``: ``x_f__mutmut_orig`` and ``x_f__mutmut_<n>``), each place
where the two trees differ must be **message text**:

- a string (a literal or an f-string) in the arguments of the exception a ``raise`` makes, or
  of a call that writes a log record (``log.warning(...)``), or
  a name inside such an f-string's braces, alone or as the argument of ``type``, ``repr`` or
  ``str`` (so that ``None`` put there cannot raise: ``{x.attr}`` is not message text);
- the argument given to a **message parameter**: a parameter of a function of the scanned
  modules whose every use is message text, or an argument to another message parameter
  (derived from the code, never listed by hand, so that a parameter that starts to steer
  behaviour stops being one);

and the mutant must put a string, ``None`` or an f-string there (never an expression that
could raise instead).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

_SAFE_WRAPPERS: Final = frozenset({"type", "repr", "str"})

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _is_harmless_replacement(node: ast.AST) -> bool:
    """What a mutant may put at a message place: a string, None or an f-string."""
    return _is_text(node) or (isinstance(node, ast.Constant) and node.value is None)


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {
        id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
    }


def _ancestors(node: ast.AST, parents: Mapping[int, ast.AST]) -> Iterator[ast.AST]:
    while id(node) in parents:
        node = parents[id(node)]
        yield node


@dataclass
class Callees:
    """The functions a call in the scanned modules may name: module functions by name (as
    defined, or as imported from another scanned module) and methods by ``Class.method``."""

    functions: dict[str, Function] = field(default_factory=dict)
    """``module:name`` and ``module:Class.name``."""
    imports: dict[str, str] = field(default_factory=dict)
    """``module:name`` -> ``other_module:name`` for ``from other_module import name``."""

    def add_module(self, module: str, tree: ast.Module, *, package: bool = False) -> None:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[f"{module}:{node.name}"] = node
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        self.functions[f"{module}:{node.name}.{item.name}"] = item
            elif isinstance(node, ast.ImportFrom):
                parts = module.split(".") if package else module.split(".")[:-1]
                if node.level:
                    parts = parts[: len(parts) - (node.level - 1)]
                    source = ".".join([*parts, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    self.imports[f"{module}:{alias.asname or alias.name}"] = (
                        f"{source}:{alias.name}"
                    )

    def resolve(self, call: ast.Call, module: str, cls: str | None) -> str | None:
        """The key of the function ``call`` names, when it is one of the scanned ones."""
        func = call.func
        key: str | None = None
        if isinstance(func, ast.Name):
            key = f"{module}:{func.id}"
            for _ in range(8):  # re-exports: a package's __init__ importing from its modules
                if key in self.functions or key not in self.imports:
                    break
                key = self.imports[key]
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and cls is not None
        ):
            key = f"{module}:{cls}.{func.attr}"
        return key if key is not None and key in self.functions else None


def _parameters(function: Function) -> list[str]:
    args = function.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


def _bound_parameter(call: ast.Call, argument: ast.AST, callee: Function) -> str | None:
    """The callee's parameter that ``argument`` (an argument of ``call``) is bound to."""
    names = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
    if names and names[0] == "self" and isinstance(call.func, ast.Attribute):
        names = names[1:]
    for i, arg in enumerate(call.args):
        if arg is argument:
            return names[i] if i < len(names) and not isinstance(arg, ast.Starred) else None
    for keyword in call.keywords:
        if keyword.value is argument:
            return keyword.arg
    return None


MESSAGE_FIELDS: Final = frozenset({("Observation", "detail"), ("Verdict", "detail")})
"""Fields that hold free text for people (no rule reads them): the value model's, and the
Kubeflow adapter's ``Verdict.detail``, read only into its Observation's detail."""
LABEL_COUNTERS: Final = frozenset({"calls"})
"""Attributes that count an adapter's commands by a label (a cost figure, not the contract)."""


@dataclass(frozen=True)
class Scope:
    """One function, where a place is judged: its tree, its parents, where it is defined."""

    function: Function
    parents: Mapping[int, ast.AST]
    module: str
    cls: str | None

    @classmethod
    def of(cls, function: Function, module: str, owner: str | None) -> Scope:
        return cls(function, _parents(function), module, owner)


class MessageParameters:
    """The message parameters of the scanned functions, derived from their code."""

    def __init__(self, callees: Callees) -> None:
        self.callees = callees
        self._known: dict[tuple[str, str], bool] = {}
        self._locals: dict[tuple[int, str], bool] = {}

    def is_message(self, key: str, parameter: str) -> bool:
        """Whether every use of ``parameter`` in the function ``key`` is message text."""
        memo = (key, parameter)
        if memo in self._known:
            return self._known[memo]
        self._known[memo] = True  # assumed while deciding (a recursion through itself)
        function = self.callees.functions[key]
        module, _, qualified = key.partition(":")
        owner = qualified.split(".")[0] if "." in qualified else None
        scope = Scope.of(function, module, owner)
        answer = parameter in _parameters(function) and self._only_messages(scope, parameter)
        self._known[memo] = answer
        return answer

    def _only_messages(self, scope: Scope, name: str) -> bool:
        """Whether every use of the variable ``name`` in ``scope`` is message text (and every
        assignment to it, when it is a local, makes only text)."""
        for node in ast.walk(scope.function):
            if isinstance(node, ast.Name) and node.id == name:
                if isinstance(node.ctx, ast.Load):
                    if not self.in_message_place(node, scope):
                        return False
                elif not _assigned_text(node, scope.parents):
                    return False
        return True

    def local_is_message(self, scope: Scope, name: str) -> bool:
        if name in _parameters(scope.function):
            return False
        memo = (id(scope.function), name)
        if memo not in self._locals:
            self._locals[memo] = True  # assumed while deciding (detail += ...)
            self._locals[memo] = self._only_messages(scope, name)
        return self._locals[memo]

    def in_message_place(self, node: ast.AST, scope: Scope) -> bool:
        """Whether ``node`` lies where only text for people is made."""
        child = node
        for parent in _ancestors(node, scope.parents):
            if isinstance(parent, ast.FormattedValue | ast.JoinedStr):
                child = parent
                continue
            if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add):
                child = parent  # text joined to text
                continue
            if isinstance(parent, ast.IfExp) and child is not parent.test:
                child = parent  # one text or another
                continue
            if isinstance(parent, ast.Subscript):
                target = parent.value
                return (
                    child is parent.slice
                    and isinstance(target, ast.Attribute)
                    and target.attr in LABEL_COUNTERS
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                )
            if isinstance(parent, ast.Assign | ast.AugAssign):
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                return (
                    child is parent.value
                    and len(targets) == 1
                    and isinstance(targets[0], ast.Name)
                    and self.local_is_message(scope, targets[0].id)
                )
            if isinstance(parent, ast.Call):
                if child is parent.func:
                    if isinstance(child, ast.Attribute) and _is_text(child.value) and _pure(parent):
                        child = parent  # a string method of text, called without side effects
                        continue
                    return False
                name = parent.func.id if isinstance(parent.func, ast.Name) else None
                if name in _SAFE_WRAPPERS and not isinstance(child, ast.keyword):
                    child = parent
                    continue
                if isinstance(child, ast.keyword):
                    if (name, child.arg) in MESSAGE_FIELDS:
                        return True
                    argument: ast.AST = child.value
                else:
                    argument = child
                if not (_is_text(argument) or argument is node or _inside_text(node, argument)):
                    return False
                if _raised(parent, scope.parents) or _logged(parent):
                    return True
                key = self.callees.resolve(parent, scope.module, scope.cls)
                if key is None:
                    return False
                bound = _bound_parameter(parent, argument, self.callees.functions[key])
                return bound is not None and self.is_message(key, bound)
            if isinstance(parent, ast.keyword):
                child = parent
                continue
            if (
                isinstance(parent, ast.Attribute)
                and child is parent.value
                and isinstance(child, ast.Call)
            ):
                child = parent  # type(x).__name__ (a wrapper's result has the attribute)
                continue
            if (
                isinstance(parent, ast.Attribute)
                and child is parent.value
                and _is_text(child)
                and parent.attr in _PURE_STR_METHODS
            ):
                child = parent  # ", ".join(...): the separator is text of the result
                continue
            return False
        return False


def _assigned_text(node: ast.Name, parents: Mapping[int, ast.AST]) -> bool:
    """Whether the store ``node`` is ``name = <text>`` or ``name += <text>``, or ``name =``
    an expression without side effects (its value then reaches only messages, so a mutant
    that changes or drops it changes only text)."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Assign) and parent.targets == [node]:
        return _textual(parent.value) or _pure(parent.value)
    if isinstance(parent, ast.AugAssign) and parent.target is node:
        return isinstance(parent.op, ast.Add) and _textual(parent.value)
    return False


_PURE_FUNCTIONS: Final = frozenset({"sorted", "str", "repr", "len", "type"})
_PURE_STR_METHODS: Final = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "join"})


def _pure(node: ast.AST) -> bool:
    """An expression that changes nothing when evaluated (it may raise): names, constants,
    attributes, operators, choices, f-strings, tuples, generator expressions, and calls of
    :data:`_PURE_FUNCTIONS` and of the string methods :data:`_PURE_STR_METHODS`."""
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _pure(node.value)
    if isinstance(node, ast.JoinedStr):
        return all(_pure(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return _pure(node.value) and (node.format_spec is None or _pure(node.format_spec))
    if isinstance(node, ast.BinOp):
        return _pure(node.left) and _pure(node.right)
    if isinstance(node, ast.BoolOp):
        return all(_pure(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _pure(node.operand)
    if isinstance(node, ast.Compare):
        return _pure(node.left) and all(_pure(c) for c in node.comparators)
    if isinstance(node, ast.IfExp):
        return _pure(node.test) and _pure(node.body) and _pure(node.orelse)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_pure(e) for e in node.elts)
    if isinstance(node, ast.GeneratorExp):
        return _pure(node.elt) and all(
            isinstance(g.target, ast.Name) and _pure(g.iter) and all(_pure(i) for i in g.ifs)
            for g in node.generators
        )
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        known = (isinstance(func, ast.Name) and func.id in _PURE_FUNCTIONS) or (
            isinstance(func, ast.Attribute) and func.attr in _PURE_STR_METHODS and _pure(func.value)
        )
        return known and all(_pure(a) for a in node.args)
    return False


def _textual(node: ast.AST) -> bool:
    """An expression that makes text from text and cannot raise: strings, f-strings, their
    sums and choices."""
    if _is_text(node):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _textual(node.left) and _textual(node.right)
    if isinstance(node, ast.IfExp):
        return _textual(node.body) and _textual(node.orelse)
    return False


def _inside_text(node: ast.AST, argument: ast.AST) -> bool:
    return _is_text(argument) and any(n is node for n in ast.walk(argument))


LOGGERS: Final = frozenset({"log", "logger", "logging"})
"""Names a module's logger goes by (``log = logging.getLogger(__name__)``), or the module."""
_LOG_METHODS: Final = frozenset({"debug", "info", "warning", "error", "exception", "critical"})


def _logged(call: ast.Call) -> bool:
    """Whether ``call`` writes a log record (``log.warning(...)``): its arguments are text for
    people. logging formats them when a handler emits the record, and reports a format that
    fails there on stderr rather than raise into the caller."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in _LOG_METHODS
        and isinstance(func.value, ast.Name)
        and func.value.id in LOGGERS
    )


def _raised(call: ast.Call, parents: Mapping[int, ast.AST]) -> bool:
    parent = parents.get(id(call))
    return isinstance(parent, ast.Raise) and parent.exc is call


def _differences(a: ast.AST, b: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """The outermost pairs of nodes where the trees ``a`` and ``b`` differ."""
    if type(a) is not type(b):
        yield a, b
        return
    for name, left in ast.iter_fields(a):
        right = getattr(b, name, None)
        if isinstance(left, list) and isinstance(right, list):
            if len(left) != len(right):
                yield a, b
                return
            for x, y in zip(left, right, strict=True):
                if isinstance(x, ast.AST) and isinstance(y, ast.AST):
                    yield from _differences(x, y)
                elif x != y:
                    yield a, b
                    return
        elif isinstance(left, ast.AST) and isinstance(right, ast.AST):
            yield from _differences(left, right)
        elif isinstance(left, ast.AST) or isinstance(right, ast.AST) or left != right:
            if name in ("ctx", "type_comment", "kind"):
                continue
            yield a, b
            return


@dataclass
class MutantSources:
    """The functions of one mutated module as mutmut rewrote it: originals and mutants."""

    module: str
    functions: dict[str, Function]
    """mutmut's local names (``x_f__mutmut_orig``, ``xǁCǁm__mutmut_3``) to their trees."""

    @classmethod
    def parse(cls, module: str, text: str) -> MutantSources:
        found: dict[str, Function] = {}
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and "__mutmut_" in node.name
            ):
                found[node.name] = node
        return cls(module, found)


def _original_key(module: str, local: str) -> tuple[str, str | None]:
    """The scanned-function key of a mutmut local name, and its class."""
    base = local.partition("__mutmut_")[0]
    if base.startswith("xǁ"):
        _, cls, method = base.split("ǁ", 2)
        return f"{module}:{cls}.{method}", cls
    return f"{module}:{base.removeprefix('x_')}", None


def message_only(name: str, sources: MutantSources, parameters: MessageParameters) -> bool:
    """Whether mutant ``name`` (mutmut's full name) changes only message text."""
    local = name.rpartition(".")[2]
    base = local.partition("__mutmut_")[0]
    original = sources.functions.get(f"{base}__mutmut_orig")
    mutant = sources.functions.get(local)
    if original is None or mutant is None:
        return False
    key, cls = _original_key(sources.module, local)
    scope = Scope.of(original, sources.module, cls)
    found = False
    pairs = [
        *_differences(original.args, mutant.args),
        *_differences(ast.Module(original.body, []), ast.Module(mutant.body, [])),
    ]
    for before, after in pairs:
        if _drops_text_field(before, after) or _rewrites_text_local(
            before, after, scope, parameters
        ):
            found = True
            continue
        defaulted = _defaulted(original.args, before)
        if defaulted is not None and key in parameters.callees.functions:
            if not parameters.is_message(key, defaulted):
                return False
            found = True
            continue
        if not isinstance(before, ast.expr):
            return False
        if _chooses_text(before, after, scope):
            before = scope.parents[id(before)]
        elif not _is_harmless_replacement(after):
            return False
        if not parameters.in_message_place(before, scope):
            return False
        found = True
    return found


def _defaulted(args: ast.arguments, node: ast.AST) -> str | None:
    """The parameter whose default value ``node`` is, if it is one."""
    positional = [*args.posonlyargs, *args.args]
    pairs = [
        *zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]
    return next((arg.arg for arg, default in pairs if default is node), None)


def _drops_text_field(before: ast.AST, after: ast.AST) -> bool:
    """Whether the mutant only leaves out a free-text field (``detail=...``) of a value."""
    if not (isinstance(before, ast.Call) and isinstance(after, ast.Call)):
        return False
    name = before.func.id if isinstance(before.func, ast.Name) else None
    kept = [k for k in before.keywords if (name, k.arg) not in MESSAGE_FIELDS]
    return (
        len(kept) < len(before.keywords)
        and ast.dump(before.func) == ast.dump(after.func)
        and [ast.dump(a) for a in before.args] == [ast.dump(a) for a in after.args]
        and [ast.dump(k) for k in kept] == [ast.dump(k) for k in after.keywords]
    )


def _rewrites_text_local(
    before: ast.AST, after: ast.AST, scope: Scope, parameters: MessageParameters
) -> bool:
    """Whether both are statements that make text into the same message-only local
    (``detail += "x"`` as ``detail = "x"``)."""

    def target(node: ast.AST) -> str | None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            only = node.targets[0]
            return only.id if isinstance(only, ast.Name) else None
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            return node.target.id
        return None

    name = target(before)
    if name is None or target(after) != name:
        return False
    assert isinstance(after, ast.Assign | ast.AugAssign)
    textual = _textual(after.value) and (
        not isinstance(after, ast.AugAssign) or isinstance(after.op, ast.Add)
    )
    return textual and parameters.local_is_message(scope, name)


def _chooses_text(before: ast.expr, after: ast.AST, scope: Scope) -> bool:
    """Whether the mutant only rewrites the condition of a choice between two texts as
    ``(condition) and False`` or ``(condition) or True`` (a condition that cannot raise more
    than the original did)."""
    parent = scope.parents.get(id(before))
    return (
        isinstance(parent, ast.IfExp)
        and parent.test is before
        and (_textual(parent) or _pure(parent))
        and isinstance(after, ast.BoolOp)
        and len(after.values) == 2
        and ast.dump(after.values[0]) == ast.dump(before)
        and isinstance(after.values[1], ast.Constant)
        and isinstance(after.values[1].value, bool)
    )


def scan(root: Path, modules: Sequence[str]) -> Callees:
    """The functions of ``modules`` (dotted names, read under ``root``) as the callees."""
    callees = Callees()
    for module in modules:
        base = root / Path(*module.split("."))
        if (base / "__init__.py").is_file():
            callees.add_module(
                module, ast.parse((base / "__init__.py").read_text("utf-8")), package=True
            )
        elif base.with_suffix(".py").is_file():
            callees.add_module(module, ast.parse(base.with_suffix(".py").read_text("utf-8")))
    return callees
