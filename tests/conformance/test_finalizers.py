"""Finalizers: delete only marks an object that has them; removing the last one deletes it."""

from __future__ import annotations

import pytest

from dgd.cluster.errors import Invalid, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DGD
from tests.conformance.builders import NS, dgd

pytestmark = pytest.mark.anyio

FINALIZER = "nvidia.com/finalizer"


async def test_delete_of_an_object_with_finalizers_only_marks_it(cluster: Cluster) -> None:
    """DELETE with finalizers pending: deletionTimestamp and deletionGracePeriodSeconds=0 are set,
    the finalizers stay, and the object can still be read."""
    await cluster.create(DGD, dgd("graph", finalizers=[FINALIZER]))

    marked = await cluster.delete(DGD.key(NS, "graph"))
    stored = await cluster.get(DGD.key(NS, "graph"))

    assert marked is not None and marked.metadata.deletion_timestamp is not None
    assert stored.metadata.deletion_grace_period_seconds == 0
    assert stored.metadata.finalizers == [FINALIZER]


async def test_removing_the_last_finalizer_deletes_the_object(cluster: Cluster) -> None:
    """An update that empties the finalizers of a deleting object deletes it: watchers see DELETED."""
    created = await cluster.create(DGD, dgd("graph", finalizers=[FINALIZER, "example.com/other"]))
    await cluster.delete(DGD.key(NS, "graph"))

    async with cluster.watch(DGD, namespace=NS, resource_version=created.metadata.resource_version) as events:
        await cluster.patch(DGD.key(NS, "graph"), {"metadata": {"finalizers": ["example.com/other"]}})
        still_there = await cluster.get(DGD.key(NS, "graph"))
        await cluster.patch(DGD.key(NS, "graph"), {"metadata": {"finalizers": None}})
        seen = [(await events.__anext__()).type for _ in range(3)]

    assert still_there.metadata.finalizers == ["example.com/other"]
    assert seen == ["MODIFIED", "MODIFIED", "DELETED"]
    with pytest.raises(NotFound):
        await cluster.get(DGD.key(NS, "graph"))


async def test_no_finalizer_can_be_added_to_a_deleting_object(cluster: Cluster) -> None:
    """While deleting, finalizers may only be removed: adding one is 422 Invalid."""
    await cluster.create(DGD, dgd("graph", finalizers=[FINALIZER]))
    await cluster.delete(DGD.key(NS, "graph"))

    with pytest.raises(Invalid):
        await cluster.patch(
            DGD.key(NS, "graph"), {"metadata": {"finalizers": [FINALIZER, "example.com/late"]}}
        )


async def test_deleting_object_still_accepts_spec_and_status_writes(cluster: Cluster) -> None:
    """A terminating object is still an object: controllers may update it until it is gone."""
    await cluster.create(DGD, dgd("graph", finalizers=[FINALIZER]))
    await cluster.delete(DGD.key(NS, "graph"))

    patched = await cluster.patch(DGD.key(NS, "graph"), {"spec": {"backendFramework": "vllm"}})
    status = await cluster.patch_status(DGD.key(NS, "graph"), {"status": {"state": "pending"}})

    assert patched.spec.backend_framework == "vllm"
    assert (
        status.status is not None
        and status.metadata.deletion_timestamp == patched.metadata.deletion_timestamp
    )
