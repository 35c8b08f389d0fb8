"""``deploy/generate.py`` as a module for the tests (it is a script, not part of the ``dgd`` package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_generate", DEPLOY / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


generate = _load()


def committed(relative: str) -> list[dict[str, Any]]:
    """The documents of a committed file under ``deploy/``."""
    return [d for d in yaml.safe_load_all((DEPLOY / relative).read_text(encoding="utf-8")) if d]


def find(documents: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The one document of ``kind`` named ``name``."""
    found = [d for d in documents if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]
