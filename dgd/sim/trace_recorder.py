"""Recording: what happened to a simulated cluster, written down as a trace that replays to the same end.

A ``TraceRecorder`` hears every change the API server stores (``MemoryCluster.observe``) and keeps
the ones the *user* made — no operator actor and no world model made them — as the records that
would make them again, at the cluster time they happened:

* an object created: ``apply`` of its manifest (without what the server writes: uid,
  resourceVersion, generation, timestamps, status);
* an object changed: ``patch`` (a merge patch of what changed; of its ``status`` subresource when
  only the status changed);
* an object deleted (or marked for deletion): ``delete``.

Deletions the garbage collector makes (of objects whose owner is gone or going) happen again by
themselves and are not recorded. Events, pods and namespaces are never recorded. What is not a
stored change — world events and faults a replay applies — is handed over with ``note`` and kept
as it is (``muted`` hides the writes it makes).

``trace(dgds)`` is the recording: a header with the run's seed, settings and configuration, the
records in time order, and, at the end, one ``expect`` per DGD of its final state and Ready
condition — so replaying the recording checks that it ends as the recorded run ended.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio.abc
import msgspec

from dgd.cluster import merge_patch
from dgd.cluster.memory.store import Change
from dgd.cluster.resources import EVENT, LEASE, NAMESPACE, POD
from dgd.messages.base import JSONObject
from dgd.messages.config import OperatorConfig
from dgd.messages.meta import controller_of
from dgd.messages.trace import (
    VERSION,
    Apply,
    Delete,
    Header,
    ObjectRef,
    Patch,
    Record,
    Trace,
    final_expectations,
    manifest_of,
)
from dgd.runtime.ref import current_actor
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.kinds import kind_of
from dgd.sim.world.settings import WorldSettings

#: Kinds never recorded: the world's and the server's own.
_SKIPPED = frozenset(str(kind) for kind in (EVENT, POD, NAMESPACE, LEASE))


class TraceRecorder:
    """Records a running simulated cluster (see the module). Start it once, right after entering."""

    def __init__(
        self,
        sim: SimulatedCluster,
        *,
        seed: int,
        settings: WorldSettings,
        config: OperatorConfig,
        description: str = "",
    ) -> None:
        self._sim = sim
        self._header = Header(
            version=VERSION,
            seed=seed,
            settings=settings_dict(settings),
            config=msgspec.to_builtins(config),
            description=description,
        )
        self._records: list[Record] = []
        self._deleting: dict[str, bool] = {}  # every object's uid -> whether it is being deleted
        self._muted = False

    async def start(self, group: anyio.abc.TaskGroup) -> None:
        """Begin recording; stop when ``group`` is cancelled."""
        for obj in self._sim.cluster.snapshot():
            metadata = obj["metadata"]
            self._deleting[str(metadata.get("uid"))] = bool(metadata.get("deletionTimestamp"))
        self._sim.observe(group, self._hear)

    def note(self, record: Record) -> None:
        """Keep a record the replay applied that is no stored change (a world event, a fault)."""
        self._records.append(record)

    @contextmanager
    def muted(self) -> Iterator[None]:
        """Changes made meanwhile are not recorded (the writes of a noted world event)."""
        self._muted = True
        try:
            yield
        finally:
            self._muted = False

    def trace(self, dgds: list[JSONObject]) -> Trace:
        """The recording so far, ending with one expectation per DGD in ``dgds`` (their final state)."""
        finals = final_expectations(dgds, round(self._sim.elapsed(), 6))
        records = sorted(self._records, key=lambda record: record.at)
        return Trace(self._header, (*records, *finals))

    # Hearing.

    def _hear(self, change: Change) -> None:
        obj, uid = change.obj.data, change.obj.uid
        metadata = obj["metadata"]
        was_deleting = self._deleting.get(uid, False)
        deleting = change.type == "DELETED" or bool(metadata.get("deletionTimestamp"))
        if change.type == "DELETED":
            self._deleting.pop(uid, None)
        else:
            self._deleting[uid] = deleting
        if self._muted or current_actor.get() is not None or change.key[0] in _SKIPPED:
            return
        record = self._record(change, deleting and not was_deleting)
        if record is not None:
            self._records.append(record)

    def _record(self, change: Change, deleted_now: bool) -> Record | None:
        obj, at = change.obj.data, round(self._sim.elapsed(), 6)
        if deleted_now:
            # A child whose owner is gone or going was deleted by the garbage collector, not the user.
            owner = _controller_uid(obj)
            collected = owner is not None and self._deleting.get(owner, True)
            return None if collected else Delete(at=at, target=ref_of(obj))
        if change.type == "ADDED":
            return Apply(at=at, object=manifest_of(obj))
        if change.type != "MODIFIED" or change.prev is None:
            return None
        before = change.prev.data
        if (before.get("status") or {}) != (obj.get("status") or {}):
            patch = merge_patch.diff(
                {"status": before.get("status") or {}}, {"status": obj.get("status") or {}}
            )
            return Patch(at=at, target=ref_of(obj), patch=patch, subresource="status")
        patch = merge_patch.diff(manifest_of(before), manifest_of(obj))
        return Patch(at=at, target=ref_of(obj), patch=patch) if patch else None


def settings_dict(settings: WorldSettings) -> dict[str, Any]:
    """The settings that differ from the defaults, as a header's ``settings``."""
    defaults = WorldSettings()
    changed = {
        field: getattr(settings, field)
        for field in settings.__struct_fields__
        if getattr(settings, field) != getattr(defaults, field)
    }
    out: dict[str, Any] = msgspec.to_builtins(changed)
    return out


def ref_of(obj: JSONObject) -> ObjectRef:
    metadata = obj["metadata"]
    resource = kind_of(obj)
    namespace = metadata.get("namespace") if resource is None or resource.namespaced else None
    return ObjectRef(str(obj["apiVersion"]), str(obj["kind"]), str(metadata["name"]), namespace)


def _controller_uid(obj: JSONObject) -> str | None:
    owner = controller_of(obj)
    return owner.uid if owner is not None else None
