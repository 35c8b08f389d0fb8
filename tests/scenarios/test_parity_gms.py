"""``dgd-operator sim apply`` of GPU memory service and failover graphs (issue 20): upstream's agg_failover
example in both versions and on both pathways, and the inter-pod layouts on Grove. The simulated cluster
serves DRA (``resource.k8s.io/v1``) with NVIDIA's ``gpu.nvidia.com`` DeviceClass, as a GPU cluster with
NVIDIA's DRA driver does."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dgd.cli import main
from tests.upstream import DYNAMO, load_documents

EXAMPLES = DYNAMO / "examples" / "backends" / "vllm" / "deploy"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parity" / "gms"


@pytest.mark.parametrize(
    ("path", "pathway", "child"),
    [
        ("agg_failover.yaml", "grove", "PodCliqueSet default/vllm-agg-failover"),
        ("v1beta1/agg_failover.yaml", "grove", "PodCliqueSet default/vllm-agg-failover"),
        (
            "v1beta1/agg_failover.yaml",
            "component",
            "DynamoComponentDeployment default/vllm-agg-failover-frontend",
        ),
    ],
)
def test_agg_failover_reaches_successful(
    path: str, pathway: str, child: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given upstream's failover example (v1alpha1 or v1beta1), on Grove or opting out of it
    (document,) = load_documents(EXAMPLES / path)
    if pathway == "component":
        document["metadata"]["annotations"]["nvidia.com/enable-grove"] = "false"
    manifest = tmp_path / "agg_failover.yaml"
    manifest.write_text(yaml.safe_dump(document), encoding="utf-8")

    # when it is applied until ready
    code = main(["sim", "apply", str(manifest), "--until-ready"])

    # then it is successful, its worker's claim template made before the pathway's first child
    out = capsys.readouterr().out
    assert code == 0
    assert "default/vllm-agg-failover  successful" in out
    template = out.index("Created ResourceClaimTemplate default/vllm-agg-failover-vllmworker-gpu")
    assert template < out.index(f"Created {child}")


@pytest.mark.parametrize("graph", ["inter_pod_failover", "inter_pod_multinode"])
def test_inter_pod_gms_graphs_reach_successful_on_grove(
    graph: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # given our inter-pod GMS failover graphs (single node; 2 nodes): weight-server and engine cliques in
    # one scaling group; when each is applied until ready
    code = main(["sim", "apply", str(FIXTURES / f"{graph}.dgd.yaml"), "--until-ready"])

    # then it is successful: the simulated Grove made the scaling group's cliques (weight servers and
    # engines) and their pods, and reports the group available
    out = capsys.readouterr().out
    assert code == 0
    name = "interpod" if graph == "inter_pod_failover" else "interpod-mn"
    assert f"default/{name}  successful" in out
    assert "componentKind: PodCliqueScalingGroup" in out
    assert "availableReplicas: 1" in out


@pytest.mark.parametrize("pathway", ["grove", "component"])
def test_the_xpu_example_with_its_own_dra_claims_reaches_successful(
    pathway: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given upstream's XPU example: its ResourceClaimTemplate (Intel's gpu.intel.com class) and a v1alpha1
    # DGD whose worker claims GPUs through it (extraPodSpec.resourceClaims), no GPU memory service
    template, document = load_documents(EXAMPLES / "xpu" / "agg_router_kv_approx_xpu_dra.yaml")
    assert template["kind"] == "ResourceClaimTemplate"
    if pathway == "component":
        document["metadata"].setdefault("annotations", {})["nvidia.com/enable-grove"] = "false"
    manifest = tmp_path / "xpu.yaml"
    manifest.write_text(yaml.safe_dump_all([template, document]), encoding="utf-8")

    # when both are applied until ready
    code = main(["sim", "apply", str(manifest), "--until-ready"])

    # then the graph is successful, and no claim template of the operator's was made for it
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"default/{document['metadata']['name']}  successful" in out
    assert "Created ResourceClaimTemplate" not in out
