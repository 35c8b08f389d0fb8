"""The endpoint picker's shared objects (dgd-domain §7 step 6, §18), as JSON.

For the DGD's one ``type: epp`` component, owned by the DGD:

- the ConfigMap ``<dgd>-epp-config`` holding the inline ``eppConfig.config`` as the EPP reads it
  (key ``epp-config-dynamo.yaml``), unless the component references a ConfigMap of the user's;
- the InferencePool ``<dgd>-pool`` (``inference.networking.k8s.io/v1``): the DGD's worker-class pods
  of the EPP's Dynamo namespace, served on the frontend port, picked by the EPP Service;
- the Istio DestinationRule named like the EPP Service, telling a mesh sidecar how to reach the EPP's
  own TLS (the operator config's ``serviceMesh.istio``).

The ConfigMap carries the configuration as upstream writes it: decoded into the typed
EndpointPickerConfig of the Gateway API Inference Extension (fields it does not know are dropped,
absent optional ones written as ``""`` or ``null``), stamped with its apiVersion and kind, and
printed as YAML with sorted keys (``sigs.k8s.io/yaml``).
"""

from __future__ import annotations

from typing import Any

import yaml

from dgd.domain.metadata_keys import COMPONENT, COMPONENT_CLASS, COMPONENT_TYPE, DYNAMO_NAMESPACE, GRAPH_NAME
from dgd.domain.naming import dynamo_namespace, service_name
from dgd.domain.pod_merge import JSON
from dgd.messages.component import ComponentSpec
from dgd.messages.config import ServiceMeshConfig
from dgd.messages.dgd import DynamoGraphDeployment

CONFIG_KEY = "epp-config-dynamo.yaml"
POOL_API = "inference.networking.k8s.io/v1"
DESTINATION_RULE_API = "networking.istio.io/v1beta1"
#: The apiVersion and kind the EPP's configuration file declares (``apix/config/v1alpha1``).
EPP_CONFIG_API, EPP_CONFIG_KIND = "inference.networking.x-k8s.io/v1alpha1", "EndpointPickerConfig"
#: The pool serves the frontend port of the workers; the EPP Service's gRPC port picks among them.
FRONTEND_PORT, EPP_GRPC_PORT = 8000, 9002


def epp_component(dgd: DynamoGraphDeployment) -> ComponentSpec | None:
    """The DGD's endpoint picker (admission allows at most one), or ``None``."""
    return next((c for c in dgd.spec.components or [] if c.type == "epp"), None)


def epp_objects(
    dgd: DynamoGraphDeployment, component: ComponentSpec, mesh: ServiceMeshConfig, *, istio: bool
) -> list[JSON]:
    """What step 6 syncs, in order: the ConfigMap (unless the user's is referenced), the pool, and
    the DestinationRule when the Istio gate is on (``istio``)."""
    config_map = render_config_map(dgd, component)
    objects = [config_map] if config_map is not None else []
    objects.append(render_inference_pool(dgd, component))
    if istio:
        objects.append(render_destination_rule(dgd, component, mesh))
    return objects


def config_map_name(dgd_name: str) -> str:
    return f"{dgd_name}-epp-config"


def pool_name(dgd_name: str) -> str:
    return f"{dgd_name}-pool"


def epp_service_name(dgd: DynamoGraphDeployment, component: ComponentSpec) -> str:
    """The EPP component's Service, which the pool and the DestinationRule point at."""
    return service_name(dgd.metadata.name or "", component.name)


def _labels(dgd: DynamoGraphDeployment, component: ComponentSpec) -> dict[str, str]:
    return {COMPONENT: component.name, COMPONENT_TYPE: "epp", GRAPH_NAME: dgd.metadata.name or ""}


def render_config_map(dgd: DynamoGraphDeployment, component: ComponentSpec) -> JSON | None:
    """``<dgd>-epp-config`` from the inline configuration; ``None`` when the component references a
    ConfigMap of the user's (or has no inline configuration: admission requires one of the two)."""
    epp_config = component.epp_config
    if epp_config is None or epp_config.config_map_ref is not None or epp_config.config is None:
        return None
    name = dgd.metadata.name or ""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": config_map_name(name),
            "namespace": dgd.metadata.namespace or "",
            "labels": _labels(dgd, component),
        },
        "data": {CONFIG_KEY: endpoint_picker_yaml(dict(epp_config.config))},
    }


def render_inference_pool(dgd: DynamoGraphDeployment, component: ComponentSpec) -> JSON:
    """``<dgd>-pool``: the worker-class pods of the EPP's Dynamo namespace (every worker, prefill and
    decode pod of a DGD with an EPP carries ``nvidia.com/dynamo-component-class=worker``)."""
    name, namespace = dgd.metadata.name or "", dgd.metadata.namespace or ""
    dyn_ns = dynamo_namespace(namespace, name, global_namespace=bool(component.global_dynamo_namespace))
    return {
        "apiVersion": POOL_API,
        "kind": "InferencePool",
        "metadata": {"name": pool_name(name), "namespace": namespace, "labels": _labels(dgd, component)},
        "spec": {
            "selector": {"matchLabels": {COMPONENT_CLASS: "worker", DYNAMO_NAMESPACE: dyn_ns}},
            "targetPorts": [{"number": FRONTEND_PORT}],
            "endpointPickerRef": {
                "kind": "Service",
                "name": epp_service_name(dgd, component),
                "port": {"number": EPP_GRPC_PORT},
            },
        },
    }


def render_destination_rule(
    dgd: DynamoGraphDeployment, component: ComponentSpec, mesh: ServiceMeshConfig
) -> JSON:
    """The DestinationRule named like the EPP Service: TLS to ``<svc>.<ns>.svc.cluster.local`` as
    ``serviceMesh.istio`` says (mode ``SIMPLE`` and skipping verification by default; the client
    certificate, key and CA only for ``MUTUAL``). Without the Istio provider it has no spec."""
    name, namespace = epp_service_name(dgd, component), dgd.metadata.namespace or ""
    rule: JSON = {
        "apiVersion": DESTINATION_RULE_API,
        "kind": "DestinationRule",
        "metadata": {"name": name, "namespace": namespace},
    }
    istio = mesh.istio
    if mesh.provider != "istio" or istio is None:
        return rule
    tls: JSON = {}
    # Istio's JSON leaves out an enum at its zero value, and DISABLE is TLS mode 0.
    if istio.tls_mode != "DISABLE":
        tls["mode"] = istio.tls_mode
    tls["insecureSkipVerify"] = istio.insecure_skip_verify
    if istio.tls_mode == "MUTUAL":
        # Omitted when empty, as Istio's JSON does.
        certificates = {
            "clientCertificate": istio.client_certificate,
            "privateKey": istio.private_key,
            "caCertificates": istio.ca_certificates,
        }
        tls.update({key: value for key, value in certificates.items() if value})
    rule["spec"] = {"host": f"{name}.{namespace}.svc.cluster.local", "trafficPolicy": {"tls": tls}}
    return rule


def endpoint_picker_yaml(config: dict[str, Any]) -> str:
    """The EPP configuration file for an inline ``eppConfig.config``, as upstream writes it."""
    return yaml.dump(_typed(config), Dumper=_GoYAMLDumper, default_flow_style=False, sort_keys=True)


def _typed(config: dict[str, Any]) -> JSON:
    """``config`` through the fields of EndpointPickerConfig (gateway-api-inference-extension v1.4.0,
    the version upstream's operator builds with): unknown keys dropped, ``name``, ``parameters`` and
    ``weight`` written even when unset, ``featureGates`` and ``saturationDetector`` only when set."""
    typed: JSON = {"apiVersion": EPP_CONFIG_API, "kind": EPP_CONFIG_KIND}
    if config.get("featureGates"):
        typed["featureGates"] = list(config["featureGates"])
    typed["plugins"] = _list(config.get("plugins"), _plugin)
    typed["schedulingProfiles"] = _list(config.get("schedulingProfiles"), _profile)
    detector = config.get("saturationDetector")
    if isinstance(detector, dict):
        typed["saturationDetector"] = _saturation_detector(detector)
    return typed


def _list(value: Any, item: Any) -> list[JSON] | None:
    return (
        [item(entry if isinstance(entry, dict) else {}) for entry in value]
        if isinstance(value, list)
        else None
    )


def _plugin(plugin: dict[str, Any]) -> JSON:
    return {
        "name": plugin.get("name") or "",
        "parameters": plugin.get("parameters"),
        "type": plugin.get("type") or "",
    }


def _profile(profile: dict[str, Any]) -> JSON:
    return {
        "name": profile.get("name") or "",
        "plugins": _list(
            profile.get("plugins"),
            lambda ref: {"pluginRef": ref.get("pluginRef") or "", "weight": ref.get("weight")},
        ),
    }


def _saturation_detector(detector: dict[str, Any]) -> JSON:
    # Zero numbers are left out; the staleness threshold is a duration struct, always written.
    typed: JSON = {}
    for key in ("queueDepthThreshold", "kvCacheUtilThreshold"):
        if detector.get(key):
            typed[key] = detector[key]
    typed["metricsStalenessThreshold"] = detector.get("metricsStalenessThreshold") or "0s"
    return typed


class _GoYAMLDumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` quoting as go-yaml does: a string that cannot be plain gets double quotes
    (block style, two-space indent and sequences flush with their key are already alike)."""

    def choose_scalar_style(self) -> str:
        style: str = super().choose_scalar_style()
        return '"' if style == "'" else style
