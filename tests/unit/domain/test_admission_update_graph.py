"""Admission of DGD updates, §4.5 rules 4-7 on graph-level fields."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.domain.admission_update_cases import (
    TOPOLOGY,
    WORKER,
    _document,
    _messages,
    _update,
)

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
