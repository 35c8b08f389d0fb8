"""The API port and its adapters.

* the port: :mod:`dgd.cluster.protocol` (what actors may do to the API), :mod:`dgd.cluster.errors` (the one
  error set every adapter raises), :mod:`dgd.cluster.resources` (the resource table), and
  :mod:`dgd.cluster.merge_patch` (what a JSON merge patch means);
* :mod:`dgd.cluster.memory` — an in-memory API server with the real one's semantics;
* :mod:`dgd.cluster.kube` — the adapter onto a real API server (kubernetes-asyncio).

It depends only on ``dgd.messages`` (an import-linter contract holds it).
"""
