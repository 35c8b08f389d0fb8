"""GPU memory service and intra-pod failover rendering (issue 20): upstream's agg_failover example and small
cases of our own, against fixtures written from the spec and upstream's Go (their sources are stated in
``tests/fixtures/parity/gms/*.yaml`` and beside each expectation here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from msgspec.structs import replace

from dgd.domain.render.dcd import render_dcds
from dgd.domain.render.errors import RenderError
from dgd.domain.render.gms import render_claim_template
from dgd.domain.render.offline import prepare, render
from dgd.domain.render.pcs import render_pcs
from dgd.domain.worker_hash import worker_hash
from dgd.messages.config import OperatorConfig
from tests.golden import load_expected, match
from tests.upstream import DYNAMO, load_documents

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "parity" / "gms"
EXAMPLES = DYNAMO / "examples" / "backends" / "vllm" / "deploy"
AGG_FAILOVER = {
    "v1alpha1": EXAMPLES / "agg_failover.yaml",
    "v1beta1": EXAMPLES / "v1beta1" / "agg_failover.yaml",
}
NAMESPACE = "parity"


def _fixture(name: str) -> dict[str, Any]:
    (document,) = load_expected((FIXTURES / f"{name}.yaml").read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _clique(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (pcs,) = [o for o in objects if o["kind"] == "PodCliqueSet"]
    (clique,) = [c for c in pcs["spec"]["template"]["cliques"] if c["name"] == name]
    return clique  # type: ignore[no-any-return]


def _image(document: dict[str, Any]) -> str:
    if document["apiVersion"].endswith("v1alpha1"):
        return str(document["spec"]["services"]["VllmWorker"]["extraPodSpec"]["mainContainer"]["image"])
    return str(document["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]["image"])


@pytest.mark.parametrize("version", sorted(AGG_FAILOVER))
def test_agg_failover_worker_pod_gets_the_gms_sidecar_the_shared_claim_and_two_engines(version: str) -> None:
    # given upstream's failover example (either version), created in a fresh namespace
    (document,) = load_documents(AGG_FAILOVER[version])
    dgd = prepare(document, namespace=NAMESPACE, config=OperatorConfig())
    expected = _fixture("agg_failover")

    # when it is rendered on the Grove pathway
    objects = render(dgd, config=OperatorConfig())

    # then the worker pod has the GMS server, the claim instead of scalar GPUs, and engine-0/engine-1
    pod = _clique(objects, "vllmworker")["spec"]["podSpec"]
    variables = {"image": _image(document), "worker-hash": worker_hash(dgd)}
    assert match(expected["workerPodSpec"], pod, variables) == []
    engine_1_env = pod["containers"][1]["env"]
    assert engine_1_env[-len(expected["engine1EnvTail"]) :] == expected["engine1EnvTail"]
    # and the frontend has none of it
    frontend = _clique(objects, "frontend")["spec"]["podSpec"]
    assert match(expected["frontendPodSpec"], frontend, variables) == []


@pytest.mark.parametrize("version", sorted(AGG_FAILOVER))
def test_agg_failover_claim_template_asks_for_the_main_containers_gpus(version: str) -> None:
    # given upstream's failover example, whose worker's main container asks for 2 GPUs
    (document,) = load_documents(AGG_FAILOVER[version])
    dgd = prepare(document, namespace=NAMESPACE, config=OperatorConfig())
    (worker,) = [c for c in dgd.spec.components or [] if c.name == "VllmWorker"]

    # when its ResourceClaimTemplate is rendered
    template = render_claim_template(worker, dgd_name="vllm-agg-failover", namespace=NAMESPACE)

    # then it is the fixture's: 2 devices of gpu.nvidia.com, named after the DGD and component
    assert match(_fixture("agg_failover")["claimTemplate"], template, {}) == []


GMS_ONLY = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: gms}
spec:
  backendFramework: vllm
  components:
  - name: Worker
    type: worker
    experimental:
      gpuMemoryService: {deviceClassName: gpu.example.com, extraClientContainers: [loader]}
    podTemplate:
      spec:
        containers:
        - name: main
          image: vllm:1.4.0
          resources: {limits: {nvidia.com/gpu: "4", memory: 8Gi}, requests: {nvidia.com/gpu: "4"}}
        - name: loader
          image: loader:1.0
"""


def _gms_only() -> dict[str, Any]:
    document = yaml.safe_load(GMS_ONLY)
    assert isinstance(document, dict)
    return document


def test_gms_without_failover_keeps_main_and_wires_the_extra_client_containers() -> None:
    # given a worker with the GPU memory service, an extra client container and no failover
    dgd = prepare(_gms_only(), namespace=NAMESPACE, config=OperatorConfig())

    # when it is rendered
    pod = _clique(render(dgd, config=OperatorConfig()), "worker")["spec"]["podSpec"]

    # then main keeps its name and non-GPU resources, its GPUs come from the claim ([dra] ApplyClaim
    # removes every scalar GPU resource from limits and requests)
    main, loader = pod["containers"]
    assert main["name"] == "main"
    assert main["resources"] == {"limits": {"memory": "8Gi"}, "claims": [{"name": "intrapod-shared-gpu"}]}
    # and the extra client gets the socket mount, GMS_SOCKET_DIR and the claim ([gms] EnsureClient)
    assert loader["resources"] == {"claims": [{"name": "intrapod-shared-gpu"}]}
    assert loader["volumeMounts"] == [{"name": "gms-intrapod-control", "mountPath": "/gms-intrapod-control"}]
    assert loader["env"] == [{"name": "GMS_SOCKET_DIR", "value": "/gms-intrapod-control"}]
    # and one server sidecar, once, with the V0 protocol (no checkpoint: no DYN_GMS_USE_V1)
    assert [c["name"] for c in pod["initContainers"]] == ["gms-server"]
    assert "DYN_GMS_USE_V1" not in {e["name"] for e in main.get("env") or []}


def test_gms_claim_template_names_the_configured_device_class() -> None:
    # given a GMS worker naming its own DeviceClass, with 4 GPUs in limits and requests
    dgd = prepare(_gms_only(), namespace=NAMESPACE, config=OperatorConfig())
    (worker,) = dgd.spec.components or []

    # when its template is rendered
    template = render_claim_template(worker, dgd_name="gms", namespace=NAMESPACE)

    # then it asks for exactly 4 devices of that class (dgd-domain §7 row 4: limit, else request)
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request == {
        "name": "gpus",
        "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 4},
    }
    assert template["metadata"] == {"name": "gms-worker-gpu", "namespace": NAMESPACE}


def test_a_checkpointed_gms_component_uses_the_v1_protocol_on_server_and_clients() -> None:
    # given a GMS worker that also has a checkpoint configuration ([gms] EnsureServerSidecar: useV1 when
    # the component has a checkpoint, graph.go GenerateBasePodSpec)
    document = _gms_only()
    document["spec"]["components"][0]["experimental"]["checkpoint"] = {"enabled": False}
    dgd = prepare(document, namespace=NAMESPACE, config=OperatorConfig())

    # when it is rendered
    pod = _clique(render(dgd, config=OperatorConfig()), "worker")["spec"]["podSpec"]

    # then the server, main and the extra client all carry DYN_GMS_USE_V1=true
    use_v1 = {"name": "DYN_GMS_USE_V1", "value": "true"}
    assert use_v1 in pod["initContainers"][0]["env"]
    assert all(use_v1 in container["env"] for container in pod["containers"])


def test_an_engine_after_the_first_moves_an_explicit_master_port_by_100() -> None:
    # given a failover worker whose args already pass --master-port 29510
    document = _gms_only()
    worker = document["spec"]["components"][0]
    worker["experimental"] = {"gpuMemoryService": {}, "failover": {}}
    worker["podTemplate"]["spec"]["containers"] = [
        {
            "name": "main",
            "image": "vllm:1.4.0",
            "args": ["--model", "m", "--master-port", "29510"],
            "resources": {"limits": {"nvidia.com/gpu": "1"}},
        }
    ]
    document["metadata"]["annotations"] = {"nvidia.com/dynamo-kube-discovery-mode": "container"}
    dgd = prepare(document, namespace=NAMESPACE, config=OperatorConfig())

    # when it is rendered
    pod = _clique(render(dgd, config=OperatorConfig()), "worker")["spec"]["podSpec"]

    # then engine-0 keeps it and engine-1 uses 29610 ([fo] staggerFlagValue, stride 100)
    assert [c["args"][-1] for c in pod["containers"]] == ["29510", "29610"]


def test_the_component_pathway_refuses_an_extra_client_that_names_no_container() -> None:
    # given a Component-pathway GMS worker whose extra client names no container (admission would
    # refuse it; a DGD stored before admission checked it can still hold it)
    document = _gms_only()
    document["metadata"]["annotations"] = {"nvidia.com/enable-grove": "false"}
    dgd = prepare(document, namespace=NAMESPACE, config=OperatorConfig())
    (worker,) = dgd.spec.components or []
    assert worker.experimental is not None and worker.experimental.gpu_memory_service is not None
    gms = replace(worker.experimental.gpu_memory_service, extra_client_containers=["ghost"])
    worker = replace(worker, experimental=replace(worker.experimental, gpu_memory_service=gms))
    bad = replace(dgd, spec=replace(dgd.spec, components=[worker]))

    # when its DCDs are generated
    with pytest.raises(RenderError) as refused:
        render_dcds(bad, worker_hash="abcd1234")

    # then generation fails naming the field, the value and the containers there are (dgd-domain §8.3)
    assert refused.value.path == "spec.components[0].experimental.gpuMemoryService.extraClientContainers[0]"
    assert (
        refused.value.message
        == "'ghost' does not name a container of podTemplate.spec.containers (main, loader)"
    )


def test_the_component_pathway_carries_gms_and_failover_in_the_dcd() -> None:
    # given upstream's v1beta1 failover example opting out of Grove
    (document,) = load_documents(AGG_FAILOVER["v1beta1"])
    document["metadata"]["annotations"]["nvidia.com/enable-grove"] = "false"
    dgd = prepare(document, namespace=NAMESPACE, config=OperatorConfig())

    # when it is rendered on the Component pathway
    dcds = render(dgd, config=OperatorConfig())

    # then the worker DCD carries the GMS and failover blocks as the component has them, for the DCD
    # controller (dgd-domain §8.3: spec is a deep copy of the component; the offline render applies no
    # CRD schema defaults, which the API server adds on a real create)
    (worker,) = [d for d in dcds if d["spec"].get("type") == "worker"]
    assert worker["spec"]["experimental"] == {"gpuMemoryService": {}, "failover": {}}


MULTINODE_DRA = """
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: mn}
spec:
  backendFramework: vllm
  components:
  - name: Worker
    type: worker
    multinode: {nodeCount: 2}
    podTemplate:
      spec:
        resourceClaims: [{name: gpus, resourceClaimTemplateName: four-gpus}]
        containers:
        - name: main
          image: vllm:1.4.0
          command: [python3, -m, dynamo.vllm]
          args: [--model, m, --tensor-parallel-size, "8"]
          resources: {claims: [{name: gpus}]}
"""
FOUR_GPUS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "four-gpus", "namespace": NAMESPACE},
    "spec": {
        "spec": {
            "devices": {
                "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}}]
            }
        }
    },
}


def test_a_multinode_launch_counts_the_gpus_of_the_main_containers_dra_claim() -> None:
    # given a 2-node vLLM worker with TP 8 whose main container claims 4 GPUs through a template
    dgd = prepare(yaml.safe_load(MULTINODE_DRA), namespace=NAMESPACE, config=OperatorConfig())

    # when its PodCliqueSet is rendered with that template (read from the namespace by the program)
    pcs = msgspec.to_builtins(
        render_pcs(dgd, config=OperatorConfig(), existing=None, claim_templates={"four-gpus": FOUR_GPUS})
    )

    # then the leader launches with the multiprocessing backend over 2 nodes, as for 4 scalar GPUs
    # (podspec §7.3: G=4 > 0 and world 8 > G, a 1.4 DGD uses mp)
    (leader,) = [c for c in pcs["spec"]["template"]["cliques"] if c["name"] == "worker-ldr"]
    command_line = " ".join(leader["spec"]["podSpec"]["containers"][0]["args"])
    assert "--distributed-executor-backend mp --nnodes 2" in command_line


def test_a_multinode_dra_claim_whose_template_is_missing_fails_naming_it() -> None:
    # given the same worker while its template does not exist in the namespace
    dgd = prepare(yaml.safe_load(MULTINODE_DRA), namespace=NAMESPACE, config=OperatorConfig())

    # when its PodCliqueSet is rendered, then rendering fails naming the claim and the template
    with pytest.raises(
        RenderError, match="ResourceClaimTemplate 'four-gpus' does not exist in the namespace"
    ):
        render_pcs(dgd, config=OperatorConfig(), existing=None, claim_templates={})


def _render_own(name: str) -> list[dict[str, Any]]:
    (document,) = load_documents(FIXTURES / f"{name}.dgd.yaml")
    return render(prepare(document, namespace=NAMESPACE, config=OperatorConfig()), config=OperatorConfig())


def test_single_node_inter_pod_failover_renders_a_weight_server_and_shadow_engines() -> None:
    # given our single-node inter-pod GMS failover graph
    expected = _fixture("inter_pod")["singleNode"]

    # when it is rendered on the Grove pathway
    objects = _render_own("inter_pod_failover")

    # then the PodCliqueSet declares the rank's claim template and the scaling group shares it
    (pcs,) = [o for o in objects if o["kind"] == "PodCliqueSet"]
    assert match(expected["template"], pcs["spec"]["template"], {}) == []
    # and the weight server clique runs the GMS server on the rank's shared directory, undiscovered
    server = _clique(objects, "decode-gms-0")
    assert match(expected["weightServer"], server, {}) == []
    assert match(expected["weightServerPodSpec"], server["spec"]["podSpec"], {}) == []
    server_env = server["spec"]["podSpec"]["containers"][0]["env"]
    assert server_env[-len(expected["weightServerEnvTail"]) :] == expected["weightServerEnvTail"]
    # and the engine clique runs 1 + 1 engines after it, loading weights from it
    engine = _clique(objects, "decode")
    assert match(expected["engine"], engine, {}) == []
    assert match(expected["enginePodSpec"], engine["spec"]["podSpec"], {}) == []
    engine_env = engine["spec"]["podSpec"]["containers"][0]["env"]
    assert engine_env[-len(expected["engineEnvTail"]) :] == expected["engineEnvTail"]
    assert "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS" not in {e["name"] for e in engine_env}


def test_multinode_inter_pod_failover_pairs_each_rank_with_its_weight_server() -> None:
    # given our 2-node inter-pod GMS failover graph
    expected = _fixture("inter_pod")["multinode"]

    # when it is rendered on the Grove pathway
    objects = _render_own("inter_pod_multinode")

    # then each rank has its GMS clique, claim template and shared claim, and starts after its server
    (pcs,) = [o for o in objects if o["kind"] == "PodCliqueSet"]
    template = pcs["spec"]["template"]
    assert [c["name"] for c in template["cliques"]] == expected["cliqueNames"]
    (group,) = template["podCliqueScalingGroups"]
    assert group["resourceSharing"] == expected["resourceSharing"]
    assert [t["name"] for t in template["resourceClaimTemplates"]] == expected["claimTemplateNames"]
    for name, spec in expected["cliqueSpecs"].items():
        rendered = _clique(objects, name)["spec"]
        assert {key: rendered.get(key) for key in spec} == spec, name
    # and the engines find their group's leader by pod index, with a fixed node rank
    leader = _clique(objects, "worker-ldr")["spec"]["podSpec"]["containers"][0]
    worker = _clique(objects, "worker-wkr-1")["spec"]["podSpec"]["containers"][0]
    assert (leader["args"], worker["args"]) == (expected["leaderArgs"], expected["workerArgs"])
    assert worker["command"] == ["python3", "-m", "dynamo.vllm"]
    mount = next(m for m in worker["volumeMounts"] if m["name"] == "gms-shared")
    assert mount["subPathExpr"] == expected["workerSubPathExpr"]


def test_standalone_inter_pod_gms_engines_are_active_and_restart_in_place() -> None:
    # given our single-node graph without failover (inter-pod GMS alone)
    (document,) = load_documents(FIXTURES / "inter_pod_failover.dgd.yaml")
    del document["spec"]["components"][1]["experimental"]["failover"]
    dgd = prepare(document, namespace=NAMESPACE, config=OperatorConfig())

    # when it is rendered
    engine = _clique(render(dgd, config=OperatorConfig()), "decode")

    # then one engine, not a failover group member, restarted in place, and not a shadow (upstream
    # augmentEngineForGMS / VLLMBackend.UpdateContainer: shadow mode and Never only with failover)
    assert engine["spec"]["replicas"] == 1
    assert "nvidia.com/dynamo-failover-engine-group-member" not in engine["labels"]
    pod = engine["spec"]["podSpec"]
    assert pod["restartPolicy"] == "Always"
    assert "DYN_VLLM_GMS_SHADOW_MODE" not in {e["name"] for e in pod["containers"][0]["env"]}
    assert pod["containers"][0]["args"][-2:] == ["--load-format", "gms"]
