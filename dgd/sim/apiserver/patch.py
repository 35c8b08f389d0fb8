"""The PATCH flavours the HTTP facade accepts besides JSON merge patch, as pure functions on JSON.

- ``application/json-patch+json`` (RFC 6902): ``json_patch`` applies the operations in order
  (``add remove replace move copy test``; ``-`` appends to a list); any failure is ``Invalid``.
- ``application/strategic-merge-patch+json``: ``strategic_merge`` is an *approximation* of
  Kubernetes' strategic merge patch, enough for what kubectl sends for built-in kinds: a JSON
  merge patch in which lists of objects known to be keyed (``containers``, ``env``, ``volumes``,
  ``ports``, ``conditions``… by field name, see ``MERGE_KEYS``) merge item by item on their key,
  ``finalizers`` merge as a set, and the directives ``$patch: replace|delete|merge``,
  ``$retainKeys``, ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>`` (ignored:
  the patch's order is kept) are honoured. Patch metadata does not come from the kinds' schemas.
- ``application/apply-patch+yaml`` (server-side apply): the facade treats the applied
  configuration as a JSON merge patch of the object, or as the object to create when there is none.
  Field ownership (managedFields, conflicts between managers) is not modelled: the last applier wins.
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.cluster.errors import Invalid

#: Lists of objects merged by a key, by the field name holding the list (the first key an item has).
MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "ports": ("containerPort", "port"),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey",),
    "resourceClaims": ("name",),
}

#: Lists of scalars merged as sets.
MERGED_SETS = frozenset({"finalizers"})

_DELETE_FROM = "$deleteFromPrimitiveList/"
_ELEMENT_ORDER = "$setElementOrder/"


# RFC 6902.


def json_patch(document: Any, operations: Any) -> Any:
    """``document`` with ``operations`` applied in order (``document`` is not modified)."""
    if not isinstance(operations, list):
        raise _bad("a JSON patch must be a list of operations")
    result = copy.deepcopy(document)
    for index, operation in enumerate(operations):
        if not isinstance(operation, dict) or not isinstance(operation.get("path"), str):
            raise _bad(f"operation {index} needs an 'op' and a 'path'")
        result = _operate(result, operation, index)
    return result


def _operate(document: Any, operation: dict[str, Any], index: int) -> Any:
    op, path = operation.get("op"), _pointer(operation["path"], index)
    if op in ("add", "replace", "test") and "value" not in operation:
        raise _bad(f"operation {index} ({op}) needs a 'value'")
    match op:
        case "add":
            return _put(document, path, copy.deepcopy(operation["value"]), index, insert=True)
        case "replace":
            _get(document, path, index)
            return _put(document, path, copy.deepcopy(operation["value"]), index, insert=False)
        case "remove":
            return _remove(document, path, index)[0]
        case "move" | "copy":
            source = _pointer(str(operation.get("from", "")), index)
            if op == "move":
                document, value = _remove(document, source, index)
            else:
                value = copy.deepcopy(_get(document, source, index))
            return _put(document, path, value, index, insert=True)
        case "test":
            if _get(document, path, index) != operation["value"]:
                raise _invalid(f"operation {index}: test of {operation['path']!r} failed")
            return document
    raise _bad(f"operation {index}: unknown op {op!r}")


def _pointer(text: str, index: int) -> list[str]:
    if text == "":
        return []
    if not text.startswith("/"):
        raise _bad(f"operation {index}: {text!r} is not a JSON pointer")
    return [part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/")]


def _get(document: Any, path: list[str], index: int) -> Any:
    node = document
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _invalid(f"operation {index}: /{'/'.join(path)} does not exist")
    return node


def _put(document: Any, path: list[str], value: Any, index: int, *, insert: bool) -> Any:
    if not path:
        return value
    parent = _get(document, path[:-1], index)
    leaf = path[-1]
    if isinstance(parent, dict):
        parent[leaf] = value
    elif isinstance(parent, list):
        if leaf == "-" and insert:
            parent.append(value)
        elif leaf.isdigit() and int(leaf) <= len(parent) - (0 if insert else 1):
            if insert:
                parent.insert(int(leaf), value)
            else:
                parent[int(leaf)] = value
        else:
            raise _invalid(f"operation {index}: index {leaf!r} is out of range")
    else:
        raise _invalid(f"operation {index}: /{'/'.join(path[:-1])} is not an object or a list")
    return document


def _remove(document: Any, path: list[str], index: int) -> tuple[Any, Any]:
    if not path:
        raise _invalid(f"operation {index}: the whole document cannot be removed")
    parent = _get(document, path[:-1], index)
    value = _get(document, path, index)
    if isinstance(parent, dict):
        del parent[path[-1]]
    else:
        del parent[int(path[-1])]
    return document, value


# Strategic merge patch (approximate).


def strategic_merge(target: Any, patch: Any, field: str = "") -> Any:
    """``target`` with the strategic merge ``patch`` applied (see the module); neither is modified."""
    if isinstance(patch, list):
        return _merge_list(target, patch, field)
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return _clean(patch)
    if directive == "delete":
        return None
    result: dict[str, Any] = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {key: value for key, value in result.items() if key in retain}
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM):
            name = key[len(_DELETE_FROM) :]
            doomed = value if isinstance(value, list) else []
            if isinstance(result.get(name), list):
                result[name] = [item for item in result[name] if item not in doomed]
        elif key.startswith("$"):
            continue
        elif value is None:
            result.pop(key, None)
        else:
            merged = strategic_merge(result.get(key), value, key)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _merge_list(target: Any, patch: list[Any], field: str) -> list[Any]:
    current = copy.deepcopy(target) if isinstance(target, list) else []
    if field in MERGED_SETS:
        return current + [item for item in patch if item not in current]
    key = _merge_key(field, patch)
    if key is None:
        return [_clean(item) for item in patch]
    for item in patch:
        position = next(
            (i for i, old in enumerate(current) if isinstance(old, dict) and old.get(key) == item.get(key)),
            None,
        )
        if item.get("$patch") == "delete":
            if position is not None:
                del current[position]
        elif position is None:
            current.append(_clean(item))
        else:
            current[position] = strategic_merge(current[position], item)
    return current


def _merge_key(field: str, patch: list[Any]) -> str | None:
    if not patch or not all(isinstance(item, dict) for item in patch):
        return None
    for key in MERGE_KEYS.get(field, ()):
        if all(key in item for item in patch):
            return key
    return None


def _clean(value: Any) -> Any:
    """A copy of ``value`` without patch directives."""
    if isinstance(value, dict):
        return {
            key: _clean(item) for key, item in value.items() if not key.startswith("$") and item is not None
        }
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


def _bad(message: str) -> Invalid:
    return Invalid(message, bad_request=True)


def _invalid(message: str) -> Invalid:
    return Invalid(message)
