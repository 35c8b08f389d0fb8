"""The operator as one actor tree, for any cluster behind the port (the daemon, the simulation, tests).

``operator_children(cluster, config=..., wall=...)`` returns the child specs to put in an
``ActorSystem`` (alone, or beside the simulation's world models)::

    /operator                      supervisor, rest_for_one: a restarted DGD or adapter supervisor
    │                              restarts the router, which rebuilds every actor from the cache
    ├── dgds
    │   ├── <namespace>/<name>     DGDActor (transient), with its pathway's children
    │   └── <ns>/<name>@parked     while that actor is parked: its stand-in, which says so and ends
    ├── adapters                   the DGDSA controller
    │   └── <namespace>/<name>     AdapterActor (transient): adapter replicas -> DGD component
    ├── dcds                       the DCD controller (when ``dcd_controller``)
    │   └── <namespace>/<name>     DCDActor (transient): DCD -> Deployment, Services, Ingress
    ├── router                     watch event -> DGD or adapter key -> nudge; starts and stops them
    └── informers                  one informer per watched kind (list+watch -> cache)

``config`` must be the *effective* configuration (``dgd.domain.gates.effective_config``): gates are
resolved once, before the tree starts: the Grove kinds are watched only when Grove is on, and
DynamoCheckpoints only when the checkpoint gate is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from dgd.actors.dcd.actor import DCDActor
from dgd.actors.dcd.writer import DCDWriter
from dgd.actors.dgd.actor import DGDActor
from dgd.actors.dgd.writer import DGDWriter
from dgd.actors.dgdsa.actor import AdapterActor
from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.informer import Informer
from dgd.actors.machinery.loop import LoopParts, ReconcileObserver
from dgd.actors.machinery.notices import WriteNotices
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.retries import Retries
from dgd.actors.machinery.router import DEFAULT_RESYNC, Router
from dgd.actors.machinery.sync import Syncer
from dgd.actors.machinery.workers import Workers
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import (
    CHECKPOINT,
    CONFIG_MAP,
    DCD,
    DEPLOYMENT,
    DESTINATION_RULE,
    DGD,
    DGDSA,
    INGRESS,
    LWS,
    PCLQ,
    PCS,
    PCSG,
    POD,
    POD_GROUP,
    RESOURCE_CLAIM_TEMPLATE,
    ROLE,
    ROLE_BINDING,
    SERVICE,
    SERVICE_ACCOUNT,
    Resource,
)
from dgd.domain.gates import gates_of
from dgd.domain.metadata_keys import COMPONENT_TYPE, GRAPH_NAME, SELECTOR
from dgd.domain.render.ssh_keys import KeySource
from dgd.messages.component import WORKER_TYPES
from dgd.messages.config import OperatorConfig
from dgd.runtime import (
    Actor,
    Backoff,
    ChildSpec,
    Context,
    DynamicSupervisor,
    Restart,
    StartChild,
    Strategy,
    Supervision,
    Supervisor,
)

OPERATOR = "/operator"
EVENTS = "/events"
DGDS = f"{OPERATOR}/dgds"
ADAPTERS = f"{OPERATOR}/adapters"
DCDS = f"{OPERATOR}/dcds"
ROUTER = f"{OPERATOR}/router"
#: The suffix of the id of a parked actor's stand-in (``Reconciler.on_start``), beside it.
PARKED = "@parked"
INFORMERS = f"{OPERATOR}/informers"

#: The kinds every operator watches; the Grove kinds are added when the Grove gate is on.
WATCHED: tuple[Resource[Any], ...] = (
    DGD,
    DGDSA,
    DCD,
    SERVICE,
    INGRESS,
    CONFIG_MAP,
    SERVICE_ACCOUNT,
    ROLE,
    ROLE_BINDING,
    POD,
)
#: Label selectors of the kinds not watched whole: only the managed worker pods of DCDs (dgd-domain
#: §16), which the Recreate barrier of a rollout waits on.
SELECTORS: dict[str, str] = {
    str(POD): f"{GRAPH_NAME},{SELECTOR},{COMPONENT_TYPE} in ({','.join(sorted(WORKER_TYPES))})",
}
GROVE_WATCHED: tuple[Resource[Any], ...] = (PCS, PCLQ, PCSG)
#: Watched when the checkpoint gate is on (the DynamoCheckpoint API exists then).
CHECKPOINT_WATCHED: tuple[Resource[Any], ...] = (CHECKPOINT,)
#: Watched when the Istio gate is on: the endpoint pickers' DestinationRules (dgd-domain §16).
ISTIO_WATCHED: tuple[Resource[Any], ...] = (DESTINATION_RULE,)
#: Watched when the DRA gate is on: the GPU memory service's ResourceClaimTemplates (a DGD's own map to it
#: through their controller reference; dgd-domain §16 lists them among the DRA watches).
DRA_WATCHED: tuple[Resource[Any], ...] = (RESOURCE_CLAIM_TEMPLATE,)
#: Watched when the DCD controller runs: the workloads it writes (Services and Ingresses are already).
DCD_WATCHED: tuple[Resource[Any], ...] = (DEPLOYMENT,)
#: Watched by the DCD controller when the LWS gate is on: multinode workloads and legacy PodGroups.
DCD_LWS_WATCHED: tuple[Resource[Any], ...] = (LWS, POD_GROUP)

#: DGD and adapter actors (one per object) each have their own restart budget: one over it is parked
#: (restarted after a backoff that grows to 1,000 s, or at once on a spec change), never escalated, so
#: no number of failing objects restarts the operator supervisor above them.
DGDS_SUPERVISION = Supervision(
    Strategy.ONE_FOR_ONE, intensity=5, period=60.0, backoff=Backoff(0.1, 1000.0), park=True
)


def watched(config: OperatorConfig, *, dcd_controller: bool = False) -> tuple[Resource[Any], ...]:
    """The kinds this configuration's operator watches (and its DCD controller, when it runs)."""
    grove = GROVE_WATCHED if config.orchestrators.grove.enabled is True else ()
    checkpoints = CHECKPOINT_WATCHED if config.checkpoint.enabled is True else ()
    istio = ISTIO_WATCHED if config.service_mesh.enabled is True else ()
    dra = DRA_WATCHED if config.dra.enabled is True else ()
    dcds = (
        (DCD_WATCHED + (DCD_LWS_WATCHED if config.orchestrators.lws.enabled is True else ()))
        if dcd_controller
        else ()
    )
    return WATCHED + grove + checkpoints + istio + dra + dcds


def operator_children(
    cluster: Cluster,
    *,
    config: OperatorConfig,
    wall: Callable[[], float],
    instance: str = "dgd-operator",
    keys: KeySource,
    resync: float | None = DEFAULT_RESYNC,
    cache: Cache | None = None,
    reconciles: ReconcileObserver | None = None,
    namespaces: Sequence[str] = (),
    workers: Workers | None = None,
    adapter_workers: Workers | None = None,
    on_rejected: Callable[[str], None] | None = None,
    on_events_dropped: Callable[[str], None] | None = None,
    dcd_controller: bool = False,
    dcd_workers: Workers | None = None,
) -> Sequence[ChildSpec[Any]]:
    """The operator's actor tree (see the module); ``wall`` gives seconds since the epoch for
    timestamps; ``keys`` makes the MPI SSH key pair when the cluster has none (the daemon's and the
    simulation's differ); ``cache`` may be passed in to look at what the operator sees (tests);
    ``reconciles`` hears about every reconcile (the daemon's metrics). ``namespaces``: the namespaces
    watched in namespace-restricted mode (default: ``namespace.restricted`` of ``config`` if set, else
    every namespace); ``config.namespace.restricted`` must be set when they are given (it is the
    restricted-mode switch). ``workers`` bounds the DGD reconciles that run at once, and
    ``adapter_workers`` the scaling adapters' (default: no bound). ``on_rejected`` hears the kind
    of every object an informer cannot decode (the daemon's metrics), ``on_events_dropped`` why each
    event the poster dropped was dropped. ``dcd_controller``: run the DCD controller too (its
    reconciles bounded by ``dcd_workers``); off, the DCDs are left to another controller (upstream's,
    during a switch-over, or the simulated world's)."""
    if namespaces and not config.namespace.restricted:
        raise ValueError("namespaces given in cluster-wide mode: set namespace.restricted as well")
    scopes = tuple(namespaces) or ((config.namespace.restricted,) if config.namespace.restricted else None)
    wiring = _Wiring(
        cluster, cache if cache is not None else Cache(), config=config, wall=wall, instance=instance,
        keys=keys, reconciles=reconciles, workers=workers, adapter_workers=adapter_workers,
        on_rejected=on_rejected, on_events_dropped=on_events_dropped, dcd_controller=dcd_controller,
        dcd_workers=dcd_workers,
    )  # fmt: skip
    return [
        # Events are posted beside the operator, so a restart of either leaves the other alone.
        ChildSpec(EVENTS[1:], wiring.recorder.poster, Restart.PERMANENT, shutdown=5.0),
        ChildSpec(
            OPERATOR[1:],
            lambda: wiring.operator(watched(config, dcd_controller=dcd_controller), scopes, resync),
            shutdown=60.0,
        ),
    ]


def _object_spec(
    namespace: str, name: str, build: Callable[[], Actor[Any]], parked_for: float | None
) -> ChildSpec[Any]:
    """The child spec of an object's actor (transient: it ends when its object is gone), or of the
    stand-in of a parked one (temporary: it reports, ends, and is forgotten)."""
    if parked_for is None:
        return ChildSpec(f"{namespace}/{name}", build, Restart.TRANSIENT, shutdown=10.0)
    return ChildSpec(f"{namespace}/{name}{PARKED}", build, Restart.TEMPORARY, shutdown=10.0)


class _Wiring:
    """The collaborators every actor of one operator tree shares, and how each actor is built."""

    def __init__(
        self,
        cluster: Cluster,
        cache: Cache,
        *,
        config: OperatorConfig,
        wall: Callable[[], float],
        instance: str,
        keys: KeySource,
        reconciles: ReconcileObserver | None,
        workers: Workers | None,
        adapter_workers: Workers | None,
        on_rejected: Callable[[str], None] | None,
        on_events_dropped: Callable[[str], None] | None = None,
        dcd_controller: bool = False,
        dcd_workers: Workers | None = None,
    ) -> None:
        self.cluster, self.cache, self.config, self.wall = cluster, cache, config, wall
        self.dcd_controller, self.instance, self.keys = dcd_controller, instance, keys
        self.on_rejected = on_rejected
        self.reader = Reader(cluster, cache)
        self.recorder = Recorder(cluster, instance=instance, now=wall, on_dropped=on_events_dropped)
        self.notices = WriteNotices()
        self.syncer = Syncer(cluster, cache, self.recorder, notices=self.notices)
        self.dgd_writer = DGDWriter(cluster, cache)
        self.dcd_writer = DCDWriter(cluster, cache)
        # Each controller's loop: its objects' reconcile backoffs outlive their actors' restarts (and the
        # operator supervisor's); each has its own pool of workers.
        self.dgd_loop = LoopParts(Retries(), reconciles, workers)
        self.adapter_loop = LoopParts(Retries(), reconciles, adapter_workers)
        self.dcd_loop = LoopParts(Retries(), reconciles, dcd_workers)

    def operator(
        self, kinds: Sequence[Resource[Any]], scopes: Sequence[str] | None, resync: float | None
    ) -> Supervisor:
        """The operator supervisor: per-object actors, the router, then the informers (rest for one)."""

        def router() -> Router:
            return Router(
                cache=self.cache, dgds=DGDS, spawn=self.dgd_actor, adapters=ADAPTERS,
                spawn_adapter=self.adapter_actor, informers={str(k) for k in kinds}, resync=resync,
                dcds=DCDS if self.dcd_controller else None, spawn_dcd=self.dcd_actor, notices=self.notices,
            )  # fmt: skip

        def informers() -> Supervisor:
            specs = [self.informer(kind, scopes) for kind in kinds]
            return Supervisor(specs, Supervision(intensity=20, period=60.0))

        return Supervisor(
            [
                ChildSpec("dgds", lambda: self.objects_supervisor("dgd"), shutdown=30.0),
                ChildSpec("adapters", lambda: self.objects_supervisor("adapter"), shutdown=15.0),
                *(
                    [ChildSpec("dcds", lambda: self.objects_supervisor("dcd"), shutdown=15.0)]
                    if self.dcd_controller
                    else []
                ),
                ChildSpec("router", router),
                ChildSpec("informers", informers, shutdown=5.0),
            ],
            Supervision(Strategy.REST_FOR_ONE, intensity=10, period=60.0),
        )

    def objects_supervisor(self, kind: Literal["dgd", "adapter", "dcd"]) -> DynamicSupervisor:
        """The supervisor of the DGD, adapter or DCD actors: one it parks is reported by a stand-in of
        the same class beside it, which says so through that controller's own status path and ends."""
        spawn = {"dgd": self.dgd_actor, "adapter": self.adapter_actor, "dcd": self.dcd_actor}[kind]

        def parked(context: Context[Any], actor_id: str, retry_in: float) -> None:
            namespace, _, name = actor_id.partition("/")
            context.ref.tell_nowait(StartChild(spawn(namespace, name, parked_for=retry_in)))

        return DynamicSupervisor(DGDS_SUPERVISION, on_parked=parked)

    def dgd_actor(self, namespace: str, name: str, *, parked_for: float | None = None) -> ChildSpec[Any]:
        """The DGD actor of ``namespace/name``, or (``parked_for``) the stand-in of a parked one."""

        def build() -> DGDActor:
            return DGDActor(
                namespace, name, reader=self.reader, syncer=self.syncer, dgd_writer=self.dgd_writer,
                recorder=self.recorder, config=self.config, wall=self.wall, keys=self.keys,
                loop=self.dgd_loop, parked_for=parked_for,
            )  # fmt: skip

        return _object_spec(namespace, name, build, parked_for)

    def adapter_actor(self, namespace: str, name: str, *, parked_for: float | None = None) -> ChildSpec[Any]:
        """The adapter actor of ``namespace/name``, or (``parked_for``) the stand-in of a parked one."""

        def build() -> AdapterActor:
            return AdapterActor(
                namespace, name, cluster=self.cluster, cache=self.cache, wall=self.wall,
                recorder=self.recorder, loop=self.adapter_loop, parked_for=parked_for,
            )  # fmt: skip

        return _object_spec(namespace, name, build, parked_for)

    def dcd_actor(self, namespace: str, name: str, *, parked_for: float | None = None) -> ChildSpec[Any]:
        """The DCD actor of ``namespace/name``, or (``parked_for``) the stand-in of a parked one."""

        def build() -> DCDActor:
            return DCDActor(
                namespace, name, reader=self.reader, syncer=self.syncer, writer=self.dcd_writer,
                recorder=self.recorder, config=self.config, gates=gates_of(self.config), wall=self.wall,
                loop=self.dcd_loop, parked_for=parked_for,
            )  # fmt: skip

        return _object_spec(namespace, name, build, parked_for)

    def informer(self, resource: Resource[Any], scopes: Sequence[str] | None) -> ChildSpec[Any]:
        def build() -> Informer:
            return Informer(
                resource, cluster=self.cluster, cache=self.cache, router=ROUTER, namespaces=scopes,
                label_selector=SELECTORS.get(str(resource)), on_rejected=self.on_rejected,
            )  # fmt: skip

        return ChildSpec(resource.plural, build, Restart.PERMANENT, shutdown=0.0)
