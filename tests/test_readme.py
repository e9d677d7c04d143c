"""The README stays true: its Python examples run, and its two commands exist in the Makefile."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_python_examples_run() -> None:
    """Blocks fenced ``python`` run as they are (``py`` marks one that needs a real cluster)."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_the_two_commands_are_make_targets() -> None:
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", readme, re.M):
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert "make test" in (ROOT / ".ci" / "run").read_text()
