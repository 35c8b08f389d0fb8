"""The daemon's life: serve metrics and probes, win the lease, run the operator, stop cleanly.

``Daemon(cluster, config=..., settings=...).run()`` returns the process's exit code:

* **0** — stopped on request (``stop()``, which the command line calls on SIGTERM or SIGINT): the
  operator stopped taking work (its informers first: the tree stops children before parents,
  siblings in reverse start order), in-flight reconciles finished or, past ``shutdown_timeout``,
  were cancelled; then the lease was released, so a successor takes over at its next try.
* **1** — the lease was lost (not renewed within the renew deadline, or taken by someone else), or
  the operator's tree failed (its root exceeded its restart intensity). A lost lease stops every
  write at once: the write fence closes the moment the loss is known (before any task is
  cancelled), then the whole tree is cancelled, not drained, and the loss is one ERROR line (the
  cancelled actors say nothing at info). Like controller-runtime, the process
  then exits rather than stand by again: its state was built for a term it no longer holds, and
  Kubernetes restarts it as a fresh candidate.

Only the leader runs the operator's actor tree; a candidate waiting for the lease runs only its
servers and its campaign. With leader election off the process runs the operator at once.

The cluster is injected (any ``Cluster``: the kube adapter in production, a ``MemoryCluster`` in
tests), and so are the clock (``LoopClock``; a ``ManualClock`` in tests), the wall clock, the
random source and the MPI key source (``SecureKeys``: made in a worker thread).
"""

from __future__ import annotations

import logging
import random as random_module
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
import msgspec

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.router import DEFAULT_RESYNC
from dgd.actors.machinery.workers import DEFAULT_WORKERS, Workers
from dgd.actors.tree import operator_children, watched
from dgd.cluster.protocol import Cluster
from dgd.daemon.admission import WebhookService
from dgd.daemon.election import LeaderElector
from dgd.daemon.lease import LeaseTiming
from dgd.daemon.lookups import Discover
from dgd.daemon.metrics import DaemonMetrics
from dgd.daemon.metrics_serving import SecureMetrics
from dgd.daemon.probes import Health, Role
from dgd.daemon.registration import WebhookSettings
from dgd.daemon.rest_client import Fence, InstrumentedCluster
from dgd.daemon.servers import Server, metrics_app, parse_address, probes_app
from dgd.daemon.ssh_keys import SecureKeys
from dgd.domain.admission.webhooks import CONVERTER, AdmissionSettings
from dgd.domain.render.ssh_keys import KeySource
from dgd.messages.config import RELEASE_NAMESPACE, OperatorConfig
from dgd.runtime import ActorSystem, Clock, LoopClock

if TYPE_CHECKING:  # imported only by `run --record`
    from dgd.daemon.trace_recorder import DaemonRecorder

logger = logging.getLogger("dgd.daemon")

EXIT_OK, EXIT_FAILED = 0, 1


class DaemonSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How the process runs (the ``run`` command's flags), apart from the operator's configuration."""

    instance: str
    metrics_address: str = ":8080"
    probe_address: str = ":8081"
    leader_elect: bool = True
    lease_name: str = "dgd-operator"
    lease_namespace: str = RELEASE_NAMESPACE
    timing: LeaseTiming = LeaseTiming()
    shutdown_timeout: float = 30.0
    #: The namespaces watched in namespace-restricted mode (empty: ``namespace.restricted`` of the
    #: configuration, else every namespace).
    namespaces: tuple[str, ...] = ()
    #: How many DGD reconciles run at once (the others wait their turn: ``Workers``).
    max_concurrent_reconciles: int = DEFAULT_WORKERS
    #: Whether this process runs the DCD controller too (``--no-dcd-controller`` turns it off).
    dcd_controller: bool = True
    #: The admission and conversion webhooks (``None``: not served).
    webhooks: WebhookSettings | None = None
    #: ``/metrics`` over HTTPS to authorised scrapers only (``dgd.daemon.metrics_serving``); ``False``:
    #: over plain HTTP to anyone.
    metrics_secure: bool = True
    #: The metrics server's certificate, ``tls.crt`` and ``tls.key`` (``None``: the replica makes its own).
    metrics_cert_dir: str | None = None


class Daemon:
    """One run of the operator process (see the module). ``config`` must be the effective
    configuration (gates resolved); ``metrics`` and ``health`` may be passed in to look at them.

    ``election_cluster`` (default: ``cluster``) carries the lease requests: give it a client of its
    own, so a busy operator's client-side rate limit never delays a renewal past the deadline.
    ``discover`` is API discovery, for the webhooks' InferencePool check (``None``: it is skipped).
    ``review_cluster`` (default: ``cluster``) carries the secure metrics' TokenReviews and
    SubjectAccessReviews: give it a client with a rate limit of its own, so scrapes (a flood of unknown
    tokens included) never spend the operator's.
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        config: OperatorConfig,
        settings: DaemonSettings,
        clock: Clock | None = None,
        wall: Callable[[], float] = time.time,
        random: random_module.Random | None = None,
        keys: KeySource | None = None,
        resync: float | None = DEFAULT_RESYNC,
        metrics: DaemonMetrics | None = None,
        health: Health | None = None,
        election_cluster: Cluster | None = None,
        recorder: DaemonRecorder | None = None,
        discover: Discover | None = None,
        review_cluster: Cluster | None = None,
    ) -> None:
        self._cluster = cluster
        self._election_cluster = election_cluster or cluster
        self._config = config
        self.settings = settings
        self._clock: Clock = clock or LoopClock()
        self._wall = wall
        self._random = random or random_module.Random()
        self._keys = keys if keys is not None else SecureKeys()
        self._resync = resync
        self.metrics = metrics or DaemonMetrics()
        self.health = health or Health(self._clock)
        self.secure_metrics: SecureMetrics | None = None
        if settings.metrics_secure and parse_address(settings.metrics_address) is not None:
            # Every replica answers scrapes, leading or not: reviews are counted, never fenced.
            reviews = InstrumentedCluster(review_cluster or cluster, requests=self.metrics.requested)
            self.secure_metrics = SecureMetrics(reviews, cert_dir=settings.metrics_cert_dir, wall=wall)
        self._stopping = anyio.Event()
        #: Set once the servers listen (their ports are then known).
        self.serving = anyio.Event()
        self.metrics_port: int | None = None
        self.probe_port: int | None = None
        self.elector: LeaderElector | None = None
        self.system: ActorSystem | None = None
        #: Hears users' changes while the operator runs (``run --record``); saved when it ends.
        self.recorder = recorder
        self.webhooks: WebhookService | None = None
        if settings.webhooks is not None:
            self.webhooks = WebhookService(
                cluster,
                settings.webhooks,
                AdmissionSettings(
                    grove_enabled=bool(config.orchestrators.grove.enabled),
                    operator_principal=settings.webhooks.operator_principal,
                    checkpoint=config.checkpoint,
                ),
                restricted=settings.namespaces
                or ((config.namespace.restricted,) if config.namespace.restricted else ()),
                wall=wall,
                converter=CONVERTER,
                discover=discover,
            )

    def stop(self) -> None:
        """Ask for a graceful stop (idempotent; safe from a signal handler's task)."""
        self._stopping.set()

    async def run(self) -> int:
        async with AsyncExitStack() as stack:
            self.metrics_port = await self._serve(stack, self.settings.metrics_address, "metrics")
            self.probe_port = await self._serve(stack, self.settings.probe_address, "probes")
            if self.webhooks is not None:
                await self.webhooks.start(stack)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.health.heartbeat)
                if self.secure_metrics is not None:
                    tg.start_soon(self.secure_metrics.run)
                if self.webhooks is not None:  # every replica serves admission, leading or not
                    tg.start_soon(self.webhooks.run)
                # The loop's lag, on the loop's own clock whatever clock the daemon is given.
                tg.start_soon(self.metrics.watch_loop_lag, LoopClock())
                self.serving.set()
                try:
                    return await self._lead_or_operate()
                finally:
                    self.health.role = Role.STOPPING
                    tg.cancel_scope.cancel()
                    self._save_recording()
        raise AssertionError("unreachable")  # pragma: no cover

    def _save_recording(self) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.save()
        except OSError as error:
            logger.error("the recording could not be written to %s: %s", self.recorder.path, error)
        else:
            logger.info("recording written to %s", self.recorder.path)

    async def _serve(self, stack: AsyncExitStack, address: str, what: str) -> int | None:
        where = parse_address(address)
        if where is None:
            return None
        secure = self.secure_metrics if what == "metrics" else None
        tls = await secure.start(stack) if secure is not None else None
        guard = secure.access.middleware() if secure is not None else None
        app = metrics_app(self.metrics.registry, guard) if what == "metrics" else probes_app(self.health)
        server = await Server.start(app, *where, tls=tls)
        stack.push_async_callback(server.stop)
        logger.info("serving %s on port %d", what, server.port)
        return server.port

    async def _lead_or_operate(self) -> int:
        settings = self.settings
        if not settings.leader_elect:
            return await self._lead(Fence(), anyio.Event())
        lease = settings.lease_name
        fence = Fence()

        def leading(now: bool) -> None:
            # The moment leadership ends, writes stop: before anything is cancelled.
            if not now:
                fence.close()
            self.metrics.leading(lease, now)

        self.metrics.leading(lease, False)
        elector = self.elector = LeaderElector(
            InstrumentedCluster(self._election_cluster, requests=self.metrics.requested),
            namespace=settings.lease_namespace,
            name=settings.lease_name,
            identity=settings.instance,
            timing=settings.timing,
            clock=self._clock,
            wall=self._wall,
            random=self._random,
            on_change=leading,
            on_problem=self.health.lease_problem,
        )
        # Stand by until the lease is ours, or until asked to stop.
        self.health.role = Role.STANDBY
        if not await self._unless_stopped(elector.campaign):
            await elector.release(timeout=settings.timing.renew_deadline)  # won just as the stop came
            return EXIT_OK
        lost = anyio.Event()
        async with anyio.create_task_group() as tg:

            async def hold() -> None:
                why = await elector.hold()
                # The one line a lost lease gets: every actor is cancelled now, quietly.
                logger.error(
                    "%s lost lease %s (%s): stopping every actor and exiting",
                    elector.identity,
                    elector.lease,
                    why,
                )
                lost.set()

            tg.start_soon(hold)
            code = await self._lead(fence, lost)
            tg.cancel_scope.cancel()
        if lost.is_set():
            return EXIT_FAILED
        # Every actor has stopped: hand the lease over.
        await elector.release(timeout=settings.timing.renew_deadline)
        return code

    async def _lead(self, fence: Fence, lost: anyio.Event) -> int:
        """The leader's term: the operator, and the webhooks' registration and renewal beside it."""
        async with anyio.create_task_group() as tg:
            if self.webhooks is not None:
                tg.start_soon(self.webhooks.lead)
            code = await self._operate(fence, lost)
            tg.cancel_scope.cancel()
        return code

    async def _operate(self, fence: Fence, lost: anyio.Event) -> int:
        """Run the operator tree until asked to stop (drain) or the lease is lost (cancel)."""
        cache = Cache()
        if self.recorder is not None:
            cache.listen(self.recorder.hear)
        cluster = InstrumentedCluster(
            self._cluster,
            requests=self.metrics.requested,
            activity=self.health.activity,
            fence=fence,
            writes=self.recorder,
        )
        # Each controller has its own pool of workers (controller-runtime's MaxConcurrentReconciles).
        workers = Workers(self.settings.max_concurrent_reconciles)
        adapter_workers = Workers(self.settings.max_concurrent_reconciles)
        dcd_workers = Workers(self.settings.max_concurrent_reconciles)
        children = operator_children(
            cluster,
            config=self._config,
            wall=self._wall,
            instance=self.settings.instance,
            keys=self._keys,
            resync=self._resync,
            cache=cache,
            reconciles=self.metrics,
            namespaces=self.settings.namespaces,
            workers=workers,
            adapter_workers=adapter_workers,
            on_rejected=self.metrics.undecodable,
            on_events_dropped=self.metrics.event_dropped,
            dcd_controller=self.settings.dcd_controller,
            dcd_workers=dcd_workers,
        )
        system = self.system = ActorSystem(
            children,
            clock=self._clock,
            random=self._random,
            metrics=self.metrics,
            shutdown_timeout=self.settings.shutdown_timeout,
        )
        self.metrics.bind(system, workers)
        kinds = watched(self._config, dcd_controller=self.settings.dcd_controller)
        self.health.operator_started([str(r) for r in kinds], cache.all_synced)
        try:
            async with system:
                self.health.role = Role.LEADER
                logger.info("the operator runs")
                if await _first(self._stopping, lost) is lost:
                    logger.debug("the lease is lost: cancelling every actor now")
                    await system.shutdown(0)
                    return EXIT_FAILED
                self.health.role = Role.STOPPING
                logger.info("stopping: draining within %gs", self.settings.shutdown_timeout)
                # Reconciles under way finish; those waiting for a worker never start.
                workers.close()
                adapter_workers.close()
                await self._drain(system, lost)
        except Exception as failure:
            logger.critical("the operator failed: %r", failure, exc_info=failure)
            return EXIT_FAILED
        finally:
            self.metrics.bind(None)
            self.health.operator_stopped()
        return EXIT_FAILED if lost.is_set() else EXIT_OK

    async def _drain(self, system: ActorSystem, lost: anyio.Event) -> None:
        # A graceful stop, cut short (cancelled) if the lease is lost meanwhile.
        async with anyio.create_task_group() as tg:

            async def cut_short() -> None:
                await lost.wait()
                logger.debug("the lease was lost while draining: cancelling every actor now")
                await system.shutdown(0)

            tg.start_soon(cut_short)
            await system.shutdown(self.settings.shutdown_timeout)
            tg.cancel_scope.cancel()

    async def _unless_stopped(self, work: Callable[[], Awaitable[None]]) -> bool:
        """Run ``work``; ``False`` if a stop was asked for first (``work`` is then cancelled)."""
        done = anyio.Event()

        async def run() -> None:
            await work()
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await _first(self._stopping, done)
            tg.cancel_scope.cancel()
        return done.is_set()


async def _first(*events: anyio.Event) -> anyio.Event:
    """The first of ``events`` to be set (the earliest listed if several already are)."""
    for event in events:
        if event.is_set():
            return event
    winner: list[anyio.Event] = []
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            winner.append(event)
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)
    return winner[0]
