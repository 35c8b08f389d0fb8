"""The in-memory API server: the port served from a dictionary with a real API server's semantics.

:mod:`~dgd.cluster.memory.adapter` (``MemoryCluster``, the port; its request bodies and scale view in
:mod:`~dgd.cluster.memory.bodies`) over :mod:`~dgd.cluster.memory.server`
(verbs), :mod:`~dgd.cluster.memory.preconditions` (what a request must meet),
:mod:`~dgd.cluster.memory.store` (objects and resourceVersions), :mod:`~dgd.cluster.memory.watch`
(watch history, bookmarks, 410 Gone), :mod:`~dgd.cluster.memory.garbage` (ownerReference collection),
:mod:`~dgd.cluster.memory.strategies` (per-kind create/update rules), :mod:`~dgd.cluster.memory.validation`,
:mod:`~dgd.cluster.memory.selectors` and :mod:`~dgd.cluster.memory.faults` (injected errors and latency).
"""
