"""The GPU memory service on a real control plane (issue 20): upstream's agg_failover example, in both
versions, reaches ``successful`` with ``sim world`` (which registers NVIDIA's ``gpu.nvidia.com``
DeviceClass, as the GPU DRA driver does), and the real API server (1.36, ``resource.k8s.io/v1`` built in)
accepts the operator's ResourceClaimTemplate and the engine pods that claim from it; and our inter-pod
GMS failover graph reaches ``successful`` with its PodCliqueSet (per-rank claim templates, resource
sharing) accepted under the real Grove CRDs.

The v1alpha1 manifest is converted client-side first, as ``tests/real/test_admission.py`` explains
(``CLIENT_SIDE_ONLY``): a server-side apply of it would drop ``gpuMemoryService``/``failover``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dgd.cluster.resources import DEVICE_CLASS, PCS, POD, RESOURCE_CLAIM_TEMPLATE
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from tests.e2e.eventually import eventually
from tests.e2e.operators import Operators
from tests.real.harness import EXAMPLES, RealCluster, manifest, operated
from tests.upstream import load_documents

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600), pytest.mark.usefixtures("cluster_rbac")]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parity" / "gms"
AGG_FAILOVER = {
    "v1alpha1": EXAMPLES / "vllm" / "deploy" / "agg_failover.yaml",
    "v1beta1": EXAMPLES / "vllm" / "deploy" / "v1beta1" / "agg_failover.yaml",
}


@pytest.mark.parametrize("version", sorted(AGG_FAILOVER))
async def test_agg_failover_reaches_successful_with_its_claim_template_accepted(
    real: RealCluster, daemons: Operators, tmp_path: Path, version: str
) -> None:
    # given the daemon and the simulated world running against the real control plane
    async with operated(real, daemons, tmp_path):
        document = manifest(AGG_FAILOVER[version], name=f"failover-{version}")
        if version == "v1alpha1":
            document = dgd_to_v1beta1(document)

        # when upstream's failover example is applied
        await real.apply(document)

        # then it reaches successful
        await real.settle(f"failover-{version}", timeout=120)
        # and the API server holds the worker's claim template: 2 GPUs of the DeviceClass sim world made
        template = await real.kube.get(
            RESOURCE_CLAIM_TEMPLATE.key(real.namespace, f"failover-{version}-vllmworker-gpu")
        )
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"]["deviceClassName"] == "gpu.nvidia.com"
        assert request["exactly"]["count"] == 2
        assert (await real.kube.get(DEVICE_CLASS.key(None, "gpu.nvidia.com")))["metadata"]["name"]

        # and the worker's pod was admitted with the shared claim, the GMS sidecar and both engines
        async def worker_pods() -> list[dict[str, Any]]:
            listed = (await real.kube.list(POD.as_raw(), namespace=real.namespace)).items
            return [
                p
                for p in listed
                if p["metadata"]["labels"].get("nvidia.com/dynamo-component") == "VllmWorker"
            ]

        async def a_worker_pod() -> bool:
            return bool(await worker_pods())

        await eventually(a_worker_pod, timeout=60, what="the worker pod exists")
        (pod, *_) = await worker_pods()
        spec = pod["spec"]
        assert [c["name"] for c in spec["containers"]] == ["engine-0", "engine-1"]
        assert [c["name"] for c in spec["initContainers"]] == ["gms-server"]
        assert spec["resourceClaims"] == [
            {"name": "intrapod-shared-gpu", "resourceClaimTemplateName": f"failover-{version}-vllmworker-gpu"}
        ]


async def test_inter_pod_gms_failover_reaches_successful_and_grove_accepts_its_layout(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    # given the daemon and the simulated world running against the real control plane (the real Grove
    # CRDs validate the PodCliqueSet)
    async with operated(real, daemons, tmp_path):
        (document,) = load_documents(FIXTURES / "inter_pod_failover.dgd.yaml")

        # when our single-node inter-pod GMS failover graph is applied
        await real.apply(document)

        # then it reaches successful
        await real.settle("interpod", timeout=120)
        # and the API server holds its PodCliqueSet with the rank's claim template and its sharing
        pcs = await real.kube.get(PCS.as_raw().key(real.namespace, "interpod"))
        template = pcs["spec"]["template"]
        assert [t["name"] for t in template["resourceClaimTemplates"]] == ["decode-gpu-rank-0"]
        (group,) = template["podCliqueScalingGroups"]
        assert group["resourceSharing"][0]["filter"]["childCliqueNames"] == ["decode-gms-0", "decode"]
