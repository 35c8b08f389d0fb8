"""Event traces: what happened to a cluster, as versioned JSON Lines (``docs/traces.md``).

The first line is a ``Header`` (format version, seed, world settings, operator configuration); every
other line is one record of the ``Record`` tagged union, tagged by ``kind``, with ``at``: seconds of
cluster time since the trace started. Records are replayed in order of ``at`` (ties in file order).

* user actions: ``apply`` (a whole manifest, created or replaced), ``delete``, ``patch`` (a merge patch
  of an object or of its ``status`` / ``scale`` subresource — a planner scaling an adapter);
* world events: ``pods_ready`` (the pods of one object, or all, become ready now), ``capacity`` (how
  many pods fit), ``topology`` (the topologies the scheduler knows), ``checkpoint_ready`` (a
  DynamoCheckpoint's job ends now, ``Ready`` or ``Failed``);
* faults: ``kill`` (an actor path, or a pattern with ``*``), ``api_fault`` (requests by verb and
  resource fail with an error, ``count`` times or at a ``rate``, until ``until``), ``watch_drop``,
  ``watch_expire`` (410 Gone), ``stale_reads`` (reads served ``behind`` writes late, for ``duration``);
* ``expect``: at ``at`` (or by ``by``: at the latest), a field of an object equals a value, or a DGD's
  condition or state is what is expected.

Unknown kinds and bad fields are errors naming the line (``dgd.sim.trace_io.read_trace``); a trace of a
newer version is refused. ``write_trace`` is deterministic: the same ``Trace`` gives the same bytes
(struct fields in their declared order, object keys sorted, defaults omitted). ``manifest_of`` and
``final_expectations`` build records from objects as the API server serves them, for both recorders
(the simulation's and ``run --record``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dgd.messages.base import Model

#: The trace format version this release reads and writes.
VERSION = 1

Seconds = Annotated[float, msgspec.Meta(ge=0)]
Verb = Literal["get", "list", "watch", "create", "update", "patch", "delete"]
#: The port's errors a fault may raise; ``Bug``: an exception that is no port error at all (a
#: ``RuntimeError``), as a bug in the operator would raise, to see it contained.
ErrorName = Literal[
    "Conflict", "ServerError", "Timeout", "TooManyRequests", "Forbidden", "NotFound", "Gone", "Bug"
]


class Header(Model, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="kind", tag="trace"):
    """The first line: format version, the seed of uids, names and jitter, and the starting world."""

    version: int
    seed: int = 0
    #: ``dgd.sim.WorldSettings`` fields (camelCase or snake_case as that struct decodes); empty: defaults.
    settings: dict[str, Any] = msgspec.field(default_factory=dict)
    #: An operator configuration (``dgd.messages.config.OperatorConfig``, as in a config file).
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    description: str = ""


class ObjectRef(Model, frozen=True, forbid_unknown_fields=True):
    """An object by kind (``apiVersion`` + ``kind``), namespace and name."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = "default"


class _Record(Model, frozen=True, kw_only=True, forbid_unknown_fields=True):
    at: Seconds = 0.0


# User actions.


class Apply(_Record, frozen=True, tag_field="kind", tag="apply"):
    """Create ``object`` (a full manifest), or replace the stored one."""

    object: dict[str, Any]


class Delete(_Record, frozen=True, tag_field="kind", tag="delete"):
    target: ObjectRef


class Patch(_Record, frozen=True, tag_field="kind", tag="patch"):
    """A JSON merge patch of ``target`` (or of its ``subresource``)."""

    target: ObjectRef
    patch: dict[str, Any]
    subresource: Literal["", "status", "scale"] = ""


# World events.


class PodsReady(_Record, frozen=True, tag_field="kind", tag="pods_ready"):
    """Every pending pod (of ``target``'s workload, if given) that is bound becomes ready now."""

    target: ObjectRef | None = None


class Capacity(_Record, frozen=True, tag_field="kind", tag="capacity"):
    """The cluster now fits ``pods`` pods (``None``: no limit)."""

    pods: Annotated[int, msgspec.Meta(ge=0)] | None = None


class TopologyChange(_Record, frozen=True, tag_field="kind", tag="topology"):
    """The scheduler now knows these topologies: name -> levels (empty: none)."""

    topologies: dict[str, list[str]]


class CheckpointReady(_Record, frozen=True, tag_field="kind", tag="checkpoint_ready"):
    """The job of the DynamoCheckpoint ``target`` ends now, with ``outcome``."""

    target: ObjectRef
    outcome: Literal["Ready", "Failed"] = "Ready"


# Faults.


class Kill(_Record, frozen=True, tag_field="kind", tag="kill"):
    """Kill the actor at ``path`` (``*`` matches within one path segment, ``**`` across segments)."""

    path: str


class ApiFault(_Record, frozen=True, tag_field="kind", tag="api_fault"):
    """Requests of ``verb`` on ``resource`` (``plural.group``; ``*``: any) fail with ``error``: the next
    ``count`` of them, or each with probability ``rate``, until ``until`` (seconds; ``None``: for ever)."""

    verb: Verb | Literal["*"] = "*"
    resource: str = "*"
    subresource: str | None = None
    #: Only requests about the object of this name (any: ``None``).
    name: str | None = None
    error: ErrorName = "ServerError"
    count: Annotated[int, msgspec.Meta(ge=1)] | None = None
    rate: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    until: Seconds | None = None


class Poison(_Record, frozen=True, tag_field="kind", tag="poison"):
    """An object of ``resource`` the operator's model refuses is stored as ``namespace/name`` (as a
    CRD looser than our models would admit it); the operator must go on without it."""

    resource: str
    name: str
    namespace: str = "default"


class WatchDrop(_Record, frozen=True, tag_field="kind", tag="watch_drop"):
    """Open watches (of ``resource``, or all) end now; the watchers resume."""

    resource: str = "*"


class WatchExpire(_Record, frozen=True, tag_field="kind", tag="watch_expire"):
    """Open watches (of ``resource``, or all) fail with 410 Gone now; the watchers re-list."""

    resource: str = "*"


class StaleReads(_Record, frozen=True, tag_field="kind", tag="stale_reads"):
    """Reads of ``resource`` are served ``behind`` writes late for ``duration`` seconds."""

    resource: str = "*"
    behind: Annotated[int, msgspec.Meta(ge=1)] = 1
    duration: Seconds = 10.0


# Expectations.


class Expect(_Record, frozen=True, tag_field="kind", tag="expect"):
    """At ``at`` — or, with ``by``, at some time no later than ``by`` — ``target`` satisfies every given
    check: ``path`` (``$.status.state``-style, dots and ``[index]``) equals ``equals``; its ``state``;
    its condition ``condition`` has ``status`` and (if given) ``reason``."""

    target: ObjectRef
    by: Seconds | None = None
    path: str | None = None
    equals: Any = None
    state: str | None = None
    condition: str | None = None
    status: Literal["True", "False", "Unknown"] | None = None
    reason: str | None = None
    name: str = ""  #: a label for reports


Record = (
    Apply
    | Delete
    | Patch
    | PodsReady
    | Capacity
    | TopologyChange
    | CheckpointReady
    | Kill
    | ApiFault
    | Poison
    | WatchDrop
    | WatchExpire
    | StaleReads
    | Expect
)


class Trace(msgspec.Struct, frozen=True):
    """A whole trace: its header and its records, in file order."""

    header: Header
    records: tuple[Record, ...]


_ENCODER = msgspec.json.Encoder(order="deterministic")

#: Metadata only the server writes.
_SERVER_FIELDS = (
    "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
    "deletionGracePeriodSeconds", "managedFields", "selfLink",
)  # fmt: skip


def write_trace(trace: Trace) -> bytes:
    """The trace as JSON Lines (see the module): deterministic bytes, one line per record."""
    lines = [_ENCODER.encode(trace.header), *(_ENCODER.encode(record) for record in trace.records)]
    return b"\n".join(lines) + b"\n"


def manifest_of(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a user would write it: without status and the metadata only the server writes."""
    manifest: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(obj))
    manifest.pop("status", None)
    metadata = manifest["metadata"]
    for field in _SERVER_FIELDS:
        metadata.pop(field, None)
    return manifest


def final_expectations(dgds: list[dict[str, Any]], at: float, *, by: float | None = None) -> list[Record]:
    """One ``expect`` per DGD of ``dgds`` that has a state: that state and its Ready condition, at
    ``at`` (or, with ``by``, at some time up to ``by``)."""
    finals: list[Record] = []
    for dgd in dgds:
        status, metadata = dgd.get("status") or {}, dgd["metadata"]
        if not status.get("state"):
            continue
        ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
        target = ObjectRef(dgd["apiVersion"], dgd["kind"], metadata["name"], metadata.get("namespace"))
        finals.append(
            Expect(
                at=at,
                by=by,
                target=target,
                state=status["state"],
                condition="Ready" if ready is not None else None,
                status=ready.get("status") if ready is not None else None,
                reason=ready.get("reason") if ready is not None else None,
                name=f"{metadata.get('namespace')}/{metadata['name']} ends {status['state']}",
            )
        )
    return finals
