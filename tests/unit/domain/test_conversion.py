"""v1alpha1 → v1beta1 DGD conversion (supplement §1, → direction)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from dgd.domain.conversion.dgd import ConversionError, dgd_to_v1beta1
from tests.upstream import DYNAMO, load_documents

FIXTURE = DYNAMO / "deploy" / "utils" / "tests" / "fixtures" / "v1alpha1" / "agg.yaml"
VLLM_AGG = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "agg.yaml"
SPEC_KEY = "nvidia.com/dgd-spec"
STATUS_KEY = "nvidia.com/dgd-status"

EXAMPLE_1_ANNOTATION = (
    '{"version":1,"spec":{"services":{"Frontend":{"envFromSecret":"hf-token-secret","extraPodSpec":'
    '{"mainContainer":{"name":"","resources":{}}}},"VllmDecodeWorker":{"resources":{"requests":'
    '{"custom":{"ephemeral-storage":"2Gi"}},"limits":{"gpu":"1"}},"envFromSecret":"hf-token-secret",'
    '"extraPodSpec":{"mainContainer":{"name":"","resources":{}}}}}}}'
)
EXAMPLE_2_ANNOTATION = (
    '{"version":1,"spec":{"pvcs":[{"create":true,"name":"model-cache","storageClass":"standard",'
    '"size":"100Gi","volumeAccessMode":"ReadWriteMany"}],"services":{"Frontend":{"envFromSecret":'
    '"hf-token-secret","extraPodSpec":{"mainContainer":{"name":"","resources":{}}}},"VllmDecodeWorker":'
    '{"annotations":{"example.com/team":"llm"},"dynamoNamespace":"my-legacy-ns","resources":{"requests":'
    '{"custom":{"ephemeral-storage":"2Gi"}},"limits":{"gpu":"1"}},"envFromSecret":"hf-token-secret",'
    '"volumeMounts":[{"name":"model-cache","mountPoint":"/root/.cache"}],"extraPodSpec":{"mainContainer":'
    '{"name":"","resources":{}}}}}}}'
)


def _fixture() -> dict[str, Any]:
    document: dict[str, Any] = load_documents(FIXTURE)[0]
    return document


def example_2_input() -> dict[str, Any]:
    """The input of worked example 2 (supplement §1.14): the fixture plus PVCs and v1alpha1-only
    worker fields."""
    document = _fixture()
    document["spec"]["pvcs"] = [
        {
            "name": "model-cache",
            "create": True,
            "size": "100Gi",
            "storageClass": "standard",
            "volumeAccessMode": "ReadWriteMany",
        }
    ]
    document["spec"]["services"]["VllmDecodeWorker"].update(
        {
            "subComponentType": "decode",
            "dynamoNamespace": "my-legacy-ns",
            "annotations": {"example.com/team": "llm"},
            "scalingAdapter": {"enabled": True},
            "sharedMemory": {"size": "16Gi"},
            "volumeMounts": [{"name": "model-cache", "mountPoint": "/root/.cache"}],
        }
    )
    return document


def _dgd(services: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph", "namespace": "ns"},
        "spec": {"services": services, **spec},
    }


def _components(converted: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {component["name"]: component for component in converted["spec"]["components"]}


def _preserved(converted: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(converted["metadata"]["annotations"][SPEC_KEY])
    assert payload["version"] == 1
    return dict(payload["spec"])


def _containers(component: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = component["podTemplate"]["spec"]["containers"]
    return containers


def test_worked_example_1_fixture_converts_to_the_vllm_agg_example_with_the_exact_annotation() -> None:
    # given the upstream conversion conformance fixture
    fixture = _fixture()
    untouched = copy.deepcopy(fixture)

    # when it is converted
    converted = dgd_to_v1beta1(fixture)

    # then the spec is the v1beta1 example's, the payload is byte-exact, and the input is unchanged
    assert converted["apiVersion"] == "nvidia.com/v1beta1"
    assert converted["kind"] == "DynamoGraphDeployment"
    assert converted["spec"] == load_documents(VLLM_AGG)[0]["spec"]
    assert converted["metadata"] == {"name": "vllm-agg", "annotations": {SPEC_KEY: EXAMPLE_1_ANNOTATION}}
    assert [component["name"] for component in converted["spec"]["components"]] == [
        "Frontend",
        "VllmDecodeWorker",
    ]
    assert fixture == untouched


def test_worked_example_2_keeps_v1alpha1_only_fields_in_the_exact_annotation() -> None:
    # given the fixture plus PVCs and v1alpha1-only worker fields
    document = example_2_input()

    # when it is converted
    converted = dgd_to_v1beta1(document)

    # then the payload is byte-exact, Frontend is as in example 1, and the worker fields changed
    assert converted["metadata"]["annotations"][SPEC_KEY] == EXAMPLE_2_ANNOTATION
    example = {item["name"]: item for item in load_documents(VLLM_AGG)[0]["spec"]["components"]}
    components = _components(converted)
    assert components["Frontend"] == example["Frontend"]
    worker = components["VllmDecodeWorker"]
    assert worker["type"] == "decode"
    assert worker["replicas"] == 1
    assert worker["sharedMemorySize"] == "16Gi"
    assert worker["scalingAdapter"] == {}
    assert "compilationCache" not in worker
    main = _containers(worker)[0]
    assert main["volumeMounts"] == [{"name": "model-cache", "mountPath": "/root/.cache"}]
    assert {key: value for key, value in main.items() if key != "volumeMounts"} == _containers(
        example["VllmDecodeWorker"]
    )[0]


def test_components_are_emitted_in_byte_wise_key_order_with_uppercase_first() -> None:
    # given services whose keys differ only in case and letter
    services = {name: {"componentType": "worker"} for name in ("b", "A", "a", "B", "Zeta")}

    # when converted
    converted = dgd_to_v1beta1(_dgd(services))

    # then components follow byte-wise order: uppercase sorts before lowercase
    assert [component["name"] for component in converted["spec"]["components"]] == [
        "A",
        "B",
        "Zeta",
        "a",
        "b",
    ]


def test_an_unsorted_v1beta1_payload_order_leads_and_remaining_names_follow_sorted() -> None:
    # given a v1alpha1 read of a v1beta1-first object whose payload lists components out of order
    document = _dgd({name: {"componentType": "worker"} for name in ("Alpha", "Beta", "Gamma", "Delta")})
    payload = {"version": 1, "spec": {"components": [{"name": "Gamma"}, {"name": "Gone"}, {"name": "Alpha"}]}}
    document["metadata"]["annotations"] = {SPEC_KEY: json.dumps(payload), "team": "llm"}

    # when converted
    converted = dgd_to_v1beta1(document)

    # then surviving payload names lead in payload order, the rest follow sorted, the payload is consumed
    assert [component["name"] for component in converted["spec"]["components"]] == [
        "Gamma",
        "Alpha",
        "Beta",
        "Delta",
    ]
    assert converted["metadata"]["annotations"] == {"team": "llm"}


def test_worker_with_prefill_sub_type_is_promoted_and_the_sub_type_is_not_preserved() -> None:
    # given a worker whose sub-type is prefill
    document = _dgd({"Prefill": {"componentType": "worker", "subComponentType": "prefill"}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the component type is prefill and nothing needs preserving
    assert _components(converted)["Prefill"]["type"] == "prefill"
    assert "annotations" not in converted["metadata"]


def test_a_sub_type_that_is_not_promoted_is_preserved() -> None:
    # given a worker with a custom sub-type and a frontend carrying a decode sub-type
    document = _dgd(
        {
            "Router": {"componentType": "worker", "subComponentType": "router"},
            "Frontend": {"componentType": "frontend", "subComponentType": "decode"},
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the component types stay and both sub-types go to the payload
    components = _components(converted)
    assert components["Router"]["type"] == "worker"
    assert components["Frontend"]["type"] == "frontend"
    assert _preserved(converted)["services"] == {
        "Frontend": {"subComponentType": "decode"},
        "Router": {"subComponentType": "router"},
    }


def test_disabled_shared_memory_becomes_zero_and_a_size_it_ignores_is_preserved() -> None:
    # given one service with shared memory disabled and one disabled with a size
    document = _dgd(
        {
            "Plain": {"componentType": "worker", "sharedMemory": {"disabled": True}},
            "Sized": {"componentType": "worker", "sharedMemory": {"disabled": True, "size": "1Gi"}},
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then both get sharedMemorySize "0" and only the ignored size is preserved
    components = _components(converted)
    assert components["Plain"]["sharedMemorySize"] == "0"
    assert components["Sized"]["sharedMemorySize"] == "0"
    assert _preserved(converted)["services"] == {"Sized": {"sharedMemory": {"disabled": True, "size": "1Gi"}}}


def test_scaling_adapter_enabled_false_is_unset_and_preserved() -> None:
    # given a service with the scaling adapter explicitly disabled
    document = _dgd({"Worker": {"componentType": "worker", "scalingAdapter": {"enabled": False}}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then v1beta1 has no adapter marker and the payload keeps the disabled block
    assert "scalingAdapter" not in _components(converted)["Worker"]
    assert converted["metadata"]["annotations"][SPEC_KEY] == (
        '{"version":1,"spec":{"services":{"Worker":{"scalingAdapter":{}}}}}'
    )


def test_gpu_memory_service_and_failover_modes_are_renamed_and_disabled_ones_preserved() -> None:
    # given enabled GMS/failover in both modes, an unknown mode, and a disabled pair
    document = _dgd(
        {
            "Intra": {
                "componentType": "worker",
                "gpuMemoryService": {
                    "enabled": True,
                    "mode": "intraPod",
                    "deviceClassName": "gpu.nvidia.com",
                },
                "failover": {"enabled": True, "mode": "intraPod", "numShadows": 1},
            },
            "Inter": {
                "componentType": "worker",
                "gpuMemoryService": {"enabled": True, "mode": "interPod"},
                "failover": {"enabled": True, "mode": "somethingElse"},
            },
            "Off": {
                "componentType": "worker",
                "gpuMemoryService": {"enabled": False, "mode": "intraPod"},
                "failover": {"enabled": False},
            },
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then modes are PascalCase, other strings pass through, and disabled blocks move to the payload
    components = _components(converted)
    assert components["Intra"]["experimental"] == {
        "gpuMemoryService": {"mode": "IntraPod", "deviceClassName": "gpu.nvidia.com"},
        "failover": {"mode": "IntraPod", "numShadows": 1},
    }
    assert components["Inter"]["experimental"] == {
        "gpuMemoryService": {"mode": "InterPod"},
        "failover": {"mode": "somethingElse"},
    }
    assert "experimental" not in components["Off"]
    assert converted["metadata"]["annotations"][SPEC_KEY] == (
        '{"version":1,"spec":{"services":{"Off":{"gpuMemoryService":{"enabled":false,"mode":"intraPod"},'
        '"failover":{"enabled":false}}}}}'
    )


def test_checkpoint_converts_even_when_disabled() -> None:
    # given a disabled checkpoint block
    checkpoint = {"enabled": False, "mode": "Auto", "checkpointRef": "snap"}
    document = _dgd({"Worker": {"componentType": "worker", "checkpoint": checkpoint}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then it lands unchanged under experimental
    assert _components(converted)["Worker"]["experimental"] == {"checkpoint": checkpoint}


def test_frontend_sidecar_becomes_the_last_container_and_is_named_on_the_component() -> None:
    # given a service with a user container and a frontend sidecar
    document = _dgd(
        {
            "Epp": {
                "componentType": "epp",
                "extraPodSpec": {
                    "mainContainer": {"image": "epp:1"},
                    "containers": [{"name": "helper", "image": "helper:1"}],
                },
                "frontendSidecar": {
                    "image": "frontend:1",
                    "args": ["-m", "dynamo.frontend"],
                    "envFromSecret": "hf-token",
                    "envs": [{"name": "MODE", "value": "direct"}],
                },
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then main, the user container and the sidecar appear in that order
    epp = _components(converted)["Epp"]
    assert epp["frontendSidecar"] == "sidecar-frontend"
    assert _containers(epp) == [
        {"name": "main", "image": "epp:1"},
        {"name": "helper", "image": "helper:1"},
        {
            "name": "sidecar-frontend",
            "image": "frontend:1",
            "args": ["-m", "dynamo.frontend"],
            "env": [{"name": "MODE", "value": "direct"}],
            "envFrom": [{"secretRef": {"name": "hf-token"}}],
        },
    ]
    assert "frontendSidecar" in _preserved(converted)["services"]["Epp"]


def test_a_user_container_named_like_the_frontend_sidecar_is_not_duplicated() -> None:
    # given an extraPodSpec that already declares the sidecar container
    document = _dgd(
        {
            "Epp": {
                "componentType": "epp",
                "extraPodSpec": {"containers": [{"name": "sidecar-frontend", "image": "mine:1"}]},
                "frontendSidecar": {"image": "frontend:1"},
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the user's container is kept once and the whole extraPodSpec is preserved
    containers = _containers(_components(converted)["Epp"])
    assert containers == [{"name": "main"}, {"name": "sidecar-frontend", "image": "mine:1"}]
    assert _preserved(converted)["services"]["Epp"]["extraPodSpec"] == {
        "containers": [{"name": "sidecar-frontend", "image": "mine:1", "resources": {}}]
    }


def test_main_container_env_wins_in_place_over_dedicated_envs() -> None:
    # given dedicated envs and mainContainer envs sharing a name
    document = _dgd(
        {
            "Worker": {
                "componentType": "worker",
                "envs": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "extraPodSpec": {
                    "mainContainer": {
                        "image": "w:1",
                        "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                        "startupProbe": {"tcpSocket": {"port": 8000}},
                    }
                },
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then B keeps its position with the mainContainer value, C follows, startupProbe is kept
    main = _containers(_components(converted)["Worker"])[0]
    assert main["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]
    assert main["startupProbe"] == {"tcpSocket": {"port": 8000}}
    assert _preserved(converted)["services"]["Worker"] == {
        "envs": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "extraPodSpec": {
            "mainContainer": {
                "name": "",
                "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                "resources": {},
            }
        },
    }


def test_main_container_values_win_field_by_field_and_its_mounts_come_first() -> None:
    # given dedicated resources, probe and mount, overlaid by mainContainer values
    document = _dgd(
        {
            "Worker": {
                "componentType": "worker",
                "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
                "livenessProbe": {"httpGet": {"path": "/live", "port": 9090}, "periodSeconds": 10},
                "volumeMounts": [{"name": "data", "mountPoint": "/data"}],
                "extraPodSpec": {
                    "mainContainer": {
                        "resources": {"limits": {"cpu": "4000m"}},
                        "livenessProbe": {"periodSeconds": 5},
                        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                    }
                },
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then maps and probes merge key by key, quantities are canonical, mainContainer mounts lead
    main = _containers(_components(converted)["Worker"])[0]
    assert main["resources"] == {"limits": {"cpu": "4", "memory": "4Gi"}}
    assert main["livenessProbe"] == {"httpGet": {"path": "/live", "port": 9090}, "periodSeconds": 5}
    assert main["volumeMounts"] == [
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "data", "mountPath": "/data"},
    ]


def test_compilation_cache_comes_from_the_first_flagged_mount_and_several_flags_are_preserved() -> None:
    # given two cache-flagged mounts around a data mount
    mounts = [
        {"name": "cache-a", "mountPoint": "/cache/a", "useAsCompilationCache": True},
        {"name": "data", "mountPoint": "/data"},
        {"name": "cache-b", "useAsCompilationCache": True},
    ]
    document = _dgd({"Worker": {"componentType": "worker", "volumeMounts": mounts}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the first flagged mount is the cache, every mount is on main, the flat list is preserved
    worker = _components(converted)["Worker"]
    assert worker["compilationCache"] == {"pvcName": "cache-a", "mountPath": "/cache/a"}
    assert _containers(worker)[0]["volumeMounts"] == [
        {"name": "cache-a", "mountPath": "/cache/a"},
        {"name": "data", "mountPath": "/data"},
        {"name": "cache-b", "mountPath": ""},
    ]
    assert _preserved(converted)["services"]["Worker"]["volumeMounts"] == mounts


def test_a_component_with_only_a_cache_mount_gets_no_pod_template() -> None:
    # given a service whose only pod content is one cache mount without a mount point
    document = _dgd(
        {
            "Worker": {
                "componentType": "worker",
                "volumeMounts": [{"name": "c", "useAsCompilationCache": True}],
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the cache has no path and there is no template and no payload
    worker = _components(converted)["Worker"]
    assert worker["compilationCache"] == {"pvcName": "c"}
    assert "podTemplate" not in worker
    assert "annotations" not in converted["metadata"]


def test_unparseable_resource_quantities_are_dropped_and_the_resources_preserved() -> None:
    # given resources with a bad cpu value, a custom GPU type and a non-canonical memory spelling
    resources = {
        "limits": {"cpu": "lots", "memory": "2048Mi", "gpu": "2", "gpuType": "gpu.intel.com/xe"},
        "requests": {"custom": {"example.com/fpga": "1"}},
        "claims": [{"name": "gpus"}],
    }
    document = _dgd({"Worker": {"componentType": "worker", "resources": resources}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the bad value is gone, values are canonical, the GPU type is the key, claims are copied
    main = _containers(_components(converted)["Worker"])[0]
    assert main["resources"] == {
        "limits": {"memory": "2Gi", "gpu.intel.com/xe": "2"},
        "requests": {"example.com/fpga": "1"},
        "claims": [{"name": "gpus"}],
    }
    assert _preserved(converted)["services"]["Worker"] == {"resources": resources}


def test_status_services_become_components_and_a_stray_component_name_is_preserved() -> None:
    # given a status with a singular name, a consistent pair, a mismatched pair and a rolling update
    document = _dgd({"Worker": {"componentType": "worker"}})
    document["status"] = {
        "state": "successful",
        "observedGeneration": 3,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "AllReady",
                "message": "",
                "lastTransitionTime": "t",
            }
        ],
        "services": {
            "Single": {
                "componentKind": "Deployment",
                "componentName": "g-single",
                "replicas": 1,
                "updatedReplicas": 1,
            },
            "Pair": {
                "componentKind": "PodClique",
                "componentName": "g-pair-b",
                "componentNames": ["g-pair-a", "g-pair-b"],
                "replicas": 2,
                "updatedReplicas": 2,
                "readyReplicas": 2,
            },
            "Stray": {
                "componentKind": "Deployment",
                "componentName": "old",
                "componentNames": ["new"],
                "replicas": 1,
                "updatedReplicas": 0,
            },
        },
        "rollingUpdate": {
            "phase": "InProgress",
            "startTime": "2025-01-01T00:00:00Z",
            "updatedServices": ["Worker"],
        },
    }

    # when converted
    converted = dgd_to_v1beta1(document)

    # then components carry componentNames only, the rolling update names components
    status = converted["status"]
    assert status["state"] == "successful"
    assert status["observedGeneration"] == 3
    assert status["components"]["Single"] == {
        "componentKind": "Deployment",
        "componentNames": ["g-single"],
        "replicas": 1,
        "updatedReplicas": 1,
    }
    assert status["components"]["Pair"]["componentNames"] == ["g-pair-a", "g-pair-b"]
    assert "componentName" not in status["components"]["Pair"]
    assert status["rollingUpdate"] == {
        "phase": "InProgress",
        "startTime": "2025-01-01T00:00:00Z",
        "updatedComponents": ["Worker"],
    }
    assert "services" not in status
    assert converted["metadata"]["annotations"][STATUS_KEY] == (
        '{"state":"","services":{"Single":{"componentKind":"","componentName":"g-single","replicas":0,'
        '"updatedReplicas":0},"Stray":{"componentKind":"","componentName":"old","componentNames":["new"],'
        '"replicas":0,"updatedReplicas":0}}}'
    )


def test_a_null_service_is_dropped_and_remembered_as_null() -> None:
    # given a services map with a null entry
    document = _dgd({"Gone": None, "Worker": {"componentType": "worker"}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then only the real service becomes a component and the payload records the null
    assert [component["name"] for component in converted["spec"]["components"]] == ["Worker"]
    assert converted["metadata"]["annotations"][SPEC_KEY] == '{"version":1,"spec":{"services":{"Gone":null}}}'


def test_graph_level_fields_are_renamed_and_metadata_is_kept_except_private_keys() -> None:
    # given graph-level envs and topology, user metadata and a stale status payload
    document = _dgd(
        {"Worker": {"componentType": "worker"}},
        envs=[{"name": "LOG", "value": "debug"}],
        topologyConstraint={"topologyProfile": "rack-topology", "packDomain": "rack"},
        backendFramework="vllm",
    )
    document["metadata"]["labels"] = {"team": "llm"}
    document["metadata"]["annotations"] = {STATUS_KEY: "{}", "nvidia.com/dgd-other": "x", "note": "keep"}

    # when converted
    converted = dgd_to_v1beta1(document)

    # then envs is env, topologyProfile is clusterTopologyName, metadata otherwise unchanged
    assert converted["spec"]["env"] == [{"name": "LOG", "value": "debug"}]
    assert converted["spec"]["topologyConstraint"] == {
        "clusterTopologyName": "rack-topology",
        "packDomain": "rack",
    }
    assert converted["spec"]["backendFramework"] == "vllm"
    assert converted["metadata"] == {
        "name": "graph",
        "namespace": "ns",
        "labels": {"team": "llm"},
        "annotations": {"nvidia.com/dgd-other": "x", "note": "keep"},
    }


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (
            lambda d: d["spec"]["services"].update(VllmDecodeWorker="worker"),
            "spec.services[VllmDecodeWorker]",
        ),
        (
            lambda d: d["spec"]["services"]["VllmDecodeWorker"].update(componentType=7),
            "spec.services[VllmDecodeWorker].componentType",
        ),
        (
            lambda d: d["spec"]["services"]["Frontend"].update(volumeMounts=[{"name": ["x"]}]),
            "spec.services[Frontend].volumeMounts[0].name",
        ),
        (
            lambda d: d["spec"]["services"]["Frontend"].update(sharedMemory={"size": "lots"}),
            "spec.services[Frontend].sharedMemory.size",
        ),
        (lambda d: d["spec"].update(services=["Frontend"]), "spec.services"),
        (lambda d: d.update(apiVersion="nvidia.com/v1beta1"), "apiVersion"),
    ],
)
def test_input_the_conversion_cannot_handle_is_reported_at_its_path(mutate: Any, path: str) -> None:
    # given the fixture broken at one place
    document = _fixture()
    mutate(document)

    # when converted
    with pytest.raises(ConversionError) as raised:
        dgd_to_v1beta1(document)

    # then the error names the JSON path and reads "path: message"
    assert raised.value.path == path
    assert str(raised.value) == f"{path}: {raised.value.message}"
    assert isinstance(raised.value, ValueError)
