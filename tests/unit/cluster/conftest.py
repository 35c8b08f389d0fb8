"""Cluster tests run on anyio's asyncio backend; the facade tests get a served facade to call."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import aiohttp
import pytest

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DEFAULT_RESOURCES
from dgd.domain.crds import all_crds
from dgd.sim.apiserver.catalog import CUSTOM_RESOURCE_DEFINITION
from dgd.sim.apiserver.server import Facade, serve
from tests.unit.cluster.facade_client import NS, Served


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    resources = (*DEFAULT_RESOURCES, CUSTOM_RESOURCE_DEFINITION)
    cluster = MemoryCluster(
        resources=resources, rng=random.Random(1), bookmark_interval=0.05, namespaces=(NS,)
    )
    for crd in all_crds():
        await cluster.create(CUSTOM_RESOURCE_DEFINITION, crd)
    facade = Facade(cluster, resources=resources, clock=lambda: 1_767_225_600.0)
    async with serve(facade) as url, aiohttp.ClientSession() as http:
        yield Served(cluster, facade, url, http)
