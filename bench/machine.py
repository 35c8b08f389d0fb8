"""What a benchmark ran on, as its ``Method`` section prints it: the command, the interpreter and the
CPU.

The benchmarks are run as ``python bench/<name>.py`` from the repository root, so this module is
imported as ``machine`` (the script's folder is first on ``sys.path``). It imports nothing from the
project.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path


def command() -> str:
    """The command line that ran the benchmark, with the interpreter's path relative to here."""
    return " ".join([os.path.relpath(sys.executable), *sys.argv])


def python() -> str:
    """The interpreter: implementation and version (``CPython 3.11.7``)."""
    return f"{platform.python_implementation()} {platform.python_version()}"


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (``platform.processor()`` is often empty on Linux);
    ``?`` where there is none."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return "?"
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "?")
