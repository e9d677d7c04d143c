"""Preflight: probes that tell a site what its Slurm cluster really supports.

Each probe is bounded in time, cleans up the probe jobs it submitted, and answers with source
``probed`` and a reason saying what it saw. A probe that cannot finish in its bound answers
``unknown`` and says why, never a guess.

- PreTerminationSignal: a 2-minute job asking for ``--signal=B:USR1@60`` must see USR1;
- configuration (``scontrol show config``): accounting storage and ``job_comment``,
  ``JobRequeue``, ``MinJobAge``;
- AccountingHistory: a tiny job with a comment is waited to its end, then read from sacct;
- NativeRequeue: ``JobRequeue`` (the owner may requeue its own batch jobs);
- WorkingDirectory, ProcsPerNode, OutputPath, OutputRead, OutputFollow: one probe job run with
  ``--chdir``, ``--ntasks-per-node=2`` and ``--output``, whose output is read back through the
  transport; OutputRetained: the same output read again once the job has left squeue (only when
  ``MinJobAge`` is short enough to wait for).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from adapters.slurm.identity import slurm_comment
from adapters.slurm.parse import (
    accounting_enabled,
    config_number,
    keeps_comments,
    parse_config,
    parse_sbatch_id,
    requeue_allowed,
)
from dispatch_core import Capability, JobID, Source, Support, Tristate
from dispatch_core.clock import pause

if TYPE_CHECKING:
    from adapters.slurm.backend import SlurmBackend

PROBE_MARK: Final = "dispatch-probe"


def probed(value: Tristate, reason: str) -> Support:
    return Support(value=value, source=Source.PROBED, reason=reason)


def read_config(backend: SlurmBackend) -> dict[str, str]:
    """``scontrol show config`` as a dictionary (``Key = value`` lines)."""
    return parse_config(backend.read(["scontrol", "show", "config"], "scontrol show config"))


def run_preflight(
    backend: SlurmBackend,
    *,
    probe_dir: str = "/tmp",
    bound: float = 180.0,
    progress: Callable[[str], None] | None = None,
) -> dict[Capability, Support]:
    say = progress or (lambda line: None)
    answers: dict[Capability, Support] = {}

    say("reading scontrol show config")
    config = read_config(backend)
    requeue = requeue_allowed(config)
    backend.job_requeue = requeue
    answers[Capability.NATIVE_REQUEUE] = probed(
        Tristate.YES if requeue else Tristate.NO,
        f"JobRequeue={int(requeue)} in scontrol show config",
    )
    answers[Capability.CONTAINER_IMAGE] = probed(Tristate.NO, "no container runtime is configured")

    signal_job = _submit_signal_probe(backend, probe_dir)
    try:
        answers.update(_probe_job(backend, config, probe_dir, bound, say))
        answers[Capability.PRE_TERMINATION_SIGNAL] = _signal_answer(backend, signal_job, bound, say)
    finally:
        if signal_job is not None:
            backend.command("preflight", ["scancel", f"--name={signal_job[0]}", signal_job[1]])
            _remove(backend, signal_job[2])
    kept = keeps_comments(config)
    if kept is not None:
        backend.job_comment = kept
    return answers


def _probe_job(
    backend: SlurmBackend,
    config: dict[str, str],
    probe_dir: str,
    bound: float,
    say: Callable[[str], None],
) -> dict[Capability, Support]:
    """One probe job: accounting of its comment, its working directory, its tasks, its output."""
    answers: dict[Capability, Support] = {}
    accounting = accounting_enabled(config)
    flags = config.get("AccountingStoreFlags", "")
    job = JobID.new()
    name = f"{job.discovery_name()}"
    comment = slurm_comment(1, 1)
    say(f"submitting probe job {name}")
    script = (
        "#!/bin/sh\n"
        f"echo {PROBE_MARK} cwd=$(pwd)\n"
        f"srun -- sh -c 'echo {PROBE_MARK} rank=$SLURM_PROCID'\n"
    )
    output = f"{probe_dir.rstrip('/')}/{PROBE_MARK}-%j.out"
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={name}",
        f"--comment={comment}",
        f"--chdir={probe_dir}",
        f"--output={output}",
        "--ntasks-per-node=2",
        "--time=1",
        "--no-requeue",
    ]
    try:
        done = backend.command("preflight", argv, stdin=script)
    except subprocess.TimeoutExpired:
        done = None
    job_id = parse_sbatch_id(done.stdout) if done is not None and done.returncode == 0 else None
    if done is None or job_id is None:
        why = "sbatch timed out" if done is None else done.stderr.strip() or done.stdout.strip()
        reason = f"the probe job could not be submitted: {why}"
        for capability in (
            Capability.ACCOUNTING_HISTORY,
            Capability.WORKING_DIRECTORY,
            Capability.PROCS_PER_NODE,
            Capability.OUTPUT_READ,
            Capability.OUTPUT_FOLLOW,
            Capability.OUTPUT_RETAINED,
        ):
            answers[capability] = probed(Tristate.UNKNOWN, reason)
        return answers
    path = output.replace("%j", job_id)
    try:
        ended = _wait_for_end(backend, job_id, bound, say)
        answers.update(_accounting(backend, job_id, comment, accounting, flags, ended))
        answers.update(_output(backend, path, probe_dir, ended))
        min_age = config_number(config, "MinJobAge")
        min_age = 300 if min_age is None else min_age
        if ended and Tristate.YES is answers[Capability.OUTPUT_READ].value:
            answers[Capability.OUTPUT_RETAINED] = _retained(
                backend, job_id, path, min_age, bound, say
            )
        else:
            answers[Capability.OUTPUT_RETAINED] = probed(
                Tristate.UNKNOWN, "the probe job's output could not be read while it was in squeue"
            )
    finally:
        backend.command("preflight", ["scancel", f"--name={name}", job_id])
        _remove(backend, path)
    return answers


SIGNAL_SCRIPT: Final = f"""#!/bin/sh
trap 'echo {PROBE_MARK} got-signal; exit 0' USR1
i=0
while [ "$i" -lt 300 ]; do sleep 1; i=$((i + 1)); done
echo {PROBE_MARK} no-signal
"""


def _submit_signal_probe(backend: SlurmBackend, probe_dir: str) -> tuple[str, str, str] | None:
    """A 2-minute job asking for USR1 60 s before its end: (name, job id, output path)."""
    name = JobID.new().discovery_name()
    output = f"{probe_dir.rstrip('/')}/{PROBE_MARK}-signal-%j.out"
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={name}",
        f"--comment={slurm_comment(1, 1)}",
        f"--chdir={probe_dir}",
        f"--output={output}",
        "--time=2",
        "--signal=B:USR1@60",
        "--no-requeue",
    ]
    try:
        done = backend.command("preflight", argv, stdin=SIGNAL_SCRIPT)
    except subprocess.TimeoutExpired:
        return None
    job_id = parse_sbatch_id(done.stdout) if done.returncode == 0 else None
    if job_id is None:
        return None
    return name, job_id, output.replace("%j", job_id)


def _signal_answer(
    backend: SlurmBackend,
    probe: tuple[str, str, str] | None,
    bound: float,
    say: Callable[[str], None],
) -> Support:
    if probe is None:
        return probed(Tristate.UNKNOWN, "the signal probe job could not be submitted")
    _, job_id, path = probe
    if not _wait_for_end(backend, job_id, bound, say):
        return probed(Tristate.UNKNOWN, "the signal probe job did not end within the bound")
    text = _cat(backend, path)
    if text is None:
        return probed(Tristate.UNKNOWN, "the signal probe's output is not readable")
    if f"{PROBE_MARK} got-signal" in text:
        return probed(Tristate.YES, "a job with --signal=B:USR1@60 received USR1 before its end")
    return probed(Tristate.NO, "a job with --signal=B:USR1@60 was never signalled")


def _wait_for_end(
    backend: SlurmBackend, job_id: str, bound: float, say: Callable[[str], None]
) -> bool:
    waited = 0.0
    while waited <= bound:
        line = backend.job_line(job_id)
        if line is None or line.state not in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING"):
            say(f"probe job {job_id} ended after {waited:.0f} s")
            return True
        pause(backend.clock, 5.0)
        waited += 5.0
    say(f"probe job {job_id} did not end within {bound:.0f} s")
    return False


def _accounting(
    backend: SlurmBackend, job_id: str, comment: str, accounting: bool, flags: str, ended: bool
) -> dict[Capability, Support]:
    if not accounting:
        return {
            Capability.ACCOUNTING_HISTORY: probed(
                Tristate.NO, "no accounting storage: an ended job leaves no history"
            )
        }
    if not ended:
        return {
            Capability.ACCOUNTING_HISTORY: probed(
                Tristate.UNKNOWN, "the probe job did not end within the bound"
            )
        }
    argv = ["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "JobIDRaw,Comment"]
    try:
        done = backend.command("preflight", argv)
        rows = done.stdout.splitlines() if done.returncode == 0 else []
    except subprocess.TimeoutExpired:
        rows = []
    kept = any(row == f"{job_id}|{comment}" for row in rows)
    if kept:
        return {
            Capability.ACCOUNTING_HISTORY: probed(
                Tristate.YES, f"sacct kept the ended probe job's comment ({flags or 'no flags'})"
            )
        }
    return {
        Capability.ACCOUNTING_HISTORY: probed(
            Tristate.NO,
            f"sacct lost the ended probe job's comment (AccountingStoreFlags={flags or '(null)'})",
        )
    }


def _output(
    backend: SlurmBackend, path: str, probe_dir: str, ended: bool
) -> dict[Capability, Support]:
    text = _cat(backend, path)
    if text is None:
        reason = f"the probe job's output {path} is not readable through the transport"
        return {
            Capability.OUTPUT_READ: probed(Tristate.NO if ended else Tristate.UNKNOWN, reason),
            Capability.OUTPUT_FOLLOW: probed(Tristate.NO if ended else Tristate.UNKNOWN, reason),
            Capability.WORKING_DIRECTORY: probed(Tristate.UNKNOWN, reason),
            Capability.PROCS_PER_NODE: probed(Tristate.UNKNOWN, reason),
            Capability.OUTPUT_PATH: probed(Tristate.UNKNOWN, reason),
        }
    lines = [line for line in text.splitlines() if line.startswith(PROBE_MARK)]
    cwd = f"{PROBE_MARK} cwd={probe_dir.rstrip('/') or '/'}"
    ranks = sorted(line for line in lines if " rank=" in line)
    return {
        Capability.OUTPUT_PATH: probed(Tristate.YES, f"the probe wrote {path}"),
        Capability.OUTPUT_READ: probed(Tristate.YES, f"read {path} through the transport"),
        Capability.OUTPUT_FOLLOW: probed(Tristate.YES, "the output file is written in place"),
        Capability.WORKING_DIRECTORY: probed(
            Tristate.YES if cwd in lines else Tristate.NO, f"the probe job saw {lines[:1]}"
        ),
        Capability.PROCS_PER_NODE: probed(
            Tristate.YES if len(ranks) == 2 else Tristate.NO,
            f"--ntasks-per-node=2 gave {len(ranks)} srun task(s)",
        ),
    }


def _retained(
    backend: SlurmBackend,
    job_id: str,
    path: str,
    min_age: int,
    bound: float,
    say: Callable[[str], None],
) -> Support:
    if min_age > bound:
        return probed(Tristate.UNKNOWN, f"MinJobAge={min_age} s is longer than the probe's bound")
    waited = 0.0
    while backend.job_line(job_id) is not None and waited <= bound:
        pause(backend.clock, 5.0)
        waited += 5.0
    if backend.job_line(job_id) is not None:
        return probed(Tristate.UNKNOWN, "the probe job stayed in squeue longer than the bound")
    say("probe job left squeue; reading its output again")
    if _cat(backend, path) is None:
        return probed(Tristate.NO, "the output was gone once the job left squeue")
    return probed(Tristate.YES, "the output was still readable after the job left squeue")


def _cat(backend: SlurmBackend, path: str) -> str | None:
    try:
        done = backend.transport.run(["cat", "--", path], timeout=backend.timeout)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return done.stdout if done.returncode == 0 else None


def _remove(backend: SlurmBackend, path: str) -> None:
    try:
        backend.transport.run(["rm", "-f", "--", path], timeout=backend.timeout)
    except (subprocess.TimeoutExpired, OSError):
        return
