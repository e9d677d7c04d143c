"""The Slurm commands of the facade; importing this package registers each one."""

from simulators.slurm.commands import sacct, sbatch, scancel, scontrol, squeue

__all__ = ["sacct", "sbatch", "scancel", "scontrol", "squeue"]
