"""The Component program built from its parts with fakes, no actor system: the order of dgd-domain
§8.1, the DCDs it writes, and what a failed step leaves in the result."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.actors.dgd.children.checkpoint_storage import CheckpointsResolved
from dgd.actors.dgd.children.shared_resources import SharedEnsured
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.dgd.programs.component import ComponentProgram
from dgd.actors.dgd.programs.provisioning import Provisioning
from dgd.cluster.resources import DCD
from dgd.domain.admission.config import load_config
from dgd.domain.checkpoint import CheckpointInfo
from dgd.domain.projection import FAILED_TO_RECONCILE, NO_MULTINODE_ORCHESTRATOR
from dgd.messages.config import OperatorConfig
from tests.unit.actors.programs.fakes import EPOCH, NOW, World, manifest, world

pytestmark = pytest.mark.anyio

#: The effective configuration of an operator on a cluster that serves neither Grove nor LeaderWorkerSet.
DEFAULTS = load_config("orchestrators: {grove: {enabled: false}, lws: {enabled: false}}")


def program(w: World, config: OperatorConfig = DEFAULTS, **parts: Any) -> ComponentProgram:
    return ComponentProgram(
        config=config,
        reader=w.reader,
        syncer=w.syncer,
        now=lambda: NOW,
        clock=lambda: EPOCH,
        progress_deadline=None,
        rollout=w.rollout(),
        provisioning=parts.get("provisioning") or w.provisioning(),
        restart=w.restart(),
        conclusion=parts.get("conclusion") or w.conclusion(),
    )


async def test_a_new_graph_gets_one_dcd_per_component_after_its_rollout_step_and_shared_resources() -> None:
    # given a stored Component-pathway graph and a program of fakes
    w = await world()
    dgd = await w.store(manifest(grove=False))

    # when the program runs once
    result = await program(w).reconcile(dgd)

    # then the children were asked in the contract's order (§8.1 steps 1-7)
    assert w.asked == [
        ("rollout", "AdvanceRollout"),
        ("shared-resources", "EnsureShared"),
        ("checkpoint-storage", "ResolveCheckpoints"),
        ("shared-resources", "EnsureSharedAfterCheckpoints"),
        ("restart", "ResolveRestart"),
        ("scaling-adapters", "ReconcileAdapters"),
    ]
    # and one DCD per component exists, the worker's named for the generation the rollout chose
    names = sorted(d.metadata.name for d in (await w.cluster.list(DCD, namespace="team-a")).items)
    assert names == ["demo-frontend", "demo-worker-a1b2c3d4"]
    # and the graph waits for them
    assert result.failure is None
    assert result.status.state == "pending"


async def test_a_multinode_graph_without_leader_worker_set_fails_after_its_shared_resources() -> None:
    # given a multinode graph and an operator without the LeaderWorkerSet gate
    w = await world()
    dgd = await w.store(manifest(grove=False, multinode=True))

    # when the program runs
    result = await program(w).reconcile(dgd)

    # then step 3 ended the run terminally, after shared resources and before the restart and any DCD
    assert [name for name, _ in w.asked][-1] == "shared-resources"
    assert ("restart", "ResolveRestart") not in w.asked
    assert result.failure is not None and result.failure.terminal
    assert result.failure.reason == NO_MULTINODE_ORCHESTRATOR
    assert (await w.cluster.list(DCD, namespace="team-a")).items == []


async def test_a_failure_after_the_checkpoints_keeps_their_statuses_in_the_failed_status() -> None:
    # given a checkpointed worker whose checkpoint is resolved, and scaling adapters that refuse
    w = await world()
    dgd = await w.store(manifest(grove=False))
    info = CheckpointInfo(enabled=True, exists=True, name="demo-worker-ckpt", ready=True)
    provisioning = Provisioning(
        w.child("shared-resources", lambda message: SharedEnsured()),
        w.child("checkpoint-storage", lambda message: CheckpointsResolved({"Worker": info})),
    )
    refusing = w.conclusion(lambda message: StepFailed("adapters refused"))

    # when the program runs
    result = await program(w, provisioning=provisioning, conclusion=refusing).reconcile(dgd)

    # then the run failed at the adapters, and the status still carries the checkpoint's
    assert result.failure is not None and result.failure.reason == FAILED_TO_RECONCILE
    assert "adapters refused" in result.failure.message
    assert result.status.checkpoints is not None and "Worker" in result.status.checkpoints
