"""metadata.generation: it counts changes to the desired state, and nothing else."""

from __future__ import annotations

import msgspec
import pytest

from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CONFIG_MAP, DGD
from dgd.messages.dgd import DGDStatus
from tests.conformance.builders import NS, config_map, dgd

pytestmark = pytest.mark.anyio


async def test_spec_change_bumps_generation(cluster: Cluster) -> None:
    """Changing spec increments metadata.generation by one per write."""
    await cluster.create(DGD, dgd("graph"))

    once = await cluster.patch(DGD.key(NS, "graph"), {"spec": {"backendFramework": "vllm"}})
    twice = await cluster.patch(DGD.key(NS, "graph"), {"spec": {"backendFramework": "sglang"}})

    assert (once.metadata.generation, twice.metadata.generation) == (2, 3)


async def test_metadata_change_does_not_bump_generation(cluster: Cluster) -> None:
    """Labels, annotations, finalizers and owner references are metadata: generation stays,
    resourceVersion moves."""
    created = await cluster.create(DGD, dgd("graph"))

    patched = await cluster.patch(
        DGD.key(NS, "graph"),
        {
            "metadata": {
                "labels": {"a": "b"},
                "annotations": {"note": "x"},
                "finalizers": ["nvidia.com/finalizer"],
            }
        },
    )

    assert patched.metadata.generation == 1
    assert patched.metadata.resource_version != created.metadata.resource_version


async def test_status_write_never_bumps_generation(cluster: Cluster) -> None:
    """Writes through the status subresource leave generation alone."""
    created = await cluster.create(DGD, dgd("graph"))

    updated = await cluster.replace_status(
        DGD, msgspec.structs.replace(created, status=DGDStatus(state="pending", observed_generation=1))
    )
    patched = await cluster.patch_status(DGD.key(NS, "graph"), {"status": {"state": "successful"}})

    assert updated.status is not None and updated.status.state == "pending"
    assert patched.status is not None and patched.status.state == "successful"
    assert (updated.metadata.generation, patched.metadata.generation) == (1, 1)


async def test_a_kind_the_server_keeps_no_generation_for_never_gets_one(cluster: Cluster) -> None:
    """A ConfigMap has no generation: not on create, not after a change of its data."""
    created = await cluster.create(CONFIG_MAP, config_map(data={"a": "1"}))

    changed = await cluster.patch(CONFIG_MAP.key(NS, "settings"), {"data": {"a": "2"}})

    assert "generation" not in created["metadata"] and "generation" not in changed["metadata"]


async def test_setting_the_deletion_timestamp_bumps_generation_once(cluster: Cluster) -> None:
    """Marking an object deleting (finalizers pending) increments generation; deleting it again
    while it waits changes nothing."""
    await cluster.create(DGD, dgd("graph", finalizers=["nvidia.com/finalizer"]))

    marked = await cluster.delete(DGD.key(NS, "graph"))
    again = await cluster.delete(DGD.key(NS, "graph"))

    assert marked is not None and marked.metadata.generation == 2
    assert again == marked
