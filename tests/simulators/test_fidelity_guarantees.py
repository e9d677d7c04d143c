"""The guarantees a live node-loss run is judged on (tools/fidelity/guarantees.py): the recorded
run and its replay keep them, each rule catches the run that breaks it, and the windows come
from the cluster's configuration."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tools.fidelity as fid
from tools.fidelity.guarantees import Breach, Windows, judge, path, stories

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "slurm-real" / "node-loss.comment.json"


@pytest.fixture(scope="module")
def recorded() -> tuple[fid.Transcript, fid.Transcript]:
    real = fid.Transcript.from_json(json.loads(FIXTURE.read_text()))
    return real, fid.replay_on_sim(real)


def _step(transcript: fid.Transcript, command: str) -> fid.StepResult:
    """The first step whose argv (after env) starts with ``command``."""
    for result in transcript.steps:
        words = [w for w in result.argv or () if w != "env" and "=" not in w]
        if " ".join(words).startswith(command):
            return result
    raise AssertionError(f"no step {command!r}")


def _edited(transcript: fid.Transcript, edit: Callable[[fid.Transcript], None]) -> fid.Transcript:
    changed = copy.deepcopy(transcript)
    edit(changed)
    return changed


def _rules(breaches: list[Breach]) -> set[tuple[str, str]]:
    return {(b.side, b.rule) for b in breaches}


def test_the_recorded_run_and_its_replay_keep_every_guarantee(
    recorded: tuple[fid.Transcript, fid.Transcript],
) -> None:
    real, sim = recorded
    assert judge(real, sim) == []
    told = stories(real)
    assert told["A"].states() == ["RUNNING", "NODE_FAIL"]
    assert told["B"].states() == ["RUNNING", "PENDING", "RUNNING"]
    assert told["B"].last("Restarts") == "1"


def _show_b(transcript: fid.Transcript) -> fid.StepResult:
    listing = [r for r in transcript.steps if r.argv and r.argv[-1] == transcript.bindings["B"]]
    return next(r for r in listing if "scontrol" in (r.argv or ()))


def _shift_field(transcript: fid.Transcript, key: str, by: int) -> None:
    show = _show_b(transcript)
    words = []
    for word in show.stdout.split(" "):
        name, _, value = word.partition("=")
        words.append(f"{name}={int(value) + by}" if name == key else word)
    show.stdout = " ".join(words)


def test_a_requeued_job_eligible_at_another_delay_breaks_the_requeue_delay(
    recorded: tuple[fid.Transcript, fid.Transcript],
) -> None:
    real, sim = recorded
    late = _edited(sim, lambda t: _shift_field(t, "EligibleTime", 1))
    assert ("simulator", "requeue delay") in _rules(judge(real, late))


def test_a_restart_later_than_the_scheduler_s_pass_breaks_its_window(
    recorded: tuple[fid.Transcript, fid.Transcript],
) -> None:
    real, sim = recorded
    window = Windows.of(real.cluster).schedule
    late = _edited(sim, lambda t: _shift_field(t, "StartTime", window + 2))
    assert ("simulator", "restart at a scheduler pass") in _rules(judge(real, late))
    within = _edited(sim, lambda t: _shift_field(t, "StartTime", window - 1))
    assert judge(real, within) == []


def test_a_job_gone_before_min_job_age_breaks_the_purge_window(
    recorded: tuple[fid.Transcript, fid.Transcript],
) -> None:
    real, sim = recorded

    ended = stories(real)["A"].ended()
    assert ended is not None

    def purge_a(transcript: fid.Transcript) -> None:
        listing = _step(transcript, "squeue -h -t all")
        listing.stdout = "".join(
            line + "\n" for line in listing.stdout.splitlines() if "fid-lost" not in line
        )
        listing.t = ended - transcript.start + 0.5  # half a second after A's end

    early = _edited(real, purge_a)
    assert ("real", "purge window") in _rules(judge(early, sim))


def test_a_job_listed_past_the_purge_pass_breaks_the_purge_window(
    recorded: tuple[fid.Transcript, fid.Transcript],
) -> None:
    real, sim = recorded
    windows = Windows.of(real.cluster)

    def move_listing(transcript: fid.Transcript, by: float) -> None:
        _step(transcript, "squeue -h -t all").t += by

    late = _edited(sim, lambda t: move_listing(t, windows.purge[1] + 3))
    assert ("simulator", "purge window") in _rules(judge(real, late))
    kept = _edited(sim, lambda t: move_listing(t, windows.purge[1] - 3))
    assert "purge window" not in {b.rule for b in judge(real, kept)}


def test_states_out_of_order_and_other_outcomes_are_caught(
    recorded: tuple[fid.Transcript, fid.Transcript],
) -> None:
    real, sim = recorded

    def a_completed(transcript: fid.Transcript) -> None:
        listing = _step(transcript, "squeue -h -t all")
        listing.stdout = listing.stdout.replace("NODE_FAIL|NodeDown", "COMPLETED|None")

    assert ("simulator", "order of states") in _rules(judge(real, _edited(sim, a_completed)))

    def restarted_twice(transcript: fid.Transcript) -> None:
        show = _show_b(transcript)
        show.stdout = show.stdout.replace("Restarts=1", "Restarts=2")

    breaches = judge(real, _edited(sim, restarted_twice))
    assert [str(b) for b in breaches] == ["both: outcome: B's restarts: real 1, simulator 2"]

    def a_failed_in_accounting(transcript: fid.Transcript) -> None:
        sacct = _step(transcript, "sacct -X -P")
        sacct.stdout = sacct.stdout.replace("NODE_FAIL", "FAILED")

    assert _rules(judge(real, _edited(sim, a_failed_in_accounting))) >= {
        ("simulator", "accounting keeps both records"),
        ("both", "outcome"),
    }


def test_a_job_that_ends_before_its_node_is_lost_breaks_the_node_s_window(
    recorded: tuple[fid.Transcript, fid.Transcript],
) -> None:
    real, sim = recorded

    def ended_early(transcript: fid.Transcript) -> None:
        show = _step(transcript, "scontrol show job -o " + transcript.bindings["A"])
        end = int(show.stdout.split("EndTime=")[1].split()[0])
        show.stdout = show.stdout.replace(f"EndTime={end}", f"EndTime={end - 30}")

    assert ("real", "the jobs end with their node") in _rules(
        judge(_edited(real, ended_early), sim)
    )


def test_the_windows_come_from_the_cluster_s_configuration() -> None:
    lab = fid.ClusterInfo(
        cred_expire=5, sched_interval=5, min_job_age=2, slurmd_timeout=5, message_timeout=10
    )
    windows = Windows.of(lab)
    assert windows.requeue_delay == 6
    assert windows.schedule == 6
    assert windows.purge == (2, 13)  # a pass every MAX(10, MinJobAge)
    assert windows.node_down == 5 + 2 * 30 + 2  # a pass to a gone node is cut at 30 s
    site = Windows.of(fid.ClusterInfo(cred_expire=120, sched_interval=60, min_job_age=300))
    assert (site.requeue_delay, site.schedule, site.purge) == (121, 61, (300, 361))
    assert Windows.of(fid.ClusterInfo(min_job_age=30)).purge == (30, 61)
    assert Windows.of(fid.ClusterInfo(slurmd_timeout=300)).node_down == 300 + 2 * 101 + 2


def test_the_cluster_s_timeouts_are_read_from_its_configuration() -> None:
    config = "SlurmdTimeout           = 5 sec\nMessageTimeout          = 3 sec\nMinJobAge = 2 sec\n"
    info = fid.ClusterInfo.parse(
        config, "node1|4|debug*\n", user="root", uid=0, account=None, host="head"
    )
    assert (info.slurmd_timeout, info.message_timeout) == (5, 3)
    assert fid.ClusterInfo.from_json(info.to_json()) == info
    defaults = fid.ClusterInfo.parse(
        "MinJobAge = 2 sec\n", "node1|4|debug*\n", user="root", uid=0, account=None, host="h"
    )
    assert (defaults.slurmd_timeout, defaults.message_timeout) == (300, 10)  # Slurm's


STAGES = ("RUNNING", "PENDING|COMPLETING?", "NODE_FAIL", "GONE?")
"""Neighbouring stages share no state: a walk's repeats fold without merging two stages."""


@given(st.lists(st.integers(min_value=1, max_value=3), min_size=4, max_size=4), st.data())
def test_a_walk_through_the_stages_in_order_follows_the_path(
    repeats: list[int], data: st.DataObject
) -> None:
    walk: list[str] = []
    for stage, count in zip(STAGES, repeats, strict=True):
        optional = stage.endswith("?")
        if optional and data.draw(st.booleans()):
            continue
        choices = stage.removesuffix("?").split("|")
        walk += [data.draw(st.sampled_from(choices)) for _ in range(count)]
    folded = [s for i, s in enumerate(walk) if i == 0 or walk[i - 1] != s]
    assert path(*STAGES).follows(folded)


def test_a_path_refuses_a_skipped_stage_a_state_after_the_end_and_a_step_back() -> None:
    flow = path(*STAGES)
    assert not flow.follows(["PENDING", "NODE_FAIL"])  # RUNNING skipped
    assert not flow.follows(["RUNNING", "NODE_FAIL", fid.GONE, "NODE_FAIL"])  # after the end
    assert not flow.follows(["RUNNING", "NODE_FAIL", "PENDING"])  # a step back
    assert not flow.follows(["RUNNING", "FAILED"])
    assert not flow.follows(["RUNNING"])  # NODE_FAIL is not optional
    assert flow.follows(["RUNNING", "PENDING", "COMPLETING", "NODE_FAIL"])
    assert path("RUNNING", "NODE_FAIL?", "GONE?").follows(["RUNNING", fid.GONE])
    assert not path("RUNNING", "NODE_FAIL?", "GONE?").follows([fid.GONE, "RUNNING"])
