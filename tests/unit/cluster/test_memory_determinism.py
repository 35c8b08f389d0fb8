"""The memory adapter is reproducible: same seed and clock, same objects, byte for byte."""

from __future__ import annotations

import random

import msgspec
import pytest

from dgd.cluster.errors import ServerError
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CONFIG_MAP, DGD
from dgd.messages.dgd import DGDSpec, DynamoGraphDeployment
from dgd.messages.meta import ObjectMeta

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def scenario(seed: int, *, with_faults: bool = False) -> tuple[bytes, list[bool]]:
    """A little history of writes and flaky reads; returns every object, encoded, and which reads failed."""
    cluster = MemoryCluster(clock=lambda: 1_767_225_600.0, rng=random.Random(seed), namespaces=("ns",))
    if with_faults:
        cluster.faults.fail(ServerError("flaky"), verb="get", probability=0.5)
    graph = DynamoGraphDeployment(
        api_version="nvidia.com/v1beta1", metadata=ObjectMeta(name="graph", namespace="ns"), spec=DGDSpec()
    )
    await cluster.create(DGD, graph)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cm-", "namespace": "ns"}}
    for _ in range(3):
        await cluster.create(CONFIG_MAP, body)
    failed = []
    for _ in range(10):
        try:
            await cluster.get(DGD.key("ns", "graph"))
            failed.append(False)
        except ServerError:
            failed.append(True)
    return msgspec.json.encode(cluster.snapshot()), failed


async def test_same_seed_gives_identical_objects_and_faults() -> None:
    assert await scenario(7, with_faults=True) == await scenario(7, with_faults=True)


async def test_another_seed_gives_other_uids() -> None:
    assert (await scenario(7))[0] != (await scenario(8))[0]


async def test_fault_draws_do_not_change_the_objects() -> None:
    """Faults use their own random stream: adding rules leaves uids and generated names alone."""
    assert (await scenario(7, with_faults=True))[0] == (await scenario(7))[0]


async def test_a_second_client_shares_the_objects_but_not_the_faults() -> None:
    """client(): same server (same objects, same resourceVersions), separate fault rules."""
    operator = MemoryCluster(rng=random.Random(1), namespaces=("ns",))
    world = operator.client()
    operator.faults.fail(ServerError("aimed at the operator"), verb="create")

    created = await world.create(
        CONFIG_MAP, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    )

    assert (await operator.list(CONFIG_MAP)).items == [created]
    with pytest.raises(ServerError):
        await operator.create(
            CONFIG_MAP,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "ns"}},
        )
