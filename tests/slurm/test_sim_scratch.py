"""Where a simulated cluster keeps its files: ``$DISPATCH_SIM_SCRATCH`` when set, else
``/dev/shm`` when writable, else the temp directory; the cluster's scratch, its scripts and
the checks' scratch directories all live there, and nothing is left once the harness is
gone."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from adapters.slurm.testing.sim import SCRATCH_ENV, SlurmSimHarness, scratch_root, sim_cluster
from dispatch_core import JobID, JobSpec, make_plan, with_job


def test_the_variable_names_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path))
    assert scratch_root() == str(tmp_path)


@pytest.mark.parametrize(("writable", "expected"), [(True, "/dev/shm"), (False, None)])
def test_without_it_dev_shm_when_writable_else_the_temp_directory(
    monkeypatch: pytest.MonkeyPatch, writable: bool, expected: str | None
) -> None:
    monkeypatch.delenv(SCRATCH_ENV, raising=False)
    monkeypatch.setattr("os.path.isdir", lambda path: path == "/dev/shm")
    monkeypatch.setattr("os.access", lambda path, mode: writable and path == "/dev/shm")
    assert scratch_root() == expected


@pytest.mark.parametrize(
    "command",
    [("true",), ("sleep", "300")],  # its script ends at once; it runs on when the cluster goes
)
def test_the_cluster_s_files_live_in_the_root_and_go_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path))
    harness = SlurmSimHarness()
    backend = harness.new_backend()
    cluster = sim_cluster(backend)
    assert cluster.scratch.parent == tmp_path
    checks_dir = Path(harness.host(backend).scratch_dir())
    assert checks_dir.parent == tmp_path
    spec = JobSpec(command=command, work_dir=str(checks_dir))
    ref = backend.start(make_plan(backend, spec, None, with_job(JobID.new())), 1, 1)
    harness.let_run(backend, ref)  # its script ran, from a directory in the root
    assert cluster.execute.bin_dir.parent == tmp_path
    assert [len(ranks) for ranks in harness.executions(backend, ref)] == [1]
    harness.host(backend).remove(str(checks_dir))
    harness.close()
    del backend, cluster
    gc.collect()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
