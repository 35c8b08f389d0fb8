"""The endpoint picker on a real control plane: both upstream EPP manifests reach ``successful``, and
their ConfigMap, InferencePool and (with the Istio mesh on) DestinationRule are accepted by the real
API server's schemas — the Gateway API inference extension's InferencePool CRD and Istio's CRDs that
the tier applies — as the operator renders them.

``dgd-operator run`` and ``dgd-operator sim world`` run against the run's kube-apiserver, with the
chart's cluster-wide RBAC applied (it holds the EPP ClusterRole the operator binds per namespace).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dgd.cluster.resources import CONFIG_MAP, DESTINATION_RULE, INFERENCE_POOL, PVC, ROLE_BINDING
from dgd.domain.admission.config import load_config
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.domain.render.offline import prepare, render
from dgd.domain.sync import covers
from tests.e2e.operators import Operators
from tests.real.harness import RealCluster, manifest, run_flags, world, written_config
from tests.upstream import DYNAMO

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600), pytest.mark.usefixtures("cluster_rbac")]

GAIE_AGG = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "gaie" / "agg.yaml"
RECIPE = DYNAMO / "recipes" / "qwen3-0.6b" / "vllm" / "agg" / "gaie"
#: The tier's configuration, with the Istio mesh on (the tier serves Istio's DestinationRule API).
MESH = "checkpoint:\n  enabled: true\nserviceMesh:\n  provider: istio\n  istio: {}\n"


def _graphs(component: bool) -> list[dict[str, Any]]:
    """The v1beta1 gaie example and the v1alpha1 recipe (converted, as the conversion webhook would),
    on the Grove or the Component pathway."""
    suffix = "c" if component else "g"
    example = manifest(GAIE_AGG, name=f"qwen-{suffix}", component=component)
    recipe = dgd_to_v1beta1(yaml.safe_load((RECIPE / "deploy.yaml").read_text(encoding="utf-8")))
    recipe["metadata"]["name"] = f"qwen3-recipe-{suffix}"
    if component:
        recipe["metadata"]["annotations"] = {
            **(recipe["metadata"].get("annotations") or {}),
            "nvidia.com/enable-grove": "false",
        }
    return [example, recipe]


def _expected(real: RealCluster, document: dict[str, Any], config_text: str) -> dict[str, dict[str, Any]]:
    """The EPP objects ``render`` prints for the graph in the test's namespace, by kind."""
    config = load_config(config_text)
    dgd = prepare(document, namespace=real.namespace, config=config)
    epp_kinds = ("ConfigMap", "InferencePool", "DestinationRule")
    return {obj["kind"]: obj for obj in render(dgd, config=config) if obj["kind"] in epp_kinds}


@pytest.mark.parametrize("component", [False, True], ids=["grove", "component"])
async def test_both_upstream_epp_manifests_converge_and_the_api_server_holds_their_epp_objects_as_rendered(
    real: RealCluster, daemons: Operators, tmp_path: Path, component: bool
) -> None:
    # given the daemon (the Istio mesh on) and the simulated world against the real control plane,
    # and the recipe's claim model-cache
    config = written_config(tmp_path, MESH)
    claim = yaml.safe_load((RECIPE / "model-cache.yaml").read_text(encoding="utf-8"))
    await real.create(PVC.as_raw(), claim)
    async with world(real, tmp_path):
        await daemons.start("only", flags=run_flags(config))

        # when both EPP graphs are applied
        graphs = _graphs(component)
        for document in graphs:
            await real.apply(document)

        # then both reach successful
        names = [document["metadata"]["name"] for document in graphs]
        await real.settle(*names, timeout=180)

    # and each graph's ConfigMap, pool and DestinationRule are on the server as rendered (the pool's
    # and the rule's spec with the server's defaults added, nothing of ours changed), owned by it
    for document in graphs:
        name = document["metadata"]["name"]
        uid = (await real.dgd(name))["metadata"]["uid"]
        expected = _expected(real, document, MESH)
        assert set(expected) == {"ConfigMap", "InferencePool", "DestinationRule"}
        for kind, resource in (
            ("ConfigMap", CONFIG_MAP),
            ("InferencePool", INFERENCE_POOL),
            ("DestinationRule", DESTINATION_RULE),
        ):
            want = expected[kind]
            live = await real.kube.get(resource.as_raw().key(real.namespace, want["metadata"]["name"]))
            body = "data" if kind == "ConfigMap" else "spec"
            assert covers(want[body], live[body]), f"{kind} {want['metadata']['name']}: {live[body]}"
            assert (
                want["metadata"].get("labels", {}).items() <= (live["metadata"].get("labels") or {}).items()
            )
            assert [o["uid"] for o in live["metadata"]["ownerReferences"]] == [uid]
        # the ConfigMap's file byte for byte
        live_map = await real.kube.get(CONFIG_MAP.key(real.namespace, f"{name}-epp-config"))
        assert live_map["data"] == expected["ConfigMap"]["data"]

    # and the endpoint picker's identity is bound to the chart's EPP ClusterRole in the namespace
    binding = await real.kube.get(ROLE_BINDING.key(real.namespace, "epp-serviceaccount-binding"))
    assert binding["roleRef"]["name"] == "dynamo-operator-epp"
