"""The real-server tier's harness: a namespace of the real control plane, ``sim world`` and daemons.

``RealCluster`` is one test's view of the run's control plane (``tests/conftest.py``): an admin
client, the test's own namespace, and what the end-to-end tests ask of a cluster (apply a DGD, wait
for ``successful``, count the children the operator made, read the lease). ``World`` runs
``dgd-operator sim world`` as a process (the simulated Grove, DCD and checkpoint controllers, pods and
their node), and ``daemons`` starts ``dgd-operator run`` processes the way ``tests/e2e`` does.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import yaml
from anyio.abc import TaskStatus

from dgd.cluster.errors import AlreadyExists, NotFound
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.protocol import Watch
from dgd.cluster.resources import CHECKPOINT, DGD, LEASE, NAMESPACE, ObjectKey, Resource
from dgd.messages.base import JSONObject
from tests.e2e.eventually import eventually
from tests.e2e.operators import EXECUTABLE, Operators
from tests.e2e.recorder import CHILD_KINDS, CreationLog, owned_children
from tests.real.controlplane import ControlPlane
from tests.upstream import DYNAMO

EXAMPLES = DYNAMO / "examples" / "backends"
#: The five upstream example graphs the tier takes to successful.
UPSTREAM_EXAMPLES = (
    EXAMPLES / "vllm" / "deploy" / "agg.yaml",
    EXAMPLES / "vllm" / "deploy" / "disagg.yaml",
    EXAMPLES / "vllm" / "deploy" / "disagg-multinode.yaml",
    EXAMPLES / "vllm" / "deploy" / "disagg_planner.yaml",
    EXAMPLES / "trtllm" / "deploy" / "snapshot-restore.yaml",
)
LEASE_NS = "dynamo-system"
LEASE_NAME = "dgd-operator"
DGDS = DGD.as_raw()
#: A world fast enough for a test: pods bound and ready within a second, checkpoints in two.
FAST_WORLD = ("--schedule-delay", "0.1", "--ready-delay", "0.5", "--termination-delay", "0.2",
              "--checkpoint-delay", "2")  # fmt: skip
#: The operator configuration of the tier: checkpoints on (the snapshot-restore example), Grove and
#: LeaderWorkerSet as the cluster serves them.
CONFIG = "checkpoint:\n  enabled: true\n"
_numbers = itertools.count(1)


def manifest(path: Path, *, name: str | None = None, component: bool = False) -> JSONObject:
    """The first DGD of ``path``, renamed if asked, on the Component pathway if ``component``."""
    document: JSONObject = next(
        d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d and d.get("kind") == DGD.kind
    )
    metadata = document["metadata"]
    if name is not None:
        metadata["name"] = name
    if component:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), "nvidia.com/enable-grove": "false"}
    return document


@dataclass
class RealCluster:
    """One test's namespace of the real control plane, and an admin client (see the module)."""

    plane: ControlPlane
    kube: KubeCluster
    namespace: str

    @property
    def kubeconfig(self) -> Path:
        return self.plane.kubeconfig

    async def apply(self, document: JSONObject) -> JSONObject:
        """Create ``document`` (a DGD) in the test's namespace."""
        body = {**document, "metadata": {**document["metadata"], "namespace": self.namespace}}
        return await self.kube.create(DGDS, body)

    async def create(self, resource: Resource[JSONObject], document: JSONObject) -> JSONObject:
        body = {**document, "metadata": {**document["metadata"], "namespace": self.namespace}}
        return await self.kube.create(resource, body)

    def dgd_key(self, name: str) -> ObjectKey[JSONObject]:
        return DGDS.key(self.namespace, name)

    async def dgd(self, name: str) -> JSONObject:
        return await self.kube.get(self.dgd_key(name))

    async def converged(self, *names: str) -> bool:
        """Every DGD named is ``successful`` for its current generation."""
        for name in names:
            dgd = await self.dgd(name)
            status = dgd.get("status") or {}
            if (
                status.get("state") != "successful"
                or status.get("observedGeneration") != dgd["metadata"]["generation"]
            ):
                return False
        return True

    async def settle(self, *names: str, timeout: float) -> None:
        """Wait until every DGD named is ``successful``; on timeout fail with what each one that is not
        reports (state, conditions), so a failure on CI says where the graph stopped."""
        try:
            await eventually(
                lambda: self.converged(*names), timeout=timeout, what=f"{', '.join(names)} successful"
            )
        except AssertionError as error:
            raise AssertionError(f"{error}\n{await self.describe(*names)}") from None

    async def describe(self, *names: str) -> str:
        """One paragraph per DGD named that is not ``successful``: its state and its conditions."""
        lines: list[str] = []
        for name in names:
            try:
                dgd = await self.dgd(name)
            except NotFound:
                lines.append(f"{name}: not found")
                continue
            status = dgd.get("status") or {}
            if status.get("state") == "successful":
                continue
            lines.append(
                f"{name}: generation {dgd['metadata'].get('generation')}, state {status.get('state')!r}, "
                f"observedGeneration {status.get('observedGeneration')}"
            )
            for condition in status.get("conditions") or []:
                lines.append(
                    f"  {condition.get('type')}={condition.get('status')} {condition.get('reason')}: "
                    f"{condition.get('message')}"
                )
        return "\n".join(lines)

    async def gone(self, name: str) -> bool:
        try:
            await self.dgd(name)
        except NotFound:
            return True
        return False

    async def children(self, name: str) -> Counter[str]:
        """How many objects of each kind the operator created for the DGD (its owner references)."""
        uid = (await self.dgd(name))["metadata"]["uid"]
        return await owned_children(self.kube, uid, self.namespace)

    async def holder(self) -> str | None:
        """Who holds the operator's Lease (``None``: nobody, or no Lease yet)."""
        try:
            lease = await self.kube.get(LEASE.key(LEASE_NS, LEASE_NAME))
        except NotFound:
            return None
        return (lease.get("spec") or {}).get("holderIdentity") or None

    async def holder_is(self, instance: str) -> bool:
        return await self.holder() == instance


async def new_namespace(kube: KubeCluster, prefix: str = "e2e") -> str:
    """A fresh namespace of the control plane (the tier's tests never share one)."""
    name = f"{prefix}-{next(_numbers)}-{int(time.time() * 1000) % 100000}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


async def ensure_namespace(kube: KubeCluster, name: str) -> None:
    with contextlib.suppress(AlreadyExists):
        await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


@dataclass
class World:
    """``dgd-operator sim world`` against the control plane, as a process; its output in ``log``."""

    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, kubeconfig: Path, *flags: str) -> None:
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(EXECUTABLE), "sim", "world", "--kubeconfig", str(kubeconfig), *FAST_WORLD, *flags],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    async def running(self) -> None:
        """Return once the world models run (the process printed so), fail if it exited."""

        def started() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"sim world exited with {self.process.returncode}:\n{self.tail()}")
            return b"running" in self.log.read_bytes()

        await eventually(started, timeout=60, what="sim world runs")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@asynccontextmanager
async def world(cluster: RealCluster, directory: Path, *flags: str) -> AsyncIterator[World]:
    """``sim world`` running for the block (stopped after it, pass or fail)."""
    running = World(directory / "world.log")
    running.start(cluster.kubeconfig, *flags)
    try:
        await running.running()
        yield running
    finally:
        running.stop()
        # Shown by pytest only when the test fails.
        print(f"--- the last lines of sim world's log:\n{running.tail(60)}")


@asynccontextmanager
async def watch_from_now(
    kube: KubeCluster, resource: Resource[JSONObject], namespace: str
) -> AsyncIterator[Watch[JSONObject]]:
    """A watch of ``resource`` in ``namespace`` from what is there now: a list, then a watch from its
    resourceVersion (so it reports only what happens after, and misses nothing)."""
    listed = await kube.list(resource, namespace=namespace)
    async with kube.watch(resource, namespace=namespace, resource_version=listed.resource_version) as watch:
        yield watch


@asynccontextmanager
async def operated(real: RealCluster, daemons: Operators, directory: Path) -> AsyncIterator[None]:
    """One daemon (``only``, on the default configuration) and ``sim world`` running for the block."""
    config = written_config(directory)
    async with world(real, directory):
        await daemons.start("only", flags=run_flags(config))
        yield


class Creations(CreationLog):
    """Every object of the operator's child kinds created and deleted in one namespace since ``run``
    started, from watches on the real API server (keyed ``kind name``)."""

    def __init__(self, kube: KubeCluster, namespace: str) -> None:
        super().__init__()
        self.kube, self.namespace = kube, namespace

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch every child kind until cancelled; ``started`` once every watch is open."""
        async with anyio.create_task_group() as tg:
            for resource in CHILD_KINDS:
                if resource is not CHECKPOINT:
                    await tg.start(self._follow, resource.as_raw())
            task_status.started()

    async def _follow(self, resource: Resource[JSONObject], *, task_status: TaskStatus[None]) -> None:
        async with watch_from_now(self.kube, resource, self.namespace) as watch:
            task_status.started()
            async for event in watch:
                if event.object is not None:
                    self.note(event, f"{resource.kind} {event.object['metadata']['name']}")


def written_config(directory: Path, text: str = CONFIG) -> Path:
    path = directory / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def run_flags(config: Path, *extra: str) -> Sequence[str]:
    """The ``run`` flags of the tier's daemons: its configuration, and nothing listening off loopback;
    no DCD controller, for ``sim world`` still plays one on this tier (issue 33's next step)."""
    return ("--config", str(config), "--no-dcd-controller", *extra)
