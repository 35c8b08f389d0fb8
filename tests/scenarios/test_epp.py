"""The endpoint picker on the simulated cluster: ``dgd-operator sim apply`` of the upstream EPP manifests
(Gateway API inference extension) makes the graphs successful on both pathways, their endpoint
picker's pod ready, its pool and ConfigMap made; and a failing EPP step keeps what the checkpoint
step before it observed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dgd.cli import main
from dgd.cluster.errors import ServerError
from dgd.cluster.resources import INFERENCE_POOL, PVC
from dgd.domain.admission.config import load_config
from dgd.sim import WorldSettings
from tests.scenarios.graphs import SNAPSHOT, model_cache
from tests.scenarios.grove.stage import NS, on_stage, upstream
from tests.unit.manifests import EPP_INLINE
from tests.upstream import DYNAMO

GAIE_AGG = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "gaie" / "agg.yaml"
RECIPE = DYNAMO / "recipes" / "qwen3-0.6b" / "vllm" / "agg" / "gaie"
CHECKPOINTS = load_config("checkpoint:\n  enabled: true\n")
#: An endpoint picker with an inline configuration, as the gaie example has one.
EPP = EPP_INLINE


def on_the_component_pathway(path: Path, tmp_path: Path) -> str:
    """The manifest opted out of Grove (``nvidia.com/enable-grove: "false"``), written to a file."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["metadata"].setdefault("annotations", {})["nvidia.com/enable-grove"] = "false"
    out = tmp_path / path.name
    out.write_text(yaml.safe_dump(document), encoding="utf-8")
    return str(out)


@pytest.mark.parametrize("pathway", ["grove", "component"])
def test_the_gaie_example_becomes_successful_with_its_pool_and_config_map(
    pathway: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given the v1beta1 gaie example on a pathway
    manifest = str(GAIE_AGG) if pathway == "grove" else on_the_component_pathway(GAIE_AGG, tmp_path)

    # when it is applied until ready
    code = main(["sim", "apply", manifest, "--until-ready"])

    # then it is successful, both components ready, and the EPP's objects were made
    out = capsys.readouterr().out
    assert code == 0
    assert "default/qwen  successful  all_resources_are_ready  2/2" in out
    assert "Normal   CreateConfigMap: Created ConfigMap default/qwen-epp-config" in out
    assert "Normal   CreateInferencePool: Created InferencePool default/qwen-pool" in out
    assert "Normal   CreateRoleBinding: Created RoleBinding default/epp-serviceaccount-binding" in out


def test_the_gaie_recipe_becomes_successful_once_its_model_cache_claim_is_applied_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given the v1alpha1 recipe, whose graph needs the claim model-cache (create: false)
    files = [str(RECIPE / "model-cache.yaml"), str(RECIPE / "deploy.yaml")]

    # when the claim and then the graph are applied until ready
    code = main(["sim", "apply", *files, "--until-ready"])

    # then the graph is successful with its two decode workers and its endpoint picker ready
    out = capsys.readouterr().out
    assert code == 0
    assert "default/qwen3-0-6b-agg  successful  all_resources_are_ready  2/2" in out
    assert "Created InferencePool default/qwen3-0-6b-agg-pool" in out


def test_the_gaie_recipe_alone_fails_naming_its_missing_claim(capsys: pytest.CaptureFixture[str]) -> None:
    # when the recipe's graph is applied without its claim
    code = main(["sim", "apply", str(RECIPE / "deploy.yaml"), "--until-ready"])

    # then it fails, naming the claim
    assert code == 1
    assert 'PersistentVolumeClaim "model-cache" does not exist and create is not enabled for it' in (
        capsys.readouterr().err
    )


@pytest.mark.anyio
@pytest.mark.parametrize("pathway", ["grove", "component"])
async def test_a_failing_epp_step_keeps_the_checkpoint_statuses_it_follows(pathway: str) -> None:
    async with on_stage(WorldSettings(checkpoint_delay=120.0), config=CHECKPOINTS) as stage:
        # given the snapshot/restore example with an endpoint picker added, and its claim
        await stage.user.create(PVC.as_raw(), model_cache(NS))
        document = upstream(SNAPSHOT)
        if pathway == "grove":
            document["metadata"]["annotations"] = {}
        document["spec"]["components"].append(EPP)
        # and an API server that refuses every InferencePool
        stage.sim.cluster.faults.fail(
            ServerError("etcd is unavailable"), verb="create", resource=INFERENCE_POOL
        )

        # when it is applied and reconciled
        name = await stage.apply(document)
        await stage.sim.run_for(30)

        # then it failed at the EPP step (dgd-domain §7 row 6) with the worker's checkpoint status,
        # resolved at step 5, published all the same
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.conditions is not None
        ready = dgd.status.conditions[0]
        assert (dgd.status.state, ready.reason) == ("failed", "failed_to_reconcile_the_resources")
        assert (ready.message or "").startswith("failed to reconcile EPP resources: ")
        assert dgd.status.checkpoints is not None
        assert dgd.status.checkpoints["TRTLLMWorker"].checkpoint_name is not None
