"""The operator on a bare ``MemoryCluster``, with the test playing Grove by hand.

``Harness`` starts the operator's actor tree on a ``ManualClock`` (retries and resyncs happen only
when the test advances time) and gives the test what it needs to drive and observe it: the cluster,
the operator's cache, ``settle`` (let every actor react), ``advance`` (move time), and
``grove_realizes`` (create the PodCliques and scaling groups Grove would, with a status the test
chooses). Counting writes: ``writes`` counts every mutating API call the operator made.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec
import yaml

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.loop import Nudge, ReconcileObserver
from dgd.actors.machinery.workers import Workers
from dgd.actors.tree import DGDS, operator_children
from dgd.cluster.errors import NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import (
    CLUSTER_ROLE,
    DEFAULT_RESOURCES,
    DGD,
    EVENT,
    LWS_RESOURCES,
    NAMESPACE,
    PCLQ,
    PCS,
    PCSG,
    SECRET,
)
from dgd.domain.gates import Gates, effective_config
from dgd.domain.render.ssh_keys import KeyPair, KeySource
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet
from dgd.messages.meta import Condition, Event
from dgd.runtime import ActorSystem, CountingMetrics, ManualClock, Ref, settle

#: 2026-01-01T00:00:00Z
EPOCH = 1_767_225_600.0
NS = "team-a"

AGG = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: demo
  namespace: team-a
spec:
  backendFramework: vllm
  components:
    - name: Frontend
      type: frontend
      replicas: 1
      podTemplate:
        spec:
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0
    - name: Worker
      type: worker
      replicas: 2
      podTemplate:
        spec:
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0
              command: [python3, -m, dynamo.vllm]
              args: [--model, Qwen/Qwen3-0.6B]
              resources:
                limits:
                  nvidia.com/gpu: "1"
"""

#: The gates of a cluster that serves Grove and nothing else optional.
GROVE_ONLY = Gates(grove=True)

_WRITES = ("create", "update", "patch", "delete")


class CountingCluster(MemoryCluster):
    """A client of the memory server that counts its own mutating calls, by verb and kind."""

    writes: Counter[str]

    async def _request(self, verb: Any, resource: Any, **kwargs: Any) -> Any:
        if verb in _WRITES:
            self.writes[
                f"{verb} {resource.kind}{'/' + kwargs['subresource'] if kwargs.get('subresource') else ''}"
            ] += 1
        return await super()._request(verb, resource, **kwargs)


def manifest(text: str = AGG, **changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(text)
    document["metadata"].update(changes)
    return document


@dataclass
class Harness:
    """A running operator and the handles a test needs."""

    operator_client: CountingCluster
    cluster: MemoryCluster
    cache: Cache
    clock: ManualClock
    #: What the operator's clock reads (seconds since the epoch); tests move it by hand.
    now: float = EPOCH
    system: ActorSystem = field(init=False)

    @property
    def writes(self) -> Counter[str]:
        return self.operator_client.writes

    async def settle(self) -> None:
        await settle()
        await settle()

    async def advance(self, seconds: float) -> None:
        await self.clock.advance(seconds)
        await self.settle()

    async def apply(self, document: dict[str, Any]) -> DynamoGraphDeployment:
        created = await self.cluster.create(DGD, msgspec.convert(document, DynamoGraphDeployment))
        await self.settle()
        return created

    def nudge(self, name: str = "demo", times: int = 1) -> None:
        """Tell the DGD's actor to reconcile, ``times`` times (as watch events would)."""
        actor: Ref[Nudge] = self.system.ref(f"{DGDS}/{NS}/{name}")
        for _ in range(times):
            actor.tell_nowait(Nudge())

    async def scale(self, component: str, replicas: int, name: str = "demo") -> None:
        """Edit the DGD as a user would: set one component's replicas (a new generation)."""
        dgd = await self.dgd(name)
        components = [
            msgspec.structs.replace(c, replicas=replicas) if c.name == component else c
            for c in dgd.spec.components or []
        ]
        edited = msgspec.structs.replace(dgd, spec=msgspec.structs.replace(dgd.spec, components=components))
        await self.cluster.replace(DGD, edited)
        await self.settle()

    async def dgd(self, name: str = "demo") -> DynamoGraphDeployment:
        return await self.cluster.get(DGD.key(NS, name))

    async def events(self, name: str = "demo") -> list[tuple[str, str, str]]:
        """(type, reason, note) of every event about the DGD ``name``, in the order recorded."""
        listed: list[Event] = (await self.cluster.list(EVENT, namespace=NS)).items
        mine = [e for e in listed if e.regarding is not None and e.regarding.name == name]
        mine.sort(key=lambda e: int(e.metadata.resource_version or 0))
        return [(e.type or "", e.reason or "", e.note or "") for e in mine]

    async def pcs(self, name: str = "demo") -> PodCliqueSet:
        return await self.cluster.get(PCS.key(NS, name))

    async def grove_realizes(
        self,
        name: str = "demo",
        *,
        ready: bool = True,
        scheduled: int | None = None,
        conditions: Sequence[Condition] = (),
    ) -> None:
        """Play Grove: create each child of the PodCliqueSet (once) and set its status."""
        pcs = await self.pcs(name)
        owner = {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "name": pcs.metadata.name,
            "uid": pcs.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
        template = pcs.spec.template
        grouped = {
            clique for group in template.pod_clique_scaling_groups or () for clique in group.clique_names
        }
        for group in template.pod_clique_scaling_groups or ():
            await self._child(
                PCSG,
                f"{pcs.metadata.name}-0-{group.name}",
                owner,
                pcs,
                group.replicas or 1,
                {"cliqueNames": group.clique_names, "replicas": group.replicas or 1},
                ready,
                scheduled,
                conditions,
                labels={},
            )
        for clique in template.cliques:
            if clique.name in grouped:
                continue
            spec = {
                "roleName": clique.spec.role_name,
                "replicas": clique.spec.replicas,
                "podSpec": clique.spec.pod_spec,
            }
            await self._child(
                PCLQ,
                f"{pcs.metadata.name}-0-{clique.name}",
                owner,
                pcs,
                clique.spec.replicas,
                spec,
                ready,
                scheduled,
                conditions,
                labels=clique.labels or {},
            )
        await self.settle()

    async def _child(
        self,
        resource: Any,
        name: str,
        owner: dict[str, Any],
        pcs: PodCliqueSet,
        replicas: int,
        spec: dict[str, Any],
        ready: bool,
        scheduled: int | None,
        conditions: Sequence[Condition],
        labels: dict[str, str],
    ) -> None:
        raw = resource.as_raw()
        key = raw.key(NS, name)
        try:
            live = await self.cluster.get(key)
        except NotFound:
            body = {
                "apiVersion": "grove.io/v1alpha1",
                "kind": resource.kind,
                "metadata": {"name": name, "namespace": NS, "labels": labels, "ownerReferences": [owner]},
                "spec": spec,
            }
            live = await self.cluster.create(raw, body)
        desired = live["spec"]["replicas"]
        count = desired if ready else 0
        status: dict[str, Any] = {
            "replicas": desired,
            "updatedReplicas": desired,
            "scheduledReplicas": desired if scheduled is None else scheduled,
            "observedGeneration": live["metadata"]["generation"],
            "currentPodCliqueSetGenerationHash": (pcs.status.current_generation_hash if pcs.status else None),
            "conditions": [msgspec.to_builtins(c) for c in conditions],
        }
        if resource is PCLQ:
            status.update(readyReplicas=count, scheduleGatedReplicas=0)
        else:
            status.update(availableReplicas=count)
        await self.cluster.replace_status(raw, {**live, "status": status})

    async def grove_accepts(
        self, name: str = "demo", revision: str = "rev-1", conditions: Sequence[Condition] = ()
    ) -> None:
        """Play Grove on the PodCliqueSet: observe its generation, publish a revision hash and conditions."""
        raw = PCS.as_raw()
        live = await self.cluster.get(raw.key(NS, name))
        status = {
            "availableReplicas": 1,
            "updatedReplicas": 1,
            "observedGeneration": live["metadata"]["generation"],
            "currentGenerationHash": revision,
            "conditions": [msgspec.to_builtins(c) for c in conditions],
        }
        await self.cluster.replace_status(raw, {**live, "status": status})
        await self.settle()


async def fake_keys() -> KeyPair:
    return KeyPair("-----BEGIN RSA PRIVATE KEY-----\nfake\n-----END RSA PRIVATE KEY-----\n", "ssh-rsa fake\n")


@asynccontextmanager
async def running_operator(
    *,
    config: OperatorConfig | None = None,
    gates: Gates = GROVE_ONLY,
    seed: int = 7,
    before: Callable[[MemoryCluster], Awaitable[None]] | None = None,
    metrics: CountingMetrics | None = None,
    resync: float | None = 600.0,
    cluster_role: bool = True,
    mpi_secret: bool = True,
    namespaces: Sequence[str] = (),
    reconciles: ReconcileObserver | None = None,
    workers: Workers | None = None,
    keys: KeySource = fake_keys,
    proxy: Callable[[Cluster], Cluster] | None = None,
    dcd_controller: bool = False,
) -> AsyncIterator[Harness]:
    """A memory cluster with what a real one would have (the planner ClusterRole and the MPI key Secret
    our chart installs, unless turned off), and the operator running against it (``keys``: where MPI
    key pairs come from; a fixed fake one by default; ``proxy``: what the operator's client is wrapped
    in, e.g. to record its requests and their answers)."""
    ticks = itertools.count()
    wall = lambda: EPOCH + next(ticks)  # noqa: E731
    served = DEFAULT_RESOURCES + (LWS_RESOURCES if gates.lws else ())
    server = MemoryCluster(resources=served, clock=wall, rng=random.Random(seed))
    client = server.client()
    counting = CountingCluster.__new__(CountingCluster)
    counting.__dict__.update(client.__dict__)
    counting.writes = Counter()
    effective = effective_config(config or OperatorConfig(), gates)
    for ns in dict.fromkeys((NS, "dynamo-system", *namespaces)):
        await server.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if cluster_role:
        await server.create(
            CLUSTER_ROLE,
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": effective.rbac.planner_cluster_role_name},
            },
        )
    if mpi_secret:
        await server.create(
            SECRET,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": effective.mpi.ssh_secret_name,
                    "namespace": effective.mpi.ssh_secret_namespace,
                },
                "data": {"private.key": "ZmFrZQ==", "private.key.pub": "ZmFrZQ=="},
            },
        )
    if before is not None:
        await before(server)
    cache = Cache()
    clock = ManualClock()
    harness = Harness(counting, server, cache, clock)
    children = operator_children(
        counting if proxy is None else proxy(counting),
        config=effective,
        wall=lambda: harness.now,
        keys=keys,
        cache=cache,
        resync=resync,
        namespaces=namespaces,
        reconciles=reconciles,
        workers=workers,
        dcd_controller=dcd_controller,
    )
    async with ActorSystem(children, clock=clock, random=random.Random(seed), metrics=metrics) as system:
        harness.system = system
        await harness.settle()
        yield harness
