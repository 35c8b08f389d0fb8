"""The memory API server's storage (its etcd and watch cache).

Objects are kept per resource as their encoded bytes (what reads decode from, so every reader gets
a fresh object), never mutated once stored; a version's plain JSON is kept only until the store's
listeners have seen it (``Stored.release``), and once ``FRESH`` newer versions were stored its bytes
are kept deflated against a dictionary of their resource (``dgd.cluster.packing``): what was just
written is what watchers, controllers and the next write read, so it is read as it is. One global
resourceVersion counts every write, as etcd's revision does. Each resource keeps a bounded history of
its changes — the window a watch can resume from — and the ``floor`` below which a resume is ``Gone``.

The store knows nothing of Kubernetes rules (``memory_server`` applies them); it assigns
resourceVersions, keeps the uid and owner indexes, records history and tells its listeners (watch
fan-out, garbage collector) about every change, synchronously and in order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Literal

import msgspec

from dgd.cluster.errors import Gone
from dgd.cluster.packing import Packing
from dgd.messages.base import JSONObject

#: How many of the latest versions stored are kept unpacked (a few MiB of a fleet's objects).
FRESH = 1024

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]
#: (plural, namespace, name); namespace is ``None`` for cluster-scoped kinds.
StoreKey = tuple[str, str | None, str]


class _Envelope(msgspec.Struct):
    """What the store reads of a stored object without decoding all of it: its metadata."""

    metadata: JSONObject


_ENVELOPE = msgspec.json.Decoder(_Envelope)


class Stored:
    """One stored version of one object. ``data`` is never mutated; decode ``blob`` to get a copy.

    Once the store's listeners have seen a version, it is ``release``d: it keeps only its bytes (and
    whether it is being deleted), and ``data`` decodes them when asked (reads decode them anyway), as do
    the fields the store indexes and collects garbage by (uid, labels, owners, finalizers), from the
    metadata alone; later the store has it ``pack`` its bytes with its resource's ``packing``. The
    objects and the history a watch resumes from then cost their packed size, not their Python objects
    (issue 18: a simulated fleet's memory). While a change replaces a version, the store has it
    ``hold`` its metadata, so the indexes and every listener read it decoded once.
    """

    __slots__ = ("_bytes", "_data", "_metadata", "_packed", "_packing", "deleting", "key", "rv")

    def __init__(self, key: StoreKey, data: JSONObject, rv: int, packing: Packing | None = None) -> None:
        self.key = key
        self._data: JSONObject | None = data
        self._metadata: JSONObject | None = None
        self.rv = rv
        self._packing = packing
        self._packed = False
        self._bytes = msgspec.json.encode(data)
        self.deleting = bool(data["metadata"].get("deletionTimestamp"))

    @property
    def blob(self) -> bytes:
        """The object's JSON bytes."""
        if self._packed and self._packing is not None:
            return self._packing.unpack(self._bytes)
        return self._bytes

    @property
    def data(self) -> JSONObject:
        """The object (do not mutate it): the one stored until released, then decoded again."""
        if self._data is not None:
            return self._data
        data: JSONObject = msgspec.json.decode(self.blob)
        return data

    @property
    def metadata(self) -> JSONObject:
        """The object's metadata (do not mutate it; decoded afresh once released, unless held)."""
        if self._data is not None:
            metadata: JSONObject = self._data["metadata"]
            return metadata
        if self._metadata is not None:
            return self._metadata
        return _ENVELOPE.decode(self.blob).metadata

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))

    @property
    def labels(self) -> dict[str, str]:
        labels: dict[str, str] = self.metadata.get("labels") or {}
        return labels

    @property
    def owners(self) -> tuple[JSONObject, ...]:
        return tuple(self.metadata.get("ownerReferences") or ())

    @property
    def finalizers(self) -> tuple[str, ...]:
        return tuple(self.metadata.get("finalizers") or ())

    def hold(self) -> None:
        """Keep this version's metadata decoded until it is released again."""
        if self._data is None and self._metadata is None:
            self._metadata = _ENVELOPE.decode(self.blob).metadata

    def release(self) -> None:
        """Keep only the bytes of this version (see the class)."""
        self._metadata = None
        self._data = None

    def pack(self) -> None:
        """Keep this released version's bytes packed (a version without a ``packing`` keeps them)."""
        if self._data is None and not self._packed and self._packing is not None:
            self._bytes = self._packing.pack(self._bytes)
            self._packed = True

    def thaw(self) -> JSONObject:
        """A fresh, mutable copy of the object."""
        data: JSONObject = msgspec.json.decode(self.blob)
        return data

    def stamped(self, rv: int) -> Stored:
        """This version with another resourceVersion (how a deletion reports the last state)."""
        data = self.thaw()
        data["metadata"]["resourceVersion"] = str(rv)
        return Stored(self.key, data, rv, self._packing)


class Change:
    """One write: ``obj`` is the new state (for ``DELETED``, the last state stamped with ``rv``)."""

    __slots__ = ("_prev_at_rv", "obj", "prev", "rv", "type")

    def __init__(self, type: ChangeType, rv: int, obj: Stored, prev: Stored | None) -> None:
        self.type = type
        self.rv = rv
        self.obj = obj
        self.prev = prev
        self._prev_at_rv: Stored | None = None

    @property
    def key(self) -> StoreKey:
        return self.obj.key

    def prev_at_rv(self) -> Stored:
        """The previous state stamped with this change's resourceVersion (a selector-exit ``DELETED``)."""
        assert self.prev is not None
        if self._prev_at_rv is None:
            self._prev_at_rv = self.prev.stamped(self.rv)
            self._prev_at_rv.release()
            self._prev_at_rv.pack()
        return self._prev_at_rv


class History:
    """The last ``capacity`` changes of one resource. A watch may resume from any resourceVersion
    at or above ``floor``; below it, a change it needs has been evicted, so the answer is ``Gone``."""

    def __init__(self, capacity: int) -> None:
        self.changes: deque[Change] = deque()
        self.capacity = capacity
        self.floor = 1

    def append(self, change: Change) -> None:
        if len(self.changes) >= self.capacity:
            self.floor = self.changes.popleft().rv
        self.changes.append(change)

    def since(self, rv: int) -> list[Change]:
        """Every change after ``rv``, oldest first; ``Gone`` if some were evicted."""
        if rv < self.floor:
            raise Gone(f"too old resource version: {rv} ({self.floor})")
        newer: list[Change] = []
        for change in reversed(self.changes):
            if change.rv <= rv:
                break
            newer.append(change)
        newer.reverse()
        return newer

    def compact(self, rv: int) -> None:
        """Forget every change up to ``rv`` (etcd compaction)."""
        while self.changes and self.changes[0].rv <= rv:
            self.changes.popleft()
        self.floor = max(self.floor, rv)


class Store:
    """Every object, indexed by key, uid and owner uid, with one global resourceVersion."""

    def __init__(self, plurals: Iterable[str], history_size: int) -> None:
        # etcd's first revision is 1, so no list ever reports "0" (which a watch reads as "any").
        self.rv = 1
        self._objects: dict[str, dict[tuple[str | None, str], Stored]] = {plural: {} for plural in plurals}
        self._by_uid: dict[str, Stored] = {}
        self._dependents: dict[str, dict[StoreKey, None]] = {}
        self.histories = {plural: History(history_size) for plural in self._objects}
        self._packings = {plural: Packing() for plural in self._objects}
        # The latest versions released, oldest first: each is packed once FRESH newer ones follow it.
        self._fresh: deque[Stored] = deque()
        self.listeners: list[Callable[[Change], None]] = []
        # Read indexes: the keys of each resource in list order (rebuilt after an insert or removal),
        # and the keys carrying each label value, for the label keys a list has narrowed by so far
        # (indexed from then on): most label keys are never asked for, and a set per value costs
        # more than the object it points at.
        self._sorted: dict[str, list[tuple[str | None, str]] | None] = dict.fromkeys(self._objects)
        self._by_label: dict[tuple[str, str, str], set[tuple[str | None, str]]] = {}
        self._label_keys: dict[str, set[str]] = {plural: set() for plural in self._objects}

    # Reads.

    def get(self, key: StoreKey) -> Stored | None:
        plural, namespace, name = key
        return self._objects[plural].get((namespace, name))

    def items(self, plural: str, namespace: str | None = None) -> list[Stored]:
        """The objects of a resource (in one namespace, or all), ordered by namespace then name."""
        found = self._objects[plural]
        keys = self._sorted[plural]
        if keys is None:
            keys = self._sorted[plural] = sorted(found, key=_order)
        return [found[key] for key in keys if namespace is None or key[0] == namespace]

    def labelled(
        self, plural: str, namespace: str | None, requirements: Iterable[tuple[str, Iterable[str]]]
    ) -> list[Stored]:
        """The objects of a resource (in one namespace, or all) that meet every requirement ``(label key,
        values)``: the label is set to one of the values. In list order."""
        found = self._objects[plural]
        candidates: list[set[tuple[str | None, str]]] = []
        for key, values in requirements:
            self._index_label(plural, key)
            holders: set[tuple[str | None, str]] = set()
            for value in values:
                holders |= self._by_label.get((plural, key, value), set())
            candidates.append(holders)
        # The fewest first: each intersection is then no larger than the smallest set.
        candidates.sort(key=len)
        keys = candidates[0].intersection(*candidates[1:]) if candidates else set(found)
        return [
            found[k]
            for k in sorted(keys, key=_order)
            if (namespace is None or k[0] == namespace) and k in found
        ]

    def _index_label(self, plural: str, key: str) -> None:
        """Index the label ``key`` of a resource from now on (its current objects first)."""
        indexed = self._label_keys[plural]
        if key in indexed:
            return
        indexed.add(key)
        for name, stored in self._objects[plural].items():
            value = stored.labels.get(key)
            if value is not None:
                self._by_label.setdefault((plural, key, value), set()).add(name)

    def by_uid(self, uid: str) -> Stored | None:
        return self._by_uid.get(uid)

    def dependents(self, uid: str) -> list[Stored]:
        """Objects with an owner reference to ``uid``, in key order."""
        keys = sorted(self._dependents.get(uid, ()), key=lambda key: (key[0], *_order(key[1:])))
        return [stored for key in keys if (stored := self.get(key)) is not None]

    def as_of(self, plural: str, rv: int) -> dict[tuple[str | None, str], Stored]:
        """The objects of a resource as they were at ``rv`` (as far back as the history reaches)."""
        state: dict[tuple[str | None, str], Stored | None] = dict(self._objects[plural])
        for change in reversed(self.histories[plural].changes):
            if change.rv <= rv:
                break
            state[change.key[1:]] = change.prev
        return {
            key: stored for key, stored in sorted(state.items(), key=lambda item: _order(item[0])) if stored
        }

    # Writes: the only two ways anything changes.

    def put(self, key: StoreKey, data: JSONObject) -> Stored:
        """Store ``data`` (which the store now owns) under a new resourceVersion."""
        self.rv += 1
        data["metadata"]["resourceVersion"] = str(self.rv)
        prev = self.get(key)
        stored = Stored(key, data, self.rv, self._packings[key[0]])
        self._objects[key[0]][key[1:]] = stored
        if prev is None:
            self._sorted[key[0]] = None
        else:
            prev.hold()
        self._index(prev, stored)
        self._record(Change("MODIFIED" if prev else "ADDED", self.rv, stored, prev))
        self._release(stored)
        if prev is not None:
            prev.release()
        return stored

    def remove(self, stored: Stored) -> Stored:
        """Delete the object; returns its last state stamped with the deletion's resourceVersion."""
        self.rv += 1
        del self._objects[stored.key[0]][stored.key[1:]]
        self._sorted[stored.key[0]] = None
        stored.hold()
        self._index(stored, None)
        last = stored.stamped(self.rv)
        self._record(Change("DELETED", self.rv, last, stored))
        self._release(last)
        stored.release()
        return last

    def compact(self) -> None:
        """Forget all history: every watch must resume from now on, or get ``Gone``."""
        for history in self.histories.values():
            history.compact(self.rv)

    def _index(self, prev: Stored | None, stored: Stored | None) -> None:
        if prev is not None:
            metadata = prev.metadata
            labels = metadata.get("labels") or {}
            for label in self._label_keys[prev.key[0]]:
                value = labels.get(label)
                if value is None:
                    continue
                holders = self._by_label.get((prev.key[0], label, value))
                if holders is not None:
                    holders.discard(prev.key[1:])
                    if not holders:
                        del self._by_label[(prev.key[0], label, value)]
            self._by_uid.pop(metadata.get("uid", ""), None)
            for owner in metadata.get("ownerReferences") or ():
                dependents = self._dependents.get(owner.get("uid", ""))
                if dependents is not None:
                    dependents.pop(prev.key, None)
                    if not dependents:
                        del self._dependents[owner.get("uid", "")]
        if stored is not None:
            metadata = stored.metadata
            labels = metadata.get("labels") or {}
            for label in self._label_keys[stored.key[0]]:
                value = labels.get(label)
                if value is not None:
                    self._by_label.setdefault((stored.key[0], label, value), set()).add(stored.key[1:])
            self._by_uid[metadata.get("uid", "")] = stored
            for owner in metadata.get("ownerReferences") or ():
                self._dependents.setdefault(owner.get("uid", ""), {})[stored.key] = None

    def _release(self, stored: Stored) -> None:
        """Release a version its listeners have seen; pack the one stored ``FRESH`` versions before it."""
        stored.release()
        self._fresh.append(stored)
        if len(self._fresh) > FRESH:
            self._fresh.popleft().pack()

    def _record(self, change: Change) -> None:
        self.histories[change.key[0]].append(change)
        for listener in self.listeners:
            listener(change)


def _order(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """Sort keys by namespace (cluster-scoped first) then name, as etcd lists them."""
    namespace, name = key
    return (namespace or "", name)
