"""The same bad input gets the same exit code and a sentence naming the file in every command.

Exit codes (README, "Exit codes"): 2 for a file that cannot be read as what it should be (missing, a
folder, not UTF-8, not YAML), 1 for one that was read but holds a wrong value. No message is a raw
Python one (``[Errno 2] …``, ``'utf-8' codec can't decode …``, ``ConfigError (500)``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dgd.cli import main

ROOT = Path(__file__).resolve().parents[3]
EXECUTABLE = Path(sys.executable).with_name("dgd-operator")
AGG = str(ROOT / "examples" / "agg.yaml")
#: A DGD whose worker type is misspelled: admission refuses it.
REFUSED_DGD = str(ROOT / "tests" / "corpus" / "invalid" / "component-type-unknown.yaml")
#: What no message may hold: Python's own words for the problem.
RAW = ("Errno", "codec", "Traceback", "(500)", "ConfigError", "DecodeError")

#: Where each command takes a file: ``{}`` stands for it.
COMMANDS = {
    "validate": ["validate", "{}"],
    "convert": ["convert", "{}"],
    "render": ["render", "{}"],
    "render --config": ["render", AGG, "--config", "{}"],
    "sim apply": ["sim", "apply", "{}"],
    "sim apply --config": ["sim", "apply", AGG, "--config", "{}"],
    "sim replay": ["sim", "replay", "{}"],
    "chaos --examples": ["chaos", "--seeds", "1", "--examples", "{}"],
    "run --config": ["run", "--config", "{}"],
    "run --kubeconfig": ["run", "--kubeconfig", "{}"],
    "sim serve --config": ["sim", "serve", "--config", "{}"],
    "sim serve --world": ["sim", "serve", "--world", "{}"],
    "sim world --world": ["sim", "world", "--world", "{}"],
    "sim world --kubeconfig": ["sim", "world", "--kubeconfig", "{}"],
}

#: Files that cannot be read as what they should be: their bytes (``None``: absent; ``"folder"``: a
#: folder) and what the message says.
UNREADABLE: dict[str, tuple[bytes | str | None, str]] = {
    "missing": (None, "no such file"),
    "folder": ("folder", "is a folder"),
    "not UTF-8": (b"kind: \xff\xfe\n", "not UTF-8 text"),
    "not YAML": (b"metadata: [\n", "line "),
}


def place(tmp_path: Path, content: bytes | str | None) -> Path:
    path = tmp_path / "input.yaml"
    if content == "folder":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    return path


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("problem", UNREADABLE)
def test_a_file_that_cannot_be_read_exits_2_with_a_sentence_naming_it_in_every_command(
    problem: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a file that is missing, a folder, not UTF-8 or not YAML
    content, says = UNREADABLE[problem]
    path = place(tmp_path, content)

    # when a command is given it
    code, shown = run_main([str(path) if part == "{}" else part for part in COMMANDS[command]], capsys)

    # then it exits 2 with a sentence naming the file and the problem, in no raw Python words
    assert code == 2, shown
    assert f"{path}: " in shown and says in shown, shown
    assert not [word for word in RAW if word in shown], shown


#: Files that were read but hold a wrong value, the commands given each and what the message names.
INVALID: dict[str, tuple[str, list[list[str]], str]] = {
    "a DGD admission refuses": (
        Path(REFUSED_DGD).read_text(encoding="utf-8"),
        [
            ["validate", "{}"],
            ["render", "{}"],
            ["sim", "apply", "{}"],
            ["chaos", "--seeds", "1", "--examples", "{}"],
        ],
        "spec.components[1].type",
    ),
    "a config key with a bad value": (
        "orchestrators: {grove: {terminationDelay: soon}}\n",
        [
            ["render", AGG, "--config", "{}"],
            ["sim", "apply", AGG, "--config", "{}"],
            ["sim", "serve", "--config", "{}"],
            ["run", "--config", "{}"],
        ],
        "orchestrators.grove.terminationDelay: 'soon' is not a duration",
    ),
    "a misspelt config key": (
        "rollout: {progresDeadline: 5m}\n",
        [
            ["render", AGG, "--config", "{}"],
            ["sim", "apply", AGG, "--config", "{}"],
            ["run", "--config", "{}"],
        ],
        'rollout.progresDeadline: unknown field "progresDeadline" (did you mean "progressDeadline"?)',
    ),
    "a world setting with a bad value": (
        "ready_delay: -1\n",
        [["sim", "serve", "--world", "{}"], ["sim", "world", "--world", "{}"]],
        "ready_delay: expected float >= 0.0",
    ),
    "no DGD at all": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n",
        [["sim", "apply", "{}"], ["chaos", "--seeds", "1", "--examples", "{}"]],
        "no DynamoGraphDeployment in",
    ),
}


@pytest.mark.parametrize(
    ("problem", "argv"),
    [(problem, argv) for problem, (_, commands, _) in INVALID.items() for argv in commands],
    ids=[
        f"{problem}: {' '.join(argv[:2])}"
        for problem, (_, commands, _) in INVALID.items()
        for argv in commands
    ],
)
def test_a_file_read_but_invalid_exits_1_naming_the_field_in_every_command(
    problem: str, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a file that is YAML but holds a wrong value
    content, _, says = INVALID[problem]
    path = tmp_path / "input.yaml"
    path.write_text(content, encoding="utf-8")

    # when a command is given it
    code, shown = run_main([str(path) if part == "{}" else part for part in argv], capsys)

    # then it exits 1 naming the field and the value, in no raw Python words
    assert code == 1, shown
    assert says in shown, shown
    assert not [word for word in RAW if word in shown], shown


@pytest.mark.parametrize("command", [["run"], ["sim", "world"]], ids=["run", "sim world"])
def test_no_kubeconfig_anywhere_is_a_usage_error_saying_what_to_pass(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # given no --kubeconfig, no $KUBECONFIG, no ~/.kube/config, and not in a pod
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)

    # when a command that needs a cluster starts
    code, shown = run_main(command, capsys)

    # then it exits 2 and says how to name a cluster
    assert code == 2, shown
    assert "no cluster to connect to: pass --kubeconfig PATH or set $KUBECONFIG" in shown
    assert not [word for word in RAW if word in shown], shown


def test_a_kubeconfig_without_a_current_context_exits_1_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a kubeconfig that is YAML but names no current context
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\n", encoding="utf-8")

    # when the daemon starts with it
    code, shown = run_main(["run", "--kubeconfig", str(kubeconfig)], capsys)

    # then it exits 1 naming the file and the missing key, without the client's error class
    assert code == 1, shown
    assert f"cannot load the cluster configuration from {kubeconfig}" in shown
    assert "current-context" in shown
    assert not [word for word in RAW if word in shown], shown


def test_sim_apply_dash_reads_the_manifests_from_standard_input() -> None:
    # given the aggregated example on standard input
    manifest = Path(AGG).read_text(encoding="utf-8")

    # when the installed command applies "-" until ready
    result = subprocess.run(
        [str(EXECUTABLE), "sim", "apply", "-", "--until-ready"],
        input=manifest,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    # then the DGD from stdin converges and the command exits 0
    assert result.returncode == 0, result.stderr
    assert "DynamoGraphDeployment default/demo-agg" in result.stdout
    assert "state: successful" in result.stdout
