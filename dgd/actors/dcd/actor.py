"""The DCD controller: one actor per DynamoComponentDeployment (dcd-controller §2).

The router starts a ``DCDActor`` for every DCD it sees (under the ``dcds`` dynamic supervisor) and
nudges it when the DCD's spec changes or its deletion starts, and when a child it owns changes (its
Deployment's status, a Service or Ingress created or deleted by someone else). A reconcile, in the
order of §2.2:

1. a DCD that is gone does nothing; one being deleted has its finalizer removed, and nothing else;
2. the checkpoint preflight: a checkpointed DCD that uses inter-pod GPU memory sharing or failover is
   refused in its status (``Available=False/InvalidCheckpointConfiguration``) and nothing is touched;
3. the finalizer is added; a DCD with no condition yet gets both conditions ``Unknown`` (and the
   ``Reconciling`` event, once that status is stored);
4. every child of ``render_dcd_children`` is synced in step order through the ``Syncer`` (create,
   or a patch when the last-applied hash or the child's generation says it drifted, so a child
   upstream's operator wrote is taken over without a write), and what it renders away is deleted
   when this DCD controls it;
5. the status: ``Available`` and ``DynamoComponentReady`` from the workload's readiness (§2.6.2),
   ``status.component``, ``observedGeneration``; then, when a child was written, the event ``All
   resources updated!``, after the status is stored (a pass that wrote nothing records nothing).

An API error or a refused render after step 3 is said on the DCD (Warning ``ReconcileError``, and
``Available=False/Reconciling`` naming it, best effort) and retried after the DCD's backoff; a
conflict is routine and only retried. Events about the children's writes are recorded on the DCD
(upstream records them on the children; ``docs/decisions.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from dgd.actors.dcd.writer import DCDWriter
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.loop import DCD_CONTROLLER, LoopParts, Outcome, Reconciler
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.retries import Intent
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import ClusterError, Conflict
from dgd.cluster.resources import (
    DCD,
    DEPLOYMENT,
    INGRESS,
    LWS,
    POD_GROUP,
    PVC,
    SERVICE,
    SERVICE_ACCOUNT,
    VIRTUAL_SERVICE,
    Resource,
)
from dgd.domain import dcd_status
from dgd.domain.checkpoint import StorageError
from dgd.domain.events import INTERNAL_ERROR, parked_message
from dgd.domain.gates import Gates
from dgd.domain.naming import normalize
from dgd.domain.pod_merge import JSON
from dgd.domain.render.dcd_children import Child, DCDChildren, checkpoint_violations, render_dcd_children
from dgd.domain.render.dcd_identity import identify
from dgd.domain.render.dcd_workload import LEGACY_INSTANCE_LABEL, lws_name
from dgd.domain.render.dcd_workload_type import Legacy
from dgd.domain.render.errors import RenderError
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.meta import controller_of, identity
from dgd.messages.timestamps import rfc3339

logger = logging.getLogger("dgd.dcd")

FINALIZER = "nvidia.com/finalizer"
#: The label of the ServiceAccounts a component pod without one runs as (dcd-controller §2.4).
COMPONENT_POD = "nvidia.com/dynamo-component-pod"

#: The kinds a DCD's children are, by kind (the ones this controller can write).
CHILD_RESOURCES: dict[str, Resource[Any]] = {
    "Deployment": DEPLOYMENT,
    "Service": SERVICE,
    "Ingress": INGRESS,
    "VirtualService": VIRTUAL_SERVICE,
    "PersistentVolumeClaim": PVC,
    "LeaderWorkerSet": LWS,
    "PodGroup": POD_GROUP,
}


class StepFailed(Exception):
    """A step of §2.2 failed: ``str()`` is the message the status and the event say (``failed to …``)."""


class DCDActor(Reconciler):
    """The actor of the DCD ``namespace/name``: the only writer of its status and of its children."""

    controller = DCD_CONTROLLER
    log = logger
    retriable = (ClusterError,)

    def __init__(
        self,
        namespace: str,
        name: str,
        *,
        reader: Reader,
        syncer: Syncer,
        writer: DCDWriter,
        recorder: Recorder,
        config: OperatorConfig,
        gates: Gates,
        wall: Callable[[], float],
        loop: LoopParts,
        parked_for: float | None = None,
    ) -> None:
        super().__init__(namespace, name, loop=loop, parked_for=parked_for)
        self._reader = reader
        self._syncer = syncer
        self._writer = writer
        self._recorder = recorder
        self._config = config
        self._gates = gates
        self._wall = wall
        #: The DCD as the running pass last read or wrote it.
        self._held: DynamoComponentDeployment | None = None

    def _dcd(self) -> DynamoComponentDeployment | None:
        return self._reader.cache.get(DCD, self._namespace, self._name)

    def _intent(self) -> Intent | None:
        dcd = self._dcd()
        if dcd is None:
            return None
        return dcd.metadata.generation, bool(dcd.metadata.deletion_timestamp)

    async def report_internal_error(self) -> None:
        dcd = self._dcd()
        if dcd is not None and self.failures == 0:
            await self._recorder.emit(dcd, dcd_status.reconcile_failed(INTERNAL_ERROR))

    async def report_parked(self, retry_in: float) -> None:
        dcd = self._dcd()
        if dcd is not None:
            await self._recorder.emit(dcd, dcd_status.reconcile_failed(parked_message(retry_in)))

    def _now(self) -> str:
        return rfc3339(self._wall())

    async def reconcile(self) -> Outcome:
        dcd = self._dcd()
        if dcd is None:
            return Outcome.DONE
        if dcd.metadata.deletion_timestamp:
            await self._finalize(dcd)
            return Outcome.DONE
        violations = checkpoint_violations(dcd)
        if violations:
            await self._writer.write_status(dcd, dcd_status.refused(dcd, violations, now=self._now()))
            return Outcome.DONE
        try:
            await self._pass(dcd)
        except StepFailed as error:
            await self._say_failed(str(error))
            return Outcome.RETRY
        return Outcome.DONE

    async def _finalize(self, dcd: DynamoComponentDeployment) -> None:
        """§2.9: nothing to clean up (the children go by garbage collection): the finalizer goes."""
        finalizers = dcd.metadata.finalizers or []
        if FINALIZER in finalizers:
            kept = [f for f in finalizers if f != FINALIZER]
            await self._writer.set_finalizers(dcd, kept, f"removed finalizer {FINALIZER}")

    async def _pass(self, dcd: DynamoComponentDeployment) -> None:
        """Steps 5-13 of §2.2; ``StepFailed`` names the step that failed (``self._held`` is then the
        DCD as this pass last wrote it, which the failure is written on)."""
        self._held = dcd
        try:
            finalizers = dcd.metadata.finalizers or []
            if FINALIZER not in finalizers:
                dcd = self._held = await self._writer.set_finalizers(
                    dcd, [*finalizers, FINALIZER], f"added finalizer {FINALIZER}"
                )
            if not dcd_status.has_conditions(dcd):
                dcd = self._held = await self._writer.write_status(
                    dcd, dcd_status.starting(dcd, now=self._now())
                )
                await self._recorder.emit(dcd, dcd_status.reconciling())
        except Conflict:
            raise
        except ClusterError as error:
            raise StepFailed(f"failed to prepare the DynamoComponentDeployment: {error}") from error
        runtime_namespace, workload, modified = await self._sync_children(dcd)
        status = dcd_status.reconciled(dcd, workload, runtime_namespace, now=self._now())
        try:
            await self._writer.write_status(dcd, status)
        except Conflict:
            raise
        except ClusterError as error:
            raise StepFailed(f"failed to set status condition and service replica status: {error}") from error
        # Departure (§2.13 #16): a pass that wrote no child records no event (upstream records "No changes
        # to dynamo deployment" and "All resources updated!" on every pass, resyncs included).
        if modified:
            await self._recorder.emit(dcd, dcd_status.all_updated())

    async def _sync_children(self, dcd: DynamoComponentDeployment) -> tuple[str, JSON, bool]:
        """Render and sync every child in step order; the runtime namespace, the workload as the sync
        left it, and whether any child was written."""
        try:
            rendered = await self._render(dcd)
        except StorageError as error:
            raise StepFailed(f"failed to reconcile checkpoint storage: {error}") from error
        except RenderError as error:
            raise StepFailed(
                f"failed to reconcile the resources: {_workload_step(dcd, self._gates)}: {error}"
            ) from error
        except ClusterError as error:
            raise StepFailed(f"failed to reconcile the resources: {error}") from error
        workload: JSON = {}
        modified = False
        for child in rendered.children:
            written, changed = await self._sync_child(dcd, child)
            modified = modified or changed
            if child.body.get("kind") in ("Deployment", "LeaderWorkerSet"):
                workload = written
        if rendered.unlabel is not None and workload:
            modified = await self._unlabel(dcd, workload) or modified
        for removal in rendered.removals:
            modified = await self._remove(dcd, removal.kind, removal.name) or modified
        return rendered.runtime_namespace, workload, modified

    async def _render(self, dcd: DynamoComponentDeployment) -> DCDChildren:
        """The DCD's children, from what exists of its workload, Service and legacy objects."""
        namespace, name = dcd.metadata.namespace or "", dcd.metadata.name or ""
        accounts = await self._reader.labelled(SERVICE_ACCOUNT, namespace, {COMPONENT_POD: "true"})
        lws = self._gates.lws
        deployment: JSON | None = await self._reader.get(DEPLOYMENT.key(namespace, name))
        set_of_groups: JSON | None = None
        if lws:
            set_of_groups = await self._reader.get(LWS.key(namespace, lws_name(name)))
        service: JSON | None = await self._reader.get(SERVICE.key(namespace, normalize(name)))
        live = Legacy(deployment=deployment, lws=set_of_groups, service=service)
        legacy: list[JSON] = []
        if lws and identify(dcd, self._config).multinode:
            for resource in (LWS, POD_GROUP):
                legacy += await self._reader.carrying(resource, namespace, LEGACY_INSTANCE_LABEL)
        return render_dcd_children(
            dcd,
            self._config,
            gates=self._gates,
            live=live,
            legacy_objects=legacy,
            service_accounts=[str(identity(a)[1]) for a in accounts],
        )

    async def _unlabel(self, dcd: DynamoComponentDeployment, lws: JSON) -> bool:
        """§2.3.3: the adopted LeaderWorkerSet loses the legacy ``instance-id`` label (a merge patch)."""
        if LEGACY_INSTANCE_LABEL not in ((lws.get("metadata") or {}).get("labels") or {}):
            return False
        patch = {"metadata": {"labels": {LEGACY_INSTANCE_LABEL: None}}}
        try:
            await self._syncer.patch(
                LWS, lws, patch, owner=dcd, why=f"removed the legacy {LEGACY_INSTANCE_LABEL} label"
            )
        except ClusterError as error:
            raise StepFailed(
                f"failed to reconcile the resources: failed to sync the LeaderWorkerSet: {error}"
            ) from error
        return True

    async def _sync_child(self, dcd: DynamoComponentDeployment, child: Child) -> tuple[JSON, bool]:
        """One child synced: the object as written (or kept), and whether it was written."""
        kind = str(child.body.get("kind"))
        resource = CHILD_RESOURCES.get(kind)
        namespace, name, _ = identity(child.body)
        if resource is None:
            raise StepFailed(f"failed to reconcile the resources: {kind} {namespace}/{name} is not supported")
        try:
            live = await self._reader.get(resource.as_raw().key(namespace, name))
            if live is not None and child.create_only:
                return live, False
            if not child.owned:
                return await self._create_unowned(dcd, resource, child, live)
            written: JSON = await self._syncer.sync(resource.as_raw(), child.body, live, owner=dcd)
        except Conflict:
            raise
        except ClusterError as error:
            raise StepFailed(f"{_step(kind)}: {error}") from error
        return written, live is None or identity(written)[2] != identity(live)[2]

    async def _create_unowned(
        self, dcd: DynamoComponentDeployment, resource: Resource[Any], child: Child, live: JSON | None
    ) -> tuple[JSON, bool]:
        """The shared checkpoint PVC (§2.3.9): created as rendered, never owned, never updated."""
        if live is not None:
            return live, False
        namespace, name, _ = identity(child.body)
        if not child.may_create:
            raise StepFailed(
                f"failed to reconcile checkpoint storage: checkpoint storage PVC {namespace}/{name} does not "
                "exist and checkpoint.storage.pvc.create is false"
            )
        created = await self._syncer.create(resource.as_raw(), child.body, owner=dcd)
        return (created, True) if created is not None else ({}, False)

    async def _remove(self, dcd: DynamoComponentDeployment, kind: str, name: str) -> bool:
        """Delete the child ``name`` of ``kind`` the render no longer wants, if this DCD controls it
        (upstream deletes by name, whoever owns it: §2.13 #4, ``docs/decisions.md``)."""
        resource = CHILD_RESOURCES.get(kind)
        if resource is None:
            return False
        try:
            live = await self._reader.get(resource.key(dcd.metadata.namespace, name))
        except ClusterError as error:
            raise StepFailed(f"{_step(kind)}: {error}") from error
        owner = controller_of(live) if live is not None else None
        if live is None or owner is None or owner.uid != dcd.metadata.uid:
            return False
        try:
            return await self._syncer.delete(resource, live, owner=dcd, why="not rendered for this component")
        except ClusterError as error:
            raise StepFailed(f"{_step(kind)}: {error}") from error

    async def _say_failed(self, message: str) -> None:
        """§2.6.3: the Warning, then ``Available=False/Reconciling`` naming the error (best effort)."""
        dcd = self._held
        if dcd is None:
            return
        await self._recorder.emit(dcd, dcd_status.reconcile_failed(message))
        try:
            await self._writer.write_status(dcd, dcd_status.failed(dcd, message, now=self._now()))
        except ClusterError as error:
            logger.info("%s: the failure was not written to the status: %s", self._key, error)


def _workload_step(dcd: DynamoComponentDeployment, gates: Gates) -> str:
    """The words of step 8 for this DCD's workload: the LeaderWorkerSet's, or the Deployment's."""
    multinode = dcd.spec.multinode is not None and (dcd.spec.multinode.node_count or 1) > 1
    if gates.lws and multinode:
        return "failed to sync the LeaderWorkerSet"
    return "failed to create or update the deployment: create or update deployment"


def _step(kind: str) -> str:
    """The words of the step that syncs a ``kind`` (§2.2 steps 8-11)."""
    match kind:
        case "Deployment":
            return "failed to reconcile the resources: failed to create or update the deployment"
        case "Service":
            return "failed to create or update the service"
        case "LeaderWorkerSet" | "PodGroup":
            return "failed to reconcile the resources: failed to sync the LeaderWorkerSet"
        case "Ingress" | "VirtualService":
            return "failed to create or update the ingress"
        case "PersistentVolumeClaim":
            return "failed to reconcile checkpoint storage"
    return "failed to reconcile the resources"
