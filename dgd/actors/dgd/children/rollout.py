"""The rollout child of a Component-pathway DGD: the worker hash and the managed rollout (dgd-domain §12).

It answers two requests of the Component program, each one step of §8:

* ``AdvanceRollout`` (step 1, before anything is rendered): records the worker hash (v1→v2 migration,
  initialization) and, for a graph without multinode components, advances the rollout state
  machine (``dgd.domain.rollout.advance``): it deletes the old worker DCDs and records the completed
  generation when the machine says so. A multinode graph gets the "unsupported pathway" commit
  instead (§12.7). The answer names the new generation's hash and what each worker component's
  generations look like, which the program renders the DCDs from.
* ``ScaleOld`` (step 5, after the DCDs are synced): patches the replicas of the old worker DCDs to
  their share of the old target (§12.5): a merge patch, with an ``Update`` event (upstream records
  none; ``docs/decisions.md``).

The rollout needs one thing between reconciles: when it last made visible progress, which the
progress deadline is measured from and which tells a ``Failed`` rollout that it resumed. That lives
in a ``ProgressLedger`` the DGD actor keeps and hands to every ``Rollout`` it builds, so a child
rested between reconciles (``RestingChildren``) or restarted by its supervisor picks up where the last one
was. Only a restarted DGD actor starts that clock again (which can delay a ``Failed``, never hasten
one).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec

from dgd.actors.dgd.annotator import DGDAnnotator, commit_unmanaged, migrate_worker_hash
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.actors.machinery.events import Recorder
from dgd.actors.machinery.reader import Reader
from dgd.actors.machinery.sync import Syncer
from dgd.cluster.errors import ClusterError, NotFound
from dgd.cluster.resources import DCD, POD
from dgd.domain.events import EventRecord
from dgd.domain.metadata_keys import GRAPH_NAME, SELECTOR, WORKER_HASH
from dgd.domain.projection import (
    FAILED_TO_INITIALIZE_WORKER_HASH,
    FAILED_TO_MIGRATE_WORKER_HASH,
    ROLLING_UPDATE_FAILED,
)
from dgd.domain.render.dcd import worker_workload_annotations
from dgd.domain.roles import has_multinode
from dgd.domain.rollout import (
    Hashes,
    Progress,
    advance,
    new_generation_hash,
    recorded_annotations,
    recovered_event,
    rollout_active,
    serving_hashes,
)
from dgd.domain.rollout_replicas import (
    Generations,
    InvalidStrategy,
    WorkerDCD,
    distribute,
    drained,
    strategy,
    targets,
)
from dgd.domain.worker_generation import plan_unmanaged
from dgd.messages.component import WORKER_TYPES
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment, RollingUpdateStatus
from dgd.runtime import Actor, Request

logger = logging.getLogger("dgd.rollout")


class RolloutAdvanced(msgspec.Struct, frozen=True, kw_only=True):
    """The worker generation this reconcile renders.

    ``dgd``: the DGD as last written (its annotations may have changed); ``status``: the new
    ``status.rollingUpdate``; ``new_hash``: the suffix of the new generation's worker DCDs;
    ``components``: each worker component's generations while old ones exist (empty otherwise: no
    targets apply); ``events``: status-transition events to queue; ``failure``: the Ready message of
    a failed rollout; ``wake``: seconds until the progress deadline is due.
    """

    dgd: DynamoGraphDeployment
    status: RollingUpdateStatus | None
    new_hash: str
    components: tuple[Generations, ...] = ()
    events: tuple[EventRecord, ...] = ()
    failure: str | None = None
    wake: float | None = None


class AdvanceRollout(Request[RolloutAdvanced | StepFailed], frozen=True, kw_only=True):
    """Step 1 of the Component program for ``dgd`` (as last written; ``defaulted`` is what is rendered),
    whose desired v2 worker hash is ``desired``."""

    dgd: DynamoGraphDeployment
    defaulted: DynamoGraphDeployment
    desired: str
    now: str
    clock: float
    deadline: float | None


class OldScaled(msgspec.Struct, frozen=True):
    """The replicas each old worker DCD is meant to have now, by name."""

    targets: dict[str, int]


class ScaleOld(Request[OldScaled | StepFailed], frozen=True):
    """Step 5: drive the old worker DCDs of ``components`` (in ``namespace``) to their share of the
    old targets; ``owner`` is the DGD the writes are recorded on."""

    namespace: str
    components: tuple[Generations, ...]
    owner: DynamoGraphDeployment


def observe(dcd: DynamoComponentDeployment) -> WorkerDCD | None:
    """A worker DCD as the rollout reads it (``None`` for a DCD without a worker hash)."""
    labels = dcd.metadata.labels or {}
    worker_hash = labels.get(WORKER_HASH)
    if not worker_hash:
        return None
    status = dcd.status
    component = status.component if status is not None else None
    generation = dcd.metadata.generation or 0
    return WorkerDCD(
        name=dcd.metadata.name or "",
        component=dcd.spec.name or "",
        hash=worker_hash,
        replicas=1 if dcd.spec.replicas is None else dcd.spec.replicas,
        available=(component.available_replicas or 0) if component is not None else 0,
        ready=(component.ready_replicas or 0) if component is not None else 0,
        actual=component.replicas if component is not None else 0,
        created=dcd.metadata.creation_timestamp or "",
        processed=(status is not None and (status.observed_generation or 0) >= generation),
        deleting=bool(dcd.metadata.deletion_timestamp),
        status=component,
    )


class ProgressLedger:
    """When one DGD's rollout last made visible progress (``None``: no rollout measured yet).

    Kept by the DGD actor, which outlives its children, and written only by the ``Rollout`` it
    builds (one at a time: a DGD's reconciles never overlap), so a rollout child that rests or
    restarts keeps measuring the progress deadline from the same change.
    """

    def __init__(self) -> None:
        self.progress: Progress | None = None


class Rollout(Actor[AdvanceRollout | ScaleOld]):
    """Owns a DGD's worker-hash annotations and the replicas of its old worker generations; what it
    remembers between reconciles is in ``ledger``, never in the actor."""

    def __init__(
        self,
        *,
        reader: Reader,
        syncer: Syncer,
        annotator: DGDAnnotator,
        recorder: Recorder,
        ledger: ProgressLedger,
    ) -> None:
        self._reader = reader
        self._syncer = syncer
        self._annotator = annotator
        self._recorder = recorder
        self._ledger = ledger

    async def receive(self, message: AdvanceRollout | ScaleOld) -> RolloutAdvanced | OldScaled | StepFailed:
        if isinstance(message, ScaleOld):
            return await self._scale_old(message.namespace, message.components, message.owner)
        return await self._prepare(message)

    # Step 1.

    async def _prepare(self, message: AdvanceRollout) -> RolloutAdvanced | StepFailed:
        dgd, desired = message.dgd, message.desired
        # A v1-only DGD records its v2 hash first (not while a rollout is active).
        rolling_update = dgd.status.rolling_update if dgd.status is not None else None
        if not rollout_active(rolling_update):
            try:
                dgd = await migrate_worker_hash(self._annotator, self._recorder, dgd, desired)
            except ClusterError as error:
                return _failed(FAILED_TO_MIGRATE_WORKER_HASH, f"failed to migrate the worker hash: {error}")
        if has_multinode(message.defaulted):
            return await self._unmanaged(dgd, desired, rolling_update)
        try:
            workers = await self._workers(dgd)
        except ClusterError as error:
            return _failed(ROLLING_UPDATE_FAILED, f"failed to reconcile the rolling update: {error}")
        # The generation that runs: the recorded one unless the worker DCDs say otherwise (#13495);
        # initialization: a graph with no worker DCD and no record starts with the desired one.
        recorded = Hashes.of(dgd.metadata.annotations)
        active = rollout_active(rolling_update)
        current = serving_hashes(recorded, workers, desired, rolling=active)
        if current == Hashes():
            current = Hashes(v2=desired)
        if current != recorded:
            try:
                dgd = await self._annotator.annotate(dgd, recorded_annotations(current))
            except ClusterError as error:
                what = "record the serving" if workers else "initialize the"
                return _failed(FAILED_TO_INITIALIZE_WORKER_HASH, f"failed to {what} worker hash: {error}")
            if workers:
                await self._recorder.emit(dgd, recovered_event(current, recorded))
            current = Hashes.of(dgd.metadata.annotations)
        try:
            return await self._advance(message, dgd, current, rolling_update, workers)
        except (ClusterError, InvalidStrategy) as error:
            return _failed(ROLLING_UPDATE_FAILED, f"failed to reconcile the rolling update: {error}")

    async def _unmanaged(
        self, dgd: DynamoGraphDeployment, desired: str, rolling_update: RollingUpdateStatus | None
    ) -> RolloutAdvanced | StepFailed:
        """§12.7 on the Component pathway: the hash is committed at once; Deployments roll natively."""
        plan = plan_unmanaged(dgd.metadata.annotations or {}, desired)
        try:
            dgd = await commit_unmanaged(self._annotator, self._recorder, dgd, plan)
        except ClusterError as error:
            if not plan.changed:
                why = f"failed to initialize the worker hash: {error}"
                return _failed(FAILED_TO_INITIALIZE_WORKER_HASH, why)
            logger.info("%s: worker hash not committed, retried next time: %s", dgd.metadata.name, error)
        suffix = Hashes.of(dgd.metadata.annotations).name_suffix() or desired
        return RolloutAdvanced(dgd=dgd, status=rolling_update, new_hash=suffix)

    async def _advance(
        self,
        message: AdvanceRollout,
        dgd: DynamoGraphDeployment,
        current: Hashes,
        rolling_update: RollingUpdateStatus | None,
        workers: Sequence[WorkerDCD],
    ) -> RolloutAdvanced:
        desired = message.desired
        active = rollout_active(rolling_update)
        new_hash = new_generation_hash(current, desired, rolling=active)
        if not active and current.matches(desired):
            # Nothing to roll: the recorded generation is the desired one.
            self._ledger.progress = None
            return RolloutAdvanced(dgd=dgd, status=rolling_update, new_hash=new_hash)
        components = await self._generations(message.defaulted, dgd, new_hash, workers)
        step = advance(
            rolling_update,
            current=current,
            desired=desired,
            new_hash=new_hash,
            components=components,
            now=message.now,
            clock=message.clock,
            progress=self._ledger.progress,
            deadline=message.deadline,
        )
        self._ledger.progress = step.progress
        for name in step.delete:
            await self._delete_old(dgd, name)
        if step.annotations:
            dgd = await self._annotator.annotate(dgd, step.annotations)
        rolling = rollout_active(step.status)
        return RolloutAdvanced(
            dgd=dgd,
            status=step.status,
            new_hash=new_hash,
            components=tuple(g for g in components if g.old) if rolling else (),
            events=step.events,
            failure=step.failure,
            wake=step.wake,
        )

    async def _workers(self, dgd: DynamoGraphDeployment) -> list[WorkerDCD]:
        """The worker DCDs this DGD controls, as the cache shows them."""
        namespace = dgd.metadata.namespace or ""
        return [
            worker
            for dcd in await self._reader.controlled_by(DCD, namespace, dgd.metadata.uid)
            if (worker := observe(dcd)) is not None
        ]

    async def _generations(
        self,
        defaulted: DynamoGraphDeployment,
        dgd: DynamoGraphDeployment,
        new_hash: str,
        observed: Sequence[WorkerDCD],
    ) -> list[Generations]:
        """Each worker component's generations, from the worker DCDs observed."""
        shaped_by = worker_workload_annotations(defaulted)
        pods: list[tuple[str, bool]] | None = None
        out: list[Generations] = []
        for component in defaulted.spec.components or []:
            if component.type not in WORKER_TYPES:
                continue
            desired = 1 if component.replicas is None else component.replicas
            policy = strategy(shaped_by[component.name], desired)
            mine = [w for w in observed if w.component == component.name]
            new = next((w for w in mine if w.hash == new_hash), None)
            old = tuple(w for w in mine if w.hash != new_hash)
            barrier = True
            if policy.recreate and old:
                if pods is None:
                    pods = await self._pods(dgd)
                barrier = drained(old, pods)
            out.append(
                Generations(
                    component=component.name,
                    desired=desired,
                    strategy=policy,
                    new=new,
                    old=old,
                    drained=barrier,
                )
            )
        return out

    async def _pods(self, dgd: DynamoGraphDeployment) -> list[tuple[str, bool]]:
        """``(selector label, terminal)`` of every pod of this DGD's DCDs."""
        namespace = dgd.metadata.namespace or ""
        out: list[tuple[str, bool]] = []
        for pod in await self._reader.labelled(POD, namespace, {GRAPH_NAME: dgd.metadata.name or ""}):
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if SELECTOR not in labels:
                continue
            phase = (pod.get("status") or {}).get("phase")
            out.append((str(labels[SELECTOR]), phase in ("Succeeded", "Failed")))
        return out

    async def _delete_old(self, dgd: DynamoGraphDeployment, name: str) -> None:
        namespace = dgd.metadata.namespace or ""
        live = self._reader.cache.get(DCD, namespace, name)
        if live is None:
            return
        # Only the version the decision was made on: a DCD that changed since (a pod became ready)
        # is decided again by the next reconcile.
        await self._syncer.delete(
            DCD, live, owner=dgd, why="its worker generation was replaced", unchanged=True
        )

    # Step 5.

    async def _scale_old(
        self, namespace: str, components: Sequence[Generations], owner: DynamoGraphDeployment
    ) -> OldScaled | StepFailed:
        wanted: dict[str, int] = {}
        for generations in components:
            _, old_target = targets(generations)
            shares = distribute(old_target, generations.old)
            wanted.update(shares)
            for dcd in generations.old:
                if dcd.deleting or shares[dcd.name] == dcd.replicas:
                    continue
                live = await self._reader.get(DCD.key(namespace, dcd.name))
                if live is None:
                    continue
                patch = {"spec": {"replicas": shares[dcd.name]}}
                why = f"old worker generation scaled from {dcd.replicas} to {shares[dcd.name]} replicas"
                try:
                    await self._syncer.patch(DCD, live, patch, owner=owner, why=why)
                except NotFound:
                    continue
                except ClusterError as error:
                    return StepFailed(f"failed to scale old worker DCD {dcd.name}: {error}")
        return OldScaled(wanted)


def _failed(reason: str, message: str) -> StepFailed:
    return StepFailed(message, reason=reason)
