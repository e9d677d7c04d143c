"""The README's main command from a fresh clone (a benchmark, not a test: it prints, it asserts
nothing).

    .venv/bin/python benchmarks/demo.py [--keep]

Clones this repository's HEAD into a temporary directory, installs it there (``make
.venv/.installed``: not timed, the goal is about what comes after the install), then times
``make demo`` in the clone: the conformance suite on the built-in harnesses, no bytecode and no
Hypothesis database yet, as a newcomer's first run. Prints the wall time beside issue 17's goal
(under 60 s), with the suite's closing line. ``--keep`` leaves the clone for a look.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_SECONDS = 60.0
CLOSING = re.compile(r"\d+ passed, \d+ failed, \d+ skipped")
ROOT = Path(__file__).resolve().parent.parent


def verdict(met: bool) -> str:
    return "met" if met else "NOT MET"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="leave the clone (its path printed)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="dispatch-demo-"))
    clone = scratch / "dispatch-kit"
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        print(f"installing a fresh clone of HEAD in {clone} (not timed) ...", flush=True)
        started = time.perf_counter()
        install = subprocess.run(
            ["make", "-C", str(clone), ".venv/.installed"], capture_output=True, text=True
        )
        if install.returncode != 0:
            sys.exit(f"demo benchmark: the install failed:\n{install.stdout}{install.stderr}")
        print(f"  install: {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        done = subprocess.run(
            ["make", "-C", str(clone), "demo"], capture_output=True, text=True, check=False
        )
        took = time.perf_counter() - started
        closing = [line for line in done.stdout.splitlines() if CLOSING.match(line)]
        print(f"  make demo: exit {done.returncode}; {closing[-1] if closing else done.stderr}")
        print(
            f"make demo after the install: {took:.1f} s   goal < {GOAL_SECONDS:.0f} s   "
            f"{verdict(took < GOAL_SECONDS and done.returncode == 0)}"
        )
    except subprocess.CalledProcessError as error:
        sys.exit(f"demo benchmark: {' '.join(map(str, error.cmd))} exited {error.returncode}")
    finally:
        if args.keep:
            print(f"the clone is kept: {clone}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
