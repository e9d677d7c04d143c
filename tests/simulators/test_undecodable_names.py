"""Names and comments are bytes to Slurm: an argument that is no UTF-8 (Python's
``surrogateescape`` text) is taken, printed back as the same bytes, and measured in bytes
against slurmctld's 1024."""

from __future__ import annotations

import pytest

from simulators.slurm import SlurmSim
from simulators.slurm.controller import TOO_LONG

SCRIPT = "#!/bin/sh\ntrue\n"


def test_an_undecodable_name_and_comment_are_submitted_and_listed_as_given() -> None:
    sim = SlurmSim()
    done = sim.run(["sbatch", "--parsable", "--job-name=a\udcff", "--comment=b\udcfe"], SCRIPT)
    assert (done.returncode, done.stderr) == (0, "")
    listed = sim.run(["squeue", "-h", "-o", "%j|%k"])
    assert listed.stdout.encode("utf-8", "surrogateescape") == b"a\xff|b\xfe\n"


@pytest.mark.parametrize(("size", "taken"), [(1024, True), (1025, False)])
def test_a_comment_is_measured_in_bytes(size: int, taken: bool) -> None:
    sim = SlurmSim()
    comment = "\udcfd" + "x" * (size - 1)  # 1 byte, then size - 1
    held = sim.run(["sbatch", "--parsable", "--hold"], SCRIPT).stdout.strip()
    update = sim.run(["scontrol", "update", f"jobid={held}", f"Comment={comment}"])
    done = sim.run(["sbatch", "--parsable", f"--comment={comment}"], SCRIPT)
    for answer in (update, done):
        assert (answer.returncode == 0) == taken
        assert (TOO_LONG in answer.stderr) == (not taken)
