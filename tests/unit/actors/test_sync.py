"""The Syncer's verbs write one child each, keep the cache no older than the write, and record an event
only for a write that changed something (a Warning for one refused)."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.cluster.errors import NotFound, ServerError
from dgd.cluster.memory.faults import Fail
from dgd.cluster.resources import CONFIG_MAP, PCLQ
from dgd.domain.events import EventRecord
from dgd.domain.sync import LAST_APPLIED_HASH
from dgd.messages.meta import identity
from tests.unit.actors.sync_world import NS, World, world

pytestmark = pytest.mark.anyio

__all__ = ["world"]


# scale


async def test_scale_replaces_the_scale_subresource_and_says_from_how_many(world: World) -> None:
    # given a PodClique at 1 replica
    await world.clique("demo-0-worker", 1)

    # when it is scaled to 3
    written = await world.syncer.scale(PCLQ.key(NS, "demo-0-worker"), 3, owner=world.dgd)

    # then the scale went from 1 to 3, at the version the write left, and the object has 3 replicas
    live = await world.cluster.get(PCLQ.key(NS, "demo-0-worker"))
    assert written == (1, live.metadata.resource_version)
    assert live.spec.replicas == 3
    # and one event says so
    assert world.recorder.notes() == [
        ("Normal", "UpdatePodClique", "Updated PodClique team-a/demo-0-worker (scaled from 1 to 3 replicas)")
    ]


async def test_scale_writes_nothing_for_an_object_already_at_its_replicas(world: World) -> None:
    # given a PodClique at 3 replicas
    await world.clique("demo-0-worker", 3)
    version = world.cluster.resource_version

    # when it is scaled to 3
    written = await world.syncer.scale(PCLQ.key(NS, "demo-0-worker"), 3, owner=world.dgd)

    # then nothing was written and nothing recorded
    assert written is None
    assert world.cluster.resource_version == version
    assert world.recorder.records == []


async def test_scale_of_an_object_not_created_yet_is_nothing(world: World) -> None:
    # given no PodClique

    # when one is scaled
    written = await world.syncer.scale(PCLQ.key(NS, "demo-0-worker"), 3, owner=world.dgd)

    # then nothing happened
    assert written is None
    assert world.recorder.records == []


async def test_a_refused_scale_records_a_warning_and_raises(world: World) -> None:
    # given a PodClique at 1 replica and a server that refuses updates
    await world.clique("demo-0-worker", 1)
    world.cluster.faults.add(Fail(ServerError("etcd is unhappy")), verb="update")

    # when it is scaled to 3, then the refusal is raised
    with pytest.raises(ServerError):
        await world.syncer.scale(PCLQ.key(NS, "demo-0-worker"), 3, owner=world.dgd)

    # and one Warning says what was refused
    assert world.recorder.notes() == [
        (
            "Warning",
            "UpdatePodClique",
            "Failed to update PodClique team-a/demo-0-worker: InternalError (500): etcd is unhappy",
        )
    ]


# patch


async def test_patch_writes_the_fields_records_why_and_caches_the_answer(world: World) -> None:
    # given a ConfigMap
    live = await world.config_map("demo-config")

    # when one field is patched
    written = await world.syncer.patch(
        CONFIG_MAP, live, {"data": {"a": "2"}}, owner=world.dgd, why="the test asked"
    )

    # then the server has it, the cache holds the version answered, and one event says why
    assert written["data"] == {"a": "2"}
    assert (await world.cluster.get(CONFIG_MAP.key(NS, "demo-config")))["data"] == {"a": "2"}
    assert world.cache.version(CONFIG_MAP, NS, "demo-config") == identity(written)[2]
    assert world.recorder.notes() == [
        ("Normal", "UpdateConfigMap", "Updated ConfigMap team-a/demo-config (the test asked)")
    ]


async def test_a_patch_that_changes_nothing_records_nothing(world: World) -> None:
    # given a ConfigMap
    live = await world.config_map("demo-config")

    # when a field is patched to the value it has
    written = await world.syncer.patch(
        CONFIG_MAP, live, {"data": {"a": "1"}}, owner=world.dgd, why="the test asked"
    )

    # then the version did not move and nothing was recorded
    assert identity(written)[2] == identity(live)[2]
    assert world.recorder.records == []


async def test_a_patch_of_an_object_gone_raises_not_found_without_an_event(world: World) -> None:
    # given a ConfigMap deleted by someone since it was observed
    live = await world.config_map("demo-config")
    await world.cluster.delete(CONFIG_MAP.key(NS, "demo-config"))

    # when it is patched, then NotFound is raised for the caller to decide
    with pytest.raises(NotFound):
        await world.syncer.patch(CONFIG_MAP, live, {"data": {"a": "2"}}, owner=world.dgd, why="asked")

    # and nothing was recorded
    assert world.recorder.records == []


async def test_a_patch_not_observed_leaves_the_cache_to_the_watch(world: World) -> None:
    # given a ConfigMap
    live = await world.config_map("demo-config")

    # when it is patched without observing the answer
    await world.syncer.patch(
        CONFIG_MAP, live, {"data": {"a": "2"}}, owner=world.dgd, why="asked", observe=False
    )

    # then the cache does not hold it (the watch will bring it)
    assert world.cache.get(CONFIG_MAP, NS, "demo-config") is None


async def test_a_refused_patch_records_a_warning_and_raises(world: World) -> None:
    # given a ConfigMap and a server that refuses patches
    live = await world.config_map("demo-config")
    world.cluster.faults.add(Fail(ServerError("etcd is unhappy")), verb="patch")

    # when it is patched, then the refusal is raised
    with pytest.raises(ServerError):
        await world.syncer.patch(CONFIG_MAP, live, {"data": {"a": "2"}}, owner=world.dgd, why="asked")

    # and one Warning says what was refused
    assert world.recorder.notes() == [
        (
            "Warning",
            "UpdateConfigMap",
            "Failed to update ConfigMap team-a/demo-config: InternalError (500): etcd is unhappy",
        )
    ]


# create, delete, prune, refresh


async def test_create_records_what_the_caller_makes_of_the_created_object(world: World) -> None:
    # given a ConfigMap to create, and the event its caller records for it
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made", "namespace": NS}}

    def made(created: dict[str, Any]) -> EventRecord:
        return EventRecord("Normal", "Made", "Create", f"made {created['metadata']['uid']}")

    # when it is created
    created = await world.syncer.create(CONFIG_MAP, body, owner=world.dgd, event=made)

    # then that event was recorded, naming the object the server made
    assert created is not None
    assert world.recorder.notes() == [("Normal", "Made", f"made {created['metadata']['uid']}")]


async def test_delete_of_an_object_gone_already_says_so_without_an_event(world: World) -> None:
    # given a ConfigMap deleted by someone since it was observed
    live = await world.config_map("demo-config")
    await world.cluster.delete(CONFIG_MAP.key(NS, "demo-config"))

    # when it is deleted
    deleted = await world.syncer.delete(CONFIG_MAP, live, owner=world.dgd, why="asked")

    # then this call deleted nothing and recorded nothing
    assert deleted is False
    assert world.recorder.records == []


async def test_a_delete_that_finalizers_hold_leaves_the_object_in_the_cache_as_deleting(world: World) -> None:
    # given a ConfigMap with a finalizer, in the cache
    body = await world.config_map("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    live = await world.cluster.replace(CONFIG_MAP, body)
    world.cache.observe(CONFIG_MAP, live)

    # when it is deleted
    deleted = await world.syncer.delete(CONFIG_MAP, live, owner=world.dgd, why="asked")

    # then the call deleted it, and the cache, before any watch event, shows it still there, deleting
    assert deleted is True
    cached = world.cache.get(CONFIG_MAP, NS, "held")
    assert cached is not None and cached["metadata"].get("deletionTimestamp")
    assert [(r.reason, r.note) for r in world.recorder.records] == [
        ("DeleteConfigMap", "Deleted ConfigMap team-a/held: asked")
    ]


async def test_prune_deletes_only_what_the_owner_controls_and_does_not_keep(world: World) -> None:
    # given three ConfigMaps the DGD controls (one kept) and one it does not, all in the cache
    for name, owned in (("a", True), ("b", True), ("kept", True), ("foreign", False)):
        world.cache.observe(CONFIG_MAP, await world.config_map(name, owned=owned))

    # when what is not kept is pruned
    deleted = await world.syncer.prune(
        CONFIG_MAP,
        NS,
        owner=world.dgd,
        keep=lambda live: live["metadata"]["name"] == "kept",
        why="not rendered",
    )

    # then the two others it controls are gone, in name order, each with its event
    assert deleted == ["a", "b"]
    left = [c["metadata"]["name"] for c in (await world.cluster.list(CONFIG_MAP, namespace=NS)).items]
    assert sorted(left) == ["foreign", "kept"]
    assert world.cache.get(CONFIG_MAP, NS, "a") is None
    assert world.recorder.notes() == [
        ("Normal", "DeleteConfigMap", "Deleted ConfigMap team-a/a: not rendered"),
        ("Normal", "DeleteConfigMap", "Deleted ConfigMap team-a/b: not rendered"),
    ]


async def test_refresh_reads_the_server_and_records_the_answer_in_the_cache(world: World) -> None:
    # given a ConfigMap the cache has not seen
    live = await world.config_map("demo-config")

    # when it is refreshed
    fresh = await world.syncer.refresh(CONFIG_MAP.key(NS, "demo-config"))

    # then the answer is the server's, and the cache holds that version now
    assert fresh == live
    assert world.cache.version(CONFIG_MAP, NS, "demo-config") == identity(live)[2]
    assert await world.syncer.refresh(CONFIG_MAP.key(NS, "missing")) is None


# the event rules of sync and replace


def rendered(name: str, value: str) -> dict[str, Any]:
    """A ConfigMap as a DGD renders it."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "demo"}},
        "data": {"a": value},
    }


async def test_a_sync_that_only_rewrites_the_bookkeeping_records_nothing(world: World) -> None:
    # given a child synced once, whose last-applied hash someone removed (its data still as desired)
    await world.syncer.sync(CONFIG_MAP, rendered("demo-config", "1"), None, owner=world.dgd)
    key = CONFIG_MAP.key(NS, "demo-config")
    live = await world.cluster.patch(key, {"metadata": {"annotations": {LAST_APPLIED_HASH: None}}})
    world.recorder.records.clear()

    # when it is synced again
    synced = await world.syncer.sync(CONFIG_MAP, rendered("demo-config", "1"), live, owner=world.dgd)

    # then the bookkeeping was written back, and no event claims an update
    assert LAST_APPLIED_HASH in synced["metadata"]["annotations"]
    assert identity(synced)[2] != identity(live)[2]
    assert world.recorder.records == []


async def test_a_sync_that_changes_the_child_records_one_update(world: World) -> None:
    # given a child synced once
    created = await world.syncer.sync(CONFIG_MAP, rendered("demo-config", "1"), None, owner=world.dgd)
    live = await world.cluster.get(CONFIG_MAP.key(NS, identity(created)[1]))
    world.recorder.records.clear()

    # when the DGD renders it with other data
    synced = await world.syncer.sync(CONFIG_MAP, rendered("demo-config", "2"), live, owner=world.dgd)

    # then it was updated, with one event
    assert synced["data"] == {"a": "2"}
    assert world.recorder.notes() == [("Normal", "UpdateConfigMap", "Updated ConfigMap team-a/demo-config")]


async def test_a_sync_that_repairs_a_label_says_so(world: World) -> None:
    # given a child synced once, whose label someone removed
    await world.syncer.sync(CONFIG_MAP, rendered("demo-config", "1"), None, owner=world.dgd)
    key = CONFIG_MAP.key(NS, "demo-config")
    live = await world.cluster.patch(key, {"metadata": {"labels": {"app": None}}})
    world.recorder.records.clear()

    # when it is synced again
    await world.syncer.sync(CONFIG_MAP, rendered("demo-config", "1"), live, owner=world.dgd)

    # then the repair was recorded
    assert world.recorder.notes() == [
        ("Normal", "UpdateConfigMap", "Updated ConfigMap team-a/demo-config (repaired labels)")
    ]


async def test_a_replace_that_changes_nothing_records_nothing(world: World) -> None:
    # given a ConfigMap
    live = await world.config_map("demo-config")

    # when it is replaced as it is
    written = await world.syncer.replace(CONFIG_MAP, live, owner=world.dgd)

    # then the version did not move and no event claims an update
    assert identity(written)[2] == identity(live)[2]
    assert world.recorder.records == []


async def test_a_replace_that_changes_the_object_records_one_update(world: World) -> None:
    # given a ConfigMap
    live = await world.config_map("demo-config")

    # when it is replaced with other data
    await world.syncer.replace(CONFIG_MAP, {**live, "data": {"a": "2"}}, owner=world.dgd)

    # then one event says it was updated
    assert world.recorder.notes() == [("Normal", "UpdateConfigMap", "Updated ConfigMap team-a/demo-config")]
