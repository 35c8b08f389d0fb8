"""v1alpha1 DCDs and DGDSAs decode into their models, and convert to v1beta1 and back through the
models of both versions unchanged (supplement §1.11).

Upstream ships no v1alpha1 DCD or DGDSA documents, so the DCDs here are the ones a v1alpha1 graph
implies: one per service of every upstream DGD (a v1beta1 one read as v1alpha1 first), as upstream's
controller generated them (the service spec, its key as ``serviceName`` and the graph's
``backendFramework``), plus upstream's golden v1beta1 DCDs read back as v1alpha1.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from dgd.domain.conversion.dcd import dcd_to_v1alpha1, dcd_to_v1beta1
from dgd.domain.conversion.dgdsa import dgdsa_to_v1alpha1, dgdsa_to_v1beta1
from dgd.domain.conversion.view import dgd_to_v1alpha1
from dgd.messages.base import Model
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dcd_v1alpha1 import DCDStatusV1Alpha1, DynamoComponentDeploymentV1Alpha1
from dgd.messages.dgd import API_VERSION, API_VERSION_V1ALPHA1
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter
from dgd.messages.dgdsa_v1alpha1 import DGDSAStatusV1Alpha1, DynamoGraphDeploymentScalingAdapterV1Alpha1
from dgd.messages.v1alpha1 import ServiceReplicaStatus
from tests.unit.messages.test_roundtrip import kinds
from tests.upstream import DYNAMO, dgd_documents, load_documents

GOLDEN_DCDS = DYNAMO / "deploy" / "operator" / "internal" / "controller" / "testdata" / "dgd" / "components"


def _service_dcds() -> list[Any]:
    # One v1alpha1 DCD per service of every upstream DGD, a v1beta1 one read as v1alpha1 first.
    params = []
    for path, index, document in dgd_documents():
        graph = document if document["apiVersion"] == API_VERSION_V1ALPHA1 else dgd_to_v1alpha1(document)
        spec = graph.get("spec") or {}
        backend = {"backendFramework": spec["backendFramework"]} if "backendFramework" in spec else {}
        for key, service in (spec.get("services") or {}).items():
            document = {
                "apiVersion": API_VERSION_V1ALPHA1,
                "kind": "DynamoComponentDeployment",
                "metadata": {"name": f"{graph['metadata']['name']}-{key.lower()}"},
                "spec": {**(service or {}), "serviceName": key, **backend},
            }
            params.append(pytest.param(document, id=f"{path}#{index}/{key}"))
    return params


def _without_matchers(value: Any) -> Any:
    # Golden files mark how to compare with `$`-keys (`$strict`); they are no part of the object.
    if isinstance(value, dict):
        return {key: _without_matchers(item) for key, item in value.items() if not key.startswith("$")}
    if isinstance(value, list):
        return [_without_matchers(item) for item in value]
    return value


def _golden_dcds() -> list[Any]:
    # Upstream's golden v1beta1 DCDs (what its controller renders from a graph).
    return [
        pytest.param(_without_matchers(doc), id=f"{path.parent.name}/{path.name}#{index}")
        for path in sorted(GOLDEN_DCDS.glob("*.yaml"))
        for index, doc in enumerate(load_documents(path))
        if isinstance(doc, dict) and doc.get("kind") == "DynamoComponentDeployment"
    ]


SERVICE_DCDS = _service_dcds()
GOLDEN = _golden_dcds()

#: A v1alpha1 DCD status with every field filled.
FULL_DCD_STATUS: dict[str, Any] = {
    "conditions": [
        {
            "type": "Available",
            "status": "True",
            "lastTransitionTime": "2026-08-21T10:00:00Z",
            "reason": "DeploymentAvailable",
            "message": "Deployment is available",
        }
    ],
    "observedGeneration": 3,
    "podSelector": {"nvidia.com/selector": "g-worker"},
    "service": {
        "componentKind": "Deployment",
        "componentName": "g-worker",
        "replicas": 2,
        "updatedReplicas": 2,
        "componentNames": ["g-worker"],
        "runtimeNamespace": "default-g",
        "readyReplicas": 2,
        "availableReplicas": 2,
        "scheduledReplicas": 2,
    },
}

ALPHA_DGDSA: dict[str, Any] = {
    "apiVersion": API_VERSION_V1ALPHA1,
    "kind": "DynamoGraphDeploymentScalingAdapter",
    "metadata": {"name": "g-worker", "namespace": "ns"},
    "spec": {"dgdRef": {"name": "g", "serviceName": "Worker"}, "replicas": 3},
    "status": {"lastScaleTime": "2026-01-01T00:00:00Z", "replicas": 2, "selector": "app=worker"},
}


def through(model: type[Model], document: dict[str, Any]) -> Any:
    """The document decoded from JSON bytes into ``model`` and encoded to plain values again."""
    decoded = msgspec.json.decode(msgspec.json.encode(document), type=model)
    return msgspec.json.decode(msgspec.json.encode(decoded))


def encode_names(model: type[msgspec.Struct]) -> set[str]:
    return {field.encode_name for field in msgspec.structs.fields(model)}


def test_upstream_data_gives_dcds_of_both_versions() -> None:
    # Given the DCDs built from upstream's v1alpha1 graphs and upstream's golden DCDs
    # Then there are some of each, so the tests below cannot pass on nothing
    assert len(SERVICE_DCDS) >= 20
    assert len(GOLDEN) >= 1


@pytest.mark.parametrize("document", SERVICE_DCDS)
def test_a_v1alpha1_dcd_of_an_upstream_service_round_trips_through_the_model_unchanged(
    document: dict[str, Any],
) -> None:
    # Given a v1alpha1 DCD of one upstream service
    # When it is decoded into the v1alpha1 model and encoded again
    result = through(DynamoComponentDeploymentV1Alpha1, document)
    # Then it is the same document, with the same kind of value at every leaf
    assert result == document
    assert kinds(result) == kinds(document)


@pytest.mark.parametrize("document", SERVICE_DCDS)
def test_a_v1alpha1_dcd_converts_to_v1beta1_and_back_through_both_models(document: dict[str, Any]) -> None:
    # Given a v1alpha1 DCD of one upstream service, with a full status
    alpha = {**document, "status": FULL_DCD_STATUS}
    # When it is converted to v1beta1 and that is read back as v1alpha1
    stored = dcd_to_v1beta1(alpha)
    view = dcd_to_v1alpha1(stored)
    # Then the v1beta1 document is one the v1beta1 model holds unchanged
    assert stored["apiVersion"] == API_VERSION
    assert through(DynamoComponentDeployment, stored) == stored
    # And the view is one the v1alpha1 model holds unchanged, with the spec and status it started with
    assert through(DynamoComponentDeploymentV1Alpha1, view) == view
    # (an enabled GMS or failover block without a mode reads back with the schema-default mode, as the API
    # server's CRD default gives it: docs/decisions.md, "Admission webhooks")
    assert view["spec"] == _mode_defaulted(alpha["spec"])
    assert view["status"] == FULL_DCD_STATUS


@pytest.mark.parametrize("document", GOLDEN)
def test_an_upstream_golden_dcd_reads_as_v1alpha1_through_the_model_and_converts_back(
    document: dict[str, Any],
) -> None:
    # Given one of upstream's golden v1beta1 DCDs
    # When it is read as v1alpha1 and written back
    view = dcd_to_v1alpha1(document)
    again = dcd_to_v1beta1(view)
    # Then the view is a v1alpha1 DCD the model holds unchanged
    assert view["apiVersion"] == API_VERSION_V1ALPHA1
    assert through(DynamoComponentDeploymentV1Alpha1, view) == view
    # And the way back gives upstream's spec, which the v1beta1 model holds unchanged
    assert again["spec"] == document["spec"]
    assert through(DynamoComponentDeployment, again) == again


def test_the_full_dcd_status_fills_every_status_field_of_the_v1alpha1_model() -> None:
    # Given the full v1alpha1 DCD status used above
    # Then it sets every field of the status and of its service, so the round trips cover them all
    assert set(FULL_DCD_STATUS) == encode_names(DCDStatusV1Alpha1)
    assert set(FULL_DCD_STATUS["service"]) == encode_names(ServiceReplicaStatus)


def test_a_v1alpha1_dgdsa_converts_to_v1beta1_and_back_through_both_models() -> None:
    # Given a v1alpha1 scaling adapter with every field set
    assert set(ALPHA_DGDSA["status"]) == encode_names(DGDSAStatusV1Alpha1)
    assert through(DynamoGraphDeploymentScalingAdapterV1Alpha1, ALPHA_DGDSA) == ALPHA_DGDSA
    # When it is converted to v1beta1 and read back as v1alpha1
    stored = dgdsa_to_v1beta1(ALPHA_DGDSA)
    view = dgdsa_to_v1alpha1(stored)
    # Then each version's model holds its document unchanged, and the view is the original
    assert through(DynamoGraphDeploymentScalingAdapter, stored) == stored
    assert stored["spec"]["dgdRef"] == {"componentName": "Worker", "name": "g"}
    assert through(DynamoGraphDeploymentScalingAdapterV1Alpha1, view) == view
    assert view == ALPHA_DGDSA


def test_the_v1alpha1_dgdsa_model_refuses_a_v1beta1_reference() -> None:
    # Given a v1alpha1 adapter whose reference names a component, as only v1beta1 does
    document = {**ALPHA_DGDSA, "spec": {"dgdRef": {"name": "g", "componentName": "Worker"}, "replicas": 3}}
    # Then the v1alpha1 model refuses it: its reference must name the service
    with pytest.raises(msgspec.ValidationError, match="serviceName"):
        through(DynamoGraphDeploymentScalingAdapterV1Alpha1, document)


def _mode_defaulted(spec: dict[str, Any]) -> dict[str, Any]:
    """A v1alpha1 DCD spec with ``mode: intraPod`` in each enabled GMS or failover block that has no mode."""
    spec = copy.deepcopy(spec)
    for key in ("gpuMemoryService", "failover"):
        block = spec.get(key)
        if block is not None and block.get("enabled") and not block.get("mode"):
            block["mode"] = "intraPod"
    return spec
