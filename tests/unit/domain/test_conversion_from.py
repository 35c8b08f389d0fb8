"""v1beta1 → v1alpha1 conversion ("ConvertFrom"), the round trips of supplement §1.12, DCD and DGDSA
conversion (§1.11), and the webhook's one entry point ``convert``.

The round trips compare as upstream's fuzz tests do (§1.12): null, empty and Go-zero values equal
absent, and quantities compare by value (``2048Mi`` is ``2Gi``), since both versions store them in
Go types that forget the spelling.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from dgd.domain.conversion import ConversionError, convert
from dgd.domain.conversion.dcd import dcd_to_v1alpha1, dcd_to_v1beta1
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.domain.conversion.dgdsa import dgdsa_to_v1alpha1, dgdsa_to_v1beta1
from dgd.domain.conversion.view import dgd_to_v1alpha1
from dgd.domain.quantity import canonical_quantity
from tests.conversion_strategies import alpha_dgds, beta_dgds
from tests.unit.domain.conversion_fixtures import (
    EXAMPLE_2_ANNOTATION,
    FIXTURE,
    VLLM_AGG,
    _fixture,
    example_2_input,
)
from tests.upstream import DYNAMO, UPSTREAM, load_documents

SPEC_KEY = "nvidia.com/dgd-spec"
STATUS_KEY = "nvidia.com/dgd-status"
ALPHA = "nvidia.com/v1alpha1"
BETA = "nvidia.com/v1beta1"
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Keys whose values are Kubernetes quantities, and those whose "0" is a Go zero (absent).
_QUANTITY_KEYS = {"sharedMemorySize", "size", "cpu", "memory", "gpu"}
_ZERO_MEANS_ABSENT = {"size"}


def _upstream_dgds() -> list[Any]:
    # Every DGD under the upstream examples, fixtures, recipes and golden inputs.
    roots = [DYNAMO / "examples", DYNAMO / "recipes", DYNAMO / "deploy" / "utils" / "tests" / "fixtures"]
    files = sorted(path for root in roots for path in root.rglob("*.yaml"))
    files += sorted(
        (DYNAMO / "deploy" / "operator" / "internal" / "controller" / "testdata").rglob("input.yaml")
    )
    return [
        pytest.param(doc, id=f"{path.relative_to(UPSTREAM)}#{index}")
        for path in files
        for index, doc in enumerate(load_documents(path))
        if isinstance(doc, dict) and doc.get("kind") == "DynamoGraphDeployment"
    ]


UPSTREAM_DGDS = _upstream_dgds()


#: An enabled GPU-memory-service or failover block without a mode converts with the schema-default mode
#: (which the API server writes into any stored object of either version): docs/decisions.md, "Admission
#: webhooks". v1alpha1 blocks say so with ``enabled``.
_MODE_DEFAULTED = ("gpuMemoryService", "failover")


def normalized(value: Any, key: str = "", quantities: bool = False) -> Any:
    """``value`` as the §1.12 comparison sees it: empties dropped, quantities by value, the GMS and failover
    modes defaulted."""
    if isinstance(value, dict) and key in _MODE_DEFAULTED and not value.get("mode"):
        value = {**value, "mode": "intraPod" if "enabled" in value else "IntraPod"}
    if isinstance(value, dict):
        inner = quantities or key in ("limits", "requests")
        items = {name: normalized(item, name, inner) for name, item in value.items()}
        return {name: item for name, item in items.items() if not _is_empty(item)}
    if isinstance(value, list):
        return [normalized(item) for item in value]
    if (quantities or key in _QUANTITY_KEYS) and isinstance(value, str | int) and not isinstance(value, bool):
        value = canonical_quantity(value) or value
        return None if key in _ZERO_MEANS_ABSENT and value == "0" else value
    return value


def schema_defaulted(document: dict[str, Any]) -> dict[str, Any]:
    """A v1beta1 DGD with the mode its CRD defaults written into each empty GMS and failover block."""
    document = copy.deepcopy(document)
    for component in document.get("spec", {}).get("components") or []:
        for key in _MODE_DEFAULTED:
            block = (component.get("experimental") or {}).get(key)
            if block == {}:
                block["mode"] = "IntraPod"
    return document


def _is_empty(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _stored_example_1() -> dict[str, Any]:
    # §1.13: the stored object is the v1beta1 example's spec with the derived annotation.
    stored: dict[str, Any] = copy.deepcopy(load_documents(VLLM_AGG)[0])
    stored["metadata"] = {
        "name": "vllm-agg",
        "annotations": {
            SPEC_KEY: (
                '{"version":1,"spec":{"services":{"Frontend":{"envFromSecret":"hf-token-secret","extraPodSpec":'
                '{"mainContainer":{"name":"","resources":{}}}},"VllmDecodeWorker":{"resources":{"requests":'
                '{"custom":{"ephemeral-storage":"2Gi"}},"limits":{"gpu":"1"}},"envFromSecret":"hf-token-secret",'
                '"extraPodSpec":{"mainContainer":{"name":"","resources":{}}}}}}}'
            )
        },
    }
    return stored


# §1.13 and §1.14: the worked examples.


def test_worked_example_1_stored_object_reads_back_as_the_fixture_exactly() -> None:
    # given the stored v1beta1 object of §1.13 (example spec plus the derived annotation)
    stored = _stored_example_1()
    untouched = copy.deepcopy(stored)

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then it is the fixture exactly, with no payload on the view, and the input is unchanged
    assert view == _fixture()
    assert "annotations" not in view["metadata"]
    assert stored == untouched


def test_worked_example_1_view_converts_back_to_the_stored_object() -> None:
    # given the v1alpha1 view of the stored object of §1.13
    stored = _stored_example_1()
    view = dgd_to_v1alpha1(stored)

    # when it is written back through v1alpha1
    again = dgd_to_v1beta1(view)

    # then the stored object comes back, annotation bytes included
    assert again == stored


def test_worked_example_1_view_keys_are_in_go_struct_order() -> None:
    # given the stored object of §1.13
    stored = _stored_example_1()

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then the keys come in Go's order: TypeMeta first, service fields as declared, map keys sorted
    assert list(view) == ["kind", "apiVersion", "metadata", "spec"]
    assert list(view["spec"]["services"]) == ["Frontend", "VllmDecodeWorker"]
    assert list(view["spec"]["services"]["VllmDecodeWorker"]) == [
        "componentType",
        "resources",
        "envFromSecret",
        "extraPodSpec",
        "replicas",
    ]
    assert list(view["spec"]["services"]["VllmDecodeWorker"]["resources"]) == ["requests", "limits"]


def test_worked_example_2_stored_object_restores_every_v1alpha1_field() -> None:
    # given the stored v1beta1 object of §1.14, built from the spec's output (not from our ConvertTo)
    stored = _stored_example_1()
    stored["metadata"]["annotations"][SPEC_KEY] = EXAMPLE_2_ANNOTATION
    worker = next(item for item in stored["spec"]["components"] if item["name"] == "VllmDecodeWorker")
    worker.update({"type": "decode", "sharedMemorySize": "16Gi", "scalingAdapter": {}})
    worker["podTemplate"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "model-cache", "mountPath": "/root/.cache"}
    ]

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then every input field of §1.14 comes back, PVCs and flat volume mounts included
    assert view == example_2_input()


def test_worked_example_2_round_trips_through_v1beta1() -> None:
    # given the §1.14 input
    document = example_2_input()

    # when it goes to v1beta1 and back
    stored = dgd_to_v1beta1(document)
    view = dgd_to_v1alpha1(stored)

    # then the stored annotation is the spec's and the view is the input exactly
    assert stored["metadata"]["annotations"][SPEC_KEY] == EXAMPLE_2_ANNOTATION
    assert view == document


# §1.12: the round trips, on every upstream DGD.


@pytest.mark.parametrize("document", UPSTREAM_DGDS)
def test_every_upstream_dgd_round_trips_through_the_other_version(document: dict[str, Any]) -> None:
    # given an upstream DGD in whichever version it was written
    untouched = copy.deepcopy(document)

    # when it goes to the other version and back
    if document["apiVersion"] == ALPHA:
        there = dgd_to_v1beta1(document)
        back = dgd_to_v1alpha1(there)
    else:
        there = dgd_to_v1alpha1(document)
        back = dgd_to_v1beta1(there)

    # then it comes back (v1beta1 bit for bit), and neither input was touched
    assert there["apiVersion"] != document["apiVersion"]
    if document["apiVersion"] == BETA:
        assert back == schema_defaulted(document)
    assert normalized(back) == normalized(document)
    assert document == untouched


def test_upstream_dgds_cover_both_versions() -> None:
    # given the parametrized upstream DGDs
    versions = [param.values[0]["apiVersion"] for param in UPSTREAM_DGDS]

    # then both versions are exercised, the recipe and the fixture among them
    assert versions.count(ALPHA) >= 4
    assert versions.count(BETA) >= 8
    assert any("recipes" in str(param.id) for param in UPSTREAM_DGDS)
    assert any(Path(str(param.id).split("#")[0]).name == FIXTURE.name for param in UPSTREAM_DGDS)


# §1.12: the round trips, on generated DGDs.


@PROPERTY
@given(alpha_dgds())
def test_generated_v1alpha1_dgds_round_trip_through_v1beta1(document: dict[str, Any]) -> None:
    # when a v1alpha1 DGD goes to v1beta1 and back
    stored = dgd_to_v1beta1(document)
    view = dgd_to_v1alpha1(stored)

    # then nothing is lost (the view may carry the v1beta1-origin marker), and writing the view
    # back gives the stored object, payload bytes included
    assert normalized(_without_private_keys(view)) == normalized(document)
    assert normalized(dgd_to_v1beta1(view)) == normalized(stored)


@PROPERTY
@given(beta_dgds())
def test_generated_v1beta1_dgds_round_trip_through_v1alpha1(document: dict[str, Any]) -> None:
    # when a v1beta1 DGD goes to v1alpha1 and back
    view = dgd_to_v1alpha1(document)
    stored = dgd_to_v1beta1(view)

    # then nothing is lost, and nothing v1alpha1-only was invented on the way
    assert normalized(stored) == normalized(document)
    assert SPEC_KEY not in stored["metadata"].get("annotations", {})
    assert STATUS_KEY not in stored["metadata"].get("annotations", {})


@PROPERTY
@given(alpha_dgds())
def test_converting_a_view_again_gives_the_same_view(document: dict[str, Any]) -> None:
    # given the v1alpha1 view of a stored v1alpha1-first DGD
    view = dgd_to_v1alpha1(dgd_to_v1beta1(document))

    # when the view is written back and read again
    again = dgd_to_v1alpha1(dgd_to_v1beta1(view))

    # then it is the same view, byte for byte
    assert again == view


# §1.12: edits in between, and what is not supported.


def test_a_v1beta1_only_layout_is_kept_on_the_view_and_laid_back() -> None:
    # given a v1beta1-first component with main last, mount details and template metadata
    stored = _beta_dgd(
        {
            "name": "worker",
            "type": "worker",
            "compilationCache": {"pvcName": "cache", "mountPath": "/cache"},
            "podTemplate": {
                "metadata": {"name": "tpl", "labels": {"team": "llm"}},
                "spec": {
                    "containers": [
                        {"name": "helper", "image": "busybox"},
                        {
                            "name": "main",
                            "image": "w:1",
                            "volumeMounts": [{"name": "data", "mountPath": "/d", "readOnly": True}],
                        },
                    ]
                },
            },
        }
    )

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then the flat form holds what it can, the view's payload the rest, and the way back is exact
    service = view["spec"]["services"]["worker"]
    assert service["volumeMounts"] == [
        {"name": "cache", "mountPoint": "/cache", "useAsCompilationCache": True},
        {"name": "data", "mountPoint": "/d"},
    ]
    assert service["extraPodMetadata"] == {"labels": {"team": "llm"}}
    assert service["extraPodSpec"] == {
        "containers": [{"name": "helper", "image": "busybox"}],
        "mainContainer": {"image": "w:1"},
    }
    assert json.loads(view["metadata"]["annotations"][SPEC_KEY]) == {
        "version": 1,
        "spec": {
            "components": [
                {
                    "name": "worker",
                    "podTemplate": {
                        "metadata": {"name": "tpl"},
                        "spec": {
                            "containers": [
                                {"name": "helper"},
                                {
                                    "name": "main",
                                    "volumeMounts": [{"name": "data", "readOnly": True, "mountPath": "/d"}],
                                },
                            ]
                        },
                    },
                }
            ]
        },
    }
    assert dgd_to_v1beta1(view) == stored


def test_an_edited_flat_mount_wins_over_the_mount_details_on_the_view() -> None:
    # given the view of a component whose main mount has details v1alpha1 cannot hold
    stored = _beta_dgd(
        {
            "name": "worker",
            "podTemplate": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "volumeMounts": [{"name": "data", "mountPath": "/d", "readOnly": True}],
                        }
                    ]
                }
            },
        }
    )
    view = dgd_to_v1alpha1(stored)

    # when the user moves the mount on the v1alpha1 side
    view["spec"]["services"]["worker"]["volumeMounts"] = [{"name": "data", "mountPoint": "/elsewhere"}]
    again = dgd_to_v1beta1(view)

    # then the live mount wins and the stale details are not laid back
    main = again["spec"]["components"][0]["podTemplate"]["spec"]["containers"][0]
    assert main["volumeMounts"] == [{"mountPath": "/elsewhere", "name": "data"}]


def test_an_edited_main_container_env_from_is_not_turned_back_into_env_from_secret() -> None:
    # given the stored object of §1.13, edited through v1beta1: Frontend now reads another secret
    stored = _stored_example_1()
    frontend = stored["spec"]["components"][0]
    frontend["podTemplate"]["spec"]["containers"][0]["envFrom"] = [{"secretRef": {"name": "other"}}]

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then the live envFrom stays on mainContainer; the saved envFromSecret no longer matches it
    service = view["spec"]["services"]["Frontend"]
    assert "envFromSecret" not in service
    assert service["extraPodSpec"]["mainContainer"]["envFrom"] == [{"secretRef": {"name": "other"}}]


def test_edited_resources_win_over_the_saved_v1alpha1_resources() -> None:
    # given the stored object of §1.13, edited through v1beta1: the worker now needs two GPUs
    stored = _stored_example_1()
    worker = stored["spec"]["components"][1]
    worker["podTemplate"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "2"}

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then the resources are the live ones, spelled the v1alpha1 way
    assert view["spec"]["services"]["VllmDecodeWorker"]["resources"] == {
        "requests": {"custom": {"ephemeral-storage": "2Gi"}},
        "limits": {"gpu": "2"},
    }


def test_saved_entries_of_removed_components_are_ignored() -> None:
    # given the stored object of §1.13 with its worker deleted through v1beta1
    stored = _stored_example_1()
    del stored["spec"]["components"][1]

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then only Frontend is a service; the worker's saved entry does not resurrect it
    assert list(view["spec"]["services"]) == ["Frontend"]


def test_a_component_removed_on_the_view_ignores_its_payload_entry() -> None:
    # given the view of a v1beta1-first DGD in unsorted order
    stored = _beta_dgd({"name": "b", "type": "worker"}, {"name": "a", "type": "frontend"}, {"name": "c"})
    view = dgd_to_v1alpha1(stored)

    # when the user deletes service b on the view
    del view["spec"]["services"]["b"]
    again = dgd_to_v1beta1(view)

    # then the remaining components keep the recorded order
    assert [item["name"] for item in again["spec"]["components"]] == ["a", "c"]


def test_an_unsorted_component_order_is_kept_on_the_view_and_comes_back() -> None:
    # given a v1beta1-first DGD whose components are not sorted by name
    stored = _beta_dgd({"name": "b", "type": "worker"}, {"name": "a", "type": "frontend"})

    # when it is read as v1alpha1 and written back
    view = dgd_to_v1alpha1(stored)
    again = dgd_to_v1beta1(view)

    # then the view's payload lists every component in v1beta1 order and the order comes back
    assert view["metadata"]["annotations"][SPEC_KEY] == (
        '{"version":1,"spec":{"components":[{"name":"b"},{"name":"a"}]}}'
    )
    assert [item["name"] for item in again["spec"]["components"]] == ["b", "a"]


def test_user_supplied_private_annotations_are_consumed_and_other_keys_kept() -> None:
    # given a v1beta1 DGD with a garbage spec payload and another nvidia.com/dgd- key
    stored = _beta_dgd({"name": "worker", "type": "worker"})
    stored["metadata"]["annotations"] = {SPEC_KEY: "not json", "nvidia.com/dgd-other": "x"}

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then the unparseable payload is ignored and removed, the other reserved key stays
    assert view["metadata"]["annotations"] == {"nvidia.com/dgd-other": "x"}
    assert view["spec"]["services"] == {"worker": {"componentType": "worker"}}


def test_a_decode_component_type_without_sub_type_is_normalized_to_a_worker() -> None:
    # given the known lossy corner of §1.4: componentType decode without a sub-type
    document = {
        "apiVersion": ALPHA,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "g"},
        "spec": {"services": {"Decode": {"componentType": "decode"}}},
    }

    # when it goes to v1beta1 and back
    view = dgd_to_v1alpha1(dgd_to_v1beta1(document))

    # then it reads as worker + decode
    assert view["spec"]["services"]["Decode"] == {"componentType": "worker", "subComponentType": "decode"}


def test_a_service_name_equal_to_its_key_reads_back_empty() -> None:
    # given services whose serviceName equals their key, and one whose serviceName differs (§1.4)
    document = {
        "apiVersion": ALPHA,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "g"},
        "spec": {"services": {"Same": {"serviceName": "Same"}, "Other": {"serviceName": "legacy"}}},
    }

    # when they go to v1beta1 and back
    view = dgd_to_v1alpha1(dgd_to_v1beta1(document))

    # then the key is the name: only the differing serviceName was saved and comes back
    assert view["spec"]["services"] == {"Other": {"serviceName": "legacy"}, "Same": {}}


def test_a_cache_mount_that_is_not_first_keeps_its_place() -> None:
    # given flat mounts where the compilation cache comes second (see docs/decisions.md)
    mounts = [
        {"name": "data", "mountPoint": "/data"},
        {"name": "cache", "mountPoint": "/cache", "useAsCompilationCache": True},
    ]
    document = {
        "apiVersion": ALPHA,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "g"},
        "spec": {"services": {"Worker": {"componentType": "worker", "volumeMounts": mounts}}},
    }

    # when it goes to v1beta1 and back
    stored = dgd_to_v1beta1(document)
    view = dgd_to_v1alpha1(stored)

    # then v1beta1 has the cache, and the flat list comes back in its order
    assert stored["spec"]["components"][0]["compilationCache"] == {"mountPath": "/cache", "pvcName": "cache"}
    assert view["spec"]["services"]["Worker"]["volumeMounts"] == mounts


def test_status_component_name_is_derived_or_restored_while_the_list_matches() -> None:
    # given a stored status: one component whose saved componentName still matches, one edited since
    stored = _beta_dgd({"name": "a"}, {"name": "b"})
    stored["status"] = {
        "state": "successful",
        "components": {
            "a": {
                "componentKind": "Deployment",
                "componentNames": ["new"],
                "replicas": 1,
                "updatedReplicas": 1,
            },
            "b": {
                "componentKind": "Deployment",
                "componentNames": ["b-2"],
                "replicas": 1,
                "updatedReplicas": 1,
            },
        },
        "rollingUpdate": {"phase": "Completed", "updatedComponents": ["a"]},
    }
    stored["metadata"]["annotations"] = {
        STATUS_KEY: '{"state":"","services":{"a":{"componentKind":"","componentName":"old","componentNames":'
        '["new"],"replicas":0,"updatedReplicas":0},"b":{"componentKind":"","componentName":"b-1","replicas":0,'
        '"updatedReplicas":0}}}'
    }

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then a's stray name comes back, b's derives from its list, and the status payload is gone
    services = view["status"]["services"]
    assert services["a"]["componentName"] == "old"
    assert services["a"]["componentNames"] == ["new"]
    assert services["b"]["componentName"] == "b-2"
    assert view["status"]["rollingUpdate"] == {"phase": "Completed", "updatedServices": ["a"]}
    assert "annotations" not in view["metadata"]


def test_an_unreadable_status_payload_is_an_error() -> None:
    # given a stored DGD whose status payload is not JSON
    stored = _beta_dgd({"name": "worker"})
    stored["metadata"]["annotations"] = {STATUS_KEY: "{broken"}

    # when it is read as v1alpha1
    with pytest.raises(ConversionError) as raised:
        dgd_to_v1alpha1(stored)

    # then the error names the annotation, in upstream's wording
    assert raised.value.path == f"metadata.annotations[{STATUS_KEY}]"
    assert raised.value.message.startswith(f"unmarshal {STATUS_KEY} annotation: ")


@pytest.mark.parametrize(
    ("components", "path", "message"),
    [
        (
            [{"name": "a"}, {"name": "a"}],
            "spec.components",
            'duplicate component name "a" in spec.components',
        ),
        ([{"name": "a", "replicas": "2"}], "spec.components[0].replicas", "must be an integer"),
        (
            [{"name": "a", "sharedMemorySize": "lots"}],
            "spec.components[0].sharedMemorySize",
            "must be a Kubernetes quantity such as 8Gi",
        ),
        ("a", "spec.components", "must be a list"),
    ],
)
def test_v1beta1_input_the_conversion_cannot_handle_is_reported_at_its_path(
    components: Any, path: str, message: str
) -> None:
    # given a v1beta1 DGD broken at one place
    stored = _beta_dgd()
    stored["spec"]["components"] = components

    # when it is read as v1alpha1
    with pytest.raises(ConversionError) as raised:
        dgd_to_v1alpha1(stored)

    # then the error names the place and what is wrong
    assert (raised.value.path, raised.value.message) == (path, message)


# §1.11: DCDs.


def test_a_dcd_with_an_empty_service_name_gets_the_nil_record_and_reads_back_blank() -> None:
    # given a v1alpha1 DCD without a serviceName and without a pod template
    document = _dcd(ALPHA, {"componentType": "frontend", "replicas": 1}, "g-frontend")

    # when it goes to v1beta1 and back
    stored = dcd_to_v1beta1(document)
    view = dcd_to_v1alpha1(stored)

    # then the name is the object's, the record is exactly §1.11's, and serviceName is blank again
    assert stored["spec"]["name"] == "g-frontend"
    assert stored["metadata"]["annotations"] == {
        "nvidia.com/dcd-spec": '{"version":1,"spec":{},"rawJSON":[{"path":"serviceName","nil":true}]}'
    }
    assert view == document


def test_a_dcd_round_trips_with_v1alpha1_only_fields_and_the_pod_selector() -> None:
    # given a v1alpha1 DCD with v1alpha1-only fields, a pod template and a status with a pod selector
    document = _dcd(
        ALPHA,
        {
            "backendFramework": "vllm",
            "serviceName": "Worker",
            "componentType": "worker",
            "subComponentType": "decode",
            "dynamoNamespace": "legacy",
            "ingress": {"enabled": True, "host": "worker"},
            "envFromSecret": "hf-token-secret",
            "extraPodSpec": {"mainContainer": {"image": "w:1.0.0"}},
        },
        "g-frontend",
    )
    document["status"] = {
        "observedGeneration": 2,
        "podSelector": {"app": "worker"},
        "service": {
            "componentKind": "Deployment",
            "componentName": "g-worker",
            "replicas": 1,
            "updatedReplicas": 1,
        },
    }

    # when it goes to v1beta1 and back
    stored = dcd_to_v1beta1(document)
    view = dcd_to_v1alpha1(stored)

    # then v1beta1 has the component and its status, and the view is the input exactly
    assert stored["spec"]["name"] == "Worker"
    assert stored["spec"]["type"] == "decode"
    assert stored["status"]["component"]["componentNames"] == ["g-worker"]
    assert "podSelector" not in stored["status"]
    assert view == document


def test_a_v1beta1_dcd_round_trips_including_an_empty_name_and_its_origin() -> None:
    # given v1beta1-first DCDs: one with a template, one without a name
    templated = _dcd(
        BETA,
        {
            "name": "Worker",
            "type": "worker",
            "podTemplate": {"spec": {"containers": [{"name": "main", "image": "w:1"}]}},
        },
        "g-worker",
    )
    nameless = _dcd(BETA, {"type": "frontend", "replicas": 1}, "g-worker")

    # when each is read as v1alpha1 and written back
    views = [dcd_to_v1alpha1(templated), dcd_to_v1alpha1(nameless)]
    again = [dcd_to_v1beta1(view) for view in views]

    # then they come back (the nameless one with §1.11's empty-serviceName record, which any
    # v1alpha1 write of a blank serviceName leaves), and the views carry the origin and the empty name
    assert again[0] == templated
    assert again[1]["spec"] == nameless["spec"]
    assert again[1]["metadata"]["annotations"] == {
        "nvidia.com/dcd-spec": '{"version":1,"spec":{},"rawJSON":[{"path":"serviceName","nil":true}]}'
    }
    assert views[0]["spec"]["serviceName"] == "Worker"
    assert views[0]["metadata"]["annotations"] == {
        "nvidia.com/dcd-spec": '{"version":1,"spec":{"name":"Worker"}}'
    }
    assert views[1]["metadata"]["annotations"] == {"nvidia.com/dcd-spec": '{"version":1,"spec":{"name":""}}'}


# §1.11: DGDSAs.


def test_a_dgdsa_renames_the_reference_both_ways_and_keeps_everything_else() -> None:
    # given a v1alpha1 scaling adapter with a status
    document = {
        "apiVersion": ALPHA,
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {"name": "g-worker", "namespace": "ns", "annotations": {"note": "x"}},
        "spec": {"replicas": 3, "dgdRef": {"name": "g", "serviceName": "Worker"}},
        "status": {"replicas": 2, "selector": "app=worker", "lastScaleTime": "2026-01-01T00:00:00Z"},
    }

    # when it goes to v1beta1 and back
    stored = dgdsa_to_v1beta1(document)
    view = dgdsa_to_v1alpha1(stored)

    # then only the version and the reference's key changed, and the way back is exact
    assert stored["spec"] == {"dgdRef": {"componentName": "Worker", "name": "g"}, "replicas": 3}
    assert stored["status"] == document["status"]
    assert stored["metadata"] == document["metadata"]
    assert view == document


# The webhook's entry point.


@pytest.mark.parametrize(
    ("document", "to", "converter"),
    [
        (
            {"kind": "DynamoGraphDeployment", "apiVersion": ALPHA, "metadata": {"name": "g"}},
            BETA,
            dgd_to_v1beta1,
        ),
        (
            {"kind": "DynamoGraphDeployment", "apiVersion": BETA, "metadata": {"name": "g"}},
            ALPHA,
            dgd_to_v1alpha1,
        ),
        (
            {"kind": "DynamoComponentDeployment", "apiVersion": ALPHA, "metadata": {"name": "d"}},
            BETA,
            dcd_to_v1beta1,
        ),
        (
            {"kind": "DynamoComponentDeployment", "apiVersion": BETA, "metadata": {"name": "d"}},
            ALPHA,
            dcd_to_v1alpha1,
        ),
        (
            {
                "kind": "DynamoGraphDeploymentScalingAdapter",
                "apiVersion": ALPHA,
                "spec": {"dgdRef": {"serviceName": "W"}},
            },
            BETA,
            dgdsa_to_v1beta1,
        ),
        (
            {
                "kind": "DynamoGraphDeploymentScalingAdapter",
                "apiVersion": BETA,
                "spec": {"dgdRef": {"componentName": "W"}},
            },
            ALPHA,
            dgdsa_to_v1alpha1,
        ),
    ],
)
def test_convert_picks_the_conversion_by_kind_and_desired_version(
    document: dict[str, Any], to: str, converter: Any
) -> None:
    # when the webhook asks for the other version
    converted = convert(document, to)

    # then the result is that kind's conversion, at the desired version
    assert converted == converter(document)
    assert converted["apiVersion"] == to


def test_convert_to_the_same_version_returns_an_unchanged_copy() -> None:
    # given a stored v1beta1 DGD
    stored = _stored_example_1()

    # when the desired version is its own
    converted = convert(stored, BETA)

    # then it is an equal copy, not the input itself
    assert converted == stored
    assert converted is not stored
    converted["metadata"]["annotations"].clear()
    assert stored["metadata"]["annotations"]


@pytest.mark.parametrize(
    ("document", "to", "path", "names"),
    [
        (
            {"kind": "DynamoGraphDeploymentRequest", "apiVersion": ALPHA},
            BETA,
            "kind",
            ["DynamoGraphDeploymentRequest", "DynamoComponentDeployment"],
        ),
        ({"apiVersion": ALPHA}, BETA, "kind", ["None", "DynamoGraphDeploymentScalingAdapter"]),
        (
            {"kind": "DynamoGraphDeployment", "apiVersion": "nvidia.com/v2"},
            BETA,
            "apiVersion",
            ["nvidia.com/v2", ALPHA, BETA],
        ),
        (
            {"kind": "DynamoGraphDeployment", "apiVersion": ALPHA},
            "v1beta1",
            "apiVersion",
            ["'v1beta1'", ALPHA, BETA],
        ),
    ],
)
def test_convert_refuses_an_unknown_kind_or_version_and_says_what_is_allowed(
    document: dict[str, Any], to: str, path: str, names: list[str]
) -> None:
    # when the webhook asks for something no conversion serves
    with pytest.raises(ConversionError) as raised:
        convert(document, to)

    # then the error names the field, the bad value and what is allowed
    assert raised.value.path == path
    for name in names:
        assert name in raised.value.message


def _without_private_keys(document: dict[str, Any]) -> dict[str, Any]:
    # The view's own payload is conversion state, not user data (§1.12 "not supported").
    document = copy.deepcopy(document)
    annotations = document["metadata"].get("annotations", {})
    annotations.pop(SPEC_KEY, None)
    if not annotations:
        document["metadata"].pop("annotations", None)
    return document


def _beta_dgd(*components: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": BETA,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph"},
        "spec": {"components": list(components)},
    }


def _dcd(version: str, spec: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "apiVersion": version,
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_a_second_cache_flagged_mount_is_mounted_on_main_and_round_trips() -> None:
    # given a v1alpha1 service with two mounts flagged as the compilation cache and nothing else
    # (found by the property above: the second mount vanished from the rendered pod and the view)
    mounts = [
        {"name": "cache", "mountPoint": "/cache", "useAsCompilationCache": True},
        {"name": "data", "mountPoint": "/data", "useAsCompilationCache": True},
    ]
    document = {
        "apiVersion": ALPHA,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph", "namespace": "ns"},
        "spec": {"services": {"a": {"volumeMounts": mounts}}},
    }

    # when it is stored as v1beta1 and read back as v1alpha1
    stored = dgd_to_v1beta1(document)
    view = dgd_to_v1alpha1(stored)

    # then the first is the cache, both are mounted on main, and the view gives both back
    component = stored["spec"]["components"][0]
    assert component["compilationCache"] == {"pvcName": "cache", "mountPath": "/cache"}
    main = component["podTemplate"]["spec"]["containers"][0]
    assert [(m["name"], m["mountPath"]) for m in main["volumeMounts"]] == [
        ("cache", "/cache"),
        ("data", "/data"),
    ]
    assert view["spec"]["services"]["a"]["volumeMounts"] == mounts
