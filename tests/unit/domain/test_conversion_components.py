"""v1alpha1 → v1beta1 DGD conversion of a component's own fields: sub types, shared memory, scaling adapter,
GPU-memory-service and failover modes, and checkpoint (supplement §1).
"""

from __future__ import annotations

from dgd.domain.conversion.dgd import dgd_to_v1beta1
from tests.unit.domain.conversion_fixtures import (
    SPEC_KEY,
    _components,
    _dgd,
    _preserved,
)


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
