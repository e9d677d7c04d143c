"""The real cluster as the simulator must know it (:class:`ClusterInfo`, read from ``scontrol
show config``, ``sinfo`` and ``sacctmgr``), the jobs of others found on it (:class:`Foreign`),
and the errors that stop a scenario."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from adapters.slurm.parse import config_number, parse_config
from simulators.slurm.config import SlurmConfig


class FidelityError(Exception):
    """A scenario cannot run: no Slurm, a busy cluster, a malformed fixture."""


class NoSlurm(FidelityError):
    """No real Slurm answers on this host."""


class ClusterBusy(FidelityError):
    """Other jobs stayed in squeue: a scenario needs the cluster to itself."""


@dataclass(frozen=True)
class ClusterInfo:
    """What the simulator must know of the real cluster, from ``scontrol show config``,
    ``sinfo`` and ``sacctmgr``."""

    cluster_name: str = "lab"
    first_job_id: int = 1
    max_job_id: int = 20
    max_job_count: int = 20
    min_job_age: int = 2
    job_comment: bool = True
    job_requeue: bool = True
    cred_expire: int = 120
    accounting: bool = True
    nodes: tuple[str, ...] = ("vm",)
    cpus_per_node: int = 2
    partition: str = "debug"
    partitions: tuple[str, ...] = ()
    user: str = "root"
    uid: int = 0
    account: str = "lab"
    host: str = "vm"
    kill_wait: int = 30
    version: str = "22.05.8"
    alloc_node: str | None = None
    pending_mem: str | None = None
    sched_interval: int = 60
    slurmd_timeout: int = 300
    message_timeout: int = 10
    """These two (Slurm's defaults here) set a window of :mod:`tools.fidelity.guarantees`; the
    simulator does not model them."""

    @property
    def mode(self) -> str:
        return "comment" if self.job_comment else "nocomment"

    @property
    def id_count(self) -> int:
        """How many ids slurmctld hands out: FirstJobId .. MaxJobId - 1."""
        return self.max_job_id - self.first_job_id

    def next_id(self, job_id: int) -> int:
        """The id slurmctld tries after ``job_id``."""
        return job_id + 1 if job_id + 1 < self.max_job_id else self.first_job_id

    def sim_config(self) -> SlurmConfig:
        return SlurmConfig(
            cluster_name=self.cluster_name,
            first_job_id=self.first_job_id,
            max_job_id=self.max_job_id,
            max_job_count=self.max_job_count,
            min_job_age=self.min_job_age,
            job_comment=self.job_comment,
            job_requeue=self.job_requeue,
            requeue_delay=self.cred_expire,
            accounting=self.accounting,
            nodes=self.nodes,
            cpus_per_node=self.cpus_per_node,
            partition=self.partition,
            partitions=self.partitions if len(self.partitions) > 1 else (),
            user=self.user,
            uid=self.uid,
            account=self.account,
            submit_host=self.host,
            alloc_node=self.alloc_node,
            pending_mem=self.pending_mem,
            sched_interval=self.sched_interval,
            kill_wait=self.kill_wait,
            version=self.version,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            item.name: list(value)
            if isinstance(value := getattr(self, item.name), tuple)
            else value
            for item in dataclasses.fields(self)
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterInfo:
        known = {item.name for item in dataclasses.fields(cls)}
        values: dict[str, Any] = {
            key: tuple(value) if isinstance(value, list) else value
            for key, value in data.items()
            if key in known
        }
        return cls(**values)

    @classmethod
    def parse(
        cls,
        config_text: str,
        sinfo_text: str,
        *,
        user: str,
        uid: int,
        account: str | None,
        host: str,
    ) -> ClusterInfo:
        """From ``scontrol show config`` and ``sinfo -h -N -o '%N|%c|%P'``."""
        config = parse_config(config_text)
        if not config:
            raise FidelityError("scontrol show config printed no configuration")

        def number(key: str, default: int) -> int:
            found = config_number(config, key)
            return default if found is None else found

        cred = re.search(r"cred_expire=(\d+)", config.get("AuthInfo", ""))
        interval = re.search(r"\bsched_interval=(\d+)", config.get("SchedulerParameters", ""))
        nodes: list[str] = []
        cpus: dict[str, int] = {}
        partitions: list[str] = []
        default_partition: str | None = None
        for line in sinfo_text.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 3:
                continue
            node, count, partition = parts
            if node not in cpus:
                nodes.append(node)
                cpus[node] = int(count) if count.isdigit() else 1
            name = partition.rstrip("*")
            if name not in partitions:
                partitions.append(name)
            if partition.endswith("*"):
                default_partition = name
        if not nodes:
            raise FidelityError("sinfo listed no nodes")
        flags = config.get("AccountingStoreFlags", "")
        storage = config.get("AccountingStorageType", "accounting_storage/slurmdbd")
        return cls(
            cluster_name=config.get("ClusterName", "lab"),
            first_job_id=number("FirstJobId", 1),
            max_job_id=number("MaxJobId", 67_043_328),
            max_job_count=number("MaxJobCount", 10_000),
            min_job_age=number("MinJobAge", 300),
            job_comment="job_comment" in flags.split(","),
            job_requeue=config.get("JobRequeue", "1") == "1",
            cred_expire=int(cred.group(1)) if cred else 120,
            accounting=storage != "accounting_storage/none",
            nodes=tuple(nodes),
            cpus_per_node=min(cpus.values()),
            partition=default_partition or partitions[0],
            partitions=tuple(partitions),
            user=user,
            uid=uid,
            account=account or "lab",
            host=host,
            kill_wait=number("KillWait", 30),
            version=config.get("SLURM_VERSION", "22.05.8"),
            sched_interval=int(interval.group(1)) if interval else 60,
            slurmd_timeout=number("SlurmdTimeout", 300),
            message_timeout=number("MessageTimeout", 10),
        )


@dataclass(frozen=True, order=True)
class Foreign:
    """A job of someone else that was active (pending or running) when a scenario started;
    the simulator gets a stand-in with the same id, name, CPUs and nodes (held unless it
    was running), so ids, resources and listings stay comparable."""

    job_id: int
    name: str
    state: str
    cpus: int = 1
    nodes: int = 1

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Foreign:
        return cls(int(data["job_id"]), data["name"], data["state"], data["cpus"], data["nodes"])


ACTIVE: Final = frozenset(
    {"PENDING", "RUNNING", "SUSPENDED", "CONFIGURING", "RESIZING", "REQUEUED", "SPECIAL_EXIT"}
)
"""States of a job that will not leave squeue on its own soon."""
