"""Owner-reference garbage collection, as the kube-controller-manager's garbage collector does it.

The real collector is asynchronous; this one is immediate and deterministic: every write that could
leave garbage queues work, and the API call that made the write settles the queue before it
returns. So when ``delete`` returns, every dependent that the real collector would eventually
delete is deleted (or marked deleting, when it has finalizers of its own), in key order, each with
its own resourceVersion and watch event.

The rules (``garbagecollector.attemptToDeleteItem``):

- An owner reference is *dangling* when no object has that uid (with that name, in the dependent's
  namespace or cluster-scoped), *waiting* when its owner is being deleted in the foreground, and
  *solid* otherwise.
- A dependent with a solid owner stays; its dangling and waiting references are removed.
- A dependent with no solid owner is deleted: in the foreground when a waiting owner is deleting it
  and it has dependents of its own, otherwise per its own finalizers (background by default).
- An owner deleting in the foreground (finalizer ``foregroundDeletion``) loses that finalizer once
  no dependent with ``blockOwnerDeletion: true`` exists any more — terminating ones still block.
- An owner deleting with ``orphan`` has its references removed from every dependent, then loses
  that finalizer.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from dgd.cluster.memory.store import Change, Store, Stored, StoreKey
from dgd.cluster.memory.strategies import FOREGROUND, ORPHAN
from dgd.messages.base import JSONObject


class Server(Protocol):
    """The memory API server primitives the collector writes through."""

    store: Store

    def delete_stored(self, current: Stored, propagation: str | None) -> Stored | None: ...

    def commit(self, current: Stored, new: JSONObject) -> Stored: ...


class GarbageCollector:
    """Deletes what lost its owners. Listens to the store; ``settle`` does the queued work."""

    def __init__(self, server: Server) -> None:
        self._server = server
        self._store = server.store
        self._owners: deque[str] = deque()
        self._dependents: deque[StoreKey] = deque()
        self._store.listeners.append(self.notice)

    def notice(self, change: Change) -> None:
        """Queue the work a change may cause (called by the store for every change, in order)."""
        obj, prev = change.obj, change.prev
        if change.type == "DELETED":
            # Its dependents may have lost their last owner; its owners may be waiting for it.
            self._dependents.extend(dependent.key for dependent in self._store.dependents(obj.uid))
            self._owners.extend(owner.get("uid", "") for owner in obj.owners)
            return
        if obj.deleting and (ORPHAN in obj.finalizers or FOREGROUND in obj.finalizers):
            self._owners.append(obj.uid)
        before = {str(owner.get("uid", "")) for owner in prev.owners} if prev else set()
        after = {str(owner.get("uid", "")) for owner in obj.owners}
        if after - before:
            self._dependents.append(obj.key)
        self._owners.extend(uid for uid in sorted(before - after) if uid)

    def settle(self) -> None:
        """Do all queued work, and the work it causes, until nothing is left."""
        while self._owners or self._dependents:
            if self._dependents:
                self._attempt(self._dependents.popleft())
            else:
                self._finish_owner(self._owners.popleft())

    def _attempt(self, key: StoreKey) -> None:
        dependent = self._store.get(key)
        if dependent is None or dependent.deleting:
            return
        solid, dangling, waiting = self._classify(dependent)
        if solid:
            if dangling or waiting:
                self._drop_references(dependent, dangling | waiting)
            return
        foreground = bool(waiting) and bool(self._store.dependents(dependent.uid))
        self._server.delete_stored(dependent, "Foreground" if foreground else None)

    def _finish_owner(self, uid: str) -> None:
        owner = self._store.by_uid(uid)
        if owner is None or not owner.deleting:
            return
        if ORPHAN in owner.finalizers:
            for dependent in self._store.dependents(uid):
                self._drop_references(dependent, {uid})
            self._drop_finalizer(owner, ORPHAN)
        elif FOREGROUND in owner.finalizers:
            for dependent in self._store.dependents(uid):
                self._attempt(dependent.key)
            if not any(_blocks(dependent, uid) for dependent in self._store.dependents(uid)):
                self._drop_finalizer(owner, FOREGROUND)

    def _classify(self, dependent: Stored) -> tuple[set[str], set[str], set[str]]:
        solid: set[str] = set()
        dangling: set[str] = set()
        waiting: set[str] = set()
        for reference in dependent.owners:
            uid = reference.get("uid", "")
            owner = self._store.by_uid(uid)
            if owner is None or not _may_own(owner, reference, dependent):
                dangling.add(uid)
            elif owner.deleting and FOREGROUND in owner.finalizers:
                waiting.add(uid)
            else:
                solid.add(uid)
        return solid, dangling, waiting

    def _drop_references(self, dependent: Stored, uids: set[str]) -> None:
        new = dependent.thaw()
        kept = [owner for owner in dependent.owners if owner.get("uid") not in uids]
        if kept:
            new["metadata"]["ownerReferences"] = kept
        else:
            new["metadata"].pop("ownerReferences", None)
        self._server.commit(dependent, new)

    def _drop_finalizer(self, owner: Stored, finalizer: str) -> None:
        new = owner.thaw()
        kept = [name for name in owner.finalizers if name != finalizer]
        if kept:
            new["metadata"]["finalizers"] = kept
        else:
            new["metadata"].pop("finalizers", None)
        self._server.commit(owner, new)


def _may_own(owner: Stored, reference: JSONObject, dependent: Stored) -> bool:
    """Whether ``owner`` is the object ``reference`` names: same name, and a namespaced owner must
    be in the dependent's namespace (cross-namespace references are treated as absent)."""
    owner_namespace = owner.key[1]
    return reference.get("name") == owner.key[2] and owner_namespace in (None, dependent.key[1])


def _blocks(dependent: Stored, uid: str) -> bool:
    return any(owner.get("uid") == uid and owner.get("blockOwnerDeletion") for owner in dependent.owners)
