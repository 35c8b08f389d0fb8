"""The DGD status is written as a patch of what changed: what the operator does not model survives."""

from __future__ import annotations

import pytest

from dgd.cluster.resources import DGD
from tests.unit.actors.operator.harness import NS, manifest, running_operator

pytestmark = pytest.mark.anyio


async def test_a_status_field_the_operator_does_not_model_survives_its_status_writes() -> None:
    async with running_operator() as op:
        # given a DGD the operator reconciled, and a status field another writer (a newer operator, a
        # tool) put beside the operator's
        await op.apply(manifest())
        raw = DGD.as_raw().key(NS, "demo")
        await op.cluster.patch_status(raw, {"status": {"futureField": {"phase": "Elsewhere"}}})
        before = await op.dgd()

        # when the operator writes the status again (Grove reports every child ready)
        await op.grove_realizes()
        after = await op.cluster.get(raw)

        # then its own fields changed and the other writer's field is as it was written
        assert after["status"]["state"] == "successful" and before.status is not None
        assert before.status.state != "successful"
        assert after["status"]["futureField"] == {"phase": "Elsewhere"}
