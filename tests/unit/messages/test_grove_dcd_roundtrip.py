"""Upstream's rendered PodCliqueSets and DCDs decode into our Structs and encode back unchanged.

The golden outputs of upstream's controller tests hold exactly what the Go operator writes. They
also hold the golden matcher's directives (supplement §6.2): ``$strict`` keys and ``{$ignore: true}``
mappings constrain the match, they are not data, so they are removed before decoding. Placeholder
strings (``$var:…``, ``$pattern:…``, ``$glob:…``) stay: they decode wherever a string is expected.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest

from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.grove import PodCliqueSet
from tests.upstream import DYNAMO, UPSTREAM, load_documents

GOLDEN = DYNAMO / "deploy" / "operator" / "internal" / "controller" / "testdata" / "dgd"
MODELS: dict[str, type[PodCliqueSet] | type[DynamoComponentDeployment]] = {
    "PodCliqueSet": PodCliqueSet,
    "DynamoComponentDeployment": DynamoComponentDeployment,
}
MAPPING_DIRECTIVES = ({"$ignore": True}, {"$exists": True})


def _golden_documents() -> list[tuple[str, dict[str, Any]]]:
    """(file:index, document) for every PodCliqueSet and DCD in the golden outputs."""
    found = []
    for path in sorted(GOLDEN.glob("*/output.yaml")):
        for index, document in enumerate(load_documents(path)):
            if document.get("kind") in MODELS:
                found.append((f"{path.relative_to(UPSTREAM)}:{index}", document))
    return found


def _without_directives(value: Any) -> Any:
    """The document with the matcher's mapping directives removed (placeholder strings are kept)."""
    if isinstance(value, dict):
        return {
            key: _without_directives(item)
            for key, item in value.items()
            if key != "$strict" and item not in MAPPING_DIRECTIVES
        }
    if isinstance(value, list):
        return [_without_directives(item) for item in value]
    return value


def _placeholder_at(document: dict[str, Any], error: msgspec.ValidationError) -> str | None:
    """The placeholder string at the path a validation error names, if a placeholder is what failed."""
    match = re.search(r"at `\$(.*)`$", str(error))
    if match is None:
        return None
    value: Any = document
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", match.group(1)):
        value = value[key] if key else value[int(index)]
    return value if isinstance(value, str) and value.startswith("$") else None


def _round_trip(document: dict[str, Any]) -> tuple[dict[str, Any], Any] | str:
    """(original, re-encoded) for a document, or the reason it cannot be decoded (a misplaced placeholder)."""
    original = _without_directives(document)
    try:
        decoded = msgspec.convert(original, MODELS[original["kind"]])
    except msgspec.ValidationError as error:
        placeholder = _placeholder_at(original, error)
        if placeholder is None:
            raise
        return f"placeholder {placeholder!r} where a typed value is expected ({error})"
    return original, msgspec.to_builtins(decoded)


GOLDEN_DOCUMENTS = _golden_documents()


@pytest.mark.parametrize(("source", "document"), GOLDEN_DOCUMENTS, ids=[s for s, _ in GOLDEN_DOCUMENTS])
def test_golden_document_encodes_back_to_itself(source: str, document: dict[str, Any]) -> None:
    # Given a PodCliqueSet or DCD that upstream's operator rendered
    # When it is decoded into our Struct and encoded again
    outcome = _round_trip(document)
    if isinstance(outcome, str):
        pytest.skip(f"{source}: {outcome}")
    original, encoded = outcome
    # Then nothing was lost, added or changed
    assert encoded == original


def test_each_kind_has_golden_documents_that_round_trip() -> None:
    # Given every golden PodCliqueSet and DCD
    round_tripped: dict[str, int] = dict.fromkeys(MODELS, 0)
    skipped: list[str] = []
    for source, document in GOLDEN_DOCUMENTS:
        # When each is decoded and encoded again
        outcome = _round_trip(document)
        if isinstance(outcome, str):
            skipped.append(f"{source}: {outcome}")
        elif outcome[0] == outcome[1]:
            round_tripped[document["kind"]] += 1
    # Then at least one document of each kind survived the round trip unchanged
    assert all(count >= 1 for count in round_tripped.values()), (round_tripped, skipped)


def test_directives_are_removed_but_placeholders_kept() -> None:
    # Given a document with a $strict key, an ignored mapping and a placeholder string
    document = {"metadata": {"$strict": False, "name": "$glob:x-*"}, "status": {"$ignore": True}}
    # When the directives are removed
    cleaned = _without_directives(document)
    # Then only the data is left, placeholder included
    assert cleaned == {"metadata": {"name": "$glob:x-*"}}
