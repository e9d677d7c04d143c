"""A deterministic Slurm 22.05 simulator with a faithful command-line facade."""

from simulators.slurm.config import SlurmConfig
from simulators.slurm.controller import AcctRecord, Controller, HoldKind, Job, JobState, SlurmError
from simulators.slurm.sim import SlurmSim

__all__ = [
    "AcctRecord",
    "Controller",
    "HoldKind",
    "Job",
    "JobState",
    "SlurmConfig",
    "SlurmError",
    "SlurmSim",
]
