"""The judge of the operator's invariants (``invariants``): each change, in turn, against what came before.

A ``Judge`` is given every change the API server stored, as heard (``Heard``: the change, the object
as stored, the actor that made it, the cluster time), one at a time, oldest first. It keeps what it
knows of the cluster as of the last change it judged — each DGD, its highest ``observedGeneration``
and its stability, the workloads each object controls, the incarnations of each DGD's children, the
scaling adapters, the last status write and the transition events matched to it — and appends each
invariant a change breaks to ``violations``. Bounded liveness and contained failures are judged at
the end of a run (``liveness``, ``contained``). It reads no clock: every time is given to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from dgd.actors.tree import ADAPTERS, DGDS
from dgd.cluster.memory.store import Change, StoreKey
from dgd.cluster.resources import DCD, DGD, DGDSA, EVENT, PCLQ, PCS, PCSG
from dgd.messages.base import JSONObject
from dgd.sim.invariants_generations import several_generations
from dgd.sim.kinds import kind_of

#: The operator's supervisor and the actors directly under it: no failure of an object's reconcile
#: (however often, for however many objects) may restart them.
OPERATOR_CORE = (
    "/operator",
    "/operator/dgds",
    "/operator/adapters",
    "/operator/router",
    "/operator/informers",
)

#: DGD states a DGD may rest in.
STABLE_STATES = ("successful", "failed")


def _rolling(phase: str) -> Callable[[JSONObject], bool]:
    return lambda status: (status.get("rollingUpdate") or {}).get("phase") == phase


def _topology(reason: str) -> Callable[[JSONObject], bool]:
    def carries(status: JSONObject) -> bool:
        condition = _condition(status, "TopologyLevelsAvailable") or {}
        return condition.get("status") == "False" and condition.get("reason") == reason

    return carries


#: Status-transition events, and what the persisted status must carry when each is recorded.
TRANSITIONS: dict[str, Callable[[JSONObject], bool]] = {
    "RollingUpdateStarted": _rolling("Pending"),
    "RollingUpdateCompleted": _rolling("Completed"),
    "RollingUpdateFailed": _rolling("Failed"),
    "RestartSuperseded": lambda status: (status.get("restart") or {}).get("phase") == "Superseded",
    "TopologyLevelsUnavailable": _topology("TopologyLevelsUnavailable"),
    "TopologyDefinitionNotFound": _topology("TopologyDefinitionNotFound"),
}

_DGD, _DGDSA, _EVENT = str(DGD), str(DGDSA), str(EVENT)
_DCD = str(DCD)
#: The workloads readiness is read from, and what holds them (a PCS, a scaling group, a DCD).
_WORKLOADS = (str(PCS), _DCD, str(PCLQ), str(PCSG))


class Violation(msgspec.Struct, frozen=True):
    """One broken invariant: which, when (cluster seconds since the start), and what happened."""

    invariant: str
    at: float
    detail: str


class Heard(msgspec.Struct):
    """One change as heard: what the judge judges."""

    change: Change
    #: The object as stored, taken while the store still holds it decoded (judged later, it would
    #: have to be decoded again from its bytes).
    obj: JSONObject
    writer: str | None
    at: float


class _Created(msgspec.Struct):
    """One incarnation of a DGD's child: the DGD's generation then, and who asked for its deletion."""

    generation: int
    deleted_by: str | None = None
    deleting: bool = False


class _Stability(msgspec.Struct):
    """Where a DGD stands for liveness: its state now, and since when it has been stable."""

    state: str
    stable_since: float | None


class Judge:
    """Judges the changes it is given, in the order given (see the module)."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        # What the judge knows, as of the last change it judged.
        self._dgds: dict[str, JSONObject] = {}  # by uid
        self._highest: dict[str, int] = {}  # observedGeneration, by DGD uid
        self._workloads: dict[str, dict[StoreKey, JSONObject]] = {}  # by controller uid
        self._created: dict[tuple[StoreKey, str], _Created] = {}  # by (key, DGD uid)
        self._adapters: dict[tuple[str, str, str], str] = {}  # (ns, dgd, component) -> adapter
        self._status_rv: dict[str, int] = {}  # the last status change, by DGD uid
        self._emitted: dict[tuple[str, str], int] = {}  # (DGD uid, reason) -> status rv it matched
        self._stability: dict[tuple[str, str], _Stability] = {}  # by (ns, name)

    # -- the interface ---------------------------------------------------------------------------

    def learn(self, obj: JSONObject, at: float) -> None:
        """Take an object that existed before listening began (seen at ``at``) as the starting point."""
        plural = _plural(obj)
        metadata = obj.get("metadata") or {}
        key: StoreKey = (plural, metadata.get("namespace"), str(metadata.get("name")))
        if plural == _DGD:
            self._dgd_seen(obj, at)
        elif plural == _DGDSA:
            self._adapter(obj, present=True)
        controller = _controller(obj)
        if controller is not None and plural in _WORKLOADS:
            self._workloads.setdefault(controller, {})[key] = obj
        owner = _controller(obj, "DynamoGraphDeployment")
        if owner is not None:
            self._created[(key, owner)] = _Created(self._generation_of(owner))

    def judge(self, item: Heard) -> None:
        """Judge one change, the next in resourceVersion order."""
        change, obj, writer, at = item.change, item.obj, item.writer, item.at
        plural = change.key[0]
        if plural == _DGD:
            self._judge_dgd(change, obj, writer, at)
        elif plural == _EVENT and change.type == "ADDED":
            self._judge_event(obj, change.rv, at)
        elif plural == _DGDSA:
            self._adapter(obj, present=change.type != "DELETED")
        controller = _controller(obj)
        if controller is not None and plural in _WORKLOADS:
            held = self._workloads.setdefault(controller, {})
            if change.type == "DELETED":
                held.pop(change.key, None)
            else:
                held[change.key] = obj
        owner = _controller(obj, "DynamoGraphDeployment")
        if owner is not None:
            self._judge_child(change, obj, owner, writer, at)

    def liveness(self, now: float, since: float, bound: float, excused: frozenset[str]) -> None:
        """Every DGD known at ``now`` is stable, and has been since ``since + bound`` at the latest
        (see ``Invariants.liveness``); ``excused``: the names of DGDs not judged."""
        deadline = since + bound
        for (namespace, name), where in sorted(self._stability.items()):
            if name in excused:
                continue
            if where.stable_since is None:
                detail = (
                    f"{namespace}/{name} is {where.state}, not stable, {now - since:g}s after the last fault "
                    f"(bound {bound:g}s)"
                )
                self._violate("bounded-liveness", min(now, deadline), detail)
            elif where.stable_since > deadline + 1e-9:
                detail = (
                    f"{namespace}/{name} became stable ({where.state}) only {where.stable_since - since:g}s "
                    f"after the last fault (bound {bound:g}s)"
                )
                self._violate("bounded-liveness", deadline, detail)

    def contained(self, restarts: Mapping[str, int], *, killed: bool, now: float) -> None:
        """No actor of ``OPERATOR_CORE`` was restarted (``restarts``: by path; judged at ``now``),
        unless the trace kills actors on purpose (``killed``)."""
        if killed:
            return
        for path in OPERATOR_CORE:
            if restarts.get(path):
                detail = f"{path} was restarted {restarts[path]} time(s) though no fault killed an actor"
                self._violate("failures-contained", now, detail)

    # -- judging ---------------------------------------------------------------------------------

    def _judge_dgd(self, change: Change, obj: JSONObject, writer: str | None, at: float) -> None:
        prev = change.prev.data if change.prev is not None else None
        metadata = obj["metadata"]
        namespace, name, uid = metadata.get("namespace"), metadata.get("name"), change.obj.uid
        where = f"{namespace}/{name}"
        if change.type == "DELETED":
            self._dgds.pop(uid, None)
            self._stability.pop((str(namespace), str(name)), None)
            return
        status, before = obj.get("status") or {}, (prev or {}).get("status") or {}
        if prev is not None and status != before:
            self._status_rv[uid] = change.rv
            if writer is not None and writer != f"{DGDS}/{namespace}/{name}":
                self._violate("one-status-writer", at, f"{where}: status written by {writer}")
            if writer is not None and (_condition(status, "Ready") or {}).get("status") == "True":
                self._judge_ready(obj, uid, at)
            if writer is not None and (
                broken := several_generations(obj, self._workloads.get(uid, {}).values())
            ):
                self._violate("one-serving-generation", at, broken)
        if prev is not None and writer is not None:
            self._judge_replicas(obj, prev, writer, at)
        self._dgd_seen(obj, at)

    def _dgd_seen(self, obj: JSONObject, at: float) -> None:
        """Record the DGD's latest state: observedGeneration (judged monotonic) and stability."""
        metadata, status = obj["metadata"], obj.get("status") or {}
        uid, where = str(metadata.get("uid")), f"{metadata.get('namespace')}/{metadata.get('name')}"
        self._dgds[uid] = obj
        observed = status.get("observedGeneration")
        if isinstance(observed, int):
            highest = self._highest.get(uid, observed)
            if observed < highest:
                detail = f"{where}: observedGeneration went from {highest} to {observed}"
                self._violate("observed-generation-monotonic", at, detail)
            self._highest[uid] = max(highest, observed)
        state = str(status.get("state") or "initializing")
        stable = (
            state in STABLE_STATES
            and observed == metadata.get("generation")
            and not metadata.get("deletionTimestamp")
        )
        key = (str(metadata.get("namespace")), str(metadata.get("name")))
        previous = self._stability.get(key)
        since = None
        if stable:
            since = (
                previous.stable_since if previous is not None and previous.stable_since is not None else at
            )
        self._stability[key] = _Stability("deleting" if metadata.get("deletionTimestamp") else state, since)

    def _judge_ready(self, obj: JSONObject, uid: str, at: float) -> None:
        metadata, status = obj["metadata"], obj.get("status") or {}
        where = f"{metadata.get('namespace')}/{metadata.get('name')}"
        generation, observed = metadata.get("generation"), status.get("observedGeneration")
        if observed != generation:
            detail = (
                f"{where}: Ready=True written with observedGeneration {observed} of generation {generation}"
            )
            self._violate("ready-means-current", at, detail)
        for child in self._readiness_sources(uid):
            child_meta = child.get("metadata") or {}
            seen = (child.get("status") or {}).get("observedGeneration")
            if seen != child_meta.get("generation"):
                detail = (
                    f"{where}: Ready=True written while {child.get('kind')} {child_meta.get('namespace')}/"
                    f"{child_meta.get('name')} reports observedGeneration {seen} of generation "
                    f"{child_meta.get('generation')}"
                )
                self._violate("ready-means-current", at, detail)

    def _readiness_sources(self, uid: str) -> list[JSONObject]:
        """The live workloads a DGD's readiness is read from (see the module), in key order."""
        found: list[JSONObject] = []
        pending = [uid]
        while pending:
            holder = pending.pop(0)
            for (plural, _, _), child in sorted(self._workloads.get(holder, {}).items(), key=_by_key):
                if (child.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                found.append(child)
                if plural != _DCD:
                    pending.append(str(child["metadata"].get("uid")))
        return found

    def _judge_replicas(self, obj: JSONObject, prev: JSONObject, writer: str, at: float) -> None:
        metadata = obj["metadata"]
        namespace, name = str(metadata.get("namespace")), str(metadata.get("name"))
        now, before = _replicas(obj), _replicas(prev)
        for component in sorted(set(now) | set(before)):
            if now.get(component) == before.get(component):
                continue
            adapter = self._adapters.get((namespace, name, component))
            if adapter is not None and writer != f"{ADAPTERS}/{namespace}/{adapter}":
                detail = (
                    f"{namespace}/{name}: {writer} changed the replicas of {component} "
                    f"({before.get(component)} -> {now.get(component)}), which adapter {adapter} owns"
                )
                self._violate("one-replicas-owner", at, detail)

    def _judge_event(self, event: JSONObject, rv: int, at: float) -> None:
        reason = str(event.get("reason"))
        carries = TRANSITIONS.get(reason)
        regarding = event.get("regarding") or {}
        if carries is None or regarding.get("kind") != "DynamoGraphDeployment":
            return
        uid = str(regarding.get("uid"))
        dgd = self._dgds.get(uid)
        if dgd is None:
            return
        where = f"{regarding.get('namespace')}/{regarding.get('name')}"
        status = dgd.get("status") or {}
        if not carries(status):
            detail = f"{where}: event {reason} recorded, but the persisted status does not carry it"
            self._violate("events-follow-status", at, detail)
            return
        written = self._status_rv.get(uid, 0)
        if self._emitted.get((uid, reason), -1) >= written:
            detail = f"{where}: event {reason} recorded again with no status write since the last one"
            self._violate("events-follow-status", at, detail)
        self._emitted[(uid, reason)] = written

    def _judge_child(
        self, change: Change, obj: JSONObject, owner: str, writer: str | None, at: float
    ) -> None:
        key = change.key
        metadata = obj.get("metadata") or {}
        created = self._created.get((key, owner))
        if change.type == "ADDED":
            generation = self._generation_of(owner)
            deleted_by = created.deleted_by if created is not None else None
            if (
                created is not None
                and deleted_by
                and _operator(deleted_by)
                and created.generation == generation
            ):
                detail = (
                    f"{obj.get('kind')} {key[1]}/{key[2]} created again for the same DGD generation "
                    f"{generation}, after the operator ({deleted_by}) deleted it"
                )
                self._violate("child-created-once", at, detail)
            self._created[(key, owner)] = _Created(generation)
            return
        if created is None or created.deleting:
            return
        if change.type == "DELETED" or metadata.get("deletionTimestamp"):
            created.deleting = True
            created.deleted_by = writer if writer is not None else "the trace"

    # -- plumbing --------------------------------------------------------------------------------

    def _adapter(self, adapter: JSONObject, *, present: bool) -> None:
        metadata, spec = adapter.get("metadata") or {}, adapter.get("spec") or {}
        ref = spec.get("dgdRef") or {}
        key = (str(metadata.get("namespace")), str(ref.get("name")), str(ref.get("componentName")))
        if present:
            self._adapters[key] = str(metadata.get("name"))
        elif self._adapters.get(key) == metadata.get("name"):
            del self._adapters[key]

    def _generation_of(self, uid: str) -> int:
        generation = ((self._dgds.get(uid) or {}).get("metadata") or {}).get("generation")
        return generation if isinstance(generation, int) else 0

    def _violate(self, invariant: str, at: float, detail: str) -> None:
        self.violations.append(Violation(invariant, round(at, 6), detail))


def _plural(obj: JSONObject) -> str:
    resource = kind_of(obj)
    return str(resource) if resource is not None else ""


def _controller(obj: JSONObject, kind: str | None = None) -> str | None:
    """The uid of ``obj``'s controller (if it is of ``kind``, when given)."""
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if reference.get("controller") and kind in (None, reference.get("kind")):
            return str(reference.get("uid"))
    return None


def _condition(status: JSONObject, type: str) -> JSONObject | None:
    return next((c for c in status.get("conditions") or () if c.get("type") == type), None)


def _replicas(dgd: JSONObject) -> dict[str, Any]:
    components = (dgd.get("spec") or {}).get("components") or ()
    return {str(c.get("name")): c.get("replicas") for c in components if isinstance(c, dict)}


def _operator(writer: str) -> bool:
    return writer.startswith("/operator")


def _by_key(item: tuple[StoreKey, JSONObject]) -> tuple[str, str, str]:
    plural, namespace, name = item[0]
    return (plural, namespace or "", name)
