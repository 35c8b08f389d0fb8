"""Admission of DGD updates (supplement §4.5): each rule, its exemptions (§4.6), and what is never checked."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from msgspec import structs

from dgd.domain.admission.component_updates import check_component_update
from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER
from dgd.domain.admission.principals import Requester
from dgd.domain.admission.update import validate_update
from dgd.domain.admission.validation import Verdict
from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment
from tests.unit.domain.dgd_cases import runtime_image, small_dgd

OPERATOR = "system:serviceaccount:dynamo-system:dynamo-operator-controller-manager"
PLANNER = "system:serviceaccount:team-a:planner-serviceaccount"
ALICE = Requester("alice", ("system:authenticated",))
POWER = "dynamo.nvidia.com/gpu-power-limit"
WORKER = "spec.components[1]"


def _document(*, provider: str | None = "grove", **worker: Any) -> dict[str, Any]:
    """A small valid, stored v1beta1 DGD with its provider recorded; ``worker`` sets worker fields."""
    annotations = {WORKLOAD_PROVIDER: provider} if provider is not None else {}
    return small_dgd(annotations=annotations, namespace="team-a", **worker)


def _decode(document: dict[str, Any]) -> DynamoGraphDeployment:
    return msgspec.convert(document, DynamoGraphDeployment)


def _worker_main(document: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = document["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]
    return container


def _update(
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    requester: Requester | None = ALICE,
    principal: str | None = OPERATOR,
    grove_enabled: bool = True,
) -> Verdict:
    return validate_update(
        _decode(old),
        _decode(new),
        requester=requester,
        operator_principal=principal,
        grove_enabled=grove_enabled,
    )


def _messages(verdict: Verdict) -> list[str]:
    return [str(error) for error in verdict.errors]


def test_unchanged_dgd_is_admitted_and_returned() -> None:
    """§4.5: an update that changes nothing passes every rule."""
    # given a stored DGD and the same DGD sent again
    old = _document()

    # when the update is admitted
    verdict = _update(old, copy.deepcopy(old))

    # then it is allowed, without warnings, and the verdict carries the new DGD
    assert verdict.errors == []
    assert verdict.warnings == []
    assert verdict.dgd is not None
    assert verdict.dgd.metadata.name == "demo"


def test_dgd_being_deleted_is_admitted_whatever_it_changes() -> None:
    """§4.5: validation is skipped when deletionTimestamp is set, so finalizers can be removed."""
    # given an update that adds a component and breaks a stateless rule, on a DGD being deleted
    old = _document()
    new = _document()
    new["metadata"]["annotations"]["nvidia.com/grove-update-strategy"] = "Sometimes"
    new["spec"]["components"].append({"name": "Extra", "type": "planner"})
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    # when the update is admitted
    verdict = _update(old, new)

    # then nothing is checked
    assert verdict.errors == []
    assert verdict.dgd is not None


def test_stateless_errors_are_returned_alone() -> None:
    """§4.5: when the new DGD fails the create checks, the update rules do not run."""
    # given an update that both breaks a create rule (an annotation value) and adds a component
    old = _document()
    new = _document()
    new["metadata"]["annotations"]["nvidia.com/grove-update-strategy"] = "Sometimes"
    new["spec"]["components"].append({"name": "Extra", "type": "planner"})

    # when the update is admitted
    verdict = _update(old, new)

    # then only the stateless error is reported, not the component-set error
    assert _messages(verdict) == [
        'metadata.annotations[nvidia.com/grove-update-strategy]: "Sometimes" is not allowed: '
        'must be "RollingRecreate" or "OnDelete"'
    ]
    assert verdict.dgd is None


def test_restart_request_is_allowed_on_update() -> None:
    """§4.5: the stateless traversal omits the create-only rule that spec.restart is unset."""
    # given an update that asks for a restart
    old = _document()
    new = _document()
    new["spec"]["restart"] = {"id": "r1"}

    # when the update is admitted
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


def test_restart_order_is_still_checked_on_update() -> None:
    """§4.5 / §4.4 item 11: the restart order rules stay part of the stateless traversal."""
    # given a restart request whose order names an unknown component
    old = _document()
    new = _document()
    new["spec"]["restart"] = {"id": "r1", "strategy": {"order": ["Frontend", "Nope"]}}

    # when the update is admitted
    verdict = _update(old, new)

    # then the order is refused
    assert _messages(verdict) == ['spec.restart.strategy.order[1]: "Nope" is not one of Frontend, Worker']


def test_runtime_version_is_not_a_stateless_error_on_update() -> None:
    """§4.5: the stateless traversal runs without the runtime-version items (§4.4 item 10.13)."""
    # given a stored DGD whose worker image has no semver tag, sent again unchanged
    old = _document()
    _worker_main(old)["image"] = runtime_image("latest")

    # when the update is admitted
    verdict = _update(old, copy.deepcopy(old))

    # then neither an error nor a warning is reported: the pair did not change
    assert verdict.errors == []
    assert verdict.warnings == []


# §4.5 rule 1: the workload-provider annotation.


def test_provider_annotation_may_not_be_added_by_a_user() -> None:
    """§4.5 rule 1 / §4.6: adding the provider annotation is reserved to the operator principal."""
    # given a DGD stored without a provider, and a user's update that adds one
    old, new = _document(provider=None), _document(provider="grove")

    # when a user sends it
    verdict = _update(old, new, requester=ALICE)

    # then it is forbidden
    assert _messages(verdict) == [
        'metadata.annotations[nvidia.com/workload-provider]: "grove" is not allowed: '
        "may only be materialized by the Dynamo operator"
    ]


def test_provider_annotation_may_be_added_by_the_operator() -> None:
    """§4.5 rule 1 / §4.6: the operator principal adopts legacy DGDs."""
    # given a DGD stored without a provider, and an update that adds one
    old, new = _document(provider=None), _document(provider="grove")

    # when the operator sends it
    verdict = _update(old, new, requester=Requester(OPERATOR))

    # then it is allowed
    assert verdict.errors == []


def test_provider_annotation_may_be_added_by_anyone_when_no_principal_is_configured() -> None:
    """§4.5 rule 1 / §4.6: with the operator principal unknown, nobody is restricted."""
    # given a DGD stored without a provider, and an update that adds one
    old, new = _document(provider=None), _document(provider="component")

    # when a user sends it and the operator does not know its own principal
    verdict = _update(old, new, requester=ALICE, principal=None)

    # then it is allowed
    assert verdict.errors == []


def test_provider_annotation_materialization_fails_closed_without_user_info() -> None:
    """§4.6: a request without user info is not the operator principal."""
    # given a DGD stored without a provider, and an update that adds one
    old, new = _document(provider=None), _document(provider="grove")

    # when the request carries no user info
    verdict = _update(old, new, requester=None)

    # then it is forbidden
    assert len(verdict.errors) == 1
    assert "may only be materialized by the Dynamo operator" in verdict.errors[0].message


@pytest.mark.parametrize(("after", "shown"), [("component", '"component"'), (None, "null")])
def test_provider_annotation_cannot_be_changed_or_removed_even_by_the_operator(
    after: str | None, shown: str
) -> None:
    """§4.5 rule 1 / §4.6: once recorded, the provider is immutable for everyone."""
    # given a DGD stored with provider grove, and an update that changes or removes it
    old, new = _document(provider="grove"), _document(provider=after)

    # when the operator sends it
    verdict = _update(old, new, requester=Requester(OPERATOR), grove_enabled=False)

    # then it is refused as immutable
    assert _messages(verdict) == [
        f'metadata.annotations[nvidia.com/workload-provider]: {shown} is not allowed (was "grove"): '
        "field is immutable"
    ]


# §4.5 rule 2: the component set.


def _add_two(components: list[dict[str, Any]]) -> None:
    components += [{"name": "Planner", "type": "planner"}, {"name": "Extra", "type": "planner"}]


def _remove_worker(components: list[dict[str, Any]]) -> None:
    del components[1]


def _rename_worker(components: list[dict[str, Any]]) -> None:
    components[1]["name"] = "Decoder"


@pytest.mark.parametrize(
    ("change", "listed"),
    [
        (_add_two, "components added: [Extra Planner]"),
        (_remove_worker, "components removed: [Worker]"),
        (_rename_worker, "components added: [Decoder], components removed: [Worker]"),
    ],
    ids=["add", "remove", "rename"],
)
def test_adding_or_removing_components_is_forbidden(
    change: Callable[[list[dict[str, Any]]], None], listed: str
) -> None:
    """§4.5 rule 2: components cannot be added or removed; the names are listed sorted, as upstream prints."""
    # given an update that adds, removes or renames components
    old, new = _document(), _document()
    change(new["spec"]["components"])

    # when it is admitted
    verdict = _update(old, new)

    # then one error lists both sides of the change
    assert _messages(verdict) == [
        f"spec.components: component topology is immutable and cannot be modified after creation: {listed}"
    ]


# §4.5 rule 3: per surviving component.


def test_component_provider_override_target_is_immutable() -> None:
    """§4.5 rule 3: providerOverride.target cannot change once set (here through forceScalingGroup)."""
    # given a component override targeting the clique template, then the scaling group
    override = {"apiVersion": "grove.io/v1alpha1", "value": {"topologyConstraint": {"packDomain": "rack"}}}
    old = _document(providerOverride={**override, "target": "PodCliqueTemplateSpec"})
    new = _document(
        providerOverride={**override, "target": "PodCliqueScalingGroupConfig"},
        experimental={"grove": {"forceScalingGroup": True}},
    )

    # when the update is admitted
    verdict = _update(old, new)

    # then the target change is refused (besides the forceScalingGroup toggle)
    assert (
        f'{WORKER}.providerOverride.target: "PodCliqueScalingGroupConfig" is not allowed '
        '(was "PodCliqueTemplateSpec"): field is immutable'
    ) in _messages(verdict)


def test_multinode_role_provider_override_fields_are_immutable() -> None:
    """§4.5 rule 3: a multinode role's providerOverride apiVersion and target cannot change once set."""

    # given a multinode component whose leader override changes both fields
    def component(api_version: str, target: str) -> ComponentSpec:
        override = {"apiVersion": api_version, "target": target, "value": {}}
        return msgspec.convert(
            {"name": "Worker", "multinode": {"nodeCount": 2, "leader": {"providerOverride": override}}},
            ComponentSpec,
        )

    old = component("grove.io/v1alpha1", "PodCliqueTemplateSpec")
    new = component("grove.io/v1beta1", "PodClique")

    # when the two versions are compared
    errors = [str(e) for e in check_component_update(old, new, WORKER)]

    # then both fields are refused
    assert errors == [
        f'{WORKER}.multinode.leader.providerOverride.apiVersion: "grove.io/v1beta1" is not allowed '
        '(was "grove.io/v1alpha1"): field is immutable',
        f'{WORKER}.multinode.leader.providerOverride.target: "PodClique" is not allowed '
        '(was "PodCliqueTemplateSpec"): field is immutable',
    ]


def test_switching_between_single_node_and_multinode_is_refused() -> None:
    """§4.5 rule 3: the single-node/multi-node switch is immutable."""
    # given a single-node worker that becomes multinode
    old, new = _document(), _document(multinode={"nodeCount": 2})

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.multinode: cannot change node topology between single-node and multi-node after creation"
    ]


def test_node_count_may_change_within_multinode() -> None:
    """§4.5 rule 3: nodeCount changes within multinode are allowed."""
    # given a multinode worker that grows from two nodes to three
    old, new = _document(multinode={"nodeCount": 2}), _document(multinode={"nodeCount": 3})

    # when the update is admitted
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


SCALED = {"scalingAdapter": {}, "replicas": 2}
REPLICAS_ERROR = (
    f"{WORKER}.replicas: 3 is not allowed (was 2): cannot be modified directly when scaling adapter is "
    "enabled; scale or update the related DynamoGraphDeploymentScalingAdapter instead"
)


def test_replicas_under_a_scaling_adapter_cannot_be_changed_by_a_user() -> None:
    """§4.5 rule 3 / §4.6: a scaling adapter owns the replicas."""
    # given a worker with a scaling adapter whose replicas a user changes
    old, new = _document(**SCALED), _document(scalingAdapter={}, replicas=3)

    # when the update is admitted
    verdict = _update(old, new, requester=ALICE)

    # then it is forbidden
    assert _messages(verdict) == [REPLICAS_ERROR]


def test_replicas_rule_applies_when_the_adapter_is_only_in_the_new_version() -> None:
    """§4.5 rule 3: an adapter present in the old **or** new object owns the replicas."""
    # given an update that adds a scaling adapter and changes the replicas at once
    old, new = _document(replicas=2), _document(scalingAdapter={}, replicas=3)

    # when a user sends it
    verdict = _update(old, new)

    # then it is forbidden
    assert _messages(verdict) == [REPLICAS_ERROR]


@pytest.mark.parametrize(
    "requester",
    [
        Requester(OPERATOR),
        Requester(PLANNER),
        Requester("system:serviceaccount:other:planner-serviceaccount"),
    ],
    ids=["operator", "planner", "planner-in-another-namespace"],
)
def test_replicas_under_a_scaling_adapter_may_be_changed_by_exempt_principals(requester: Requester) -> None:
    """§4.6: the operator principal and any planner-serviceaccount ServiceAccount are exempt."""
    # given a worker with a scaling adapter whose replicas change
    old, new = _document(**SCALED), _document(scalingAdapter={}, replicas=3)

    # when an exempt principal sends the update
    verdict = _update(old, new, requester=requester)

    # then it is allowed
    assert verdict.errors == []


def test_a_user_named_like_the_planner_is_not_exempt() -> None:
    """§4.6: non-ServiceAccount users are never exempt."""
    # given a worker with a scaling adapter whose replicas change
    old, new = _document(**SCALED), _document(scalingAdapter={}, replicas=3)

    # when a plain user called planner-serviceaccount sends the update
    verdict = _update(old, new, requester=Requester("planner-serviceaccount"))

    # then it is forbidden
    assert _messages(verdict) == [REPLICAS_ERROR]


def test_replicas_rule_fails_closed_without_user_info() -> None:
    """§4.5 rule 3: with no admission user info, the replicas check fails closed."""
    # given a worker with a scaling adapter whose replicas change
    old, new = _document(**SCALED), _document(scalingAdapter={}, replicas=3)

    # when the request carries no user info, even with no operator principal configured
    verdict = _update(old, new, requester=None, principal=None)

    # then it is forbidden
    assert _messages(verdict) == [REPLICAS_ERROR]


def test_unset_replicas_count_as_one_under_a_scaling_adapter() -> None:
    """§4.5 rule 3: nil replicas count as 1, so 1 is no change."""
    # given a stored worker with an adapter and no replicas, updated to an explicit 1
    old, new = _document(scalingAdapter={}), _document(scalingAdapter={}, replicas=1)

    # when a user sends it
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


def test_replicas_without_a_scaling_adapter_may_change() -> None:
    """§4.5 rule 3: without an adapter, replicas are the user's."""
    # given a worker without an adapter whose replicas change
    old, new = _document(replicas=2), _document(replicas=3)

    # when a user sends it
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


TOPOLOGY = {"clusterTopologyName": "cluster", "packDomain": "zone"}


def test_component_topology_constraint_cannot_be_added() -> None:
    """§4.5 rule 3: a component topologyConstraint cannot be added, removed or changed."""
    # given a DGD with a deployment-level constraint, whose worker gains its own constraint
    old, new = _document(), _document(topologyConstraint={"packDomain": "rack"})
    old["spec"]["topologyConstraint"] = new["spec"]["topologyConstraint"] = TOPOLOGY

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.topologyConstraint: is immutable and cannot be added, removed, or changed after creation; "
        "delete and recreate the DynamoGraphDeployment to change topology constraints"
    ]


def _gms(mode: str, failover: str | None = None) -> dict[str, Any]:
    experimental: dict[str, Any] = {"gpuMemoryService": {"mode": mode}}
    if failover is not None:
        experimental["failover"] = {"mode": failover}
    return experimental


def test_inter_pod_gms_cannot_be_toggled() -> None:
    """§4.5 rule 3: the inter-pod GMS layout is fixed at creation."""
    # given a worker whose GMS moves from intra-pod to inter-pod
    old, new = _document(experimental=_gms("IntraPod")), _document(experimental=_gms("InterPod"))

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.experimental.gpuMemoryService: the inter-pod GMS layout cannot be toggled after creation; "
        "delete and recreate the DynamoGraphDeployment"
    ]


def test_new_gms_spec_is_revalidated_as_on_create() -> None:
    """§4.5 rule 3: the new GMS spec is re-validated (here: GMS on a frontend is refused)."""
    # given an update that adds GMS to the frontend
    old, new = _document(), _document()
    new["spec"]["components"][0]["experimental"] = _gms("IntraPod")

    # when the update is admitted
    verdict = _update(old, new)

    # then the create-time GMS rules refuse it
    assert (
        "spec.components[0].experimental.gpuMemoryService: "
        "GPU memory service is only supported for worker, prefill, or decode components"
    ) in _messages(verdict)


def test_inter_pod_failover_cannot_be_toggled() -> None:
    """§4.5 rule 3: inter-pod GMS failover is fixed at creation."""
    # given an inter-pod GMS worker that gains inter-pod failover
    old = _document(experimental=_gms("InterPod"))
    new = _document(experimental=_gms("InterPod", failover="InterPod"))

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.experimental.failover: inter-pod GMS failover cannot be toggled after creation; "
        "delete and recreate the DynamoGraphDeployment"
    ]


def _with_shadows(dgd: DynamoGraphDeployment, shadows: int | None) -> DynamoGraphDeployment:
    """The DGD with its worker's failover numShadows replaced (bypassing the schema's 1..1 range)."""
    components = list(dgd.spec.components or [])
    worker = components[1]
    assert worker.experimental is not None and worker.experimental.failover is not None
    failover = structs.replace(worker.experimental.failover, num_shadows=shadows)
    components[1] = structs.replace(
        worker, experimental=structs.replace(worker.experimental, failover=failover)
    )
    return structs.replace(dgd, spec=structs.replace(dgd.spec, components=components))


@pytest.mark.parametrize(
    ("before", "after", "refused"), [(None, 2, True), (None, 0, False), (1, None, False)]
)
def test_inter_pod_num_shadows_is_immutable_with_unset_or_below_one_counting_as_one(
    before: int | None, after: int | None, refused: bool
) -> None:
    """§4.5 rule 3: inter-pod numShadows cannot change; nil or < 1 counts as 1."""
    # given an inter-pod failover worker whose numShadows changes
    stored = _decode(_document(experimental=_gms("InterPod", failover="InterPod")))
    old, new = _with_shadows(stored, before), _with_shadows(stored, after)

    # when the update is admitted
    verdict = validate_update(old, new, requester=ALICE, operator_principal=OPERATOR, grove_enabled=True)

    # then only a real change of the effective count is refused
    expected = [
        f"{WORKER}.experimental.failover.numShadows: {after} is not allowed (was 1): is immutable for "
        "inter-pod GMS failover; delete and recreate the DynamoGraphDeployment to change it"
    ]
    assert _messages(verdict) == (expected if refused else [])


def test_force_scaling_group_cannot_be_toggled() -> None:
    """§4.5 rule 3: the effective forceScalingGroup value is fixed at creation."""
    # given a worker that starts forcing a scaling group
    old, new = _document(), _document(experimental={"grove": {"forceScalingGroup": True}})

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.experimental.grove.forceScalingGroup: true is not allowed (was false): cannot be toggled "
        "after creation; delete and recreate the DynamoGraphDeployment to change it"
    ]


def test_explicit_false_force_scaling_group_is_no_toggle() -> None:
    """§4.5 rule 3: the rule compares effective values, so unset and false are the same."""
    # given a worker whose unset forceScalingGroup is written as false
    old, new = _document(), _document(experimental={"grove": {"forceScalingGroup": False}})

    # when the update is admitted
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


def _power(document: dict[str, Any], watts: str) -> dict[str, Any]:
    template = document["spec"]["components"][1]["podTemplate"]
    template["metadata"] = {"annotations": {POWER: watts}}
    return document


@pytest.mark.parametrize(
    ("before", "after", "shown"), [(None, "300", '"300" is not allowed (was null)'), ("300", "350", None)]
)
def test_power_annotation_cannot_be_added_or_changed(
    before: str | None, after: str, shown: str | None
) -> None:
    """§4.5 rule 3: the power annotation cannot be added, removed or changed."""
    # given a worker whose power annotation is added or changed
    old = _document() if before is None else _power(_document(), before)
    new = _power(_document(), after)

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused as immutable
    message = shown or '"350" is not allowed (was "300")'
    assert _messages(verdict) == [
        f"{WORKER}.podTemplate.metadata.annotations[{POWER}]: {message}: field is immutable"
    ]


def test_power_annotation_cannot_be_removed() -> None:
    """§4.5 rule 3: removing the power annotation is refused too."""
    # given a worker whose power annotation is removed
    old, new = _power(_document(), "300"), _document()

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f'{WORKER}.podTemplate.metadata.annotations[{POWER}]: null is not allowed (was "300"): '
        "field is immutable"
    ]


def test_gpu_count_is_immutable_while_the_power_annotation_is_set() -> None:
    """§4.5 rule 3: with the power annotation, the main GPU count (limit, else request) is fixed."""
    # given a power-managed worker whose GPU limit moves from 1 to a request of 2
    old, new = _power(_document(), "300"), _power(_document(), "300")
    _worker_main(new)["resources"] = {"requests": {"nvidia.com/gpu": "2"}}

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.podTemplate.spec.containers[0].resources: 2 is not allowed (was 1): GPU count: field is "
        f'immutable while annotation "{POWER}" is set'
    ]


def test_node_count_is_immutable_while_the_power_annotation_is_set() -> None:
    """§4.5 rule 3: with the power annotation, multinode.nodeCount is fixed."""
    # given a power-managed multinode worker that grows from two nodes to three
    old = _power(_document(multinode={"nodeCount": 2}), "300")
    new = _power(_document(multinode={"nodeCount": 3}), "300")

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.multinode.nodeCount: 3 is not allowed (was 2): field is immutable while annotation "
        f'"{POWER}" is set'
    ]


def test_gpu_count_may_change_without_the_power_annotation() -> None:
    """§4.5 rule 3: the GPU count is free when power-aware planning is off."""
    # given a worker whose GPU limit changes, without the power annotation
    old, new = _document(), _document()
    _worker_main(new)["resources"] = {"limits": {"nvidia.com/gpu": "2"}}

    # when the update is admitted
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


@pytest.mark.parametrize(
    ("old_tag", "new_tag", "override", "warned"),
    [
        ("1.5.0", "latest", None, True),  # a newly invalid pair
        ("1.5.0", "latest", "1.5.0", False),  # made valid by the override
        ("latest", "nightly", None, True),  # a changed invalid pair is newly invalid
        ("1.5.0", "1.6.0", None, False),  # still valid
    ],
)
def test_runtime_version_is_ratcheted(old_tag: str, new_tag: str, override: str | None, warned: bool) -> None:
    """§4.5 rule 3: a newly invalid (image, override) pair is reported; we warn (docs/decisions.md)."""
    # given a worker whose image tag (and maybe override) changes
    old, new = _document(), _document() if override is None else _document(runtimeVersionOverride=override)
    _worker_main(old)["image"] = runtime_image(old_tag)
    _worker_main(new)["image"] = runtime_image(new_tag)

    # when the update is admitted
    verdict = _update(old, new)

    # then it is allowed, with a warning exactly when the new pair is newly invalid
    assert verdict.errors == []
    expected = [
        f"{WORKER}.runtimeVersionOverride: is required when the main container image "
        f'"{runtime_image(new_tag)}" has no semantic-version tag (upstream admission refuses this change)'
    ]
    assert [str(w) for w in verdict.warnings] == (expected if warned else [])


def test_main_image_cannot_be_removed_once_set() -> None:
    """§4.5 rule 3: the image cannot be removed once set (an error: no pod could run, docs/decisions.md)."""
    # given a worker whose main image is removed
    old, new = _document(), _document()
    del _worker_main(new)["image"]

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused at the field
    assert [str(e) for e in verdict.errors] == [
        f"{WORKER}.podTemplate.spec.containers[0].image: is required: the main container must specify a "
        "non-empty image"
    ]
    assert verdict.warnings == []


# §4.5 rules 4-7: graph-level fields.


def test_backend_framework_is_immutable_with_a_warning() -> None:
    """§4.5 rule 4: backendFramework cannot change, and upstream warns as well."""
    # given an update that changes the backend
    old, new = _document(), _document()
    new["spec"]["backendFramework"] = "sglang"

    # when it is admitted
    verdict = _update(old, new)

    # then it is refused, with the warning
    assert _messages(verdict) == [
        'spec.backendFramework: "sglang" is not allowed (was "vllm"): '
        "is immutable and cannot be changed after creation"
    ]
    assert [str(w) for w in verdict.warnings] == [
        "spec.backendFramework: Changing spec.backendFramework may cause unexpected behavior"
    ]


@pytest.mark.parametrize("change", ["add", "remove", "change"])
def test_spec_topology_constraint_is_immutable(change: str) -> None:
    """§4.5 rule 5: spec.topologyConstraint cannot be added, removed or changed."""
    # given an update that adds, removes or changes the deployment-level constraint
    old, new = _document(), _document()
    if change != "add":
        old["spec"]["topologyConstraint"] = TOPOLOGY
    if change != "remove":
        new["spec"]["topologyConstraint"] = {
            **TOPOLOGY,
            "packDomain": "rack" if change == "change" else "zone",
        }

    # when it is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        "spec.topologyConstraint: is immutable and cannot be added, removed, or changed after creation; "
        "delete and recreate the DynamoGraphDeployment to change topology constraints"
    ]


def test_kv_transfer_policy_is_immutable() -> None:
    """§4.5 rule 5: spec.experimental.kvTransferPolicy cannot be added, removed or changed."""
    # given an update that changes the policy's domain
    old, new = _document(), _document()
    old["spec"]["experimental"] = {"kvTransferPolicy": {"domain": "rack", "labelKey": "topology/rack"}}
    new["spec"]["experimental"] = {"kvTransferPolicy": {"domain": "zone", "labelKey": "topology/rack"}}

    # when it is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        "spec.experimental.kvTransferPolicy: is immutable and cannot be added, removed, or changed after "
        "creation; delete and recreate the DynamoGraphDeployment to change the KV transfer policy"
    ]


def test_kv_transfer_policy_unset_enforcement_equals_required() -> None:
    """§4.5 rule 5: enforcement "" is treated as "required" when comparing."""
    # given a stored policy without enforcement, sent again with enforcement: required
    policy = {"domain": "rack", "labelKey": "topology/rack"}
    old, new = _document(), _document()
    old["spec"]["experimental"] = {"kvTransferPolicy": policy}
    new["spec"]["experimental"] = {"kvTransferPolicy": {**policy, "enforcement": "required"}}

    # when it is admitted
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


def _rolling(document: dict[str, Any], phase: str) -> dict[str, Any]:
    document["status"] = {"state": "pending", "rollingUpdate": {"phase": phase}}
    return document


@pytest.mark.parametrize("phase", ["Pending", "InProgress", "Failed"])
def test_restart_id_cannot_change_during_a_rolling_update(phase: str) -> None:
    """§4.5 rule 6: restart.id cannot change while the old rolling update runs (``rollout_active``:
    Pending or InProgress, and Failed, our phase of a rollout past its deadline that still runs)."""
    # given a DGD in a rolling update, and an update that requests a restart
    old, new = _rolling(_document(), phase), _document()
    new["spec"]["restart"] = {"id": "r1"}

    # when it is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f'spec.restart.id: "r1" is not allowed (was null): '
        f"cannot be changed while a rolling update is {phase}"
    ]


def test_restart_id_may_change_after_a_rolling_update() -> None:
    """§4.5 rule 6: a completed rolling update no longer holds restarts back."""
    # given a DGD whose rolling update completed, and an update that requests a restart
    old, new = _rolling(_document(), "Completed"), _document()
    new["spec"]["restart"] = {"id": "r1"}

    # when it is admitted
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


def test_min_available_is_immutable_once_set() -> None:
    """§4.5 rule 7 (CEL): minAvailable is immutable after creation."""
    # given a Grove worker whose minAvailable changes
    old, new = _document(replicas=2, minAvailable=1), _document(replicas=2, minAvailable=2)

    # when it is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.minAvailable: 2 is not allowed (was 1): minAvailable is immutable after creation"
    ]


def test_min_available_may_be_set_when_it_was_unset() -> None:
    """§4.5 rule 7 (CEL): the rule applies only once minAvailable is set."""
    # given a stored Grove worker without minAvailable (made before webhooks), now with one
    old, new = _document(replicas=2), _document(replicas=2, minAvailable=2)

    # when it is admitted
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


def test_independent_update_errors_are_all_reported_in_document_order() -> None:
    """§4.5: update errors are collected, not first-wins."""
    # given an update that changes the backend and toggles forceScalingGroup
    old, new = _document(), _document(experimental={"grove": {"forceScalingGroup": True}})
    new["spec"]["backendFramework"] = "sglang"

    # when it is admitted
    verdict = _update(old, new)

    # then both are reported, in document order
    assert [e.path for e in verdict.errors] == [
        "spec.backendFramework",
        f"{WORKER}.experimental.grove.forceScalingGroup",
    ]
