"""The pod template the DCD controller renders for one role of a DCD (dcd-controller §2.4, the delta to
podspec §6.2): the DCD kube labels and annotations, the identity labels, the pod spec of podspec §3
for that role with the LeaderWorkerSet deployer, the selector and discovery labels, and the service
account a pod without one runs as.

Checkpoint restore shaping (§2.4 steps 4, 6 and 9) is not part of this render: it needs the resolved
DynamoCheckpoint, which only the controller can read.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import structs

from dgd.domain.metadata_keys import (
    COMPONENT,
    COMPONENT_TYPE,
    DISCOVERY_BACKEND,
    DISCOVERY_ENABLED,
    DYNAMO_NAMESPACE,
    ENABLE_METRICS,
    GRAPH_NAME,
    METRICS_ENABLED,
    SELECTOR,
    WORKER_HASH,
)
from dgd.domain.pod_merge import JSON
from dgd.domain.render.backends import RenderRole
from dgd.domain.render.dcd_identity import Identity, as_component
from dgd.domain.render.errors import RenderError
from dgd.domain.render.podspec import render_pod_spec
from dgd.domain.render.template_defaults import component_backend
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import DynamoComponentDeployment

DISCOVERY_SERVICE_ACCOUNT_SUFFIX = "-k8s-service-discovery"


def pod_labels(identity: Identity, dcd: DynamoComponentDeployment, workload_type: str) -> dict[str, str]:
    """Steps 1-3 and 8 of §2.4: the labels every role's pods carry."""
    labels = dict(identity.labels)
    if identity.annotations.get(ENABLE_METRICS) != "false":
        labels[METRICS_ENABLED] = "true"
    own = dcd.metadata.labels or {}
    graph = own.get(GRAPH_NAME) or identity.owner
    if graph:
        labels[GRAPH_NAME] = graph
    if workload_type:
        labels[COMPONENT_TYPE] = workload_type
    labels[COMPONENT] = identity.component
    labels[DYNAMO_NAMESPACE] = identity.dynamo_namespace
    if own.get(WORKER_HASH):
        labels[WORKER_HASH] = own[WORKER_HASH]
    labels[SELECTOR] = identity.name
    if identity.k8s_discovery:
        labels.update({DISCOVERY_BACKEND: "kubernetes", DISCOVERY_ENABLED: "true"})
    return labels


def render_pod_template(
    dcd: DynamoComponentDeployment,
    identity: Identity,
    config: OperatorConfig,
    *,
    role: RenderRole,
    workload_type: str,
    service_accounts: Sequence[str] = (),
) -> JSON:
    """The pod template of ``role`` (``main``, or ``leader``/``worker`` multinode) of ``dcd``.

    ``service_accounts``: the names of the namespace's ServiceAccounts labelled
    ``nvidia.com/dynamo-component-pod: "true"``, in the order listed (a pod that still has none after
    rendering runs as the first, else ``default``). ``RenderError`` if the pod cannot be rendered.
    """
    component = as_component(dcd, identity.component)
    template: JSON = dict(component.pod_template or {})
    spec: JSON = dict(template.get("spec") or {})
    # With Kubernetes discovery a pod without an account gets the discovery one: the owner DGD's, else the
    # DCD's own (never the graph-name label's, §6 correction 6).
    if identity.k8s_discovery and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = f"{identity.owner or identity.name}{DISCOVERY_SERVICE_ACCOUNT_SUFFIX}"
        template["spec"] = spec
    prepared = structs.replace(component, pod_template=template, type=workload_type or None)
    backend = component_backend(prepared, dcd.spec.backend_framework, "spec")
    pod = render_pod_spec(
        prepared,
        role=role,
        backend=backend,
        deployer="lws",
        namespace=identity.namespace,
        parent_dgd_name=identity.graph or identity.name,
        config=config,
    )
    if not pod.get("containers"):
        raise RenderError("spec.podTemplate.spec.containers", "no containers found in base pod spec")
    if not pod.get("serviceAccountName"):
        pod["serviceAccountName"] = service_accounts[0] if service_accounts else "default"
    metadata: JSON = {"labels": dict(sorted(pod_labels(identity, dcd, workload_type).items()))}
    if identity.annotations:
        metadata["annotations"] = dict(sorted(identity.annotations.items()))
    return {"metadata": metadata, "spec": pod}
