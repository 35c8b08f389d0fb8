"""``python -m tests.real.controlplane up|run|down``: see the package docstring."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from tests.real.controlplane.binaries import BinariesNotFoundError, default_state_dir
from tests.real.controlplane.plane import ControlPlane
from tests.real.controlplane.processes import (
    RECORD_FILE,
    ControlPlaneError,
    recorded_groups,
    stop_recorded,
    tail,
)


def _raise_on_termination() -> None:
    """Turns SIGTERM and SIGHUP into ``SystemExit`` so ``finally`` blocks and ``atexit`` stop the children."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


def _usage(record: Mapping[str, Any], state_dir: Path) -> Iterator[str]:
    kubeconfig = shlex.quote(str(record["kubeconfig"]))
    kubectl = shlex.quote(str(record["kubectl"])) if record.get("kubectl") else "kubectl"
    ports, versions = record["ports"], record["versions"]
    yield f"control plane up: kube-apiserver {versions['kube-apiserver']}, etcd {versions['etcd']}"
    yield f"  apiserver   {record['server']}"
    yield f"  etcd        https://127.0.0.1:{ports['etcd_client']} (peer {ports['etcd_peer']})"
    yield f"  kubeconfig  {record['kubeconfig']}"
    yield f"  CA          {record['ca']}"
    yield f"  logs        {state_dir / 'logs'}"
    yield "try:"
    yield f"  {kubectl} --kubeconfig {kubeconfig} get namespaces"
    yield f"  {kubectl} --kubeconfig {kubeconfig} apply --server-side -f deploy/crds/"
    grove = "../shared/upstream/ai-dynamo-grove/operator/api/core/v1alpha1/crds/"
    yield f"  {kubectl} --kubeconfig {kubeconfig} apply --server-side -f {grove}    # Grove's own CRDs"
    yield f"  .venv/bin/dgd-operator run --kubeconfig {kubeconfig}"
    yield f"  .venv/bin/dgd-operator sim world --kubeconfig {kubeconfig}"
    # The folder named always: `make kube-down` alone stops only the default one.
    yield f"stop: make kube-down KUBE_STATE={shlex.quote(str(state_dir))}"


def _running_record(state_dir: Path) -> dict[str, Any] | None:
    """The record of a run still alive in ``state_dir``, if every recorded process still runs."""
    try:
        record: dict[str, Any] = json.loads((state_dir / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return None
    processes = record.get("processes", [])
    if processes and len(recorded_groups(state_dir)) == len(processes):
        return record
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``up`` / ``run`` / ``down``; see the module docstring. Returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.real.controlplane", description="A real Kubernetes control plane on loopback."
    )
    parser.add_argument("command", choices=["up", "run", "down"])
    parser.add_argument(
        "--state", type=Path, default=None, help=f"state folder (default {default_state_dir()})"
    )
    parser.add_argument("--timeout", type=float, default=180.0, help="start-up deadline in seconds")
    args = parser.parse_args(argv)
    state_dir: Path = (args.state or default_state_dir()).resolve()

    if args.command == "down":
        ended = stop_recorded(state_dir)
        print(f"stopped {', '.join(ended)}" if ended else f"nothing running in {state_dir}")
        return 0

    if args.command == "up" and (record := _running_record(state_dir)) is not None:
        print(f"already running in {state_dir}")
        print("\n".join(_usage(record, state_dir)))
        return 0

    _raise_on_termination()
    try:
        plane = ControlPlane(state_dir, start_timeout=args.timeout)
    except BinariesNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"starting etcd, kube-apiserver and kube-controller-manager from {plane.binaries.folder} ...",
        flush=True,
    )
    try:
        plane.start()
    except ControlPlaneError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    record = plane.describe()
    print("\n".join(_usage(record, state_dir)), flush=True)
    if args.command == "up":
        plane.detach()
        return 0
    try:
        print("running; Ctrl-C stops it", flush=True)
        while not (exited := plane.exited()):
            time.sleep(1.0)
        for name, log in exited:
            print(f"error: {name} exited; last lines of {log}:\n{tail(log)}", file=sys.stderr)
        return 1
    finally:
        plane.stop()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
