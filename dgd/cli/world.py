"""The ``dgd-operator sim world`` command: the simulation's world models against any API server.

Like kwok does for nodes, ``sim world --kubeconfig PATH`` plays, against a Kubernetes API server
reached through the kube adapter, the controllers a DGD needs but the operator does not run: the
simulated Grove (PodCliqueSets to PodCliques, scaling groups and pods), the DCD controller, the
DynamoCheckpoint job controller, and the scheduler and kubelets of their pods. So a DGD can reach
``successful`` on a cluster with no GPUs and no Grove: only the CRDs are needed.

Each controller runs when its API is served (Grove: the ``grove.io`` group; DCDs and checkpoints:
their resources answer a list); the pods' always; kube-controller-manager's Deployment and
ReplicaSet controllers only with ``--deployments`` (for an API server without one). When DRA
(``resource.k8s.io/v1``) is served, it registers NVIDIA's ``gpu.nvidia.com`` DeviceClass if
absent, as the GPU DRA driver of a GPU cluster does (GPU memory service claims use it by default).
Time is the wall clock. ``--namespace`` limits every controller to one namespace. It runs until
SIGINT or SIGTERM, then exits 0 (1 when the API server cannot be reached, 2 for usage errors and
files that cannot be read, 130 when interrupted before it runs). Like ``cli.py``, this module is the
command line: it may import ``dgd.sim`` and the kube adapter.
"""

from __future__ import annotations

import argparse
import logging
import signal
from pathlib import Path
from typing import Any

import anyio
import msgspec

from dgd.cli.exits import EXIT_OK, Invalid, Usage, cluster_problem, field_problem, log_to_stderr, wire
from dgd.cli.inputs import check_kubeconfig, read_world
from dgd.cli.sim import subcommands
from dgd.cluster.errors import ClusterError, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.proxy import ClusterProxy
from dgd.cluster.resources import CHECKPOINT, DCD, NODE, Resource
from dgd.cluster.retry import RetryingCluster
from dgd.messages.timestamps import wall_clock
from dgd.runtime import ActorSystem, ChildSpec, LoopClock, Supervision, Supervisor
from dgd.sim import WorldSettings
from dgd.sim import run as run_loop
from dgd.sim.world.bootstrap import ensure_gpu_device_class
from dgd.sim.world.checkpoint import CheckpointController
from dgd.sim.world.controller import WorldController
from dgd.sim.world.dcd import DCDController
from dgd.sim.world.deployment import DeploymentController
from dgd.sim.world.grove import GroveController
from dgd.sim.world.node import NodeHeartbeat
from dgd.sim.world.pods import PodLifecycle
from dgd.sim.world.replicaset import ReplicaSetController

DESCRIPTION = (
    "Run the simulation's world models against a Kubernetes API server, in real time, as kwok does for "
    "nodes: the simulated Grove (when grove.io is served), the DCD controller, the DynamoCheckpoint job "
    "controller (when their resources are served) and the scheduler and kubelets of their pods. Apply the "
    "CRDs first (deploy/crds/; for Grove, the Grove CRDs). Runs until SIGINT or SIGTERM."
)


def add_commands(commands: Any) -> None:
    """Add ``world`` to the ``sim`` command of the ``dgd-operator`` parser (``cli_sim`` adds ``sim``)."""
    parser = subcommands(commands).add_parser(
        "world",
        help="run the simulated Grove, DCD, checkpoint and pod controllers against any API server",
        description=DESCRIPTION,
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig of the API server (default: $KUBECONFIG, else the in-cluster service account, "
        "else ~/.kube/config)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "--namespace", metavar="NS", help="act only in this namespace (default: every namespace)"
    )
    parser.add_argument(
        "--world",
        type=Path,
        metavar="FILE",
        help="world settings file (YAML: schedule_delay, ready_delay, capacity, ...); flags override it",
    )
    defaults = WorldSettings()
    for flag, field, what in (
        ("--schedule-delay", "schedule_delay", "seconds from a pod's creation to its binding"),
        ("--ready-delay", "ready_delay", "seconds from a pod's binding to Running and Ready"),
        ("--termination-delay", "termination_delay", "seconds a deleted pod takes to terminate"),
        ("--checkpoint-delay", "checkpoint_delay", "seconds a checkpoint job takes"),
    ):
        parser.add_argument(
            flag,
            type=float,
            metavar="SECONDS",
            dest=field,
            help=f"{what} (default {getattr(defaults, field):g})",
        )
    parser.add_argument(
        "--checkpoint-outcome",
        choices=("Ready", "Failed"),
        help="how checkpoint jobs end (default Ready)",
    )
    parser.add_argument(
        "--capacity",
        type=int,
        metavar="PODS",
        help="pods that may run at once; the rest stay pending (default: no limit)",
    )
    parser.add_argument(
        "--deployments",
        action="store_true",
        help="also play kube-controller-manager's Deployment and ReplicaSet controllers (off by default: "
        "the DCD controller above makes the DCDs' pods itself; and never beside a real "
        "kube-controller-manager, which runs them already)",
    )
    parser.add_argument(
        "--qps", type=float, default=50.0, help="client-side rate limit, requests per second (default 50)"
    )
    parser.add_argument("--burst", type=int, default=100, help="client-side rate limit burst (default 100)")
    wire(parser, _world, ok="stopped by SIGINT or SIGTERM", failed="the API server cannot be reached")


def settings(args: argparse.Namespace) -> WorldSettings:
    """The world settings: the ``--world`` file's, then each flag given."""
    base = read_world(args.world)
    changes = {
        field: getattr(args, field)
        for field in ("schedule_delay", "ready_delay", "termination_delay", "checkpoint_delay")
        if getattr(args, field) is not None
    }
    if args.checkpoint_outcome is not None:
        changes["checkpoint_outcome"] = args.checkpoint_outcome
    if args.capacity is not None:
        changes["capacity"] = args.capacity
    try:
        return msgspec.convert(msgspec.to_builtins(msgspec.structs.replace(base, **changes)), WorldSettings)
    except msgspec.ValidationError as exc:
        # The file's values were checked already: a flag is wrong.
        field, _, what = field_problem(str(exc)).partition(": ")
        raise Usage(f"--{field.replace('_', '-')} {getattr(args, field, '')}: {what}") from None


def _world(args: argparse.Namespace) -> int:
    log_to_stderr(logging.WARNING)
    chosen = settings(args)
    if args.qps <= 0 or args.burst <= 0:
        raise Usage("--qps and --burst must be positive")
    check_kubeconfig(args.kubeconfig)
    try:
        code: int = run_loop(_main, args, chosen, virtual=False, use_uvloop=True)
    except ClusterError as exc:
        raise Invalid(f"cannot run against the API server: {cluster_problem(exc)}") from None
    return code


async def _main(args: argparse.Namespace, chosen: WorldSettings) -> int:
    from dgd.cluster.kube.adapter import KubeCluster

    async with await KubeCluster.from_config(
        args.kubeconfig, context=args.context, qps=args.qps, burst=args.burst
    ) as kube:
        # A real API server answers "not now" (429 while a new CRD's storage starts, 5xx, timeouts):
        # the world waits for it rather than exiting.
        retrying = RetryingCluster(kube)
        served = await kube.group_versions()
        cluster: Cluster = Namespaced(retrying, args.namespace) if args.namespace else retrying
        controllers = await _controllers(cluster, served, deployments=args.deployments)

        def current() -> WorldSettings:
            return chosen

        def spec(name: str, kind: type[WorldController]) -> ChildSpec[Any]:
            return ChildSpec(name, lambda: kind(cluster, current, wall_clock))

        world = Supervisor(
            [spec(name, kind) for name, kind in controllers], Supervision(intensity=20, period=60.0)
        )
        system = ActorSystem([ChildSpec("world", lambda: world, shutdown=30.0)], clock=LoopClock())
        where = f"namespace {args.namespace}" if args.namespace else "every namespace"
        names = ", ".join(name for name, _ in controllers)
        # Signals are heard from here on: one that comes while the world starts stops it once it runs.
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            if "resource.k8s.io/v1" in served:
                await ensure_gpu_device_class(retrying)
            async with system:
                print(f"dgd-operator sim world: running {names} in {where}", flush=True)
                async for _ in signals:
                    break
    print("dgd-operator sim world: stopped", flush=True)
    return EXIT_OK


async def _controllers(
    cluster: Cluster, served: list[str], *, deployments: bool = False
) -> list[tuple[str, type[WorldController]]]:
    """The world models whose APIs the cluster serves, in the simulation's order (the Deployment
    and ReplicaSet controllers only if ``deployments``)."""
    # The node first: a real control plane deletes pods bound to a node that does not exist.
    found: list[tuple[str, type[WorldController]]] = []
    if await _serves(cluster, NODE):
        found.append(("node", NodeHeartbeat))
    found.append(("pods", PodLifecycle))
    if any(gv.startswith("grove.io/") for gv in served):
        found.append(("grove", GroveController))
    for name, kind, resource in (
        ("dcd", DCDController, DCD),
        ("checkpoints", CheckpointController, CHECKPOINT),
    ):
        if f"{resource.group}/{resource.version}" in served and await _serves(cluster, resource):
            found.append((name, kind))
        else:
            missing = f"{resource.plural}.{resource.group}"
            print(f"dgd-operator sim world: {missing} is not served: no {name} controller", flush=True)
    if deployments:
        found += [("deployments", DeploymentController), ("replicasets", ReplicaSetController)]
    return found


async def _serves(cluster: Cluster, resource: Resource[Any]) -> bool:
    try:
        await cluster.list(resource)
    except NotFound:
        return False
    return True


class Namespaced(ClusterProxy):
    """The cluster port with every list and watch of a namespaced kind narrowed to one namespace."""

    def __init__(self, inner: Cluster, namespace: str) -> None:
        super().__init__(inner)
        self._namespace = namespace

    def scope(self, resource: Resource[Any], namespace: str | None) -> str | None:
        return namespace or (self._namespace if resource.namespaced else None)
