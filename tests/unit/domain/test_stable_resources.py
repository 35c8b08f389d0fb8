"""Services, Ingress and VirtualService beside the PodCliqueSet (dgd-domain §9.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import yaml

from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.domain.render.stable_resources import render_stable_resources
from dgd.messages.config import IngressConfig, OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment

PARITY = Path(__file__).parents[2] / "fixtures" / "parity"


def _dgd(*components: dict[str, Any], **spec: Any) -> DynamoGraphDeployment:
    document = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "my.graph", "namespace": "ns"},
        "spec": {"components": list(components), **spec},
    }
    return default_in_memory(msgspec.convert(document, DynamoGraphDeployment), grove_enabled=True)


def _component(name: str, type_: str, **fields: Any) -> dict[str, Any]:
    main = {"name": "main", "image": "img:1", **fields.pop("main", {})}
    return {"name": name, "type": type_, "podTemplate": {"spec": {"containers": [main]}}, **fields}


def test_kubernetes_discovery_gives_every_component_a_service() -> None:
    # given a frontend and a worker with graph labels, under Kubernetes discovery
    dgd = _dgd(_component("Frontend", "frontend"), _component("Worker", "worker"), labels={"team": "a"})

    # when the stable resources are rendered
    frontend, worker = render_stable_resources(dgd, config=OperatorConfig(), discovery_backend="kubernetes")

    # then names are normalized, selectors identify the component, ports depend on the type
    assert frontend["metadata"] == {
        "name": "my-graph-frontend",
        "namespace": "ns",
        "labels": {
            "nvidia.com/dynamo-discovery-backend": "kubernetes",
            "nvidia.com/dynamo-discovery-enabled": "true",
            "team": "a",
        },
    }
    assert frontend["spec"] == {
        "selector": {
            "nvidia.com/dynamo-component-type": "frontend",
            "nvidia.com/dynamo-namespace": "ns-my-graph",
            "nvidia.com/dynamo-component": "Frontend",
        },
        "ports": [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}],
    }
    assert worker["spec"]["ports"] == [
        {"name": "system", "port": 9090, "targetPort": "system", "protocol": "TCP"}
    ]


def test_etcd_discovery_keeps_only_the_frontend_service() -> None:
    dgd = _dgd(_component("Frontend", "frontend"), _component("Worker", "worker"))
    objects = render_stable_resources(dgd, config=OperatorConfig(), discovery_backend="etcd")
    assert [o["metadata"]["name"] for o in objects] == ["my-graph-frontend"]


def test_model_refs_share_one_headless_service_per_model() -> None:
    # given two components serving the same model
    ref = {"modelRef": {"name": "Qwen/Qwen3-0.6B"}}
    dgd = _dgd(_component("a", "worker", **ref), _component("b", "worker", **ref))

    # when rendered
    model, *_ = render_stable_resources(dgd, config=OperatorConfig(), discovery_backend="etcd")

    # then one headless Service selects the model hash
    assert model["metadata"]["name"].startswith("dynamo-model-")
    assert model["spec"]["clusterIP"] == "None"
    assert model["spec"]["selector"] == {"nvidia.com/dynamo-base-model-hash": model["metadata"]["name"][13:]}


def test_ingress_class_in_config_exposes_the_frontend() -> None:
    # given an ingress class and TLS secret in the operator config
    config = OperatorConfig(
        ingress=IngressConfig(controller_class_name="nginx", controller_tls_secret_name="tls")
    )

    # when rendered
    *_, ingress = render_stable_resources(
        _dgd(_component("Frontend", "frontend")), config=config, discovery_backend="etcd"
    )

    # then the Ingress routes <dgd>.local to the frontend Service
    assert ingress["kind"] == "Ingress"
    assert ingress["spec"] == {
        "ingressClassName": "nginx",
        "rules": [
            {
                "host": "my.graph.local",
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": "my-graph-frontend", "port": {"number": 8000}}},
                        }
                    ]
                },
            }
        ],
        "tls": [{"hosts": ["my.graph.local"], "secretName": "tls"}],
    }


def test_virtual_service_gateway_in_config_exposes_the_frontend_through_istio() -> None:
    # given the parity fixture: a virtual-service gateway and a host suffix in the operator config
    fixture = yaml.safe_load((PARITY / "virtual_service.yaml").read_text(encoding="utf-8"))
    config = msgspec.convert(fixture["config"], OperatorConfig)
    dgd = default_in_memory(msgspec.convert(fixture["dgd"], DynamoGraphDeployment), grove_enabled=True)

    # when rendered
    objects = render_stable_resources(dgd, config=config, discovery_backend="etcd")

    # then the frontend has its Service and the fixture's VirtualService (and no Ingress: no class)
    assert [o["kind"] for o in objects] == fixture["expect"]["kinds"]
    assert objects[-1] == fixture["expect"]["virtual_service"]


def test_v1alpha1_use_virtual_service_needs_the_config_gateway_as_upstream_syncs_it() -> None:
    # given a v1alpha1 frontend asking for a VirtualService through its own gateway
    alpha = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {
            "services": {
                "Frontend": {
                    "componentType": "frontend",
                    "ingress": {
                        "enabled": True,
                        "host": "chat",
                        "hostSuffix": "example.com",
                        "useVirtualService": True,
                        "virtualServiceGateway": "team/gw",
                    },
                    "extraPodSpec": {"mainContainer": {"image": "img:1.4.0"}},
                }
            }
        },
    }
    dgd = default_in_memory(msgspec.convert(dgd_to_v1beta1(alpha), DynamoGraphDeployment), grove_enabled=True)
    gateway = OperatorConfig(ingress=IngressConfig(virtual_service_gateway="istio-system/gw"))

    # when rendered with and without a gateway in the operator config
    with_gateway = render_stable_resources(dgd, config=gateway, discovery_backend="etcd")
    without = render_stable_resources(dgd, config=OperatorConfig(), discovery_backend="etcd")

    # then the component's own ingress decides host and gateway, but only while the config names one
    # (upstream's Grove reconcile syncs VirtualServices only under Config.Ingress.UseVirtualService())
    service = with_gateway[-1]
    assert service["kind"] == "VirtualService"
    assert service["spec"]["hosts"] == ["chat.example.com"]
    assert service["spec"]["gateways"] == ["team/gw"]
    assert [o["kind"] for o in without] == ["Service"]


def test_single_pod_elastic_ep_leader_gets_a_headless_ray_service() -> None:
    # given a single-pod vLLM worker launching a Ray head for elastic EP
    main = {"command": ["python3", "-m", "dynamo.vllm"], "args": ["--enable-elastic-ep", "-dpb=ray"]}
    dgd = _dgd(_component("ep", "worker", main=main))

    # when rendered
    (ray,) = render_stable_resources(dgd, config=OperatorConfig(), discovery_backend="etcd")

    # then a headless Service publishes the Ray GCS and system ports, not-ready addresses included
    assert ray["metadata"]["name"] == "my-graph-ep-ray"
    assert ray["spec"]["publishNotReadyAddresses"] is True
    assert [p["name"] for p in ray["spec"]["ports"]] == ["ray-gcs", "system"]
