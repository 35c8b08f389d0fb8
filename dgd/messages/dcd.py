"""The DynamoComponentDeployment, ``nvidia.com/v1beta1``: one component of a DGD on the Component pathway.

The DGD's Component program renders one DCD per component (domain spec §8.3); the DCD controller
turns it into a Deployment or LeaderWorkerSet and reports the replicas back in ``status.component``.
"""

from __future__ import annotations

from dgd.messages.base import Model
from dgd.messages.component import BackendFramework, ComponentName, SharedComponentSpec
from dgd.messages.dgd import ComponentReplicaStatus
from dgd.messages.meta import Condition, Object

GROUP = "nvidia.com"
API_VERSION = "nvidia.com/v1beta1"
KIND = "DynamoComponentDeployment"
PLURAL = "dynamocomponentdeployments"


class DCDSpec(SharedComponentSpec, frozen=True, kw_only=True):
    """A component as a DGD hands it to the DCD controller: the shared component fields plus the
    component's name and the graph's backend framework."""

    name: ComponentName | None = None
    """The component's name in its graph, as written there."""
    backend_framework: BackendFramework | None = None
    """The graph's inference backend: `sglang`, `vllm` or `trtllm`."""


class DCDStatus(Model, frozen=True):
    """What the DCD controller observed of the component's workload."""

    observed_generation: int | None = None
    """The `metadata.generation` the component deployment's controller last acted on."""
    conditions: list[Condition] | None = None
    """The component deployment's conditions, such as `Available`."""
    component: ComponentReplicaStatus | None = None
    """Replica counts of the component's workload (a Deployment or a LeaderWorkerSet)."""


class DynamoComponentDeployment(Object[DCDSpec, DCDStatus], frozen=True, tag_field="kind", tag=KIND):
    """One component's workload, owned by its DGD."""
