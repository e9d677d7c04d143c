"""Command-line parsing as Slurm's commands do it (glibc ``getopt_long``): long options with
``=value`` or a separate value, unique prefixes of long names, bundled short flags, ``-Xvalue``,
and the same error lines for an unknown option or a missing value."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Opt:
    """One option: its canonical key, long names, short letter and whether it takes a value
    (``"required"``, ``"none"`` or ``"optional"``: optional values only attach with ``=``)."""

    key: str
    longs: tuple[str, ...] = ()
    short: str | None = None
    arg: str = "required"


class UsageError(Exception):
    """A command line the real command refuses; ``lines`` are its stderr lines."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass
class Parsed:
    """Options in the order given (repeats kept) and the remaining operands."""

    options: list[tuple[str, str | None]] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)

    def last(self, key: str) -> str | None:
        for name, value in reversed(self.options):
            if name == key:
                return value
        return None

    def has(self, key: str) -> bool:
        return any(name == key for name, _ in self.options)

    def all(self, key: str) -> list[str | None]:
        return [value for name, value in self.options if name == key]


def parse(prog: str, args: list[str], spec: list[Opt], *, permute: bool = True) -> Parsed:
    """Parse ``args`` against ``spec``; raises :class:`UsageError` as getopt_long would."""
    by_long = {name: opt for opt in spec for name in opt.longs}
    by_short = {opt.short: opt for opt in spec if opt.short}
    parsed = Parsed()
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            parsed.operands.extend(args[i:])
            break
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            opt = by_long.get(name)
            if opt is None:
                matches = {by_long[n] for n in by_long if n.startswith(name)} if name else set()
                if len(matches) > 1:
                    raise _usage(prog, f"{prog}: option '{arg.split('=')[0]}' is ambiguous")
                if not matches:
                    raise _usage(prog, f"{prog}: unrecognized option '{arg}'")
                opt = matches.pop()
            if opt.arg == "none":
                if eq:
                    full = next(n for n in opt.longs if n.startswith(name))
                    raise _usage(prog, f"{prog}: option '--{full}' doesn't allow an argument")
                parsed.options.append((opt.key, None))
            elif eq:
                parsed.options.append((opt.key, value))
            elif opt.arg == "optional":
                parsed.options.append((opt.key, None))
            elif i < len(args):
                parsed.options.append((opt.key, args[i]))
                i += 1
            else:
                full = next(n for n in opt.longs if n.startswith(name))
                raise _usage(prog, f"{prog}: option '--{full}' requires an argument")
            continue
        if arg.startswith("-") and arg != "-":
            j = 1
            while j < len(arg):
                letter = arg[j]
                opt = by_short.get(letter)
                if opt is None:
                    raise _usage(prog, f"{prog}: invalid option -- '{letter}'")
                if opt.arg == "none":
                    parsed.options.append((opt.key, None))
                    j += 1
                    continue
                rest = arg[j + 1 :]
                if rest:
                    parsed.options.append((opt.key, rest))
                elif opt.arg == "optional":
                    parsed.options.append((opt.key, None))
                elif i < len(args):
                    parsed.options.append((opt.key, args[i]))
                    i += 1
                else:
                    raise _usage(prog, f"{prog}: option requires an argument -- '{letter}'")
                break
            continue
        if permute:
            parsed.operands.append(arg)
        else:
            parsed.operands.append(arg)
            parsed.operands.extend(args[i:])
            break
    return parsed


def _usage(prog: str, line: str) -> UsageError:
    return UsageError([line, f'Try "{prog} --help" for more information'])
