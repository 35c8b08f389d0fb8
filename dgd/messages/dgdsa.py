"""The DynamoGraphDeploymentScalingAdapter (DGDSA), ``nvidia.com/v1beta1`` (domain spec §13).

A per-component scale facade: HPA, KEDA or the Planner scale it through its scale subresource, and
the DGDSA controller copies ``spec.replicas`` into the DGD component it references.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from dgd.messages.base import Model
from dgd.messages.meta import Object

GROUP = "nvidia.com"
API_VERSION = "nvidia.com/v1beta1"
KIND = "DynamoGraphDeploymentScalingAdapter"
PLURAL = "dynamographdeploymentscalingadapters"

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class DGDRef(Model, frozen=True):
    """The DGD (by name, same namespace) and the component (by its original-case name) to scale."""

    name: NonEmpty
    """The DynamoGraphDeployment's name, in the adapter's namespace."""
    component_name: NonEmpty
    """The component's name, as written in the graph."""


class DGDSASpec(Model, frozen=True):
    """``replicas`` is the source of truth for the referenced component's replicas."""

    replicas: Annotated[int, msgspec.Meta(ge=0)]
    """The replicas the component should run. Autoscalers set it through the scale subresource; the operator
    copies it into the graph."""
    dgd_ref: DGDRef
    """The graph and the component this adapter scales."""


class DGDSAStatus(Model, frozen=True):
    """The replicas last applied, the component's pod selector, and when the adapter last scaled."""

    replicas: int
    """The replicas last applied to the component."""
    selector: str | None = None
    """The label selector of the component's pods, for autoscalers that compute metrics per pod."""
    last_scale_time: str | None = None
    """When the adapter last changed the component's replicas (RFC 3339)."""


class DynamoGraphDeploymentScalingAdapter(
    Object[DGDSASpec, DGDSAStatus], frozen=True, tag_field="kind", tag=KIND
):
    """A scale subresource for one DGD component, owned by its DGD."""
