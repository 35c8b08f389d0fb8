"""The DCD controller's readiness predicates and status (dcd-controller §2.6; §4 cases 3-7, 24)."""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.dcd_status import component_status, deployment_ready, lws_ready, reconciled
from dgd.messages.dcd import DynamoComponentDeployment


def deployment(desired: int | None = 2, *, paused: bool = False, **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {} if desired is None else {"replicas": desired}
    if paused:
        spec["paused"] = True
    ready = {
        "observedGeneration": 3,
        "replicas": 2,
        "updatedReplicas": 2,
        "availableReplicas": 2,
        "conditions": [{"type": "Available", "status": "True"}],
    }
    return {
        "kind": "Deployment",
        "metadata": {"name": "d", "generation": 3},
        "spec": spec,
        "status": ready | status,
    }


def test_a_deployment_with_every_replica_updated_and_available_is_ready() -> None:
    assert deployment_ready(deployment())  # case 4


def test_a_surge_replica_or_an_old_generation_or_no_available_condition_is_not_ready() -> None:
    assert not deployment_ready(deployment(replicas=3))  # case 5: a surge pod still there
    assert not deployment_ready(deployment(observedGeneration=2))
    assert not deployment_ready(deployment(updatedReplicas=1))
    assert not deployment_ready(deployment(conditions=[{"type": "Available", "status": "False"}]))
    assert not deployment_ready({"kind": "Deployment", "metadata": {"generation": 1}, "spec": {}})  # case 3


def test_zero_replicas_is_ready_whatever_the_status_and_paused_never_is() -> None:
    assert deployment_ready(deployment(0, replicas=5, conditions=[]))  # case 6
    assert not deployment_ready(deployment(paused=True))  # case 7


def test_a_leaderworkerset_is_ready_on_ready_groups_and_available_only() -> None:
    lws = {
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "d-0", "generation": 9},
        "spec": {"replicas": 2},
        "status": {
            "readyReplicas": 2,
            "replicas": 2,
            "conditions": [{"type": "Available", "status": "True"}],
        },
    }
    assert lws_ready(lws)  # case 24: no generation check
    assert component_status(lws, "ns-g").available_replicas is None
    assert not lws_ready({**lws, "status": {**lws["status"], "readyReplicas": 1}})


def test_the_status_of_a_pass_keeps_a_transition_time_until_the_condition_flips() -> None:
    dcd = msgspec.convert(
        {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoComponentDeployment",
            "metadata": {"name": "d", "namespace": "ns", "generation": 4},
            "spec": {},
        },
        DynamoComponentDeployment,
    )
    first = reconciled(dcd, deployment(), "ns-g", now="2026-01-01T00:00:00Z")
    again = reconciled(
        msgspec.structs.replace(dcd, status=first), deployment(), "ns-g", now="2026-01-01T00:05:00Z"
    )
    assert first.observed_generation == 4
    assert [c.last_transition_time for c in again.conditions or ()] == ["2026-01-01T00:00:00Z"] * 2
    assert again.component is not None and again.component.runtime_namespace == "ns-g"
