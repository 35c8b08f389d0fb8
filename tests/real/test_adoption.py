"""Taking over graphs upstream's operator runs: no write that would restart a pod (issue 21).

The test stores DGDs and their children the way upstream's Go operator leaves them (vLLM's agg and
disagg examples, each on both pathways, in one namespace): the DGD as its
admission defaulted it, with its finalizer, workload provider and ``current-worker-hash-v2``; the
children as its SyncResource created them (controller owner reference, ``last-applied-hash`` and
``-generation``), serialised as Go's client sends them (``dgd.domain.gojson``: typed zero fields,
canonical quantities; a DCD through its own MarshalJSON). The content is our rendering, which the golden
tests hold equal to upstream's. ``sim world`` runs their pods. Then ``dgd-operator run`` starts, and for
60 s of cluster time: no PodCliqueSet or DCD spec is written (generation unchanged), no child is
recreated or deleted, no pod is deleted or added, and the DGD reports ``successful``.

The PodCliqueSet's ``last-applied-hash`` is the one value upstream computes that we cannot reproduce
exactly (no Go table for Grove's own types here): it stands in with upstream's rule over the
PodCliqueSet as written above (pod specs typed). Where Grove's types would add zero fields we do not
write, the operator would record its own hash once, a metadata-only patch (``docs/decisions.md``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import anyio
import msgspec
import pytest
import yaml
from anyio.abc import TaskStatus

from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.resources import DCD, PCS, POD, ROLE, ROLE_BINDING, SERVICE, SERVICE_ACCOUNT, Resource
from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.gojson.encode import encode
from dgd.domain.gojson.last_applied import TYPED_KINDS, content, last_applied_hash
from dgd.domain.render.offline import prepare, render
from dgd.domain.render.shared_objects import discovery_enabled, discovery_rbac
from dgd.domain.worker_hash import worker_hash
from dgd.messages.base import JSONObject
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from tests.e2e.eventually import eventually
from tests.e2e.operators import Operators
from tests.real.harness import (
    CONFIG,
    UPSTREAM_EXAMPLES,
    RealCluster,
    manifest,
    run_flags,
    watch_from_now,
    world,
    written_config,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600), pytest.mark.usefixtures("cluster_rbac")]

RESOURCES: dict[str, Resource[JSONObject]] = {
    r.kind: r.as_raw() for r in (PCS, DCD, SERVICE, SERVICE_ACCOUNT, ROLE, ROLE_BINDING)
}
LAST_APPLIED_HASH = "nvidia.com/last-applied-hash"
LAST_APPLIED_GENERATION = "nvidia.com/last-applied-generation"
#: What upstream's operator stamps on a DGD it reconciled (dgd-domain §4.1, §5, §12.1).
FINALIZER = "nvidia.com/finalizer"
WORKER_HASH_V2 = "nvidia.com/current-worker-hash-v2"
#: The tier's configuration with the gates of upstream's chart stated, not detected: KAI and Volcano
#: off (its defaults), Grove and LeaderWorkerSet on (a cluster that runs Grove graphs enables them).
ADOPTION_CONFIG = (
    CONFIG
    + "orchestrators:\n  grove: {enabled: true}\n  lws: {enabled: true}\n"
    + "  kaiScheduler: {enabled: false}\n  volcanoScheduler: {enabled: false}\n"
)
#: How long the adopted graph is watched, in cluster time.
WATCH_SECONDS = 60


def _as_go_writes(obj: JSONObject) -> JSONObject:
    """``obj`` as upstream's Go client would send it: typed kinds through their Go type, a DCD through
    its MarshalJSON, a PodCliqueSet with each clique's pod spec through ``corev1.PodSpec``."""
    kind = obj["kind"]
    if kind == "DynamoComponentDeployment":
        return {**obj, "spec": content(obj)}
    if kind in TYPED_KINDS:
        written: JSONObject = json.loads(encode(obj, "struct:" + TYPED_KINDS[kind]))
        written.pop("status", None)
        return written
    written = json.loads(json.dumps(obj))
    for clique in written["spec"]["template"]["cliques"]:
        clique["spec"]["podSpec"] = json.loads(
            encode(clique["spec"]["podSpec"], "struct:api/core/v1.PodSpec")
        )
    return written


def _upstreams_child(obj: JSONObject, dgd: JSONObject) -> JSONObject:
    """A child as upstream's SyncResource creates it: owned by the DGD, with its bookkeeping."""
    written = _as_go_writes(obj)
    metadata = written.setdefault("metadata", {})
    metadata["ownerReferences"] = [
        {
            "apiVersion": dgd["apiVersion"],
            "kind": dgd["kind"],
            "name": dgd["metadata"]["name"],
            "uid": dgd["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    # For the PodCliqueSet this stands in for upstream's value (see the module): it is not ours.
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        LAST_APPLIED_HASH: last_applied_hash(written),
        LAST_APPLIED_GENERATION: "1",
    }
    return written


async def _store_as_upstream_left_it(
    real: RealCluster, example: Path, name: str, component: bool
) -> tuple[list[JSONObject], int]:
    """Create the DGD and its children as upstream's operator leaves them; return the children as
    created, and how many pods the graph runs."""
    config = msgspec.convert(yaml.safe_load(ADOPTION_CONFIG), OperatorConfig)
    document = manifest(example, name=name, component=component)
    admitted = msgspec.to_builtins(prepare(document, namespace=real.namespace, config=config))
    admitted.pop("status", None)
    admitted["metadata"]["finalizers"] = [FINALIZER]
    created = await real.apply(admitted)
    # Upstream hashes the DGD it reads back (the API server's defaults included) and records the hash.
    dgd = default_in_memory(msgspec.convert(created, DynamoGraphDeployment), grove_enabled=True)
    created = await real.kube.patch(
        real.dgd_key(name), {"metadata": {"annotations": {WORKER_HASH_V2: worker_hash(dgd)}}}
    )
    children = render(dgd, config=config)
    if discovery_enabled(dgd, config):
        children += discovery_rbac(dgd)
    pods = sum(1 if c.replicas is None else c.replicas for c in dgd.spec.components or [])
    return [
        await real.create(RESOURCES[obj["kind"]], _upstreams_child(obj, created)) for obj in children
    ], pods


async def _snapshot(kube: KubeCluster, namespace: str, children: list[JSONObject]) -> dict[str, JSONObject]:
    """Each child as it is now: uid, generation, labels, annotations and spec or rules."""
    seen: dict[str, JSONObject] = {}
    for child in children:
        resource = RESOURCES[child["kind"]]
        live = await kube.get(resource.key(namespace, child["metadata"]["name"]))
        metadata = live["metadata"]
        seen[f"{child['kind']} {metadata['name']}"] = {
            "uid": metadata["uid"],
            "generation": metadata.get("generation"),
            "labels": metadata.get("labels"),
            "annotations": metadata.get("annotations"),
            "content": {k: v for k, v in live.items() if k not in ("metadata", "status")},
        }
    return seen


def _changes(before: dict[str, JSONObject], after: dict[str, JSONObject]) -> list[str]:
    """The paths whose values differ between two snapshots (a failure's explanation)."""
    found: list[str] = []

    def walk(old: object, new: object, path: str) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in sorted(set(old) | set(new)):
                walk(old.get(key), new.get(key), f"{path}.{key}")
        elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
            for index, (a, b) in enumerate(zip(old, new, strict=True)):
                walk(a, b, f"{path}[{index}]")
        elif old != new:
            found.append(f"{path}: {json.dumps(old)[:160]} -> {json.dumps(new)[:160]}")

    walk(before, after, "")
    return found


class PodEvents:
    """Pods added and deleted in one namespace while ``run`` runs (a watch on the real API server)."""

    def __init__(self, kube: KubeCluster, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.events: Counter[str] = Counter()
        self.names: list[str] = []

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with watch_from_now(self.kube, POD.as_raw(), self.namespace) as watch:
            task_status.started()
            async for event in watch:
                if event.type in ("ADDED", "DELETED") and event.object is not None:
                    self.events[event.type] += 1
                    self.names.append(f"{event.type} {event.object['metadata']['name']}")


async def _pods_running(kube: KubeCluster, namespace: str, count: int) -> bool:
    items = (await kube.list(POD.as_raw(), namespace=namespace)).items
    running = [p for p in items if (p.get("status") or {}).get("phase") == "Running"]
    return len(items) == count and len(running) == count


#: The graphs taken over together, as a namespace of upstream's operator holds them: vLLM's agg and
#: disagg examples, each on both pathways.
GRAPHS = [(example, component) for example in UPSTREAM_EXAMPLES[:2] for component in (False, True)]


async def test_upstream_graphs_are_taken_over_without_a_spec_write_a_recreation_or_a_pod_restart(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    names = [f"{example.stem}-{'c' if component else 'g'}" for example, component in GRAPHS]
    async with world(real, tmp_path), anyio.create_task_group() as tg:
        # given vLLM's agg and disagg examples on both pathways as upstream's operator left them,
        # their pods running
        children: list[JSONObject] = []
        count = 0
        for name, (example, component) in zip(names, GRAPHS, strict=True):
            created, pods = await _store_as_upstream_left_it(real, example, name, component)
            children += created
            count += pods
        await eventually(
            lambda: _pods_running(real.kube, real.namespace, count), timeout=90, what="their pods run"
        )
        before = await _snapshot(real.kube, real.namespace, children)
        running = [
            p["metadata"]["name"]
            for p in (await real.kube.list(POD.as_raw(), namespace=real.namespace)).items
        ]
        pods = PodEvents(real.kube, real.namespace)
        await tg.start(pods.run)

        # when this operator starts, and runs for a minute
        await daemons.start("adopter", flags=run_flags(written_config(tmp_path, ADOPTION_CONFIG)))
        for name in names:
            await real.settle(name, timeout=WATCH_SECONDS)
        await anyio.sleep(WATCH_SECONDS)
        after = await _snapshot(real.kube, real.namespace, children)

        # then every DGD is successful, and no pod was deleted or added
        assert [name for name in names if not await real.converged(name)] == []
        assert pods.events == Counter(), (running, pods.names)
        # and no child was recreated, and no PodCliqueSet or DCD spec written
        assert {key: child["uid"] for key, child in after.items()} == {k: c["uid"] for k, c in before.items()}
        assert {key: child["generation"] for key, child in after.items()} == {
            key: child["generation"] for key, child in before.items()
        }, _changes(before, after)
        assert {key: child["content"] for key, child in after.items()} == {
            key: child["content"] for key, child in before.items()
        }, _changes(before, after)
        # and no metadata either: every last-applied hash recorded as upstream's rule gives it
        assert {key: (child["labels"], child["annotations"]) for key, child in after.items()} == {
            key: (child["labels"], child["annotations"]) for key, child in before.items()
        }, _changes(before, after)
        tg.cancel_scope.cancel()
