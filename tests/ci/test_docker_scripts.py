"""ci/docker-up.sh and ci/docker-down.sh answer for their options without a Docker engine: --help
lists every option the parser takes (and every DISPATCH_DOCKER_* variable the script reads) and
touches nothing; a bad option or value is one line on stderr and exit 2. Nothing here starts a
daemon, installs a package or needs root."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = ["docker-up.sh", "docker-down.sh"]


def run(script: str, *args: str, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DISPATCH_DOCKER_STATE": str(state)}
    return subprocess.run(
        ["bash", str(REPO / "ci" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def parser_options(script: str) -> set[str]:
    """The long options of the script's argument loop (its case patterns)."""
    text = (REPO / "ci" / script).read_text()
    loop = text[text.index("while (($#)); do") :]
    loop = loop[: loop.index("\ndone\n")]
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", loop))


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_answers_every_option_and_touches_nothing(
    script: str, flag: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    done = run(script, flag, state=state)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith(f"Usage: ci/{script}")
    options = parser_options(script)
    assert "--state-dir" in options
    missing = sorted(o for o in options if not re.search(rf"(?<![\w-]){o}(?![\w-])", done.stdout))
    assert not missing, f"--help of {script} does not mention {missing}"
    text = (REPO / "ci" / script).read_text()
    for variable in sorted(set(re.findall(r"\$\{(DISPATCH_DOCKER_\w+):-", text))):
        assert variable in done.stdout, f"--help of {script} does not mention {variable}"
    assert "Exit status" in done.stdout
    assert not state.exists(), "--help created the state directory"


@pytest.mark.parametrize(
    ("script", "args", "says"),
    [
        ("docker-up.sh", ["--bogus"], "unknown argument: --bogus"),
        ("docker-up.sh", ["extra"], "unknown argument: extra"),
        ("docker-up.sh", ["--timeout"], "option --timeout needs a value"),
        ("docker-up.sh", ["--timeout", "0"], "bad --timeout"),
        ("docker-up.sh", ["--timeout=abc"], "bad --timeout"),
        ("docker-up.sh", ["--mirror", "ftp://example.org/debian"], "bad --mirror"),
        ("docker-up.sh", ["--state-dir", "relative/dir"], "bad --state-dir"),
        ("docker-up.sh", ["--state-dir=/with space"], "bad --state-dir"),
        ("docker-down.sh", ["--bogus"], "unknown argument: --bogus"),
        ("docker-down.sh", ["--state-dir"], "option --state-dir needs a value"),
        ("docker-down.sh", ["--state-dir", "relative"], "bad --state-dir"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    script: str, args: list[str], says: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    done = run(script, *args, state=state)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(script.removesuffix(".sh") + ": ")
    assert says in lines[0]
    assert "see --help" in lines[0]
    assert not state.exists()


def test_a_bad_environment_value_is_bad_usage_too(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {**os.environ, "DISPATCH_DOCKER_STATE": str(state), "DISPATCH_DOCKER_INSTALL": "yes"}
    done = subprocess.run(
        ["bash", str(REPO / "ci" / "docker-up.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "bad DISPATCH_DOCKER_INSTALL 'yes'" in done.stderr


@pytest.mark.parametrize("script", [*SCRIPTS, "docker-lib.sh"])
def test_nothing_pulls_from_a_registry(script: str) -> None:
    """The base image comes from debootstrap + docker import; no script pulls or pushes."""
    code = [
        line
        for line in (REPO / "ci" / script).read_text().splitlines()
        if not line.lstrip().startswith("#")
    ]
    assert not [line for line in code if re.search(r"\bdocker\s+(pull|push|login)\b", line)]


@pytest.mark.parametrize("script", [*SCRIPTS, "docker-lib.sh"])
def test_the_scripts_parse_and_pass_shellcheck(script: str) -> None:
    path = REPO / "ci" / script
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    done = subprocess.run(
        ["shellcheck", "-x", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout
