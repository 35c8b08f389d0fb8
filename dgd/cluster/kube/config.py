"""Where the kube adapter finds its API server: a kubeconfig, ``$KUBECONFIG``, or the pod's service account.

Order: the ``kubeconfig`` path given (``--kubeconfig``); else ``$KUBECONFIG`` (a list of paths
separated by ``:``, merged as kubectl merges them); else, inside a pod
(``KUBERNETES_SERVICE_HOST`` is set), the in-cluster service account, whose token is re-read as
it rotates; else ``~/.kube/config``. ``context`` picks a kubeconfig context other than the current one.

A proxy is the kubeconfig's ``proxy-url``, else the environment's (``HTTPS_PROXY``/``HTTP_PROXY``, with
``NO_PROXY``), read once here, as client-go's ``ProxyFromEnvironment`` reads it once. The client's
HTTP session then trusts no environment: kubernetes-asyncio opens it with aiohttp's ``trust_env``,
which looked the proxy variables up and read ``~/.netrc`` in worker threads on every request (issue
18: about a tenth of the daemon's CPU); client-go never reads ``.netrc``, and neither do we.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
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
    if not configuration.proxy:
        configuration.proxy = environment_proxy(configuration.host or "")
    api = ApiClient(configuration)
    rest = api.rest_client
    session = rest.pool_manager
    connector = session.connector
    session.detach()
    # The same read buffer as kubernetes-asyncio's: a watch event may hold an object of up to etcd's
    # 1.5 MiB.
    rest.pool_manager = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=2**21)
    return api


def environment_proxy(server: str) -> str | None:
    """The proxy the environment names for ``server`` (``None`` if none, if ``NO_PROXY`` covers it, or for
    a loopback server, which client-go never proxies either)."""
    where = urlsplit(server)
    host = where.hostname
    if not host or host == "localhost" or urllib.request.proxy_bypass(host):
        return None
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            return None
    return urllib.request.getproxies_environment().get(where.scheme or "https")
