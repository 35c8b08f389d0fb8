"""The HTTP facade as an HTTP client sees it: statuses, discovery, watch streams, patches, tables, events.

The port semantics behind it are the conformance suite's (run through the kube adapter); these
tests pin what is HTTP-specific.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio
import msgspec
import pytest
import yaml

from dgd.cluster.errors import TooManyRequests
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CONFIG_MAP, DEFAULT_RESOURCES, DGD, DGDSA
from dgd.domain.crds import all_crds
from dgd.messages.base import JSONObject
from dgd.messages.meta import Event, ObjectMeta, ObjectReference
from dgd.sim.apiserver.catalog import CUSTOM_RESOURCE_DEFINITION
from dgd.sim.apiserver.server import Facade, kubeconfig, serve

pytestmark = pytest.mark.anyio

NS = "team-a"
CONFIG_MAPS = f"/api/v1/namespaces/{NS}/configmaps"
DGDS = f"/apis/nvidia.com/v1beta1/namespaces/{NS}/dynamographdeployments"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@dataclass
class Served:
    cluster: MemoryCluster
    facade: Facade
    url: str
    http: aiohttp.ClientSession

    async def call(self, method: str, path: str, body: Any = None, **options: Any) -> tuple[int, Any]:
        headers = options.pop("headers", {})
        if body is not None and not isinstance(body, bytes):
            body = msgspec.json.encode(body)
            headers.setdefault("Content-Type", "application/json")
        async with self.http.request(
            method, self.url + path, data=body, headers=headers, **options
        ) as response:
            return response.status, msgspec.json.decode(await response.read())


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    resources = (*DEFAULT_RESOURCES, CUSTOM_RESOURCE_DEFINITION)
    cluster = MemoryCluster(
        resources=resources, rng=random.Random(1), bookmark_interval=0.05, namespaces=(NS,)
    )
    for crd in all_crds():
        await cluster.create(CUSTOM_RESOURCE_DEFINITION, crd)
    facade = Facade(cluster, resources=resources, clock=lambda: 1_767_225_600.0)
    async with serve(facade) as url, aiohttp.ClientSession() as http:
        yield Served(cluster, facade, url, http)


def config_map(name: str = "settings", **labels: str) -> JSONObject:
    metadata: JSONObject = {"name": name, "namespace": NS}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


def dgd(name: str = "graph") -> JSONObject:
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"backendFramework": "vllm"},
    }


async def lines(response: aiohttp.ClientResponse, count: int) -> list[JSONObject]:
    """The next ``count`` watch events of a streaming response."""
    events: list[JSONObject] = []
    with anyio.fail_after(5):
        while len(events) < count:
            line = await response.content.readline()
            if not line:
                break
            events.append(msgspec.json.decode(line))
    return events


async def test_refusals_are_status_objects_with_the_code_and_reason(served: Served) -> None:
    # given one ConfigMap
    await served.call("POST", CONFIG_MAPS, config_map())

    # when a missing object is read, the name is taken again, a bad name is sent, a path is unknown
    missing = await served.call("GET", f"{CONFIG_MAPS}/missing")
    taken = await served.call("POST", CONFIG_MAPS, config_map())
    invalid = await served.call("POST", CONFIG_MAPS, config_map("Not_Valid"))
    unknown = await served.call("GET", "/apis/example.com/v1/widgets")
    not_allowed = await served.call("POST", "/apis")

    # then each is a Status with the API server's code and reason
    assert missing[0] == 404 and missing[1]["kind"] == "Status" and missing[1]["reason"] == "NotFound"
    assert (taken[0], taken[1]["reason"], taken[1]["details"]["name"]) == (409, "AlreadyExists", "settings")
    assert (invalid[0], invalid[1]["reason"]) == (422, "Invalid")
    assert invalid[1]["details"]["causes"][0]["field"] == "metadata.name"
    assert (unknown[0], unknown[1]["reason"]) == (404, "NotFound")
    assert (not_allowed[0], not_allowed[1]["reason"]) == (405, "MethodNotAllowed")


async def test_throttled_request_carries_retry_after(served: Served) -> None:
    # given a 429 injected on the memory server behind the facade
    served.cluster.faults.fail(TooManyRequests("slow down", retry_after=4), verb="list")

    # when a list is sent
    async with served.http.get(served.url + CONFIG_MAPS) as response:
        status = msgspec.json.decode(await response.read())

    # then the answer is 429 with Retry-After in the header and in the Status
    assert response.status == 429 and response.headers["Retry-After"] == "4"
    assert status["details"]["retryAfterSeconds"] == 4


async def test_a_token_is_required_when_the_facade_has_one() -> None:
    # given a facade requiring a bearer token
    facade = Facade(MemoryCluster(namespaces=(NS,)), token="s3cret")
    async with serve(facade) as url, aiohttp.ClientSession() as http:
        # when requests come without it, with a wrong one, with it, and to /version
        async with http.get(f"{url}/api/v1/namespaces") as anonymous:
            refused = (anonymous.status, msgspec.json.decode(await anonymous.read())["reason"])
        async with http.get(f"{url}/api/v1/namespaces", headers={"Authorization": "Bearer nope"}) as wrong:
            wrong_status = wrong.status
        async with http.get(f"{url}/api/v1/namespaces", headers={"Authorization": "Bearer s3cret"}) as right:
            right_status = right.status
        async with http.get(f"{url}/version") as version:
            version_status = version.status

    # then only the request with the token is served (and /version is open)
    assert refused == (401, "Unauthorized")
    assert (wrong_status, right_status, version_status) == (401, 200, 200)


async def test_discovery_is_aggregated_when_the_client_asks_for_it(served: Served) -> None:
    # when /apis is asked for as kubectl asks, and plainly
    aggregated_accept = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    )
    async with served.http.get(served.url + "/apis", headers={"Accept": aggregated_accept}) as response:
        aggregated = (response.headers["Content-Type"], msgspec.json.decode(await response.read()))
    status, legacy = await served.call("GET", "/apis")

    # then the aggregated answer says its type; the legacy one is an APIGroupList
    assert aggregated[0] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert aggregated[1]["kind"] == "APIGroupDiscoveryList"
    assert status == 200 and legacy["kind"] == "APIGroupList"
    assert "nvidia.com" in [group["name"] for group in legacy["groups"]]


async def test_create_into_another_namespace_than_the_path_is_a_bad_request(served: Served) -> None:
    # given a body naming namespace team-b
    body = config_map()
    body["metadata"]["namespace"] = "team-b"

    # when it is posted to team-a's collection
    status, answer = await served.call("POST", CONFIG_MAPS, body)

    # then the API server's 400 comes back
    assert (status, answer["reason"]) == (400, "BadRequest")


async def test_create_takes_the_namespace_of_the_path_when_the_body_has_none(served: Served) -> None:
    body = config_map()
    del body["metadata"]["namespace"]

    status, created = await served.call("POST", CONFIG_MAPS, body)

    assert (status, created["metadata"]["namespace"]) == (201, NS)


async def test_watch_streams_one_json_event_per_line_from_a_resource_version(served: Served) -> None:
    # given a list's resourceVersion, then two changes
    _, listed = await served.call("GET", CONFIG_MAPS)
    await served.call("POST", CONFIG_MAPS, config_map("a"))
    await served.call("DELETE", f"{CONFIG_MAPS}/a")

    # when watching from the list's resourceVersion
    query = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as response:
        events = await lines(response, 2)

    # then both changes arrive in order, each object at its own resourceVersion
    assert response.status == 200 and response.headers["Content-Type"] == "application/json"
    assert [(event["type"], event["object"]["metadata"]["name"]) for event in events] == [
        ("ADDED", "a"),
        ("DELETED", "a"),
    ]


async def test_watch_from_a_compacted_version_ends_with_a_410_error_event(served: Served) -> None:
    # given an old resourceVersion, compacted away
    _, created = await served.call("POST", CONFIG_MAPS, config_map("a"))
    await served.call(
        "PATCH",
        f"{CONFIG_MAPS}/a",
        {"data": {"k": "2"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    served.cluster.compact()

    # when watching from it
    query = {"watch": "1", "resourceVersion": created["metadata"]["resourceVersion"]}
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as response:
        events = await lines(response, 2)

    # then the stream holds one ERROR event with the 410 Expired Status, and ends
    assert response.status == 200
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")


async def test_idle_watch_gets_bookmarks_and_ends_after_its_timeout(served: Served) -> None:
    # given a watch asking for bookmarks and a one-second timeout
    _, listed = await served.call("GET", CONFIG_MAPS)
    query = {
        "watch": "1",
        "resourceVersion": listed["metadata"]["resourceVersion"],
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "1",
    }

    # when nothing changes
    with anyio.fail_after(5):
        async with served.http.get(served.url + CONFIG_MAPS, params=query) as response:
            body = await response.read()

    # then bookmarks (kind and resourceVersion only) arrived, and the server ended the stream
    events = [msgspec.json.decode(line) for line in body.splitlines()]
    assert events and {event["type"] for event in events} == {"BOOKMARK"}
    assert events[0]["object"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": listed["metadata"]["resourceVersion"]},
    }


async def test_dropped_watches_end_and_expired_watches_get_gone(served: Served) -> None:
    # given two open watch streams
    _, listed = await served.call("GET", CONFIG_MAPS)
    query = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as dropped:
        await anyio.wait_all_tasks_blocked()
        # when the facade drops every watch
        count = await served.facade.drop_watches()
        # then the stream ends without an event
        assert (count, await dropped.read()) == (1, b"")
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as expired:
        await anyio.wait_all_tasks_blocked()
        # when the facade expires every watch
        await served.facade.expire_watches()
        # then the stream ends with a 410
        (event,) = await lines(expired, 2)
        assert (event["type"], event["object"]["code"]) == ("ERROR", 410)
    assert served.facade.open_watches == 0


async def test_field_selector_narrows_lists_and_watches_to_one_name(served: Served) -> None:
    # given two objects
    _, listed = await served.call("GET", CONFIG_MAPS)
    await served.call("POST", CONFIG_MAPS, config_map("a"))
    await served.call("POST", CONFIG_MAPS, config_map("b"))

    # when listing and watching with metadata.name=b (as kubectl wait does)
    _, only_b = await served.call("GET", CONFIG_MAPS, params={"fieldSelector": "metadata.name=b"})
    query = {
        "watch": "1",
        "resourceVersion": listed["metadata"]["resourceVersion"],
        "fieldSelector": "metadata.name=b",
    }
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as response:
        (event,) = await lines(response, 1)
    bad, _ = await served.call("GET", CONFIG_MAPS, params={"fieldSelector": "no operator"})

    # then only b is seen, and a malformed selector is a 400
    assert [item["metadata"]["name"] for item in only_b["items"]] == ["b"]
    assert event["object"]["metadata"]["name"] == "b"
    assert bad == 400


async def test_json_patch_and_strategic_merge_patch_of_a_built_in_kind(served: Served) -> None:
    # given a ConfigMap
    await served.call("POST", CONFIG_MAPS, config_map())

    # when patched with a JSON patch, then with a strategic merge patch
    _, json_patched = await served.call(
        "PATCH",
        f"{CONFIG_MAPS}/settings",
        [{"op": "add", "path": "/data/extra", "value": "1"}],
        headers={"Content-Type": "application/json-patch+json"},
    )
    _, strategic = await served.call(
        "PATCH",
        f"{CONFIG_MAPS}/settings",
        {"metadata": {"labels": {"tier": "web"}}, "data": {"k": None}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )

    # then both applied, each as one write
    assert json_patched["data"] == {"k": "v", "extra": "1"}
    assert strategic["data"] == {"extra": "1"} and strategic["metadata"]["labels"] == {"tier": "web"}
    assert (
        int(strategic["metadata"]["resourceVersion"]) == int(json_patched["metadata"]["resourceVersion"]) + 1
    )


async def test_strategic_merge_patch_of_a_custom_resource_is_unsupported(served: Served) -> None:
    # given a DGD (a custom resource)
    await served.call("POST", DGDS, dgd())

    # when a strategic merge patch is sent
    status, answer = await served.call(
        "PATCH",
        f"{DGDS}/graph",
        {"spec": {}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )

    # then 415, as the API server answers for custom resources
    assert (status, answer["reason"]) == (415, "UnsupportedMediaType")


async def test_server_side_apply_creates_then_merges_the_applied_configuration(served: Served) -> None:
    # given an applied configuration in YAML (no namespace: the path has it)
    applied = dgd()
    del applied["metadata"]["namespace"]
    apply = {"Content-Type": "application/apply-patch+yaml"}
    params = {"fieldManager": "kubectl", "force": "true"}

    # when applied twice, the second time with another backend
    first = await served.call(
        "PATCH", f"{DGDS}/graph", yaml.safe_dump(applied).encode(), headers=apply, params=params
    )
    applied["spec"]["backendFramework"] = "sglang"
    second = await served.call(
        "PATCH", f"{DGDS}/graph", yaml.safe_dump(applied).encode(), headers=apply, params=params
    )

    # then the first created the object and the second changed it
    assert first[0] == 201 and first[1]["metadata"]["generation"] == 1
    assert second[0] == 200 and second[1]["spec"]["backendFramework"] == "sglang"
    assert second[1]["metadata"]["generation"] == 2


async def test_scale_subresource_takes_a_merge_patch(served: Served) -> None:
    # given a scaling adapter with one replica
    adapter = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {"name": "graph-worker", "namespace": NS},
        "spec": {"replicas": 1, "dgdRef": {"name": "graph", "componentName": "worker"}},
    }
    adapters = f"/apis/nvidia.com/v1beta1/namespaces/{NS}/{DGDSA.plural}"
    await served.call("POST", adapters, adapter)

    # when kubectl scale patches its scale subresource
    status, scale = await served.call(
        "PATCH",
        f"{adapters}/graph-worker/scale",
        {"spec": {"replicas": 3}},
        headers={"Content-Type": "application/merge-patch+json"},
    )

    # then the Scale and the object say 3
    assert (status, scale["kind"], scale["spec"]["replicas"]) == (200, "Scale", 3)
    assert (await served.cluster.get(DGDSA.key(NS, "graph-worker"))).spec.replicas == 3


async def test_delete_honours_preconditions_and_answers_success_once_gone(served: Served) -> None:
    # given a ConfigMap
    _, created = await served.call("POST", CONFIG_MAPS, config_map())

    # when deleted with a wrong uid precondition, then with the right one
    stale = await served.call(
        "DELETE", f"{CONFIG_MAPS}/settings", {"kind": "DeleteOptions", "preconditions": {"uid": "other"}}
    )
    deleted = await served.call(
        "DELETE",
        f"{CONFIG_MAPS}/settings",
        {"kind": "DeleteOptions", "preconditions": {"uid": created["metadata"]["uid"]}},
        params={"propagationPolicy": "Background"},
    )

    # then the first is a 409 Conflict and the second a Success Status naming the object
    assert (stale[0], stale[1]["reason"]) == (409, "Conflict")
    assert deleted[0] == 200 and deleted[1]["status"] == "Success"
    assert deleted[1]["details"] == {
        "name": "settings",
        "group": "",
        "kind": "configmaps",
        "uid": created["metadata"]["uid"],
    }


async def test_delete_collection_removes_what_the_label_selector_matches(served: Served) -> None:
    # given three ConfigMaps, two labelled
    for name, labels in (("a", {"app": "x"}), ("b", {"app": "x"}), ("c", {})):
        await served.call("POST", CONFIG_MAPS, config_map(name, **labels))

    # when the collection is deleted with app=x
    status, _ = await served.call("DELETE", CONFIG_MAPS, params={"labelSelector": "app=x"})

    # then only c is left
    remaining = await served.cluster.list(CONFIG_MAP, namespace=NS)
    assert status == 200 and [item["metadata"]["name"] for item in remaining.items] == ["c"]


async def test_table_printing_uses_the_crd_printer_columns(served: Served) -> None:
    # given a DGD with a status
    await served.call("POST", DGDS, dgd())
    await served.cluster.patch_status(DGD.key(NS, "graph"), {"status": {"state": "pending"}})

    # when listed as kubectl get asks
    _, table = await served.call("GET", DGDS, headers={"Accept": TABLE})

    # then the columns are the CRD's and the row holds the DGD's values
    assert table["kind"] == "Table"
    assert [column["name"] for column in table["columnDefinitions"]] == ["Name", "Ready", "Backend", "Age"]
    assert table["rows"][0]["cells"][:3] == ["graph", None, "vllm"]


async def test_core_events_are_a_read_only_view_of_the_stored_events(served: Served) -> None:
    # given an events.k8s.io/v1 Event about a DGD, as the operator emits it
    await served.cluster.emit(
        Event(
            api_version="events.k8s.io/v1",
            metadata=ObjectMeta(namespace=NS),
            reporting_controller="nvidia.com/dgd-operator",
            reporting_instance="op-0",
            action="Reconcile",
            reason="Scaled",
            type="Normal",
            note="scaled worker 1 -> 2",
            regarding=ObjectReference(
                api_version=DGD.api_version, kind="DynamoGraphDeployment", name="graph", namespace=NS
            ),
        )
    )

    # when kubectl describe lists core/v1 events of the DGD, and someone tries to write one
    query = {"fieldSelector": f"involvedObject.name=graph,involvedObject.namespace={NS}"}
    _, listed = await served.call("GET", f"/api/v1/namespaces/{NS}/events", params=query)
    _, none = await served.call(
        "GET", f"/api/v1/namespaces/{NS}/events", params={"fieldSelector": "involvedObject.name=x"}
    )
    refused, _ = await served.call("POST", f"/api/v1/namespaces/{NS}/events", {"metadata": {}})

    # then the Event reads as a core/v1 Event, and the view takes no writes
    (event,) = listed["items"]
    assert (listed["kind"], event["apiVersion"], event["kind"]) == ("EventList", "v1", "Event")
    assert event["involvedObject"]["name"] == "graph" and event["message"] == "scaled worker 1 -> 2"
    assert (event["reason"], event["type"], event["count"]) == ("Scaled", "Normal", 1)
    assert event["source"] == {"component": "nvidia.com/dgd-operator"}
    assert none["items"] == []
    assert refused == 405


def test_kubeconfig_points_at_the_server_with_an_optional_token() -> None:
    # when kubeconfigs are written with and without a token
    with_token = yaml.safe_load(kubeconfig("http://127.0.0.1:8001", token="t", namespace="team-a"))
    anonymous = yaml.safe_load(kubeconfig("http://127.0.0.1:8001"))

    # then the current context names the server, the namespace and the credentials
    assert with_token["current-context"] == "dgd-sim"
    assert with_token["clusters"][0]["cluster"] == {"server": "http://127.0.0.1:8001"}
    assert with_token["contexts"][0]["context"]["namespace"] == "team-a"
    assert with_token["users"][0]["user"] == {"token": "t"}
    assert anonymous["users"][0]["user"] == {}
