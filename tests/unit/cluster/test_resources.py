"""The resource registry agrees with the CRDs we generate and with the message models."""

from __future__ import annotations

import pytest

from dgd.cluster.resources import DEFAULT_RESOURCES, DGD, NAMESPACE, Resource
from dgd.domain.crds import RESOURCES as CRDS
from dgd.domain.crds import CustomResource


@pytest.mark.parametrize("crd", CRDS, ids=lambda crd: crd.kind)
def test_every_generated_crd_is_served_as_its_crd_says(crd: CustomResource) -> None:
    (served,) = [resource for resource in DEFAULT_RESOURCES if resource.kind == crd.kind]

    assert (served.api_version, served.plural, served.model) == (crd.api_version, crd.plural, crd.model)
    assert served.status and served.namespaced
    if crd.scale is None:
        assert served.scale is None
    else:
        assert served.scale is not None
        assert served.scale.spec_replicas == crd.scale.spec_replicas_path
        assert served.scale.status_replicas == crd.scale.status_replicas_path
        assert served.scale.selector == crd.scale.label_selector_path


def test_resources_are_unique_by_group_and_plural() -> None:
    ids = [str(resource) for resource in DEFAULT_RESOURCES]

    assert len(ids) == len(set(ids))


def test_keys_enforce_the_scope_of_the_kind() -> None:
    with pytest.raises(ValueError):
        DGD.key(None, "graph")
    with pytest.raises(ValueError):
        NAMESPACE.key("team-a", "team-a")

    assert str(DGD.key("team-a", "graph")) == "DynamoGraphDeployment team-a/graph"


def test_raw_view_shares_the_collection_and_decodes_to_json() -> None:
    raw: Resource[dict[str, object]] = DGD.as_raw()

    assert str(raw) == str(DGD) and raw.model is DGD.model
    assert raw.decode(b'{"kind": "DynamoGraphDeployment", "extra": 1}') == {
        "kind": "DynamoGraphDeployment",
        "extra": 1,
    }
