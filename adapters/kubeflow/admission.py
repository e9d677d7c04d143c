"""The readmission gate ``dispatch-admission``: a Kueue AdmissionCheck controller that gives
every admission of a dispatch TrainJob its own execution id (DESIGN §11, issue 14).

Kueue readmits the *same* Workload, TrainJob, JobSet and Jobs after an eviction: without a new
id the ranks of two admissions would see the same ``DISPATCH_ATTEMPT``. The ClusterQueue lists
an AdmissionCheck (``dispatch-readmission``) whose ``controllerName`` is the gate's
(``dispatch.io/readmission-gate``); Kueue admits a Workload only once every check is ``Ready``
and resets every check to ``Pending`` on eviction, so each admission passes through here.

The rule, one level-based pass (:meth:`ReadmissionGate.sync`) over the Workloads:

- only a Workload with ``QuotaReserved=True`` whose ``status.admissionChecks`` entry for the
  gate's check is ``Pending`` is considered; only when the gate's AdmissionCheck exists and
  names the gate's controller;
- its controlling owner must be a TrainJob (``trainer.kubeflow.org``) of the same uid, and the
  TrainJob dispatch's: labels ``dispatch/job`` (a job id, upper-case ULID) and
  ``dispatch/submission`` (a canonical decimal in [1, 1,000,000)) parse, and its
  ``dispatch.io/dispatch`` runtime patch carries one canonical ``dispatch/execution`` for every
  replicatedJob. Anything else is never touched (its check stays ``Pending``);
- the admission is named ``<workload uid>/<evictions + 1>`` (the sum of
  ``status.schedulingStats.evictions[].count``). When the TrainJob's ``dispatch/admission``
  annotation already names it, the gate wrote its id before (and then stopped): it only marks
  the check ``Ready``. Otherwise ONE TrainJob update, carrying the ``resourceVersion`` just
  read, bumps ``dispatch/execution`` by one (and ``dispatch/epoch-pad`` to match) in every
  replicatedJob of the dispatch patch and sets the annotation; only after that update
  succeeded is the Workload's check marked ``Ready`` (status subresource, with its
  ``resourceVersion``). A 409 on either write is re-read and judged again, never retried
  blindly; a refusal (the Trainer webhook while a replicatedJob is still active) leaves the
  check ``Pending`` for the next pass;
- an execution id that would pass 99,999 (the epoch encoding's five digits) is not written:
  the check is marked ``Rejected`` with that reason (Kueue then deactivates the Workload).

So the gate is idempotent under restarts of itself: it reads what it wrote before writing. It
uses only the official ``kubernetes`` client over HTTP (``CustomObjectsApi``). Calls per
admission: one GET of the TrainJob, one PUT of it, one PUT of the Workload's status (the pass
itself: one GET of the AdmissionCheck and one LIST of Workloads).
"""

from __future__ import annotations

import argparse
import copy
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from adapters.kubeflow.names import ANNOTATION_ATTEMPT as ATTEMPT
from adapters.kubeflow.names import parse_identity
from dispatch_core import Clock, EncodingError, WallClock
from dispatch_core.identity import parse_decimal

log = logging.getLogger(__name__)

KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_VERSION: Final = "v1beta2"
TRAINER_GROUP: Final = "trainer.kubeflow.org"
TRAINER_VERSION: Final = "v1alpha1"
CHECK_NAME: Final = "dispatch-readmission"
CONTROLLER_NAME: Final = "dispatch.io/readmission-gate"
PATCH_MANAGER: Final = "dispatch.io/dispatch"
JOB_LABEL: Final = "dispatch/job"
SUBMISSION_LABEL: Final = "dispatch/submission"
EXECUTION_ANNOTATION: Final = "dispatch/execution"
EPOCH_PAD_ANNOTATION: Final = "dispatch/epoch-pad"
ADMISSION_ANNOTATION: Final = "dispatch/admission"
EXECUTION_DIGITS: Final = 5
MAX_EXECUTION: Final = 10**EXECUTION_DIGITS - 1
"""The largest execution id: R = execution * 10 + restart-attempt stays below EpochBound."""
TRIES: Final = 5
"""How often one Workload is re-read and judged again after a 409 within one pass."""
REQUEST_TIMEOUT: Final = 30.0
"""Seconds one API request may take."""


def epoch_pad(execution: int) -> str:
    """The zeros that put ``execution`` (then the restart digit) in the epoch's low six digits."""
    return "0" * (EXECUTION_DIGITS - len(str(execution)))


def evictions(workload: Mapping[str, Any]) -> int:
    """The Workload's evictions so far: ``status.schedulingStats.evictions[].count`` summed
    (a count that is not a non-negative integer counts as nothing is known: raises)."""
    stats = (workload.get("status") or {}).get("schedulingStats") or {}
    total = 0
    for entry in stats.get("evictions") or []:
        count = entry.get("count", 0) if isinstance(entry, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"eviction count {count!r} is not a non-negative integer")
        total += count
    return total


def admission_of(workload: Mapping[str, Any]) -> str:
    """The name of the Workload's current admission: ``<uid>/<evictions + 1>``."""
    uid = str((workload.get("metadata") or {}).get("uid", ""))
    return f"{uid}/{evictions(workload) + 1}"


def is_dispatch(trainjob: Mapping[str, Any]) -> bool:
    """Whether the TrainJob is dispatch's, judged as the adapter's own identity check judges
    it (:func:`~adapters.kubeflow.names.parse_identity`: the job label a job id written
    canonically, the submission label and the attempt annotation canonical decimals, and the
    name the one they imply, byte for byte). A look-alike the adapter calls foreign is never
    written on (DESIGN §9: no write lands on an object whose identity check failed)."""
    metadata = trainjob.get("metadata") or {}
    name = metadata.get("name")
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    if not isinstance(name, str) or not isinstance(labels, Mapping):
        return False
    if not isinstance(annotations, Mapping):
        return False
    texts = [labels.get(JOB_LABEL), labels.get(SUBMISSION_LABEL), annotations.get(ATTEMPT)]
    if not all(isinstance(text, str | None) for text in texts):
        return False  # a value that is no text is no identity (parse_identity takes texts)
    try:
        parse_identity(name, labels, annotations)
    except EncodingError:
        return False
    return True


def dispatch_patch(trainjob: Mapping[str, Any]) -> dict[str, Any] | None:
    """The TrainJob's runtime patch whose manager is dispatch's, or None."""
    for patch in (trainjob.get("spec") or {}).get("runtimePatches") or []:
        if isinstance(patch, dict) and patch.get("manager") == PATCH_MANAGER:
            return patch
    return None


def _pod_annotations(entry: Mapping[str, Any]) -> Any:
    template = ((entry.get("template") or {}).get("spec") or {}).get("template") or {}
    return (template.get("metadata") or {}).get("annotations")


def current_execution(trainjob: Mapping[str, Any]) -> int | None:
    """The execution id in the dispatch patch: the one canonical decimal in [1, MAX_EXECUTION]
    every replicatedJob's pod template carries, or None (absent, unparsable, or they differ)."""
    patch = dispatch_patch(trainjob)
    if patch is None:
        return None
    spec = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
    entries = spec.get("replicatedJobs")
    if not isinstance(entries, list) or not entries:
        return None
    found: set[int] = set()
    for entry in entries:
        annotations = _pod_annotations(entry) if isinstance(entry, dict) else None
        text = annotations.get(EXECUTION_ANNOTATION) if isinstance(annotations, dict) else None
        if not isinstance(text, str):
            return None
        try:
            found.add(parse_decimal(text, "execution", minimum=1, bound=MAX_EXECUTION + 1))
        except ValueError:
            return None
    return found.pop() if len(found) == 1 else None


def with_execution(trainjob: Mapping[str, Any], execution: int, admission: str) -> dict[str, Any]:
    """A copy of the TrainJob with ``execution`` (and its pad) in every replicatedJob of the
    dispatch patch and the admission marker set: the one update the gate writes."""
    updated = copy.deepcopy(dict(trainjob))
    updated.pop("status", None)
    metadata = updated.setdefault("metadata", {})
    metadata.setdefault("annotations", {})[ADMISSION_ANNOTATION] = admission
    patch = dispatch_patch(updated)
    assert patch is not None  # current_execution() found it
    for entry in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
        annotations = entry["template"]["spec"]["template"]["metadata"]["annotations"]
        annotations[EXECUTION_ANNOTATION] = str(execution)
        annotations[EPOCH_PAD_ANNOTATION] = epoch_pad(execution)
    return updated


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for entry in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(entry, dict) and entry.get("type") == kind:
            return entry
    return None


def _is_true(obj: Mapping[str, Any], kind: str) -> bool:
    found = _condition(obj, kind)
    return found is not None and found.get("status") == "True"


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


class ReadmissionGate:
    """The AdmissionCheck controller for ``check_name`` (see the module's rule), over the
    official client: ``sync()`` is one pass, ``run(stop_event, interval)`` a process's loop.
    ``namespace`` limits it to one namespace (None: every namespace)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        check_name: str = CHECK_NAME,
        controller_name: str = CONTROLLER_NAME,
        namespace: str | None = None,
        clock: Clock | None = None,
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.check_name = check_name
        self.controller_name = controller_name
        self.namespace = namespace
        self.clock: Clock = clock if clock is not None else WallClock()
        self.timeout = request_timeout
        self._said: str | None = None

    # -- one pass ---------------------------------------------------------------------------------

    def sync(self) -> int:
        """One level-based pass: act on every Workload waiting on the gate's check; how many
        it marked Ready (or Rejected)."""
        if not self._check_is_ours():
            return 0
        acted = 0
        for workload in self._workloads():
            try:
                if self._admit(workload):
                    acted += 1
            except ApiException as error:
                log.warning(
                    "workload %s: %s %s (left for the next pass)",
                    _name(workload),
                    error.status,
                    error.reason,
                )
        return acted

    def run(self, stop_event: threading.Event, interval: float) -> None:
        """Pass after pass, ``interval`` seconds apart, until ``stop_event`` is set; a pass that
        fails is logged and the next one tries again."""
        while True:
            try:
                self.sync()
            except Exception as error:  # a pass's failure must not end the controller
                log.warning("pass failed: %s: %s", type(error).__name__, _one_line(error))
            if stop_event.wait(interval):
                return

    # -- reading ----------------------------------------------------------------------------------

    def _check_is_ours(self) -> bool:
        """Whether the AdmissionCheck exists and names this controller; marks it Active once."""
        try:
            check = self.api.get_cluster_custom_object(
                KUEUE_GROUP,
                KUEUE_VERSION,
                "admissionchecks",
                self.check_name,
                _request_timeout=self.timeout,
            )
        except ApiException as error:
            if error.status == 404:
                self._say(f"no AdmissionCheck {self.check_name!r}: acting on nothing")
                return False
            raise
        if not isinstance(check, dict):
            return False
        controller = (check.get("spec") or {}).get("controllerName")
        if controller != self.controller_name:
            self._say(
                f"AdmissionCheck {self.check_name!r} names controller {controller!r}, not "
                f"{self.controller_name!r}: acting on nothing"
            )
            return False
        if not _is_true(check, "Active"):
            self._activate(check)
        return True

    def _activate(self, check: dict[str, Any]) -> None:
        """Set the AdmissionCheck's ``Active`` condition (Kueue keeps a ClusterQueue whose
        checks are not active from admitting anything)."""
        updated = copy.deepcopy(check)
        conditions = [
            c
            for c in (updated.setdefault("status", {}).get("conditions") or [])
            if isinstance(c, dict) and c.get("type") != "Active"
        ]
        conditions.append(
            {
                "type": "Active",
                "status": "True",
                "reason": "Active",
                "message": f"{self.controller_name} is running",
                "lastTransitionTime": self._now(),
            }
        )
        updated["status"]["conditions"] = conditions
        try:
            self.api.replace_cluster_custom_object_status(
                KUEUE_GROUP,
                KUEUE_VERSION,
                "admissionchecks",
                self.check_name,
                updated,
                _request_timeout=self.timeout,
            )
        except ApiException as error:
            log.warning("could not mark AdmissionCheck active: %s %s", error.status, error.reason)

    def _workloads(self) -> list[dict[str, Any]]:
        if self.namespace is None:
            listed = self.api.list_cluster_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, "workloads", _request_timeout=self.timeout
            )
        else:
            listed = self.api.list_namespaced_custom_object(
                KUEUE_GROUP,
                KUEUE_VERSION,
                self.namespace,
                "workloads",
                _request_timeout=self.timeout,
            )
        items = listed.get("items") if isinstance(listed, dict) else None
        return [w for w in items or [] if isinstance(w, dict)]

    def waits_on(self, workload: Mapping[str, Any]) -> bool:
        """Whether the Workload waits on this gate: quota reserved, not finished, and the
        gate's check Pending (whether it is dispatch's is judged in the pass)."""
        return self._pending(workload)

    def _pending(self, workload: Mapping[str, Any]) -> bool:
        """Quota reserved, not finished, and the gate's check Pending."""
        if not _is_true(workload, "QuotaReserved") or _is_true(workload, "Finished"):
            return False
        for check in (workload.get("status") or {}).get("admissionChecks") or []:
            if isinstance(check, dict) and check.get("name") == self.check_name:
                return check.get("state") == "Pending"
        return False

    def _owner(self, workload: Mapping[str, Any]) -> tuple[str, str] | None:
        """The controlling TrainJob owner's (name, uid), or None."""
        for ref in (workload.get("metadata") or {}).get("ownerReferences") or []:
            if not isinstance(ref, dict) or ref.get("controller") is not True:
                continue
            api_version = str(ref.get("apiVersion", ""))
            if ref.get("kind") == "TrainJob" and api_version.startswith(f"{TRAINER_GROUP}/"):
                name, uid = ref.get("name"), ref.get("uid")
                if isinstance(name, str) and isinstance(uid, str) and name and uid:
                    return name, uid
            return None
        return None

    def _trainjob(self, namespace: str, name: str, uid: str) -> dict[str, Any] | None:
        """The TrainJob ``namespace/name`` if it is still the owner (its uid), else None."""
        try:
            found = self.api.get_namespaced_custom_object(
                TRAINER_GROUP,
                TRAINER_VERSION,
                namespace,
                "trainjobs",
                name,
                _request_timeout=self.timeout,
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        if not isinstance(found, dict) or (found.get("metadata") or {}).get("uid") != uid:
            return None
        return found

    def _reread(self, workload: Mapping[str, Any]) -> dict[str, Any] | None:
        metadata = workload.get("metadata") or {}
        try:
            found = self.api.get_namespaced_custom_object(
                KUEUE_GROUP,
                KUEUE_VERSION,
                str(metadata.get("namespace", "")),
                "workloads",
                str(metadata.get("name", "")),
                _request_timeout=self.timeout,
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        if not isinstance(found, dict) or (found.get("metadata") or {}).get("uid") != metadata.get(
            "uid"
        ):
            return None
        return found

    # -- judging and writing ---------------------------------------------------------------

    def _admit(self, workload: dict[str, Any]) -> bool:
        """Judge one Workload and act on it; a 409 on a write re-reads and judges again."""
        current: dict[str, Any] | None = workload
        for _ in range(TRIES):
            if current is None or not self._pending(current):
                return False
            try:
                return self._judge(current)
            except ApiException as error:
                if error.status != 409:
                    raise
            current = self._reread(current)
        log.warning("workload %s: still conflicting after %d reads", _name(workload), TRIES)
        return False

    def ours(self, trainjob: Mapping[str, Any]) -> bool:
        """Whether the gate acts on the TrainJob: dispatch's, as :func:`is_dispatch` judges.
        Any other waits on the check, never written on (another user's TrainJob on a queue
        the gate guards is not the gate's to admit)."""
        return is_dispatch(trainjob)

    def _judge(self, workload: dict[str, Any]) -> bool:
        owner = self._owner(workload)
        if owner is None:
            return False
        namespace = str((workload.get("metadata") or {}).get("namespace", ""))
        trainjob = self._trainjob(namespace, *owner)
        if trainjob is None or not self.ours(trainjob):
            return False
        try:
            admission = admission_of(workload)
        except ValueError as error:
            log.warning("workload %s: %s: not judged", _name(workload), error)
            return False
        annotations = (trainjob.get("metadata") or {}).get("annotations") or {}
        execution = current_execution(trainjob)
        if annotations.get(ADMISSION_ANNOTATION) == admission:
            if execution is None:
                return False
            return self.mark(workload, "Ready", self._ready_message(trainjob, execution))
        if execution is None:
            self._say(
                f"TrainJob {_name(trainjob)}: no canonical {EXECUTION_ANNOTATION} in its "
                f"{PATCH_MANAGER} runtime patch: not touched"
            )
            return False
        if execution >= MAX_EXECUTION:
            return self.mark(
                workload,
                "Rejected",
                f"TrainJob {_name(trainjob)} has had {execution} executions, the most its "
                "execution identity can number",
            )
        return self.readmit(workload, trainjob, execution + 1, admission)

    def readmit(
        self,
        workload: dict[str, Any],
        trainjob: Mapping[str, Any],
        execution: int,
        admission: str,
    ) -> bool:
        """Write ``execution`` and the marker into the TrainJob, and only then mark the
        Workload's check Ready: the order is the rule (a Ready first would let Kueue unsuspend
        the TrainJob before its pods can carry the new id)."""
        self.write_execution(trainjob, execution, admission)
        self.written(workload, trainjob)
        return self.mark(workload, "Ready", self._ready_message(trainjob, execution))

    def write_execution(self, trainjob: Mapping[str, Any], execution: int, admission: str) -> None:
        """The one TrainJob update: the next execution id and the admission marker, with the
        ``resourceVersion`` read (a 409 means someone wrote since: re-read, judge again)."""
        metadata = trainjob.get("metadata") or {}
        self.api.replace_namespaced_custom_object(
            TRAINER_GROUP,
            TRAINER_VERSION,
            str(metadata.get("namespace", "")),
            "trainjobs",
            str(metadata.get("name", "")),
            with_execution(trainjob, execution, admission),
            _request_timeout=self.timeout,
        )

    def written(self, workload: Mapping[str, Any], trainjob: Mapping[str, Any]) -> None:
        """Called between the TrainJob update and the Ready mark (a seam for crash tests)."""

    def _ready_message(self, trainjob: Mapping[str, Any], execution: int) -> str:
        return f"dispatch execution {execution} written to TrainJob {_name(trainjob)}"

    def mark(self, workload: dict[str, Any], state: str, message: str) -> bool:
        """Set the gate's check to ``state`` through the Workload's status subresource, with
        the ``resourceVersion`` read."""
        updated = copy.deepcopy(workload)
        for check in updated["status"]["admissionChecks"]:
            if isinstance(check, dict) and check.get("name") == self.check_name:
                check["state"] = state
                check["message"] = message
                check["lastTransitionTime"] = self._now()
        metadata = updated.get("metadata") or {}
        self.api.replace_namespaced_custom_object_status(
            KUEUE_GROUP,
            KUEUE_VERSION,
            str(metadata.get("namespace", "")),
            "workloads",
            str(metadata.get("name", "")),
            updated,
            _request_timeout=self.timeout,
        )
        log.info("workload %s: %s: %s", _name(workload), state, message)
        return True

    def _now(self) -> str:
        stamp = datetime.fromtimestamp(int(self.clock.now()), tz=UTC)
        return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _say(self, text: str) -> None:
        """Log ``text`` once until something else is said (a pass repeats itself)."""
        if text != self._said:
            log.warning("%s", text)
            self._said = text


# -- the console script ---------------------------------------------------------------------


class _Usage(Exception):
    pass


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2
        raise _Usage(message)


def parser() -> argparse.ArgumentParser:
    made = _Parser(
        prog="dispatch-admission",
        description="The readmission gate: a Kueue AdmissionCheck controller that writes the "
        "next dispatch execution id into each dispatch TrainJob before marking its check "
        f"({CHECK_NAME}, controller {CONTROLLER_NAME}) Ready, on every admission.",
    )
    made.add_argument("--kubeconfig", required=True, metavar="PATH", help="the kubeconfig file")
    made.add_argument("--context", default=None, help="the kubeconfig context (default: current)")
    made.add_argument(
        "--namespace", default=None, metavar="NS", help="act in this namespace only (default: all)"
    )
    made.add_argument("--check", default=CHECK_NAME, help="the AdmissionCheck's name")
    made.add_argument(
        "--controller", default=CONTROLLER_NAME, help="the AdmissionCheck's controllerName"
    )
    made.add_argument("--once", action="store_true", help="one pass, then exit")
    made.add_argument(
        "--interval", type=_interval, default=2.0, metavar="S", help="seconds between passes"
    )
    return made


def main(argv: Sequence[str] | None = None) -> int:
    """``dispatch-admission``: exit 0 after ``--once`` or a stop signal, 1 when a pass of
    ``--once`` failed, 2 on bad input (one line on stderr each)."""
    try:
        args = parser().parse_args(argv)
        if not os.path.isfile(args.kubeconfig):
            raise _Usage(f"--kubeconfig {args.kubeconfig}: no such file")
        try:
            api_client: client.ApiClient = kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=args.kubeconfig, context=args.context
            )
        except Exception as error:
            raise _Usage(f"--kubeconfig {args.kubeconfig}: {_one_line(error)}") from None
    except _Usage as usage:
        print(f"dispatch-admission: {usage}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="dispatch-admission: %(message)s")
    gate = ReadmissionGate(
        api_client,
        check_name=args.check,
        controller_name=args.controller,
        namespace=args.namespace,
    )
    if args.once:
        try:
            acted = gate.sync()
        except Exception as error:
            print(
                f"dispatch-admission: pass failed: {type(error).__name__}: {_one_line(error)}",
                file=sys.stderr,
            )
            return 1
        print(f"dispatch-admission: acted on {acted} workload{'s' if acted != 1 else ''}")
        return 0
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    gate.run(stop, args.interval)
    return 0


__all__ = [
    "ADMISSION_ANNOTATION",
    "CHECK_NAME",
    "CONTROLLER_NAME",
    "EPOCH_PAD_ANNOTATION",
    "EXECUTION_ANNOTATION",
    "MAX_EXECUTION",
    "PATCH_MANAGER",
    "ReadmissionGate",
    "admission_of",
    "current_execution",
    "epoch_pad",
    "is_dispatch",
    "main",
    "with_execution",
]
