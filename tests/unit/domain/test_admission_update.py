"""Admission of DGD updates (supplement §4.5) as a whole, its rules 1 and 2 on the workload-provider
annotation and the component set, and how the errors are reported.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from dgd.domain.admission.principals import Requester
from tests.unit.domain.admission_update_cases import (
    ALICE,
    OPERATOR,
    WORKER,
    _document,
    _messages,
    _update,
    _worker_main,
)
from tests.unit.domain.dgd_cases import runtime_image


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
