"""A replaced DGD on a real control plane rolls from the worker generation that runs (issue 32, #13495).

``kubectl replace -f`` of the user's manifest is a PUT that drops what the operator stamped: the
``nvidia.com/current-worker-hash-v2`` annotation and the finalizer. When the worker's image changes in
the same PUT, the daemon must roll the worker from the DCD that runs to a new one, within the surge
bound, and leave one worker generation whose DCD the status names.
"""

from __future__ import annotations

import copy
from pathlib import Path

import anyio
import pytest

from dgd.cluster.resources import DCD, DGD
from dgd.messages.base import JSONObject
from tests.e2e.eventually import eventually
from tests.e2e.operators import Operators
from tests.real.harness import UPSTREAM_EXAMPLES, RealCluster, manifest, operated

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600), pytest.mark.usefixtures("cluster_rbac")]

WORKER = "VllmDecodeWorker"
HASH = "nvidia.com/current-worker-hash-v2"
WORKER_HASH = "nvidia.com/dynamo-worker-hash"
PROVIDER = "nvidia.com/workload-provider"
REPLICAS = 2
#: d + maxSurge (25% of 2, rounded up) for the default RollingUpdate strategy.
MOST = REPLICAS + 1


def _graph() -> JSONObject:
    document = manifest(UPSTREAM_EXAMPLES[0], name="replaced", component=True)
    for component in document["spec"]["components"]:
        if component["name"] == WORKER:
            component["replicas"] = REPLICAS
    return document


async def _workers(real: RealCluster) -> list[JSONObject]:
    items = (await real.kube.list(DCD.as_raw(), namespace=real.namespace)).items
    return [
        d
        for d in items
        if d["spec"].get("name") == WORKER and (d["metadata"].get("labels") or {}).get(WORKER_HASH)
    ]


async def test_a_replace_without_the_operators_annotations_rolls_the_serving_generation_out(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    async with operated(real, daemons, tmp_path), anyio.create_task_group() as tg:
        # given vLLM's agg graph on the Component pathway, two workers, successful
        document = _graph()
        await real.apply(copy.deepcopy(document))
        await real.settle("replaced", timeout=180)
        stored = await real.dgd("replaced")
        old_hash = stored["metadata"]["annotations"][HASH]
        assert [d["metadata"]["labels"][WORKER_HASH] for d in await _workers(real)] == [old_hash]
        asked: list[int] = []

        async def sample() -> None:
            while True:
                live = [d for d in await _workers(real) if not d["metadata"].get("deletionTimestamp")]
                asked.append(sum(d["spec"].get("replicas", 1) for d in live))
                await anyio.sleep(0.2)

        tg.start_soon(sample)

        # when the user replaces it with the manifest whose worker image changed (kubectl replace -f:
        # no worker-hash annotation, no finalizer; the immutable workload provider kept)
        replacement = copy.deepcopy(document)
        worker = next(c for c in replacement["spec"]["components"] if c["name"] == WORKER)
        worker["podTemplate"]["spec"]["containers"][0]["image"] += "-replaced"
        replacement["metadata"]["namespace"] = real.namespace
        replacement["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        replacement["metadata"].setdefault("annotations", {})[PROVIDER] = stored["metadata"]["annotations"][
            PROVIDER
        ]
        await real.kube.replace(DGD.as_raw(), replacement)

        # then a rollout runs from the old generation and completes on a new one
        async def rolled() -> bool:
            dgd = await real.dgd("replaced")
            status = dgd.get("status") or {}
            return bool(
                status.get("state") == "successful"
                and status.get("observedGeneration") == dgd["metadata"]["generation"]
                and (status.get("rollingUpdate") or {}).get("phase") == "Completed"
                and dgd["metadata"].get("annotations", {}).get(HASH) != old_hash
            )

        await eventually(rolled, timeout=240, what="the rollout completed on a new worker hash")

        # and exactly one worker generation is left, the new one, which the status names (the old
        # DCD is deleted in the reconcile that completes the rollout, but it carries the DCD
        # controller's finalizer, so it can outlive that status write by a moment)
        dgd = await real.dgd("replaced")
        new_hash = dgd["metadata"]["annotations"][HASH]

        async def one_generation() -> bool:
            return [d["metadata"]["labels"][WORKER_HASH] for d in await _workers(real)] == [new_hash]

        await eventually(one_generation, timeout=60, what="only the new worker generation is left")
        workers = await _workers(real)
        assert [d["metadata"]["labels"][WORKER_HASH] for d in workers] == [new_hash]
        assert dgd["status"]["components"][WORKER]["componentNames"] == [workers[0]["metadata"]["name"]]
        # and never more than d + surge worker replicas were asked for
        assert asked and max(asked) <= MOST, asked
        # and the finalizer the replace dropped is back
        assert "nvidia.com/finalizer" in dgd["metadata"]["finalizers"]
        tg.cancel_scope.cancel()
