"""The write-ahead submission record (DESIGN §12): what a supervisor commits before and after
each act, so that after a crash another can take the job over without repeating or losing one.

- the values: :class:`HeaderRecord` (the plan), :class:`IntentRecord` (before ``start``),
  :class:`ObservedRecord` (after it), :class:`ObservationRecord`, :class:`TransitionRecord`,
  :class:`TerminalRecord`; each stored as an :class:`Entry` with a gapless ``seq``;
- the :class:`RecordStore` protocol: conditional appends under a :class:`Lease`;
- :class:`SqliteRecordStore` (the embedded default), :class:`PostgresRecordStore` (for
  supervisors on several hosts; psycopg 3 is imported only when one is made) and
  :class:`MemoryRecordStore`;
- :mod:`dispatch_core.record.redact`: no credential-bearing value is ever written.
"""

from dispatch_core.record.memory import MemoryRecordStore
from dispatch_core.record.postgres import PostgresRecordStore
from dispatch_core.record.redact import REDACTED, is_secret_name, redact_text, redact_uri
from dispatch_core.record.sqlite import SCHEMA_VERSION, SqliteRecordStore
from dispatch_core.record.store import (
    InvalidRecord,
    JobSummary,
    LeaseConflict,
    RecordStore,
    SeqConflict,
    StoreError,
)
from dispatch_core.record.types import (
    Action,
    Entry,
    HeaderRecord,
    IntentRecord,
    Lease,
    ObservationRecord,
    ObservedRecord,
    Record,
    RecordedSpec,
    TerminalRecord,
    TransitionRecord,
    spec_fingerprint,
    tool_version,
)

__all__ = [
    "REDACTED",
    "SCHEMA_VERSION",
    "Action",
    "Entry",
    "HeaderRecord",
    "IntentRecord",
    "InvalidRecord",
    "JobSummary",
    "Lease",
    "LeaseConflict",
    "MemoryRecordStore",
    "ObservationRecord",
    "ObservedRecord",
    "PostgresRecordStore",
    "Record",
    "RecordStore",
    "RecordedSpec",
    "SeqConflict",
    "SqliteRecordStore",
    "StoreError",
    "TerminalRecord",
    "TransitionRecord",
    "is_secret_name",
    "redact_text",
    "redact_uri",
    "spec_fingerprint",
    "tool_version",
]
