"""The simulation: a cluster in one process, on a virtual clock, replayable from one seed.

* :class:`SimulatedCluster` — the memory API server, its bootstrap objects and the world models
  (simulated Grove, DCD controller, checkpoint controller, scheduler and kubelets) under one actor
  system; ``async with SimulatedCluster(WorldSettings(...), seed=...) as sim``.
* :class:`WorldSettings`, :class:`ClusterTopology` — the world's knobs (delays, capacity, topology,
  served API groups), changeable at run time with ``sim.reconfigure``.
* :func:`run` — run a coroutine on the virtual-time loop (:class:`VirtualEventLoop`) or in real time.
"""

from dgd.sim.clock import EPOCH, VirtualEventLoop, backend_options, is_virtual, run
from dgd.sim.cluster import CHECKPOINTS, DCDS, GROVE, PODS, WORLD, SimulatedCluster
from dgd.sim.world.bootstrap import Discovery
from dgd.sim.world.settings import ClusterTopology, WorldSettings

__all__ = [
    "CHECKPOINTS",
    "DCDS",
    "EPOCH",
    "GROVE",
    "PODS",
    "WORLD",
    "ClusterTopology",
    "Discovery",
    "SimulatedCluster",
    "VirtualEventLoop",
    "WorldSettings",
    "backend_options",
    "is_virtual",
    "run",
]
