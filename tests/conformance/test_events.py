"""Events (events.k8s.io/v1) are stored like any object: created, listed and watched."""

from __future__ import annotations

import msgspec
import pytest

from dgd.cluster.errors import Invalid
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DGD, EVENT
from dgd.messages.meta import ObjectMeta
from tests.conformance.builders import NS, dgd, event

pytestmark = pytest.mark.anyio


async def test_emitted_event_is_stored_with_a_name_and_event_time(cluster: Cluster) -> None:
    """An emitted Event gets a unique name derived from the object it regards, an eventTime
    (MicroTime), the object's namespace, and can be read back like any object."""
    graph = await cluster.create(DGD, dgd("graph"))

    first = await cluster.emit(event(graph))
    second = await cluster.emit(event(graph, reason="Scaled", note="scaled worker 2 -> 3"))

    assert first.metadata.name is not None and first.metadata.name.startswith("graph.")
    assert first.metadata.name != second.metadata.name
    assert first.metadata.namespace == NS
    assert first.event_time is not None and first.event_time.endswith("Z") and "." in first.event_time
    assert await cluster.get(EVENT.key(NS, first.metadata.name)) == first


async def test_emitted_event_with_generate_name_gets_a_generated_name(cluster: Cluster) -> None:
    """An Event sent with ``metadata.generateName`` and no name is named by the server from that prefix."""
    graph = await cluster.create(DGD, dgd("graph"))
    given = event(graph)

    emitted = await cluster.emit(msgspec.structs.replace(given, metadata=ObjectMeta(generate_name="graph-")))

    assert emitted.metadata.name is not None and emitted.metadata.name.startswith("graph-")
    assert len(emitted.metadata.name) > len("graph-")
    assert await cluster.get(EVENT.key(NS, emitted.metadata.name)) == emitted


async def test_events_are_listed_and_watched_like_objects(cluster: Cluster) -> None:
    """Events have resourceVersions, appear in lists and in watches."""
    graph = await cluster.create(DGD, dgd("graph"))
    start = await cluster.list(EVENT, namespace=NS)

    async with cluster.watch(EVENT, namespace=NS, resource_version=start.resource_version) as events:
        emitted = await cluster.emit(event(graph, note="hello"))
        seen = await events.__anext__()
    listed = await cluster.list(EVENT, namespace=NS)

    assert seen.type == "ADDED" and seen.object == emitted
    assert [item.note for item in listed.items] == ["hello"]


async def test_event_without_a_reason_is_invalid(cluster: Cluster) -> None:
    """events.k8s.io/v1 requires reason, action, reportingController, reportingInstance and a type
    of Normal or Warning: 422 otherwise."""
    graph = await cluster.create(DGD, dgd("graph"))
    incomplete = msgspec.structs.replace(event(graph), reason=None, type=None)

    with pytest.raises(Invalid) as raised:
        await cluster.emit(incomplete)

    assert {cause.field for cause in raised.value.causes} == {"reason", "type"}
