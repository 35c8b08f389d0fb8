"""What the chaos tests share: DGD actors and their children killed at random in cluster time, and
the wait for every graph to be successful."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

import anyio

from dgd.actors.tree import DGDS
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DGD
from tests.scenarios.grove.stage import NS, Stage


async def kill_at_random(
    stage: Stage, rng: random.Random, every: float, kills: list[tuple[float, str]]
) -> None:
    """Kill one running DGD actor or DGD child every ``every`` seconds of cluster time (jittered by
    ``rng``), forever; ``kills`` gets (loop time, path) of each."""
    while True:
        await anyio.sleep(every * (0.5 + rng.random()))
        paths = [
            info.path
            for info in stage.sim.system.tree()
            if info.path.startswith(f"{DGDS}/") and info.state == "running"
        ]
        if paths:
            victim = rng.choice(sorted(paths))
            if stage.sim.kill(victim):
                kills.append((anyio.current_time(), victim))


def all_successful(client: Cluster, count: int) -> Callable[[], Awaitable[bool]]:
    """Whether ``count`` DGDs exist, as ``client`` lists them, and every one is successful."""

    async def check() -> bool:
        listed = (await client.list(DGD, namespace=NS)).items
        return len(listed) == count and all(
            d.status is not None and d.status.state == "successful" for d in listed
        )

    return check
