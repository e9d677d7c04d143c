"""Deliberately broken supervisors: the proof that the invariants have teeth."""

from __future__ import annotations

from typing import Final

from dispatch_core.supervise import Supervisor
from dispatch_core.supervise.view import JobView


class StartsWithoutFind(Supervisor):
    """After a crash (an intent without its observed record) it starts the submission again
    without looking first: on a start that is not idempotent, two objects for one (job, N)."""

    def _resolve(self, view: JobView) -> None:
        spec = self._spec_for(view)
        if spec is None:
            self._hold_for_spec(view)
            return
        self._launch(view, spec)


BROKEN: Final[dict[str, type[Supervisor]]] = {"starts-without-find": StartsWithoutFind}

__all__ = ["BROKEN", "StartsWithoutFind"]
