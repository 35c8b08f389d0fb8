"""What a replay writes down as it runs, for its report: events, DGD states, the operator's work.

A ``Journal`` hears every change the API server stores (``MemoryCluster.observe``) and keeps the
Events in the order they were stored and each DGD's state (and Ready reason) whenever it changes;
it counts the operator's API calls by verb (a fault rule that matches nothing, first in the
operator's client's rules, sees every request). A ``ReconcileCounter`` counts reconciles by
controller. All times are cluster seconds since the simulation started.
"""

from __future__ import annotations

from collections import Counter

import anyio.abc

from dgd.cluster.memory.faults import Delay, FaultRule, Request
from dgd.cluster.memory.store import Change
from dgd.cluster.resources import DGD, EVENT
from dgd.messages.base import JSONObject
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.report import EventEntry, StateChange


class _CallCounter(FaultRule):
    """A fault rule that never fires and counts every request it is asked about, by verb."""

    def __init__(self) -> None:
        super().__init__(
            Delay(0.0), verbs=None, resource=None, subresource=None, namespace=None, name=None,
            times=None, probability=1.0,
        )  # fmt: skip
        self.calls: Counter[str] = Counter()

    def matches(self, request: Request) -> bool:
        self.calls[request.verb] += 1
        return False


class ReconcileCounter:
    """Counts reconciles by controller (a ``ReconcileObserver`` for ``operator_children``)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def reconcile_started(self, controller: str, namespace: str, name: str) -> None:
        self.counts[controller] += 1

    def reconcile_finished(
        self, controller: str, namespace: str, name: str, result: str, seconds: float
    ) -> None:
        """Only starts are counted."""


class Journal:
    """The running record of one replay (see the module)."""

    def __init__(self, sim: SimulatedCluster) -> None:
        self._sim = sim
        self.events: list[EventEntry] = []
        self.timeline: list[StateChange] = []
        self._calls = _CallCounter()
        self._states: dict[tuple[str, str], tuple[str, str]] = {}

    @property
    def api_calls(self) -> dict[str, int]:
        """The operator's API requests so far, by verb."""
        return dict(sorted(self._calls.calls.items()))

    async def start(self, group: anyio.abc.TaskGroup) -> None:
        """Begin counting and listening; stop when ``group`` is cancelled."""
        self._sim.cluster.faults.rules.insert(0, self._calls)
        self._sim.observe(group, self._hear)

    # Hearing.

    def _hear(self, change: Change) -> None:
        plural = change.key[0]
        if plural == str(EVENT) and change.type == "ADDED":
            self.events.append(_event(change.obj.data, self._sim.elapsed()))
        elif plural == str(DGD):
            self._dgd(change)

    def _dgd(self, change: Change) -> None:
        _, namespace, name = change.key
        key = (namespace or "", name)
        if change.type == "DELETED":
            state = ("deleted", "")
        else:
            status = change.obj.data.get("status") or {}
            ready: JSONObject = next(
                (c for c in status.get("conditions") or () if c.get("type") == "Ready"), {}
            )
            deleting = bool(change.obj.data["metadata"].get("deletionTimestamp"))
            state = (
                "deleting" if deleting else str(status.get("state") or "initializing"),
                str(ready.get("reason") or ""),
            )
        if self._states.get(key) != state:
            self._states[key] = state
            self.timeline.append(StateChange(round(self._sim.elapsed(), 6), key[0], key[1], *state))


def _event(event: JSONObject, at: float) -> EventEntry:
    regarding = event.get("regarding") or {}
    return EventEntry(
        at=round(at, 6),
        namespace=str((event.get("metadata") or {}).get("namespace") or ""),
        regarding=f"{regarding.get('kind', '')} {regarding.get('name', '')}".strip(),
        type=str(event.get("type") or ""),
        reason=str(event.get("reason") or ""),
        note=str(event.get("note") or ""),
    )
