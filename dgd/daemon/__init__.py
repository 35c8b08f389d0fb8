"""The in-cluster daemon: what ``dgd-operator run`` adds around the operator's actor tree.

* :mod:`dgd.daemon.run` — the process's life: servers, leader election, the operator, shutdown;
* :mod:`dgd.daemon.lease` (pure decisions) and :mod:`dgd.daemon.election` (their effects) — leader
  election on a ``coordination.k8s.io/v1`` Lease through the cluster port;
* :mod:`dgd.daemon.metrics` — Prometheus metrics under controller-runtime's names, fed by the actor
  runtime's hooks; :mod:`dgd.daemon.rest_client` — the counting, fencing view of the cluster port;
* :mod:`dgd.daemon.probes` and :mod:`dgd.daemon.servers` — ``/healthz``, ``/readyz``, ``/metrics``;
* :mod:`dgd.daemon.logs` — JSON or text lines with actor context, secrets redacted.

It depends on ``actors``, ``cluster``, ``domain`` and ``messages``; only the command line imports it.
"""
