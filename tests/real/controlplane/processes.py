"""The children of a run, each in its own process group: ending them, and the record that outlives them."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

RECORD_FILE: Final = "controlplane.json"


class ControlPlaneError(RuntimeError):
    """The control plane could not be started (the message carries the tail of the relevant logs)."""


@dataclass(frozen=True)
class Ports:
    """The loopback ports of one run."""

    etcd_client: int
    etcd_peer: int
    apiserver: int


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports free at the time of the call."""
    with contextlib.ExitStack() as stack:
        sockets = [
            stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)
        ]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat``), ``None`` if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs; zombies (exited, not yet reaped) do not count.

    Without ``/proc``, any member, zombie or not, counts.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for stat_file in proc.glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            return True
    return False


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def _wait_gone(alive: Callable[[], bool], timeout: float) -> bool:
    """Polls ``alive`` until false or ``timeout`` seconds pass; whether it ended."""
    deadline = time.monotonic() + timeout
    while alive():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def end_groups(groups: Sequence[tuple[int, Callable[[], bool]]], grace: float) -> list[int]:
    """Ends the process groups one after the other, in the given order (clients before their servers).

    Each gets SIGTERM, then SIGKILL if still alive after ``grace`` seconds. ``groups`` pairs each group
    id with a liveness check (which also reaps our own children). Returns the groups still alive a
    second after SIGKILL (normally none).
    """
    survivors = []
    for pgid, alive in groups:
        _signal_group(pgid, signal.SIGTERM)
        if _wait_gone(alive, grace):
            continue
        _signal_group(pgid, signal.SIGKILL)
        if not _wait_gone(alive, 1.0):
            survivors.append(pgid)
    return survivors


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        """Whether the process (leader of its group) still runs; reaps it once it has exited."""
        return self.process.poll() is None


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def recorded_groups(state_dir: Path) -> list[tuple[str, int]]:
    """The (name, process group) pairs recorded in ``state_dir`` that still run and belong to that run."""
    try:
        record = json.loads((state_dir / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return []
    groups = []
    for entry in record.get("processes", []):
        pid, started = int(entry["pid"]), entry.get("start_time")
        current = start_time(pid)
        # A different start time means the pid was reused by an unrelated process: leave it alone.
        if started is not None and current is not None and current != started:
            continue
        if not _group_alive(pid):
            continue
        groups.append((str(entry["name"]), pid))
    return groups


def stop_recorded(state_dir: Path, grace: float = 5.0) -> list[str]:
    """Ends the processes a run recorded in ``state_dir`` (e.g. started by ``up``); idempotent.

    Only groups whose leader still has the recorded start time are signalled, so a reused pid is never
    hit. Returns the names of the processes it ended; removes the record. Raises :class:`ControlPlaneError`
    if one survives SIGKILL.
    """
    groups = recorded_groups(state_dir)
    survivors = end_groups(
        [(pgid, functools.partial(_group_alive, pgid)) for _, pgid in reversed(groups)], grace
    )
    if survivors:
        raise ControlPlaneError(f"process groups {survivors} survived SIGKILL")
    with contextlib.suppress(FileNotFoundError):
        (state_dir / RECORD_FILE).unlink()
    return [name for name, _ in groups]
