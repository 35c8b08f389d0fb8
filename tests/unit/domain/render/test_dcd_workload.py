"""The workload the DCD controller renders (dcd-controller §2.3.1-§2.3.3, §2.5, §2.10), case by case
of its §4 (cited as "§4 #n")."""

from __future__ import annotations

import pytest

from dgd.domain.gates import Gates
from dgd.domain.render.dcd_workload_type import Legacy
from dgd.domain.render.errors import RenderError
from dgd.domain.sync import LAST_APPLIED_GENERATION, LAST_APPLIED_HASH, Create, plan_sync
from dgd.messages.config import DiscoveryConfig, IngressConfig, OperatorConfig
from tests.unit.domain.render.dcd_builders import children, dcd, of_kind, removed

LWS = Gates(lws=True)
TWO_NODES = {"multinode": {"nodeCount": 2}}


def test_a_deployment_selects_by_selector_rolls_25_percent_and_is_created_owned_with_bookkeeping() -> None:
    # §4 #2. given a new frontend DCD d of DGD g
    rendered = children(dcd())

    # when its Deployment is created through SyncResource's rules
    [deployment] = of_kind(rendered, "Deployment")
    created = plan_sync(
        deployment, None, {"kind": "DynamoComponentDeployment", "name": "d", "controller": True}
    )

    # then it selects by nvidia.com/selector, rolls 25%/25%, gets the owner and the bookkeeping annotations
    assert deployment["metadata"]["name"] == "d"
    assert deployment["spec"]["selector"] == {"matchLabels": {"nvidia.com/selector": "d"}}
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert isinstance(created, Create)
    assert created.body["metadata"]["ownerReferences"][0]["controller"] is True
    assert created.body["metadata"]["annotations"][LAST_APPLIED_GENERATION] == "1"
    assert (
        created.body["metadata"]["annotations"][LAST_APPLIED_HASH] == rendered.children[0].last_applied_hash
    )
    assert deployment["spec"]["template"]["metadata"]["labels"]["nvidia.com/selector"] == "d"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"nvidia.com/deployment-strategy": "Recreate"}, {"type": "Recreate"}),  # §4 #8
        (  # §4 #9
            {"nvidia.com/deployment-strategy": "recreate"},
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        ),
        (  # §4 #10
            {
                "nvidia.com/deployment-rolling-update-max-surge": "1",
                "nvidia.com/deployment-rolling-update-max-unavailable": "0",
            },
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
        ),
    ],
)
def test_the_strategy_follows_the_pod_template_annotations(
    annotations: dict[str, str], expected: object
) -> None:
    # given a DCD whose pod template carries rollout annotations
    rendered = children(dcd(pod_annotations=annotations))

    # when its Deployment is rendered
    [deployment] = of_kind(rendered, "Deployment")

    # then the strategy is what they say (Recreate exactly; bounds as integers when they are integers)
    assert deployment["spec"]["strategy"] == expected


def test_the_dcds_own_strategy_annotation_is_not_read() -> None:
    # §4 #46 (§2.13 #17, kept). given Recreate on the DCD's metadata.annotations, not its pod template
    rendered = children(dcd(annotations={"nvidia.com/deployment-strategy": "Recreate"}))

    # when its Deployment is rendered
    [deployment] = of_kind(rendered, "Deployment")

    # then the strategy stays a rolling update
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"


def test_a_rollout_bound_that_is_neither_an_integer_nor_a_percentage_is_refused_naming_the_annotation() -> (
    None
):
    # §2.13 #14, decided. given max-surge "lots"
    component = dcd(pod_annotations={"nvidia.com/deployment-rolling-update-max-surge": "lots"})

    # when its children are rendered
    # then rendering is refused, naming the annotation and what it may be
    with pytest.raises(RenderError, match=r"max-surge\].*\"lots\" must be an integer .* or a percentage"):
        children(component)


def test_a_dotted_dcd_name_keeps_its_deployment_name_and_normalizes_the_service_and_ingress() -> None:
    # §4 #16. given DCD a.b, frontend, with an ingress class configured
    config = OperatorConfig(ingress=IngressConfig(controller_class_name="nginx"))
    rendered = children(dcd("a.b"), config)

    # then the Deployment is a.b, the Service and Ingress a-b
    assert [d["metadata"]["name"] for d in of_kind(rendered, "Deployment")] == ["a.b"]
    assert [s["metadata"]["name"] for s in of_kind(rendered, "Service")] == ["a-b"]
    assert [i["metadata"]["name"] for i in of_kind(rendered, "Ingress")] == ["a-b"]


def test_a_multinode_dcd_with_the_lws_gate_is_one_leaderworkerset_of_role_labelled_templates() -> None:
    # §4 #21. given a two-node worker DCD, LWS gate on, main with command and args
    rendered = children(dcd(type="worker", backendFramework="vllm", **TWO_NODES), gates=LWS)

    # when its children are rendered
    [lws] = of_kind(rendered, "LeaderWorkerSet")
    [service] = of_kind(rendered, "Service")

    # then LWS d-0, 1 replica, size 2, leader created first, templates by role without the selector
    template = lws["spec"]["leaderWorkerTemplate"]
    assert lws["metadata"]["name"] == "d-0"
    assert (lws["spec"]["replicas"], lws["spec"]["startupPolicy"], template["size"]) == (
        1,
        "LeaderCreated",
        2,
    )
    for role in ("leader", "worker"):
        labels = template[f"{role}Template"]["metadata"]["labels"]
        assert labels["role"] == role
        assert "nvidia.com/selector" not in labels
    assert not of_kind(rendered, "Deployment")
    assert service["spec"]["selector"]["role"] == "leader"


def test_a_leaderworkerset_main_container_without_args_is_refused() -> None:
    # §4 #22. given a two-node worker whose main has a command and no args, no GPUs, no parallelism flags
    main = {"name": "main", "image": "registry.example/dynamo:1.4.0", "command": ["/bin/run"]}
    component = dcd(type="worker", containers=[main], **TWO_NODES)

    # when its children are rendered with the LWS gate on
    # then rendering fails with upstream's message
    with pytest.raises(RenderError, match=r"container Args cannot be empty for LWS pod$"):
        children(component, gates=LWS)


def test_legacy_per_replica_leaderworkersets_and_every_podgroup_of_the_dcd_are_removed() -> None:
    # §4 #23. given LWS d-0 and d-1 and PodGroups d-0 and d-1, all labelled instance-id and controlled by d
    owner = [{"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoComponentDeployment", "name": "d",
              "uid": "uid-d", "controller": True}]  # fmt: skip
    legacy = [
        {"kind": kind, "metadata": {"name": name, "labels": {"instance-id": "0"}, "ownerReferences": owner}}
        for kind in ("LeaderWorkerSet", "PodGroup")
        for name in ("d-0", "d-1")
    ]
    foreign = {"kind": "PodGroup", "metadata": {"name": "x", "labels": {"instance-id": "0"}}}
    live = Legacy(lws=legacy[0])

    # when the children of the multinode DCD are rendered with the LWS gate on
    rendered = children(
        dcd(type="worker", **TWO_NODES), gates=LWS, live=live, legacy_objects=[*legacy, foreign]
    )

    # then d-0 loses the label, LWS d-1 and both PodGroups go; a PodGroup it does not control stays
    assert rendered.unlabel == "d-0"
    assert {("LeaderWorkerSet", "d-1"), ("PodGroup", "d-0"), ("PodGroup", "d-1")} <= removed(rendered)
    assert ("LeaderWorkerSet", "d-0") not in removed(rendered)
    assert ("PodGroup", "x") not in removed(rendered)


def test_a_multinode_dcd_without_the_lws_gate_is_a_main_deployment_whose_service_selects_its_pods() -> None:
    # §4 #25, with §2.13 #9 decided: the Service does not select role: leader, which these pods lack
    rendered = children(dcd(type="worker", **TWO_NODES))

    # when its children are rendered
    [deployment] = of_kind(rendered, "Deployment")
    [service] = of_kind(rendered, "Service")

    # then a Deployment, and a Service whose selector the pods match
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert "role" not in service["spec"]["selector"]
    assert all(pod_labels[key] == value for key, value in service["spec"]["selector"].items())


def test_a_prefill_dcd_whose_deployment_pods_are_workers_keeps_rendering_as_a_worker() -> None:
    # §4 #26. given a prefill DCD whose Deployment's pod template says worker without a sub-type
    live_deployment = {
        "spec": {"template": {"metadata": {"labels": {"nvidia.com/dynamo-component-type": "worker"}}}}
    }
    worker_lws = {"spec": {"leaderWorkerTemplate": {"leaderTemplate": live_deployment["spec"]["template"]}}}

    # when it is rendered with the Deployment, or only a worker LWS with the LWS gate off
    rendered = children(dcd(type="prefill"), live=Legacy(deployment=live_deployment))
    ignored = children(dcd(type="prefill"), live=Legacy(lws=worker_lws))

    # then its pods and Service keep worker; the LeaderWorkerSet is not consulted with the gate off
    [deployment] = of_kind(rendered, "Deployment")
    [service] = of_kind(rendered, "Service")
    assert (
        deployment["spec"]["template"]["metadata"]["labels"]["nvidia.com/dynamo-component-type"] == "worker"
    )
    assert service["spec"]["selector"]["nvidia.com/dynamo-component-type"] == "worker"
    assert rendered.workload_type == "worker"
    assert ignored.workload_type == "prefill"


def test_a_prefill_dcd_with_no_legacy_label_and_nothing_live_is_prefill() -> None:
    # §4 #27. given a prefill DCD, no legacy labels, no live objects
    rendered = children(dcd(type="prefill"))

    # then its type is prefill
    assert rendered.workload_type == "prefill"


def test_a_decode_dcd_labels_its_workload_pods_and_service_with_its_sub_type() -> None:
    # §4 #41. given a v1beta1 decode DCD without any legacy label
    rendered = children(dcd(type="decode"))
    [deployment] = of_kind(rendered, "Deployment")
    [service] = of_kind(rendered, "Service")

    # then Deployment, pods and Service carry the sub-type; pods carry the type, which the Service selects
    pods = deployment["spec"]["template"]["metadata"]["labels"]
    for labels in (deployment["metadata"]["labels"], pods, service["metadata"]["labels"]):
        assert labels["nvidia.com/dynamo-sub-component-type"] == "decode"
    assert pods["nvidia.com/dynamo-component-type"] == "decode"
    assert service["spec"]["selector"]["nvidia.com/dynamo-component-type"] == "decode"
    assert "nvidia.com/dynamo-component-type" not in deployment["metadata"]["labels"]
    assert "nvidia.com/dynamo-component-type" not in service["metadata"]["labels"]


def test_the_topology_source_comes_from_the_dcds_own_annotations() -> None:
    # §4 #44. given DCD annotation topology-label-key zone and pod-template annotation rack
    key = "nvidia.com/topology-label-key"
    rendered = children(dcd(annotations={key: "zone"}, pod_annotations={key: "rack"}))

    # then the Deployment and its pod template carry zone
    [deployment] = of_kind(rendered, "Deployment")
    assert deployment["metadata"]["annotations"][key] == "zone"
    assert deployment["spec"]["template"]["metadata"]["annotations"][key] == "zone"


def test_a_pod_without_an_account_runs_as_the_labelled_one_else_default_with_etcd_discovery() -> None:
    # §4 #39. given etcd discovery, no account in the pod spec, and a labelled ServiceAccount s (or none)
    config = OperatorConfig(discovery=DiscoveryConfig(backend="etcd"))
    with_s = children(dcd(type="worker"), config, service_accounts=["s"])
    without = children(dcd(type="worker"), config)

    # then the pod runs as s, else as default
    assert of_kind(with_s, "Deployment")[0]["spec"]["template"]["spec"]["serviceAccountName"] == "s"
    assert of_kind(without, "Deployment")[0]["spec"]["template"]["spec"]["serviceAccountName"] == "default"


@pytest.mark.parametrize(
    ("owner", "account"), [(None, "d-k8s-service-discovery"), ("g", "g-k8s-service-discovery")]
)
def test_with_kubernetes_discovery_a_pod_runs_as_the_discovery_account_of_its_dgd_else_its_dcd(
    owner: str | None, account: str
) -> None:
    # §4 #40. given Kubernetes discovery, no account in the pod spec, a DCD owned by g or by no DGD
    rendered = children(dcd(type="worker", owner=owner), service_accounts=["s"])

    # then the pod runs as the discovery account; the labelled account is not used
    assert of_kind(rendered, "Deployment")[0]["spec"]["template"]["spec"]["serviceAccountName"] == account


def test_a_worker_runtime_namespace_carries_its_worker_hash_and_a_frontends_does_not() -> None:
    # §4 #38. given a worker DCD labelled with worker hash abcd1234, and a frontend, Dynamo namespace ns-g
    worker = children(dcd(type="worker", labels={"nvidia.com/dynamo-worker-hash": "abcd1234"}))
    frontend = children(dcd(labels={"nvidia.com/dynamo-worker-hash": "abcd1234"}))

    # then the status' runtime namespace is ns-g-abcd1234 for the worker, ns-g for the frontend
    assert worker.runtime_namespace == "ns-g-abcd1234"
    assert frontend.runtime_namespace == "ns-g"
