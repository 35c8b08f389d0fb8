"""What the operator created: a watch on every kind it creates, counting creations and re-creations.

``CreationLog`` is the ledger (both tiers keep one: this one over the in-memory server, the real-server
tier's over its API server) and ``owned_children`` counts what one DGD owns.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import anyio
from anyio.abc import TaskStatus

from dgd.cluster.errors import NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.protocol import ClusterReader, WatchEvent
from dgd.cluster.resources import (
    CHECKPOINT,
    CONFIG_MAP,
    DCD,
    DEPLOYMENT,
    DGDSA,
    INGRESS,
    PCS,
    PVC,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    Resource,
)
from dgd.messages.base import JSONObject
from tests.e2e.eventually import eventually

#: What the operator creates for a DGD, by kind (the world's PodCliques and Pods are not in it).
CHILD_KINDS: tuple[Resource[Any], ...] = (
    PCS,
    DCD,
    DGDSA,
    SERVICE,
    SERVICE_ACCOUNT,
    ROLE,
    ROLE_BINDING,
    CONFIG_MAP,
    SECRET,
    DEPLOYMENT,
    INGRESS,
    PVC,
    CHECKPOINT,
)


class CreationLog:
    """Creations and deletions seen by watches, under each object's key; a re-created object shows as
    two uids under one key. Only ``note`` writes it."""

    def __init__(self) -> None:
        #: The uids seen created under each key.
        self.uids: dict[str, set[str]] = {}
        self.deleted: list[str] = []
        self.created = 0

    def note(self, event: WatchEvent[JSONObject], key: str) -> None:
        """Records an ``ADDED`` (a creation) or ``DELETED`` event of the object ``key`` names."""
        assert event.object is not None
        if event.type == "ADDED":
            self.uids.setdefault(key, set()).add(event.object["metadata"]["uid"])
            self.created += 1
        elif event.type == "DELETED":
            self.deleted.append(key)

    def recreated(self) -> dict[str, set[str]]:
        """The names created more than once (a different uid each time)."""
        return {key: uids for key, uids in self.uids.items() if len(uids) > 1}


async def owned_children(reader: ClusterReader, uid: str, namespace: str | None) -> Counter[str]:
    """How many objects of each child kind name ``uid`` among their owner references (a kind the
    server does not serve owns none)."""
    counts: Counter[str] = Counter()
    for resource in CHILD_KINDS:
        with contextlib.suppress(NotFound):
            for item in (await reader.list(resource.as_raw(), namespace=namespace)).items:
                if any(owner["uid"] == uid for owner in item["metadata"].get("ownerReferences") or []):
                    counts[resource.kind] += 1
    return counts


class Recorder(CreationLog):
    """Every object of the operator's child kinds created and deleted since ``run`` started, seen by
    watches on the API server itself (not through the facade, so facade faults do not hide any)."""

    def __init__(self, cluster: MemoryCluster) -> None:
        super().__init__()
        self._cluster = cluster
        self._watching = 0
        self._waiting: list[tuple[int, anyio.Event]] = []

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch every child kind until cancelled; started once every watch is open."""
        async with anyio.create_task_group() as tg:
            for resource in CHILD_KINDS:
                tg.start_soon(self._follow, resource.as_raw())
            await eventually(
                lambda: self._watching == len(CHILD_KINDS), timeout=10, what="the recorder's watches are open"
            )
            task_status.started()

    async def _follow(self, resource: Resource[JSONObject]) -> None:
        async with self._cluster.watch(resource, resource_version=self._cluster.resource_version) as watch:
            self._watching += 1
            async for event in watch:
                if event.object is None:
                    continue
                metadata = event.object["metadata"]
                self.note(event, f"{resource.kind} {metadata.get('namespace')}/{metadata['name']}")
                for count, reached in self._waiting:
                    if self.created >= count:
                        reached.set()

    async def wait_created(self, count: int, timeout: float) -> None:
        """Return as soon as ``count`` creations have been seen."""
        reached = anyio.Event()
        self._waiting.append((count, reached))
        if self.created >= count:
            reached.set()
        with anyio.fail_after(timeout):
            await reached.wait()
