"""kube-controller-manager's Deployment and ReplicaSet controllers, simulated: rollouts and status."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from dgd.cluster.memory.store import Change
from dgd.cluster.resources import DEPLOYMENT, REPLICA_SET
from dgd.messages.base import JSONObject
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.world.pods import is_active, is_ready
from dgd.sim.world.settings import WorldSettings
from tests.unit.sim.builders import NS, condition, pods

pytestmark = pytest.mark.anyio

FAST = WorldSettings(schedule_delay=1, ready_delay=30, termination_delay=5)


def deployment(replicas: int = 3, image: str = "v1", **extra: Any) -> JSONObject:
    """The Deployment ``web`` of ``replicas`` pods of ``image``, with ``extra`` in its spec."""
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
        "spec": spec | extra,
    }


def rolling(surge: int | str, unavailable: int | str) -> JSONObject:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}


async def web(sim: SimulatedCluster) -> JSONObject:
    return await sim.cluster.get(DEPLOYMENT.key(NS, "web"))


async def replica_sets(sim: SimulatedCluster) -> list[JSONObject]:
    listed = (await sim.cluster.list(REPLICA_SET, namespace=NS)).items
    return sorted(listed, key=lambda rs: str(rs["metadata"]["creationTimestamp"]) + rs["metadata"]["name"])


async def change(sim: SimulatedCluster, edit: Callable[[JSONObject], None]) -> None:
    """Replace the Deployment with ``edit`` of its spec, as a user would."""
    current = await web(sim)
    edit(current["spec"])
    await sim.cluster.replace(DEPLOYMENT, current)


def new_image(image: str) -> Callable[[JSONObject], None]:
    def edit(spec: JSONObject) -> None:
        spec["template"]["spec"]["containers"][0]["image"] = image

    return edit


def counts(found: JSONObject) -> tuple[int, ...]:
    status = found.get("status") or {}
    keys = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
    return tuple(int(status.get(key) or 0) for key in keys)


class Sampler:
    """The rollout as the API server stores it, change by change: the pods that exist and are not
    terminating, those of them available (ready: no minReadySeconds), and the ReplicaSets' replicas."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._pods: dict[str, JSONObject] = {}
        self._sets: dict[str, int] = {}
        #: (cluster time, live pods, available pods, ReplicaSets' spec.replicas) after each change
        self.samples: list[tuple[float, int, int, int]] = []

    def hear(self, change: Change) -> None:
        data = change.obj.data
        kind, name = data.get("kind"), data["metadata"]["name"]
        if kind == "ReplicaSet":
            self._sets[name] = 0 if change.type == "DELETED" else int(data["spec"]["replicas"])
        elif kind == "Pod" and change.type == "DELETED":
            self._pods.pop(name, None)
        elif kind == "Pod":
            self._pods[name] = data
        else:
            return
        live = [pod for pod in self._pods.values() if is_active(pod)]
        ready = sum(1 for pod in live if is_ready(pod))
        self.samples.append((self._clock(), len(live), ready, sum(self._sets.values())))


@asynccontextmanager
async def world(settings: WorldSettings = FAST) -> AsyncIterator[tuple[SimulatedCluster, Sampler]]:
    """A simulated cluster with the Deployment model on, and a sampler of its pods."""
    async with SimulatedCluster(settings, deployments=True) as sim, anyio.create_task_group() as group:
        sampler = Sampler(sim.elapsed)
        sim.observe(group, sampler.hear)
        yield sim, sampler
        group.cancel_scope.cancel()


async def test_a_deployment_reaches_its_ready_available_pods_and_says_so() -> None:
    async with world() as (sim, _):
        # Given a Deployment of 3
        await sim.cluster.create(DEPLOYMENT, deployment(3))

        # When a second passes, it has one ReplicaSet, and is not yet available
        await sim.run_for(1)
        early = (await web(sim))["status"]["conditions"]
        assert condition(early, "Available") == ("False", "MinimumReplicasUnavailable")
        assert condition(early, "Progressing") == ("True", "ReplicaSetUpdated")

        # When its pods are ready
        await sim.run_for(31)

        # Then its status says so, as kube-controller-manager writes it
        done = await web(sim)
        assert counts(done) == (3, 3, 3, 3, 0)
        assert done["status"]["observedGeneration"] == 1
        assert condition(done["status"]["conditions"], "Available") == ("True", "MinimumReplicasAvailable")
        (rs,) = await replica_sets(sim)
        digest = rs["metadata"]["labels"]["pod-template-hash"]
        progressing = next(c for c in done["status"]["conditions"] if c["type"] == "Progressing")
        assert (progressing["status"], progressing["reason"]) == ("True", "NewReplicaSetAvailable")
        assert progressing["message"] == f'ReplicaSet "web-{digest}" has successfully progressed.'
        assert done["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"

        # And its ReplicaSet is named, labelled, selected and owned as a Deployment's is
        assert rs["metadata"]["name"] == f"web-{digest}"
        assert rs["metadata"]["ownerReferences"][0]["uid"] == done["metadata"]["uid"]
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": digest}
        assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", "pod-template-hash": digest}
        assert rs["status"] == {
            "replicas": 3,
            "fullyLabeledReplicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "observedGeneration": 1,
        }
        annotations = rs["metadata"]["annotations"]
        assert annotations["deployment.kubernetes.io/desired-replicas"] == "3"
        assert annotations["deployment.kubernetes.io/max-replicas"] == "4"

        # And so are its pods
        made = await pods(sim.cluster)
        assert len(made) == 3
        for pod in made:
            assert pod["metadata"]["name"].startswith(f"web-{digest}-")
            assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": digest}
            assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]


@pytest.mark.parametrize(
    ("replicas", "strategy", "most", "fewest"),
    [(4, None, 5, 3), (3, rolling(2, 0), 5, 3), (3, rolling(0, 1), 3, 2), (10, rolling("30%", "30%"), 13, 7)],
)
async def test_a_template_change_rolls_within_max_surge_and_max_unavailable(
    replicas: int, strategy: JSONObject | None, most: int, fewest: int
) -> None:
    async with world() as (sim, sampler):
        # Given a ready Deployment (the default strategy: 25% surge, 25% unavailable)
        extra = {"strategy": strategy} if strategy else {}
        await sim.cluster.create(DEPLOYMENT, deployment(replicas, **extra))
        await sim.run_for(32)
        (old,) = await replica_sets(sim)

        # When its template changes, and the rollout runs
        start = len(sampler.samples)
        await change(sim, new_image("v2"))
        await sim.run_for(300)

        # Then after no change were there more pods (or ReplicaSet replicas) than replicas + surge,
        # or fewer available than replicas - unavailable
        during = sampler.samples[start:]
        assert max(live for _, live, _, _ in during) == most
        assert max(sized for _, _, _, sized in during) == most
        assert min(available for _, _, available, _ in during) == fewest

        # And it completed: the new ReplicaSet at all replicas, the old one at 0
        old_now, new = await replica_sets(sim)
        assert old_now["metadata"]["name"] == old["metadata"]["name"]
        assert (old_now["spec"]["replicas"], new["spec"]["replicas"]) == (0, replicas)
        assert new["status"]["availableReplicas"] == replicas
        done = await web(sim)
        assert counts(done) == (replicas, replicas, replicas, replicas, 0)
        assert condition(done["status"]["conditions"], "Progressing") == ("True", "NewReplicaSetAvailable")
        assert done["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
