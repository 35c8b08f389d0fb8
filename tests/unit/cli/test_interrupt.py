"""Ctrl-C in the installed ``dgd-operator``: one line, ``<command>: interrupted``, exit 130, no traceback.

Each command runs as a user runs it: the console script in a process group of its own, as a shell
starts a job. SIGINT is sent once the command has shown that it is working (its first table,
progress line or request), either to the process or, as a terminal sends Ctrl-C, to the whole group.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXECUTABLE = Path(sys.executable).with_name("dgd-operator")
AGG = ROOT / "examples" / "agg.yaml"
#: Generous: a command on a busy 2-core machine, not a wall-time threshold.
PATIENCE = 120.0
#: How long each process of an interrupted command may take to end: a guard, well under the test's timeout.
ENDING = 30.0
#: Progress lines, which may be printed before the interruption and read after it.
PROGRESS = re.compile(r"^(chaos: seed \d+/\d+ done|replayed \d+s of \d+s) ")

#: Runs the command with SIGINT at its default, as a terminal's shell starts it: a run of the tests started
#: in the background (CI's, say) inherits SIGINT ignored, and so would the command (``exec`` keeps the
#: disposition; Python then installs no handler for an ignored signal).
AS_FROM_A_TERMINAL = (
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
)

Stream = Literal["stdout", "stderr"]


class Running:
    """The installed command, in a process group of its own, its output read line by line."""

    def __init__(self, *argv: str) -> None:
        self.process = subprocess.Popen(
            [*AS_FROM_A_TERMINAL, str(EXECUTABLE), *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: dict[Stream, list[str]] = {"stdout": [], "stderr": []}
        self._arrived: dict[Stream, queue.Queue[str | None]] = {
            "stdout": queue.Queue(),
            "stderr": queue.Queue(),
        }
        self._readers = [
            threading.Thread(target=self._read, args=(name,), daemon=True) for name in ("stdout", "stderr")
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, name: Stream) -> None:
        stream = self.process.stdout if name == "stdout" else self.process.stderr
        assert stream is not None
        for line in stream:
            self.lines[name].append(line.rstrip("\n"))
            self._arrived[name].put(line)
        self._arrived[name].put(None)

    def first_line(self, name: Stream) -> str:
        """The first line on ``name``, once it is there."""
        line = self._arrived[name].get(timeout=PATIENCE)
        assert line is not None, f"{name} ended before any line: {self.lines}"
        return line

    def interrupt(self, *, whole_group: bool = False) -> None:
        if whole_group:
            os.killpg(self.process.pid, signal.SIGINT)
        else:
            self.process.send_signal(signal.SIGINT)

    def finish(self) -> int:
        code = self.process.wait(timeout=PATIENCE)
        for reader in self._readers:
            reader.join(timeout=PATIENCE)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@contextmanager
def running(*argv: str) -> Iterator[Running]:
    command = Running(*argv)
    try:
        yield command
    finally:
        command.kill()


def without_progress(lines: list[str]) -> list[str]:
    return [line for line in lines if not PROGRESS.match(line)]


def test_ctrl_c_in_sim_apply_prints_one_line_and_exits_130() -> None:
    # given sim apply in real time, where the example cannot converge before its pods' 30 s ready delay
    with running("sim", "apply", str(AGG), "--realtime", "--until-ready", "--timeout", "3600") as apply:
        apply.first_line("stdout")

        # when it is interrupted once its status table is showing
        apply.interrupt()
        code = apply.finish()

    # then it says so in one line on stderr and exits 130
    assert code == 130, apply.lines
    assert apply.lines["stderr"] == ["dgd-operator sim apply: interrupted"]


def test_ctrl_c_in_sim_replay_prints_one_line_and_exits_130() -> None:
    # given a 400 s trace replayed in real time
    trace = ROOT / "examples" / "traces" / "chaos.jsonl"
    with running("sim", "replay", str(trace), "--realtime") as replay:
        assert replay.first_line("stderr").startswith("replayed 0s of 400s")

        # when it is interrupted once its progress shows
        replay.interrupt()
        code = replay.finish()

    # then one line says so, no summary is printed, and it exits 130
    assert code == 130, replay.lines
    assert without_progress(replay.lines["stderr"]) == ["dgd-operator sim replay: interrupted"]
    assert replay.lines["stdout"] == []


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_in_a_chaos_campaign_prints_one_line_exits_130_and_leaves_no_worker(jobs: str) -> None:
    # given a long campaign, on worker processes when jobs is 2
    argv = ["chaos", "--seeds", "10000", "--dgds", "1", "--plan", "random", "--examples", str(AGG)]
    with running(*argv, "--jobs", jobs) as chaos:
        assert chaos.first_line("stderr").startswith("chaos: seed 1/10000 done")

        # when Ctrl-C reaches its whole process group, as a terminal sends it
        chaos.interrupt(whole_group=True)
        code = chaos.finish()

        # then one line says so, after the progress lines, and no worker prints a traceback
        assert code == 130, chaos.lines
        assert without_progress(chaos.lines["stderr"]) == ["dgd-operator chaos: interrupted"]
        assert chaos.lines["stdout"] == []
        # and no process of the campaign is left behind
        left = _running_after_they_end(chaos.process.pid)
        assert left == [], f"processes of the campaign still running: {left}"


@pytest.mark.parametrize(
    "command",
    [["run", "--metrics-addr", "127.0.0.1:0", "--probe-addr", "127.0.0.1:0"], ["sim", "world"]],
    ids=["run", "sim world"],
)
def test_ctrl_c_while_a_server_command_starts_prints_one_line_and_exits_130(
    command: list[str], tmp_path: Path
) -> None:
    # given an API server that accepts connections and never answers
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(_kubeconfig(f"http://127.0.0.1:{silent.getsockname()[1]}"), encoding="utf-8")
        with running(*command, "--kubeconfig", str(kubeconfig)) as starting:
            # when the command is interrupted while it waits for the server's first answer
            silent.settimeout(PATIENCE)
            connection, _ = silent.accept()
            starting.interrupt()
            code = starting.finish()
            connection.close()

    # then it says so in one line and exits 130 (a graceful stop, once serving, exits 0)
    prog = "dgd-operator " + " ".join(command[:2] if command[0] == "sim" else command[:1])
    assert code == 130, starting.lines
    assert starting.lines["stderr"] == [f"{prog}: interrupted"]


def _running_after_they_end(pgid: int) -> list[str]:
    """The processes of group ``pgid`` still running once each has ended or none has for ``ENDING``
    seconds: woken by their pidfds as they exit, no polling. Each is shown as ``pid (name)``."""
    ending = {}
    for pid in _members(pgid):
        with contextlib.suppress(ProcessLookupError):
            ending[os.pidfd_open(pid)] = pid
    try:
        while ending:
            ended, _, _ = select.select(list(ending), [], [], ENDING)
            if not ended:
                break
            for fd in ended:
                del ending[fd]
                os.close(fd)
    finally:
        for fd in ending:
            os.close(fd)
    return [f"{pid} ({name})" for pid, name in _members(pgid).items()]


def _members(pgid: int) -> dict[int, str]:
    """The live (not zombie) processes of group ``pgid``, by pid, with their names."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended meanwhile
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        state, group = rest[0], int(rest[2])
        if group == pgid and state not in ("Z", "X"):
            found[int(entry.name)] = name
    return found


def _kubeconfig(server: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
