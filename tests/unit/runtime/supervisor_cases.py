"""What the supervision tests read off a running system: its asyncio tasks and each actor's state and
restarts.
"""

from __future__ import annotations

import asyncio

from dgd.runtime import ActorSystem


def asyncio_tasks() -> set[asyncio.Task[object]]:
    return set(asyncio.all_tasks())


def states(system: ActorSystem) -> dict[str, tuple[str, int]]:
    return {info.path: (info.state, info.restarts) for info in system.tree()}
