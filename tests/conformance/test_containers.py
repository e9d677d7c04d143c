"""The optional ``containers`` provider keeps its obligations without a Docker engine: the
image it would build (packages, no recommends, the bring-up script, the command with the
knobs), the exact argv DockerExecTransport hands the docker CLI, the container's lifecycle
against stand-ins for docker and testcontainers, and the ``slurm-container`` harness, which
skips every check with the reason when the extra or the engine is missing.

Nothing here needs an engine or the extra, and nothing sleeps for real: waits run on virtual
clocks, docker and testcontainers are stand-in modules put in ``sys.modules``."""

from __future__ import annotations

import importlib.resources
import json
import os
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.slurm import SlurmBackend, Transport
from adapters.slurm.testing import containers
from adapters.slurm.testing.containers import (
    BRING_UP_FILES,
    INSTALL_HINT,
    PACKAGES,
    READY_LINE,
    ContainerNotReady,
    DockerExecTransport,
    Knobs,
    MissingExtra,
    ScriptMissing,
    SlurmContainer,
    SlurmContainerHarness,
    bring_up_files,
    bring_up_script,
    container_command,
    dockerfile,
    engine_problem,
    wait_until_up,
)
from adapters.slurm.testing.local import SlurmLocalHarness
from conformance import Outcome, checks, run_check
from conformance.cli import main
from conformance.harness import CannotInject
from conformance.harnesses import load_harness
from dispatch_core import VirtualClock

SCRIPT = b"#!/bin/sh\n# a stand-in for ci/slurm-up.sh\nexit 0\n"
LIB = b"# a stand-in for ci/slurm-lab-lib.sh\n"
FILES = {"slurm-up.sh": SCRIPT, "slurm-lab-lib.sh": LIB}
REPO = Path(__file__).resolve().parents[2]
PREFIX = "harness cannot inject a Slurm in containers: "
CONFIG = """\
Configuration data as of 2026-01-01T00:00:00
AccountingStorageType   = accounting_storage/slurmdbd
AccountingStoreFlags    = job_comment
ClusterName             = lab
FirstJobId              = 1
JobRequeue              = 1
MaxJobId                = 100
MinJobAge               = 30 sec
"""

# -- stand-ins for docker and testcontainers -------------------------------------------------------


class ImageNotFound(Exception):
    pass


class BuildError(Exception):
    def __init__(self, msg: str, build_log: list[dict[str, str]]) -> None:
        super().__init__(msg)
        self.msg = msg
        self.build_log = build_log


class Engine:
    """What the stand-in engine was asked, and how it answers."""

    def __init__(self) -> None:
        self.ping_error: Exception | None = None
        self.images: set[str] = set()
        self.builds: list[tuple[str, dict[str, bytes], dict[str, Any]]] = []
        self.build_error: BuildError | None = None
        self.containers: list[FakeContainer] = []
        self.logs = f"munge up\nslurmctld up\nnode idle\n{READY_LINE}\n"
        self.status = "running"
        self.clients_closed = 0


class FakeImages:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, tag: str) -> object:
        if tag not in self.engine.images:
            raise ImageNotFound(tag)
        return object()

    def build(self, *, path: str, tag: str, **options: Any) -> tuple[object, Iterator[Any]]:
        files = {p.name: p.read_bytes() for p in Path(path).iterdir()}
        self.engine.builds.append((tag, files, options))
        if self.engine.build_error is not None:
            raise self.engine.build_error
        self.engine.images.add(tag)
        return object(), iter(())


class FakeClient:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.images = FakeImages(engine)

    def ping(self) -> bool:
        if self.engine.ping_error is not None:
            raise self.engine.ping_error
        return True

    def close(self) -> None:
        self.engine.clients_closed += 1


class FakeWrapped:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.status = "created"

    def logs(self, stdout: bool, stderr: bool) -> bytes:
        assert stdout and stderr
        return self.engine.logs.encode()

    def reload(self) -> None:
        self.status = self.engine.status

    def exec_run(self, argv: list[str], demux: bool) -> tuple[int, bytes]:
        return 0, b"slurmctld: fatal: the reason it did not come up\n"


class FakeContainer:
    """testcontainers' DockerContainer, as much of it as the provider uses."""

    def __init__(self, engine: Engine, image: str) -> None:
        self.engine = engine
        self.image = image
        self.name: str | None = None
        self.kwargs: dict[str, Any] = {}
        self.wrapped: FakeWrapped | None = None
        self.removed = False
        engine.containers.append(self)

    def with_name(self, name: str) -> FakeContainer:
        self.name = name
        return self

    def with_kwargs(self, **kwargs: Any) -> FakeContainer:
        self.kwargs = kwargs
        return self

    def start(self) -> FakeContainer:
        self.wrapped = FakeWrapped(self.engine)
        return self

    def get_wrapped_container(self) -> FakeWrapped:
        assert self.wrapped is not None, "not started"
        return self.wrapped

    def stop(self) -> None:
        self.removed = True


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Engine:
    """docker and testcontainers replaced by stand-ins on one stand-in engine, a docker CLI
    on PATH that is never run, the bring-up script and its library present, and CI unset."""
    state = Engine()
    docker = ModuleType("docker")
    docker.from_env = lambda: FakeClient(state)  # type: ignore[attr-defined]
    errors = ModuleType("docker.errors")
    errors.ImageNotFound = ImageNotFound  # type: ignore[attr-defined]
    errors.BuildError = BuildError  # type: ignore[attr-defined]
    docker.errors = errors  # type: ignore[attr-defined]
    testcontainers = ModuleType("testcontainers.core.container")
    testcontainers.DockerContainer = lambda image: FakeContainer(state, image)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "docker", docker)
    monkeypatch.setitem(sys.modules, "docker.errors", errors)
    monkeypatch.setitem(sys.modules, "testcontainers.core.container", testcontainers)
    cli = tmp_path / "bin" / "docker"
    cli.parent.mkdir()
    cli.write_text("#!/bin/sh\nexit 99\n")
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{cli.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(containers, "bring_up_files", lambda: dict(FILES))
    monkeypatch.delenv("CI", raising=False)
    return state


# -- the image -----------------------------------------------------------------------------------


def bring_up_words(knobs: Knobs) -> list[str]:
    """The bring-up command of the container's command, split as its shell splits it."""
    program, dash_c, script = container_command(knobs)
    assert (program, dash_c) == ("/bin/sh", "-c")
    steps = [step.strip() for step in script.split(";")]
    assert steps[0] == "set -e"
    assert steps[2:] == [f"echo {shlex.quote(READY_LINE)}", "exec sleep infinity"]
    return shlex.split(steps[1])


def test_the_dockerfile_installs_the_packages_without_recommends_and_copies_the_scripts() -> None:
    text = dockerfile(Knobs())
    lines = text.splitlines()
    assert "FROM debian:12" in lines
    [install] = [line for line in lines if "apt-get install" in line]
    assert install.split("apt-get install", 1)[1].split() == [
        "-y",
        "--no-install-recommends",
        "slurm-wlm",
        "slurmdbd",
        "slurm-client",
        "munge",
        "mariadb-server",
        "\\",
    ]
    assert set(PACKAGES) == {"slurm-wlm", "slurmdbd", "slurm-client", "munge", "mariadb-server"}
    # the script sources the library from its own directory: one COPY puts both there
    assert "COPY slurm-up.sh slurm-lab-lib.sh /usr/local/sbin/" in lines
    assert [line for line in lines if line.startswith("COPY ")] == [
        "COPY slurm-up.sh slurm-lab-lib.sh /usr/local/sbin/"
    ]
    assert "RUN chmod 0755 /usr/local/sbin/slurm-up.sh" in lines
    assert lines.index("COPY slurm-up.sh slurm-lab-lib.sh /usr/local/sbin/") > lines.index(
        "FROM debian:12"
    )


def test_the_dockerfile_command_runs_the_script_with_the_knobs_then_stays_up() -> None:
    knobs = Knobs(job_comment=False, max_job_id=50, min_job_age=10, cred_expire=70)
    [cmd] = [line for line in dockerfile(knobs).splitlines() if line.startswith("CMD ")]
    assert json.loads(cmd.removeprefix("CMD ")) == container_command(knobs)
    assert bring_up_words(knobs) == [
        "/usr/local/sbin/slurm-up.sh",
        "--no-install",
        "--no-job-comment",
        "--max-job-id",
        "50",
        "--min-job-age",
        "10",
        "--cred-expire",
        "70",
    ]


def test_knobs_left_unset_are_the_scripts_defaults() -> None:
    assert bring_up_words(Knobs()) == [
        "/usr/local/sbin/slurm-up.sh",
        "--no-install",
        "--job-comment",
    ]


@given(
    job_comment=st.booleans(),
    max_job_id=st.none() | st.integers(1, 10**9),
    min_job_age=st.none() | st.integers(1, 10**6),
    cred_expire=st.none() | st.integers(1, 10**6),
)
def test_every_knob_reaches_the_script(
    job_comment: bool, max_job_id: int | None, min_job_age: int | None, cred_expire: int | None
) -> None:
    words = bring_up_words(Knobs(job_comment, max_job_id, min_job_age, cred_expire))
    assert words[:2] == ["/usr/local/sbin/slurm-up.sh", "--no-install"]
    assert ("--job-comment" in words) is job_comment
    assert ("--no-job-comment" in words) is not job_comment
    for flag, value in (
        ("--max-job-id", max_job_id),
        ("--min-job-age", min_job_age),
        ("--cred-expire", cred_expire),
    ):
        if value is None:
            assert flag not in words
        else:
            assert words[words.index(flag) + 1] == str(value)


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "30"])
def test_a_knob_that_is_not_a_positive_whole_number_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="min_job_age must be a positive whole number"):
        Knobs(min_job_age=bad)


def test_the_image_tag_is_a_digest_of_the_dockerfile_the_script_and_its_library() -> None:
    one, other = SlurmContainer(min_job_age=30), SlurmContainer(min_job_age=30)
    tag = one.image_tag(FILES)
    assert tag == other.image_tag(FILES)
    assert tag == one.image_tag(dict(reversed(FILES.items())))  # not the order of the mapping
    assert tag.startswith("dispatch-kit/slurm:")
    assert tag != one.image_tag({**FILES, "slurm-up.sh": SCRIPT + b"# changed\n"})
    assert tag != one.image_tag({**FILES, "slurm-lab-lib.sh": LIB + b"# changed\n"})
    assert tag != one.image_tag({"slurm-up.sh": SCRIPT})
    # the bytes cannot move from one file to the other unseen
    assert tag != one.image_tag({"slurm-up.sh": SCRIPT + LIB[:1], "slurm-lab-lib.sh": LIB[1:]})
    assert tag != SlurmContainer(min_job_age=31).image_tag(FILES)
    assert one.name != other.name


def test_the_bring_up_script_is_read_from_the_package_data(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(importlib.resources, "files", lambda package: tmp_path)
    with pytest.raises(
        ScriptMissing, match=r"adapters/slurm/testing/slurm-up\.sh.*ci/slurm-up\.sh"
    ):
        bring_up_script()
    (tmp_path / "slurm-up.sh").symlink_to(tmp_path / "nowhere.sh")  # a dangling link
    with pytest.raises(ScriptMissing, match="bring-up script is missing"):
        bring_up_script()
    (tmp_path / "nowhere.sh").write_bytes(SCRIPT)
    assert bring_up_script() == SCRIPT
    with pytest.raises(
        ScriptMissing,
        match=r"library is missing: adapters/slurm/testing/slurm-lab-lib\.sh.*ci/slurm-lab-lib\.sh",
    ):
        bring_up_files()
    (tmp_path / "slurm-lab-lib.sh").write_bytes(LIB)
    assert bring_up_files() == FILES
    assert tuple(bring_up_files()) == BRING_UP_FILES


def test_the_package_data_is_the_scripts_of_ci_and_pyproject_ships_it() -> None:
    assert bring_up_files() == {name: (REPO / "ci" / name).read_bytes() for name in BRING_UP_FILES}
    for name in BRING_UP_FILES:
        link = REPO / "adapters" / "slurm" / "testing" / name
        assert link.is_symlink() and os.readlink(link) == f"../../../ci/{name}"
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    shipped = pyproject["tool"]["setuptools"]["package-data"]["adapters.slurm.testing"]
    assert set(BRING_UP_FILES) <= set(shipped)


# -- the transport --------------------------------------------------------------------------------


class Recorder:
    """A runner that records each call and answers as told."""

    def __init__(self, answer: subprocess.CompletedProcess[str] | None = None) -> None:
        self.calls: list[tuple[list[str], str, float | None]] = []
        self.answer = answer

    def __call__(
        self, argv: list[str], stdin: str, timeout: float | None
    ) -> subprocess.CompletedProcess[str]:
        self.calls.append((argv, stdin, timeout))
        if self.answer is not None:
            return self.answer
        return subprocess.CompletedProcess(argv, 0, "out\n", "err\n")


def test_docker_exec_transport_runs_docker_exec_with_the_argv_as_given() -> None:
    runner = Recorder()
    transport = DockerExecTransport("dispatch-slurm-1", runner=runner)
    assert isinstance(transport, Transport)
    done = transport.run(["sbatch", "--parsable"], stdin="#!/bin/sh\ntrue\n", timeout=30.0)
    assert runner.calls == [
        (
            ["docker", "exec", "-i", "dispatch-slurm-1", "sbatch", "--parsable"],
            "#!/bin/sh\ntrue\n",
            30.0,
        )
    ]
    assert (done.args, done.returncode, done.stdout, done.stderr) == (
        ["sbatch", "--parsable"],
        0,
        "out\n",
        "err\n",
    )


def test_docker_exec_transport_with_a_user_a_docker_binary_and_no_stdin() -> None:
    runner = Recorder(subprocess.CompletedProcess([], 3, "", "no\n"))
    transport = DockerExecTransport("c", docker="/opt/bin/docker", user="slurm", runner=runner)
    done = transport.run(["squeue", "-h"])
    assert runner.calls == [
        (["/opt/bin/docker", "exec", "-i", "--user", "slurm", "c", "squeue", "-h"], "", None)
    ]
    assert (done.args, done.returncode, done.stderr) == (["squeue", "-h"], 3, "no\n")


HOSTILE = st.text(min_size=0, max_size=30) | st.sampled_from(
    [
        "",
        " ",
        "a b",
        "'",
        '"',
        "$(reboot)",
        "`id`",
        "; rm -rf /",
        "&&",
        "|",
        "\n",
        "-it",
        "--user=root",
        "*",
    ]
)


@given(
    container=st.sampled_from(["c", "dispatch-slurm-0a1b"]),
    argv=st.lists(HOSTILE, min_size=1, max_size=8),
)
def test_each_argv_element_arrives_as_one_list_element(container: str, argv: list[str]) -> None:
    runner = Recorder()
    DockerExecTransport(container, runner=runner).run(argv, stdin="x")
    [(local, stdin, _)] = runner.calls
    assert local == ["docker", "exec", "-i", container, *argv]
    assert stdin == "x"


def test_the_default_runner_passes_the_argv_to_the_docker_cli_without_a_shell(
    tmp_path: Path,
) -> None:
    docker = tmp_path / "docker"
    docker.write_text('#!/bin/sh\nfor a in "$@"; do printf \'[%s]\' "$a"; done\ncat >&2\nexit 4\n')
    docker.chmod(0o755)
    argv = ["sh", "-c", "echo $HOME; `id`", "a b", "'q'", ""]
    done = DockerExecTransport("c", docker=str(docker)).run(argv, stdin="in put")
    assert done.stdout == "[exec][-i][c][sh][-c][echo $HOME; `id`][a b]['q'][]"
    assert (done.stderr, done.returncode, done.args) == ("in put", 4, argv)


def test_a_timeout_raises_timeout_expired_naming_the_command() -> None:
    def slow(
        argv: list[str], stdin: str, timeout: float | None
    ) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired(argv, timeout or 0.0, output="part")

    transport = DockerExecTransport("c", runner=slow)
    with pytest.raises(subprocess.TimeoutExpired) as expired:
        transport.run(["scontrol", "show", "config"], timeout=5.0)
    assert (expired.value.cmd, expired.value.timeout, expired.value.output) == (
        ["scontrol", "show", "config"],
        5.0,
        "part",
    )


@pytest.mark.parametrize("container", ["", "-it", "--privileged"])
def test_a_container_that_would_read_as_an_option_is_refused(container: str) -> None:
    with pytest.raises(ValueError, match="is not a container name"):
        DockerExecTransport(container)


def test_an_empty_command_is_refused() -> None:
    with pytest.raises(ValueError, match="no command"):
        DockerExecTransport("c", runner=Recorder()).run([])


# -- readiness -----------------------------------------------------------------------------------


def test_the_cluster_is_up_once_the_ready_line_is_logged() -> None:
    clock = VirtualClock()
    logs = iter(["apt\n", "munge\nslurmctld\n", f"munge\nslurmctld\n{READY_LINE}\n"])
    wait_until_up(lambda: next(logs), lambda: "running", bound=60, clock=clock, interval=2)
    assert clock.now() - VirtualClock().now() == 4


def test_a_container_that_ended_is_not_up_and_its_log_is_in_the_error() -> None:
    clock = VirtualClock()
    with pytest.raises(ContainerNotReady) as error:
        wait_until_up(
            lambda: "slurmdbd: fatal: no database\n", lambda: "exited", bound=60, clock=clock
        )
    assert str(error.value).splitlines() == [
        "the Slurm container exited before its cluster was up; the container's log ends:",
        "slurmdbd: fatal: no database",
    ]
    assert clock.now() == VirtualClock().now()


def test_a_cluster_not_up_within_the_bound_times_out_with_the_end_of_the_log() -> None:
    clock = VirtualClock()
    lines = "\n".join(f"line {n}" for n in range(100))
    with pytest.raises(ContainerNotReady) as error:
        wait_until_up(lambda: lines, lambda: "running", bound=30, clock=clock, interval=2)
    first, *rest = str(error.value).splitlines()
    assert first.startswith("the Slurm cluster in the container was not up within 30 s")
    assert rest == [f"line {n}" for n in range(60, 100)]
    assert 30 <= clock.now() - VirtualClock().now() <= 32


# -- the container against stand-ins ---------------------------------------------------------------


def test_a_container_builds_its_image_once_starts_waits_and_is_removed(engine: Engine) -> None:
    with SlurmContainer(min_job_age=10, clock=VirtualClock()) as slurm:
        assert slurm.started
        [(tag, files, options)] = engine.builds
        assert tag == slurm.image_tag(FILES)
        assert files == {"Dockerfile": slurm.dockerfile().encode(), **FILES}
        assert options["rm"] is True
        [container] = engine.containers
        assert (container.image, container.name) == (tag, slurm.name)
        assert container.kwargs == {"hostname": "slurm", "privileged": False}
        assert slurm.start() is slurm and len(engine.containers) == 1
        transport = slurm.transport()
        assert transport.command(["sinfo"]) == ["docker", "exec", "-i", slurm.name, "sinfo"]
    assert container.removed and not slurm.started
    with SlurmContainer(min_job_age=10, clock=VirtualClock()):
        assert len(engine.builds) == 1  # the engine has the image
    assert engine.clients_closed == 2


def test_a_cluster_that_does_not_come_up_is_removed_and_the_error_holds_its_logs(
    engine: Engine,
) -> None:
    engine.logs = "slurmctld: error: cannot bind\n"
    engine.status = "exited"
    slurm = SlurmContainer(clock=VirtualClock())
    with pytest.raises(ContainerNotReady) as error:
        slurm.start()
    text = str(error.value)
    assert text.startswith("the Slurm container exited before its cluster was up")
    assert "slurmctld: error: cannot bind" in text
    assert "/var/log/slurm-lab/* in the container:\nslurmctld: fatal: the reason" in text
    assert engine.containers[0].removed and not slurm.started


def test_an_image_that_does_not_build_says_why(engine: Engine) -> None:
    engine.build_error = BuildError(
        "The command '/bin/sh -c apt-get update' returned a non-zero code: 100",
        [{"stream": "Step 3/7 : RUN apt-get update\n"}, {"error": "E: no network\n"}],
    )
    with pytest.raises(ContainerNotReady) as error:
        SlurmContainer(clock=VirtualClock()).start()
    first, *rest = str(error.value).splitlines()
    assert first.startswith("the Slurm image did not build (The command '/bin/sh -c apt-get")
    assert rest[-2:] == ["Step 3/7 : RUN apt-get update", "E: no network"]
    assert engine.containers == []


def test_without_the_extra_starting_a_container_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(MissingExtra) as missing:
        SlurmContainer().start()
    assert "the 'containers' extra is not installed" in str(missing.value)
    assert str(missing.value).endswith(INSTALL_HINT)
    assert INSTALL_HINT == "pip install 'dispatch-kit[containers]'"
    assert isinstance(missing.value, ImportError) and missing.value.name == "docker"


def test_importing_the_provider_imports_neither_docker_nor_testcontainers() -> None:
    code = (
        "import sys, adapters.slurm.testing.containers as c; c.slurm_container(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('docker', 'testcontainers')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


# -- the harness -------------------------------------------------------------------------------------


def test_engine_problem_is_none_when_an_engine_answers(engine: Engine) -> None:
    assert engine_problem() is None


def test_engine_problem_without_the_docker_cli(engine: Engine, tmp_path: Path) -> None:
    assert engine_problem(str(tmp_path / "no-docker")) == (
        f"no {tmp_path / 'no-docker'} command on PATH (the transport runs docker exec)"
    )


def test_without_an_engine_every_check_is_skipped_with_the_reason(engine: Engine) -> None:
    engine.ping_error = ConnectionError("Error while fetching server API version\nmore")
    harness = SlurmContainerHarness()
    assert isinstance(harness, SlurmLocalHarness)
    reason = f"{PREFIX}no Docker engine answers (ConnectionError: Error while fetching server API version)"
    with pytest.raises(CannotInject) as cannot:
        harness.new_backend()
    assert str(cannot.value) == reason
    for check in checks()[:3]:
        result = run_check(check, harness)
        assert (result.outcome, result.reason) == (Outcome.SKIPPED, reason)
    assert engine.containers == []
    harness.close()


@pytest.mark.parametrize("missing", ["docker", "testcontainers.core.container"])
def test_without_the_extra_every_check_is_skipped_with_the_reason(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)
    harness = SlurmContainerHarness()
    for check in checks()[:3]:
        result = run_check(check, harness)
        assert result.outcome is Outcome.SKIPPED
        assert result.reason.startswith(f"{PREFIX}the 'containers' extra is not installed (")
        assert result.reason.endswith(f"): {INSTALL_HINT}")


def test_with_the_real_docker_package_and_no_engine_the_harness_skips(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("docker")
    pytest.importorskip("testcontainers.core.container")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    monkeypatch.delenv("CI", raising=False)
    docker = tmp_path / "docker"
    docker.write_text("#!/bin/sh\nexit 99\n")
    docker.chmod(0o755)
    harness = SlurmContainerHarness(docker=str(docker))
    with pytest.raises(CannotInject, match=f"^{PREFIX}no Docker engine answers \\("):
        harness.new_backend()
    assert not harness.container.started


def test_under_ci_a_missing_engine_still_skips(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI starts a native Slurm, not containers: only slurm-local is required there."""
    monkeypatch.setenv("CI", "true")
    engine.ping_error = ConnectionError("refused")
    harness = SlurmContainerHarness()
    with pytest.raises(CannotInject, match=r"no Docker engine answers \(ConnectionError"):
        harness.new_backend()
    result = run_check(checks()[0], harness)
    assert result.outcome is Outcome.SKIPPED
    assert "no Docker engine answers (ConnectionError: refused)" in result.reason


def test_a_cluster_that_does_not_come_up_skips_with_the_first_line_of_why(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    engine.logs = "slurmctld: error: cannot bind\n"
    engine.status = "exited"
    harness = SlurmContainerHarness(SlurmContainer(clock=VirtualClock()))
    with pytest.raises(CannotInject) as cannot:
        harness.new_backend()
    assert str(cannot.value) == (
        f"{PREFIX}the container did not start (the Slurm container exited before its cluster "
        "was up; the container's log ends:)"
    )
    assert "slurmctld: error: cannot bind" in caplog.text  # the whole story, logged once
    assert engine.containers[0].removed
    with pytest.raises(CannotInject):
        harness.new_backend()
    assert len(engine.containers) == 1  # not retried for every check


def scontrol(
    argv: list[str], stdin: str, timeout: float | None
) -> subprocess.CompletedProcess[str]:
    """A runner standing in for docker exec into a cluster that answers scontrol show config."""
    if argv[4:5] == ["env"] and argv[-3:] == ["scontrol", "show", "config"]:
        return subprocess.CompletedProcess(argv, 0, CONFIG, "")
    return subprocess.CompletedProcess(argv, 0, "", "")


def test_the_harness_starts_its_container_on_first_need_and_close_removes_it(
    engine: Engine,
) -> None:
    harness = SlurmContainerHarness(SlurmContainer(clock=VirtualClock()))
    assert engine.containers == [] and not harness.container.started
    assert isinstance(harness.transport, DockerExecTransport)
    assert harness.transport.container == harness.container.name
    harness.transport.runner = scontrol
    backend = harness.new_backend()
    assert isinstance(backend, SlurmBackend)
    assert (backend.cluster, backend.job_comment) == ("lab", True)
    assert harness.min_job_age == 30
    harness.new_backend()
    [container] = engine.containers
    assert container.name == harness.container.name and not container.removed
    harness.close()
    assert container.removed and not harness.container.started


def test_the_default_container_has_a_short_id_range_and_min_job_age() -> None:
    harness = load_harness("slurm-container")
    assert isinstance(harness, SlurmContainerHarness)
    assert harness.name == "slurm-container"
    assert harness.container.knobs == Knobs(
        job_comment=True, max_job_id=20, min_job_age=2, cred_expire=5
    )
    assert not harness.container.started


def test_the_harness_list_names_slurm_container(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["harnesses"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()}
    assert rows["slurm-container"] == "adapters.slurm.testing.containers:slurm_container"


def test_a_run_without_an_engine_skips_and_exits_0(
    engine: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    engine.ping_error = ConnectionError("no engine")
    code = main(
        ["run", "--harness", "slurm-container", "--tier", "smoke", "--report-dir", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0
    skipped = [line.strip() for line in out.splitlines() if line.strip().startswith("skipped:")]
    assert len(skipped) == len(checks("smoke"))
    assert set(skipped) == {
        f"skipped: {PREFIX}no Docker engine answers (ConnectionError: no engine)"
    }
