"""The Deployment controller's arithmetic: fenceposts, and a resize in mid-rollout."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.messages.base import JSONObject
from dgd.sim.world.deployment_plan import max_surge, max_unavailable, old_targets, scale_targets


def deployment(replicas: int, surge: Any = None, unavailable: Any = None, reported: int = 0) -> JSONObject:
    rolling = {
        key: value
        for key, value in (("maxSurge", surge), ("maxUnavailable", unavailable))
        if value is not None
    }
    strategy = {"type": "RollingUpdate", "rollingUpdate": rolling}
    return {
        "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "strategy": strategy},
        "status": {"replicas": reported},
    }


def replica_set(
    name: str, created: str, replicas: int, available: int, sized_for: int, most: int
) -> JSONObject:
    annotations = {
        "deployment.kubernetes.io/desired-replicas": str(sized_for),
        "deployment.kubernetes.io/max-replicas": str(most),
    }
    return {
        "metadata": {"name": name, "creationTimestamp": created, "annotations": annotations},
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas, "availableReplicas": available},
    }


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [
        (4, None, None, (1, 1)),  # the defaults, 25% each: surge rounds up, unavailable down
        (3, None, None, (1, 0)),
        (10, "30%", "30%", (3, 3)),
        (3, 0, 0, (0, 1)),  # both 0: one may be unavailable
        (2, 5, 5, (5, 2)),  # unavailable never more than the replicas
        (0, None, None, (0, 0)),
    ],
)
def test_fenceposts_resolve_as_kube_controller_manager_resolves_them(
    replicas: int, surge: Any, unavailable: Any, expected: tuple[int, int]
) -> None:
    # given a Deployment's strategy; when its fenceposts are resolved; then they are kube-controller-manager's
    found = deployment(replicas, surge, unavailable)
    assert (max_surge(found), max_unavailable(found)) == expected


def test_a_resize_in_mid_rollout_is_shared_in_proportion_to_the_replica_sets() -> None:
    # given the example of the Kubernetes documentation ("proportional scaling"): 10 replicas,
    # maxSurge 3, maxUnavailable 2, a rollout stuck with 8 old and 5 new replicas
    old = replica_set("web-old", "2026-01-01T00:00:00Z", 8, 8, sized_for=10, most=13)
    new = replica_set("web-new", "2026-01-01T00:01:00Z", 5, 0, sized_for=10, most=13)

    # when the Deployment is scaled to 15
    targets = scale_targets(deployment(15, 3, 2, reported=13), new, [old])

    # then the 5 more replicas go 3 to the old ReplicaSet and 2 to the new one
    assert targets == {"web-old": 11, "web-new": 7}


def test_old_replica_sets_scale_down_unhealthy_replicas_first_then_within_availability() -> None:
    # given 4 replicas (1 may be unavailable) rolling: an old ReplicaSet of 4, 1 of them not
    # available, and a new one of 1, available
    old = replica_set("web-old", "2026-01-01T00:00:00Z", 4, 3, sized_for=4, most=5)
    new = replica_set("web-new", "2026-01-01T00:01:00Z", 1, 1, sized_for=4, most=5)

    # when the old ones are scaled down; then the unhealthy one goes, and one available more
    assert old_targets(deployment(4), [old], new) == {"web-old": 2}


def test_an_old_replica_set_whose_status_lags_its_scale_down_is_left_for_the_next_pass() -> None:
    # given an old ReplicaSet just scaled from 7 to 4 whose status still counts 7 available
    old = replica_set("web-old", "2026-01-01T00:00:00Z", 4, 7, sized_for=10, most=13)
    new = replica_set("web-new", "2026-01-01T00:01:00Z", 6, 6, sized_for=10, most=13)

    # when the old ones are scaled down; then nothing is, until its status has caught up
    assert old_targets(deployment(10, "30%", "30%"), [old], new) == {}
