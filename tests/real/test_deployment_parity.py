"""The simulated world's Deployment model against kube-controller-manager's own controllers.

Each scenario runs twice: on the real tier, where kube-controller-manager's Deployment and
ReplicaSet controllers act and ``sim world`` only runs the pods, and on a memory cluster with the
Deployment model on. The scenarios: a Deployment created, rolled twice under a revision history of
1, rolled back to the revision kept, then scaled down; and one paused, changed, resumed, rolled to
pods that never run until its progress deadline passes, then resized while stuck. After each step
has settled, the Deployment and its ReplicaSets are read back; with the names' hashes (ours are not
kube-controller-manager's digits) and the times taken out, both say the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DEPLOYMENT, REPLICA_SET
from dgd.messages.base import JSONObject
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.world.settings import WorldSettings
from tests.real.harness import RealCluster, world

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

#: The memory side's pods, as fast as ``sim world``'s on the real tier.
FAST = WorldSettings(schedule_delay=0.1, ready_delay=0.5, termination_delay=0.2, retry_delay=0.2)
REVISION = "deployment.kubernetes.io/revision"
COMPLETE, TIMED_OUT = "NewReplicaSetAvailable", "ProgressDeadlineExceeded"


def deployment(namespace: str) -> JSONObject:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "registry.example/web:1"}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "revisionHistoryLimit": 1,
        },
    }


async def settled(cluster: Cluster, namespace: str, reason: str, available: int | None = None) -> bool:
    """The Deployment's ``Progressing`` at ``reason`` for its generation (complete, for
    ``NewReplicaSetAvailable``), with ``available`` replicas if given, and every ReplicaSet at its
    size and observed."""
    found = await cluster.get(DEPLOYMENT.key(namespace, "web"))
    status, replicas = found.get("status") or {}, found["spec"]["replicas"]
    progressing = [c for c in status.get("conditions") or () if c["type"] == "Progressing"]
    if status.get("observedGeneration") != found["metadata"]["generation"] or not progressing:
        return False
    if progressing[0]["reason"] != reason:
        return False
    counts = [status.get(key, 0) for key in ("replicas", "updatedReplicas", "availableReplicas")]
    if reason == COMPLETE and counts != [replicas] * 3:
        return False
    if available is not None and status.get("availableReplicas", 0) != available:
        return False
    for rs in (await cluster.list(REPLICA_SET, namespace=namespace)).items:
        rs_status = rs.get("status") or {}
        if rs_status.get("observedGeneration") != rs["metadata"]["generation"]:
            return False
        if rs_status.get("replicas", 0) != rs["spec"]["replicas"]:
            return False
    return True


def _normalized(obj: Any, names: dict[str, str]) -> Any:
    """``obj`` without times, with hashes renamed, and ``terminatingReplicas`` only said to be there:
    the real tier's pods outlive their deletion (no kubelet ends them), the memory cluster's end."""
    if isinstance(obj, dict):
        timeless = {k: v for k, v in obj.items() if k not in ("lastUpdateTime", "lastTransitionTime")}
        if "terminatingReplicas" in timeless:
            timeless["terminatingReplicas"] = "counted"
        return {k: _normalized(v, names) for k, v in timeless.items()}
    if isinstance(obj, list):
        return [_normalized(item, names) for item in obj]
    if isinstance(obj, str):
        for name, stand_in in names.items():
            obj = obj.replace(name, stand_in)
    return obj


async def snapshot(cluster: Cluster, namespace: str) -> JSONObject:
    """What kube-controller-manager wrote, with each ReplicaSet's hash named by its revision."""
    found = await cluster.get(DEPLOYMENT.key(namespace, "web"))
    sets = (await cluster.list(REPLICA_SET, namespace=namespace)).items
    names = {
        rs["metadata"]["labels"]["pod-template-hash"]: f"r{rs['metadata']['annotations'][REVISION]}"
        for rs in sets
    }
    written: JSONObject = {
        "deployment": {
            "annotations": found["metadata"].get("annotations"),
            "generation": found["metadata"]["generation"],
            "status": found["status"],
        },
        "replicaSets": sorted(
            (
                {
                    "name": rs["metadata"]["name"],
                    "labels": rs["metadata"]["labels"],
                    "annotations": rs["metadata"]["annotations"],
                    "owner": rs["metadata"]["ownerReferences"][0]["kind"],
                    "replicas": rs["spec"]["replicas"],
                    "selector": rs["spec"]["selector"],
                    "templateLabels": rs["spec"]["template"]["metadata"]["labels"],
                    "status": {k: v for k, v in rs["status"].items() if k != "observedGeneration"},
                }
                for rs in sets
            ),
            key=lambda rs: str(rs["annotations"][REVISION]),
        ),
    }
    normalized: JSONObject = _normalized(written, names)
    return normalized


Step = Callable[[JSONObject], None]


def image(tag: str) -> Step:
    def edit(spec: JSONObject) -> None:
        spec["template"]["spec"]["containers"][0]["image"] = f"registry.example/web:{tag}"

    return edit


def scale(replicas: int) -> Step:
    def edit(spec: JSONObject) -> None:
        spec["replicas"] = replicas

    return edit


def paused(value: bool) -> Step:
    def edit(spec: JSONObject) -> None:
        spec["paused"] = value

    return edit


def held(spec: JSONObject) -> None:
    """A template whose pods wait for a scheduling gate nobody lifts: they never run."""
    spec["template"]["spec"]["schedulingGates"] = [{"name": "example.com/never"}]


#: Each scenario: its Deployment's spec, then each change with the ``Progressing`` reason it settles at.
#: (A step may also say how many replicas are available once it has settled.)
SCENARIOS: dict[str, tuple[JSONObject, list[tuple[Any, ...]]]] = {
    "create, roll twice under a history of 1, roll back, scale down": (
        {"revisionHistoryLimit": 1},
        [
            (None, COMPLETE),
            (image("2"), COMPLETE),
            (image("3"), COMPLETE),
            (image("2"), COMPLETE),  # back to a kept revision: its ReplicaSet again, renumbered
            (scale(2), COMPLETE),
        ],
    ),
    "pause, change, resume, then a rollout that cannot progress": (
        {"progressDeadlineSeconds": 5},
        [
            (None, COMPLETE),
            (paused(True), "DeploymentPaused"),
            (image("2"), "DeploymentPaused"),
            (paused(False), COMPLETE),
            (held, TIMED_OUT),
            # Resized while stuck: 3 more shared 2 to the old ReplicaSet, 1 to the new one; the old
            # one's become available (progress), and then the deadline passes again.
            (scale(6), TIMED_OUT, 5),
        ],
    ),
}


async def scenario(
    cluster: Cluster, namespace: str, name: str, sleep: Callable[[float], Awaitable[None]]
) -> list[JSONObject]:
    """The scenario ``name``: a snapshot after each step has settled."""
    extra, steps = SCENARIOS[name]
    document = deployment(namespace)
    document["spec"] |= extra
    await cluster.create(DEPLOYMENT, document)
    snapshots = []
    for step, reason, *available in steps:
        if step is not None:
            current = await cluster.get(DEPLOYMENT.key(namespace, "web"))
            step(current["spec"])
            await cluster.replace(DEPLOYMENT, current)
        with anyio.fail_after(90):
            while not await settled(cluster, namespace, reason, *available):
                await sleep(0.2)
        snapshots.append(await snapshot(cluster, namespace))
    return snapshots


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_the_deployment_model_writes_what_kube_controller_manager_writes(
    name: str, real: RealCluster, tmp_path: Path
) -> None:
    # given the scenario run by kube-controller-manager, with sim world running the pods
    async with world(real, tmp_path):
        theirs = await scenario(real.kube, real.namespace, name, anyio.sleep)

    # when it runs on a memory cluster with the Deployment model on
    async with SimulatedCluster(FAST, deployments=True) as sim:
        ours = await scenario(sim.cluster, "default", name, anyio.sleep)

    # then after every step the Deployment and its ReplicaSets say the same
    for step, (mine, upstream) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == upstream, f"after step {step}"
