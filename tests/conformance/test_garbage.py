"""Owner-reference garbage collection: background, foreground and orphan propagation.

A real API server collects asynchronously, so these tests observe the end state through the port
(``eventually``); against the memory adapter the cascade has happened when ``delete`` returns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from dgd.cluster.errors import Invalid, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CONFIG_MAP, DGD, Resource
from tests.conformance.builders import NS, config_map, dgd, owner

pytestmark = pytest.mark.anyio

FINALIZER = "nvidia.com/finalizer"


async def eventually(check: Callable[[], Awaitable[bool]], attempts: int = 1000) -> bool:
    """Whether ``check`` becomes true, polling through the event loop (never a wall-clock threshold)."""
    for _ in range(attempts):
        if await check():
            return True
        await anyio.sleep(0.01)
    return False


def gone(cluster: Cluster, name: str, resource: Resource[Any] = CONFIG_MAP) -> Callable[[], Awaitable[bool]]:
    """Whether the ``resource`` called ``name`` is gone (a ConfigMap unless said otherwise)."""

    async def check() -> bool:
        try:
            await cluster.get(resource.key(NS, name))
        except NotFound:
            return True
        return False

    return check


async def exists(cluster: Cluster, name: str) -> bool:
    return not await gone(cluster, name)()


async def test_background_deletion_deletes_dependents_after_the_owner(cluster: Cluster) -> None:
    """propagationPolicy=Background (the default): the owner goes at once, then its dependents."""
    graph = await cluster.create(DGD, dgd("graph"))
    await cluster.create(CONFIG_MAP, config_map("child-1", owners=[owner(graph)]))
    await cluster.create(CONFIG_MAP, config_map("child-2", owners=[owner(graph, block=False)]))

    result = await cluster.delete(DGD.key(NS, "graph"))

    assert result is None
    assert await eventually(gone(cluster, "child-1"))
    assert await eventually(gone(cluster, "child-2"))


async def test_background_dependents_wait_while_the_owner_has_finalizers(cluster: Cluster) -> None:
    """An owner that is only marked deleting still exists: its dependents stay until it is gone."""
    graph = await cluster.create(DGD, dgd("graph", finalizers=[FINALIZER]))
    await cluster.create(CONFIG_MAP, config_map("child", owners=[owner(graph)]))

    await cluster.delete(DGD.key(NS, "graph"))
    while_terminating = await exists(cluster, "child")
    await cluster.patch(DGD.key(NS, "graph"), {"metadata": {"finalizers": None}})

    assert while_terminating
    assert await eventually(gone(cluster, "child"))


async def test_foreground_deletion_waits_for_blocking_dependents(cluster: Cluster) -> None:
    """propagationPolicy=Foreground: the owner gets deletionTimestamp and the foregroundDeletion
    finalizer, and stays until every dependent with blockOwnerDeletion=true is gone."""
    graph = await cluster.create(DGD, dgd("graph"))
    await cluster.create(
        CONFIG_MAP, config_map("blocker", owners=[owner(graph)], finalizers=["example.com/hold"])
    )

    marked = await cluster.delete(DGD.key(NS, "graph"), propagation="Foreground")

    async def blocker_deleting() -> bool:
        blocker = await cluster.get(CONFIG_MAP.key(NS, "blocker"))
        return blocker["metadata"].get("deletionTimestamp") is not None

    assert await eventually(blocker_deleting)
    owner_while_blocked = await cluster.get(DGD.key(NS, "graph"))
    await cluster.patch(CONFIG_MAP.key(NS, "blocker"), {"metadata": {"finalizers": None}})

    assert marked is not None and "foregroundDeletion" in (marked.metadata.finalizers or [])
    assert owner_while_blocked.metadata.deletion_timestamp is not None
    assert await eventually(gone(cluster, "blocker"))

    assert await eventually(gone(cluster, "graph", DGD))


async def test_foreground_deletion_is_not_held_by_non_blocking_dependents(cluster: Cluster) -> None:
    """Dependents without blockOwnerDeletion are deleted too, but do not hold the owner."""
    graph = await cluster.create(DGD, dgd("graph"))
    await cluster.create(
        CONFIG_MAP, config_map("lagging", owners=[owner(graph, block=False)], finalizers=["example.com/hold"])
    )

    await cluster.delete(DGD.key(NS, "graph"), propagation="Foreground")

    assert await eventually(gone(cluster, "graph", DGD))
    lagging = await cluster.get(CONFIG_MAP.key(NS, "lagging"))
    assert lagging["metadata"].get("deletionTimestamp") is not None


async def test_orphan_deletion_keeps_dependents_and_removes_their_owner_references(cluster: Cluster) -> None:
    """propagationPolicy=Orphan: dependents survive without the reference to the deleted owner."""
    graph = await cluster.create(DGD, dgd("graph"))
    await cluster.create(CONFIG_MAP, config_map("child", owners=[owner(graph)]))

    await cluster.delete(DGD.key(NS, "graph"), propagation="Orphan")

    async def orphaned() -> bool:
        child = await cluster.get(CONFIG_MAP.key(NS, "child"))
        return "ownerReferences" not in child["metadata"]

    assert await eventually(orphaned)
    assert await eventually(gone(cluster, "graph", DGD))


async def test_dependent_with_another_live_owner_survives_and_drops_the_dead_reference(
    cluster: Cluster,
) -> None:
    """A dependent is collected only when no owner is left; dangling references are removed."""
    first = await cluster.create(DGD, dgd("first"))
    second = await cluster.create(DGD, dgd("second"))
    await cluster.create(
        CONFIG_MAP, config_map("shared", owners=[owner(first), owner(second, controller=False)])
    )

    await cluster.delete(DGD.key(NS, "first"))

    async def only_second() -> bool:
        shared = await cluster.get(CONFIG_MAP.key(NS, "shared"))
        return [ref["name"] for ref in shared["metadata"]["ownerReferences"]] == ["second"]

    assert await eventually(only_second)


async def test_dependent_whose_owner_does_not_exist_is_collected(cluster: Cluster) -> None:
    """An owner reference to a uid no object has is dangling: the dependent is garbage."""
    ghost = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "name": "ghost",
        "uid": "0-0-0",
    }

    await cluster.create(CONFIG_MAP, config_map("orphan", owners=[ghost]))

    assert await eventually(gone(cluster, "orphan"))


async def test_deletion_cascades_through_every_level(cluster: Cluster) -> None:
    """Dependents of dependents are collected too (DGD -> ConfigMap -> ConfigMap)."""
    graph = await cluster.create(DGD, dgd("graph"))
    child = await cluster.create(CONFIG_MAP, config_map("child", owners=[owner(graph)]))
    await cluster.create(CONFIG_MAP, config_map("grandchild", owners=[owner(child)]))

    await cluster.delete(DGD.key(NS, "graph"), propagation="Foreground")

    assert await eventually(gone(cluster, "child"))
    assert await eventually(gone(cluster, "grandchild"))


async def test_an_object_may_have_only_one_controller_owner(cluster: Cluster) -> None:
    """ownerReferences may mark at most one owner as the controller: 422 otherwise."""
    first = await cluster.create(DGD, dgd("first"))
    second = await cluster.create(DGD, dgd("second"))

    with pytest.raises(Invalid):
        await cluster.create(CONFIG_MAP, config_map("child", owners=[owner(first), owner(second)]))
