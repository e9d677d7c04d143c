"""The configuration of one simulated Slurm cluster, named after the slurm.conf keys it models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

VERSION_22_05: Final = "22.05.8"
MAX_JOB_ID_CAP: Final = 67_043_328


@dataclass(frozen=True)
class SlurmConfig:
    """What slurm.conf would say. Defaults follow Slurm 22.05 and the lab cluster of
    ``../shared/reference/slurm-lab.md`` (one node ``vm`` with 2 CPUs, partition ``debug``).

    - ``first_job_id``/``max_job_id``: ids run from FirstJobId to MaxJobId - 1 (MaxJobId itself
      is never issued), then wrap, skipping ids still in memory.
    - ``run_time``: seconds every job's script runs before exiting 0; None (the default) means
      jobs run until a test ends them (``SlurmSim.finish``, ``fail``, ``run_for``).
    - ``max_job_count``: MaxJobCount (10,000): job records slurmctld keeps before refusing.
    - ``min_job_age``: seconds a finished job stays in squeue (values below 2 become 2).
    - ``job_comment``: ``AccountingStoreFlags=job_comment``; accounting stores a record's comment
      only with it, and only when the record ends.
    - ``job_requeue``: ``JobRequeue``; the default of a job's requeue flag.
    - ``requeue_delay``: ``AuthInfo=cred_expire`` (120 s); a requeued job becomes eligible
      ``requeue_delay + 1`` s after the requeue.
    - ``alloc_node``: the name ``scontrol show job`` gives as ``AllocNode`` (slurmctld's name
      for the submitting client's address, ``localhost`` when commands reach it over
      127.0.0.1); None means ``submit_host``.
    - ``pending_mem``: the memory ``scontrol show job`` puts in a pending job's TRES when the
      job asked for none (``10847M`` on the lab's nodes); None leaves it out.
    - ``sched_latency``: seconds from a submission or release to the scheduler pass that starts it;
      ``sched_interval``: the periodic pass that starts jobs whose begin time simply expired.
    """

    cluster_name: str = "lab"
    first_job_id: int = 1
    max_job_id: int = MAX_JOB_ID_CAP
    min_job_age: int = 300
    job_comment: bool = True
    job_requeue: bool = True
    requeue_delay: int = 120
    accounting: bool = True
    nodes: tuple[str, ...] = ("vm",)
    cpus_per_node: int = 2
    partition: str = "debug"
    user: str = "root"
    uid: int = 0
    account: str = "lab"
    submit_host: str = "vm"
    alloc_node: str | None = None
    pending_mem: str | None = None
    sched_latency: int = 1
    sched_interval: int = 60
    kill_wait: int = 30
    max_job_count: int = 10_000
    run_time: int | None = None
    version: str = VERSION_22_05
    partitions: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.first_job_id < 1:
            raise ValueError("FirstJobId must be at least 1")
        if self.max_job_id <= self.first_job_id:
            raise ValueError("MaxJobId must exceed FirstJobId (MaxJobId itself is never issued)")
        if self.max_job_id > MAX_JOB_ID_CAP:
            raise ValueError(f"MaxJobId is capped at {MAX_JOB_ID_CAP}")
        if not self.nodes or self.cpus_per_node < 1:
            raise ValueError("a cluster needs at least one node with one CPU")
        if self.partitions and self.partition not in self.partitions:
            raise ValueError(
                f"the default partition {self.partition} is not one of the partitions "
                f"({','.join(self.partitions)}): every submission without -p would be refused"
            )

    @property
    def effective_min_job_age(self) -> int:
        """MinJobAge as slurmctld applies it (values below 2 are forced to 2)."""
        return max(2, self.min_job_age)

    @property
    def effective_max_job_count(self) -> int:
        """MaxJobCount as slurmctld applies it: reset to MaxJobId - FirstJobId + 1 when larger."""
        return min(self.max_job_count, self.max_job_id - self.first_job_id + 1)

    @property
    def all_partitions(self) -> tuple[str, ...]:
        return self.partitions or (self.partition,)
