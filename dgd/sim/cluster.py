"""A simulated Kubernetes cluster in one process, as an ``async with`` block.

``SimulatedCluster`` builds, from one seed and the running loop's clock (virtual under
``dgd.sim.clock.run``):

* the in-memory API server (``MemoryCluster``) serving ``resources`` (default ``DEFAULT_RESOURCES``;
  add ``REGISTRATION_RESOURCES`` for a daemon that registers its webhooks), whose timestamps are
  cluster time: ``EPOCH`` plus the loop time since the block was entered. ``cluster`` is the
  operator's client (its own fault rules); the world models use another client of the same server;
* what the cluster starts with (``world.bootstrap``): namespaces, ClusterRoles, the MPI secret and
  the discovery the operator's gates probe;
* an ``ActorSystem`` whose ``/world`` supervisor runs the world models the operator relies on but
  does not run itself: ``/world/pods`` (scheduler and kubelets), ``/world/grove`` (when
  ``grove.io`` is served), ``/world/dcd`` and ``/world/checkpoints``, and, with ``deployments=True``
  (off by default: the simulated DCD controller still makes the DCDs' pods itself),
  kube-controller-manager's ``/world/deployments`` and ``/world/replicasets``; plus, beside it, whatever
  actors ``operator`` returns for the operator's client (one seed, one clock for all), reporting
  to ``metrics`` if given;
* with an operator, its admission webhooks in the API server (``dgd.sim.admission``; ``admission=
  False``: a cluster where they are not installed), so writes are defaulted and validated as on a
  cluster with the operator installed.

Same seed, same settings, same calls: the same objects, uids and timestamps, byte for byte.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.store import Change
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DEFAULT_RESOURCES, LWS_RESOURCES, Resource
from dgd.messages.config import OperatorConfig
from dgd.runtime import ActorSystem, ChildSpec, LoopClock, Metrics, Supervision, Supervisor
from dgd.sim.admission import SIMULATED_OPERATOR, simulated_admission, webhook_chain
from dgd.sim.clock import EPOCH
from dgd.sim.schema import crd_schema_check
from dgd.sim.world.bootstrap import Discovery, bootstrap, discovery
from dgd.sim.world.checkpoint import CheckpointController
from dgd.sim.world.controller import Resync, WorldController
from dgd.sim.world.dcd import DCDController
from dgd.sim.world.deployment import DeploymentController
from dgd.sim.world.grove import GroveController
from dgd.sim.world.lws import LeaderWorkerSetController
from dgd.sim.world.pods import PodLifecycle
from dgd.sim.world.replicaset import ReplicaSetController
from dgd.sim.world.settings import WorldSettings

#: Where the world models run in the actor tree.
WORLD = "/world"
PODS, GROVE, DCDS, CHECKPOINTS = (f"{WORLD}/{name}" for name in ("pods", "grove", "dcd", "checkpoints"))
DEPLOYMENTS, REPLICA_SETS = f"{WORLD}/deployments", f"{WORLD}/replicasets"

#: How far past a deadline ``run_for`` sleeps, so that what is due at the deadline has happened.
SETTLE = 1e-6

#: What the operator's actors are built from: its client of the cluster.
OperatorFactory = Callable[[Cluster], Sequence[ChildSpec[Any]]]

_T = TypeVar("_T")


class SimulatedCluster:
    """A cluster with its world models running (see the module). Enter it once."""

    def __init__(
        self,
        settings: WorldSettings | None = None,
        *,
        seed: int = 0,
        config: OperatorConfig | None = None,
        operator: OperatorFactory | None = None,
        history_size: int = 10_000,
        watch_buffer: int = 10_000,
        metrics: Metrics | None = None,
        admission: bool = True,
        resources: Iterable[Resource[Any]] = DEFAULT_RESOURCES,
        deployments: bool = False,
    ) -> None:
        self._settings = settings or WorldSettings()
        self._deployments = deployments
        self._resources = tuple(resources)
        self._admission = admission
        self._seed = seed
        self._config = config or OperatorConfig()
        self._operator = operator
        self._history_size = history_size
        self._watch_buffer = watch_buffer
        self._metrics = metrics
        self._loop: asyncio.AbstractEventLoop | None = None
        self._start = 0.0
        self._cluster: MemoryCluster | None = None
        self._system: ActorSystem | None = None
        self._discovery: Discovery | None = None

    # -- what a test or a scenario uses ---------------------------------------------------------

    @property
    def cluster(self) -> MemoryCluster:
        """The operator's client of the API server (``.faults`` are its own)."""
        return _entered(self._cluster)

    @property
    def system(self) -> ActorSystem:
        """The actor system running the world models (and the operator, if one was given)."""
        return _entered(self._system)

    @property
    def discovery(self) -> Discovery:
        """The API groups the cluster serves."""
        return _entered(self._discovery)

    @property
    def settings(self) -> WorldSettings:
        """The settings in force."""
        return self._settings

    def now(self) -> float:
        """Cluster time: seconds since the Unix epoch (``EPOCH`` when the block was entered)."""
        return EPOCH + _entered(self._loop).time() - self._start

    def elapsed(self) -> float:
        """Seconds of cluster time since the block was entered."""
        return self.now() - EPOCH

    async def run_for(self, seconds: float) -> None:
        """Let ``seconds`` of cluster time pass (instantly under a virtual clock).

        Under a virtual clock it returns once everything due by then has happened: virtual time
        moves past an instant only when nothing is left to run at it, so this sleeps ``SETTLE``
        past the deadline.
        """
        await anyio.sleep(seconds + SETTLE)

    async def until(
        self, condition: Callable[[], Awaitable[bool]], *, timeout: float, every: float = 1.0
    ) -> float:
        """Check ``condition`` every ``every`` seconds until it holds; return the elapsed time then.

        Raises ``TimeoutError`` if it does not hold within ``timeout`` seconds.
        """
        deadline = self.elapsed() + timeout
        while not await condition():
            if self.elapsed() >= deadline:
                raise TimeoutError(f"the condition did not hold within {timeout:g}s of cluster time")
            await anyio.sleep(every)
        return self.elapsed()

    async def reconfigure(self, settings: WorldSettings) -> None:
        """Put new settings in force; every world model reconciles everything again."""
        self._settings = settings
        for path in (PODS, GROVE, DCDS, CHECKPOINTS, DEPLOYMENTS, REPLICA_SETS):
            cell = self.system.lookup(path)
            if cell is not None:
                await cell.ref.tell(Resync())

    def kill(self, path: str) -> bool:
        """Crash the actor at ``path`` (e.g. ``GROVE``); its supervisor restarts it."""
        return self.system.kill(path)

    def observe(self, group: anyio.abc.TaskGroup, listener: Callable[[Change], None]) -> None:
        """Call ``listener`` with every change the API server stores from now on, as
        ``MemoryCluster.observe`` does (synchronously, in resourceVersion order), until ``group`` is
        cancelled. Returns at once: the first change it can hear is the next one stored."""
        stop = self.cluster.observe(listener)

        async def listen() -> None:
            try:
                await anyio.sleep_forever()
            finally:
                stop()

        group.start_soon(listen)

    # -- lifetime --------------------------------------------------------------------------------

    async def __aenter__(self) -> SimulatedCluster:
        if self._loop is not None:
            raise RuntimeError("a SimulatedCluster runs once")
        loop = self._loop = asyncio.get_running_loop()
        self._start = loop.time()
        seeds = random.Random(self._seed)
        lws = self._settings_serve_lws()
        server = MemoryCluster(
            resources=self._resources + (LWS_RESOURCES if lws else ()),
            clock=self.now,
            rng=random.Random(seeds.getrandbits(64)),
            history_size=self._history_size,
            watch_buffer=self._watch_buffer,
            # The operator's webhooks come with the operator (a world-only cluster has none).
            admission=(
                webhook_chain(
                    simulated_admission(self._config, self._settings),
                    served_groups=discovery(self._settings).group_versions,
                )
                if self._operator is not None and self._admission
                else None
            ),
            # The API server checks our kinds against their CRD schema, webhooks or not.
            schema_check=crd_schema_check,
            user=SIMULATED_OPERATOR,
        )
        self._cluster = server
        world = server.client()
        self._discovery = await bootstrap(world, self._settings, self._config)
        children: list[ChildSpec[Any]] = [ChildSpec(WORLD[1:], lambda: self._world(world), shutdown=30.0)]
        if self._operator is not None:
            children += self._operator(server)
        self._system = ActorSystem(
            children, clock=LoopClock(), random=random.Random(seeds.getrandbits(64)), metrics=self._metrics
        )
        await self._system.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # The system suppresses only its own cancellation, and then raises its failure instead.
        await self.system.__aexit__(exc_type, exc, tb)

    def _settings_serve_lws(self) -> bool:
        """Whether the world's discovery serves LeaderWorkerSet (its kinds are then served too)."""
        return any(group.startswith("leaderworkerset.x-k8s.io/") for group in self._settings.served_groups)

    def _world(self, cluster: Cluster) -> Supervisor:
        def current() -> WorldSettings:
            return self._settings

        def spec(name: str, kind: type[WorldController]) -> ChildSpec[Any]:
            return ChildSpec(name, lambda: kind(cluster, current, self.now))

        specs = [spec("pods", PodLifecycle)]
        if self.discovery.serves("grove.io"):
            specs.append(spec("grove", GroveController))
        if self._deployments:
            # The operator runs the DCD controller: the world plays what Kubernetes makes of its output.
            specs += [spec("deployments", DeploymentController), spec("replicasets", ReplicaSetController)]
            if self.discovery.serves("leaderworkerset.x-k8s.io"):
                specs.append(spec("leaderworkersets", LeaderWorkerSetController))
        else:
            specs.append(spec("dcd", DCDController))
        specs.append(spec("checkpoints", CheckpointController))
        return Supervisor(specs, Supervision(intensity=20, period=60.0))


def _entered(value: _T | None) -> _T:
    """``value``, set once the ``SimulatedCluster`` has been entered."""
    assert value is not None, "enter the SimulatedCluster first"
    return value
