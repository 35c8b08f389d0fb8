"""The daemon under measurement: one ``dgd-operator run`` process, and what its ``/metrics``, ``/readyz``
and ``/proc/<pid>/status`` say.

Imported as ``daemon_process`` by ``bench/daemon.py`` (run as a script, its folder first on ``sys.path``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import anyio
from prometheus_client.parser import text_string_to_metric_families

EXECUTABLE = Path(sys.executable).with_name("dgd-operator")


class Daemon:
    """One ``dgd-operator run`` process, its log in ``log``."""

    def __init__(self, kubeconfig: Path, log: Path, instance: str, flags: list[str]) -> None:
        self.log = log
        self.started = time.perf_counter()
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    str(EXECUTABLE),
                    "run",
                    "--kubeconfig",
                    str(kubeconfig),
                    "--metrics-addr",
                    "127.0.0.1:0",
                    "--no-metrics-secure",
                    "--probe-addr",
                    "127.0.0.1:0",
                    "--instance",
                    instance,
                    "--lease-namespace",
                    "dynamo-system",
                    *flags,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.metrics_port = 0
        self.probe_port = 0

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def memory(self, field: str = "VmRSS") -> int:
        """A ``/proc/<pid>/status`` size field, in bytes."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"no {field} for pid {self.process.pid}")

    async def listening(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"the daemon exited with {self.process.returncode}:\n{self.log.read_text()}")
        for line in self.log.read_text(errors="replace").splitlines():
            message = str(json.loads(line).get("message", "")) if line.startswith("{") else ""
            if message.startswith("serving metrics on port "):
                self.metrics_port = int(message.rsplit(" ", 1)[1])
            elif message.startswith("serving probes on port "):
                self.probe_port = int(message.rsplit(" ", 1)[1])
        return bool(self.metrics_port and self.probe_port)

    async def metrics(self, session: aiohttp.ClientSession) -> dict[str, float]:
        """Every sample, keyed ``name{label=value,...}``."""
        async with session.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as response:
            text = await response.text()
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f"{key}={value}" for key, value in sorted(sample.labels.items()))
                samples[f"{sample.name}{{{labels}}}"] = sample.value
        return samples

    async def ready(self, session: aiohttp.ClientSession) -> bool:
        async with session.get(f"http://127.0.0.1:{self.probe_port}/readyz") as response:
            return response.status == 200

    async def stop(self, timeout: float = 120.0) -> tuple[int, float]:
        """SIGTERM; the exit code and the seconds it took to exit."""
        asked = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        await until(lambda: _exited(self.process), timeout, "the daemon exits")
        return self.process.returncode, time.perf_counter() - asked


async def _exited(process: subprocess.Popen[bytes]) -> bool:
    return process.poll() is not None


async def until(check: Callable[[], Awaitable[bool]], timeout: float, what: str, every: float = 0.1) -> None:
    deadline = time.perf_counter() + timeout
    while not await check():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"not within {timeout:g}s: {what}")
        await anyio.sleep(every)


async def listening(daemon: Daemon, daemons: list[Daemon], what: str) -> Daemon:
    """``daemon`` once it listens; listed in ``daemons`` first, so that it is killed if it never does."""
    daemons.append(daemon)
    await until(daemon.listening, 60, f"{what} listens")
    return daemon


def total(samples: dict[str, float], prefix: str, *, method: str | None = None) -> float:
    """The sum of the samples whose key starts with ``prefix`` (and has that ``method`` label)."""
    return sum(
        value
        for key, value in samples.items()
        if key.startswith(prefix)
        and (method is None or f"method={method}}}" in key or f"method={method}," in key)
    )


async def settle(daemon: Daemon, session: aiohttp.ClientSession, quiet: float, timeout: float) -> float:
    """Wait until ``quiet`` seconds pass with no reconcile and nothing queued for one (lease renewals
    go on); the seconds waited."""
    began = time.perf_counter()
    last: tuple[float, float] | None = None
    since = began
    while True:
        samples = await daemon.metrics(session)
        now = (total(samples, "controller_runtime_reconcile_total"), total(samples, "workqueue_adds_total"))
        if now != last:
            last, since = now, time.perf_counter()
        elif time.perf_counter() - since >= quiet:
            return time.perf_counter() - began
        if time.perf_counter() - began > timeout:
            raise TimeoutError(f"the daemon did not settle within {timeout:g}s")
        await anyio.sleep(0.5)
