"""The simulated cluster's DGD validation with the live lookups: the InferencePool API as the world
serves it (supplement §4.4 item 7), the ClusterTopologyBinding read from the store (items 12.4, 13)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dgd.cluster.errors import Invalid
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CLUSTER_TOPOLOGY_BINDING, DGD
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.sim.admission import webhook_chain
from tests.unit.manifests import EPP_CONFIG_MAP_REF

pytestmark = pytest.mark.anyio

IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
SETTINGS = AdmissionSettings()


def _dgd(**spec: Any) -> dict[str, Any]:
    main = {"name": "main", "image": IMAGE}
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph", "namespace": "team-a"},
        "spec": {
            "backendFramework": "vllm",
            "components": [
                {"name": "decode", "type": "decode", "podTemplate": {"spec": {"containers": [main]}}}
            ],
            **spec,
        },
    }


async def test_an_epp_dgd_is_refused_unless_the_world_serves_the_inference_pool_group() -> None:
    # given an EPP DGD, and two clusters with the webhooks: one serving inference.networking.k8s.io
    document = _dgd()
    document["spec"]["components"].append(copy.deepcopy(EPP_CONFIG_MAP_REF))
    bare = MemoryCluster(namespaces=["team-a"], admission=webhook_chain(SETTINGS, served_groups=("v1",)))
    groups = ("v1", "inference.networking.k8s.io/v1")
    serving = MemoryCluster(namespaces=["team-a"], admission=webhook_chain(SETTINGS, served_groups=groups))

    # when it is created in each
    with pytest.raises(Invalid) as refused:
        await bare.create(DGD, document)
    await serving.create(DGD, document)

    # then only the cluster without the API refuses it, at the EPP component's type
    assert "spec.components[1].type: cannot deploy EPP component" in str(refused.value)


async def test_a_topology_constraint_is_checked_against_the_stored_binding() -> None:
    # given a cluster holding binding "gb200" with levels zone, rack
    cluster = MemoryCluster(namespaces=["team-a"], admission=webhook_chain(SETTINGS))
    binding = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": "gb200"},
        "spec": {"levels": [{"domain": "zone", "key": "z"}, {"domain": "rack", "key": "r"}]},
    }
    await cluster.create(CLUSTER_TOPOLOGY_BINDING, binding)

    # when a DGD packs into a level the binding lacks
    with pytest.raises(Invalid) as refused:
        await cluster.create(
            DGD, _dgd(topologyConstraint={"clusterTopologyName": "gb200", "packDomain": "host"})
        )

    # then the create is refused listing the binding's levels; a level it has is admitted
    assert (
        'spec.topologyConstraint.packDomain: "host" does not exist in ClusterTopologyBinding "gb200"; '
        "available domains: [rack zone]" in str(refused.value)
    )
    await cluster.create(DGD, _dgd(topologyConstraint={"clusterTopologyName": "gb200", "packDomain": "rack"}))
