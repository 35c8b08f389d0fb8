"""On a real API server, a status field the operator does not model survives its status writes: the
DGD CRD is given one extra status property (as a newer upstream CRD would have)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dgd.cluster.resources import DGD
from tests.conftest import kubectl
from tests.e2e.operators import Operators
from tests.real.harness import UPSTREAM_EXAMPLES, RealCluster, manifest, world

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

CRD = Path(__file__).resolve().parents[2] / "deploy" / "crds" / "nvidia.com_dynamographdeployments.yaml"


async def test_a_status_property_of_a_newer_crd_survives_the_operators_status_writes(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    # given our DGD CRD with one status property our models lack, applied to the real server
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    for version in crd["spec"]["versions"]:
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        status.setdefault("properties", {})["futureField"] = {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }
    applied = kubectl(
        real.plane, "apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(crd).encode()
    )
    assert applied.returncode == 0, applied.stderr.decode()

    # and a DGD whose status another writer gave that field before the operator saw it
    async with world(real, tmp_path):
        await real.apply(manifest(UPSTREAM_EXAMPLES[0], name="newer"))
        raw = DGD.as_raw().key(real.namespace, "newer")
        await real.kube.patch_status(raw, {"status": {"futureField": {"phase": "Elsewhere"}}})

        # when the operator reconciles it to successful, writing its status on the way
        await daemons.start("writer")
        await real.settle("newer", timeout=90)

        # then the other writer's field is as it was written
        stored = await real.kube.get(raw)
        assert stored["status"]["futureField"] == {"phase": "Elsewhere"}
