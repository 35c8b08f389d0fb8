"""The DGDSA controller and its watches (dgd-domain §13.3, §16): adapter replicas reach the DGD.

The operator runs on a bare ``MemoryCluster`` (see ``harness``); the tests write DGDs and adapters
straight into the cluster, as the DGD's scaling-adapters step and an autoscaler would, and read
what a user would: the DGD's component replicas, the adapter's status and the events about it.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import anyio
import msgspec
import pytest

from dgd.actors.machinery.owners import owner_reference
from dgd.actors.tree import ADAPTERS, DGDS
from dgd.cluster.errors import Conflict, Forbidden, NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.faults import Fail
from dgd.cluster.resources import CHECKPOINT, DGD, DGDSA, EVENT
from dgd.domain.adapters import adapter_body
from dgd.domain.gates import Gates
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter as Adapter
from dgd.messages.timestamps import rfc3339
from dgd.runtime import CountingMetrics
from tests.unit.actors.operator.harness import NS, Harness, manifest, running_operator

pytestmark = pytest.mark.anyio

ADAPTER = "demo-worker"
SELECTOR = "nvidia.com/dynamo-component=Worker,nvidia.com/dynamo-graph-deployment-name=demo"


def scaled_graph(**changes: Any) -> dict[str, Any]:
    """The harness graph (Frontend 1, Worker 2) with a scaling adapter on its worker."""
    document = manifest(**changes)
    document["spec"]["components"][1]["scalingAdapter"] = {}
    return document


async def with_adapter(op: Harness, dgd: DynamoGraphDeployment, replicas: int | None = None) -> Adapter:
    """The worker's adapter as the DGD's scaling-adapters step created it (seeded from the worker),
    or, with ``replicas``, as a user who created it first with that value left it."""
    await op.settle()
    if replicas is None:
        return await adapter(op)
    # The user's adapter replaces any the DGD made (the DGD never writes replicas after creation).
    with contextlib.suppress(NotFound):
        await op.cluster.delete(DGDSA.key(NS, ADAPTER))
    body = adapter_body(dgd, (dgd.spec.components or [])[1], owner_reference(dgd))
    body["spec"]["replicas"] = replicas
    created = await op.cluster.create(DGDSA, msgspec.convert(body, Adapter))
    await op.settle()
    return created


async def autoscale(cluster: MemoryCluster, replicas: int) -> None:
    """Scale the adapter as an HPA does: through its scale subresource, again on a conflict."""
    key = DGDSA.key(NS, ADAPTER)
    while True:
        scale = await cluster.get_scale(key)
        spec = msgspec.structs.replace(scale.spec, replicas=replicas)
        try:
            await cluster.replace_scale(key, msgspec.structs.replace(scale, spec=spec))
            return
        except Conflict:
            continue  # the controller wrote the status meanwhile


async def worker_replicas(op: Harness) -> int | None:
    return (await op.dgd()).spec.components[1].replicas  # type: ignore[index]


async def adapter(op: Harness) -> Adapter:
    return await op.cluster.get(DGDSA.key(NS, ADAPTER))


async def test_a_new_adapter_gets_its_status_and_leaves_a_dgd_at_its_replicas_alone() -> None:
    async with running_operator() as op:
        # given a DGD whose worker runs 2 replicas
        dgd = await op.apply(scaled_graph())
        generation = (await op.dgd()).metadata.generation

        # when its adapter is created at 2
        await with_adapter(op, dgd)

        # then the adapter's status says 2 and names the worker's pods; the DGD was not written
        status = (await adapter(op)).status
        assert status is not None
        assert (status.replicas, status.selector, status.last_scale_time) == (2, SELECTOR, None)
        assert (await op.dgd()).metadata.generation == generation
        assert await op.events(ADAPTER) == []


async def test_an_autoscaler_write_reaches_the_dgd_with_one_scaled_event_and_a_scale_time() -> None:
    async with running_operator() as op:
        # given a DGD whose worker adapter is at 2
        dgd = await op.apply(scaled_graph())
        await with_adapter(op, dgd)

        # when an autoscaler scales the adapter to 5
        await autoscale(op.cluster, 5)
        await op.settle()

        # then the DGD's worker asks for 5, the adapter says when, and one event says so
        assert await worker_replicas(op) == 5
        status = (await adapter(op)).status
        assert status is not None
        assert (status.replicas, status.selector, status.last_scale_time) == (5, SELECTOR, rfc3339(op.now))
        assert await op.events(ADAPTER) == [
            ("Normal", "Scaled", "Scaled component Worker from 2 to 5 replicas")
        ]
        # and the event relates to the DGD
        events = (await op.cluster.list(EVENT, namespace=NS)).items
        scaled = [e for e in events if e.reason == "Scaled"]
        assert [(e.related.kind, e.related.name) for e in scaled if e.related] == [
            ("DynamoGraphDeployment", "demo")
        ]


async def test_the_dgd_actor_reconciles_the_replicas_the_controller_wrote() -> None:
    metrics = CountingMetrics()
    async with running_operator(metrics=metrics) as op:
        # given a settled DGD whose worker adapter is at 2
        dgd = await op.apply(scaled_graph())
        await with_adapter(op, dgd)
        reconciles = metrics.processed[f"{DGDS}/{NS}/demo"]

        # when the adapter is scaled and the controller writes the DGD
        await autoscale(op.cluster, 4)
        await op.settle()

        # then the DGD's new generation woke its actor once
        assert await worker_replicas(op) == 4
        assert metrics.processed[f"{DGDS}/{NS}/demo"] == reconciles + 1


async def test_fields_the_operator_does_not_model_survive_a_scale() -> None:
    async with running_operator() as op:
        # given a DGD whose worker carries a field no Struct models
        document = scaled_graph()
        document["spec"]["components"][1]["futureField"] = {"keep": True}
        await op.cluster.create(DGD.as_raw(), document)
        await op.settle()
        await with_adapter(op, await op.dgd())

        # when the adapter is scaled
        await autoscale(op.cluster, 3)
        await op.settle()

        # then the DGD was written with the new replicas and the unknown field as it was
        raw = await op.cluster.get(DGD.as_raw().key(NS, "demo"))
        assert raw["spec"]["components"][1]["replicas"] == 3
        assert raw["spec"]["components"][1]["futureField"] == {"keep": True}


async def test_a_storm_of_scale_writes_ends_at_the_last_value_without_flapping_back() -> None:
    async with running_operator() as op:
        # given a DGD whose worker adapter is at 2, and a watch on what the DGD's worker asks for
        dgd = await op.apply(scaled_graph())
        await with_adapter(op, dgd)
        taken: list[int] = []

        async def follow(version: str) -> None:
            async with op.cluster.watch(DGD, namespace=NS, resource_version=version) as watch:
                async for event in watch:
                    replicas = event.object.spec.components[1].replicas  # type: ignore[union-attr,index]
                    if replicas is not None and (not taken or taken[-1] != replicas):
                        taken.append(replicas)

        # when an autoscaler writes 100 distinct values, half a second passing after about a third of them
        rng = random.Random(5)
        values = rng.sample(range(3, 1000), 100)
        written: list[int] = []
        async with anyio.create_task_group() as group:
            group.start_soon(follow, op.cluster.resource_version)
            await op.settle()
            for _ in range(100):
                written.append(values[len(written)])
                await autoscale(op.cluster, written[-1])
                if rng.random() < 0.3:
                    await op.advance(0.5)
            await op.settle()
            group.cancel_scope.cancel()

        # then the DGD ends at the last value written, and every value it took was written, in order
        assert await worker_replicas(op) == written[-1]
        assert taken[-1] == written[-1]
        remaining = iter(written)
        assert all(any(value == w for w in remaining) for value in taken), (taken, written)
        # and coalescing made it take fewer values than were written
        assert len(taken) < len(written)


async def test_a_user_edit_of_the_replicas_is_reverted_to_the_adapter() -> None:
    async with running_operator() as op:
        # given a DGD whose worker adapter is at 4 (the DGD follows it)
        dgd = await op.apply(scaled_graph())
        await with_adapter(op, dgd, replicas=4)
        assert await worker_replicas(op) == 4

        # when a user sets the worker's replicas in the DGD itself
        await op.scale("Worker", 9)

        # then the adapter, the single owner of the count, puts it back
        assert await worker_replicas(op) == 4
        assert (await op.events(ADAPTER))[-1] == (
            "Normal",
            "Scaled",
            "Scaled component Worker from 9 to 4 replicas",
        )


async def test_a_conflicting_dgd_write_is_read_again_and_retried_at_once() -> None:
    async with running_operator() as op:
        # given a DGD whose worker adapter is at 2, and an API server that refuses the next DGD update
        dgd = await op.apply(scaled_graph())
        await with_adapter(op, dgd)
        op.operator_client.faults.add(
            Fail(Conflict("changed meanwhile")), verb="update", resource=DGD, times=1
        )

        # when the adapter is scaled
        await autoscale(op.cluster, 6)
        await op.settle()

        # then the scale still went through, with no failure recorded
        assert await worker_replicas(op) == 6
        assert await op.events(ADAPTER) == [
            ("Normal", "Scaled", "Scaled component Worker from 2 to 6 replicas")
        ]


async def test_a_refused_dgd_write_records_a_warning_and_the_retry_converges() -> None:
    async with running_operator() as op:
        # given a DGD whose worker adapter is at 2, and an API server that forbids the next DGD update
        dgd = await op.apply(scaled_graph())
        await with_adapter(op, dgd)
        op.operator_client.faults.add(Fail(Forbidden("not now")), verb="update", resource=DGD, times=1)

        # when the adapter is scaled
        await autoscale(op.cluster, 3)
        await op.settle()

        # then the failure is recorded on the adapter, and the DGD is unchanged
        assert await worker_replicas(op) == 2
        assert [e[:2] for e in await op.events(ADAPTER)] == [("Warning", "UpdateFailed")]
        assert (await adapter(op)).status.replicas == 2  # type: ignore[union-attr]

        # when the retry's backoff has passed, then it converges
        await op.advance(1.0)
        assert await worker_replicas(op) == 3
        assert [e[:2] for e in await op.events(ADAPTER)] == [
            ("Warning", "UpdateFailed"),
            ("Normal", "Scaled"),
        ]
        assert (await adapter(op)).status.replicas == 3  # type: ignore[union-attr]


async def test_an_adapter_created_before_its_dgd_applies_its_replicas_once_the_dgd_exists() -> None:
    async with running_operator() as op:
        # given an adapter at 7 whose DGD does not exist yet
        body = {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeploymentScalingAdapter",
            "metadata": {"name": ADAPTER, "namespace": NS},
            "spec": {"replicas": 7, "dgdRef": {"name": "demo", "componentName": "Worker"}},
        }
        await op.cluster.create(DGDSA.as_raw(), body)
        await op.settle()

        # when the DGD is created
        await op.apply(scaled_graph())

        # then its worker follows the adapter
        assert await worker_replicas(op) == 7


async def test_a_component_without_scaling_adapter_is_not_driven_by_an_adapter() -> None:
    async with running_operator() as op:
        # given a DGD whose worker does not ask for an adapter, and an adapter pointing at it anyway
        dgd = await op.apply(manifest())
        await with_adapter(op, dgd, replicas=6)

        # then the DGD keeps its own replicas, and the adapter's status is not written
        assert await worker_replicas(op) == 2
        assert (await adapter(op)).status is None


async def test_each_adapter_has_an_actor_while_it_exists_and_its_deletion_wakes_its_dgd() -> None:
    metrics = CountingMetrics()
    async with running_operator(metrics=metrics) as op:
        # given a DGD whose worker asks for an adapter, which the DGD created
        dgd = await op.apply(scaled_graph())
        first = await with_adapter(op, dgd)
        assert op.system.lookup(f"{ADAPTERS}/{NS}/{ADAPTER}") is not None
        before = metrics.processed[f"{DGDS}/{NS}/demo"]

        # when the adapter is deleted
        await op.cluster.delete(DGDSA.key(NS, ADAPTER))
        await op.settle()

        # then the DGD reconciled once and made a new one, which has an actor of its own
        assert metrics.processed[f"{DGDS}/{NS}/demo"] == before + 1
        second = await adapter(op)
        assert second.metadata.uid != first.metadata.uid
        assert op.system.lookup(f"{ADAPTERS}/{NS}/{ADAPTER}") is not None

        # when the DGD no longer asks for it, then the DGD deletes it and its actor is gone
        document = msgspec.to_builtins(await op.dgd())
        del document["spec"]["components"][1]["scalingAdapter"]
        await op.cluster.replace(DGD.as_raw(), document)
        await op.settle()
        with pytest.raises(NotFound):
            await adapter(op)
        assert op.system.lookup(f"{ADAPTERS}/{NS}/{ADAPTER}") is None


async def test_an_adapter_status_write_does_not_wake_its_actor_again() -> None:
    metrics = CountingMetrics()
    async with running_operator(metrics=metrics) as op:
        # given a settled adapter whose status the controller wrote
        dgd = await op.apply(scaled_graph())
        await with_adapter(op, dgd)
        path = f"{ADAPTERS}/{NS}/{ADAPTER}"
        reconciles = metrics.processed[path]

        # when a label is added (no new generation)
        await op.cluster.patch(DGDSA.key(NS, ADAPTER), {"metadata": {"labels": {"team": "a"}}})
        await op.settle()

        # then the actor was not woken
        assert metrics.processed[path] == reconciles


CHECKPOINTS = Gates(grove=True, checkpoint=True)


def checkpoint(name: str, *, auto: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoCheckpoint",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"nvidia.com/dynamo-graph-deployment-name": "demo"},
            "annotations": {"nvidia.com/dynamo-auto-checkpoint": "true"} if auto else {},
        },
        "spec": {},
    }


async def test_changes_of_the_dgd_automatic_checkpoints_wake_it_but_their_creation_does_not() -> None:
    metrics = CountingMetrics()
    async with running_operator(metrics=metrics, gates=CHECKPOINTS, config=OperatorConfig()) as op:
        # given a DGD, its automatic checkpoint, and a user's checkpoint with the same label
        await op.apply(manifest())
        actor = f"{DGDS}/{NS}/demo"
        await op.cluster.create(CHECKPOINT, checkpoint("checkpoint-auto"))
        await op.cluster.create(CHECKPOINT, checkpoint("checkpoint-mine", auto=False))
        await op.settle()
        created = metrics.processed[actor]

        # when each becomes Ready
        for name in ("checkpoint-auto", "checkpoint-mine"):
            live = await op.cluster.get(CHECKPOINT.key(NS, name))
            await op.cluster.replace_status(CHECKPOINT, {**live, "status": {"phase": "Ready"}})
        await op.settle()

        # then only the automatic one woke the DGD
        assert metrics.processed[actor] == created + 1

        # when the automatic one is deleted, then the DGD is woken again
        await op.cluster.delete(CHECKPOINT.key(NS, "checkpoint-auto"))
        await op.settle()
        assert metrics.processed[actor] == created + 2
