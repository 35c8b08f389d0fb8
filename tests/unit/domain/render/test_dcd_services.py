"""The Services, exposure, checkpoint storage and checkpoint preflight of a DCD (dcd-controller §2.2
step 3, §2.3.4-§2.3.9), case by case of its §4 (cited as "§4 #n")."""

from __future__ import annotations

import hashlib

from dgd.domain.gates import Gates
from dgd.domain.render.dcd_children import FAILOVER_SNAPSHOT, INTER_POD_SNAPSHOT
from dgd.domain.render.dcd_services import model_service
from dgd.domain.sync import Keep, plan_sync
from dgd.messages.config import (
    CheckpointConfig,
    CheckpointStorage,
    DiscoveryConfig,
    IngressConfig,
    OperatorConfig,
    PVCStorage,
)
from tests.unit.domain.render.dcd_builders import children, dcd, of_kind, removed

ETCD = OperatorConfig(discovery=DiscoveryConfig(backend="etcd"))
CHECKPOINTED = {"experimental": {"checkpoint": {"enabled": True}}}
STORAGE = CheckpointConfig(
    enabled=True,
    storage=CheckpointStorage(pvc=PVCStorage(pvc_name="p", base_path="/c", create=True, size="10Gi")),
)


def test_a_worker_without_kubernetes_discovery_has_no_service_and_its_name_is_removed() -> None:
    # §4 #13. given a worker DCD with etcd discovery and no discovery annotation
    rendered = children(dcd(type="worker"), ETCD)

    # then no component Service; the name d is to be removed
    assert not of_kind(rendered, "Service")
    assert ("Service", "d") in removed(rendered)


def test_a_worker_with_kubernetes_discovery_is_discovered_through_its_system_port() -> None:
    # §4 #14. given a worker DCD with Kubernetes discovery
    [service] = of_kind(children(dcd(type="worker")), "Service")

    # then Service d selects type, Dynamo namespace and component, on port system, labelled discoverable
    assert service["metadata"]["name"] == "d"
    assert service["spec"]["selector"] == {
        "nvidia.com/dynamo-component": "d",
        "nvidia.com/dynamo-component-type": "worker",
        "nvidia.com/dynamo-namespace": "ns-g",
    }
    assert service["spec"]["ports"] == [
        {"name": "system", "port": 9090, "targetPort": "system", "protocol": "TCP"}
    ]
    assert service["metadata"]["labels"]["nvidia.com/dynamo-discovery-enabled"] == "true"


def test_an_endpoint_picker_service_speaks_grpc_over_http2() -> None:
    # §4 #15. given an epp DCD with Kubernetes discovery
    [service] = of_kind(children(dcd(type="epp")), "Service")

    # then its port is grpc 9002, appProtocol http2
    assert service["spec"]["ports"] == [
        {"name": "grpc", "port": 9002, "targetPort": 9002, "protocol": "TCP", "appProtocol": "http2"}
    ]


def test_a_frontend_of_a_dgd_is_exposed_by_an_ingress_on_the_dgd_host() -> None:
    # §4 #17. given a frontend DCD of DGD g, ingress class nginx, host suffix example.com
    config = OperatorConfig(ingress=IngressConfig(controller_class_name="nginx", host_suffix="example.com"))
    [ingress] = of_kind(children(dcd(), config), "Ingress")

    # then Ingress d, class nginx, host g.example.com, / Prefix to Service d:8000, no labels
    assert ingress["metadata"] == {"name": "d", "namespace": "ns"}
    assert ingress["spec"] == {
        "ingressClassName": "nginx",
        "rules": [
            {
                "host": "g.example.com",
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": "d", "port": {"number": 8000}}},
                        }
                    ]
                },
            }
        ],
    }


def test_without_ingress_config_there_is_no_ingress_and_its_name_is_removed() -> None:
    # §4 #18. given no ingress configuration
    rendered = children(dcd())

    # then no Ingress, the name d is to be removed, and no VirtualService is considered (§2.13 #5, kept)
    assert not of_kind(rendered, "Ingress")
    assert ("Ingress", "d") in removed(rendered)
    assert not any(kind == "VirtualService" for kind, _ in removed(rendered))


def test_a_virtual_service_gateway_exposes_the_frontend_through_istio_and_no_ingress() -> None:
    # §4 #19. given virtualServiceGateway gw and no ingress class
    rendered = children(dcd(), OperatorConfig(ingress=IngressConfig(virtual_service_gateway="gw")))

    # then VirtualService d through gw for host g.local, / to d:8000; no Ingress
    [virtual] = of_kind(rendered, "VirtualService")
    assert virtual["metadata"]["name"] == "d"
    assert virtual["spec"]["gateways"] == ["gw"]
    assert virtual["spec"]["hosts"] == ["g.local"]
    route = virtual["spec"]["http"][0]
    assert route["match"] == [{"uri": {"prefix": "/"}}]
    assert route["route"] == [{"destination": {"host": "d", "port": {"number": 8000}}}]
    assert not of_kind(rendered, "Ingress")


def test_two_dcds_of_one_model_share_one_model_service_the_first_creates() -> None:
    # §4 #20. given two DCDs with modelRef.name M
    first = children(dcd("a", type="worker", modelRef={"name": "M"}))
    second = children(dcd("b", type="worker", modelRef={"name": "M"}))

    # when the second finds the Service the first created
    [one] = [c for c in first.children if c.create_only and c.body["kind"] == "Service"]
    [two] = [c for c in second.children if c.create_only and c.body["kind"] == "Service"]

    # then both render the same Service dynamo-model-<sha256(M)[:8]>, which is left as it is once it exists
    assert one.body == two.body == model_service("M", "ns")
    assert one.body["metadata"]["name"] == f"dynamo-model-{hashlib.sha256(b'M').hexdigest()[:8]}"
    assert one.body["spec"]["clusterIP"] == "None"
    assert two.create_only and one.owned


def test_a_checkpointed_dcd_with_failover_is_refused_whatever_the_gate() -> None:
    # §4 #28. given checkpoint enabled and failover set, with the Checkpoint gate on and off
    spec = {"experimental": {"checkpoint": {"enabled": True}, "failover": {}}}
    for gates in (Gates(), Gates(checkpoint=True)):
        rendered = children(dcd(type="worker", **spec), gates=gates)

        # then it is refused with upstream's message, and nothing is rendered or removed
        assert rendered.refused == (FAILOVER_SNAPSHOT,)
        assert not rendered.children and not rendered.removals


def test_inter_pod_gms_and_failover_are_both_refused_inter_pod_first() -> None:
    # §4 #29. given InterPod GPU memory sharing and failover
    experimental = {"checkpoint": {"enabled": True}, "gpuMemoryService": {"mode": "InterPod"}, "failover": {}}
    rendered = children(dcd(type="worker", experimental=experimental))

    # then both violations, InterPod first (the status joins them with a newline)
    assert rendered.refused == (INTER_POD_SNAPSHOT, FAILOVER_SNAPSHOT)


def test_the_storage_pvc_comes_first_unowned_with_the_checkpoint_gate() -> None:
    # §4 #30. given the Checkpoint gate, checkpoint enabled and pvc storage p, create true, 10Gi
    rendered = children(
        dcd(type="worker", **CHECKPOINTED), OperatorConfig(checkpoint=STORAGE), gates=Gates(checkpoint=True)
    )

    # then PVC p comes before the Deployment, without an owner, created only if missing
    first, second = rendered.children[:2]
    assert first.body["kind"] == "PersistentVolumeClaim" and first.body["metadata"]["name"] == "p"
    assert not first.owned and first.create_only and first.may_create
    assert second.body["kind"] == "Deployment"


def test_no_storage_pvc_without_the_checkpoint_gate() -> None:
    # §4 #31. given the storage config but the gate off
    rendered = children(dcd(type="worker", **CHECKPOINTED), OperatorConfig(checkpoint=STORAGE))

    # then no PVC
    assert not of_kind(rendered, "PersistentVolumeClaim")


def test_an_elastic_ep_worker_gets_no_ray_service() -> None:
    # §4 #42. given a vLLM worker that launches elastic EP, one node, one replica
    main = {
        "name": "main",
        "image": "i:1",
        "command": ["python3", "-m", "dynamo.vllm", "--enable-elastic-ep"],
    }
    rendered = children(dcd(type="worker", containers=[main], replicas=1))

    # then no Service d-ray; the component Service is the usual one
    assert [s["metadata"]["name"] for s in of_kind(rendered, "Service")] == ["d"]


def test_a_pod_template_etcd_annotation_turns_kubernetes_discovery_off() -> None:
    # §4 #45. given pod-template annotation discovery-backend etcd under an operator on Kubernetes discovery
    rendered = children(dcd(type="worker", pod_annotations={"nvidia.com/dynamo-discovery-backend": "etcd"}))

    # then no component Service and no discovery labels on the pods
    [deployment] = of_kind(rendered, "Deployment")
    assert not of_kind(rendered, "Service")
    assert "nvidia.com/dynamo-discovery-enabled" not in deployment["spec"]["template"]["metadata"]["labels"]


def test_a_service_upstream_created_from_the_same_dcd_is_taken_over_without_a_write() -> None:
    # given the component Service as upstream's SyncResource left it: the desired spec, defaulted by the
    # API server, with upstream's hash of the typed Go Service and the generation it recorded
    rendered = children(dcd(type="worker"))
    [child] = [c for c in rendered.children if c.body["kind"] == "Service"]
    live = {
        **child.body,
        "metadata": {
            **child.body["metadata"],
            "resourceVersion": "7",
            "annotations": {
                **child.body["metadata"].get("annotations", {}),
                "nvidia.com/last-applied-hash": child.last_applied_hash,
                "nvidia.com/last-applied-generation": "1",
            },
        },
        "spec": {**child.body["spec"], "clusterIP": "10.0.0.7", "type": "ClusterIP"},
    }

    # when it is synced
    # then nothing is written
    assert plan_sync(child.body, live, {"name": "d"}) == Keep()
