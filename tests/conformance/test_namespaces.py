"""Namespace lifecycle and the API server's size limits, as the real API server enforces them."""

from __future__ import annotations

import msgspec
import pytest

from dgd.cluster.errors import Forbidden, Invalid, NotFound, RequestEntityTooLarge
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CONFIG_MAP, DGD, NAMESPACE
from tests.conformance.builders import config_map, dgd
from tests.conformance.test_garbage import eventually

pytestmark = pytest.mark.anyio


def namespace(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


async def test_an_object_cannot_be_created_in_a_namespace_that_does_not_exist(cluster: Cluster) -> None:
    """NamespaceLifecycle admission: 404 naming the namespace."""
    with pytest.raises(NotFound, match='namespaces "nowhere" not found'):
        await cluster.create(CONFIG_MAP, config_map(namespace="nowhere"))


async def test_a_terminating_namespace_takes_no_new_content_and_goes_once_its_content_is_gone(
    cluster: Cluster,
) -> None:
    """Deleting a namespace deletes its content; while an object's finalizer holds it, the namespace is
    terminating and refuses new objects (403); once the content is gone, so is the namespace."""
    await cluster.create(NAMESPACE, namespace("doomed"))
    await cluster.create(CONFIG_MAP, config_map("held", namespace="doomed", finalizers=["example.com/hold"]))

    await cluster.delete(NAMESPACE.key(None, "doomed"))

    async def terminating() -> bool:
        held = await cluster.get(CONFIG_MAP.key("doomed", "held"))
        return held["metadata"].get("deletionTimestamp") is not None

    assert await eventually(terminating)
    assert (await cluster.get(NAMESPACE.key(None, "doomed")))["metadata"].get("deletionTimestamp") is not None
    with pytest.raises(
        Forbidden, match="unable to create new content in namespace doomed because it is being terminated"
    ):
        await cluster.create(CONFIG_MAP, config_map("late", namespace="doomed"))
    await cluster.patch(CONFIG_MAP.key("doomed", "held"), {"metadata": {"finalizers": None}})

    async def namespace_gone() -> bool:
        try:
            await cluster.get(NAMESPACE.key(None, "doomed"))
        except NotFound:
            return True
        return False

    assert await eventually(namespace_gone)


async def test_annotations_over_256_kib_in_total_are_invalid(cluster: Cluster) -> None:
    """metadata.annotations: Too long: may not be more than 262144 bytes (422)."""
    body = msgspec.to_builtins(dgd("big"))
    body["metadata"]["annotations"] = {"a": "x" * 150_000, "b": "y" * 150_000}

    with pytest.raises(Invalid, match="may not be more than 262144 bytes"):
        await cluster.create(DGD.as_raw(), body)


async def test_a_request_body_over_3_mib_is_too_large(cluster: Cluster) -> None:
    """The API server takes request bodies up to 3 MiB: 413 RequestEntityTooLarge over that."""
    body = msgspec.to_builtins(dgd("huge"))
    body["spec"]["components"] = [
        {
            "name": f"c{index}",
            "type": "worker",
            "podTemplate": {
                "metadata": {"labels": {"pad": "x"}},
                "spec": {"containers": [{"name": "main", "image": "x" * 100_000}]},
            },
        }
        for index in range(33)
    ]

    with pytest.raises(RequestEntityTooLarge):
        await cluster.create(DGD.as_raw(), body)
