"""A fleet of DGDs on one simulated cluster with the operator running: what the Grove and Component
benchmarks (``grove.py``, ``component.py``) share.

``simulated_fleet`` is the cluster ``sim apply`` runs (``dgd.sim.operator``): the operator's whole
actor tree with default world settings and configuration, reporting to the given metrics, except
that DGD reconciles are not bounded (``workers=None``), so the benchmarks see the tree itself scale.
``count_writes`` counts the operator's own writes, ``DGDReconciles`` the DGD actors' reconciles, and
``Cost`` is what bringing the fleet somewhere cost. Imported as ``fleet`` by scripts run as
``python bench/<name>.py``, once they have put the repository root on ``sys.path``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dgd.cluster.memory.faults import Delay, FaultRule
from dgd.messages.config import OperatorConfig
from dgd.runtime import Metrics, NullMetrics
from dgd.sim import SimulatedCluster, WorldSettings
from dgd.sim.operator import simulated_operator

#: The DGD every member of the fleet is a copy of: a frontend and a two-replica worker.
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agg.yaml"
#: The verbs that count as writes.
WRITE_VERBS = ("create", "update", "patch", "delete")


@dataclass
class Cost:
    """What bringing the fleet somewhere cost: wall seconds, cluster (virtual) seconds, reconciles and
    the operator's API writes."""

    wall: float = 0.0
    cluster_seconds: float = 0.0
    reconciles: int = 0
    writes: int = 0


class DGDReconciles(NullMetrics):
    """Counts the messages DGD actors (``/operator/dgds/<namespace>/<name>``) handled, and nothing else:
    the runtime's ``CountingMetrics`` also keeps every ask's latency and a counter per actor, which for
    a fleet of thousands of DGDs weighs on the memory a benchmark measures."""

    def __init__(self) -> None:
        self.count = 0

    def message_processed(self, path: str, message_type: type) -> None:
        if path.count("/") == 4:
            self.count += 1


def simulated_fleet(seed: int, metrics: Metrics) -> SimulatedCluster:
    """The simulated cluster running the operator (see the module), reporting to ``metrics``; enter it
    to start both."""
    return simulated_operator(
        WorldSettings(), seed=seed, config=OperatorConfig(), metrics=metrics, workers=None
    )


def count_writes(sim: SimulatedCluster) -> FaultRule:
    """A fault rule on the operator's client that delays nothing and counts (``fired``) every write it
    makes; the world models and the benchmark's own client are other clients, not counted. Call it
    once the cluster has been entered."""
    return sim.cluster.faults.add(Delay(0.0), verb=WRITE_VERBS)
