"""The example traces (``examples/traces``), replayed as ``dgd-operator sim replay`` replays them.

Each passes its own expectations with every invariant holding; the same trace and seed give the
same report, byte for byte; what a replay records replays to the same final statuses; and the
command's exit codes and files say the same things.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from dgd.cli import main
from dgd.messages.trace import Trace, write_trace
from dgd.sim.replay import run_replay
from dgd.sim.report import encode_report
from dgd.sim.trace_io import read_trace

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "examples" / "traces").glob("*.jsonl"))
NAMES = [path.stem for path in TRACES]


def test_there_are_the_six_example_traces_the_format_promises() -> None:
    assert {"rollout", "scale-storm", "checkpoint", "restart", "capacity", "chaos"} <= set(NAMES)


@pytest.mark.parametrize("path", TRACES, ids=NAMES)
def test_an_example_trace_passes_its_expectations_and_replays_byte_identically(path: Path) -> None:
    # given an example trace
    trace = read_trace(path.read_bytes())

    # when it is replayed twice with the same seed
    first = run_replay(trace)
    second = run_replay(trace)

    # then every expectation held and every invariant too
    assert first.failures == []
    assert first.expectations and all(e.ok for e in first.expectations)
    assert [r.name for r in first.invariants if r.ok] == [r.name for r in first.invariants]
    # and the two reports are the same bytes
    assert encode_report(first) == encode_report(second)


def test_another_seed_gives_another_run_of_the_same_story() -> None:
    trace = read_trace((ROOT / "examples" / "traces" / "rollout.jsonl").read_bytes())
    default, other = run_replay(trace), run_replay(trace, seed=99)
    assert other.ok and other.seed == 99
    assert encode_report(default) != encode_report(other)


@pytest.mark.parametrize("name", ["scale-storm", "chaos", "checkpoint"])
def test_a_recorded_replay_replays_to_the_same_final_statuses(name: str, tmp_path: Path) -> None:
    # given a replay that records what happened
    recording = tmp_path / "recorded.jsonl"
    original = run_replay(
        read_trace((ROOT / "examples" / "traces" / f"{name}.jsonl").read_bytes()), record=recording
    )

    # when the recording is replayed
    recorded = read_trace(recording.read_bytes())
    again = run_replay(recorded)

    # then every DGD ends with the same status, and the recording's own final expectations hold
    assert [(d.name, d.status) for d in again.dgds] == [(d.name, d.status) for d in original.dgds]
    assert again.ok and [e.name for e in again.expectations] == [
        f"{d.namespace}/{d.name} ends {d.status['state']}" for d in original.dgds
    ]


def test_sim_replay_prints_the_summary_and_writes_report_timeline_and_timings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # when the chaos example is replayed from the command line, with every output asked for
    out = {name: tmp_path / name for name in ("report.json", "timeline.svg", "timings.json")}
    code = main(
        [
            "sim", "replay", str(ROOT / "examples" / "traces" / "chaos.jsonl"),
            "--report", str(out["report.json"]), "--timeline", str(out["timeline.svg"]),
            "--timings", str(out["timings.json"]),
        ]
    )  # fmt: skip

    # then it exits 0 with the summary on stdout and the wall time on stderr only
    captured = capsys.readouterr()
    assert code == 0
    assert "OK: every expectation held and no invariant broke" in captured.out
    assert "the Grove graph converges after the faults" in captured.out
    assert "of wall time" in captured.err and "wall" not in out["report.json"].read_text()
    # and the files say the same
    report = json.loads(out["report.json"].read_text())
    assert [r["name"] for r in report["invariants"] if not r["ok"]] == []
    assert report["counts"]["actor_restarts"] and report["virtual_time"] == 400.0
    svg = out["timeline.svg"].read_text()
    assert svg.startswith("<svg") and svg.count('stroke-dasharray="4 3"/>') >= 12
    timings = json.loads(out["timings.json"].read_text())
    assert timings["virtual_seconds"] == 400.0 and timings["wall_seconds"] > 0


def test_sim_replay_exits_1_naming_the_failed_expectation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given the capacity example, expecting the graph up before the cluster grows
    example = read_trace((ROOT / "examples" / "traces" / "capacity.jsonl").read_bytes())
    records = list(example.records)
    records[3] = msgspec.structs.replace(records[3], at=100.0, by=200.0)
    trace = tmp_path / "impatient.jsonl"
    trace.write_bytes(write_trace(Trace(example.header, tuple(records))))

    # when it is replayed, then it fails and says which expectation and what was seen
    assert main(["sim", "replay", str(trace)]) == 1
    err = capsys.readouterr().err
    assert (
        "expectation failed (line 5, 'the graph comes up once there is room'): DynamoGraphDeployment "
        "default/short: expected state successful by t=200s; state pending" in err
    )


def test_sim_replay_exits_2_for_a_trace_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "future.jsonl"
    trace.write_text('{"kind": "trace", "version": 2}\n')
    assert main(["sim", "replay", str(trace)]) == 2
    assert "line 1: this trace is format version 2, from a newer release" in capsys.readouterr().err
    assert main(["sim", "replay", str(tmp_path / "missing.jsonl")]) == 2


def test_sim_apply_records_a_trace_that_replays_to_the_same_final_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given the aggregated example applied on the simulated cluster, recorded
    recording = tmp_path / "apply.jsonl"
    assert (
        main(
            ["sim", "apply", str(ROOT / "examples" / "agg.yaml"), "--until-ready", "--record", str(recording)]
        )
        == 0
    )
    applied = capsys.readouterr().out

    # when the recording is replayed
    report = run_replay(read_trace(recording.read_bytes()))

    # then it ends successful, as the applied run did, with the same status
    assert report.ok and [d.status["state"] for d in report.dgds] == ["successful"]
    assert "state: successful" in applied
    assert report.virtual_time == pytest.approx(report.expectations[-1].at)
