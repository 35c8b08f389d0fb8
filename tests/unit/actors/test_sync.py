"""The Syncer's verbs write one child each, keep the cache no older than the write, and record an event
only for a write that changed something (a Warning for one refused); the Reader's extra reads."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer, owner_reference
from dgd.cluster.errors import NotFound, ServerError
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.faults import Fail
from dgd.cluster.resources import CONFIG_MAP, DGD, PCLQ, SERVICE
from dgd.domain.events import EventRecord
from dgd.domain.sync import LAST_APPLIED_HASH
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import identity

pytestmark = pytest.mark.anyio

NS = "team-a"


class Told(Recorder):
    """A recorder that keeps what it is told (what the Syncer records), instead of posting it."""

    def __init__(self, cluster: MemoryCluster) -> None:
        super().__init__(cluster, instance="test", now=lambda: 0.0)
        self.records: list[EventRecord] = []

    async def emit(self, dgd: DynamoGraphDeployment, record: EventRecord) -> None:
        self.records.append(record)

    def notes(self) -> list[tuple[str, str, str]]:
        return [(r.type, r.reason, r.note) for r in self.records]


class World:
    """A memory cluster with one DGD, a cache that holds ConfigMaps, Services and PodCliques (listed
    and synced, as informers leave them), and the Syncer and Reader over them."""

    def __init__(self) -> None:
        self.cluster = MemoryCluster(clock=lambda: 0.0, rng=random.Random(1), namespaces=(NS,))
        self.cache = Cache()
        for resource in (CONFIG_MAP, SERVICE, PCLQ):
            self.cache.serve(resource)
            self.cache.replace(resource, [])
        self.recorder = Told(self.cluster)
        self.syncer = Syncer(self.cluster, self.cache, self.recorder)
        self.reader = Reader(self.cluster, self.cache)
        self.dgd: DynamoGraphDeployment

    async def start(self) -> World:
        body = {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "demo", "namespace": NS},
            "spec": {"components": []},
        }
        await self.cluster.create(DGD.as_raw(), body)
        self.dgd = await self.cluster.get(DGD.key(NS, "demo"))
        return self

    async def config_map(self, name: str, *, owned: bool = True, app: str = "demo") -> dict[str, Any]:
        """A ConfigMap labelled ``app``, created behind the operator's back (not in its cache)."""
        metadata: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"app": app}}
        if owned:
            metadata["ownerReferences"] = [owner_reference(self.dgd)]
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"a": "1"}}
        created: dict[str, Any] = await self.cluster.create(CONFIG_MAP, body)
        return created

    async def clique(self, name: str, replicas: int) -> Any:
        body = {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodClique",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"roleName": "worker", "replicas": replicas, "podSpec": {"containers": []}},
        }
        return await self.cluster.create(PCLQ.as_raw(), body)


@pytest.fixture
async def world() -> World:
    return await World().start()


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


# the Reader's extra reads


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
