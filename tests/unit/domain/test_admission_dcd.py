"""Admission of DynamoComponentDeployments, create and update (supplement §4.7)."""

from __future__ import annotations

import copy
from typing import Any

import msgspec

from dgd.domain.admission.dcd import DCDVerdict, validate_dcd
from dgd.domain.admission.update import validate_update
from dgd.messages.dcd import API_VERSION, DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment
from tests.unit.domain.dgd_cases import small_dgd

IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0"


def _document(**spec: Any) -> dict[str, Any]:
    """A small valid DCD: a one-GPU vLLM worker; ``spec`` sets spec fields."""
    main = {"name": "main", "image": IMAGE, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {
        "apiVersion": API_VERSION,
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "demo-worker", "namespace": "team-a"},
        "spec": {
            "name": "Worker",
            "type": "worker",
            "backendFramework": "vllm",
            "podTemplate": {"spec": {"containers": [main]}},
            **spec,
        },
    }


def _main(document: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = document["spec"]["podTemplate"]["spec"]["containers"][0]
    return container


def _validate(new: dict[str, Any], old: dict[str, Any] | None = None) -> DCDVerdict:
    decode = msgspec.convert
    return validate_dcd(
        decode(new, DynamoComponentDeployment),
        None if old is None else decode(old, DynamoComponentDeployment),
    )


def _messages(verdict: DCDVerdict) -> list[str]:
    return [str(error) for error in verdict.errors]


def test_valid_dcd_is_admitted_on_create_and_update() -> None:
    """§4.7: a DCD that breaks no rule is admitted and returned."""
    # given a valid DCD
    document = _document()

    # when it is created, then sent again unchanged
    created, updated = _validate(document), _validate(copy.deepcopy(document), document)

    # then both are allowed
    assert (created.errors, updated.errors, updated.warnings) == ([], [], [])
    assert created.dcd is not None and updated.dcd is not None


def test_shared_component_rules_apply_as_on_the_component_pathway() -> None:
    """§4.7: the shared component rules run with Grove pathway = false (here: minAvailable)."""
    # given a DCD with minAvailable, a Grove-only field
    document = _document(replicas=2, minAvailable=1)

    # when it is created
    verdict = _validate(document)

    # then it is refused as outside Grove
    assert _messages(verdict) == [
        "spec.minAvailable: 1 is not allowed: minAvailable is currently supported only for Grove-backed "
        "DynamoGraphDeployment components (requires the Grove pathway, which a DynamoComponentDeployment "
        "never takes)"
    ]


def test_inter_pod_gms_is_refused_outside_grove() -> None:
    """§4.7 / §4.4 item 10.9: inter-pod GMS needs the Grove pathway, which a DCD never has."""
    # given a DCD with inter-pod GMS
    document = _document(experimental={"gpuMemoryService": {"mode": "InterPod"}})

    # when it is created
    verdict = _validate(document)

    # then it is refused
    assert _messages(verdict) == [
        'spec.experimental.gpuMemoryService.mode: "InterPod" is not allowed: '
        "requires the Grove pathway, which a DynamoComponentDeployment never takes"
    ]


def test_main_image_is_required_on_create() -> None:
    """§4.7: a DCD's main container needs an image (an error, unlike a DGD's warning)."""
    # given a DCD whose main container has no image
    document = _document()
    del _main(document)["image"]

    # when it is created
    verdict = _validate(document)

    # then it is refused
    assert _messages(verdict) == [
        "spec.podTemplate.spec.containers[0].image: is required: "
        "the main container must specify a non-empty image"
    ]


def test_main_image_without_semver_tag_needs_no_override() -> None:
    """§4.7: unlike a DGD, a missing runtimeVersionOverride is allowed."""
    # given a DCD whose image tag is not a version, without an override
    document = _document()
    _main(document)["image"] = "registry.example/vllm-runtime:latest"

    # when it is created
    verdict = _validate(document)

    # then it is allowed, without warnings
    assert (verdict.errors, verdict.warnings) == ([], [])


def test_provider_overrides_are_refused() -> None:
    """§4.7: only components embedded in a DGD can carry provider overrides."""
    # given a multinode DCD with a component and a leader provider override
    override = {"apiVersion": "grove.io/v1alpha1", "value": {"topologyConstraint": {}}}
    document = _document(
        providerOverride=override, multinode={"nodeCount": 2, "leader": {"providerOverride": override}}
    )

    # when it is created
    verdict = _validate(document)

    # then both are refused with upstream's message
    message = "provider overrides are supported only for components embedded in a DynamoGraphDeployment"
    assert _messages(verdict) == [
        f"spec.multinode.leader.providerOverride: {message}",
        f"spec.providerOverride: {message}",
    ]


def test_backend_framework_is_immutable_with_the_dgd_message_and_warning() -> None:
    """§4.7: backendFramework is immutable on update, with the DGD's message and warning (§4.5 rule 4)."""
    # given the same backend change on a DCD and on a DGD
    old, new = _document(), _document(backendFramework="sglang")
    graph_old, graph_new = small_dgd(), small_dgd()
    graph_new["spec"]["backendFramework"] = "sglang"

    # when both are admitted
    verdict = _validate(new, old)
    graph = validate_update(
        msgspec.convert(graph_old, DynamoGraphDeployment),
        msgspec.convert(graph_new, DynamoGraphDeployment),
        requester=None,
        operator_principal=None,
        grove_enabled=True,
    )

    # then the DCD is refused exactly as the DGD is
    assert [e.path for e in verdict.errors] == ["spec.backendFramework"]
    assert (verdict.errors, verdict.warnings) == (graph.errors, graph.warnings)


def test_shared_update_rules_apply() -> None:
    """§4.7: the shared update rules apply to a DCD (here: the single-node/multi-node switch)."""
    # given an update that makes the DCD multinode
    old, new = _document(), _document(multinode={"nodeCount": 2})

    # when it is admitted
    verdict = _validate(new, old)

    # then it is refused
    assert _messages(verdict) == [
        "spec.multinode: cannot change node topology between single-node and multi-node after creation"
    ]


def test_replicas_rule_never_applies_to_a_dcd() -> None:
    """§4.7: a DCD's replicas may change even with a scaling adapter."""
    # given a DCD with a scaling adapter whose replicas change
    old, new = _document(scalingAdapter={}, replicas=2), _document(scalingAdapter={}, replicas=3)

    # when it is admitted
    verdict = _validate(new, old)

    # then it is allowed
    assert verdict.errors == []


def test_main_image_cannot_be_removed_on_update() -> None:
    """§4.7 / §4.5 rule 3: on update the image rule is ratcheted; removing a set image is refused."""
    # given an update that removes the main image
    old, new = _document(), _document()
    del _main(new)["image"]

    # when it is admitted
    verdict = _validate(new, old)

    # then it is refused
    assert _messages(verdict) == [
        "spec.podTemplate.spec.containers[0].image: is required: "
        "the main container must specify a non-empty image"
    ]


def test_update_stateless_errors_are_returned_alone() -> None:
    """§4.7, as §4.5: a DCD failing the create rules is not also compared with its old version."""
    # given an update that adds a provider override and changes the backend
    override = {"apiVersion": "grove.io/v1alpha1", "value": {}}
    old, new = _document(), _document(backendFramework="sglang", providerOverride=override)

    # when it is admitted
    verdict = _validate(new, old)

    # then only the provider override is reported
    assert [e.path for e in verdict.errors] == ["spec.providerOverride"]
    assert verdict.warnings == []


def test_dcd_being_deleted_is_admitted() -> None:
    """§4.7, as §4.5: an update of a DCD being deleted is not checked (docs/decisions.md)."""
    # given an update of a deleting DCD that changes the backend
    old, new = _document(), _document(backendFramework="sglang")
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    # when it is admitted
    verdict = _validate(new, old)

    # then it is allowed
    assert verdict.errors == []
