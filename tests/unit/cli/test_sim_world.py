"""``dgd-operator sim world``: the world models against an API server they reach only over HTTP.

The API server is the HTTP facade over a memory cluster, served in this process with the CRDs and
nothing else running (``sim serve --no-world``); ``sim world`` runs as a subprocess with a
kubeconfig, as a user would run it against any cluster; the operator's actor tree runs in this
process over the kube adapter. The aggregated example then reaches ``successful`` with pods only
``sim world`` made, and the command exits 0 on SIGTERM.
"""

from __future__ import annotations

import contextlib
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from aiohttp import web
from aiohttp.typedefs import Handler

from dgd.actors.tree import operator_children
from dgd.cli import main
from dgd.cli.world import _controllers as world_controllers
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DEFAULT_RESOURCES, DEVICE_CLASS, DGD, POD
from dgd.domain.crds import all_crds
from dgd.domain.gates import effective_config, resolve_gates, served_apis
from dgd.messages.config import OperatorConfig
from dgd.messages.timestamps import wall_clock
from dgd.runtime import ActorSystem, LoopClock
from dgd.sim import WorldSettings
from dgd.sim.apiserver.catalog import CUSTOM_RESOURCE_DEFINITION
from dgd.sim.apiserver.server import Facade, serve, write_kubeconfig
from dgd.sim.key_pool import KeyPool
from dgd.sim.world.bootstrap import bootstrap

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
EXECUTABLE = Path(sys.executable).with_name("dgd-operator")
RESOURCES = (*DEFAULT_RESOURCES, CUSTOM_RESOURCE_DEFINITION)
#: Pods bound and ready within a second of wall-clock time.
FAST = ["--schedule-delay", "0.1", "--ready-delay", "0.5", "--termination-delay", "0.2"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def facade_cluster() -> MemoryCluster:
    """What ``sim serve --no-world`` serves: the starting objects and the CRDs, no controller at all."""
    cluster = MemoryCluster(
        resources=RESOURCES, clock=wall_clock, rng=random.Random(1), namespaces=("elsewhere",)
    )
    await bootstrap(cluster, WorldSettings(), OperatorConfig())
    for crd in all_crds():
        await cluster.create(CUSTOM_RESOURCE_DEFINITION, crd)
    return cluster


async def wait_for(check: Any, seconds: float) -> None:
    with anyio.fail_after(seconds):
        while not await check():
            await anyio.sleep(0.1)


def _requests_to(facade: Facade) -> list[str]:
    """The path of every request ``facade`` is sent from now on, in the order they came."""
    paths: list[str] = []

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        paths.append(request.path)
        return await handler(request)

    facade.app.middlewares.append(record)
    return paths


def _world(kubeconfig: Path, *flags: str) -> subprocess.Popen[str]:
    """``dgd-operator sim world`` on ``kubeconfig`` with the fast timings, its output in one pipe."""
    return subprocess.Popen(
        [str(EXECUTABLE), "sim", "world", "--kubeconfig", str(kubeconfig), *FAST, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def test_sim_world_brings_the_aggregated_example_to_successful_over_http(tmp_path: Path) -> None:
    # given the facade serving a cluster with no controller, and a kubeconfig for it
    server = await facade_cluster()
    kubeconfig = tmp_path / "kubeconfig"
    async with serve(Facade(server, resources=RESOURCES)) as url:
        write_kubeconfig(kubeconfig, url)
        # and `sim world` running against it, and the operator over the kube adapter
        world = _world(kubeconfig)
        try:
            async with await KubeCluster.from_config(kubeconfig, qps=None) as kube:
                config = effective_config(
                    OperatorConfig(),
                    resolve_gates(OperatorConfig(), served_apis(await kube.group_versions())),
                )
                tree = operator_children(kube, config=config, wall=wall_clock, keys=KeyPool(random.Random(2)))
                async with ActorSystem(tree, clock=LoopClock(), random=random.Random(3)):
                    # when the example is applied
                    document = yaml.safe_load((ROOT / "examples" / "agg.yaml").read_text(encoding="utf-8"))
                    document["metadata"]["namespace"] = "default"
                    await kube.create(DGD.as_raw(), document)

                    # then it becomes successful, served by the pods `sim world` created and readied
                    async def successful() -> bool:
                        dgd = await kube.get(DGD.key("default", "demo-agg"))
                        return dgd.status is not None and dgd.status.state == "successful"

                    await wait_for(successful, 60)
                    pods = (await kube.list(POD, namespace="default")).items
                    ready = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
                    assert len(ready) == 3  # the frontend and two workers
                    assert {p["spec"].get("nodeName") for p in ready} == {"sim-node"}
        finally:
            # and it stops cleanly on SIGTERM
            world.send_signal(signal.SIGTERM)
            output, _ = world.communicate(timeout=30)
    assert world.returncode == 0, output
    assert "running pods, grove, dcd, checkpoints in every namespace" in output
    assert output.rstrip().endswith("dgd-operator sim world: stopped")


async def test_sim_world_in_one_namespace_leaves_the_others_alone(tmp_path: Path) -> None:
    # given the facade, and a pod waiting to be scheduled in each of two namespaces
    server = await facade_cluster()
    for namespace in ("default", "elsewhere"):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        }
        await server.create(POD, pod)
    kubeconfig = tmp_path / "kubeconfig"
    facade = Facade(server, resources=RESOURCES)
    requested = _requests_to(facade)
    async with serve(facade) as url:
        write_kubeconfig(kubeconfig, url)
        # when `sim world` runs for one of them, until it has started that namespace's pod
        world = _world(kubeconfig, "--namespace", "default")
        try:

            async def started() -> bool:
                pod = await server.get(POD.key("default", "p"))
                return (pod.get("status") or {}).get("phase") == "Running"

            await wait_for(started, 30)
            # then every pod it read, watched or wrote was in that namespace
            pod_requests = [path for path in requested if path.endswith("/pods") or "/pods/" in path]
            assert pod_requests, requested
            outside = [path for path in pod_requests if not path.startswith("/api/v1/namespaces/default/")]
            assert outside == [], outside
            # and the other namespace's pod was neither scheduled nor started
            other = await server.get(POD.key("elsewhere", "p"))
            assert "nodeName" not in other["spec"] and not (other.get("status") or {}).get("phase")
        finally:
            world.send_signal(signal.SIGTERM)
            output, _ = world.communicate(timeout=30)
    assert world.returncode == 0, output
    assert "in namespace default" in output


def test_sim_world_documents_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    # when asked for help
    with contextlib.suppress(SystemExit):
        main(["sim", "world", "--help"])
    shown = capsys.readouterr().out
    # then every flag is documented
    for flag in (
        "--kubeconfig",
        "--context",
        "--namespace",
        "--world",
        "--schedule-delay",
        "--ready-delay",
        "--termination-delay",
        "--checkpoint-delay",
        "--checkpoint-outcome",
        "--capacity",
        "--deployments",
        "--qps",
        "--burst",
    ):
        assert flag in shown


def test_sim_world_refuses_bad_settings_as_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # when given a negative delay, then it exits 2 and names the problem
    assert main(["sim", "world", "--ready-delay", "-1"]) == 2
    assert "--ready-delay -1.0: expected float >= 0.0" in capsys.readouterr().err


def test_sim_world_exits_1_when_the_api_server_cannot_be_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a kubeconfig for a port nothing listens on
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, "http://127.0.0.1:9")
    # when run, then it exits 1 and says so
    assert main(["sim", "world", "--kubeconfig", str(kubeconfig)]) == 1
    assert "cannot reach the API server" in capsys.readouterr().err


async def test_sim_world_registers_nvidias_gpu_device_class_where_dra_is_served(tmp_path: Path) -> None:
    # given the facade serving DRA (resource.k8s.io/v1) with no DeviceClass yet (started without it)
    server = MemoryCluster(resources=RESOURCES, clock=wall_clock, rng=random.Random(1))
    await bootstrap(server, WorldSettings(served_groups=("nvidia.com/v1beta1",)), OperatorConfig())
    assert not (await server.list(DEVICE_CLASS)).items
    kubeconfig = tmp_path / "kubeconfig"
    async with serve(Facade(server, resources=RESOURCES)) as url:
        write_kubeconfig(kubeconfig, url)
        # when `sim world` runs against it
        world = _world(kubeconfig)
        try:
            # then it registers gpu.nvidia.com, as NVIDIA's GPU DRA driver does on a GPU cluster
            async def registered() -> bool:
                return bool((await server.list(DEVICE_CLASS)).items)

            await wait_for(registered, 30)
            (device_class,) = (await server.list(DEVICE_CLASS)).items
            assert device_class["metadata"]["name"] == "gpu.nvidia.com"
            assert device_class["spec"]["selectors"] == [
                {"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}
            ]
        finally:
            world.send_signal(signal.SIGTERM)
            output, _ = world.communicate(timeout=30)
    assert world.returncode == 0, output


async def test_sim_world_plays_the_deployment_controllers_only_when_asked() -> None:
    # given an API server serving every kind the simulation knows (and no kube-controller-manager)
    cluster = MemoryCluster(resources=RESOURCES)
    served = ["apps/v1", "nvidia.com/v1alpha1"]

    # when sim world picks its controllers without, then with --deployments
    plain = [name for name, _ in await world_controllers(cluster, served)]
    asked = [name for name, _ in await world_controllers(cluster, served, deployments=True)]

    # then only the second plays kube-controller-manager's Deployment and ReplicaSet controllers
    assert "deployments" not in plain and "replicasets" not in plain
    assert asked == [*plain, "deployments", "replicasets"]
