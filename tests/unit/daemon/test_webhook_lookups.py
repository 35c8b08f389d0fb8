"""DGD validation over HTTPS with the live lookups (supplement §4.4 items 7, 12.4, 13): the
ClusterTopologyBinding read through the cluster, the InferencePool API through discovery, and a lookup
that fails or hangs refusing with its reason."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CLUSTER_TOPOLOGY_BINDING
from dgd.daemon import certificates, lookups
from dgd.daemon.lookups import Discover
from dgd.daemon.servers import Server
from dgd.daemon.webhooks import TLS, webhook_app
from dgd.domain.admission.lookups import BindingRead
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.messages.admission import AdmissionRequest
from tests.unit.daemon.test_webhooks import NOW, VALIDATE, post, review

pytestmark = pytest.mark.anyio

IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
BINDING = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "ClusterTopologyBinding",
    "metadata": {"name": "gb200"},
    "spec": {
        "levels": [{"domain": "zone", "key": "topology.kubernetes.io/zone"}, {"domain": "rack", "key": "r"}]
    },
}


@pytest.fixture(scope="module")
def issued() -> certificates.Certificates:
    return certificates.issue(["localhost"], ["127.0.0.1"], now=NOW)


@asynccontextmanager
async def serving(
    issued: certificates.Certificates, cluster: MemoryCluster, discover: Discover | None
) -> AsyncIterator[str]:
    tls = TLS()
    tls.load(issued.cert, issued.key)
    app = webhook_app(AdmissionSettings(), converter=None, cluster=cluster, discover=discover)
    server = await Server.start(app, "127.0.0.1", 0, tls=tls.context)
    try:
        yield f"https://127.0.0.1:{server.port}{VALIDATE}"
    finally:
        await server.stop()
        tls.close()


def dgd(*, policy: dict[str, Any] | None = None, epp: bool = False) -> dict[str, Any]:
    main = {"name": "main", "image": IMAGE}
    components: list[dict[str, Any]] = [
        {"name": "decode", "type": "decode", "podTemplate": {"spec": {"containers": [main]}}}
    ]
    if epp:
        components.append(
            {
                "name": "epp",
                "type": "epp",
                "eppConfig": {"configMapRef": {"name": "c", "key": "k"}},
                "podTemplate": {"spec": {"containers": [{"name": "main", "image": "epp:1.4.0"}]}},
            }
        )
    spec: dict[str, Any] = {"backendFramework": "vllm", "components": components}
    if policy is not None:
        spec["experimental"] = {"kvTransferPolicy": policy}
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {
            "name": "graph",
            "namespace": "team-a",
            "annotations": {"nvidia.com/workload-provider": "grove"},
        },
        "spec": spec,
    }


async def answer(url: str, issued: certificates.Certificates, obj: dict[str, Any]) -> dict[str, Any]:
    status, body = await post(url, issued.ca_cert, msgspec.json.encode(review(obj)))
    assert status == 200
    response: dict[str, Any] = body["response"]
    return response


async def served(*groups: str) -> Discover:
    async def discover() -> Sequence[str]:
        return groups

    return discover


async def test_a_kv_policy_is_admitted_only_while_its_binding_exists(
    issued: certificates.Certificates,
) -> None:
    # given a cluster without, then with, the binding the policy names
    cluster = MemoryCluster(namespaces=["team-a"])
    document = dgd(policy={"clusterTopologyName": "gb200", "domain": "rack"})
    async with serving(issued, cluster, None) as url:
        # when the create is validated before the binding exists
        refused = await answer(url, issued, document)
        await cluster.create(CLUSTER_TOPOLOGY_BINDING, BINDING)
        # and after
        allowed = await answer(url, issued, document)

    # then the first is refused naming the field, the second admitted
    assert refused["allowed"] is False
    assert (
        'spec.experimental.kvTransferPolicy.clusterTopologyName: "gb200" references a ClusterTopologyBinding '
        "resource that was not found" in refused["status"]["message"]
    )
    assert allowed["allowed"] is True


async def test_an_epp_dgd_is_refused_when_discovery_lacks_the_inference_pool_group(
    issued: certificates.Certificates,
) -> None:
    cluster = MemoryCluster(namespaces=["team-a"])
    async with serving(issued, cluster, await served("v1", "apps/v1")) as url:
        refused = await answer(url, issued, dgd(epp=True))
    async with serving(issued, cluster, await served("v1", "inference.networking.k8s.io/v1")) as url:
        allowed = await answer(url, issued, dgd(epp=True))
    assert refused["allowed"] is False
    assert (
        "InferencePool API group (inference.networking.k8s.io) is not available"
        in refused["status"]["message"]
    )
    assert allowed["allowed"] is True


async def test_a_lookup_that_does_not_answer_refuses_with_the_reason(
    issued: certificates.Certificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given discovery that never answers, and a lookup deadline of 10 ms
    monkeypatch.setattr(lookups, "LOOKUP_TIMEOUT", 0.01)

    async def hangs() -> Sequence[str]:
        await anyio.sleep_forever()
        return ()

    # when an EPP DGD is validated
    async with serving(issued, MemoryCluster(namespaces=["team-a"]), hangs) as url:
        refused = await answer(url, issued, dgd(epp=True))

    # then it is refused, saying the check could not be made
    assert refused["allowed"] is False
    assert "failed to check whether the InferencePool API group" in refused["status"]["message"]
    assert "did not answer within 0.01s" in refused["status"]["message"]


async def test_updates_are_looked_up_as_creates_are_and_deletes_not_at_all() -> None:
    # given a DGD naming a binding that does not exist, under UPDATE and DELETE requests
    document = dgd(policy={"clusterTopologyName": "gb200", "domain": "rack"})
    cluster = MemoryCluster(namespaces=["team-a"])
    update = msgspec.convert(review(document, operation="UPDATE")["request"], AdmissionRequest)
    delete = msgspec.convert(review(document, operation="DELETE")["request"], AdmissionRequest)

    # when the lookups are made for each
    updated = await lookups.look_up(cluster, None, update)
    deleted = await lookups.look_up(cluster, None, delete)

    # then the update reads the binding (not found), the delete reads nothing
    assert updated is not None and updated.bindings == {"gb200": BindingRead()}
    assert deleted is None
