"""The v1alpha1 DynamoComponentDeployment: one service in the v1alpha1 shared-spec form, still served
and converted to v1beta1 (supplement §1.11).

Its spec is a v1alpha1 DGD service (``ServiceSpec``) plus the graph's ``backendFramework``; its status
reports the one service (``service``, v1beta1 ``component``) and a pod selector v1beta1 has no field
for. Conversion lives in ``dgd.domain.conversion.dcd``; these types are the edge model the v1alpha1
CRD schema is generated from.
"""

from __future__ import annotations

from dgd.messages.base import Model
from dgd.messages.meta import Condition, ObjectMeta
from dgd.messages.service_v1alpha1 import ServiceSpec
from dgd.messages.v1alpha1 import BackendFramework, ServiceReplicaStatus

KIND = "DynamoComponentDeployment"


class DCDSpecV1Alpha1(ServiceSpec, frozen=True):
    """A v1alpha1 DCD spec: the shared service spec, then the graph's backend framework."""

    backend_framework: BackendFramework | None = None
    """The inference backend: `sglang`, `vllm` or `trtllm`. Copied as it is to v1beta1."""


class DCDStatusV1Alpha1(Model, frozen=True):
    """What the operator observed of the component, as the v1alpha1 view shows it.

    Upstream's schema requires ``conditions``; here it may be absent, because conversion leaves out
    an empty list and the view of a status that has no conditions yet must still decode."""

    conditions: list[Condition] | None = None
    """The component's conditions, such as `Available`."""
    observed_generation: int | None = None
    """The `metadata.generation` the operator last reconciled without error."""
    pod_selector: dict[str, str] | None = None
    """Labels that select the component's pods. No v1beta1 field: kept in the `nvidia.com/dcd-status`
    annotation of the stored object."""
    service: ServiceReplicaStatus | None = None
    """Replica counts of the component, as its backing resource reports them. Becomes v1beta1
    `component`."""


class DynamoComponentDeploymentV1Alpha1(Model, frozen=True, tag_field="kind", tag=KIND):
    """A whole v1alpha1 DCD document (``apiVersion: nvidia.com/v1alpha1``)."""

    api_version: str
    """The group and version the object is written in, as `<group>/<version>`."""
    metadata: ObjectMeta
    """Standard object metadata: name, namespace, labels, annotations, owner references, finalizers."""
    spec: DCDSpecV1Alpha1 | None = None
    """The desired state of the object."""
    status: DCDStatusV1Alpha1 | None = None
    """The observed state, written by the object's controller through the status subresource."""
