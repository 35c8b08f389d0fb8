"""How each kind is served: its versions, names, subresources, printer columns and the conversion webhook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dgd.domain.crds import (
    RESOURCES,
    render_crd,
)
from tests.unit.domain.crd_cases import (
    CONVERTED_KINDS,
    GROVE_CRD_DIR,
    KINDS,
    _covers,
    _field_paths,
    _resource,
    _schema,
    _upstream_versions,
    _version,
)
from tests.upstream import CRD_DIR, load_documents

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
