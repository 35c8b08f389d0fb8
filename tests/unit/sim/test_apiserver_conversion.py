"""The HTTP facade serves nvidia.com/v1alpha1 as a cluster with the operator's conversion webhook does.

Through plain HTTP, against a memory server running the operator's admission webhooks (which see
v1beta1 only): discovery and OpenAPI list the version, writes at v1alpha1 are converted before
admission and storage, reads, lists and watch events at v1alpha1 are converted back, and patches
apply to the v1alpha1 object.
"""

from __future__ import annotations

import copy
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio
import msgspec
import pytest

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DEFAULT_RESOURCES, DGD
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.domain.crds import all_crds
from dgd.messages.base import JSONObject
from dgd.sim.admission import SIMULATED_OPERATOR, webhook_chain
from dgd.sim.apiserver.catalog import CUSTOM_RESOURCE_DEFINITION
from dgd.sim.apiserver.conversion import Conversion
from dgd.sim.apiserver.server import Facade, serve
from dgd.sim.conversion import webhook_conversion
from tests.upstream import DYNAMO, load_documents

pytestmark = pytest.mark.anyio

NS = "default"
ALPHA = f"/apis/nvidia.com/v1alpha1/namespaces/{NS}/dynamographdeployments"
BETA = f"/apis/nvidia.com/v1beta1/namespaces/{NS}/dynamographdeployments"
AGG = DYNAMO / "deploy" / "utils" / "tests" / "fixtures" / "v1alpha1" / "agg.yaml"
RESOURCES = (*DEFAULT_RESOURCES, CUSTOM_RESOURCE_DEFINITION)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Served:
    cluster: MemoryCluster
    url: str
    http: aiohttp.ClientSession

    async def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", **query: str
    ) -> tuple[int, Any]:
        data = msgspec.json.encode(body) if body is not None else None
        async with self.http.request(
            method, self.url + path, data=data, params=query, headers={"Content-Type": content_type}
        ) as response:
            return response.status, msgspec.json.decode(await response.read())


async def facade(conversion: Conversion | None) -> tuple[MemoryCluster, Facade]:
    """A memory server with the CRDs stored and the operator's admission webhooks, and its facade."""
    cluster = MemoryCluster(
        resources=RESOURCES,
        rng=random.Random(1),
        namespaces=(NS,),
        admission=webhook_chain(AdmissionSettings(operator_principal=SIMULATED_OPERATOR)),
    )
    for crd in all_crds():
        await cluster.create(CUSTOM_RESOURCE_DEFINITION, crd)
    return cluster, Facade(cluster, resources=RESOURCES, conversion=conversion)


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    cluster, served_facade = await facade(webhook_conversion)
    async with serve(served_facade) as url, aiohttp.ClientSession() as http:
        yield Served(cluster, url, http)


def agg() -> JSONObject:
    """The upstream v1alpha1 conversion fixture (vllm-agg: a frontend and a decode worker)."""
    (document,) = load_documents(AGG)
    assert isinstance(document, dict)
    return document


async def test_a_v1alpha1_dgd_is_stored_as_v1beta1_and_reads_back_at_both_versions(served: Served) -> None:
    # given the upstream v1alpha1 fixture
    applied = agg()

    # when it is created at v1alpha1, then read at v1alpha1 and v1beta1
    created = await served.call("POST", ALPHA, applied)
    alpha = await served.call("GET", f"{ALPHA}/vllm-agg")
    beta = await served.call("GET", f"{BETA}/vllm-agg")
    stored = await served.cluster.get(DGD.as_raw().key(NS, "vllm-agg"))

    # then the memory server (and its admission) holds v1beta1, defaulted
    assert created[0] == 201, created[1]
    assert stored["apiVersion"] == "nvidia.com/v1beta1"
    assert [component["name"] for component in stored["spec"]["components"]] == [
        "Frontend",
        "VllmDecodeWorker",
    ]
    assert "nvidia.com/dynamo-operator-origin-version" in stored["metadata"]["annotations"]
    # and the answer to the create and the v1alpha1 read are v1alpha1: everything applied, plus defaults
    assert created[1]["apiVersion"] == alpha[1]["apiVersion"] == "nvidia.com/v1alpha1"
    assert alpha[0] == 200
    for name, service in applied["spec"]["services"].items():
        shown = alpha[1]["spec"]["services"][name]
        assert {key: shown[key] for key in service} == service
        assert shown["minAvailable"] == 1  # §4.2: defaulted on v1beta1, shown at v1alpha1
    assert "nvidia.com/dynamo-operator-origin-version" in alpha[1]["metadata"]["annotations"]
    assert alpha[1]["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    # and the v1beta1 read is the stored object
    assert beta[0] == 200 and beta[1] == stored


async def test_lists_and_watches_at_v1alpha1_are_v1alpha1(served: Served) -> None:
    # given a DGD created at v1beta1 (the hub) and a watch opened at v1alpha1 before it
    listed_before = await served.call("GET", ALPHA)
    version = listed_before[1]["metadata"]["resourceVersion"]
    async with served.http.get(
        served.url + ALPHA, params={"watch": "true", "resourceVersion": version}
    ) as watch:
        beta = copy.deepcopy(agg())
        await served.call("POST", ALPHA, beta)

        # when the collection is listed at v1alpha1 and the watch's first event read
        listed = await served.call("GET", ALPHA)
        with anyio.fail_after(5):
            event = msgspec.json.decode(await watch.content.readline())

    # then the list and the event are v1alpha1, with the v1alpha1 shape
    assert (listed[1]["apiVersion"], listed[1]["kind"]) == (
        "nvidia.com/v1alpha1",
        "DynamoGraphDeploymentList",
    )
    (item,) = listed[1]["items"]
    assert item["apiVersion"] == "nvidia.com/v1alpha1" and set(item["spec"]["services"]) == {
        "Frontend",
        "VllmDecodeWorker",
    }
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "nvidia.com/v1alpha1"
    assert "services" in event["object"]["spec"] and "components" not in event["object"]["spec"]


async def test_patches_at_v1alpha1_apply_to_the_v1alpha1_object(served: Served) -> None:
    # given the fixture created at v1alpha1
    await served.call("POST", ALPHA, agg())

    # when the frontend's replicas are merge-patched, then JSON-patched, at v1alpha1
    merged = await served.call(
        "PATCH",
        f"{ALPHA}/vllm-agg",
        {"spec": {"services": {"Frontend": {"replicas": 2}}}},
        "application/merge-patch+json",
    )
    patched = await served.call(
        "PATCH",
        f"{ALPHA}/vllm-agg",
        [{"op": "replace", "path": "/spec/services/VllmDecodeWorker/replicas", "value": 3}],
        "application/json-patch+json",
    )
    stored = await served.cluster.get(DGD.as_raw().key(NS, "vllm-agg"))

    # then each answer is v1alpha1 with the change, and the stored v1beta1 components have both
    assert merged[0] == 200 and merged[1]["spec"]["services"]["Frontend"]["replicas"] == 2
    assert patched[0] == 200 and patched[1]["apiVersion"] == "nvidia.com/v1alpha1"
    assert patched[1]["spec"]["services"]["VllmDecodeWorker"]["replicas"] == 3
    assert [component["replicas"] for component in stored["spec"]["components"]] == [2, 3]
    assert stored["metadata"]["generation"] == 3


async def test_server_side_apply_at_v1alpha1_creates_then_updates(served: Served) -> None:
    # given the fixture, applied server-side at v1alpha1 twice, the second time with more replicas
    applied = agg()
    first = await served.call(
        "PATCH", f"{ALPHA}/vllm-agg", applied, "application/apply-patch+yaml", fieldManager="kubectl"
    )
    applied["spec"]["services"]["Frontend"]["replicas"] = 4
    second = await served.call(
        "PATCH", f"{ALPHA}/vllm-agg", applied, "application/apply-patch+yaml", fieldManager="kubectl"
    )
    stored = await served.cluster.get(DGD.as_raw().key(NS, "vllm-agg"))

    # then the first created it, the second changed it; both answers are v1alpha1
    assert first[0] == 201 and first[1]["apiVersion"] == "nvidia.com/v1alpha1"
    assert second[0] == 200 and second[1]["spec"]["services"]["Frontend"]["replicas"] == 4
    assert stored["spec"]["components"][0]["replicas"] == 4


async def test_strict_field_validation_checks_the_v1alpha1_schema(served: Served) -> None:
    # given the fixture with a field v1alpha1 does not have
    wrong = agg()
    wrong["spec"]["services"]["Frontend"]["replicaz"] = 1

    # when the fixture and the wrong one are created with fieldValidation=Strict
    good = await served.call("POST", ALPHA, agg(), fieldValidation="Strict")
    bad = await served.call("POST", ALPHA, wrong, fieldValidation="Strict")

    # then the v1alpha1 fields are accepted, the unknown one refused
    assert good[0] == 201, good[1]
    assert bad[0] == 400 and 'unknown field "spec.services.Frontend.replicaz"' in bad[1]["message"]


async def test_a_body_the_webhook_cannot_convert_is_refused_as_the_api_server_words_it(
    served: Served,
) -> None:
    # given a v1alpha1 DGD whose componentType is not a string
    broken = agg()
    broken["spec"]["services"]["Frontend"]["componentType"] = 5

    # when it is created at v1alpha1
    status, answer = await served.call("POST", ALPHA, broken)

    # then the conversion webhook's failure is a 500 naming the webhook, and nothing is stored
    assert (status, answer["reason"]) == (500, "InternalError")
    assert "conversion webhook for nvidia.com/v1alpha1, Kind=DynamoGraphDeployment" in answer["message"]
    assert "spec.services[Frontend].componentType" in answer["message"]
    assert (await served.cluster.list(DGD.as_raw(), namespace=NS)).items == []


async def test_discovery_and_openapi_list_v1alpha1_with_v1beta1_preferred(served: Served) -> None:
    # when the nvidia.com group is discovered (both ways) and its v1alpha1 OpenAPI read
    group = await served.call("GET", "/apis/nvidia.com")
    listed = await served.call("GET", "/apis/nvidia.com/v1alpha1")
    async with served.http.get(
        served.url + "/apis",
        headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
    ) as response:
        aggregated = msgspec.json.decode(await response.read())
    root = await served.call("GET", "/openapi/v3")
    document = await served.call("GET", "/openapi/v3/apis/nvidia.com/v1alpha1")

    # then v1beta1 is preferred and v1alpha1 serves the DGD (with status) beside the checkpoint
    assert group[1]["preferredVersion"]["version"] == "v1beta1"
    assert [version["version"] for version in group[1]["versions"]] == ["v1beta1", "v1alpha1"]
    names = {resource["name"] for resource in listed[1]["resources"]}
    assert {"dynamographdeployments", "dynamographdeployments/status", "dynamocheckpoints"} <= names
    nvidia = next(item for item in aggregated["items"] if item["metadata"] == {"name": "nvidia.com"})
    alpha = next(version for version in nvidia["versions"] if version["version"] == "v1alpha1")
    assert "dynamographdeployments" in {resource["resource"] for resource in alpha["resources"]}
    # and the v1alpha1 document has the CRD's v1alpha1 schema
    assert "apis/nvidia.com/v1alpha1" in root[1]["paths"]
    schema = document[1]["components"]["schemas"]["com.nvidia.v1alpha1.DynamoGraphDeployment"]
    assert "services" in schema["properties"]["spec"]["properties"]


async def test_without_a_conversion_webhook_only_the_stored_version_is_served() -> None:
    # given a facade with no conversion webhook
    _, plain = await facade(None)
    async with serve(plain) as url, aiohttp.ClientSession() as http:
        # when a v1alpha1 DGD is read and nvidia.com/v1alpha1 discovered
        async with http.get(url + f"{ALPHA}/vllm-agg") as response:
            read = response.status
        async with http.get(url + "/apis/nvidia.com/v1alpha1") as response:
            listed = msgspec.json.decode(await response.read())

    # then v1alpha1 DGDs are not served (the checkpoint, stored at v1alpha1, is)
    assert read == 404
    assert "dynamographdeployments" not in {resource["name"] for resource in listed["resources"]}
    assert "dynamocheckpoints" in {resource["name"] for resource in listed["resources"]}
