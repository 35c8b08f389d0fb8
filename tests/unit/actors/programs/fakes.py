"""What a workload program is composed of, without an actor system: fake children that answer asks
from a script and write down what they were asked, a real ``Reader`` and ``Syncer`` over a bare
``MemoryCluster``, and a recorder whose events are kept instead of posted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import yaml

from dgd.actors.dgd.children.checkpoint_storage import CheckpointsResolved
from dgd.actors.dgd.children.grove_scaler import Scaled
from dgd.actors.dgd.children.restart import RestartResolved
from dgd.actors.dgd.children.rollout import RolloutAdvanced
from dgd.actors.dgd.children.scaling_adapters import AdaptersReconciled
from dgd.actors.dgd.children.shared_resources import SharedEnsured
from dgd.actors.dgd.children.topology_status import NoTopology
from dgd.actors.dgd.programs.conclusion import Conclusion
from dgd.actors.dgd.programs.provisioning import Provisioning
from dgd.actors.dgd.writer import DGDWriter
from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.events import PostEvent, Recorder
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DGD, NAMESPACE
from dgd.domain.restart import RestartState
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import Event
from tests.unit.actors.operator.harness import AGG

#: 2026-01-01T00:00:00Z
EPOCH = 1_767_225_600.0
NOW = "2026-01-01T00:00:00Z"


def manifest(*, grove: bool, multinode: bool = False) -> dict[str, Any]:
    """The test graph, on the Grove pathway or the Component one; ``multinode``: its worker spans two
    nodes."""
    body: dict[str, Any] = yaml.safe_load(AGG)
    body["metadata"]["annotations"] = {"nvidia.com/enable-grove": "true" if grove else "false"}
    if multinode:
        body["spec"]["components"][1]["multinode"] = {"nodeCount": 2}
    return body


@dataclass
class FakeChild:
    """A child actor's stand-in: answers each ask with ``answer(message)`` and writes it down in
    ``asked`` (shared by the children of one test, so the order across them shows)."""

    name: str
    asked: list[tuple[str, str]]
    answer: Callable[[Any], Any]

    async def ask(self, message: Any, *, timeout: float | None = None) -> Any:
        self.asked.append((self.name, type(message).__name__))
        return self.answer(message)


@dataclass
class Poster:
    """Keeps what the recorder would post."""

    events: list[Event] = field(default_factory=list)

    def tell_nowait(self, message: PostEvent) -> None:
        self.events.append(message.event)


@dataclass
class World:
    """A bare cluster with the test graph stored, and the capabilities a program is built with."""

    cluster: MemoryCluster
    reader: Reader
    syncer: Syncer
    writer: DGDWriter
    recorder: Recorder
    poster: Poster
    asked: list[tuple[str, str]]

    def child(self, name: str, answer: Callable[[Any], Any]) -> Any:
        return FakeChild(name, self.asked, answer)

    def provisioning(self) -> Provisioning:
        return Provisioning(
            self.child("shared-resources", lambda message: SharedEnsured()),
            self.child("checkpoint-storage", lambda message: CheckpointsResolved({})),
        )

    def restart(self) -> Any:
        return self.child("restart", lambda message: RestartResolved(status=None, state=RestartState()))

    def conclusion(self, answer: Callable[[Any], Any] = lambda message: AdaptersReconciled()) -> Conclusion:
        return Conclusion(self.child("scaling-adapters", answer), lambda: NOW)

    def scaler(self) -> Any:
        return self.child("grove-scaler", lambda message: Scaled())

    def topology(self) -> Any:
        return self.child("topology-status", lambda message: NoTopology())

    def rollout(self, new_hash: str = "a1b2c3d4") -> Any:
        return self.child(
            "rollout", lambda message: RolloutAdvanced(dgd=message.dgd, status=None, new_hash=new_hash)
        )

    async def store(self, body: dict[str, Any]) -> DynamoGraphDeployment:
        """The graph as the API server stores it (uid, resourceVersion, generation)."""
        return await self.cluster.create(DGD, msgspec.convert(body, DynamoGraphDeployment))


async def world() -> World:
    cluster = MemoryCluster(clock=lambda: EPOCH)
    await cluster.create(
        NAMESPACE.as_raw(), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    )
    cache = Cache()
    recorder = Recorder(cluster, instance="test", now=lambda: EPOCH)
    poster = Poster()
    recorder.attach(poster)  # type: ignore[arg-type]
    return World(
        cluster=cluster,
        reader=Reader(cluster, cache),
        syncer=Syncer(cluster, cache, recorder),
        writer=DGDWriter(cluster, cache),
        recorder=recorder,
        poster=poster,
        asked=[],
    )
