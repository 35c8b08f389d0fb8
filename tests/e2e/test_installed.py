"""The artifact users install: the built wheel, in a clean virtual environment outside the repository.

The wheel is built from the checkout (``pip wheel``), installed into a new virtual environment in a
temporary directory with the project's constraints, and its console script is run from there with no
``PYTHONPATH`` and no ``DGD_UPSTREAM_DIR``: what it needs (the examples, the traces, the key pool) must
ship as package data. Installing takes the package index (or the machine's wheel cache), as ``make``
does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"

pytestmark = pytest.mark.timeout(600)


class Installed:
    """The installed ``dgd-operator`` and the examples its package holds."""

    def __init__(self, venv: Path, cwd: Path) -> None:
        self.script = venv / "bin" / "dgd-operator"
        self.python = venv / "bin" / "python"
        self.cwd = cwd
        # Where an installed copy keeps its examples: the package's own folder, not the checkout.
        self.examples = Path(self.run_python("import dgd, pathlib; print(pathlib.Path(dgd.__file__).parent)"))
        self.examples /= "examples"

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        env = {
            key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "DGD_UPSTREAM_DIR")
        }
        return subprocess.run(
            [str(self.script), *argv], cwd=self.cwd, env=env, capture_output=True, text=True, timeout=300
        )

    def run_python(self, code: str) -> str:
        done = subprocess.run(
            [str(self.python), "-c", code],
            cwd=self.cwd,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout.strip()


def _pip(python: Path | str, *argv: str, cwd: Path) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    outside = tmp_path_factory.mktemp("installed")
    assert not outside.is_relative_to(ROOT)
    dist = outside / "dist"
    _pip(sys.executable, "wheel", "--no-deps", "-w", str(dist), str(ROOT), cwd=outside)
    wheels = sorted(dist.glob("dgd_operator-*.whl"))
    assert len(wheels) == 1, wheels
    venv = outside / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    _pip(venv / "bin" / "python", "install", "-c", str(CONSTRAINTS), str(wheels[0]), cwd=outside)
    yield Installed(venv, outside)


def test_the_installed_package_holds_its_examples_and_traces_not_the_checkouts(installed: Installed) -> None:
    # given the wheel installed outside the repository
    # then its examples are package data in the environment, not files of the checkout
    assert not installed.examples.resolve().is_relative_to(ROOT)
    assert (installed.examples / "agg.yaml").is_file()
    traces = sorted(path.name for path in (installed.examples / "traces").glob("*.jsonl"))
    assert traces == sorted(path.name for path in (ROOT / "dgd" / "examples" / "traces").glob("*.jsonl"))
    assert traces


def test_the_installed_commands_run_from_outside_the_repository(installed: Installed) -> None:
    agg = str(installed.examples / "agg.yaml")

    # when each command a user starts with runs from the installed copy
    version = installed.run("--version")
    validate = installed.run("validate", agg)
    render = installed.run("render", agg)
    applied = installed.run("sim", "apply", agg, "--until-ready")
    chaos = installed.run("chaos", "--seeds", "1")

    # then each does its job
    assert version.returncode == 0 and version.stdout.startswith("dgd-operator "), version.stderr
    assert validate.returncode == 0 and "1 valid, 0 invalid" in validate.stdout, validate.stderr
    assert render.returncode == 0 and "kind: PodCliqueSet" in render.stdout, render.stderr
    assert applied.returncode == 0, applied.stderr
    # and chaos finds its example in the package (upstream's are not beside an installed copy)
    assert chaos.returncode == 0, chaos.stderr
    assert "over 1 example" in chaos.stdout
    assert "violations: none" in chaos.stdout
