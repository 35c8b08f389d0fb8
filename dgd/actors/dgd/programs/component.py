"""The Component workload program (dgd-domain §8.1–§8.2): one ordered reconcile of a DGD on DCDs.

``ComponentProgram.reconcile`` reads top to bottom; each step is an ask to a child actor or a pure
call into ``dgd.domain``, and their order is the contract:

1. the worker generation: the ``rollout`` child records the worker hash and advances the managed
   rollout (or, for a multinode graph, commits the hash without one);
2. shared resources (RBAC, discovery, the wait-for-leader script, MPI keys), then the checkpoints;
3. a multinode component needs LeaderWorkerSet: without it the DGD fails
   ``no_multinode_orchestrator_available``;
4. the restart, resolved against the DCDs;
5. the DCDs: one per component, worker DCDs of the new generation at their rollout targets, then
   the old generations scaled to theirs; readiness from the synced DCDs, with the old generations'
   replicas merged into their component's status;
6. a component waiting for its checkpoint makes the graph wait;
7. the scaling adapters, unless it waits;
8. the success projection.

The program never writes the DGD status: it returns the complete desired status and the events
queued with it; the DGD actor persists one and then emits the other.

``compose`` builds the program and starts the DGD actor's children it asks (the shared ones, and the
rollout): adding a child to this pathway is the child's module, a line there and a step here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import msgspec

from dgd.actors.dgd.annotator import DGDAnnotator
from dgd.actors.dgd.children.restart import ResolveRestart
from dgd.actors.dgd.children.rollout import (
    AdvanceRollout,
    OldScaled,
    ProgressLedger,
    Rollout,
    RolloutAdvanced,
    ScaleOld,
)
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.dgd.programs.conclusion import Conclusion
from dgd.actors.dgd.programs.provisioning import Provisioning
from dgd.actors.dgd.programs.refusals import refuse_unsupported
from dgd.actors.dgd.programs.result import ProgramResult, Progress, as_failure
from dgd.actors.dgd.programs.shared_children import Spawn, shared_parts
from dgd.actors.dgd.programs.worker_hash import DesiredWorkerHash
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import DCD
from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.checkpoint import CheckpointInfo, status_projection
from dgd.domain.metadata_keys import RESTART_AT, WORKER_HASH
from dgd.domain.orchestrators import lacks_multinode_orchestrator
from dgd.domain.preflight import MULTINODE_FIELD
from dgd.domain.projection import (
    NO_MULTINODE_ORCHESTRATOR,
    ROLLING_UPDATE_FAILED,
    Failure,
    ReconcileResult,
    ResourceReadiness,
    check_resources_readiness,
)
from dgd.domain.readiness import dcd_readiness
from dgd.domain.render.errors import RenderError
from dgd.domain.render.ssh_keys import KeySource
from dgd.domain.render.template_defaults import template_metadata
from dgd.domain.render.workloads import dcd_names, desired_dcds
from dgd.domain.restart import RestartState, carried_stamps
from dgd.domain.roles import has_multinode
from dgd.domain.rollout import Hashes
from dgd.domain.rollout_replicas import merged_status, targets
from dgd.domain.worker_generation import initial_worker_hash
from dgd.messages.component import WORKER_TYPES
from dgd.messages.config import OperatorConfig, progress_deadline
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.timestamps import rfc3339
from dgd.runtime import ActorError, Ref

logger = logging.getLogger("dgd.component")


def _multinode_refusal(problem: RenderError) -> bool:
    """The refusal of a multinode component without LeaderWorkerSet, which step 3 reports itself."""
    return problem.path.endswith(MULTINODE_FIELD)


class ComponentProgram:
    """Reconciles DGDs whose workload provider is ``component``; one instance per DGD actor, composed of
    the DGD actor's children it asks (the ``rollout``, through ``provisioning``, the ``restart`` and the
    ``conclusion``), the ``reader`` it observes with and the ``syncer`` that writes the DCDs; ``clock``
    gives the seconds the rollout's ``progress_deadline`` is measured in."""

    def __init__(
        self,
        *,
        config: OperatorConfig,
        reader: Reader,
        syncer: Syncer,
        now: Callable[[], str],
        clock: Callable[[], float],
        progress_deadline: float | None,
        rollout: Ref[AdvanceRollout | ScaleOld],
        provisioning: Provisioning,
        restart: Ref[ResolveRestart],
        conclusion: Conclusion,
    ) -> None:
        self._config = config
        self._reader = reader
        self._syncer = syncer
        self._now = now
        self._clock = clock
        self._deadline = progress_deadline
        self._rollout = rollout
        self._provisioning = provisioning
        self._restart = restart
        self._conclusion = conclusion
        self._desired_hash = DesiredWorkerHash()

    def initial_annotations(self, dgd: DynamoGraphDeployment) -> dict[str, str]:
        """The first worker hash, which the rollout step would record before any DCD (§8.1 step 1
        initialization), for the metadata write of the DGD's creation: nothing for a multinode graph
        (its hash is committed after its DCDs, §12.7) or a spec whose run fails before that step."""
        defaulted = default_in_memory(dgd, grove_enabled=False)
        if has_multinode(defaulted):
            return {}
        try:
            refuse_unsupported(defaulted, self._config, keep=_multinode_refusal)
            desired = self._desired_hash.of(defaulted)
        except (Failure, RenderError):
            return {}
        return initial_worker_hash(dgd.metadata.annotations or {}, desired)

    async def reconcile(self, dgd: DynamoGraphDeployment) -> ProgramResult:
        """§8.1 in order; a failure at any step is projected with what was done before it."""
        progress = Progress(dgd)
        defaulted = default_in_memory(dgd, grove_enabled=False)
        try:
            await self._run(progress, defaulted)
        except (Failure, ClusterError, ActorError, RenderError) as error:
            progress.fail(as_failure(error), now=self._now())
        return progress.result()

    async def _run(self, progress: Progress, dgd: DynamoGraphDeployment) -> None:
        # What this release cannot reconcile yet fails before any write (the missing multinode
        # orchestrator is step 3's own failure).
        refuse_unsupported(dgd, self._config, keep=_multinode_refusal)
        # Step 1: the worker generation this reconcile renders.
        prepared = await self._rollout.ask(
            AdvanceRollout(
                dgd=progress.dgd,
                defaulted=dgd,
                desired=self._desired_hash.of(dgd),
                now=self._now(),
                clock=self._clock(),
                deadline=self._deadline,
            )
        )
        if isinstance(prepared, StepFailed):
            raise Failure(prepared.reason or ROLLING_UPDATE_FAILED, prepared.message)
        progress.dgd = prepared.dgd
        progress.status = msgspec.structs.replace(progress.status, rolling_update=prepared.status)
        progress.queue(*prepared.events)
        progress.wake = prepared.wake
        # Step 2: shared resources before any pod exists that needs them, then the checkpoints, whose
        # statuses are published even if a later step fails.
        infos = await self._provisioning.ensure(dgd, progress.dgd, prepared.new_hash)
        progress.status = msgspec.structs.replace(progress.status, checkpoints=status_projection(infos))
        await self._provisioning.finish(dgd, progress.dgd)
        # Step 3: multinode components need LeaderWorkerSet on this pathway.
        if any(lacks_multinode_orchestrator(c, self._config) for c in dgd.spec.components or []):
            raise Failure(NO_MULTINODE_ORCHESTRATOR, "no multinode orchestrator available", terminal=True)
        # Step 4: the restart, resolved against the DCDs of every generation that may run.
        current = Hashes.of(progress.dgd.metadata.annotations)
        candidates = dict.fromkeys(h for h in (prepared.new_hash, current.v1, current.v2) if h)
        ask = ResolveRestart(
            dgd=dgd, previous=progress.status.restart, rolling_update=progress.status.rolling_update,
            pathway="component", worker_hashes=tuple(candidates),
        )  # fmt: skip
        restart = await self._restart.ask(ask)
        progress.status = msgspec.structs.replace(progress.status, restart=restart.status)
        progress.queue(*([restart.event] if restart.event is not None else []))
        # Step 5: the DCDs.
        try:
            outcome = await self._workloads(progress.dgd, dgd, prepared, restart.state, infos)
        except Failure as failure:
            message = f"failed to reconcile Dynamo components deployments: {failure.message}"
            raise Failure(failure.reason, message, terminal=failure.terminal) from failure
        except (ClusterError, ActorError) as error:
            raise as_failure(error, "failed to reconcile Dynamo components deployments") from error
        # Steps 6-8: the checkpoint wait, scaling adapters, the success projection.
        progress.status = await self._conclusion.conclude(
            dgd, progress.dgd, progress.status, outcome, infos, rollout_failure=prepared.failure
        )

    async def _workloads(
        self,
        owner: DynamoGraphDeployment,
        dgd: DynamoGraphDeployment,
        prepared: RolloutAdvanced,
        restart: RestartState,
        infos: Mapping[str, CheckpointInfo],
    ) -> ReconcileResult:
        namespace = dgd.metadata.namespace or ""
        # 1. The new generation's worker DCDs at their rollout targets (the desired replicas otherwise).
        replicas = {g.component: targets(g)[0] for g in prepared.components}
        # 2. The restart stamps: those the restart selects now, the others as the DCDs carry them.
        stamps = {**await self._carried_stamps(dgd, owner, prepared.new_hash), **restart.stamps()}
        # 3. The DCDs that exist, observed once: an existing DCD keeps its backend framework.
        live: dict[str, DynamoComponentDeployment] = {}
        for name in dcd_names(dgd, prepared.new_hash):
            if (found := await self._reader.get(DCD.key(namespace, name))) is not None:
                live[name] = found
        # 4. One complete DCD per component, synced; a checkpointed component restores from its
        # checkpoint (and waits for it at 0 replicas).
        synced: list[DynamoComponentDeployment] = []
        desired = desired_dcds(
            dgd,
            worker_hash=prepared.new_hash,
            checkpoints=infos,
            replicas=replicas,
            restart_at=stamps,
            live=live,
        )
        for body in desired:
            existing = live.get(body["metadata"]["name"])
            synced.append(await self._syncer.sync(DCD, body, existing, owner=owner))
        # 5. The old generations scaled to their share of the old targets.
        old_targets: dict[str, int] = {}
        if prepared.components:
            scaled = await self._rollout.ask(ScaleOld(namespace, prepared.components, owner))
            if isinstance(scaled, StepFailed):
                raise Failure(ROLLING_UPDATE_FAILED, scaled.message)
            assert isinstance(scaled, OldScaled)
            old_targets = scaled.targets
        await self._delete_removed(dgd, owner, synced)
        # 6. Readiness over the synced DCDs.
        resources = []
        for dcd in synced:
            ready, why, components = dcd_readiness(dcd)
            resources.append(ResourceReadiness(dcd.metadata.name or "", ready, why, components))
        outcome = check_resources_readiness(resources)
        # 7. During a rollout, the old generations' replicas count in their component's status.
        if not prepared.components:
            return outcome
        components = dict(outcome.components)
        for generations in prepared.components:
            merged = merged_status(components.get(generations.component), generations.old, old_targets)
            if merged is not None:
                components[generations.component] = merged
        return msgspec.structs.replace(outcome, components=components)

    async def _carried_stamps(
        self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment, new_hash: str
    ) -> dict[str, str]:
        """The restart stamps the DCDs carry, the generation being rendered first (§8.2 step 2)."""
        live = await self._reader.controlled_by(DCD, dgd.metadata.namespace or "", owner.metadata.uid)
        live.sort(key=lambda d: (d.metadata.labels or {}).get(WORKER_HASH, new_hash) != new_hash)
        return carried_stamps(
            (dcd.spec.name, template_metadata(dcd.spec.pod_template or {}, "annotations").get(RESTART_AT))
            for dcd in live
        )

    async def _delete_removed(
        self,
        dgd: DynamoGraphDeployment,
        owner: DynamoGraphDeployment,
        synced: Sequence[DynamoComponentDeployment],
    ) -> None:
        """Departure from upstream (``docs/decisions.md``): a DCD this DGD controls whose component is
        gone (or is no longer a worker, for a worker DCD) is deleted. Old worker generations of a
        current worker component are the rollout's."""
        keep = {dcd.metadata.name for dcd in synced}
        workers = {c.name for c in dgd.spec.components or [] if c.type in WORKER_TYPES}
        names = {c.name for c in dgd.spec.components or []}

        def kept(live: DynamoComponentDeployment) -> bool:
            if live.metadata.name in keep or live.metadata.deletion_timestamp:
                return True
            component = live.spec.name or ""
            is_worker_dcd = bool((live.metadata.labels or {}).get(WORKER_HASH))
            return component in names and is_worker_dcd == (component in workers)

        await self._syncer.prune(
            DCD,
            dgd.metadata.namespace or "",
            owner=owner,
            keep=kept,
            why="its component is no longer in the DGD",
        )


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
    ledger: ProgressLedger,
) -> ComponentProgram:
    """The Component program of one DGD actor, with its children (the rollout first: it decides the
    generation every later step renders; then the shared ones); ``ledger``: where the rollout keeps
    its progress, which outlives the child."""

    def now() -> str:
        return rfc3339(wall())

    rollout = await spawn(
        "rollout",
        lambda: Rollout(reader=reader, syncer=syncer, annotator=annotator, recorder=recorder, ledger=ledger),
    )
    provisioning, restart, conclusion = await shared_parts(
        spawn, reader=reader, syncer=syncer, recorder=recorder, config=config, keys=keys, now=now
    )
    return ComponentProgram(
        config=config, reader=reader, syncer=syncer, now=now, clock=wall,
        progress_deadline=progress_deadline(config), rollout=rollout, provisioning=provisioning,
        restart=restart, conclusion=conclusion,
    )  # fmt: skip
