"""The Grove workload program (dgd-domain §9.1–§9.2): one ordered reconcile of a DGD on Grove.

``GroveProgram.reconcile`` reads top to bottom; each step is an ask to a child actor or a pure call
into ``dgd.domain``, and their order is the contract. The PodCliqueSet is observed once, from the
cache, at the start: rendering, the sync and the topology projection all use that one observation
(or what the sync wrote). The program never writes the DGD status: it returns the complete desired
status and the events queued with it; the DGD actor persists one and then emits the other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Unpack

import msgspec

from dgd.actors.children.grove_scaler import Scale
from dgd.actors.children.step_failed import StepFailed
from dgd.actors.children.topology_status import NoTopology, Project
from dgd.actors.dgd_writer import DGDWriter, commit_unmanaged, migrate_worker_hash
from dgd.actors.grove_children import observe_children
from dgd.actors.programs.result import ProgramResult, as_failure
from dgd.actors.programs.steps import ProgramParts, WorkloadProgram
from dgd.actors.recorder import Recorder
from dgd.actors.runtime import ActorError, Ref
from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import (
    CLUSTER_TOPOLOGY_BINDING,
    INGRESS,
    PCS,
    RESOURCE_CLAIM_TEMPLATE,
    SERVICE,
    VIRTUAL_SERVICE,
    Resource,
)
from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.checkpoint import (
    CheckpointInfo,
    gated_components,
)
from dgd.domain.orchestrators import grove_disabled
from dgd.domain.pod_merge import JSON
from dgd.domain.projection import (
    FAILED_TO_MIGRATE_WORKER_HASH,
    FAILED_TO_RECONCILE,
    PROVIDER_UNAVAILABLE,
    ROLLING_UPDATE_FAILED,
    Failure,
    ReconcileResult,
    ResourceReadiness,
    check_resources_readiness,
)
from dgd.domain.readiness import (
    InconsistentRevision,
    grove_readiness,
)
from dgd.domain.render import kv_transfer
from dgd.domain.render.errors import RenderError
from dgd.domain.render.frontend_exposure import manages_virtual_services
from dgd.domain.render.gpu_count import counted_templates
from dgd.domain.render.pcs import graph_discovery_backend, graph_pcs_name
from dgd.domain.render.stable_resources import render_stable_resources
from dgd.domain.render.workloads import desired_pod_clique_set
from dgd.domain.restart import RestartState
from dgd.domain.roles import is_multinode
from dgd.domain.topology import apply_topology
from dgd.domain.worker_generation import initial_worker_hash, plan_unmanaged
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet

logger = logging.getLogger("dgd.grove")

_STABLE_KINDS: dict[str, Resource[JSON]] = {"Service": SERVICE, "Ingress": INGRESS}


def _pcs_inputs_digest(dgd: DynamoGraphDeployment, pcs: PodCliqueSet | None, extra: bytes) -> int | None:
    """A digest of everything the PodCliqueSet is rendered and synced from: the DGD's spec (its
    generation) and annotations, the restart stamps and checkpoints (``extra``), and the
    PodCliqueSet's spec (generation) and metadata."""
    if pcs is None:
        return None
    meta = pcs.metadata
    return hash(
        (
            dgd.metadata.generation,
            msgspec.json.encode(dgd.metadata.annotations),
            extra,
            meta.uid,
            meta.generation,
            msgspec.json.encode((meta.labels, meta.annotations, meta.owner_references)),
        )
    )


def _named(names: set[str]) -> Callable[[JSON], bool]:
    """Whether an object is one of ``names``."""
    return lambda live: (live.get("metadata") or {}).get("name") in names


class GroveProgram(WorkloadProgram):
    """Reconciles DGDs whose workload provider is ``grove``; one instance per DGD actor."""

    def __init__(
        self,
        *,
        dgd_writer: DGDWriter,
        recorder: Recorder,
        grove_scaler: Ref[Scale],
        topology_status: Ref[Project],
        **parts: Unpack[ProgramParts],
    ) -> None:
        super().__init__(**parts)
        self._dgd_writer = dgd_writer
        self._recorder = recorder
        self._grove_scaler = grove_scaler
        self._topology_status = topology_status
        # A digest of what the PodCliqueSet was last rendered and synced from (see _pcs_inputs_digest).
        self._synced_inputs: int | None = None

    def initial_annotations(self, dgd: DynamoGraphDeployment) -> dict[str, str]:
        """The first worker hash (§12.7 initialization), for the metadata write of the DGD's creation:
        nothing when Grove is off or the spec cannot be reconciled (its run fails before any write)."""
        if grove_disabled(self._config):
            return {}
        defaulted = default_in_memory(dgd, grove_enabled=True)
        try:
            self.refuse_unsupported(defaulted, keep=lambda problem: False)
            desired = self.desired_worker_hash(defaulted)
        except (Failure, RenderError):
            return {}
        return initial_worker_hash(dgd.metadata.annotations or {}, desired)

    async def reconcile(self, dgd: DynamoGraphDeployment) -> ProgramResult:
        """§9.1 in order; the topology projection runs after success and failure alike."""
        result = ProgramResult(dgd)
        # Step 1: Grove disabled is terminal, and comes before the deferred topology projection.
        if grove_disabled(self._config):
            why = 'selected workload provider "grove" is unavailable because Grove is disabled'
            result.fail(Failure(PROVIDER_UNAVAILABLE, why, terminal=True), now=self._now())
            return result
        defaulted = default_in_memory(dgd, grove_enabled=True)
        # The one observation of the PodCliqueSet this run renders, syncs and projects from.
        observed = await self._reader.get(PCS.key(dgd.metadata.namespace, graph_pcs_name(defaulted)))
        synced: list[PodCliqueSet | None] = [observed]
        try:
            await self._run(result, defaulted, observed, synced)
        except (Failure, ClusterError, ActorError, RenderError, InconsistentRevision) as error:
            result.fail(as_failure(error), now=self._now())
        # Step 2 (deferred): the topology condition, from the PodCliqueSet this run ended with.
        await self._project_topology(result, defaulted, synced[-1])
        return result

    async def _run(
        self,
        result: ProgramResult,
        dgd: DynamoGraphDeployment,
        observed: PodCliqueSet | None,
        synced: list[PodCliqueSet | None],
    ) -> None:
        # What this release cannot reconcile yet fails before any write.
        self.refuse_unsupported(dgd, keep=lambda problem: False)
        # Step 3: a v1-only DGD records its v2 worker hash first (Grove has no managed rollout).
        desired_hash = self.desired_worker_hash(dgd)
        try:
            result.dgd = await migrate_worker_hash(self._dgd_writer, self._recorder, result.dgd, desired_hash)
        except ClusterError as error:
            raise Failure(
                FAILED_TO_MIGRATE_WORKER_HASH, f"failed to migrate the worker hash: {error}"
            ) from error
        # Step 4: shared resources before any pod exists that needs them, then the checkpoints.
        infos = await self.ensure_shared(result, dgd, desired_hash)
        # Step 5: the restart, resolved against the Grove children.
        restart = await self.resolve_restart(result, dgd, "grove")
        # Step 6: the Grove workloads (§9.2).
        try:
            outcome = await self._workloads(result, dgd, desired_hash, observed, synced, restart, infos)
        except Failure as failure:
            message = f"failed to reconcile Grove workloads: {failure.message}"
            raise Failure(failure.reason, message, terminal=failure.terminal) from failure
        except (ClusterError, ActorError, InconsistentRevision) as error:
            raise as_failure(error, "failed to reconcile Grove workloads") from error
        # Steps 7-9: the checkpoint wait, scaling adapters, the success projection.
        await self.conclude(result, dgd, outcome, infos)

    async def _workloads(
        self,
        result: ProgramResult,
        dgd: DynamoGraphDeployment,
        desired_hash: str,
        observed: PodCliqueSet | None,
        synced: list[PodCliqueSet | None],
        restart: RestartState,
        infos: Mapping[str, CheckpointInfo],
    ) -> ReconcileResult:
        # 1. Plan the worker-hash transition (reads only): a new generation turns on the hash suffix.
        # Until a PodCliqueSet exists, the hash recorded names no generation that ran.
        plan = plan_unmanaged(
            dict(result.dgd.metadata.annotations or {}), desired_hash, running=observed is not None
        )
        gated = gated_components(infos)
        stamps = restart.stamps()
        domains = await self._topology_domains(dgd)
        templates = await self._claim_templates(dgd)
        extra = msgspec.json.encode((stamps, sorted(infos.items()), domains, sorted(templates.items())))
        # 2. Render against the one observation (replicas and order kept, restart stamps carried),
        # unless neither the DGD nor the PodCliqueSet changed since the last sync left them equal.
        inputs = _pcs_inputs_digest(result.dgd, observed, extra)
        if observed is not None and inputs == self._synced_inputs:
            pcs = observed
        else:
            desired = desired_pod_clique_set(
                dgd,
                config=self._config,
                existing=observed,
                checkpoints=infos,
                worker_generation_changed=plan.changed,
                restart_at=stamps,
                topology_domains=domains,
                claim_templates=templates,
                desired_hash=desired_hash,
            )
            # 3. Sync against that same observation; a conflict fails this run and the next starts fresh.
            try:
                pcs = await self._syncer.sync(PCS, desired, observed, owner=result.dgd)
            except ClusterError as error:
                raise as_failure(error, "failed to reconcile the Grove PodCliqueSet") from error
            self._synced_inputs = _pcs_inputs_digest(result.dgd, pcs, extra) if pcs is observed else None
        synced.append(pcs)
        # 4. The write barrier: the worker hash is committed only once the PodCliqueSet carries it.
        try:
            result.dgd = await commit_unmanaged(self._dgd_writer, self._recorder, result.dgd, plan)
        except ClusterError as error:
            raise Failure(ROLLING_UPDATE_FAILED, f"failed to commit the worker hash: {error}") from error
        # 5. Horizontal scale through the scale subresource, never the PodCliqueSet spec.
        scaled = await self._grove_scaler.ask(Scale(dgd, gated))
        if isinstance(scaled, StepFailed):
            raise Failure(FAILED_TO_RECONCILE, f"failed to reconcile Grove scaling: {scaled.message}")
        # 6. Services, Ingress and VirtualService beside the workload; those no longer rendered go.
        await self._stable_resources(dgd, result.dgd)
        # 7. Readiness from the synced PodCliqueSet and one read of each child.
        written = {change.component: change.child for change in scaled.changes if change.child is not None}
        readiness = grove_readiness(
            dgd, pcs, await observe_children(self._reader, dgd, dgd.spec.components or [], written)
        )
        # 8. Aggregate; Grove's classification replaces the generic not-ready reason.
        outcome = check_resources_readiness(
            [
                ResourceReadiness(
                    pcs.metadata.name or "", readiness.ready, readiness.message, readiness.components
                )
            ]
        )
        if outcome.state != "successful" and readiness.classification:
            outcome = msgspec.structs.replace(outcome, reason=readiness.classification)
        return outcome

    async def _topology_domains(self, dgd: DynamoGraphDeployment) -> tuple[str, ...]:
        """The levels of the ClusterTopologyBinding the KV-transfer policy names (none without one),
        read on every run: a binding edited since the last sync changes the workers' topology files."""
        policy = kv_transfer.policy_of(dgd)
        if policy is None or not policy.cluster_topology_name:
            return ()
        key = CLUSTER_TOPOLOGY_BINDING.key(None, policy.cluster_topology_name)
        try:
            binding = await self._reader.get(key)
        except ClusterError as error:
            why = f'failed to read ClusterTopologyBinding "{key.name}" for kvTransferPolicy: {error}'
            raise Failure(FAILED_TO_RECONCILE, why) from error
        return kv_transfer.binding_domains(policy, binding)

    async def _claim_templates(self, dgd: DynamoGraphDeployment) -> dict[str, JSON]:
        """The ResourceClaimTemplates multinode components' GPU counts read (podspec §2), from the
        cache: none unless a multinode main container claims its GPUs through DRA."""
        if self._config.dra.enabled is not True:
            return {}
        names = {
            n for c in dgd.spec.components or [] if is_multinode(c) for n in counted_templates(c.pod_template)
        }
        namespace = dgd.metadata.namespace or ""
        found: dict[str, JSON] = {}
        for name in sorted(names):
            template = await self._reader.get(RESOURCE_CLAIM_TEMPLATE.key(namespace, name))
            if template is not None:
                found[name] = template
        return found

    async def _stable_resources(self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment) -> None:
        namespace = dgd.metadata.namespace or ""
        wanted = render_stable_resources(
            dgd, config=self._config, discovery_backend=graph_discovery_backend(dgd, self._config)
        )
        # VirtualServices are this program's only while the config names a gateway (Istio is then
        # installed): without one, upstream neither writes nor deletes them.
        kinds = dict(_STABLE_KINDS)
        if manages_virtual_services(self._config):
            kinds["VirtualService"] = VIRTUAL_SERVICE
        names: dict[str, set[str]] = {kind: set() for kind in kinds}
        for desired in wanted:
            resource = kinds[desired["kind"]]
            name = desired["metadata"]["name"]
            names[desired["kind"]].add(name)
            live = await self._reader.get(resource.key(namespace, name))
            await self._syncer.sync(resource, desired, live, owner=owner)
        # Departure from upstream: what this DGD controls and no longer renders is deleted.
        for kind, resource in kinds.items():
            await self._syncer.prune(
                resource, namespace, owner=owner, keep=_named(names[kind]), why="the DGD no longer renders it"
            )

    async def _project_topology(
        self, result: ProgramResult, dgd: DynamoGraphDeployment, pcs: PodCliqueSet | None
    ) -> None:
        try:
            projection = await self._topology_status.ask(Project(dgd, pcs, result.status, self._now()))
        except ActorError as error:
            logger.warning(
                "%s/%s: topology projection skipped: %s", dgd.metadata.namespace, dgd.metadata.name, error
            )
            return
        if isinstance(projection, NoTopology):
            return
        result.status = apply_topology(result.status, projection)
        if projection.warning is not None:
            result.queue(projection.warning)
