"""``dispatch-conformance``: run, list, harnesses, matrix and preflight through ``cli.main``,
and the reports a run writes.

The module also holds tiny harnesses the CLI and plugin tests name as
``tests.conformance.test_cli:<factory>``, each on the memory adapter (so that these tests
need none of the built-in harnesses): one that works, one whose backend breaks a rule, one
that declares no identity model, one whose backend probes, one on a simulated Slurm cluster
for preflight, ..."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from adapters.memory import MemoryBackend, Shape
from adapters.memory.testing.harness import MemoryHarness
from adapters.slurm import SlurmBackend
from conformance import (
    Context,
    Fault,
    Harness,
    IdentityModel,
    Listed,
    Lookup,
    Needs,
    Probe,
    checks,
)
from conformance.checks import REGISTRY, Check, Tier
from conformance.cli import main
from conformance.harness import fault_needs
from conformance.reports import needs_markdown
from conformance.runner import Loaded
from dispatch_core import (
    Capability,
    Clock,
    JobSpec,
    PreflightOptions,
    Source,
    Support,
    VirtualClock,
)
from simulators.slurm import SlurmConfig, SlurmSim

ROOT = Path(__file__).resolve().parents[2]
HERE = "tests.conformance.test_cli"

# -- harnesses the tests name by module:factory --------------------------------------------------

BY_NAME = IdentityModel(
    lookup=Lookup.NAME, reuses_ids=True, requeue_moves_submit=True, history_outlives_live=True
)
BY_LABEL = IdentityModel(
    lookup=Lookup.LABEL, reuses_ids=False, requeue_moves_submit=False, history_outlives_live=False
)


class ToyHarness(Harness[MemoryBackend]):
    """The memory adapter on a fresh cluster per check, with no fault injector, no view of
    executions and no host; it counts the backends it made and notes begin/end."""

    identity = BY_NAME

    def __init__(self, name: str = "toy", shape: Shape = "slurm") -> None:
        self.name = name
        self.shape: Shape = shape
        self.made = 0
        self.calls: list[str] = []

    def backend(self) -> MemoryBackend:
        return MemoryBackend(self.shape, clock=VirtualClock(), max_job_id=50, min_job_age=60.0)

    def new_backend(self) -> MemoryBackend:
        self.made += 1
        return self.backend()

    def reopen(self, backend: MemoryBackend) -> MemoryBackend:
        return backend.reopen()

    def clock(self, backend: MemoryBackend) -> Clock:
        return backend.cluster.clock

    def listing(self, backend: MemoryBackend) -> Mapping[str, Listed]:
        return MemoryHarness(self.shape).listing(backend)

    def begin(self, check_id: str) -> None:
        self.calls.append(f"begin {check_id}")

    def end(self, check_id: str) -> None:
        self.calls.append(f"end {check_id}")


TOY = f"{HERE}:toy_harness"


def toy_harness() -> ToyHarness:
    return ToyHarness()


class LabelHarness(ToyHarness):
    """The memory adapter's Kubernetes shape: found by label, ids never reused."""

    identity = BY_LABEL


def label_harness() -> ToyHarness:
    return LabelHarness("toy-label", "kubeflow")


class Forgetful(MemoryBackend):
    """Breaks CAP-001: it answers nothing for OutputRetained."""

    def capabilities(self, spec: JobSpec | None) -> dict[Capability, Support]:
        answers = super().capabilities(None)
        del answers[Capability.OUTPUT_RETAINED]
        return answers


class BrokenHarness(ToyHarness):
    def __init__(self) -> None:
        super().__init__("broken")

    def backend(self) -> MemoryBackend:
        return Forgetful("slurm", clock=VirtualClock(), max_job_id=50, min_job_age=60.0)


def broken_harness() -> ToyHarness:
    return BrokenHarness()


def plain_harness() -> ToyHarness:
    return ToyHarness("memory-plain")


class DyingHarness(ToyHarness):
    """Its process ends the moment a check asks for a backend (a crash no Python code sees)."""

    def __init__(self) -> None:
        super().__init__("dying")

    def new_backend(self) -> MemoryBackend:
        os._exit(9)


def dying_harness() -> ToyHarness:
    return DyingHarness()


class WordyHarness(ToyHarness):
    """Says why it lacks a fault on two lines."""

    def declines(self, need: str) -> str | None:
        return "no node here\n  to lose (a toy scheduler)" if need == Fault.LOSE_NODE else None


def wordy_harness() -> ToyHarness:
    return WordyHarness("wordy")


class NoIdentityHarness(Harness[MemoryBackend]):
    """Everything but the identity model."""

    name = "anonymous"

    def new_backend(self) -> MemoryBackend:
        return MemoryBackend("slurm", clock=VirtualClock())

    def reopen(self, backend: MemoryBackend) -> MemoryBackend:
        return backend.reopen()

    def clock(self, backend: MemoryBackend) -> Clock:
        return backend.cluster.clock

    def listing(self, backend: MemoryBackend) -> Mapping[str, Listed]:
        return {}


def no_identity_harness() -> NoIdentityHarness:
    return NoIdentityHarness()


class MisspeltHarness(ToyHarness):
    impossible = frozenset({Fault.LET_RUN.value, "lose_comments"})


def misspelt_harness() -> ToyHarness:
    return MisspeltHarness("misspelt")


class OldStyleHarness(ToyHarness):
    """A harness written for the contract before powers: it names what it offers."""

    offers = frozenset({Fault.LET_RUN.value})


def old_style_harness() -> ToyHarness:
    return OldStyleHarness("old-style")


def exploding_harness() -> ToyHarness:
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


class LeakyHarness(ToyHarness):
    def backend(self) -> MemoryBackend:
        return LeakyBackend("slurm", clock=VirtualClock())


def leaky_harness() -> ToyHarness:
    return LeakyHarness()


class SimHarness(Harness[SlurmBackend]):
    """The Slurm adapter on a simulated cluster without accounting: preflight runs on its
    virtual clock (nothing sleeps)."""

    name = "sim-preflight"
    identity = BY_NAME

    def new_backend(self) -> SlurmBackend:
        sim = SlurmSim(SlurmConfig(accounting=False, job_requeue=False, run_time=2))
        return SlurmBackend(sim, "lab", clock=sim.clock)  # type: ignore[arg-type]

    def reopen(self, backend: SlurmBackend) -> SlurmBackend:
        return backend.reopen()

    def clock(self, backend: SlurmBackend) -> Clock:
        return backend.clock

    def listing(self, backend: SlurmBackend) -> Mapping[str, Listed]:
        return {}  # preflight alone runs here: no check reads the listing


def sim_harness() -> SimHarness:
    return SimHarness()


PROBED: list[PreflightOptions | None] = []
"""The options each ``Probing.preflight`` was called with."""


class Probing(MemoryBackend):
    """A backend of any kind with probes of its own: it tells its progress and answers one
    capability from them."""

    def preflight(self, options: PreflightOptions | None = None) -> dict[Capability, Support]:
        PROBED.append(options)
        if options is not None and options.progress is not None:
            options.progress("reading the toy scheduler's settings")
            options.progress(f"probe job writes {options.probe_dir}/probe.out")
        return {Capability.OUTPUT_READ: Support.yes("read it back", source=Source.PROBED)}


class ProbingHarness(ToyHarness):
    def __init__(self) -> None:
        super().__init__("probing")

    def backend(self) -> MemoryBackend:
        return Probing("slurm", clock=VirtualClock())


def probing_harness() -> ToyHarness:
    return ProbingHarness()


class FailingProbe(MemoryBackend):
    def preflight(self, options: PreflightOptions | None = None) -> dict[Capability, Support]:
        raise OSError("sbatch: command not found\nexit 127")


class FailingProbeHarness(ToyHarness):
    def backend(self) -> MemoryBackend:
        return FailingProbe("slurm", clock=VirtualClock())


def failing_probe_harness() -> ToyHarness:
    return FailingProbeHarness()


class NoClusterHarness(ToyHarness):
    def new_backend(self) -> MemoryBackend:
        from conformance import Skip

        raise Skip("no Slurm on this machine (sbatch is not on PATH)")


def no_cluster_harness() -> ToyHarness:
    return NoClusterHarness()


# -- checks the tests register for themselves (removed after each test) -------------------------


def _passes(ctx: Context) -> None:
    ctx.backend.capabilities(None)


def _loses_a_node(ctx: Context) -> None:
    ctx.faults.lose_node(ctx.start())


def _fails(ctx: Context) -> None:
    ctx.fail("answered maybe")


TEST_CHECKS: tuple[tuple[str, Callable[[Context], None], str, Needs, Mapping[str, str]], ...] = (
    ("TEST-901", _passes, "capabilities() can be asked.", Needs(), {}),
    (
        "TEST-902",
        _passes,
        "A container image runs.",
        Needs(capabilities=(Capability.CONTAINER_IMAGE,)),
        {},
    ),
    ("TEST-903", _loses_a_node, "A lost node ends the job.", Needs(faults=(Fault.LOSE_NODE,)), {}),
    ("TEST-904", _fails, "Known broken rule.", Needs(), {"memory-plain": "issue 1"}),
    ("TEST-905", _passes, "Fixed rule.", Needs(), {"memory-plain": "issue 2"}),
    ("TEST-906", _fails, "The answer is yes or no.", Needs(), {"elsewhere": "not on this one"}),
)


def register_test_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """TEST-901 passes; 902 and 903 skip (a capability the adapter declares no; a fault the
    harness lacks, before any backend); on ``memory-plain``, 904 is an expected failure that
    fails, 905 one that passes (strict: it fails); 906 fails (its xfail_on names another
    harness)."""
    for check_id, func, rule, needs, xfail_on in TEST_CHECKS:
        check = Check(
            check_id, rule, "test clause", "test", Tier.SMOKE, func, needs, dict(xfail_on)
        )
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
        TOY,
        "--harness",
        f"{HERE}:label_harness",
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
    assert lines[-1].startswith(("passed: core ", "failed: core "))  # the verdict, last
    assert (
        lines[-2]
        == f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped"
    )
    assert code == (1 if totals["failed"] else 0)
    assert report["run"]["seed"] == 3 and report["run"]["tier"] == "smoke"
    # Each harness with its spec and the identity model it declares.
    assert [
        {k: v for k, v in h.items() if k != "profiles"} for h in report["run"]["harnesses"]
    ] == [
        {"label": "toy", "spec": TOY, "identity": BY_NAME.as_dict()},
        {"label": "toy-label", "spec": f"{HERE}:label_harness", "identity": BY_LABEL.as_dict()},
    ]
    assert [p["name"] for p in report["run"]["harnesses"][0]["profiles"]] == ["core"]
    assert report["run"]["harnesses"][1]["identity"]["lookup"] == "label"
    row = report["results"][0]
    assert set(row) >= {"id", "rule", "clause", "harness", "outcome", "reason", "duration", "seed"}
    assert row["seed"] == 3
    assert set(report["capabilities"]) == {"toy", "toy-label"}
    assert len(report["capabilities"]["toy"]["answers"]) == 14

    assert report["schema_version"] == 3
    assert report["verdict"] == ("failed" if totals["failed"] else "passed")
    assert report["failures"] == [
        {k: r[k] for k in ("harness", "id", "rule", "clause", "adapter", "replay")}
        for r in report["results"]
        if r["outcome"] == "failed"
    ]

    junit = ET.parse(tmp_path / "junit.xml").getroot()
    suites = junit.findall("testsuite")
    assert [s.get("name") for s in suites] == ["toy", "toy-label"]
    for suite in suites:
        assert suite.get("hostname") == socket.gethostname()
        cases = suite.findall("testcase")
        assert len(cases) == len(selected)
        for case in cases:
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            check = REGISTRY[case.get("name", "")]
            assert props == {
                "harness": suite.get("name"),
                "check": check.id,
                "seed": "3",
                "rule": check.rule,
                "clause": check.clause,
            }
            assert case.get("classname") == f"dispatch.conformance.{suite.get('name')}"

    matrix = (tmp_path / "matrix.md").read_text()
    assert "| capability | toy | toy-label |" in matrix
    assert "| ContainerImage | no (declared) [" in matrix
    assert "| note | reason |" in matrix
    assert "does not model ContainerImage" in matrix


def _results(directory: Path) -> list[tuple[str, str, str, str]]:
    report = json.loads((directory / "report.json").read_text())
    return [(r["harness"], r["id"], r["outcome"], r["reason"]) for r in report["results"]]


def test_jobs_runs_harnesses_side_by_side_with_the_same_results(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    harnesses = [
        "--harness",
        "memory-slurm",
        "--harness",
        TOY,
        "--harness",
        f"{HERE}:broken_harness",
    ]
    serial = cli(capsys, "run", *harnesses, "--report-dir", str(tmp_path / "1"))
    side = cli(capsys, "run", *harnesses, "--jobs", "2", "--report-dir", str(tmp_path / "2"))
    assert serial[0] == side[0] == 1  # the broken harness fails CAP-001 either way
    assert _results(tmp_path / "1") == _results(tmp_path / "2")
    assert "on 3 harnesses, 2 at once, seed 0" in side[1].splitlines()[0]
    assert side[1].splitlines()[-1] == serial[1].splitlines()[-1]
    # each harness's lines together, whatever the order the harnesses ended in
    for label in ("memory-slurm", "toy", "broken"):
        lines = side[1].splitlines()
        start = lines.index(label)
        end = next(i for i, line in enumerate(lines) if line.startswith(f"  {label}: "))
        assert all(line.startswith("  ") for line in lines[start + 1 : end])
        assert end - start - 1 >= len(checks("standard"))
    matrix = [(tmp_path / d / "matrix.md").read_text() for d in ("1", "2")]
    assert matrix[0] == matrix[1]


def test_shards_deal_a_harness_s_checks_over_instances_with_the_same_results(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each check's result does not depend on the instance that ran it: dealt over 3
    instances (and 2 processes at once), the reports are the serial run's, each harness
    printed once, its checks in the run's order."""
    harnesses = ["--harness", "memory-slurm", "--harness", f"{HERE}:broken_harness"]
    serial = cli(capsys, "run", *harnesses, "--report-dir", str(tmp_path / "1"))
    dealt = cli(
        capsys, "run", *harnesses, "--shards", "3", "--jobs", "2",
        "--report-dir", str(tmp_path / "2"),
    )  # fmt: skip
    assert serial[0] == dealt[0] == 1
    assert _results(tmp_path / "1") == _results(tmp_path / "2")
    assert "each dealt over 3 instances, 2 at once" in dealt[1].splitlines()[0]
    lines = dealt[1].splitlines()
    assert lines.count("memory-slurm") == 1 and lines.count("broken") == 1
    assert dealt[1].splitlines()[-1] == serial[1].splitlines()[-1]
    matrix = [(tmp_path / d / "matrix.md").read_text() for d in ("1", "2")]
    assert matrix[0] == matrix[1]


def test_a_shard_that_dies_makes_its_whole_harness_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(
        capsys, "run", "--harness", TOY, "--harness", f"{HERE}:dying_harness",
        "--shards", "2", "--check", "CAP-00", "--report-dir", str(tmp_path),
    )  # fmt: skip
    assert code == 3
    assert {(h, o) for h, _, o, _ in _results(tmp_path)} == {("toy", "passed"), ("dying", "error")}
    assert "the process running harness dying ended early" in out


def test_a_worker_leaves_no_scratch_of_its_harness_behind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker ends in os._exit (no atexit hooks): the harness's scratch directories, which
    weakref finalizers remove, must be gone all the same."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("DISPATCH_SIM_SCRATCH", str(scratch))  # not /dev/shm: count them here
    code, _, err = cli(
        capsys,
        "run",
        "--harness",
        "slurm-sim",
        "--harness",
        TOY,
        "--jobs",
        "2",
        "--check",
        "IDENT-00",
        "--report-dir",
        str(tmp_path / "reports"),
    )
    assert (code, err) == (0, "")
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_a_worker_that_dies_is_its_harness_s_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli(
        capsys,
        "run",
        "--harness",
        TOY,
        "--harness",
        f"{HERE}:dying_harness",
        "--jobs",
        "2",
        "--check",
        "CAP-00",
        "--report-dir",
        str(tmp_path),
    )
    assert code == 3
    outcomes = {(h, o) for h, _, o, _ in _results(tmp_path)}
    assert outcomes == {("toy", "passed"), ("dying", "error")}
    assert "the process running harness dying ended early" in out
    assert "Traceback" not in out + err


def test_a_registered_harness_runs_by_its_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The built-in memory harness, by its entry point (it lives beside its adapter)."""
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
    assert "  passed   CAP-001" in out
    report = json.loads((tmp_path / "report.json").read_text())
    [harness] = report["run"]["harnesses"]
    assert harness["label"] == "memory-slurm"
    assert harness["identity"]["lookup"] == "name"


def test_run_passes_with_exit_status_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = cli(
        capsys,
        "run",
        "--harness",
        TOY,
        "--check",
        "CAP-001",
        "--report-dir",
        str(tmp_path),
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[-2] == "1 passed, 0 failed, 0 skipped"
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
    assert out.splitlines()[-2] == "0 passed, 1 failed, 0 skipped"

    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["schema_version"], report["verdict"]) == (3, "failed")
    [row] = report["results"]
    assert (row["harness"], row["outcome"]) == ("broken", "failed")
    assert "OutputRetained" in row["reason"]
    # The parts of the message, each a field of its own.
    replay = f"dispatch-conformance run --harness {spec} --check CAP-001 --seed 0"
    rule = REGISTRY["CAP-001"].rule
    assert (row["rule"], row["adapter"], row["replay"]) == (
        rule,
        "answered no Support for OutputRetained",
        replay,
    )
    assert report["failures"] == [
        {
            "harness": "broken",
            "id": "CAP-001",
            "rule": rule,
            "clause": REGISTRY["CAP-001"].clause,
            "adapter": "answered no Support for OutputRetained",
            "replay": replay,
        }
    ]
    case = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase")
    assert case is not None and case.get("classname") == "dispatch.conformance.broken"
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "[CAP-001] adapter: answered no Support for OutputRetained"
    assert (failure.text or "").splitlines() == [
        f"[CAP-001] rule: {rule}",
        f"  clause: {REGISTRY['CAP-001'].clause}",
        "  adapter: answered no Support for OutputRetained",
        f"  replay: {replay}",
    ]


def test_skips_carry_their_reasons_and_xfail_on_is_strict(
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
    assert outcomes["TEST-903"] == (
        "skipped",
        "harness offers no lose_node: implement conformance.powers.LosesNodes to offer it",
    )
    assert outcomes["TEST-904"] == ("skipped", "expected failure: issue 1")
    # Strict: the expected failure that passed fails the run.
    assert outcomes["TEST-905"][0] == "failed"
    assert "passed, but it is a strict expected failure (issue 2)" in outcomes["TEST-905"][1]
    # Per harness: an xfail_on that names another harness changes nothing here.
    assert outcomes["TEST-906"][0] == "failed"
    assert "adapter: answered maybe" in outcomes["TEST-906"][1]
    for check_id in ("TEST-902", "TEST-903", "TEST-904"):
        assert f"skipped: {outcomes[check_id][1]}" in out
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert {s.get("message") for s in junit.iter("skipped")} == {
        reason for outcome, reason in outcomes.values() if outcome == "skipped"
    }
    assert out.splitlines()[-2] == "1 passed, 2 failed, 3 skipped"


def test_a_lacking_need_skips_before_any_backend_with_one_reason_everywhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_test_checks(monkeypatch)
    check = REGISTRY["TEST-903"]
    harness = ToyHarness()
    result = Loaded(TOY, "toy", harness).run(check, 0)
    assert (result.outcome.value, result.reason) == (
        "skipped",
        "harness offers no lose_node: implement conformance.powers.LosesNodes to offer it",
    )
    assert (harness.made, harness.calls) == (0, [])  # no backend, no begin/end
    ran = Loaded(TOY, "toy", harness).run(REGISTRY["TEST-901"], 0)
    assert ran.outcome.value == "passed"
    assert (harness.made, harness.calls) == (1, ["begin TEST-901", "end TEST-901"])

    # A harness's reason on two lines is one line in the progress, JUnit and report.json.
    code, out, _ = cli(
        capsys,
        "run",
        "--harness",
        f"{HERE}:wordy_harness",
        "--check",
        "TEST-903",
        "--report-dir",
        str(tmp_path),
    )
    said = (
        "harness offers no lose_node (no node here to lose (a toy scheduler)): implement "
        "conformance.powers.LosesNodes to offer it"
    )
    assert code == 0
    assert f"skipped: {said}" in [line.strip() for line in out.splitlines()]
    [row] = json.loads((tmp_path / "report.json").read_text())["results"]
    assert (row["outcome"], row["reason"]) == ("skipped", said)
    [skipped] = ET.parse(tmp_path / "junit.xml").getroot().iter("skipped")
    assert skipped.get("message") == said


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no-such-harness", "no harness named 'no-such-harness' (known: "),
        ("no_such_module_xyz:factory", "cannot import 'no_such_module_xyz'"),
        (f"{HERE}:missing_factory", "has no 'missing_factory'"),
        (f"{HERE}:exploding_harness", "failed: RuntimeError: no cluster here second line"),
        (f"{HERE}:not_a_harness", "gave int, not a conformance.Harness"),
        (
            f"{HERE}:no_identity_harness",
            f"harness '{HERE}:no_identity_harness' declares no identity model: set identity = "
            "IdentityModel(lookup=..., reuses_ids=..., requeue_moves_submit=..., "
            "history_outlives_live=...) on it",
        ),
        (
            f"{HERE}:misspelt_harness",
            f"harness '{HERE}:misspelt_harness' lists 'lose_comments' as impossible, which no "
            "check can need (known: let_run, finish,",
        ),
        (
            f"{HERE}:old_style_harness",
            f"harness '{HERE}:old_style_harness' declares offers or faults(), which the kit no "
            "longer reads: offer each power by implementing its protocol of conformance.powers",
        ),
    ],
)
def test_a_bad_harness_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: str, says: str
) -> None:
    for argv in (
        ["run", "--harness", TOY, "--harness", spec, "--report-dir", str(tmp_path)],
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
        ["run", "--harness", TOY, "--tier", "huge"],
        ["run", "--harness", TOY, "--seed", "x"],
        ["run", "--harness", TOY, "--jobs", "0"],
        ["run", "--harness", TOY, "--jobs", "two"],
        ["list", "--json", "--markdown"],
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
        TOY,
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
        (["run"], "--jobs N run up to N harnesses at once, each in a process of its own"),
        (["list"], "List the registered checks"),
        (["list"], "--json print a JSON array with one object per check: id, tier, suite, rule"),
        (["list"], "needs (capabilities, interfaces, faults, probes, identity"),
        (["list"], "xfail_on (harness name to reason)"),
        (["list"], "strict expected failure on"),
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


def test_list_shows_needs_and_strict_expected_failures(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    register_test_checks(monkeypatch)
    code, out, _ = cli(capsys, "list", "--check", "TEST-")
    assert code == 0
    lines = [line.strip() for line in out.splitlines()]
    after = {
        line.split()[0]: lines[i + 1] for i, line in enumerate(lines) if line.startswith("TEST-")
    }
    assert after["TEST-902"] == "needs: capabilities: ContainerImage"
    assert after["TEST-903"] == "needs: faults: lose_node"
    assert after["TEST-904"] == "strict expected failure on memory-plain: issue 1"
    assert after["TEST-906"] == "strict expected failure on elsewhere: not on this one"
    assert after["TEST-901"].startswith("TEST-902 ")  # nothing declared, nothing said


def test_list_json_prints_one_object_per_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = cli(capsys, "list", "--json")
    assert (code, err) == (0, "")
    listed = json.loads(out)
    assert [row["id"] for row in listed] == [c.id for c in checks("full")]
    assert listed == [json.loads(json.dumps(c.as_dict())) for c in checks("full")]
    for row in listed:
        assert set(row) == {
            "id",
            "tier",
            "suite",
            "rule",
            "clause",
            "needs",
            "xfail_on",
            "verifies",
        }
        assert set(row["verifies"]) <= {c.value for c in Capability}
        assert set(row["needs"]) >= {"capabilities", "interfaces", "faults", "probes"}
        assert all(isinstance(v, list) for v in row["needs"].values())
    assert {row["tier"] for row in listed} == {"smoke", "standard", "full"}
    assert any(row["needs"]["faults"] for row in listed)
    assert all(set(row["needs"]["faults"]) <= set(fault_needs()) for row in listed)
    assert all(set(row["needs"]["probes"]) <= {p.value for p in Probe} for row in listed)

    register_test_checks(monkeypatch)
    code, out, _ = cli(capsys, "list", "--json", "--tier", "smoke", "--check", "TEST-90")
    rows = {row["id"]: row for row in json.loads(out)}
    assert rows["TEST-903"]["needs"] == {
        "capabilities": [],
        "interfaces": [],
        "faults": ["lose_node"],
        "probes": [],
        "identity": [],
    }
    assert rows["TEST-902"]["needs"]["capabilities"] == ["ContainerImage"]
    assert rows["TEST-904"]["xfail_on"] == {"memory-plain": "issue 1"}
    assert rows["TEST-901"]["xfail_on"] == {}
    assert rows["TEST-901"]["suite"] == "test" and rows["TEST-901"]["tier"] == "smoke"


NEEDS_START = "<!-- needs table: dispatch-conformance list --markdown -->"
NEEDS_END = "<!-- end of the needs table -->"


def test_the_needs_table_in_the_harness_doc_is_what_list_json_gives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = cli(capsys, "list", "--json")
    assert code == 0
    table = needs_markdown(json.loads(out))
    code, markdown, _ = cli(capsys, "list", "--markdown")
    assert (code, markdown) == (0, table)
    doc = (ROOT / "docs" / "writing-a-harness.md").read_text()
    assert doc.count(NEEDS_START) == 1 and doc.count(NEEDS_END) == 1
    written = doc.split(NEEDS_START)[1].split(NEEDS_END)[0].strip()
    assert written == table.strip(), (
        "docs/writing-a-harness.md's needs table is stale: replace it with the output of "
        "`dispatch-conformance list --markdown`"
    )
    assert table.count("\n") == len(checks("full")) + 2  # a header, a rule, a row per check


EXAMPLE = "<!-- the harness example: tests/conformance/test_cli.py runs this block -->"


def doc_example() -> str:
    """The harness of docs/writing-a-harness.md, as written there."""
    doc = (ROOT / "docs" / "writing-a-harness.md").read_text()
    assert doc.count(EXAMPLE) == 1
    block = doc.split(EXAMPLE, 1)[1].lstrip("\n")
    assert block.startswith("```python\n")
    return block.removeprefix("```python\n").split("\n```\n", 1)[0] + "\n"


def test_the_harness_doc_example_type_checks_and_runs_every_applicable_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The doc's harness for a label-based scheduler: strict mypy, run from outside this
    repository with no config, no ``type: ignore``, and on the full tier nothing fails and nothing errs; its skips are only what a label
    scheduler cannot have (id reuse, history, a comma in a label) and what the toy declares
    no."""
    from mypy import api

    code_text = doc_example()
    assert "type: ignore" not in code_text and "cast(" not in code_text
    module = tmp_path / "doc_toy_harness.py"
    module.write_text(code_text)
    # As an author in another repository would: from elsewhere, with no config of ours, no
    # MYPYPATH, no plugin: the installed packages' py.typed is all mypy has.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MYPYPATH", raising=False)
    said, errors, status = api.run(["--strict", "--no-incremental", str(module)])
    assert status == 0, said + errors

    monkeypatch.syspath_prepend(str(tmp_path))
    reports = tmp_path / "reports"
    code, out, err = cli(
        capsys,
        "run",
        "--harness",
        "doc_toy_harness:make",
        "--tier",
        "full",
        "--report-dir",
        str(reports),
    )
    assert (code, err) == (0, ""), out
    report = json.loads((reports / "report.json").read_text())
    assert report["run"]["harnesses"][0]["identity"] == BY_LABEL.as_dict()
    rows = report["results"]
    assert {r["outcome"] for r in rows} <= {"passed", "skipped"}
    skipped = {r["id"]: r["reason"] for r in rows if r["outcome"] == "skipped"}
    left_out = (  # powers the toy does not implement (a guide's example, not a complete one)
        "signals", "preflight", "vanish_before_read_back", "ignore_next_write", "race_next_write",
        "fail_between_steps", "fail_every_try", "recreate", "take_id_ahead", "disable_history", "lag_history",
        "preempt", "oom_kill", "evict", "ignore_next_stop", "near_hold", "hold_edge", "stall_teardown",
        "commands", "images", "self_restarts", "runtimes", "rank_output", "other_targets", "beyond_capacity", "take_quota",
        "unpullable_image",
    )  # fmt: skip
    allowed = (
        "the harness's target has no native id reuse",
        "the harness's target has no history beyond the live view",
        # forms of powers it implements that a label scheduler cannot have (declines)
        "harness cannot inject look_alike:comma_list (a label value cannot hold a comma)",
        "harness cannot inject look_alike:misnamed (the toy's identity is in annotations",
        "harness cannot inject lose_next_reply:",
        "harness cannot inject requeue_underneath(held)",
        *(f"harness offers no {need}" for need in left_out),
        "adapter declares ",
        "the adapter is not a NativePolicyCompiler",
        "adapter implements no NativePolicyCompiler",
    )
    unexplained = {i: r for i, r in skipped.items() if not r.startswith(allowed)}
    assert not unexplained, sorted(unexplained.items())
    ran = {r["id"] for r in rows if r["outcome"] == "passed"}
    assert {"IDENT-002", "IDENT-004", "IDENT-017", "IDENT-018", "HOLD-001"} <= ran


def test_the_kit_imports_no_adapter_and_no_simulator() -> None:
    """In a fresh process: the CLI, the plugin and every other module of the kit (its suites,
    its steps, ...), and a listing of the checks, load nothing of adapters, simulators or tools
    (harnesses load by entry point only)."""
    program = """
import contextlib, importlib, io, json, pkgutil, sys
import conformance, conformance.cli, conformance.plugin
for module in pkgutil.walk_packages(conformance.__path__, "conformance."):
    try:
        importlib.import_module(module.name)
    except ImportError as error:  # an optional extra that is not installed (docker, ...)
        if (error.name or "").partition(".")[0] in ("conformance", "dispatch_core"):
            raise
with contextlib.redirect_stdout(io.StringIO()):
    conformance.cli.main(["list", "--json"])
    conformance.cli.main(["harnesses"])
roots = ("adapters", "simulators", "tools")
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] in roots)))
"""
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_harnesses_lists_the_registered_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "harnesses")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert {"memory-slurm", "memory-kubeflow", "slurm-sim"} <= set(names)
    targets = dict(line.split() for line in out.splitlines())
    # The harnesses live beside their adapters, not in the kit.
    assert all(target.startswith("adapters.") for target in targets.values()), targets


def test_matrix_prints_and_writes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = cli(
        capsys,
        "matrix",
        "--harness",
        TOY,
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
    assert data["capabilities"]["toy"]["answers"]["Hold"]["value"] == "yes"
    assert data["capabilities"]["toy"]["answers"]["Hold"]["source"] == "declared"


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
    """The Slurm adapter's probes, through its own ``preflight(options)``: the CLI knows no
    adapter."""
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
    assert lines[0] == (
        "preflight of sim-preflight (SlurmBackend): probing the cluster through its "
        f"preflight(), each probe bounded by 180 s, probe files in {tmp_path}"
    )
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


def test_preflight_hands_any_preflight_backend_the_options_and_prints_its_progress(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    PROBED.clear()
    code, out, err = cli(
        capsys,
        "preflight",
        "--harness",
        f"{HERE}:probing_harness",
        "--report-dir",
        str(tmp_path),
        "--probe-dir",
        "/scratch/site",
        "--bound",
        "42.5",
    )
    assert (code, err) == (0, "")
    [options] = PROBED
    assert options is not None
    assert (options.probe_dir, options.bound) == ("/scratch/site", 42.5)
    lines = out.splitlines()
    assert lines[:3] == [
        "preflight of probing (Probing): probing the cluster through its preflight(), each "
        "probe bounded by 42.5 s, probe files in /scratch/site",
        "  reading the toy scheduler's settings",
        "  probe job writes /scratch/site/probe.out",
    ]
    line = next(line for line in lines if line.startswith("OutputRead "))
    assert line.split()[:3] == ["OutputRead", "yes", "probed"]
    hold = next(line for line in lines if line.startswith("Hold "))
    assert hold.split()[:3] == ["Hold", "yes", "declared"]  # the adapter's own answers fill in
    data = json.loads((tmp_path / "preflight.json").read_text())
    assert data["probed"] is True and data["backend"] == "Probing"
    assert data["progress"] == [
        "reading the toy scheduler's settings",
        "probe job writes /scratch/site/probe.out",
    ]
    assert len(data["capabilities"]) == 14


def test_preflight_of_a_backend_without_probes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(capsys, "preflight", "--harness", TOY, "--report-dir", str(tmp_path))
    assert code == 0
    assert "preflight of toy: MemoryBackend has no preflight probes" in out
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
        "dispatch-conformance: error: preflight of toy "
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
        "dispatch-conformance: error: preflight of toy: "
        "no cluster to probe: no Slurm on this machine (sbatch is not on PATH)"
    )


def test_needs_names_each_lacking_need_its_power_and_the_checks_it_unlocks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``needs``: what the harness offers (found by type), what its target cannot have, and
    for each need it lacks the power to implement and the checks it would unlock."""
    code, out, err = cli(capsys, "needs", "--harness", "memory-kubeflow", "--json")
    assert (code, err) == (0, "")
    [document] = json.loads(out)
    assert "let_run" in document["offers"] and "recreate" in document["offers"]
    assert "reuse_id_next" in document["impossible"]
    lacks = {entry["need"]: entry for entry in document["lacks"]}
    assert lacks["signals"]["power"] == "ObservesSignals"
    assert [one["id"] for one in lacks["signals"]["unlocks"]] == ["CAP-018"]
    assert lacks["commands"]["power"] == "RunsCommands"
    assert not set(lacks) & set(document["impossible"])  # a need by nature is no to-do
    code, out, err = cli(capsys, "needs", "--harness", "memory-kubeflow")
    assert (code, err) == (0, "")
    assert "  lacks signals (implement ObservesSignals): 1 check" in out.splitlines()
