"""The Grove program built from its parts with fakes, no actor system: the order of dgd-domain §9.1,
what it writes, and what a failed step leaves in the result."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.dgd.programs.grove import GroveProgram
from dgd.actors.dgd.programs.provisioning import Provisioning
from dgd.cluster.resources import DGD, PCS
from dgd.domain.admission.config import load_config
from dgd.domain.projection import FAILED_TO_RECONCILE, PROVIDER_UNAVAILABLE
from dgd.messages.config import OperatorConfig
from tests.unit.actors.programs.fakes import NOW, World, manifest, world

pytestmark = pytest.mark.anyio

GROVE_ON = load_config("orchestrators: {grove: {enabled: true}}")
GROVE_OFF = load_config("orchestrators: {grove: {enabled: false}}")


def program(w: World, config: OperatorConfig = GROVE_ON, **parts: Any) -> GroveProgram:
    return GroveProgram(
        config=config,
        reader=w.reader,
        syncer=w.syncer,
        annotator=w.writer,
        recorder=w.recorder,
        now=lambda: NOW,
        provisioning=parts.get("provisioning") or w.provisioning(),
        restart=w.restart(),
        conclusion=parts.get("conclusion") or w.conclusion(),
        grove_scaler=w.scaler(),
        topology_status=w.topology(),
    )


async def test_a_new_graph_gets_its_pod_clique_set_after_its_shared_resources_and_restart() -> None:
    # given a stored Grove graph and a program of fakes
    w = await world()
    dgd = await w.store(manifest(grove=True))

    # when the program runs once
    result = await program(w).reconcile(dgd)

    # then the children were asked in the contract's order (§9.1 steps 4-9, the topology last)
    assert w.asked == [
        ("shared-resources", "EnsureShared"),
        ("checkpoint-storage", "ResolveCheckpoints"),
        ("shared-resources", "EnsureSharedAfterCheckpoints"),
        ("restart", "ResolveRestart"),
        ("grove-scaler", "Scale"),
        ("scaling-adapters", "ReconcileAdapters"),
        ("topology-status", "Project"),
    ]
    # and the PodCliqueSet exists, owned by the graph, which waits for it
    pcs = await w.cluster.get(PCS.key("team-a", "demo"))
    assert pcs.metadata.owner_references[0].uid == dgd.metadata.uid
    assert result.failure is None
    assert result.status.state == "pending"
    # and its worker hash was recorded on the graph, whose status the program did not write
    stored = await w.cluster.get(DGD.key("team-a", "demo"))
    assert "nvidia.com/current-worker-hash-v2" in (stored.metadata.annotations or {})
    assert result.dgd == stored
    assert stored.status is None


async def test_grove_disabled_fails_terminally_before_any_step() -> None:
    # given a graph on the Grove pathway of an operator whose Grove gate is off
    w = await world()
    dgd = await w.store(manifest(grove=True))

    # when the program runs
    result = await program(w, GROVE_OFF).reconcile(dgd)

    # then no child was asked, nothing was written, and the failure is terminal
    assert w.asked == []
    assert result.failure is not None and result.failure.terminal
    assert result.failure.reason == PROVIDER_UNAVAILABLE
    assert result.dgd == dgd


async def test_a_refused_shared_step_fails_the_run_with_its_message_and_writes_no_workload() -> None:
    # given shared resources that refuse
    w = await world()
    dgd = await w.store(manifest(grove=True))
    refusing = w.child("shared-resources", lambda message: StepFailed("no room for the RBAC"))
    checkpoints = w.child("checkpoint-storage", lambda message: None)

    # when the program runs
    result = await program(w, provisioning=Provisioning(refusing, checkpoints)).reconcile(dgd)

    # then the run failed there (the topology projection still ran), and no PodCliqueSet was written
    assert [name for name, _ in w.asked] == ["shared-resources", "topology-status"]
    assert result.failure is not None and result.failure.reason == FAILED_TO_RECONCILE
    assert result.failure.message == "no room for the RBAC"
    assert result.status.state == "failed"
    assert (await w.cluster.list(PCS, namespace="team-a")).items == []
