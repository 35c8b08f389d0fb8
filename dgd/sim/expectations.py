"""What a trace's ``expect`` record checks, as a pure function of the object's JSON.

A path is JSONPath-like: ``$`` then steps, each ``.name``, ``[index]``, ``["key"]`` (for keys with
dots, such as annotations) or ``[field=value]`` (the first list item whose ``field`` is ``value``:
``$.status.conditions[type=Ready].reason``, ``$.spec.components[name=Worker].replicas``). A step
that finds nothing yields ``None``, so ``equals`` omitted (``null``) expects the field to be absent.

``state`` reads ``$.status.state``; ``condition`` finds ``$.status.conditions[type=<condition>]``
and compares its ``status`` and, if given, its ``reason``.
"""

from __future__ import annotations

import re
from typing import Any

import anyio.abc
import msgspec

from dgd.cluster.memory.store import Change, StoreKey
from dgd.messages.base import JSONObject
from dgd.messages.trace import Expect, ObjectRef
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.kinds import BY_KIND, kind_of
from dgd.sim.report import ExpectationResult

#: One parsed step: a key, a list index, or a (field, value) list selector.
Step = str | int | tuple[str, str]

_STEP = re.compile(
    r"""\.(?P<name>[A-Za-z_][\w-]*)
      | \[(?P<index>-?\d+)\]
      | \[(?P<quote>["'])(?P<key>.*?)(?P=quote)\]
      | \[(?P<field>[A-Za-z_][\w-]*)=(?P<value>[^\]]*)\]""",
    re.VERBOSE,
)


class Outcome(msgspec.Struct, frozen=True):
    """Whether an object satisfies an expectation, and what was seen (for reports)."""

    ok: bool
    observed: str


def parse_path(path: str) -> tuple[Step, ...]:
    """The steps of ``path`` (``ValueError`` saying where it stops making sense)."""
    if not path.startswith("$"):
        raise ValueError(f"a path starts with '$': {path!r}")
    steps: list[Step] = []
    position = 1
    while position < len(path):
        match = _STEP.match(path, position)
        if match is None:
            hint = 'use .name, [index], ["key"] or [field=value]'
            raise ValueError(f"cannot read {path!r} from {path[position:]!r}: {hint}")
        if match["name"] is not None:
            steps.append(match["name"])
        elif match["index"] is not None:
            steps.append(int(match["index"]))
        elif match["key"] is not None:
            steps.append(match["key"])
        else:
            steps.append((match["field"], match["value"]))
        position = match.end()
    return tuple(steps)


def lookup(obj: Any, steps: tuple[Step, ...]) -> Any:
    """The value at ``steps`` in ``obj`` (``None`` where a step finds nothing)."""
    for step in steps:
        if isinstance(step, tuple):
            field, value = step
            items = obj if isinstance(obj, list) else []
            obj = next((i for i in items if isinstance(i, dict) and str(i.get(field)) == value), None)
        elif isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and -len(obj) <= step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def describe(expect: Expect) -> str:
    """The check in words, e.g. ``state successful, condition Ready=True``."""
    parts: list[str] = []
    if expect.path is not None:
        parts.append(f"{expect.path} == {show(expect.equals)}")
    if expect.state is not None:
        parts.append(f"state {expect.state}")
    if expect.condition is not None:
        reason = f" ({expect.reason})" if expect.reason is not None else ""
        parts.append(f"condition {expect.condition}={expect.status}{reason}")
    return ", ".join(parts)


def evaluate(expect: Expect, obj: JSONObject | None) -> Outcome:
    """Whether ``obj`` (``None``: it does not exist) passes every check of ``expect``."""
    if obj is None:
        return Outcome(False, "the object does not exist")
    seen: list[str] = []
    ok = True
    if expect.path is not None:
        value = lookup(obj, parse_path(expect.path))
        ok = ok and value == expect.equals
        seen.append(f"{expect.path} is {show(value)}")
    if expect.state is not None:
        state = lookup(obj, ("status", "state"))
        ok = ok and state == expect.state
        seen.append(f"state {state if state is not None else 'unset'}")
    if expect.condition is not None:
        condition = lookup(obj, ("status", "conditions", ("type", expect.condition)))
        if not isinstance(condition, dict):
            ok = False
            seen.append(f"no condition {expect.condition}")
        else:
            status, reason = condition.get("status"), condition.get("reason")
            ok = ok and status == expect.status and (expect.reason is None or reason == expect.reason)
            message = f": {condition.get('message')}" if condition.get("message") else ""
            seen.append(f"condition {expect.condition}={status} ({reason}{message})")
    return Outcome(ok, ", ".join(seen))


def show(value: Any) -> str:
    """A JSON value as compact, deterministic text."""
    return msgspec.json.encode(value, order="deterministic").decode()


class _Open(msgspec.Struct):
    """An expectation with a ``by``, waiting to hold."""

    line: int
    expect: Expect
    key: StoreKey
    observed: str


class Expectations:
    """Decides a trace's expectations against the objects they target, as those change.

    It keeps the current JSON of every targeted object (from ``MemoryCluster.observe``, so deciding
    costs no API call and never yields). ``begin`` decides an expectation without ``by`` at once; one
    with ``by`` passes the first moment its object satisfies it, or fails at ``deadline``.
    """

    def __init__(self, sim: SimulatedCluster, expectations: list[tuple[int, Expect]]) -> None:
        self._sim = sim
        self._keys = {_store_key(expect.target) for _, expect in expectations}
        self._objects: dict[StoreKey, JSONObject] = {}
        self._open: dict[int, _Open] = {}
        self._decided: dict[int, ExpectationResult] = {}

    @property
    def results(self) -> list[ExpectationResult]:
        """Every decided expectation, in trace order."""
        return [self._decided[line] for line in sorted(self._decided)]

    async def start(self, group: anyio.abc.TaskGroup) -> None:
        """Learn the targeted objects that exist now; follow them until ``group`` is cancelled."""
        for obj in self._sim.cluster.snapshot():
            metadata = obj.get("metadata") or {}
            resource = kind_of(obj)
            if resource is not None:
                key = (str(resource), metadata.get("namespace"), str(metadata.get("name")))
                if key in self._keys:
                    self._objects[key] = obj
        self._sim.observe(group, self._hear)

    def begin(self, line: int, expect: Expect) -> None:
        """Decide ``expect`` now, or (with ``by``) open it until it holds or its deadline."""
        key = _store_key(expect.target)
        outcome = evaluate(expect, self._objects.get(key))
        if outcome.ok or expect.by is None:
            self._decide(line, expect, outcome)
        else:
            self._open[line] = _Open(line, expect, key, outcome.observed)

    def deadline(self, line: int) -> None:
        """The deadline of the expectation on ``line``: if it is still open, it failed."""
        waiting = self._open.pop(line, None)
        if waiting is not None:
            self._decide(line, waiting.expect, evaluate(waiting.expect, self._objects.get(waiting.key)))

    def _decide(self, line: int, expect: Expect, outcome: Outcome) -> None:
        self._decided[line] = ExpectationResult(
            line=line,
            name=expect.name,
            target=describe_target(expect),
            check=describe(expect),
            at=expect.at,
            by=expect.by,
            ok=outcome.ok,
            met_at=round(self._sim.elapsed(), 6) if outcome.ok else None,
            observed=outcome.observed,
        )

    def _hear(self, change: Change) -> None:
        key = change.key
        if key not in self._keys:
            return
        if change.type == "DELETED":
            self._objects.pop(key, None)
        else:
            self._objects[key] = change.obj.data
        for waiting in [w for w in self._open.values() if w.key == key]:
            outcome = evaluate(waiting.expect, self._objects.get(key))
            if outcome.ok:
                del self._open[waiting.line]
                self._decide(waiting.line, waiting.expect, outcome)


def describe_target(expect: Expect) -> str:
    target = expect.target
    return (
        f"{target.kind} {target.namespace}/{target.name}"
        if target.namespace
        else f"{target.kind} {target.name}"
    )


def _store_key(target: ObjectRef) -> StoreKey:
    resource = BY_KIND[(target.api_version, target.kind)]
    return (str(resource), target.namespace if resource.namespaced else None, target.name)
