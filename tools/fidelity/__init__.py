"""Fidelity: the same scripted scenarios on a real Slurm and on :class:`SlurmSim`, compared.

A :class:`Scenario` (:mod:`tools.fidelity.scenario`) is a named list of steps:

- :func:`run` ``(argv, stdin=None, capture=None)``: one Slurm command (sbatch, squeue, sacct,
  scancel, scontrol). Its argv and stdin may hold ``{A}`` placeholders, bound to the id an
  earlier ``sbatch --parsable`` step captured (``capture="A"``), and ``{START}``, the scenario's
  start as an ISO time (for ``sacct -S``). Every command runs as ``env TZ=UTC LC_ALL=C
  SLURM_TIME_FORMAT=%s <argv>`` (``time_format=`` changes the last), as the Slurm adapter runs
  its commands;
- :func:`runs` ``(A, seconds)``: how long job A's script runs. The real job's script was chosen
  by the scenario when it was submitted (``sleep N``); the simulator is told with
  ``SlurmSim.run_for`` (None: it runs until cancelled);
- :func:`wait_state` ``(A, states, bound)``: poll ``squeue -t all -j A`` until A is in one of
  ``states`` (``GONE``: purged) or ``bound`` seconds have passed. A real cluster is polled every
  0.2 s of wall time, the simulator every virtual second;
- :func:`sleep` ``(seconds)``: wall time on a real cluster, virtual time on the simulator.

The scenarios themselves are :data:`SCENARIOS` (:mod:`tools.fidelity.scenarios`).

Commands go to a :class:`Target` (:mod:`tools.fidelity.targets`): :class:`RealSlurm` (this
host's commands, as subprocesses) or :class:`SimSlurm` (a SlurmSim whose
:class:`~simulators.slurm.SlurmConfig` is derived from the real cluster's ``scontrol show
config`` and ``sinfo``, see :class:`ClusterInfo` in :mod:`tools.fidelity.cluster`).

A scenario run gives a :class:`Transcript` (:mod:`tools.fidelity.transcript`): per step the
argv, stdin, exit status, stdout, stderr and the time it started. :func:`replay_on_sim` runs a
real transcript's steps on a fresh simulator whose clock starts at the real run's start, whose
next job id is the real one (so ids compare literally, wrap included), and whose clock is moved
to each step's real start time before the step. :func:`compare`
(:mod:`tools.fidelity.comparison`) normalises both transcripts (:func:`normalise`,
:mod:`tools.fidelity.normalisation`: times become ``T+n`` relative to the start, durations
``E+n``, host and node names, scratch paths and pids placeholders; ids stay literal while both
sides captured the same ones) and lists every :class:`TranscriptDifference`; times within the
scenario's tolerance (2 s) count as equal, because the real scheduler starts a job 0-3 s after it
is told and the simulator after exactly 1 s. :data:`KNOWN_DIFFERENCES` explains the differences that
remain on purpose; :func:`report` (:mod:`tools.fidelity.reports`) writes the markdown report,
explained and unexplained alike.

Command line (``python -m tools.fidelity --help``, :mod:`tools.fidelity.cli`): ``record`` runs
the scenarios on the real cluster and writes ``<scenario>.<mode>.json`` (raw output; normalised
at compare time) into ``--out`` (default ``tests/fixtures/slurm-real`` in the working
directory); ``compare`` runs them on the real cluster and on the simulator and prints the report
(exit status 1 on an unexplained difference); ``replay`` compares the recorded fixtures
(``--fixtures``, the same default) with the simulator (no Slurm needed); ``list`` names the
scenarios. An error is one line on stderr (``fidelity: error: ...``), exit status 2.

This is a tool of the repository, not part of the product: it is not in the wheel.
"""

from tools.fidelity.cli import DEFAULT_FIXTURES, main
from tools.fidelity.cluster import (
    ACTIVE,
    ClusterBusy,
    ClusterInfo,
    FidelityError,
    Foreign,
    NoSlurm,
)
from tools.fidelity.comparison import (
    KNOWN_DIFFERENCES,
    Known,
    TranscriptDifference,
    changed_lines,
    compare,
    explain,
    explaining,
)
from tools.fidelity.normalisation import WINDOW, Context, normalise, similar
from tools.fidelity.reports import Outcome, replay_fixture, report, summary
from tools.fidelity.scenario import (
    GONE,
    LONG_RUN,
    MODES,
    NAME_PREFIX,
    BringBack,
    LoseNode,
    Run,
    Runs,
    Scenario,
    Sleep,
    Step,
    WaitState,
    bring_back,
    lose_node,
    run,
    runs,
    script,
    sleep,
    step_from_json,
    submit,
    wait_state,
)
from tools.fidelity.scenarios import SCENARIOS, scenario_named
from tools.fidelity.targets import SECOND_MARGIN, RealSlurm, SimSlurm, Target
from tools.fidelity.transcript import (
    DEFAULT_LOCK,
    FORMAT_VERSION,
    StepResult,
    Transcript,
    cluster_lock,
    execute,
    fixture_path,
    fixtures,
    iso,
    replay_on_sim,
    run_on_sim,
    run_real,
)

__all__ = [
    "ACTIVE",
    "DEFAULT_FIXTURES",
    "DEFAULT_LOCK",
    "FORMAT_VERSION",
    "GONE",
    "KNOWN_DIFFERENCES",
    "LONG_RUN",
    "MODES",
    "NAME_PREFIX",
    "SCENARIOS",
    "SECOND_MARGIN",
    "WINDOW",
    "BringBack",
    "ClusterBusy",
    "ClusterInfo",
    "Context",
    "FidelityError",
    "Foreign",
    "Known",
    "LoseNode",
    "NoSlurm",
    "Outcome",
    "RealSlurm",
    "Run",
    "Runs",
    "Scenario",
    "SimSlurm",
    "Sleep",
    "Step",
    "StepResult",
    "Target",
    "Transcript",
    "TranscriptDifference",
    "WaitState",
    "bring_back",
    "changed_lines",
    "cluster_lock",
    "compare",
    "execute",
    "explain",
    "explaining",
    "fixture_path",
    "fixtures",
    "iso",
    "lose_node",
    "main",
    "normalise",
    "replay_fixture",
    "replay_on_sim",
    "report",
    "run",
    "run_on_sim",
    "run_real",
    "runs",
    "scenario_named",
    "script",
    "similar",
    "sleep",
    "step_from_json",
    "submit",
    "summary",
    "wait_state",
]
