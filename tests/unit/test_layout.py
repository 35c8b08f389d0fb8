"""The layout's standing rules: small modules and functions, import contracts that see every module."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dgd"
#: A module longer than this says why in its docstring, on a line starting with this marker.
MODULE_LINES, MODULE_REASON = 400, "Over 400 lines:"
FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_long_module_says_why_in_its_docstring() -> None:
    # given every module of the package, when one is over the limit
    unexplained = []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if len(text.splitlines()) > MODULE_LINES and MODULE_REASON not in docstring:
            unexplained.append(f"{path.relative_to(ROOT)} ({len(text.splitlines())} lines)")

    # then its docstring has a line saying why it is one concept
    assert unexplained == []


def test_no_function_is_over_eighty_lines() -> None:
    # given every function of the package
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")

    # then none is longer than the limit
    assert long == []


def test_the_runtime_contract_names_every_other_package_of_dgd() -> None:
    # given the import contract that keeps the actor runtime free of dgd
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    runtime = next(c for c in contracts if c.get("source_modules") == ["dgd.runtime"])

    # when dgd holds its top-level modules and packages
    siblings = {
        f"dgd.{path.stem if path.is_file() else path.name}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    } - {"dgd.runtime"}

    # then the contract forbids the runtime every one of them
    assert siblings <= set(runtime["forbidden_modules"])
