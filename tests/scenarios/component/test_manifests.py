"""Real manifests on the Component pathway: every DGD that uses only supported features, opted out of
Grove, reaches ``successful`` with an exact status and the ordered events; a multinode graph without
LeaderWorkerSet fails ``no_multinode_orchestrator_available``.

The same manifests as the Grove scenarios (``../shared/upstream`` and ``tests/scenarios/grove/manifests``),
each annotated ``nvidia.com/enable-grove: "false"``. Multinode graphs need LeaderWorkerSet (and
Volcano) served by the cluster.
"""

from __future__ import annotations

from typing import Any

import pytest

from dgd.cluster.resources import DCD
from dgd.messages.dgd import ComponentKind, ComponentReplicaStatus
from tests.scenarios import graphs
from tests.scenarios.graphs import Component, Graph
from tests.scenarios.grove.stage import NS, on_stage

pytestmark = pytest.mark.anyio

#: Upstream's Grove fixture: its multinode decode worker has a command and no args, which a
#: LeaderWorkerSet pod may not (dcd-controller §4 case 22): it runs on Grove only.
ARGLESS_MULTINODE = "ai-dynamo-dynamo/deploy/operator/internal/controller/testdata/dgd/grove/input.yaml"

SUPPORTED: dict[str, Graph] = {
    **{path: graph for path, graph in graphs.SUPPORTED.items() if path != ARGLESS_MULTINODE},
    "ai-dynamo-dynamo/deploy/operator/internal/controller/testdata/dgd/components/input.yaml": Graph(
        "component-manifests", (Component("frontend"), Component("decode", replicas=2, worker=True))
    ),
}


def load(path: str) -> dict[str, Any]:
    """The manifest as v1beta1, opted out of Grove."""
    return graphs.on_pathway(graphs.load(path), "component")


def dcd_name(graph: Graph, component: Component, worker_hash: str) -> str:
    base = f"{graph.name}-{component.name.lower()}"
    return f"{base}-{worker_hash}" if component.worker else base


def expected_events(graph: Graph, worker_hash: str) -> list[tuple[str, str, str]]:
    """Shared resources in dgd-domain §7 order, then one DCD per component, in component order."""
    return graphs.shared_resource_events(graph) + [
        graphs.created("DynamoComponentDeployment", dcd_name(graph, c, worker_hash)) for c in graph.components
    ]


def component_status(graph: Graph, component: Component, worker_hash: str) -> ComponentReplicaStatus:
    """A multinode component is a LeaderWorkerSet ``<dcd>-0``, ready (one reports no available replicas),
    the others a Deployment named like the DCD, ready and available (dcd-controller §2.6.1)."""
    name = dcd_name(graph, component, worker_hash)
    if component.multinode:
        lws: ComponentKind = "LeaderWorkerSet"
        return graphs.replica_status(graph, component, worker_hash, lws, f"{name}-0", ready=True)
    return graphs.replica_status(
        graph, component, worker_hash, "Deployment", name, ready=True, available=True
    )


@pytest.mark.parametrize("path", sorted(SUPPORTED))
async def test_a_graph_using_only_supported_features_reaches_successful(path: str) -> None:
    graph = SUPPORTED[path]
    async with on_stage(graphs.WITH_LWS if graph.multinode else None) as stage:
        # given the manifest, opted out of Grove, applied to a cluster with room for it
        name = await stage.apply(load(path))

        # when its pods have had time to start
        await stage.until_state(name, "successful", timeout=120)

        # then its status is exact: one DCD per component, workers named after their worker hash
        dgd = await stage.dgd(name)
        annotations = dgd.metadata.annotations or {}
        assert annotations["nvidia.com/workload-provider"] == "component"
        worker_hash = annotations["nvidia.com/current-worker-hash-v2"]
        assert dgd.status == graphs.successful(graph, lambda c: component_status(graph, c, worker_hash))
        # and every mutation the operator made has its event, in order
        assert await stage.events(name) == expected_events(graph, worker_hash)

        # and a long quiet time later nothing more was written
        writes = stage.writes
        await stage.sim.run_for(3600)
        assert stage.writes == writes
        dcds = (await stage.user.list(DCD, namespace=NS)).items
        assert sorted(d.metadata.name or "" for d in dcds) == sorted(
            dcd_name(graph, c, worker_hash) for c in graph.components
        )


async def test_a_multinode_graph_without_leaderworkerset_fails_naming_the_missing_orchestrator() -> None:
    async with on_stage() as stage:
        # given a multinode graph on the Component pathway, in a cluster without LeaderWorkerSet
        multinode = load("ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml")

        # when it is applied, and a long time passes after the operator failed it
        name = await graphs.failed_for_good(stage, multinode)

        # then it stays failed with no_multinode_orchestrator_available, and no DCD was created
        ready = await stage.ready(name)
        assert (ready.status, ready.reason, ready.message) == (
            "False",
            "no_multinode_orchestrator_available",
            "no multinode orchestrator available",
        )
        assert (await stage.user.list(DCD, namespace=NS)).items == []


async def test_a_multinode_worker_without_args_is_refused_by_the_dcd_controller_naming_why() -> None:
    async with on_stage(graphs.WITH_LWS) as stage:
        # given upstream's Grove fixture on the Component pathway, with LeaderWorkerSet served
        name = await stage.apply(load(ARGLESS_MULTINODE))

        # when the DCD controller has tried its multinode worker
        await stage.sim.run_for(60)

        # then that DCD says, as upstream's DCD controller would, why its LeaderWorkerSet cannot be
        # made, and the graph is not successful
        dcds = {d.spec.name: d for d in (await stage.user.list(DCD, namespace=NS)).items}
        worker = dcds["decode"]
        available = next(
            c for c in (worker.status.conditions if worker.status else None) or () if c.type == "Available"
        )
        assert (available.status, available.reason) == ("False", "Reconciling")
        assert (available.message or "").endswith("container Args cannot be empty for LWS pod")
        assert (await stage.dgd(name)).status.state == "pending"  # type: ignore[union-attr]
