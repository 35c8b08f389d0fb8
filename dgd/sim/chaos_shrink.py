"""Shrinking a failing schedule: delta debugging (Zeller's ddmin) over its faults, then its actions.

``ddmin(items, fails)`` finds a 1-minimal sublist of ``items`` that still ``fails``: removing any one
more item makes the failure go away. It tries halves, then complements, then finer splits, and
remembers every answer, so a subset is never replayed twice. ``fails`` must be deterministic (a
replay is, from its seed) and is assumed true of ``items`` itself.

``shrink`` applies it to a schedule in the order that cuts most replay time first:

1. the faults (a bug that needs none ends with none);
2. whole graphs (a graph's apply, edits and expectations go together; faults aimed at its actors
   or objects go with it);
3. the remaining edits and expectations, one record at a time.

What is left reproduces the same violation from the same seed, with few records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from msgspec import structs

from dgd.messages.trace import Apply, Patch
from dgd.sim.chaos_schedule import CrashAfterWrite, Fault, Schedule
from dgd.sim.chaos_workload import Graph

T = TypeVar("T")


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """A 1-minimal sublist of ``items`` (in their order) for which ``fails`` holds (see the module)."""
    answers: dict[tuple[int, ...], bool] = {}

    def test(indexes: list[int]) -> bool:
        key = tuple(indexes)
        if key not in answers:
            answers[key] = fails([items[i] for i in indexes])
        return answers[key]

    current = list(range(len(items)))
    if current and test([]):
        return []
    granularity = 2
    while len(current) >= 2:
        chunks = _split(current, granularity)
        reduced = next((chunk for chunk in chunks if test(chunk)), None)
        if reduced is not None:
            current, granularity = reduced, 2
            continue
        complement = next(
            (rest for chunk in chunks if (rest := [i for i in current if i not in chunk]) and test(rest)),
            None,
        )
        if complement is not None:
            current, granularity = complement, max(granularity - 1, 2)
            continue
        if granularity >= len(current):
            break
        granularity = min(len(current), granularity * 2)
    if len(current) == 1 and test([]):
        current = []
    return [items[i] for i in current]


def _split(indexes: list[int], parts: int) -> list[list[int]]:
    """``indexes`` cut into ``parts`` contiguous chunks of nearly equal size."""
    size, extra = divmod(len(indexes), parts)
    chunks: list[list[int]] = []
    start = 0
    for part in range(parts):
        end = start + size + (1 if part < extra else 0)
        if end > start:
            chunks.append(indexes[start:end])
        start = end
    return chunks


def shrink(schedule: Schedule, fails: Callable[[Schedule], bool]) -> Schedule:
    """A smaller ``schedule`` that still ``fails`` (see the module); ``fails(schedule)`` is assumed."""
    # The faults first: each one dropped saves the most.
    faults = ddmin(schedule.faults, lambda kept: fails(structs.replace(schedule, faults=tuple(kept))))
    schedule = structs.replace(schedule, faults=tuple(faults))
    # Then whole graphs, with everything aimed at them.
    graphs = ddmin(schedule.graphs, lambda kept: fails(_only(schedule, kept)))
    schedule = _only(schedule, graphs)
    # Then the edits one by one (the applies of the graphs left stay).
    applies = [a for a in schedule.actions if isinstance(a, Apply)]
    edits = ddmin(
        [a for a in schedule.actions if not isinstance(a, Apply)],
        lambda kept: fails(structs.replace(schedule, actions=_in_order(applies, kept))),
    )
    schedule = structs.replace(schedule, actions=_in_order(applies, edits))
    # With no fault left, the liveness expectations may not be needed either.
    if not schedule.faults and fails(without := structs.replace(schedule, liveness=False)):
        schedule = without
    return schedule


def _only(schedule: Schedule, graphs: Sequence[Graph]) -> Schedule:
    """``schedule`` with only ``graphs``: their actions, and the faults not aimed at the others."""
    kept = {graph.ref.name for graph in graphs}
    gone = [graph.ref.name for graph in schedule.graphs if graph.ref.name not in kept]
    return structs.replace(
        schedule,
        graphs=tuple(graphs),
        actions=tuple(a for a in schedule.actions if not any(concerns(a, name) for name in gone)),
        faults=tuple(f for f in schedule.faults if not any(concerns(f, name) for name in gone)),
    )


def concerns(record: Apply | Patch | Fault, graph: str) -> bool:
    """Whether ``record`` acts on the graph named ``graph``: its manifest, the graph or one of its
    adapters as the target, or one of its actors as the victim."""
    if isinstance(record, Apply):
        return bool(record.object["metadata"]["name"] == graph)
    if isinstance(record, Patch):
        return record.target.name == graph or record.target.name.startswith(f"{graph}-")
    path = record.point.actor if isinstance(record, CrashAfterWrite) else getattr(record, "path", None)
    if path is None:
        return False
    parts = path.split("/")
    return len(parts) >= 5 and (
        parts[4] == graph or (parts[2] == "adapters" and parts[4].startswith(f"{graph}-"))
    )


def _in_order(applies: Sequence[Apply], edits: Sequence[Apply | Patch]) -> tuple[Apply | Patch, ...]:
    return tuple(sorted([*applies, *edits], key=lambda action: action.at))
