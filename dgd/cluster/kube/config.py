"""Where the kube adapter finds its API server: a kubeconfig, ``$KUBECONFIG``, or the pod's service account.

Order: the ``kubeconfig`` path given (``--kubeconfig``); else ``$KUBECONFIG`` (a list of paths
separated by ``:``, merged as kubectl merges them); else, inside a pod
(``KUBERNETES_SERVICE_HOST`` is set), the in-cluster service account, whose token is re-read as
it rotates; else ``~/.kube/config``. ``context`` picks a kubeconfig context other than the current one.
"""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config.config_exception import ConfigException

from dgd.cluster.errors import ClusterError


class ConfigError(ClusterError, reason="ConfigError"):
    """No usable cluster configuration (missing or malformed kubeconfig, not in a pod)."""


async def api_client(kubeconfig: str | Path | None = None, *, context: str | None = None) -> ApiClient:
    """A kubernetes-asyncio ``ApiClient`` for the cluster the configuration names (see the module)."""
    configuration = Configuration()
    path = str(kubeconfig) if kubeconfig is not None else os.environ.get("KUBECONFIG")
    try:
        if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            await config.load_kube_config(
                config_file=path or os.path.expanduser("~/.kube/config"),
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, OSError) as error:
        where = path or "the in-cluster service account or ~/.kube/config"
        raise ConfigError(f"cannot load the cluster configuration from {where}: {error}") from None
    return ApiClient(configuration)
