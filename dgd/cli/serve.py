"""The ``dgd-operator sim serve`` command: the simulated cluster as a Kubernetes API server, for kubectl.

``sim serve`` starts the in-memory API server with what a simulated cluster starts with (namespaces,
ClusterRoles, the MPI secret, and the CRDs of every kind it serves, so ``kubectl get dgd`` prints
their columns), serves it over the Kubernetes REST API (``dgd.sim.apiserver.server``) and, unless
``--no-world``, runs the simulated Grove, DCD, checkpoint and pod controllers against it in real
time: timestamps and delays are wall-clock. ``--operator`` also runs the operator in this process;
otherwise point one at it: ``dgd-operator run --kubeconfig PATH``. ``--write-kubeconfig PATH``
writes a kubeconfig for ``kubectl --kubeconfig PATH`` (``--token``: clients must send it).

It prints where it listens and runs until SIGINT or SIGTERM, then exits 0 (1 if the operator
cannot start or the address cannot be listened on, 2 for usage errors and files that cannot be read,
130 when interrupted before it serves). Like ``cli.py``, this module is the command line: it may import
``dgd.sim`` and the operator's actors.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import random
import signal
from pathlib import Path
from typing import Any

import anyio

from dgd.actors.machinery.workers import DEFAULT_WORKERS, Workers
from dgd.actors.tree import operator_children
from dgd.cli.exits import EXIT_OK, Invalid, Usage, log_to_stderr, wire
from dgd.cli.inputs import os_problem, read_config, read_world
from dgd.cli.sim import subcommands
from dgd.cluster.errors import AlreadyExists
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DEFAULT_RESOURCES, LWS_RESOURCES
from dgd.domain.crds import all_crds
from dgd.domain.gates import GateError, effective_config, resolve_gates, served_apis
from dgd.messages.config import OperatorConfig
from dgd.messages.timestamps import wall_clock
from dgd.runtime import ActorSystem, ChildSpec, LoopClock, Supervision, Supervisor
from dgd.sim import WorldSettings
from dgd.sim import run as run_loop
from dgd.sim.admission import SIMULATED_OPERATOR, simulated_admission, webhook_chain
from dgd.sim.apiserver.catalog import CUSTOM_RESOURCE_DEFINITION
from dgd.sim.apiserver.server import Facade, serve, write_kubeconfig
from dgd.sim.conversion import webhook_conversion
from dgd.sim.key_pool import KeyPool
from dgd.sim.schema import crd_schema_check
from dgd.sim.world import bootstrap as world_bootstrap
from dgd.sim.world.bootstrap import Discovery, bootstrap
from dgd.sim.world.checkpoint import CheckpointController
from dgd.sim.world.controller import WorldController
from dgd.sim.world.deployment import DeploymentController
from dgd.sim.world.grove import GroveController
from dgd.sim.world.lws import LeaderWorkerSetController
from dgd.sim.world.pods import PodLifecycle
from dgd.sim.world.replicaset import ReplicaSetController

#: Every kind the served cluster stores: the simulation's, and the CRDs that describe them.
SERVED_RESOURCES = (*DEFAULT_RESOURCES, CUSTOM_RESOURCE_DEFINITION)

#: Changes the served API server keeps for watches to resume from, and lets a watch fall behind.
HISTORY = 10_000


def add_commands(commands: Any) -> None:
    """Add ``serve`` to the ``sim`` command of the ``dgd-operator`` parser (``cli_sim`` adds ``sim``)."""
    sim_commands = subcommands(commands)
    parser = sim_commands.add_parser(
        "serve",
        help="serve a simulated cluster over the Kubernetes API, for kubectl and dgd-operator run",
        description=(
            "Serve an in-memory Kubernetes API server (with the simulation's starting objects and the CRDs) "
            "over the Kubernetes REST API, and run the simulated Grove, DCD, checkpoint and pod controllers "
            "against it in real time, so kubectl and 'dgd-operator run --kubeconfig PATH' can use it. Prints "
            "where it listens; runs until SIGINT or SIGTERM."
        ),
    )
    parser.add_argument(
        "--port", type=int, default=0, metavar="PORT", help="TCP port to listen on (default 0: any free port)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", metavar="HOST", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--write-kubeconfig", type=Path, metavar="PATH", help="write a kubeconfig for this server to PATH"
    )
    parser.add_argument(
        "--namespace",
        default="default",
        metavar="NS",
        help="namespace of the kubeconfig's context (default default)",
    )
    parser.add_argument(
        "--token", metavar="TOKEN", help="require this bearer token (written to the kubeconfig)"
    )
    parser.add_argument(
        "--no-world",
        action="store_true",
        help="do not run the simulated Grove, DCD, checkpoint and pod controllers",
    )
    parser.add_argument("--operator", action="store_true", help="also run the operator in this process")
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed of uids and generated names (default 0)"
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="operator configuration file (YAML): bootstrap objects, gates",
    )
    parser.add_argument(
        "--world",
        type=Path,
        metavar="FILE",
        help="world settings file (YAML: schedule_delay, ready_delay, capacity, namespaces, ...)",
    )
    wire(
        parser,
        _serve,
        ok="stopped by SIGINT or SIGTERM",
        failed="the operator cannot start, or the address cannot be listened on",
    )


def _serve(args: argparse.Namespace) -> int:
    log_to_stderr(logging.WARNING)
    if not 0 <= args.port <= 65535:
        raise Usage(f"--port: {args.port} is not between 0 and 65535")
    server = _Server(args, read_config(args.config), read_world(args.world))
    try:
        return run_loop(server.main, virtual=False, use_uvloop=True)
    except GateError as exc:
        raise Invalid(f"the operator cannot start: {exc}") from None
    except OSError as exc:
        raise Invalid(f"cannot listen on {args.host}:{args.port}: {os_problem(exc)}") from None


class _Server:
    """One ``sim serve`` run: the API server, its bootstrap, the world (and operator), the facade."""

    def __init__(self, args: argparse.Namespace, config: OperatorConfig, settings: WorldSettings) -> None:
        self._args = args
        self._config = config
        self._settings = settings
        self._seeds = random.Random(args.seed)
        # LeaderWorkerSet's kinds are served where the world says the cluster has it installed.
        lws = world_bootstrap.discovery(settings).serves("leaderworkerset.x-k8s.io")
        self._resources = SERVED_RESOURCES + (LWS_RESOURCES if lws else ())

    async def main(self) -> int:
        cluster = MemoryCluster(
            resources=self._resources,
            clock=wall_clock,
            rng=random.Random(self._seeds.getrandbits(64)),
            history_size=HISTORY,
            watch_buffer=HISTORY,
            # The operator's webhooks, in process: what `validate` refuses, kubectl is refused too.
            admission=webhook_chain(
                simulated_admission(self._config, self._settings),
                served_groups=world_bootstrap.discovery(self._settings).group_versions,
            ),
            schema_check=crd_schema_check,
            user=SIMULATED_OPERATOR,
        )
        # What the cluster starts with, written by the world's own client.
        world = cluster.client()
        discovery = await bootstrap(world, self._settings, self._config)
        for crd in all_crds():
            with contextlib.suppress(AlreadyExists):
                await world.create(CUSTOM_RESOURCE_DEFINITION, crd)
        children: list[ChildSpec[Any]] = []
        if not self._args.no_world:
            children.append(ChildSpec("world", lambda: self._world(world, discovery), shutdown=30.0))
        if self._args.operator:
            children += self._operator(cluster.client(), discovery)
        system = ActorSystem(children, clock=LoopClock(), random=random.Random(self._seeds.getrandbits(64)))
        # The operator's conversion webhook, in process: kubectl may read and write v1alpha1 too.
        facade = Facade(
            cluster, resources=self._resources, token=self._args.token, conversion=webhook_conversion
        )
        async with system, serve(facade, self._args.host, self._args.port) as url:
            # The handlers first: whoever reads the announcement may signal at once.
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                self._announce(url)
                async for _ in signals:
                    break
        print("dgd-operator sim serve: stopped", flush=True)
        return EXIT_OK

    def _announce(self, url: str) -> None:
        print(f"dgd-operator sim serve: serving the simulated cluster at {url}", flush=True)
        path = self._args.write_kubeconfig
        if path is not None:
            write_kubeconfig(path, url, token=self._args.token, namespace=self._args.namespace)
            print(f"dgd-operator sim serve: kubeconfig written to {path}", flush=True)
            print(f"  try: kubectl --kubeconfig {path} get dynamographdeployments", flush=True)

    def _world(self, cluster: Cluster, discovery: Discovery) -> Supervisor:
        """The simulated controllers, on the wall clock (as ``SimulatedCluster`` runs them on its own)."""

        def current() -> WorldSettings:
            return self._settings

        def spec(name: str, kind: type[WorldController]) -> ChildSpec[Any]:
            return ChildSpec(name, lambda: kind(cluster, current, wall_clock))

        specs = [spec("pods", PodLifecycle)]
        if discovery.serves("grove.io"):
            specs.append(spec("grove", GroveController))
        # The operator (this process's or one run against this server) runs the DCD controller: the
        # world plays what Kubernetes makes of its output.
        specs += [spec("deployments", DeploymentController), spec("replicasets", ReplicaSetController)]
        if discovery.serves("leaderworkerset.x-k8s.io"):
            specs.append(spec("leaderworkersets", LeaderWorkerSetController))
        specs.append(spec("checkpoints", CheckpointController))
        return Supervisor(specs, Supervision(intensity=20, period=60.0))

    def _operator(self, cluster: Cluster, discovery: Discovery) -> list[ChildSpec[Any]]:
        gates = resolve_gates(self._config, served_apis(discovery.group_versions))
        return list(
            operator_children(
                cluster,
                config=effective_config(self._config, gates),
                wall=wall_clock,
                instance="dgd-operator-sim",
                keys=KeyPool(random.Random(self._seeds.getrandbits(64))),
                workers=Workers(DEFAULT_WORKERS),
                dcd_controller=True,
                dcd_workers=Workers(DEFAULT_WORKERS),
            )
        )
