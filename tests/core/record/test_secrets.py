"""No credential ever reaches the store's files (DESIGN §9, §12).

Hypothesis plants distinct secrets in every field of a spec (the command, env values marked
secret, named like a secret, or holding a URI, the work dir, the extensions) and in every free
text of the other records (a support's reason, the native offer's detail, an observation's,
a transition's and a terminal's detail), each in a form a credential takes (a URI's userinfo,
a secret query, fragment or path parameter under a name in any case, ``NAME=value``, a header
or YAML ``name: value``, JSON, ``Bearer x``, ``user:password@host``, a flag and its argument), then writes a job's whole record and searches every byte of every file the
store has (the database, its -wal and -shm) while it is open and after it is closed."""

from __future__ import annotations

import json
import string
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatch_core import (
    Capability,
    Cause,
    JobID,
    JobSpec,
    NativeOffer,
    ObjectRef,
    Observation,
    Plan,
    State,
    Support,
)
from dispatch_core.record import (
    Action,
    HeaderRecord,
    IntentRecord,
    ObservationRecord,
    ObservedRecord,
    Record,
    SqliteRecordStore,
    TerminalRecord,
    TransitionRecord,
    spec_fingerprint,
)

T0 = 1_767_225_600.0
KEEP = "prog-keepme"
"""Text that is no secret: it must be found, so the search reads the right bytes."""

PARAMETERS = [
    "token", "access_token", "id_token", "password", "passwd", "pwd", "secret", "client_secret",
    "api_key", "apikey", "key", "signature", "sig", "X-Amz-Signature", "X-Amz-Credential",
    "X-Amz-Security-Token", "auth", "authorization", "credential", "sessionid", "jsessionid",
]  # fmt: skip
SECRET_ENV_NAMES = [
    "API_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "DB_PASSWD",
    "HF_AUTH", "SERVICE_CREDENTIALS", "SSH_PRIVATE_KEY", "SESSION_COOKIE", "Npm_Token",
]  # fmt: skip

secrets = st.text(string.ascii_letters + string.digits, min_size=10, max_size=20).map(
    lambda s: "sEcR3t" + s
)  # the prefix: no text the store writes for other reasons can equal a secret
names = st.sampled_from(PARAMETERS).flatmap(
    lambda n: st.sampled_from([n, n.upper(), n.lower(), n.title(), n.swapcase()])
)
hosts = st.sampled_from(["h", "registry.example", "db.internal:5432", "10.0.0.7:8443", "a-b.io"])
schemes = st.sampled_from(
    ["https", "http", "s3", "postgres", "redis", "git+ssh", "docker", "HTTPS"]
)
paths = st.sampled_from(["", "/", "/app", "/o/r.git", "/bucket/key.tar", "/v2/x/manifests/1"])
around = st.text(string.ascii_letters + string.digits + " /.,:_-", max_size=10)


@st.composite
def planted(draw: st.DrawFn, secret: str) -> str:
    """A text carrying ``secret`` as a credential is carried."""
    scheme, host, path = draw(schemes), draw(hosts), draw(paths)
    user = draw(st.sampled_from(["u", "bot", "oauth2", "x-access-token"]))
    benign = draw(st.sampled_from(["", "page=2&", "region=eu&"]))
    form = draw(
        st.sampled_from(
            [
                f"{scheme}://{user}:{secret}@{host}{path}",
                f"{scheme}://{secret}@{host}{path}",
                f"{scheme}://{user}:{secret}@{host}{path}?{benign}x=1",
                f"{scheme}://{host}{path}?{benign}{draw(names)}={secret}",
                f"{scheme}://{host}{path}?{draw(names)}={secret}&{benign}y=2",
                f"{scheme}://{host}{path}#{draw(names)}={secret}",
                f"{scheme}://{host}/p;{draw(names)}={secret}/q",
                f"{draw(st.sampled_from(['', '-', '--']))}{draw(names)}={secret}",
                f"{draw(names)}: {draw(st.sampled_from(['', 'Bearer ', 'Basic ']))}{secret}",
                f'{{"{draw(names)}": "{secret}", "user": "{user}"}}',
                f"{draw(st.sampled_from(['Bearer', 'bearer', 'Basic', 'token']))} {secret}",
                f"{user}:{secret}@{host}",
            ]
        )
    )
    return f"{draw(around)} {form} {draw(around)}".strip()


@st.composite
def job_with_secrets(draw: st.DrawFn) -> tuple[Plan, list[str], dict[str, str]]:
    """A plan whose spec carries secrets everywhere, the secrets, and the records' free texts."""
    planted_secrets = draw(st.lists(secrets, min_size=16, max_size=16, unique=True))
    pool = iter(planted_secrets)

    def plant() -> str:
        return draw(planted(next(pool)))

    marked_value = next(pool) + draw(st.text(max_size=12).filter(lambda t: "\x00" not in t))
    flag = draw(st.sampled_from(["--token", "--password", "-api-key", "--Secret", "--auth"]))
    named = draw(st.sampled_from(SECRET_ENV_NAMES))
    spec = JobSpec(
        command=(KEEP, plant(), flag, next(pool), plant()),
        env={"MARKED": marked_value, named: next(pool), "URL": plant(), "SEED": "7"},
        secret_env={"MARKED"},
        work_dir="/scratch/" + plant(),
        extensions={"dispatch.Image": plant(), "site.Source": plant()},
    )
    plan = Plan(
        job=JobID(),
        backend="lab",
        spec=spec,
        capabilities={Capability.ATTEMPT_INJECTION: Support.yes(reason=plant())},
        native=NativeOffer(detail={"compiled": plant()}),
    )
    texts = {"observation": plant(), "transition": plant(), "terminal": plant()}
    return plan, planted_secrets, texts


def forms(secret: str) -> list[bytes]:
    return [secret.encode(), json.dumps(secret).encode()[1:-1]]


def found_in(directory: Path, needles: list[str]) -> list[tuple[str, str]]:
    hits = []
    for file in sorted(directory.iterdir()):
        data = file.read_bytes()
        hits += [(file.name, n) for n in needles if any(f in data for f in forms(n))]
    return hits


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_with_secrets())
def test_no_planted_secret_reaches_any_byte_of_the_store(
    case: tuple[Plan, list[str], dict[str, str]],
) -> None:
    plan, planted_secrets, texts = case
    job, spec = plan.job, plan.spec
    ref = ObjectRef(
        backend="lab", uid=job.discovery_name(), id="4242", submit=datetime(2026, 1, 1, tzinfo=UTC)
    )
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        store = SqliteRecordStore(directory / "record.db")
        lease = store.acquire(job, "sup-a", T0, 60)
        records: list[Record] = [
            HeaderRecord.of(plan),
            IntentRecord(
                submission=1,
                attempt=1,
                spec_fingerprint=spec_fingerprint(spec),
                adapter="memory",
                cluster="lab",
                tool_version="0.1.0",
                object_name=job.discovery_name(),
            ),
            ObservedRecord(submission=1, ref=ref, host="n1"),
            ObservationRecord(
                observation=Observation(ref=ref, state=State.FAILED, detail=texts["observation"])
            ),
            TransitionRecord(
                action=Action.HOLD,
                state=State.FAILED,
                cause=Cause.EXIT_CODE,
                detail=texts["transition"],
            ),
            TerminalRecord(state=State.FAILED, cause=Cause.EXIT_CODE, detail=texts["terminal"]),
        ]
        for seq, record in enumerate(records):
            store.append(job, seq, record, lease, T0 + seq)
        assert {p.name for p in directory.iterdir()} >= {"record.db", "record.db-wal"}
        assert found_in(directory, [KEEP]), "the search must see what the store wrote"
        assert found_in(directory, planted_secrets) == []
        header = store.records(job)[0].record
        assert isinstance(header, HeaderRecord) and header.spec.redacted
        assert header.spec.withheld_env == tuple(sorted(set(spec.env) - {"URL", "SEED"}))
        store.close()
        assert found_in(directory, [KEEP])
        assert found_in(directory, planted_secrets) == []
