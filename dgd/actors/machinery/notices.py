"""Which objects this operator just wrote, told to the router.

A write is recorded in the operator's cache as it is answered, so its watch event reaches the router
as no change; a controller that must react to what another of ours writes (the DCD controller, to the
DCDs a DGD's program writes) hears of it from here instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dgd.cluster.resources import Resource


class WriteNotices:
    """Says to the router which objects this operator just wrote. A write is recorded in the cache, so
    its watch event reaches the router as no change; a controller that watches what another of ours
    writes (the DCD controller, the DCDs a DGD writes) hears of it from here instead."""

    def __init__(self) -> None:
        self._listener: Callable[[str, str | None, str], None] | None = None

    def attach(self, listener: Callable[[str, str | None, str], None]) -> None:
        """Who hears of writes from now on (the router, as it starts)."""
        self._listener = listener

    def written(self, resource: Resource[Any], namespace: str | None, name: str) -> None:
        if self._listener is not None:
            self._listener(str(resource), namespace, name)
