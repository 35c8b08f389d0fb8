"""v1alpha1 → v1beta1 DGD conversion of the worked examples (supplement §1.13, §1.14) and the order it emits
components in.
"""

from __future__ import annotations

import copy
import json

from dgd.domain.conversion.dgd import dgd_to_v1beta1
from tests.unit.domain.conversion_fixtures import (
    EXAMPLE_1_ANNOTATION,
    EXAMPLE_2_ANNOTATION,
    SPEC_KEY,
    VLLM_AGG,
    _components,
    _containers,
    _dgd,
    _fixture,
    example_2_input,
)
from tests.upstream import load_documents


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
