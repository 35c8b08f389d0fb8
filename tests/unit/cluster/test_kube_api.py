"""What a real API server does that the facade does not, as the kube adapter meets it: lists, patches,
deletes, events, decoding and warnings.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import msgspec
import pytest
from aiohttp import web

from dgd.cluster.kube import adapter as kube_adapter
from dgd.cluster.kube.adapter import OFF_LOOP_BYTES
from dgd.cluster.kube.wire import warning_texts
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CONFIG_MAP, DGD, DGDSA, EVENT
from dgd.sim.apiserver.server import Facade, serve
from tests.conformance.builders import dgd, event
from tests.unit.cluster.kube_server import NS, adapter, fake_api_server

pytestmark = pytest.mark.anyio


async def test_list_items_without_api_version_and_kind_get_them() -> None:
    # given an API server that, like a real one, leaves apiVersion and kind out of built-in items
    async def handler(request: web.Request) -> web.Response:
        item = {"metadata": {"name": "x", "namespace": NS, "resourceVersion": "5"}, "reason": "Scaled"}
        data = {
            "kind": "EventList",
            "apiVersion": "events.k8s.io/v1",
            "metadata": {"resourceVersion": "9"},
            "items": [item],
        }
        if "configmaps" in request.path:
            data["items"] = [{"metadata": {"name": "c", "namespace": NS}, "data": {"k": "v"}}]
        return web.json_response(data)

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when Events (a modelled kind) and ConfigMaps (raw) are listed
        events = await cluster.list(EVENT, namespace=NS)
        maps = await cluster.list(CONFIG_MAP, namespace=NS)

    # then both decode, with the list's resourceVersion
    assert events.resource_version == "9"
    assert (events.items[0].api_version, events.items[0].reason) == ("events.k8s.io/v1", "Scaled")
    assert maps.items == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": NS},
            "data": {"k": "v"},
        }
    ]


async def test_patches_go_out_as_merge_patches_and_deletes_with_options() -> None:
    # given an API server recording each request
    seen: list[tuple[str, str, str, object]] = []

    async def handler(request: web.Request) -> web.Response:
        body = msgspec.json.decode(await request.read()) if request.can_read_body else None
        seen.append((request.method, request.path, request.headers.get("Content-Type", ""), body))
        if request.method == "DELETE":
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Success"})
        return web.json_response(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": NS}}
        )

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when an object is patched (also with an empty patch), status-patched and deleted
        await cluster.patch(CONFIG_MAP.key(NS, "c"), {"data": {"k": "v"}}, resource_version="7")
        await cluster.patch(CONFIG_MAP.key(NS, "c"), {})
        deleted = await cluster.delete(CONFIG_MAP.key(NS, "c"), propagation="Foreground")

    # then patches are JSON merge patches carrying the precondition, and the delete sends its options
    assert seen[0] == (
        "PATCH",
        f"/api/v1/namespaces/{NS}/configmaps/c",
        "application/merge-patch+json",
        {"data": {"k": "v"}, "metadata": {"resourceVersion": "7"}},
    )
    assert seen[1][2:] == ("application/merge-patch+json", {"metadata": {}})
    assert seen[2][0] == "DELETE" and seen[2][3] == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Foreground",
    }
    assert deleted is None


async def test_delete_returns_the_object_while_finalizers_hold_it() -> None:
    # given an API server answering a delete with the object marked deleting
    async def handler(request: web.Request) -> web.Response:
        metadata = {
            "name": "graph",
            "namespace": NS,
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "finalizers": ["nvidia.com/finalizer"],
        }
        return web.json_response(
            {"apiVersion": DGD.api_version, "kind": "DynamoGraphDeployment", "metadata": metadata, "spec": {}}
        )

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when deleted
        held = await cluster.delete(DGD.key(NS, "graph"))

    # then the object comes back, still there
    assert held is not None and held.metadata.finalizers == ["nvidia.com/finalizer"]


async def test_emit_names_and_dates_an_event_like_the_memory_adapter() -> None:
    # given an adapter with a seeded generator and a fixed clock
    async with (
        serve(Facade(MemoryCluster(namespaces=(NS,)))) as url,
        adapter(url, rng=random.Random(3), clock=lambda: 1_767_225_600.5) as cluster,
    ):
        graph = await cluster.create(DGD, dgd("graph"))

        # when an event is emitted
        emitted = await cluster.emit(event(graph))

    # then it is named after the DGD and dated with microseconds
    assert emitted.metadata.name is not None and emitted.metadata.name.startswith("graph.")
    assert emitted.event_time == "2026-01-01T00:00:00.500000Z"


def adapter_list(items: list[dict[str, object]]) -> dict[str, object]:
    return {
        "kind": "DynamoGraphDeploymentScalingAdapterList",
        "apiVersion": "nvidia.com/v1beta1",
        "metadata": {"resourceVersion": "9"},
        "items": items,
    }


def scaling_adapter(name: str, replicas: int) -> dict[str, object]:
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "7"},
        "spec": {"replicas": replicas, "dgdRef": {"name": "g", "componentName": "Worker"}},
    }


async def test_one_object_the_model_refuses_is_left_out_of_a_list_and_named() -> None:
    # given an API server whose CRD admits an adapter with replicas -1, which our model refuses
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(adapter_list([scaling_adapter("good", 2), scaling_adapter("bad", -1)]))

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when the adapters are listed
        listed = await cluster.list(DGDSA, namespace=NS)

    # then the good one is decoded, and the bad one is named with the field our model refused
    assert [a.metadata.name for a in listed.items] == ["good"]
    (refused,) = listed.rejected
    assert (refused.namespace, refused.name, refused.resource_version) == (NS, "bad", "7")
    assert "spec.replicas" in refused.error


async def test_a_large_list_is_decoded_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # given an API server answering with a list larger than the adapter decodes on the loop
    items = [scaling_adapter(f"a{n:05d}", 1) for n in range(OFF_LOOP_BYTES // 150)]

    async def handler(request: web.Request) -> web.Response:
        return web.json_response(adapter_list(items))

    threads: list[bool] = []
    decode = kube_adapter._decode_list

    def recording(resource: Any, data: bytes) -> Any:
        threads.append(threading.current_thread() is threading.main_thread())
        return decode(resource, data)

    monkeypatch.setattr(kube_adapter, "_decode_list", recording)
    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when it is listed
        listed = await cluster.list(DGDSA, namespace=NS)

    # then it was decoded whole, in a worker thread (not on the loop's thread)
    assert len(listed.items) == len(items)
    assert threads == [False]


@pytest.mark.parametrize(
    ("headers", "texts"),
    [
        (['299 - "unknown field \\"spec.bogus\\""'], ['unknown field "spec.bogus"']),
        (['299 - "a", 299 - "b" "Mon, 01 Jan 2024 00:00:00 GMT"'], ["a", "b"]),
        (['299 - "one"', '299 - "two, with a comma"'], ["one", "two, with a comma"]),
        (['199 - "not the API server\'s"', "garbage"], []),
    ],
)
def test_warning_texts_are_read_from_every_header(headers: list[str], texts: list[str]) -> None:
    assert warning_texts(headers) == texts


async def test_an_api_warning_is_logged_once_naming_the_request(caplog: pytest.LogCaptureFixture) -> None:
    # given an API server that accepts every write but warns about a field it dropped
    async def handler(request: web.Request) -> web.Response:
        body = await request.json()
        response = web.json_response(body, status=201)
        response.headers.add("Warning", '299 - "unknown field \\"spec.bogus\\""')
        return response

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when two objects are created with the same unknown field
        for name in ("a", "b"):
            await cluster.create(CONFIG_MAP, {"metadata": {"name": name, "namespace": NS}, "bogus": 1})

    # then the warning is logged once, with the request that drew it
    warned = [r.getMessage() for r in caplog.records if r.name == "dgd.cluster.kube"]
    assert warned == [f'the API server warns about POST ConfigMap {NS}/a: unknown field "spec.bogus"']
