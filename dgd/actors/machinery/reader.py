"""``Reader``: what reconcilers read with. The cache answers the watched kinds once their informer
finished its first list (then an absence is authoritative too, and no read touches the API); before
that, only what the cache holds is answered from it; the kinds nobody watches are read from the API.

A ``Reader`` holds the port's reads (``ClusterReader``) and a read-only view of the cache
(``CacheView``), nothing that writes: a collaborator handed only a reader cannot write.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, TypeVar

from dgd.actors.machinery.cache import CacheView
from dgd.actors.machinery.packed_kind import controller_uid
from dgd.cluster.errors import NotFound
from dgd.cluster.protocol import ClusterReader
from dgd.cluster.resources import ObjectKey, Resource
from dgd.messages.meta import labels_of

T = TypeVar("T")


class Reader:
    """Reads for reconcilers: the cache for watched kinds, the API for the rest. It holds only the
    reads of the port and a read-only view of the cache: whoever holds a ``Reader`` and nothing else
    cannot write."""

    def __init__(self, cluster: ClusterReader, cache: CacheView) -> None:
        self._cluster = cluster
        self._cache = cache
        # Unwatched objects found to exist, and when (``exists``).
        self._found: dict[tuple[str, str | None, str], float] = {}

    @property
    def cache(self) -> CacheView:
        return self._cache

    def _answers(self, resource: Resource[Any]) -> bool:
        """Whether the cache answers every read of ``resource``, "not found" included: a watched kind
        whose informer finished its first list."""
        return self._cache.caches(resource) and self._cache.synced(resource)

    async def get(self, key: ObjectKey[T]) -> T | None:
        """The object, or ``None`` when it does not exist (API errors other than NotFound raise)."""
        if self._cache.caches(key.resource):
            cached = self._cache.get(key.resource, key.namespace, key.name)
            if cached is not None or self._cache.synced(key.resource):
                return cached
        try:
            return await self._cluster.get(key)
        except NotFound:
            return None

    async def exists(self, key: ObjectKey[Any], *, now: float, fresh_for: float) -> bool:
        """Whether the object exists. For a kind not watched, an answer "yes" read from the API at most
        ``fresh_for`` seconds before ``now`` is reused (shared by every reconciler): a vanished object
        is then noticed that much later, and an object that exists costs one read per period instead
        of one per reconcile. "No" is never reused."""
        if self._answers(key.resource):
            return self._cache.get(key.resource, key.namespace, key.name) is not None
        memo = (str(key.resource), key.namespace, key.name)
        seen = self._found.get(memo)
        if seen is not None and now - seen < fresh_for:
            return True
        found = await self.get(key) is not None
        if found:
            self._found[memo] = now
        else:
            self._found.pop(memo, None)
        return found

    def found(self, key: ObjectKey[Any], *, now: float) -> None:
        """Record that an object of a kind not watched exists as of ``now`` (its caller just created
        it, or saw it created), for ``exists``."""
        if not self._cache.caches(key.resource):
            self._found[(str(key.resource), key.namespace, key.name)] = now

    async def controlled_by(self, resource: Resource[T], namespace: str, uid: str | None) -> list[T]:
        """Objects of ``resource`` in ``namespace`` that the object ``uid`` controls."""
        if self._answers(resource):
            return self._cache.controlled_by(resource, uid)
        listed = (await self._cluster.list(resource, namespace=namespace)).items
        return [obj for obj in listed if uid is not None and controller_uid(obj) == uid]

    async def list(self, resource: Resource[T], namespace: str) -> list[T]:
        """Objects of ``resource`` in ``namespace``."""
        if self._answers(resource):
            return self._cache.list(resource, namespace)
        return (await self._cluster.list(resource, namespace=namespace)).items

    # Reads some children need besides the above (read-only: nothing here writes the cache).

    def watches(self, resource: Resource[Any]) -> bool:
        """Whether the cache answers every read of ``resource``, "not found" included (a watched kind
        whose informer finished its first list): a ``get`` of it then never reaches the API."""
        return self._answers(resource)

    async def fresh(self, key: ObjectKey[T]) -> T:
        """The object as the API server has it now, past the cache (``NotFound`` when it does not
        exist): for a reader that knows the cache is behind (its create found the object there)."""
        return await self._cluster.get(key)

    async def carrying(self, resource: Resource[T], namespace: str, key: str) -> builtins.list[T]:
        """Objects of ``resource`` in ``namespace`` that carry the label ``key`` (any value): from the
        cache when it answers the kind, else one list of the API with that existence selector."""
        if self._answers(resource):
            return [obj for obj in self._cache.list(resource, namespace) if key in labels_of(obj)]
        return (await self._cluster.list(resource, namespace=namespace, label_selector=key)).items

    async def labelled(
        self, resource: Resource[T], namespace: str, labels: Mapping[str, str], *, fresh: bool = False
    ) -> builtins.list[T]:
        """Objects of ``resource`` in ``namespace`` that carry every label of ``labels``: from the cache
        when it holds the kind, else (or when ``fresh``: a decision that must not rest on a cache that
        may be behind) one list of the API with that label selector."""
        if self._cache.caches(resource) and not fresh:
            return [
                obj
                for obj in self._cache.list(resource, namespace)
                if all(labels_of(obj).get(k) == v for k, v in labels.items())
            ]
        selector = ",".join(f"{key}={value}" for key, value in labels.items())
        return (await self._cluster.list(resource, namespace=namespace, label_selector=selector)).items
