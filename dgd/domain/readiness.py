"""Grove readiness and component status (dgd-domain §9.6), from one observation of the children.

``observe_podclique`` and ``observe_pcsg`` classify one child (absent: ``None``) in upstream's
decision order; ``grove_readiness`` aggregates them with the PodCliqueSet that was synced, and
decides each component's runtime namespace. Workers move to a new (hash-suffixed) runtime namespace
together, only once Grove accepted the current PodCliqueSet revision and every worker child
completed it; until then they keep the namespace the status already reports.

Not-ready reasons keep upstream's wording, so users and dashboards read the same messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, TypeVar

import msgspec

from dgd.domain.metadata_keys import COMPONENT, WORKER_HASH
from dgd.domain.naming import dynamo_namespace
from dgd.domain.render.pcs import graph_pcs_name
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import ComponentKind, ComponentReplicaStatus, DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet
from dgd.messages.grove_children import (
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueScalingGroupStatus,
    PodCliqueStatus,
)
from dgd.messages.meta import Condition

#: A PodClique or a PodCliqueScalingGroup.
GroveChild = TypeVar("GroveChild", PodClique, PodCliqueScalingGroup)

# Ready reasons a Grove child can imply (§14.1).
SOME_NOT_READY = "some_resources_are_not_ready"
INSUFFICIENT_CAPACITY = "insufficient_capacity"
UPDATING = "updating"
PODS_NOT_READY = "pods_not_ready"
MIXED = "mixed_not_ready_reasons"

_PODCLIQUE_SCHEDULED = "PodCliqueScheduled"
_INSUFFICIENT_SCHEDULED_PODS = "InsufficientScheduledPods"
_MIN_AVAILABLE_BREACHED = "MinAvailableBreached"
# Grove alpha.8 reports a PCSG scheduling shortfall with status False and this reason (§21 item 14).
_INSUFFICIENT_SCHEDULED_PCSG = "InsufficientScheduledPodCliqueScalingGroupReplicas"


class Revision(msgspec.Struct, frozen=True):
    """What one child says about the PodCliqueSet revision it runs."""

    generation_observed: bool = False
    pcs_hash: str | None = None
    replicas: int = 0
    updated: int = 0
    desired: int = 0
    update_in_progress: bool = False
    update_ended: bool = False

    def completed(self, accepted: str | None) -> bool:
        """Whether this child finished the accepted PodCliqueSet revision."""
        return (
            accepted is not None
            and self.generation_observed
            and self.pcs_hash == accepted
            and self.replicas == self.desired
            and self.updated == self.desired
            and (not self.update_in_progress or self.update_ended)
        )


class ChildReadiness(msgspec.Struct, frozen=True):
    """One Grove child of a component: ready or why not, the Ready reason it implies, its status."""

    ready: bool
    reason: str
    classification: str
    status: ComponentReplicaStatus
    revision: Revision = Revision()


def child_name(dgd: DynamoGraphDeployment, component: ComponentSpec) -> str:
    """The PodClique or PCSG Grove creates for a component: ``<pcs>-0-<lowercase component>``."""
    return f"{graph_pcs_name(dgd)}-0-{component.name.lower()}"


def rescaled_child(child: GroveChild, replicas: int) -> GroveChild:
    """A PodClique or scaling group as a scale write to ``replicas`` left it, from a read that may
    predate the write: the spec changed, so its status speaks for an older generation until Grove
    processes it (a read that shows the write already is returned as it is)."""
    if child.spec.replicas == replicas:
        return child
    metadata = msgspec.structs.replace(child.metadata, generation=(child.metadata.generation or 0) + 1)
    spec = msgspec.structs.replace(child.spec, replicas=replicas)
    return msgspec.structs.replace(child, metadata=metadata, spec=spec)


def _condition(conditions: list[Condition] | None, kind: str) -> Condition | None:
    return next((c for c in conditions or () if c.type == kind), None)


def _revision(
    observed: PodCliqueStatus | PodCliqueScalingGroupStatus | None, desired: int, generation: int
) -> Revision:
    """Where a PodClique or scaling group stands in rolling to the current PodCliqueSet revision."""
    if observed is None:
        return Revision(desired=desired)
    progress = observed.update_progress
    return Revision(
        generation_observed=observed.observed_generation is not None
        and observed.observed_generation >= generation,
        pcs_hash=observed.current_pod_clique_set_generation_hash,
        replicas=observed.replicas or 0,
        updated=observed.updated_replicas,
        desired=desired,
        update_in_progress=progress is not None,
        update_ended=progress is not None and progress.update_ended_at is not None,
    )


def _unprocessed(observed_generation: int | None, generation: int) -> str | None:
    """Why a child's status does not speak for its current spec yet, or ``None`` when it does."""
    if observed_generation is None:
        return "observedGeneration is nil"
    if observed_generation < generation:
        return f"spec not yet processed: generation={generation}, observedGeneration={observed_generation}"
    return None


class _ChildKind(msgspec.Struct, frozen=True):
    """How §9.6 reads one kind of Grove child: the count that makes it ready, whether it reports
    schedule-gated replicas, and the condition that says it lacks capacity."""

    kind: ComponentKind
    word: str  # "ready" or "available": the count that makes it ready, as messages name it
    gated: bool
    condition: str
    shortfall: str  # the condition's reason for a scheduling shortfall
    describe: str  # the not-ready message for that condition ({reason}, {message})


_PODCLIQUE = _ChildKind(
    "PodClique", "ready", True, _PODCLIQUE_SCHEDULED, _INSUFFICIENT_SCHEDULED_PODS,
    "scheduling condition {reason}: {message}",
)  # fmt: skip
_PCSG = _ChildKind(
    "PodCliqueScalingGroup", "available", False, _MIN_AVAILABLE_BREACHED, _INSUFFICIENT_SCHEDULED_PCSG,
    "min-available breached ({reason}): {message}",
)  # fmt: skip


def observe_podclique(name: str, pclq: PodClique | None) -> ChildReadiness:
    """Classify a PodClique (§9.6 decision order)."""
    return _observe(name, pclq, _PODCLIQUE)


def observe_pcsg(name: str, pcsg: PodCliqueScalingGroup | None) -> ChildReadiness:
    """Classify a PodCliqueScalingGroup (§9.6: available instead of ready, no gated count)."""
    return _observe(name, pcsg, _PCSG)


def _observe(name: str, child: PodClique | PodCliqueScalingGroup | None, how: _ChildKind) -> ChildReadiness:
    """Classify one Grove child of ``how``'s kind (§9.6 decision order; absent: ``None``)."""
    if child is None:
        status = ComponentReplicaStatus(
            component_kind=how.kind, replicas=0, updated_replicas=0, component_names=[name]
        )
        return ChildReadiness(False, "resource not found", SOME_NOT_READY, status)
    observed = child.status
    desired = child.spec.replicas
    replicas = observed.replicas or 0 if observed else 0
    updated = observed.updated_replicas if observed else 0
    count = 0 if observed is None else getattr(observed, f"{how.word}_replicas")
    generation = child.metadata.generation or 0
    observed_generation = observed.observed_generation if observed else None
    revision = _revision(observed, desired, generation)
    status = ComponentReplicaStatus(
        component_kind=how.kind, replicas=replicas, updated_replicas=updated, component_names=[name],
        ready_replicas=count if how.word == "ready" else None,
        available_replicas=count if how.word == "available" else None,
    )  # fmt: skip

    def verdict(is_ready: bool, reason: str = "", classification: str = "") -> ChildReadiness:
        return ChildReadiness(is_ready, reason, classification, status, revision)

    unprocessed = _unprocessed(observed_generation, generation)
    if unprocessed is not None:
        return verdict(False, unprocessed, SOME_NOT_READY)
    scheduled = observed.scheduled_replicas if observed else 0
    status = msgspec.structs.replace(status, scheduled_replicas=scheduled)
    if desired == 0 or (replicas == desired and updated == desired and count == desired):
        return verdict(True)
    gated = getattr(observed, "schedule_gated_replicas", 0) if how.gated and observed else 0
    if gated > 0:
        return verdict(False, f"schedule-gated replicas: {gated}", INSUFFICIENT_CAPACITY)
    condition = _condition(observed.conditions if observed else None, how.condition)
    if condition is not None and condition.status == "False" and condition.reason == how.shortfall:
        why = how.describe.format(reason=condition.reason, message=condition.message)
        return verdict(False, why, INSUFFICIENT_CAPACITY)
    if 0 < scheduled < desired:
        why = f"insufficient scheduled replicas: scheduled={scheduled}/{desired}"
        return verdict(False, why, INSUFFICIENT_CAPACITY)
    return _rollout_verdict(
        verdict, desired, updated, replicas, f"scheduled but {how.word}={count}/{desired}"
    )


def _rollout_verdict(
    verdict: _Verdict, desired: int, updated: int, replicas: int, not_ready: str
) -> ChildReadiness:
    # Scheduled: still rolling out, or rolled out and waiting for pods.
    if updated != desired:
        return verdict(False, f"desired={desired}, updated={updated}", UPDATING)
    if replicas != desired:
        return verdict(False, f"performing rolling update: desired={desired}, replicas={replicas}", UPDATING)
    return verdict(False, not_ready, PODS_NOT_READY)


class _Verdict(Protocol):
    def __call__(self, is_ready: bool, reason: str = "", classification: str = "") -> ChildReadiness: ...


class GroveReadiness(msgspec.Struct, frozen=True):
    """The whole graph on Grove: ready, the Ready reason it implies, why not, component statuses."""

    ready: bool
    classification: str
    message: str
    components: dict[str, ComponentReplicaStatus]


class InconsistentRevision(ValueError):
    """The accepted PodCliqueSet revision mixes worker hashes: the runtime namespace is undecidable."""


def grove_readiness(
    dgd: DynamoGraphDeployment,
    pcs: PodCliqueSet | None,
    children: Mapping[str, ChildReadiness],
) -> GroveReadiness:
    """Aggregate the children of every component (``children`` by component name)."""
    components = dgd.spec.components or []
    not_ready: list[str] = []
    classification = ""
    # A PodCliqueSet Grove processed before but not since its last change: its children speak for an
    # older spec (a set never processed has no children yet, which says so below).
    observed = pcs.status.observed_generation if pcs is not None and pcs.status is not None else None
    if pcs is not None and observed is not None:
        unprocessed = _unprocessed(observed, pcs.metadata.generation or 0)
        if unprocessed is not None:
            not_ready.append(f"{pcs.metadata.name}: {unprocessed}")
            classification = SOME_NOT_READY
    for component in components:
        child = children[component.name]
        if child.ready:
            continue
        not_ready.append(f"{component.name}: {child.reason}")
        if not classification:
            classification = child.classification
        elif classification != child.classification:
            classification = MIXED
    namespaces = _runtime_namespaces(dgd, pcs, children)
    statuses = {
        c.name: msgspec.structs.replace(children[c.name].status, runtime_namespace=namespaces[c.name])
        for c in components
    }
    if not_ready:
        return GroveReadiness(False, classification, "; ".join(not_ready), statuses)
    return GroveReadiness(True, "", "", statuses)


def _accepted_revision(pcs: PodCliqueSet | None) -> str | None:
    if pcs is None or pcs.status is None:
        return None
    observed = pcs.status.observed_generation
    if observed is None or observed != pcs.metadata.generation:
        return None
    return pcs.status.current_generation_hash


def _runtime_namespaces(
    dgd: DynamoGraphDeployment, pcs: PodCliqueSet | None, children: Mapping[str, ChildReadiness]
) -> dict[str, str | None]:
    namespace, name = dgd.metadata.namespace or "", dgd.metadata.name or ""
    previous = (dgd.status.components if dgd.status is not None else None) or {}
    accepted = _accepted_revision(pcs)
    workers = [c for c in dgd.spec.components or [] if c.type in WORKER_TYPES]
    suffix = _accepted_worker_hash(pcs, workers, accepted)
    cut_over = bool(workers) and all(children[c.name].revision.completed(accepted) for c in workers)
    out: dict[str, str | None] = {}
    for component in dgd.spec.components or []:
        base = dynamo_namespace(namespace, name, global_namespace=bool(component.global_dynamo_namespace))
        if component.type not in WORKER_TYPES:
            out[component.name] = base
        elif accepted is None or not cut_over:
            before = previous.get(component.name)
            out[component.name] = before.runtime_namespace if before is not None else None
        else:
            out[component.name] = f"{base}-{suffix}" if suffix else base
    return out


def _accepted_worker_hash(
    pcs: PodCliqueSet | None, workers: list[ComponentSpec], accepted: str | None
) -> str:
    """The worker hash rendered into the accepted revision ("" when its workers are unsuffixed)."""
    if accepted is None or pcs is None:
        return ""
    hashes: set[str] = set()
    for component in workers:
        clique = next(
            (c for c in pcs.spec.template.cliques if (c.labels or {}).get(COMPONENT) == component.name), None
        )
        if clique is None:
            raise InconsistentRevision(
                f"accepted Grove PodCliqueSet revision {accepted!r} has no worker clique for component "
                f"{component.name!r}"
            )
        hashes.add((clique.labels or {}).get(WORKER_HASH, ""))
    if len(hashes) > 1:
        what = (
            "mixes suffixed and legacy worker cliques" if "" in hashes else "has inconsistent worker hashes"
        )
        raise InconsistentRevision(f"accepted Grove PodCliqueSet revision {accepted!r} {what}")
    return hashes.pop() if hashes else ""


def dcd_readiness(dcd: DynamoComponentDeployment) -> tuple[bool, str, dict[str, ComponentReplicaStatus]]:
    """A synced DCD as a readiness resource (dgd-domain §8.2 step 6): ready iff its status speaks for
    its current spec and ``Available`` is ``True``; its component status keyed by ``spec.name``."""
    status = dcd.status
    components: dict[str, ComponentReplicaStatus] = {}
    if status is not None and status.component is not None and dcd.spec.name:
        components[dcd.spec.name] = status.component
    generation = dcd.metadata.generation or 0
    observed = (status.observed_generation if status is not None else None) or 0
    if observed < generation:
        why = f"spec not yet processed: generation={generation}, observedGeneration={observed}"
        return False, why, components
    available = _condition(status.conditions if status is not None else None, "Available")
    if available is None or available.status != "True":
        return False, "Component deployment not ready - Available condition not true", components
    return True, "", components
