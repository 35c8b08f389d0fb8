"""The informer cache holds objects packed (``dgd.actors.machinery.packed_kind``): reads decode a
fresh, equal object of the kind's type, and the bookkeeping (resourceVersion, controller) needs no
decoding."""

from __future__ import annotations

import msgspec

from dgd.actors.machinery.packed_kind import PackedKind
from dgd.cluster.resources import DGD, SERVICE
from dgd.messages.dgd import DynamoGraphDeployment


def dgd() -> DynamoGraphDeployment:
    return msgspec.convert(
        {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "demo", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
            "spec": {"components": [{"name": "Frontend", "type": "frontend", "replicas": 1}]},
        },
        DynamoGraphDeployment,
    )


def service() -> dict[str, object]:
    owner = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "name": "demo",
        "uid": "u-1",
    }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "demo-frontend", "namespace": "ns", "resourceVersion": "9",
                     "ownerReferences": [{**owner, "controller": True}]},
    }  # fmt: skip


def test_a_packed_object_reads_back_equal_and_fresh_as_its_kinds_type() -> None:
    # Given a DGD and a Service on their shelves.
    dgds, services = PackedKind(DGD), PackedKind(SERVICE)
    dgds.put(("ns", "demo"), dgd())
    services.put(("ns", "demo-frontend"), service())
    # Then each reads back equal, as its kind's type (a Struct, raw JSON), a new object per read.
    first, second = dgds.get(("ns", "demo")), dgds.get(("ns", "demo"))
    assert isinstance(first, DynamoGraphDeployment) and first == dgd()
    assert first is not second
    assert services.get(("ns", "demo-frontend")) == service()
    # And its version and controller are known without reading it.
    assert (dgds.version(("ns", "demo")), dgds.controller(("ns", "demo"))) == ("7", None)
    assert (services.version(("ns", "demo-frontend")), services.controller(("ns", "demo-frontend"))) == (
        "9",
        "u-1",
    )
    # And what is not held reads as nothing; a popped object comes back once.
    assert dgds.get(("ns", "other")) is None and dgds.version(("ns", "other")) is None
    assert dgds.pop(("ns", "demo")) == dgd()
    assert dgds.pop(("ns", "demo")) is None and len(dgds) == 0


def test_an_unpacked_shelf_hands_out_the_object_it_was_given() -> None:
    shelf, obj = PackedKind(DGD, packed=False), dgd()
    shelf.put(("ns", "demo"), obj)
    assert shelf.get(("ns", "demo")) is obj
