"""The DGDSA controller: one actor per scaling adapter carries its replicas into the DGD (dgd-domain §13.3).

The router starts an ``AdapterActor`` for every adapter it sees (under the ``adapters`` dynamic
supervisor) and nudges it when the adapter's spec changes (a new generation: HPA, KEDA or the
Planner wrote ``spec.replicas`` through the scale subresource) or when its DGD's components change
in names or replicas. A reconcile:

1. skips an adapter that is gone or being deleted;
2. reads its DGD (``spec.dgdRef.name``, same namespace); a missing DGD is retried after a backoff;
3. does nothing when the component is gone or no longer asks for a scaling adapter;
4. when the component's replicas (default 1) differ from the adapter's ``spec.replicas``, writes the
   DGD with that component's replicas changed: the DGD is read as stored (raw JSON, so fields the
   operator does not model are kept) and replaced at the resourceVersion read; a conflict re-reads
   and tries again. Then it records Normal ``Scaled`` on the adapter (related object: the DGD) and
   stamps ``status.lastScaleTime``; a refused write records Warning ``UpdateFailed`` and is retried;
5. mirrors ``spec.replicas`` and the component's pod selector into the adapter status, only when
   the status says otherwise.

**The adapter is the single owner of its component's replica count.** While it exists, the
controller drives the DGD component to the adapter's value whatever the DGD says, so an edit of
the component's ``replicas`` in the DGD itself is reverted on the next reconcile (upstream refuses
such edits at admission instead; we have no webhook). To change replicas, scale the adapter
(``kubectl scale dgdsa/<dgd>-<component>``), or remove ``scalingAdapter`` from the component.

Nudges that arrive during a reconcile coalesce into one more, so a storm of scale writes costs a
few DGD writes, each with the adapter's latest value: the DGD's replicas only ever move forward
through the values written, never back to an older one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.loop import ADAPTER_CONTROLLER, LoopParts, Outcome, Reconciler
from dgd.actors.machinery.retries import Intent
from dgd.cluster.errors import ClusterError, Conflict, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DGD, DGDSA
from dgd.domain.adapters import (
    adapter_reference,
    adapter_status,
    replicas_of,
    rescale,
    scaled,
    scaled_component,
    update_failed,
)
from dgd.domain.events import INTERNAL_ERROR, EventRecord, parked_message, reconcile_error
from dgd.messages.base import JSONObject
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter as Adapter
from dgd.messages.timestamps import rfc3339

logger = logging.getLogger("dgd.dgdsa")

#: How many times one reconcile re-reads the DGD after a conflicting write before it backs off.
CONFLICT_ATTEMPTS = 5


class AdapterActor(Reconciler):
    """The actor of the scaling adapter ``namespace/name``: the only writer of its status, and of its
    component's replicas in the DGD."""

    controller = ADAPTER_CONTROLLER
    log = logger
    retriable = (ClusterError,)

    def __init__(
        self,
        namespace: str,
        name: str,
        *,
        cluster: Cluster,
        cache: Cache,
        wall: Callable[[], float],
        recorder: Recorder,
        loop: LoopParts,
        parked_for: float | None = None,
    ) -> None:
        super().__init__(namespace, name, loop=loop, parked_for=parked_for)
        self._cluster = cluster
        self._cache = cache
        self._wall = wall
        self._recorder = recorder

    def _intent(self) -> Intent | None:
        adapter = self._cache.get(DGDSA, self._namespace, self._name)
        if adapter is None:
            return None
        return adapter.metadata.generation, bool(adapter.metadata.deletion_timestamp)

    async def report_parked(self, retry_in: float) -> None:
        """Say on the adapter, in a Warning event, that its actor is parked (it has no status of ours
        to say it in)."""
        adapter = self._cache.get(DGDSA, self._namespace, self._name)
        if adapter is not None:
            record = reconcile_error(parked_message(retry_in))
            self._recorder.emit_regarding(adapter.metadata.namespace, adapter_reference(adapter), record)

    async def report_internal_error(self) -> None:
        adapter = self._cache.get(DGDSA, self._namespace, self._name)
        if adapter is not None and self.failures == 0:
            self._recorder.emit_regarding(
                adapter.metadata.namespace, adapter_reference(adapter), reconcile_error(INTERNAL_ERROR)
            )

    async def reconcile(self) -> Outcome:
        """One pass of §13.3; ``RETRY`` when it must be retried."""
        return Outcome.DONE if await self._pass() else Outcome.RETRY

    async def _pass(self) -> bool:
        """One pass of §13.3; ``False`` when it must be retried."""
        adapter = self._cache.get(DGDSA, self._namespace, self._name)
        if adapter is None or adapter.metadata.deletion_timestamp:
            return True
        ref = adapter.spec.dgd_ref
        dgd = self._cache.get(DGD, self._namespace, ref.name)
        if dgd is None:
            logger.info("%s/%s: DGD %s not found; will retry", self._namespace, self._name, ref.name)
            return False
        component = scaled_component(dgd, ref.component_name)
        if component is None:
            return True
        # The adapter's replicas are the truth: the DGD follows them.
        scaled_at = None
        if replicas_of(component) != adapter.spec.replicas and await self._scale(adapter):
            scaled_at = rfc3339(self._wall())
        # Then the status says what was applied, and to which pods.
        return await self._write_status(adapter, scaled_at)

    async def _write_status(self, adapter: Adapter, scaled_at: str | None) -> bool:
        """Patch the status at the version reconciled, so a newer spec reaches the router as a change
        (never observed here first); ``False`` when the spec changed meanwhile (its event nudges again)."""
        key = DGDSA.key(self._namespace, self._name)
        for _ in range(CONFLICT_ATTEMPTS):
            patch = adapter_status(adapter, scaled_at)
            if patch is None:
                return True
            try:
                written = await self._cluster.patch_status(
                    key, patch, resource_version=adapter.metadata.resource_version
                )
            except NotFound:
                return True  # deleted meanwhile: the router stops this actor
            except Conflict:
                # Changed meanwhile: only its metadata or status, then write again on top of it.
                fresh = await self._cluster.get(key)
                if fresh.metadata.generation != adapter.metadata.generation:
                    return False
                adapter = fresh
                continue
            self._cache.observe(DGDSA, written)
            return True
        return False

    async def _scale(self, adapter: Adapter) -> bool:
        """Write the adapter's replicas into its DGD component; ``True`` if the DGD changed."""
        ref = adapter.spec.dgd_ref
        raw = DGD.as_raw()
        conflict: Conflict | None = None
        stored: JSONObject = {}
        for _ in range(CONFLICT_ATTEMPTS):
            stored = await self._cluster.get(raw.key(self._namespace, ref.name))
            plan = rescale(stored, ref.component_name, adapter.spec.replicas)
            if plan is None:
                return False  # the DGD has them already, or the component is no longer adapted
            try:
                written = await self._cluster.replace(raw, plan.body)
            except Conflict as error:
                conflict = error  # changed since read: read again
                continue
            except ClusterError as error:
                await self._emit(adapter, update_failed(ref.name, str(error), stored))
                raise
            # Not observed into the cache: the watch event of this new generation must reach the router
            # as a change (it nudges the DGD actor), and a stale read here only costs one more GET.
            await self._emit(adapter, scaled(ref.component_name, plan.before, adapter.spec.replicas, written))
            return True
        assert conflict is not None
        await self._emit(adapter, update_failed(ref.name, str(conflict), stored))
        raise conflict

    async def _emit(self, adapter: Adapter, record: EventRecord) -> None:
        """Record an event about the adapter (best effort: a refusal is logged and dropped)."""
        self._recorder.emit_regarding(adapter.metadata.namespace, adapter_reference(adapter), record)
