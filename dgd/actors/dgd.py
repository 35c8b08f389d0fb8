"""The DGD actor: owns one DynamoGraphDeployment's lifecycle (dgd-domain §5, one reconcile at a time).

A reconcile reads the DGD from the cache and follows the outer reconciler in order:

1. gone: nothing to do; being deleted: run the finalizer and stop (status is never written then);
2. an unknown workload provider fails terminally (``unsupported_workload_provider``);
3. a DGD that fails validation (admission may never have seen it) gets ``failed``/``invalid_spec``
   with every message, and nothing else is written; otherwise the workload provider annotation is
   adopted or chosen (§4.1);
4. the checkpoint compatibility preflight (a DGD it fails has its provider recorded, then the status);
5. the finalizer, written with the provider and the program's first annotations (its worker hash) in
   one merge patch with a resourceVersion precondition: a new DGD's metadata is written once;
6. the selected program, run once (its children are started on first use: a DGD runs only the
   children of its pathway);
7. the status, written once, only if it changed, with the resourceVersion held; then the events
   queued with it, in order. A failed or skipped write drops them.

Nudges that arrive during a reconcile coalesce into one more. A failed reconcile is retried after an
exponential backoff; a terminal one (a spec this release cannot reconcile, an unsupported provider)
waits for the DGD's next change. Children are supervised one for one with a restart intensity and
backoff: a child crash fails only the reconcile that asked it (the status keeps the progress made),
and the next reconcile retries.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Callable
from typing import Any

from msgspec import structs

from dgd.actors.cache import Reader
from dgd.actors.children.checkpoint_storage import CheckpointStorage, FinalizeCheckpoints, ResolveCheckpoints
from dgd.actors.children.grove_scaler import GroveScaler
from dgd.actors.children.restart import RestartResolver
from dgd.actors.children.rollout import ProgressLedger, Rollout
from dgd.actors.children.scaling_adapters import ScalingAdapters
from dgd.actors.children.shared_resources import SharedResources
from dgd.actors.children.step_failed import StepFailed
from dgd.actors.children.topology_status import TopologyStatus
from dgd.actors.dgd_writer import FINALIZER, DGDWriter
from dgd.actors.on_demand import OnDemand
from dgd.actors.programs.component import ComponentProgram
from dgd.actors.programs.grove import GroveProgram
from dgd.actors.programs.result import Program
from dgd.actors.programs.steps import ProgramParts
from dgd.actors.reconciler import DGD_CONTROLLER, Nudge, ReconcileObserver, Reconciler
from dgd.actors.recorder import Recorder
from dgd.actors.retries import Intent, Retries
from dgd.actors.runtime import (
    Actor,
    Backoff,
    Ref,
    Strategy,
    Supervision,
)
from dgd.actors.sync import Syncer
from dgd.actors.workers import Workers
from dgd.cluster.errors import ClusterError, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DCD, DGD, PCS
from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER, default_in_memory
from dgd.domain.admission.errors import FieldError
from dgd.domain.admission.validation import validate_create
from dgd.domain.events import INTERNAL_ERROR, EventRecord, reconcile_error
from dgd.domain.orchestrators import grove_disabled
from dgd.domain.preflight import checkpoint_preflight
from dgd.domain.projection import (
    FAILED_TO_HANDLE_FINALIZER,
    FAILED_TO_RECONCILE,
    INVALID_SPEC,
    Failure,
    fail,
    starting_status,
)
from dgd.domain.provider import COMPONENT, ConflictingProviders, adopt_provider, stored_provider
from dgd.domain.render.ssh_keys import KeySource
from dgd.messages.config import OperatorConfig, progress_deadline
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment
from dgd.messages.timestamps import rfc3339

logger = logging.getLogger("dgd.reconcile")


def _field_order(error: FieldError) -> tuple[int, str]:
    """Validation errors in document order: metadata first, list indexes compared as numbers."""
    path = re.sub(r"\[(\d+)\]", lambda match: f"[{int(match.group(1)):04d}]", error.path)
    return (0 if error.path.startswith("metadata") else 1), path


class Outcome(enum.Enum):
    """How a reconcile ended, which decides when the next one happens without a nudge."""

    DONE = "done"  #: converged as far as it can now: wait for the next watch event
    RETRY = "retry"  #: failed in a way that may heal: again after a backoff
    WAIT = "wait"  #: failed terminally: wait for the DGD to change
    CRASHED = "crashed"  #: failed on an internal error: again after a backoff, whatever happens meanwhile


#: How the DGD actor supervises its children.
CHILD_SUPERVISION = Supervision(Strategy.ONE_FOR_ONE, intensity=10, period=60.0, backoff=Backoff(0.2, 10.0))


class DGDActor(Reconciler):
    """The actor of the DGD ``namespace/name``: the only writer of its status."""

    supervision = CHILD_SUPERVISION
    controller = DGD_CONTROLLER

    def __init__(
        self,
        namespace: str,
        name: str,
        *,
        cluster: Cluster,
        reader: Reader,
        syncer: Syncer,
        dgd_writer: DGDWriter,
        recorder: Recorder,
        config: OperatorConfig,
        wall: Callable[[], float],
        keys: KeySource,
        retries: Retries | None = None,
        reconciles: ReconcileObserver | None = None,
        workers: Workers | None = None,
    ) -> None:
        super().__init__(namespace, name, retries=retries, reconciles=reconciles)
        self._workers = workers
        self._cluster = cluster
        self._reader = reader
        self._syncer = syncer
        self._dgd_writer = dgd_writer
        self._recorder = recorder
        self._config = config
        self._wall = wall
        self._keys = keys
        self._running: Program | None = None
        self._children = OnDemand()
        self._rollout_progress = ProgressLedger()  # outlives the rollout child, which rests
        self._reconciled_before = False

    async def receive(self, message: Nudge) -> None:
        self._cancel_timer()
        intent = self._intent()
        if self._deferred(intent):
            return
        if self._workers is None:
            await self._reconcile_and_report(intent)
            await self._rest()
            return
        # Nudges that arrive while this waits for a worker coalesce into one more reconcile; none is
        # granted once the operator drains.
        # A DGD reconciled before goes ahead of first reconciles (``Workers``: follow-ups first).
        async with self._workers.slot(self._key, first=not self._reconciled_before) as granted:
            if granted:
                self._reconciled_before = True
                await self._reconcile_and_report(intent)
        await self._rest()

    async def _rest(self) -> None:
        """Let the children go once a reconcile is done (``OnDemand``: none holds state of its own)."""
        await self._children.rest(self.context)

    def _intent(self) -> Intent | None:
        dgd = self._reader.cache.get(DGD, self._namespace, self._name)
        return None if dgd is None else (dgd.metadata.generation, bool(dgd.metadata.deletion_timestamp))

    async def _reconcile_and_report(self, intent: Intent | None) -> None:
        with self._reporting() as report:
            try:
                outcome = await self._reconcile()
            except (ClusterError, ConflictingProviders) as error:
                logger.info("%s/%s: reconcile failed, will retry: %s", self._namespace, self._name, error)
                outcome = Outcome.RETRY
            except Exception:
                # A bug (ours, or a shape of object we did not foresee) fails this DGD only, as
                # controller-runtime recovers a reconciler's panic: said to the user in words, retried.
                logger.exception(
                    "%s/%s: reconcile failed unexpectedly, will retry", self._namespace, self._name
                )
                await self._report_internal_error()
                outcome = Outcome.CRASHED
            if outcome in (Outcome.RETRY, Outcome.CRASHED):
                self._schedule_retry(intent, hold=outcome is Outcome.CRASHED)
                report.result = "requeue"
            else:
                self._succeeded()
                woken = outcome is Outcome.DONE and self._timer is not None
                report.result = (
                    "error" if outcome is Outcome.WAIT else ("requeue_after" if woken else "success")
                )

    # The outer reconcile (§5), in order.

    async def _reconcile(self) -> Outcome:
        dgd = self._reader.cache.get(DGD, self._namespace, self._name)
        if dgd is None:
            return Outcome.DONE
        # Deleting: the finalizer runs, and the status is never written on this path.
        if dgd.metadata.deletion_timestamp:
            return await self._finalize(dgd)
        # The workload provider, chosen once and kept in an annotation: an unknown one is terminal.
        try:
            provider = stored_provider(dgd)
        except Failure as failure:
            await self._persist(dgd, self._failed(dgd, failure.reason, failure.message))
            return Outcome.WAIT
        # A DGD admission never checked: report every problem, write nothing else.
        problems = self._validate(dgd)
        if problems:
            await self._persist(dgd, self._failed(dgd, INVALID_SPEC, "; ".join(problems)))
            return Outcome.WAIT
        # The provider chosen now is recorded with the finalizer below: one write of a new DGD.
        adopted = {WORKLOAD_PROVIDER: await self._adopt_provider(dgd)} if provider is None else {}
        provider = provider or adopted[WORKLOAD_PROVIDER]
        # Checkpoint compatibility, before the finalizer is added: the user must fix the spec.
        incompatible = checkpoint_preflight(dgd)
        if incompatible:
            dgd = await self._dgd_writer.record(dgd, adopted)
            await self._persist(dgd, self._failed(dgd, FAILED_TO_RECONCILE, "; ".join(incompatible)))
            return Outcome.WAIT
        program = await self._program(provider)
        # The finalizer, so a deletion waits for our cleanup, with what the program records first.
        if FINALIZER not in (dgd.metadata.finalizers or []):
            try:
                dgd = await self._dgd_writer.record(
                    dgd,
                    {**adopted, **program.initial_annotations(dgd)},
                    [*(dgd.metadata.finalizers or []), FINALIZER],
                )
            except ClusterError as error:
                if adopted:
                    raise  # the provider is not recorded either: retried without a status
                await self._persist_quietly(dgd, self._failed(dgd, FAILED_TO_HANDLE_FINALIZER, str(error)))
                return Outcome.RETRY
        else:
            # Finalized already (by an earlier operator) but without a provider: that alone.
            dgd = await self._dgd_writer.record(dgd, adopted)
        # The program of the provider, once; then its status, once, and only then its events.
        result = await program.reconcile(dgd)
        await self._persist(result.dgd, result.status, result.events)
        if result.failure is None:
            if result.wake is not None:
                self._schedule_wake(result.wake)
            return Outcome.DONE
        logger.info(
            "%s/%s: %s: %s", self._namespace, self._name, result.failure.reason, result.failure.message
        )
        return Outcome.WAIT if result.failure.terminal else Outcome.RETRY

    async def _finalize(self, dgd: DynamoGraphDeployment) -> Outcome:
        """§15.1: the DGD's automatic checkpoints follow their deletion policy, then the finalizer goes."""
        finalizers = dgd.metadata.finalizers or []
        if FINALIZER not in finalizers:
            return Outcome.DONE
        cleaned = await (await self._checkpoint_storage()).ask(FinalizeCheckpoints(dgd))
        if isinstance(cleaned, StepFailed):
            logger.info("%s/%s: finalizer: %s", self._namespace, self._name, cleaned.message)
            return Outcome.RETRY
        await self._dgd_writer.set_finalizers(dgd, [f for f in finalizers if f != FINALIZER])
        return Outcome.DONE

    def _validate(self, dgd: DynamoGraphDeployment) -> list[str]:
        grove = not grove_disabled(self._config)
        defaulted = default_in_memory(dgd, grove_enabled=grove)
        # Checked as a create, except the rule that a create has no restart request yet.
        checked = structs.replace(defaulted, spec=structs.replace(defaulted.spec, restart=None))
        errors = sorted(validate_create(checked, grove_enabled=grove), key=_field_order)
        return [str(error) for error in errors]

    async def _adopt_provider(self, dgd: DynamoGraphDeployment) -> str:
        """The workload provider of a DGD that records none yet (§4.1); not written here."""
        namespace = dgd.metadata.namespace or ""
        uid = dgd.metadata.uid
        try:
            podcliquesets = [p.metadata for p in await self._reader.controlled_by(PCS, namespace, uid)]
        except NotFound:
            podcliquesets = []  # the cluster does not serve Grove: no PodCliqueSet can exist
        return adopt_provider(
            dgd,
            podcliquesets=podcliquesets,
            component_deployments=[d.metadata for d in await self._reader.controlled_by(DCD, namespace, uid)],
            grove_enabled=not grove_disabled(self._config),
        )

    async def _program(self, provider: str) -> Program:
        """The program of ``provider``, its children started on first use (a DGD's provider never
        changes once recorded)."""
        if self._running is None:
            self._running = (
                await self._component_program() if provider == COMPONENT else await self._grove_program()
            )
        else:
            await self._children.wake(self.context)
        return self._running

    async def _child(self, name: str, build: Callable[[], Actor[Any]]) -> Ref[Any]:
        """The child ``name`` (a permanent one), started with ``build`` when not running."""
        return await self._children.child(self.context, name, build)

    async def _checkpoint_storage(self) -> Ref[ResolveCheckpoints | FinalizeCheckpoints]:
        return await self._child(
            "checkpoint-storage",
            lambda: CheckpointStorage(
                reader=self._reader, syncer=self._syncer, recorder=self._recorder, config=self._config,
            ),
        )  # fmt: skip

    async def _program_parts(self) -> ProgramParts:
        """What both programs are built with: the shared collaborators and the children both ask."""
        reader, syncer = self._reader, self._syncer
        shared = await self._child(
            "shared-resources",
            lambda: SharedResources(reader=reader, syncer=syncer, config=self._config, keys=self._keys),
        )
        checkpoints = await self._checkpoint_storage()
        restart = await self._child("restart", lambda: RestartResolver(reader=reader))
        adapters = await self._child(
            "scaling-adapters",
            lambda: ScalingAdapters(reader=reader, syncer=syncer),
        )
        return ProgramParts(
            config=self._config, reader=reader, syncer=syncer, now=self._now, shared_resources=shared,
            checkpoints=checkpoints, restart=restart, adapters=adapters,
        )  # fmt: skip

    async def _component_program(self) -> Program:
        rollout = await self._child(
            "rollout",
            lambda: Rollout(
                reader=self._reader, syncer=self._syncer, dgd_writer=self._dgd_writer,
                recorder=self._recorder, ledger=self._rollout_progress,
            ),
        )  # fmt: skip
        return ComponentProgram(
            clock=self._wall,
            progress_deadline=progress_deadline(self._config),
            rollout=rollout,
            **await self._program_parts(),
        )

    async def _grove_program(self) -> Program:
        parts = await self._program_parts()
        scaler = await self._child(
            "grove-scaler", lambda: GroveScaler(reader=self._reader, syncer=self._syncer)
        )
        return GroveProgram(
            dgd_writer=self._dgd_writer,
            recorder=self._recorder,
            grove_scaler=scaler,
            topology_status=await self._child("topology-status", TopologyStatus),
            **parts,
        )

    # The status: one writer, one write, events only after it.

    def _now(self) -> str:
        return rfc3339(self._wall())

    def _failed(self, dgd: DynamoGraphDeployment, reason: str, message: str) -> DGDStatus:
        return fail(
            starting_status(dgd.status),
            generation=dgd.metadata.generation,
            reason=reason,
            message=message,
            now=self._now(),
        )

    async def _persist(
        self, dgd: DynamoGraphDeployment, status: DGDStatus, events: list[EventRecord] | None = None
    ) -> None:
        """Write ``status`` if it differs from the stored one; then, and only then, emit ``events``."""
        if status == dgd.status:
            return
        written = await self._dgd_writer.write_status(dgd, status)
        for event in events or ():
            await self._recorder.emit(written, event)

    async def _persist_quietly(
        self, dgd: DynamoGraphDeployment, status: DGDStatus, events: list[EventRecord] | None = None
    ) -> None:
        try:
            await self._persist(dgd, status, events)
        except ClusterError as error:
            logger.info("%s/%s: status not written: %s", self._namespace, self._name, error)

    async def _report_internal_error(self) -> None:
        """Say on the DGD that its reconcile failed on an internal error (best effort: an error here is
        logged and the retry stands)."""
        dgd = self._reader.cache.get(DGD, self._namespace, self._name)
        if dgd is None or dgd.metadata.deletion_timestamp:
            return
        status = self._failed(dgd, FAILED_TO_RECONCILE, INTERNAL_ERROR)
        try:
            await self._persist_quietly(dgd, status, [reconcile_error(INTERNAL_ERROR)])
        except Exception:
            logger.exception("%s/%s: the internal error could not be reported", self._namespace, self._name)
