"""``ExitWatch``: says whether a script has ended, waiting at most what it is given, without
reaping it; the same answers with a pidfd and without one (the polling fallback)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from simulators.slurm.execute import ExitWatch


@pytest.fixture(params=["pidfd", "polling"])
def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "polling":

        def refused(pid: int) -> int:
            raise OSError("pidfd_open refused")

        monkeypatch.setattr(os, "pidfd_open", refused)
    yield str(request.param)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_an_ended_process_is_seen_ended_and_left_for_wait_to_reap(kind: str) -> None:
    process = subprocess.Popen(["sh", "-c", "exit 3"])
    watch = ExitWatch(process)
    assert watch.wait(30)
    assert process.returncode is None or kind == "polling"  # the pidfd never reaps
    assert process.wait() == 3
    assert watch.wait(0)
    watch.close()


def test_a_running_process_is_not_ended_after_a_zero_wait(kind: str) -> None:
    process = subprocess.Popen(["sleep", "30"])
    watch = ExitWatch(process)
    try:
        assert not watch.wait(0)
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()
        watch.close()


def test_close_releases_the_pidfd_once() -> None:
    before = open_fds()
    process = subprocess.Popen(["true"])
    watch = ExitWatch(process)
    assert open_fds() == before + 1
    watch.close()
    watch.close()
    assert open_fds() == before
    assert watch.wait(30)  # after close it polls
    assert process.returncode == 0
