"""Grove's kinds are read leniently: a field a newer Grove writes in a shape our model does not know is
dropped, not the object; our own kinds stay strict."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from dgd.cluster.resources import DGDSA, PCLQ, PCS, Rejected


def pod_clique_set(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "g", "namespace": "ns", "resourceVersion": "5", "generation": 2},
        "spec": {"replicas": 1, "template": {"cliques": []}},
        "status": {"availableReplicas": 1, "updatedReplicas": 1, "observedGeneration": 2, **status},
    }


def pod_clique(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {"name": "g-0-worker", "namespace": "ns", "resourceVersion": "6"},
        "spec": {"roleName": "worker", "replicas": 2, "podSpec": {}, **spec},
        "status": {"readyReplicas": 2},
    }


def test_a_field_of_a_new_shape_is_dropped_and_the_rest_of_the_object_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given a PodCliqueSet from a newer Grove: a pod-gang phase we do not know, last errors as a string
    found = pod_clique_set(
        podGangStatuses=[{"name": "g-0", "phase": "Preempted"}, {"name": "g-1", "phase": "Running"}],
        lastErrors="too many",
    )

    # when it is read, from a list and from its stored JSON
    with caplog.at_level(logging.WARNING, logger="dgd.cluster.decode"):
        listed = PCS.convert_or_reject(found)
        stored = PCS.decode(msgspec.json.encode(found))

    # then it is read without the two, and what the operator reads is there
    assert listed == stored and not isinstance(listed, Rejected)
    status = listed.status
    assert status is not None
    assert (status.available_replicas, status.updated_replicas, status.observed_generation) == (1, 1, 2)
    assert [gang.name for gang in status.pod_gang_statuses or []] == ["g-1"]
    assert status.last_errors is None
    # and what was dropped is said once, naming the object and the fields
    (said,) = [record.getMessage() for record in caplog.records]
    assert "PodCliqueSet ns/g" in said and "podGangStatuses[0]" in said and "lastErrors" in said
    assert found["status"]["lastErrors"] == "too many"  # the input is left as it was


def test_an_object_whose_required_fields_cannot_be_read_is_refused() -> None:
    # given a PodClique whose replicas (which readiness reads) is not a count
    found = pod_clique(replicas="two")

    # when it is read from a list, then it is refused, naming the field
    refused = PCLQ.convert_or_reject(found)
    assert isinstance(refused, Rejected)
    assert (refused.namespace, refused.name) == ("ns", "g-0-worker")
    assert "spec.replicas" in refused.error
    with pytest.raises(msgspec.ValidationError):
        PCLQ.decode(msgspec.json.encode(found))


def test_our_own_kinds_stay_strict() -> None:
    adapter = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"},
        "spec": {"replicas": 1, "dgdRef": {"name": "g", "componentName": "Worker"}, "extra": 1},
        "status": {"replicas": "one"},
    }

    assert isinstance(DGDSA.convert_or_reject(adapter), Rejected)
    assert DGDSA.as_raw().lenient is False and PCS.as_raw().lenient is True
