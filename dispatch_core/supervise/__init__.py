"""The supervisor (DESIGN §12): applies a job's recovery policy through any adapter, writing
ahead to the record, with two budgets (launch retries; the policy's rules), crash-safe and
idempotent on (job, submission). :mod:`.cli` is the host CLI ``dispatch``."""

from dispatch_core.supervise.backoff import Backoff
from dispatch_core.supervise.classify import LAUNCH_CAUSES, Choice, choose_rule
from dispatch_core.supervise.status import Status, describe, status_of
from dispatch_core.supervise.supervisor import Supervisor, default_owner
from dispatch_core.supervise.view import JobView, rebuild

__all__ = [
    "LAUNCH_CAUSES",
    "Backoff",
    "Choice",
    "JobView",
    "Status",
    "Supervisor",
    "choose_rule",
    "default_owner",
    "describe",
    "rebuild",
    "status_of",
]
