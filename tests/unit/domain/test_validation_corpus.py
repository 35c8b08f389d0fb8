"""Admission of DGD documents against the corpus of broken manifests, each reporting exactly its stated
errors, and upstream's own DGDs, admitted in either API version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from dgd.domain.admission.documents import admit_document
from dgd.domain.admission.validation import admit
from dgd.domain.manifests import ManifestError, load_manifests
from dgd.messages.dgd import API_VERSION
from tests.corpus.generated import generated_cases
from tests.upstream import dgd_documents

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "invalid"
EXPECT, XFAIL = "# expect: ", "# xfail: "


class CorpusCase(NamedTuple):
    """A broken manifest and the header that states every error it must produce, in output order."""

    name: str
    text: str
    expected: list[str]
    xfail: str | None


def _read_case(name: str, text: str) -> CorpusCase:
    expected: list[str] = []
    xfail = None
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if line.startswith(EXPECT):
            expected.append(line.removeprefix(EXPECT))
        elif line.startswith(XFAIL):
            xfail = line.removeprefix(XFAIL)
    return CorpusCase(name, text, expected, xfail)


def _files() -> list[CorpusCase]:
    return [_read_case(path.stem, path.read_text(encoding="utf-8")) for path in sorted(CORPUS.glob("*.yaml"))]


def _corpus() -> list[Any]:
    cases = _files() + [_read_case(case.name, case.text) for case in generated_cases()]
    # A known validator bug is a strict xfail: fixing it turns the case red until its header is updated.
    return [
        pytest.param(
            case,
            id=case.name,
            marks=[pytest.mark.xfail(reason=case.xfail, strict=True)] if case.xfail else [],
        )
        for case in cases
    ]


def _reported_errors(text: str) -> list[str]:
    """What `dgd-operator validate` reports for a file: the YAML problem, or every document's errors."""
    try:
        documents = load_manifests(text)
    except ManifestError as exc:
        return [str(exc)]
    return [str(error) for document in documents for error in admit_document(document).errors]


def test_corpus_holds_at_least_forty_broken_manifests() -> None:
    # given the corpus directory
    cases = _files()

    # then it is large enough to cover the admission rules, and every file states what it expects
    assert len(cases) >= 40
    assert [c.name for c in cases if not c.expected] == []


@pytest.mark.parametrize("case", _corpus())
def test_broken_manifest_reports_exactly_its_stated_errors(case: CorpusCase) -> None:
    # given a manifest with one deliberate mistake and the errors its header states
    # when it is loaded and admitted
    errors = _reported_errors(case.text)

    # then the mistake is found, and nothing else is reported
    assert errors == case.expected


UPSTREAM = list(dgd_documents())


def _upstream(api_version: str | None = None) -> list[Any]:
    return [
        pytest.param(document, id=f"{file}#{index}")
        for file, index, document in UPSTREAM
        if api_version is None or document.get("apiVersion") == api_version
    ]


def test_upstream_reference_dgds_are_present() -> None:
    # given the upstream reference data beside the project
    api_versions = {document.get("apiVersion") for _, _, document in UPSTREAM}

    # then both API versions are represented, so the acceptance tests below are not vacuous
    assert api_versions == {"nvidia.com/v1beta1", "nvidia.com/v1alpha1"}


@pytest.mark.parametrize("document", _upstream(API_VERSION))
def test_upstream_v1beta1_dgd_is_admitted_without_errors(document: dict[str, Any]) -> None:
    # when an upstream v1beta1 DGD is admitted as a create
    verdict = admit(document)

    # then it has no errors and decodes into a defaulted DGD
    assert verdict.errors == []
    assert verdict.dgd is not None


@pytest.mark.parametrize("document", _upstream())
def test_upstream_dgd_document_is_valid_in_either_api_version(document: dict[str, Any]) -> None:
    # when any upstream DGD document, v1alpha1 or v1beta1, is admitted
    verdict = admit_document(document)

    # then it is valid
    assert verdict.errors == []
    assert verdict.outcome == "valid"
