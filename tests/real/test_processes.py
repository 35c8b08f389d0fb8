"""The tier stays on loopback and leaves nothing behind: while the control plane, ``sim world`` and the
daemon run, none of their sockets listens anywhere but 127.0.0.1; once stopped, none of them lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.operators import Operators
from tests.real.controlplane import ControlPlane
from tests.real.harness import RealCluster, world

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

_LISTEN = "0A"
_LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def listening(pids: list[int]) -> list[tuple[int, str, int]]:
    """``(pid, local address as in /proc/net, port)`` of every TCP socket the processes listen on."""
    inodes: dict[str, int] = {}
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd) if fd.is_symlink() else ""
            if target.startswith("socket:["):
                inodes[target[8:-1]] = pid
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and inode in inodes:
                address, port = local.split(":")
                found.append((inodes[inode], address, int(port, 16)))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


async def test_nothing_listens_but_on_loopback_while_the_tier_runs(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    # given the control plane, sim world and a daemon running
    async with world(real, tmp_path) as simulated:
        operator = await daemons.start("listener")
        assert simulated.process is not None
        pids = [*real.plane.pids.values(), operator.process.pid, simulated.process.pid]

        # when their listening sockets are read from /proc/net/tcp and /proc/net/tcp6
        sockets = listening(pids)

        # then there are some (the API server, etcd, the daemon's metrics and probes), all on loopback
        assert {pid for pid, _, _ in sockets} >= {real.plane.pids["kube-apiserver"], operator.process.pid}
        assert [s for s in sockets if s[1] not in _LOOPBACK] == []


def test_no_process_outlives_a_stopped_control_plane(control_plane: ControlPlane) -> None:
    # given a second control plane started and stopped with the same launcher
    with ControlPlane(binaries=control_plane.binaries) as plane:
        pids = list(plane.pids.values())
        assert len(pids) == (3 if plane.with_controller_manager else 2)

    # then none of its processes lives on
    assert [pid for pid in pids if alive(pid)] == []
