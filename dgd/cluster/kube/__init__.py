"""The port onto a real API server, through kubernetes-asyncio.

:mod:`~dgd.cluster.kube.adapter` (``KubeCluster``), :mod:`~dgd.cluster.kube.wire` (requests and
responses decoded straight into msgspec Structs), :mod:`~dgd.cluster.kube.watch` (the watch loop),
:mod:`~dgd.cluster.kube.rate` (the client-side QPS/burst limit), :mod:`~dgd.cluster.kube.config`
(kubeconfig and in-cluster credentials).
"""

from dgd.cluster.kube.lean_client import install

# Before any module of this package imports kubernetes-asyncio's client: its generated classes stay out.
install()
