"""The PATCH content types of the Kubernetes API server, applied to a JSON tree.

Behaviour follows k8s.io/apiserver v0.32 ``pkg/endpoints/handlers/patch.go`` under the default
``fieldValidation=Warn`` (the body is first strictly decoded, so a body of the wrong shape is a 400
``error decoding patch: ...``), gopkg.in/evanphx/json-patch.v4 (what that server links) for JSON
patch and merge patch, and k8s.io/apimachinery ``pkg/util/strategicpatch`` for strategic merge.
JSON patch goes through the ``jsonpatch`` library and merge patch through ``json_merge_patch``;
strategic merge is written here, for the core types only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import json_merge_patch
import jsonpatch
import jsonpointer

from simulators.kubernetes import errors
from simulators.kubernetes.errors import ApiError, Cause
from simulators.kubernetes.objects import JSON, clone

__all__ = [
    "APPLY_CBOR",
    "APPLY_YAML",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "apply_patch",
    "go_json_error",
    "strategic_merge",
]

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_YAML: Final = "application/apply-patch+yaml"
APPLY_CBOR: Final = "application/apply-patch+cbor"

#: The message of a JSON patch that fails to apply: the server builds it with
#: ``NewGenericServerResponse(422, ..., isUnexpectedResponse=false)``, which drops the library's
#: own text (kubectl prints ``The request is invalid: <this>``) and sets a ``Details`` with no
#: group, kind, name, causes or retry, written ``"details":{}``.
JSON_PATCH_FAILED: Final = "the server rejected our request due to an error in our request"

#: The largest JSON patch the server applies (``maxJSONPatchOperations``).
MAX_JSON_PATCH_OPERATIONS: Final = 10000


def apply_patch(
    current: JSON,
    content_type: str,
    body: bytes,
    *,
    builtin: bool,
    kind: str,
    group: str,
    version: str,
) -> JSON:
    """The patched copy of ``current`` (never mutated), or an :class:`ApiError` as the server's.

    - ``application/json-patch+json``: RFC 6902; an op that does not apply is 422 Invalid.
    - ``application/merge-patch+json``: RFC 7386; a body that is not an object is 400.
    - ``application/strategic-merge-patch+json``: built-in kinds only (``builtin``); a custom
      resource answers 415, as a real server does.
    - ``application/apply-patch+yaml`` / ``+cbor`` (server-side apply): real servers accept it, the
      simulator does not model it and answers 415 saying so.
    - anything else: 415 naming the accepted types. A ``; charset=...`` suffix is ignored.
    """
    del version
    media = content_type.split(";", 1)[0] if content_type.find(";") > 0 else content_type
    try:
        if media == JSON_PATCH:
            return _json_patch(current, body)
        if media == MERGE_PATCH:
            return _merge_patch(current, body)
        if media == STRATEGIC_MERGE_PATCH and builtin:
            return _strategic_patch(current, body, kind)
        if media in (APPLY_YAML, APPLY_CBOR):
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"{media} (server-side apply) is not modelled by this simulator; "
                "use application/merge-patch+json or application/json-patch+json",
            )
    except RecursionError:
        raise errors.bad_request("error decoding patch: exceeded max depth") from None
    if builtin:
        raise _unsupported_builtin()
    raise errors.unsupported_media_type(content_type)


def _unsupported_builtin() -> ApiError:
    # installer.go lists strategic merge for built-in kinds; the order is the server's.
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}, {APPLY_YAML}, {APPLY_CBOR}",
    )


# --- decoding as Go's encoding/json does -----------------------------------------------------


def _quote_byte(c: int) -> str:
    """``quoteChar`` of encoding/json's scanner."""
    if c == ord("'"):
        return "'\\''"
    if c == ord('"'):
        return "'\"'"
    ch = chr(c)
    if c < 0x20 or c == 0x7F:
        inner = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}.get(
            c, f"\\x{c:02x}"
        )
    elif c == ord("\\"):
        inner = "\\\\"
    elif c < 0x80 or ch.isprintable():
        inner = ch
    else:
        inner = f"\\u{c:04x}"
    return f"'{inner}'"


_SPACE: Final = frozenset(b" \t\r\n")
_DIGITS: Final = frozenset(b"0123456789")
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_MAX_DEPTH: Final = 10000


def go_json_error(data: bytes) -> str | None:
    """The ``*json.SyntaxError`` text Go's ``json.Unmarshal`` gives for ``data``, or None if valid.

    A port of the encoding/json scanner's state machine (its messages are what the API server
    returns in the 400 Status).
    """
    stack: list[str] = []  # "key", "value" (inside an object), "array"
    i, n = 0, len(data)

    def bad(c: int, context: str) -> str:
        return f"invalid character {_quote_byte(c)} {context}"

    state = "begin"
    while True:
        if i >= n:
            if state == "top":
                return None
            if state in ("end", "num1", "num0", "dot0", "exp0") and not stack:
                return None
            return "unexpected end of JSON input"
        c = data[i]
        i += 1
        if state in ("begin", "begin_or_empty"):
            if c in _SPACE:
                continue
            if state == "begin_or_empty" and c == ord("]"):
                stack.pop()
                state = "end"
                continue
            if c == ord("{"):
                if len(stack) >= _MAX_DEPTH:
                    return "exceeded max depth"
                stack.append("key")
                state = "key_or_empty"
            elif c == ord("["):
                if len(stack) >= _MAX_DEPTH:
                    return "exceeded max depth"
                stack.append("array")
                state = "begin_or_empty"
            elif c == ord('"'):
                state = "string"
            elif c == ord("-"):
                state = "neg"
            elif c == ord("0"):
                state = "num0"
            elif c in _DIGITS:
                state = "num1"
            elif c == ord("t"):
                state = "lit:true:1"
            elif c == ord("f"):
                state = "lit:false:1"
            elif c == ord("n"):
                state = "lit:null:1"
            else:
                return bad(c, "looking for beginning of value")
            continue
        if state in ("key_or_empty", "key"):
            if c in _SPACE:
                continue
            if state == "key_or_empty" and c == ord("}"):
                stack.pop()
                state = "end"
                continue
            if c == ord('"'):
                state = "string"
                continue
            return bad(c, "looking for beginning of object key string")
        if state == "string":
            if c == ord('"'):
                state = "end"
            elif c == ord("\\"):
                state = "esc"
            elif c < 0x20:
                return bad(c, "in string literal")
            continue
        if state == "esc":
            if c in b'bfnrt\\/"':
                state = "string"
            elif c == ord("u"):
                state = "u0"
            else:
                return bad(c, "in string escape code")
            continue
        if state in ("u0", "u1", "u2", "u3"):
            if c not in _HEX:
                return bad(c, "in \\u hexadecimal character escape")
            state = "string" if state == "u3" else "u" + str(int(state[1]) + 1)
            continue
        if state.startswith("lit:"):
            _, word, pos = state.split(":")
            k = int(pos)
            if c != ord(word[k]):
                return bad(c, f"in literal {word} (expecting {_quote_byte(ord(word[k]))})")
            state = "end" if k + 1 == len(word) else f"lit:{word}:{k + 1}"
            continue
        if state == "neg":
            if c == ord("0"):
                state = "num0"
            elif c in _DIGITS:
                state = "num1"
            else:
                return bad(c, "in numeric literal")
            continue
        if state == "num1" and c in _DIGITS:
            continue
        if state in ("num1", "num0"):
            if c == ord("."):
                state = "dot"
                continue
            if c in b"eE":
                state = "exp"
                continue
            state = "end"
        elif state == "dot":
            if c not in _DIGITS:
                return bad(c, "after decimal point in numeric literal")
            state = "dot0"
            continue
        elif state == "dot0":
            if c in _DIGITS:
                continue
            if c in b"eE":
                state = "exp"
                continue
            state = "end"
        elif state in ("exp", "exp_sign"):
            if state == "exp" and c in b"+-":
                state = "exp_sign"
                continue
            if c not in _DIGITS:
                return bad(c, "in exponent of numeric literal")
            state = "exp0"
            continue
        elif state == "exp0":
            if c in _DIGITS:
                continue
            state = "end"
        # state "end" or "top", with c still to be looked at
        if state == "end":
            if not stack:
                state = "top"
            elif c in _SPACE:
                continue
            elif stack[-1] == "key":
                if c == ord(":"):
                    stack[-1] = "value"
                    state = "begin"
                    continue
                return bad(c, "after object key")
            elif stack[-1] == "value":
                if c == ord(","):
                    stack[-1] = "key"
                    state = "key"
                    continue
                if c == ord("}"):
                    stack.pop()
                    continue
                return bad(c, "after object key:value pair")
            else:
                if c == ord(","):
                    state = "begin"
                    continue
                if c == ord("]"):
                    stack.pop()
                    continue
                return bad(c, "after array element")
        if state == "top":
            if c not in _SPACE:
                return bad(c, "after top-level value")
            continue


def _decode(body: bytes, prefix: str) -> Any:
    """The JSON value of ``body``; a 400 with Go's syntax message when it is not JSON."""
    problem = go_json_error(body)
    if problem is None:
        try:
            return json.loads(body.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as err:  # e.g. an integer of > 4300 digits
            problem = f"json: cannot unmarshal number into Go value ({err.__class__.__name__})"
    raise errors.bad_request(prefix + problem)


def _json_kind(value: Any) -> str:
    """The word encoding/json's ``UnmarshalTypeError`` uses for a JSON value."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number"


def _cannot_unmarshal(value: Any, go_type: str) -> str:
    return f"json: cannot unmarshal {_json_kind(value)} into Go value of type {go_type}"


# --- JSON patch (RFC 6902) -------------------------------------------------------------------


def _json_patch(current: JSON, body: bytes) -> JSON:
    ops = _decode(body, "error decoding patch: ")
    # The strict decode into []jsonPatchOp: the shape errors come first, as 400s.
    if ops is not None and not isinstance(ops, list):
        raise errors.bad_request(
            "error decoding patch: " + _cannot_unmarshal(ops, "[]handlers.jsonPatchOp")
        )
    for op in ops or []:
        if op is not None and not isinstance(op, dict):
            raise errors.bad_request(
                "error decoding patch: " + _cannot_unmarshal(op, "handlers.jsonPatchOp")
            )
        for name in ("op", "path", "from"):
            value = (op or {}).get(name)
            if value is not None and not isinstance(value, str):
                raise errors.bad_request(
                    f"error decoding patch: json: cannot unmarshal {_json_kind(value)} "
                    f"into Go struct field jsonPatchOp.{name} of type string"
                )
    if ops and len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise ApiError(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}",
        )
    doc: Any = clone(current)
    for op in ops or []:
        doc = _apply_op(doc, op)
    if not isinstance(doc, dict):
        text = json.dumps(doc, separators=(",", ":"))
        raise errors.invalid(
            "",
            "",
            "",
            [
                Cause(
                    "patch", f'Invalid value: "{text}": json: cannot unmarshal array into Go value'
                )
            ],
        )
    return doc


def _failed() -> ApiError:
    # apiserver v0.32 endpoints/handlers/patch.go applyJSPatch: patchObj.Apply's error becomes
    # NewGenericServerResponse(422, "", GroupResource{}, "", err.Error(), 0, false), whose
    # Details pointer is never nil: every field empty and omitempty, so ``"details":{}``
    return ApiError(422, "Invalid", JSON_PATCH_FAILED, {})


def _parent(doc: Any, path: str) -> tuple[Any, str] | None:
    """evanphx v4 ``findObject``: the container of ``path``'s last token and that token."""
    split = path.split("/")
    if len(split) < 2:
        return None
    node = doc
    for part in split[1:-1]:
        token = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list):
            index = _index(token)
            if index is None or not -len(node) <= index < len(node):
                return None
            node = node[index]
        else:
            return None
        if not isinstance(node, (dict, list)):
            return None
    return node, split[-1].replace("~1", "/").replace("~0", "~")


def _index(token: str) -> int | None:
    """``strconv.Atoi``: optional sign and decimal digits."""
    body = token[1:] if token[:1] in ("+", "-") else token
    return int(token) if body.isdigit() and body.isascii() else None


def _pointer(path: str, parent: Any, key: str, extra: int = 0) -> str:
    """``path`` with a negative array index made positive (v4 supports negative indices)."""
    index = _index(key) if isinstance(parent, list) else None
    if index is None or index >= 0:
        return path
    size = len(parent) + extra
    if index < -size:
        raise _failed()
    return path[: path.rfind("/") + 1] + str(index + size)


def _apply_op(doc: Any, op: dict[str, Any] | None) -> Any:
    """One operation, with evanphx v4's semantics where they differ from the RFC's."""
    if op is None:
        raise _failed()  # Unexpected kind: unknown
    kind = op.get("op")
    path = op.get("path")
    if kind not in ("add", "remove", "replace", "move", "copy", "test"):
        raise _failed()
    if not isinstance(path, str):
        raise _failed()  # operation missing path field
    if kind == "test" and "value" not in op:
        raise _failed()
    # v4 takes a missing "value" of add/replace as null (``op.value()`` is a nil node).
    step: dict[str, Any] = {"op": kind, "path": path, "value": op.get("value")}
    if kind in ("move", "copy"):
        source = op.get("from")
        if not isinstance(source, str):
            raise _failed()
        found = _parent(doc, source)
        if found is None:
            raise _failed()
        step["from"] = _pointer(source, found[0], found[1])
    if path == "":
        if kind == "replace":  # v4 replaces the whole document with an object or array
            if not isinstance(op.get("value"), (dict, list)):
                raise _failed()
            return clone(op["value"])
        if kind == "test":
            if doc != op.get("value"):
                raise _failed()
            return doc
        raise _failed()  # v4's findObject finds no container for ""
    found = _parent(doc, path)
    if found is None:
        raise _failed()
    parent, key = found
    if kind == "replace" and isinstance(parent, dict) and key not in parent:
        step["op"] = "add"  # v4's partialDoc.get never fails: replace adds a missing key
    if kind == "test" and isinstance(parent, dict) and key not in parent:
        if op.get("value") is None:
            return doc  # v4: a missing key tests equal to null
        raise _failed()
    step["path"] = _pointer(path, parent, key, 1 if step["op"] == "add" else 0)
    try:
        return jsonpatch.JsonPatch([step]).apply(doc, in_place=True)
    except (
        jsonpatch.JsonPatchException,
        jsonpointer.JsonPointerException,
        KeyError,
        IndexError,
        TypeError,
        ValueError,
    ):
        raise _failed() from None


# --- merge patch (RFC 7386) ------------------------------------------------------------------


def _prune_nulls(value: Any) -> Any:
    """v4 ``pruneNulls``: drop null members of objects, at any depth (nulls in arrays stay)."""
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) for v in value]
    return value


def _prune_inside_arrays(value: Any) -> Any:
    """Nulls in a merge patch's objects delete; inside an array's objects v4 drops them."""
    if isinstance(value, dict):
        return {k: _prune_inside_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_prune_nulls(v) for v in value]
    return value


def _merge_patch(current: JSON, body: bytes) -> JSON:
    patch = _decode(body, "error decoding patch: ")
    if patch is None:
        # The strict decode accepts null; evanphx MergePatch then answers ErrBadJSONPatch.
        raise errors.bad_request("Invalid JSON Patch")
    if not isinstance(patch, dict):
        # A JSON array (the Python client sends a list body as merge patch) lands here too.
        raise errors.bad_request(
            "error decoding patch: " + _cannot_unmarshal(patch, "map[string]interface {}")
        )
    # json_merge_patch.merge mutates its first argument and shares the patch's lists: copy both.
    merged = json_merge_patch.merge(clone(current), _prune_inside_arrays(patch))
    assert isinstance(merged, dict)
    return merged


# --- strategic merge patch -------------------------------------------------------------------

# Patch merge keys of the core types, from the ``patchStrategy:"merge"`` / ``patchMergeKey`` tags
# of k8s.io/api/core/v1/types.go (and batch/v1 JobStatus.conditions, meta/v1 ObjectMeta), as
# k8s.io/apimachinery/pkg/util/strategicpatch reads them. A list not named here is replaced.
MERGE_KEYS: Final[dict[str, str]] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "ownerReferences": "uid",
    "conditions": "type",
    "addresses": "type",
}

#: Lists of scalars merged as sets (ObjectMeta.finalizers is ``patchStrategy:"merge"``).
PRIMITIVE_MERGE: Final = frozenset({"finalizers"})

_DIRECTIVE: Final = "$patch"
_DELETE_FROM: Final = "$deleteFromPrimitiveList/"
_SET_ORDER: Final = "$setElementOrder/"
_RETAIN: Final = "$retainKeys"


def _go_value(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value (maps print with sorted keys)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{_go_value(value[k])}" for k in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    return str(value)


def _server_error(message: str) -> ApiError:
    """An error that is not a Status: the server answers 500 with an empty reason."""
    return ApiError(500, "", message)


def _strategic_patch(current: JSON, body: bytes, kind: str) -> JSON:
    del kind
    patch = _decode(body, "")
    result: JSON = clone(current)
    if patch is None:
        return result
    if not isinstance(patch, dict):
        raise errors.bad_request(_cannot_unmarshal(patch, "map[string]interface {}"))
    return _merge_map(result, patch, MERGE_KEYS)


def strategic_merge(
    original: JSON, patch: JSON, merge_keys: Mapping[str, str] = MERGE_KEYS
) -> JSON:
    """strategicpatch.StrategicMergePatch of two JSON trees: a patched copy (neither mutated).

    ``merge_keys`` maps a list field to its ``patchMergeKey`` (a list not named is replaced);
    a list item without its merge key, or an unknown ``$patch``, raises the server's 500
    :class:`ApiError`.
    """
    return _merge_map(clone(original), patch, merge_keys)  # _strip copies what it takes


def _strip(value: Any) -> Any:
    """A patch value taken as is: nulls and directives removed (they mean nothing here)."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if v is not None
            and k not in (_DIRECTIVE, _RETAIN)
            and not k.startswith((_DELETE_FROM, _SET_ORDER))
        }
    if isinstance(value, list):
        kept = [v for v in value if not (isinstance(v, dict) and _DIRECTIVE in v)]
        return [_strip(v) for v in kept]
    return value


def _merge_map(original: JSON, patch: JSON, keys: Mapping[str, str]) -> JSON:
    """``mergeMap``: recursive, ``null`` deletes, ``$patch: replace|delete`` on the map."""
    directive = patch.get(_DIRECTIVE)
    if directive is not None:
        if directive == "replace":
            return dict(_strip(patch))
        if directive == "delete":
            return {}
        raise _server_error(
            f"unknown patch type: {_go_value(directive)} in map: {_go_value(patch)}"
        )
    retain = patch.get(_RETAIN)
    if isinstance(retain, list):
        original = {k: v for k, v in original.items() if k in retain}
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM):
            field = key[len(_DELETE_FROM) :]
            have = original.get(field)
            if isinstance(have, list) and isinstance(value, list):
                original[field] = [v for v in have if not any(_same(v, d) for d in value)]
            elif not isinstance(value, list):
                raise errors.bad_request(
                    "invalid patch: the value of $deleteFromPrimitiveList must be a list"
                )
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN) or key.startswith((_DELETE_FROM, _SET_ORDER)):
            continue
        if value is None:
            original.pop(key, None)
            continue
        have = original.get(key)
        if isinstance(value, dict) and isinstance(have, dict):
            original[key] = _merge_map(have, value, keys)
        elif isinstance(value, list) and isinstance(have, list):
            original[key] = _merge_list(key, have, value, keys)
        else:
            original[key] = _strip(value)
    return original


def _same(a: Any, b: Any) -> bool:
    """Go's ``==`` on scalars: the same JSON type and value (``1`` is not ``true``)."""
    return type(a) is type(b) and a == b


def _uniqify(items: list[Any]) -> list[Any]:
    """strategicpatch ``uniqifyScalars``: drops duplicates by swapping in the last element."""
    s = list(items)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if _same(s[i], s[j]):
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _merge_list(
    field: str, original: list[Any], patch: list[Any], keys: Mapping[str, str]
) -> list[Any]:
    """``mergeSlice``: by the field's merge key, as a set for finalizers, else replaced."""
    merge_key = keys.get(field)
    if merge_key is None:
        if field in PRIMITIVE_MERGE and not any(isinstance(v, (dict, list)) for v in patch):
            return _uniqify(original + patch)
        return [_strip(v) for v in patch]
    for item in patch:
        if isinstance(item, dict) and item.get(_DIRECTIVE) == "replace":
            return [_strip(v) for v in patch if not (isinstance(v, dict) and _DIRECTIVE in v)]
    result = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise _server_error(
                f"map: {_go_value(item)} does not contain declared merge key: {merge_key}"
            )
        directive = item.get(_DIRECTIVE)
        if merge_key not in item:
            raise _server_error(
                f"map: {_go_value(item)} does not contain declared merge key: {merge_key}"
            )
        wanted = item[merge_key]
        at = next(
            (
                i
                for i, have in enumerate(result)
                if isinstance(have, dict) and merge_key in have and _same(have[merge_key], wanted)
            ),
            None,
        )
        if directive == "delete":
            result = [
                have
                for have in result
                if not (isinstance(have, dict) and _same(have.get(merge_key), wanted))
            ]
            continue
        if directive is not None:
            raise _server_error(
                f"unknown patch type: {_go_value(directive)} in map: {_go_value(item)}"
            )
        if at is None:
            result.append(_strip(item))
        else:
            result[at] = _merge_map(result[at], item, keys)
    return result
