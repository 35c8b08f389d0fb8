"""What owns the children the operator writes, and how a child names its owner.

A DGD owns what its controller renders (PodCliqueSet or DCDs, Services, RBAC, ...); a DCD owns what
the DCD controller renders (its Deployment or LeaderWorkerSet, Services, Ingress). Both are named
the same way: a controller owner reference, which garbage collection follows when the owner goes.
"""

from __future__ import annotations

from types import ModuleType

from dgd.domain.pod_merge import JSON
from dgd.messages import dcd as dcd_kind
from dgd.messages import dgd as dgd_kind
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import controller_reference

#: An object the operator's controllers own children of and record events about.
Owner = DynamoGraphDeployment | DynamoComponentDeployment


def kind_of(owner: Owner) -> ModuleType:
    """The messages module of ``owner``'s kind (its ``API_VERSION`` and ``KIND``)."""
    return dgd_kind if isinstance(owner, DynamoGraphDeployment) else dcd_kind


def owner_reference(owner: Owner) -> JSON:
    """The controller owner reference every child of ``owner`` carries."""
    kind = kind_of(owner)
    return controller_reference(kind.API_VERSION, kind.KIND, owner.metadata.name, owner.metadata.uid)
