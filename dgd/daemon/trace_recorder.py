"""``dgd-operator run --record FILE``: what users did to a real cluster, written down as a trace.

The daemon cannot tell who made a change from the change itself, so it keeps track of its own: its
client (``InstrumentedCluster``) announces every write before sending it and tells the answer
after (``WriteObserver``), and the recorder hears every change the informers cache
(``Cache.listen``). A change of a graph's object whose resourceVersion one of the operator's writes
returned is the operator's; a change that arrives while the operator is writing that very object
waits until the write has answered, then is judged the same way; anything else is someone else's —
a user, ``kubectl``, an autoscaler, the planner — and becomes a record, as ``sim apply --record``
makes them (``dgd.sim.trace_recorder``; both build records with ``dgd.messages.trace``):

* a graph's object that appears (or is there when recording starts): ``apply`` of its manifest;
* a change of its spec or metadata: ``patch`` (a merge patch of what changed); status changes are
  never recorded (only controllers write them);
* its deletion (``deletionTimestamp`` set, or gone): ``delete``, unless its owner was going.

The graph's objects are DynamoGraphDeployments, and the scaling adapters and DynamoCheckpoints that
no controller owns (the operator's own adapters and automatic checkpoints come back by themselves
in a replay; a write to an adapter's scale is recorded as a patch of its replicas). Everything the
real controllers do (Grove, the DCD controller, kubelets) is left to the replay's simulated world.

The trace is written when the daemon stops gracefully: its header carries the operator configuration
and the default world, times count from the start of the recording, and it ends with one ``expect``
per DGD of the state it ended in — met by the replay at the same time or up to ``SETTLE`` seconds
later, since the simulated world's delays are not the real cluster's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from dgd.cluster import merge_patch
from dgd.cluster.resources import CHECKPOINT, DGD, DGDSA
from dgd.daemon.rest_client import Target
from dgd.messages.base import JSONObject
from dgd.messages.config import OperatorConfig
from dgd.messages.meta import controller_of, identity
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
    write_trace,
)

#: The kinds users make: the only ones recorded.
RECORDED = frozenset(str(kind) for kind in (DGD, DGDSA, CHECKPOINT))
#: Seconds after the recording's end by which a replay must reach each DGD's recorded state.
SETTLE = 300.0


def _plain(obj: Any) -> JSONObject:
    """A cached object (a Struct or raw JSON) as the JSON the API server serves."""
    out: JSONObject = obj if isinstance(obj, dict) else msgspec.to_builtins(obj)
    return out


def _ref(obj: JSONObject) -> ObjectRef:
    """The trace's reference to ``obj`` (every recorded kind is namespaced)."""
    metadata = obj["metadata"]
    return ObjectRef(
        str(obj["apiVersion"]), str(obj["kind"]), str(metadata["name"]), metadata.get("namespace")
    )


def _controller(obj: JSONObject) -> str | None:
    owner = controller_of(obj)
    return owner.uid if owner is not None else None


class DaemonRecorder:
    """Records users' changes while the daemon runs (see the module); ``clock`` gives seconds."""

    def __init__(self, path: Path, *, config: OperatorConfig, clock: Callable[[], float]) -> None:
        self.path = path
        self._clock = clock
        self._start = clock()
        self._header = Header(
            version=VERSION,
            seed=0,
            settings={},
            config=msgspec.to_builtins(config),
            description="recorded by dgd-operator run",
        )
        self._records: list[Record] = []
        self._seen: dict[Target, JSONObject] = {}  # every recorded kind's object as last heard
        self._ours: dict[Target, set[str]] = {}  # the versions the operator's writes answered with
        self._writing: Counter[Target] = Counter()
        self._held: dict[Target, list[tuple[float, Target, str, JSONObject]]] = {}
        self._deleting: dict[str, bool] = {}  # uid -> whether it is being deleted

    # The operator's own writes (WriteObserver).

    def writing(self, target: Target) -> None:
        if target[0] in RECORDED:
            self._writing[target] += 1

    def written(self, target: Target, result: object | None) -> None:
        if target[0] not in RECORDED:
            return
        version = _version_of(result)
        if version:
            self._ours.setdefault(target, set()).add(version)
        self._writing[target] -= 1
        if self._writing[target] <= 0:
            del self._writing[target]
            for held in self._held.pop(target, []):
                self._judge(*held)

    # What the informers bring (Cache listener).

    def hear(self, rid: str, event_type: str, old: Any, new: Any) -> None:
        if rid not in RECORDED:
            return
        latest = _plain(new if new is not None else old)
        if event_type == "DELETED" or new is None:
            event_type = "DELETED"
        metadata = latest.get("metadata") or {}
        target: Target = (rid, metadata.get("namespace"), str(metadata.get("name") or ""))
        heard = (self._elapsed(), target, event_type, latest)
        if target in self._writing:
            self._held.setdefault(target, []).append(heard)
        else:
            self._judge(*heard)

    def _judge(self, at: float, target: Target, event_type: str, latest: JSONObject) -> None:
        metadata = latest["metadata"]
        gone = event_type == "DELETED"
        before = self._seen.pop(target, None) if gone else self._seen.get(target)
        if not gone:
            self._seen[target] = latest
        uid = str(metadata.get("uid"))
        was_deleting = self._deleting.pop(uid, False) if gone else self._deleting.get(uid, False)
        deleting = gone or bool(metadata.get("deletionTimestamp"))
        if not gone:
            self._deleting[uid] = deleting
        if self._by_operator(target, identity(latest)[2]):
            return
        record = self._record(at, latest, before, gone, deleting and not was_deleting)
        # An adapter or checkpoint a controller owns comes and goes with its owner in a replay too; a
        # change of its spec (an autoscaler's scale write) is someone's doing.
        owned = target[0] != str(DGD) and _controller(latest) is not None
        if record is not None and not (owned and not isinstance(record, Patch)):
            self._records.append(record)

    def _by_operator(self, target: Target, version: str) -> bool:
        """Whether ``version`` of ``target`` is one the operator wrote; forgets the versions it
        wrote up to it (a later version was heard: their events will not come)."""
        versions = self._ours.get(target)
        if not versions:
            return False
        ours = version in versions
        if version.isdigit():
            versions -= {v for v in versions if v.isdigit() and int(v) <= int(version)}
        else:
            versions.discard(version)
        if not versions:
            del self._ours[target]
        return ours

    def _record(
        self, at: float, obj: JSONObject, before: JSONObject | None, gone: bool, deleted_now: bool
    ) -> Record | None:
        if deleted_now:
            owner = _controller(obj)
            collected = owner is not None and self._deleting.get(owner, True)
            return None if collected else Delete(at=at, target=_ref(obj))
        if gone:
            return None
        if before is None:
            return Apply(at=at, object=manifest_of(obj))
        patch = merge_patch.diff(manifest_of(before), manifest_of(obj))
        return Patch(at=at, target=_ref(obj), patch=patch) if patch else None

    def _elapsed(self) -> float:
        return round(self._clock() - self._start, 6)

    # The trace.

    def trace(self) -> Trace:
        """The recording so far, ending with each DGD's state now (see the module)."""
        end = self._elapsed()
        graphs = sorted((t for t in self._seen if t[0] == str(DGD)), key=lambda t: (t[1] or "", t[2]))
        dgds = [self._seen[target] for target in graphs]
        finals = final_expectations(dgds, end, by=end + SETTLE)
        records = sorted(self._records, key=lambda record: record.at)
        return Trace(self._header, (*records, *finals))

    def save(self) -> None:
        """Write the trace to ``path``."""
        self.path.write_bytes(write_trace(self.trace()))


def _version_of(result: object | None) -> str:
    """The resourceVersion a write answered with (an object, raw or a Struct, or a Scale)."""
    if result is None:
        return ""
    if isinstance(result, dict):
        return identity(result)[2]
    metadata = getattr(result, "metadata", None)
    return str(getattr(metadata, "resource_version", None) or "")
