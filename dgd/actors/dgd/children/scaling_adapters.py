"""The scaling-adapters child of a DGD: one DGDSA per component that asks for one (dgd-domain §13.2).

For each component, in order:

* ``scalingAdapter`` set: the adapter ``<dgd>-<lowercase component>`` is created, with
  ``spec.replicas`` seeded from the component (default 1), or its labels, ``spec.dgdRef`` and
  controller owner reference are repaired by a merge patch at the resourceVersion observed. The DGD
  never writes an adapter's replicas after creating it: from then on the adapter is the source of
  truth and the DGDSA controller (``dgd.actors.dgdsa.actor``) carries them into the DGD.
* ``scalingAdapter`` absent: the adapter of that name is deleted **only if this DGD controls it**
  (our departure from upstream, dgd-domain §21 item 5).

Then the orphan sweep: adapters labelled with this DGD's name and controlled by it whose component
is gone are deleted. Every write goes through the ``Syncer``, which records its event on the DGD
right after it succeeded (related object: the adapter): ``AdapterCreated``, ``AdapterUpdated`` (only
when the patch changed something), ``AdapterDeleted``; nothing for a no-op. An API error answers
``StepFailed`` naming the adapter.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.machinery.owners import owner_reference
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import DGDSA
from dgd.domain.adapters import (
    ForeignController,
    adapter_body,
    adapter_created,
    adapter_deleted,
    adapter_name,
    adapter_patch,
    adapter_reference,
    adapter_updated,
    orphan_deleted,
    orphans,
)
from dgd.domain.events import EventRecord
from dgd.domain.ownership import controlled_by
from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter as Adapter
from dgd.runtime import Actor, Request

#: What the step did to one adapter.
Written = Literal["created", "updated", "deleted"]


class AdaptersReconciled(msgspec.Struct, frozen=True):
    """The adapters written by this step, by name (all empty: every adapter was as desired)."""

    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


class ReconcileAdapters(Request[AdaptersReconciled | StepFailed], frozen=True):
    """Bring the adapters of ``dgd`` (defaulted, namespaced) in line; ``owner`` is the DGD as stored,
    which the adapters' owner reference and the events point at."""

    dgd: DynamoGraphDeployment
    owner: DynamoGraphDeployment


class ScalingAdapters(Actor[ReconcileAdapters]):
    """Answers ``ReconcileAdapters``; creates, repairs and deletes a DGD's adapters, never their replicas."""

    def __init__(self, *, reader: Reader, syncer: Syncer) -> None:
        self._reader = reader
        self._syncer = syncer

    async def receive(self, message: ReconcileAdapters) -> AdaptersReconciled | StepFailed:
        dgd, owner = message.dgd, message.owner
        namespace = dgd.metadata.namespace or ""
        written: dict[Written, list[str]] = {"created": [], "updated": [], "deleted": []}
        for component in dgd.spec.components or []:
            name = adapter_name(dgd.metadata.name or "", component.name)
            try:
                change = await self._reconcile(dgd, component, name, owner)
            except (ClusterError, ForeignController) as error:
                return StepFailed(f"failed to reconcile scaling adapter {name}: {error}")
            if change is not None:
                written[change].append(name)
        # Adapters of components the DGD no longer has, among those it controls (an index read, not
        # every adapter of the namespace: the namespace may hold thousands of DGDs).
        try:
            adapters = await self._reader.controlled_by(DGDSA, namespace, owner.metadata.uid)
        except ClusterError as error:
            return StepFailed(f"failed to list the scaling adapters of {dgd.metadata.name}: {error}")
        for orphan in orphans(adapters, dgd, owner.metadata.uid):
            name, component_name = orphan.metadata.name or "", orphan.spec.dgd_ref.component_name
            try:
                if await self._delete(
                    orphan, owner, orphan_deleted(name, component_name, adapter_reference(orphan))
                ):
                    written["deleted"].append(name)
            except ClusterError as error:
                return StepFailed(f"failed to delete orphaned scaling adapter {name}: {error}")
        return AdaptersReconciled(
            tuple(written["created"]), tuple(written["updated"]), tuple(written["deleted"])
        )

    async def _reconcile(
        self, dgd: DynamoGraphDeployment, component: ComponentSpec, name: str, owner: DynamoGraphDeployment
    ) -> Written | None:
        """One component's adapter; says what was written to it, if anything."""
        live = await self._reader.get(DGDSA.key(dgd.metadata.namespace, name))
        if component.scaling_adapter is None:
            # Only an adapter this DGD controls is its to remove.
            if live is None or not controlled_by(live.metadata, owner.metadata.uid):
                return None
            event = adapter_deleted(name, component.name, adapter_reference(live))
            return "deleted" if await self._delete(live, owner, event) else None
        if live is None:
            if await self._create(dgd, component, owner):
                return "created"
            # The cache was behind: an adapter of that name exists already.
            live = await self._syncer.refresh(DGDSA.key(dgd.metadata.namespace, name))
            if live is None:
                return None  # deleted meanwhile: the next reconcile creates it
        return "updated" if await self._repair(live, component, owner) else None

    async def _create(
        self, dgd: DynamoGraphDeployment, component: ComponentSpec, owner: DynamoGraphDeployment
    ) -> bool:
        """Create the adapter, seeding its replicas; ``False`` when one of that name exists already."""
        body = adapter_body(dgd, component, owner_reference(owner))

        def created(adapter: Adapter) -> EventRecord:
            return adapter_created(adapter.metadata.name or "", component.name, adapter_reference(adapter))

        return await self._syncer.create(DGDSA, body, owner=owner, event=created) is not None

    async def _repair(self, live: Adapter, component: ComponentSpec, owner: DynamoGraphDeployment) -> bool:
        """Patch identity drift (never replicas); ``True`` when the server changed the adapter."""
        patch = adapter_patch(live, owner.metadata.name or "", component.name, owner_reference(owner))
        if patch is None:
            return False
        name = live.metadata.name or ""

        def updated(adapter: Adapter) -> EventRecord:
            return adapter_updated(name, component.name, adapter_reference(adapter))

        # A new dgdRef must reach the router as a new generation (it wakes the adapter's actor): the
        # watch, not the cache, brings that one.
        written = await self._syncer.patch(
            DGDSA, live, patch, owner=owner, event=updated, observe="spec" not in patch
        )
        return written.metadata.resource_version != live.metadata.resource_version

    async def _delete(self, live: Adapter, owner: DynamoGraphDeployment, event: EventRecord) -> bool:
        """Delete that very adapter (uid precondition); ``False`` when it was gone already."""
        return await self._syncer.delete(DGDSA, live, owner=owner, why="", event=lambda _: event)
