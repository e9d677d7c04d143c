"""Field selectors as the API server evaluates them: each kind's selectable fields as its
registry strategy builds them (``store.FIELD_SOURCES``: ``spec.unschedulable`` of a node that
omits it is ``false``, a Job's ``status.successful`` is ``status.succeeded`` or ``0``, an
Event's ``source`` is ``source.component``), not a plain read of the object's dotted path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulators.kubernetes.resources import ResourceType
from simulators.kubernetes.selectors import FieldSelector
from simulators.kubernetes.store import FIELD_SOURCES, field_selectable


def _text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return None


def field_value(obj: Mapping[str, Any], field: str) -> str:
    """The value of the selectable ``field`` of ``obj`` (``fields.Set`` of the strategy)."""
    path, absent = FIELD_SOURCES.get(field, (field, ""))
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    text = _text(node)
    return absent if text is None or (text == "" and absent) else text


@dataclass(frozen=True)
class ServedFieldSelector(FieldSelector):
    """A ``FieldSelector`` whose terms read ``field_value``."""

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(
            (field_value(obj, r.field) == r.value) == (r.operator == "=") for r in self.requirements
        )


def parse(text: str, resource: ResourceType) -> ServedFieldSelector:
    """Parse ``text`` for ``resource`` (``SelectorError`` for a field it does not select)."""
    found = ServedFieldSelector.parse(text, field_selectable(resource))
    assert isinstance(found, ServedFieldSelector)
    return found
