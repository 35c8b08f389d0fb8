"""The steps both workload programs take in the same way (dgd-domain §8.1, §9.1), written once.

``WorkloadProgram`` holds what both programs ask (shared resources, checkpoint storage, restart,
scaling adapters) and read (the config, the cache), and the steps they share: refusing what this
release cannot reconcile, the desired worker hash, shared resources then checkpoints, the restart,
and the end of every run — a component waiting for its checkpoint makes the graph wait, adapters are
reconciled unless it waits, and the success projection. Each program calls them in its own order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Literal, TypedDict, Unpack

import msgspec

from dgd.actors.cache import Reader
from dgd.actors.children.checkpoint_storage import FinalizeCheckpoints, ResolveCheckpoints
from dgd.actors.children.restart import ResolveRestart
from dgd.actors.children.scaling_adapters import ReconcileAdapters
from dgd.actors.children.shared_resources import EnsureShared, EnsureSharedAfterCheckpoints
from dgd.actors.children.step_failed import StepFailed
from dgd.actors.programs.result import ProgramResult
from dgd.actors.runtime import Ref
from dgd.actors.sync import Syncer
from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER
from dgd.domain.checkpoint import WAITING_FOR_CHECKPOINT, CheckpointInfo, status_projection, waiting_overlay
from dgd.domain.preflight import unsupported
from dgd.domain.projection import FAILED_TO_RECONCILE, Failure, ReconcileResult, apply_reconcile_result
from dgd.domain.render.errors import RenderError
from dgd.domain.restart import RestartState
from dgd.domain.worker_generation import CURRENT_WORKER_HASH, CURRENT_WORKER_HASH_V2
from dgd.domain.worker_hash import worker_hash
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment

#: DGD annotations the operator writes that the worker hash does not read (``desired_worker_hash``).
_OWN_ANNOTATIONS = frozenset({CURRENT_WORKER_HASH, CURRENT_WORKER_HASH_V2, WORKLOAD_PROVIDER})


def _without_replicas(dgd: DynamoGraphDeployment) -> bytes:
    """The DGD's spec, its components' replicas left out, as bytes to compare."""
    components = [msgspec.structs.replace(c, replicas=None) for c in dgd.spec.components or []]
    return _PACK.encode(msgspec.structs.replace(dgd.spec, components=components))


_PACK = msgspec.msgpack.Encoder()


class ProgramParts(TypedDict):
    """What both programs are built with: the config, the cache and writer of children, the clock's
    RFC 3339 now, and the DGD actor's children they ask."""

    config: OperatorConfig
    reader: Reader
    syncer: Syncer
    now: Callable[[], str]
    shared_resources: Ref[EnsureShared | EnsureSharedAfterCheckpoints]
    checkpoints: Ref[ResolveCheckpoints | FinalizeCheckpoints]
    restart: Ref[ResolveRestart]
    adapters: Ref[ReconcileAdapters]


class WorkloadProgram:
    """The base of both programs: their shared collaborators and steps (see the module)."""

    def __init__(self, **parts: Unpack[ProgramParts]) -> None:
        self._config = parts["config"]
        self._reader = parts["reader"]
        self._syncer = parts["syncer"]
        self._now = parts["now"]
        self._shared_resources = parts["shared_resources"]
        self._checkpoints = parts["checkpoints"]
        self._restart = parts["restart"]
        self._adapters = parts["adapters"]
        # The worker hash of the last spec and metadata seen, and a digest of them (a few bytes per DGD).
        self._hash_inputs: int | None = None
        self._hash = ""

    def refuse_unsupported(self, dgd: DynamoGraphDeployment, *, keep: Callable[[RenderError], bool]) -> None:
        """What this release cannot reconcile fails terminally, before any write (``keep``: the
        refusals this program reports as a step of its own instead)."""
        refused = [problem for problem in unsupported(dgd, self._config) if not keep(problem)]
        if refused:
            raise Failure(FAILED_TO_RECONCILE, "; ".join(str(problem) for problem in refused), terminal=True)

    def initial_annotations(self, dgd: DynamoGraphDeployment) -> dict[str, str]:
        """Controller-owned annotations a new DGD gets in the write that adds its finalizer (none by
        default: the program records what it needs when it runs)."""
        return {}

    def desired_worker_hash(self, dgd: DynamoGraphDeployment) -> str:
        """The desired worker hash (pure, and the costliest render: computed once per spec and metadata;
        the annotations the operator writes itself, the worker hashes and the provider, are not among
        its inputs, so recording them does not compute it again; nor are the components' replicas,
        which the hash leaves out by definition (``dgd.domain.worker_hash``), so a scale does not)."""
        annotations = {k: v for k, v in (dgd.metadata.annotations or {}).items() if k not in _OWN_ANNOTATIONS}
        inputs = hash((_without_replicas(dgd), msgspec.json.encode(annotations)))
        if inputs != self._hash_inputs:
            self._hash, self._hash_inputs = worker_hash(dgd), inputs
        return self._hash

    async def ensure_shared(
        self, result: ProgramResult, dgd: DynamoGraphDeployment, worker_hash: str
    ) -> Mapping[str, CheckpointInfo]:
        """Shared resources before any pod exists that needs them (dgd-domain §7): RBAC, claims and
        discovery, then the checkpoints, whose statuses are published even if a later step fails, then
        the EPP's objects, the wait-for-leader script and the MPI keys."""
        shared = await self._shared_resources.ask(EnsureShared(dgd, result.dgd))
        if isinstance(shared, StepFailed):
            raise Failure(FAILED_TO_RECONCILE, shared.message)
        resolved = await self._checkpoints.ask(
            ResolveCheckpoints(dgd=dgd, owner=result.dgd, worker_hash=worker_hash)
        )
        if isinstance(resolved, StepFailed):
            raise Failure(FAILED_TO_RECONCILE, resolved.message)
        result.status = msgspec.structs.replace(result.status, checkpoints=status_projection(resolved.infos))
        after = await self._shared_resources.ask(EnsureSharedAfterCheckpoints(dgd, result.dgd))
        if isinstance(after, StepFailed):
            raise Failure(FAILED_TO_RECONCILE, after.message)
        return resolved.infos

    async def resolve_restart(
        self,
        result: ProgramResult,
        dgd: DynamoGraphDeployment,
        pathway: Literal["component", "grove"],
        worker_hashes: Iterable[str] = (),
    ) -> RestartState:
        """The restart, resolved against the pathway's children: its status now, its event queued."""
        ask = ResolveRestart(
            dgd=dgd, status=result.status, pathway=pathway, worker_hashes=tuple(worker_hashes)
        )
        restart = await self._restart.ask(ask)
        result.status = msgspec.structs.replace(result.status, restart=restart.status)
        if restart.event is not None:
            result.queue(restart.event)
        return restart.state

    async def conclude(
        self,
        result: ProgramResult,
        dgd: DynamoGraphDeployment,
        outcome: ReconcileResult,
        infos: Mapping[str, CheckpointInfo],
        *,
        rollout_failure: str | None = None,
    ) -> None:
        """The last steps of every run: a component waiting for its checkpoint makes the graph wait,
        scaling adapters are reconciled unless it waits, then the success projection."""
        outcome = waiting_overlay(outcome, infos)
        if outcome.reason != WAITING_FOR_CHECKPOINT:
            adapters = await self._adapters.ask(ReconcileAdapters(dgd=dgd, owner=result.dgd))
            if isinstance(adapters, StepFailed):
                raise Failure(FAILED_TO_RECONCILE, adapters.message)
        result.status = apply_reconcile_result(
            result.status,
            outcome,
            generation=result.dgd.metadata.generation,
            now=self._now(),
            rollout_failure=rollout_failure,
        )
