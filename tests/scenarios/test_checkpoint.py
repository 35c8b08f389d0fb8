"""Checkpoints on both pathways, as a user sees them (dgd-domain §10).

The TensorRT-LLM snapshot/restore example: its worker waits for its automatic checkpoint
(``WaitForCheckpoint``) at 0 replicas, the DGD ``pending / waiting_for_checkpoint`` naming it; once
the simulated checkpoint job made it ``Ready`` the worker starts, restored from it, and the DGD is
``successful``. With ``Immediate`` the worker starts cold at once, and the pods created after the
checkpoint is ``Ready`` are restored at admission (§10.6 (b)). Deleting the DGD deletes the automatic
checkpoints, or detaches them under ``Retain``.
"""

from __future__ import annotations

from typing import Any

import pytest

from dgd.cluster.errors import NotFound
from dgd.cluster.resources import CHECKPOINT, DCD, DGD, PCLQ, PCS, POD, PVC
from dgd.domain.admission.config import load_config
from dgd.messages.dgd import ComponentCheckpointStatus
from dgd.sim import WorldSettings
from tests.scenarios.graphs import SNAPSHOT, model_cache
from tests.scenarios.grove.stage import NS, Stage, on_stage, upstream

pytestmark = pytest.mark.anyio

WORKER = "TRTLLMWorker"
CONFIG = load_config("checkpoint:\n  enabled: true\n")
#: The simulated checkpoint job takes two minutes.
WORLD = WorldSettings(checkpoint_delay=120.0)
PATHWAYS = ("grove", "component")


def example(pathway: str, **checkpoint: Any) -> dict[str, Any]:
    document = upstream(SNAPSHOT)
    if pathway == "grove":
        document["metadata"]["annotations"] = {}
    worker = next(c for c in document["spec"]["components"] if c["name"] == WORKER)
    worker["experimental"]["checkpoint"].update(checkpoint)
    return document


async def with_model_cache(stage: Stage) -> None:
    """The PersistentVolumeClaim the example asks the user to create first."""
    await stage.user.create(PVC.as_raw(), model_cache(NS))


async def worker_replicas(stage: Stage, pathway: str, name: str) -> int | None:
    """The replicas the worker's workload is asked for (its PodClique, or its DCD)."""
    if pathway == "grove":
        cliques = (await stage.user.list(PCLQ, namespace=NS)).items
        found = [c for c in cliques if (c.metadata.name or "").endswith(f"-0-{WORKER.lower()}")]
        return found[0].spec.replicas if found else None
    dcds = [d for d in (await stage.user.list(DCD, namespace=NS)).items if d.spec.name == WORKER]
    return dcds[0].spec.replicas if dcds else None


@pytest.mark.parametrize("pathway", PATHWAYS)
async def test_the_snapshot_restore_example_waits_for_its_checkpoint_then_succeeds(pathway: str) -> None:
    async with on_stage(WORLD, config=CONFIG) as stage:
        # given the model cache, and the example applied
        await with_model_cache(stage)
        name = await stage.apply(example(pathway))

        # when the frontend is up but the checkpoint job is still running
        await stage.sim.run_for(60)

        # then the worker is held at 0 replicas, and the DGD waits for the checkpoint, naming it
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.checkpoints is not None
        checkpoint = dgd.status.checkpoints[WORKER]
        assert checkpoint.ready is False and checkpoint.checkpoint_name is not None
        assert checkpoint.checkpoint_name == f"checkpoint-{checkpoint.checkpoint_id}"
        ready = dgd.status.conditions[0]  # type: ignore[index]
        assert (dgd.status.state, ready.reason, ready.message) == (
            "pending",
            "waiting_for_checkpoint",
            f"Waiting for checkpoints: {WORKER} ({checkpoint.checkpoint_name})",
        )
        assert await worker_replicas(stage, pathway, name) == 0
        # and the automatic checkpoint is the DGD's, for its worker generation
        cr = await stage.user.get(CHECKPOINT.key(NS, checkpoint.checkpoint_name))
        assert cr["metadata"]["labels"]["nvidia.com/dynamo-graph-deployment-name"] == name
        assert cr["metadata"]["annotations"]["nvidia.com/dynamo-auto-checkpoint"] == "true"
        assert cr["metadata"]["ownerReferences"][0]["uid"] == dgd.metadata.uid
        assert cr["spec"]["identity"]["model"] == f"{NS}/{name}"
        assert [c["name"] for c in cr["spec"]["job"]["podTemplateSpec"]["spec"]["containers"]] == ["main"]

        # when the checkpoint is ready, then the worker starts and the DGD is successful
        waited = await stage.until_state(name, "successful", timeout=600)
        assert waited >= 120
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.checkpoints is not None
        assert dgd.status.checkpoints[WORKER] == ComponentCheckpointStatus(
            checkpoint_name=checkpoint.checkpoint_name,
            checkpoint_id=checkpoint.checkpoint_id,
            identity_hash=checkpoint.checkpoint_id,
            ready=True,
        )
        assert await worker_replicas(stage, pathway, name) == 1
        # and the worker restores from it: the DCD names it, or the clique's pods are restore targets
        if pathway == "component":
            dcd = next(d for d in (await stage.user.list(DCD, namespace=NS)).items if d.spec.name == WORKER)
            assert dcd.spec.experimental is not None and dcd.spec.experimental.checkpoint is not None
            assert dcd.spec.experimental.checkpoint.checkpoint_ref == checkpoint.checkpoint_name
        else:
            (pcs,) = (await stage.user.list(PCS, namespace=NS)).items  # its name is shortened
            clique = next(c for c in pcs.spec.template.cliques if c.name == WORKER.lower())
            assert (clique.labels or {})["nvidia.com/snapshot-is-restore-target"] == "true"
            assert (clique.labels or {})["nvidia.com/snapshot-checkpoint-id"] == checkpoint.checkpoint_id
            main = next(c for c in clique.spec.pod_spec["containers"] if c["name"] == "main")
            assert {"name": "DYN_SNAPSHOT_RESTORE_STANDBY", "value": "1"} in main["env"]


async def worker_pods(stage: Stage) -> list[dict[str, Any]]:
    """The worker's pods that are not being deleted."""
    pods = (await stage.user.list(POD, namespace=NS)).items
    return [
        pod
        for pod in pods
        if pod["metadata"]["labels"].get("nvidia.com/dynamo-component") == WORKER
        and not pod["metadata"].get("deletionTimestamp")
    ]


def restored(pod: dict[str, Any]) -> bool:
    labels = pod["metadata"]["labels"]
    main = next(c for c in pod["spec"]["containers"] if c["name"] == "main")
    standby = {"name": "DYN_SNAPSHOT_RESTORE_STANDBY", "value": "1"} in (main.get("env") or [])
    return labels.get("nvidia.com/snapshot-is-restore-target") == "true" and standby


@pytest.mark.parametrize("pathway", PATHWAYS)
async def test_with_immediate_startup_pods_created_after_the_checkpoint_is_ready_are_restored(
    pathway: str,
) -> None:
    async with on_stage(WORLD, config=CONFIG) as stage:
        # given the example with an Immediate checkpoint: the worker does not wait for it
        await with_model_cache(stage)
        name = await stage.apply(example(pathway, startupPolicy="Immediate"))
        await stage.until_state(name, "successful", timeout=600)
        (cold,) = await worker_pods(stage)
        assert not restored(cold)

        # when the checkpoint is Ready and the worker's pod is replaced
        await stage.sim.run_for(180)
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.checkpoints is not None
        checkpoint = dgd.status.checkpoints[WORKER]
        assert checkpoint.ready is True
        await stage.user.delete(POD.key(NS, cold["metadata"]["name"]))
        await stage.sim.run_for(60)

        # then the new pod was restored from it at admission, its candidate annotations gone
        (new,) = await worker_pods(stage)
        assert new["metadata"]["name"] != cold["metadata"]["name"]
        assert restored(new)
        assert new["metadata"]["labels"]["nvidia.com/snapshot-checkpoint-id"] == checkpoint.checkpoint_id
        assert "nvidia.com/dynamo-checkpoint-restore-candidate" not in new["metadata"]["annotations"]
        # and the workload's template only marks candidates: the shaping was admission's
        assert (await template_annotations(stage, pathway))[
            "nvidia.com/dynamo-checkpoint-restore-candidate"
        ] == ("true")


async def template_annotations(stage: Stage, pathway: str) -> dict[str, str]:
    """The annotations of the worker's pod template (its clique, or its DCD's template)."""
    if pathway == "grove":
        (pcs,) = (await stage.user.list(PCS, namespace=NS)).items
        clique = next(c for c in pcs.spec.template.cliques if c.name == WORKER.lower())
        return clique.annotations or {}
    dcd = next(d for d in (await stage.user.list(DCD, namespace=NS)).items if d.spec.name == WORKER)
    annotations: dict[str, str] = ((dcd.spec.pod_template or {}).get("metadata") or {}).get(
        "annotations"
    ) or {}
    return annotations


@pytest.mark.parametrize("policy", ["Delete", "Retain"])
async def test_automatic_checkpoints_follow_their_deletion_policy_when_the_dgd_is_deleted(
    policy: str,
) -> None:
    async with on_stage(WORLD, config=CONFIG) as stage:
        # given the example, successful, with its automatic checkpoint
        await with_model_cache(stage)
        name = await stage.apply(example("component", deletionPolicy=policy))
        await stage.until_state(name, "successful", timeout=600)
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.checkpoints is not None
        checkpoint_name = dgd.status.checkpoints[WORKER].checkpoint_name or ""

        # when the DGD is deleted
        await stage.user.delete(DGD.key(NS, name))
        await stage.sim.run_for(30)

        # then the DGD is gone, and its checkpoint is deleted (Delete) or kept and detached (Retain)
        with pytest.raises(NotFound):
            await stage.user.get(DGD.key(NS, name))
        if policy == "Delete":
            with pytest.raises(NotFound):
                await stage.user.get(CHECKPOINT.key(NS, checkpoint_name))
        else:
            kept = await stage.user.get(CHECKPOINT.key(NS, checkpoint_name))
            assert not kept["metadata"].get("ownerReferences")
            assert "nvidia.com/dynamo-graph-deployment-name" not in (kept["metadata"].get("labels") or {})
            assert kept["status"]["phase"] == "Ready"
