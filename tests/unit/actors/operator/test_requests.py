"""The requests a reconcile sends: none the cache could have answered, none refused that it could have
avoided, and the DGD's own metadata written once on create (issue 18, "Requests").

Every request of the operator's client is recorded with its answer (``ok`` or the port's error), so a
test counts exactly the requests the API server would have seen and answered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
import pytest

from dgd.actors.dgd.writer import FINALIZER
from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import Cluster
from dgd.cluster.proxy import APICall, ClusterProxy
from dgd.cluster.resources import DGD, PCS, ROLE, ROLE_BINDING, SERVICE
from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER
from dgd.domain.gates import Gates
from dgd.domain.sync import LAST_APPLIED_HASH
from dgd.domain.worker_generation import CURRENT_WORKER_HASH_V2
from dgd.messages.dgd import DynamoGraphDeployment

from .harness import NS, manifest, running_operator

pytestmark = pytest.mark.anyio

R = TypeVar("R")


class AnsweredRequests(ClusterProxy):
    """The port around ``inner``, counting each request as ``verb kind[/subresource] answer``."""

    def __init__(self, inner: Cluster) -> None:
        super().__init__(inner)
        self.answered: Counter[str] = Counter()

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        what = f"{call.verb} {call.resource.kind}{'/' + call.subresource if call.subresource else ''}"
        try:
            result = await send()
        except ClusterError as error:
            self.answered[f"{what} {type(error).__name__}"] += 1
            raise
        self.answered[f"{what} ok"] += 1
        return result


class Recording(list[AnsweredRequests]):
    """A ``proxy`` for ``running_operator``: each client it wraps counts its requests (``[0]``: the
    operator's)."""

    def __call__(self, inner: Cluster) -> Cluster:
        self.append(AnsweredRequests(inner))
        return self[-1]


class Finished:
    """Counts the reconciles that finished, by DGD name."""

    def __init__(self, counts: Counter[str]) -> None:
        self.counts = counts

    def reconcile_started(self, controller: str, namespace: str, name: str) -> None:
        pass

    def reconcile_finished(
        self, controller: str, namespace: str, name: str, result: str, seconds: float
    ) -> None:
        self.counts[name] += 1


def _refused(answered: Counter[str], answer: str) -> dict[str, int]:
    return {request: count for request, count in answered.items() if request.endswith(f" {answer}")}


async def _create_at_once(cluster: Cluster, names: list[str]) -> None:
    """Create the DGDs ``names`` (upstream's agg graph) without letting the operator run in between."""
    for name in names:
        await cluster.create(DGD, msgspec.convert(manifest(name=name), DynamoGraphDeployment))


async def test_concurrent_reconciles_in_one_namespace_send_no_request_answered_not_found_or_exists() -> None:
    # Given the operator watching a cluster with Grove, and eight DGDs created in one namespace at once.
    recorded = Recording()
    async with running_operator(proxy=recorded) as harness:
        names = [f"graph-{i}" for i in range(8)]
        await _create_at_once(harness.cluster, names)
        await harness.settle()
        # When Grove realizes every PodCliqueSet and the operator sees its children ready.
        for name in names:
            await harness.grove_realizes(name)
        await harness.advance(1.0)

        # Then every graph got its PodCliqueSet, and the shared planner RBAC exists once.
        assert [(await harness.pcs(name)).metadata.name for name in names] == names
        answered = recorded[0].answered
        # And no read was answered "not found" (the synced cache knew the object did not exist yet),
        # and no create was answered "already exists" (no two reconciles raced to create one object).
        assert _refused(answered, "NotFound") == {}
        assert _refused(answered, "AlreadyExists") == {}


async def test_a_new_dgd_has_its_own_metadata_written_in_one_patch() -> None:
    # Given the operator watching a cluster with Grove.
    recorded = Recording()
    async with running_operator(proxy=recorded) as harness:
        # When a DGD is created and reconciled until its children are ready.
        await harness.apply(manifest())
        await harness.grove_realizes()
        await harness.advance(1.0)

        # Then its finalizer, workload provider and worker hash are all recorded.
        dgd = await harness.dgd()
        assert FINALIZER in (dgd.metadata.finalizers or [])
        annotations = dgd.metadata.annotations or {}
        assert annotations[WORKLOAD_PROVIDER] == "grove"
        assert annotations[CURRENT_WORKER_HASH_V2]
        # And they were written by a single metadata patch of the DGD.
        assert recorded[0].answered["patch DynamoGraphDeployment ok"] == 1
        assert dgd.status is not None and dgd.status.state == "successful"


async def test_an_operator_starting_over_existing_dgds_reads_no_child_from_the_api() -> None:
    # Given eight DGDs created before the operator starts (their children not created yet).
    recorded = Recording()

    names = [f"graph-{i}" for i in range(8)]

    async def existing(cluster: Cluster) -> None:
        await _create_at_once(cluster, names)

    # When the operator starts and reconciles them.
    async with running_operator(proxy=recorded, before=existing) as harness:
        await harness.settle()

        # Then every graph got its PodCliqueSet.
        assert [(await harness.pcs(name)).metadata.name for name in names] == names
        # And nothing was read only to learn it did not exist (the reconciles began once every cache
        # was synced), and no create raced another.
        answered = recorded[0].answered
        assert _refused(answered, "NotFound") == {}
        assert _refused(answered, "AlreadyExists") == {}


async def test_a_new_dgd_on_the_component_pathway_has_its_own_metadata_written_in_one_patch() -> None:
    # Given the operator watching a cluster without Grove (DGDs run on DCDs).
    recorded = Recording()

    async with running_operator(proxy=recorded, gates=Gates(grove=False)) as harness:
        # When a DGD is created and reconciled (its DCDs written).
        await harness.apply(manifest())
        await harness.advance(1.0)

        # Then its finalizer, workload provider and worker hash were written by one metadata patch.
        dgd = await harness.dgd()
        assert FINALIZER in (dgd.metadata.finalizers or [])
        annotations = dgd.metadata.annotations or {}
        assert annotations[WORKLOAD_PROVIDER] == "component"
        assert annotations[CURRENT_WORKER_HASH_V2]
        assert recorded[0].answered["create DynamoComponentDeployment ok"] == 2
        assert recorded[0].answered["patch DynamoGraphDeployment ok"] == 1


def _multinode(name: str) -> dict[str, Any]:
    document = manifest(name=name)
    document["spec"]["components"][1]["multinode"] = {"nodeCount": 2}
    return document


async def test_multinode_graphs_created_at_once_make_one_key_secret_and_read_it_once_a_period() -> None:
    # Given a cluster without the MPI key Secret, and four multinode graphs created in one namespace at once.
    recorded = Recording()

    finished: Counter[str] = Counter()
    reconciles = Finished(finished)

    async with running_operator(proxy=recorded, mpi_secret=False, reconciles=reconciles) as harness:
        names = [f"graph-{i}" for i in range(4)]
        for name in names:
            await harness.cluster.create(DGD, msgspec.convert(_multinode(name), DynamoGraphDeployment))
        await harness.settle()

        # Then the key Secret and its replica were each created once, and no create was refused.
        answered = recorded[0].answered
        assert answered["create Secret ok"] == 2
        assert _refused(answered, "AlreadyExists") == {}
        # And each was read only by the first graph, to learn it was missing (Secrets are not watched).
        assert answered["get Secret NotFound"] == 2
        assert answered["get Secret ok"] == 0

        # When every graph reconciles again within the period.
        before, runs = answered.copy(), finished.copy()
        for name in names:
            harness.nudge(name)
        await harness.advance(1.0)

        # Then each one ran, and none read a Secret again.
        assert finished - runs == Counter(names)
        assert answered - before == Counter()


async def test_a_podcliqueset_is_cached_without_pod_specs_and_read_whole_only_to_patch_its_spec() -> None:
    # Given the operator watching a cluster with Grove, and a DGD whose PodCliqueSet is ready.
    recorded = Recording()
    async with running_operator(proxy=recorded) as harness:
        await harness.apply(manifest())
        await harness.grove_realizes()
        await harness.advance(1.0)
        # Then the cache holds the set without its cliques' pod specs (the server has them all).
        cached = harness.cache.get(PCS, NS, "demo")
        assert cached is not None
        assert [c.spec.pod_spec for c in cached.spec.template.cliques] == [{}, {}]
        assert all(c.spec.pod_spec for c in (await harness.pcs()).spec.template.cliques)
        # And reconciles that change nothing read it from the API not once.
        harness.nudge(times=3)
        await harness.settle()
        assert recorded[0].answered["get PodCliqueSet ok"] == 0

        # When a user changes the worker's image (a new spec of the set).
        dgd = await harness.dgd()
        components = msgspec.to_builtins(dgd.spec.components)
        components[1]["podTemplate"]["spec"]["containers"][0]["image"] = "vllm-runtime:1.6.0"
        edited = msgspec.structs.replace(
            dgd,
            spec=msgspec.structs.replace(
                dgd.spec, components=msgspec.convert(components, type(dgd.spec.components))
            ),
        )
        await harness.cluster.replace(DGD, edited)
        await harness.settle()

        # Then the set was read whole once to compare it, and its pod specs are patched, not emptied.
        assert recorded[0].answered["get PodCliqueSet ok"] == 1
        worker = next(c for c in (await harness.pcs()).spec.template.cliques if c.name == "worker")
        (container,) = [c for c in worker.spec.pod_spec["containers"] if c["name"] == "main"]
        assert container["image"] == "vllm-runtime:1.6.0"
        assert container["command"] == ["python3", "-m", "dynamo.vllm"]


async def test_rbac_and_services_are_cached_by_their_metadata_and_read_whole_to_repair_a_body() -> None:
    # Given a DGD whose discovery ServiceAccount, Role and RoleBinding and Services exist.
    recorded = Recording()
    async with running_operator(proxy=recorded) as harness:
        await harness.apply(manifest())
        await harness.grove_realizes()
        await harness.advance(1.0)
        (role,) = harness.cache.list(ROLE, NS)
        name = role["metadata"]["name"]
        # Then the cache keeps their kind and metadata only; a RoleBinding its role and subjects too.
        assert set(role) == {"apiVersion", "kind", "metadata"}
        assert role["metadata"]["annotations"][LAST_APPLIED_HASH]
        services = harness.cache.list(SERVICE, NS)
        assert services and all(set(s) == {"apiVersion", "kind", "metadata"} for s in services)
        bindings = harness.cache.list(ROLE_BINDING, NS)
        assert bindings and all(
            set(b) == {"apiVersion", "kind", "metadata", "roleRef", "subjects"} for b in bindings
        )
        rules = (await harness.cluster.get(ROLE.key(NS, name)))["rules"]
        assert rules
        # And reconciles that change nothing read none of them from the API.
        harness.nudge(times=3)
        await harness.settle()
        assert recorded[0].answered["get Role ok"] == 0

        # When someone else replaces the Role with no rules and without the operator's bookkeeping (a
        # Role has no generation: the missing hash is what says it changed).
        live = await harness.cluster.get(ROLE.key(NS, name))
        annotations = {k: v for k, v in live["metadata"]["annotations"].items() if k != LAST_APPLIED_HASH}
        await harness.cluster.replace(
            ROLE, {**live, "metadata": {**live["metadata"], "annotations": annotations}, "rules": []}
        )
        harness.nudge()
        await harness.settle()

        # Then the operator read it whole once and wrote its rules back, not an empty body.
        assert recorded[0].answered["get Role ok"] == 1
        assert (await harness.cluster.get(ROLE.key(NS, name)))["rules"] == rules
