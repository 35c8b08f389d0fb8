"""The daemon's view of the port: requests counted by method and code, watch activity, the write fence."""

from __future__ import annotations

from collections import Counter

import pytest

from dgd.cluster.errors import Conflict, NotFound
from dgd.cluster.resources import CONFIG_MAP
from dgd.daemon.rest_client import Fence, InstrumentedCluster, NotLeader
from dgd.runtime import ManualClock
from tests.unit.daemon.harness import NS, install, memory_cluster

pytestmark = pytest.mark.anyio


def config_map(name: str, version: str | None = None) -> dict[str, object]:
    metadata: dict[str, object] = {"name": name, "namespace": NS}
    if version is not None:
        metadata["resourceVersion"] = version
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"a": "b"}}


async def test_every_request_is_counted_by_method_and_the_code_the_server_answered() -> None:
    server = memory_cluster(ManualClock())
    await install(server)
    requests: Counter[tuple[str, str]] = Counter()
    cluster = InstrumentedCluster(server, requests=lambda method, code: requests.update([(method, code)]))

    # when a create, a get, a missing get, a stale update and a list are made
    created = await cluster.create(CONFIG_MAP, config_map("one"))
    await cluster.get(CONFIG_MAP.key(NS, "one"))
    with pytest.raises(NotFound):
        await cluster.get(CONFIG_MAP.key(NS, "missing"))
    with pytest.raises(Conflict):
        await cluster.replace(CONFIG_MAP, config_map("one", version="1"))
    await cluster.list(CONFIG_MAP, namespace=NS)

    # then each is counted once with its method and code
    assert created["metadata"]["name"] == "one"
    assert requests == Counter({("POST", "201"): 1, ("GET", "200"): 2, ("GET", "404"): 1, ("PUT", "409"): 1})


async def test_a_closed_fence_stops_writes_before_they_leave_but_not_reads() -> None:
    server = memory_cluster(ManualClock())
    await install(server)
    requests: Counter[tuple[str, str]] = Counter()
    fence = Fence()
    cluster = InstrumentedCluster(
        server, requests=lambda method, code: requests.update([(method, code)]), fence=fence
    )
    await cluster.create(CONFIG_MAP, config_map("one"))
    version = server.resource_version

    # when the fence closes (the lease was lost)
    fence.close()

    # then every kind of write is refused inside the process, and reads still work
    with pytest.raises(NotLeader):
        await cluster.create(CONFIG_MAP, config_map("two"))
    with pytest.raises(NotLeader):
        await cluster.patch(CONFIG_MAP.key(NS, "one"), {"data": {"a": "c"}})
    with pytest.raises(NotLeader):
        await cluster.delete(CONFIG_MAP.key(NS, "one"))
    assert (await cluster.get(CONFIG_MAP.key(NS, "one")))["data"] == {"a": "b"}
    assert server.resource_version == version
    assert requests == Counter({("POST", "201"): 1, ("GET", "200"): 1})


async def test_lists_watch_openings_and_watch_events_are_signs_of_life_of_their_resource() -> None:
    server = memory_cluster(ManualClock())
    await install(server)
    seen: list[str] = []
    cluster = InstrumentedCluster(server, requests=lambda method, code: None, activity=seen.append)

    # when a list is made, a watch opened, and one event arrives on it
    listing = await cluster.list(CONFIG_MAP, namespace=NS)
    async with cluster.watch(CONFIG_MAP, namespace=NS, resource_version=listing.resource_version) as watch:
        await server.create(CONFIG_MAP, config_map("one"))
        event = await watch.__anext__()

    # then each counted as activity of config maps
    assert event.type == "ADDED"
    assert seen == ["configmaps", "configmaps", "configmaps"]
