"""Redaction: what a record keeps of a text, a URI and a spec, and JobSpec.secret_env."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from dispatch_core import JobSpec
from dispatch_core.record import REDACTED, RecordedSpec, is_secret_name, redact_text, redact_uri
from dispatch_core.record.redact import redact_command, scrub


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("https://user:pw@host/x?a=1", "https://host/x?a=1"),
        ("https://TOKEN123@github.com/o/r.git", "https://github.com/o/r.git"),
        ("redis://:p@ss@cache:6379/0", "redis://cache:6379/0"),
        ("postgres://u:p?w#d@db:5432/app", "postgres://db:5432/app"),
        (
            "https://h/x?a=1&Token=t&X-Amz-Signature=s&b=2",
            f"https://h/x?a=1&Token={REDACTED}&X-Amz-Signature={REDACTED}&b=2",
        ),
        ("https://h/x?%74oken=t", f"https://h/x?%74oken={REDACTED}"),
        ("https://h/cb#access_token=t&state=s", f"https://h/cb#access_token={REDACTED}&state=s"),
        ("https://h/a;jsessionid=t/b", f"https://h/a;jsessionid={REDACTED}/b"),
        (
            "s3://bucket/k?X-Amz-Credential=c;sig=s",
            f"s3://bucket/k?X-Amz-Credential={REDACTED};sig={REDACTED}",
        ),
        ("--password=pa&ss://x rest", f"--password={REDACTED} rest"),
        (
            "PGPASSWORD=pw psql postgres://u:p@db/app",
            f"PGPASSWORD={REDACTED} psql postgres://db/app",
        ),
        ("--url=https://u:p@h/", "--url=https://h/"),
        ("docker://reg.io/app@sha256:abcd", "docker://reg.io/app@sha256:abcd"),
        ("a://PASSWORD=pw", f"a://PASSWORD={REDACTED}"),
        ("nothing secret here: epochs=3 lr=0.1", "nothing secret here: epochs=3 lr=0.1"),
        ("Authorization: Bearer abc123", f"Authorization: {REDACTED}"),
        ("X-Api-Key:abc\nAccept: */*", f"X-Api-Key:{REDACTED}\nAccept: */*"),
        (
            '{"password": "hun\\"ter2", "user": "bob"}',
            f'{{"password": "{REDACTED}", "user": "bob"}}',
        ),
        ("db:\n  password: x1\n  user: y", f"db:\n  password: {REDACTED}\n  user: y"),
        ("curl -H 'Bearer abc' h", f"curl -H 'Bearer {REDACTED} h"),
        ("HTTP_PROXY=user:pa@ss@proxy:3128", f"HTTP_PROXY={REDACTED}@proxy:3128"),
        ("via user:pass@proxy.local:8080 ok", f"via {REDACTED}@proxy.local:8080 ok"),
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
        ("mail a@b.com at 12:30", "mail a@b.com at 12:30"),
        ("tokenstore://x/y", "tokenstore://x/y"),
    ],
)
def test_redact_text(text: str, kept: str) -> None:
    assert redact_text(text) == kept
    assert redact_text(kept) == kept


def test_redact_uri_keeps_what_is_not_secret() -> None:
    assert redact_uri("https://h:8443/p/q?x=1#frag") == "https://h:8443/p/q?x=1#frag"


@pytest.mark.parametrize(
    "name",
    [
        "token",
        "ACCESS_TOKEN",
        "password",
        "passwd",
        "PGPASSWORD",
        "client_secret",
        "api_key",
        "apiKey",
        "X-Amz-Signature",
        "sig",
        "Authorization",
        "X-Amz-Credential",
        "SESSIONID",
        "cookie",
        "private_key",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["epochs", "PATH", "HOME", "lr", "region", "page", "x"])
def test_names_that_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_a_command_loses_the_argument_after_a_secret_flag() -> None:
    command = ("curl", "--token", "t", "-u", "x", "--header", "h", "--api-key=k", "--epochs", "3")
    assert redact_command(command) == (
        "curl",
        "--token",
        REDACTED,
        "-u",
        "x",
        "--header",
        "h",
        f"--api-key={REDACTED}",
        "--epochs",
        "3",
    )


def test_scrub_walks_every_text_keys_included() -> None:
    data = {"a": ["https://u:p@h/", {"token=t": 1}], "n": 2, "b": None}
    assert scrub(data) == {"a": ["https://h/", {f"token={REDACTED}": 1}], "n": 2, "b": None}


@settings(max_examples=200, deadline=None)
@given(st.text(string.printable, max_size=60))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


def test_recorded_spec_leaves_out_marked_and_secret_named_env_values() -> None:
    spec = JobSpec(
        command=("run", "--db", "postgres://u:p@db/app"),
        env={"MARKED": "m", "API_TOKEN": "t", "SEED": "7", "URL": "https://u:p@h/"},
        secret_env={"MARKED"},
        work_dir="/scratch",
        extensions={"dispatch.Image": "https://bot:b@reg.io/app:1"},
    )
    recorded = RecordedSpec.of(spec)
    assert recorded.env == {"SEED": "7", "URL": "https://h/"}
    assert recorded.withheld_env == ("API_TOKEN", "MARKED")
    assert recorded.command == ("run", "--db", "postgres://db/app")
    assert recorded.extensions == {"dispatch.Image": "https://reg.io/app:1"}
    assert recorded.redacted is True
    plain = JobSpec(command=("run",), env={"SEED": "7"}, work_dir="/scratch")
    assert RecordedSpec.of(plain).redacted is False


def test_the_fingerprint_ignores_credentials_and_sees_everything_else() -> None:
    def spec(token: str, seed: str = "7") -> JobSpec:
        return JobSpec(command=("run",), env={"T": token, "SEED": seed}, secret_env={"T"})

    fingerprint = RecordedSpec.of(spec("a")).fingerprint()
    assert fingerprint.startswith("sha256:") and len(fingerprint) == 7 + 64
    assert RecordedSpec.of(spec("b")).fingerprint() == fingerprint
    assert RecordedSpec.of(spec("a", seed="8")).fingerprint() != fingerprint


# -- JobSpec.secret_env (the marking this issue adds to the model) --------------------------------


def test_secret_env_is_sorted_without_repeats_and_absent_from_dumps_when_empty() -> None:
    spec = JobSpec(command=("x",), env={"B": "1", "A": "2"}, secret_env=["B", "A", "B"])
    assert spec.secret_env == ("A", "B")
    assert JobSpec.model_validate_json(spec.model_dump_json()) == spec
    assert "secret_env" not in JobSpec(command=("x",)).model_dump()
    assert "secret_env" not in JobSpec(command=("x",)).model_dump_json()


def test_secret_env_must_name_env_entries() -> None:
    with pytest.raises(ValidationError, match="TOKEN"):
        JobSpec(command=("x",), env={"TOKN": "t"}, secret_env={"TOKEN"})


def test_a_specs_repr_hides_marked_values() -> None:
    spec = JobSpec(command=("x",), env={"T": "hunter2hunter2", "S": "7"}, secret_env={"T"})
    assert "hunter2hunter2" not in repr(spec) and "hunter2hunter2" not in str(spec)
    assert "'S': '7'" in repr(spec)
