"""The informers' cache: what a list replaces, and when a kind counts as synced."""

from __future__ import annotations

from typing import Any, cast

import msgspec
import pytest

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.reader import Reader
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CLUSTER_ROLE, DGDSA, NAMESPACE, PCLQ, POD, SERVICE, ObjectKey
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter as Adapter
from dgd.messages.grove_children import PodClique

pytestmark = pytest.mark.anyio


def service(namespace: str, name: str, version: str = "1") -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name, "resourceVersion": version}}


def names(cache: Cache) -> list[tuple[str, str]]:
    return [(s["metadata"]["namespace"], s["metadata"]["name"]) for s in cache.list(SERVICE)]


async def test_a_kind_listed_in_two_namespaces_is_synced_only_once_both_were_listed() -> None:
    # given a cache serving services in two namespaces
    cache = Cache()
    cache.serve(SERVICE, ("a", "b"))

    # when only the first namespace was listed, then the kind is not synced yet
    cache.replace(SERVICE, [service("a", "x")], namespace="a")
    assert not cache.synced(SERVICE) and not cache.all_synced()

    # when the second was listed too, then it is
    cache.replace(SERVICE, [service("b", "y")], namespace="b")
    assert cache.synced(SERVICE) and cache.all_synced()
    await cache.wait_synced()


async def test_a_relist_of_one_namespace_replaces_only_that_namespace() -> None:
    # given a synced cache of two namespaces
    cache = Cache()
    cache.serve(SERVICE, ("a", "b"))
    cache.replace(SERVICE, [service("a", "x"), service("a", "gone")], namespace="a")
    cache.replace(SERVICE, [service("b", "y")], namespace="b")

    # when namespace a is listed again (after a 410), with one object deleted and one changed meanwhile
    changes = cache.replace(SERVICE, [service("a", "x", version="2")], namespace="a")

    # then only a's objects changed, and b's are kept
    assert [(c.type, (c.old or c.new)["metadata"]["name"]) for c in changes] == [
        ("MODIFIED", "x"),
        ("DELETED", "gone"),
    ]
    assert names(cache) == [("a", "x"), ("b", "y")]
    assert cache.synced(SERVICE)


async def test_a_cluster_wide_relist_replaces_every_namespace() -> None:
    # given a cache serving every namespace
    cache = Cache()
    cache.serve(SERVICE)
    cache.replace(SERVICE, [service("a", "x"), service("b", "y")])
    assert cache.synced(SERVICE)

    # when listed again with b's object gone, then it is dropped
    changes = cache.replace(SERVICE, [service("a", "x")])
    assert [c.type for c in changes] == ["DELETED"]
    assert names(cache) == [("a", "x")]


async def test_a_watch_event_older_than_an_observed_write_is_outdated() -> None:
    # given a cache that observed version 10 of a service this process wrote
    cache = Cache()
    cache.serve(SERVICE)
    cache.replace(SERVICE, [service("a", "x", version="8")])
    cache.observe(SERVICE, service("a", "x", version="10"))

    # then the watch's events for versions 9 and 10 are outdated and current, and an unseen object is news
    assert cache.outdated(SERVICE, service("a", "x", version="9"))
    assert not cache.outdated(SERVICE, service("a", "x", version="10"))
    assert not cache.outdated(SERVICE, service("a", "x", version="11"))
    assert not cache.outdated(SERVICE, service("a", "new", version="3"))
    # and opaque (non-numeric) versions are never judged older
    assert not cache.outdated(SERVICE, service("a", "x", version="abc"))


class CountingGets:
    """A cluster port that counts its reads (enough of one for ``Reader.get``)."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.gets = 0

    async def get(self, key: ObjectKey[Any]) -> Any:
        self.gets += 1
        return await self.cluster.get(key)


ROLE = CLUSTER_ROLE.key(None, "planner")


async def test_an_unwatched_object_found_to_exist_is_read_again_only_after_the_period() -> None:
    # given a ClusterRole (a kind the cache does not watch) and a reader over a counting client
    server = MemoryCluster()
    await server.create(CLUSTER_ROLE, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                       "metadata": {"name": "planner"}})  # fmt: skip
    api = CountingGets(server)
    reader = Reader(cast(Cluster, api), Cache())

    # when two reconcilers ask within the period, then one read answers both
    assert await reader.exists(ROLE, now=100.0, fresh_for=60.0)
    assert await reader.exists(ROLE, now=159.0, fresh_for=60.0)
    assert api.gets == 1

    # when it is deleted, then the next read after the period notices, and "no" is asked again every time
    await server.delete(ROLE)
    assert await reader.exists(ROLE, now=159.9, fresh_for=60.0)
    assert not await reader.exists(ROLE, now=160.0, fresh_for=60.0)
    assert not await reader.exists(ROLE, now=160.0, fresh_for=60.0)
    assert api.gets == 3


async def test_a_watched_kind_is_read_from_the_api_only_for_an_absence_before_its_first_list() -> None:
    # given a Service on the server, and a reader whose cache serves Services but has not listed them
    server = MemoryCluster()
    await server.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})
    await server.create(SERVICE, {"apiVersion": "v1", "kind": "Service",
                                  "metadata": {"namespace": "a", "name": "x"}})  # fmt: skip
    api = CountingGets(server)
    cache = Cache()
    cache.serve(SERVICE, ("a",))
    reader = Reader(cast(Cluster, api), cache)

    # when it is read before the first list, then the cache's absence is not taken for an answer
    found = await reader.get(SERVICE.key("a", "x"))
    assert found is not None and found["metadata"]["name"] == "x"
    assert api.gets == 1

    # when the first list is done, then every read is the cache's, an absence included
    cache.replace(SERVICE, [found], namespace="a")
    assert (await reader.get(SERVICE.key("a", "x"))) == found
    assert await reader.get(SERVICE.key("a", "missing")) is None
    assert await reader.exists(SERVICE.key("a", "missing"), now=0.0, fresh_for=60.0) is False
    assert api.gets == 1


async def test_listeners_hear_every_cached_change_and_the_events_passed_over_but_not_own_writes() -> None:
    heard: list[tuple[str, str | None, str | None]] = []
    cache = Cache()
    cache.listen(lambda rid, kind, old, new: heard.append((kind, _v(old), _v(new))))
    cache.serve(SERVICE)
    cache.replace(SERVICE, [service("a", "x", version="1")])
    cache.apply(SERVICE, "MODIFIED", service("a", "x", version="2"))
    cache.observe(SERVICE, service("a", "x", version="4"))  # a write of this process: not told
    cache.passed_over(SERVICE, "MODIFIED", service("a", "x", version="3"))
    cache.apply(SERVICE, "DELETED", service("a", "x", version="5"))

    assert heard == [
        ("ADDED", None, "1"),
        ("MODIFIED", "1", "2"),
        ("MODIFIED", None, "3"),
        ("DELETED", "4", "5"),
    ]
    assert cache.list(SERVICE) == []


def _v(obj: Any) -> str | None:
    return None if obj is None else str(obj["metadata"]["resourceVersion"])


def test_a_podclique_is_cached_without_the_pod_spec_grove_copied_into_it() -> None:
    # given a PodClique as Grove writes it: its template's whole pod spec, replicas and a status
    clique = msgspec.convert(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodClique",
            "metadata": {"name": "g-0-worker", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"roleName": "worker", "replicas": 2, "podSpec": {"containers": [{"name": "main"}]}},
            "status": {
                "replicas": 2,
                "readyReplicas": 2,
                "scheduleGatedReplicas": 0,
                "scheduledReplicas": 2,
                "updatedReplicas": 2,
            },
        },
        PodClique,
    )
    cache = Cache()
    cache.serve(PCLQ)

    # when a list, a watch event and a write's answer bring it
    listed = cache.replace(PCLQ, [clique])
    cache.apply(PCLQ, "MODIFIED", msgspec.structs.replace(clique, metadata=clique.metadata))
    cache.observe(PCLQ, clique)

    # then what the cache holds (and tells) has its replicas, role and status, and no pod spec
    held = cache.get(PCLQ, "ns", "g-0-worker")
    assert held is not None and held.spec is not None
    assert held.spec.pod_spec == {}
    assert (held.spec.replicas, held.spec.role_name) == (2, "worker")
    assert held.status == clique.status
    assert listed[0].new.spec.pod_spec == {}


def scaling_adapter(name: str, graph: str, version: str) -> Adapter:
    return msgspec.convert(
        {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeploymentScalingAdapter",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": version},
            "spec": {"replicas": 1, "dgdRef": {"name": graph, "componentName": "Worker"}},
        },
        Adapter,
    )


def referring(cache: Cache, graph: str) -> list[str | None]:
    return [adapter.metadata.name for adapter in cache.referring(DGDSA, "ns", graph)]


def test_scaling_adapters_are_found_by_the_dgd_they_scale_as_their_reference_changes() -> None:
    # given three adapters, two of them scaling DGD a and one scaling b
    cache = Cache()
    cache.serve(DGDSA)
    cache.replace(
        DGDSA,
        [
            scaling_adapter("a-w", "a", "1"),
            scaling_adapter("x-w", "a", "1"),
            scaling_adapter("b-w", "b", "1"),
        ],
    )
    assert referring(cache, "a") == ["a-w", "x-w"]
    assert referring(cache, "b") == ["b-w"]

    # when one of a's adapters is repointed at b, and b's own adapter is deleted
    cache.apply(DGDSA, "MODIFIED", scaling_adapter("x-w", "b", "2"))
    cache.apply(DGDSA, "DELETED", scaling_adapter("b-w", "b", "2"))

    # then each DGD finds exactly the adapters that scale it now; another namespace finds none
    assert referring(cache, "a") == ["a-w"]
    assert referring(cache, "b") == ["x-w"]
    assert cache.referring(DGDSA, "other", "a") == []


def test_a_pod_is_cached_as_its_metadata_and_phase() -> None:
    # given a worker pod as a kubelet reports it: its spec, and a status with conditions and containers
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "w-0", "namespace": "ns", "resourceVersion": "3", "labels": {"app": "w"}},
        "spec": {"containers": [{"name": "main", "image": "vllm"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    cache = Cache()
    cache.serve(POD)

    # when a list brings it, then what the cache holds (and tells) is its envelope and phase alone
    listed = cache.replace(POD, [pod])
    expected = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod["metadata"],
        "status": {"phase": "Running"},
    }
    assert cache.get(POD, "ns", "w-0") == expected
    assert listed[0].new == expected

    # and a pod with no status yet is held without one
    cache.apply(
        POD,
        "ADDED",
        {key: value for key, value in pod.items() if key != "status"}
        | {"metadata": {"name": "w-1", "namespace": "ns", "resourceVersion": "4"}},
    )
    assert cache.get(POD, "ns", "w-1") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "w-1", "namespace": "ns", "resourceVersion": "4"},
    }
