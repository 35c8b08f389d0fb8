"""The v1alpha1 DynamoGraphDeploymentScalingAdapter, still served and converted to v1beta1.

The same adapter as v1beta1 (``dgd.messages.dgdsa``) but for one name: the reference names the
graph's service by its ``spec.services`` key, ``dgdRef.serviceName``, which v1beta1 calls
``dgdRef.componentName`` (supplement §1.11: a lossless rename). These types are the edge model the
v1alpha1 CRD schema is generated from.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from dgd.messages.base import Model
from dgd.messages.meta import ObjectMeta

KIND = "DynamoGraphDeploymentScalingAdapter"

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
DateTime = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]


class DGDRefV1Alpha1(Model, frozen=True):
    """The DGD (by name, same namespace) and the service (by its ``spec.services`` key) to scale."""

    name: NonEmpty
    """The DynamoGraphDeployment's name, in the adapter's namespace."""
    service_name: NonEmpty
    """The service's key in the graph's `spec.services`. Becomes v1beta1 `componentName`."""


class DGDSASpecV1Alpha1(Model, frozen=True):
    """``replicas`` is the source of truth for the referenced service's replicas."""

    dgd_ref: DGDRefV1Alpha1
    """The graph and the service this adapter scales."""
    replicas: Annotated[int, msgspec.Meta(ge=0)]
    """The replicas the service should run. Autoscalers set it through the scale subresource; the operator
    copies it into the graph."""


class DGDSAStatusV1Alpha1(Model, frozen=True):
    """The replicas last applied, the service's pod selector, and when the adapter last scaled."""

    last_scale_time: DateTime | None = None
    """When the adapter last changed the service's replicas (RFC 3339)."""
    replicas: int | None = None
    """The replicas last applied to the service; the scale subresource reads it."""
    selector: str | None = None
    """The label selector of the service's pods, for autoscalers that compute metrics per pod."""


class DynamoGraphDeploymentScalingAdapterV1Alpha1(Model, frozen=True, tag_field="kind", tag=KIND):
    """A whole v1alpha1 DGDSA document (``apiVersion: nvidia.com/v1alpha1``)."""

    api_version: str
    """The group and version the object is written in, as `<group>/<version>`."""
    metadata: ObjectMeta
    """Standard object metadata: name, namespace, labels, annotations, owner references, finalizers."""
    spec: DGDSASpecV1Alpha1 | None = None
    """The desired state of the object."""
    status: DGDSAStatusV1Alpha1 | None = None
    """The observed state, written by the object's controller through the status subresource."""
