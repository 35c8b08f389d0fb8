"""Admission of DGD updates, §4.5 rule 3 for a component's provider overrides, its multinode layout and its
replicas under a scaling adapter, with the exemptions of §4.6.
"""

from __future__ import annotations

import msgspec
import pytest

from dgd.domain.admission.component_updates import check_component_update
from dgd.domain.admission.principals import Requester
from dgd.messages.component import ComponentSpec
from tests.unit.domain.admission_update_cases import (
    ALICE,
    OPERATOR,
    PLANNER,
    WORKER,
    _document,
    _messages,
    _update,
)

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
