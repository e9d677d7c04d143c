"""docs/writing-a-harness.md names every intent a harness may offer: each fault has a row of
its "Faults are intents" table, each look-alike kind and each probe is named in the guide (its
needs table, generated from ``list --json``, does not count: a check's need is not a guide)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.harness import Fault, LookAlike, Probe

ROOT = Path(__file__).resolve().parents[2]
NEEDS_START = "<!-- needs table: dispatch-conformance list --markdown -->"
NEEDS_END = "<!-- end of the needs table -->"


def guide() -> str:
    """The doc without its generated needs table."""
    doc = (ROOT / "docs" / "writing-a-harness.md").read_text()
    before, _, rest = doc.partition(NEEDS_START)
    return before + rest.partition(NEEDS_END)[2]


def fault_rows() -> set[str]:
    """The ``offers`` entries that head a row of the "Faults are intents" table."""
    section = guide().split("## Faults are intents", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_:<>]+)` \|", section, flags=re.MULTILINE))


@pytest.mark.parametrize("fault", list(Fault), ids=lambda f: f.value)
def test_every_fault_has_a_row_in_the_fault_table(fault: Fault) -> None:
    assert fault.value in fault_rows(), (
        f"docs/writing-a-harness.md: the table of 'Faults are intents' has no row for "
        f"`{fault.value}` (what the harness's method must make happen)"
    )


@pytest.mark.parametrize("kind", list(LookAlike), ids=lambda k: k.value)
def test_every_look_alike_kind_is_described(kind: LookAlike) -> None:
    assert "look_alike:<kind>" in fault_rows()
    assert f"`{kind.value}`" in guide()


@pytest.mark.parametrize("probe", list(Probe), ids=lambda p: p.value)
def test_every_probe_is_described(probe: Probe) -> None:
    assert f"`Probe.{probe.name}`" in guide()
