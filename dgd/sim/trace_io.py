"""Reading and writing trace files (``docs/traces.md``): JSON Lines, a header then records.

``read_trace`` is the edge where a trace is validated, once: everything a replay would trip over
later — an unknown record kind, a bad field, a kind the simulated cluster does not serve, an
expectation that checks nothing, a trace from a newer release — is a ``TraceError`` naming its line.
Record ``i`` (0-based) is on line ``i + 2``: blank lines are allowed only at the end, and there are no
comments (say what a record is for in an expectation's ``name`` or the header's ``description``).

``read_trace(write_trace(t)) == t`` (``dgd.messages.trace.write_trace``).
"""

from __future__ import annotations

import re
from typing import Any, get_args

import msgspec

from dgd.cluster.resources import Resource
from dgd.domain.admission.config import load_config
from dgd.messages.config import ConfigError, OperatorConfig
from dgd.messages.trace import (
    VERSION,
    ApiFault,
    Apply,
    Delete,
    Expect,
    Header,
    Kill,
    ObjectRef,
    Patch,
    Poison,
    Record,
    StaleReads,
    Trace,
    WatchDrop,
    WatchExpire,
)
from dgd.sim.expectations import parse_path
from dgd.sim.kinds import BY_KIND, BY_NAME
from dgd.sim.poison import POISONABLE
from dgd.sim.world.settings import WorldSettings

#: Every record kind, in the order the format lists them.
KINDS: tuple[str, ...] = tuple(str(kind.__struct_config__.tag) for kind in get_args(Record))


_CAMEL = re.compile(r"([a-z0-9])([A-Z])")


class TraceError(ValueError):
    """A trace that cannot be replayed; ``line`` is 1-based (the header is line 1)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


def read_trace(text: str | bytes) -> Trace:
    """The trace in ``text``, validated (see the module); ``TraceError`` naming the line otherwise."""
    if isinstance(text, bytes):
        data = text
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = data[: exc.start].count(b"\n") + 1
            raise TraceError(where, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    header: Header | None = None
    records: list[Record] = []
    for number, line in enumerate(text.rstrip().splitlines(), start=1):
        if not line.strip():
            raise TraceError(number, "a blank line: JSON Lines holds one record on every line")
        raw = _object(number, line)
        if header is None:
            header = _header(number, line, raw)
        else:
            records.append(_record(number, line, raw))
    if header is None:
        raise TraceError(1, f"the trace is empty: its first line must be the header {_HEADER_EXAMPLE}")
    return Trace(header, tuple(records))


def line_of(index: int) -> int:
    """The line of the record at ``index`` (0-based) in a trace file."""
    return index + 2


def world_settings(header: Header) -> WorldSettings:
    """The world the header starts with (``ValueError`` with the field if it is not one)."""
    snake = {_CAMEL.sub(r"\1_\2", key).lower(): value for key, value in header.settings.items()}
    try:
        return msgspec.convert(snake, WorldSettings)
    except msgspec.ValidationError as exc:
        raise ValueError(f"settings: {exc}") from None


def operator_config(header: Header) -> OperatorConfig:
    """The operator configuration the header asks for (``ValueError`` naming the key if invalid)."""
    try:
        return load_config(msgspec.json.encode(header.config).decode())
    except ConfigError as exc:
        raise ValueError(f"config: {exc}") from None


def resource_of(ref: ObjectRef) -> Resource[Any]:
    """The served resource of ``ref``'s apiVersion and kind (``KeyError`` if none)."""
    return BY_KIND[(ref.api_version, ref.kind)]


# Plumbing.

_HEADER_EXAMPLE = f'{{"kind": "trace", "version": {VERSION}}}'


def _object(number: int, line: str) -> dict[str, Any]:
    try:
        raw = msgspec.json.decode(line)
    except msgspec.DecodeError as exc:
        raise TraceError(number, f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise TraceError(number, f"a line must be a JSON object, not {type(raw).__name__}")
    return raw


def _header(number: int, line: str, raw: dict[str, Any]) -> Header:
    if raw.get("kind") != "trace":
        raise TraceError(number, f"the first line must be the trace header {_HEADER_EXAMPLE}")
    version = raw.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceError(number, f"the header's version must be a positive integer, not {version!r}")
    if version > VERSION:
        raise TraceError(
            number,
            f"this trace is format version {version}, from a newer release of dgd-operator; "
            f"this release reads version {VERSION}",
        )
    try:
        header = msgspec.json.decode(line, type=Header)
    except msgspec.ValidationError as exc:
        raise TraceError(number, f"header: {exc}") from None
    try:
        world_settings(header)
        operator_config(header)
    except ValueError as exc:
        raise TraceError(number, f"header: {exc}") from None
    return header


def _record(number: int, line: str, raw: dict[str, Any]) -> Record:
    kind = raw.get("kind")
    if kind == "trace":
        raise TraceError(number, "a second header: the header is the first line only")
    if kind not in KINDS:
        what = "no record kind" if kind is None else f"unknown record kind {kind!r}"
        raise TraceError(number, f"{what}; the kinds are {', '.join(KINDS)}")
    try:
        record: Record = msgspec.json.decode(line, type=Record)
    except msgspec.ValidationError as exc:
        raise TraceError(number, f"{kind}: {exc}") from None
    problem = _problem(record)
    if problem:
        raise TraceError(number, f"{kind}: {problem}")
    return record


def _problem(record: Record) -> str | None:
    """What makes a well-formed record unreplayable (``None``: nothing)."""
    match record:
        case Apply(object=obj):
            metadata = obj.get("metadata")
            if not isinstance(metadata, dict) or not metadata.get("name"):
                return "the object needs metadata.name"
            if (str(obj.get("apiVersion")), str(obj.get("kind"))) not in BY_KIND:
                return f"the simulated cluster does not serve {obj.get('apiVersion')} {obj.get('kind')}"
        case Delete(target=target) | Patch(target=target) | Expect(target=target):
            if (target.api_version, target.kind) not in BY_KIND:
                return f"the simulated cluster does not serve {target.api_version} {target.kind}"
    match record:
        case Patch(subresource="scale", patch=patch):
            spec = patch.get("spec")
            replicas = spec.get("replicas") if isinstance(spec, dict) else None
            if set(patch) != {"spec"} or not isinstance(replicas, int) or replicas < 0:
                return 'a scale patch is {"spec": {"replicas": N}}'
        case Kill(path=path) if not path.startswith("/"):
            return f"an actor path starts with '/': {path!r}"
        case ApiFault(count=count, rate=rate, until=until, at=at):
            if count is not None and rate is not None:
                return "give count or rate, not both"
            if until is not None and until < at:
                return f"until ({until:g}) is before at ({at:g})"
        case Expect() as expect:
            return _expect_problem(expect)
        case Poison(resource=name) if BY_NAME.get(name) is None or BY_NAME[name].kind not in POISONABLE:
            return (
                f"poison is for the kinds the operator decodes: {', '.join(sorted(POISONABLE))}; not {name!r}"
            )
    match record:
        case (
            ApiFault(resource=name)
            | WatchDrop(resource=name)
            | WatchExpire(resource=name)
            | StaleReads(resource=name)
        ) if name != "*" and name not in BY_NAME:
            return f"unknown resource {name!r}; use plural.group, e.g. dynamographdeployments.nvidia.com"
    return None


def _expect_problem(expect: Expect) -> str | None:
    if expect.path is None and expect.state is None and expect.condition is None:
        return "an expectation checks something: give path (and equals), state, or condition"
    if expect.path is not None:
        try:
            parse_path(expect.path)
        except ValueError as exc:
            return str(exc)
    if expect.equals is not None and expect.path is None:
        return "equals needs a path"
    if expect.condition is None and (expect.status is not None or expect.reason is not None):
        return "status and reason belong to a condition: give condition"
    if expect.condition is not None and expect.status is None:
        return f"give the status the condition {expect.condition} should have"
    if expect.by is not None and expect.by < expect.at:
        return f"by ({expect.by:g}) is before at ({expect.at:g})"
    return None
