"""Labels and annotations of a Grove clique, i.e. of its pods (dgd-domain §9.3, podspec §9.3–§9.4).

System labels identify the component; users may add their own (graph ``spec.labels``, preserved
v1alpha1 labels, pod-template labels) but never override the system ones, which are applied again
last. Maps come out sorted by key, as Go writes them.
"""

from __future__ import annotations

import hashlib

from dgd.domain.conversion.alpha_view import alpha_annotations, alpha_labels, sub_component_type
from dgd.domain.metadata_keys import (
    BASE_MODEL_HASH,
    COMPONENT,
    COMPONENT_CLASS,
    COMPONENT_TYPE,
    DISCOVERY_BACKEND,
    DISCOVERY_ENABLED,
    DYNAMO_NAMESPACE,
    ENABLE_METRICS,
    GRAPH_NAME,
    METRICS_ENABLED,
    SELECTOR,
    SUB_COMPONENT_TYPE,
    TOPOLOGY_SOURCE_KEYS,
    WORKER_HASH,
)
from dgd.domain.naming import component_resource_name
from dgd.domain.render.template_defaults import template_metadata
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment

KAI_QUEUE_LABEL = "kai.scheduler/queue"


def model_hash(model_name: str) -> str:
    """The base-model label value: the first 8 hex of SHA-256 of the model name."""
    return hashlib.sha256(model_name.encode("utf-8")).hexdigest()[:8]


def system_labels(
    dgd: DynamoGraphDeployment, component: ComponentSpec, *, workload_type: str, dynamo_namespace: str
) -> dict[str, str]:
    """The labels that identify a component's pods; ``workload_type`` is ``worker`` for legacy selectors."""
    has_epp = any(c.type == "epp" for c in dgd.spec.components or [])
    labels = {
        SELECTOR: component_resource_name(dgd.metadata.name or "", component.name),
        GRAPH_NAME: dgd.metadata.name or "",
        COMPONENT: component.name,
    }
    if workload_type:
        labels[COMPONENT_TYPE] = workload_type
    if has_epp and component.type in WORKER_TYPES:
        labels[COMPONENT_CLASS] = "worker"
    sub_type = sub_component_type(dgd, component)
    if sub_type:
        labels[SUB_COMPONENT_TYPE] = sub_type
    labels[DYNAMO_NAMESPACE] = dynamo_namespace
    return labels


def clique_labels(
    dgd: DynamoGraphDeployment,
    component: ComponentSpec,
    prepared_template: dict[str, object],
    *,
    workload_type: str,
    dynamo_namespace: str,
    discovery_backend: str,
    kai_queue: str | None,
) -> dict[str, str]:
    """Labels of every clique of a component, in upstream's precedence (later wins)."""
    system = system_labels(dgd, component, workload_type=workload_type, dynamo_namespace=dynamo_namespace)
    labels = dict(system)
    if component.model_ref is not None and component.model_ref.name:
        labels[BASE_MODEL_HASH] = model_hash(component.model_ref.name)
    if (dgd.metadata.annotations or {}).get(ENABLE_METRICS) != "false":
        labels[METRICS_ENABLED] = "true"
    template_labels = template_metadata(prepared_template, "labels")
    labels.update(dgd.spec.labels or {})
    labels.update(alpha_labels(dgd, component.name))
    labels.update(template_labels)
    labels.update(system)
    if WORKER_HASH in template_labels:
        labels[WORKER_HASH] = template_labels[WORKER_HASH]
    if discovery_backend == "kubernetes":
        labels[DISCOVERY_BACKEND] = "kubernetes"
        labels[DISCOVERY_ENABLED] = "true"
    if kai_queue is not None:
        labels[KAI_QUEUE_LABEL] = kai_queue
    return dict(sorted(labels.items()))


def clique_annotations(
    dgd: DynamoGraphDeployment, component: ComponentSpec, prepared_template: dict[str, object]
) -> dict[str, str]:
    """Annotations of every clique of a component: graph < preserved v1alpha1 < pod template."""
    annotations = dict(dgd.spec.annotations or {})
    annotations.update(alpha_annotations(dgd, component.name))
    annotations.update(template_metadata(prepared_template, "annotations"))
    for key in TOPOLOGY_SOURCE_KEYS:
        annotations.pop(key, None)
    return dict(sorted(annotations.items()))
