"""Admission of DGD updates, §4.5 rule 3 for a component's topology constraint, GPU memory service, failover
and forced scaling group.
"""

from __future__ import annotations

from typing import Any

import pytest
from msgspec import structs

from dgd.domain.admission.update import validate_update
from dgd.messages.dgd import DynamoGraphDeployment
from tests.unit.domain.admission_update_cases import (
    ALICE,
    OPERATOR,
    TOPOLOGY,
    WORKER,
    _decode,
    _document,
    _messages,
    _update,
)


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
