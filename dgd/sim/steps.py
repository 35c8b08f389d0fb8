"""One trace record applied to a running simulated cluster: a user action, a world event or a fault.

* User actions go through ``user``, a client of the API server with no fault rules (the trace's
  ``kubectl``). ``apply`` creates the object, or replaces the stored one keeping the metadata the
  manifest does not give (finalizers, owner references, labels and annotations it does not name),
  as ``kubectl apply`` leaves what others wrote.
* World events change the world as it would change by itself: ``capacity`` and ``topology`` put new
  ``WorldSettings`` in force; ``pods_ready`` and ``checkpoint_ready`` write what the kubelet and the
  checkpoint job would write, now rather than after their delay (``*`` as the name: every one).
* Faults hit the operator only: its client's fault rules (``api_fault``, ``stale_reads``), its open
  watches (``watch_drop``, ``watch_expire``), its actors (``kill``; ``*`` matches within a path
  segment, ``**`` across segments).

``apply_step`` returns what the record did, in words, and for a fault that lasts, when it ends and
how to end it. A user action the API server refuses is not a crash: the refusal is the effect.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from dgd.cluster.errors import (
    AlreadyExists,
    ClusterError,
    Conflict,
    Forbidden,
    Gone,
    NotFound,
    ServerError,
    Timeout,
    TooManyRequests,
)
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.faults import Fail, FaultRule, StaleRead
from dgd.cluster.protocol import ScaleSpec
from dgd.cluster.resources import CHECKPOINT, POD, ObjectKey, Resource
from dgd.messages.base import JSONObject
from dgd.messages.timestamps import rfc3339
from dgd.messages.trace import (
    ApiFault,
    Apply,
    Capacity,
    CheckpointReady,
    Delete,
    Kill,
    ObjectRef,
    Patch,
    PodsReady,
    Poison,
    Record,
    StaleReads,
    TopologyChange,
    WatchDrop,
    WatchExpire,
)
from dgd.runtime import ActorNotFound
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.kinds import BY_KIND, BY_NAME, kind_of
from dgd.sim.poison import poisoned
from dgd.sim.trace_io import resource_of
from dgd.sim.world.checkpoint import finished
from dgd.sim.world.pods import is_active, is_bound, is_ready, ready_status
from dgd.sim.world.settings import ClusterTopology

#: Records that break something on purpose.
FAULTS = (Kill, ApiFault, Poison, WatchDrop, WatchExpire, StaleReads)
#: Records that change the world (not the operator, not the user).
WORLD_EVENTS = (PodsReady, Capacity, TopologyChange, CheckpointReady)

_ERRORS: dict[str, Callable[[str], ClusterError | Exception]] = {
    "Bug": RuntimeError,
    "Conflict": Conflict,
    "ServerError": ServerError,
    "Timeout": Timeout,
    "TooManyRequests": TooManyRequests,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "Gone": Gone,
}


@dataclass(frozen=True)
class Applied:
    """What one record did (``effect``, in words) and, for a lasting fault, its end (cluster seconds
    since the start) and what ends it."""

    effect: str
    ends_at: float | None = None
    end: Callable[[], None] | None = None


async def apply_step(record: Record, sim: SimulatedCluster, user: MemoryCluster) -> Applied:
    """Apply ``record`` now (see the module); expectations are not steps."""
    match record:
        case Apply() | Delete() | Patch():
            try:
                return Applied(await _act(record, user))
            except ClusterError as error:
                return Applied(f"refused: {error}")
        case PodsReady(target=target):
            return Applied(await _pods_ready(sim, user, target))
        case Capacity(pods=pods):
            await sim.reconfigure(msgspec.structs.replace(sim.settings, capacity=pods))
            return Applied(f"capacity {pods if pods is not None else 'unlimited'} pods")
        case TopologyChange(topologies=topologies):
            known = tuple(ClusterTopology(name, tuple(levels)) for name, levels in sorted(topologies.items()))
            await sim.reconfigure(msgspec.structs.replace(sim.settings, topologies=known))
            return Applied(f"topologies {', '.join(sorted(topologies)) or 'none'}")
        case CheckpointReady(target=target, outcome=outcome):
            return Applied(await _checkpoint_ready(sim, user, target, outcome))
        case Kill(path=path):
            return Applied(_kill(sim, path))
        case ApiFault() as fault:
            return _api_fault(sim, fault)
        case Poison(resource=resource, namespace=namespace, name=name):
            kind = BY_NAME[resource]
            user.create_loose(kind.as_raw(), poisoned(kind, namespace, name))
            return Applied(f"{kind.kind} {namespace}/{name} stored, which the operator's model refuses")
        case WatchDrop(resource=resource):
            ended = sim.cluster.end_watches(None if resource == "*" else resource)
            return Applied(f"{ended} watches of {resource} dropped")
        case WatchExpire(resource=resource):
            ended = sim.cluster.end_watches(None if resource == "*" else resource, gone=True)
            return Applied(f"{ended} watches of {resource} expired")
        case StaleReads(resource=resource, behind=behind, duration=duration, at=at):
            stale = StaleRead(behind)
            rule = sim.cluster.faults.add(stale, verb=("get", "list"), resource=_resource(resource))
            where = "every resource" if resource == "*" else resource
            return Applied(
                f"reads of {where} {behind} writes behind for {duration:g}s",
                ends_at=at + duration,
                end=lambda: _remove(sim, rule),
            )
    raise TypeError(f"not a step: {type(record).__name__}")


def describe(ref: ObjectRef) -> str:
    """``Kind namespace/name`` (or ``Kind name`` when cluster-scoped)."""
    return f"{ref.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.kind} {ref.name}"


# User actions.


async def _act(record: Apply | Delete | Patch, user: MemoryCluster) -> str:
    match record:
        case Apply(object=manifest):
            resource = BY_KIND[(str(manifest["apiVersion"]), str(manifest["kind"]))].as_raw()
            metadata = manifest["metadata"]
            namespace = metadata.get("namespace") or ("default" if resource.namespaced else None)
            document = _copy(manifest)
            if resource.namespaced:
                document["metadata"]["namespace"] = namespace
            where = f"{resource.kind} {namespace}/{metadata['name']}" if namespace else resource.kind
            # As kubectl apply: read first, so an update is admitted as one (admission runs before
            # the store finds a create's name taken, and refuses what only a create may not carry).
            key = resource.key(namespace, str(metadata["name"]))
            with contextlib.suppress(NotFound):
                await user.get(key)
                await _replace(user, key, document)
                return f"replaced {where}"
            try:
                await user.create(resource, document)
                return f"created {where}"
            except AlreadyExists:
                await _replace(user, key, document)
                return f"replaced {where}"
        case Delete(target=target):
            await user.delete(_key(target))
            return f"deleted {describe(target)}"
        case Patch(target=target, patch=patch, subresource="scale"):
            key = _key(target)
            current = await user.get_scale(key)
            replicas = int(patch["spec"]["replicas"])
            await user.replace_scale(key, msgspec.structs.replace(current, spec=ScaleSpec(replicas=replicas)))
            return f"scaled {describe(target)} to {replicas}"
        case Patch(target=target, patch=patch, subresource="status"):
            await user.patch_status(_key(target), patch)
            return f"patched the status of {describe(target)}"
        case Patch(target=target, patch=patch):
            await user.patch(_key(target), patch)
            return f"patched {describe(target)}"
    raise TypeError(type(record).__name__)


async def _replace(user: MemoryCluster, key: ObjectKey[JSONObject], document: JSONObject) -> None:
    """Replace the stored object with ``document`` at the version just read (a custom resource takes no
    unconditional update), reading again if someone wrote it meanwhile."""
    while True:
        stored = await user.get(key)
        try:
            await user.replace(key.resource, _replacement(stored, document))
            return
        except Conflict:
            continue


def _replacement(stored: JSONObject, manifest: JSONObject) -> JSONObject:
    """``manifest`` as the replacement of ``stored``: the stored metadata it does not give is kept,
    and so are the labels and annotations it does not name (others wrote them: the operator's hash);
    the resourceVersion is the one read."""
    given = {k: v for k, v in manifest["metadata"].items() if k != "resourceVersion"}
    metadata = {**stored["metadata"], **given}
    for field in ("labels", "annotations"):
        merged = {**(stored["metadata"].get(field) or {}), **(given.get(field) or {})}
        if merged:
            metadata[field] = merged
    return {**manifest, "metadata": metadata}


# World events.


async def _pods_ready(sim: SimulatedCluster, user: MemoryCluster, target: ObjectRef | None) -> str:
    pods = (await user.list(POD)).items
    owners = _controllers(sim)
    wanted = _uids(sim, target) if target is not None else None
    if wanted is not None and not wanted:
        return f"no {describe(target)}" if target is not None else "no target"
    now, started = sim.now(), 0
    for pod in pods:
        if not is_bound(pod) or not is_active(pod) or is_ready(pod):
            continue
        if wanted is not None and not _descends(pod, wanted, owners):
            continue
        metadata = pod["metadata"]
        await user.patch_status(
            POD.key(metadata["namespace"], metadata["name"]), {"status": ready_status(pod, now)}
        )
        started += 1
    whose = f" of {describe(target)}" if target is not None else ""
    return f"{started} pods{whose} ready"


async def _checkpoint_ready(
    sim: SimulatedCluster, user: MemoryCluster, target: ObjectRef, outcome: str
) -> str:
    listed = (await user.list(CHECKPOINT, namespace=target.namespace)).items
    chosen = [c for c in listed if target.name in ("*", c["metadata"]["name"])]
    if not chosen:
        return f"no {describe(target)}"
    ended: list[str] = []
    stamp = rfc3339(sim.now())
    for checkpoint in chosen:
        status = checkpoint.get("status") or {}
        if status.get("phase") != "Creating":
            continue
        name = checkpoint["metadata"]["name"]
        patch = finished(status, "Ready" if outcome == "Ready" else "Failed", stamp)
        await user.patch_status(CHECKPOINT.key(target.namespace, name), {"status": patch})
        ended.append(name)
    if not ended:
        return f"no job running for {describe(target)}"
    return f"checkpoint job of {', '.join(ended)} ended {outcome}"


def _controllers(sim: SimulatedCluster) -> dict[str, str]:
    """Every object's controller: uid -> the uid of its controller."""
    out: dict[str, str] = {}
    for obj in sim.cluster.snapshot():
        metadata = obj.get("metadata") or {}
        for reference in metadata.get("ownerReferences") or ():
            if reference.get("controller"):
                out[str(metadata.get("uid"))] = str(reference.get("uid"))
    return out


def _uids(sim: SimulatedCluster, target: ObjectRef) -> set[str]:
    resource = resource_of(target)
    return {
        str(obj["metadata"].get("uid"))
        for obj in sim.cluster.snapshot()
        if kind_of(obj) == resource
        and obj["metadata"].get("namespace") == (target.namespace if resource.namespaced else None)
        and target.name in ("*", obj["metadata"].get("name"))
    }


def _descends(pod: JSONObject, ancestors: set[str], controllers: dict[str, str]) -> bool:
    uid: str | None = str(pod["metadata"].get("uid"))
    seen: set[str] = set()
    while uid is not None and uid not in seen:
        if uid in ancestors:
            return True
        seen.add(uid)
        uid = controllers.get(uid)
    return False


# Faults.


def _kill(sim: SimulatedCluster, pattern: str) -> str:
    matcher = _path_pattern(pattern)
    running = sorted(
        {info.path for info in sim.system.tree() if info.state == "running" and info.path != "/"}
    )
    killed: list[str] = []
    for path in running:
        if not matcher.fullmatch(path):
            continue
        try:
            if sim.kill(path):
                killed.append(path)
        except ActorNotFound:
            continue  # it went away with an ancestor killed just before
    if not killed:
        return f"no running actor matched {pattern}"
    return f"killed {len(killed)}: {', '.join(killed)}"


def _path_pattern(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*|\*)", pattern)
    return re.compile("".join(".*" if p == "**" else "[^/]*" if p == "*" else re.escape(p) for p in parts))


def _api_fault(sim: SimulatedCluster, fault: ApiFault) -> Applied:
    error = _ERRORS[fault.error](f"injected fault ({fault.error})")
    rule = sim.cluster.faults.add(
        Fail(error),
        verb=None if fault.verb == "*" else fault.verb,
        resource=_resource(fault.resource),
        subresource=fault.subresource,
        name=fault.name,
        times=fault.count,
        probability=1.0 if fault.rate is None else fault.rate,
    )
    what = "every resource" if fault.resource == "*" else fault.resource
    if fault.name is not None:
        what += f" named {fault.name}"
    verbs = "requests" if fault.verb == "*" else f"{fault.verb} requests"
    how = (
        f"the next {fault.count}"
        if fault.count is not None
        else f"{fault.rate if fault.rate is not None else 1:g} of"
    )
    until = f" until t={fault.until:g}s" if fault.until is not None else ""
    effect = f"{how} {verbs} on {what} fail with {fault.error}{until}"
    if fault.until is None:
        return Applied(effect)
    return Applied(effect, ends_at=fault.until, end=lambda: _remove(sim, rule))


def _resource(name: str) -> Resource[Any] | None:
    return None if name == "*" else BY_NAME[name]


def _remove(sim: SimulatedCluster, rule: FaultRule) -> None:
    if rule in sim.cluster.faults.rules:
        sim.cluster.faults.remove(rule)


def _key(target: ObjectRef) -> Any:
    resource = resource_of(target).as_raw()
    return resource.key(target.namespace if resource.namespaced else None, target.name)


def _copy(value: JSONObject) -> JSONObject:
    copied: JSONObject = msgspec.json.decode(msgspec.json.encode(value))
    return copied
