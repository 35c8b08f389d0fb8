"""Objects the Grove program keeps beside the PodCliqueSet (dgd-domain §9.5): model Services, component
Services, the elastic-EP Ray leader Service, and the frontend Ingress and Istio VirtualService.

All are plain JSON, in a stable order: model Services (first use order), then per component its
Service, Ray Service, Ingress and VirtualService. Exposure comes from the operator config, or from a
component's preserved v1alpha1 ``ingress`` (``frontend_exposure``).
"""

from __future__ import annotations

from dgd.domain.conversion.alpha_view import alpha_annotations, alpha_labels
from dgd.domain.metadata_keys import (
    BASE_MODEL,
    BASE_MODEL_HASH,
    COMPONENT,
    COMPONENT_TYPE,
    DISCOVERY_BACKEND,
    DISCOVERY_ENABLED,
    DYNAMO_NAMESPACE,
)
from dgd.domain.naming import dynamo_namespace, normalize, service_name, shorten
from dgd.domain.pod_merge import JSON
from dgd.domain.podtemplate import main_container
from dgd.domain.render.backends import launches_ray_head
from dgd.domain.render.clique_metadata import model_hash
from dgd.domain.render.frontend_exposure import Exposure, exposure, manages_virtual_services, virtual_service
from dgd.domain.roles import node_count
from dgd.messages.component import ComponentSpec
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment

FRONTEND_PORT, SYSTEM_PORT, EPP_GRPC_PORT, RAY_PORT = 8000, 9090, 9002, 6379


def render_stable_resources(
    dgd: DynamoGraphDeployment, *, config: OperatorConfig, discovery_backend: str
) -> list[JSON]:
    """The Services, Ingresses and VirtualServices of a defaulted, namespaced DGD on the Grove pathway."""
    objects = _model_services(dgd)
    k8s_discovery = discovery_backend == "kubernetes"
    for component in dgd.spec.components or []:
        if k8s_discovery or component.type == "frontend":
            objects.append(_component_service(dgd, component, k8s_discovery))
        ray = _ray_service(dgd, component)
        if ray is not None:
            objects.append(ray)
        if component.type == "frontend":
            objects += _exposure(dgd, component, config)
    return objects


def _meta(dgd: DynamoGraphDeployment, name: str, labels: dict[str, str], annotations: dict[str, str]) -> JSON:
    meta: JSON = {"name": name, "namespace": dgd.metadata.namespace}
    if labels:
        meta["labels"] = dict(sorted(labels.items()))
    if annotations:
        meta["annotations"] = dict(sorted(annotations.items()))
    return meta


def _model_services(dgd: DynamoGraphDeployment) -> list[JSON]:
    services: dict[str, JSON] = {}
    for component in dgd.spec.components or []:
        model = component.model_ref.name if component.model_ref is not None else ""
        if not model or model in services:
            continue
        hashed = model_hash(model)
        labels = {BASE_MODEL_HASH: hashed, "nvidia.com/managed-by": "dynamo-operator"}
        annotations = {**(dgd.spec.annotations or {}), BASE_MODEL: model}
        services[model] = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(dgd, f"dynamo-model-{hashed}", labels, annotations),
            "spec": {
                "clusterIP": "None",
                "selector": {BASE_MODEL_HASH: hashed},
                "ports": [
                    {"name": "system", "port": SYSTEM_PORT, "targetPort": SYSTEM_PORT, "protocol": "TCP"}
                ],
            },
        }
    return list(services.values())


def _selector(dgd: DynamoGraphDeployment, component: ComponentSpec) -> dict[str, str]:
    namespace = dgd.metadata.namespace or ""
    return {
        COMPONENT_TYPE: component.type or "",
        DYNAMO_NAMESPACE: dynamo_namespace(
            namespace, dgd.metadata.name or "", global_namespace=bool(component.global_dynamo_namespace)
        ),
        COMPONENT: component.name,
    }


def _component_service(dgd: DynamoGraphDeployment, component: ComponentSpec, k8s_discovery: bool) -> JSON:
    if component.type == "frontend":
        port = {"name": "http", "port": FRONTEND_PORT, "targetPort": "http", "protocol": "TCP"}
    elif component.type == "epp":
        port = {
            "name": "grpc",
            "port": EPP_GRPC_PORT,
            "targetPort": EPP_GRPC_PORT,
            "protocol": "TCP",
            "appProtocol": "http2",
        }
    else:
        port = {"name": "system", "port": SYSTEM_PORT, "targetPort": "system", "protocol": "TCP"}
    labels = {**(dgd.spec.labels or {}), **alpha_labels(dgd, component.name)}
    if k8s_discovery:
        labels.update({DISCOVERY_BACKEND: "kubernetes", DISCOVERY_ENABLED: "true"})
    annotations = {**(dgd.spec.annotations or {}), **alpha_annotations(dgd, component.name)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(dgd, service_name(dgd.metadata.name or "", component.name), labels, annotations),
        "spec": {"selector": _selector(dgd, component), "ports": [port]},
    }


def _ray_service(dgd: DynamoGraphDeployment, component: ComponentSpec) -> JSON | None:
    """The headless Service a single-pod elastic-EP Ray head is reached through."""
    found = main_container(component.pod_template)
    replicas_ok = component.replicas in (None, 1)
    if found is None or not replicas_ok or not launches_ray_head(found[1], node_count(component)):
        return None
    name = shorten(normalize(f"{service_name(dgd.metadata.name or '', component.name)}-ray"))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(dgd, name, {}, {}),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": _selector(dgd, component),
            "ports": [
                {"name": "ray-gcs", "port": RAY_PORT, "targetPort": RAY_PORT, "protocol": "TCP"},
                {"name": "system", "port": SYSTEM_PORT, "targetPort": SYSTEM_PORT, "protocol": "TCP"},
            ],
        },
    }


def _exposure(dgd: DynamoGraphDeployment, component: ComponentSpec, config: OperatorConfig) -> list[JSON]:
    """The frontend's Ingress and (while the config names a gateway) VirtualService, as enabled."""
    settings = exposure(dgd, component.name, config)
    name = service_name(dgd.metadata.name or "", component.name)
    objects = [_ingress(dgd, name, settings)] if settings.ingress else []
    if settings.virtual_service and manages_virtual_services(config):
        objects.append(virtual_service(name, dgd.metadata.namespace or "", settings))
    return objects


def _ingress(dgd: DynamoGraphDeployment, name: str, settings: Exposure) -> JSON:
    """The frontend Ingress: ``/`` of the host to the component's Service."""
    backend = {"service": {"name": name, "port": {"number": FRONTEND_PORT}}}
    spec: JSON = {}
    if settings.class_name:
        spec["ingressClassName"] = settings.class_name
    spec["rules"] = [
        {"host": settings.host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}
    ]
    if settings.tls_secret is not None:
        spec["tls"] = [{"hosts": [settings.host], "secretName": settings.tls_secret}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": _meta(dgd, name, dict(settings.labels), dict(settings.annotations)),
        "spec": spec,
    }
