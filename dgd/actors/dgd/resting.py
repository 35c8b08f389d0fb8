"""A DGD actor's children, alive while a reconcile needs them.

A DGD's children (shared resources, checkpoint storage, restart, scaling adapters, and the Grove
scaler and topology status, or the rollout) answer the asks of its reconciles and hold no state from
one reconcile to the next: what one must remember is recorded where it survives a rest (the status,
an object it owns, or a ledger its parent keeps and hands to it when it builds it, as the rollout's
progress). So resting a child never loses anything, whatever the DGD is doing. Kept running
between reconciles, six idle actors per DGD cost about 25 KiB each DGD of a fleet that changes
rarely (issue 18). So a child starts on first use, as before, and once a reconcile is done the DGD
actor lets them all go; the next reconcile starts them again under the same names, so the
``Ref`` s a program holds find them (a ``Ref`` resolves its path again once its actor was replaced).
Starting six children costs well under a millisecond.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dgd.runtime import Actor, ChildSpec, Context, Ref, Restart


class RestingChildren:
    """The children one actor starts when they are asked for, and lets go together (see the module)."""

    def __init__(self) -> None:
        self._builders: dict[str, Callable[[], Actor[Any]]] = {}

    async def child(self, context: Context[Any], name: str, build: Callable[[], Actor[Any]]) -> Ref[Any]:
        """The child ``name`` (a permanent one), started with ``build`` if it is not running."""
        self._builders.setdefault(name, build)
        if context.has_child(name):
            return context.child(name)
        return await context.start_child(ChildSpec(name, build, Restart.PERMANENT))

    async def wake(self, context: Context[Any]) -> None:
        """Start again, in their first order, the children let go since they were first asked for."""
        for name, build in self._builders.items():
            if not context.has_child(name):
                await context.start_child(ChildSpec(name, build, Restart.PERMANENT))

    async def rest(self, context: Context[Any]) -> None:
        """Stop every child, the last started first (``wake`` brings them back)."""
        for name in reversed(context.child_ids()):
            await context.stop_child(name)
