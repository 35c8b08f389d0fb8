"""JSON merge patch (RFC 7386) on the main resource, with an optional resourceVersion precondition."""

from __future__ import annotations

import pytest

from dgd.cluster.errors import Conflict, Invalid, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CONFIG_MAP, DEPLOYMENT, DGDSA
from tests.conformance.builders import NS, adapter, config_map, deployment

pytestmark = pytest.mark.anyio


async def test_merge_patch_merges_objects_removes_nulls_and_replaces_lists(cluster: Cluster) -> None:
    """RFC 7386: objects merge key by key, null deletes a key, a list replaces the list."""
    body = deployment("web", replicas=2)
    body["metadata"]["annotations"] = {"note": "old", "keep": "yes"}
    await cluster.create(DEPLOYMENT, body)

    patched = await cluster.patch(
        DEPLOYMENT.key(NS, "web"),
        {
            "metadata": {"labels": {"team": "a"}, "annotations": {"note": None}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}},
        },
    )

    assert patched["metadata"]["labels"] == {"team": "a"}
    # (a real Deployment controller may have stamped its revision meanwhile: not the patch's doing)
    annotations = patched["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if not k.startswith("deployment.kubernetes.io/")} == {
        "keep": "yes"
    }
    assert patched["spec"]["replicas"] == 3
    assert [(c["name"], c["image"]) for c in patched["spec"]["template"]["spec"]["containers"]] == [
        ("main", "x")
    ]
    assert patched["spec"]["template"]["metadata"]["labels"] == {"app": "web", "tier": "web"}


async def test_merge_patch_with_the_current_resource_version_applies(cluster: Cluster) -> None:
    """A patch carrying metadata.resourceVersion is conditional; the current one passes. (A kind no
    controller writes: a real Deployment controller moves the resourceVersion on at once.)"""
    created = await cluster.create(CONFIG_MAP, config_map("web", data={"replicas": "2"}))

    patched = await cluster.patch(
        CONFIG_MAP.key(NS, "web"),
        {"data": {"replicas": "5"}},
        resource_version=created["metadata"]["resourceVersion"],
    )

    assert patched["data"]["replicas"] == "5"


async def test_merge_patch_with_a_stale_resource_version_is_conflict(cluster: Cluster) -> None:
    """A conditional patch against a resourceVersion that moved on: 409, nothing applied."""
    created = await cluster.create(CONFIG_MAP, config_map("web", data={"replicas": "2"}))
    await cluster.patch(CONFIG_MAP.key(NS, "web"), {"data": {"replicas": "3"}})

    with pytest.raises(Conflict):
        await cluster.patch(
            CONFIG_MAP.key(NS, "web"),
            {"data": {"replicas": "9"}},
            resource_version=created["metadata"]["resourceVersion"],
        )

    assert (await cluster.get(CONFIG_MAP.key(NS, "web")))["data"]["replicas"] == "3"


async def test_merge_patch_without_resource_version_is_unconditional(cluster: Cluster) -> None:
    """Without a resourceVersion a patch applies to whatever is stored (the last writer wins)."""
    await cluster.create(DEPLOYMENT, deployment("web", replicas=2))
    await cluster.patch(DEPLOYMENT.key(NS, "web"), {"spec": {"replicas": 3}})

    patched = await cluster.patch(DEPLOYMENT.key(NS, "web"), {"spec": {"paused": True}})

    assert (patched["spec"]["replicas"], patched["spec"]["paused"]) == (3, True)


async def test_merge_patch_of_a_missing_object_is_not_found(cluster: Cluster) -> None:
    """PATCH does not create: 404."""
    with pytest.raises(NotFound):
        await cluster.patch(DEPLOYMENT.key(NS, "missing"), {"spec": {"replicas": 1}})


async def test_merge_patch_cannot_rename_an_object(cluster: Cluster) -> None:
    """metadata.name in a patch must match the object patched (a 400)."""
    await cluster.create(DEPLOYMENT, deployment("web"))

    with pytest.raises(Invalid):
        await cluster.patch(DEPLOYMENT.key(NS, "web"), {"metadata": {"name": "other"}})


async def test_merge_patch_result_is_validated_against_the_schema(cluster: Cluster) -> None:
    """Validation applies to the patched object, not only to creates (DGDSA spec.replicas >= 0)."""
    await cluster.create(DGDSA, adapter(replicas=1))

    with pytest.raises(Invalid):
        await cluster.patch(DGDSA.key(NS, "graph-worker"), {"spec": {"replicas": -2}})

    assert (await cluster.get(DGDSA.key(NS, "graph-worker"))).spec.replicas == 1
