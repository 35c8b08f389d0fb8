"""A memory cluster with one DGD and the Syncer and Reader over a cache of it, for the Syncer's and the
Reader's tests."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.owners import owner_reference
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CONFIG_MAP, DGD, PCLQ, SERVICE
from dgd.domain.events import EventRecord
from dgd.messages.dgd import DynamoGraphDeployment

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
