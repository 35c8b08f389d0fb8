"""Real manifests on the Component pathway: every DGD that uses only supported features, opted out of
Grove, reaches ``successful`` with an exact status and the ordered events; a multinode graph without
LeaderWorkerSet fails ``no_multinode_orchestrator_available``.

The same manifests as the Grove scenarios (``../shared/upstream`` and ``tests/scenarios/grove/manifests``),
each annotated ``nvidia.com/enable-grove: "false"``. Multinode graphs need LeaderWorkerSet (and
Volcano) served by the cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from dgd.cluster.resources import DCD
from dgd.messages.dgd import ComponentReplicaStatus, DGDStatus
from dgd.messages.meta import Condition
from dgd.sim import WorldSettings
from tests.scenarios.grove.stage import NS, on_stage, upstream, v1beta1

pytestmark = pytest.mark.anyio

GROVE_MANIFESTS = Path(__file__).parent.parent / "grove" / "manifests"
#: schedule_delay (1s) + ready_delay (30s) of the default world: when the pods of a graph are ready.
READY_AT = "2026-01-01T00:00:31Z"
#: A cluster that serves LeaderWorkerSet and Volcano, so the LWS gate is on.
WITH_LWS = WorldSettings(
    served_groups=(
        *WorldSettings().served_groups,
        "leaderworkerset.x-k8s.io/v1",
        "scheduling.volcano.sh/v1beta1",
    )
)


class Component(msgspec.Struct, frozen=True):
    name: str
    replicas: int = 1
    worker: bool = False
    multinode: bool = False


class Expected(msgspec.Struct, frozen=True):
    name: str
    components: tuple[Component, ...]

    @property
    def multinode(self) -> bool:
        return any(c.multinode for c in self.components)


SUPPORTED: dict[str, Expected] = {
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml": Expected(
        "vllm-agg", (Component("Frontend"), Component("VllmDecodeWorker", worker=True))
    ),
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg.yaml": Expected(
        "vllm-disagg",
        (
            Component("Frontend"),
            Component("VllmDecodeWorker", worker=True),
            Component("VllmPrefillWorker", worker=True),
        ),
    ),
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml": Expected(
        "vllm-disagg",
        (
            Component("Frontend"),
            Component("decode", worker=True, multinode=True),
            Component("prefill", worker=True, multinode=True),
        ),
    ),
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg_planner.yaml": Expected(
        "vllm-disagg-planner",
        (
            Component("Frontend"),
            Component("Planner"),
            Component("VllmDecodeWorker", worker=True),
            Component("VllmPrefillWorker", worker=True),
        ),
    ),
    "ai-dynamo-dynamo/deploy/utils/tests/fixtures/v1alpha1/agg.yaml": Expected(
        "vllm-agg", (Component("Frontend"), Component("VllmDecodeWorker", worker=True))
    ),
    "ai-dynamo-dynamo/deploy/operator/internal/controller/testdata/dgd/grove/input.yaml": Expected(
        "grove-manifest", (Component("frontend"), Component("decode", worker=True, multinode=True))
    ),
    "ai-dynamo-dynamo/deploy/operator/internal/controller/testdata/dgd/components/input.yaml": Expected(
        "component-manifests", (Component("frontend"), Component("decode", replicas=2, worker=True))
    ),
    "sglang-agg.yaml": Expected(
        "sglang-agg", (Component("Frontend"), Component("SGLangWorker", replicas=2, worker=True))
    ),
    "sglang-disagg.yaml": Expected(
        "sglang-disagg",
        (Component("Frontend"), Component("decode", worker=True), Component("prefill", worker=True)),
    ),
    "trtllm-agg.yaml": Expected(
        "trtllm-agg", (Component("Frontend"), Component("TRTLLMWorker", worker=True))
    ),
    "trtllm-disagg-multinode.yaml": Expected(
        "trtllm-multinode",
        (
            Component("Frontend"),
            Component("prefill", worker=True),
            Component("decode", worker=True, multinode=True),
        ),
    ),
}


def load(path: str) -> dict[str, Any]:
    """The manifest as v1beta1, opted out of Grove."""
    if path.startswith("ai-dynamo-dynamo/"):
        document = upstream(path)
    else:
        with (GROVE_MANIFESTS / path).open(encoding="utf-8") as f:
            document = v1beta1(yaml.safe_load(f))
    annotations = document["metadata"].setdefault("annotations", {})
    annotations["nvidia.com/enable-grove"] = "false"
    return document


def created(kind: str, name: str) -> tuple[str, str, str]:
    return ("Normal", f"Create{kind}", f"Created {kind} {NS}/{name}")


def dcd_name(graph: Expected, component: Component, worker_hash: str) -> str:
    base = f"{graph.name}-{component.name.lower()}"
    return f"{base}-{worker_hash}" if component.worker else base


def expected_events(graph: Expected, worker_hash: str) -> list[tuple[str, str, str]]:
    """Shared resources in dgd-domain §7 order, then one DCD per component, in component order."""
    name = graph.name
    events = [
        created("ServiceAccount", "planner-serviceaccount"),
        created("RoleBinding", "planner-serviceaccount-binding"),
        created("ServiceAccount", f"{name}-k8s-service-discovery"),
        created("Role", f"{name}-k8s-service-discovery-role"),
        created("RoleBinding", f"{name}-k8s-service-discovery-binding"),
    ]
    if graph.multinode:
        events += [
            created("ConfigMap", f"{name}-wait-leader-script"),
            created("Secret", "mpi-run-ssh-secret"),
        ]
    events += [
        created("DynamoComponentDeployment", dcd_name(graph, c, worker_hash)) for c in graph.components
    ]
    return events


def component_status(graph: Expected, component: Component, worker_hash: str) -> ComponentReplicaStatus:
    count = component.replicas
    return ComponentReplicaStatus(
        component_kind="LeaderWorkerSet" if component.multinode else "Deployment",
        replicas=count,
        updated_replicas=count,
        component_names=[dcd_name(graph, component, worker_hash)],
        runtime_namespace=f"{NS}-{graph.name}" + (f"-{worker_hash}" if component.worker else ""),
        ready_replicas=count,
        available_replicas=count,
    )


@pytest.mark.parametrize("path", sorted(SUPPORTED))
async def test_a_graph_using_only_supported_features_reaches_successful(path: str) -> None:
    graph = SUPPORTED[path]
    async with on_stage(WITH_LWS if graph.multinode else None) as stage:
        # given the manifest, opted out of Grove, applied to a cluster with room for it
        name = await stage.apply(load(path))

        # when its pods have had time to start
        await stage.until_state(name, "successful", timeout=120)

        # then its status is exact: one DCD per component, workers named after their worker hash
        dgd = await stage.dgd(name)
        annotations = dgd.metadata.annotations or {}
        assert annotations["nvidia.com/workload-provider"] == "component"
        worker_hash = annotations["nvidia.com/current-worker-hash-v2"]
        assert dgd.status == DGDStatus(
            state="successful",
            observed_generation=1,
            conditions=[
                Condition(
                    type="Ready",
                    status="True",
                    last_transition_time=READY_AT,
                    reason="all_resources_are_ready",
                    message="All resources are ready",
                    observed_generation=1,
                )
            ],
            components={
                c.name: component_status(graph, c, worker_hash)
                for c in sorted(graph.components, key=lambda c: c.name)
            },
        )
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
        name = await stage.apply(load("ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml"))

        # when the operator has seen it
        await stage.until_state(name, "failed", timeout=60)
        await stage.sim.run_for(600)

        # then it stays failed with no_multinode_orchestrator_available, and no DCD was created
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.conditions is not None
        ready = dgd.status.conditions[0]
        assert (ready.status, ready.reason, ready.message) == (
            "False",
            "no_multinode_orchestrator_available",
            "no multinode orchestrator available",
        )
        assert (await stage.user.list(DCD, namespace=NS)).items == []
