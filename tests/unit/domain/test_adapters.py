"""Scaling adapters as decisions (dgd-domain §13): identity for the DGD, replicas for the controller."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dgd.domain.adapters import (
    ForeignController,
    adapter_body,
    adapter_name,
    adapter_patch,
    adapter_status,
    orphans,
    pod_selector,
    rescale,
    scaled,
    scaled_component,
)
from dgd.domain.ownership import controlled_by
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter as Adapter

OWNER = {
    "apiVersion": "nvidia.com/v1beta1",
    "kind": "DynamoGraphDeployment",
    "name": "demo",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def graph(*components: dict[str, Any]) -> DynamoGraphDeployment:
    document = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "demo", "namespace": "ns", "uid": "u-1"},
        "spec": {"components": list(components)},
    }
    return msgspec.convert(document, DynamoGraphDeployment)


def adapter(
    component: str = "Worker",
    *,
    replicas: int = 3,
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    dgd: str = "demo",
    status: dict[str, Any] | None = None,
) -> Adapter:
    document: dict[str, Any] = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {
            "name": f"demo-{component.lower()}",
            "namespace": "ns",
            "resourceVersion": "12",
            "labels": labels
            if labels is not None
            else {"nvidia.com/dynamo-graph-deployment-name": dgd, "nvidia.com/dynamo-component": component},
            "ownerReferences": owners if owners is not None else [OWNER],
        },
        "spec": {"replicas": replicas, "dgdRef": {"name": dgd, "componentName": component}},
    }
    if status is not None:
        document["status"] = status
    return msgspec.convert(document, Adapter)


def test_an_adapter_is_named_after_its_dgd_and_lowercase_component() -> None:
    assert adapter_name("demo", "VllmDecodeWorker") == "demo-vllmdecodeworker"


def test_a_new_adapter_is_labelled_referenced_owned_and_seeded_with_the_component_replicas() -> None:
    # given a component with 4 replicas, when its adapter is rendered
    dgd = graph({"name": "Worker", "replicas": 4, "scalingAdapter": {}})
    body = adapter_body(dgd, dgd.spec.components[0], OWNER)  # type: ignore[index]

    # then it carries the identity the controller and the DGD look for, and the replicas seeded
    assert body["metadata"] == {
        "name": "demo-worker",
        "namespace": "ns",
        "labels": {
            "nvidia.com/dynamo-graph-deployment-name": "demo",
            "nvidia.com/dynamo-component": "Worker",
        },
        "ownerReferences": [OWNER],
    }
    assert body["spec"] == {"replicas": 4, "dgdRef": {"name": "demo", "componentName": "Worker"}}


def test_an_adapter_of_a_component_without_replicas_is_seeded_with_one() -> None:
    dgd = graph({"name": "Worker", "scalingAdapter": {}})
    assert adapter_body(dgd, dgd.spec.components[0], OWNER)["spec"]["replicas"] == 1  # type: ignore[index]


def test_an_adapter_as_rendered_needs_no_patch_whatever_its_replicas() -> None:
    assert adapter_patch(adapter(replicas=17), "demo", "Worker", OWNER) is None


def test_drifted_labels_and_reference_are_patched_at_the_observed_version_and_replicas_never() -> None:
    # given an adapter whose component label was removed and whose reference points elsewhere
    drifted = adapter(labels={"nvidia.com/dynamo-graph-deployment-name": "demo", "team": "a"})
    drifted = msgspec.structs.replace(
        drifted,
        spec=msgspec.structs.replace(
            drifted.spec, dgd_ref=msgspec.structs.replace(drifted.spec.dgd_ref, name="x")
        ),
    )

    # when it is compared with what the DGD wants
    patch = adapter_patch(drifted, "demo", "Worker", OWNER)

    # then only what drifted is patched, with the resourceVersion observed
    assert patch == {
        "spec": {"dgdRef": {"name": "demo", "componentName": "Worker"}},
        "metadata": {"labels": {"nvidia.com/dynamo-component": "Worker"}, "resourceVersion": "12"},
    }


def test_a_missing_controller_reference_is_added_beside_other_owners() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "c-1"}
    patch = adapter_patch(adapter(owners=[other]), "demo", "Worker", OWNER)
    assert patch == {"metadata": {"ownerReferences": [other, OWNER], "resourceVersion": "12"}}


def test_a_reference_to_an_earlier_dgd_of_the_same_name_is_replaced_in_place() -> None:
    stale = {**OWNER, "uid": "u-0"}
    patch = adapter_patch(adapter(owners=[stale]), "demo", "Worker", OWNER)
    assert patch == {"metadata": {"ownerReferences": [OWNER], "resourceVersion": "12"}}


def test_an_adapter_controlled_by_another_object_is_not_adopted() -> None:
    foreign = {**OWNER, "name": "other", "uid": "u-9"}
    with pytest.raises(ForeignController, match="controlled by DynamoGraphDeployment other"):
        adapter_patch(adapter(owners=[foreign]), "demo", "Worker", OWNER)


def test_only_a_controller_reference_with_the_dgd_uid_makes_it_the_controller() -> None:
    assert controlled_by(adapter().metadata, "u-1")
    assert not controlled_by(adapter().metadata, "u-2")
    assert not controlled_by(adapter(owners=[{**OWNER, "controller": False}]).metadata, "u-1")
    assert not controlled_by(adapter(owners=[]).metadata, None)


def test_orphans_are_controlled_labelled_adapters_whose_component_is_gone() -> None:
    # given a DGD with one component, and adapters for it and for two removed ones
    dgd = graph({"name": "Worker", "scalingAdapter": {}})
    kept = adapter("Worker")
    removed = adapter("Prefill")
    foreign = adapter("Decode", owners=[{**OWNER, "uid": "someone-else"}])
    unlabelled = adapter("Router", labels={})

    # then only the one it controls and labels is an orphan
    assert orphans([kept, removed, foreign, unlabelled], dgd, "u-1") == [removed]


def test_the_component_an_adapter_drives_must_still_ask_for_one() -> None:
    dgd = graph({"name": "Worker", "scalingAdapter": {}}, {"name": "Frontend"})
    assert scaled_component(dgd, "Worker") is not None
    assert scaled_component(dgd, "Frontend") is None
    assert scaled_component(dgd, "Gone") is None


def test_a_rescale_changes_only_that_component_replicas_and_keeps_unknown_fields() -> None:
    # given a stored DGD with a field the operator does not model
    stored = {
        "metadata": {"name": "demo", "resourceVersion": "40"},
        "spec": {
            "futureField": {"x": 1},
            "components": [{"name": "Frontend"}, {"name": "Worker", "scalingAdapter": {}, "unknown": True}],
        },
    }

    # when the adapter asks for 5
    plan = rescale(stored, "Worker", 5)

    # then the worker goes from the default 1 to 5, and everything else is as stored
    assert plan is not None and plan.before == 1
    assert plan.body["spec"] == {
        "futureField": {"x": 1},
        "components": [
            {"name": "Frontend"},
            {"name": "Worker", "scalingAdapter": {}, "unknown": True, "replicas": 5},
        ],
    }
    assert plan.body["metadata"]["resourceVersion"] == "40"
    assert stored["spec"]["components"][1].get("replicas") is None  # type: ignore[index]


def test_no_rescale_when_the_component_has_the_replicas_or_no_longer_uses_an_adapter() -> None:
    spec = {"components": [{"name": "Worker", "replicas": 5, "scalingAdapter": {}}, {"name": "Frontend"}]}
    assert rescale({"spec": spec}, "Worker", 5) is None
    assert rescale({"spec": spec}, "Frontend", 2) is None
    assert rescale({"spec": spec}, "Gone", 2) is None


def test_the_status_mirrors_replicas_and_selector_and_is_silent_once_it_does() -> None:
    # given a fresh adapter, then its status is written with the component's pod selector
    selector = "nvidia.com/dynamo-component=Worker,nvidia.com/dynamo-graph-deployment-name=demo"
    assert pod_selector("demo", "Worker") == selector
    assert adapter_status(adapter(replicas=3)) == {"status": {"replicas": 3, "selector": selector}}

    # given an adapter whose status already says so, then nothing is written
    assert adapter_status(adapter(replicas=3, status={"replicas": 3, "selector": selector})) is None

    # given a scale just made, then only what changed is written, with the time of the scale
    written = adapter_status(
        adapter(replicas=4, status={"replicas": 3, "selector": selector}), "2026-01-01T00:00:00Z"
    )
    assert written == {"status": {"replicas": 4, "lastScaleTime": "2026-01-01T00:00:00Z"}}


def test_a_scale_event_names_the_component_and_relates_to_the_dgd() -> None:
    record = scaled("Worker", 2, 5, graph())
    assert (record.type, record.reason, record.action, record.note) == (
        "Normal",
        "Scaled",
        "Scale",
        "Scaled component Worker from 2 to 5 replicas",
    )
    assert record.related is not None and (record.related.kind, record.related.name) == (
        "DynamoGraphDeployment",
        "demo",
    )
