"""The Slurm adapter: the dispatch SPI over the Slurm command line, locally or over SSH."""

from adapters.slurm.backend import SlurmBackend
from adapters.slurm.identity import (
    COMMENT_PREFIX,
    HoldBase,
    SlurmComment,
    decode_hold,
    encode_hold,
    parse_slurm_comment,
    slurm_comment,
)
from adapters.slurm.script import BatchSubmission, batch_submission, slurm_options
from adapters.slurm.transport import LocalTransport, SshTransport, Transport

__all__ = [
    "COMMENT_PREFIX",
    "BatchSubmission",
    "HoldBase",
    "LocalTransport",
    "SlurmBackend",
    "SlurmComment",
    "SshTransport",
    "Transport",
    "batch_submission",
    "decode_hold",
    "encode_hold",
    "parse_slurm_comment",
    "slurm_comment",
    "slurm_options",
]
