"""The knobs of the simulated world: delays, capacity, topology, and what the cluster serves.

One frozen value, read by every world controller at each reconcile, so changing it at run time
(``SimulatedCluster.reconfigure``) takes effect everywhere on the next pass, and a restarted
controller starts from the settings in force. Times are seconds of cluster time.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

Seconds = Annotated[float, msgspec.Meta(ge=0)]

#: Every topology level a DGD may name (dgd-domain: region, zone, datacenter, block, rack, host, numa).
ALL_LEVELS = ("region", "zone", "datacenter", "block", "rack", "host", "numa")


class ClusterTopology(msgspec.Struct, frozen=True):
    """A topology definition the scheduler knows (Grove's ClusterTopology): its name and levels."""

    name: str
    levels: tuple[str, ...] = ALL_LEVELS


class WorldSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What the simulated cluster is like.

    Pods: a new pod is bound to a node ``schedule_delay`` after it was created, if the cluster has
    room (``capacity`` pods at once, ``None`` for no limit; Grove pods that do not fit stay
    schedule-gated, other pods stay Pending as Unschedulable), becomes Running and Ready
    ``ready_delay`` after it was bound, and reaches a terminal phase ``termination_delay`` after it was
    deleted. A DynamoCheckpoint's job takes ``checkpoint_delay`` and ends ``checkpoint_outcome``.
    Topology: Grove reports ``TopologyLevelsUnavailable`` for a PodCliqueSet that names a topology not
    in ``topologies``, or a level its topology lacks. ``served_groups`` are the API groups (besides the
    core ones) discovery lists; ``namespaces`` exist from the start.
    """

    schedule_delay: Seconds = 1.0
    ready_delay: Seconds = 30.0
    termination_delay: Seconds = 5.0
    checkpoint_delay: Seconds = 120.0
    checkpoint_outcome: Literal["Ready", "Failed"] = "Ready"
    capacity: Annotated[int, msgspec.Meta(ge=0)] | None = None
    topologies: tuple[ClusterTopology, ...] = (ClusterTopology("default"),)
    served_groups: tuple[str, ...] = (
        "grove.io/v1alpha1",
        "inference.networking.k8s.io/v1",
        "nvidia.com/v1alpha1",
        "nvidia.com/v1beta1",
        "resource.k8s.io/v1",
    )
    namespaces: tuple[str, ...] = ("default",)
    #: How long a world controller waits before retrying after an API error.
    retry_delay: Seconds = 1.0

    def topology(self, name: str) -> ClusterTopology | None:
        """The topology named ``name``, if the cluster defines it."""
        return next((topology for topology in self.topologies if topology.name == name), None)
