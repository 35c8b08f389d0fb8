"""The end-to-end harness: a simulated cluster served over HTTP, and real ``dgd-operator run`` processes.

``serve_cluster`` wires what ``dgd-operator sim serve`` wires — the in-memory API server with the
simulation's starting objects and the CRDs, the simulated Grove, DCD, checkpoint and pod controllers
on the wall clock, the HTTP facade on a free port, a kubeconfig for it — but in the test's own event
loop, so a test reaches what only an in-process caller can: the facade's ``drop_watches`` and
``expire_watches``, the served client's fault rules, compaction, and a fault-free client that reads
the stored objects without going through the facade.

The operator processes are ``tests.e2e.operators``, the watch on what they create
``tests.e2e.recorder``, and every wait ``tests.e2e.eventually``: nothing here sleeps for a fixed time.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dgd.cli.serve import HISTORY, SERVED_RESOURCES
from dgd.cluster.errors import NotFound
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import (
    DGD,
    EVENT,
    LEASE,
)
from dgd.domain.crds import all_crds
from dgd.messages.base import JSONObject
from dgd.messages.config import OperatorConfig
from dgd.messages.timestamps import wall_clock
from dgd.runtime import ActorSystem, ChildSpec, LoopClock, Supervision, Supervisor
from dgd.sim import WorldSettings
from dgd.sim.apiserver.catalog import CUSTOM_RESOURCE_DEFINITION
from dgd.sim.apiserver.server import Facade, serve, write_kubeconfig
from dgd.sim.world.bootstrap import bootstrap
from dgd.sim.world.checkpoint import CheckpointController
from dgd.sim.world.controller import WorldController
from dgd.sim.world.deployment import DeploymentController
from dgd.sim.world.grove import GroveController
from dgd.sim.world.pods import PodLifecycle
from dgd.sim.world.replicaset import ReplicaSetController
from tests.e2e.recorder import owned_children

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_DISAGG = ROOT.parent / "shared/upstream/ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg.yaml"

#: A world fast enough for a test: pods are bound and ready within a second of wall-clock time.
FAST_WORLD = WorldSettings(schedule_delay=0.1, ready_delay=0.5, termination_delay=0.2, retry_delay=0.2)

NS = "default"
LEASE_NS = "dynamo-system"
LEASE_NAME = "dgd-operator"
DGDS = DGD.as_raw()


def example(path: Path, name: str | None = None, *, annotations: dict[str, str] | None = None) -> JSONObject:
    """The DGD manifest at ``path``, in the default namespace, renamed and annotated as asked."""
    manifest: JSONObject = yaml.safe_load(path.read_text(encoding="utf-8"))
    metadata = manifest["metadata"]
    metadata["namespace"] = NS
    if name is not None:
        metadata["name"] = name
    if annotations:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    return manifest


def agg(name: str | None = None) -> JSONObject:
    """``examples/agg.yaml``: a frontend and a two-replica vLLM worker (the Grove pathway)."""
    return example(ROOT / "examples" / "agg.yaml", name)


def component_disagg(name: str | None = None) -> JSONObject:
    """Upstream's disaggregated vLLM graph with Grove turned off for it (the Component pathway)."""
    return example(UPSTREAM_DISAGG, name, annotations={"nvidia.com/enable-grove": "false"})


@dataclass
class ServedCluster:
    """A simulated cluster served over HTTP (see the module).

    ``cluster`` is the client the facade serves (its fault rules hit the operator's requests);
    ``observer`` reads the same server with no faults; ``kube`` is a user's kube adapter client
    over HTTP, as ``kubectl`` would be.
    """

    cluster: MemoryCluster
    observer: MemoryCluster
    facade: Facade
    kube: KubeCluster
    kubeconfig: Path

    async def apply(self, manifest: JSONObject) -> JSONObject:
        """Create the DGD ``manifest`` through the facade."""
        return await self.kube.create(DGDS, manifest)

    async def dgd(self, name: str) -> JSONObject:
        return await self.observer.get(DGDS.key(NS, name))

    async def reconciled(self, name: str) -> bool:
        """The operator has written the DGD's status for its current generation."""
        dgd = await self.dgd(name)
        observed = (dgd.get("status") or {}).get("observedGeneration")
        return bool(observed == dgd["metadata"]["generation"])

    async def converged(self, *names: str) -> bool:
        """Every DGD named is ``successful`` for its current generation."""
        for name in names:
            dgd = await self.dgd(name)
            status = dgd.get("status") or {}
            observed = status.get("observedGeneration")
            if status.get("state") != "successful" or observed != dgd["metadata"]["generation"]:
                return False
        return True

    async def children(self, name: str) -> Counter[str]:
        """How many objects of each kind the operator created for the DGD (its owner references)."""
        uid = (await self.dgd(name))["metadata"]["uid"]
        return await owned_children(self.observer, uid, NS)

    async def reporters(self, name: str) -> set[str]:
        """The ``reportingInstance`` of every Event about the DGD ``name``."""
        events = (await self.observer.list(EVENT.as_raw(), namespace=NS)).items
        return {
            event.get("reportingInstance", "")
            for event in events
            if (event.get("regarding") or {}).get("name") == name
            and (event.get("regarding") or {}).get("kind") == DGD.kind
        }

    async def lease(self) -> JSONObject | None:
        """The operator's Lease's spec (``None``: no Lease yet)."""
        try:
            lease = await self.observer.get(LEASE.key(LEASE_NS, LEASE_NAME))
        except NotFound:
            return None
        spec: JSONObject = lease["spec"]
        return spec

    async def holder(self) -> str | None:
        """Who holds the Lease (``None``: nobody)."""
        spec = await self.lease()
        return (spec or {}).get("holderIdentity") or None

    async def holder_is(self, instance: str) -> bool:
        return await self.holder() == instance


@asynccontextmanager
async def serve_cluster(
    directory: Path, settings: WorldSettings = FAST_WORLD
) -> AsyncIterator[ServedCluster]:
    """A simulated cluster with its world running, served on a free port, until the block ends."""
    server = MemoryCluster(
        resources=SERVED_RESOURCES,
        clock=wall_clock,
        rng=random.Random(20260101),
        history_size=HISTORY,
        watch_buffer=HISTORY,
    )
    # What the cluster starts with, written by the world's own client (as sim serve does).
    world = server.client()
    discovery = await bootstrap(world, settings, OperatorConfig())
    for crd in all_crds():
        await world.create(CUSTOM_RESOURCE_DEFINITION, crd)

    def controllers() -> Supervisor:
        def spec(name: str, kind: type[WorldController]) -> ChildSpec[Any]:
            return ChildSpec(name, lambda: kind(world, lambda: settings, wall_clock))

        specs = [spec("pods", PodLifecycle)]
        if discovery.serves("grove.io"):
            specs.append(spec("grove", GroveController))
        # The daemon runs the DCD controller: the world plays kube-controller-manager's Deployments.
        specs += [spec("deployments", DeploymentController), spec("replicasets", ReplicaSetController)]
        specs.append(spec("checkpoints", CheckpointController))
        return Supervisor(specs, Supervision(intensity=20, period=60.0))

    system = ActorSystem(
        [ChildSpec("world", controllers, shutdown=5.0)], clock=LoopClock(), random=random.Random(1)
    )
    served = server.client()
    facade = Facade(served, resources=SERVED_RESOURCES)
    async with system, serve(facade) as url:
        kubeconfig = directory / "kubeconfig"
        write_kubeconfig(kubeconfig, url)
        async with await KubeCluster.from_config(kubeconfig, qps=None) as kube:
            yield ServedCluster(served, server.client(), facade, kube, kubeconfig)
