"""SyncResource as a decision (dgd-domain §7, with metadata repair as our departure)."""

from __future__ import annotations

from typing import Any

from dgd.domain.gojson.last_applied import last_applied_hash
from dgd.domain.sync import Create, Keep, Patch, content_hash, covers, plan_sync

OWNER = {
    "apiVersion": "nvidia.com/v1beta1",
    "kind": "DynamoGraphDeployment",
    "name": "g",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def service(selector: str = "worker", *, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "g-worker", "namespace": "ns"}
    if labels is not None:
        metadata["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {"selector": {"app": selector}, "ports": [{"name": "system", "port": 9090}]},
    }


def stored(
    desired: dict[str, Any],
    *,
    generation: int = 1,
    applied: str | None = "1",
    digest: str | None = None,
    version: str = "7",
    **spec: Any,
) -> dict[str, Any]:
    """``desired`` as the server holds it after our create (the API server may have added defaults)."""
    annotations = {"nvidia.com/last-applied-hash": digest or content_hash(desired)}
    if applied is not None:
        annotations["nvidia.com/last-applied-generation"] = applied
    metadata = {
        **desired["metadata"],
        "generation": generation,
        "resourceVersion": version,
        "uid": "s-1",
        "annotations": annotations,
    }
    return {**desired, "metadata": metadata, "spec": {**desired["spec"], **spec}}


def bookkeeping(desired: dict[str, Any], generation: str) -> dict[str, str]:
    """The annotations the operator keeps on a child: the hash of ``desired``, the generation applied."""
    return {
        "nvidia.com/last-applied-hash": content_hash(desired),
        "nvidia.com/last-applied-generation": generation,
    }


def test_a_missing_child_is_created_owned_by_the_dgd_with_its_bookkeeping() -> None:
    desired = service()
    plan = plan_sync(desired, None, OWNER)
    assert isinstance(plan, Create)
    assert plan.body["metadata"]["ownerReferences"] == [OWNER]
    assert plan.body["metadata"]["annotations"] == bookkeeping(desired, "1")


def test_a_child_as_desired_is_kept_even_with_fields_the_server_defaulted() -> None:
    desired = service()
    assert plan_sync(desired, stored(desired, clusterIP="10.0.0.7", type="ClusterIP"), OWNER) == Keep()


def test_a_changed_spec_is_patched_from_the_live_spec_with_the_next_generation_and_its_version() -> None:
    desired = service("frontend")
    live = stored(service("worker"), digest="old", clusterIP="10.0.0.7")
    plan = plan_sync(desired, live, OWNER)
    assert plan == Patch(
        {
            "spec": {"clusterIP": None, "selector": {"app": "frontend"}},
            "metadata": {"annotations": bookkeeping(desired, "2"), "resourceVersion": "7"},
        },
        spec=True,
    )


def test_an_edit_by_someone_else_with_an_equal_spec_rewrites_only_the_bookkeeping() -> None:
    # given a child someone edited (generation 3 > applied 1) whose spec still covers the desired one
    desired = service()
    plan = plan_sync(desired, stored(desired, generation=3, applied="1"), OWNER)
    assert plan == Patch(
        {"metadata": {"annotations": bookkeeping(desired, "3"), "resourceVersion": "7"}},
        spec=False,
    )


def test_an_unparsable_generation_annotation_counts_as_missing() -> None:
    desired = service()
    assert isinstance(plan_sync(desired, stored(desired, applied="soon"), OWNER), Patch)


def test_drifted_operator_labels_are_repaired_and_foreign_labels_are_left_alone() -> None:
    desired = service(labels={"nvidia.com/dynamo-discovery-enabled": "true"})
    live = stored(service(labels={"nvidia.com/dynamo-discovery-enabled": "false", "team": "infra"}))
    live["metadata"]["annotations"]["nvidia.com/last-applied-hash"] = content_hash(desired)
    plan = plan_sync(desired, live, OWNER)
    assert plan == Patch(
        {"metadata": {"labels": {"nvidia.com/dynamo-discovery-enabled": "true"}, "resourceVersion": "7"}},
        spec=False,
        metadata=("labels",),
    )


def test_a_kind_without_spec_is_compared_on_its_body() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns"},
        "data": {"script.py": "print(1)"},
    }
    live = {
        **desired,
        "data": {"script.py": "print(0)"},
        "metadata": {
            **desired["metadata"],
            "generation": 1,
            "resourceVersion": "3",
            "annotations": {"nvidia.com/last-applied-hash": "x", "nvidia.com/last-applied-generation": "1"},
        },
    }
    plan = plan_sync(desired, live, OWNER)
    assert isinstance(plan, Patch) and plan.spec
    assert plan.patch["data"] == {"script.py": "print(1)"}


def test_covers_compares_lists_whole_and_maps_on_the_desired_keys() -> None:
    assert covers({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2, "c": 3}], "d": 4})
    assert not covers({"a": [1]}, {"a": [1, 2]})
    assert not covers({"a": {"b": 1}}, {"a": {"b": 2}})


def test_a_remembered_hash_is_the_hash_of_that_object_and_no_other() -> None:
    # Given a Service hashed once (remembered), then changed in one port.
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "demo-frontend", "namespace": "ns"},
        "spec": {"ports": [{"name": "http", "port": 8000}], "selector": {"app": "demo"}},
    }
    first = content_hash(service)
    changed = {**service, "spec": {**service["spec"], "ports": [{"name": "http", "port": 8001}]}}
    # Then each hash is upstream's rule applied to that very object, asked once or again.
    assert first == content_hash(service) == last_applied_hash(service)
    assert content_hash(changed) == last_applied_hash(changed) != first
