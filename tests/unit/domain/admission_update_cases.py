"""The stored DGDs, principals and the update call that the DGD update admission tests (supplement §4.5)
share.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER
from dgd.domain.admission.principals import Requester
from dgd.domain.admission.update import validate_update
from dgd.domain.admission.validation import Verdict
from dgd.messages.dgd import DynamoGraphDeployment
from tests.unit.domain.dgd_cases import small_dgd

OPERATOR = "system:serviceaccount:dynamo-system:dynamo-operator-controller-manager"
PLANNER = "system:serviceaccount:team-a:planner-serviceaccount"
ALICE = Requester("alice", ("system:authenticated",))
POWER = "dynamo.nvidia.com/gpu-power-limit"
WORKER = "spec.components[1]"


def _document(*, provider: str | None = "grove", **worker: Any) -> dict[str, Any]:
    """A small valid, stored v1beta1 DGD with its provider recorded; ``worker`` sets worker fields."""
    annotations = {WORKLOAD_PROVIDER: provider} if provider is not None else {}
    return small_dgd(annotations=annotations, namespace="team-a", **worker)


def _decode(document: dict[str, Any]) -> DynamoGraphDeployment:
    return msgspec.convert(document, DynamoGraphDeployment)


def _worker_main(document: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = document["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]
    return container


def _update(
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    requester: Requester | None = ALICE,
    principal: str | None = OPERATOR,
    grove_enabled: bool = True,
) -> Verdict:
    return validate_update(
        _decode(old),
        _decode(new),
        requester=requester,
        operator_principal=principal,
        grove_enabled=grove_enabled,
    )


def _messages(verdict: Verdict) -> list[str]:
    return [str(error) for error in verdict.errors]


TOPOLOGY = {"clusterTopologyName": "cluster", "packDomain": "zone"}
