"""The operator's write points, and a crash right after one of them (Sieve's crash-after-write).

A **write point** is where an operator actor changes the cluster: the verb, the resource and
subresource, and the actor's path (``/operator/dgds/default/g-0/shared-resources``). Its **role**
is the same path with the object's key left out (``/operator/dgds/*/*/shared-resources``): the same
code writing for another DGD is the same point.

``WriteTap`` hears the operator's client, on the simulated cluster:

* a fault rule first in the client's list sees every request with the task that makes it (it never
  fires: it only remembers the request);
* a store listener hears every change the server stores, synchronously, in the task whose request
  made it: that request's change, so the write is paired with its verb and its actor exactly.

Only writes that changed something are write points (a no-op or a refused write stores nothing).
``WriteLog`` keeps every write point in order; ``CrashAfter`` kills the writer right after its
``nth`` write at one point: the kill is delivered at the writer's next await, so the write is made
and nothing after it in that actor is.

``tapped(tap)`` puts a tap on every simulated cluster started inside the block (a replay builds its
own, out of reach): when one has started, the tap hears its operator's client.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import msgspec

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.faults import Delay, FaultRule, Request, Verb
from dgd.cluster.memory.store import Change
from dgd.runtime import ActorCell
from dgd.runtime.ref import current_actor
from dgd.sim.cluster import SimulatedCluster

#: The verbs that write.
WRITES = frozenset(("create", "update", "patch", "delete"))
#: Operator actors live under this path (the simulation's world models under ``/world``).
OPERATOR = "/operator/"
_KEYED = re.compile(r"^(/operator/(?:dgds|adapters))/[^/]+/[^/]+")


class WritePoint(msgspec.Struct, frozen=True, order=True):
    """Where an operator actor wrote: ``verb`` on ``resource`` (``plural.group``) and ``subresource``."""

    verb: Verb
    resource: str
    subresource: str
    actor: str

    @property
    def role(self) -> str:
        """The actor's path without the object it works for (the code that wrote, not the object)."""
        return _KEYED.sub(r"\1/*/*", self.actor)

    @property
    def kind(self) -> tuple[str, str, str, str]:
        """What makes two write points the same point of the code: verb, resource, subresource, role."""
        return (self.verb, self.resource, self.subresource, self.role)

    @property
    def described(self) -> str:
        """The kind of point, in words: ``create services by /operator/dgds/*/*``."""
        return f"{self.verb} {self._what} by {self.role}"

    def __str__(self) -> str:
        return f"{self.verb} {self._what} by {self.actor}"

    @property
    def _what(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


class Write(msgspec.Struct, frozen=True):
    """One write the operator made: where, when (cluster seconds), and which of that point's writes."""

    point: WritePoint
    at: float
    nth: int


class WriteTap:
    """Pairs each of the operator's requests with the change it stored (see the module); subclasses
    say what to do with each write (``heard``)."""

    def __init__(self) -> None:
        self._pending: dict[asyncio.Task[Any], tuple[Request, ActorCell[Any]]] = {}
        self._counts: dict[WritePoint, int] = {}
        self._stop: list[Any] = []

    def attach(self, cluster: MemoryCluster) -> None:
        """Hear the writes ``cluster`` (the operator's client) makes from now on."""
        cluster.faults.rules.insert(0, _Remember(self))
        self._stop.append(cluster.observe(self._stored))

    def detach(self) -> None:
        for stop in self._stop:
            stop()
        self._stop.clear()

    def remember(self, request: Request) -> None:
        cell = current_actor.get()
        task = _current_task()
        if task is None or cell is None or request.verb not in WRITES or not cell.path.startswith(OPERATOR):
            return
        self._pending[task] = (request, cell)

    def _stored(self, change: Change) -> None:
        task = _current_task()
        made = self._pending.pop(task, None) if task is not None else None
        if made is None:
            return
        request, cell = made
        if cell is not current_actor.get():
            return
        point = WritePoint(request.verb, request.resource, request.subresource, cell.path)
        nth = self._counts[point] = self._counts.get(point, 0) + 1
        self.heard(Write(point, anyio.current_time(), nth), cell)

    def heard(self, write: Write, cell: ActorCell[Any]) -> None:
        """One write was stored, by the actor ``cell``, which is still running it."""


class WriteLog(WriteTap):
    """Every write point the operator reached, in the order its writes were stored."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[Write] = []

    def heard(self, write: Write, cell: ActorCell[Any]) -> None:
        self.writes.append(write)


class CrashAfter(WriteTap):
    """Kills the writer right after the ``nth`` write at ``point`` (once); ``killed`` says when."""

    def __init__(self, point: WritePoint, nth: int = 1) -> None:
        super().__init__()
        self.point = point
        self.nth = nth
        self.killed: float | None = None

    def heard(self, write: Write, cell: ActorCell[Any]) -> None:
        chosen = self.killed is None and write.point == self.point and write.nth == self.nth
        if chosen and cell.kill():
            self.killed = write.at


@contextmanager
def tapped(tap: WriteTap) -> Iterator[WriteTap]:
    """Within the block, ``tap`` hears the operator's client of each simulated cluster that starts."""
    enter = SimulatedCluster.__aenter__

    async def entered(sim: SimulatedCluster) -> SimulatedCluster:
        started = await enter(sim)
        tap.attach(started.cluster)
        return started

    setattr(SimulatedCluster, "__aenter__", entered)  # noqa: B010 (a method, replaced for the block)
    try:
        yield tap
    finally:
        setattr(SimulatedCluster, "__aenter__", enter)  # noqa: B010
        tap.detach()


class _Remember(FaultRule):
    """A rule that never fires: it tells the tap about each request, with the task making it."""

    def __init__(self, tap: WriteTap) -> None:
        super().__init__(
            Delay(0.0),
            verbs=None,
            resource=None,
            subresource=None,
            namespace=None,
            name=None,
            times=None,
            probability=1.0,
        )
        self._tap = tap

    def matches(self, request: Request) -> bool:
        self._tap.remember(request)
        return False


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None
