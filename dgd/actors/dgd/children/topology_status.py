"""The topology-status child of a Grove DGD: the ``TopologyLevelsAvailable`` projection (dgd-domain §9.7).

Asked with the PodCliqueSet the program synced (never a second read), it answers the condition to
upsert and the Warning to queue with it, or ``NoTopology`` when the DGD has no topology to report.
"""

from __future__ import annotations

import msgspec

from dgd.domain.topology import TopologyProjection, project_topology
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet
from dgd.runtime import Actor, Request


class NoTopology(msgspec.Struct, frozen=True):
    """Nothing to project: the DGD has no topology constraint, or there is no PodCliqueSet."""


class Project(Request[TopologyProjection | NoTopology], frozen=True):
    """Project the topology condition of ``dgd`` (defaulted) from ``pcs``, given the status so far."""

    dgd: DynamoGraphDeployment
    pcs: PodCliqueSet | None
    status: DGDStatus | None
    now: str


class TopologyStatus(Actor[Project]):
    """Answers ``Project``; holds no state."""

    async def receive(self, message: Project) -> TopologyProjection | NoTopology:
        projection = project_topology(message.dgd, message.pcs, message.status, now=message.now)
        return projection if projection is not None else NoTopology()
