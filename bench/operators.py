"""The operator process ``bench/real.py`` measures: ``dgd-operator run``, or the minimal kopf operator of
``bench/kopf_agg.py`` for the side-by-side of issue 18; and what is read of it from ``/proc``.

kopf is not a dependency of the project: it runs from a virtualenv of its own, ``bench/.kopf-venv``
(git-ignored), built on first use with ``pip install -c bench/kopf-constraints.txt kopf
kubernetes-asyncio`` (every package of it pinned there, versions only) and rebuilt when that file
changes. Imported as ``operators`` by ``bench/real.py`` (run as a script, its folder first on
``sys.path``) and as ``bench.operators`` by the tests.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

BENCH = Path(__file__).resolve().parent
EXECUTABLE = Path(sys.executable).with_name("dgd-operator")
KOPF_VENV = BENCH / ".kopf-venv"
KOPF_CONSTRAINTS = BENCH / "kopf-constraints.txt"
KOPF_SCRIPT = BENCH / "kopf_agg.py"
#: What ``pip install`` is asked for in the kopf virtualenv (the constraints file pins them and theirs).
KOPF_PACKAGES = ("kopf", "kubernetes-asyncio")
#: A copy of the constraints the virtualenv was built from, to tell when to rebuild it.
KOPF_STAMP = ".constraints"
TICKS = os.sysconf("SC_CLK_TCK")
OPERATORS = ("dgd", "kopf")


@dataclass(frozen=True)
class Launch:
    """How to start one operator and tell it is ready, and how its requests show in the audit log."""

    argv: list[str]
    env: dict[str, str]
    #: The user-agent prefix of its requests (the benchmark's own client sends ``dgd-bench-real``).
    agent: str
    #: The URL that answers 200 once it serves, from its log so far (None: not known yet).
    ready_url: Callable[[bytes], str | None]


def dgd_launch(kubeconfig: Path, flags: list[str]) -> Launch:
    """``dgd-operator run`` with webhooks off and metrics and probes on free loopback ports; ready
    once ``/readyz`` answers (caches synced, leading). It keeps kubernetes-asyncio's user agent."""
    argv = [str(EXECUTABLE), "run", "--kubeconfig", str(kubeconfig), "--webhook-addr", "0",
            "--metrics-addr", "127.0.0.1:0", "--probe-addr", "127.0.0.1:0", *flags]  # fmt: skip

    def ready_url(log: bytes) -> str | None:
        found = re.search(rb"serving probes on port (\d+)", log)
        return f"http://127.0.0.1:{int(found.group(1))}/readyz" if found else None

    return Launch(argv, dict(os.environ), "OpenAPI-Generator/", ready_url)


def kopf_argv(kopf: Path, port: int, script: Path = KOPF_SCRIPT) -> list[str]:
    """``kopf run`` of ``script`` for every namespace, without peering, its liveness endpoint on
    ``port`` of the loopback."""
    return [str(kopf), "run", "--standalone", "--all-namespaces",
            f"--liveness=http://127.0.0.1:{port}/healthz", str(script)]  # fmt: skip


def kopf_launch(kubeconfig: Path) -> Launch:
    """The kopf operator (``kopf_agg.py``) on ``kubeconfig`` (kopf reads ``KUBECONFIG``); ready once
    its liveness endpoint answers. Its requests carry ``kopf/<version>`` and ``kopf-agg/1``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/healthz"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    return Launch(kopf_argv(kopf_venv() / "bin" / "kopf", port), env, "kopf", lambda _: url)


def kopf_venv(venv: Path = KOPF_VENV, constraints: Path = KOPF_CONSTRAINTS) -> Path:
    """The kopf virtualenv, built (or rebuilt, when the constraints changed) with this interpreter."""
    pinned = constraints.read_text(encoding="utf-8")
    stamp = venv / KOPF_STAMP
    if (venv / "bin" / "kopf").exists() and stamp.exists() and stamp.read_text(encoding="utf-8") == pinned:
        return venv
    print(f"building {venv} from {constraints.name} (first use)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-c", str(constraints), *KOPF_PACKAGES], check=True)
    stamp.write_text(pinned, encoding="utf-8")
    return venv


@contextmanager
def running(launch: Launch, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The operator for the block; SIGTERM after it (SIGKILL if it does not exit in 30 s)."""
    with log.open("wb") as out:
        process = subprocess.Popen(launch.argv, stdout=out, stderr=subprocess.STDOUT, env=launch.env)
    try:
        yield process
    finally:
        terminate(process)


def terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited in 30 s; returns once it has exited."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


async def until_ready(
    process: subprocess.Popen[bytes], launch: Launch, log: Path, timeout: float = 120
) -> None:
    """Return once the operator's ready URL answers 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the operator exited with {process.returncode}; see {log}")
        if (url := launch.ready_url(log.read_bytes())) is not None:
            try:
                with urllib.request.urlopen(url, timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
        await anyio.sleep(0.2)
    raise TimeoutError(f"the operator was not ready in {timeout:g}s; see {log}")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of the process (``/proc/<pid>/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def memory_mib(pid: int, key: str) -> float:
    """``VmRSS`` or ``VmHWM`` of the process, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)


async def until_quiet(pid: int, quiet: float, timeout: float) -> None:
    """Return once the process used no CPU for ``quiet`` seconds (or after ``timeout``)."""
    deadline = time.monotonic() + timeout
    last, since = cpu_seconds(pid), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet:
        await anyio.sleep(0.25)
        now = cpu_seconds(pid)
        if now != last:
            last, since = now, time.monotonic()


#: The libraries the daemon runs on, imported alone: the required stack (anyio, msgspec, tenacity,
#: uvloop, kubernetes-asyncio as the operator imports it: without its generated classes) and what the
#: daemon also loads (aiohttp through kubernetes-asyncio, its client and its server, whose ``web``
#: serves the probes, metrics and webhooks; prometheus-client, cryptography, PyYAML).
LIBRARIES = (
    "anyio", "msgspec", "tenacity", "uvloop", "kubernetes_asyncio.config", "kubernetes_asyncio.watch",
    "aiohttp", "aiohttp.web", "prometheus_client", "cryptography.x509", "yaml",
)  # fmt: skip
_FLOOR = """
import importlib, importlib.util, sys
spec = importlib.util.spec_from_file_location("lean_client", sys.argv[1])
lean = importlib.util.module_from_spec(spec); spec.loader.exec_module(lean); lean.install()
for name in sys.argv[2:]:
    importlib.import_module(name)
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")))
"""


def libraries_mib(python: str = sys.executable) -> float:
    """RSS (MiB) of a fresh interpreter that imported ``LIBRARIES`` alone and nothing of ``dgd`` (the
    lean kubernetes-asyncio client is loaded from its file, not through the package)."""
    lean = Path(__file__).resolve().parent.parent / "dgd" / "cluster" / "kube" / "lean_client.py"
    out = subprocess.run([python, "-c", _FLOOR, str(lean), *LIBRARIES], check=True, capture_output=True)
    return int(out.stdout) / 1024
