"""The informer cache: the last seen version of every object of the watched kinds, and a reader over it.

Informers (``dgd.actors.machinery.informer``) are the only writers of what they watch; an actor that wrote an
object through the port may also ``observe`` the server's answer, so its next read does not see
an older version than its own write (a newer version is never replaced by an older one). ``Reader``
answers a watched kind from the cache once its informer finished its first list: the cache is then
authoritative, for an absence too, and no read of it touches the API. Before that first list, only
what the cache holds is answered from it (an absence is not known yet: the API is asked); the kinds
nobody watches are read from the API.

What nothing here reads of a kind is not kept, and some kinds are indexed by the object they refer to
as well as by their controller (``dgd.actors.machinery.cache_kinds``), so a cache of thousands of
objects holds only what reconciles read, and finds it without a scan.

Everything runs on one event loop and every method is synchronous, so a read is always one
consistent snapshot of one object.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, cast

import anyio
import msgspec

from dgd.actors.machinery.cache_kinds import REFERENCES, SLIM
from dgd.actors.machinery.packed_kind import PackedKind
from dgd.cluster.resources import Resource
from dgd.messages.meta import identity

T = TypeVar("T")

_Name = tuple[str | None, str]


class Change(msgspec.Struct, frozen=True):
    """One difference a re-list found: the object before (``None``: new) and after (``None``: gone)."""

    type: str
    old: Any
    new: Any


def _newer(candidate: str, current: str) -> bool:
    # Resource versions are opaque in general; numeric ones (etcd's, ours) are ordered.
    if candidate.isdigit() and current.isdigit():
        return int(candidate) > int(current)
    return candidate != current


#: Hears ``(resource id, event type, old, new)`` for every change an informer caches.
Listener = Callable[[str, str, Any, Any], None]


class Cache:
    """Objects by resource, namespace and name. Only informers fill it (and writers ``observe``)."""

    def __init__(
        self, slim: Mapping[str, Callable[[Any], Any]] | None = None, *, packed: bool = True
    ) -> None:
        #: resource id -> what of an object of that kind is kept (``SLIM``: the parts nothing reads go).
        self._slim = SLIM if slim is None else slim
        #: Whether objects are held packed (``dgd.actors.machinery.packed_kind``), decoded afresh for
        #: every read.
        self._packed = packed
        self._objects: dict[str, PackedKind] = {}
        self._synced: dict[str, anyio.Event] = {}
        # resource -> the namespaces (None: all) still to be listed before it counts as synced.
        self._unlisted: dict[str, set[str | None]] = {}
        # resource -> controller uid -> names of the objects it controls.
        self._controlled: dict[str, dict[str, set[_Name]]] = {}
        # resource -> (namespace, name referred to) -> names of the objects referring to it, and
        # resource -> name -> what that object refers to (``REFERENCES``).
        self._referring: dict[str, dict[_Name, set[_Name]]] = {}
        self._refers: dict[str, dict[_Name, _Name]] = {}
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        """Tell ``listener`` every change the informers bring, as it is cached (not what ``observe``
        records: those are this process's own writes)."""
        self._listeners.append(listener)

    def _tell(self, rid: str, event_type: str, old: Any, new: Any) -> None:
        for listener in self._listeners:
            listener(rid, event_type, old, new)

    def serve(self, resource: Resource[Any], scopes: Iterable[str | None] = (None,)) -> None:
        """Start caching ``resource`` (its informer calls this before its first list), listed in the
        namespaces ``scopes`` (``None``: all of them): synced once each was listed."""
        rid = str(resource)
        self._shelf(resource)
        event = self._synced.setdefault(rid, anyio.Event())
        if not event.is_set():
            self._unlisted.setdefault(rid, set()).update(scopes)

    def _shelf(self, resource: Resource[Any]) -> PackedKind:
        rid = str(resource)
        shelf = self._objects.get(rid)
        if shelf is None:
            shelf = self._objects[rid] = PackedKind(resource, packed=self._packed)
        return shelf

    def slims(self, resource: Resource[Any]) -> bool:
        """Whether objects of ``resource`` are kept without parts of them (``SLIM``)."""
        return str(resource) in self._slim

    def caches(self, resource: Resource[Any]) -> bool:
        return str(resource) in self._objects

    def synced(self, resource: Resource[Any]) -> bool:
        return self.synced_id(str(resource))

    def synced_id(self, rid: str) -> bool:
        """Whether the resource with id ``rid`` (``plural.group``) finished its first list."""
        event = self._synced.get(rid)
        return event is not None and event.is_set()

    @property
    def resources(self) -> list[str]:
        return sorted(self._objects)

    def all_synced(self) -> bool:
        return all(event.is_set() for event in self._synced.values())

    async def wait_synced(self) -> None:
        """Return once every served resource finished its first list."""
        for event in list(self._synced.values()):
            await event.wait()

    def get(self, resource: Resource[T], namespace: str | None, name: str) -> T | None:
        return cast("T | None", self._objects[str(resource)].get((namespace, name)))

    def version(self, resource: Resource[Any], namespace: str | None, name: str) -> str | None:
        """The resourceVersion of the object held (``None``: none), read without decoding it."""
        shelf = self._objects.get(str(resource))
        return None if shelf is None else shelf.version((namespace, name))

    def list(self, resource: Resource[T], namespace: str | None = None) -> list[T]:
        """Objects of ``resource`` (in ``namespace``), ordered by namespace then name."""
        shelf = self._objects[str(resource)]
        keys = sorted(k for k in shelf.names() if namespace is None or k[0] == namespace)
        return [cast("T", shelf.get(key)) for key in keys]

    def count(self, resource: Resource[Any]) -> int:
        shelf = self._objects.get(str(resource))
        return 0 if shelf is None else len(shelf)

    def controlled_by(self, resource: Resource[T], uid: str | None) -> builtins.list[T]:
        """Objects of ``resource`` whose controller owner reference names ``uid``, by namespace and name."""
        names = self._controlled.get(str(resource), {}).get(uid or "", set())
        shelf = self._objects[str(resource)]
        return [cast("T", shelf.get(name)) for name in sorted(names)]

    def referring(self, resource: Resource[T], namespace: str | None, name: str) -> builtins.list[T]:
        """Objects of ``resource`` in ``namespace`` that refer to the object ``name`` there (``REFERENCES``),
        by name."""
        names = self._referring.get(str(resource), {}).get((namespace, name), set())
        shelf = self._objects[str(resource)]
        return [cast("T", shelf.get(held)) for held in sorted(names)]

    def _store(self, resource: Resource[Any], name: _Name, obj: Any) -> None:
        rid, shelf = str(resource), self._shelf(resource)
        if name in shelf:
            self._unindex(rid, name, shelf.controller(name))
        shelf.put(name, obj)
        owner = shelf.controller(name)
        if owner:
            self._controlled.setdefault(rid, {}).setdefault(owner, set()).add(name)
        reference = REFERENCES.get(rid)
        referred = reference(obj) if reference is not None else None
        if referred:
            self._refers.setdefault(rid, {})[name] = (name[0], referred)
            self._referring.setdefault(rid, {}).setdefault((name[0], referred), set()).add(name)

    def _drop(self, rid: str, name: _Name) -> Any:
        shelf = self._objects.get(rid)
        if shelf is None or name not in shelf:
            return None
        self._unindex(rid, name, shelf.controller(name))
        return shelf.pop(name)

    def _unindex(self, rid: str, name: _Name, owner: str | None) -> None:
        names = self._controlled.get(rid, {}).get(owner or "")
        if names is not None:
            names.discard(name)
            if not names:
                del self._controlled[rid][owner or ""]
        referred = self._refers.get(rid, {}).pop(name, None)
        if referred is not None:
            referring = self._referring[rid][referred]
            referring.discard(name)
            if not referring:
                del self._referring[rid][referred]

    # Writers.

    def replace(
        self, resource: Resource[Any], items: Iterable[Any], *, namespace: str | None = None
    ) -> builtins.list[Change]:
        """Set everything of ``resource`` (in ``namespace``; ``None``: in every namespace) from a fresh
        list; returns what changed since the last view."""
        rid, shelf = str(resource), self._shelf(resource)
        before = {k for k in shelf.names() if namespace is None or k[0] == namespace}
        seen: set[_Name] = set()
        changes: builtins.list[Change] = []
        slim = self._slim.get(rid)
        for obj in items:
            if slim is not None:
                obj = slim(obj)
            where, name, version = identity(obj)
            seen.add((where, name))
            held = shelf.version((where, name)) if (where, name) in before else None
            if held is None:
                changes.append(Change("ADDED", None, obj))
            elif held != version:
                changes.append(Change("MODIFIED", shelf.get((where, name)), obj))
            self._store(resource, (where, name), obj)
        for key in sorted(before - seen):
            changes.append(Change("DELETED", self._drop(rid, key), None))
        for change in changes:
            self._tell(rid, change.type, change.old, change.new)
        unlisted = self._unlisted.get(rid)
        if unlisted is not None:
            unlisted.discard(namespace)
        if not unlisted:
            self._unlisted.pop(rid, None)
            self._synced.setdefault(rid, anyio.Event()).set()
        return changes

    def apply(self, resource: Resource[Any], event_type: str, obj: Any) -> Any:
        """Record one watch event; returns the version it replaces (``None`` if there was none)."""
        rid = str(resource)
        slim = self._slim.get(rid)
        if slim is not None:
            obj = slim(obj)
        namespace, name, _ = identity(obj)
        if event_type == "DELETED":
            old = self._drop(rid, (namespace, name))
        else:
            old = self._shelf(resource).get((namespace, name))
            self._store(resource, (namespace, name), obj)
        self._tell(rid, event_type, old, obj)
        return old

    def drop_unreadable(self, resource: Resource[Any], namespace: str | None, name: str) -> Any:
        """Drop one object the operator can no longer read (its listeners hear a deletion); returns the
        version dropped, if one was held."""
        rid = str(resource)
        old = self._drop(rid, (namespace, name))
        if old is not None:
            self._tell(rid, "DELETED", old, old)
        return old

    def passed_over(self, resource: Resource[Any], event_type: str, obj: Any) -> None:
        """Tell the listeners of a watch event the cache does not apply (``outdated``): a recorder
        still wants to know that version existed."""
        self._tell(str(resource), event_type, None, obj)

    def outdated(self, resource: Resource[Any], obj: Any) -> bool:
        """Whether the cache already holds a newer version of ``obj`` than ``obj`` (one a writer
        ``observe`` d before the watch caught up); only numeric versions are compared."""
        shelf = self._objects.get(str(resource))
        if shelf is None:
            return False
        namespace, name, version = identity(obj)
        held = shelf.version((namespace, name))
        if held is None:
            return False
        return version.isdigit() and held.isdigit() and int(version) < int(held)

    def observe(self, resource: Resource[Any], obj: Any) -> None:
        """Record what a write returned, unless the cache already holds that version or a newer one."""
        shelf = self._objects.get(str(resource))
        if shelf is None:
            return
        namespace, name, version = identity(obj)
        held = shelf.version((namespace, name))
        if held is None or _newer(version, held):
            slim = self._slim.get(str(resource))
            self._store(resource, (namespace, name), obj if slim is None else slim(obj))

    def forget(self, resource: Resource[Any], namespace: str | None, name: str) -> None:
        """Drop an object this process just deleted (its watch event will say the same)."""
        if str(resource) in self._objects:
            self._drop(str(resource), (namespace, name))


class CacheView(Protocol):
    """What a reconciler may do with the cache: read it. The mutators (``apply``, ``observe``,
    ``forget``, ...) are the informers' and the named writers' (``Syncer``, ``DGDWriter``), who hold the
    ``Cache`` itself; a reader is handed this view, so a write through it does not type-check."""

    def slims(self, resource: Resource[Any]) -> bool: ...

    def caches(self, resource: Resource[Any]) -> bool: ...

    def synced(self, resource: Resource[Any]) -> bool: ...

    def synced_id(self, rid: str) -> bool: ...

    def get(self, resource: Resource[T], namespace: str | None, name: str) -> T | None: ...

    def version(self, resource: Resource[Any], namespace: str | None, name: str) -> str | None: ...

    def list(self, resource: Resource[T], namespace: str | None = None) -> builtins.list[T]: ...

    def count(self, resource: Resource[Any]) -> int: ...

    def controlled_by(self, resource: Resource[T], uid: str | None) -> builtins.list[T]: ...

    def referring(self, resource: Resource[T], namespace: str | None, name: str) -> builtins.list[T]: ...
