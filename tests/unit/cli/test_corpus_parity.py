"""`validate` and `sim apply` give every manifest the same verdict: each broken manifest of the corpus is
refused by both, and every upstream DGD file is admitted by both (`sim apply` may still find a DGD
unready for what its cluster lacks; its input was taken). The corpus is the files of `tests/corpus/invalid`
and the cases `tests/corpus/generated.py` writes at test time (annotations of 1 MiB and 5 MiB, a 4 MiB pod
template). The real API server's verdict on the same cases is `tests/real/test_corpus_parity.py`'s.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dgd.cli import main
from tests.corpus.generated import GeneratedCase, generated_cases
from tests.upstream import UPSTREAM, dgd_files

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "invalid"
#: The line `sim apply` begins with when it refuses its input (not when a DGD it took ends unready).
SIM_REFUSED = "dgd-operator sim apply: error:"


def _corpus() -> list[Any]:
    files = [pytest.param(path, id=path.stem) for path in sorted(CORPUS.glob("*.yaml"))]
    return files + [pytest.param(case, id=case.name) for case in generated_cases()]


def _said(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[tuple[int, str], tuple[int, str]]:
    """(validate's exit code and words, sim apply's) for the manifest file ``path``."""
    validated = main(["validate", str(path)])
    out = capsys.readouterr()
    applied = main(["sim", "apply", "--until-ready", "--timeout", "120", str(path)])
    said = capsys.readouterr().err
    return (validated, out.out + out.err), (applied, said)


def _verdicts(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[bool, bool]:
    """(validate refused it, sim apply refused its input) for the manifest file ``path``."""
    (validated, _), (applied, said) = _said(path, capsys)
    return validated != 0, applied != 0 and SIM_REFUSED in said


@pytest.mark.parametrize("case", _corpus())
def test_validate_and_sim_apply_both_refuse_each_broken_manifest(
    case: Path | GeneratedCase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a manifest with one deliberate mistake
    path = case if isinstance(case, Path) else case.write(tmp_path)

    # when validate checks it and sim apply applies it
    verdicts = _verdicts(path, capsys)

    # then both refuse it
    assert verdicts == (True, True)


@pytest.mark.parametrize("case", [pytest.param(case, id=case.name) for case in generated_cases()])
def test_validate_and_sim_apply_say_how_large_each_generated_case_is_and_what_is_allowed(
    case: GeneratedCase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given an annotation of 1 MiB or 5 MiB, or a 4 MiB pod template (the last two over the request limit)
    path = case.write(tmp_path)

    # when validate checks it and sim apply applies it
    (_, validated), (_, applied) = _said(path, capsys)

    # then each says every error validate states: the field, how large it is and what is allowed
    # (the sizes aside: sim apply measures what it sends, before defaulting adds an annotation)
    for error in case.expected:
        words = re.compile(re.sub(r"(is|hold)\\ \d+\\ ", r"\1\\ \\d+\\ ", re.escape(error)))
        assert words.search(validated), validated
        assert words.search(applied), applied


@pytest.mark.parametrize("path", dgd_files(), ids=lambda p: str(p.relative_to(UPSTREAM)))
def test_validate_and_sim_apply_both_admit_each_upstream_dgd_file(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given an upstream file of DGDs
    # when validate checks it and sim apply applies it
    verdicts = _verdicts(path, capsys)

    # then both take it
    assert verdicts == (False, False)
