"""``bench/split.py``: how a sampled stack is given to a part of the replay, and that the ``SIGPROF``
sampler samples the main thread where it is. No timing is asserted."""

from __future__ import annotations

import time

import pytest

from bench.split import Sampler, part_of

MEMORY, JUDGE = "memory API server", "replay: invariants, journal, expectations"
LOOP = ["bench/replay.py", "/usr/lib/python3.11/asyncio/base_events.py", "dgd/runtime/cell.py"]


@pytest.mark.parametrize(
    ("stack", "part"),
    [
        # the memory server wins wherever it is, even under the operator's reconcile
        (
            [*LOOP, "dgd/actors/dgd/actor.py", "dgd/cluster/memory/server.py", "dgd/cluster/memory/store.py"],
            MEMORY,
        ),
        # a world model, and the runtime serving one of its actors, are the world's
        ([*LOOP, "dgd/sim/world/grove.py"], "simulated world"),
        ([*LOOP, "dgd/sim/world/controller.py", "dgd/runtime/ref.py"], "simulated world"),
        # the runtime serving the operator's actors is the runtime's; the operator's own frames are its
        ([*LOOP, "dgd/runtime/mailbox.py"], "actor runtime"),
        ([*LOOP, "dgd/actors/dgd/actor.py", "dgd/domain/render/pcs.py"], "operator"),
        ([*LOOP, "dgd/actors/dgd/actor.py", "dgd/runtime/ref.py"], "actor runtime"),
        # judging the replay, the rest of the simulation, and no project frame at all
        (["bench/replay.py", "dgd/sim/replay.py", "dgd/sim/invariants_judge.py"], JUDGE),
        (["bench/replay.py", "dgd/sim/replay.py", "dgd/sim/clock.py"], "simulation, other (clock, cluster)"),
        (["bench/replay.py", "/usr/lib/python3.11/selectors.py"], "outside dgd (the event loop)"),
    ],
)  # fmt: skip
def test_a_stack_is_given_to_the_part_of_its_innermost_project_frame(stack: list[str], part: str) -> None:
    assert part_of(stack) == part


def test_the_sampler_samples_the_main_thread_where_it_spins() -> None:
    # given a sampler on the main thread (this test's), spinning in this file for 0.2 s of CPU
    with Sampler(interval=0.001) as sampler:
        deadline = time.process_time() + 0.2
        while time.process_time() < deadline:
            pass

    # then it took samples, all outside the project (this file is under tests/), and stopped its timer
    assert sum(sampler.parts.values()) > 0
    assert set(sampler.parts) == {"outside dgd (the event loop)"}
    before = sum(sampler.parts.values())
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    assert sum(sampler.parts.values()) == before
