"""Grove readiness (dgd-domain §9.6): one child's classification, and the graph's aggregate."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dgd.domain.readiness import (
    InconsistentRevision,
    grove_readiness,
    observe_pcsg,
    observe_podclique,
    rescaled_child,
)
from dgd.messages.dgd import ComponentReplicaStatus, DGDStatus, DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet
from dgd.messages.grove_children import PodClique, PodCliqueScalingGroup


def clique(desired: int = 2, generation: int = 1, **status: Any) -> PodClique:
    body: dict[str, Any] = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {"name": "g-0-worker", "generation": generation},
        "spec": {"roleName": "worker", "replicas": desired, "podSpec": {}},
    }
    if status:
        body["status"] = {
            "readyReplicas": 0,
            "scheduleGatedReplicas": 0,
            "scheduledReplicas": 0,
            "updatedReplicas": 0,
            **status,
        }
    return msgspec.convert(body, PodClique)


def group(desired: int = 1, **status: Any) -> PodCliqueScalingGroup:
    body: dict[str, Any] = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueScalingGroup",
        "metadata": {"name": "g-0-decode", "generation": 1},
        "spec": {"cliqueNames": ["decode-ldr", "decode-wkr"], "replicas": desired},
        "status": {"availableReplicas": 0, "scheduledReplicas": 0, "updatedReplicas": 0, **status},
    }
    return msgspec.convert(body, PodCliqueScalingGroup)


def condition(kind: str, status: str, reason: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": "not enough GPUs",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


CASES = [
    (
        "observed generation missing",
        clique(),
        False,
        "observedGeneration is nil",
        "some_resources_are_not_ready",
    ),
    (
        "stale generation",
        clique(generation=3, observedGeneration=2),
        False,
        "spec not yet processed: generation=3, observedGeneration=2",
        "some_resources_are_not_ready",
    ),
    ("scaled to zero", clique(desired=0, observedGeneration=1), True, "", ""),
    (
        "all ready",
        clique(observedGeneration=1, replicas=2, updatedReplicas=2, readyReplicas=2, scheduledReplicas=2),
        True,
        "",
        "",
    ),
    (
        "schedule-gated",
        clique(observedGeneration=1, replicas=2, scheduleGatedReplicas=2),
        False,
        "schedule-gated replicas: 2",
        "insufficient_capacity",
    ),
    (
        "scheduling condition",
        clique(
            observedGeneration=1,
            replicas=2,
            conditions=[condition("PodCliqueScheduled", "False", "InsufficientScheduledPods")],
        ),
        False,
        "scheduling condition InsufficientScheduledPods: not enough GPUs",
        "insufficient_capacity",
    ),
    (
        "partly scheduled",
        clique(observedGeneration=1, replicas=2, scheduledReplicas=1),
        False,
        "insufficient scheduled replicas: scheduled=1/2",
        "insufficient_capacity",
    ),
    (
        "not updated",
        clique(observedGeneration=1, replicas=2, updatedReplicas=1, scheduledReplicas=2),
        False,
        "desired=2, updated=1",
        "updating",
    ),
    (
        "rolling",
        clique(observedGeneration=1, replicas=3, updatedReplicas=2, scheduledReplicas=2),
        False,
        "performing rolling update: desired=2, replicas=3",
        "updating",
    ),
    (
        "pods not ready",
        clique(observedGeneration=1, replicas=2, updatedReplicas=2, readyReplicas=1, scheduledReplicas=2),
        False,
        "scheduled but ready=1/2",
        "pods_not_ready",
    ),
]


@pytest.mark.parametrize(
    ("pclq", "ready", "reason", "classification"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_podclique_is_classified_in_upstream_decision_order(
    pclq: PodClique, ready: bool, reason: str, classification: str
) -> None:
    # given a PodClique in some state; when it is observed
    verdict = observe_podclique("g-0-worker", pclq)
    # then its readiness, reason and implied Ready reason are upstream's
    assert (verdict.ready, verdict.reason, verdict.classification) == (ready, reason, classification)


def test_a_missing_child_is_not_ready_and_keeps_its_kind_and_expected_name() -> None:
    # given no PodClique yet; when observed
    verdict = observe_podclique("g-0-worker", None)
    # then the status still names what is expected
    assert verdict.status == ComponentReplicaStatus(
        component_kind="PodClique", replicas=0, updated_replicas=0, component_names=["g-0-worker"]
    )
    assert (verdict.ready, verdict.reason) == (False, "resource not found")


def test_scheduled_replicas_are_reported_only_once_the_generation_is_observed() -> None:
    # given the same PodClique before and after Grove observed its generation
    before = observe_podclique("g-0-worker", clique(generation=2, observedGeneration=1, scheduledReplicas=2))
    after = observe_podclique("g-0-worker", clique(generation=2, observedGeneration=2, scheduledReplicas=2))
    # then only the second reports scheduledReplicas
    assert before.status.scheduled_replicas is None
    assert after.status.scheduled_replicas == 2


def test_a_scaling_group_capacity_shortfall_follows_groves_alpha8_polarity() -> None:
    # given a scaling group whose MinAvailableBreached is False with the scheduling-shortfall reason
    reason = "InsufficientScheduledPodCliqueScalingGroupReplicas"
    pcsg = group(
        observedGeneration=1, replicas=1, conditions=[condition("MinAvailableBreached", "False", reason)]
    )
    # when observed; then it is a capacity problem, with its availability counted
    verdict = observe_pcsg("g-0-decode", pcsg)
    assert (verdict.ready, verdict.classification) == (False, "insufficient_capacity")
    assert verdict.reason == f"min-available breached ({reason}): not enough GPUs"
    assert verdict.status.available_replicas == 0


def test_an_available_scaling_group_is_ready() -> None:
    pcsg = group(observedGeneration=1, replicas=1, updatedReplicas=1, availableReplicas=1)
    assert observe_pcsg("g-0-decode", pcsg).ready


def graph() -> DynamoGraphDeployment:
    return msgspec.convert(
        {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "g", "namespace": "ns"},
            "spec": {
                "components": [
                    {"name": "Frontend", "type": "frontend"},
                    {"name": "Worker", "type": "worker"},
                    {"name": "Planner", "type": "planner"},
                ]
            },
        },
        DynamoGraphDeployment,
    )


def test_not_ready_components_that_disagree_are_mixed_reasons() -> None:
    # given a graph with one component short of capacity and one not ready
    children = {
        "Frontend": observe_podclique(
            "g-0-frontend", clique(observedGeneration=1, replicas=2, scheduledReplicas=1)
        ),
        "Worker": observe_podclique(
            "g-0-worker",
            clique(observedGeneration=1, replicas=2, updatedReplicas=2, readyReplicas=0, scheduledReplicas=2),
        ),
        "Planner": observe_podclique("g-0-planner", clique(desired=0, observedGeneration=1)),
    }
    # when aggregated
    readiness = grove_readiness(graph(), None, children)
    # then the classification says they disagree, and the message lists each, in component order
    assert readiness.classification == "mixed_not_ready_reasons"
    assert readiness.message == (
        "Frontend: insufficient scheduled replicas: scheduled=1/2; Worker: scheduled but ready=0/2"
    )


def test_workers_keep_their_runtime_namespace_until_every_worker_completed_the_accepted_revision() -> None:
    # given a PCS Grove accepted at revision r2, whose worker clique carries worker hash abcd1234
    pcs = msgspec.convert(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "metadata": {"name": "g", "generation": 4},
            "spec": {
                "template": {
                    "cliques": [
                        {
                            "name": "worker",
                            "labels": {
                                "nvidia.com/dynamo-component": "Worker",
                                "nvidia.com/dynamo-worker-hash": "abcd1234",
                            },
                            "spec": {"roleName": "worker", "replicas": 2, "podSpec": {}},
                        }
                    ]
                }
            },
            "status": {
                "availableReplicas": 1,
                "updatedReplicas": 1,
                "observedGeneration": 4,
                "currentGenerationHash": "r2",
            },
        },
        PodCliqueSet,
    )
    previous = {
        "Worker": {
            "componentKind": "PodClique",
            "replicas": 2,
            "updatedReplicas": 2,
            "runtimeNamespace": "ns-g-old",
        }
    }
    status = msgspec.convert({"state": "successful", "components": previous}, DGDStatus)
    dgd = msgspec.structs.replace(graph(), status=status)
    done = dict(observedGeneration=1, replicas=2, updatedReplicas=2, readyReplicas=2, scheduledReplicas=2)
    others = {
        "Frontend": observe_podclique("g-0-frontend", clique(desired=0, observedGeneration=1)),
        "Planner": observe_podclique("g-0-planner", clique(desired=0, observedGeneration=1)),
    }

    # when the worker child still runs revision r1, and then runs r2
    still = grove_readiness(
        dgd,
        pcs,
        {
            **others,
            "Worker": observe_podclique("g-0-worker", clique(currentPodCliqueSetGenerationHash="r1", **done)),
        },
    )
    moved = grove_readiness(
        dgd,
        pcs,
        {
            **others,
            "Worker": observe_podclique("g-0-worker", clique(currentPodCliqueSetGenerationHash="r2", **done)),
        },
    )

    # then the worker keeps the old namespace, then moves to the suffixed one; the frontend never moves
    assert still.components["Worker"].runtime_namespace == "ns-g-old"
    assert moved.components["Worker"].runtime_namespace == "ns-g-abcd1234"
    assert moved.components["Frontend"].runtime_namespace == "ns-g"


def test_an_accepted_revision_without_a_worker_clique_is_an_error() -> None:
    pcs = msgspec.convert(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "metadata": {"name": "g", "generation": 1},
            "spec": {"template": {"cliques": []}},
            "status": {
                "availableReplicas": 0,
                "updatedReplicas": 0,
                "observedGeneration": 1,
                "currentGenerationHash": "r",
            },
        },
        PodCliqueSet,
    )
    children = {c: observe_podclique(c, None) for c in ("Frontend", "Worker", "Planner")}
    with pytest.raises(InconsistentRevision, match="has no worker clique for component 'Worker'"):
        grove_readiness(graph(), pcs, children)


def test_a_ready_clique_read_before_this_reconciles_scale_write_is_unprocessed_at_its_new_replicas() -> None:
    # given a ready clique of 2, as the cache holds it, and a scale write to 3 this reconcile made
    ready = clique(2, generation=4, observedGeneration=4, replicas=2, readyReplicas=2, updatedReplicas=2)
    assert observe_podclique("g-0-worker", ready).ready

    # when readiness reads it as the write left it
    after = rescaled_child(ready, 3)

    # then its spec asks for 3 at a later generation, which Grove has not processed yet
    assert (after.spec.replicas, after.metadata.generation) == (3, 5)
    verdict = observe_podclique("g-0-worker", after)
    assert not verdict.ready
    assert verdict.reason == "spec not yet processed: generation=5, observedGeneration=4"


def test_a_clique_read_after_the_scale_write_is_taken_as_it_is() -> None:
    # given a clique whose read already shows the replicas the write asked for
    fresh = clique(3, generation=5, observedGeneration=4, replicas=2, readyReplicas=2, updatedReplicas=2)

    # when readiness reads it as the write left it, then nothing is added to it
    assert rescaled_child(fresh, 3) is fresh
