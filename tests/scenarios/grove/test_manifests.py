"""Real manifests on the simulated cluster: each DGD that uses only supported features reaches
``successful``, with exact statuses and the ordered events; the others fail naming what is missing.

The upstream ones come from ``../shared/upstream`` (vLLM aggregated, disaggregated, multinode, with a
planner; the v1alpha1 fixture; the operator's golden Grove input); SGLang and TensorRT-LLM graphs of
the same shapes are in ``manifests/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from dgd.messages.dgd import ComponentKind, ComponentReplicaStatus, DGDStatus
from dgd.messages.meta import Condition
from tests.scenarios.grove.stage import NS, on_stage, upstream, v1beta1

pytestmark = pytest.mark.anyio

MANIFESTS = Path(__file__).parent / "manifests"
#: schedule_delay (1s) + ready_delay (30s) of the default world: when the pods of a graph are ready.
READY_AT = "2026-01-01T00:00:31Z"


class Component(msgspec.Struct, frozen=True):
    name: str
    kind: ComponentKind = "PodClique"
    replicas: int = 1
    worker: bool = False


class Expected(msgspec.Struct, frozen=True):
    name: str
    components: tuple[Component, ...]
    multinode: bool = False


def created(kind: str, name: str) -> tuple[str, str, str]:
    return ("Normal", f"Create{kind}", f"Created {kind} {NS}/{name}")


def expected_events(graph: Expected) -> list[tuple[str, str, str]]:
    """Shared resources in dgd-domain §7 order, the PodCliqueSet, then a Service per component."""
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
    events.append(created("PodCliqueSet", name))
    events += [created("Service", f"{name}-{c.name.lower()}") for c in graph.components]
    return events


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
            Component("decode", "PodCliqueScalingGroup", worker=True),
            Component("prefill", "PodCliqueScalingGroup", worker=True),
        ),
        multinode=True,
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
        "grove-manifest",
        (Component("frontend"), Component("decode", "PodCliqueScalingGroup", worker=True)),
        multinode=True,
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
            Component("decode", "PodCliqueScalingGroup", worker=True),
        ),
        multinode=True,
    ),
}

UNSUPPORTED: dict[str, str] = {
    "ai-dynamo-dynamo/examples/backends/trtllm/deploy/snapshot-restore.yaml": (
        "spec.components[1].experimental.checkpoint: component TRTLLMWorker: checkpoint functionality is "
        "disabled in the operator configuration (checkpoint.enabled)"
    ),
}


def load(path: str) -> dict[str, Any]:
    if path.startswith("ai-dynamo-dynamo/"):
        return upstream(path)
    with (MANIFESTS / path).open(encoding="utf-8") as f:
        return v1beta1(yaml.safe_load(f))


def component_status(graph: Expected, component: Component, worker_hash: str) -> ComponentReplicaStatus:
    namespace = f"{NS}-{graph.name}" + (f"-{worker_hash}" if component.worker else "")
    count = component.replicas
    if component.kind == "PodClique":
        return ComponentReplicaStatus(
            component_kind="PodClique",
            replicas=count,
            updated_replicas=count,
            component_names=[f"{graph.name}-0-{component.name.lower()}"],
            runtime_namespace=namespace,
            ready_replicas=count,
            scheduled_replicas=count,
        )
    return ComponentReplicaStatus(
        component_kind="PodCliqueScalingGroup",
        replicas=count,
        updated_replicas=count,
        component_names=[f"{graph.name}-0-{component.name.lower()}"],
        runtime_namespace=namespace,
        available_replicas=count,
        scheduled_replicas=count,
    )


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
        assert await stage.events(name) == expected_events(graph)


@pytest.mark.parametrize("path", sorted(UNSUPPORTED))
async def test_a_graph_using_an_unsupported_feature_fails_naming_it(path: str) -> None:
    async with on_stage() as stage:
        # given the manifest applied
        name = await stage.apply(load(path))

        # when the operator has seen it, and a long time passes
        await stage.until_state(name, "failed", timeout=60)
        await stage.sim.run_for(600)

        # then it stays failed, naming the feature, with nothing created
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.conditions is not None
        ready = dgd.status.conditions[0]
        assert (ready.status, ready.reason, ready.message) == (
            "False",
            "failed_to_reconcile_the_resources",
            UNSUPPORTED[path],
        )
        assert await stage.events(name) == []
