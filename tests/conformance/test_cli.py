"""``dispatch-conformance``: run, list, harnesses, matrix and preflight through ``cli.main``,
and the reports a run writes.

The module also holds tiny harnesses the CLI and plugin tests name as
``tests.conformance.test_cli:<factory>``: one whose backend breaks a rule, one without faults,
one that crashes, one on a simulated Slurm cluster for preflight."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from adapters.memory import MemoryBackend
from adapters.slurm import SlurmBackend
from conformance import Context, FaultInjector, Harness, checks
from conformance.checks import REGISTRY, Check, Tier
from conformance.cli import main
from conformance.harnesses.memory import MemoryHarness
from dispatch_core import (
    Backend,
    Capability,
    Clock,
    JobSpec,
    ObjectRef,
    Source,
    Support,
    VirtualClock,
)
from simulators.slurm import SlurmConfig, SlurmSim

# -- harnesses the tests name by module:factory --------------------------------------------------


class Forgetful(MemoryBackend):
    """Breaks CAP-001: it answers nothing for OutputRetained."""

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        answers = super().capabilities(None)
        del answers[Capability.OUTPUT_RETAINED]
        return answers


class BrokenHarness(MemoryHarness):
    name = "broken"

    def __init__(self) -> None:
        super().__init__("slurm")
        self.name = "broken"

    def new_backend(self) -> Backend:
        return Forgetful("slurm", clock=VirtualClock(), max_job_id=50, min_job_age=60.0)


def broken_harness() -> Harness:
    return BrokenHarness()


class PlainHarness(MemoryHarness):
    """The memory adapter with no fault injector and no view of executions."""

    def __init__(self) -> None:
        super().__init__("slurm")
        self.name = "memory-plain"

    def faults(self, backend: Backend) -> FaultInjector:
        return FaultInjector()

    def executions(self, backend: Backend, ref: ObjectRef) -> Sequence[Sequence[Mapping[str, str]]]:
        return Harness.executions(self, backend, ref)


def plain_harness() -> Harness:
    return PlainHarness()


def exploding_harness() -> Harness:
    raise RuntimeError("no cluster here\nsecond line of the story")


def not_a_harness() -> object:
    return 42


class LeakyBackend(MemoryBackend):
    """Echoes a secret from the environment in a capability reason."""

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        answers = super().capabilities(None)
        token = os.environ.get("DISPATCH_TEST_TOKEN", "")
        answers[Capability.HOLD] = Support.yes(f"authenticated with {token}")
        return answers


class LeakyHarness(MemoryHarness):
    def new_backend(self) -> Backend:
        return LeakyBackend("slurm", clock=VirtualClock())


def leaky_harness() -> Harness:
    return LeakyHarness()


class SimHarness(Harness):
    """The Slurm adapter on a simulated cluster without accounting: preflight runs on its
    virtual clock (nothing sleeps)."""

    name = "sim-preflight"

    def new_backend(self) -> Backend:
        sim = SlurmSim(SlurmConfig(accounting=False, job_requeue=False, run_time=2))
        return SlurmBackend(sim, "lab", clock=sim.clock)  # type: ignore[arg-type]

    def reopen(self, backend: Backend) -> Backend:
        assert isinstance(backend, SlurmBackend)
        return backend.reopen()

    def clock(self, backend: Backend) -> Clock:
        assert isinstance(backend, SlurmBackend)
        return backend.clock


def sim_harness() -> Harness:
    return SimHarness()


class Probing(MemoryBackend):
    def preflight(self) -> dict[Capability, Support]:
        return {Capability.OUTPUT_READ: Support.yes("read it back", source=Source.PROBED)}


class ProbingHarness(MemoryHarness):
    def new_backend(self) -> Backend:
        return Probing("slurm", clock=VirtualClock())


def probing_harness() -> Harness:
    return ProbingHarness()


class FailingProbe(MemoryBackend):
    def preflight(self) -> dict[Capability, Support]:
        raise OSError("sbatch: command not found\nexit 127")


class FailingProbeHarness(MemoryHarness):
    def new_backend(self) -> Backend:
        return FailingProbe("slurm", clock=VirtualClock())


def failing_probe_harness() -> Harness:
    return FailingProbeHarness()


class NoClusterHarness(MemoryHarness):
    def new_backend(self) -> Backend:
        from conformance import Skip

        raise Skip("no Slurm on this machine (sbatch is not on PATH)")


def no_cluster_harness() -> Harness:
    return NoClusterHarness()


HERE = "tests.conformance.test_cli"

# -- checks the tests register for themselves (removed after each test) -------------------------


def _passes(ctx: Context) -> None:
    ctx.backend.capabilities(None)


def _declared_no(ctx: Context) -> None:
    ctx.require(Capability.CONTAINER_IMAGE)


def _needs_a_fault(ctx: Context) -> None:
    ctx.faults.lose_node(ctx.start())


def _fails(ctx: Context) -> None:
    ctx.fail("answered maybe")


def register_test_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """TEST-901 passes; 902 and 903 skip (declared no; cannot inject); 904 is an expected
    failure that fails, 905 one that passes (strict: it fails); 906 fails."""
    for check_id, func, rule, xfail in (
        ("TEST-901", _passes, "capabilities() can be asked.", None),
        ("TEST-902", _declared_no, "A container image runs.", None),
        ("TEST-903", _needs_a_fault, "A lost node ends the job.", None),
        ("TEST-904", _fails, "Known broken rule.", "issue 1"),
        ("TEST-905", _passes, "Fixed rule.", "issue 2"),
        ("TEST-906", _fails, "The answer is yes or no.", None),
    ):
        check = Check(check_id, rule, "test clause", "test", Tier.SMOKE, func, xfail)
        monkeypatch.setitem(REGISTRY, check_id, check)


# -- helpers ---------------------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -- run ---------------------------------------------------------------------------------------


def test_run_prints_progress_and_writes_every_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(
        capsys,
        "run",
        "--harness",
        "memory-slurm",
        "--harness",
        "memory-kubeflow",
        "--report-dir",
        str(tmp_path),
        "--seed",
        "3",
        "--tier",
        "smoke",
    )
    selected = checks("smoke")
    lines = out.splitlines()
    for check in selected:
        assert sum(f" {check.id} " in line for line in lines) == 2  # one progress line each
    report = json.loads((tmp_path / "report.json").read_text())
    totals = report["totals"]
    assert totals["total"] == 2 * len(selected)
    assert (
        lines[-1]
        == f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped"
    )
    assert code == (1 if totals["failed"] else 0)
    assert report["run"]["seed"] == 3 and report["run"]["tier"] == "smoke"
    assert [h["label"] for h in report["run"]["harnesses"]] == ["memory-slurm", "memory-kubeflow"]
    row = report["results"][0]
    assert set(row) >= {"id", "rule", "clause", "harness", "outcome", "reason", "duration", "seed"}
    assert row["seed"] == 3
    assert set(report["capabilities"]) == {"memory-slurm", "memory-kubeflow"}
    assert len(report["capabilities"]["memory-slurm"]["answers"]) == 14

    junit = ET.parse(tmp_path / "junit.xml").getroot()
    suites = junit.findall("testsuite")
    assert [s.get("name") for s in suites] == ["memory-slurm", "memory-kubeflow"]
    for suite in suites:
        cases = suite.findall("testcase")
        assert len(cases) == len(selected)
        for case in cases:
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            assert props["harness"] == suite.get("name")
            assert props["check"] == case.get("name")
            assert props["seed"] == "3"

    matrix = (tmp_path / "matrix.md").read_text()
    assert "| capability | memory-slurm | memory-kubeflow |" in matrix
    assert "| ContainerImage | no (declared) [" in matrix
    assert "| note | reason |" in matrix
    assert "does not model ContainerImage" in matrix


def test_run_passes_with_exit_status_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = cli(
        capsys,
        "run",
        "--harness",
        "memory-slurm",
        "--check",
        "CAP-001",
        "--report-dir",
        str(tmp_path),
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "1 passed, 0 failed, 0 skipped"
    assert "  passed   CAP-001" in out


def test_a_failing_check_exits_1_with_its_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = f"{HERE}:broken_harness"
    code, out, _ = cli(
        capsys, "run", "--harness", spec, "--check", "CAP-001", "--report-dir", str(tmp_path)
    )
    assert code == 1
    assert "  FAILED   CAP-001" in out
    assert "[CAP-001] rule: capabilities() answers every one of the fourteen" in out
    assert "adapter: answered no Support for OutputRetained" in out
    # The replay names the harness as the run did, so it can be pasted back.
    assert f"replay: dispatch-conformance run --harness {spec} --check CAP-001 --seed 0" in out
    assert "failed: broken::CAP-001" in out
    assert out.splitlines()[-1] == "0 passed, 1 failed, 0 skipped"

    report = json.loads((tmp_path / "report.json").read_text())
    [row] = report["results"]
    assert (row["harness"], row["outcome"]) == ("broken", "failed")
    assert "OutputRetained" in row["reason"]
    failure = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message", "").startswith("[CAP-001] rule:")
    assert "OutputRetained" in (failure.text or "")


def test_skips_carry_their_reasons(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_test_checks(monkeypatch)
    code, out, _ = cli(
        capsys,
        "run",
        "--harness",
        f"{HERE}:plain_harness",
        "--check",
        "TEST-90",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 1  # TEST-905 and TEST-906 fail
    report = json.loads((tmp_path / "report.json").read_text())
    outcomes = {r["id"]: (r["outcome"], r["reason"]) for r in report["results"]}
    assert outcomes["TEST-902"] == (
        "skipped",
        "adapter declares ContainerImage no: memory adapter (slurm shape) does not model ContainerImage",
    )
    assert outcomes["TEST-903"] == ("skipped", "harness cannot inject lose_node")
    assert outcomes["TEST-904"] == ("skipped", "expected failure: issue 1")
    assert outcomes["TEST-905"][0] == "failed"
    assert "passed, but it is a strict expected failure (issue 2)" in outcomes["TEST-905"][1]
    for check_id in ("TEST-902", "TEST-903", "TEST-904"):
        assert f"skipped: {outcomes[check_id][1]}" in out
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert {s.get("message") for s in junit.iter("skipped")} == {
        reason for outcome, reason in outcomes.values() if outcome == "skipped"
    }
    assert out.splitlines()[-1] == "1 passed, 2 failed, 3 skipped"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no-such-harness", "no harness named 'no-such-harness' (known: "),
        ("no_such_module_xyz:factory", "cannot import 'no_such_module_xyz'"),
        (f"{HERE}:missing_factory", "has no 'missing_factory'"),
        (f"{HERE}:exploding_harness", "failed: RuntimeError: no cluster here second line"),
        (f"{HERE}:not_a_harness", "gave int, not a conformance.Harness"),
    ],
)
def test_a_bad_harness_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: str, says: str
) -> None:
    for argv in (
        ["run", "--harness", "memory-slurm", "--harness", spec, "--report-dir", str(tmp_path)],
        ["matrix", "--harness", spec, "--report-dir", str(tmp_path)],
        ["preflight", "--harness", spec, "--report-dir", str(tmp_path)],
    ):
        code, out, err = cli(capsys, *argv)
        assert code == 2, argv
        line = one_line_error(err)
        assert line.startswith("dispatch-conformance: error: ")
        assert says in line
        assert out == ""
    assert list(tmp_path.iterdir()) == []


def test_a_module_that_raises_on_import_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "exploding_on_import_mod.py").write_text("raise ValueError('bad config\\nmore')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = cli(capsys, "run", "--harness", "exploding_on_import_mod:harness")
    assert code == 2
    assert "ValueError: bad config more" in one_line_error(err)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["run"],
        ["run", "--harness", "memory-slurm", "--tier", "huge"],
        ["run", "--harness", "memory-slurm", "--seed", "x"],
        ["matrix"],
        ["preflight"],
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, "")
    assert one_line_error(err).startswith("dispatch-conformance: error: ")


def test_a_check_selection_that_matches_nothing_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = cli(
        capsys,
        "run",
        "--harness",
        "memory-slurm",
        "--check",
        "NOPE-",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 2
    assert "no standard-tier check matches --check NOPE-" in one_line_error(err)


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ([], "run the checks against adapters"),
        (["run"], "Run the conformance checks against each harness"),
        (["list"], "List the registered checks"),
        (["harnesses"], "List the harnesses registered"),
        (["matrix"], "fourteen capability answers"),
        (["preflight"], "run the preflight probes"),
    ],
)
def test_help_says_what_each_command_does(
    capsys: pytest.CaptureFixture[str], command: list[str], says: str
) -> None:
    code, out, _ = cli(capsys, *command, "--help")
    assert code == 0
    assert says in " ".join(out.split())


# -- list, harnesses, matrix -------------------------------------------------------------------


def test_list_shows_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "list")
    assert code == 0
    for check in checks("full"):
        [line] = [line for line in out.splitlines() if line.startswith(f"{check.id} ")]
        assert check.tier.value in line and check.rule in line and f"({check.clause})" in line
    assert out.splitlines()[-1] == f"{len(checks('full'))} checks"


def test_harnesses_lists_the_registered_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "harnesses")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert {"memory-slurm", "memory-kubeflow"} <= set(names)
    assert "conformance.harnesses.memory:memory_slurm" in out


def test_matrix_prints_and_writes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = cli(
        capsys,
        "matrix",
        "--harness",
        "memory-slurm",
        "--harness",
        f"{HERE}:no_cluster_harness",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 0
    written = (tmp_path / "matrix.md").read_text()
    assert written.strip() in out
    assert "| WorkingDirectory | yes (declared) [" in written
    assert "skipped: no Slurm on this machine" in written  # the harness that has no cluster
    data = json.loads((tmp_path / "matrix.json").read_text())
    assert data["capabilities"]["memory-slurm"]["answers"]["Hold"]["value"] == "yes"
    assert data["capabilities"]["memory-slurm"]["answers"]["Hold"]["source"] == "declared"


def test_reports_never_carry_secrets_from_the_environment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISPATCH_TEST_TOKEN", "hunter2-very-secret")
    code, _, _ = cli(
        capsys,
        "run",
        "--harness",
        f"{HERE}:leaky_harness",
        "--check",
        "CAP-001",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 0
    for path in tmp_path.iterdir():
        text = path.read_text()
        assert "hunter2-very-secret" not in text, path
        assert "DISPATCH_TEST_TOKEN" not in text
    assert "authenticated with <redacted>" in (tmp_path / "matrix.md").read_text()
    assert os.environ["HOME"] not in (tmp_path / "report.json").read_text()


# -- preflight ---------------------------------------------------------------------------------


def test_preflight_probes_a_slurm_cluster_with_progress(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli(
        capsys,
        "preflight",
        "--harness",
        f"{HERE}:sim_harness",
        "--report-dir",
        str(tmp_path / "reports"),
        "--probe-dir",
        str(tmp_path),
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("preflight of sim-preflight (SlurmBackend): probing the cluster")
    assert lines[1] == "  reading scontrol show config"  # printed as the probes run
    header = next(line for line in lines if line.startswith("capability "))
    assert header.split() == ["capability", "value", "source", "reason"]
    requeue = next(line for line in lines if line.startswith("NativeRequeue "))
    assert requeue.split()[:3] == ["NativeRequeue", "no", "probed"]
    assert "JobRequeue=0" in requeue
    data = json.loads((tmp_path / "reports" / "preflight.json").read_text())
    assert data["probed"] is True and data["harness"] == "sim-preflight"
    assert data["progress"][0] == "reading scontrol show config"
    assert data["capabilities"]["AccountingHistory"] == {
        "value": "no",
        "source": "probed",
        "reason": data["capabilities"]["AccountingHistory"]["reason"],
    }
    assert len(data["capabilities"]) == 14
    markdown = (tmp_path / "reports" / "preflight.md").read_text()
    assert "| capability | value | source | reason |" in markdown
    assert "| NativeRequeue | no | probed | JobRequeue=0" in markdown


def test_preflight_of_a_backend_with_its_own_probes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(
        capsys, "preflight", "--harness", f"{HERE}:probing_harness", "--report-dir", str(tmp_path)
    )
    assert code == 0
    assert "running its preflight()" in out
    line = next(line for line in out.splitlines() if line.startswith("OutputRead "))
    assert line.split()[:3] == ["OutputRead", "yes", "probed"]
    assert json.loads((tmp_path / "preflight.json").read_text())["probed"] is True


def test_preflight_of_a_backend_without_probes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(
        capsys, "preflight", "--harness", "memory-slurm", "--report-dir", str(tmp_path)
    )
    assert code == 0
    assert "MemoryBackend has no preflight probes" in out
    assert "Hold" in out
    data = json.loads((tmp_path / "preflight.json").read_text())
    assert data["probed"] is False and len(data["capabilities"]) == 14


def test_preflight_failures_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = cli(
        capsys,
        "preflight",
        "--harness",
        f"{HERE}:failing_probe_harness",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 1
    assert one_line_error(err).startswith(
        "dispatch-conformance: error: preflight of memory-slurm "
        "failed: OSError: sbatch: command not found exit 127 (at tests/conformance/test_cli.py:"
    )
    code, _, err = cli(
        capsys,
        "preflight",
        "--harness",
        f"{HERE}:no_cluster_harness",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 2
    assert one_line_error(err) == (
        "dispatch-conformance: error: preflight of memory-slurm: "
        "no cluster to probe: no Slurm on this machine (sbatch is not on PATH)"
    )
