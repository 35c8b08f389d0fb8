"""The end-to-end harness: a simulated cluster served over HTTP, and real ``dgd-operator run`` processes.

``serve_cluster`` wires what ``dgd-operator sim serve`` wires — the in-memory API server with the
simulation's starting objects and the CRDs, the simulated Grove, DCD, checkpoint and pod controllers
on the wall clock, the HTTP facade on a free port, a kubeconfig for it — but in the test's own event
loop, so a test reaches what only an in-process caller can: the facade's ``drop_watches`` and
``expire_watches``, the served client's fault rules, compaction, and a fault-free client that reads
the stored objects without going through the facade.

``Operators.start`` runs ``dgd-operator run --kubeconfig ...`` as a subprocess (the console script
of this virtualenv) with its metrics and probes on free ports and its JSON log in a file;
``Recorder`` watches the API server for every object of the kinds the operator creates. Every wait
polls with a generous timeout: nothing here sleeps for a fixed time.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

import aiohttp
import anyio
import yaml
from anyio.abc import TaskStatus
from prometheus_client.parser import text_string_to_metric_families

from dgd.actors.runtime import ActorSystem, ChildSpec, LoopClock, Supervision, Supervisor
from dgd.cli.serve import HISTORY, SERVED_RESOURCES
from dgd.cluster.errors import NotFound
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import (
    CHECKPOINT,
    CONFIG_MAP,
    DCD,
    DEPLOYMENT,
    DGD,
    DGDSA,
    EVENT,
    INGRESS,
    LEASE,
    PCS,
    PVC,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    Resource,
)
from dgd.domain.crds import all_crds
from dgd.messages.base import JSONObject
from dgd.messages.config import OperatorConfig
from dgd.messages.timestamps import wall_clock
from dgd.sim import WorldSettings
from dgd.sim.apiserver.catalog import CUSTOM_RESOURCE_DEFINITION
from dgd.sim.apiserver.server import Facade, serve, write_kubeconfig
from dgd.sim.world.bootstrap import bootstrap
from dgd.sim.world.checkpoint import CheckpointController
from dgd.sim.world.controller import WorldController
from dgd.sim.world.dcd import DCDController
from dgd.sim.world.grove import GroveController
from dgd.sim.world.pods import PodLifecycle

ROOT = Path(__file__).resolve().parents[2]
EXECUTABLE = Path(sys.executable).with_name("dgd-operator")
UPSTREAM_DISAGG = ROOT.parent / "shared/upstream/ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg.yaml"

#: A world fast enough for a test: pods are bound and ready within a second of wall-clock time.
FAST_WORLD = WorldSettings(schedule_delay=0.1, ready_delay=0.5, termination_delay=0.2, retry_delay=0.2)

NS = "default"
LEASE_NS = "dynamo-system"
LEASE_NAME = "dgd-operator"
DGDS = DGD.as_raw()

#: What the operator creates for a DGD, by kind (the world's PodCliques and Pods are not in it).
CHILD_KINDS: tuple[Resource[Any], ...] = (
    PCS,
    DCD,
    DGDSA,
    SERVICE,
    SERVICE_ACCOUNT,
    ROLE,
    ROLE_BINDING,
    CONFIG_MAP,
    SECRET,
    DEPLOYMENT,
    INGRESS,
    PVC,
    CHECKPOINT,
)

T = TypeVar("T")


@dataclass(frozen=True)
class LeaseFlags:
    """``--lease-duration``, ``--renew-deadline`` and ``--retry-period``, spelled as the flags take them."""

    duration: str
    renew_deadline: str
    retry_period: str

    @property
    def flags(self) -> tuple[str, ...]:
        return (
            "--lease-duration",
            self.duration,
            "--renew-deadline",
            self.renew_deadline,
            "--retry-period",
            self.retry_period,
        )


#: What the acceptance asks for: a standby takes over a lease two seconds after its last renewal.
FAST_LEASE = LeaseFlags("2s", "1.5s", "0.5s")
#: Short enough for a restarted daemon to take over in seconds, long enough that a busy CI machine
#: never makes a leader miss its renew deadline.
TEST_LEASE = LeaseFlags("3s", "2.5s", "0.5s")


@overload
async def eventually(check: Callable[[], Awaitable[T | None]], *, timeout: float, what: str) -> T: ...


@overload
async def eventually(check: Callable[[], T | None], *, timeout: float, what: str) -> T: ...


async def eventually(check: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """Poll ``check`` (a function or a coroutine function) until it returns something truthy, and
    return it; fail after ``timeout`` seconds, saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        await anyio.sleep(0.05)


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
        counts: Counter[str] = Counter()
        for resource in CHILD_KINDS:
            for item in (await self.observer.list(resource.as_raw(), namespace=NS)).items:
                owners = item["metadata"].get("ownerReferences") or []
                if any(owner["uid"] == uid for owner in owners):
                    counts[resource.kind] += 1
        return counts

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
        specs += [spec("dcd", DCDController), spec("checkpoints", CheckpointController)]
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


@dataclass
class Operator:
    """One ``dgd-operator run`` process; its log (JSON lines) is in ``log``."""

    instance: str
    process: subprocess.Popen[bytes]
    log: Path
    metrics_port: int = 0
    probe_port: int = 0

    def kill(self, signum: int = signal.SIGKILL) -> None:
        self.process.send_signal(signum)

    async def exit_code(self, timeout: float) -> int:
        """Wait for the process to exit; its exit code (negative: the signal that ended it)."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.instance} did not exit within {timeout:g}s:\n{self.tail()}")
            await anyio.sleep(0.05)
        return self.process.returncode

    async def metrics(self) -> dict[str, float]:
        """Every sample of ``/metrics``, keyed ``name{label=value,...}`` (labels sorted)."""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as response,
        ):
            text = await response.text()
        samples: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f"{key}={value}" for key, value in sorted(sample.labels.items()))
                samples[f"{sample.name}{{{labels}}}"] = sample.value
        return samples

    async def dgd_reconciles(self) -> float:
        """``controller_runtime_reconcile_total`` of the DGD controller, every result summed."""
        samples = await self.metrics()
        prefix = "controller_runtime_reconcile_total{controller=dynamographdeployment,"
        return sum(value for key, value in samples.items() if key.startswith(prefix))

    async def writes(self) -> float:
        """Requests that change something (POST, PATCH, DELETE; PUT is left out: lease renewals use it)."""
        samples = await self.metrics()
        return sum(
            value
            for key, value in samples.items()
            if key.startswith("rest_client_requests_total{")
            and any(f"method={method}" in key for method in ("POST", "PATCH", "DELETE"))
        )

    def messages(self) -> list[str]:
        """The ``message`` of every JSON log line so far."""
        found = []
        for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                found.append(str(json.loads(line).get("message", "")))
        return found

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class Operators:
    """Starts ``dgd-operator run`` processes against ``served``; ``stop_all`` kills what still runs."""

    served: ServedCluster
    directory: Path
    started: list[Operator] = field(default_factory=list)

    async def start(
        self, instance: str, lease: LeaseFlags = TEST_LEASE, *, flags: Sequence[str] = ()
    ) -> Operator:
        """Start a daemon known as ``instance`` (more ``flags`` for ``run`` if given); return once its
        metrics and probe servers listen."""
        log = self.directory / f"{instance}.log"
        command = [
            str(EXECUTABLE),
            "run",
            "--kubeconfig",
            str(self.served.kubeconfig),
            "--metrics-addr",
            "127.0.0.1:0",
            # Scraped over plain HTTP by ``Operator.metrics`` (a later --metrics-secure in ``flags`` wins).
            "--no-metrics-secure",
            "--probe-addr",
            "127.0.0.1:0",
            # No webhooks unless a test asks (a later --webhook-addr in ``flags`` wins).
            "--webhook-addr",
            "0",
            "--instance",
            instance,
            "--lease-namespace",
            LEASE_NS,
            "--shutdown-timeout",
            "10s",
            *lease.flags,
            *flags,
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        operator = Operator(instance, process, log)
        self.started.append(operator)

        async def listening() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"{instance} exited with {process.returncode}:\n{operator.tail()}")
            for message in operator.messages():
                if message.startswith("serving metrics on port "):
                    operator.metrics_port = int(message.rsplit(" ", 1)[1])
                elif message.startswith("serving probes on port "):
                    operator.probe_port = int(message.rsplit(" ", 1)[1])
            return bool(operator.metrics_port and operator.probe_port)

        await eventually(listening, timeout=60, what=f"{instance} serves metrics and probes")
        return operator

    def stop_all(self) -> None:
        for operator in self.started:
            if operator.process.poll() is None:
                operator.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                operator.process.wait(timeout=10)


class Recorder:
    """Every object of the operator's child kinds created and deleted since ``run`` started, seen by
    watches on the API server itself (not through the facade, so facade faults do not hide any)."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self._cluster = cluster
        #: The uids seen created under each ``kind namespace/name``.
        self.uids: dict[str, set[str]] = {}
        self.deleted: list[str] = []
        self.created = 0
        self._watching = 0
        self._waiting: list[tuple[int, anyio.Event]] = []

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch every child kind until cancelled; started once every watch is open."""
        async with anyio.create_task_group() as tg:
            for resource in CHILD_KINDS:
                tg.start_soon(self._follow, resource.as_raw())
            await eventually(
                lambda: self._watching == len(CHILD_KINDS), timeout=10, what="the recorder's watches are open"
            )
            task_status.started()

    async def _follow(self, resource: Resource[JSONObject]) -> None:
        async with self._cluster.watch(resource, resource_version=self._cluster.resource_version) as watch:
            self._watching += 1
            async for event in watch:
                if event.object is None:
                    continue
                metadata = event.object["metadata"]
                key = f"{resource.kind} {metadata.get('namespace')}/{metadata['name']}"
                if event.type == "ADDED":
                    self.uids.setdefault(key, set()).add(metadata["uid"])
                    self.created += 1
                    for count, reached in self._waiting:
                        if self.created >= count:
                            reached.set()
                elif event.type == "DELETED":
                    self.deleted.append(key)

    async def wait_created(self, count: int, timeout: float) -> None:
        """Return as soon as ``count`` creations have been seen."""
        reached = anyio.Event()
        self._waiting.append((count, reached))
        if self.created >= count:
            reached.set()
        with anyio.fail_after(timeout):
            await reached.wait()

    def recreated(self) -> dict[str, set[str]]:
        """The names created more than once (a different uid each time)."""
        return {key: uids for key, uids in self.uids.items() if len(uids) > 1}
