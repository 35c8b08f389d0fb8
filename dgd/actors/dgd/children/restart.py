"""The restart child of a DGD: restart progress and the components to stamp (dgd-domain §11).

It answers ``ResolveRestart`` (step 4 of the Component program, step 5 of the Grove program): it
asks the pathway's progress resolver which of the components the restart is waiting on have not
finished rolling, computes the new ``status.restart`` (``dgd.domain.restart.restart_status``), the
components that carry the restart id now (``restart_state``), and the ``RestartSuperseded`` event
to queue. The resolvers only read the cache:

* Component: a component is finished when its DCD (a worker's of the generation being rendered, or
  of a generation still running) has processed its spec and is ``Available``.
* Grove: nothing is finished while the PodCliqueSet's status lags its spec; then a component is
  finished when its PodClique or scaling group is ready (§9.6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from dgd.actors.dgd.grove_observation import observe_children
from dgd.actors.machinery.reader import Reader
from dgd.cluster.resources import DCD, PCS
from dgd.domain.events import EventRecord
from dgd.domain.readiness import dcd_readiness
from dgd.domain.render.dcd import dcd_name
from dgd.domain.render.pcs import graph_pcs_name
from dgd.domain.restart import (
    RestartState,
    checked_components,
    restart_state,
    restart_status,
    superseded_event,
)
from dgd.messages.component import WORKER_TYPES
from dgd.messages.dgd import DynamoGraphDeployment, RestartStatus, RollingUpdateStatus
from dgd.runtime import Actor, Request


class RestartResolved(msgspec.Struct, frozen=True):
    """The new ``status.restart``, the stamps to render, and the event to queue (if any)."""

    status: RestartStatus | None
    state: RestartState
    event: EventRecord | None = None


class ResolveRestart(Request[RestartResolved], frozen=True, kw_only=True):
    """Resolve the restart of ``dgd`` (defaulted) on ``pathway``: ``previous`` is the restart status
    the DGD carries, ``rolling_update`` the rollout this reconcile has decided (a restart requested
    during a rollout is superseded); ``worker_hashes`` are the worker DCD suffixes to look for, first
    the generation being rendered (Component pathway)."""

    dgd: DynamoGraphDeployment
    previous: RestartStatus | None
    rolling_update: RollingUpdateStatus | None
    pathway: Literal["component", "grove"]
    worker_hashes: tuple[str, ...] = ()


class RestartResolver(Actor[ResolveRestart]):
    """Answers ``ResolveRestart`` from the cache; holds no state between reconciles."""

    def __init__(self, *, reader: Reader) -> None:
        self._reader = reader

    async def receive(self, message: ResolveRestart) -> RestartResolved:
        dgd = message.dgd
        names = [c.name for c in dgd.spec.components or []]
        previous = message.previous
        checked = checked_components(dgd.spec.restart, previous, names)
        unfinished = await self._unfinished(message, checked) if checked else set()
        status = restart_status(dgd.spec.restart, previous, message.rolling_update, names, unfinished)
        return RestartResolved(
            status=status,
            state=restart_state(dgd.spec.restart, status, names),
            event=superseded_event(previous, status),
        )

    async def _unfinished(self, message: ResolveRestart, checked: Sequence[str]) -> set[str]:
        if message.pathway == "grove":
            return await self._grove_unfinished(message.dgd, checked)
        return await self._dcd_unfinished(message.dgd, checked, message.worker_hashes)

    async def _dcd_unfinished(
        self, dgd: DynamoGraphDeployment, checked: Sequence[str], hashes: Sequence[str]
    ) -> set[str]:
        namespace = dgd.metadata.namespace or ""
        by_name = {c.name: c for c in dgd.spec.components or []}
        unfinished: set[str] = set()
        for name in checked:
            component = by_name.get(name)
            if component is None:
                continue
            candidates = [dcd_name(dgd.metadata.name or "", component, h) for h in hashes or ("",)]
            if component.type not in WORKER_TYPES:
                candidates = candidates[:1]
            found = None
            for candidate in dict.fromkeys(candidates):
                found = await self._reader.get(DCD.key(namespace, candidate))
                if found is not None:
                    break
            if found is None or not dcd_readiness(found)[0]:
                unfinished.add(name)
        return unfinished

    async def _grove_unfinished(self, dgd: DynamoGraphDeployment, checked: Sequence[str]) -> set[str]:
        namespace = dgd.metadata.namespace or ""
        by_name = {c.name: c for c in dgd.spec.components or []}
        wanted = [name for name in checked if name in by_name]
        pcs = await self._reader.get(PCS.key(namespace, graph_pcs_name(dgd)))
        observed = pcs.status.observed_generation if pcs is not None and pcs.status is not None else None
        if pcs is None or observed is None or observed < (pcs.metadata.generation or 0):
            return set(wanted)
        children = await observe_children(self._reader, dgd, (by_name[name] for name in wanted))
        return {name for name in wanted if not children[name].ready}
