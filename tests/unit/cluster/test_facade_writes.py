"""The facade's patches, server-side apply, scale subresource and deletes as an HTTP client sees them."""

from __future__ import annotations

import pytest
import yaml

from dgd.cluster.resources import CONFIG_MAP, DGDSA
from tests.unit.cluster.facade_client import CONFIG_MAPS, DGDS, NS, Served, config_map, dgd

pytestmark = pytest.mark.anyio


async def test_json_patch_and_strategic_merge_patch_of_a_built_in_kind(served: Served) -> None:
    # given a ConfigMap
    await served.call("POST", CONFIG_MAPS, config_map())

    # when patched with a JSON patch, then with a strategic merge patch
    _, json_patched = await served.call(
        "PATCH",
        f"{CONFIG_MAPS}/settings",
        [{"op": "add", "path": "/data/extra", "value": "1"}],
        headers={"Content-Type": "application/json-patch+json"},
    )
    _, strategic = await served.call(
        "PATCH",
        f"{CONFIG_MAPS}/settings",
        {"metadata": {"labels": {"tier": "web"}}, "data": {"k": None}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )

    # then both applied, each as one write
    assert json_patched["data"] == {"k": "v", "extra": "1"}
    assert strategic["data"] == {"extra": "1"} and strategic["metadata"]["labels"] == {"tier": "web"}
    assert (
        int(strategic["metadata"]["resourceVersion"]) == int(json_patched["metadata"]["resourceVersion"]) + 1
    )


async def test_strategic_merge_patch_of_a_custom_resource_is_unsupported(served: Served) -> None:
    # given a DGD (a custom resource)
    await served.call("POST", DGDS, dgd())

    # when a strategic merge patch is sent
    status, answer = await served.call(
        "PATCH",
        f"{DGDS}/graph",
        {"spec": {}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )

    # then 415, as the API server answers for custom resources
    assert (status, answer["reason"]) == (415, "UnsupportedMediaType")


async def test_server_side_apply_creates_then_merges_the_applied_configuration(served: Served) -> None:
    # given an applied configuration in YAML (no namespace: the path has it)
    applied = dgd()
    del applied["metadata"]["namespace"]
    apply = {"Content-Type": "application/apply-patch+yaml"}
    params = {"fieldManager": "kubectl", "force": "true"}

    # when applied twice, the second time with another backend
    first = await served.call(
        "PATCH", f"{DGDS}/graph", yaml.safe_dump(applied).encode(), headers=apply, params=params
    )
    applied["spec"]["backendFramework"] = "sglang"
    second = await served.call(
        "PATCH", f"{DGDS}/graph", yaml.safe_dump(applied).encode(), headers=apply, params=params
    )

    # then the first created the object and the second changed it
    assert first[0] == 201 and first[1]["metadata"]["generation"] == 1
    assert second[0] == 200 and second[1]["spec"]["backendFramework"] == "sglang"
    assert second[1]["metadata"]["generation"] == 2


async def test_scale_subresource_takes_a_merge_patch(served: Served) -> None:
    # given a scaling adapter with one replica
    adapter = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {"name": "graph-worker", "namespace": NS},
        "spec": {"replicas": 1, "dgdRef": {"name": "graph", "componentName": "worker"}},
    }
    adapters = f"/apis/nvidia.com/v1beta1/namespaces/{NS}/{DGDSA.plural}"
    await served.call("POST", adapters, adapter)

    # when kubectl scale patches its scale subresource
    status, scale = await served.call(
        "PATCH",
        f"{adapters}/graph-worker/scale",
        {"spec": {"replicas": 3}},
        headers={"Content-Type": "application/merge-patch+json"},
    )

    # then the Scale and the object say 3
    assert (status, scale["kind"], scale["spec"]["replicas"]) == (200, "Scale", 3)
    assert (await served.cluster.get(DGDSA.key(NS, "graph-worker"))).spec.replicas == 3


async def test_delete_honours_preconditions_and_answers_success_once_gone(served: Served) -> None:
    # given a ConfigMap
    _, created = await served.call("POST", CONFIG_MAPS, config_map())

    # when deleted with a wrong uid precondition, then with the right one
    stale = await served.call(
        "DELETE", f"{CONFIG_MAPS}/settings", {"kind": "DeleteOptions", "preconditions": {"uid": "other"}}
    )
    deleted = await served.call(
        "DELETE",
        f"{CONFIG_MAPS}/settings",
        {"kind": "DeleteOptions", "preconditions": {"uid": created["metadata"]["uid"]}},
        params={"propagationPolicy": "Background"},
    )

    # then the first is a 409 Conflict and the second a Success Status naming the object
    assert (stale[0], stale[1]["reason"]) == (409, "Conflict")
    assert deleted[0] == 200 and deleted[1]["status"] == "Success"
    assert deleted[1]["details"] == {
        "name": "settings",
        "group": "",
        "kind": "configmaps",
        "uid": created["metadata"]["uid"],
    }


async def test_delete_collection_removes_what_the_label_selector_matches(served: Served) -> None:
    # given three ConfigMaps, two labelled
    for name, labels in (("a", {"app": "x"}), ("b", {"app": "x"}), ("c", {})):
        await served.call("POST", CONFIG_MAPS, config_map(name, **labels))

    # when the collection is deleted with app=x
    status, _ = await served.call("DELETE", CONFIG_MAPS, params={"labelSelector": "app=x"})

    # then only c is left
    remaining = await served.cluster.list(CONFIG_MAP, namespace=NS)
    assert status == 200 and [item["metadata"]["name"] for item in remaining.items] == ["c"]
