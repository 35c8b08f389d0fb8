"""Graph restarts (dgd-domain §11), as pure functions.

A restart is requested by setting a new ``spec.restart.id``; the id is stamped on the pods of the
restarted components as the annotation ``nvidia.com/restartAt``, so their workloads roll them
natively (Deployment, LeaderWorkerSet, Grove). ``restart_status`` is the status computation of
§11.2, given which components have not finished rolling yet (the pathway's progress resolver, run by
the ``restart`` child actor); ``restart_state`` says which components carry the id now (§11.3);
``superseded_event`` is the one event of §11.5.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import msgspec

from dgd.domain.events import EventRecord
from dgd.domain.rollout import rollout_active
from dgd.messages.dgd import Restart, RestartStatus, RollingUpdateStatus

DONE_PHASES = frozenset({"Completed", "Failed", "Superseded"})


class RestartState(msgspec.Struct, frozen=True):
    """The ``nvidia.com/restartAt`` value and the components to stamp with it now (others keep the
    value their workload carries)."""

    timestamp: str = ""
    components: frozenset[str] = frozenset()

    def stamps(self) -> dict[str, str]:
        """``restart_at`` for the renderers: component name -> restart id."""
        return dict.fromkeys(sorted(self.components), self.timestamp)


def _order(restart: Restart, components: Sequence[str]) -> list[str]:
    strategy = restart.strategy
    if strategy is not None and strategy.order:
        return list(strategy.order)
    return sorted(components)


def _parallel(restart: Restart) -> bool:
    return restart.strategy is not None and restart.strategy.type == "Parallel"


def checked_components(
    restart: Restart | None, status: RestartStatus | None, components: Sequence[str]
) -> list[str]:
    """The components whose progress the resolver must report for ``restart_status`` (§11.2): the
    ones in progress (all of them for a new parallel request)."""
    if restart is None or not restart.id or status is None or status.observed_id != restart.id:
        return []
    if status.phase in DONE_PHASES:
        return []
    if _parallel(restart):
        return list(status.in_progress or sorted(components))
    order = _order(restart, components)
    current = (status.in_progress or order[:1] or [""])[0]
    return [current] if current else []


def restart_status(
    restart: Restart | None,
    status: RestartStatus | None,
    rolling_update: RollingUpdateStatus | None,
    components: Sequence[str],
    unfinished: Collection[str],
) -> RestartStatus | None:
    """§11.2: the restart status after this reconcile.

    ``components`` are the DGD's component names; ``unfinished`` those (among the checked ones, see
    ``checked_components``) whose workload has not finished rolling to the restart stamp.
    """
    if restart is None or not restart.id:
        return status if status is not None and status.phase in DONE_PHASES else None
    if status is not None and status.observed_id == restart.id and status.phase in DONE_PHASES:
        return status
    if rollout_active(rolling_update):
        return RestartStatus(observed_id=restart.id, phase="Superseded")
    new_request = status is None or status.observed_id != restart.id
    if _parallel(restart):
        if new_request:
            return RestartStatus(observed_id=restart.id, phase="Restarting", in_progress=sorted(components))
        checked = list((status.in_progress if status else None) or sorted(components))
        remaining = sorted(name for name in checked if name in unfinished)
        if not remaining:
            return RestartStatus(observed_id=restart.id, phase="Completed")
        return RestartStatus(observed_id=restart.id, phase="Restarting", in_progress=remaining)
    order = _order(restart, components)
    if not order:
        return RestartStatus(observed_id=restart.id, phase="Completed")
    if new_request:
        return RestartStatus(observed_id=restart.id, phase="Restarting", in_progress=[order[0]])
    assert status is not None
    current = (status.in_progress or [order[0]])[0]
    if current not in order:
        return RestartStatus(observed_id=restart.id, phase="Restarting", in_progress=[order[0]])
    if current in unfinished:
        return RestartStatus(observed_id=restart.id, phase="Restarting", in_progress=[current])
    index = order.index(current) + 1
    if index >= len(order):
        return RestartStatus(observed_id=restart.id, phase="Completed")
    return RestartStatus(observed_id=restart.id, phase="Restarting", in_progress=[order[index]])


def restart_state(
    restart: Restart | None, status: RestartStatus | None, components: Sequence[str]
) -> RestartState:
    """§11.3: which components carry the restart stamp now."""
    if status is None:
        return RestartState()
    everyone = frozenset(components)
    spec_id = restart.id if restart is not None else ""
    if not spec_id:
        return RestartState(status.observed_id or "", everyone) if status.observed_id else RestartState()
    if status.observed_id == spec_id and status.phase == "Superseded":
        return RestartState()
    if status.observed_id == spec_id and status.phase == "Completed":
        return RestartState(spec_id, everyone)
    assert restart is not None
    if _parallel(restart):
        return RestartState(spec_id, everyone)
    order = _order(restart, components)
    in_progress = [name for name in status.in_progress or () if name in order]
    if status.phase == "Pending" or not in_progress:
        return RestartState(spec_id, frozenset(order[:1]))
    last = max(order.index(name) for name in in_progress)
    return RestartState(spec_id, frozenset(order[: last + 1]))


def superseded_event(previous: RestartStatus | None, current: RestartStatus | None) -> EventRecord | None:
    """§11.5: ``RestartSuperseded`` when the restart has just become superseded."""
    if current is None or current.phase != "Superseded":
        return None
    if (
        previous is not None
        and previous.observed_id == current.observed_id
        and previous.phase == "Superseded"
    ):
        return None
    note = f"Restart {current.observed_id} superseded by rolling update"
    return EventRecord("Warning", "RestartSuperseded", "Restart", note)


def carried_stamps(stamped: Iterable[tuple[str | None, str | None]]) -> dict[str, str]:
    """The ``nvidia.com/restartAt`` stamps a DGD's children already carry, by component: the first
    found per component, from ``(component, stamp)`` pairs (§8.2 step 2, §9.3). A finished restart's
    stamps stay, so its components do not roll again."""
    carried: dict[str, str] = {}
    for component, stamp in stamped:
        if component and stamp:
            carried.setdefault(component, stamp)
    return carried
