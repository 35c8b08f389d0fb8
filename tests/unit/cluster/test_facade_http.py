"""What is HTTP-specific about the facade as a client sees it: status objects, throttling, tokens, discovery,
creates, tables, events and the kubeconfig.
"""

from __future__ import annotations

import aiohttp
import msgspec
import pytest
import yaml

from dgd.cluster.errors import TooManyRequests
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DGD
from dgd.messages.meta import Event, ObjectMeta, ObjectReference
from dgd.sim.apiserver.server import Facade, kubeconfig, serve
from tests.unit.cluster.facade_client import CONFIG_MAPS, DGDS, NS, TABLE, Served, config_map, dgd

pytestmark = pytest.mark.anyio


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
