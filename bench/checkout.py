"""The checkout the benchmarks measure: its root goes first on ``sys.path``, so that ``dgd`` (and
``tests``) import from this working tree.

A benchmark is run as ``python bench/<name>.py`` from the repository root, so only ``bench/`` is on
the path until this module is imported (as ``checkout``); each benchmark that imports the project
imports it first, in its block of third-party imports, which comes before the project's.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The repository root.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
