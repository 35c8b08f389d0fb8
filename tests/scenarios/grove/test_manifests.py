"""Real manifests on the simulated cluster: each DGD that uses only supported features reaches
``successful``, with exact statuses and the ordered events; the others fail naming what is missing.

The upstream ones come from ``../shared/upstream`` (vLLM aggregated, disaggregated, multinode, with a
planner; the v1alpha1 fixture; the operator's golden Grove input); SGLang and TensorRT-LLM graphs of
the same shapes are in ``manifests/``.
"""

from __future__ import annotations

import pytest

from dgd.messages.dgd import ComponentReplicaStatus
from tests.scenarios.graphs import (
    SUPPORTED,
    Component,
    Graph,
    created,
    failed_for_good,
    load,
    replica_status,
    shared_resource_events,
    successful,
)
from tests.scenarios.grove.stage import on_stage

pytestmark = pytest.mark.anyio

UNSUPPORTED: dict[str, str] = {
    "ai-dynamo-dynamo/examples/backends/trtllm/deploy/snapshot-restore.yaml": (
        "spec.components[1].experimental.checkpoint: component TRTLLMWorker: checkpoint functionality is "
        "disabled in the operator configuration (checkpoint.enabled)"
    ),
}


def expected_events(graph: Graph) -> list[tuple[str, str, str]]:
    """Shared resources in dgd-domain §7 order, the PodCliqueSet, then a Service per component."""
    return [
        *shared_resource_events(graph),
        created("PodCliqueSet", graph.name),
        *(created("Service", f"{graph.name}-{c.name.lower()}") for c in graph.components),
    ]


def component_status(graph: Graph, component: Component, worker_hash: str) -> ComponentReplicaStatus:
    """A multinode component is a PodCliqueScalingGroup (available), the others a PodClique (ready)."""
    name = f"{graph.name}-0-{component.name.lower()}"
    if component.multinode:
        return replica_status(
            graph, component, worker_hash, "PodCliqueScalingGroup", name, available=True, scheduled=True
        )
    return replica_status(graph, component, worker_hash, "PodClique", name, ready=True, scheduled=True)


@pytest.mark.parametrize("path", sorted(SUPPORTED))
async def test_a_graph_using_only_supported_features_reaches_successful(path: str) -> None:
    graph = SUPPORTED[path]
    async with on_stage() as stage:
        # given the manifest applied to a cluster with room for it
        name = await stage.apply(load(path))

        # when its pods have had time to start
        await stage.until_state(name, "successful", timeout=120)

        # then its status is exact, workers in the runtime namespace of their worker hash
        dgd = await stage.dgd(name)
        worker_hash = (dgd.metadata.annotations or {})["nvidia.com/current-worker-hash-v2"]
        assert dgd.status == successful(graph, lambda c: component_status(graph, c, worker_hash))
        # and every mutation the operator made has its event, in order
        assert await stage.events(name) == expected_events(graph)


@pytest.mark.parametrize("path", sorted(UNSUPPORTED))
async def test_a_graph_using_an_unsupported_feature_fails_naming_it(path: str) -> None:
    async with on_stage() as stage:
        # given the manifest
        document = load(path)

        # when it is applied, and a long time passes after the operator failed it
        name = await failed_for_good(stage, document)

        # then it stays failed, naming the feature, with nothing created
        ready = await stage.ready(name)
        assert (ready.status, ready.reason, ready.message) == (
            "False",
            "failed_to_reconcile_the_resources",
            UNSUPPORTED[path],
        )
        assert await stage.events(name) == []
