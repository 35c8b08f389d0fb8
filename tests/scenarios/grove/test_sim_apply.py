"""``dgd-operator sim apply``: the operator on the simulated cluster, from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from dgd.cli import main

ROOT = Path(__file__).resolve().parents[3]
MANIFESTS = Path(__file__).parent / "manifests"
AGG = ROOT / "examples" / "agg.yaml"


def edited_agg(tmp_path: Path, old: str, new: str) -> str:
    """The aggregated example with ``old`` replaced by ``new``, written to a file; its path."""
    path = tmp_path / "dgd.yaml"
    path.write_text(AGG.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return str(path)


def test_apply_until_ready_exits_0_once_the_example_is_successful(capsys: pytest.CaptureFixture[str]) -> None:
    # given the aggregated example `make run` uses; when it is applied until ready
    code = main(["sim", "apply", str(AGG), "--until-ready"])

    # then the table ends successful, the final status and events are printed, and the exit code is 0
    out = capsys.readouterr().out
    assert code == 0
    assert "default/demo-agg  successful  all_resources_are_ready  2/2" in out
    assert "DynamoGraphDeployment default/demo-agg (after 31s of cluster time)" in out
    assert "Normal   CreatePodCliqueSet: Created PodCliqueSet default/demo-agg" in out


def test_apply_of_several_graphs_waits_for_all_of_them(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(MANIFESTS / "sglang-agg.yaml"), str(MANIFESTS / "trtllm-disagg-multinode.yaml")]
    assert main(["sim", "apply", *files, "--until-ready"]) == 0
    out = capsys.readouterr().out
    assert "default/sglang-agg        successful" in out
    assert "default/trtllm-multinode  successful" in out


def test_a_graph_that_cannot_become_ready_exits_1_naming_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a graph asking for checkpoints from an operator configured without them
    checkpoint = "      experimental:\n        checkpoint:\n          enabled: true\n"
    manifest = edited_agg(tmp_path, "      replicas: 2\n", "      replicas: 2\n" + checkpoint)

    # when it is applied until ready, with a short timeout
    code = main(["sim", "apply", manifest, "--until-ready", "--timeout", "120"])

    # then the command fails and says why
    err = capsys.readouterr().err
    assert code == 1
    assert (
        "default/demo-agg is failed after 61s: failed_to_reconcile_the_resources: "
        "spec.components[1].experimental.checkpoint: component Worker: checkpoint functionality is disabled "
        "in the operator configuration (checkpoint.enabled)" in err
    )


def test_a_graph_still_pending_at_the_timeout_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "apply", str(AGG), "--until-ready", "--timeout", "10"])
    err = capsys.readouterr().err
    assert code == 1
    assert "default/demo-agg is pending after 10s: pods_not_ready: Resources not ready: demo-agg:" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["sim", "apply"],
        ["sim", "apply", "missing.yaml"],
        ["sim", "apply", "examples/agg.yaml", "--timeout", "0"],
    ],
    ids=["no file", "missing file", "zero timeout"],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exit:
        code = int(exit.code or 0)
    assert code == 2


def test_the_same_seed_prints_the_same_run(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "examples" / "multinode.yaml")
    main(["sim", "apply", path, "--until-ready", "--seed", "3"])
    first = capsys.readouterr().out
    main(["sim", "apply", path, "--until-ready", "--seed", "3"])
    assert capsys.readouterr().out == first


def test_a_gate_turned_on_for_an_api_the_cluster_lacks_stops_the_operator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a configuration that requires LeaderWorkerSet, which the simulated cluster does not serve
    config = tmp_path / "config.yaml"
    config.write_text("orchestrators:\n  lws:\n    enabled: true\n", encoding="utf-8")

    # when the operator is started with it
    code = main(["sim", "apply", str(AGG), "--config", str(config)])

    # then it refuses to start, naming the key and the API
    assert code == 1
    assert (
        "the operator cannot start: orchestrators.lws.enabled is true, but the cluster does not serve "
        "leaderworkerset.x-k8s.io/v1/leaderworkersets and scheduling.volcano.sh/v1beta1/queues"
    ) in capsys.readouterr().err


def test_an_input_the_simulated_api_server_refuses_exits_1_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given the example with a template placeholder left as its namespace
    manifest = edited_agg(tmp_path, "  name: demo-agg\n", "  name: demo-agg\n  namespace: <your-namespace>\n")

    # when it is applied on the simulated cluster
    code = main(["sim", "apply", manifest, "--until-ready"])

    # then the command fails with the API server's reason, not a traceback
    err = capsys.readouterr().err
    assert code == 1
    assert "the simulated cluster refused the input" in err
    assert 'Namespace "<your-namespace>" is invalid' in err
    assert "Traceback" not in err
