"""The report of ``make mutation`` (tools.mutation) on a small fixture of mutmut's results:
parsing, statuses, goal areas, equivalents left out of the denominators, the text. No mutation
testing runs here."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools.mutation.cli import _functions, mutmut_config
from tools.mutation.plugin import left_out, selected_items
from tools.mutation.report import (
    _BY_FUNCTION,
    _WHOLE_MODULE,
    KILLED,
    NO_TESTS,
    NOT_CHECKED,
    SURVIVED,
    TIMEOUT,
    Report,
    area_of,
    changed_lines,
    load_equivalents,
    load_mutants,
    render,
    split_name,
    status,
    survivors_text,
)

BACKEND = "adapters/slurm/backend.py"
CLUSTER = "adapters/memory/cluster.py"
HOLD = "adapters.slurm.backend.xǁSlurmBackendǁhold__mutmut_{}"
LATEST = "adapters.slurm.backend.x_latest_incarnations__mutmut_{}"
COMMAND = "adapters.slurm.backend.xǁSlurmBackendǁcommand__mutmut_{}"
TICK = "adapters.memory.cluster.xǁMemoryClusterǁtick__mutmut_{}"

EXIT_CODES = {
    BACKEND: {
        HOLD.format(1): 1,  # killed
        HOLD.format(2): 0,  # survived
        HOLD.format(3): 0,  # survived, listed as equivalent
        HOLD.format(4): -24,  # timeout (SIGXCPU)
        LATEST.format(1): 1,  # killed, wrongly listed as equivalent
        LATEST.format(2): 33,  # no check reaches it
        COMMAND.format(1): 0,  # survived, in no goal area
        COMMAND.format(2): None,  # not run yet
    },
    CLUSTER: {TICK.format(1): 1, TICK.format(2): 0},
}

SECONDS = {
    HOLD.format(1): 1.0,
    HOLD.format(2): 30.0,
    HOLD.format(3): 2.0,
    HOLD.format(4): 40.0,
    COMMAND.format(2): 5.0,  # a stale figure of a mutant not run since: not counted
    TICK.format(2): 10.0,
}

DIFF_HOLD_2 = """--- adapters/slurm/backend.py
+++ adapters/slurm/backend.py
@@ -1,3 +1,3 @@
 def hold(self, ref: ObjectRef) -> int:
-        number = stamp % (HoldBound - 1) + 1
+        number = stamp % (HoldBound - 1) - 1
         return number"""

DIFFS = {
    HOLD.format(2): (
        ("number = stamp % (HoldBound - 1) + 1",),
        ("number = stamp % (HoldBound - 1) - 1",),
    ),
    HOLD.format(3): (("step = min(step * 2, 8.0)",), ("step = min(step * 2, 9.0)",)),
    HOLD.format(4): (("waited += step",), ("waited = step",)),
    LATEST.format(1): (("latest = {}",), ("latest = None",)),
    LATEST.format(2): (("return rows",), ("return None",)),
    COMMAND.format(1): (("self.calls[op] += 1",), ("self.calls[op] = 1",)),
    TICK.format(2): (("now = self.clock.now()",), ("now = None",)),
}

EQUIVALENTS = """
[[equivalent]]
module = "adapters.slurm.backend"
function = "SlurmBackend.hold"
removed = "step = min(step * 2, 8.0)"
added = "step = min(step * 2, 9.0)"
reason = "a longer step only changes the pacing of the read-back within the same bound"

[[equivalent]]
module = "adapters.slurm.backend"
function = "latest_incarnations"
removed = "latest = {}"
added = "latest = None"
reason = "listed wrongly: the fixture's report must say it was killed"

[[equivalent]]
module = "adapters.slurm.backend"
function = "SlurmBackend.stop"
removed = "return"
added = "pass"
reason = "matches no mutant"
"""


@pytest.fixture
def report(tmp_path: Path) -> Report:
    for source, codes in EXIT_CODES.items():
        meta = tmp_path / "mutants" / f"{source}.meta"
        meta.parent.mkdir(parents=True, exist_ok=True)
        took = {name: SECONDS[name] for name in codes if name in SECONDS}
        meta.write_text(json.dumps({"exit_code_by_key": codes, "durations_by_key": took}))
    listed = tmp_path / "equivalent.toml"
    listed.write_text(EQUIVALENTS)
    mutants = load_mutants(tmp_path / "mutants", [BACKEND, CLUSTER, "adapters/slurm/parse.py"])
    return Report(mutants=mutants, equivalents=load_equivalents(listed), diffs=DIFFS)


def test_names_split_into_module_and_function() -> None:
    assert split_name(HOLD.format(12)) == ("adapters.slurm.backend", "SlurmBackend.hold")
    assert split_name(LATEST.format(3)) == ("adapters.slurm.backend", "latest_incarnations")
    assert split_name("adapters.slurm.identity.x_decode_hold__mutmut_7") == (
        "adapters.slurm.identity",
        "decode_hold",
    )
    with pytest.raises(ValueError, match="not a mutmut mutant name"):
        split_name("adapters.slurm.backend.hold")


def test_exit_codes_become_statuses() -> None:
    assert [status(c) for c in (1, 3, -9, 0, 33, 5, -24, 24, None)] == [
        KILLED,
        KILLED,
        KILLED,
        SURVIVED,
        NO_TESTS,
        NO_TESTS,
        TIMEOUT,
        TIMEOUT,
        NOT_CHECKED,
    ]
    assert status(-1) == "suspicious"


def test_functions_map_to_the_goal_areas() -> None:
    assert area_of("adapters.slurm.backend", "SlurmBackend.find") == "find"
    assert area_of("adapters.slurm.backend", "SlurmBackend._observe") == "find"
    assert area_of("adapters.slurm.backend", "SlurmBackend._update") == "hold"
    assert area_of("adapters.slurm.backend", "SlurmBackend._read_back_until") == "stop"
    assert area_of("adapters.slurm.backend", "SlurmBackend._resolve_lost_submission") == "start"
    assert area_of("adapters.slurm.backend", "SlurmBackend.requeue") == "requeue"
    assert area_of("adapters.slurm.backend", "_require_identity") == "identity"
    assert area_of("adapters.slurm.identity", "parse_slurm_comment") == "identity"
    assert area_of("adapters.memory.kube", "parse_kube_identity") == "identity"
    assert area_of("adapters.slurm.script", "batch_submission") == "batch-script"
    assert area_of("adapters.memory.backend", "MemoryBackend.release") == "hold"
    assert area_of("adapters.memory.backend", "MemoryBackend.start") == "start"
    assert area_of("adapters.slurm.backend", "SlurmBackend.command") is None
    assert area_of("adapters.slurm.parse", "parse_squeue") is None
    assert area_of("adapters.memory.cluster", "MemoryCluster.requeue") is None
    assert area_of("adapters.kubeflow.names", "parse_identity") == "identity"
    assert area_of("adapters.kubeflow.backend", "KubeflowBackend._read") == "identity"
    assert area_of("adapters.kubeflow.backend", "KubeflowBackend._workload_active") == "hold"
    assert area_of("adapters.kubeflow.backend", "KubeflowBackend.trainjob") == "batch-script"
    assert area_of("adapters.kubeflow.backend", "KubeflowBackend.preflight") is None
    # issue 18's Kubeflow areas
    assert area_of("adapters.kubeflow.backend", "KubeflowBackend._adopt") == "adoption"
    assert area_of("adapters.kubeflow.backend", "KubeflowBackend._rank0") == "output"
    assert area_of("adapters.kubeflow.causes", "failure_cause") == "causes"
    assert area_of("adapters.kubeflow.runtimes", "Runtimes.get") == "caches"
    assert area_of("adapters.kubeflow.admission", "is_dispatch") == "gate"
    assert area_of("adapters.kubeflow.admission", "main") is None


def test_every_function_an_area_names_exists_in_a_mutated_module() -> None:
    """A renamed function would leave its mutants outside every goal area, silently."""
    mutated = {
        path.removesuffix(".py").replace("/", ".") for path in mutmut_config()["only_mutate"]
    }
    for module, functions in _BY_FUNCTION.items():
        assert module in mutated, module
        source = Path(module.replace(".", "/") + ".py").read_text("utf-8")
        defined = set(_functions(ast.parse(source).body))
        assert set(functions) <= defined, (module, sorted(set(functions) - defined))
    for module in _WHOLE_MODULE:
        assert module in mutated, module


def test_figures_per_module_leave_equivalents_and_unrun_mutants_out(report: Report) -> None:
    backend = report.by_module[BACKEND]
    assert (backend.made, backend.killed, backend.survived, backend.timeout) == (8, 2, 2, 1)
    assert (backend.no_tests, backend.not_checked, backend.equivalent) == (1, 1, 1)
    assert backend.counted == 6  # 8 made, less 1 equivalent and 1 not run
    assert backend.kill_rate == pytest.approx(3 / 6)  # killed or timed out
    cluster = report.by_module[CLUSTER]
    assert (cluster.made, cluster.killed, cluster.survived, cluster.kill_rate) == (2, 1, 1, 0.5)
    assert "adapters/slurm/parse.py" not in report.by_module  # no results: not mutated
    assert report.total.made == 10
    assert (backend.seconds, backend.survivor_seconds) == (73.0, 32.0)
    assert (report.total.seconds, report.total.survivor_seconds) == (83.0, 42.0)


def test_figures_per_area_and_for_the_goal(report: Report) -> None:
    hold, find = report.by_area["hold"], report.by_area["find"]
    assert (hold.made, hold.killed, hold.survived, hold.timeout, hold.equivalent) == (4, 1, 1, 1, 1)
    assert hold.kill_rate == pytest.approx(2 / 3)
    assert (find.made, find.killed, find.no_tests, find.kill_rate) == (2, 1, 1, 0.5)
    assert set(report.by_area) == {"hold", "find"}
    assert report.goal.made == 6 and report.goal.kill_rate == pytest.approx(3 / 5)


def test_a_survivor_changing_only_text_is_listed_apart_and_not_counted(report: Report) -> None:
    texts = frozenset({HOLD.format(2), HOLD.format(1)})  # a survivor, and a killed mutant
    judged = Report(report.mutants, report.equivalents, report.diffs, texts=texts)
    hold = judged.by_area["hold"]
    assert (hold.killed, hold.survived, hold.text, hold.timeout) == (1, 0, 1, 1)
    assert hold.kill_rate == 1.0
    assert [m.name for m in judged.survivors(goal_only=True, text=True)] == [HOLD.format(2)]
    assert HOLD.format(2) not in [m.name for m in judged.survivors(goal_only=True)]


def test_equivalents_match_by_module_function_and_lines(report: Report) -> None:
    assert list(report.equivalent_of) == [HOLD.format(3)]
    [(entry, killed)] = report.detected_but_listed
    assert killed.name == LATEST.format(1) and entry.function == "latest_incarnations"
    assert [e.function for e in report.unmatched] == ["SlurmBackend.stop"]


def test_equivalents_need_every_key_and_a_reason(tmp_path: Path) -> None:
    listed = tmp_path / "equivalent.toml"
    listed.write_text('[[equivalent]]\nmodule = "m"\nfunction = "f"\nremoved = "a"\nadded = "b"\n')
    with pytest.raises(ValueError, match="equivalent #1 has no 'reason'"):
        load_equivalents(listed)
    listed.write_text(
        '[[equivalent]]\nmodule = "m"\nfunction = "f"\nremoved = "a"\nadded = "b"\nreason = " "\n'
    )
    with pytest.raises(ValueError, match="gives no reason"):
        load_equivalents(listed)


def test_survivors_are_listed_goal_areas_first_with_their_diff(report: Report) -> None:
    goal = report.survivors(goal_only=True)
    assert [m.name for m in goal] == [HOLD.format(2), LATEST.format(2)]
    everything = report.survivors(goal_only=False)
    assert {m.name for m in everything} - {m.name for m in goal} == {
        COMMAND.format(1),
        TICK.format(2),
    }
    text = survivors_text(report, goal)
    assert text.splitlines()[:3] == [
        f"adapters.slurm.backend  SlurmBackend.hold  [hold]  survived  {HOLD.format(2)}",
        "    - number = stamp % (HoldBound - 1) + 1",
        "    + number = stamp % (HoldBound - 1) - 1",
    ]
    assert f"[find]  no tests  {LATEST.format(2)}" in text


def test_the_text_gives_each_figure_next_to_its_goal(report: Report) -> None:
    text = render(report, wall_seconds=2000.0)
    lines = text.splitlines()
    [hold] = [line for line in lines if line.startswith("hold ")]
    figures = ["4", "1", "1", "1", "0", "0", "1", "0", "0", "0", "66.7%", "73", "32"]
    assert hold.split()[1:14] == figures
    assert hold.endswith("goal >= 95%: NOT met")
    [stop] = [line for line in lines if line.startswith("stop ")]
    assert stop.endswith("goal >= 95%: -")  # no mutant in the fixture
    [together] = [line for line in lines if line.startswith("goal areas together")]
    assert "60.0%" in together
    assert "equivalent: 1 mutants no caller can tell from the original, and allowed: 0" in text
    assert "(3 [[equivalent]] and [[allowed]] entries in equivalent.toml" in text
    assert "counting the" not in text  # no mutant is listed as allowed
    assert f"warning: {LATEST.format(1)} is listed as equivalent" in text
    assert "matches no mutant" in text
    assert "wall time: 2000 s (33.3 min), a full run; budget 30 min on 2 cores: OVER" in text
    assert "a full run; budget 30 min on 2 cores: within" in render(report, wall_seconds=600.0)
    assert "3 of 10 mutants tested; budget 30 min on 2 cores: -" in render(report, 2000.0, 3)
    # COMMAND 2 is not run, but in no goal area: a run from nothing tested all it had to
    assert (
        "a run from nothing of every goal-area mutant to test (9 tested); budget 30 min on 2 "
        "cores: OVER"
    ) in render(report, 2000.0, 9, from_nothing=True)
    # 83 worker seconds recorded, on 2 children
    assert "from the recorded test runs: about 1 min" in text
    assert "about 1 min (worker seconds / 2 children" in text


ALLOWED_HOLD_2 = """
[[allowed]]
module = "adapters.slurm.backend"
function = "SlurmBackend.hold"
removed = "number = stamp % (HoldBound - 1) + 1"
added = "number = stamp % (HoldBound - 1) - 1"
reason = "the fixture's: differs only where both answers are allowed"
"""


def test_an_allowed_mutant_leaves_the_denominator_and_is_counted_apart(
    report: Report, tmp_path: Path
) -> None:
    listed = tmp_path / "with-allowed.toml"
    listed.write_text(EQUIVALENTS + ALLOWED_HOLD_2)
    judged = Report(mutants=report.mutants, equivalents=load_equivalents(listed), diffs=DIFFS)
    hold = judged.by_area["hold"]
    assert (hold.survived, hold.equivalent, hold.allowed) == (0, 2, 1)
    assert hold.kill_rate == 1.0 and hold.strict_kill_rate == pytest.approx(2 / 3)
    assert judged.goal.kill_rate == pytest.approx(3 / 4)
    text = render(judged)
    [line] = [line for line in text.splitlines() if line.startswith("hold ")]
    assert line.split()[7:9] == ["1", "1"]  # equiv, allowed
    assert "allowed: 1 that differ only where the contract allows both answers" in text
    assert "kill rate counting the 1 allowed mutants as survivors: 60.0%" in text
    assert HOLD.format(2) not in [m.name for m in judged.survivors(goal_only=True)]


GAP_HOLD_2 = """
[[gap]]
module = "adapters.slurm.backend"
function = "SlurmBackend.hold"
removed = "number = stamp % (HoldBound - 1) + 1"
added = "number = stamp % (HoldBound - 1) - 1"
reason = "the fixture's: no harness reaches that edge"
"""


def test_a_gap_entry_triages_a_survivor_and_leaves_it_counted(
    report: Report, tmp_path: Path
) -> None:
    listed = tmp_path / "with-gap.toml"
    listed.write_text(EQUIVALENTS + GAP_HOLD_2)
    judged = Report(mutants=report.mutants, equivalents=load_equivalents(listed), diffs=DIFFS)
    assert judged.goal.kill_rate == report.goal.kill_rate  # still a survivor
    assert list(judged.gap_of) == [HOLD.format(2)]
    assert HOLD.format(2) in [m.name for m in judged.survivors(goal_only=True)]
    text = render(judged)
    assert "survivors in the goal areas: 2, of which 1 triaged as gaps" in text
    assert "and 1 not triaged" in text
    assert "gap: the fixture's: no harness reaches that edge" in survivors_text(
        judged, judged.survivors(goal_only=True)
    )


def test_a_unified_diff_gives_its_removed_and_added_lines() -> None:
    assert changed_lines(DIFF_HOLD_2) == (
        ("number = stamp % (HoldBound - 1) + 1",),
        ("number = stamp % (HoldBound - 1) - 1",),
    )


def test_the_plugin_takes_conformance_node_ids_off_the_command_line() -> None:
    picked, rest = selected_items(
        ["-x", "slurm-sim::IDENT-003", "--dispatch-harness=slurm-sim", "memory-slurm::STATE-011"]
    )
    assert picked == ["slurm-sim::IDENT-003", "memory-slurm::STATE-011"]
    assert rest == ["-x", "--dispatch-harness=slurm-sim"]  # memory-slurm is not loaded: kept


def test_the_plugin_loads_only_the_harnesses_of_the_items_it_keeps() -> None:
    harnesses = ["--dispatch-harness=slurm-sim", "--dispatch-harness=memory-slurm", "-q"]
    assert selected_items([*harnesses, "memory-slurm::HOLD-001"]) == (
        ["memory-slurm::HOLD-001"],
        ["--dispatch-harness=memory-slurm", "-q"],
    )
    assert selected_items(harnesses) == ([], harnesses)
    assert selected_items(["tests/tools", "tests/x.py::test_y"]) == (
        [],
        ["tests/tools", "tests/x.py::test_y"],
    )


def test_the_plugin_leaves_out_the_checks_of_a_prefix_and_nothing_else() -> None:
    assert left_out("kubeflow-sim::STATE-005", ["STATE"])
    assert not left_out("kubeflow-sim::IDENT-005", ["STATE"])
    assert not left_out("tests/test_state.py", ["tests"])  # not a conformance item
    assert not left_out("kubeflow-sim::STATE-005", [])


def test_the_mutation_run_collects_no_stateful_check() -> None:
    """The run mutmut makes (pyproject's arguments) has no STATE check among its items, and
    every other check of the harness."""
    import subprocess
    import sys

    def collected(*extra: str) -> set[str]:
        argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        argv += ["-p", "tools.mutation.plugin", "--dispatch-harness=memory-slurm", *extra]
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        return {line for line in out.splitlines() if line.startswith("memory-slurm::")}

    every = collected()
    kept = collected("--mutation-leave-out=STATE")
    assert {i for i in every if "::STATE-" in i}, "the harness has stateful checks"
    assert kept == {i for i in every if "::STATE-" not in i}


def test_a_change_on_the_tests_side_re_tests_what_was_not_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.mutation.cli import fingerprints, prepare

    monkeypatch.chdir(tmp_path)
    (tmp_path / "adapters/slurm").mkdir(parents=True)
    (tmp_path / "adapters/slurm/backend.py").write_text("def hold():\n    return 1\n")
    (tmp_path / "conformance").mkdir()
    (tmp_path / "conformance/checks.py").write_text("CHECKS = 1\n")
    meta = tmp_path / "mutants" / f"{BACKEND}.meta"
    meta.parent.mkdir(parents=True)
    codes = {HOLD.format(1): 1, HOLD.format(2): 0, HOLD.format(3): 33, HOLD.format(4): -24}
    meta.write_text(json.dumps({"exit_code_by_key": codes, "durations_by_key": {}}))
    stats = tmp_path / "mutants/mutmut-stats.json"
    stats.write_text("{}")
    state = tmp_path / "mutants/tools-mutation.json"
    state.write_text(json.dumps(fingerprints([BACKEND])))

    assert prepare([BACKEND], fresh=False) == fingerprints([BACKEND])  # nothing changed
    assert stats.exists() and json.loads(meta.read_text())["exit_code_by_key"] == codes

    (tmp_path / "conformance/checks.py").write_text("CHECKS = 2\n")  # a new check
    prepare([BACKEND], fresh=False)
    assert not stats.exists()  # mutmut collects again which checks reach which function
    assert json.loads(meta.read_text())["exit_code_by_key"] == {
        HOLD.format(1): 1,  # killed: kept
        HOLD.format(2): None,  # survived: tested again
        HOLD.format(3): None,  # reached by no check: tested again
        HOLD.format(4): -24,  # timed out: kept
    }

    stats.write_text("{}")
    state.write_text(json.dumps(fingerprints([BACKEND])))
    (tmp_path / "adapters/slurm/backend.py").write_text("def hold():\n    return 2\n")
    prepare([BACKEND], fresh=False)
    assert stats.exists()  # a mutated function's body: mutmut's own incremental mode
    (tmp_path / "adapters/slurm/backend.py").write_text(
        "def hold():\n    return 2\n\n\ndef x():\n    pass\n"
    )
    prepare([BACKEND], fresh=False)
    assert not stats.exists()  # a new function: nothing records which checks reach it yet

    # a run stopped before it recorded the checks its results are of: they are re-tested
    state.unlink()
    meta.write_text(json.dumps({"exit_code_by_key": codes, "durations_by_key": {}}))
    prepare([BACKEND], fresh=False)
    assert json.loads(meta.read_text())["exit_code_by_key"] == {
        HOLD.format(1): 1,
        HOLD.format(2): None,
        HOLD.format(3): None,
        HOLD.format(4): -24,
    }


def test_a_changed_mutated_module_has_mutmut_remake_its_mutants_before_anything_is_tested(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tools.mutation import cli
    from tools.mutation.report import Mutant

    tested = Mutant(HOLD.format(1), "adapters.slurm.backend", "SlurmBackend.hold", KILLED, BACKEND)
    monkeypatch.setattr(cli, "load_mutants", lambda _dir, _sources: [tested])
    monkeypatch.setattr(cli, "text_only", lambda _mutants: frozenset())
    ran: list[list[str]] = []
    monkeypatch.setattr(cli, "run_mutmut", lambda _children, names: ran.append(list(names)) or 0)
    assert cli.test_untested([BACKEND], 2, every=False, sample=None) == 0
    assert ran == []  # every mutant has a result, and nothing changed
    assert cli.test_untested([BACKEND], 2, every=False, sample=None, remake=True) == 0
    assert ran == [[cli.SEED_PATTERN]]


def test_a_module_that_is_not_mutated_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from tools.mutation.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--module", "adapters/kubeflow/preflight.py", "--report-only"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--module adapters/kubeflow/preflight.py is not mutated" in err
    assert "adapters/kubeflow/backend.py" in err  # what it may name instead


def test_a_sample_is_that_many_of_the_mutants_to_test_drawn_by_its_seed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.mutation import cli
    from tools.mutation.report import Mutant

    goal = [
        Mutant(
            f"adapters.slurm.backend.xǁSlurmBackendǁhold__mutmut_{i}",
            "adapters.slurm.backend",
            "SlurmBackend.hold",
            NOT_CHECKED,
            BACKEND,
        )
        for i in range(1, 41)
    ]
    outside = Mutant(
        "adapters.slurm.parse.x_parse_squeue__mutmut_1",
        "adapters.slurm.parse",
        "parse_squeue",
        NOT_CHECKED,
        "adapters/slurm/parse.py",
    )
    monkeypatch.setattr(cli, "load_mutants", lambda _dir, _sources: [*goal, outside])
    monkeypatch.setattr(cli, "text_only", lambda _mutants: frozenset({goal[0].name}))
    monkeypatch.setattr(cli, "listed_equivalents", lambda _mutants, _sources: frozenset())
    ran: list[list[str]] = []
    monkeypatch.setattr(cli, "run_mutmut", lambda _children, names: ran.append(list(names)) or 0)

    for seed in (7, 7, 8):
        assert cli.test_untested([BACKEND], 2, every=False, sample=(10, seed)) == 0
    first, again, other = ran
    assert len(first) == 10 and first == again and first != other
    assert goal[0].name not in first and outside.name not in first  # text-only, outside areas
    assert "sample: 10 of the 39 mutants to test, drawn with seed 7" in capsys.readouterr().out
    assert cli.test_untested([BACKEND], 2, every=False, sample=(100, 7)) == 0
    assert len(ran[-1]) == 39  # a sample as large as what is left is all of it


def test_a_listed_equivalent_is_not_tested_and_counts_as_equivalent(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    report: Report,
    tmp_path: Path,
) -> None:
    from tools.mutation import cli
    from tools.mutation.report import Mutant

    def hold(i: int) -> Mutant:
        name = f"adapters.slurm.backend.xǁSlurmBackendǁhold__mutmut_{i}"
        return Mutant(name, "adapters.slurm.backend", "SlurmBackend.hold", NOT_CHECKED, BACKEND)

    untested = [hold(3), hold(4)]  # 3 is the listed one (EQUIVALENTS), 4 is not
    listed = tmp_path / "listed.toml"
    listed.write_text(EQUIVALENTS)
    monkeypatch.setattr(cli, "EQUIVALENTS", listed)
    monkeypatch.setattr(cli, "load_mutants", lambda _dir, _sources: untested)
    monkeypatch.setattr(cli, "text_only", lambda _mutants: frozenset())
    monkeypatch.setattr(cli, "diffs", lambda pairs: {n: DIFFS[n] for n, _ in pairs})
    ran: list[list[str]] = []
    monkeypatch.setattr(cli, "run_mutmut", lambda _children, names: ran.append(list(names)) or 0)
    assert cli.test_untested([BACKEND], 2, every=False, sample=None) == 0
    assert ran == [[hold(4).name]]
    assert "1 mutants are listed in" in capsys.readouterr().out
    judged = Report(untested, report.equivalents, DIFFS)
    assert list(judged.equivalent_of) == [hold(3).name]
    assert (judged.goal.equivalent, judged.goal.not_checked) == (1, 1)


def test_mutants_mutmut_makes_anew_during_a_run_are_tested_in_a_second_pass(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """mutmut makes the mutants of a changed function anew when it starts: the run that named
    the old ones tests the new ones after it, once."""
    from tools.mutation import cli
    from tools.mutation.report import Mutant

    def hold(i: int, status: str = NOT_CHECKED) -> Mutant:
        name = f"adapters.slurm.backend.xǁSlurmBackendǁhold__mutmut_{i}"
        return Mutant(name, "adapters.slurm.backend", "SlurmBackend.hold", status, BACKEND)

    states = iter([[hold(4)], [hold(4, "killed"), hold(5), hold(6)]])
    monkeypatch.setattr(cli, "load_mutants", lambda _dir, _sources: next(states))
    monkeypatch.setattr(cli, "text_only", lambda _mutants: frozenset())
    monkeypatch.setattr(cli, "listed_equivalents", lambda _mutants, _sources: frozenset())
    ran: list[list[str]] = []
    monkeypatch.setattr(cli, "run_mutmut", lambda _children, names: ran.append(list(names)) or 0)
    assert cli.test_untested([BACKEND], 2, every=False, sample=None) == 0
    assert ran == [[hold(4).name], [hold(5).name, hold(6).name]]
    assert "2 mutants mutmut made anew" in capsys.readouterr().out


def test_a_sample_of_none_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from tools.mutation.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--sample", "0"])
    assert exited.value.code == 2
    assert "--sample must be at least 1" in capsys.readouterr().err


def test_the_test_runs_keep_the_clusters_files_in_a_directory_removed_after_them() -> None:
    """mutmut ends each mutant's process without its cleanup: left in /dev/shm, a run's
    simulated clusters filled it with thousands of directories."""
    from adapters.slurm.testing.sim import SCRATCH_ENV
    from tools.mutation import cli

    with cli.scratch() as env:
        root = Path(env[SCRATCH_ENV])
        assert root.is_dir() and not str(root).startswith("/dev/shm")
        (root / "dispatch-job-x").mkdir()  # what a killed run leaves
    assert not root.exists()


def test_a_mutmut_that_printed_its_results_and_hangs_is_ended_and_counts_as_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tools.mutation import cli

    log = tmp_path / "mutmut-run.log"
    monkeypatch.setattr(cli, "LOG", log)
    monkeypatch.setattr(cli, "POLL", 0.01)
    monkeypatch.setattr(cli, "EXIT_GRACE", 0.0)
    # as mutmut 3.x at times does: every result printed, then a wait that never ends
    hangs = "import sys, threading; print('x', flush=True); "
    hangs += "print('\\nMutant results\\n---', flush=True); threading.Event().wait()"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-c", hangs], stdout=out)
        assert cli._await_mutmut(process) == 0
    assert process.returncode is not None  # ended, not left behind
    assert "had not exited" in capsys.readouterr().out

    with log.open("w") as out:
        failing = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], stdout=out)
        assert cli._await_mutmut(failing) == 3  # a mutmut that fails is not a hang
