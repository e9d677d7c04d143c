"""Deliberately broken supervisors: the proof that the invariants have teeth."""

from __future__ import annotations

from typing import Final

from dispatch_core import Cause, JobID, Observation
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


class CancelsForeignObjects(Supervisor):
    """A cancel stops every object find shows under the job's name, foreign ones too."""

    def _drive_cancel(self, view: JobView) -> bool:
        find = self.backend.find

        def everything(job: JobID) -> list[Observation]:
            return [o.model_copy(update={"foreign": False}) for o in find(job)]

        self.backend.find = everything  # type: ignore[method-assign,assignment]
        try:
            return super()._drive_cancel(view)
        finally:
            del self.backend.find


class IgnoresRuleBudgets(Supervisor):
    """Counts no use of a rule: every failure finds its rule's budget untouched."""

    def _failed(self, view: JobView, seen: Observation, cause: Cause) -> bool:
        view.uses.clear()
        return super()._failed(view, seen, cause)


BROKEN: Final[dict[str, type[Supervisor]]] = {
    "starts-without-find": StartsWithoutFind,
    "cancels-foreign-objects": CancelsForeignObjects,
    "ignores-rule-budgets": IgnoresRuleBudgets,
}

__all__ = ["BROKEN", "CancelsForeignObjects", "IgnoresRuleBudgets", "StartsWithoutFind"]
