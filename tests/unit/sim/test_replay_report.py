"""A replay's report for people: the summary table, the failures it names, and the timeline picture."""

from __future__ import annotations

from dgd.sim.invariants_judge import Violation
from dgd.sim.report import (
    Counts,
    DGDOutcome,
    ExpectationResult,
    InvariantResult,
    Report,
    StateChange,
    Step,
    decode_report,
    encode_report,
    summary,
)
from dgd.sim.timeline import render_timeline


def report(*, expectation_ok: bool = True, violations: tuple[Violation, ...] = ()) -> Report:
    return Report(
        description="demo",
        seed=4,
        virtual_time=300.0,
        dgds=[
            DGDOutcome(
                "default",
                "demo",
                2,
                {
                    "state": "successful",
                    "observedGeneration": 2,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "all_resources_are_ready"}],
                },
            )
        ],
        events=[],
        expectations=[
            ExpectationResult(
                line=4,
                name="comes up",
                target="DynamoGraphDeployment default/demo",
                check="state successful",
                at=0.0,
                by=120.0,
                ok=expectation_ok,
                met_at=31.0 if expectation_ok else None,
                observed="state successful" if expectation_ok else "state pending",
            )
        ],
        invariants=[
            InvariantResult("one-status-writer", not violations, list(violations)),
            InvariantResult("bounded-liveness", True, []),
        ],
        steps=[
            Step(0.0, 2, "apply", "created DynamoGraphDeployment default/demo"),
            Step(50.0, 3, "kill", "killed 1: /operator/router", fault=True),
        ],
        timeline=[
            StateChange(0.0, "default", "demo", "pending", "some_resources_are_not_ready"),
            StateChange(31.0, "default", "demo", "successful", "all_resources_are_ready"),
        ],
        counts=Counts(
            reconciles={"dynamographdeployment": 5},
            api_calls={"create": 3, "get": 2},
            actor_restarts={"/operator/router": 1},
            records=4,
            writes=40,
        ),
    )


def test_a_passing_report_summarises_dgds_expectations_invariants_and_counts() -> None:
    text = summary(report())
    assert text.splitlines()[0] == "demo: 300s of cluster time, seed 4"
    assert "default/demo  successful  True all_resources_are_ready  2/2" in text
    assert "comes up     4     pass    t=31s" in text
    assert "one-status-writer  holds" in text
    assert (
        "0 events, 5 reconciles, 5 API calls (create 3, get 2), 1 actor restarts, 1 faults, 40 writes" in text
    )
    assert text.endswith("OK: every expectation held and no invariant broke\n")


def test_a_failing_report_names_each_failed_expectation_and_violation() -> None:
    violation = Violation("one-status-writer", 12.5, "default/demo: status written by /operator/x")
    failed = report(expectation_ok=False, violations=(violation,))
    assert not failed.ok
    assert failed.failures == [
        "expectation failed (line 4, 'comes up'): DynamoGraphDeployment default/demo: "
        "expected state successful by t=120s; state pending",
        "invariant one-status-writer broken at t=12.5s: default/demo: status written by /operator/x",
    ]
    assert "one-status-writer  BROKEN (1)" in summary(failed)


def test_the_json_report_reads_back_equal() -> None:
    assert decode_report(encode_report(report())) == report()


def test_the_timeline_draws_a_lane_per_dgd_its_states_and_the_faults() -> None:
    svg = render_timeline(report())
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and svg.endswith("</svg>\n")
    assert ">default/demo</text>" in svg
    assert (
        svg.count('fill="#f2b134"><title>pending') == 1 and svg.count('fill="#3fa34d"><title>successful') == 1
    )
    assert "<title>t=50s kill (line 3): killed 1: /operator/router</title>" in svg
    assert render_timeline(report()) == svg
