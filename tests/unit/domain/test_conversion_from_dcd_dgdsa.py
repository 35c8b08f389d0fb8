"""DCD and DGDSA conversion in both directions (supplement §1.11)."""

from __future__ import annotations

from dgd.domain.conversion.dcd import dcd_to_v1alpha1, dcd_to_v1beta1
from dgd.domain.conversion.dgdsa import dgdsa_to_v1alpha1, dgdsa_to_v1beta1
from tests.unit.domain.conversion_fixtures import (
    ALPHA,
    BETA,
    _dcd,
)

# §1.11: DCDs.


def test_a_dcd_with_an_empty_service_name_gets_the_nil_record_and_reads_back_blank() -> None:
    # given a v1alpha1 DCD without a serviceName and without a pod template
    document = _dcd(ALPHA, {"componentType": "frontend", "replicas": 1}, "g-frontend")

    # when it goes to v1beta1 and back
    stored = dcd_to_v1beta1(document)
    view = dcd_to_v1alpha1(stored)

    # then the name is the object's, the record is exactly §1.11's, and serviceName is blank again
    assert stored["spec"]["name"] == "g-frontend"
    assert stored["metadata"]["annotations"] == {
        "nvidia.com/dcd-spec": '{"version":1,"spec":{},"rawJSON":[{"path":"serviceName","nil":true}]}'
    }
    assert view == document


def test_a_dcd_round_trips_with_v1alpha1_only_fields_and_the_pod_selector() -> None:
    # given a v1alpha1 DCD with v1alpha1-only fields, a pod template and a status with a pod selector
    document = _dcd(
        ALPHA,
        {
            "backendFramework": "vllm",
            "serviceName": "Worker",
            "componentType": "worker",
            "subComponentType": "decode",
            "dynamoNamespace": "legacy",
            "ingress": {"enabled": True, "host": "worker"},
            "envFromSecret": "hf-token-secret",
            "extraPodSpec": {"mainContainer": {"image": "w:1.0.0"}},
        },
        "g-frontend",
    )
    document["status"] = {
        "observedGeneration": 2,
        "podSelector": {"app": "worker"},
        "service": {
            "componentKind": "Deployment",
            "componentName": "g-worker",
            "replicas": 1,
            "updatedReplicas": 1,
        },
    }

    # when it goes to v1beta1 and back
    stored = dcd_to_v1beta1(document)
    view = dcd_to_v1alpha1(stored)

    # then v1beta1 has the component and its status, and the view is the input exactly
    assert stored["spec"]["name"] == "Worker"
    assert stored["spec"]["type"] == "decode"
    assert stored["status"]["component"]["componentNames"] == ["g-worker"]
    assert "podSelector" not in stored["status"]
    assert view == document


def test_a_v1beta1_dcd_round_trips_including_an_empty_name_and_its_origin() -> None:
    # given v1beta1-first DCDs: one with a template, one without a name
    templated = _dcd(
        BETA,
        {
            "name": "Worker",
            "type": "worker",
            "podTemplate": {"spec": {"containers": [{"name": "main", "image": "w:1"}]}},
        },
        "g-worker",
    )
    nameless = _dcd(BETA, {"type": "frontend", "replicas": 1}, "g-worker")

    # when each is read as v1alpha1 and written back
    views = [dcd_to_v1alpha1(templated), dcd_to_v1alpha1(nameless)]
    again = [dcd_to_v1beta1(view) for view in views]

    # then they come back (the nameless one with §1.11's empty-serviceName record, which any
    # v1alpha1 write of a blank serviceName leaves), and the views carry the origin and the empty name
    assert again[0] == templated
    assert again[1]["spec"] == nameless["spec"]
    assert again[1]["metadata"]["annotations"] == {
        "nvidia.com/dcd-spec": '{"version":1,"spec":{},"rawJSON":[{"path":"serviceName","nil":true}]}'
    }
    assert views[0]["spec"]["serviceName"] == "Worker"
    assert views[0]["metadata"]["annotations"] == {
        "nvidia.com/dcd-spec": '{"version":1,"spec":{"name":"Worker"}}'
    }
    assert views[1]["metadata"]["annotations"] == {"nvidia.com/dcd-spec": '{"version":1,"spec":{"name":""}}'}


# §1.11: DGDSAs.


def test_a_dgdsa_renames_the_reference_both_ways_and_keeps_everything_else() -> None:
    # given a v1alpha1 scaling adapter with a status
    document = {
        "apiVersion": ALPHA,
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {"name": "g-worker", "namespace": "ns", "annotations": {"note": "x"}},
        "spec": {"replicas": 3, "dgdRef": {"name": "g", "serviceName": "Worker"}},
        "status": {"replicas": 2, "selector": "app=worker", "lastScaleTime": "2026-01-01T00:00:00Z"},
    }

    # when it goes to v1beta1 and back
    stored = dgdsa_to_v1beta1(document)
    view = dgdsa_to_v1alpha1(stored)

    # then only the version and the reference's key changed, and the way back is exact
    assert stored["spec"] == {"dgdRef": {"componentName": "Worker", "name": "g"}, "replicas": 3}
    assert stored["status"] == document["status"]
    assert stored["metadata"] == document["metadata"]
    assert view == document
