"""The Reader's reads beyond the cache lookups: labelled lists from the cache or the server, and which
kinds the cache alone answers."""

from __future__ import annotations

import pytest

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.reader import Reader
from dgd.cluster.resources import CONFIG_MAP, DGD, SERVICE
from tests.unit.actors.sync_world import NS, World, world

pytestmark = pytest.mark.anyio

__all__ = ["world"]


async def test_labelled_reads_the_cache_when_it_holds_the_kind(world: World) -> None:
    # given two ConfigMaps in the cache, one labelled, and a third only on the server
    for name, app in (("mine", "demo"), ("other", "other")):
        world.cache.observe(CONFIG_MAP, await world.config_map(name, app=app))
    await world.config_map("unseen", app="demo")

    # when the labelled ones are read
    found = await world.reader.labelled(CONFIG_MAP, NS, {"app": "demo"})

    # then only the cached, labelled one is found; a fresh read asks the server
    assert [c["metadata"]["name"] for c in found] == ["mine"]
    fresh = await world.reader.labelled(CONFIG_MAP, NS, {"app": "demo"}, fresh=True)
    assert sorted(c["metadata"]["name"] for c in fresh) == ["mine", "unseen"]


async def test_labelled_lists_the_server_with_the_selector_for_a_kind_not_cached(world: World) -> None:
    # given a reader whose cache holds no ConfigMaps, and two on the server
    reader = Reader(world.cluster, Cache())
    await world.config_map("mine", app="demo")
    await world.config_map("other", app="other")

    # when the labelled ones are read
    found = await reader.labelled(CONFIG_MAP, NS, {"app": "demo"})

    # then the server answered with just the labelled one
    assert [c["metadata"]["name"] for c in found] == ["mine"]


async def test_watches_only_a_kind_whose_informer_listed_it(world: World) -> None:
    # given a cache serving ConfigMaps (listed) and Secrets (not listed yet)
    cache = Cache()
    cache.serve(CONFIG_MAP)
    cache.replace(CONFIG_MAP, [])
    cache.serve(DGD)
    reader = Reader(world.cluster, cache)

    # then only the listed kind is answered by the cache alone
    assert reader.watches(CONFIG_MAP)
    assert not reader.watches(DGD)
    assert not reader.watches(SERVICE)
