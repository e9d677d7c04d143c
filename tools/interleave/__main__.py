"""``python -m tools.interleave``: see :mod:`tools.interleave`."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import NoReturn

from dispatch_core.supervise import Supervisor
from tools.interleave.broken import BROKEN
from tools.interleave.sim import HARNESSES, Config, Outcome, replay_command, run


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see: {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def _at_least(least: int) -> Callable[[str], int]:
    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"wants a whole number, not {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"wants a whole number >= {least}, not {text!r}")
        return value

    return whole


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="python -m tools.interleave", description=__doc__)
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--seed", type=int, help="run one seed")
    chosen.add_argument("--seeds", type=_at_least(1), help="explore this many seeds from --first")
    parser.add_argument("--first", type=int, default=0, help="the first seed of --seeds")
    parser.add_argument("--harness", choices=HARNESSES, default="memory-slurm")
    parser.add_argument(
        "--stop-at", type=_at_least(0), help="with --seed: stop at this step and dump"
    )
    parser.add_argument("--jobs", type=_at_least(1), default=3)
    parser.add_argument("--supervisors", type=_at_least(1), default=2)
    parser.add_argument("--faults", type=_at_least(0), default=80, help="steps with faults")
    parser.add_argument("--calm", type=_at_least(0), default=150, help="K: steps to terminal after")
    parser.add_argument("--trace", action="store_true", help="print every step")
    parser.add_argument(
        "--broken", choices=sorted(BROKEN), help="a deliberately broken supervisor (tests)"
    )
    parser.add_argument(
        "--start-not-idempotent",
        action="store_true",
        help="memory-slurm whose start submits again on a retry (only find-first saves it)",
    )
    args = parser.parse_args(argv)
    if args.stop_at is not None and args.seed is None:
        parser.error("--stop-at replays one --seed")
    if args.start_not_idempotent and args.harness != "memory-slurm":
        parser.error(
            "--start-not-idempotent is a memory-slurm adapter: give --harness memory-slurm"
        )
    return args


def config(args: argparse.Namespace, seed: int) -> Config:
    return Config(
        seed=seed,
        harness=args.harness,
        jobs=args.jobs,
        supervisors=args.supervisors,
        faults=args.faults,
        calm=args.calm,
        stop_at=args.stop_at,
        start_not_idempotent=args.start_not_idempotent,
        supervisor_class=BROKEN[args.broken] if args.broken else Supervisor,
    )


def command(args: argparse.Namespace, seed: int) -> str:
    return replay_command(config(args, seed))


def report(args: argparse.Namespace, outcome: Outcome) -> None:
    assert outcome.violation is not None
    print(
        f"seed {outcome.seed} FAILED at step {outcome.step}: invariant {outcome.violation}",
        flush=True,
    )
    print(f"  replay: {command(args, outcome.seed)} --stop-at {outcome.step}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.seed is not None:
        outcome = run(config(args, args.seed))
        if args.trace or args.stop_at is not None:
            print("\n".join(outcome.trace))
        if args.stop_at is not None:
            print(f"-- at step {outcome.step if outcome.step is not None else outcome.steps}:")
            print(outcome.dump)
        if outcome.violation is not None:
            report(args, outcome)
            return 1
        print(f"seed {args.seed} passed ({outcome.steps} steps)")
        return 0
    count = args.seeds or 100
    started = time.monotonic()
    failed: list[int] = []
    every = max(1, count // 20)
    for i in range(count):
        seed = args.first + i
        outcome = run(config(args, seed))
        if not outcome.ok:
            failed.append(seed)
            report(args, outcome)
        done = i + 1
        if done % every == 0 or done == count:
            minutes = (time.monotonic() - started) / 60
            rate = done / minutes if minutes > 0 else float("inf")
            print(
                f"{done}/{count} seeds, {len(failed)} failed, {rate:.0f} seeds/min",
                file=sys.stderr,
                flush=True,
            )
    minutes = (time.monotonic() - started) / 60
    rate = count / minutes if minutes > 0 else float("inf")
    print(
        f"{count} seeds ({args.first}..{args.first + count - 1}) on {args.harness}: "
        f"{count - len(failed)} passed, {len(failed)} failed; {rate:.0f} seeds/min"
    )
    return 1 if failed else 0


def _main() -> int:
    try:
        return main()
    except BrokenPipeError:  # the reader went away (| head): stop writing, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(_main())
