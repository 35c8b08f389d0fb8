"""The simulated kubelet's node, on a real cluster: a Node that stays Ready, and its heartbeat Lease.

``sim world`` binds every pod to one node, ``sim-node``. A real control plane with no kubelets does
not let that stand: kube-controller-manager's pod garbage collector deletes pods bound to a node that
does not exist, and its node lifecycle controller taints a node whose heartbeat stops (and then
evicts its pods). So, as a kubelet does (and kwok for nodes it fakes), this model

* creates the Node ``sim-node`` with a ``Ready`` condition and room for every pod, if it is missing;
* renews the node's Lease in ``kube-node-lease`` every ``LEASE_RENEWAL`` seconds (the heartbeat
  the lifecycle controller reads), and
* refreshes the Node's ``Ready`` heartbeat every ``STATUS_REFRESH`` seconds, or at once when
  someone marked it not ready.

The in-memory simulation serves no Nodes: only ``sim world`` runs this model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from dgd.cluster.errors import AlreadyExists, NotFound
from dgd.cluster.resources import LEASE, NODE
from dgd.messages.base import JSONObject
from dgd.messages.timestamps import rfc3339, rfc3339_micro
from dgd.sim.world.controller import Nudge, Watch, WorldController, parse_time
from dgd.sim.world.pods import NODE_NAME

#: The namespace of node heartbeat Leases.
NODE_LEASE_NAMESPACE = "kube-node-lease"
#: Seconds between two renewals of the node's Lease (the kubelet's default is 10).
LEASE_RENEWAL = 10.0
#: Seconds the Lease is valid for (the kubelet's default is 40).
LEASE_DURATION = 40
#: Seconds between two refreshes of the Node's Ready heartbeat (the kubelet's default is 5 minutes).
STATUS_REFRESH = 60.0
#: What the node offers: enough that the simulation's own capacity is what limits pods.
_ROOM = {"cpu": "10k", "memory": "100Ti", "pods": "100k", "nvidia.com/gpu": "10k"}
_ROOT = Nudge(None, NODE_NAME)


def _route(node: Any) -> Nudge | None:
    return _ROOT if (node.get("metadata") or {}).get("name") == NODE_NAME else None


def _ready(now: float, since: float) -> JSONObject:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "dgd-operator sim world runs this node's pods",
        "lastHeartbeatTime": rfc3339(now),
        "lastTransitionTime": rfc3339(since),
    }


def node_manifest(now: float) -> JSONObject:
    """The Node as ``sim world`` registers it: labelled, Ready, with room for every pod."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "labels": {"kubernetes.io/hostname": NODE_NAME, "type": "dgd-operator-sim-world"},
        },
        "spec": {},
        "status": {"capacity": _ROOM, "allocatable": _ROOM, "conditions": [_ready(now, now)]},
    }


class NodeHeartbeat(WorldController):
    """Keeps ``sim-node`` registered, Ready and heartbeating (see the module)."""

    def watches(self) -> Sequence[Watch]:
        return [Watch(NODE, route=_route)]

    async def roots(self) -> list[Nudge]:
        return [_ROOT]

    async def on_start(self) -> None:
        # The node is the root even before it exists: its watch has nothing to route yet.
        await super().on_start()
        self.context.ref.tell_nowait(_ROOT)

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        now = self.clock()
        await self._node(now)
        await self._renew(now)
        return now + LEASE_RENEWAL

    async def _node(self, now: float) -> None:
        try:
            node = await self.cluster.get(NODE.key(None, NODE_NAME))
        except NotFound:
            with contextlib.suppress(AlreadyExists):
                await self.cluster.create(NODE, node_manifest(now))
            return
        conditions = (node.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        beat = parse_time(ready.get("lastHeartbeatTime")) if ready is not None else None
        if (
            ready is not None
            and ready.get("status") == "True"
            and beat is not None
            and now - beat < STATUS_REFRESH
        ):
            return
        since = (
            parse_time(ready.get("lastTransitionTime")) if ready and ready.get("status") == "True" else None
        )
        others = [c for c in conditions if c.get("type") != "Ready"]
        status = {**(node.get("status") or {}), "conditions": [*others, _ready(now, since or now)]}
        await self.cluster.replace_status(NODE, {**node, "status": status})

    async def _renew(self, now: float) -> None:
        key = LEASE.key(NODE_LEASE_NAMESPACE, NODE_NAME)
        spec = {
            "holderIdentity": NODE_NAME,
            "leaseDurationSeconds": LEASE_DURATION,
            "renewTime": rfc3339_micro(now),
        }
        try:
            lease = await self.cluster.get(key)
        except NotFound:
            manifest = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": NODE_NAME, "namespace": NODE_LEASE_NAMESPACE},
                "spec": spec,
            }
            with contextlib.suppress(AlreadyExists):
                await self.cluster.create(LEASE, manifest)
            return
        await self.cluster.replace(LEASE, {**lease, "spec": {**(lease.get("spec") or {}), **spec}})
