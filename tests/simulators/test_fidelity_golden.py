"""Golden tests from a real Slurm: every transcript recorded by ``python -m tools.fidelity
record`` (tests/fixtures/slurm-real/<scenario>.<mode>.json) is
replayed on SlurmSim, configured from the fixture's cluster and following the recorded clock,
and compared with the real output: no difference may remain unexplained. No Slurm needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import fidelity as fid

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm-real"
RECORDED = fid.fixtures(FIXTURES)


def test_every_scenario_is_recorded_in_each_of_its_modes() -> None:
    """A scenario whose answers do not depend on the accounting mode (``mode_free``) needs
    one recording, in either mode."""
    have = {path.name for path in RECORDED}
    missing = []
    for s in fid.SCENARIOS:
        names = [f"{s.name}.{mode}.json" for mode in s.modes()]
        if s.mode_free and any(name in have for name in names):
            continue
        missing += [name for name in names if name not in have]
    assert missing == [], "record them: python -m tools.fidelity record"


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_the_simulator_answers_as_the_real_cluster_did(path: Path) -> None:
    real, sim, outcome = fid.replay_fixture(path)
    assert real.target == "real" and real.mode == path.stem.split(".")[1]
    assert outcome.steps == len(real.steps) > 0
    assert sim.bindings == real.bindings, "ids no longer align with the recorded ones"
    assert outcome.unexplained == [], fid.report([outcome])


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_the_recorded_run_is_complete(path: Path) -> None:
    """Each wait reached its state and each sbatch gave an id when the fixture was recorded,
    so the fixture shows the scenario as written."""
    real = fid.Transcript.load(path)
    for step in real.steps:
        if isinstance(step.step, fid.WaitState):
            assert step.reached in step.step.states, f"step {step.index} timed out when recorded"
        if isinstance(step.step, fid.Run) and step.step.capture is not None:
            assert step.captured is not None, f"step {step.index}: sbatch failed when recorded"


def test_every_known_difference_is_still_needed() -> None:
    """An entry of KNOWN_DIFFERENCES that explains nothing in any fixture is stale (unless it
    is marked as depending on timing, which a recording may not hit)."""
    used: set[fid.Known] = set()
    for path in RECORDED:
        _, _, outcome = fid.replay_fixture(path)
        for difference in outcome.differences:
            used.update(fid.explaining(difference, fid.KNOWN_DIFFERENCES))
    stale = [k for k in fid.KNOWN_DIFFERENCES if k not in used and not k.timing]
    assert stale == []
