"""v1beta1 → v1alpha1 conversion ("ConvertFrom") of the worked examples and the round trips of supplement
§1.12 on upstream and generated DGDs, compared as upstream's fuzz tests do: null, empty and Go-zero values
equal absent, and quantities compare by value.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.domain.conversion.view import dgd_to_v1alpha1
from tests.conversion_strategies import alpha_dgds, beta_dgds
from tests.unit.domain.conversion_fixtures import (
    ALPHA,
    BETA,
    EXAMPLE_2_ANNOTATION,
    FIXTURE,
    PROPERTY,
    SPEC_KEY,
    STATUS_KEY,
    _fixture,
    _stored_example_1,
    _without_private_keys,
    example_2_input,
    normalized,
    schema_defaulted,
)
from tests.upstream import DYNAMO, UPSTREAM, load_documents


def _upstream_dgds() -> list[Any]:
    # Every DGD under the upstream examples, fixtures, recipes and golden inputs.
    roots = [DYNAMO / "examples", DYNAMO / "recipes", DYNAMO / "deploy" / "utils" / "tests" / "fixtures"]
    files = sorted(path for root in roots for path in root.rglob("*.yaml"))
    files += sorted(
        (DYNAMO / "deploy" / "operator" / "internal" / "controller" / "testdata").rglob("input.yaml")
    )
    return [
        pytest.param(doc, id=f"{path.relative_to(UPSTREAM)}#{index}")
        for path in files
        for index, doc in enumerate(load_documents(path))
        if isinstance(doc, dict) and doc.get("kind") == "DynamoGraphDeployment"
    ]


UPSTREAM_DGDS = _upstream_dgds()


# §1.13 and §1.14: the worked examples.


def test_worked_example_1_stored_object_reads_back_as_the_fixture_exactly() -> None:
    # given the stored v1beta1 object of §1.13 (example spec plus the derived annotation)
    stored = _stored_example_1()
    untouched = copy.deepcopy(stored)

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then it is the fixture exactly, with no payload on the view, and the input is unchanged
    assert view == _fixture()
    assert "annotations" not in view["metadata"]
    assert stored == untouched


def test_worked_example_1_view_converts_back_to_the_stored_object() -> None:
    # given the v1alpha1 view of the stored object of §1.13
    stored = _stored_example_1()
    view = dgd_to_v1alpha1(stored)

    # when it is written back through v1alpha1
    again = dgd_to_v1beta1(view)

    # then the stored object comes back, annotation bytes included
    assert again == stored


def test_worked_example_1_view_keys_are_in_go_struct_order() -> None:
    # given the stored object of §1.13
    stored = _stored_example_1()

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then the keys come in Go's order: TypeMeta first, service fields as declared, map keys sorted
    assert list(view) == ["kind", "apiVersion", "metadata", "spec"]
    assert list(view["spec"]["services"]) == ["Frontend", "VllmDecodeWorker"]
    assert list(view["spec"]["services"]["VllmDecodeWorker"]) == [
        "componentType",
        "resources",
        "envFromSecret",
        "extraPodSpec",
        "replicas",
    ]
    assert list(view["spec"]["services"]["VllmDecodeWorker"]["resources"]) == ["requests", "limits"]


def test_worked_example_2_stored_object_restores_every_v1alpha1_field() -> None:
    # given the stored v1beta1 object of §1.14, built from the spec's output (not from our ConvertTo)
    stored = _stored_example_1()
    stored["metadata"]["annotations"][SPEC_KEY] = EXAMPLE_2_ANNOTATION
    worker = next(item for item in stored["spec"]["components"] if item["name"] == "VllmDecodeWorker")
    worker.update({"type": "decode", "sharedMemorySize": "16Gi", "scalingAdapter": {}})
    worker["podTemplate"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "model-cache", "mountPath": "/root/.cache"}
    ]

    # when it is read as v1alpha1
    view = dgd_to_v1alpha1(stored)

    # then every input field of §1.14 comes back, PVCs and flat volume mounts included
    assert view == example_2_input()


def test_worked_example_2_round_trips_through_v1beta1() -> None:
    # given the §1.14 input
    document = example_2_input()

    # when it goes to v1beta1 and back
    stored = dgd_to_v1beta1(document)
    view = dgd_to_v1alpha1(stored)

    # then the stored annotation is the spec's and the view is the input exactly
    assert stored["metadata"]["annotations"][SPEC_KEY] == EXAMPLE_2_ANNOTATION
    assert view == document


# §1.12: the round trips, on every upstream DGD.


@pytest.mark.parametrize("document", UPSTREAM_DGDS)
def test_every_upstream_dgd_round_trips_through_the_other_version(document: dict[str, Any]) -> None:
    # given an upstream DGD in whichever version it was written
    untouched = copy.deepcopy(document)

    # when it goes to the other version and back
    if document["apiVersion"] == ALPHA:
        there = dgd_to_v1beta1(document)
        back = dgd_to_v1alpha1(there)
    else:
        there = dgd_to_v1alpha1(document)
        back = dgd_to_v1beta1(there)

    # then it comes back (v1beta1 bit for bit), and neither input was touched
    assert there["apiVersion"] != document["apiVersion"]
    if document["apiVersion"] == BETA:
        assert back == schema_defaulted(document)
    assert normalized(back) == normalized(document)
    assert document == untouched


def test_upstream_dgds_cover_both_versions() -> None:
    # given the parametrized upstream DGDs
    versions = [param.values[0]["apiVersion"] for param in UPSTREAM_DGDS]

    # then both versions are exercised, the recipe and the fixture among them
    assert versions.count(ALPHA) >= 4
    assert versions.count(BETA) >= 8
    assert any("recipes" in str(param.id) for param in UPSTREAM_DGDS)
    assert any(Path(str(param.id).split("#")[0]).name == FIXTURE.name for param in UPSTREAM_DGDS)


# §1.12: the round trips, on generated DGDs.


@PROPERTY
@given(alpha_dgds())
def test_generated_v1alpha1_dgds_round_trip_through_v1beta1(document: dict[str, Any]) -> None:
    # when a v1alpha1 DGD goes to v1beta1 and back
    stored = dgd_to_v1beta1(document)
    view = dgd_to_v1alpha1(stored)

    # then nothing is lost (the view may carry the v1beta1-origin marker), and writing the view
    # back gives the stored object, payload bytes included
    assert normalized(_without_private_keys(view)) == normalized(document)
    assert normalized(dgd_to_v1beta1(view)) == normalized(stored)


@PROPERTY
@given(beta_dgds())
def test_generated_v1beta1_dgds_round_trip_through_v1alpha1(document: dict[str, Any]) -> None:
    # when a v1beta1 DGD goes to v1alpha1 and back
    view = dgd_to_v1alpha1(document)
    stored = dgd_to_v1beta1(view)

    # then nothing is lost, and nothing v1alpha1-only was invented on the way
    assert normalized(stored) == normalized(document)
    assert SPEC_KEY not in stored["metadata"].get("annotations", {})
    assert STATUS_KEY not in stored["metadata"].get("annotations", {})


@PROPERTY
@given(alpha_dgds())
def test_converting_a_view_again_gives_the_same_view(document: dict[str, Any]) -> None:
    # given the v1alpha1 view of a stored v1alpha1-first DGD
    view = dgd_to_v1alpha1(dgd_to_v1beta1(document))

    # when the view is written back and read again
    again = dgd_to_v1alpha1(dgd_to_v1beta1(view))

    # then it is the same view, byte for byte
    assert again == view


def test_a_second_cache_flagged_mount_is_mounted_on_main_and_round_trips() -> None:
    # given a v1alpha1 service with two mounts flagged as the compilation cache and nothing else
    # (found by the property above: the second mount vanished from the rendered pod and the view)
    mounts = [
        {"name": "cache", "mountPoint": "/cache", "useAsCompilationCache": True},
        {"name": "data", "mountPoint": "/data", "useAsCompilationCache": True},
    ]
    document = {
        "apiVersion": ALPHA,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph", "namespace": "ns"},
        "spec": {"services": {"a": {"volumeMounts": mounts}}},
    }

    # when it is stored as v1beta1 and read back as v1alpha1
    stored = dgd_to_v1beta1(document)
    view = dgd_to_v1alpha1(stored)

    # then the first is the cache, both are mounted on main, and the view gives both back
    component = stored["spec"]["components"][0]
    assert component["compilationCache"] == {"pvcName": "cache", "mountPath": "/cache"}
    main = component["podTemplate"]["spec"]["containers"][0]
    assert [(m["name"], m["mountPath"]) for m in main["volumeMounts"]] == [
        ("cache", "/cache"),
        ("data", "/data"),
    ]
    assert view["spec"]["services"]["a"]["volumeMounts"] == mounts
