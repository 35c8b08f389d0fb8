"""Who a DCD is, as the DCD controller reads it (dcd-controller §2.1): the derived values every child
of it is rendered from.

A DCD carries v1alpha1-only data in its ``nvidia.com/dcd-spec`` annotation (supplement §1.11): the
alpha ``labels``, ``annotations``, ``ingress``, ``subComponentType``, ``dynamoNamespace`` and
``serviceName``. An unreadable payload reads as absent. The v1alpha1 view of a v1beta1
``type: prefill|decode`` is ``componentType: worker`` with that sub-type, so for those types the
sub-type is always the type, whatever the payload says.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.conversion.payload import read_spec_payload
from dgd.domain.metadata_keys import (
    COMPONENT,
    DCD_SPEC_PAYLOAD,
    DISCOVERY_BACKEND,
    DYNAMO_NAMESPACE,
    GRAPH_NAME,
    WORKER_HASH,
)
from dgd.domain.render.dcd_workload_metadata import annotations_of, labels_of
from dgd.domain.render.template_defaults import template_metadata
from dgd.domain.roles import node_count
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import KIND as DGD_KIND


class Identity(msgspec.Struct, frozen=True, kw_only=True):
    """The derived values of one DCD (§2.1); ``labels`` and ``annotations`` are the "DCD kube labels
    and annotations" every child starts from."""

    name: str
    namespace: str
    uid: str | None
    spec_type: str
    """``spec.type`` ("" when unset)."""
    component: str
    """The component name: ``spec.name``, else the component label, else alpha ``serviceName``, else the
    DCD's name."""
    owner: str | None
    """The name of the DCD's first DynamoGraphDeployment owner reference."""
    graph: str | None
    """The parent DGD: the owner, else the graph-name label."""
    dynamo_namespace: str
    runtime_namespace: str
    nodes: int
    k8s_discovery: bool
    sub_type: str | None
    alpha: dict[str, Any]
    labels: dict[str, str]
    annotations: dict[str, str]

    @property
    def multinode(self) -> bool:
        return self.nodes > 1


def alpha_view(dcd: DynamoComponentDeployment) -> dict[str, Any]:
    """The sparse v1alpha1 fields preserved on the DCD (empty when there are none or they are unreadable)."""
    payload = read_spec_payload((dcd.metadata.annotations or {}).get(DCD_SPEC_PAYLOAD))
    return dict(payload.spec) if payload is not None else {}


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def as_component(dcd: DynamoComponentDeployment, component: str) -> ComponentSpec:
    """The DCD's spec as the component the pod renderer takes."""
    fields = msgspec.structs.asdict(dcd.spec)
    fields.pop("backend_framework", None)
    fields["name"] = component
    return ComponentSpec(**fields)


def identify(dcd: DynamoComponentDeployment, config: OperatorConfig) -> Identity:
    """The derived values of ``dcd`` under ``config``."""
    name, namespace = dcd.metadata.name or "", dcd.metadata.namespace or ""
    own = dcd.metadata.labels or {}
    alpha = alpha_view(dcd)
    spec_type = dcd.spec.type or ""
    service_name = alpha.get("serviceName")
    component = (
        dcd.spec.name or own.get(COMPONENT) or (service_name if isinstance(service_name, str) else "") or name
    )
    owner = next((r.name for r in dcd.metadata.owner_references or [] if r.kind == DGD_KIND), None)
    graph = owner or own.get(GRAPH_NAME) or None

    # The Dynamo namespace: alpha (even ""), else the label, else computed from the parent (dgd-domain §18).
    if isinstance(alpha.get("dynamoNamespace"), str):
        dyn_ns = str(alpha["dynamoNamespace"])
    elif own.get(DYNAMO_NAMESPACE):
        dyn_ns = own[DYNAMO_NAMESPACE]
    elif dcd.spec.global_dynamo_namespace:
        dyn_ns = "dynamo"
    else:
        dyn_ns = f"{namespace}-{(graph or name).replace('.', '-')}"
    template_labels = template_metadata(dcd.spec.pod_template or {}, "labels")
    worker_hash = own.get(WORKER_HASH) or template_labels.get(WORKER_HASH)
    runtime_ns = dyn_ns
    if dyn_ns and spec_type in WORKER_TYPES and worker_hash:
        runtime_ns = f"{dyn_ns}-{worker_hash}"

    sub = alpha.get("subComponentType")
    sub_type = (
        spec_type if spec_type in ("prefill", "decode") else (sub if isinstance(sub, str) and sub else None)
    )
    alpha_ns = alpha.get("dynamoNamespace")
    labels = labels_of(
        dcd,
        alpha=_strings(alpha.get("labels")),
        sub_type=sub_type,
        component=component,
        alpha_namespace=alpha_ns if isinstance(alpha_ns, str) else None,
    )
    annotations = annotations_of(dcd, alpha=_strings(alpha.get("annotations")))
    # Discovery: the annotation among the alpha and pod-template annotations (any value), else the config.
    kube = {
        **_strings(alpha.get("annotations")),
        **template_metadata(dcd.spec.pod_template or {}, "annotations"),
    }
    backend = kube.get(DISCOVERY_BACKEND, config.discovery.backend)
    return Identity(
        name=name,
        namespace=namespace,
        uid=dcd.metadata.uid,
        spec_type=spec_type,
        component=component,
        owner=owner,
        graph=graph,
        dynamo_namespace=dyn_ns,
        runtime_namespace=runtime_ns,
        nodes=node_count(as_component(dcd, component)),
        k8s_discovery=backend == "kubernetes",
        sub_type=sub_type,
        alpha=alpha,
        labels=labels,
        annotations=annotations,
    )
