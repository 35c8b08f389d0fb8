"""Lenient decoding of kinds another project owns (Grove's): only what our model requires is checked.

A PodCliqueSet written by a newer Grove may carry a field in a shape our Structs do not know — a new
pod-gang phase, a list where we modelled a string. Refusing the whole object for it would hide the
PodCliqueSet from the operator (which would then try to create it again, forever). Instead the field
our model refuses is dropped and the object decoded without it; if that leaves a required field
missing, the object holding it is dropped in turn, up to the object itself, which is then refused as
an object of our own kinds would be. An optional field the operator reads reads as absent when it is
dropped (a readiness count: not ready yet), never as a made-up value.

What was dropped is logged once per object and set of fields, naming them.
"""

from __future__ import annotations

import copy
import functools
import logging
import re
from typing import Any, TypeVar

import msgspec

logger = logging.getLogger("dgd.cluster.decode")

T = TypeVar("T")

#: At most this many fields are dropped from one object before it is refused.
MOST_DROPPED = 32

_AT = re.compile(r" - at `(\$[^`]*)`$")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")


def _steps(path: str) -> list[str | int]:
    """``$.status.podGangStatuses[0].phase`` → ``["status", "podGangStatuses", 0, "phase"]``; a map's
    value (``[...]``, msgspec does not say which key) ends the path at the map."""
    steps: list[str | int] = []
    for match in _STEP.finditer(path, 1):
        name, index = match.groups()
        if index == "...":
            break
        steps.append(name if name is not None else int(index))
    return steps


def _drop(document: Any, steps: list[str | int]) -> bool:
    """Remove what ``steps`` point at from ``document``; ``False`` if it is the document itself or
    is not there."""
    if not steps:
        return False
    holder = document
    for step in steps[:-1]:
        try:
            holder = holder[step]
        except (KeyError, IndexError, TypeError):
            return False
    last = steps[-1]
    if isinstance(holder, dict) and isinstance(last, str) and last in holder:
        del holder[last]
        return True
    if isinstance(holder, list) and isinstance(last, int) and 0 <= last < len(holder):
        del holder[last]
        return True
    return False


def convert_leniently(item: dict[str, Any], model: type[T]) -> tuple[T, list[str]]:
    """``item`` as ``model``, with what the model refuses dropped (see the module), and the refusals
    in msgspec's words; when the object itself cannot be read, raises the first refusal (the field at
    its root). ``item`` is not changed."""
    try:
        return msgspec.convert(item, model), []
    except msgspec.ValidationError as refused:
        first = error = refused
    document, dropped = copy.deepcopy(item), []
    for _ in range(MOST_DROPPED):
        found = _AT.search(str(error))
        if found is None or not _drop(document, _steps(found.group(1))):
            break
        dropped.append(str(error))
        try:
            return msgspec.convert(document, model), dropped
        except msgspec.ValidationError as again:
            error = again
    raise first


@functools.lru_cache(maxsize=4096)
def log_dropped(kind: str, namespace: str | None, name: str, dropped: tuple[str, ...]) -> None:
    """Say once per object and set of fields what lenient decoding dropped."""
    where = f"{namespace}/{name}" if namespace else name
    logger.warning(
        "%s %s: read without what this operator's model of it refuses (%s)", kind, where, "; ".join(dropped)
    )
