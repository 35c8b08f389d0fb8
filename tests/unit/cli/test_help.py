"""Every ``--help`` reads as plain text for a user: no reST markup, no internal class names, every
chaos plan named, exit codes everywhere, and a bad option answered with its own command's usage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dgd.cli import main
from dgd.sim.chaos_schedule import PLANS
from tests.real.controlplane.__main__ import _usage as usage

COMMANDS = [
    [],
    ["validate"],
    ["convert"],
    ["render"],
    ["crds"],
    ["run"],
    ["chaos"],
    ["sim"],
    ["sim", "apply"],
    ["sim", "replay"],
    ["sim", "serve"],
    ["sim", "world"],
]


def help_of(command: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "dgd-operator")
def test_help_has_no_rest_markup_nor_internal_names_and_ends_with_exit_codes(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # when a command's help is printed
    text = help_of(command, capsys)

    # then it has no reST double backticks, names no internal class, and says its exit codes
    assert "``" not in text
    assert "SimulatedCluster" not in text
    assert "exit codes:" in text


def test_chaos_help_names_every_plan_in_wrapped_lines(capsys: pytest.CaptureFixture[str]) -> None:
    # when chaos's help is printed
    text = help_of(["chaos"], capsys)

    # then its description names every plan, and no line is longer than a terminal's
    # (argparse may wrap a line after a plan's hyphen: crash-\nloop)
    description = " ".join(re.sub(r"-\n\s*", "-", text.split("options:")[0]).split())
    for plan in PLANS:
        assert f"{plan} (" in description, plan
    assert max(len(line) for line in text.splitlines() if not line.startswith("exit codes")) <= 80


def test_a_bad_option_prints_that_commands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    # when validate is given an option it does not have
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--bogus", "x.yaml"])

    # then it is a usage error printed with validate's own usage line, naming the option
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: dgd-operator validate ")
    assert "dgd-operator validate: error: unrecognized arguments: --bogus" in err


def test_kube_up_says_how_to_stop_the_control_plane_in_its_own_state_folder(tmp_path: Path) -> None:
    # given what `make kube-up KUBE_STATE=...` recorded of the control plane it started
    record = {
        "kubeconfig": str(tmp_path / "admin.kubeconfig"),
        "kubectl": "/bin/kubectl",
        "server": "https://127.0.0.1:6443",
        "ca": str(tmp_path / "ca.crt"),
        "ports": {"etcd_client": 2379, "etcd_peer": 2380},
        "versions": {"kube-apiserver": "v1.36.5", "etcd": "3.6.8"},
    }

    # when it prints how to use it
    lines = list(usage(record, tmp_path))

    # then the stop hint is a make command that stops that folder's plane, not the default one
    assert lines[-1] == f"stop: make kube-down KUBE_STATE={tmp_path}"
