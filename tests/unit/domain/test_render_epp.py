"""The endpoint picker's objects (dgd-domain §7 step 6, §18; podspec §4.2-§4.3), checked against the two
upstream EPP manifests.

The expectations live in ``tests/fixtures/parity/`` (one file per manifest); each file's header names
where every part comes from. The rest of the module checks the rules the fixtures do not show: a
ConfigMap of the user's, the DestinationRule's TLS modes, the typed EndpointPickerConfig, the pathway
difference of the Istio injection annotation, and the Istio settings and gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from dgd.domain.admission.config import load_config
from dgd.domain.gates import ISTIO_API, GateError, resolve_gates
from dgd.domain.render.epp import (
    endpoint_picker_yaml,
    epp_component,
    epp_objects,
    render_config_map,
    render_destination_rule,
    render_inference_pool,
)
from dgd.domain.render.offline import Pathway, prepare, render
from dgd.messages.component import ComponentSpec
from dgd.messages.config import ConfigError, IstioConfig, OperatorConfig, ServiceMeshConfig
from dgd.messages.dgd import DynamoGraphDeployment
from tests.upstream import DYNAMO

PARITY = Path(__file__).resolve().parents[2] / "fixtures" / "parity"
GAIE_AGG = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "gaie" / "agg.yaml"
GAIE_RECIPE = DYNAMO / "recipes" / "qwen3-0.6b" / "vllm" / "agg" / "gaie" / "deploy.yaml"
CASES = {
    "gaie-agg (v1beta1)": (GAIE_AGG, "gaie-agg.yaml"),
    "qwen3-0.6b gaie recipe (v1alpha1)": (GAIE_RECIPE, "qwen3-0.6b-gaie-recipe.yaml"),
}
#: The mesh the fixtures' DestinationRules are rendered with: the Istio provider and its defaults.
ISTIO = ServiceMeshConfig(provider="istio", istio=IstioConfig())


def _prepared(path: Path, *, pathway: Pathway | None = None) -> tuple[DynamoGraphDeployment, ComponentSpec]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    dgd = prepare(document, namespace="demo", config=OperatorConfig(), pathway=pathway)
    component = epp_component(dgd)
    assert component is not None
    return dgd, component


def _clique_pod_spec(dgd: DynamoGraphDeployment, component: ComponentSpec) -> Any:
    pcs = render(dgd, config=OperatorConfig())[0]
    clique = next(c for c in pcs["spec"]["template"]["cliques"] if c["name"] == component.name.lower())
    return clique["spec"]["podSpec"]


@pytest.mark.parametrize("case", CASES)
def test_the_epp_objects_of_the_upstream_examples_are_rendered_as_the_fixture_says(case: str) -> None:
    # given an upstream EPP manifest and its expected objects
    manifest, fixture = CASES[case]
    expected = yaml.safe_load((PARITY / fixture).read_text(encoding="utf-8"))
    dgd, component = _prepared(manifest)

    # when its EPP objects and its EPP pod are rendered (Grove)
    config_map = render_config_map(dgd, component)
    pool = render_inference_pool(dgd, component)
    rule = render_destination_rule(dgd, component, ISTIO)
    pod_spec = _clique_pod_spec(dgd, component)

    # then each is the fixture's (sources in the fixture's header)
    assert config_map == expected["configMap"]
    assert pool == expected["inferencePool"]
    assert rule == expected["destinationRule"]
    assert pod_spec == expected["eppPodSpec"]


def test_the_pool_selects_every_worker_class_pod_that_the_graph_renders() -> None:
    # given the gaie example, whose worker is a decode worker
    dgd, component = _prepared(GAIE_AGG)
    selector = render_inference_pool(dgd, component)["spec"]["selector"]["matchLabels"]

    # when its worker clique is rendered
    pcs = render(dgd, config=OperatorConfig())[0]
    worker = next(c for c in pcs["spec"]["template"]["cliques"] if c["name"] == "worker")

    # then the worker's labels carry every label the pool selects on (upstream
    # epp/inference_pool_test.go: the class, not the component type, is selected)
    assert selector.items() <= worker["labels"].items()
    assert "nvidia.com/dynamo-component-type" not in selector


def test_render_prints_the_config_map_and_the_pool_after_the_pathway_objects_on_both_pathways() -> None:
    pathways: tuple[tuple[Pathway, str], ...] = (
        ("grove", "PodCliqueSet"),
        ("component", "DynamoComponentDeployment"),
    )
    for pathway, first in pathways:
        # given the gaie example on a pathway, with the default config (no service mesh)
        dgd, _ = _prepared(GAIE_AGG, pathway=pathway)

        # when it is rendered
        kinds = [obj["kind"] for obj in render(dgd, config=OperatorConfig())]

        # then the EPP's ConfigMap and pool close the list, and no DestinationRule is printed
        assert kinds[0] == first
        assert kinds[-2:] == ["ConfigMap", "InferencePool"]
        assert "DestinationRule" not in kinds


def test_render_prints_the_destination_rule_when_the_config_names_the_istio_provider() -> None:
    # given the operator configured with the Istio mesh
    config = load_config("serviceMesh: {provider: istio, istio: {tlsMode: ISTIO_MUTUAL}}\n")
    document = yaml.safe_load(GAIE_AGG.read_text(encoding="utf-8"))
    dgd = prepare(document, namespace="demo", config=config)

    # when it is rendered
    objects = render(dgd, config=config)

    # then the last object is the DestinationRule named like the EPP Service
    assert objects[-1]["kind"] == "DestinationRule"
    assert objects[-1]["metadata"]["name"] == "qwen-epp"
    assert objects[-1]["spec"]["trafficPolicy"]["tls"] == {"mode": "ISTIO_MUTUAL", "insecureSkipVerify": True}


def test_only_the_component_pathway_opts_the_epp_pod_out_of_the_istio_sidecar() -> None:
    # given the gaie example on both pathways
    grove, component = _prepared(GAIE_AGG, pathway="grove")
    dcd_dgd, _ = _prepared(GAIE_AGG, pathway="component")

    # when the EPP's pod template is rendered on each
    clique_annotations = next(
        c
        for c in render(grove, config=OperatorConfig())[0]["spec"]["template"]["cliques"]
        if c["name"] == "epp"
    )["annotations"]
    dcd = next(o for o in render(dcd_dgd, config=OperatorConfig()) if o["metadata"]["name"] == "qwen-epp")

    # then only the DCD's carries sidecar.istio.io/inject: "false" (dgd-domain §15.4; podspec §16 item 10)
    assert dcd["spec"]["podTemplate"]["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
    assert "sidecar.istio.io/inject" not in clique_annotations
    assert component.type == "epp"


def _with_epp_config(epp_config: dict[str, Any]) -> tuple[DynamoGraphDeployment, ComponentSpec]:
    document = yaml.safe_load(GAIE_AGG.read_text(encoding="utf-8"))
    document["spec"]["components"][0]["eppConfig"] = epp_config
    dgd = prepare(document, namespace="demo", config=OperatorConfig())
    component = epp_component(dgd)
    assert component is not None
    return dgd, component


def test_an_epp_reading_the_users_config_map_gets_no_config_map_and_mounts_the_users_key() -> None:
    # given an EPP whose configuration is a key of the user's ConfigMap
    dgd, component = _with_epp_config({"configMapRef": {"name": "mine", "key": "picker.yaml"}})

    # when its objects and its pod are rendered
    objects = epp_objects(dgd, component, ServiceMeshConfig(), istio=False)
    pod_spec = _clique_pod_spec(dgd, component)

    # then only the pool is synced (dgd-domain §7 row 6), and the pod mounts that key at the EPP's path
    assert [obj["kind"] for obj in objects] == ["InferencePool"]
    volume = next(v for v in pod_spec["volumes"] if v["name"] == "epp-config")
    assert volume["configMap"] == {
        "name": "mine",
        "items": [{"key": "picker.yaml", "path": "epp-config-dynamo.yaml"}],
    }


def test_the_epp_configuration_file_keeps_only_the_fields_of_endpoint_picker_config() -> None:
    # given an inline configuration with feature gates, a saturation detector and a field upstream's
    # typed EndpointPickerConfig (gateway-api-inference-extension v1.4.0) does not have
    config = {
        "apiVersion": "mine/v1",
        "featureGates": ["dataLayer"],
        "plugins": [{"type": "max-score-picker"}],
        "schedulingProfiles": [{"name": "default", "plugins": [{"pluginRef": "max-score-picker"}]}],
        "saturationDetector": {"queueDepthThreshold": 5, "kvCacheUtilThreshold": 0},
        "somethingElse": {"x": 1},
    }

    # when it is written as the EPP's file
    written = endpoint_picker_yaml(config)

    # then upstream's apiVersion and kind are stamped, the unknown field is dropped, unset optional
    # values are written as Go does (``""``, ``null``; a zero number left out, the duration "0s"), and
    # the keys are sorted (sigs.k8s.io/yaml)
    assert written == (
        "apiVersion: inference.networking.x-k8s.io/v1alpha1\n"
        "featureGates:\n- dataLayer\n"
        "kind: EndpointPickerConfig\n"
        'plugins:\n- name: ""\n  parameters: null\n  type: max-score-picker\n'
        "saturationDetector:\n  metricsStalenessThreshold: 0s\n  queueDepthThreshold: 5\n"
        "schedulingProfiles:\n- name: default\n  plugins:\n"
        "  - pluginRef: max-score-picker\n    weight: null\n"
    )


@pytest.mark.parametrize(
    ("istio", "tls"),
    [
        # Istio's JSON leaves out the zero enum value: DISABLE has no mode.
        (IstioConfig(tls_mode="DISABLE", insecure_skip_verify=False), {"insecureSkipVerify": False}),
        # MUTUAL carries the client certificate and key, and the CA when one is set.
        (
            IstioConfig(tls_mode="MUTUAL", client_certificate="/c.pem", private_key="/k.pem"),
            {
                "mode": "MUTUAL",
                "insecureSkipVerify": True,
                "clientCertificate": "/c.pem",
                "privateKey": "/k.pem",
            },
        ),
        # The certificates are for MUTUAL only.
        (
            IstioConfig(tls_mode="SIMPLE", client_certificate="/c.pem", ca_certificates="/ca.pem"),
            {"mode": "SIMPLE", "insecureSkipVerify": True},
        ),
    ],
)
def test_the_destination_rule_says_how_the_mesh_reaches_the_epp(
    istio: IstioConfig, tls: dict[str, Any]
) -> None:
    dgd, component = _prepared(GAIE_AGG)
    rule = render_destination_rule(dgd, component, ServiceMeshConfig(provider="istio", istio=istio))
    assert rule["spec"] == {"host": "qwen-epp.demo.svc.cluster.local", "trafficPolicy": {"tls": tls}}


def test_without_the_istio_provider_the_destination_rule_has_no_spec() -> None:
    dgd, component = _prepared(GAIE_AGG)
    assert "spec" not in render_destination_rule(dgd, component, ServiceMeshConfig())


def test_the_istio_gate_needs_the_istio_provider_as_well_as_the_api() -> None:
    # given a cluster that serves DestinationRules
    served = {ISTIO_API}
    # then the gate is off without the provider, on with it, and off when the config turns it off
    assert not resolve_gates(OperatorConfig(), served).istio
    istio = ServiceMeshConfig(provider="istio", istio=IstioConfig())
    assert resolve_gates(OperatorConfig(service_mesh=istio), served).istio
    off = msgspec.structs.replace(istio, enabled=False)
    assert not resolve_gates(OperatorConfig(service_mesh=off), served).istio
    # and turned on where the API is not served, the operator refuses to start naming the key
    on = msgspec.structs.replace(istio, enabled=True)
    with pytest.raises(GateError, match=r"serviceMesh\.enabled is true"):
        resolve_gates(OperatorConfig(service_mesh=on), frozenset())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "serviceMesh: {provider: istio}\n",
            "serviceMesh.istio: Required value: istio configuration is required when "
            'serviceMesh.provider is "istio"',
        ),
        (
            "serviceMesh: {provider: istio, istio: {tlsMode: MUTUAL, clientCertificate: /c.pem}}\n",
            'serviceMesh.istio.privateKey: Required value: privateKey is required when tlsMode is "MUTUAL"',
        ),
    ],
)
def test_istio_settings_that_cannot_make_a_destination_rule_stop_the_operator(
    text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(text)
    assert str(raised.value) == message


def test_istio_settings_are_not_checked_when_the_mesh_is_off() -> None:
    assert load_config("serviceMesh: {provider: istio, enabled: false}\n").service_mesh.istio is None
