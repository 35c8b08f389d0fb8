"""The scaling-adapters child of a DGD (dgd-domain §13.2): create, repair and delete, never rescale.

The child runs alone in an actor system, against a ``MemoryCluster`` holding the DGD; the test asks
it to reconcile as a program step would and reads the adapters and events from the cluster.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest

from dgd.actors.dgd.children.scaling_adapters import AdaptersReconciled, ReconcileAdapters, ScalingAdapters
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import NotFound, ServerError
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.faults import Fail
from dgd.cluster.resources import DGD, DGDSA, EVENT
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter as Adapter
from dgd.runtime import ActorSystem, ChildSpec, ManualClock, Ref
from tests.unit.actors.operator.harness import EPOCH, NS

pytestmark = pytest.mark.anyio

LABEL = "nvidia.com/dynamo-graph-deployment-name"


def graph(**components: dict[str, Any]) -> dict[str, Any]:
    """A DGD whose components are given by name: ``Worker={"replicas": 3, "scalingAdapter": {}}``."""
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "demo", "namespace": NS},
        "spec": {"components": [{"name": name, **spec} for name, spec in components.items()]},
    }


def adapter_event(action: str, adapter: str = "demo-worker", component: str = "Worker") -> tuple[str, ...]:
    """The Normal event of an adapter ``action`` (Created, Updated, Deleted) for a component."""
    return (
        "Normal",
        f"Adapter{action}",
        f"{action} scaling adapter {adapter} for component {component}",
        adapter,
    )


class Child:
    """The child, its cluster, and what a test reads there."""

    def __init__(self, cluster: MemoryCluster, ref: Ref[ReconcileAdapters]) -> None:
        self.cluster = cluster
        self.ref = ref

    async def store(self, document: dict[str, Any]) -> DynamoGraphDeployment:
        """Create or replace the DGD (as a user would), returning it as stored."""
        try:
            live = await self.cluster.get(DGD.key(NS, "demo"))
        except NotFound:
            return await self.cluster.create(DGD, msgspec.convert(document, DynamoGraphDeployment))
        document = {
            **document,
            "metadata": {**document["metadata"], "resourceVersion": live.metadata.resource_version},
        }
        return await self.cluster.replace(DGD, msgspec.convert(document, DynamoGraphDeployment))

    async def reconcile(self, dgd: DynamoGraphDeployment) -> AdaptersReconciled | StepFailed:
        return await self.ref.ask(ReconcileAdapters(dgd=dgd, owner=dgd))

    async def worker_adapter_created(self) -> DynamoGraphDeployment:
        """Store a DGD whose worker (3 replicas) asks for a scaling adapter, and run the step once."""
        dgd = await self.store(graph(Worker={"replicas": 3, "scalingAdapter": {}}))
        await self.reconcile(dgd)
        return dgd

    async def adapter(self, name: str) -> Adapter | None:
        try:
            return await self.cluster.get(DGDSA.key(NS, name))
        except NotFound:
            return None

    async def adapter_body(self, name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeploymentScalingAdapter",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 1, "dgdRef": {"name": "demo", "componentName": "Worker"}, **spec},
        }

    async def events(self) -> list[tuple[str, str, str, str | None]]:
        """(type, reason, note, related name) of every event, in the order recorded."""
        listed = sorted(
            (await self.cluster.list(EVENT, namespace=NS)).items,
            key=lambda e: int(e.metadata.resource_version or 0),
        )
        return [
            (e.type or "", e.reason or "", e.note or "", e.related.name if e.related else None)
            for e in listed
        ]


@asynccontextmanager
async def scaling_adapters() -> AsyncIterator[Child]:
    cluster = MemoryCluster(clock=lambda: EPOCH, rng=random.Random(3), namespaces=(NS,))
    cache = Cache()  # nothing cached: every read goes to the API
    recorder = Recorder(cluster, instance="test", now=lambda: EPOCH)
    reader, syncer = Reader(cluster, cache), Syncer(cluster, cache, recorder)
    spec = ChildSpec("scaling-adapters", lambda: ScalingAdapters(reader=reader, syncer=syncer))
    events = ChildSpec("events", recorder.poster)
    async with ActorSystem([events, spec], clock=ManualClock(), random=random.Random(3)) as system:
        yield Child(cluster, system.ref("/scaling-adapters"))


async def test_an_adapter_is_created_for_a_component_that_asks_seeded_with_its_replicas() -> None:
    async with scaling_adapters() as child:
        # given a DGD whose worker asks for a scaling adapter
        dgd = await child.store(graph(Frontend={}, Worker={"replicas": 3, "scalingAdapter": {}}))

        # when the step runs
        answer = await child.reconcile(dgd)

        # then the worker's adapter exists, owned by the DGD, seeded with 3 replicas, with one event
        assert answer == AdaptersReconciled(created=("demo-worker",))
        adapter = await child.adapter("demo-worker")
        assert adapter is not None and adapter.spec.replicas == 3
        assert (adapter.spec.dgd_ref.name, adapter.spec.dgd_ref.component_name) == ("demo", "Worker")
        assert adapter.metadata.labels == {LABEL: "demo", "nvidia.com/dynamo-component": "Worker"}
        assert [(o.uid, o.controller) for o in adapter.metadata.owner_references or []] == [
            (dgd.metadata.uid, True)
        ]
        assert await child.adapter("demo-frontend") is None
        assert await child.events() == [adapter_event("Created")]


async def test_a_second_run_writes_nothing_and_records_nothing() -> None:
    async with scaling_adapters() as child:
        # given a DGD whose adapter was created
        dgd = await child.worker_adapter_created()
        version = child.cluster.resource_version

        # when the step runs again
        answer = await child.reconcile(dgd)

        # then nothing was written (not even an event)
        assert answer == AdaptersReconciled()
        assert child.cluster.resource_version == version


async def test_the_dgd_never_writes_the_replicas_of_an_adapter_it_created() -> None:
    async with scaling_adapters() as child:
        # given an adapter created at 3 replicas, then scaled to 8 by an autoscaler
        await child.worker_adapter_created()
        adapter = await child.adapter("demo-worker")
        assert adapter is not None
        await child.cluster.patch(DGDSA.key(NS, "demo-worker"), {"spec": {"replicas": 8}})

        # when the DGD's worker replicas change and the step runs
        dgd = await child.store(graph(Worker={"replicas": 5, "scalingAdapter": {}}))
        answer = await child.reconcile(dgd)

        # then the adapter keeps the autoscaler's 8
        assert answer == AdaptersReconciled()
        scaled = await child.adapter("demo-worker")
        assert scaled is not None and scaled.spec.replicas == 8


async def test_drifted_identity_is_repaired_with_one_update_event() -> None:
    async with scaling_adapters() as child:
        # given an adapter whose component label someone removed
        dgd = await child.worker_adapter_created()
        await child.cluster.patch(DGDSA.key(NS, "demo-worker"), {"metadata": {"labels": {LABEL: None}}})

        # when the step runs
        answer = await child.reconcile(dgd)

        # then the label is back, the replicas untouched, and the repair was recorded
        assert answer == AdaptersReconciled(updated=("demo-worker",))
        adapter = await child.adapter("demo-worker")
        assert adapter is not None and (adapter.metadata.labels or {}).get(LABEL) == "demo"
        assert adapter.spec.replicas == 3
        assert (await child.events())[-1] == adapter_event("Updated")


async def test_a_component_that_stops_asking_loses_the_adapter_the_dgd_controls() -> None:
    async with scaling_adapters() as child:
        # given a worker adapter the DGD created
        await child.worker_adapter_created()

        # when the worker no longer asks for a scaling adapter
        dgd = await child.store(graph(Worker={"replicas": 3}))
        answer = await child.reconcile(dgd)

        # then its adapter is deleted, and that is recorded
        assert answer == AdaptersReconciled(deleted=("demo-worker",))
        assert await child.adapter("demo-worker") is None
        assert (await child.events())[-1] == adapter_event("Deleted")


async def test_an_adapter_of_the_same_name_the_dgd_does_not_control_is_left_alone() -> None:
    async with scaling_adapters() as child:
        # given a user's own adapter that happens to be named after a DGD component
        await child.cluster.create(DGDSA.as_raw(), await child.adapter_body("demo-worker", replicas=4))
        dgd = await child.store(graph(Worker={"replicas": 3}))
        version = child.cluster.resource_version

        # when the step runs for a worker without scalingAdapter
        answer = await child.reconcile(dgd)

        # then the user's adapter is untouched (upstream would delete it, dgd-domain §21 item 5)
        assert answer == AdaptersReconciled()
        assert await child.adapter("demo-worker") is not None
        assert child.cluster.resource_version == version


async def test_the_orphan_sweep_deletes_controlled_adapters_of_removed_components_only() -> None:
    async with scaling_adapters() as child:
        # given adapters the DGD made for its worker and prefill components
        dgd = await child.store(
            graph(Worker={"scalingAdapter": {}}, Prefill={"scalingAdapter": {}, "replicas": 2})
        )
        await child.reconcile(dgd)
        # and a user's adapter carrying the DGD's label, for a component that never existed
        stray = await child.adapter_body("demo-stray", dgdRef={"name": "demo", "componentName": "Stray"})
        stray["metadata"]["labels"] = {LABEL: "demo"}
        await child.cluster.create(DGDSA.as_raw(), stray)

        # when the prefill component is removed
        dgd = await child.store(graph(Worker={"scalingAdapter": {}}))
        answer = await child.reconcile(dgd)

        # then the prefill adapter is deleted as an orphan; the worker's and the user's stay
        assert answer == AdaptersReconciled(deleted=("demo-prefill",))
        assert await child.adapter("demo-prefill") is None
        assert await child.adapter("demo-worker") is not None
        assert await child.adapter("demo-stray") is not None
        assert (await child.events())[-1] == (
            "Normal",
            "AdapterDeleted",
            "Deleted orphaned scaling adapter demo-prefill for removed component Prefill",
            "demo-prefill",
        )


async def test_a_refused_write_fails_the_step_naming_the_adapter_and_records_only_a_warning() -> None:
    async with scaling_adapters() as child:
        # given an API server that refuses to create adapters
        child.cluster.faults.add(Fail(ServerError("etcd is unhappy")), verb="create", resource=DGDSA)
        dgd = await child.store(graph(Worker={"scalingAdapter": {}}))

        # when the step runs
        answer = await child.reconcile(dgd)

        # then it fails, saying which adapter, and no event claims a creation: one Warning says why
        assert isinstance(answer, StepFailed)
        assert answer.message.startswith(
            "failed to reconcile scaling adapter demo-worker: InternalError (500)"
        )
        assert await child.events() == [
            (
                "Warning",
                "CreateDynamoGraphDeploymentScalingAdapter",
                "Failed to create DynamoGraphDeploymentScalingAdapter team-a/demo-worker: "
                "InternalError (500): etcd is unhappy",
                None,
            )
        ]
