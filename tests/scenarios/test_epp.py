"""``dgd-operator sim apply`` of the upstream EPP manifests (Gateway API inference extension): the graphs
become successful on both pathways, their endpoint picker's pod ready, its pool and ConfigMap made."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dgd.cli import main
from tests.upstream import DYNAMO

GAIE_AGG = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "gaie" / "agg.yaml"
RECIPE = DYNAMO / "recipes" / "qwen3-0.6b" / "vllm" / "agg" / "gaie"


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
