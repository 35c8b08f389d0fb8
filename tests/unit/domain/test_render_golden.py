"""Golden parity: rendering upstream's golden inputs gives upstream's expected objects.

The inputs and expected outputs are read from ``../shared/upstream`` (``tests.upstream``) and matched
with upstream's placeholder semantics (``tests.golden``). The namespace plays the role of upstream's
generated ``clusterenv-xxxxx`` one; ``worker-hash`` is our worker hash of the same DGD, as upstream
computes the variable with its own hash function.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.render.offline import prepare, render
from dgd.domain.worker_hash import worker_hash
from dgd.messages.config import OperatorConfig
from tests.golden import load_expected, match_documents
from tests.upstream import DYNAMO, load_documents

GOLDEN = DYNAMO / "deploy" / "operator" / "internal" / "controller" / "testdata" / "dgd"
NAMESPACE = "clusterenv-test"


def _input(scenario: str) -> dict[str, Any]:
    (document,) = load_documents(GOLDEN / scenario / "input.yaml")
    assert isinstance(document, dict)
    return document


def _expected(scenario: str) -> list[Any]:
    return load_expected((GOLDEN / scenario / "output.yaml").read_text(encoding="utf-8"))


def test_grove_golden_input_renders_exactly_the_expected_pod_clique_set() -> None:
    # given upstream's Grove golden DGD, admitted by a 1.4 operator in a fresh namespace
    dgd = prepare(_input("grove"), namespace=NAMESPACE, config=OperatorConfig())
    expected = _expected("grove")

    # when it is rendered on the Grove pathway
    objects = render(dgd, config=OperatorConfig())

    # then the PodCliqueSet matches upstream's expected one, placeholders and strictness included
    assert [doc["kind"] for doc in expected] == ["PodCliqueSet"]
    problems = match_documents(expected, objects, {"worker-hash": worker_hash(dgd)})
    assert problems == []


def test_components_golden_input_renders_exactly_the_expected_component_deployments() -> None:
    # given upstream's Component-pathway golden DGD (it opts out of Grove)
    dgd = prepare(_input("components"), namespace=NAMESPACE, config=OperatorConfig())
    # and the DCD documents of the expected output, without the status the DCD controller writes
    # later (its Deployments and that status are the DCD controller's, not rendering's)
    expected = [
        {k: v for k, v in doc.items() if k != "status"}
        for doc in _expected("components")
        if doc["kind"] == "DynamoComponentDeployment"
    ]

    # when it is rendered
    objects = render(dgd, config=OperatorConfig())

    # then exactly the two DCDs come out and match upstream's, worker hash suffix included
    assert len(expected) == 2
    assert [obj["kind"] for obj in objects] == ["DynamoComponentDeployment"] * 2
    problems = match_documents(expected, objects, {"worker-hash": worker_hash(dgd)})
    assert problems == []


def test_worker_dcd_name_ends_with_the_worker_hash_variable() -> None:
    # given the Component-pathway golden DGD
    dgd = prepare(_input("components"), namespace=NAMESPACE, config=OperatorConfig())

    # when it is rendered
    names = [obj["metadata"]["name"] for obj in render(dgd, config=OperatorConfig())]

    # then the worker DCD carries the same hash its labels carry ($glob alone would not tell)
    assert names == ["component-manifests-frontend", f"component-manifests-decode-{worker_hash(dgd)}"]


def test_golden_dcd_spec_holds_only_what_the_user_wrote_plus_graph_defaults() -> None:
    # given the Component-pathway golden DGD
    dgd = prepare(_input("components"), namespace=NAMESPACE, config=OperatorConfig())

    # when it is rendered
    decode = render(dgd, config=OperatorConfig())[1]

    # then the DCD spec is strict JSON of the component, no empty structs or operator defaults
    assert msgspec.json.decode(msgspec.json.encode(decode["spec"])) == {
        "backendFramework": "vllm",
        "name": "decode",
        "podTemplate": {
            "metadata": {
                "annotations": {"nvidia.com/dynamo-operator-origin-version": "1.4.0"},
                "labels": {"nvidia.com/dynamo-worker-hash": worker_hash(dgd)},
            },
            "spec": {"containers": [{"image": "registry.example/dynamo-worker:1.4.0-test", "name": "main"}]},
        },
        "replicas": 2,
        "type": "decode",
    }


def test_golden_match_fails_when_one_rendered_value_differs() -> None:
    # given the Grove golden rendering with one env value changed, as a wrong renderer would produce it
    dgd = prepare(_input("grove"), namespace=NAMESPACE, config=OperatorConfig())
    objects = render(dgd, config=OperatorConfig())
    env = objects[0]["spec"]["template"]["cliques"][1]["spec"]["podSpec"]["containers"][0]["env"]
    next(e for e in env if e["name"] == "NIXL_TELEMETRY_ENABLE")["value"] = "y"

    # when matched against upstream's expected output
    problems = match_documents(_expected("grove"), objects, {"worker-hash": worker_hash(dgd)})

    # then the mismatch is reported at that value
    assert len(problems) == 1
    assert "expected 'n', got 'y'" in problems[0]
