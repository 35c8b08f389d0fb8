"""KV-transfer policy rendering (dgd-domain §2.1, podspec §3.1): worker env, topology volume and mount,
and the topology source annotation, on both pathways; fixtures in ``tests/fixtures/parity``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dgd.cli import main
from dgd.domain.render.errors import RenderError
from dgd.domain.render.kv_transfer import float32_text
from dgd.domain.render.offline import prepare, render
from dgd.messages.config import OperatorConfig

FIXTURES = Path(__file__).parents[2] / "fixtures" / "parity"
POLICY_ENV = {
    "DYN_KV_TRANSFER_DOMAIN",
    "DYN_KV_TRANSFER_ENFORCEMENT",
    "DYN_KV_TRANSFER_PREFERRED_WEIGHT",
    "DYN_TOPOLOGY_ENABLED",
    "DYN_TOPOLOGY_MOUNT_PATH",
    "MY_VAR",
}


def _fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
    return loaded


def _render(fixture: dict[str, Any], bindings: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    dgd = prepare(fixture["dgd"], namespace=None, config=OperatorConfig())
    return render(dgd, config=OperatorConfig(), bindings=bindings)


def _main(pod_spec: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod_spec["containers"] if c["name"] == "main")


def _policy_env(container: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in container.get("env") or [] if e["name"] in POLICY_ENV]


def test_grove_workers_get_the_policy_env_volume_and_source_annotation_from_the_binding() -> None:
    # given a Grove DGD whose policy names a ClusterTopologyBinding of three levels
    fixture = _fixture("kv_transfer_grove.yaml")
    binding = fixture["binding"]

    # when it is rendered with that binding
    pcs = _render(fixture, {"gb200": binding})[0]

    # then each worker clique carries the fixture's env, mount, volume and annotation, the others none
    expect = fixture["expect"]
    for clique in pcs["spec"]["template"]["cliques"]:
        pod_spec = clique["spec"]["podSpec"]
        volumes = pod_spec.get("volumes") or []
        mounts = _main(pod_spec).get("volumeMounts") or []
        annotations = clique.get("annotations") or {}
        if clique["name"] in expect["workers"]:
            assert _policy_env(_main(pod_spec)) == expect["env"]
            assert expect["mount"] in mounts
            assert expect["volume"] in volumes
            assert annotations.items() >= expect["annotations"].items()
        else:
            assert _policy_env(_main(pod_spec)) == []
            assert all(v["name"] != "topology-labels" for v in volumes)
            assert not annotations.keys() & expect["annotations"].keys()


def test_component_pathway_worker_dcds_carry_the_label_key_source_on_their_metadata() -> None:
    # given a Component-pathway DGD whose policy reads a node label
    fixture = _fixture("kv_transfer_component.yaml")

    # when it is rendered
    dcds = {d["spec"]["name"]: d for d in _render(fixture)}

    # then the worker DCD has the source annotation and its pod template the env, mount and volume
    expect = fixture["expect"]
    worker = dcds["prefill"]
    template = worker["spec"]["podTemplate"]
    assert worker["metadata"]["annotations"].items() >= expect["annotations"].items()
    assert _policy_env(_main(template["spec"])) == expect["env"]
    assert expect["mount"] in _main(template["spec"])["volumeMounts"]
    assert expect["volume"] in template["spec"]["volumes"]
    # and the frontend DCD has none of it
    frontend = dcds["Frontend"]
    assert not frontend["metadata"]["annotations"].keys() & expect["annotations"].keys()
    assert _policy_env(_main(frontend["spec"]["podTemplate"]["spec"])) == []


def test_a_policy_domain_missing_from_the_binding_is_refused_listing_the_available_ones() -> None:
    # given a binding without the policy's domain "rack"
    fixture = _fixture("kv_transfer_grove.yaml")
    binding = fixture["binding"]
    binding["spec"]["levels"] = [{"domain": "zone", "key": "z"}, {"domain": "host", "key": "h"}]

    # when it is rendered, then the error names the field, the binding and its levels (graph.go message)
    with pytest.raises(RenderError) as raised:
        _render(fixture, {"gb200": binding})
    assert raised.value.path == "spec.experimental.kvTransferPolicy.domain"
    assert raised.value.message == (
        '"rack" does not exist in ClusterTopologyBinding "gb200"; available domains: [zone host]'
    )


def test_rendering_without_the_named_binding_says_how_to_give_it() -> None:
    # given the Grove fixture and no binding at hand, when it is rendered
    with pytest.raises(RenderError) as raised:
        _render(_fixture("kv_transfer_grove.yaml"))

    # then the error names the field and the --cluster-topology flag
    assert raised.value.path == "spec.experimental.kvTransferPolicy.clusterTopologyName"
    assert "--cluster-topology FILE" in raised.value.message


@pytest.mark.parametrize(
    ("weight", "text"), [(0.7, "0.7"), (0.1, "0.1"), (1.0, "1"), (0.0, "0"), (0.333, "0.333"), (0.5, "0.5")]
)
def test_preferred_weight_is_written_as_the_shortest_float32_text(weight: float, text: str) -> None:
    # podspec §3.1: "optional DYN_KV_TRANSFER_PREFERRED_WEIGHT (shortest float32 text)"
    assert float32_text(weight) == text


def test_render_command_reads_the_binding_from_a_cluster_topology_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given the Grove fixture's DGD and its binding in two files
    fixture = _fixture("kv_transfer_grove.yaml")
    dgd_file, binding_file = tmp_path / "dgd.yaml", tmp_path / "binding.yaml"
    dgd_file.write_text(yaml.safe_dump(fixture["dgd"]), encoding="utf-8")
    binding_file.write_text(yaml.safe_dump(fixture["binding"]), encoding="utf-8")

    # when rendered without, then with --cluster-topology
    refused = main(["render", str(dgd_file)])
    refused_err = capsys.readouterr().err
    code = main(["render", str(dgd_file), "--cluster-topology", str(binding_file)])
    out = capsys.readouterr().out

    # then the first fails naming the flag, the second prints the PodCliqueSet with the topology files
    assert refused == 1
    assert "--cluster-topology FILE" in refused_err
    assert code == 0
    assert "nvidia.com/dynamo-topology.rack" in out


def test_render_command_takes_a_binding_given_in_the_manifest_file_and_does_not_print_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given one file with the binding and the DGD
    fixture = _fixture("kv_transfer_grove.yaml")
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump_all([fixture["binding"], fixture["dgd"]]), encoding="utf-8")

    # when it is rendered
    code = main(["render", str(path)])
    captured = capsys.readouterr()

    # then it renders, the binding is neither printed nor reported as skipped
    assert code == 0, captured.err
    kinds = [d["kind"] for d in yaml.safe_load_all(captured.out)]
    assert "ClusterTopologyBinding" not in kinds
    assert "PodCliqueSet" in kinds
    assert "skipped" not in captured.err
