"""The Grove workload program (dgd-domain §9.1–§9.2): one ordered reconcile of a DGD on Grove.

``GroveProgram.reconcile`` reads top to bottom; each step is an ask to a child actor or a pure call
into ``dgd.domain``, and their order is the contract. The PodCliqueSet is observed once, from the
cache, at the start: rendering, the sync and the topology projection all use that one observation
(or what the sync wrote). The program never writes the DGD status: it returns the complete desired
status and the events queued with it; the DGD actor persists one and then emits the other.

``compose`` builds the program and starts the DGD actor's children it asks (the shared ones, and the
Grove scaler and the topology status): adding a child to this pathway is the child's module,
a line there and a step here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import msgspec

from dgd.actors.dgd.annotator import DGDAnnotator, commit_unmanaged, migrate_worker_hash
from dgd.actors.dgd.children.grove_scaler import GroveScaler, Scale
from dgd.actors.dgd.children.restart import ResolveRestart
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.dgd.children.topology_status import NoTopology, Project, TopologyStatus
from dgd.actors.dgd.grove_observation import observe_children
from dgd.actors.dgd.programs.conclusion import Conclusion
from dgd.actors.dgd.programs.grove_inputs import claim_templates, topology_domains
from dgd.actors.dgd.programs.provisioning import Provisioning
from dgd.actors.dgd.programs.refusals import keep_none, refuse_unsupported
from dgd.actors.dgd.programs.result import ProgramResult, Progress, as_failure
from dgd.actors.dgd.programs.shared_children import Spawn, shared_parts
from dgd.actors.dgd.programs.worker_hash import DesiredWorkerHash
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import (
    INGRESS,
    PCS,
    SERVICE,
    VIRTUAL_SERVICE,
    Resource,
)
from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.checkpoint import CheckpointInfo, gated_components, status_projection
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
from dgd.domain.render.errors import RenderError
from dgd.domain.render.frontend_exposure import manages_virtual_services
from dgd.domain.render.pcs import graph_discovery_backend, graph_pcs_name
from dgd.domain.render.ssh_keys import KeySource
from dgd.domain.render.stable_resources import render_stable_resources
from dgd.domain.render.workloads import desired_pod_clique_set
from dgd.domain.restart import RestartState
from dgd.domain.topology import apply_topology
from dgd.domain.worker_generation import initial_worker_hash, plan_unmanaged
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet
from dgd.messages.timestamps import rfc3339
from dgd.runtime import ActorError, Ref

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


class _GroveProgress(Progress):
    """A Grove run's record, with the PodCliqueSet it last observed or wrote (the topology projection,
    which runs after a failure too, reads it)."""

    def __init__(self, dgd: DynamoGraphDeployment, pcs: PodCliqueSet | None) -> None:
        super().__init__(dgd)
        self.pcs = pcs


class GroveProgram:
    """Reconciles DGDs whose workload provider is ``grove``; one instance per DGD actor, composed of
    the DGD actor's children it asks (through ``provisioning``, ``restart``, ``conclusion``, the
    ``grove_scaler`` and the ``topology_status``), the ``reader`` it observes with, the ``syncer`` that
    writes the children and the ``annotator`` that records the worker hash (dgd-domain §12.7)."""

    def __init__(
        self,
        *,
        config: OperatorConfig,
        reader: Reader,
        syncer: Syncer,
        annotator: DGDAnnotator,
        recorder: Recorder,
        now: Callable[[], str],
        provisioning: Provisioning,
        restart: Ref[ResolveRestart],
        conclusion: Conclusion,
        grove_scaler: Ref[Scale],
        topology_status: Ref[Project],
    ) -> None:
        self._config = config
        self._reader = reader
        self._syncer = syncer
        self._annotator = annotator
        self._recorder = recorder
        self._now = now
        self._provisioning = provisioning
        self._restart = restart
        self._conclusion = conclusion
        self._grove_scaler = grove_scaler
        self._topology_status = topology_status
        self._desired_hash = DesiredWorkerHash()
        # A digest of what the PodCliqueSet was last rendered and synced from (see _pcs_inputs_digest).
        self._synced_inputs: int | None = None

    def initial_annotations(self, dgd: DynamoGraphDeployment) -> dict[str, str]:
        """The first worker hash (§12.7 initialization), for the metadata write of the DGD's creation:
        nothing when Grove is off or the spec cannot be reconciled (its run fails before any write)."""
        if grove_disabled(self._config):
            return {}
        defaulted = default_in_memory(dgd, grove_enabled=True)
        try:
            refuse_unsupported(defaulted, self._config, keep=keep_none)
            desired = self._desired_hash.of(defaulted)
        except (Failure, RenderError):
            return {}
        return initial_worker_hash(dgd.metadata.annotations or {}, desired)

    async def reconcile(self, dgd: DynamoGraphDeployment) -> ProgramResult:
        """§9.1 in order; the topology projection runs after success and failure alike."""
        # Step 1: Grove disabled is terminal, and comes before the deferred topology projection.
        if grove_disabled(self._config):
            progress = Progress(dgd)
            why = 'selected workload provider "grove" is unavailable because Grove is disabled'
            progress.fail(Failure(PROVIDER_UNAVAILABLE, why, terminal=True), now=self._now())
            return progress.result()
        defaulted = default_in_memory(dgd, grove_enabled=True)
        # The one observation of the PodCliqueSet this run renders, syncs and projects from.
        observed = await self._reader.get(PCS.key(dgd.metadata.namespace, graph_pcs_name(defaulted)))
        progress = _GroveProgress(dgd, observed)
        try:
            await self._run(progress, defaulted, observed)
        except (Failure, ClusterError, ActorError, RenderError, InconsistentRevision) as error:
            progress.fail(as_failure(error), now=self._now())
        # Step 2 (deferred): the topology condition, from the PodCliqueSet this run ended with.
        await self._project_topology(progress, defaulted)
        return progress.result()

    async def _run(
        self, progress: _GroveProgress, dgd: DynamoGraphDeployment, observed: PodCliqueSet | None
    ) -> None:
        # What this release cannot reconcile yet fails before any write.
        refuse_unsupported(dgd, self._config, keep=keep_none)
        # Step 3: a v1-only DGD records its v2 worker hash first (Grove has no managed rollout).
        desired_hash = self._desired_hash.of(dgd)
        try:
            progress.dgd = await migrate_worker_hash(
                self._annotator, self._recorder, progress.dgd, desired_hash
            )
        except ClusterError as error:
            raise Failure(
                FAILED_TO_MIGRATE_WORKER_HASH, f"failed to migrate the worker hash: {error}"
            ) from error
        # Step 4: shared resources before any pod exists that needs them, then the checkpoints, whose
        # statuses are published even if a later step fails.
        infos = await self._provisioning.ensure(dgd, progress.dgd, desired_hash)
        progress.status = msgspec.structs.replace(progress.status, checkpoints=status_projection(infos))
        await self._provisioning.finish(dgd, progress.dgd)
        # Step 5: the restart, resolved against the Grove children.
        ask = ResolveRestart(
            dgd=dgd, previous=progress.status.restart, rolling_update=progress.status.rolling_update,
            pathway="grove",
        )  # fmt: skip
        restart = await self._restart.ask(ask)
        progress.status = msgspec.structs.replace(progress.status, restart=restart.status)
        progress.queue(*([restart.event] if restart.event is not None else []))
        # Step 6: the Grove workloads (§9.2).
        try:
            outcome = await self._workloads(progress, dgd, desired_hash, observed, restart.state, infos)
        except Failure as failure:
            message = f"failed to reconcile Grove workloads: {failure.message}"
            raise Failure(failure.reason, message, terminal=failure.terminal) from failure
        except (ClusterError, ActorError, InconsistentRevision) as error:
            raise as_failure(error, "failed to reconcile Grove workloads") from error
        # Steps 7-9: the checkpoint wait, scaling adapters, the success projection.
        progress.status = await self._conclusion.conclude(dgd, progress.dgd, progress.status, outcome, infos)

    async def _workloads(
        self,
        progress: _GroveProgress,
        dgd: DynamoGraphDeployment,
        desired_hash: str,
        observed: PodCliqueSet | None,
        restart: RestartState,
        infos: Mapping[str, CheckpointInfo],
    ) -> ReconcileResult:
        # 1. Plan the worker-hash transition (reads only): a new generation turns on the hash suffix.
        # Until a PodCliqueSet exists, the hash recorded names no generation that ran.
        plan = plan_unmanaged(
            dict(progress.dgd.metadata.annotations or {}), desired_hash, running=observed is not None
        )
        gated = gated_components(infos)
        stamps = restart.stamps()
        domains = await topology_domains(self._reader, dgd)
        templates = await claim_templates(self._reader, self._config, dgd)
        extra = msgspec.json.encode((stamps, sorted(infos.items()), domains, sorted(templates.items())))
        # 2. Render against the one observation (replicas and order kept, restart stamps carried),
        # unless neither the DGD nor the PodCliqueSet changed since the last sync left them equal.
        inputs = _pcs_inputs_digest(progress.dgd, observed, extra)
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
                pcs = await self._syncer.sync(PCS, desired, observed, owner=progress.dgd)
            except ClusterError as error:
                raise as_failure(error, "failed to reconcile the Grove PodCliqueSet") from error
            self._synced_inputs = _pcs_inputs_digest(progress.dgd, pcs, extra) if pcs is observed else None
        progress.pcs = pcs
        # 4. The write barrier: the worker hash is committed only once the PodCliqueSet carries it.
        try:
            progress.dgd = await commit_unmanaged(self._annotator, self._recorder, progress.dgd, plan)
        except ClusterError as error:
            raise Failure(ROLLING_UPDATE_FAILED, f"failed to commit the worker hash: {error}") from error
        # 5. Horizontal scale through the scale subresource, never the PodCliqueSet spec.
        scaled = await self._grove_scaler.ask(Scale(dgd, gated))
        if isinstance(scaled, StepFailed):
            raise Failure(FAILED_TO_RECONCILE, f"failed to reconcile Grove scaling: {scaled.message}")
        # 6. Services, Ingress and VirtualService beside the workload; those no longer rendered go.
        await self._stable_resources(dgd, progress.dgd)
        # 7. Readiness from the synced PodCliqueSet and one read of each child.
        rescaled = {change.component: change.after for change in scaled.changes}
        readiness = grove_readiness(
            dgd, pcs, await observe_children(self._reader, dgd, dgd.spec.components or [], rescaled)
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

    async def _project_topology(self, progress: _GroveProgress, dgd: DynamoGraphDeployment) -> None:
        try:
            projection = await self._topology_status.ask(
                Project(dgd, progress.pcs, progress.status, self._now())
            )
        except ActorError as error:
            logger.warning(
                "%s/%s: topology projection skipped: %s", dgd.metadata.namespace, dgd.metadata.name, error
            )
            return
        if isinstance(projection, NoTopology):
            return
        progress.status = apply_topology(progress.status, projection)
        if projection.warning is not None:
            progress.queue(projection.warning)


async def compose(
    spawn: Spawn,
    *,
    reader: Reader,
    syncer: Syncer,
    annotator: DGDAnnotator,
    recorder: Recorder,
    config: OperatorConfig,
    keys: KeySource,
    wall: Callable[[], float],
) -> GroveProgram:
    """The Grove program of one DGD actor, with its children (the shared ones, then the Grove scaler and
    the topology status)."""

    def now() -> str:
        return rfc3339(wall())

    provisioning, restart, conclusion = await shared_parts(
        spawn, reader=reader, syncer=syncer, recorder=recorder, config=config, keys=keys, now=now
    )
    scaler = await spawn("grove-scaler", lambda: GroveScaler(reader=reader, syncer=syncer))
    topology = await spawn("topology-status", TopologyStatus)
    return GroveProgram(
        config=config, reader=reader, syncer=syncer, annotator=annotator, recorder=recorder, now=now,
        provisioning=provisioning, restart=restart, conclusion=conclusion, grove_scaler=scaler,
        topology_status=topology,
    )  # fmt: skip
