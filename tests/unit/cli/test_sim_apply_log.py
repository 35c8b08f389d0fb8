"""``sim apply --log-level info``: the operator's log of a session, one line per write and per status
transition, in text or as JSON fields."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from dgd.cli import main

AGG = Path(__file__).resolve().parents[3] / "examples" / "agg.yaml"


@pytest.fixture(autouse=True)
def root_logger() -> Iterator[None]:
    """The root logger's handlers and level as they were before the command reconfigured them."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_at_info_the_log_says_what_was_written_and_why_as_json_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # when the example is applied with the operator's log at info, as JSON
    code = main(["sim", "apply", str(AGG), "--until-ready", "--log-level", "info", "--log-format", "json"])

    # then each line is a write or a status transition of the DGD, with its fields
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert {line["logger"] for line in lines} == {"dgd.sync", "dgd.reconcile"}
    assert all(line["dgd"] == "default/demo-agg" and line["level"] == "info" for line in lines)
    assert [line["verb"] for line in lines].count("create") == 9
    frontend = next(line for line in lines if line["object"] == "Service default/demo-agg-frontend")
    assert (frontend["message"], frontend["why"]) == (
        "Created Service default/demo-agg-frontend",
        "rendered and not found",
    )
    assert lines[-1]["message"] == (
        "status of DynamoGraphDeployment default/demo-agg:"
        " pending/pods_not_ready -> successful/all_resources_are_ready"
    )


def test_in_text_each_line_names_the_dgd_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    # when the example is applied with the operator's log at info, in text
    code = main(["sim", "apply", str(AGG), "--until-ready", "--log-level", "info"])

    # then every line is a write or a status transition, with its fields as key=value pairs
    assert code == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 14
    assert all(" INFO    dgd." in line and " dgd=default/demo-agg verb=" in line for line in lines)
    assert (
        'Created PodCliqueSet default/demo-agg dgd=default/demo-agg verb=create object="PodCliqueSet'
        ' default/demo-agg" why="rendered and not found"' in lines[6]
    )
