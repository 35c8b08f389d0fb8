"""SyncResource through the port: make one child match what the DGD renders, and say so in an event.

``Syncer.sync`` carries out ``dgd.domain.sync.plan_sync`` against the observation it is given (no
re-read): create, merge-patch with the observed resourceVersion (a concurrent change is a
``Conflict``, retried by the next reconcile from fresh state, with no event), or nothing. A create
that finds the object already there (the cache was behind) syncs against the object as it is.
Every write that changed something records its resource-mutation event right after it succeeded:
never one that changed nothing (a replace whose resourceVersion did not move), nor one that only
rewrote the last-applied bookkeeping annotations; any other refused write records a Warning and
raises. Every write a DGD's children make goes through here: create, sync, replace, merge patch of
some fields, the scale subresource, delete, and delete of what an owner no longer keeps (prune).
Each write that records its event logs it in one line at info: the event's note, with the fields
``dgd`` (the owner's ``namespace/name``), ``verb``, ``object`` (``Kind namespace/name``) and ``why``.
What the server answered goes into the cache, so the next read is never older than the write.

Objects are written as raw JSON, so fields the operator does not model are never dropped.

Objects several DGDs share (a namespace's planner RBAC, the MPI key Secret) are checked and created
under ``Syncer.exclusive``: one reconcile at a time per object, so the second finds what the first
created (in the cache, where its answer was observed) instead of racing it into an AlreadyExists.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

import anyio
import msgspec

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.notices import WriteNotices
from dgd.actors.machinery.owners import Owner, owner_reference
from dgd.actors.machinery.reader import Reader
from dgd.cluster.errors import AlreadyExists, ClusterError, Conflict, NotFound
from dgd.cluster.protocol import Cluster, Preconditions
from dgd.cluster.resources import ObjectKey, Resource
from dgd.domain import events
from dgd.domain.events import EventRecord
from dgd.domain.pod_merge import JSON
from dgd.domain.sync import Create, Keep, Patch, is_stale, plan_sync
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import identity

T = TypeVar("T")

logger = logging.getLogger("dgd.sync")

#: Why a create: the DGD needs the object (or renders it) and it is not there.
MISSING = "needed and not found"
RENDERED_MISSING = "rendered and not found"

#: What to record about the object a verb wrote (or deleted), instead of the verb's own event.
Announce = Callable[[T], EventRecord]


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
    """Writes children of DGDs and DCDs: SyncResource, deletion of what is no longer rendered, creates."""

    def __init__(
        self, cluster: Cluster, cache: Cache, recorder: Recorder, *, notices: WriteNotices | None = None
    ) -> None:
        self._cluster = cluster
        self._cache = cache
        self._recorder = recorder
        #: Told of every write, for the controllers the writer's own cache hides it from.
        self._notices = notices
        # The reads of ``prune`` (what an owner controls), as every reconciler reads them.
        self._reader = Reader(cluster, cache)
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

    async def sync(self, resource: Resource[T], desired: JSON, live: T | None, *, owner: Owner) -> T:
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
                return await self._create(resource, plan.body, owner, why=RENDERED_MISSING)
            except AlreadyExists:
                # The cache was behind our own earlier write: sync against the object as it is.
                fresh = decode(resource, await self._cluster.get(raw.key(namespace, name)))
                self._cache.observe(resource, fresh)
                return await self.sync(resource, desired, fresh, owner=owner)
        assert isinstance(plan, Patch) and live_json is not None
        # A conflict (changed since observed) is not an event: the next reconcile syncs from fresh state.
        call = self._cluster.patch(raw.key(namespace, name), plan.patch)
        result = await self._write("Update", resource, namespace, name, owner, call, quiet=(Conflict,))
        # A patch that only rewrote the last-applied bookkeeping changed nothing anyone reads: no event.
        if identity(result)[2] != identity(live_json)[2] and (plan.spec or plan.metadata):
            what = "" if plan.spec else f"repaired {' and '.join(plan.metadata)}"
            record = events.updated(resource.kind, namespace, name, what)
            why = what or "its spec differs from the rendered one"
            await self._announce(owner, record, "update", resource, namespace, name, why)
        else:
            logger.debug("synced %s %s/%s: nothing anyone reads changed", resource.kind, namespace, name)
        return result

    async def create(
        self,
        resource: Resource[T],
        body: JSON,
        *,
        owner: Owner,
        event: Announce[T] | None = None,
        why: str = MISSING,
    ) -> T | None:
        """Create ``body`` as it is (no owner reference added, no bookkeeping), with its event
        (``Created <Kind>``, or what ``event`` makes of the created object); ``why`` for its log line.

        ``None`` when an object of that name exists already (someone else created it first).
        """
        try:
            return await self._create(resource, body, owner, event, why=why)
        except AlreadyExists:
            return None

    async def _create(
        self,
        resource: Resource[T],
        body: JSON,
        owner: Owner,
        event: Announce[T] | None = None,
        *,
        why: str,
    ) -> T:
        """Create ``body``; emit ``Created`` after success, or the failure event and re-raise.

        ``AlreadyExists`` is raised without an event: the callers decide what it means.
        """
        namespace, name, _ = identity(body)
        call = self._cluster.create(resource.as_raw(), body)
        result = await self._write("Create", resource, namespace, name, owner, call, quiet=(AlreadyExists,))
        record = event(result) if event is not None else events.created(resource.kind, namespace, name)
        await self._announce(owner, record, "create", resource, namespace, name, why)
        return result

    async def refresh(self, key: ObjectKey[T]) -> T | None:
        """The object ``key`` names as the API server has it now, recorded in the cache (``None``: it
        does not exist): for a writer whose create found the object there (the cache was behind)."""
        try:
            fresh = await self._cluster.get(key)
        except NotFound:
            return None
        self._cache.observe(key.resource, fresh)
        return fresh

    async def replace(self, resource: Resource[T], body: JSON, *, owner: Owner) -> T:
        """Replace an object (``body`` carries the resourceVersion it was read at), with its event only
        when the server's resourceVersion moved (a replace that changed nothing records nothing)."""
        namespace, name, version = identity(body)
        call = self._cluster.replace(resource.as_raw(), body)
        result = await self._write("Update", resource, namespace, name, owner, call)
        if identity(result)[2] != version:
            record = events.updated(resource.kind, namespace, name)
            await self._announce(
                owner, record, "update", resource, namespace, name, "it differs from the desired one"
            )
        return result

    async def patch(
        self,
        resource: Resource[T],
        live: T,
        patch: JSON,
        *,
        owner: Owner,
        why: str | None = None,
        event: Announce[T] | None = None,
        observe: bool = True,
    ) -> T:
        """Merge-patch (RFC 7386) some fields of the child ``live``, as observed; a
        ``metadata.resourceVersion`` in ``patch`` makes it conditional on that version.

        The event (``Updated <Kind> <ns>/<name> (<why>)``, or what ``event`` makes of the patched
        object) follows every patch that moved the resourceVersion, and only those: a patch that
        found every field as asked changed nothing and records nothing. ``NotFound`` (gone) and
        ``Conflict`` (changed since the version the patch names) are raised without an event, for
        the caller to decide; any other refusal records a Warning and is raised. The answer goes
        into the cache unless ``observe`` is false: then the watch alone brings the change, for a
        change that must reach the watch's listeners as news (a new generation of an object that
        wakes an actor).
        """
        namespace, name, version = identity(live)
        call = self._cluster.patch(resource.as_raw().key(namespace, name), patch)
        result = await self._write(
            "Update", resource, namespace, name, owner, call, quiet=(Conflict, NotFound), observe=observe
        )
        if identity(result)[2] != version:
            record = (
                event(result)
                if event is not None
                else events.updated(resource.kind, namespace, name, why or "")
            )
            because = why or record.note
            await self._announce(owner, record, "update", resource, namespace, name, because)
        return result

    async def scale(
        self, key: ObjectKey[Any], replicas: int, *, owner: Owner
    ) -> tuple[int, str | None] | None:
        """Drive the scale subresource of the object ``key`` names to ``replicas``: the scale is read,
        and replaced at the resourceVersion read when its replicas differ (a concurrent change is a
        ``Conflict``, raised without an event; any other refusal records a Warning and is raised). A
        write records ``Updated <Kind> <ns>/<name> (scaled from <before> to <replicas> replicas)``.

        Returns the replicas before and the resourceVersion the write left, or ``None`` when nothing
        was written (already at ``replicas``, or no such object: not created yet, or gone). The answer
        is a Scale, not the object, so nothing goes into the cache: the watch brings the object.
        """
        try:
            scale = await self._cluster.get_scale(key)
        except NotFound:
            return None
        before = scale.spec.replicas
        if before == replicas:
            return None
        wanted = msgspec.structs.replace(scale, spec=msgspec.structs.replace(scale.spec, replicas=replicas))
        try:
            written = await self._cluster.replace_scale(key, wanted)
        except NotFound:
            return None
        except Conflict:
            raise  # changed since it was read: the next reconcile reads it again
        except ClusterError as error:
            failed = events.write_failed("Update", key.resource.kind, key.namespace, key.name, str(error))
            await self._recorder.emit(owner, failed)
            raise
        if self._notices is not None:
            self._notices.written(key.resource, key.namespace, key.name)
        what = f"scaled from {before} to {replicas} replicas"
        record = events.updated(key.resource.kind, key.namespace, key.name, what)
        await self._announce(owner, record, "update", key.resource, key.namespace, key.name, what)
        return before, written.metadata.resource_version

    async def _announce(
        self, owner: Owner, record: EventRecord, verb: str,
        resource: Resource[Any], namespace: str | None, name: str, why: str,
    ) -> None:  # fmt: skip
        """Log the write that changed ``namespace/name`` (see the module), then record its event."""
        where = f"{namespace}/{name}" if namespace else name
        where_owner = f"{owner.metadata.namespace}/{owner.metadata.name}"
        field = "dgd" if isinstance(owner, DynamoGraphDeployment) else "dcd"
        fields = {field: where_owner, "verb": verb, "object": f"{resource.kind} {where}", "why": why}
        logger.info(record.note, extra=fields)
        await self._recorder.emit(owner, record)

    async def _write(
        self,
        verb: str,
        resource: Resource[T],
        namespace: str | None,
        name: str,
        owner: Owner,
        call: Awaitable[JSON],
        *,
        quiet: tuple[type[ClusterError], ...] = (),
        observe: bool = True,
    ) -> T:
        """The answer of the write ``call`` of the object ``namespace/name``, decoded and (unless not
        ``observe``) observed in the cache. A refusal emits the failure event and is re-raised; a
        ``quiet`` one is re-raised without it (the caller decides what it means)."""
        try:
            written = await call
        except ClusterError as error:
            if not isinstance(error, quiet):
                failed = events.write_failed(verb, resource.kind, namespace, name, str(error))
                await self._recorder.emit(owner, failed)
            raise
        result = decode(resource, written)
        if observe:
            self._cache.observe(resource, result)
        if self._notices is not None:
            self._notices.written(resource, namespace, name)
        return result

    async def delete(
        self,
        resource: Resource[Any],
        live: Any,
        *,
        owner: Owner,
        why: str,
        unchanged: bool = False,
        event: Announce[Any] | None = None,
    ) -> bool:
        """Delete the child ``live`` (only that very object: uid precondition), with its event
        (``Deleted <Kind> <ns>/<name>: <why>``, or what ``event`` makes of ``live``); whether this call
        deleted it (``False``, with no event: it was gone already).

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
            left = await self._cluster.delete(
                resource.as_raw().key(namespace, name), preconditions=preconditions
            )
        except NotFound:
            self._cache.forget(resource, namespace, name)
            return False
        except Conflict:
            if unchanged:
                return False
            raise
        except ClusterError as error:
            await self._recorder.emit(
                owner, events.write_failed("Delete", resource.kind, namespace, name, str(error))
            )
            raise
        if left is None:
            self._cache.forget(resource, namespace, name)
        else:
            # Finalizers hold it: it still exists, now with a deletionTimestamp, and a reconcile that
            # runs before its watch event must see it so (a rollout is not complete while an old
            # generation is still being deleted).
            self._cache.observe(resource, left)
        record = event(live) if event is not None else events.deleted(resource.kind, namespace, name, why)
        await self._announce(owner, record, "delete", resource, namespace, name, why or record.note)
        return True

    async def prune(
        self,
        resource: Resource[T],
        namespace: str,
        *,
        owner: Owner,
        keep: Callable[[T], bool],
        why: str,
    ) -> list[str]:
        """Delete every object of ``resource`` in ``namespace`` that ``owner`` controls (controller
        owner reference) and ``keep`` does not keep, one by one in name order, each with its event
        (``Deleted <Kind> <ns>/<name>: <why>``). Returns the names this call deleted."""
        deleted: list[str] = []
        for live in await self._reader.controlled_by(resource, namespace, owner.metadata.uid):
            if not keep(live) and await self.delete(resource, live, owner=owner, why=why):
                deleted.append(identity(live)[1])
        return deleted
