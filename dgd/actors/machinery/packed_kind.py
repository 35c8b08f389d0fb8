"""``PackedKind``: the objects of one kind the informer cache holds, packed.

A decoded object is a tree of Structs, dicts and strings: a DGD of upstream's vllm ``agg.yaml`` takes
about 6 KiB that way, and about 1.1 KiB as the MessagePack its Struct encodes to. A cache of
thousands of objects keeps each packed, with what its bookkeeping asks without decoding (its
resourceVersion and the uid of its controller), and decodes an object when it is read: a fresh
object for every read, so no reader can change what another sees (about 30-60 µs for a DGD, a few for
a PodClique). Objects of a kind with a model decode to its Struct, the others to raw JSON dicts.
The MessagePack is kept deflated against the first object of the shelf (``dgd.cluster.packing``)
once ``FRESH`` newer objects were put on the shelf: a fleet's objects of one kind differ in little but
their names, so each costs a few hundred bytes (a few µs more per read), while the objects that just
changed, which reconciles read next and which often change again at once, are read and replaced as
they are.

``packed=False`` keeps objects as they are (the same instance for every read).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from dgd.cluster.packing import Packing
from dgd.cluster.resources import Resource
from dgd.messages.meta import controller_of, identity

Name = tuple[str | None, str]

_ENCODER = msgspec.msgpack.Encoder()

#: How many of the objects put last a shelf keeps unpacked.
FRESH = 256


class _Held(NamedTuple):
    """One object as held: the object (or its MessagePack, ``deflated`` or not), its resourceVersion,
    its controller's uid."""

    body: Any
    version: str
    controller: str | None
    deflated: bool = False


def controller_uid(obj: Any) -> str | None:
    """The uid of the object's controller (its owner reference with ``controller: true``)."""
    owner = controller_of(obj)
    return sys.intern(owner.uid) if owner is not None and owner.uid else None


class PackedKind:
    """The objects of one kind by namespace and name (see the module)."""

    def __init__(self, resource: Resource[Any], *, packed: bool = True) -> None:
        self._packed = packed
        model = None if resource.raw else resource.model
        self._decoder: msgspec.msgpack.Decoder[Any] = (
            msgspec.msgpack.Decoder(model) if model is not None else msgspec.msgpack.Decoder()
        )
        self._packing = Packing()
        self._held: dict[Name, _Held] = {}
        # The objects put last, oldest first: each is deflated once FRESH newer ones follow it.
        self._fresh: deque[tuple[Name, _Held]] = deque()

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, name: Name) -> bool:
        return name in self._held

    def names(self) -> Iterator[Name]:
        return iter(self._held)

    def get(self, name: Name) -> Any:
        """The object ``name``, decoded afresh (``None``: not held)."""
        held = self._held.get(name)
        return None if held is None else self._open(held)

    def version(self, name: Name) -> str | None:
        """The resourceVersion of the object held as ``name`` (``None``: not held)."""
        held = self._held.get(name)
        return None if held is None else held.version

    def controller(self, name: Name) -> str | None:
        """The uid of the controller of the object held as ``name``."""
        held = self._held.get(name)
        return None if held is None else held.controller

    def put(self, name: Name, obj: Any) -> None:
        held = _Held(_ENCODER.encode(obj) if self._packed else obj, identity(obj)[2], controller_uid(obj))
        self._held[name] = held
        if not self._packed:
            return
        self._fresh.append((name, held))
        if len(self._fresh) > FRESH:
            # Deflate the oldest fresh object, unless it was replaced or dropped meanwhile.
            name, held = self._fresh.popleft()
            if self._held.get(name) is held:
                self._held[name] = held._replace(body=self._packing.pack(held.body), deflated=True)

    def pop(self, name: Name) -> Any:
        """Stop holding ``name``; the object it held, decoded (``None``: none)."""
        held = self._held.pop(name, None)
        return None if held is None else self._open(held)

    def _open(self, held: _Held) -> Any:
        if not self._packed:
            return held.body
        return self._decoder.decode(self._packing.unpack(held.body) if held.deflated else held.body)
