"""kube-controller-manager's Deployment and ReplicaSet controllers, simulated: rollouts and status."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest

from dgd.cluster.memory.store import Change
from dgd.cluster.resources import DEPLOYMENT, REPLICA_SET
from dgd.domain.gates import Gates
from dgd.domain.render.dcd_children import render_dcd_children
from dgd.messages.base import JSONObject
from dgd.messages.config import OperatorConfig
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.world.pods import is_active, is_ready
from dgd.sim.world.settings import WorldSettings
from tests.unit.sim.builders import NS, as_dcd, condition, pods, rendered

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
        #: The reasons the Deployment's Progressing condition gave, in turn
        self.progress: list[str] = []

    def hear(self, change: Change) -> None:
        data = change.obj.data
        kind, name = data.get("kind"), data["metadata"]["name"]
        if kind == "ReplicaSet":
            self._sets[name] = 0 if change.type == "DELETED" else int(data["spec"]["replicas"])
        elif kind == "Pod" and change.type == "DELETED":
            self._pods.pop(name, None)
        elif kind == "Pod":
            self._pods[name] = data
        elif kind == "Deployment":
            self._progressed(data)
            return
        else:
            return
        live = [pod for pod in self._pods.values() if is_active(pod)]
        ready = sum(1 for pod in live if is_ready(pod))
        self.samples.append((self._clock(), len(live), ready, sum(self._sets.values())))

    def _progressed(self, data: JSONObject) -> None:
        found = condition((data.get("status") or {}).get("conditions"), "Progressing")
        if found is not None and self.progress[-1:] != [found[1]]:
            self.progress.append(found[1])


@asynccontextmanager
async def world(settings: WorldSettings = FAST) -> AsyncIterator[tuple[SimulatedCluster, Sampler]]:
    """A simulated cluster with the Deployment model on, and a sampler of its pods."""
    async with SimulatedCluster(settings, deployments=True) as sim, anyio.create_task_group() as group:
        sampler = Sampler(sim.elapsed)
        sim.observe(group, sampler.hear)
        yield sim, sampler
        group.cancel_scope.cancel()


async def test_a_deployment_reaches_its_ready_available_pods_and_says_so() -> None:
    async with world() as (sim, sampler):
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
        assert sampler.progress == ["NewReplicaSetCreated", "ReplicaSetUpdated", "NewReplicaSetAvailable"]

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
            "terminatingReplicas": 0,
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


async def test_recreate_drains_every_old_pod_before_the_new_replica_set_scales_up() -> None:
    async with world() as (sim, sampler):
        # Given a ready Recreate Deployment of 3
        await sim.cluster.create(DEPLOYMENT, deployment(3, strategy={"type": "Recreate"}))
        await sim.run_for(32)

        # When its template changes
        await change(sim, new_image("v2"))
        await sim.run_for(4)

        # Then while the old pods terminate, the old ReplicaSet is at 0 and no new one exists
        during = await pods(sim.cluster)
        assert len(during) == 3 and all(pod["metadata"].get("deletionTimestamp") for pod in during)
        ((old),) = await replica_sets(sim)
        assert old["spec"]["replicas"] == 0
        assert counts(await web(sim))[3] == 0

        # And once they are gone, the new ReplicaSet scales up and its pods become ready
        await sim.run_for(40)
        old_now, new = await replica_sets(sim)
        assert (old_now["spec"]["replicas"], new["spec"]["replicas"]) == (0, 3)
        assert counts(await web(sim)) == (3, 3, 3, 3, 0)
        assert all(
            pod["metadata"]["labels"]["pod-template-hash"] != old["metadata"]["labels"]["pod-template-hash"]
            for pod in await pods(sim.cluster)
        )

        # And at no moment did old and new pods run together
        hashes = [pod["metadata"]["labels"]["pod-template-hash"] for pod in await pods(sim.cluster)]
        assert len(set(hashes)) == 1
        assert max(live for _, live, _, _ in sampler.samples) == 3


async def test_scaling_up_and_down_resizes_the_one_replica_set() -> None:
    async with world() as (sim, _):
        # Given a ready Deployment of 3
        await sim.cluster.create(DEPLOYMENT, deployment(3))
        await sim.run_for(32)

        # When it is scaled to 5
        await change(sim, lambda spec: spec.update(replicas=5))
        await sim.run_for(32)

        # Then its ReplicaSet (the same one) has 5 ready pods, sized for 5
        (rs,) = await replica_sets(sim)
        assert (rs["spec"]["replicas"], rs["status"]["availableReplicas"]) == (5, 5)
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "5"
        assert counts(await web(sim)) == (5, 5, 5, 5, 0)

        # When it is scaled to 2
        await change(sim, lambda spec: spec.update(replicas=2))
        await sim.run_for(1)

        # Then 3 pods terminate at once, and once gone 2 are left
        assert counts(await web(sim)) == (2, 2, 2, 2, 0)
        assert len(await pods(sim.cluster)) == 5
        await sim.run_for(5)
        assert len(await pods(sim.cluster)) == 2
        assert (await web(sim))["status"]["observedGeneration"] == 3


async def test_a_paused_deployment_does_not_roll_until_it_is_resumed() -> None:
    async with world() as (sim, sampler):
        # Given a ready Deployment of 2, then paused
        await sim.cluster.create(DEPLOYMENT, deployment(2))
        await sim.run_for(32)
        await change(sim, lambda spec: spec.update(paused=True))
        await sim.run_for(1)
        assert condition((await web(sim))["status"]["conditions"], "Progressing") == (
            "Unknown",
            "DeploymentPaused",
        )

        # When its template changes, and a while passes
        await change(sim, new_image("v2"))
        await sim.run_for(120)

        # Then no new ReplicaSet was made, its pods are the old ones, and the change is observed
        (rs,) = await replica_sets(sim)
        assert len(await pods(sim.cluster)) == 2
        paused = await web(sim)
        assert paused["status"]["observedGeneration"] == paused["metadata"]["generation"]
        assert counts(paused) == (2, 0, 2, 2, 0)

        # When it is resumed
        await change(sim, lambda spec: spec.update(paused=False))

        # Then it rolls to the new template
        await sim.run_for(120)
        assert sampler.progress[-5:] == [
            "DeploymentPaused",
            "DeploymentResumed",
            "NewReplicaSetCreated",
            "ReplicaSetUpdated",
            "NewReplicaSetAvailable",
        ]
        old, new = await replica_sets(sim)
        assert old["metadata"]["name"] == rs["metadata"]["name"]
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 2)
        assert counts(await web(sim)) == (2, 2, 2, 2, 0)


async def test_a_rollout_that_cannot_progress_exceeds_its_progress_deadline() -> None:
    # Given room for 3 pods only, and a ready Deployment of 3 that surges 1 and may lose none
    async with world(msgspec.structs.replace(FAST, capacity=3)) as (sim, _):
        document = deployment(3, strategy=rolling(1, 0), progressDeadlineSeconds=60)
        await sim.cluster.create(DEPLOYMENT, document)
        await sim.run_for(32)

        # When its template changes: the surge pod cannot be scheduled
        await change(sim, new_image("v2"))
        await sim.run_for(30)
        progressing = await web(sim)
        assert condition(progressing["status"]["conditions"], "Progressing")[0] == "True"

        # Then once the deadline has passed without progress, it says so, still available
        await sim.run_for(40)
        stuck = await web(sim)
        conditions = stuck["status"]["conditions"]
        _, new = await replica_sets(sim)
        assert condition(conditions, "Progressing") == ("False", "ProgressDeadlineExceeded")
        message = next(c["message"] for c in conditions if c["type"] == "Progressing")
        assert message == f'ReplicaSet "{new["metadata"]["name"]}" has timed out progressing.'
        assert condition(conditions, "Available") == ("True", "MinimumReplicasAvailable")
        assert counts(stuck) == (4, 1, 3, 3, 1)


async def test_old_replica_sets_beyond_the_revision_history_limit_are_deleted() -> None:
    async with world() as (sim, _):
        # Given a Deployment of 1 that keeps 1 old revision
        await sim.cluster.create(DEPLOYMENT, deployment(1, revisionHistoryLimit=1))
        await sim.run_for(32)

        # When its template changes twice, each rollout completing
        for image in ("v2", "v3"):
            await change(sim, new_image(image))
            await sim.run_for(60)

        # Then the first ReplicaSet is gone: the new one and one old one at 0 are left
        old, new = await replica_sets(sim)
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 1)
        revisions = [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in (old, new)]
        assert revisions == ["2", "3"]


async def test_pods_count_as_available_only_after_min_ready_seconds() -> None:
    async with world() as (sim, _):
        # Given a Deployment of 2 whose pods must be ready for 20 seconds to be available
        await sim.cluster.create(DEPLOYMENT, deployment(2, minReadySeconds=20))

        # When its pods are ready
        await sim.run_for(32)

        # Then they are ready but not yet available
        assert counts(await web(sim)) == (2, 2, 2, 0, 2)

        # And once 20 seconds have passed, they are
        await sim.run_for(21)
        assert counts(await web(sim)) == (2, 2, 2, 2, 0)
        (rs,) = await replica_sets(sim)
        assert (rs["spec"]["minReadySeconds"], rs["status"]["availableReplicas"]) == (20, 2)


async def test_the_deployment_model_is_off_by_default() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a cluster started as the simulation starts it today
        # When a Deployment is created
        await sim.cluster.create(DEPLOYMENT, deployment(2))
        await sim.run_for(32)

        # Then nothing makes ReplicaSets or pods of it (the stand-in DCD controller makes the pods)
        assert await replica_sets(sim) == []
        assert await pods(sim.cluster) == []


async def test_the_deployment_the_dcd_controller_renders_reaches_its_ready_pods() -> None:
    # Given the Deployment the DCD controller renders for the worker of upstream's aggregated vLLM example
    documents = rendered("examples/backends/vllm/deploy/agg.yaml", pathway="component")
    worker = next(
        as_dcd(o)
        for o in documents
        if o["kind"] == "DynamoComponentDeployment" and o["spec"]["type"] == "worker"
    )
    children = render_dcd_children(worker, OperatorConfig(), gates=Gates())
    body = next(child.body for child in children.children if child.body["kind"] == "Deployment")
    body = {**body, "metadata": {**body["metadata"], "namespace": NS, "ownerReferences": None}}

    async with world() as (sim, _):
        # When it is created
        created = await sim.cluster.create(DEPLOYMENT, body)
        await sim.run_for(32)

        # Then its pods are ready, carrying the DCD's selector label, and it says it is complete
        done = await sim.cluster.get(DEPLOYMENT.key(NS, created["metadata"]["name"]))
        replicas = int(body["spec"].get("replicas", 1))
        assert counts(done) == (replicas, replicas, replicas, replicas, 0)
        assert condition(done["status"]["conditions"], "Progressing") == ("True", "NewReplicaSetAvailable")
        selector = f"nvidia.com/selector={worker.metadata.name}"
        assert len(await pods(sim.cluster, selector)) == replicas


async def test_rolling_back_to_an_old_template_reuses_its_replica_set_under_the_next_revision() -> None:
    async with world() as (sim, _):
        # Given a Deployment of 1 rolled from v1 to v2
        await sim.cluster.create(DEPLOYMENT, deployment(1))
        await sim.run_for(32)
        await change(sim, new_image("v2"))
        await sim.run_for(60)

        # When its template goes back to v1
        await change(sim, new_image("v1"))
        await sim.run_for(60)

        # Then v1's ReplicaSet runs again, renumbered, remembering the revision it had
        first, second = await replica_sets(sim)
        assert (first["spec"]["replicas"], second["spec"]["replicas"]) == (1, 0)
        annotations = first["metadata"]["annotations"]
        assert annotations["deployment.kubernetes.io/revision"] == "3"
        assert annotations["deployment.kubernetes.io/revision-history"] == "1"
        assert (await web(sim))["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


async def test_two_deployments_of_one_namespace_keep_to_their_own_replica_sets_and_pods() -> None:
    async with world() as (sim, _):
        # Given two Deployments side by side, the second selecting by a set-based expression
        await sim.cluster.create(DEPLOYMENT, deployment(2))
        other = deployment(1)
        other["metadata"]["name"] = "api"
        other["spec"]["selector"] = {
            "matchExpressions": [{"key": "app", "operator": "In", "values": ["api"]}]
        }
        other["spec"]["template"]["metadata"]["labels"] = {"app": "api"}
        await sim.cluster.create(DEPLOYMENT, other)

        # When their pods are ready, and the first rolls
        await sim.run_for(32)
        await change(sim, new_image("v2"))
        await sim.run_for(120)

        # Then each has its own pods and says so; the second never rolled
        assert counts(await web(sim)) == (2, 2, 2, 2, 0)
        api = await sim.cluster.get(DEPLOYMENT.key(NS, "api"))
        assert counts(api) == (1, 1, 1, 1, 0)
        assert api["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        assert len(await pods(sim.cluster, "app=web")) == 2
        assert len(await pods(sim.cluster, "app=api")) == 1
