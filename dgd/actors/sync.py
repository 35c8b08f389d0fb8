"""SyncResource through the port: make one child match what the DGD renders, and say so in an event.

``Syncer.sync`` carries out ``dgd.domain.sync.plan_sync`` against the observation it is given (no
re-read): create, merge-patch with the observed resourceVersion (a concurrent change is a
``Conflict``, retried by the next reconcile from fresh state, with no event), or nothing. A create
that finds the object already there (the cache was behind) syncs against the object as it is.
Every effective write records its resource-mutation event right after it succeeded; any other
refused write records a Warning and raises. What the server answered goes into the cache, so the
next read is never older than the write.

Objects are written as raw JSON, so fields the operator does not model are never dropped.

Objects several DGDs share (a namespace's planner RBAC, the MPI key Secret) are checked and created
under ``Syncer.exclusive``: one reconcile at a time per object, so the second finds what the first
created (in the cache, where its answer was observed) instead of racing it into an AlreadyExists.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

import anyio
import msgspec

from dgd.actors.cache import Cache
from dgd.actors.recorder import Recorder
from dgd.cluster.errors import AlreadyExists, ClusterError, Conflict, NotFound
from dgd.cluster.protocol import Cluster, Preconditions
from dgd.cluster.resources import Resource
from dgd.domain import events
from dgd.domain.pod_merge import JSON
from dgd.domain.sync import Create, Keep, Patch, is_stale, plan_sync
from dgd.messages.dgd import API_VERSION, KIND, DynamoGraphDeployment
from dgd.messages.meta import identity

T = TypeVar("T")


def owner_reference(dgd: DynamoGraphDeployment) -> JSON:
    """The controller owner reference every child of ``dgd`` carries."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": dgd.metadata.name,
        "uid": dgd.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def as_json(obj: Any) -> JSON:
    """A Struct or raw JSON object as plain JSON."""
    if isinstance(obj, dict):
        return obj
    out = msgspec.to_builtins(obj)
    assert isinstance(out, dict)
    return out


def decode(resource: Resource[T], raw: JSON) -> T:
    """Raw JSON as ``resource`` reads it: its Struct when modelled, else the JSON itself."""
    if resource.model is None or resource.raw:
        return cast("T", raw)
    return cast("T", msgspec.convert(raw, resource.model))


class _Turns:
    """The lock of one shared object, and how many reconciles hold it or wait for it."""

    def __init__(self) -> None:
        # Taken at once when free (no extra loop turn): waiters still queue in order.
        self.lock = anyio.Lock(fast_acquire=True)
        self.users = 0


class Syncer:
    """Writes children of DGDs: SyncResource, deletion of children no longer rendered, plain creates."""

    def __init__(self, cluster: Cluster, cache: Cache, recorder: Recorder) -> None:
        self._cluster = cluster
        self._cache = cache
        self._recorder = recorder
        # (resource, namespace, name) -> the turns of the reconciles that ensure that shared object.
        self._turns: dict[tuple[str, str | None, str], _Turns] = {}

    @asynccontextmanager
    async def exclusive(
        self, resource: Resource[Any], namespace: str | None, name: str
    ) -> AsyncIterator[None]:
        """Hold the object ``namespace/name`` of ``resource`` for one reconcile at a time (FIFO), across
        every DGD of this operator: for objects no one DGD owns, read and created by whichever comes
        first. The lock is dropped once nobody holds or waits for it."""
        key = (str(resource), namespace, name)
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns[key] = _Turns()
        turns.users += 1
        try:
            async with turns.lock:
                yield
        finally:
            turns.users -= 1
            if not turns.users:
                del self._turns[key]

    async def sync(
        self, resource: Resource[T], desired: JSON, live: T | None, *, owner: DynamoGraphDeployment
    ) -> T:
        """Make the child ``desired`` names match it, given ``live`` as last observed."""
        namespace, name, _ = identity(desired)
        if live is not None and self._cache.slims(resource) and is_stale(desired, as_json(live)):
            # The cache keeps this kind without parts the comparison needs: compare with it whole.
            live = decode(resource, await self._cluster.get(resource.as_raw().key(namespace, name)))
        live_json = as_json(live) if live is not None else None
        plan = plan_sync(desired, live_json, owner_reference(owner))
        if isinstance(plan, Keep):
            assert live is not None
            return live
        raw = resource.as_raw()
        if isinstance(plan, Create):
            try:
                return await self._create(resource, plan.body, owner)
            except AlreadyExists:
                # The cache was behind our own earlier write: sync against the object as it is.
                fresh = decode(resource, await self._cluster.get(raw.key(namespace, name)))
                self._cache.observe(resource, fresh)
                return await self.sync(resource, desired, fresh, owner=owner)
        assert isinstance(plan, Patch) and live_json is not None
        # A conflict (changed since observed) is not an event: the next reconcile syncs from fresh state.
        call = self._cluster.patch(raw.key(namespace, name), plan.patch)
        result = await self._write("Update", resource, desired, owner, call, quiet=Conflict)
        if identity(result)[2] != identity(live_json)[2]:
            what = (
                ""
                if plan.spec
                else (f"repaired {' and '.join(plan.metadata)}" if plan.metadata else "bookkeeping")
            )
            await self._recorder.emit(owner, events.updated(resource.kind, namespace, name, what))
        return result

    async def create(self, resource: Resource[T], body: JSON, *, owner: DynamoGraphDeployment) -> T | None:
        """Create ``body`` as it is (no owner reference added, no bookkeeping), with its event.

        ``None`` when an object of that name exists already (someone else created it first).
        """
        try:
            return await self._create(resource, body, owner)
        except AlreadyExists:
            return None

    async def _create(self, resource: Resource[T], body: JSON, owner: DynamoGraphDeployment) -> T:
        """Create ``body``; emit ``Created`` after success, or the failure event and re-raise.

        ``AlreadyExists`` is raised without an event: the callers decide what it means.
        """
        namespace, name, _ = identity(body)
        call = self._cluster.create(resource.as_raw(), body)
        result = await self._write("Create", resource, body, owner, call, quiet=AlreadyExists)
        await self._recorder.emit(owner, events.created(resource.kind, namespace, name))
        return result

    async def replace(self, resource: Resource[T], body: JSON, *, owner: DynamoGraphDeployment) -> T:
        """Replace an object (``body`` carries the resourceVersion it was read at), with its event."""
        namespace, name, _ = identity(body)
        call = self._cluster.replace(resource.as_raw(), body)
        result = await self._write("Update", resource, body, owner, call)
        await self._recorder.emit(owner, events.updated(resource.kind, namespace, name))
        return result

    async def _write(
        self,
        verb: str,
        resource: Resource[T],
        body: JSON,
        owner: DynamoGraphDeployment,
        call: Awaitable[JSON],
        *,
        quiet: type[ClusterError] | None = None,
    ) -> T:
        """The answer of the write ``call`` of ``body``, decoded and observed in the cache. A refusal
        emits the failure event and is re-raised; a ``quiet`` one is re-raised without it (the caller
        decides what it means)."""
        try:
            written = await call
        except ClusterError as error:
            if quiet is None or not isinstance(error, quiet):
                namespace, name, _ = identity(body)
                failed = events.write_failed(verb, resource.kind, namespace, name, str(error))
                await self._recorder.emit(owner, failed)
            raise
        result = decode(resource, written)
        self._cache.observe(resource, result)
        return result

    async def delete(
        self,
        resource: Resource[Any],
        live: Any,
        *,
        owner: DynamoGraphDeployment,
        why: str,
        unchanged: bool = False,
    ) -> bool:
        """Delete the child ``live`` (only that very object: uid precondition), with its event.

        With ``unchanged``, only the very version observed (resourceVersion precondition): a child
        that changed since is not deleted (``False``; no event), and the next reconcile decides again.
        """
        obj = as_json(live)
        namespace, name, _ = identity(obj)
        metadata = obj.get("metadata") or {}
        preconditions = Preconditions(
            uid=metadata.get("uid"), resource_version=metadata.get("resourceVersion") if unchanged else None
        )
        try:
            await self._cluster.delete(resource.as_raw().key(namespace, name), preconditions=preconditions)
        except NotFound:
            self._cache.forget(resource, namespace, name)
            return True
        except Conflict:
            if unchanged:
                return False
            raise
        except ClusterError as error:
            await self._recorder.emit(
                owner, events.write_failed("Delete", resource.kind, namespace, name, str(error))
            )
            raise
        self._cache.forget(resource, namespace, name)
        await self._recorder.emit(owner, events.deleted(resource.kind, namespace, name, why))
        return True
