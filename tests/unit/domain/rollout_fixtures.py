"""Worker DCDs, generations and reconcile steps that the rollout tests (dgd-domain §12) build on."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import settings

from dgd.domain.rollout import Hashes, Step, advance
from dgd.domain.rollout_replicas import Generations, Strategy, WorkerDCD
from dgd.messages.dgd import ComponentReplicaStatus, RollingUpdateStatus

V1, V2 = "nvidia.com/current-worker-hash", "nvidia.com/current-worker-hash-v2"
OLD_HASH, NEW_HASH = "aaaa0001", "bbbb0002"
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z"
ROLLING = Strategy(max_surge=1, max_unavailable=0)
RECREATE = Strategy(recreate=True, max_surge=0, max_unavailable=2)
RECORDED = Hashes(v2=OLD_HASH)
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True)


def dcd(
    name: str,
    *,
    component: str = "worker",
    hash: str = OLD_HASH,
    replicas: int = 1,
    available: int | None = None,
    ready: int | None = None,
    actual: int | None = None,
    created: str = T0,
    processed: bool = True,
    deleting: bool = False,
    status: ComponentReplicaStatus | None = None,
) -> WorkerDCD:
    """A worker DCD; by default every replica of its spec exists, is ready and available."""
    return WorkerDCD(
        name=name,
        component=component,
        hash=hash,
        replicas=replicas,
        available=replicas if available is None else available,
        ready=replicas if ready is None else ready,
        actual=replicas if actual is None else actual,
        created=created,
        processed=processed,
        deleting=deleting,
        status=status,
    )


def generations(
    component: str = "worker",
    *,
    desired: int = 2,
    new: WorkerDCD | None = None,
    old: Sequence[WorkerDCD] = (),
    policy: Strategy = ROLLING,
    drained: bool = True,
) -> Generations:
    return Generations(
        component=component, desired=desired, strategy=policy, new=new, old=tuple(old), drained=drained
    )


def updated(component: str, *, desired: int = 2, old: Sequence[WorkerDCD] = ()) -> Generations:
    """A component whose new generation is ready; its ``old`` (if any) serve nothing."""
    new = dcd(f"g-{component}-{NEW_HASH}", component=component, hash=NEW_HASH, replicas=desired)
    return generations(component, desired=desired, new=new, old=old)


def midway(component: str, *, desired: int = 2, new_ready: int = 1, old_ready: int = 2) -> Generations:
    """A component in the middle of its rollout: the new generation partly ready, the old one serving."""
    new = dcd(
        f"g-{component}-{NEW_HASH}",
        component=component,
        hash=NEW_HASH,
        replicas=desired,
        ready=new_ready,
        available=new_ready,
    )
    old = dcd(f"g-{component}-{OLD_HASH}", component=component, replicas=old_ready)
    return generations(component, desired=desired, new=new, old=[old])


def step(
    status: RollingUpdateStatus | None,
    components: Sequence[Generations],
    *,
    current: Hashes = RECORDED,
    desired: str = NEW_HASH,
    new_hash: str = NEW_HASH,
    now: str = T1,
    clock: float = 1000.0,
    progress: Step | None = None,
    deadline: float | None = 600.0,
) -> Step:
    """One reconcile; ``progress`` is the previous reconcile's step (its progress is carried over)."""
    return advance(
        status,
        current=current,
        desired=desired,
        new_hash=new_hash,
        components=components,
        now=now,
        clock=clock,
        progress=progress.progress if progress is not None else None,
        deadline=deadline,
    )


def in_progress(updated_components: list[str] | None = None) -> RollingUpdateStatus:
    return RollingUpdateStatus(phase="InProgress", start_time=T0, updated_components=updated_components)


def status_of(
    names: Sequence[str], *, replicas: int, namespace: str | None, updated: int = 0
) -> ComponentReplicaStatus:
    return ComponentReplicaStatus(
        component_kind="Deployment",
        replicas=replicas,
        updated_replicas=updated,
        component_names=list(names),
        runtime_namespace=namespace,
        ready_replicas=replicas,
        available_replicas=replicas,
    )
