"""The generated CRDs' schemas are structural, and every property says what it is, so
`kubectl explain` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import msgspec
import pytest

from dgd.domain.crd_schema import UnsupportedSchema, node_at, structural_schema
from dgd.domain.crds import (
    render_crd,
)
from dgd.messages.base import QUANTITY_PATTERN, JSONObject, Model, PreservedValue
from tests.unit.domain.crd_cases import (
    KINDS,
    _field_paths,
    _nested,
    _resource,
    _schema,
)


def _schema_nodes(node: dict[str, Any], path: str = "<root>") -> Iterator[tuple[str, dict[str, Any]]]:
    """The root and every field node, each with its path."""
    yield path, node
    yield from _nested(node, "")


def _undescribed(schema: dict[str, Any]) -> list[str]:
    """The path of every property (at any depth, in items and map values too) without a description,
    but the root ``metadata``, which the API server forbids to describe (it must be just an object)."""
    return [
        path
        for path, node in _field_paths(schema)
        if not path.endswith(("[]", "{}"))
        and path != "metadata"
        and not str(node.get("description", "")).strip()
    ]


def _undescribed_node(node: dict[str, Any]) -> dict[str, Any]:
    """A schema node without its description, to compare its shape alone."""
    return {key: value for key, value in node.items() if key != "description"}


# (a) Structural schemas.


@pytest.mark.parametrize("kind", KINDS)
def test_generated_schema_has_no_references_titles_or_null_defaults(kind: str) -> None:
    # Given the generated CRD of one kind
    crd = render_crd(_resource(kind))
    # When it is written out as JSON
    text = json.dumps(crd)
    # Then nothing of JSON Schema's vocabulary that the API server rejects is left
    assert "$ref" not in text
    assert "$defs" not in text
    assert all("title" not in node for _, node in _schema_nodes(_schema(crd)))
    assert all(node.get("default", "") is not None for _, node in _schema_nodes(_schema(crd)))


@pytest.mark.parametrize("kind", KINDS)
def test_every_schema_node_is_structural(kind: str) -> None:
    # Given the generated schema of one kind
    schema = _schema(render_crd(_resource(kind)))
    for path, node in _schema_nodes(schema):
        # Then an object with properties says it is an object
        if "properties" in node:
            assert node.get("type") == "object", path
        # And every node is typed, unless it is one of the two escape hatches
        escape = node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
        assert "type" in node or escape, path
        # And the only anyOf is the int-or-string form, with no type beside it
        if "anyOf" in node:
            assert node.get("x-kubernetes-int-or-string") is True, path
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            assert "type" not in node, path


@pytest.mark.parametrize("kind", KINDS)
def test_root_names_api_version_kind_and_metadata_without_constraining_them(kind: str) -> None:
    # Given the generated schema of one kind
    properties = _schema(render_crd(_resource(kind)))["properties"]
    # Then the kind's tag enum did not leak, and metadata is left to the API server
    assert _undescribed_node(properties["apiVersion"]) == {"type": "string"}
    assert _undescribed_node(properties["kind"]) == {"type": "string"}
    assert properties["metadata"] == {"type": "object"}
    # And the kind's description names it
    assert properties["kind"]["description"] == f"The kind of this object: `{kind}`."


def test_raw_json_preserves_unknown_fields_and_quantities_are_int_or_string() -> None:
    # Given the DGD schema
    component = _schema(render_crd(_resource("DynamoGraphDeployment")))["properties"]["spec"]["properties"][
        "components"
    ]["items"]["properties"]
    # Then raw JSON the operator merges as it is (the checkpoint Job's pod template patch) keeps anything
    job = component["experimental"]["properties"]["checkpoint"]["properties"]["job"]["properties"]
    assert _undescribed_node(job["podTemplate"]) == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    # And a quantity accepts an int or a string matching the quantity pattern
    shared_memory = component["sharedMemorySize"]
    assert shared_memory["x-kubernetes-int-or-string"] is True
    assert "pattern" in shared_memory
    # And a marker struct is a plain object
    assert component["scalingAdapter"] == {
        "description": component["scalingAdapter"]["description"],
        "type": "object",
    }


@pytest.mark.parametrize("kind", ["DynamoGraphDeployment", "DynamoComponentDeployment"])
def test_a_components_pod_template_has_the_kubernetes_pod_template_schema(kind: str) -> None:
    # Given the schema of a component's pod template (a DGD's components[], a DCD's spec)
    spec = _schema(render_crd(_resource(kind)))["properties"]["spec"]
    component = spec["properties"]["components"]["items"] if kind == "DynamoGraphDeployment" else spec
    template = component["properties"]["podTemplate"]

    # Then it is Kubernetes' PodTemplateSpec: closed (unknown fields are not kept) and described
    assert "x-kubernetes-preserve-unknown-fields" not in template
    assert sorted(template["properties"]) == ["metadata", "spec"]
    assert "x-kubernetes-preserve-unknown-fields" not in template["properties"]["metadata"]
    assert sorted(template["properties"]["metadata"]["properties"]) == [
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    ]
    containers = template["properties"]["spec"]["properties"]["containers"]
    # And containers merge by name, as a Pod's do, and say what an image is
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    container = containers["items"]["properties"]
    assert container["image"]["type"] == "string"
    assert container["image"]["description"].startswith("Container image name.")
    # And a resource limit is a quantity: int-or-string with Kubernetes' quantity grammar
    limit = container["resources"]["properties"]["limits"]["additionalProperties"]
    assert limit["x-kubernetes-int-or-string"] is True
    assert limit["pattern"] == QUANTITY_PATTERN


class _Ambiguous(Model, frozen=True, tag_field="kind", tag="Ambiguous"):
    api_version: str
    value: int | str | None = None


class _Bounded(Model, frozen=True, tag_field="kind", tag="Bounded"):
    api_version: str
    above_zero: Annotated[int, msgspec.Meta(gt=0)]
    level: Literal[1, 2] | None = None
    raw: JSONObject | None = None
    anything: PreservedValue = None
    by_name: dict[str, list[int]] | None = None


def test_a_union_without_a_structural_form_is_refused() -> None:
    # Given a model with a plain int | str field (no int-or-string annotation)
    # When its schema is made structural
    # Then it is refused rather than silently weakened
    with pytest.raises(UnsupportedSchema, match="union of 2 types"):
        structural_schema(_Ambiguous)


def test_json_schema_vocabulary_is_translated_to_openapi() -> None:
    # Given a model using bounds, an int Literal, raw JSON, any value and a map of lists
    schema = structural_schema(_Bounded)
    # Then an exclusive bound is OpenAPI's boolean form
    assert node_at(schema, "aboveZero") == {"exclusiveMinimum": True, "minimum": 0, "type": "integer"}
    # And a Literal's enum carries its type
    assert node_at(schema, "level") == {"enum": [1, 2], "type": "integer"}
    # And raw JSON keeps unknown fields, as an object or as any value
    assert node_at(schema, "raw") == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert node_at(schema, "anything") == {"x-kubernetes-preserve-unknown-fields": True}
    # And map values and list items are reachable by path
    assert node_at(schema, "byName{}[]") == {"type": "integer"}
    # And only the kind's own fields are required
    assert schema["required"] == ["aboveZero"]


# (a') Every property says what it is, so `kubectl explain` does.


class _Inner(Model, frozen=True):
    """An inner object."""

    level: int
    """How deep it is.

    A second paragraph,
    wrapped in the source."""
    note: str | None = None


class _Base(Model, frozen=True, kw_only=True):
    shared: str | None = None
    """Declared on the base."""
    renamed: str | None = None
    """Said by the base."""


class _Described(_Base, frozen=True, kw_only=True, tag_field="kind", tag="Described"):
    api_version: str
    inner: _Inner
    """``inner``, described by its field."""
    inners: list[_Inner] | None = None
    """Several inner objects."""
    by_name: dict[str, _Inner] | None = None
    """Inner objects by name."""
    renamed: str | None = None
    """Said by the subclass."""
    raw: JSONObject | None = None
    """Kept as raw JSON."""
    undocumented: int | None = None


def test_field_docstrings_describe_their_properties_at_every_depth() -> None:
    # Given a model whose fields carry docstrings, nested in objects, lists and maps
    schema = structural_schema(_Described)
    # Then a field's docstring describes its property, in Markdown, one line per paragraph
    assert node_at(schema, "inner")["description"] == "`inner`, described by its field."
    deep = "How deep it is.\n\nA second paragraph, wrapped in the source."
    assert [node_at(schema, path)["description"] for path in ("inner.level", "inners[].level")] == [
        deep,
        deep,
    ]
    assert node_at(schema, "byName{}.level")["description"] == deep
    # And a Struct's docstring still describes list items and map values
    assert node_at(schema, "inners[]")["description"] == "An inner object."
    assert node_at(schema, "byName{}")["description"] == "An inner object."
    # And inherited fields keep their docstring, unless the subclass redeclares them
    assert node_at(schema, "shared")["description"] == "Declared on the base."
    assert node_at(schema, "renamed")["description"] == "Said by the subclass."
    # And raw JSON is described as a field, its inside left open
    assert node_at(schema, "raw") == {
        "description": "Kept as raw JSON.",
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_the_description_check_names_each_undescribed_property() -> None:
    # Given a model with fields that have no docstring, at the top and inside objects, lists and maps
    schema = structural_schema(_Described)
    # When the schema is checked for descriptions
    undescribed = _undescribed(schema)
    # Then each undescribed property is named by its path, and nothing else
    assert undescribed == [
        "apiVersion",
        "byName{}.note",
        "inner.note",
        "inners[].note",
        "undocumented",
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_every_property_of_every_served_version_has_a_description(kind: str) -> None:
    # Given every version of the generated CRD of one kind
    versions = render_crd(_resource(kind))["spec"]["versions"]
    # When each schema is walked, through nested objects, list items and map values
    undescribed = [
        f"{version['name']}: {path}"
        for version in versions
        for path in _undescribed(version["schema"]["openAPIV3Schema"])
    ]
    # Then every property says what it is (write a docstring under the field that lacks one)
    assert undescribed == []
