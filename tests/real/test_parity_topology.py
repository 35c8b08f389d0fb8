"""KV-transfer policy, admission's binding lookup and the frontend's Istio VirtualService on a real
control plane (issue 20): with the real ClusterTopologyBinding and Istio CRDs applied, a Grove DGD whose
``kvTransferPolicy.clusterTopologyName`` names a binding is admitted by the operator's webhook only
once the binding exists, reaches ``successful`` (the simulated Grove running its PodCliqueSet), and the
VirtualService the operator writes for its frontend is accepted by the real API server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from dgd.cluster.errors import NotFound
from dgd.cluster.resources import (
    CLUSTER_TOPOLOGY_BINDING,
    PCS,
    VALIDATING_WEBHOOK_CONFIGURATION,
    VIRTUAL_SERVICE,
)
from tests.e2e.eventually import eventually
from tests.e2e.operators import Operators
from tests.real.harness import CONFIG, EXAMPLES, RealCluster, manifest, run_flags, world, written_config
from tests.real.test_admission import CONFIGURATIONS, _apply, _unregister

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600), pytest.mark.usefixtures("cluster_rbac")]

GATEWAY = "istio-system/dynamo-gateway"


@asynccontextmanager
async def admitting(real: RealCluster, daemons: Operators, tmp_path: Path) -> AsyncIterator[None]:
    """The world, and a daemon with a virtual-service gateway in its config, serving and registering
    its webhooks by URL; the registrations are removed afterwards (they are cluster-wide)."""
    config = written_config(tmp_path, CONFIG + f"ingress:\n  virtualServiceGateway: {GATEWAY}\n")
    flags = ("--webhook-addr", "127.0.0.1:0", "--webhook-register", "url",
             "--webhook-secret", f"{real.namespace}/webhook-certs")  # fmt: skip
    try:
        async with world(real, tmp_path):
            await daemons.start("parity", flags=run_flags(config, *flags))

            async def ready() -> bool:
                try:
                    hooks = await real.kube.get(
                        VALIDATING_WEBHOOK_CONFIGURATION.key(None, CONFIGURATIONS[1][1])
                    )
                except NotFound:
                    return False
                return all(h["clientConfig"].get("caBundle") for h in hooks["webhooks"])

            await eventually(ready, timeout=60, what="the webhooks registered")
            yield
    finally:
        await _unregister(real)


def binding(name: str) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_TOPOLOGY_BINDING.api_version,
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": name},
        "spec": {
            "levels": [
                {"domain": "zone", "key": "topology.kubernetes.io/zone"},
                {"domain": "rack", "key": "example.com/rack"},
            ]
        },
    }


async def test_a_kv_policy_is_admitted_once_its_binding_exists_and_its_frontend_gets_a_virtual_service(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    # given the aggregated example on Grove with a KV-transfer policy naming a binding of this test
    topology = f"{real.namespace}-topology"
    dgd = manifest(EXAMPLES / "vllm" / "deploy" / "agg.yaml", name="kv-agg")
    dgd["spec"]["experimental"] = {"kvTransferPolicy": {"clusterTopologyName": topology, "domain": "rack"}}
    try:
        async with admitting(real, daemons, tmp_path):
            # when it is applied before the binding exists, then our webhook refuses it, naming the field
            code, said = _apply(real, dgd)
            assert code != 0
            assert "spec.experimental.kvTransferPolicy.clusterTopologyName" in said
            assert "references a ClusterTopologyBinding resource that was not found" in said

            # when the binding is created (the real CRD validates it) and the DGD applied again
            await real.kube.create(CLUSTER_TOPOLOGY_BINDING, binding(topology))
            code, said = _apply(real, dgd)

            # then it is admitted and reaches successful
            assert code == 0, said
            await real.settle("kv-agg", timeout=180)

            # and its worker clique names the binding and projects each of its levels
            pcs = await real.kube.get(PCS.as_raw().key(real.namespace, "kv-agg"))
            worker = next(c for c in pcs["spec"]["template"]["cliques"] if c["name"] == "vllmdecodeworker")
            assert worker["annotations"]["nvidia.com/topology-cluster-topology-name"] == topology
            volume = next(v for v in worker["spec"]["podSpec"]["volumes"] if v["name"] == "topology-labels")
            assert [item["path"] for item in volume["downwardAPI"]["items"]] == ["zone", "rack"]

            # and the real API server holds the frontend's VirtualService as the operator wrote it
            service = await real.kube.get(VIRTUAL_SERVICE.key(real.namespace, "kv-agg-frontend"))
            assert service["spec"]["gateways"] == [GATEWAY]
            assert service["spec"]["hosts"] == ["kv-agg.local"]
            route = service["spec"]["http"][0]["route"][0]["destination"]
            assert route == {"host": "kv-agg-frontend", "port": {"number": 8000}}
            owner = service["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"], owner.get("controller")) == (
                "DynamoGraphDeployment",
                "kv-agg",
                True,
            )
    finally:
        with suppress(NotFound):
            await real.kube.delete(CLUSTER_TOPOLOGY_BINDING.key(None, topology))
