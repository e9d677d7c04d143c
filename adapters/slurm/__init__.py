"""The Slurm adapter: the dispatch SPI over the Slurm command line, locally or over SSH."""

from adapters.slurm.backend import SlurmBackend
from adapters.slurm.script import BatchSubmission, batch_submission, slurm_options
from adapters.slurm.transport import LocalTransport, SshTransport, Transport

__all__ = [
    "BatchSubmission",
    "LocalTransport",
    "SlurmBackend",
    "SshTransport",
    "Transport",
    "batch_submission",
    "slurm_options",
]
