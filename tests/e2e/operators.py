"""Real ``dgd-operator run`` processes for a test: started on free ports, their JSON log in a file.

``Operators.start`` runs the console script of this virtualenv against a kubeconfig, with its metrics
and probes on free ports; an ``Operator`` reads its log, its metrics and its exit.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import anyio
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.eventually import eventually
from tests.e2e.harness import LEASE_NS, ServedCluster

EXECUTABLE = Path(sys.executable).with_name("dgd-operator")


@dataclass(frozen=True)
class LeaseFlags:
    """``--lease-duration``, ``--renew-deadline`` and ``--retry-period``, spelled as the flags take them."""

    duration: str
    renew_deadline: str
    retry_period: str

    @property
    def flags(self) -> tuple[str, ...]:
        return (
            "--lease-duration",
            self.duration,
            "--renew-deadline",
            self.renew_deadline,
            "--retry-period",
            self.retry_period,
        )


#: What the acceptance asks for: a standby takes over a lease two seconds after its last renewal.
FAST_LEASE = LeaseFlags("2s", "1.5s", "0.5s")
#: Short enough for a restarted daemon to take over in seconds, long enough that a busy CI machine
#: never makes a leader miss its renew deadline.
TEST_LEASE = LeaseFlags("3s", "2.5s", "0.5s")


@dataclass
class Operator:
    """One ``dgd-operator run`` process; its log (JSON lines) is in ``log``."""

    instance: str
    process: subprocess.Popen[bytes]
    log: Path
    metrics_port: int = 0
    probe_port: int = 0

    def kill(self, signum: int = signal.SIGKILL) -> None:
        self.process.send_signal(signum)

    async def exit_code(self, timeout: float) -> int:
        """Wait for the process to exit; its exit code (negative: the signal that ended it)."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.instance} did not exit within {timeout:g}s:\n{self.tail()}")
            await anyio.sleep(0.05)
        return self.process.returncode

    async def metrics(self) -> dict[str, float]:
        """Every sample of ``/metrics``, keyed ``name{label=value,...}`` (labels sorted)."""
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as response,
        ):
            text = await response.text()
        samples: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f"{key}={value}" for key, value in sorted(sample.labels.items()))
                samples[f"{sample.name}{{{labels}}}"] = sample.value
        return samples

    async def dgd_reconciles(self) -> float:
        """``controller_runtime_reconcile_total`` of the DGD controller, every result summed."""
        samples = await self.metrics()
        prefix = "controller_runtime_reconcile_total{controller=dynamographdeployment,"
        return sum(value for key, value in samples.items() if key.startswith(prefix))

    async def writes(self) -> float:
        """Requests that change something (POST, PATCH, DELETE; PUT is left out: lease renewals use it)."""
        samples = await self.metrics()
        return sum(
            value
            for key, value in samples.items()
            if key.startswith("rest_client_requests_total{")
            and any(f"method={method}" in key for method in ("POST", "PATCH", "DELETE"))
        )

    def messages(self) -> list[str]:
        """The ``message`` of every JSON log line so far."""
        found = []
        for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                found.append(str(json.loads(line).get("message", "")))
        return found

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class Operators:
    """Starts ``dgd-operator run`` processes against ``served``; ``stop_all`` kills what still runs."""

    served: ServedCluster
    directory: Path
    started: list[Operator] = field(default_factory=list)

    async def start(
        self, instance: str, lease: LeaseFlags = TEST_LEASE, *, flags: Sequence[str] = ()
    ) -> Operator:
        """Start a daemon known as ``instance`` (more ``flags`` for ``run`` if given); return once its
        metrics and probe servers listen."""
        log = self.directory / f"{instance}.log"
        command = [
            str(EXECUTABLE),
            "run",
            "--kubeconfig",
            str(self.served.kubeconfig),
            "--metrics-addr",
            "127.0.0.1:0",
            # Scraped over plain HTTP by ``Operator.metrics`` (a later --metrics-secure in ``flags`` wins).
            "--no-metrics-secure",
            "--probe-addr",
            "127.0.0.1:0",
            # No webhooks unless a test asks (a later --webhook-addr in ``flags`` wins).
            "--webhook-addr",
            "0",
            "--instance",
            instance,
            "--lease-namespace",
            LEASE_NS,
            "--shutdown-timeout",
            "10s",
            *lease.flags,
            *flags,
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        operator = Operator(instance, process, log)
        self.started.append(operator)

        async def listening() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"{instance} exited with {process.returncode}:\n{operator.tail()}")
            for message in operator.messages():
                if message.startswith("serving metrics on port "):
                    operator.metrics_port = int(message.rsplit(" ", 1)[1])
                elif message.startswith("serving probes on port "):
                    operator.probe_port = int(message.rsplit(" ", 1)[1])
            return bool(operator.metrics_port and operator.probe_port)

        await eventually(listening, timeout=60, what=f"{instance} serves metrics and probes")
        return operator

    def stop_all(self) -> None:
        for operator in self.started:
            if operator.process.poll() is None:
                operator.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                operator.process.wait(timeout=10)
