"""A stand-in for the Grove operator on a real API server: PodCliques that report ready, and no pods.

For each PodCliqueSet of one namespace, per clique of its template, one PodClique
``<set>-0-<clique>`` (the clique's labels, the set's DGD-name label, a controller owner reference to
the set, the clique's spec), whose status says ready ``delay`` seconds after it was written:
replicas = readyReplicas = updatedReplicas = scheduledReplicas = spec.replicas, observedGeneration =
generation. A set whose clique's replicas change gets its PodClique's spec patched and the same status
again after ``delay``. It is lighter than ``dgd-operator sim world`` (which runs Grove's whole model,
with pods, a scheduler and kubelets) and runs in the benchmark's own process, so its CPU is not the
operator's. Imported as ``standin_grove`` by ``bench/real.py``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from dgd.cluster.errors import AlreadyExists, NotFound
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.resources import PCLQ, PCS
from dgd.domain.metadata_keys import GRAPH_NAME
from dgd.messages.base import JSONObject

SETS = PCS.as_raw()
CLIQUES = PCLQ.as_raw()


class StandInGrove:
    """Follows the PodCliqueSets of ``namespace`` until cancelled (see the module); ``written`` counts
    the PodClique creates, spec patches and status writes it made."""

    def __init__(self, kube: KubeCluster, namespace: str, delay: float) -> None:
        self._kube = kube
        self._namespace = namespace
        self._delay = delay
        #: The replicas each PodClique was last written with, by name.
        self._replicas: dict[str, int] = {}
        self.written = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch the sets (from a list, again after a watch ends) and act on each; started once the
        first watch is open."""
        started = False
        async with anyio.create_task_group() as tg:
            while True:
                listed = await self._kube.list(SETS, namespace=self._namespace)
                for pcs in listed.items:
                    self._follow(tg, pcs)
                async with self._kube.watch(
                    SETS, namespace=self._namespace, resource_version=listed.resource_version
                ) as watch:
                    if not started:
                        started = True
                        task_status.started()
                    async for event in watch:
                        if event.object is not None and event.type in ("ADDED", "MODIFIED"):
                            self._follow(tg, event.object)

    def _follow(self, tg: TaskGroup, pcs: JSONObject) -> None:
        """Start writing each PodClique of ``pcs`` whose replicas are not yet what its clique asks."""
        for clique in pcs["spec"]["template"].get("cliques") or []:
            name = f"{pcs['metadata']['name']}-0-{clique['name']}"
            replicas = int(clique["spec"].get("replicas", 1))
            if self._replicas.get(name) == replicas:
                continue
            first = name not in self._replicas
            self._replicas[name] = replicas
            tg.start_soon(self._write, pcs, clique, name, replicas, first)

    async def _write(
        self, pcs: JSONObject, clique: JSONObject, name: str, replicas: int, first: bool
    ) -> None:
        """Create (or re-spec) the PodClique, then ``delay`` seconds later say it is ready."""
        if first:
            written = await self._create(pcs, clique, name)
        else:
            key = CLIQUES.key(self._namespace, name)
            written = await self._kube.patch(key, {"spec": {"replicas": replicas}})
        self.written += 1
        await anyio.sleep(self._delay)
        # The status says every replica is there, for the generation just written.
        status = {
            "replicas": replicas,
            "readyReplicas": replicas,
            "updatedReplicas": replicas,
            "scheduledReplicas": replicas,
            "scheduleGatedReplicas": 0,
            "observedGeneration": written["metadata"].get("generation", 1),
        }
        with contextlib.suppress(NotFound):
            await self._kube.patch_status(CLIQUES.key(self._namespace, name), {"status": status})
            self.written += 1

    async def _create(self, pcs: JSONObject, clique: JSONObject, name: str) -> JSONObject:
        metadata = pcs["metadata"]
        labels: dict[str, Any] = dict(clique.get("labels") or {})
        if graph := (metadata.get("labels") or {}).get(GRAPH_NAME):
            labels[GRAPH_NAME] = graph
        owner = {
            "apiVersion": pcs["apiVersion"],
            "kind": pcs["kind"],
            "name": metadata["name"],
            "uid": metadata["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        body: JSONObject = {
            "apiVersion": pcs["apiVersion"],
            "kind": "PodClique",
            "metadata": {
                "name": name,
                "namespace": self._namespace,
                "labels": labels,
                "ownerReferences": [owner],
            },
            "spec": clique["spec"],
        }
        try:
            return await self._kube.create(CLIQUES, body)
        except AlreadyExists:
            return await self._kube.get(CLIQUES.key(self._namespace, name))
