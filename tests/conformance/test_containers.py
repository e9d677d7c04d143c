"""The optional ``containers`` provider keeps its obligations without a Docker engine: the
knobs and the layout every host of a cluster is given, the image it would build (the base from
ci/docker-up.sh, packages without recommends, no secret in it, the bring-up files), the exact
argv DockerExecTransport hands the docker CLI, the wait for a container's ready line, and the
``slurm-containers`` harnesses, which skip every check with the reason when the extra or the
engine is missing (and fail under ``CI=true``). The cluster itself, on a real engine, is
tests/containers.

Nothing here needs an engine, and nothing sleeps for real: waits run on virtual clocks."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.slurm import Transport
from adapters.slurm.testing import containers
from adapters.slurm.testing.containers import (
    BASE_IMAGE,
    BRING_UP_FILES,
    INSTALL_HINT,
    PACKAGES,
    ContainerNotReady,
    DockerExecTransport,
    Knobs,
    Layout,
    SlurmCluster,
    SlurmContainersHarness,
    bring_up_files,
    container_command,
    dockerfile,
    engine_problem,
    image_tag,
    ready_line,
    wait_until_up,
)
from adapters.slurm.testing.local import SlurmLocalHarness
from conformance import Outcome, checks, run_check
from conformance.cli import main
from conformance.harness import CannotInject, Fault, HarnessUnavailable, LookAlike, look_alike_need
from conformance.harnesses import load_harness
from conformance.powers import LosesNodes, lacking
from dispatch_core import VirtualClock

REPO = Path(__file__).resolve().parents[2]
PREFIX = "harness cannot inject a Slurm in containers: "
SLURM_UP = REPO / "ci" / "slurm-up.sh"

# -- the knobs and the layout -------------------------------------------------------------------


def test_the_default_knobs_make_ids_purges_requeues_and_node_loss_quick() -> None:
    assert Knobs().flags() == [
        "--job-comment",
        "--max-job-id", "20",
        "--min-job-age", "2",
        "--cred-expire", "5",
        "--cpus", "4",
        "--sched-interval", "5",
        "--slurmd-timeout", "5",
        "--tcp-timeout", "1",
    ]  # fmt: skip


def test_a_knob_left_unset_is_the_scripts_default() -> None:
    knobs = Knobs(
        job_comment=False,
        max_job_id=None,
        min_job_age=None,
        cred_expire=None,
        cpus=None,
        sched_interval=None,
        slurmd_timeout=None,
        message_timeout=None,
        tcp_timeout=None,
    )
    assert knobs.flags() == ["--no-job-comment"]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "30"])
@pytest.mark.parametrize("field", ["max_job_id", "tcp_timeout", "cpus"])
def test_a_knob_that_is_not_a_positive_whole_number_is_refused(field: str, bad: object) -> None:
    with pytest.raises(ValueError, match=f"{field} must be a positive whole number"):
        Knobs(**{field: bad})  # type: ignore[arg-type]


def test_the_layout_puts_the_head_at_10_and_node_i_at_10_plus_i() -> None:
    layout = Layout("172.30.7.0/24", 3)
    assert layout.node_names == ["node1", "node2", "node3"]
    assert [layout.address(h) for h in ("head", "node1", "node3")] == [
        "172.30.7.10",
        "172.30.7.11",
        "172.30.7.13",
    ]
    assert layout.role_flags() == [
        "--controller", "head=172.30.7.10",
        "--node-addrs", "node1=172.30.7.11,node2=172.30.7.12,node3=172.30.7.13",
    ]  # fmt: skip


@pytest.mark.parametrize("nodes", [0, 9])
def test_a_cluster_has_one_to_eight_nodes(nodes: int) -> None:
    with pytest.raises(ValueError, match="1 to 8 nodes"):
        Layout("172.30.0.0/24", nodes)


def test_every_host_gets_the_same_flags_but_its_role() -> None:
    layout, knobs = Layout("172.30.1.0/24", 2), Knobs()
    head, node = container_command("head", layout, knobs), container_command("node", layout, knobs)
    assert head[0] == node[0] == "/usr/local/sbin/slurm-node-entrypoint.sh"
    assert (head[1], node[1]) == ("head", "node")
    assert head[2:] == node[2:] == [*layout.role_flags(), *knobs.flags()]
    assert ready_line("node", "node2") == "dispatch-kit: node node2 up"


def test_a_cluster_name_that_is_not_a_plain_name_is_refused() -> None:
    for bad in ("", "-x", "a b", "a;b"):
        with pytest.raises(ValueError, match="is not a cluster name"):
            SlurmCluster(name=bad)
    assert SlurmCluster().name.startswith("dispatch-slurm-")
    assert SlurmCluster(name="c1").container_name("node2") == "c1-node2"


# -- the image ------------------------------------------------------------------------------------


def test_the_image_is_built_on_the_local_base_with_no_secret_in_it() -> None:
    text = dockerfile()
    assert text.splitlines()[1] == f"FROM {BASE_IMAGE}"
    assert BASE_IMAGE == "dispatch/bookworm-min:latest"  # what ci/docker-up.sh tags
    assert "--no-install-recommends" in text and " ".join(PACKAGES) in text
    assert "openssh-server" in PACKAGES and "slurmdbd" in PACKAGES
    assert "rm -f /etc/munge/munge.key /etc/ssh/ssh_host_*" in text
    assert "policy-rc.d" in text  # nothing starts while the packages install
    assert f"COPY {' '.join(BRING_UP_FILES)} /usr/local/sbin/" in text


def test_the_image_tag_changes_with_the_recipe_the_files_and_the_base() -> None:
    files = {"a.sh": b"one", "b.sh": b"two"}
    tag = image_tag("FROM x", files, "sha256:1")
    assert tag.startswith("dispatch-kit/slurm:") and len(tag.split(":")[1]) == 16
    assert tag == image_tag("FROM x", dict(reversed(files.items())), "sha256:1")
    assert tag != image_tag("FROM y", files, "sha256:1")
    assert tag != image_tag("FROM x", {**files, "b.sh": b"2"}, "sha256:1")
    assert tag != image_tag("FROM x", files, "sha256:2")
    assert tag != image_tag("FROM x", {"a.sh": b"one", "c.sh": b"two"}, "sha256:1")


def test_the_package_data_is_the_scripts_of_ci_and_pyproject_ships_it() -> None:
    assert bring_up_files() == {name: (REPO / "ci" / name).read_bytes() for name in BRING_UP_FILES}
    for name in BRING_UP_FILES:
        link = REPO / "adapters" / "slurm" / "testing" / name
        assert link.is_symlink() and os.readlink(link) == f"../../../ci/{name}"
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    shipped = pyproject["tool"]["setuptools"]["package-data"]["adapters.slurm.testing"]
    assert set(BRING_UP_FILES) <= set(shipped)


# -- slurm-up.sh's roles: bad usage ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--role", "login"], "bad --role/SLURM_LAB_ROLE 'login'"),
        (["--role", "head"], "--role head needs --controller and --node-addrs"),
        (["--node-addrs", "n1=10.0.0.1"], "--node-addrs needs --role head or node"),
        (
            ["--role", "node", "--controller", "head=10.0.0.1", "--node-addrs", "n1=10.0.0.300"],
            "bad --node-addrs/SLURM_LAB_NODE_ADDRS entry 'n1=10.0.0.300'",
        ),
        (
            ["--role", "node", "--controller", "head=10.0.0.1",
             "--node-addrs", "n1=10.0.0.2,n1=10.0.0.3"],
            "node 'n1' is named twice",
        ),
        (
            ["--role", "node", "--controller", "Head=10.0.0.1", "--node-addrs", "n1=10.0.0.2"],
            "bad --controller/SLURM_LAB_CONTROLLER 'Head=10.0.0.1'",
        ),
        (
            ["--role", "node", "--controller", "head=10.0.0.1", "--node-addrs", "n1=10.0.0.2"],
            "is not one of the --node-addrs (n1)",
        ),
        (
            ["--role", "head", "--controller", "head=10.0.0.1", "--node-addrs", "n1=10.0.0.2"],
            "must be the --controller (head)",
        ),
        (["--tcp-timeout", "0"], "bad --tcp-timeout/SLURM_LAB_TCP_TIMEOUT '0'"),
        (["--slurmd-timeout", "x"], "bad --slurmd-timeout/SLURM_LAB_SLURMD_TIMEOUT 'x'"),
    ],
)  # fmt: skip
def test_slurm_up_refuses_a_bad_role_or_layout_with_exit_2(args: list[str], said: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_LAB_")}
    done = subprocess.run(
        ["bash", str(SLURM_UP), *args], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and done.stderr.count("\n") == 1
    assert done.stdout == ""


def test_slurm_up_help_answers_the_role_options() -> None:
    done = subprocess.run(["bash", str(SLURM_UP), "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    for option in (
        "--role ROLE",
        "--controller NAME=ADDR",
        "--node-addrs",
        "--slurmd-timeout",
        "--message-timeout",
        "--tcp-timeout",
    ):
        assert option in done.stdout


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


# -- readiness ---------------------------------------------------------------------------------

LINE = "dispatch-kit: head head up"


def test_a_container_is_up_once_its_ready_line_is_logged() -> None:
    clock = VirtualClock()
    logs = iter(["munge\n", "munge\nslurmctld\n", f"munge\nslurmctld\n{LINE}\n"])
    wait_until_up(lambda: next(logs), lambda: "running", LINE, bound=60, clock=clock, interval=2)
    assert clock.now() - VirtualClock().now() == 4


def test_a_container_that_ended_is_not_up_and_its_log_is_in_the_error() -> None:
    clock = VirtualClock()
    with pytest.raises(ContainerNotReady) as error:
        wait_until_up(
            lambda: "slurmdbd: fatal: no database\n", lambda: "exited", LINE, bound=60, clock=clock
        )
    assert str(error.value).splitlines() == [
        f"the container exited before it printed {LINE!r}; its log ends:",
        "slurmdbd: fatal: no database",
    ]
    assert clock.now() == VirtualClock().now()


def test_a_container_not_up_within_the_bound_times_out_with_the_end_of_the_log() -> None:
    clock = VirtualClock()
    lines = "\n".join(f"line {n}" for n in range(100))
    with pytest.raises(ContainerNotReady) as error:
        wait_until_up(lambda: lines, lambda: "running", LINE, bound=30, clock=clock, interval=2)
    first, *rest = str(error.value).splitlines()
    assert first.startswith(f"the container did not print {LINE!r} within 30 s")
    assert rest == [f"line {n}" for n in range(60, 100)]
    assert 30 <= clock.now() - VirtualClock().now() <= 32


# -- the harness without an engine ------------------------------------------------------------------


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> str:
    why = "no Docker engine answers (ConnectionError: refused); start one with ci/docker-up.sh"
    monkeypatch.setattr(containers, "engine_problem", lambda docker="docker": why)
    monkeypatch.delenv("CI", raising=False)
    return why


def test_engine_problem_without_the_docker_cli(tmp_path: Path) -> None:
    pytest.importorskip("docker")
    assert engine_problem(str(tmp_path / "no-docker")) == (
        f"no {tmp_path / 'no-docker'} command on PATH (the transport runs docker exec)"
    )


@pytest.mark.parametrize("missing", ["docker", "testcontainers.core.container"])
def test_engine_problem_without_the_extra_names_it(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.setitem(sys.modules, missing, None)
    why = engine_problem()
    assert why is not None and why.startswith("the 'containers' extra is not installed (")
    assert why.endswith(f"): {INSTALL_HINT}")


def test_with_the_real_docker_package_and_no_engine_the_reason_says_how_to_start_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("docker")
    pytest.importorskip("testcontainers.core.container")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    docker = tmp_path / "docker"
    docker.write_text("#!/bin/sh\nexit 99\n")
    docker.chmod(0o755)
    why = engine_problem(str(docker))
    assert why is not None and why.startswith("no Docker engine answers (")
    assert why.endswith("start one with ci/docker-up.sh")


@pytest.mark.parametrize("ssh", [False, True])
def test_without_an_engine_every_check_is_skipped_with_the_reason(
    no_engine: str, ssh: bool
) -> None:
    harness = SlurmContainersHarness(ssh=ssh)
    assert isinstance(harness, SlurmLocalHarness)
    with pytest.raises(CannotInject) as cannot:
        harness.new_backend()
    assert str(cannot.value) == PREFIX + no_engine
    for check in checks()[:3]:
        result = run_check(check, harness)
        assert (result.outcome, result.reason) == (Outcome.SKIPPED, PREFIX + no_engine)
    assert not harness.cluster.started
    harness.close()


def test_under_ci_a_missing_engine_fails_and_says_how_to_start_one(
    no_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    harness = SlurmContainersHarness()
    with pytest.raises(HarnessUnavailable) as unavailable:
        harness.new_backend()
    assert str(unavailable.value) == (
        "slurm-containers needs a Docker engine and its cluster under CI=true (start one with "
        f"ci/docker-up.sh): {no_engine}"
    )
    result = run_check(checks()[0], harness)
    assert result.outcome is not Outcome.SKIPPED and result.outcome is not Outcome.PASSED


def test_the_harness_offers_the_loss_of_a_node_and_another_users_job() -> None:
    harness = SlurmContainersHarness()
    assert isinstance(harness, LosesNodes)
    assert lacking(harness, Fault.LOSE_NODE) is None
    assert lacking(harness, look_alike_need(LookAlike.OTHER_USER)) is None
    assert lacking(harness, Fault.PREEMPT) is not None  # slurm-local's refusals stand
    assert harness.scratch_root == "/shared"
    assert not harness.cluster.started  # asking what it offers starts nothing


def test_both_harnesses_are_registered_with_a_head_and_two_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, ssh in (("slurm-containers", False), ("slurm-containers-ssh", True)):
        harness = load_harness(name)
        assert isinstance(harness, SlurmContainersHarness)
        assert (harness.name, harness.ssh, harness.cluster.nodes) == (name, ssh, 2)
        assert harness.cluster.knobs == Knobs()
    assert main(["harnesses"]) == 0
    rows = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()}
    assert rows["slurm-containers"] == "adapters.slurm.testing.containers:slurm_containers"
    assert "slurm-container" not in rows


def test_a_run_without_an_engine_skips_and_exits_0(
    no_engine: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        ["run", "--harness", "slurm-containers", "--tier", "smoke", "--report-dir", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0
    skipped = [line.strip() for line in out.splitlines() if line.strip().startswith("skipped:")]
    assert len(skipped) == len(checks("smoke"))
    assert set(skipped) == {f"skipped: {PREFIX}{no_engine}"}


def test_a_made_up_cluster_name_is_made_again_in_a_forked_process() -> None:
    """Dealt over processes (--shards), each instance makes a cluster with names of its own."""
    made, given = SlurmCluster(), SlurmCluster(name="given")
    assert made.name_for_this_process() == made.name  # the process that made it keeps it
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child answers through the pipe, then leaves at once
        names = [made.name_for_this_process(), made.name_for_this_process()]
        os.write(write, " ".join([*names, given.name_for_this_process()]).encode())
        os._exit(0)
    os.waitpid(child, 0)
    os.close(write)
    first, again, kept = os.read(read, 200).decode().split()
    os.close(read)
    assert first == again != made.name and first.startswith("dispatch-slurm-")
    assert kept == "given"
