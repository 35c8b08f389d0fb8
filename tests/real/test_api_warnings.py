"""The API server's warnings reach the operator's log: a field the server does not know is dropped
from what it stores (as a Grove or DGD CRD older than the operator would drop it), and the only trace
of that is the ``Warning`` header of the request, which the kube adapter logs once per warning.
"""

from __future__ import annotations

import pytest

from dgd.cluster.resources import CONFIG_MAP
from tests.real.harness import UPSTREAM_EXAMPLES, RealCluster, manifest

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


async def test_a_dropped_field_is_logged_once_with_its_request(
    real: RealCluster, caplog: pytest.LogCaptureFixture
) -> None:
    # given a ConfigMap and a DGD, each with a field their schema does not have, each created twice
    for name in ("first", "second"):
        await real.create(CONFIG_MAP, {"metadata": {"name": name}, "data": {"a": "1"}, "bogus": 1})
        dgd = manifest(UPSTREAM_EXAMPLES[0], name=name)
        dgd["spec"]["bogusSetting"] = True
        await real.apply(dgd)

    # then the server stored them without the field
    stored = await real.dgd("second")
    assert "bogusSetting" not in stored["spec"]

    # and each warning was logged once, naming the request that drew it
    warned = [r.getMessage() for r in caplog.records if r.name == "dgd.cluster.kube"]
    about = f"the API server warns about POST {{}} {real.namespace}/first: unknown field"
    assert warned == [
        f'{about.format("ConfigMap")} "bogus"',
        f'{about.format("DynamoGraphDeployment")} "spec.bogusSetting"',
    ]
