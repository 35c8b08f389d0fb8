"""The checkpoint-storage child of a DGD: checkpoint storage and each component's checkpoint (dgd-domain §10).

``ResolveCheckpoints`` (step 5 of the shared resources, §7) ensures the storage PVC when the
operator configures one, then resolves every component with ``experimental.checkpoint.enabled``
to a ``CheckpointInfo``: a ``checkpointRef`` names an existing DynamoCheckpoint, which must exist;
otherwise the DGD's automatic checkpoint ``checkpoint-<id>`` is read, and created when missing (its
ID changes with the worker generation, so a new worker spec gets a new checkpoint).
``FinalizeCheckpoints`` runs when the DGD is deleted (§10.7): the automatic checkpoints are deleted,
or detached when their deletion policy is ``Retain``.
"""

from __future__ import annotations

import contextlib
import logging

import msgspec

from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.owners import owner_reference
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import AlreadyExists, ClusterError, NotFound
from dgd.cluster.resources import CHECKPOINT, PVC, RESOURCE_CLAIM_TEMPLATE
from dgd.domain.checkpoint import (
    CheckpointInfo,
    StorageError,
    auto_checkpoint,
    auto_name,
    checkpoint_id,
    checkpoint_refused,
    config_of,
    deletion_plan,
    info_from,
    job_pod_template,
    storage_pvc,
)
from dgd.domain.checkpoint_gms import (
    checkpoint_claim_template,
    checkpoint_reference,
    gms_spec,
    prepare_job,
    restore_targets,
)
from dgd.domain.metadata_keys import GRAPH_NAME
from dgd.domain.pod_merge import JSON
from dgd.domain.render.errors import RenderError
from dgd.domain.render.podspec import render_pod_spec
from dgd.domain.render.shared_objects import discovery_account_name, discovery_enabled
from dgd.domain.render.template_defaults import apply_template_defaults, graph_backend
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import controller_of
from dgd.runtime import Actor, Request

logger = logging.getLogger("dgd.checkpoint")


class CheckpointsResolved(msgspec.Struct, frozen=True):
    """Every checkpointed component's info, by component name (empty: none is checkpointed)."""

    infos: dict[str, CheckpointInfo]


class ResolveCheckpoints(Request[CheckpointsResolved | StepFailed], frozen=True, kw_only=True):
    """Resolve the checkpoints of ``dgd`` (defaulted); ``owner`` is the DGD as stored; workers'
    automatic checkpoints are those of the worker generation ``worker_hash``."""

    dgd: DynamoGraphDeployment
    owner: DynamoGraphDeployment
    worker_hash: str


class CheckpointsFinalized(msgspec.Struct, frozen=True):
    """The DGD's automatic checkpoints were deleted or detached."""

    deleted: tuple[str, ...] = ()
    detached: tuple[str, ...] = ()


class FinalizeCheckpoints(Request[CheckpointsFinalized | StepFailed], frozen=True):
    """§10.7 for the DGD ``dgd`` being deleted."""

    dgd: DynamoGraphDeployment


class CheckpointStorage(Actor[ResolveCheckpoints | FinalizeCheckpoints]):
    """The only writer of a DGD's checkpoint storage PVC and automatic DynamoCheckpoints."""

    def __init__(self, *, reader: Reader, syncer: Syncer, recorder: Recorder, config: OperatorConfig) -> None:
        self._reader = reader
        self._syncer = syncer
        self._recorder = recorder
        self._config = config

    async def receive(
        self, message: ResolveCheckpoints | FinalizeCheckpoints
    ) -> CheckpointsResolved | CheckpointsFinalized | StepFailed:
        if isinstance(message, FinalizeCheckpoints):
            return await self._finalize(message.dgd)
        return await self._resolve(message)

    async def _resolve(self, message: ResolveCheckpoints) -> CheckpointsResolved | StepFailed:
        dgd = message.dgd
        checkpointed = [c for c in dgd.spec.components or [] if config_of(c) is not None]
        if not checkpointed:
            return CheckpointsResolved({})
        refused = [c for c in checkpointed if checkpoint_refused(c, self._config)]
        if refused:
            names = ", ".join(c.name for c in refused)
            return StepFailed(
                f"component {names}: checkpoint functionality is disabled in the operator configuration"
            )
        try:
            await self._storage(dgd, message.owner)
        except (StorageError, ClusterError) as error:
            return StepFailed(f"failed to ensure the checkpoint storage: {error}")
        infos: dict[str, CheckpointInfo] = {}
        for component in checkpointed:
            try:
                infos[component.name] = await self._info(dgd, message.owner, component, message.worker_hash)
            except (ClusterError, RenderError) as error:
                return StepFailed(f'component "{component.name}": failed to resolve its checkpoint: {error}')
        return CheckpointsResolved(infos)

    async def _storage(self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment) -> None:
        namespace = dgd.metadata.namespace or ""
        wanted = storage_pvc(self._config, namespace)
        if wanted is None:
            return
        name, create, body = wanted
        if await self._reader.get(PVC.key(namespace, name)) is not None:
            return
        if not create:
            raise StorageError(
                f'PersistentVolumeClaim "{name}" does not exist and checkpoint.storage.pvc.create is false'
            )
        await self._syncer.create(PVC, body, owner=owner)  # shared per namespace: no owner reference

    async def _info(
        self,
        dgd: DynamoGraphDeployment,
        owner: DynamoGraphDeployment,
        component: ComponentSpec,
        worker_hash: str,
    ) -> CheckpointInfo:
        config = config_of(component)
        assert config is not None
        namespace = dgd.metadata.namespace or ""
        if config.checkpoint_ref:
            found = await self._reader.get(CHECKPOINT.key(namespace, config.checkpoint_ref))
            if found is None:
                raise NotFound(f'DynamoCheckpoint "{config.checkpoint_ref}" (checkpointRef) not found')
            return info_from(found, config, targets=restore_targets(component, config) or None)
        generation = worker_hash if component.type in WORKER_TYPES else ""
        identifier = checkpoint_id(
            namespace, dgd.metadata.name or "", dgd.metadata.uid or "", component.name, generation
        )
        live = await self._reader.get(CHECKPOINT.key(namespace, auto_name(identifier)))
        if live is None:
            body = auto_checkpoint(
                dgd,
                component,
                identifier=identifier,
                worker_hash=generation,
                backend=self._backend(dgd),
                job_pod_template=prepare_job(
                    self._job_template(dgd, component), component, config, identifier
                ),
                owner=None if config.deletion_policy == "Retain" else owner_reference(owner),
                gpu_memory_service=gms_spec(component, config),
            )
            try:
                live = await self._syncer.create(CHECKPOINT, body, owner=owner)
            except AlreadyExists:
                live = None
            if live is None:
                live = await self._reader.fresh(CHECKPOINT.key(namespace, auto_name(identifier)))
        if gms_spec(component, config) is not None:
            await self._job_claim_template(component, identifier, live, owner)
        return info_from(
            live, config, fallback_id=identifier, targets=restore_targets(component, config) or None
        )

    async def _job_claim_template(
        self, component: ComponentSpec, identifier: str, checkpoint: JSON, owner: DynamoGraphDeployment
    ) -> None:
        """The checkpoint Job's claim template, controlled by the checkpoint (re-parented to it when
        someone else controls it); its spec cannot change, so one that exists is otherwise kept."""
        namespace = checkpoint["metadata"]["namespace"]
        desired = checkpoint_claim_template(component, identifier, namespace, checkpoint)
        live = await self._reader.get(RESOURCE_CLAIM_TEMPLATE.key(namespace, desired["metadata"]["name"]))
        if live is None:
            await self._syncer.create(RESOURCE_CLAIM_TEMPLATE, desired, owner=owner)
            return
        reference = checkpoint_reference(checkpoint)
        controller = controller_of(live)
        if controller is None or controller.uid != reference["uid"]:
            patch = {"metadata": {"ownerReferences": [reference]}}
            why = "now controlled by its checkpoint"
            await self._syncer.patch(RESOURCE_CLAIM_TEMPLATE, live, patch, owner=owner, why=why)

    def _backend(self, dgd: DynamoGraphDeployment) -> str:
        backend = graph_backend(dgd)
        if not backend:
            raise RenderError("spec.backendFramework", "a checkpoint needs the backend framework; set it")
        return backend

    def _job_template(self, dgd: DynamoGraphDeployment, component: ComponentSpec) -> dict[str, object]:
        config = config_of(component)
        assert config is not None
        prepared = apply_template_defaults(component, dgd)
        pod_spec = render_pod_spec(
            prepared,
            role="main",
            backend=self._backend(dgd),  # type: ignore[arg-type]
            deployer="grove",
            namespace=dgd.metadata.namespace or "",
            parent_dgd_name=dgd.metadata.name or "",
            config=self._config,
        )
        if discovery_enabled(dgd, self._config):
            pod_spec["serviceAccountName"] = discovery_account_name(dgd.metadata.name or "")
        metadata = dict((prepared.pod_template or {}).get("metadata") or {})
        return job_pod_template(pod_spec, metadata, config)

    async def _finalize(self, dgd: DynamoGraphDeployment) -> CheckpointsFinalized | StepFailed:
        namespace = dgd.metadata.namespace or ""
        name = dgd.metadata.name or ""
        try:
            listed = await self._reader.labelled(CHECKPOINT, namespace, {GRAPH_NAME: name}, fresh=True)
        except NotFound:
            return CheckpointsFinalized()  # the cluster does not serve DynamoCheckpoints
        except ClusterError as error:
            return StepFailed(f"failed to list the DGD's checkpoints: {error}")
        delete, detach = deletion_plan(listed, name)
        # Each checkpoint on its own: one already gone (NotFound) is done, and the others still follow
        # their policy (a Retain checkpoint left attached would be garbage collected with the DGD).
        try:
            detached = {"metadata": {"ownerReferences": None, "labels": {GRAPH_NAME: None}}}
            for checkpoint in detach:
                with contextlib.suppress(NotFound):
                    await self._syncer.patch(
                        CHECKPOINT, checkpoint, detached, owner=dgd, why="detached from its DGD: retained"
                    )
            for checkpoint in delete:
                with contextlib.suppress(NotFound):
                    await self._syncer.delete(CHECKPOINT, checkpoint, owner=dgd, why="its DGD was deleted")
        except ClusterError as error:
            return StepFailed(f"failed to clean up the DGD's checkpoints: {error}")
        return CheckpointsFinalized(
            deleted=tuple(c["metadata"]["name"] for c in delete),
            detached=tuple(c["metadata"]["name"] for c in detach),
        )
