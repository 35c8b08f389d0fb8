"""The simulated API server checks our kinds against their CRD schema as a real one does: the same
pod-template typos and bad quantities ``validate`` reports are refused, with the same words, even
without the operator's webhooks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dgd.cluster.errors import Invalid
from dgd.cluster.resources import DGD
from dgd.domain.admission.documents import admit_document
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.world.settings import WorldSettings

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "invalid"
POD_TEMPLATE_CASES = ["pod-template-field-typo", "pod-template-quantity-invalid"]


def _document(case: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((CORPUS / f"{case}.yaml").read_text(encoding="utf-8"))
    document["metadata"]["namespace"] = "default"
    return document


@pytest.mark.anyio
@pytest.mark.parametrize("case", POD_TEMPLATE_CASES)
async def test_a_world_only_cluster_refuses_what_validate_reports_in_a_pod_template(case: str) -> None:
    # given a DGD whose pod template breaks Kubernetes' PodTemplateSpec schema, and what validate says
    document = _document(case)
    (reported,) = admit_document(document).errors

    # when it is created on a simulated cluster without the operator (so without its webhooks)
    async with SimulatedCluster(WorldSettings()) as sim:
        with pytest.raises(Invalid) as refused:
            await sim.cluster.create(DGD.as_raw(), document)

    # then the API server refuses it, naming the field, the value and what is allowed, as validate does
    assert [(cause.field, cause.message) for cause in refused.value.causes] == [
        (reported.path, reported.message)
    ]
    assert str(reported) in str(refused.value)
