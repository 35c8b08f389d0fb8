"""Chaos campaigns over the example DGDs: a healthy operator breaks no invariant, a broken one is caught.

The campaigns are small versions of ``dgd-operator chaos --seeds 200`` (``bench/README.md``): graphs
drawn from ``examples/agg.yaml`` and the upstream vLLM ``agg.yaml`` and ``disagg.yaml``, on both
pathways, applied, rolled out and scaled under each fault plan, every invariant checked after every
step. The broken builds: one emits a DGD's status-transition events *before* writing its status, which
the campaign must name and shrink to a trace of a few records that ``dgd-operator sim replay`` fails
on again; another deletes, whenever a DGD's shared-resources child restarts, the ServiceAccount that
child created, which only a crash shows.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import msgspec
import pytest

from dgd.actors.dgd.actor import DGDActor
from dgd.actors.dgd.children import rollout
from dgd.actors.dgd.children.shared_resources import SharedResources
from dgd.cli import main
from dgd.cluster.errors import NotFound
from dgd.cluster.resources import SERVICE_ACCOUNT
from dgd.messages.trace import ApiFault, Kill, Poison, StaleReads, WatchDrop, WatchExpire
from dgd.sim.chaos import Campaign, encode_campaign, run_campaign, summary
from dgd.sim.chaos_plans import POISONED
from dgd.sim.chaos_workload import Example, examples_in
from dgd.sim.trace_io import read_trace
from tests.planted_bugs import annotations_trusted, events_before_status
from tests.upstream import DYNAMO, ROOT

FILES = (
    ROOT / "examples" / "agg.yaml",
    DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "agg.yaml",
    DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "disagg.yaml",
)
EXAMPLES: tuple[Example, ...] = tuple(e for path in FILES for e in examples_in(path.read_text(), path.name))
FAULTS = (Kill, ApiFault, Poison, WatchDrop, WatchExpire, StaleReads)


def test_a_small_mixed_campaign_over_the_examples_breaks_no_invariant(tmp_path: Path) -> None:
    # given twenty seeds of two graphs each under the unobserved-state, stale-state and random plans,
    # and two more seeds with the writer killed right after each of their distinct write points
    mixed = Campaign(EXAMPLES, seeds=20, dgds=2, plans=("unobserved-state", "stale-state", "random"))
    crashes = Campaign(EXAMPLES, seeds=2, first_seed=20, dgds=2, plans=("crash-after-write",))

    # when both campaigns run
    reports = [run_campaign(c, shrink_to=lambda name: tmp_path / f"{name}.jsonl") for c in (mixed, crashes)]

    # then no schedule broke an invariant, and nothing was shrunk
    assert [r.failures for r in reports] == [[], []]
    assert [r.shrunk for r in reports] == [[], []]
    assert not any(tmp_path.iterdir())
    # and every kind of fault was injected, in every plan, after a fault-free run of each seed
    mixed_report, crash_report = reports
    assert mixed_report.by_plan == {"none": 20, "unobserved-state": 20, "stale-state": 20, "random": 20}
    assert set(mixed_report.faults) == {"kill", "api_fault", "watch_drop", "watch_expire", "stale_reads"}
    # and each crash-after-write schedule killed the writer at a distinct write point of its seed
    assert crash_report.by_plan["crash-after-write"] == crash_report.faults["crash_after_write"] >= 20
    assert crash_report.write_points >= 10


def test_poisoned_objects_and_crash_looping_graphs_leave_the_others_converging(tmp_path: Path) -> None:
    # given two seeds of two graphs each: undecodable objects of every kind the operator decodes stored
    # mid-run (poison), and the reconcile of half the graphs raising for ever (crash-loop)
    campaign = Campaign(EXAMPLES, seeds=2, dgds=2, plans=("poison", "crash-loop"))

    # when the campaign runs
    report = run_campaign(campaign, shrink_to=lambda name: tmp_path / f"{name}.jsonl")

    # then every other graph converged within the bound, nothing above the graphs' actors restarted
    # (failures-contained), and every other invariant held
    assert report.failures == []
    assert report.by_plan == {"none": 2, "poison": 2, "crash-loop": 2}
    assert report.faults["poison"] == 2 * len(POISONED) and report.faults["api_fault"] == 2


def test_the_report_is_the_same_bytes_whatever_the_number_of_jobs(tmp_path: Path) -> None:
    # given one campaign of two seeds
    campaign = Campaign(EXAMPLES, seeds=2, dgds=2, plans=("random",))

    # when it runs in this process, then in two worker processes
    alone = run_campaign(campaign, shrink_to=lambda name: tmp_path / name, jobs=1)
    shared = run_campaign(campaign, shrink_to=lambda name: tmp_path / name, jobs=2)

    # then both reports are the same bytes
    assert encode_campaign(alone) == encode_campaign(shared)
    assert alone.schedules == 4


def test_a_build_that_emits_events_before_writing_the_status_is_caught_and_shrunk_to_a_replayable_trace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given an operator whose DGD actor emits its queued events before it writes the status
    monkeypatch.setattr(DGDActor, "_persist", events_before_status)
    shrunk, report = tmp_path / "shrunk.jsonl", tmp_path / "report.json"

    # when a small campaign runs
    options = ["--seeds", "2", "--plan", "random", "--shrink-to", str(shrunk), "--report", str(report)]
    code = main(["chaos", *options, "--examples", *map(str, FILES)])

    # then it fails, naming the invariant and the shrunk trace
    assert code == 1
    err = capsys.readouterr().err
    assert "invariant events-follow-status broken" in err
    assert f"dgd-operator sim replay {shrunk}" in err
    found = msgspec.json.decode(report.read_bytes())
    assert found["violations"]["events-follow-status"] >= 1
    assert found["shrunk"][0]["invariant"] == "events-follow-status"
    # and the shrunk trace is a few records, without a fault: the bug needs none
    trace = read_trace(shrunk.read_bytes())
    assert len(trace.records) <= 4, trace.records
    assert not [r for r in trace.records if isinstance(r, FAULTS)]

    # when that trace is replayed by sim replay
    code = main(["sim", "replay", str(shrunk)])

    # then the replay fails on the same invariant
    assert code == 1
    replayed = capsys.readouterr()
    assert "invariant events-follow-status broken" in replayed.out + replayed.err


def test_a_build_that_trusts_a_dropped_worker_hash_is_caught_by_a_replace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # given an operator whose rollout trusts the worker-hash annotation over the worker DCDs (#13495)
    monkeypatch.setattr(rollout, "serving_hashes", annotations_trusted)

    # when a campaign runs a seed whose workload replaces a Component graph (seed 4: demo-agg-c0,
    # replaced without the operator's annotations while its env changes)
    campaign = Campaign(EXAMPLES, seeds=1, first_seed=4, dgds=2, plans=("random",))
    report = run_campaign(campaign, shrink_to=lambda name: tmp_path / f"{name}.jsonl")

    # then every schedule, the fault-free one first, finds two worker generations serving
    assert report.violations["one-serving-generation"] == 2
    assert report.shrunk and report.shrunk[0].invariant == "one-serving-generation"


_UNCLEAN: set[tuple[int, str]] = set()


async def _forget_on_restart(self: SharedResources) -> None:
    """The bug: a shared-resources child whose previous incarnation ended without a clean stop (it
    crashed or was killed) deletes its DGD's discovery ServiceAccount on start, as if a restart were a
    fresh start that must clean up after a half-done one. (The DGD actor stops its children cleanly
    after each reconcile and starts them again for the next, see ``dgd.actors.dgd.resting``: those
    starts follow a clean stop and keep the work.)"""
    key = (id(self.context.system), self.context.path)
    if key in _UNCLEAN:
        namespace, name = self.context.path.split("/")[3:5]
        account = SERVICE_ACCOUNT.key(namespace, f"{name}-k8s-service-discovery")
        with contextlib.suppress(NotFound):
            await self._syncer._cluster.delete(account)
    _UNCLEAN.add(key)


async def _stopped_cleanly(self: SharedResources) -> None:
    _UNCLEAN.discard((id(self.context.system), self.context.path))


def test_a_build_that_undoes_its_work_when_a_child_restarts_is_caught_by_crashes_right_after_writes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # given an operator whose restarted shared-resources child deletes the ServiceAccount it made
    _UNCLEAN.clear()
    monkeypatch.setattr(SharedResources, "on_start", _forget_on_restart)
    monkeypatch.setattr(SharedResources, "on_stop", _stopped_cleanly)

    # when a campaign of one graph crashes the writer right after each of its write points
    campaign = Campaign(EXAMPLES, seeds=1, dgds=1, plans=("crash-after-write",))
    report = run_campaign(campaign, shrink_to=lambda name: tmp_path / f"{name}.jsonl")

    # then the fault-free run broke nothing, and crashes broke child-created-once
    broken = {failure.schedule.split()[2] for failure in report.failures}
    assert broken == {"crash-after-write"}
    assert {name for name, n in report.violations.items() if n} == {"child-created-once"}
    # and the first such schedule shrank to the graph's apply, the kill and the liveness expectation
    shrunk = report.shrunk[0]
    assert (shrunk.invariant, shrunk.faults, shrunk.graphs, shrunk.records) == ("child-created-once", 1, 1, 3)
    trace = read_trace(Path(shrunk.path).read_bytes())
    assert [type(r).__name__ for r in trace.records] == ["Apply", "Kill", "Expect"]
    assert "kill right after write" in trace.header.description
    # and the report says the trace alone does not reproduce it: the DGD actor lets its children go
    # once a reconcile is done (dgd.actors.dgd.resting), so at the kill's cluster time in the trace the
    # child is no longer running; only a crash right after the write, as the campaign made, hits it
    assert not shrunk.reproduces
    assert "it needs the crash right after the write" in summary(report)
