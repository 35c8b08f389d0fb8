"""Grove, simulated: PodCliqueSet -> PodCliques and scaling groups -> pods, and their status.

For each PodCliqueSet (one root) a pass does what Grove's operator does, from one read of the set:

1. holds Grove's finalizer on the set, and releases it once the set is being deleted (its children
   then go by garbage collection);
2. creates, updates (everything but replicas, which belong to the scale subresource once a child
   exists) and deletes the scaling groups, the standalone PodCliques, and the member PodCliques of
   every scaling-group replica (``grove_children``);
3. keeps each PodClique's pods: creates them schedule-gated up to ``spec.replicas``, removes the
   surplus, and, on a template change, replaces pods of the old template (``RollingRecreate``: the
   not-ready ones at once, then one ready pod at a time, each after the previous replacement is
   ready; ``OnDelete``: only pods someone else deleted);
4. writes the status of every PodClique, scaling group and of the set (``grove_status``), each only
   when it changed.

Pods are started by :mod:`dgd.sim.world.pods`; each of their transitions comes back here as a nudge.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from dgd.cluster.errors import NotFound
from dgd.cluster.resources import PCLQ, PCS, PCSG, POD, Resource
from dgd.messages.base import JSONObject
from dgd.messages.grove import API_VERSION, PodCliqueSet
from dgd.messages.grove_children import PCLQ_KIND, PodClique, PodCliqueScalingGroup
from dgd.messages.meta import OwnerReference
from dgd.messages.timestamps import rfc3339
from dgd.sim.world.controller import Nudge, Watch, WorldController
from dgd.sim.world.grove_children import (
    GROVE_SELECTOR,
    PART_OF,
    POD_TEMPLATE_HASH,
    PODCLIQUE,
    SCALING_GROUP,
    SET_FINALIZER,
    generation_hash,
    member_cliques,
    scaling_groups,
    standalone_cliques,
    template_hashes,
)
from dgd.sim.world.grove_status import clique_status, group_status, set_status
from dgd.sim.world.pods import by_name, is_active, is_deleting, is_ready, is_terminal, labels, pod_manifest

Child = TypeVar("Child", PodClique, PodCliqueScalingGroup)


class GroveController(WorldController):
    """Grove's operator for every PodCliqueSet of the cluster (see the module)."""

    def watches(self) -> Sequence[Watch]:
        return [
            Watch(PCS, route=_own),
            Watch(PCSG, route=_part_of, label_selector=GROVE_SELECTOR),
            Watch(PCLQ, route=_part_of, label_selector=GROVE_SELECTOR),
            Watch(POD, route=_part_of, label_selector=GROVE_SELECTOR),
        ]

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        assert namespace is not None
        # A set being deleted: let it go; garbage collection takes its children.
        pcs = await self.live_root(PCS, namespace, name, SET_FINALIZER)
        if pcs is None:
            return None
        hashes = template_hashes(pcs)
        now, set_hash = rfc3339(self.clock()), generation_hash(pcs, hashes)
        selector = f"{PART_OF}={name},{GROVE_SELECTOR}"

        # Children: scaling groups first (members are owned by them), then every PodClique.
        have_groups = (await self.cluster.list(PCSG, namespace=namespace, label_selector=selector)).items
        groups = await self._sync(PCSG, scaling_groups(pcs), have_groups)
        have_cliques = (await self.cluster.list(PCLQ, namespace=namespace, label_selector=selector)).items
        wanted = standalone_cliques(pcs, hashes) + [m for g in groups for m in member_cliques(pcs, g, hashes)]
        cliques = await self._sync(PCLQ, wanted, have_cliques)

        # Pods: each clique's count and template; read back once if anything changed.
        pods = (await self.cluster.list(POD, namespace=namespace, label_selector=selector)).items
        strategy = pcs.spec.update_strategy.type if pcs.spec.update_strategy else None
        changed = False
        for clique in cliques:
            changed |= await self._keep_pods(clique, _of(pods, clique), strategy or "RollingRecreate")
        if changed:
            pods = (await self.cluster.list(POD, namespace=namespace, label_selector=selector)).items

        # Status, bottom up, each written only when it changed.
        cliques = [await self._status(c, clique_status(c, _of(pods, c), set_hash, now)) for c in cliques]
        groups = [
            await self._status(g, group_status(g, [c for c in cliques if _in_group(c, g)], set_hash, now))
            for g in groups
        ]
        standalone = [c for c in cliques if SCALING_GROUP not in (c.metadata.labels or {})]
        status = set_status(pcs, standalone, groups, set_hash, self.settings, now)
        if status != pcs.status:
            await self.cluster.replace_status(PCS, msgspec.structs.replace(pcs, status=status))
        return None

    async def _sync(
        self, resource: Resource[Child], wanted: Sequence[Child], have: Sequence[Child]
    ) -> list[Child]:
        """Create what is missing, update what drifted (not replicas), delete what is not wanted."""
        existing = {child.metadata.name: child for child in have}
        out = []
        for want in wanted:
            child = existing.pop(want.metadata.name, None)
            if child is None:
                out.append(await self.cluster.create(resource, want))
                continue
            if child.metadata.deletion_timestamp:
                continue
            updated = msgspec.structs.replace(
                child,
                metadata=msgspec.structs.replace(
                    child.metadata, labels=want.metadata.labels, annotations=want.metadata.annotations
                ),
                spec=msgspec.structs.replace(want.spec, replicas=child.spec.replicas),
            )
            out.append(child if updated == child else await self.cluster.replace(resource, updated))
        for name in sorted(n for n in existing if n):
            with contextlib.suppress(NotFound):
                await self.cluster.delete(resource.key(existing[name].metadata.namespace, name))
        return sorted(out, key=lambda child: child.metadata.name or "")

    async def _keep_pods(self, clique: PodClique, pods: list[JSONObject], strategy: str) -> bool:
        doomed, missing = plan_pods(clique, pods, rolling=strategy != "OnDelete")
        for pod in doomed:
            meta = pod.get("metadata") or {}
            with contextlib.suppress(NotFound):
                await self.cluster.delete(POD.key(meta.get("namespace"), str(meta.get("name"))))
        owner = OwnerReference(API_VERSION, PCLQ_KIND, clique.metadata.name or "", clique.metadata.uid or "")
        for _ in range(missing):
            manifest = pod_manifest(
                namespace=clique.metadata.namespace or "",
                generate_name=f"{clique.metadata.name}-",
                labels=clique.metadata.labels or {},
                annotations=clique.metadata.annotations,
                spec=clique.spec.pod_spec,
                owner=owner,
                gated=True,
            )
            await self.cluster.create(POD, manifest)
        return bool(doomed) or missing > 0

    async def _status(self, child: Child, status: Any) -> Child:
        if status == child.status:
            return child
        resource: Resource[Any] = PCLQ if isinstance(child, PodClique) else PCSG
        updated: Child = await self.cluster.replace_status(
            resource, msgspec.structs.replace(child, status=status)
        )
        return updated


def plan_pods(
    clique: PodClique, pods: Sequence[JSONObject], *, rolling: bool
) -> tuple[list[JSONObject], int]:
    """Which of a clique's pods to delete, and how many to create (see the module, step 3)."""
    current = (clique.metadata.labels or {}).get(POD_TEMPLATE_HASH)
    active = by_name([pod for pod in pods if is_active(pod)])
    desired = clique.spec.replicas

    # Surplus first: old template, then not ready, then the newest names.
    def keep_order(pod: JSONObject) -> tuple[bool, bool, str]:
        return (labels(pod).get(POD_TEMPLATE_HASH) == current, is_ready(pod), str(pod["metadata"]["name"]))

    ranked = sorted(active, key=keep_order)
    surplus = max(len(active) - desired, 0)
    doomed, kept = ranked[:surplus], ranked[surplus:]

    # Rolling replacement: old pods that are not ready at once, then one ready pod at a time.
    if rolling:
        old = by_name([pod for pod in kept if labels(pod).get(POD_TEMPLATE_HASH) != current])
        unready = [pod for pod in old if not is_ready(pod)]
        settling = any(is_deleting(pod) and not is_terminal(pod) for pod in pods)
        new_ready = all(is_ready(pod) for pod in kept if pod not in old)
        if unready:
            doomed += unready
        elif old and new_ready and not settling:
            doomed.append(old[0])
    return doomed, max(desired - (len(active) - len(doomed)), 0)


def _own(pcs: PodCliqueSet) -> Nudge:
    return Nudge(pcs.metadata.namespace, pcs.metadata.name or "")


def _part_of(obj: Any) -> Nudge | None:
    # Pods arrive as raw JSON, cliques and scaling groups as Structs.
    if isinstance(obj, dict):
        meta = obj.get("metadata") or {}
        namespace, found = meta.get("namespace"), meta.get("labels") or {}
    else:
        namespace, found = obj.metadata.namespace, obj.metadata.labels or {}
    name = found.get(PART_OF)
    return Nudge(namespace, name) if name else None


def _of(pods: Sequence[JSONObject], clique: PodClique) -> list[JSONObject]:
    return [pod for pod in pods if labels(pod).get(PODCLIQUE) == clique.metadata.name]


def _in_group(clique: PodClique, group: PodCliqueScalingGroup) -> bool:
    return (clique.metadata.labels or {}).get(SCALING_GROUP) == group.metadata.name
