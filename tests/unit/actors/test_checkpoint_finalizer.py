"""The DGD's finalizer cleans up every automatic checkpoint, even past one that is already gone."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.actors.dgd.children.checkpoint_storage import CheckpointsFinalized, CheckpointStorage
from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import NotFound
from dgd.cluster.protocol import ObjectList
from dgd.domain.checkpoint import AUTO, DELETION_POLICY
from dgd.domain.metadata_keys import GRAPH_NAME
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DGDSpec, DynamoGraphDeployment
from dgd.messages.meta import ObjectMeta

pytestmark = pytest.mark.anyio


def retained(name: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {GRAPH_NAME: "graph"},
            "annotations": {AUTO: "true", DELETION_POLICY: "Retain"},
        }
    }


class Checkpoints:
    """A cluster holding two Retain checkpoints of the DGD, the first deleted by someone meanwhile."""

    def __init__(self) -> None:
        self.detached: list[str] = []

    async def list(self, resource: Any, **_: Any) -> ObjectList[Any]:
        return ObjectList([retained("first"), retained("second")], "1")

    async def patch(self, key: Any, patch: Any, **_: Any) -> Any:
        if key.name == "first":
            raise NotFound(f"{key.name} not found")
        self.detached.append(key.name)
        return {}


async def test_a_checkpoint_gone_meanwhile_does_not_stop_the_others_from_being_detached() -> None:
    # given a DGD being deleted with two Retain checkpoints, the first of which is already gone
    cluster: Any = Checkpoints()
    cache = Cache()
    recorder = Recorder(cluster, instance="test", now=lambda: 0.0)
    storage = CheckpointStorage(
        reader=Reader(cluster, cache),
        syncer=Syncer(cluster, cache, recorder),
        recorder=recorder,
        config=OperatorConfig(),
    )
    dgd = DynamoGraphDeployment(
        api_version="nvidia.com/v1beta1", metadata=ObjectMeta(name="graph", namespace="ns"), spec=DGDSpec()
    )

    # when the finalizer cleans up
    result = await storage._finalize(dgd)

    # then the second one is detached too (a Retain checkpoint left attached would be garbage collected)
    assert isinstance(result, CheckpointsFinalized)
    assert cluster.detached == ["second"]
    assert recorder.dropped == {}  # and nothing recorded: the patch answer names no new version
