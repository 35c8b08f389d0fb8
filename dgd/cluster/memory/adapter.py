"""The memory adapter: the cluster port over an in-memory API server with Kubernetes semantics.

Every call is one request: the fault rules decide its fate (error, latency, staleness), the call
yields to the event loop once (as a network round trip would), then runs atomically on the
``ApiServer``. Objects go in as Structs or raw JSON and are stored as plain JSON, so fields a client
wrote that our Structs do not model survive; they come out decoded fresh from the stored bytes.

Determinism: uids, ``generateName`` suffixes, Event names and fault draws all come from the seeded
``rng``; timestamps come from ``clock``; waiting (latency, bookmark intervals) uses event-loop
time. Same seed, same clock, same calls: same objects, byte for byte. What a request sends (JSON
within the API server's size limit) and the scale view it answers with are in
:mod:`~dgd.cluster.memory.bodies`.

For the simulation and the chaos tests: ``faults`` holds the fault rules; ``client()`` is another
client of the same server with fault rules of its own; ``compact()`` drops the watch history (every
resume before now is ``Gone``); ``snapshot()`` returns every stored object; ``resource_version`` is
the current global resourceVersion; ``observe(listener)`` hears every change as it is stored;
``end_watches()`` ends this client's open watches now (a dropped or expired watch).
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import msgspec

from dgd.cluster.admission import Admission
from dgd.cluster.errors import Gone, NotFound
from dgd.cluster.memory.bodies import scale_of, to_json, with_version
from dgd.cluster.memory.faults import Decision, Faults, Request, Verb
from dgd.cluster.memory.server import ApiServer
from dgd.cluster.memory.store import Change, Stored
from dgd.cluster.memory.validation import SchemaCheck
from dgd.cluster.memory.watch import MemoryWatch, WatchHub
from dgd.cluster.protocol import ObjectList, Preconditions, Propagation, Scale, WatchEvent
from dgd.messages.timestamps import Clock, rfc3339_micro, wall_clock

if TYPE_CHECKING:
    from dgd.cluster.protocol import Cluster
from dgd.cluster.memory.selectors import parse
from dgd.cluster.resources import DEFAULT_RESOURCES, EVENT, ObjectKey, Rejected, Resource
from dgd.messages.base import JSONObject
from dgd.messages.meta import Event

T = TypeVar("T")

__all__ = ["MemoryCluster", "WatchEvent"]


class MemoryCluster:
    """An in-memory Kubernetes API server behind the cluster port (``dgd.cluster.protocol.Cluster``).

    ``history_size``: changes kept per resource for watches to resume from. ``watch_buffer``:
    events a watch may fall behind before it is dropped. ``bookmark_interval``: idle seconds
    (event-loop time) before a watch that asked for bookmarks gets one. ``namespaces``: the ones the
    cluster starts with beside a new cluster's own (``default``, ``kube-system``, ``kube-public``,
    ``kube-node-lease``); an object may be created only in a namespace that exists and is not
    terminating, as the API server's NamespaceLifecycle admission has it.
    ``schema_check``: how the server checks the kinds we model against their CRD schema, as a real
    API server does (the simulated cluster gives the walk `validate` makes; `None`: their Structs alone).
    """

    def __init__(
        self,
        *,
        resources: Iterable[Resource[Any]] = DEFAULT_RESOURCES,
        clock: Clock = wall_clock,
        rng: random.Random | None = None,
        history_size: int = 1000,
        watch_buffer: int = 1000,
        bookmark_interval: float = 60.0,
        namespaces: Iterable[str] = (),
        admission: Admission | None = None,
        schema_check: SchemaCheck | None = None,
        user: str = "admin",
    ) -> None:
        self._seeds = rng if rng is not None else random.Random(0)
        #: Who this client writes as, to the admission chain (``as_user`` gives another client).
        self.user = user
        # Separate streams, so adding a fault rule does not change the uids a run produces.
        self._server = ApiServer(
            resources,
            clock=clock,
            rng=random.Random(self._seeds.getrandbits(64)),
            history_size=history_size,
            namespaces=namespaces,
            admission=admission,
            schema_check=schema_check,
        )
        self.faults = Faults(random.Random(self._seeds.getrandbits(64)))
        self._hub = WatchHub(self._server.store)
        self._clock = clock
        self._watch_buffer = watch_buffer
        self._bookmark_interval = bookmark_interval
        self._watches: dict[MemoryWatch[Any], None] = {}

    # For the simulation and tests (not part of the port).

    @property
    def resource_version(self) -> str:
        return str(self._server.store.rv)

    @property
    def open_watches(self) -> int:
        return self._hub.count()

    def client(self, user: str | None = None) -> MemoryCluster:
        """Another client of the same server with its own (initially empty) fault rules — e.g. for
        the simulated controllers, so faults aimed at the operator do not hit them — writing as
        ``user`` (default: this client's user) to the admission chain."""
        other = copy.copy(self)
        other.faults = Faults(random.Random(self._seeds.getrandbits(64)))
        other._watches = {}
        other.user = self.user if user is None else user
        return other

    def observe(self, listener: Callable[[Change], None]) -> Callable[[], None]:
        """Call ``listener`` with every change the server stores, from any client: synchronously, in
        resourceVersion order, in the task whose request made it (no fault rule applies, nothing
        yields). Returns the function that stops it. For the simulation's invariants and recorder."""
        listeners = self._server.store.listeners
        listeners.append(listener)
        return lambda: listeners.remove(listener)

    def end_watches(self, resource: str | None = None, *, gone: bool = False) -> int:
        """End this client's open watches (of ``resource``, ``plural.group``; ``None``: all) now, as the
        server ends a watch it drops: each reader gets what is buffered, then the end of the stream
        (it resumes), or with ``gone`` a ``Gone`` (it re-lists). Returns how many were ended."""
        ended = 0
        for watch in list(self._watches):
            if resource is None or watch.rid == resource:
                reason = Gone(f"watch of {watch.rid} expired (injected fault)") if gone else None
                ended += watch.end(reason)
        return ended

    def compact(self) -> None:
        """Forget the watch history up to now (etcd compaction): older resumes get ``Gone``."""
        self._server.store.compact()

    def snapshot(self) -> builtins.list[JSONObject]:
        """Every stored object as JSON, by resource, namespace and name (no faults, no yield)."""
        store = self._server.store
        return [stored.thaw() for rid in sorted(self._server.resources) for stored in store.items(rid)]

    # The port.

    async def get(self, key: ObjectKey[T]) -> T:
        decision = await self._request("get", key.resource, namespace=key.namespace, name=key.name)
        return key.resource.decode(self._read(key, decision).blob)

    def watch(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        bookmarks: bool = False,
    ) -> MemoryWatch[T]:
        async def request() -> Decision:
            return await self._request("watch", resource, namespace=namespace)

        # Remember it (while open) so that ``end_watches`` can end it.
        for done in [watch for watch in self._watches if watch.closed]:
            del self._watches[done]
        watch = MemoryWatch(
            store=self._server.store,
            hub=self._hub,
            rid=str(resource),  # an unknown resource is NotFound when the watch is entered
            resource=resource,
            namespace=namespace,
            label_selector=label_selector,
            resource_version=resource_version,
            bookmarks=bookmarks,
            bookmark_interval=self._bookmark_interval,
            capacity=self._watch_buffer,
            request=request,
        )
        self._watches[watch] = None
        return watch

    async def create(self, resource: Resource[T], obj: T) -> T:
        data = await self._request_to_write("create", resource, obj)
        return resource.decode(self._server.create(resource, data, user=self.user).blob)

    def create_loose(self, resource: Resource[Any], data: JSONObject) -> JSONObject:
        """Store an object as a CRD looser than the resource's model would admit it (not through the
        port: no fault applies); returns it as stored. For tests and chaos: the operator's model may
        refuse it."""
        stored: JSONObject = msgspec.json.decode(
            self._server.create(resource, to_json(data), loose=True).blob
        )
        return stored

    async def replace(self, resource: Resource[T], obj: T) -> T:
        data = await self._request_to_write("update", resource, obj)
        return resource.decode(self._server.update(resource, data, user=self.user).blob)

    async def patch(self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None) -> T:
        await self._request("patch", key.resource, namespace=key.namespace, name=key.name)
        body = with_version(to_json(patch), resource_version)
        return key.resource.decode(
            self._server.patch(key.resource, key.namespace, key.name, body, user=self.user).blob
        )

    async def delete(
        self,
        key: ObjectKey[T],
        *,
        propagation: Propagation | None = None,
        preconditions: Preconditions | None = None,
    ) -> T | None:
        await self._request("delete", key.resource, namespace=key.namespace, name=key.name)
        checks = preconditions or Preconditions()
        stored = self._server.delete(
            key.resource,
            key.namespace,
            key.name,
            propagation=propagation,
            uid=checks.uid,
            resource_version=checks.resource_version,
        )
        return None if stored is None else key.resource.decode(stored.blob)

    async def replace_status(self, resource: Resource[T], obj: T) -> T:
        data = await self._request_to_write("update", resource, obj, subresource="status")
        return resource.decode(self._server.update(resource, data, status=True).blob)

    async def patch_status(
        self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None
    ) -> T:
        await self._request(
            "patch", key.resource, subresource="status", namespace=key.namespace, name=key.name
        )
        body = with_version(to_json(patch), resource_version)
        stored = self._server.patch(key.resource, key.namespace, key.name, body, status=True)
        return key.resource.decode(stored.blob)

    async def get_scale(self, key: ObjectKey[T]) -> Scale:
        decision = await self._request(
            "get", key.resource, subresource="scale", namespace=key.namespace, name=key.name
        )
        return scale_of(key, self._read(key, decision))

    async def replace_scale(self, key: ObjectKey[T], scale: Scale) -> Scale:
        await self._request(
            "update", key.resource, subresource="scale", namespace=key.namespace, name=key.name
        )
        replicas, version = scale.spec.replicas, scale.metadata.resource_version
        stored = self._server.update_scale(key.resource, key.namespace, key.name, replicas, version)
        return scale_of(key, stored)

    async def bind(self, key: ObjectKey[T], node: str) -> None:
        await self._request(
            "create", key.resource, subresource="binding", namespace=key.namespace, name=key.name
        )
        if (key.resource.group, key.resource.plural) != ("", "pods"):
            raise NotFound(f"the server could not find the requested resource ({key.resource} binding)")
        self._server.bind(key.resource, key.namespace, key.name, node)

    async def emit(self, event: Event) -> Event:
        data = to_json(event)
        metadata = data.setdefault("metadata", {})
        regarding = data.get("regarding") or {}
        metadata.setdefault("namespace", regarding.get("namespace") or "default")
        if not metadata.get("name") and not metadata.get("generateName"):
            metadata["name"] = f"{regarding.get('name') or 'event'}.{self._server.rng.getrandbits(64):016x}"
        data.setdefault("eventTime", rfc3339_micro(self._clock()))
        await self._request("create", EVENT, namespace=metadata["namespace"], name=metadata.get("name"))
        return EVENT.decode(self._server.create(EVENT, data).blob)

    async def list(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> ObjectList[T]:
        decision = await self._request("list", resource, namespace=namespace)
        selector = parse(label_selector)
        if decision.stale_behind:
            rv = max(0, self._server.store.rv - decision.stale_behind)
            stale = self._stale(resource, decision.stale_behind).items()
            items = [
                stored
                for (found_in, _), stored in stale
                if (namespace is None or found_in == namespace) and selector.matches(stored.labels)
            ]
        else:
            rv = self._server.store.rv
            items = self._server.list(resource, namespace, selector)
        decoded = [resource.decode_or_reject(stored.blob) for stored in items]
        return ObjectList(
            [item for item in decoded if not isinstance(item, Rejected)],
            str(rv),
            [item for item in decoded if isinstance(item, Rejected)],
        )

    # Plumbing.

    async def _request(
        self,
        verb: Verb,
        resource: Resource[Any],
        *,
        subresource: str = "",
        namespace: str | None = None,
        name: str | None = None,
    ) -> Decision:
        """Decide the request's faults, then wait (the latency, or one event-loop turn)."""
        request = Request(verb, self._server.id(resource), subresource, namespace, name)
        decision = self.faults.decide(request)
        if decision.delay > 0:
            await anyio.sleep(decision.delay)
        else:
            await asyncio.sleep(0)  # anyio's checkpoint on asyncio, without finding the backend first
        if decision.error is not None:
            raise decision.error
        return decision

    async def _request_to_write(
        self, verb: Verb, resource: Resource[Any], obj: Any, *, subresource: str = ""
    ) -> JSONObject:
        """``obj`` as JSON, once the request to write it (where its own metadata says) is let through."""
        data = to_json(obj)
        metadata = data.get("metadata") or {}
        namespace, name = metadata.get("namespace"), metadata.get("name")
        await self._request(verb, resource, subresource=subresource, namespace=namespace, name=name)
        return data

    def _read(self, key: ObjectKey[Any], decision: Decision) -> Stored:
        """The object, current or (with a stale-read fault) as of some writes ago."""
        if not decision.stale_behind:
            return self._server.get(key.resource, key.namespace, key.name)
        stored = self._stale(key.resource, decision.stale_behind).get((key.namespace, key.name))
        if stored is None:
            raise NotFound(
                f'{key.resource} "{key.name}" not found',
                kind=key.resource.kind,
                namespace=key.namespace,
                name=key.name,
            )
        return stored

    def _stale(self, resource: Resource[Any], behind: int) -> dict[tuple[str | None, str], Stored]:
        store = self._server.store
        return store.as_of(self._server.id(resource), max(0, store.rv - behind))


if TYPE_CHECKING:
    # mypy proves the adapter implements the port.
    _port: Cluster = MemoryCluster()
