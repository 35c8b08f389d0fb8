"""The kube adapter's watches: error events, stalled watches and the timeout asked of the server."""

from __future__ import annotations

import anyio
import msgspec
import pytest
from aiohttp import web

from dgd.cluster.errors import Gone
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CONFIG_MAP, DGD
from dgd.sim.apiserver.server import Facade, serve
from tests.unit.cluster.kube_server import NS, adapter, fake_api_server

pytestmark = pytest.mark.anyio


async def test_watch_error_event_raises_its_error_after_the_events_before_it() -> None:
    # given a stream with one event, then a 410
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        added = {
            "type": "ADDED",
            "object": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": NS, "resourceVersion": "3"},
            },
        }
        gone = {
            "type": "ERROR",
            "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
        }
        await response.write(msgspec.json.encode(added) + b"\n" + msgspec.json.encode(gone) + b"\n")
        return response

    async with (
        fake_api_server(handler) as url,
        adapter(url) as cluster,
        cluster.watch(CONFIG_MAP, namespace=NS, resource_version="2") as events,
    ):
        first = await events.__anext__()
        with pytest.raises(Gone) as raised:
            await events.__anext__()

    assert (first.type, first.resource_version) == ("ADDED", "3")
    assert raised.value.namespace == NS


async def test_a_silent_watch_ends_after_the_idle_timeout() -> None:
    # given a facade and an adapter that gives up on a watch silent for 0.1 s
    async with (
        serve(Facade(MemoryCluster(namespaces=(NS,)))) as url,
        adapter(url, watch_idle_timeout=0.1) as cluster,
    ):
        listed = await cluster.list(CONFIG_MAP)

        # when nothing happens on the watch
        with anyio.fail_after(5):
            async with cluster.watch(CONFIG_MAP, resource_version=listed.resource_version) as events:
                seen = [event async for event in events]

    # then the iteration ends, to be resumed by the caller
    assert seen == []


async def test_watch_timeout_is_asked_of_the_server() -> None:
    # given an API server recording the watch query
    queries: list[dict[str, str]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        queries.append(dict(request.query))
        response = web.StreamResponse()
        await response.prepare(request)
        return response

    async with (
        fake_api_server(handler) as url,
        adapter(url, watch_timeout=300) as cluster,
        cluster.watch(
            DGD, namespace=NS, label_selector="a=b", resource_version="4", bookmarks=True
        ) as events,
    ):
        seen = [event async for event in events]

    assert seen == []
    assert queries == [
        {
            "watch": "1",
            "resourceVersion": "4",
            "labelSelector": "a=b",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "300",
        }
    ]
