"""Command-line parsing as Slurm's commands do it (glibc 2.36 ``getopt_long``, Debian 12):
long options with ``=value`` or a separate value, unique prefixes of long names, bundled short
flags, ``-Xvalue``, and the same error lines for an unknown option, an ambiguous prefix, a
missing value or a value given to a flag.

Each command lists its real option table, in the real order (the order of an ambiguity's
"possibilities"); options the simulator does not implement are marked, and refused with a
line saying so instead of being taken for unknown ones.

How a refused command line ends is the command's (:func:`refuse`): after getopt's line,
sbatch, squeue, scancel and scontrol print ``Try "<prog> --help" for more information`` and
sacct nothing (``case '?': exit(1)`` in src/sacct/options.c); sbatch exits 255, because
``slurm_process_option_or_exit`` calls ``exit(-1)`` (src/common/slurm_opt.c), the others 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from simulators.slurm.sim import Output

USAGE_STATUS: Final = 1
"""The exit status of a refused command line, unless the command says otherwise."""


@dataclass(frozen=True)
class Opt:
    """One entry of a command's option table: its canonical key, long names, short letter,
    whether it takes a value (``"required"``, ``"none"`` or ``"optional"``: optional values only
    attach with ``=`` or to the letter) and whether the simulator implements it. Entries with
    the same key and ``arg`` are one option to getopt (aliases, as glibc compares ``val``)."""

    key: str
    longs: tuple[str, ...] = ()
    short: str | None = None
    arg: str = "required"
    simulated: bool = True


class UsageError(Exception):
    """A command line ``prog`` refuses (or one the simulator cannot run): ``lines`` are the
    stderr lines before the command's own; ``getopt`` is False for an option the simulator
    does not implement. ``parsed`` holds what was parsed before the refused option."""

    def __init__(self, prog: str, lines: list[str], *, getopt: bool = True) -> None:
        super().__init__("\n".join(lines))
        self.prog = prog
        self.lines = lines
        self.getopt = getopt
        self.parsed = Parsed()


@dataclass
class Parsed:
    """Options in the order given (repeats kept) and the remaining operands; with
    ``parse(..., defer=True)``, ``error`` is what stopped getopt (the options before it are
    here), for the command to raise where its real loop would (:meth:`check`)."""

    options: list[tuple[str, str | None]] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    error: UsageError | None = None
    _last: dict[str, str | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _indexed: int = field(default=0, init=False, repr=False, compare=False)

    def _index(self) -> dict[str, str | None]:
        """Each key's last value, brought up to date with the options appended since."""
        options = self.options
        if self._indexed != len(options):
            if self._indexed > len(options):
                self._last.clear()
                self._indexed = 0
            for name, value in options[self._indexed :]:
                self._last[name] = value
            self._indexed = len(options)
        return self._last

    def last(self, key: str) -> str | None:
        return self._index().get(key)

    def last_values(self) -> dict[str, str | None]:
        """Each option given and its last value (a copy: :meth:`last` of every key at once)."""
        return dict(self._index())

    def has(self, key: str) -> bool:
        return key in self._index()

    def all(self, key: str) -> list[str | None]:
        return [value for name, value in self.options if name == key]

    def check(self) -> None:
        """Raise the deferred :class:`UsageError`, if getopt stopped at one."""
        if self.error is not None:
            raise self.error


def parse(
    prog: str, args: list[str], spec: list[Opt], *, permute: bool = True, defer: bool = False
) -> Parsed:
    """Parse ``args`` against ``spec``; raises :class:`UsageError` as getopt_long would
    (with ``defer``, returns what came before it, the error in :attr:`Parsed.error`)."""
    parsed = Parsed()
    try:
        _parse(prog, args, spec, permute, parsed)
    except UsageError as error:
        error.parsed = parsed
        if not defer:
            raise
        parsed.error = error
    return parsed


@dataclass(frozen=True)
class _Table:
    """A spec as getopt searches it: long names in table order, the first entry of each long
    name and of each short letter."""

    spec: list[Opt]
    longs: list[tuple[str, Opt]]
    exact: dict[str, Opt]
    by_short: dict[str, Opt]


_TABLES: dict[int, _Table] = {}
"""Each command's spec, indexed once (the specs are module constants, never changed)."""


def _table(spec: list[Opt]) -> _Table:
    found = _TABLES.get(id(spec))
    if found is not None and found.spec is spec:
        return found
    longs = [(name, opt) for opt in spec for name in opt.longs]
    exact: dict[str, Opt] = {}
    for name, opt in longs:
        exact.setdefault(name, opt)
    by_short: dict[str, Opt] = {}
    for opt in spec:
        if opt.short:
            by_short.setdefault(opt.short, opt)
    made = _TABLES[id(spec)] = _Table(spec, longs, exact, by_short)
    return made


def _parse(prog: str, args: list[str], spec: list[Opt], permute: bool, parsed: Parsed) -> None:
    indexed = _table(spec)
    by_short = indexed.by_short
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            parsed.operands.extend(args[i:])
            return
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            full, opt = _long(prog, arg, name, indexed)
            if opt.arg == "none":
                if eq:
                    raise _usage(prog, f"option '--{full}' doesn't allow an argument")
                found: str | None = None
            elif eq:
                found = value
            elif opt.arg == "optional":
                found = None
            elif i < len(args):
                found = args[i]
                i += 1
            else:
                raise _usage(prog, f"option '--{full}' requires an argument")
            _take(prog, parsed, opt, f"--{full}", found)
            continue
        if arg.startswith("-") and arg != "-":
            j = 1
            while j < len(arg):
                letter = arg[j]
                short = by_short.get(letter)
                if short is None:
                    raise _usage(prog, f"invalid option -- '{letter}'")
                if short.arg == "none":
                    _take(prog, parsed, short, f"-{letter}", None)
                    j += 1
                    continue
                rest = arg[j + 1 :]
                if rest:
                    found = rest
                elif short.arg == "optional":
                    found = None
                elif i < len(args):
                    found = args[i]
                    i += 1
                else:
                    raise _usage(prog, f"option requires an argument -- '{letter}'")
                _take(prog, parsed, short, f"-{letter}", found)
                break
            continue
        parsed.operands.append(arg)
        if not permute:
            parsed.operands.extend(args[i:])
            return


def _long(prog: str, arg: str, name: str, indexed: _Table) -> tuple[str, Opt]:
    """The long option ``name`` names: an exact match, else the only option its prefix
    matches. glibc's ambiguity lists, in table order, the first match and every later one
    that is not the same option as the first, with the text as given (``=value`` kept)."""
    exact = indexed.exact.get(name)
    if exact is not None:
        return name, exact
    matches = [(full, opt) for full, opt in indexed.longs if full.startswith(name)]
    if not matches:
        raise _usage(prog, f"unrecognized option '{arg}'")
    (first_name, first), rest = matches[0], matches[1:]
    others = [full for full, opt in rest if (opt.key, opt.arg) != (first.key, first.arg)]
    if others:
        possibilities = "".join(f" '--{full}'" for full in [first_name, *others])
        raise _usage(prog, f"option '{arg}' is ambiguous; possibilities:{possibilities}")
    return first_name, first


def _take(prog: str, parsed: Parsed, opt: Opt, shown: str, value: str | None) -> None:
    if not opt.simulated:
        line = f"{prog}: error: {shown} is not supported by this simulator"
        raise UsageError(prog, [line], getopt=False)
    parsed.options.append((opt.key, value))


def _usage(prog: str, message: str) -> UsageError:
    return UsageError(prog, [f"{prog}: {message}"])


def refuse(
    result: Output, error: UsageError, *, status: int = USAGE_STATUS, try_help: bool = True
) -> int:
    """Print what the command prints for a refused command line; return its exit status
    (an option the simulator does not implement: its line, status 1)."""
    for line in error.lines:
        result.err(line)
    if not error.getopt:
        return USAGE_STATUS
    if try_help:
        result.err(f'Try "{error.prog} --help" for more information')
    return status
