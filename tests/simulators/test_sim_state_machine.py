"""Random command sequences never crash the simulator and keep its invariants:

- ids are unique among live jobs, and the name index holds exactly the live jobs;
- every requeue moves a job's SubmitTime strictly forward;
- accounting is consistent: the live job's current row has its id, name and submit time, rows
  of one job id are in database order, an ended row has an end no earlier than its start;
- CPUs are conserved: free plus those of running jobs is the cluster's total.
"""

from __future__ import annotations

import contextlib

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from simulators.slurm import JobState, SlurmConfig, SlurmError, SlurmSim

NAMES = st.sampled_from(["dj-A", "dj-a", "dj-B", "dj-X,dj-Y", "other"])
TIME_SPECS = st.sampled_from(
    ["now", "now+60", "uts2111407759", "2030-01-01T00:00:00", "uts0", "10000-01-01", "bogus"]
)
SCRIPT = "#!/bin/sh\ntrue\n"


class SimMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        config = SlurmConfig(max_job_id=6, min_job_age=5, nodes=("n1", "n2"), cpus_per_node=2)
        self.sim = SlurmSim(config, seed=1)
        self.submits: dict[int, dict[int, int]] = {}  # job seq -> restart count -> SubmitTime

    def run(self, *argv: str, stdin: str | None = None) -> None:
        done = self.sim.run(list(argv), stdin=stdin)
        assert done.returncode in (0, 1), done
        assert isinstance(done.stdout, str) and isinstance(done.stderr, str)

    def ids(self) -> list[int]:
        return sorted(self.sim.controller.jobs)

    @rule(name=NAMES, hold=st.booleans(), nodes=st.sampled_from(["1", "2", "3"]))
    def sbatch(self, name: str, hold: bool, nodes: str) -> None:
        args = ["sbatch", "--parsable", f"--job-name={name}", f"--nodes={nodes}"]
        self.run(*args, *(["--hold"] if hold else []), stdin=SCRIPT)

    @precondition(lambda self: self.sim.controller.jobs)
    @rule(i=st.integers(0, 20), spec=TIME_SPECS)
    def update_start_time(self, i: int, spec: str) -> None:
        job = self.ids()[i % len(self.ids())]
        self.run("scontrol", "update", f"JobId={job}", f"StartTime={spec}")

    @precondition(lambda self: self.sim.controller.jobs)
    @rule(i=st.integers(0, 20), verb=st.sampled_from(["requeue", "requeuehold", "hold", "release"]))
    def scontrol(self, i: int, verb: str) -> None:
        job_id = self.ids()[i % len(self.ids())]
        self.run("scontrol", verb, str(job_id))

    @precondition(lambda self: self.sim.controller.jobs)
    @rule(i=st.integers(0, 20), code=st.sampled_from([0, 1]))
    def finish(self, i: int, code: int) -> None:
        job = self.sim.controller.jobs[self.ids()[i % len(self.ids())]]
        if job.state is JobState.RUNNING:
            self.sim.finish(job.job_id, code)

    @precondition(lambda self: self.sim.controller.jobs)
    @rule(i=st.integers(0, 20))
    def cancel(self, i: int) -> None:
        job = self.sim.controller.jobs[self.ids()[i % len(self.ids())]]
        with contextlib.suppress(SlurmError):  # finished, or COMPLETING on its way back
            self.sim.controller.cancel(job, by=0)

    @rule(node=st.sampled_from(["n1", "n2"]))
    def node_failure(self, node: str) -> None:
        self.sim.controller.node_failure(node)

    @rule(seconds=st.sampled_from([1, 3, 30, 130]))
    def advance(self, seconds: int) -> None:
        self.sim.advance(seconds)

    @invariant()
    def name_index_holds_exactly_the_live_jobs(self) -> None:
        controller = self.sim.controller
        indexed = sorted(i for ids in controller.by_name.values() for i in ids)
        assert indexed == sorted(controller.jobs)
        for job_id, job in controller.jobs.items():
            assert job.job_id == job_id
            assert job_id in controller.by_name[job.name.lower()]
            assert controller.config.first_job_id <= job_id < controller.config.max_job_id

    @invariant()
    def submit_time_moves_forward_on_every_requeue(self) -> None:
        for job in self.sim.controller.jobs.values():
            if job.state is JobState.COMPLETING:
                continue  # the requeue has not moved SubmitTime yet
            seen = self.submits.setdefault(job.seq, {})
            assert seen.setdefault(job.restart_count, job.submit_time) == job.submit_time
            earlier = [t for r, t in seen.items() if r < job.restart_count]
            assert all(t < job.submit_time for t in earlier), (job.job_id, seen)

    @invariant()
    def accounting_is_consistent(self) -> None:
        controller = self.sim.controller
        for job in controller.jobs.values():
            if job.state is JobState.COMPLETING:
                continue
            record = job.record
            assert record is not None
            assert (record.job_id, record.name) == (job.job_id, job.name)
            assert record.submit == job.submit_time
        for rows in controller.acct_by_id.values():
            assert [r.db_index for r in rows] == sorted(r.db_index for r in rows)
            for row in rows:
                if row.end and row.start:
                    assert row.end >= row.start

    @invariant()
    def cpus_are_conserved(self) -> None:
        controller = self.sim.controller
        config = controller.config
        busy = sum(
            j.cpus
            for j in controller.jobs.values()
            if j.state in (JobState.RUNNING,) and j.nodelist
        )
        assert busy + sum(controller.free_cpus.values()) == len(config.nodes) * config.cpus_per_node


SimMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=40, deadline=None)
TestSimMachine = SimMachine.TestCase
