"""The Slurm commands of the facade; importing this package registers each one."""

from simulators.slurm.commands import sbatch, scontrol

__all__ = ["sbatch", "scontrol"]
