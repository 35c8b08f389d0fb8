"""The ``dgd-operator`` command line: validate, convert and crds, exit codes and output lines."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from dgd.cli import main
from dgd.domain.admission.documents import admit_document
from tests.unit.manifests import FRONTEND_DGD

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
CORPUS = ROOT / "tests" / "corpus" / "invalid"
EXECUTABLE = Path(sys.executable).with_name("dgd-operator")


def test_validate_accepts_every_repository_example(capsys: pytest.CaptureFixture[str]) -> None:
    # given the example manifests shipped in the repository
    assert len(EXAMPLES) >= 3

    # when they are validated together
    code = main(["validate", *map(str, EXAMPLES)])

    # then each document is valid and the command succeeds
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    for path in EXAMPLES:
        assert any(
            line.startswith(f"{path}#0 DynamoGraphDeployment ") and line.endswith(": valid") for line in out
        )
    assert out[-1] == f"{len(EXAMPLES)} valid, 0 invalid, 0 skipped"


def test_validate_reports_file_index_path_and_message_of_an_invalid_manifest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given a corpus manifest whose worker type is misspelled
    path = CORPUS / "component-type-unknown.yaml"

    # when it is validated
    code = main(["validate", str(path)])

    # then the error line names the file, document index, DGD, field path and allowed values
    assert code == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}#0 DynamoGraphDeployment bad-type: error: spec.components[1].type: "
        '"wroker" is not one of frontend, worker, prefill, decode, planner, epp',
        "0 valid, 1 invalid, 0 skipped",
    ]


def test_validate_skips_documents_of_other_api_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a multi-document file: a DGD, a ConfigMap and a PersistentVolumeClaim
    path = tmp_path / "bundle.yaml"
    path.write_text(
        FRONTEND_DGD
        + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: epp-config\ndata:\n  a: b\n"
        + "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: model-cache\n"
        + "spec:\n  accessModes: [ReadWriteMany]\n",
        encoding="utf-8",
    )

    # when it is validated
    code = main(["validate", str(path)])

    # then the DGD is checked and the other two are reported as skipped
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}#0 DynamoGraphDeployment demo: valid",
        f"{path}#1 ConfigMap epp-config: skipped: v1 ConfigMap is not a Dynamo kind",
        f"{path}#2 PersistentVolumeClaim model-cache: skipped: v1 PersistentVolumeClaim is not a Dynamo kind",
        "1 valid, 0 invalid, 2 skipped",
    ]


@pytest.mark.parametrize(
    "content", ["", "# only a comment\n", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"]
)
def test_validate_of_a_file_with_no_dgd_says_so_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    # given a file with no DGD in it: empty, only a comment, or only another kind
    path = tmp_path / "nothing.yaml"
    path.write_text(content, encoding="utf-8")

    # when it is validated
    code = main(["validate", "-q", str(path)])

    # then it is an invalid input (README: "no DGD" exits 1), and the last line says why
    assert code == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"{path}: error: no DGD found: no DynamoGraphDeployment document to check"


def test_validate_dash_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a DGD on standard input
    monkeypatch.setattr(sys, "stdin", io.StringIO(FRONTEND_DGD))

    # when "-" is validated
    code = main(["validate", "-"])

    # then the document is read from stdin and reported under "<stdin>"
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "<stdin>#0 DynamoGraphDeployment demo: valid",
        "1 valid, 0 invalid, 0 skipped",
    ]


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        # a corpus file with a duplicate key: the line and column of the problem
        (lambda tmp_path: CORPUS / "yaml-duplicate-key.yaml", "line 11, column 7: duplicate key 'type'"),
        # a path that does not exist: the reason, plainly
        (lambda tmp_path: tmp_path / "absent.yaml", "no such file"),
    ],
    ids=["yaml-error", "missing-file"],
)
def test_validate_reports_a_file_it_cannot_read_checks_the_others_and_exits_2(
    given: Callable[[Path], Path], reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a file that is not YAML or not there, and a valid one after it
    path = given(tmp_path)
    valid = EXAMPLES[0]

    # when both are validated
    code = main(["validate", str(path), str(valid)])

    # then the first is reported with the reason, the second still checked, and the command exits 2
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert code == 2
    assert lines[0] == f"{path}: error: {reason}"
    assert lines[-1] == "1 valid, 0 invalid, 0 skipped, 1 unreadable"
    assert "Traceback" not in captured.err


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # when the command is run without a subcommand
    code = main([])

    # then it exits 2 and shows the usage on stderr
    assert code == 2
    assert "usage: dgd-operator" in capsys.readouterr().err


def test_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # when an unknown subcommand is given
    with pytest.raises(SystemExit) as exit_info:
        main(["vaildate", "x.yaml"])

    # then argparse exits 2 and names the bad choice
    assert exit_info.value.code == 2
    assert "invalid choice: 'vaildate'" in capsys.readouterr().err


def test_validate_without_files_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # when validate is given no file
    with pytest.raises(SystemExit) as exit_info:
        main(["validate"])

    # then argparse exits 2 and says a file is required
    assert exit_info.value.code == 2
    assert "the following arguments are required: FILE" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [(["--help"], "validate"), (["validate", "--help"], "standard input")],
    ids=["top-level", "validate"],
)
def test_installed_command_prints_help(argv: list[str], expected: str) -> None:
    # when the installed console script is asked for help
    result = subprocess.run([str(EXECUTABLE), *argv], capture_output=True, text=True, timeout=60, check=False)

    # then it succeeds and describes the command
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: dgd-operator")
    assert expected in result.stdout


def test_convert_prints_a_v1beta1_dgd_that_validates(capsys: pytest.CaptureFixture[str]) -> None:
    # given the repository's v1alpha1 example
    path = ROOT / "examples" / "disagg-v1alpha1.yaml"

    # when it is converted
    code = main(["convert", str(path)])

    # then the output is one v1beta1 DGD with a component per service, and it passes admission
    assert code == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    assert len(documents) == 1
    converted = documents[0]
    assert converted["apiVersion"] == "nvidia.com/v1beta1"
    assert sorted(c["name"] for c in converted["spec"]["components"]) == ["Decode", "Frontend", "Prefill"]
    verdict = admit_document(converted)
    assert verdict.errors == []
    assert verdict.outcome == "valid"


def test_crds_prints_only_the_crds_this_operator_owns(capsys: pytest.CaptureFixture[str]) -> None:
    # when the CRDs are printed
    code = main(["crds"])

    # then they are the three nvidia.com CRDs, and none of Grove's (they would replace real Grove's)
    assert code == 0
    documents = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d is not None]
    assert {d["kind"] for d in documents} == {"CustomResourceDefinition"}
    assert sorted(d["metadata"]["name"] for d in documents) == [
        "dynamocomponentdeployments.nvidia.com",
        "dynamographdeployments.nvidia.com",
        "dynamographdeploymentscalingadapters.nvidia.com",
    ]


def test_crds_writes_only_the_crds_this_operator_owns(tmp_path: Path) -> None:
    # when the CRDs are written into a folder
    code = main(["crds", "--output-dir", str(tmp_path / "crds")])

    # then the folder holds one file per owned CRD and no grove.io file
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "crds").iterdir()) == [
        "nvidia.com_dynamocomponentdeployments.yaml",
        "nvidia.com_dynamographdeployments.yaml",
        "nvidia.com_dynamographdeploymentscalingadapters.yaml",
    ]


_IMPORTED_BY_RUN = """
import sys
from dgd.cli import main
try:
    main(["run", "--help"])
except SystemExit:
    pass
import dgd.daemon.run, dgd.daemon.trace_recorder, dgd.cluster.kube
print(" ".join(sorted(sys.modules)))
"""


def test_the_daemon_command_imports_neither_the_simulation_nor_the_offline_tools() -> None:
    # given a fresh interpreter that parsed `dgd-operator run` and imported what the daemon runs on
    out = subprocess.run(
        [sys.executable, "-c", _IMPORTED_BY_RUN], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout.split()

    # then the simulation, the in-memory cluster and the other commands were not imported
    assert "dgd.cli.run" in out and "dgd.daemon.run" in out
    unwanted = ("dgd.sim", "dgd.cluster.memory", "dgd.cli.chaos", "dgd.cli.sim", "dgd.cli.manifests")
    assert [m for m in out if m.startswith(unwanted)] == []


def test_every_command_is_listed_when_the_first_argument_names_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # when the first argument is not a command
    with pytest.raises(SystemExit):
        main(["bogus"])

    # then the usage error lists every command family's commands
    err = capsys.readouterr().err
    for name in ("validate", "convert", "render", "crds", "run", "chaos", "sim"):
        assert f"'{name}'" in err
