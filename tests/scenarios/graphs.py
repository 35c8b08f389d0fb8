"""The real manifests both pathways' scenarios apply, and what each one holds.

The upstream ones come from ``../shared/upstream`` (vLLM aggregated, disaggregated, multinode, with a
planner; the v1alpha1 fixture; the operator's golden Grove input); SGLang and TensorRT-LLM graphs of
the same shapes are in ``grove/manifests/``. A multinode component is a PodCliqueScalingGroup on the
Grove pathway and a LeaderWorkerSet on the Component pathway.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import yaml

from dgd.messages.dgd import ComponentKind, ComponentReplicaStatus, DGDStatus
from dgd.sim import WorldSettings
from tests.conditions import ready_condition
from tests.scenarios.grove.stage import NS, Edit, Stage, upstream, v1beta1

MANIFESTS = Path(__file__).parent / "grove" / "manifests"
#: schedule_delay (1s) + ready_delay (30s) of the default world: when the pods of a graph are ready.
READY_AT = "2026-01-01T00:00:31Z"
#: A cluster that serves LeaderWorkerSet and Volcano, so multinode graphs can take the Component pathway.
WITH_LWS = WorldSettings(
    served_groups=(
        *WorldSettings().served_groups,
        "leaderworkerset.x-k8s.io/v1",
        "scheduling.volcano.sh/v1beta1",
    )
)


#: The upstream snapshot/restore example (TensorRT-LLM workers restored from checkpoints).
SNAPSHOT = "ai-dynamo-dynamo/examples/backends/trtllm/deploy/snapshot-restore.yaml"


def model_cache(namespace: str) -> dict[str, Any]:
    """The PersistentVolumeClaim the snapshot/restore example asks the user to create first."""
    claim: dict[str, Any] = yaml.safe_load(
        f"""
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {{name: model-cache, namespace: {namespace}}}
        spec: {{accessModes: [ReadWriteMany], resources: {{requests: {{storage: 1Gi}}}}}}
        """
    )
    return claim


class Component(msgspec.Struct, frozen=True):
    name: str
    replicas: int = 1
    worker: bool = False
    multinode: bool = False


class Graph(msgspec.Struct, frozen=True):
    name: str
    components: tuple[Component, ...]

    @property
    def multinode(self) -> bool:
        return any(c.multinode for c in self.components)


#: The one Warning of a worker spec change the operator does not roll itself (Grove, or multinode).
ROLLING_UPDATE_NOT_SUPPORTED = (
    "Warning",
    "RollingUpdateNotSupported",
    "Worker spec changed but custom rolling updates are not supported for Grove/multinode deployments",
)

#: Every manifest that uses only supported features, by path, with the graph it declares.
SUPPORTED: dict[str, Graph] = {
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml": Graph(
        "vllm-agg", (Component("Frontend"), Component("VllmDecodeWorker", worker=True))
    ),
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg.yaml": Graph(
        "vllm-disagg",
        (
            Component("Frontend"),
            Component("VllmDecodeWorker", worker=True),
            Component("VllmPrefillWorker", worker=True),
        ),
    ),
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml": Graph(
        "vllm-disagg",
        (
            Component("Frontend"),
            Component("decode", worker=True, multinode=True),
            Component("prefill", worker=True, multinode=True),
        ),
    ),
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg_planner.yaml": Graph(
        "vllm-disagg-planner",
        (
            Component("Frontend"),
            Component("Planner"),
            Component("VllmDecodeWorker", worker=True),
            Component("VllmPrefillWorker", worker=True),
        ),
    ),
    "ai-dynamo-dynamo/deploy/utils/tests/fixtures/v1alpha1/agg.yaml": Graph(
        "vllm-agg", (Component("Frontend"), Component("VllmDecodeWorker", worker=True))
    ),
    "ai-dynamo-dynamo/deploy/operator/internal/controller/testdata/dgd/grove/input.yaml": Graph(
        "grove-manifest", (Component("frontend"), Component("decode", worker=True, multinode=True))
    ),
    "sglang-agg.yaml": Graph(
        "sglang-agg", (Component("Frontend"), Component("SGLangWorker", replicas=2, worker=True))
    ),
    "sglang-disagg.yaml": Graph(
        "sglang-disagg",
        (Component("Frontend"), Component("decode", worker=True), Component("prefill", worker=True)),
    ),
    "trtllm-agg.yaml": Graph("trtllm-agg", (Component("Frontend"), Component("TRTLLMWorker", worker=True))),
    "trtllm-disagg-multinode.yaml": Graph(
        "trtllm-multinode",
        (
            Component("Frontend"),
            Component("prefill", worker=True),
            Component("decode", worker=True, multinode=True),
        ),
    ),
}


def load(path: str) -> dict[str, Any]:
    """The manifest at ``path`` (upstream's, or one of ``grove/manifests/``) as v1beta1."""
    if path.startswith("ai-dynamo-dynamo/"):
        return upstream(path)
    with (MANIFESTS / path).open(encoding="utf-8") as f:
        return v1beta1(yaml.safe_load(f))


async def failed_for_good(stage: Stage, document: dict[str, Any]) -> str:
    """Apply ``document``; its name, once it has failed and ten more minutes have passed."""
    name = await stage.apply(document)
    await stage.until_state(name, "failed", timeout=60)
    await stage.sim.run_for(600)
    return name


def created(kind: str, name: str) -> tuple[str, str, str]:
    return ("Normal", f"Create{kind}", f"Created {kind} {NS}/{name}")


def shared_resource_events(graph: Graph) -> list[tuple[str, str, str]]:
    """The events of the resources a graph shares across its components, in dgd-domain §7 order."""
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
    return events


def runtime_namespace(graph: Graph, component: Component, worker_hash: str) -> str:
    """Workers run in the namespace of their worker hash, the others in the graph's."""
    return f"{NS}-{graph.name}" + (f"-{worker_hash}" if component.worker else "")


def replica_status(
    graph: Graph,
    component: Component,
    worker_hash: str,
    kind: ComponentKind,
    name: str,
    *,
    ready: bool = False,
    available: bool = False,
    scheduled: bool = False,
) -> ComponentReplicaStatus:
    """The status of ``component`` backed by the ``kind`` called ``name``, every replica updated (and
    ready, available, scheduled as said)."""
    count = component.replicas
    return ComponentReplicaStatus(
        component_kind=kind,
        replicas=count,
        updated_replicas=count,
        component_names=[name],
        runtime_namespace=runtime_namespace(graph, component, worker_hash),
        ready_replicas=count if ready else None,
        available_replicas=count if available else None,
        scheduled_replicas=count if scheduled else None,
    )


def successful(graph: Graph, status_of: Callable[[Component], ComponentReplicaStatus]) -> DGDStatus:
    """The exact status of ``graph`` at generation 1 once every pod is ready: ``status_of`` each component."""
    return DGDStatus(
        state="successful",
        observed_generation=1,
        conditions=[
            ready_condition("True", "all_resources_are_ready", "All resources are ready", at=READY_AT)
        ],
        components={c.name: status_of(c) for c in sorted(graph.components, key=lambda c: c.name)},
    )


def on_pathway(document: dict[str, Any], pathway: str) -> dict[str, Any]:
    """``document`` on ``pathway``: as it is for ``grove`` (the default), opted out of Grove for
    ``component``."""
    if pathway == "component":
        document["metadata"].setdefault("annotations", {})["nvidia.com/enable-grove"] = "false"
    return document


def component_of(document: dict[str, Any], name: str) -> dict[str, Any]:
    """The component ``name`` of a raw DGD."""
    return next(c for c in document["spec"]["components"] if c["name"] == name)


def set_replicas(component: str, replicas: int) -> Edit:
    def change(document: dict[str, Any]) -> None:
        component_of(document, component)["replicas"] = replicas

    return change


def set_image(component: str, image: str) -> Edit:
    """The image of the component's first container."""

    def change(document: dict[str, Any]) -> None:
        component_of(document, component)["podTemplate"]["spec"]["containers"][0]["image"] = image

    return change
