"""The fidelity scenarios live: each scenario of the cluster's current accounting mode runs on
this host's real Slurm and, following its clock, on SlurmSim; no difference may remain
unexplained. Without a real Slurm every test is skipped with the reason, except under
``CI=true``, where a missing Slurm fails: CI must not pass without one.

The cluster is shared: each scenario holds the exclusive ``flock`` on ``$SLURM_CLUSTER_LOCK``
(default /tmp/slurm-cluster.lock) while it runs, and only cancels jobs named ``fid-...``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tools import fidelity as fid

pytestmark = pytest.mark.slurm_real
LOCK = os.environ.get("SLURM_CLUSTER_LOCK", fid.DEFAULT_LOCK)
QUICK = ("formats", "names", "requeue-pending", "comment-absent", "bad-input")
"""The scenarios run by default (about a minute of cluster time; bad-input's 124 steps take
under a second, its setup a few): CI's budget for the real cluster is ten minutes, install
and the slurm-local suites included. Every scenario's real transcript is replayed on the
simulator everywhere (test_fidelity_golden); the whole live comparison is
``DISPATCH_FIDELITY_LIVE=all`` or ``python -m tools.fidelity compare``."""
SELECTED = os.environ.get("DISPATCH_FIDELITY_LIVE", ",".join(QUICK))


@pytest.fixture(scope="module")
def real() -> Iterator[fid.RealSlurm]:
    target = fid.RealSlurm()
    try:
        try:
            target.info()
        except fid.NoSlurm as error:
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI=true needs a real Slurm (start it with ci/slurm-up.sh): {error}")
            pytest.skip(str(error))
        yield target
    finally:
        target.close()


@pytest.mark.parametrize("scenario", fid.SCENARIOS, ids=lambda s: s.name)
def test_real_slurm_and_the_simulator_agree(real: fid.RealSlurm, scenario: fid.Scenario) -> None:
    if SELECTED != "all" and scenario.name not in SELECTED.split(","):
        pytest.skip(f"not in DISPATCH_FIDELITY_LIVE ({SELECTED}; 'all' runs every scenario)")
    reason = scenario.skip_reason(real.info(), real.can_lose_nodes)
    if reason is not None:
        pytest.skip(reason)
    try:
        transcript = fid.run_real(scenario, real, lock=LOCK)
    except fid.ClusterBusy as busy:  # another engineer's jobs: not this code's failure
        if os.environ.get("CI") == "true":  # CI's cluster is its own: busy means leftovers
            pytest.fail(f"CI=true: {busy}")
        pytest.skip(str(busy))
    sim = fid.replay_on_sim(transcript)
    outcome = fid.Outcome(
        scenario.name, transcript.mode, len(transcript.steps), fid.compare(transcript, sim),
        wall=transcript.wall,
    )  # fmt: skip
    print(f"{scenario.name} ({transcript.mode}): {transcript.wall:.1f} s of wall time")
    assert outcome.unexplained == [], fid.report([outcome])
