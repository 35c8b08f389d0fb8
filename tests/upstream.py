"""Where the upstream reference data lives: ``../shared/upstream`` beside the project root.

Tests read upstream CRDs, examples and golden fixtures from there at test time; nothing of it is
copied into this repository.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = Path(os.environ.get("DGD_UPSTREAM_DIR", ROOT.parent / "shared" / "upstream")).resolve()
DYNAMO = UPSTREAM / "ai-dynamo-dynamo"
GROVE = UPSTREAM / "ai-dynamo-grove"
CRD_DIR = DYNAMO / "deploy" / "operator" / "config" / "crd" / "bases"
#: Grove's own CRDs (PodCliqueSet, PodClique, PodCliqueScalingGroup, ClusterTopologyBinding).
GROVE_CRD_DIR = GROVE / "operator" / "api" / "core" / "v1alpha1" / "crds"


def load_documents(path: Path) -> list[Any]:
    """Every non-empty YAML document of a file, in order."""
    with path.open(encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


def dgd_files() -> list[Path]:
    """Every upstream file that holds a DynamoGraphDeployment (examples, recipes, fixtures, golden inputs)."""
    roots = [DYNAMO / "examples", DYNAMO / "recipes", DYNAMO / "deploy" / "utils" / "tests" / "fixtures"]
    files = sorted(p for root in roots for p in root.rglob("*.yaml"))
    files += sorted(
        (DYNAMO / "deploy" / "operator" / "internal" / "controller" / "testdata").rglob("input.yaml")
    )
    return [p for p in files if any(_is_dgd(d) for d in load_documents(p))]


def dgd_documents() -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(file relative to the upstream dir, document index, document) for every upstream DGD."""
    for path in dgd_files():
        for index, doc in enumerate(load_documents(path)):
            if _is_dgd(doc):
                yield str(path.relative_to(UPSTREAM)), index, doc


def _is_dgd(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == "DynamoGraphDeployment"
