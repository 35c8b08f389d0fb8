"""Informers: list and watch one kind through the cluster port into the shared cache.

One informer actor per watched kind. It lists (filling the cache and telling the router what
changed since its last view), then watches from the list's resourceVersion, applying every event
to the cache before telling the router about it. A watch the server closes is resumed from the last
resourceVersion seen; an expired one (``Gone``) is re-listed; any other API error is retried after
a backoff. The same code serves every adapter of the port.

Cluster-wide, one list-and-watch loop covers every namespace. Restricted to some namespaces, the
informer runs one loop per namespace side by side (the API has no watch over a set of namespaces);
each re-list replaces only its own namespace in the cache, and the kind counts as synced once every
namespace was listed.

An object the operator's model of its kind refuses (``Rejected``: a CRD newer or looser than our
Structs) is, for the operator, not there: it is left out of the cache (dropped from it, if an earlier
version was held, which the router hears as a deletion), logged once per version with its name and the
field, and counted (``on_rejected``); its next change is decoded again. One such object never stops the
informer, nor the reconciles of any other object.

The informer's one message runs for its whole life, so its spec should stop it brutally
(``shutdown=0``): there is nothing to finish.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import msgspec

from dgd.actors.machinery.cache import Cache
from dgd.cluster.errors import ClusterError, Gone
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import Rejected, Resource
from dgd.runtime import Actor, Backoff, Ref

logger = logging.getLogger("dgd.informer")


class Observed(msgspec.Struct, frozen=True):
    """An object of ``resource`` changed: ``old`` is the cached version it replaced (``None``: unseen),
    ``new`` the version now (for ``DELETED``: its last state). ``relisted``: found by a list that
    followed a gap in watching, so the events in between are unknown."""

    resource: str
    type: str
    old: Any
    new: Any
    relisted: bool = False


class Synced(msgspec.Struct, frozen=True):
    """The informer of ``resource`` finished a full list: the cache holds all of it."""

    resource: str


class ListAndWatch(msgspec.Struct, frozen=True):
    """Run the list-and-watch loop (sent by the informer to itself when it starts)."""


#: How long an informer waits before listing again after an API error.
RELIST_BACKOFF = Backoff(initial=0.5, maximum=30.0)

#: What the router accepts from informers.
InformerNews = Observed | Synced


class Informer(Actor[ListAndWatch]):
    """Keeps the cache of one kind current and tells the router about every change."""

    def __init__(
        self,
        resource: Resource[Any],
        *,
        cluster: Cluster,
        cache: Cache,
        router: str,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        backoff: Backoff = RELIST_BACKOFF,
        on_rejected: Callable[[str], None] | None = None,
    ) -> None:
        self._resource = resource
        self._on_rejected = on_rejected
        #: The version of each refused object last logged, so each is logged once per version.
        self._refused: dict[tuple[str | None, str], str] = {}
        self._cluster = cluster
        self._cache = cache
        self._router_path = router
        # None: one loop over every namespace; else one loop per namespace.
        self._scopes: tuple[str | None, ...] = tuple(dict.fromkeys(namespaces)) if namespaces else (None,)
        self._selector = label_selector
        self._backoff = backoff

    async def on_start(self) -> None:
        self._cache.serve(self._resource, self._scopes)
        self.context.ref.tell_nowait(ListAndWatch())

    async def receive(self, message: ListAndWatch) -> None:
        router: Ref[InformerNews] = Ref(self.context.system, self._router_path)
        if len(self._scopes) == 1:
            await self._follow(router, self._scopes[0])
            return
        async with anyio.create_task_group() as loops:
            for scope in self._scopes:
                loops.start_soon(self._follow, router, scope)

    async def _follow(self, router: Ref[InformerNews], scope: str | None) -> None:
        """List and watch ``scope`` (a namespace, ``None``: all of them) for ever."""
        rid = str(self._resource)
        where = rid if scope is None else f"{rid} in {scope}"
        failures = 0
        while True:
            try:
                version = await self._list(router, rid, scope)
                failures = 0
                while True:
                    version = await self._watch(router, rid, scope, version)
            except Gone:
                logger.info("%s: watch history expired; listing again", where)
            except ClusterError as error:
                delay = self._backoff.delay(failures, self.context.random)
                failures += 1
                logger.warning("%s: %s; retrying in %.2fs", where, error, delay)
                await self.context.clock.sleep(delay)

    async def _list(self, router: Ref[InformerNews], rid: str, scope: str | None) -> str:
        listing = await self._cluster.list(self._resource, namespace=scope, label_selector=self._selector)
        for refused in listing.rejected:
            self._refuse(refused)
        for change in self._cache.replace(self._resource, listing.items, namespace=scope):
            await router.tell(Observed(rid, change.type, change.old, change.new, relisted=True))
        await router.tell(Synced(rid))
        return listing.resource_version

    async def _watch(self, router: Ref[InformerNews], rid: str, scope: str | None, version: str) -> str:
        """Follow changes after ``version`` until the server ends the stream; returns the last version."""
        async with self._cluster.watch(
            self._resource,
            namespace=scope,
            label_selector=self._selector,
            resource_version=version,
            bookmarks=True,
        ) as watch:
            async for event in watch:
                # An event older than what a writer of ours already observed would take the cache
                # back in time (and its next write would conflict): a later event brings the news.
                if event.type == "BOOKMARK":
                    version = event.resource_version
                    continue
                if event.rejected is not None:
                    if event.type != "DELETED":
                        self._refuse(event.rejected)
                    dropped = self._cache.drop_unreadable(
                        self._resource, event.rejected.namespace, event.rejected.name
                    )
                    if dropped is not None:
                        await router.tell(Observed(rid, "DELETED", dropped, dropped))
                    version = event.resource_version
                    continue
                if event.type != "DELETED" and self._cache.outdated(self._resource, event.object):
                    self._cache.passed_over(self._resource, event.type, event.object)
                    version = event.resource_version
                    continue
                old = self._cache.apply(self._resource, event.type, event.object)
                await router.tell(Observed(rid, event.type, old, event.object))
                version = event.resource_version
        return version

    def _refuse(self, refused: Rejected) -> None:
        key = (refused.namespace, refused.name)
        if self._refused.get(key) == refused.resource_version:
            return
        self._refused[key] = refused.resource_version
        where = f"{refused.namespace}/{refused.name}" if refused.namespace else refused.name
        logger.error(
            "%s %s (resourceVersion %s) cannot be read, and is ignored until it changes: %s",
            self._resource.kind, where, refused.resource_version, refused.error,
        )  # fmt: skip
        if self._on_rejected is not None:
            self._on_rejected(self._resource.kind)
