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

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from msgspec import structs

from dgd.actors.dgd.children.checkpoint_storage import FinalizeCheckpoints, ResolveCheckpoints
from dgd.actors.dgd.children.rollout import ProgressLedger
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.dgd.programs import component, grove
from dgd.actors.dgd.programs.result import Program
from dgd.actors.dgd.programs.shared_children import checkpoint_storage
from dgd.actors.dgd.resting import RestingChildren
from dgd.actors.dgd.writer import FINALIZER, DGDWriter
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.loop import DGD_CONTROLLER, LoopParts, Outcome, Reconciler
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.retries import Intent
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import ClusterError, NotFound
from dgd.cluster.resources import DCD, DGD, PCS
from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER, default_in_memory
from dgd.domain.admission.errors import FieldError
from dgd.domain.admission.validation import validate_create
from dgd.domain.events import INTERNAL_ERROR, EventRecord, parked_message, reconcile_error
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
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment
from dgd.messages.timestamps import rfc3339
from dgd.runtime import (
    Actor,
    Backoff,
    Ref,
    Strategy,
    Supervision,
)

logger = logging.getLogger("dgd.reconcile")


def _field_order(error: FieldError) -> tuple[int, str]:
    """Validation errors in document order: metadata first, list indexes compared as numbers."""
    path = re.sub(r"\[(\d+)\]", lambda match: f"[{int(match.group(1)):04d}]", error.path)
    return (0 if error.path.startswith("metadata") else 1), path


#: How the DGD actor supervises its children.
CHILD_SUPERVISION = Supervision(Strategy.ONE_FOR_ONE, intensity=10, period=60.0, backoff=Backoff(0.2, 10.0))


class DGDActor(Reconciler):
    """The actor of the DGD ``namespace/name``: the only writer of its status."""

    supervision = CHILD_SUPERVISION
    controller = DGD_CONTROLLER
    log = logger
    retriable = (ClusterError, ConflictingProviders)

    def __init__(
        self,
        namespace: str,
        name: str,
        *,
        reader: Reader,
        syncer: Syncer,
        dgd_writer: DGDWriter,
        recorder: Recorder,
        config: OperatorConfig,
        wall: Callable[[], float],
        keys: KeySource,
        loop: LoopParts,
        parked_for: float | None = None,
    ) -> None:
        super().__init__(namespace, name, loop=loop, parked_for=parked_for)
        self._reader = reader
        self._syncer = syncer
        self._dgd_writer = dgd_writer
        self._recorder = recorder
        self._config = config
        self._wall = wall
        self._keys = keys
        self._running: Program | None = None
        self._children = RestingChildren()
        self._rollout_progress = ProgressLedger()  # outlives the rollout child, which rests

    async def after_reconcile(self) -> None:
        """Let the children go once a reconcile is done (``RestingChildren``: none holds state of its own)."""
        await self._children.rest(self.context)

    def _intent(self) -> Intent | None:
        dgd = self._reader.cache.get(DGD, self._namespace, self._name)
        return None if dgd is None else (dgd.metadata.generation, bool(dgd.metadata.deletion_timestamp))

    # The outer reconcile (§5), in order.

    async def reconcile(self) -> Outcome:
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
            return Outcome.TERMINAL
        # A DGD admission never checked: report every problem, write nothing else.
        problems = self._validate(dgd)
        if problems:
            await self._persist(dgd, self._failed(dgd, INVALID_SPEC, "; ".join(problems)))
            return Outcome.TERMINAL
        # The provider chosen now is recorded with the finalizer below: one write of a new DGD.
        adopted = {WORKLOAD_PROVIDER: await self._adopt_provider(dgd)} if provider is None else {}
        provider = provider or adopted[WORKLOAD_PROVIDER]
        # Checkpoint compatibility, before the finalizer is added: the user must fix the spec.
        incompatible = checkpoint_preflight(dgd)
        if incompatible:
            dgd = await self._dgd_writer.record(dgd, adopted)
            await self._persist(dgd, self._failed(dgd, FAILED_TO_RECONCILE, "; ".join(incompatible)))
            return Outcome.TERMINAL
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
        # The status says it (its transition is logged at info): the retry's detail is at debug.
        logger.debug(
            "%s/%s: %s: %s", self._namespace, self._name, result.failure.reason, result.failure.message
        )
        return Outcome.TERMINAL if result.failure.terminal else Outcome.RETRY

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
            self._running = await self._compose(provider)
        else:
            await self._children.wake(self.context)
        return self._running

    async def _child(self, name: str, build: Callable[[], Actor[Any]]) -> Ref[Any]:
        """The child ``name`` (a permanent one), started with ``build`` when not running."""
        return await self._children.child(self.context, name, build)

    async def _checkpoint_storage(self) -> Ref[ResolveCheckpoints | FinalizeCheckpoints]:
        return await checkpoint_storage(
            self._child,
            reader=self._reader,
            syncer=self._syncer,
            recorder=self._recorder,
            config=self._config,
        )

    async def _compose(self, provider: str) -> Program:
        """The program of ``provider``, composed with its children (each program module's ``compose``)."""
        reader, syncer, recorder, config = self._reader, self._syncer, self._recorder, self._config
        if provider == COMPONENT:
            return await component.compose(
                self._child, reader=reader, syncer=syncer, annotator=self._dgd_writer, recorder=recorder,
                config=config, keys=self._keys, wall=self._wall, ledger=self._rollout_progress,
            )  # fmt: skip
        return await grove.compose(
            self._child, reader=reader, syncer=syncer, annotator=self._dgd_writer, recorder=recorder,
            config=config, keys=self._keys, wall=self._wall,
        )  # fmt: skip

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
        self, dgd: DynamoGraphDeployment, status: DGDStatus, events: Sequence[EventRecord] = ()
    ) -> None:
        """Write ``status`` if it differs from the stored one; then, and only then, emit ``events``."""
        if status == dgd.status:
            return
        written = await self._dgd_writer.write_status(dgd, status)
        for event in events:
            await self._recorder.emit(written, event)

    async def _persist_quietly(
        self, dgd: DynamoGraphDeployment, status: DGDStatus, events: Sequence[EventRecord] = ()
    ) -> None:
        try:
            await self._persist(dgd, status, events)
        except ClusterError as error:
            logger.info("%s/%s: status not written: %s", self._namespace, self._name, error)

    async def report_internal_error(self) -> None:
        """Say on the DGD that its reconcile failed on an internal error (best effort: an error here is
        logged and the retry stands)."""
        await self._report_failure(INTERNAL_ERROR, "the internal error")

    async def report_parked(self, retry_in: float) -> None:
        """Say on the DGD that its actor is parked (``Reconciler.on_start``): the same status path as
        every reconcile, so an unchanged status is not written again."""
        await self._report_failure(parked_message(retry_in), "the parking")

    async def _report_failure(self, message: str, what: str) -> None:
        dgd = self._reader.cache.get(DGD, self._namespace, self._name)
        if dgd is None or dgd.metadata.deletion_timestamp:
            return
        status = self._failed(dgd, FAILED_TO_RECONCILE, message)
        try:
            await self._persist_quietly(dgd, status, [reconcile_error(message)])
        except Exception:
            logger.exception("%s/%s: %s could not be reported", self._namespace, self._name, what)
