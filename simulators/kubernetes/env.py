"""A container's environment as its kubelet makes it: values, the downward API, ``$(VAR)``.

As pkg/kubelet/kubelet_pods.go ``makeEnvironmentVariables`` and
third_party/forked/golang/expansion do:

- entries in order; a ``value`` is expanded with the entries before it: ``$(NAME)`` becomes
  that entry's value when NAME is defined earlier, else stays as written; ``$$`` is one ``$``;
- ``valueFrom.fieldRef.fieldPath``: ``metadata.name``, ``metadata.namespace``, ``metadata.uid``,
  ``metadata.labels['k']``, ``metadata.annotations['k']`` (empty when the key is missing),
  ``spec.nodeName``, ``spec.serviceAccountName``, ``status.podIP``, ``status.hostIP``;
  ``valueFrom`` of ConfigMaps, Secrets and resources is not modelled (empty).

Values are read when the container starts, from the pod as it is then.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from simulators.kubernetes.objects import JSON, annotations_of, labels_of, meta

_SUBSCRIPT: Final = re.compile(r"metadata\.(labels|annotations)\['(?P<key>[^']*)'\]")


def field_value(pod: JSON, path: str) -> str:
    """The downward API's value of ``path`` on ``pod`` ("" for what is not set)."""
    found = _SUBSCRIPT.fullmatch(path)
    if found is not None:
        source = labels_of(pod) if path.startswith("metadata.labels") else annotations_of(pod)
        return str(source.get(found["key"], ""))
    m = meta(pod)
    simple: dict[str, object] = {
        "metadata.name": m.get("name", ""),
        "metadata.namespace": m.get("namespace", ""),
        "metadata.uid": m.get("uid", ""),
        "spec.nodeName": pod.get("spec", {}).get("nodeName", ""),
        "spec.serviceAccountName": pod.get("spec", {}).get("serviceAccountName", ""),
        "status.podIP": pod.get("status", {}).get("podIP", ""),
        "status.hostIP": pod.get("status", {}).get("hostIP", ""),
    }
    return str(simple.get(path, ""))


def expand(text: str, defined: Mapping[str, str]) -> str:
    """``$(NAME)`` of a defined NAME replaced by its value, ``$$`` by ``$``; the rest as is."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        if text.startswith("$(", i):
            end = text.find(")", i + 2)
            if end != -1:
                name = text[i + 2 : end]
                if name in defined:
                    out.append(defined[name])
                else:
                    out.append(text[i : end + 1])
                i = end + 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def container_env(pod: JSON, container: JSON) -> dict[str, str]:
    """The environment ``container`` of ``pod`` starts with (its ``env``, in order)."""
    env: dict[str, str] = {}
    for entry in container.get("env") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        name = entry["name"]
        source = entry.get("valueFrom")
        if isinstance(source, dict):
            ref = source.get("fieldRef")
            path = ref.get("fieldPath") if isinstance(ref, dict) else None
            env[name] = field_value(pod, path) if isinstance(path, str) else ""
        else:
            env[name] = expand(str(entry.get("value", "")), env)
    return env
