"""The simulated DynamoCheckpoint controller: Pending -> Creating -> Ready (or Failed) after a delay."""

from __future__ import annotations

import pytest

from dgd.cluster.resources import CHECKPOINT
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.world.settings import WorldSettings
from tests.unit.sim.builders import NS, checkpoint, condition

pytestmark = pytest.mark.anyio


async def test_a_checkpoint_passes_through_pending_and_creating_and_is_ready_after_its_delay() -> None:
    async with SimulatedCluster(WorldSettings(checkpoint_delay=90)) as sim:
        # Given a watch on checkpoints, and a new checkpoint
        phases: list[str] = []
        async with sim.cluster.watch(CHECKPOINT, namespace=NS) as stream:
            await sim.cluster.create(CHECKPOINT, checkpoint())

            # When 89 seconds pass it is still being created; at 90 it is ready
            await sim.run_for(89)
            creating = await sim.cluster.get(CHECKPOINT.key(NS, "checkpoint-abc"))
            assert creating["status"]["phase"] == "Creating"
            await sim.run_for(1)
            async for event in stream:
                phases.append(str(((event.object or {}).get("status") or {}).get("phase")))
                if phases[-1] == "Ready":
                    break

        # Then every phase was seen in order, and the Ready checkpoint carries its ID, job and time
        assert phases == ["None", "Pending", "Creating", "Ready"]
        ready = await sim.cluster.get(CHECKPOINT.key(NS, "checkpoint-abc"))
        status = ready["status"]
        assert status["checkpointID"] == status["identityHash"] and len(status["checkpointID"]) == 32
        assert status["jobName"] == f"checkpoint-job-{status['checkpointID']}-1"
        assert status["createdAt"] == "2026-01-01T00:01:30Z"
        assert condition(status["conditions"], "JobCompleted") == ("True", "PodSnapshotAndJobReady")


async def test_a_failing_checkpoint_job_ends_failed() -> None:
    async with SimulatedCluster(WorldSettings(checkpoint_delay=10, checkpoint_outcome="Failed")) as sim:
        await sim.cluster.create(CHECKPOINT, checkpoint())
        await sim.run_for(10)
        failed = await sim.cluster.get(CHECKPOINT.key(NS, "checkpoint-abc"))
        assert failed["status"]["phase"] == "Failed"
        assert condition(failed["status"]["conditions"], "JobCompleted") == ("False", "JobFailed")


async def test_an_auto_checkpoint_is_held_by_the_finalizer_which_is_released_on_deletion() -> None:
    async with SimulatedCluster(WorldSettings(checkpoint_delay=10)) as sim:
        # Given a checkpoint the DGD created
        await sim.cluster.create(CHECKPOINT, checkpoint(auto=True))
        await sim.run_for(1)
        held = await sim.cluster.get(CHECKPOINT.key(NS, "checkpoint-abc"))
        assert held["metadata"]["finalizers"] == ["nvidia.com/finalizer"]

        # When it is deleted
        await sim.cluster.delete(CHECKPOINT.key(NS, "checkpoint-abc"))
        await sim.run_for(1)

        # Then it is gone
        assert (await sim.cluster.list(CHECKPOINT)).items == []
