"""`validate` and `sim apply` give every manifest the same verdict: each broken manifest of the corpus is
refused by both, and every upstream DGD file is admitted by both (`sim apply` may still find a DGD
unready for what its cluster lacks; its input was taken). The real API server's verdict on the same files
is `tests/real/test_corpus_parity.py`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dgd.cli import main
from tests.upstream import UPSTREAM, dgd_files

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "invalid"
#: The line `sim apply` begins with when it refuses its input (not when a DGD it took ends unready).
SIM_REFUSED = "dgd-operator sim apply: error:"


def _corpus() -> list[Any]:
    return [pytest.param(path, id=path.stem) for path in sorted(CORPUS.glob("*.yaml"))]


def _verdicts(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[bool, bool]:
    """(validate refused it, sim apply refused its input) for the manifest file ``path``."""
    validated = main(["validate", "-q", str(path)])
    capsys.readouterr()
    applied = main(["sim", "apply", "--until-ready", "--timeout", "120", str(path)])
    said = capsys.readouterr().err
    return validated != 0, applied != 0 and SIM_REFUSED in said


@pytest.mark.parametrize("path", _corpus())
def test_validate_and_sim_apply_both_refuse_each_broken_manifest(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a manifest with one deliberate mistake
    # when validate checks it and sim apply applies it
    verdicts = _verdicts(path, capsys)

    # then both refuse it
    assert verdicts == (True, True)


@pytest.mark.parametrize("path", dgd_files(), ids=lambda p: str(p.relative_to(UPSTREAM)))
def test_validate_and_sim_apply_both_admit_each_upstream_dgd_file(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given an upstream file of DGDs
    # when validate checks it and sim apply applies it
    verdicts = _verdicts(path, capsys)

    # then both take it
    assert verdicts == (False, False)
