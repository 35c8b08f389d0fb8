"""The labels and annotations a DCD's workload pods get before controller-specific ones (podspec §6.2).

Upstream's ``GetDCDKubeLabels`` and ``GetDCDKubeAnnotations``: the worker hash covers them, and the
DCD controller starts every pod's metadata from them.

Labels, later wins: the DCD's own labels, the preserved v1alpha1 labels, the pod template's, the
base-model hash (``modelRef``), the v1alpha1 sub-component type, the component and Dynamo namespace,
then the DCD's own values of component, namespace, graph name, worker hash and component class again.
Annotations: preserved v1alpha1, then the pod template's, the base model (``modelRef``); minus the
origin version and the topology-source keys, which come from the DCD's own annotations instead.
"""

from __future__ import annotations

from dgd.domain.conversion.alpha_view import (
    alpha_annotations,
    alpha_labels,
    preserved_service,
    sub_component_type,
)
from dgd.domain.metadata_keys import (
    BASE_MODEL,
    BASE_MODEL_HASH,
    COMPONENT,
    COMPONENT_CLASS,
    DYNAMO_NAMESPACE,
    GRAPH_NAME,
    ORIGIN_VERSION,
    SUB_COMPONENT_TYPE,
    TOPOLOGY_SOURCE_KEYS,
    WORKER_HASH,
)
from dgd.domain.render.clique_metadata import model_hash
from dgd.domain.render.template_defaults import template_metadata
from dgd.messages.component import ComponentSpec
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment

_OBJECT_KEYS = (COMPONENT, DYNAMO_NAMESPACE, GRAPH_NAME, WORKER_HASH, COMPONENT_CLASS)


def kube_labels(
    dgd: DynamoGraphDeployment, component: ComponentSpec, dcd: DynamoComponentDeployment
) -> dict[str, str]:
    """The workload labels of the DCD ``dcd`` rendered for ``component`` of ``dgd``."""
    alpha_namespace = preserved_service(dgd, component.name).get("dynamoNamespace")
    return labels_of(
        dcd,
        alpha=alpha_labels(dgd, component.name),
        sub_type=sub_component_type(dgd, component),
        component=dcd.spec.name or component.name,
        alpha_namespace=alpha_namespace if isinstance(alpha_namespace, str) else None,
    )


def labels_of(
    dcd: DynamoComponentDeployment,
    *,
    alpha: dict[str, str],
    sub_type: str | None,
    component: str,
    alpha_namespace: str | None,
) -> dict[str, str]:
    """``GetDCDKubeLabels`` of ``dcd`` given its v1alpha1 view (labels, sub-type, ``dynamoNamespace``)
    and its component name: the DGD's program and the DCD controller read the view from different
    places (the DGD's payload, the DCD's own), which hold the same data."""
    own = dict(dcd.metadata.labels or {})
    labels = dict(own)
    labels.update(alpha)
    labels.update(template_metadata(dcd.spec.pod_template or {}, "labels"))
    model = dcd.spec.model_ref
    if model is not None and model.name:
        labels[BASE_MODEL_HASH] = model_hash(model.name)
    if sub_type:
        labels[SUB_COMPONENT_TYPE] = sub_type
    labels[COMPONENT] = component
    namespace = alpha_namespace if alpha_namespace is not None else own.get(DYNAMO_NAMESPACE)
    if namespace:
        labels[DYNAMO_NAMESPACE] = namespace
    labels.update({key: own[key] for key in _OBJECT_KEYS if own.get(key)})
    return labels


def kube_annotations(
    dgd: DynamoGraphDeployment, component: ComponentSpec, dcd: DynamoComponentDeployment
) -> dict[str, str]:
    """The workload annotations of the DCD ``dcd`` rendered for ``component`` of ``dgd``."""
    return annotations_of(dcd, alpha=alpha_annotations(dgd, component.name))


def annotations_of(dcd: DynamoComponentDeployment, *, alpha: dict[str, str]) -> dict[str, str]:
    """``GetDCDKubeAnnotations`` of ``dcd`` given its preserved v1alpha1 annotations."""
    annotations = dict(alpha)
    annotations.update(template_metadata(dcd.spec.pod_template or {}, "annotations"))
    model = dcd.spec.model_ref
    if model is not None and model.name:
        annotations[BASE_MODEL] = model.name
    annotations.pop(ORIGIN_VERSION, None)
    for key in TOPOLOGY_SOURCE_KEYS:
        annotations.pop(key, None)
    own = dcd.metadata.annotations or {}
    annotations.update({key: own[key] for key in TOPOLOGY_SOURCE_KEYS if own.get(key)})
    return annotations
