"""Event-loop stalls in a chaos campaign: callbacks over 100 ms of wall time are listed apart from the
report, with the task and the schedule that ran them; the report stays the same bytes.

Wall time is never read here: the stall watch's clock (``time.perf_counter`` in ``chaos_stalls``) is
replaced by one that only the test moves, as if the code it runs computed for that long.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import msgspec
import pytest

from dgd.actors.dgd.children.shared_resources import EnsureShared, SharedEnsured, SharedResources
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.cli import main
from dgd.sim import chaos_stalls
from dgd.sim.chaos import Campaign, encode_campaign, run_campaign
from dgd.sim.chaos_stalls import SLOW, Stall, stalls_summary, watching_stalls
from dgd.sim.chaos_workload import examples_in

ROOT = Path(__file__).resolve().parents[2]
AGG = ROOT / "examples" / "agg.yaml"


class _Held:
    """The stall watch's clock; ``hold(seconds)`` is code that keeps the loop that long."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def hold(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> _Held:
    clock = _Held()
    monkeypatch.setattr(chaos_stalls, "time", SimpleNamespace(perf_counter=clock.perf_counter))
    return clock


def test_only_callbacks_over_the_threshold_are_listed_with_their_task_and_schedule(held: _Held) -> None:
    # given a task whose step holds the loop 0.25 s, and a callback that holds it 0.05 s
    async def reconcile() -> None:
        await asyncio.sleep(0)
        held.hold(0.25)
        await asyncio.sleep(0)

    async def loop() -> None:
        asyncio.get_running_loop().call_soon(held.hold, 0.05)
        await asyncio.create_task(reconcile(), name="/operator/dgds/default/demo")

    # when they run while a schedule is replayed
    with watching_stalls() as watch, watch.during("seed 4 random #0"):
        asyncio.run(loop())

    # then only the step over 100 ms is listed: its schedule, its task, and where that waited next
    [stall] = watch.stalls
    assert (stall.schedule, stall.seconds) == ("seed 4 random #0", 0.25)
    assert stall.what.startswith("task /operator/dgds/default/demo, then waited in ")
    assert stall.what.endswith(f".reconcile (test_stalls.py:{reconcile.__code__.co_firstlineno + 3})")


def test_the_stalls_section_shows_the_longest_first_and_says_so_when_there_are_none() -> None:
    stalls = [Stall(f"seed {n} none #0", 0.1 + n / 100, f"task t{n}") for n in range(12)]

    # then the longest ten are shown, longest first, under a heading that says it is wall time
    lines = stalls_summary(stalls).splitlines()
    assert lines[0] == (
        f"event-loop stalls (wall time: not in the report, differs from run to run), over {SLOW:g}s: 12"
    )
    assert lines[1] == "  0.210s  seed 11 none #0: task t11"
    assert lines[10] == "  0.120s  seed 2 none #0: task t2"
    assert lines[11] == "  and 2 shorter ones"
    assert stalls_summary([]).endswith("over 0.1s: none\n")


def test_a_campaign_tells_its_stalls_apart_and_its_report_stays_the_same_bytes(
    held: _Held, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    campaign = Campaign(tuple(examples_in(AGG.read_text(), "agg.yaml")), seeds=1, dgds=1, plans=("random",))

    # given the report of a campaign over one graph, run as it is
    quick = run_campaign(campaign, shrink_to=lambda name: tmp_path / name)

    # when it runs again with ensuring the shared resources slowed to 0.3 s on the loop
    ensure = SharedResources.receive

    async def slow_ensure(self: SharedResources, message: EnsureShared) -> SharedEnsured | StepFailed:
        held.hold(0.3)
        return await ensure(self, message)

    monkeypatch.setattr(SharedResources, "receive", slow_ensure)
    stalls: list[Stall] = []
    slow = run_campaign(campaign, shrink_to=lambda name: tmp_path / name, stalled=stalls.append)

    # then each of those steps is told, with the actor and the schedule that ran it
    assert stalls, "no stall told"
    assert {stall.schedule for stall in stalls} == {"seed 0 none #0", "seed 0 random #0"}
    assert all(s.seconds == 0.3 and "shared-resources" in s.what for s in stalls), stalls
    # and the report is the same, byte for byte, as without them
    assert encode_campaign(slow) == encode_campaign(quick)


def test_the_chaos_command_prints_the_stalls_apart_and_leaves_them_out_of_the_json_report(
    held: _Held, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given ensuring the shared resources holds the loop 0.3 s each time, counted
    ensure = SharedResources.receive
    held_steps: list[EnsureShared] = []

    async def slow_ensure(self: SharedResources, message: EnsureShared) -> SharedEnsured | StepFailed:
        held_steps.append(message)
        held.hold(0.3)
        return await ensure(self, message)

    monkeypatch.setattr(SharedResources, "receive", slow_ensure)
    report = tmp_path / "report.json"

    # when a one-seed campaign runs from the command line
    options = ["--seeds", "1", "--dgds", "1", "--plan", "random", "--report", str(report)]
    code = main(["chaos", *options, "--examples", str(AGG)])

    # then the summary is followed by the stalls in a section of its own: all counted, the ten
    # longest listed with their time, schedule and actor, and the rest summed up
    assert code == 0
    summary, section = capsys.readouterr().out.split("\n\n")
    assert summary.startswith("chaos: 1 seed from 0")
    assert len(held_steps) > 10
    lines = section.splitlines()
    assert lines[0] == (
        "event-loop stalls (wall time: not in the report, differs from run to run), "
        f"over 0.1s: {len(held_steps)}"
    )
    shown = lines[1:11]
    assert all(line.startswith("  0.300s  seed 0 ") and "/shared-resources, " in line for line in shown)
    assert lines[11:] == [f"  and {len(held_steps) - 10} shorter ones"]
    # and the JSON report has no trace of them
    written = msgspec.json.decode(report.read_bytes())
    assert "violations" in written
    assert "stall" not in report.read_text() and "shared-resources" not in report.read_text()
