"""Create, get, replace and delete: identity, resourceVersions and optimistic concurrency."""

from __future__ import annotations

import re

import anyio
import msgspec
import pytest

from dgd.cluster.errors import AlreadyExists, Conflict, Invalid, NotFound, ServerError
from dgd.cluster.protocol import Cluster, Preconditions
from dgd.cluster.resources import CLUSTER_ROLE, CONFIG_MAP, DEPLOYMENT, DGD, DGDSA, POD
from tests.conformance.builders import NS, config_map, deployment, dgd

pytestmark = pytest.mark.anyio

UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


async def test_create_assigns_uid_resource_version_creation_timestamp_and_generation_one(
    cluster: Cluster,
) -> None:
    """POST: the server sets metadata.uid (a UUID), resourceVersion, creationTimestamp (RFC 3339,
    seconds) and generation 1, and a GET returns the same object."""
    created = await cluster.create(DGD, dgd("graph"))

    assert created.metadata.uid is not None and UID.match(created.metadata.uid)
    assert created.metadata.resource_version
    assert created.metadata.creation_timestamp is not None and TIMESTAMP.match(
        created.metadata.creation_timestamp
    )
    assert created.metadata.generation == 1
    assert await cluster.get(DGD.key(NS, "graph")) == created


async def test_create_of_a_taken_name_is_already_exists(cluster: Cluster) -> None:
    """POST of a name that exists in the namespace: 409 AlreadyExists, and the first object stays."""
    first = await cluster.create(DGD, dgd("graph", backend="vllm"))

    with pytest.raises(AlreadyExists) as raised:
        await cluster.create(DGD, dgd("graph", backend="sglang"))

    assert raised.value.name == "graph" and raised.value.namespace == NS
    assert await cluster.get(DGD.key(NS, "graph")) == first


async def test_same_name_in_another_namespace_is_another_object(cluster: Cluster) -> None:
    """Names are unique per namespace (and per resource), not cluster-wide."""
    one = await cluster.create(DGD, dgd("graph", namespace="team-a"))
    two = await cluster.create(DGD, dgd("graph", namespace="team-b"))

    assert one.metadata.uid != two.metadata.uid


async def test_create_with_generate_name_appends_a_random_suffix(cluster: Cluster) -> None:
    """metadata.generateName without a name: the server appends five random characters."""
    body = config_map("")
    body["metadata"] = {"generateName": "settings-", "namespace": NS}

    first = await cluster.create(CONFIG_MAP, body)
    second = await cluster.create(CONFIG_MAP, body)

    assert re.fullmatch(r"settings-[a-z0-9]{5}", first["metadata"]["name"])
    assert first["metadata"]["name"] != second["metadata"]["name"]


async def test_create_with_a_resource_version_is_rejected(cluster: Cluster) -> None:
    """ "resourceVersion should not be set on objects to be created": the API server answers 500."""
    body = config_map()
    body["metadata"]["resourceVersion"] = "7"

    with pytest.raises(ServerError, match="resourceVersion should not be set on objects to be created"):
        await cluster.create(CONFIG_MAP, body)


async def test_create_rejects_a_name_that_is_not_a_dns_subdomain(cluster: Cluster) -> None:
    """metadata.name must be a lowercase RFC 1123 subdomain: 422 Invalid naming the field."""
    with pytest.raises(Invalid) as raised:
        await cluster.create(CONFIG_MAP, config_map("Not_Valid"))

    assert [cause.field for cause in raised.value.causes] == ["metadata.name"]


async def test_create_rejects_an_object_that_breaks_its_kind_schema(cluster: Cluster) -> None:
    """Custom resources are validated against their schema (DGDSA spec.replicas has minimum 0)."""
    body = msgspec.to_builtins(
        {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeploymentScalingAdapter",
            "metadata": {"name": "graph-worker", "namespace": NS},
            "spec": {"replicas": -1, "dgdRef": {"name": "graph", "componentName": "worker"}},
        }
    )

    with pytest.raises(Invalid) as raised:
        await cluster.create(DGDSA.as_raw(), body)

    assert raised.value.causes[0].field == "spec.replicas"


async def test_create_rejects_a_pod_whose_container_has_no_image(cluster: Cluster) -> None:
    """A Pod's containers need an image: 422 Invalid naming spec.containers[0].image, Required value."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "no-image", "namespace": NS},
        "spec": {"containers": [{"name": "main"}]},
    }

    with pytest.raises(Invalid) as raised:
        await cluster.create(POD, body)

    assert [cause.field for cause in raised.value.causes] == ["spec.containers[0].image"]
    assert "Required value" in str(raised.value)


async def test_create_rejects_a_deployment_whose_selector_misses_its_template(cluster: Cluster) -> None:
    """A Deployment's selector must select its pod template's labels: 422 Invalid naming
    spec.template.metadata.labels."""
    body = deployment("unselected")
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other", "tier": "web"}

    with pytest.raises(Invalid) as raised:
        await cluster.create(DEPLOYMENT, body)

    assert [cause.field for cause in raised.value.causes] == ["spec.template.metadata.labels"]
    assert "does not match template" in str(raised.value)


async def test_get_of_a_missing_object_is_not_found(cluster: Cluster) -> None:
    """GET of a name that does not exist: 404 NotFound naming the object."""
    with pytest.raises(NotFound) as raised:
        await cluster.get(DGD.key(NS, "missing"))

    assert (raised.value.namespace, raised.value.name) == (NS, "missing")


async def test_resource_versions_increase_across_every_kind(cluster: Cluster) -> None:
    """One global resourceVersion sequence: each write, of any kind, gets a higher one."""
    versions = [
        (await cluster.create(DGD, dgd("a"))).metadata.resource_version,
        (await cluster.create(CONFIG_MAP, config_map("b")))["metadata"]["resourceVersion"],
        (await cluster.create(DGD, dgd("c"))).metadata.resource_version,
    ]

    numbers = [int(str(version)) for version in versions]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3


async def test_replace_with_the_current_resource_version_stores_and_bumps_it(cluster: Cluster) -> None:
    """PUT carrying the resourceVersion it read succeeds and returns a new resourceVersion."""
    created = await cluster.create(CONFIG_MAP, config_map(data={"a": "1"}))
    created["data"] = {"a": "2"}

    replaced = await cluster.replace(CONFIG_MAP, created)

    assert replaced["data"] == {"a": "2"}
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def test_replace_with_a_stale_resource_version_is_conflict(cluster: Cluster) -> None:
    """PUT with a resourceVersion that is no longer current: 409 Conflict, nothing written."""
    stale = await cluster.create(CONFIG_MAP, config_map(data={"a": "1"}))
    await cluster.patch(CONFIG_MAP.key(NS, "settings"), {"data": {"a": "2"}})
    stale["data"] = {"a": "3"}

    with pytest.raises(Conflict):
        await cluster.replace(CONFIG_MAP, stale)

    assert (await cluster.get(CONFIG_MAP.key(NS, "settings")))["data"] == {"a": "2"}


async def test_replace_without_resource_version_is_unconditional(cluster: Cluster) -> None:
    """PUT without metadata.resourceVersion overwrites whatever is stored (no precondition)."""
    await cluster.create(CONFIG_MAP, config_map(data={"a": "1"}))
    await cluster.patch(CONFIG_MAP.key(NS, "settings"), {"data": {"a": "2"}})

    replaced = await cluster.replace(CONFIG_MAP, config_map(data={"a": "3"}))

    assert replaced["data"] == {"a": "3"}


async def test_replace_of_a_missing_object_is_not_found(cluster: Cluster) -> None:
    """PUT does not create: 404 NotFound."""
    with pytest.raises(NotFound):
        await cluster.replace(CONFIG_MAP, config_map("missing"))


async def test_write_that_changes_nothing_keeps_the_resource_version(cluster: Cluster) -> None:
    """A no-op update is not written: same resourceVersion, and no watch event."""
    created = await cluster.create(CONFIG_MAP, config_map())

    replaced = await cluster.replace(CONFIG_MAP, created)
    patched = await cluster.patch(CONFIG_MAP.key(NS, "settings"), {"data": {"key": "value"}})

    assert replaced == created
    assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_replace_keeps_server_owned_metadata(cluster: Cluster) -> None:
    """PUT cannot change creationTimestamp or generation (a spec change still counts one); a
    different uid is a failed precondition (409)."""
    graphs = DGD.as_raw()
    created = await cluster.create(graphs, msgspec.to_builtins(dgd("graph")))
    forged = msgspec.to_builtins(dgd("graph", backend="vllm"))
    forged["metadata"].update(
        creationTimestamp="2000-01-01T00:00:00Z",
        generation=99,
        resourceVersion=created["metadata"]["resourceVersion"],
    )

    replaced = await cluster.replace(graphs, forged)
    forged["metadata"].update(uid="not-the-uid", resourceVersion=replaced["metadata"]["resourceVersion"])

    assert replaced["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
    assert replaced["metadata"]["generation"] == 2
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: not-the-uid"):
        await cluster.replace(graphs, forged)


async def test_unknown_fields_written_raw_survive_a_typed_merge_patch(cluster: Cluster) -> None:
    """Fields the operator does not model, where the schema keeps them (an entry of ``spec.env`` is
    free-form), are stored as written and kept by merge patches. (Pod templates carry Kubernetes'
    PodTemplateSpec schema: an unknown field there is refused, not kept.)"""
    body = msgspec.to_builtins(dgd("graph"))
    body["spec"]["env"] = [{"name": "A", "value": "1", "futureField": {"keep": True}}]
    await cluster.create(DGD.as_raw(), body)

    await cluster.patch(DGD.key(NS, "graph"), {"metadata": {"labels": {"tier": "gold"}}})
    stored = await cluster.get(DGD.as_raw().key(NS, "graph"))

    assert stored["spec"]["env"][0]["futureField"] == {"keep": True}
    assert stored["metadata"]["labels"] == {"tier": "gold"}


async def test_cluster_scoped_objects_have_no_namespace(cluster: Cluster) -> None:
    """A cluster-scoped kind is addressed by name alone and stored without a namespace."""
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "reader"},
    }

    created = await cluster.create(CLUSTER_ROLE, body)

    assert "namespace" not in created["metadata"]
    assert (await cluster.get(CLUSTER_ROLE.key(None, "reader")))["metadata"]["uid"] == created["metadata"][
        "uid"
    ]


async def test_delete_of_an_object_without_finalizers_removes_it(cluster: Cluster) -> None:
    """DELETE without finalizers: the object is gone at once (a later GET is NotFound)."""
    await cluster.create(CONFIG_MAP, config_map())

    result = await cluster.delete(CONFIG_MAP.key(NS, "settings"))

    assert result is None
    with pytest.raises(NotFound):
        await cluster.get(CONFIG_MAP.key(NS, "settings"))


async def test_delete_of_a_missing_object_is_not_found(cluster: Cluster) -> None:
    """DELETE of a name that does not exist: 404 NotFound."""
    with pytest.raises(NotFound):
        await cluster.delete(CONFIG_MAP.key(NS, "missing"))


async def test_delete_with_failed_preconditions_is_conflict(cluster: Cluster) -> None:
    """DeleteOptions.preconditions (uid, resourceVersion) that do not hold: 409, object kept."""
    created = await cluster.create(CONFIG_MAP, config_map())
    key = CONFIG_MAP.key(NS, "settings")
    await cluster.patch(key, {"data": {"key": "changed"}})

    with pytest.raises(Conflict):
        await cluster.delete(key, preconditions=Preconditions(uid="another-uid"))
    with pytest.raises(Conflict):
        await cluster.delete(
            key, preconditions=Preconditions(resource_version=created["metadata"]["resourceVersion"])
        )
    await cluster.delete(key, preconditions=Preconditions(uid=created["metadata"]["uid"]))

    with pytest.raises(NotFound):
        await cluster.get(key)


async def test_concurrent_writers_of_the_same_version_one_wins(cluster: Cluster) -> None:
    """Optimistic concurrency: of several concurrent PUTs carrying the same resourceVersion, exactly
    one is stored; every other gets 409 Conflict."""
    base = await cluster.create(CONFIG_MAP, config_map(data={"writer": "none"}))
    outcomes: list[str] = []

    async def write(writer: int) -> None:
        body = dict(base, data={"writer": str(writer)})
        try:
            await cluster.replace(CONFIG_MAP, body)
            outcomes.append(f"stored {writer}")
        except Conflict:
            outcomes.append("conflict")

    async with anyio.create_task_group() as group:
        for writer in range(5):
            group.start_soon(write, writer)
    stored = await cluster.get(CONFIG_MAP.key(NS, "settings"))

    assert sorted(outcomes).count("conflict") == 4
    assert [outcome for outcome in outcomes if outcome != "conflict"] == [
        f"stored {stored['data']['writer']}"
    ]
