"""The generated CRDs: structural, checked in as generated, and faithful to the upstream CRDs' contract."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest
import yaml

from dgd.domain.crd_schema import UnsupportedSchema, node_at, structural_schema
from dgd.domain.crds import (
    OWNED,
    RESOURCES,
    CustomResource,
    crd_files,
    owned_crds,
    render_crd,
    render_crds_yaml,
)
from dgd.messages.base import QUANTITY_PATTERN, JSONObject, Model, PreservedValue
from tests.upstream import CRD_DIR, GROVE, ROOT, load_documents

DEPLOY_CRDS = ROOT / "deploy" / "crds"
GROVE_CRD_DIR = GROVE / "operator" / "api" / "core" / "v1alpha1" / "crds"

PODSPEC_RAW = "kept as raw JSON: the operator renders and passes the pod spec through without modelling it"
FINALIZERS_SET = (
    "Kubernetes 1.36's ObjectMeta declares finalizers a set; upstream's CRD embeds an older ObjectMeta"
)
HPA_METRICS_RAW = (
    "kept as raw JSON: HPA MetricSpecs are handed to the HPA Grove creates; the operator never reads them"
)

#: Per kind: upstream field-path prefix -> why our schema differs there. A prefix ending in ``.``
#: covers only what lies below it; any other prefix also covers the path itself.
ALLOWED_DIFFERENCES: dict[str, dict[str, str]] = {
    "DynamoGraphDeployment": {
        "spec.components[].podTemplate.metadata.finalizers": FINALIZERS_SET,
        "spec.components[].podTemplate.spec.volumes[].ephemeral.volumeClaimTemplate.metadata.finalizers": (
            FINALIZERS_SET
        ),
        "spec.components[].eppConfig.config.": "kept as raw JSON: upstream preserves unknown fields there",
        "spec.env[].": "EnvVar kept as raw JSON: prepended to every main container's env untouched",
        "status.restart.phase": "ours enumerates the phases of domain spec §3.1; upstream leaves it free",
    },
    "DynamoComponentDeployment": {
        "spec.podTemplate.metadata.finalizers": FINALIZERS_SET,
        "spec.podTemplate.spec.volumes[].ephemeral.volumeClaimTemplate.metadata.finalizers": FINALIZERS_SET,
        "spec.eppConfig.config.": "kept as raw JSON: upstream preserves unknown fields there",
    },
    "DynamoGraphDeploymentScalingAdapter": {},
    "PodCliqueSet": {
        "spec.template.cliques[].spec.podSpec.": "PodSpec " + PODSPEC_RAW,
        "spec.template.cliques[].spec.autoScalingConfig.metrics[].": HPA_METRICS_RAW,
        "spec.template.podCliqueScalingGroups[].scaleConfig.metrics[].": HPA_METRICS_RAW,
        "spec.template.resourceClaimTemplates[].templateSpec.": (
            "kept as raw JSON: a DRA ResourceClaimTemplateSpec the operator copies without reading"
        ),
    },
    "PodClique": {
        "spec.podSpec.": "PodSpec " + PODSPEC_RAW,
        "spec.autoScalingConfig.metrics[].": HPA_METRICS_RAW,
    },
    "PodCliqueScalingGroup": {},
}

#: What the operator serves, as specified: (group, version, plural, short names, scale subresource).
SERVED: dict[str, tuple[str, str, str, list[str], dict[str, str] | None]] = {
    "DynamoGraphDeployment": ("nvidia.com", "v1beta1", "dynamographdeployments", ["dgd"], None),
    "DynamoComponentDeployment": ("nvidia.com", "v1beta1", "dynamocomponentdeployments", ["dcd"], None),
    "DynamoGraphDeploymentScalingAdapter": (
        "nvidia.com",
        "v1beta1",
        "dynamographdeploymentscalingadapters",
        ["dgdsa"],
        {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    ),
    "PodCliqueSet": (
        "grove.io",
        "v1alpha1",
        "podcliquesets",
        ["pcs"],
        {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.hpaPodSelector",
        },
    ),
    "PodClique": (
        "grove.io",
        "v1alpha1",
        "podcliques",
        ["pclq"],
        {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.hpaPodSelector",
        },
    ),
    "PodCliqueScalingGroup": (
        "grove.io",
        "v1alpha1",
        "podcliquescalinggroups",
        ["pcsg"],
        {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    ),
}

KINDS = [resource.kind for resource in RESOURCES]

#: The kinds served in v1alpha1 too, converted by the operator's webhook (supplement §1.11).
CONVERTED_KINDS = (
    "DynamoGraphDeployment",
    "DynamoComponentDeployment",
    "DynamoGraphDeploymentScalingAdapter",
)


def _resource(kind: str) -> CustomResource:
    return next(resource for resource in RESOURCES if resource.kind == kind)


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    """The stored version (the one every kind has)."""
    (version,) = [v for v in crd["spec"]["versions"] if v["storage"]]
    return version  # type: ignore[no-any-return]


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    return _version(crd)["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


@functools.cache
def _upstream_versions(kind: str) -> dict[str, dict[str, Any]]:
    """Every version of upstream's CRD of a kind, by name (parsed once: the files are large)."""
    resource = _resource(kind)
    directory = GROVE_CRD_DIR if resource.group == "grove.io" else CRD_DIR
    (crd,) = load_documents(directory / f"{resource.group}_{resource.plural}.yaml")
    return {version["name"]: version for version in crd["spec"]["versions"]}


def _upstream_version(kind: str) -> dict[str, Any]:
    """Upstream's CRD version that matches ours."""
    return _upstream_versions(kind)[_resource(kind).version]


def _field_paths(node: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every field below ``node`` as (path, schema): ``a.b``, ``a[]`` for items, ``a{}`` for map values."""
    for name, child in node.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path, child
        yield from _nested(child, path)


def _nested(node: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from _field_paths(node, path)
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        child = node.get(key)
        if isinstance(child, dict):
            yield path + suffix, child
            yield from _nested(child, path + suffix)


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


def _covers(prefix: str, path: str) -> bool:
    if prefix.endswith("."):
        return path.startswith(prefix)
    return path == prefix or path.startswith((prefix + ".", prefix + "[", prefix + "{"))


def _differences(resource: CustomResource) -> list[tuple[str, str]]:
    """(path, what differs) for every upstream field of spec and status that ours lacks or reads otherwise."""
    upstream = dict(_field_paths(_upstream_version(resource.kind)["schema"]["openAPIV3Schema"]))
    ours = dict(_field_paths(_schema(render_crd(resource))))
    found: list[tuple[str, str]] = []
    for path, theirs in upstream.items():
        if not path.startswith(("spec", "status")):
            continue
        mine = ours.get(path)
        if mine is None:
            found.append((path, "missing"))
            continue
        if theirs.get("type") != mine.get("type"):
            found.append((path, f"type: upstream {theirs.get('type')}, ours {mine.get('type')}"))
        if set(theirs.get("enum", [])) != set(mine.get("enum", [])):
            found.append((path, f"enum: upstream {theirs.get('enum')}, ours {mine.get('enum')}"))
        for key in ("x-kubernetes-list-type", "x-kubernetes-list-map-keys"):
            if theirs.get(key) != mine.get(key):
                found.append((path, f"{key}: upstream {theirs.get(key)}, ours {mine.get(key)}"))
    return found


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


# (b) The checked-in files are what the code generates.


def test_checked_in_crds_are_what_the_models_generate() -> None:
    # Given the files in deploy/crds/ and what the code generates now
    checked_in = {path.name: path.read_text(encoding="utf-8") for path in sorted(DEPLOY_CRDS.glob("*.yaml"))}
    generated = crd_files()
    # Then they are the same files with the same text (run `make crds` after changing a model)
    assert sorted(checked_in) == sorted(generated)
    for name, text in generated.items():
        assert checked_in[name] == text, f"deploy/crds/{name} is stale: run `make crds`"


def test_multi_document_yaml_holds_every_owned_crd_in_order_and_no_grove_crd() -> None:
    # When the CRDs are rendered as one YAML stream
    documents = list(yaml.safe_load_all(render_crds_yaml()))
    # Then it holds exactly the operator's own CRDs, in the stable order of owned_crds
    assert documents == owned_crds()
    assert [d["spec"]["names"]["kind"] for d in documents] == [r.kind for r in OWNED]
    # And none of the simulated cluster's Grove models, which would replace real Grove's schemas
    assert {d["spec"]["group"] for d in documents} == {"nvidia.com"}
    assert [r.group for r in RESOURCES if r not in OWNED] == ["grove.io"] * 3


# (c) Our schemas cover upstream's fields, with the same enums, types and list semantics.


@pytest.mark.parametrize("kind", KINDS)
def test_schema_covers_every_upstream_field_with_the_same_enums_and_types(kind: str) -> None:
    # Given every way our schema differs from upstream's for spec and status
    allowed = ALLOWED_DIFFERENCES[kind]
    differences = _differences(_resource(kind))
    # Then each difference is one we chose, for a stated reason
    unexplained = [(path, what) for path, what in differences if not any(_covers(p, path) for p in allowed)]
    assert unexplained == []


@pytest.mark.parametrize("kind", KINDS)
def test_every_allowed_difference_is_still_a_difference(kind: str) -> None:
    # Given the differences from upstream that we allow
    differences = _differences(_resource(kind))
    # Then each allowance still covers a real difference (a stale one would hide a future regression)
    stale = [
        prefix for prefix in ALLOWED_DIFFERENCES[kind] if not any(_covers(prefix, p) for p, _ in differences)
    ]
    assert stale == []


def test_comparison_sees_through_to_nested_component_fields() -> None:
    # Given the upstream DGD's field paths
    upstream = dict(_field_paths(_upstream_version("DynamoGraphDeployment")["schema"]["openAPIV3Schema"]))
    ours = dict(_field_paths(_schema(render_crd(_resource("DynamoGraphDeployment")))))
    # Then deep fields are compared, not only the top level
    assert "spec.components[].experimental.checkpoint.mode" in upstream
    assert ours["spec.components[].experimental.checkpoint.mode"]["enum"] == ["Auto", "Manual"]
    assert "status.components{}.componentKind" in ours


# (d) How each kind is served.


@pytest.mark.parametrize("kind", KINDS)
def test_kind_is_served_and_stored_in_one_version_with_its_names_and_subresources(kind: str) -> None:
    # Given the generated CRD and what the operator must serve
    crd = render_crd(_resource(kind))
    group, version, plural, short_names, scale = SERVED[kind]
    # Then it is named after its plural and group, with the expected short names
    assert crd["metadata"]["name"] == f"{plural}.{group}"
    assert crd["spec"]["group"] == group
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["plural"] == plural
    assert crd["spec"]["names"]["kind"] == kind
    assert crd["spec"]["names"]["shortNames"] == short_names
    # And one version is served and stored; Dynamo's kinds serve v1alpha1 too, through conversion
    served = _version(crd)
    assert (served["name"], served["served"], served["storage"]) == (version, True, True)
    others = [(v["name"], v["served"], v["storage"]) for v in crd["spec"]["versions"] if v is not served]
    assert others == ([("v1alpha1", True, False)] if kind in CONVERTED_KINDS else [])
    # And status is a subresource, scale only where specified, in every served version
    expected = {"status": {}} if scale is None else {"status": {}, "scale": scale}
    assert [v["subresources"] for v in crd["spec"]["versions"]] == [expected] * (1 + len(others))


@pytest.mark.parametrize("kind", KINDS)
def test_subresources_match_upstream(kind: str) -> None:
    # Given every version we serve and upstream's versions of the same name
    served = render_crd(_resource(kind))["spec"]["versions"]
    upstream = _upstream_versions(kind)
    # Then the subresources (scale paths included) are the same in each
    for version in served:
        assert version["subresources"] == upstream[version["name"]]["subresources"], version["name"]


def _column_shapes(columns: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What ``kubectl get`` shows of printer columns: name, type, path and priority, in order."""
    return [(c["name"], c["type"], c["jsonPath"], c.get("priority")) for c in columns]


@pytest.mark.parametrize("kind", KINDS)
def test_printer_columns_of_every_served_version_match_upstream(kind: str) -> None:
    # Given every version we serve of the kind, and upstream's versions of the same name
    served = render_crd(_resource(kind))["spec"]["versions"]
    upstream = _upstream_versions(kind)
    for version in served:
        # Then upstream serves that version too, with the same columns, paths and priorities, in order
        assert version["name"] in upstream, f"{kind} {version['name']} is not an upstream version"
        theirs = upstream[version["name"]].get("additionalPrinterColumns", [])
        assert _column_shapes(version["additionalPrinterColumns"]) == _column_shapes(theirs), version["name"]


def test_dgd_columns_are_upstreams_ready_backend_and_age() -> None:
    # Given the DGD's printer columns
    columns = _version(render_crd(_resource("DynamoGraphDeployment")))["additionalPrinterColumns"]
    # Then they are upstream's three, so `kubectl get dgd` reads as it does with upstream's CRD
    assert _column_shapes(columns) == [
        ("Ready", "string", '.status.conditions[?(@.type=="Ready")].status', None),
        ("Backend", "string", ".spec.backendFramework", None),
        ("Age", "date", ".metadata.creationTimestamp", None),
    ]


def test_list_map_semantics_on_components_and_conditions() -> None:
    # Given the DGD schema
    schema = _schema(render_crd(_resource("DynamoGraphDeployment")))
    components = schema["properties"]["spec"]["properties"]["components"]
    conditions = schema["properties"]["status"]["properties"]["conditions"]
    # Then components merge by name and conditions by type, as upstream declares
    assert (components["x-kubernetes-list-type"], components["x-kubernetes-list-map-keys"]) == (
        "map",
        ["name"],
    )
    assert (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"]) == (
        "map",
        ["type"],
    )


def test_upstream_crds_are_where_the_comparison_reads_them() -> None:
    # A missing upstream checkout must fail loudly rather than compare against nothing.
    paths: list[Path] = [
        (GROVE_CRD_DIR if r.group == "grove.io" else CRD_DIR) / f"{r.group}_{r.plural}.yaml"
        for r in RESOURCES
    ]
    assert [p for p in paths if not p.is_file()] == []


def test_the_dgd_serves_v1alpha1_through_the_conversion_webhook_with_no_ca_bundle() -> None:
    # Given the generated DGD CRD
    crd = render_crd(_resource("DynamoGraphDeployment"))
    # Then conversion goes to the chart's webhook Service at /convert (supplement §4.8), and the CA
    # bundle is left for the operator to patch in: re-applying the CRD does not wipe it
    assert crd["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {
                "service": {
                    "namespace": "dynamo-system",
                    "name": "dynamo-operator-webhook-service",
                    "path": "/convert",
                }
            },
        },
    }
    # And every spec field of upstream's v1alpha1 schema is in ours
    (upstream,) = load_documents(CRD_DIR / "nvidia.com_dynamographdeployments.yaml")
    theirs = next(v for v in upstream["spec"]["versions"] if v["name"] == "v1alpha1")
    ours = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    mine = dict(_field_paths(ours["schema"]["openAPIV3Schema"]))
    preserved = [path for path, node in mine.items() if node.get("x-kubernetes-preserve-unknown-fields")]
    missing = [
        path
        for path, _ in _field_paths(theirs["schema"]["openAPIV3Schema"])
        if path.startswith("spec")
        and path not in mine
        # a field we keep as raw JSON holds everything below it
        and not any(_covers(raw + ".", path) or _covers(raw + "[", path) for raw in preserved)
    ]
    assert missing == []


@pytest.mark.parametrize("kind", CONVERTED_KINDS)
def test_a_converted_kind_serves_v1alpha1_through_the_same_webhook(kind: str) -> None:
    # Given the generated CRD of a kind the conversion webhook converts
    crd = render_crd(_resource(kind))
    # Then the API server sends its conversion reviews to the same Service and path as the DGD's
    assert crd["spec"]["conversion"] == render_crd(_resource("DynamoGraphDeployment"))["spec"]["conversion"]
    assert "caBundle" not in crd["spec"]["conversion"]["webhook"]["clientConfig"]


@pytest.mark.parametrize("kind", ["DynamoComponentDeployment", "DynamoGraphDeploymentScalingAdapter"])
def test_v1alpha1_schema_covers_every_upstream_v1alpha1_field_with_its_enum_and_type(kind: str) -> None:
    # Given upstream's v1alpha1 schema of the kind and ours
    crd = render_crd(_resource(kind))
    ours = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    mine = dict(_field_paths(ours["schema"]["openAPIV3Schema"]))
    theirs = _upstream_versions(kind)["v1alpha1"]["schema"]["openAPIV3Schema"]
    preserved = [path for path, node in mine.items() if node.get("x-kubernetes-preserve-unknown-fields")]
    # When every spec and status field of theirs is looked up in ours (a raw-JSON field holds all below it)
    differences = []
    for path, node in _field_paths(theirs):
        if not path.startswith(("spec", "status")) or any(
            _covers(raw + ".", path) or _covers(raw + "[", path) or _covers(raw + "{", path)
            for raw in preserved
        ):
            continue
        if path not in mine:
            differences.append((path, "missing"))
        elif node.get("type") != mine[path].get("type"):
            differences.append((path, f"type: upstream {node.get('type')}, ours {mine[path].get('type')}"))
        elif set(node.get("enum", [])) != set(mine[path].get("enum", [])):
            differences.append((path, f"enum: upstream {node.get('enum')}, ours {mine[path].get('enum')}"))
    # Then there is none: a v1alpha1 client can write everything it could write to upstream
    assert differences == []
