"""``dgd-operator render``: every upstream DGD renders or is refused with a clear error, never a traceback."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from dgd.cli import main
from tests.unit.manifests import FRONTEND_DGD as DGD
from tests.upstream import UPSTREAM, dgd_files

UPSTREAM_DGDS = dgd_files()
#: Upstream DGDs this operator refuses by design, and the reason it prints.
REFUSED = {
    "snapshot-restore.yaml": "checkpoint functionality is disabled in the operator configuration",
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["render", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write(tmp_path: Path, text: str, name: str = "dgd.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _render_with_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str
) -> tuple[int, str, str]:
    """Render ``DGD`` with an operator configuration file holding ``config``."""
    return _run(capsys, _write(tmp_path, DGD), "--config", _write(tmp_path, config, "config.yaml"))


@pytest.mark.parametrize("path", UPSTREAM_DGDS, ids=[str(p.relative_to(UPSTREAM)) for p in UPSTREAM_DGDS])
def test_every_upstream_dgd_renders_or_is_refused_with_its_reason(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given an upstream DGD manifest, when it is rendered
    code, out, err = _run(capsys, str(path), "--namespace", "demo")

    # then it prints Kubernetes objects, or, for a feature we refuse by design, says why and prints nothing
    assert "Traceback" not in err
    refused = REFUSED.get(path.name) or REFUSED.get(f"{path.name}@{path.parent.name}")
    if refused is not None:
        assert (code, out) == (1, "")
        assert refused in err
        return
    assert code == 0, err
    documents = list(yaml.safe_load_all(out))
    assert documents
    assert all(doc["metadata"]["namespace"] == "demo" for doc in documents)
    assert {doc["kind"] for doc in documents} <= {
        "PodCliqueSet",
        "DynamoComponentDeployment",
        "Service",
        "Ingress",
        "ConfigMap",
        "InferencePool",
    }


def test_grove_render_prints_the_pod_clique_set_then_its_services(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a DGD without an opt-out
    code, out, _ = _run(capsys, _write(tmp_path, DGD))

    # then the PodCliqueSet comes first, then the frontend Service, in the default namespace
    documents = list(yaml.safe_load_all(out))
    assert code == 0
    assert [(d["kind"], d["metadata"]["name"]) for d in documents] == [
        ("PodCliqueSet", "demo"),
        ("Service", "demo-frontend"),
    ]
    assert list(documents[0])[:4] == ["apiVersion", "kind", "metadata", "spec"]


def test_pathway_flag_forces_component_deployments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, _write(tmp_path, DGD), "--pathway", "component")
    assert code == 0
    assert [d["kind"] for d in yaml.safe_load_all(out)] == ["DynamoComponentDeployment"]


def test_config_disabling_grove_selects_the_component_pathway(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _render_with_config(tmp_path, capsys, "orchestrators: {grove: {enabled: false}}\n")
    assert code == 0
    assert [d["kind"] for d in yaml.safe_load_all(out)] == ["DynamoComponentDeployment"]


def test_standard_input_is_read_with_a_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(DGD))
    code, out, _ = _run(capsys, "-")
    assert code == 0
    assert "kind: PodCliqueSet" in out


def test_rendering_twice_prints_the_same_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, DGD)
    assert _run(capsys, path)[1] == _run(capsys, path)[1]


EPP_WITH_ITS_OWN_CONFIG_MAP = (
    "    - name: epp\n      type: epp\n      eppConfig: {configMapRef: {name: c, key: k}}\n"
    "      podTemplate: {spec: {containers: [{name: main, image: 'epp:1.4.0'}]}}\n"
)


def test_an_endpoint_picker_renders_its_pool_after_the_pathway_objects_and_no_config_map_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a DGD whose endpoint picker reads a ConfigMap of the user's
    code, out, err = _run(capsys, _write(tmp_path, DGD + EPP_WITH_ITS_OWN_CONFIG_MAP))

    # then the pathway's objects come first, then the InferencePool, and no ConfigMap is rendered
    # (dgd-domain §7 step 6: none is created when eppConfig.configMapRef is used)
    assert code == 0, err
    kinds = [d["kind"] for d in yaml.safe_load_all(out)]
    assert kinds[0] == "PodCliqueSet"
    assert kinds[-1] == "InferencePool"
    assert "ConfigMap" not in kinds


#: The features refused by name until issue 20, each in a small DGD, with the field that used to be named.
FORMERLY_REFUSED = {
    "gms": (
        "    - name: w\n      type: worker\n      experimental: {gpuMemoryService: {mode: IntraPod}}\n"
        "      podTemplate: {spec: {containers: [{name: main, image: 'w:1.4.0',\n"
        "        resources: {limits: {nvidia.com/gpu: 1}}}]}}\n",
        "name: gms-server",
    ),
    "epp": (
        "    - name: epp\n      type: epp\n      eppConfig: {configMapRef: {name: c, key: k}}\n"
        "      podTemplate: {spec: {containers: [{name: main, image: 'epp:1.4.0'}]}}\n",
        "InferencePool",
    ),
    "kv-transfer-policy": (
        "    - name: w\n      type: worker\n"
        "      podTemplate: {spec: {containers: [{name: main, image: 'w:1.4.0'}]}}\n"
        "  experimental: {kvTransferPolicy: {domain: rack, labelKey: topology.kubernetes.io/rack}}\n",
        "DYN_KV_TRANSFER_DOMAIN",
    ),
}


@pytest.mark.parametrize("feature", FORMERLY_REFUSED)
def test_the_features_once_refused_by_name_render(
    feature: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a DGD using a feature that was refused as "not supported yet" before issue 20
    extra, rendered = FORMERLY_REFUSED[feature]

    # when it is rendered
    code, out, err = _run(capsys, _write(tmp_path, DGD + extra))

    # then it renders, and what it renders shows the feature
    assert code == 0, err
    assert "is not supported yet" not in err
    assert rendered in out
    assert "Traceback" not in err


def test_istio_virtual_service_from_config_is_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a virtual-service gateway in the operator config (dgd-domain §9.5 item 4)
    code, out, err = _render_with_config(
        tmp_path, capsys, "ingress: {virtualServiceGateway: istio-system/gw}\n"
    )

    # then the frontend's VirtualService is printed, routing through that gateway
    assert code == 0, err
    services = [d for d in yaml.safe_load_all(out) if d["kind"] == "VirtualService"]
    assert [s["spec"]["gateways"] for s in services] == [["istio-system/gw"]]


def test_invalid_dgd_is_reported_at_its_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, _write(tmp_path, DGD.replace("type: frontend", "type: frontdoor")))
    assert (code, out) == (1, "")
    assert "DynamoGraphDeployment demo: error: spec.components[0].type" in err


def test_namespace_flag_must_agree_with_the_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = DGD.replace("  name: demo\n", "  name: demo\n  namespace: team-a\n")
    code, _, err = _run(capsys, _write(tmp_path, text), "-n", "team-b")
    assert code == 1
    assert 'metadata.namespace: "team-a" does not match the namespace "team-b"' in err


@pytest.mark.parametrize(
    ("config", "code", "message"),
    [
        # read, but a value is wrong: invalid input
        ("orchestrators: {grove: {terminationDelay: soon}}", 1, "terminationDelay"),
        # not YAML: a file that cannot be read as a configuration, as in every command
        ("a: [", 2, "not valid YAML"),
    ],
)
def test_bad_config_file_is_refused_naming_the_problem(
    config: str, code: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code, _, err = _render_with_config(tmp_path, capsys, config)
    assert exit_code == code
    assert message in err


def test_missing_file_and_missing_argument_are_usage_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _run(capsys, "/nonexistent/dgd.yaml")[0] == 2
    with pytest.raises(SystemExit) as exited:
        main(["render"])
    assert exited.value.code == 2


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("env: x", 'podTemplate.spec.containers[0].env: "x" is not a list'),
        ("args: [1]", "podTemplate.spec.containers[0].args[0]: 1 is not a string"),
        (
            "volumeMounts: [{name: 3}]",
            "podTemplate.spec.containers[0].volumeMounts[0].name: 3 is not a string",
        ),
        ("resources: [1]", "podTemplate.spec.containers[0].resources: [1] is not an object"),
    ],
)
def test_wrongly_typed_pod_template_fields_are_errors_not_crashes(
    field: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a main container with a field of the wrong JSON type
    text = DGD.replace("              image: nvcr.io", f"              {field}\n              image: nvcr.io")

    # when rendered
    code, _, err = _run(capsys, _write(tmp_path, text))

    # then the field is named, and there is no traceback
    assert code == 1
    assert f"spec.components[0].{message}" in err
    assert "Traceback" not in err
