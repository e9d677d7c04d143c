"""The interleaving simulator (DESIGN §12, the go/dispatch ``internal/sim`` idea): several
supervisors on one record store and one cluster, crashes at any write, lease expiry on the
virtual clock and adapter faults, all drawn from one seed; after every step it checks the
invariants (:func:`tools.interleave.sim.check`):

- ``one-object-per-submission``: the cluster never made two objects for one (job, submission);
- ``one-live-object-per-job``: never two live objects of one job at once;
- ``gapless-seq``: every job's record is seq 0, 1, 2, ... with the header first;
- ``no-repeated-attempt`` / ``epochs-increasing``: the DISPATCH_ATTEMPT of every execution of
  a job is new, its DISPATCH_EPOCH above the one before (what the cluster injected);
- ``no-foreign-write``: every write on an object (stop, requeue, hold, release) is on one of
  the job's own objects that the record intended, by the supervisor holding the job's live
  lease;
- ``launch-budget`` / ``rule-budget``: no budget is exceeded;
- ``success-is-real``: a job recorded succeeded had its object succeed;
- ``terminal-within-k``: once the faults stop, every job reaches a terminal record within K
  (``--calm``) steps of the last outside act (the faults' end, or a later host's submit or
  person's release: a job held for a person waits on the person, not on the supervisor).

Usage::

    python -m tools.interleave --seed 7                 # one seed; on failure: the replay
    python -m tools.interleave --seed 7 --stop-at 42    # replay, dump record + ground truth
    python -m tools.interleave --seeds 10000            # explore, with progress and seeds/min
    python -m tools.interleave --seeds 200 --harness slurm-sim

The figure (issue 15): ``python -m tools.interleave --seeds 10000`` (memory-slurm, 3 jobs, 2
supervisors, 80 fault steps, K=150; one process on this shared 2-core host): 10,000 of 10,000
seeds passed at 498 seeds/min (20 minutes) on the supervisor of 7a58eec, and at 670 seeds/min
on the one before it (a lighter load); slurm-sim runs about 75-115 seeds/min.
"""

from tools.interleave.sim import HARNESSES, Config, Outcome, Violation, run

__all__ = ["HARNESSES", "Config", "Outcome", "Violation", "run"]
