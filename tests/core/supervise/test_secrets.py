"""No credential leaves the supervisor: Hypothesis plants distinct secrets in a spec (an env
value marked secret, one named like a secret, a URI's userinfo and a secret query parameter in
the command, a secret flag's argument, ``password=...``, a secret path parameter in the work
dir), runs the job's whole life through the supervisor (a failure, its resubmission, a crash
and a recovery given the spec again, the success) and searches every byte of the SQLite files
(database, -wal, -shm), every progress line, every Status and every CLI output for them."""

from __future__ import annotations

import contextlib
import io
import string
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatch_core import JobSpec, Policy, Rule, RuleKind, State
from dispatch_core.supervise import cli, describe

from .conftest import Crash, World
from .test_recovery import CrashingBackend

secrets = st.text(alphabet=string.ascii_letters + string.digits, min_size=10, max_size=16).map(
    lambda text: "Zq9" + text
)


def spec_with(s: list[str]) -> JobSpec:
    return JobSpec(
        command=(
            "train",
            f"https://alice:{s[0]}@data.example.org/set?sig={s[1]}&part=keepme",
            "--token",
            s[2],
            f"password={s[3]}",
        ),
        env={"MARKED": s[4], "API_TOKEN": s[5], "PLAIN": "keepme"},
        secret_env=("MARKED",),
        work_dir=f"/scratch/run;jsessionid={s[6]}",
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(secrets, min_size=7, max_size=7, unique=True))
def test_no_secret_reaches_the_record_a_status_or_a_line(planted: list[str]) -> None:
    spec = spec_with(planted)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "record.sqlite"
        world = World("memory-slurm", path)
        first = world.supervisor(owner="crashed")
        first.backend = CrashingBackend(world.backend, 2, after=True)  # type: ignore[assignment]
        job = first.submit(spec, Policy(rules=(Rule(kind=RuleKind.RESUBMIT),)))
        with contextlib.suppress(Crash):
            first.run_until_idle(50, between=world.driver(first, job, {1: 3}))
        world.clock.advance(61)
        after = world.supervisor(owner="recovered", specs={job: spec})
        after.run_until_idle(100, between=world.driver(after, job, {2: 0}))
        status = after.status(job)
        assert status.state is State.SUCCEEDED
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(out):
            cli.main(["status", "--record", str(path)])
            cli.main(["status", str(job), "--json", "--record", str(path)])
        texts = [
            *world.lines,
            repr(status),
            str(status.as_dict()),
            out.getvalue(),
            *(describe(e) for e in world.store.records(job)),
        ]
        stored = b"".join(
            p.read_bytes() for p in Path(directory).iterdir() if p.name.startswith("record")
        )
        world.store.close()
        stored += b"".join(
            p.read_bytes() for p in Path(directory).iterdir() if p.name.startswith("record")
        )
        assert b"keepme" in stored  # the search reads the right bytes
        for secret in planted:
            assert secret.encode() not in stored, secret
            for text in texts:
                assert secret not in text, (secret, text)
