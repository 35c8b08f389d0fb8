"""What the facade says it serves: discovery (legacy and aggregated) and the OpenAPI v3 documents."""

from __future__ import annotations

from dgd.cluster.resources import CHECKPOINT, CONFIG_MAP, DEFAULT_RESOURCES, DGD, DGDSA, NAMESPACE
from dgd.domain.crds import all_crds
from dgd.sim.apiserver import openapi as facade_openapi
from dgd.sim.apiserver.catalog import CUSTOM_RESOURCE_DEFINITION, Catalog, version_priority

SERVED = (*DEFAULT_RESOURCES, CUSTOM_RESOURCE_DEFINITION)


def test_versions_are_ordered_ga_then_beta_then_alpha_newest_first() -> None:
    versions = ["v1alpha1", "v1beta1", "v1", "v2", "v1beta2", "custom", "v2alpha1"]

    assert sorted(versions, key=version_priority) == [
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v2alpha1",
        "v1alpha1",
        "custom",
    ]


def test_group_lists_its_versions_with_the_preferred_one_first() -> None:
    # given the DGD (nvidia.com/v1beta1) and the DynamoCheckpoint (nvidia.com/v1alpha1)
    catalog = Catalog([DGD, CHECKPOINT])

    # when the group is discovered
    group = catalog.api_group("nvidia.com")

    # then v1beta1 is preferred
    assert [version["version"] for version in group["versions"]] == ["v1beta1", "v1alpha1"]
    assert group["preferredVersion"] == {"groupVersion": "nvidia.com/v1beta1", "version": "v1beta1"}


def test_resource_list_takes_short_names_from_the_stored_crd_and_lists_subresources() -> None:
    # given the DGDSA and its CRD
    catalog = Catalog(SERVED, all_crds())

    # when nvidia.com/v1beta1 is discovered the legacy way
    listed = catalog.api_resource_list("nvidia.com", "v1beta1")

    # then the DGDSA carries its short name, and its status and scale subresources are listed
    by_name = {resource["name"]: resource for resource in listed["resources"]}
    adapters = by_name[DGDSA.plural]
    assert (adapters["kind"], adapters["namespaced"], adapters["shortNames"]) == (
        "DynamoGraphDeploymentScalingAdapter",
        True,
        ["dgdsa"],
    )
    assert "watch" in adapters["verbs"] and "patch" in adapters["verbs"]
    assert by_name[f"{DGDSA.plural}/status"]["verbs"] == ["get", "patch", "update"]
    assert (by_name[f"{DGDSA.plural}/scale"]["group"], by_name[f"{DGDSA.plural}/scale"]["kind"]) == (
        "autoscaling",
        "Scale",
    )


def test_aggregated_discovery_has_one_entry_per_group_with_scope_and_subresources() -> None:
    # given every served kind
    catalog = Catalog(SERVED, all_crds())

    # when discovered in one request each for the core group and the named groups
    core = catalog.aggregated(core=True)
    named = catalog.aggregated(core=False)

    # then the core group is unnamed, cluster-scoped kinds say so, and CRD kinds carry their names
    assert core["kind"] == "APIGroupDiscoveryList" and core["apiVersion"] == "apidiscovery.k8s.io/v2"
    assert [item["metadata"] for item in core["items"]] == [{}]
    core_resources = {r["resource"]: r for r in core["items"][0]["versions"][0]["resources"]}
    assert core_resources[NAMESPACE.plural]["scope"] == "Cluster"
    assert core_resources[CONFIG_MAP.plural]["shortNames"] == ["cm"]
    nvidia = next(item for item in named["items"] if item["metadata"] == {"name": "nvidia.com"})
    dgds = next(r for r in nvidia["versions"][0]["resources"] if r["resource"] == DGD.plural)
    assert (dgds["scope"], dgds["singularResource"], dgds["shortNames"]) == (
        "Namespaced",
        "dynamographdeployment",
        ["dgd"],
    )
    assert [sub["subresource"] for sub in dgds["subresources"]] == ["status"]


def test_openapi_tells_kubectl_the_server_validates_fields_and_carries_the_crd_schema() -> None:
    # given the CRDs stored
    catalog = Catalog(SERVED, all_crds())

    # when the root and the nvidia.com/v1beta1 documents are read
    root = facade_openapi.root(catalog)
    document = facade_openapi.group_version(catalog, "nvidia.com", "v1beta1")

    # then the root points at the document by its hash, its PATCH takes fieldValidation, and the
    # DGD schema is the CRD's, tagged with its group/version/kind
    digest = facade_openapi.document_hash(document)
    assert root["paths"]["apis/nvidia.com/v1beta1"] == {
        "serverRelativeURL": f"/openapi/v3/apis/nvidia.com/v1beta1?hash={digest}"
    }
    item = document["paths"]["/apis/nvidia.com/v1beta1/namespaces/{namespace}/dynamographdeployments/{name}"]
    assert "fieldValidation" in [parameter["name"] for parameter in item["patch"]["parameters"]]
    assert item["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "nvidia.com",
        "version": "v1beta1",
        "kind": "DynamoGraphDeployment",
    }
    schema = document["components"]["schemas"]["com.nvidia.v1beta1.DynamoGraphDeployment"]
    assert "backendFramework" in schema["properties"]["spec"]["properties"]
    assert "application/strategic-merge-patch+json" not in item["patch"]["requestBody"]["content"]
