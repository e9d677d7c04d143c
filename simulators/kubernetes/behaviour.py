"""How a simulated container behaves, without running a process.

Modelled: exit codes per run (run i uses ``exit_codes[min(i, len - 1)]``), how long a run lasts,
log lines written at given seconds after a run starts, whether SIGTERM is ignored (then the
kubelet kills at the end of the grace period, exit 137), an OOM kill after some seconds (reason
OOMKilled, exit 137), an image pull that fails (ErrImagePull, then ImagePullBackOff; never ends
on its own [A5]) and a configuration error (CreateContainerConfigError).

Where it comes from, strongest first: the container's ``KUBE_SIM_*`` env vars (so that kubectl
users, who cannot call Python, can say it), then the last matching rule added to
:class:`Behaviours`, then the command where the simulator models it (``echo``: its words as a
log line, exit 0 at once), then the default built from KubeConfig. Env vars (each strict; a
bad value gives the container ``waiting: CreateContainerConfigError`` naming the variable,
never an exception):

- ``KUBE_SIM_EXIT_CODES``: comma-separated integers, e.g. ``1,1,0`` (fail twice, then succeed);
- ``KUBE_SIM_RUN_SECONDS``: a non-negative number, or ``forever``;
- ``KUBE_SIM_LOG``: one entry per line, each ``SECONDS:TEXT`` (``0:starting``), SECONDS a
  non-negative number;
- ``KUBE_SIM_IGNORE_SIGTERM``: ``true`` or ``false``;
- ``KUBE_SIM_OOM_AFTER``: a non-negative number of seconds;
- ``KUBE_SIM_IMAGE_PULL``: ``ErrImagePull`` (the only failure modelled) or ``ok``.

Not modelled: init containers, probes, real resource use, env from ConfigMaps or Secrets.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from simulators.kubernetes.objects import JSON, labels_of, meta

ENV_PREFIX: Final = "KUBE_SIM_"
IMAGE_PULL_FAILURES: Final = ("ErrImagePull",)
_NUMBER = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")
_INT = re.compile(r"-?(0|[1-9][0-9]*)")


@dataclass(frozen=True)
class Behaviour:
    """What one container does each time it runs."""

    exit_codes: tuple[int, ...] = (0,)
    run_seconds: float | Literal["default"] | None = "default"
    """Seconds a run lasts; None: until stopped; "default": KubeConfig.default_run_seconds."""
    logs: tuple[tuple[float, str], ...] = ()
    ignores_sigterm: bool = False
    sigterm_exit_code: int = 143
    oom_after: float | None = None
    image_pull: str | None = None
    config_error: bool = False
    config_message: str = ""

    def exit_code(self, run: int) -> int:
        """The exit code of run ``run`` (0-based): the last one repeats."""
        codes = self.exit_codes or (0,)
        return codes[min(run, len(codes) - 1)]

    def duration(self, default: float | None) -> float | None:
        return default if self.run_seconds == "default" else self.run_seconds


@dataclass(frozen=True)
class _Rule:
    behaviour: Behaviour
    namespace: str | None
    pod_labels: tuple[tuple[str, str], ...] | None
    container: str | None
    image: str | None
    pod_name_prefix: str | None

    def matches(self, pod: JSON, container: JSON) -> bool:
        m = meta(pod)
        if self.namespace is not None and m.get("namespace") != self.namespace:
            return False
        if self.pod_name_prefix is not None and not str(m.get("name", "")).startswith(
            self.pod_name_prefix
        ):
            return False
        if self.pod_labels is not None:
            labels = labels_of(pod)
            if any(labels.get(k) != v for k, v in self.pod_labels):
                return False
        if self.container is not None and container.get("name") != self.container:
            return False
        return self.image is None or container.get("image") == self.image


class Behaviours:
    """The registry of container behaviours: rules added later win; env vars beat rules."""

    def __init__(self, default: Behaviour | None = None) -> None:
        self.default = default if default is not None else Behaviour()
        self._rules: list[_Rule] = []

    @classmethod
    def from_config(cls, config: Any) -> Behaviours:
        """The default from KubeConfig's ``default_exit_code`` and ``default_run_seconds``."""
        return cls(
            Behaviour(
                exit_codes=(int(getattr(config, "default_exit_code", 0)),),
                run_seconds=getattr(config, "default_run_seconds", 60.0),
            )
        )

    def add(
        self,
        behaviour: Behaviour,
        *,
        namespace: str | None = None,
        pod_labels: Mapping[str, str] | None = None,
        container: str | None = None,
        image: str | None = None,
        pod_name_prefix: str | None = None,
    ) -> None:
        """Containers matching every given filter behave so (a later rule beats an earlier one)."""
        labels = tuple(sorted(pod_labels.items())) if pod_labels is not None else None
        self._rules.append(_Rule(behaviour, namespace, labels, container, image, pod_name_prefix))

    def for_container(self, pod: JSON, container: JSON) -> Behaviour:
        """The behaviour of ``container``: its env, then the last matching rule, then the
        command where it is one the simulator models (:func:`modelled_command`), then default."""
        chosen: Behaviour | None = None
        for rule in reversed(self._rules):
            if rule.matches(pod, container):
                chosen = rule.behaviour
                break
        if chosen is None:
            chosen = modelled_command(container) or self.default
        return apply_env(chosen, container)


ECHO: Final = ("echo", "/bin/echo", "/usr/bin/echo")


def modelled_command(container: JSON) -> Behaviour | None:
    """What a command the simulator models does: ``echo ARG...`` (no option) writes its
    arguments, space-separated, as one log line when it starts and exits 0 at once, as
    coreutils' echo does. No other command is modelled (it behaves as the default says)."""
    words = [*(container.get("command") or ()), *(container.get("args") or ())]
    if not words or words[0] not in ECHO or not all(isinstance(w, str) for w in words):
        return None
    if len(words) > 1 and words[1].startswith("-"):
        return None  # -n, -e, -E: not modelled
    return Behaviour(exit_codes=(0,), run_seconds=0.0, logs=((0.0, " ".join(words[1:])),))


def _env_of(container: JSON) -> dict[str, str]:
    out: dict[str, str] = {}
    env = container.get("env")
    if isinstance(env, list):
        for entry in env:
            if isinstance(entry, dict) and str(entry.get("name", "")).startswith(ENV_PREFIX):
                value = entry.get("value")
                out[str(entry["name"])] = "" if value is None else str(value)
    return out


class _Bad(ValueError):
    pass


def _number(name: str, text: str) -> float:
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        raise _Bad(f'{name}: "{text}" is not a non-negative number of seconds')
    value = float(text)
    if not math.isfinite(value):
        raise _Bad(f'{name}: "{text}" is not a non-negative number of seconds')
    return value


def _parse(name: str, text: str, changes: dict[str, Any]) -> None:
    if name == "KUBE_SIM_EXIT_CODES":
        parts = [p.strip() for p in text.split(",")]
        if not parts or not all(_INT.fullmatch(p) for p in parts):
            raise _Bad(f'{name}: "{text}" is not a comma-separated list of integers')
        codes = tuple(int(p) for p in parts)
        if any(not 0 <= c <= 255 for c in codes):
            raise _Bad(f'{name}: "{text}": exit codes are 0 to 255')
        changes["exit_codes"] = codes
    elif name == "KUBE_SIM_RUN_SECONDS":
        changes["run_seconds"] = None if text.strip() == "forever" else _number(name, text)
    elif name == "KUBE_SIM_LOG":
        lines: list[tuple[float, str]] = []
        for raw in text.split("\n"):
            if raw == "":
                continue
            at, sep, line = raw.partition(":")
            if not sep:
                raise _Bad(f'{name}: "{raw}" is not SECONDS:TEXT')
            lines.append((_number(name, at), line))
        changes["logs"] = tuple(sorted(lines, key=lambda entry: entry[0]))
    elif name == "KUBE_SIM_IGNORE_SIGTERM":
        if text not in ("true", "false"):
            raise _Bad(f'{name}: "{text}" is not true or false')
        changes["ignores_sigterm"] = text == "true"
    elif name == "KUBE_SIM_OOM_AFTER":
        changes["oom_after"] = _number(name, text)
    elif name == "KUBE_SIM_IMAGE_PULL":
        if text == "ok":
            changes["image_pull"] = None
        elif text in IMAGE_PULL_FAILURES:
            changes["image_pull"] = text
        else:
            raise _Bad(f'{name}: "{text}" is not one of ok, {", ".join(IMAGE_PULL_FAILURES)}')
    else:
        raise _Bad(f"{name}: not a variable the simulator knows")


def apply_env(behaviour: Behaviour, container: JSON) -> Behaviour:
    """``behaviour`` with the container's ``KUBE_SIM_*`` env vars applied over it."""
    env = _env_of(container)
    if not env:
        return behaviour
    changes: dict[str, Any] = {}
    for name in sorted(env):
        try:
            _parse(name, env[name], changes)
        except _Bad as bad:
            return dataclasses.replace(behaviour, config_error=True, config_message=str(bad))
    return dataclasses.replace(behaviour, **changes)
