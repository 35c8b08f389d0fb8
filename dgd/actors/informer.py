"""Informers: list and watch one kind through the cluster port into the shared cache.

One informer actor per watched kind. It lists (filling the cache and telling the router what
changed since its last view), then watches from the list's resourceVersion, applying every event
to the cache before telling the router about it. A watch the server closes is resumed from the last
resourceVersion seen; an expired one (``Gone``) is re-listed; any other API error is retried after
a backoff. The same code serves every adapter of the port.

The informer's one message runs for its whole life, so its spec should stop it brutally
(``shutdown=0``): there is nothing to finish.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from dgd.actors.cache import Cache
from dgd.actors.runtime import Actor, Backoff, Ref
from dgd.cluster.errors import ClusterError, Gone
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import Resource

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


class Pump(msgspec.Struct, frozen=True):
    """Run the list-and-watch loop (sent by the informer to itself when it starts)."""


#: How long an informer waits before listing again after an API error.
RELIST_BACKOFF = Backoff(initial=0.5, maximum=30.0)

#: What the router accepts from informers.
InformerNews = Observed | Synced


class Informer(Actor[Pump]):
    """Keeps the cache of one kind current and tells the router about every change."""

    def __init__(
        self,
        resource: Resource[Any],
        *,
        cluster: Cluster,
        cache: Cache,
        router: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        backoff: Backoff = RELIST_BACKOFF,
    ) -> None:
        self._resource = resource
        self._cluster = cluster
        self._cache = cache
        self._router_path = router
        self._namespace = namespace
        self._selector = label_selector
        self._backoff = backoff

    async def on_start(self) -> None:
        self._cache.serve(self._resource)
        self.context.ref.tell_nowait(Pump())

    async def receive(self, message: Pump) -> None:
        router: Ref[InformerNews] = Ref(self.context.system, self._router_path)
        rid = str(self._resource)
        failures = 0
        while True:
            try:
                version = await self._list(router, rid)
                failures = 0
                while True:
                    version = await self._watch(router, rid, version)
            except Gone:
                logger.info("%s: watch history expired; listing again", rid)
            except ClusterError as error:
                delay = self._backoff.delay(failures, self.context.random)
                failures += 1
                logger.warning("%s: %s; retrying in %.2fs", rid, error, delay)
                await self.context.clock.sleep(delay)

    async def _list(self, router: Ref[InformerNews], rid: str) -> str:
        listing = await self._cluster.list(
            self._resource, namespace=self._namespace, label_selector=self._selector
        )
        for change in self._cache.replace(self._resource, listing.items):
            await router.tell(Observed(rid, change.type, change.old, change.new, relisted=True))
        await router.tell(Synced(rid))
        return listing.resource_version

    async def _watch(self, router: Ref[InformerNews], rid: str, version: str) -> str:
        """Follow changes after ``version`` until the server ends the stream; returns the last version."""
        async with self._cluster.watch(
            self._resource,
            namespace=self._namespace,
            label_selector=self._selector,
            resource_version=version,
            bookmarks=True,
        ) as watch:
            async for event in watch:
                if event.type != "BOOKMARK":
                    old = self._cache.apply(self._resource, event.type, event.object)
                    await router.tell(Observed(rid, event.type, old, event.object))
                version = event.resource_version
        return version
