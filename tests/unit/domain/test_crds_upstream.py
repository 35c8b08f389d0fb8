"""The generated CRDs cover upstream's fields with the same enums, types and list semantics, but for the
differences allowed and why.
"""

from __future__ import annotations

import pytest

from dgd.domain.crds import (
    CustomResource,
    render_crd,
)
from tests.unit.domain.crd_cases import (
    KINDS,
    _covers,
    _field_paths,
    _resource,
    _schema,
    _upstream_version,
    _upstream_versions,
)

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
