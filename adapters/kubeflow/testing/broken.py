"""Deliberately broken Kubeflow adapters and a broken readmission gate (see CATALOGUE)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from adapters.kubeflow.admission import ReadmissionGate


class ReadyBeforeWrite(ReadmissionGate):
    """The gate marks its check Ready before it writes the next execution id: Kueue unsuspends
    the TrainJob at once, the Trainer webhook then refuses the id's write (the TrainJob is no
    longer suspended), and the readmission runs under the identity the last admission had."""

    def readmit(
        self,
        workload: dict[str, Any],
        trainjob: Mapping[str, Any],
        execution: int,
        admission: str,
    ) -> bool:
        acted = self.mark(workload, "Ready", self._ready_message(trainjob, execution))
        with contextlib.suppress(ApiException):  # too late: refused; the broken gate never looks
            self.write_execution(trainjob, execution, admission)
        return acted
