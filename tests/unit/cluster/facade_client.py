"""An HTTP client of the served facade and the objects and watch lines the facade tests send and read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio
import msgspec

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.messages.base import JSONObject
from dgd.sim.apiserver.server import Facade

NS = "team-a"
CONFIG_MAPS = f"/api/v1/namespaces/{NS}/configmaps"
DGDS = f"/apis/nvidia.com/v1beta1/namespaces/{NS}/dynamographdeployments"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@dataclass
class Served:
    cluster: MemoryCluster
    facade: Facade
    url: str
    http: aiohttp.ClientSession

    async def call(self, method: str, path: str, body: Any = None, **options: Any) -> tuple[int, Any]:
        headers = options.pop("headers", {})
        if body is not None and not isinstance(body, bytes):
            body = msgspec.json.encode(body)
            headers.setdefault("Content-Type", "application/json")
        async with self.http.request(
            method, self.url + path, data=body, headers=headers, **options
        ) as response:
            return response.status, msgspec.json.decode(await response.read())


def config_map(name: str = "settings", **labels: str) -> JSONObject:
    metadata: JSONObject = {"name": name, "namespace": NS}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}


def dgd(name: str = "graph") -> JSONObject:
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"backendFramework": "vllm"},
    }


async def lines(response: aiohttp.ClientResponse, count: int) -> list[JSONObject]:
    """The next ``count`` watch events of a streaming response."""
    events: list[JSONObject] = []
    with anyio.fail_after(5):
        while len(events) < count:
            line = await response.content.readline()
            if not line:
                break
            events.append(msgspec.json.decode(line))
    return events
