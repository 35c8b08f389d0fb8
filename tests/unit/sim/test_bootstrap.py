"""What a simulated cluster starts with: namespaces, ClusterRoles, the MPI secret, discovery."""

from __future__ import annotations

import pytest

from dgd.cluster.resources import CLUSTER_ROLE, NAMESPACE, SECRET
from dgd.messages.config import OperatorConfig, RBACConfig
from dgd.sim.cluster import GROVE, SimulatedCluster
from dgd.sim.world.settings import WorldSettings

pytestmark = pytest.mark.anyio


async def test_the_cluster_starts_with_the_objects_the_default_operator_config_names() -> None:
    async with SimulatedCluster(WorldSettings(namespaces=("team-a",))) as sim:
        namespaces = [ns["metadata"]["name"] for ns in (await sim.cluster.list(NAMESPACE)).items]
        roles = [role["metadata"]["name"] for role in (await sim.cluster.list(CLUSTER_ROLE)).items]
        secret = await sim.cluster.get(SECRET.key("dynamo-system", "mpi-run-ssh-secret"))

    assert namespaces == [
        "default",
        "dynamo-system",
        "kube-node-lease",
        "kube-public",
        "kube-system",
        "team-a",
    ]
    assert roles == ["dynamo-operator-dgdr-profiling", "dynamo-operator-epp", "dynamo-operator-planner"]
    assert set(secret["data"]) == {"private.key", "private.key.pub"}


async def test_cluster_roles_follow_the_operator_configuration() -> None:
    config = OperatorConfig(rbac=RBACConfig(planner_cluster_role_name="p", epp_cluster_role_name="e"))
    async with SimulatedCluster(config=config) as sim:
        roles = [role["metadata"]["name"] for role in (await sim.cluster.list(CLUSTER_ROLE)).items]
        planner = await sim.cluster.get(CLUSTER_ROLE.key(None, "p"))
    assert roles == ["dynamo-operator-dgdr-profiling", "e", "p"]
    assert {
        "apiGroups": ["nvidia.com"],
        "resources": ["dynamographdeploymentscalingadapters/scale"],
        "verbs": ["patch"],
    } in planner["rules"]


async def test_discovery_serves_grove_by_default_and_grove_runs() -> None:
    async with SimulatedCluster() as sim:
        assert sim.discovery.serves("grove.io", "v1alpha1")
        assert sim.discovery.serves("nvidia.com")
        assert not sim.discovery.serves("leaderworkerset.x-k8s.io")
        assert sim.system.lookup(GROVE) is not None


async def test_a_cluster_without_grove_serves_no_grove_group_and_runs_no_grove_controller() -> None:
    async with SimulatedCluster(WorldSettings(served_groups=("nvidia.com/v1beta1",))) as sim:
        assert not sim.discovery.serves("grove.io")
        assert sim.system.lookup(GROVE) is None
