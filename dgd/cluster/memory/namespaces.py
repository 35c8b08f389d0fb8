"""The memory API server's namespace lifecycle, as the real one splits it between admission and the
namespace controller: a create in a missing or terminating namespace is refused (NamespaceLifecycle
admission); deleting a namespace marks it ``Terminating``; the controller then deletes its content
(finalizers honoured) and, once none is left, the namespace. Like the garbage collector, it works
through the server's primitives and runs to a standstill before a call returns.
"""

from __future__ import annotations

from typing import Any, Protocol

from dgd.cluster.errors import Forbidden, NotFound
from dgd.cluster.memory.store import Store, Stored, StoreKey
from dgd.cluster.memory.strategies import mark_deleting
from dgd.cluster.resources import NAMESPACE, Resource
from dgd.messages.base import JSONObject

NAMESPACE_ID = str(NAMESPACE)


class Server(Protocol):
    """The memory API server primitives the lifecycle works through."""

    store: Store
    resources: dict[str, Resource[Any]]

    def delete_stored(self, current: Stored, propagation: str | None) -> Stored | None: ...

    def commit(self, current: Stored, new: JSONObject) -> Stored: ...

    def now(self) -> str: ...

    def key(self, resource: Resource[Any], namespace: str | None, name: str) -> StoreKey: ...


class NamespaceLifecycle:
    """Namespace admission and the namespace controller (see the module); only where Namespaces are
    served."""

    def __init__(self, server: Server) -> None:
        self._server = server

    def admit(self, resource: Resource[Any], metadata: JSONObject) -> None:
        """A create: its namespace must exist (NotFound) and not be terminating (Forbidden)."""
        namespaces = self._server.resources.get(NAMESPACE_ID)
        if not resource.namespaced or namespaces is None:
            return
        name = str(metadata.get("namespace") or "")
        found = self._server.store.get(self._server.key(namespaces, None, name))
        if found is None:
            raise NotFound(f'namespaces "{name}" not found', kind="namespaces", name=name)
        if found.deleting:
            why = f"unable to create new content in namespace {name} because it is being terminated"
            raise Forbidden(f'{resource} "{metadata.get("name")}" is forbidden: {why}', kind=resource.kind)

    def terminate(self, current: Stored) -> None:
        """Deleting a namespace marks it ``Terminating``; its content goes in ``finalize``."""
        if current.deleting:
            return
        new = mark_deleting(current.thaw(), self._server.now())
        new.setdefault("status", {})["phase"] = "Terminating"
        self._server.commit(current, new)

    def finalize(self) -> bool:
        """The namespace controller: every object of a terminating namespace is deleted; once none is
        left, the namespace goes. Whether it changed anything."""
        server, store = self._server, self._server.store
        if server.resources.get(NAMESPACE_ID) is None:
            return False
        changed = False
        # After every write: what the store indexes tells a terminating namespace, no decoding.
        for namespace in store.items(NAMESPACE_ID):
            if not namespace.deleting:
                continue
            name = namespace.key[2]
            content = [
                stored
                for rid, resource in server.resources.items()
                if resource.namespaced
                for stored in store.items(rid, name)
            ]
            for stored in content:
                if not stored.deleting:
                    server.delete_stored(stored, "Background")
                    changed = True
            if not content:
                store.remove(namespace)
                changed = True
        return changed
