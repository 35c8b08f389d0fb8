"""The kube adapter's configuration: the kubeconfig, its token, the netrc it ignores and the proxy the
environment names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web

from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.kube.config import ConfigError, environment_proxy
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CONFIG_MAP
from dgd.sim.apiserver.server import Facade, serve, write_kubeconfig
from tests.unit.cluster.kube_server import NS, fake_api_server

pytestmark = pytest.mark.anyio


async def test_from_config_reads_a_kubeconfig_with_a_token(tmp_path: Path) -> None:
    # given a facade that requires a token, and the kubeconfig sim serve writes for it
    facade = Facade(MemoryCluster(namespaces=(NS,)), token="s3cret")
    async with serve(facade) as url:
        path = tmp_path / "kubeconfig"
        write_kubeconfig(path, url, token="s3cret")

        # when the adapter is built from that file
        async with await KubeCluster.from_config(path) as cluster:
            listed = await cluster.list(CONFIG_MAP)
            served = await cluster.group_versions()

    # then it reached the server with the token
    assert listed.items == []
    assert "v1" in served and "nvidia.com/v1beta1" in served and "apps/v1" in served


async def test_from_config_uses_the_kubeconfig_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given $KUBECONFIG naming a kubeconfig for a facade
    async with serve(Facade(MemoryCluster(namespaces=(NS,)))) as url:
        path = tmp_path / "sim.kubeconfig"
        write_kubeconfig(path, url)
        monkeypatch.setenv("KUBECONFIG", str(path))

        # when the adapter is built with no path
        async with await KubeCluster.from_config() as cluster:
            namespaces = await cluster.list(CONFIG_MAP)

    # then it used that file
    assert namespaces.items == []


async def test_a_netrc_file_is_not_read_and_the_token_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a .netrc with credentials for the API server's host (client-go never reads one)
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": []})

    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n", encoding="utf-8")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    async with fake_api_server(handler) as url:
        path = tmp_path / "kubeconfig"
        write_kubeconfig(path, url, token="s3cret")

        # when the adapter built from the kubeconfig lists
        async with await KubeCluster.from_config(path) as cluster:
            listed = await cluster.list(CONFIG_MAP)

    # then the request carried the kubeconfig's token alone
    assert listed.items == []
    assert seen == ["Bearer s3cret"]


async def test_the_proxy_the_environment_names_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given HTTP_PROXY naming a proxy, and a kubeconfig for a server only the proxy knows
    asked: list[str] = []

    async def proxy(request: web.Request) -> web.Response:
        asked.append(str(request.url))
        return web.json_response({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": []})

    async with fake_api_server(proxy) as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        path = tmp_path / "kubeconfig"
        write_kubeconfig(path, "http://kube-api.invalid:6443")

        # when the adapter built from it lists
        async with await KubeCluster.from_config(path) as cluster:
            await cluster.list(CONFIG_MAP)

    # then the request went through the proxy, for the server's URL
    assert asked == ["http://kube-api.invalid:6443/api/v1/configmaps"]


@pytest.mark.parametrize(
    ("server", "no_proxy", "expected"),
    [
        ("https://kube.example:6443", "", "http://proxy:3128"),
        ("https://kube.example:6443", "example", None),
        ("https://kube.example:6443", "kube.example", None),
        ("https://127.0.0.1:6443", "", None),
        ("https://localhost:6443", "", None),
    ],
)
def test_environment_proxy_follows_no_proxy_and_never_proxies_loopback(
    monkeypatch: pytest.MonkeyPatch, server: str, no_proxy: str, expected: str | None
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    if no_proxy:
        monkeypatch.setenv("NO_PROXY", no_proxy)

    assert environment_proxy(server) == expected


async def test_missing_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        await KubeCluster.from_config(tmp_path / "absent")

    assert "absent" in str(raised.value)
