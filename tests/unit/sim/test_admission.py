"""The simulated cluster's admission chain for pods: the pod checkpoint-restore mutator, in process,
reading the candidate's checkpoint from the store as the pod is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CHECKPOINT, POD
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.messages.config import CheckpointConfig
from dgd.sim.admission import webhook_chain

pytestmark = pytest.mark.anyio

REVIEW = Path(__file__).resolve().parents[1] / "domain" / "reviews" / "pod-create-restore-candidate.json"
CHECKPOINT_NAME = "checkpoint-5f0c6a0e2b9d4e7f8a1b2c3d4e5f6a7b"
GATE_ON = AdmissionSettings(checkpoint=CheckpointConfig(enabled=True))


def candidate_pod() -> dict[str, Any]:
    """The recorded candidate pod, as a controller posts it (without its owner: none exists here)."""
    pod: dict[str, Any] = json.loads(REVIEW.read_text())["request"]["object"]
    del pod["status"], pod["metadata"]["ownerReferences"]
    return pod


async def with_checkpoint(cluster: MemoryCluster, phase: str) -> None:
    """The candidate's checkpoint, in ``phase`` (stored past admission: the gate may be off)."""
    cluster.create_loose(
        CHECKPOINT,
        {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "DynamoCheckpoint",
            "metadata": {"name": CHECKPOINT_NAME, "namespace": "team-a"},
            "spec": {"identity": {"model": "team-a/qwen", "backendFramework": "vllm"}},
        },
    )
    status = {"phase": phase, "checkpointID": "5f0c6a0e2b9d4e7f8a1b2c3d4e5f6a7b"}
    await cluster.patch_status(CHECKPOINT.key("team-a", CHECKPOINT_NAME), {"status": status})


def is_restore_target(pod: dict[str, Any]) -> bool:
    return pod["metadata"]["labels"].get("nvidia.com/snapshot-is-restore-target") == "true"


async def test_a_candidate_created_once_its_checkpoint_is_ready_is_stored_restored() -> None:
    # given a cluster with the operator's webhooks, the checkpoint gate on, and a Ready checkpoint
    cluster = MemoryCluster(namespaces=["team-a"], admission=webhook_chain(GATE_ON))
    await with_checkpoint(cluster, "Ready")

    # when a controller creates the candidate
    created = await cluster.create(POD, candidate_pod())

    # then it is stored shaped to restore, and stays so when it is updated later
    assert is_restore_target(created)
    assert "nvidia.com/dynamo-checkpoint-restore-candidate" not in created["metadata"]["annotations"]
    created["metadata"]["labels"]["extra"] = "1"
    updated = await cluster.replace(POD, created)
    assert is_restore_target(updated) and updated["spec"] == created["spec"]


@pytest.mark.parametrize(
    ("gate", "phase"),
    [(True, "Creating"), (True, None), (False, "Ready")],
)
async def test_a_candidate_is_stored_as_it_came_unless_the_gate_is_on_and_its_checkpoint_ready(
    gate: bool, phase: str | None
) -> None:
    # given a cluster whose checkpoint is not Ready, missing, or whose gate is off
    settings = AdmissionSettings(checkpoint=CheckpointConfig(enabled=gate))
    cluster = MemoryCluster(namespaces=["team-a"], admission=webhook_chain(settings))
    if phase is not None:
        await with_checkpoint(cluster, phase)

    # when the candidate is created, then it is stored as it came: cold, still a candidate
    created = await cluster.create(POD, candidate_pod())
    assert not is_restore_target(created)
    assert created["metadata"]["annotations"]["nvidia.com/dynamo-checkpoint-restore-candidate"] == "true"
    assert created["spec"]["containers"] == candidate_pod()["spec"]["containers"]
