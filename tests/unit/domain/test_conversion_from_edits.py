"""v1beta1 → v1alpha1 conversion of DGDs edited between conversions, and of what it does not support
(supplement §1.12).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dgd.domain.conversion import ConversionError
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.domain.conversion.view import dgd_to_v1alpha1
from tests.unit.domain.conversion_fixtures import (
    ALPHA,
    SPEC_KEY,
    STATUS_KEY,
    _beta_dgd,
    _stored_example_1,
)

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
