"""The simulated scheduler and kubelets: admission by capacity, binding, start and termination."""

from __future__ import annotations

import pytest

from dgd.cluster.resources import POD
from dgd.sim.cluster import PODS, SimulatedCluster
from dgd.sim.world.pods import GROVE_GATE, KUBELET_FINALIZER, pod_condition, pod_manifest
from dgd.sim.world.settings import WorldSettings
from tests.unit.sim.builders import NS, POD_SPEC, phases, pods

pytestmark = pytest.mark.anyio

SETTINGS = WorldSettings(schedule_delay=2, ready_delay=10, termination_delay=5)


def manifest(name: str, *, gated: bool = False) -> dict[str, object]:
    pod = pod_manifest(
        namespace=NS,
        generate_name="unused-",
        labels={"app": name},
        annotations=None,
        spec=POD_SPEC,
        owner=None,
        gated=gated,
    )
    pod["metadata"]["name"] = name
    return pod


async def test_a_pod_is_bound_after_the_schedule_delay_and_ready_after_the_ready_delay() -> None:
    async with SimulatedCluster(SETTINGS) as sim:
        # Given a new pod
        await sim.cluster.create(POD, manifest("p"))

        # When 2 seconds pass, it is bound but not running
        await sim.run_for(2)
        bound = await sim.cluster.get(POD.key(NS, "p"))
        assert bound["spec"]["nodeName"] == "sim-node"
        assert bound["status"]["phase"] == "Pending"
        assert (pod_condition(bound, "PodScheduled") or {}).get("status") == "True"

        # When 10 more seconds pass, it runs and is ready
        await sim.run_for(10)
        ready = await sim.cluster.get(POD.key(NS, "p"))
        assert ready["status"]["phase"] == "Running"
        assert (pod_condition(ready, "Ready") or {}).get("status") == "True"


async def test_pods_beyond_capacity_wait_and_are_admitted_oldest_first_when_room_frees() -> None:
    async with SimulatedCluster(
        WorldSettings(schedule_delay=2, ready_delay=10, termination_delay=5, capacity=1)
    ) as sim:
        # Given room for one pod, a running pod, then a gated and an ungated pod waiting
        await sim.cluster.create(POD, manifest("first"))
        await sim.run_for(1)
        await sim.cluster.create(POD, manifest("gated", gated=True))
        await sim.run_for(1)
        await sim.cluster.create(POD, manifest("plain"))
        await sim.run_for(20)

        # Then the gated pod keeps its gate and the ungated one is Unschedulable
        gated = await sim.cluster.get(POD.key(NS, "gated"))
        plain = await sim.cluster.get(POD.key(NS, "plain"))
        assert gated["spec"]["schedulingGates"] == [{"name": GROVE_GATE}]
        assert (pod_condition(plain, "PodScheduled") or {}).get("reason") == "Unschedulable"

        # When the running pod is deleted and has terminated
        await sim.cluster.delete(POD.key(NS, "first"))
        await sim.run_for(5)

        # Then the older waiting pod (the gated one) is admitted and bound; the other still waits
        gated = await sim.cluster.get(POD.key(NS, "gated"))
        plain = await sim.cluster.get(POD.key(NS, "plain"))
        assert "schedulingGates" not in gated["spec"] and gated["spec"]["nodeName"] == "sim-node"
        assert "nodeName" not in plain["spec"]


async def test_a_deleted_pod_lingers_for_the_termination_delay_then_reaches_a_terminal_phase_and_goes() -> (
    None
):
    async with SimulatedCluster(SETTINGS) as sim:
        # Given a running pod, held by the simulated kubelet's finalizer
        await sim.cluster.create(POD, manifest("p"))
        await sim.run_for(12)
        assert KUBELET_FINALIZER in (await sim.cluster.get(POD.key(NS, "p")))["metadata"]["finalizers"]

        # When it is deleted, it is still running 4 seconds later
        await sim.cluster.delete(POD.key(NS, "p"))
        await sim.run_for(4)
        assert phases(await pods(sim.cluster)) == ["Running"]

        # Then after the termination delay it has terminated and is gone
        seen: list[str] = []
        async with sim.cluster.watch(
            POD, namespace=NS, resource_version=sim.cluster.resource_version
        ) as stream:
            await sim.run_for(1)
            async for event in stream:
                seen.append(f"{event.type} {(event.object or {}).get('status', {}).get('phase')}")
                if event.type == "DELETED":
                    break
        assert seen == ["MODIFIED Succeeded", "DELETED Succeeded"]
        assert await pods(sim.cluster) == []


async def test_a_killed_pod_lifecycle_controller_resumes_pending_work() -> None:
    async with SimulatedCluster(SETTINGS) as sim:
        # Given a pod created, and the pod controller killed before it is bound
        await sim.cluster.create(POD, manifest("p"))
        await sim.run_for(1)
        assert sim.kill(PODS)

        # When time passes
        await sim.run_for(20)

        # Then the pod still got bound and started
        assert phases(await pods(sim.cluster)) == ["Running"]
