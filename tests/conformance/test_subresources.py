"""The status and scale subresources, isolated from the main resource."""

from __future__ import annotations

import msgspec
import pytest

from dgd.cluster.errors import Conflict, Invalid, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CONFIG_MAP, DEPLOYMENT, DGD, DGDSA, POD
from dgd.messages.dgd import DGDStatus
from tests.conformance.builders import NS, adapter, config_map, deployment, dgd, read_at

pytestmark = pytest.mark.anyio


async def test_create_drops_status_of_a_kind_with_a_status_subresource(cluster: Cluster) -> None:
    """With a status subresource, status in a POST body is ignored."""
    created = await cluster.create(DGD, dgd("graph", status=DGDStatus(state="successful")))

    assert created.status is None


async def test_main_resource_write_ignores_status(cluster: Cluster) -> None:
    """PUT and PATCH on the object keep the stored status; only spec and metadata change."""
    await cluster.create(DGD, dgd("graph"))
    current = await cluster.patch_status(DGD.key(NS, "graph"), {"status": {"state": "pending"}})

    replaced = await cluster.replace(DGD, msgspec.structs.replace(current, status=DGDStatus(state="failed")))
    patched = await cluster.patch(
        DGD.key(NS, "graph"), {"status": {"state": "failed"}, "spec": {"backendFramework": "vllm"}}
    )

    assert replaced.status is not None and replaced.status.state == "pending"
    assert patched.status is not None and patched.status.state == "pending"
    assert patched.spec.backend_framework == "vllm"


async def test_status_write_ignores_spec_and_metadata(cluster: Cluster) -> None:
    """PUT /status stores only status: spec, labels and annotations in the body are ignored."""
    created = await cluster.create(DGD, dgd("graph", backend="vllm"))
    changed = msgspec.structs.replace(
        created,
        spec=msgspec.structs.replace(created.spec, backend_framework="sglang"),
        metadata=msgspec.structs.replace(created.metadata, labels={"sneaky": "yes"}),
        status=DGDStatus(state="pending"),
    )

    updated = await cluster.replace_status(DGD, changed)

    assert updated.spec.backend_framework == "vllm"
    assert updated.metadata.labels is None
    assert updated.status == DGDStatus(state="pending")


async def test_status_patch_ignores_everything_but_status(cluster: Cluster) -> None:
    """PATCH /status applies only the patch's status part."""
    await cluster.create(DGD, dgd("graph", backend="vllm"))

    patched = await cluster.patch_status(
        DGD.key(NS, "graph"), {"spec": {"backendFramework": "sglang"}, "status": {"state": "pending"}}
    )

    assert patched.spec.backend_framework == "vllm"
    assert patched.status is not None and patched.status.state == "pending"


async def test_status_write_with_a_stale_resource_version_is_conflict(cluster: Cluster) -> None:
    """PUT /status honours the resourceVersion precondition like PUT does."""
    created = await cluster.create(DGD, dgd("graph"))
    await cluster.patch(DGD.key(NS, "graph"), {"spec": {"backendFramework": "vllm"}})

    with pytest.raises(Conflict):
        await cluster.replace_status(DGD, msgspec.structs.replace(created, status=DGDStatus(state="pending")))
    with pytest.raises(Conflict):
        await cluster.patch_status(
            DGD.key(NS, "graph"),
            {"status": {"state": "pending"}},
            resource_version=created.metadata.resource_version,
        )


async def test_status_of_a_kind_without_a_status_subresource_is_not_found(cluster: Cluster) -> None:
    """A kind without a status subresource has no /status endpoint: 404."""
    created = await cluster.create(CONFIG_MAP, config_map())

    with pytest.raises(NotFound):
        await cluster.replace_status(CONFIG_MAP, created)


async def test_scale_reads_the_paths_of_the_kind(cluster: Cluster) -> None:
    """GET /scale: spec.replicas, status.replicas and the selector from the kind's scale paths
    (DGDSA: .spec.replicas, .status.replicas, .status.selector), same name/uid/resourceVersion."""
    created = await cluster.create(DGDSA, adapter(replicas=3))
    with_status = await cluster.replace_status(
        DGDSA, read_at(created, adapter(replicas=3, status_replicas=2))
    )

    scale = await cluster.get_scale(DGDSA.key(NS, "graph-worker"))

    assert scale.spec.replicas == 3
    assert scale.status is not None and (scale.status.replicas, scale.status.selector) == (2, "app=worker")
    assert scale.metadata.uid == created.metadata.uid
    assert scale.metadata.resource_version == with_status.metadata.resource_version


async def test_scale_write_sets_spec_replicas_and_bumps_generation(cluster: Cluster) -> None:
    """PUT /scale changes only spec.replicas (a spec change: generation +1), status untouched."""
    created = await cluster.create(DGDSA, adapter(replicas=1))
    await cluster.replace_status(DGDSA, read_at(created, adapter(replicas=1, status_replicas=1)))
    scale = await cluster.get_scale(DGDSA.key(NS, "graph-worker"))

    scaled = await cluster.replace_scale(
        DGDSA.key(NS, "graph-worker"),
        msgspec.structs.replace(scale, spec=msgspec.structs.replace(scale.spec, replicas=4)),
    )
    stored = await cluster.get(DGDSA.key(NS, "graph-worker"))

    assert scaled.spec.replicas == 4
    assert stored.spec.replicas == 4 and stored.metadata.generation == 2
    assert stored.status is not None and stored.status.replicas == 1


async def test_scale_write_with_a_stale_resource_version_is_conflict(cluster: Cluster) -> None:
    """PUT /scale carrying an old resourceVersion: 409, replicas unchanged."""
    await cluster.create(DGDSA, adapter(replicas=1))
    stale = await cluster.get_scale(DGDSA.key(NS, "graph-worker"))
    await cluster.patch(DGDSA.key(NS, "graph-worker"), {"spec": {"replicas": 2}})

    with pytest.raises(Conflict):
        await cluster.replace_scale(
            DGDSA.key(NS, "graph-worker"),
            msgspec.structs.replace(stale, spec=msgspec.structs.replace(stale.spec, replicas=5)),
        )

    assert (await cluster.get(DGDSA.key(NS, "graph-worker"))).spec.replicas == 2


async def test_scale_to_negative_replicas_is_invalid(cluster: Cluster) -> None:
    """spec.replicas of a Scale must be >= 0: 422."""
    await cluster.create(DGDSA, adapter(replicas=1))
    scale = await cluster.get_scale(DGDSA.key(NS, "graph-worker"))

    with pytest.raises(Invalid):
        await cluster.replace_scale(
            DGDSA.key(NS, "graph-worker"),
            msgspec.structs.replace(scale, spec=msgspec.structs.replace(scale.spec, replicas=-1)),
        )


async def test_scale_of_a_kind_without_a_scale_subresource_is_not_found(cluster: Cluster) -> None:
    """A kind without a scale subresource (the DGD) has no /scale endpoint: 404."""
    await cluster.create(DGD, dgd("graph"))

    with pytest.raises(NotFound):
        await cluster.get_scale(DGD.key(NS, "graph"))


async def test_deployment_scale_reports_its_label_selector_in_string_form(cluster: Cluster) -> None:
    """A Deployment's scale selector is its spec.selector (a LabelSelector) serialized, sorted by key."""
    await cluster.create(DEPLOYMENT, deployment("web", replicas=2))

    scale = await cluster.get_scale(DEPLOYMENT.key(NS, "web"))

    assert scale.spec.replicas == 2
    # status was dropped on create (0), unless a deployment controller already counted the pods of its
    # ReplicaSet (2): the real tier runs kube-controller-manager, whose write may come first
    assert scale.status is not None and scale.status.replicas in (0, 2)
    assert scale.status.selector == "app=web,tier in (edge,web)"


def _pod(name: str, **spec: object) -> dict[str, object]:
    container = {"name": "main", "image": "busybox"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [container], **spec}}  # fmt: skip


async def test_a_pod_is_bound_to_a_node_once_through_its_binding_subresource(cluster: Cluster) -> None:
    """POST pods/<name>/binding sets spec.nodeName and PodScheduled; a second binding conflicts."""
    await cluster.create(POD, _pod("worker"))

    await cluster.bind(POD.key(NS, "worker"), "node-a")

    bound = await cluster.get(POD.key(NS, "worker"))
    assert bound["spec"]["nodeName"] == "node-a"
    scheduled = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert [c["status"] for c in scheduled] == ["True"]
    with pytest.raises(Conflict, match="already assigned to node"):
        await cluster.bind(POD.key(NS, "worker"), "node-b")
    with pytest.raises(NotFound):
        await cluster.bind(POD.key(NS, "missing"), "node-a")


async def test_an_update_cannot_assign_a_pod_to_a_node(cluster: Cluster) -> None:
    """spec.nodeName changes only through a binding: a patch that sets it is refused."""
    await cluster.create(POD, _pod("worker"))

    with pytest.raises(Invalid, match=r"pod updates may not change fields other than"):
        await cluster.patch(POD.key(NS, "worker"), {"spec": {"nodeName": "node-a"}})

    assert "nodeName" not in (await cluster.get(POD.key(NS, "worker")))["spec"]
