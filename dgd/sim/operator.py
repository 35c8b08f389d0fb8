"""The operator's actor tree on a simulated cluster, as ``sim apply``, ``sim replay`` and chaos run it.

``simulated_operator(settings, seed=..., config=...)`` is a ``SimulatedCluster`` whose operator is the
whole actor tree of ``dgd.actors.tree``, with its feature gates resolved against the simulated
cluster's discovery (``GateError`` on entering if the configuration cannot start), cluster time for
timestamps, and MPI SSH keys drawn from the simulation's fixed pool by a generator seeded with
``seed`` (``dgd.sim.key_pool``) — so one seed gives one run. Its DGD reconciles share as many workers
as the daemon's by default (``workers``; ``None``: no bound).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from dgd.actors.machinery.loop import ReconcileObserver
from dgd.actors.machinery.workers import DEFAULT_WORKERS, Workers
from dgd.actors.tree import operator_children
from dgd.cluster.protocol import Cluster
from dgd.domain.gates import effective_config, resolve_gates, served_apis
from dgd.messages.config import OperatorConfig
from dgd.runtime import ChildSpec, Metrics
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.key_pool import KeyPool
from dgd.sim.world.settings import WorldSettings

#: The operator instance name its events report.
INSTANCE = "dgd-operator-sim"


def simulated_operator(
    settings: WorldSettings,
    *,
    seed: int,
    config: OperatorConfig,
    metrics: Metrics | None = None,
    reconciles: ReconcileObserver | None = None,
    workers: int | None = DEFAULT_WORKERS,
    admission: bool = True,
    dcd_controller: bool = True,
) -> SimulatedCluster:
    """A simulated cluster running the operator (see the module); enter it to start both
    (``admission=False``: without the operator's webhooks installed)."""
    holder: list[SimulatedCluster] = []

    def operator(cluster: Cluster) -> Sequence[ChildSpec[Any]]:
        sim = holder[0]
        gates = resolve_gates(config, served_apis(sim.discovery.group_versions))
        return operator_children(
            cluster,
            config=effective_config(config, gates),
            wall=sim.now,
            instance=INSTANCE,
            keys=KeyPool(random.Random(seed)),
            reconciles=reconciles,
            workers=Workers(workers) if workers is not None else None,
            dcd_controller=dcd_controller,
            dcd_workers=Workers(workers) if workers is not None else None,
        )

    sim = SimulatedCluster(
        settings,
        seed=seed,
        config=config,
        operator=operator,
        metrics=metrics,
        admission=admission,
        deployments=dcd_controller,
    )
    holder.append(sim)
    return sim
