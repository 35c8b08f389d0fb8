"""The control plane of one run: starts etcd, kube-apiserver and kube-controller-manager, and stops them."""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import re
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self, TypeVar

from tests.real.controlplane import command_lines
from tests.real.controlplane.binaries import APISERVER, CONTROLLER_MANAGER, ETCD, Binaries, find_binaries
from tests.real.controlplane.pki import CertPair, Pki, make_pki, write_kubeconfig
from tests.real.controlplane.processes import (
    RECORD_FILE,
    Child,
    ControlPlaneError,
    Ports,
    end_groups,
    free_ports,
    start_time,
    stop_recorded,
    tail,
)

T = TypeVar("T")


# Entries of a state folder that a start owns and recreates; nothing else in the folder is touched.
_STATE_ENTRIES: Final = ("pki", "etcd", "logs", "apiserver-certs", "admin.kubeconfig", "kcm.kubeconfig")


def _https_opener(ca: Path, client: CertPair) -> urllib.request.OpenerDirector:
    context = ssl.create_default_context(cafile=str(ca))
    context.load_cert_chain(str(client.cert), str(client.key))
    # No proxy: the servers are on loopback, whatever $https_proxy says.
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )


def _get(opener: urllib.request.OpenerDirector, url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    """``(status, body)`` of a GET; raises ``OSError`` when the server cannot be reached."""
    try:
        with opener.open(url, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as err:
        return int(err.code), bytes(err.read())


class ControlPlane:
    """etcd, kube-apiserver and (when available) kube-controller-manager, on loopback, for one run.

    ``state_dir=None`` uses a fresh temporary folder, removed by :meth:`stop`. A given ``state_dir`` is
    created if needed and kept; a start there first ends a run still recorded in it, then recreates only
    the entries it owns (``pki``, ``etcd``, ``logs``, kubeconfigs), so each start is a fresh cluster.
    ``controller_manager=False`` (or no kube-controller-manager binary) runs without it: then no
    ServiceAccount, namespace finalization or garbage collection happens.
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        binaries: Binaries | None = None,
        *,
        controller_manager: bool = True,
        start_timeout: float = 120.0,
        stop_grace: float = 5.0,
    ) -> None:
        self.binaries = binaries if binaries is not None else find_binaries()
        self._given_state_dir = state_dir
        self.state_dir = state_dir if state_dir is not None else Path()
        self.with_controller_manager = (
            controller_manager and self.binaries.kube_controller_manager is not None
        )
        self.start_timeout = start_timeout
        self.stop_grace = stop_grace
        self._children: list[Child] = []
        self._pki: Pki | None = None
        self._ports: Ports | None = None
        self._apiserver_version: str | None = None
        self._etcd_version: str | None = None
        self._started = False

    # Facts about a started run

    def _require_started(self) -> None:
        if not self._started:
            raise ControlPlaneError("the control plane is not started")

    def _fact(self, value: T | None) -> T:
        """A fact that :meth:`start` sets: ``ControlPlaneError`` before it."""
        self._require_started()
        assert value is not None
        return value

    @property
    def pki(self) -> Pki:
        """The certificates and keys of this run."""
        return self._fact(self._pki)

    @property
    def ports(self) -> Ports:
        """The loopback ports of this run."""
        return self._fact(self._ports)

    @property
    def server(self) -> str:
        """The apiserver's URL, ``https://127.0.0.1:<port>``."""
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def pids(self) -> dict[str, int]:
        """The process id of each child running now (etcd, kube-apiserver, kube-controller-manager)."""
        return {c.name: c.process.pid for c in self._children if c.alive()}

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (user ``admin`` in group ``system:masters``, namespace ``default``)."""
        self._require_started()
        return self.state_dir / "admin.kubeconfig"

    @property
    def ca_cert(self) -> Path:
        """The PEM CA certificate every server certificate chains to."""
        return self.pki.ca.cert

    @property
    def service_account_key(self) -> Path:
        """The PEM private key the apiserver signs ServiceAccount tokens with (ES256)."""
        return self.pki.service_account_key

    @property
    def service_account_public_key(self) -> Path:
        """The PEM public key the apiserver verifies ServiceAccount tokens with."""
        return self.pki.service_account_public_key

    @property
    def apiserver_version(self) -> str:
        """``gitVersion`` from the apiserver's ``/version`` (e.g. ``v1.36.5``)."""
        return self._fact(self._apiserver_version)

    @property
    def etcd_version(self) -> str:
        """The version ``etcd --version`` reports (e.g. ``3.6.8``)."""
        return self._fact(self._etcd_version)

    @property
    def logs(self) -> Path:
        """The folder with one log file per child."""
        return self.state_dir / "logs"

    # Life cycle

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Starts the children and returns once the cluster is ready (see the module's guarantees)."""
        if self._started:
            raise ControlPlaneError("the control plane is already started")
        self._prepare_state_dir()
        self._started = True
        atexit.register(self.stop)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _prepare_state_dir(self) -> None:
        if self._given_state_dir is None:
            self.state_dir = Path(tempfile.mkdtemp(prefix="dgd-kube-"))
            return
        self.state_dir = self._given_state_dir.resolve()
        self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        stop_recorded(self.state_dir, self.stop_grace)
        for entry in _STATE_ENTRIES:
            path = self.state_dir / entry
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)

    def _start(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        self.logs.mkdir(mode=0o700)
        network = ipaddress.ip_network(command_lines.SERVICE_CIDR)
        self._ports = Ports(*free_ports(3))
        self._pki = pki = make_pki(self.state_dir / "pki", service_ip=str(network[1]))
        self._etcd_version = self._read_etcd_version()
        admin = _https_opener(pki.ca.cert, pki.admin)

        etcd = self._spawn(ETCD, command_lines.etcd(self.binaries, self.state_dir, pki, self.ports))
        etcd_client = _https_opener(pki.ca.cert, pki.apiserver_etcd_client)
        etcd_url = f"https://127.0.0.1:{self.ports.etcd_client}"
        self._wait_until(
            f"etcd at {etcd_url}/health", lambda: _ok(etcd_client, f"{etcd_url}/health"), deadline, etcd
        )

        apiserver = self._spawn(
            APISERVER, command_lines.apiserver(self.binaries, self.state_dir, pki, self.ports)
        )
        self._wait_until(
            f"{self.server}/readyz", lambda: _ok(admin, f"{self.server}/readyz"), deadline, apiserver
        )
        self._apiserver_version = str(json.loads(_get(admin, f"{self.server}/version")[1])["gitVersion"])
        write_kubeconfig(
            self.state_dir / "admin.kubeconfig",
            server=self.server,
            ca=pki.ca.cert,
            client=pki.admin,
            user="admin",
        )

        if self.with_controller_manager:
            write_kubeconfig(
                self.state_dir / "kcm.kubeconfig",
                server=self.server,
                ca=pki.ca.cert,
                client=pki.controller_manager,
                user="system:kube-controller-manager",
            )
            kcm = self._spawn(
                CONTROLLER_MANAGER, command_lines.controller_manager(self.binaries, self.state_dir, pki)
            )
            url = f"{self.server}/api/v1/namespaces/default/serviceaccounts/default"
            self._wait_until(
                "the default ServiceAccount in namespace default", lambda: _ok(admin, url), deadline, kcm
            )

    def _read_etcd_version(self) -> str:
        result = subprocess.run(
            [str(self.binaries.etcd), "--version"], capture_output=True, text=True, check=True, timeout=30
        )
        match = re.search(r"etcd Version:\s*(\S+)", result.stdout)
        if match is None:
            raise ControlPlaneError(f"unexpected `etcd --version` output: {result.stdout!r}")
        return match.group(1)

    def _spawn(self, name: str, argv: list[str]) -> Child:
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.state_dir,
                start_new_session=True,
            )
        child = Child(name, process, log)
        self._children.append(child)
        self._write_record()
        return child

    def _wait_until(self, what: str, ready: Callable[[], bool], deadline: float, child: Child) -> None:
        """Polls ``ready`` until true; raises if any child exits or the deadline passes first."""
        while True:
            for running in self._children:
                if not running.alive():
                    raise ControlPlaneError(
                        f"{running.name} exited with code {running.process.returncode} "
                        f"while waiting for {what}; "
                        f"last lines of {running.log}:\n{tail(running.log)}"
                    )
            if ready():
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"timed out after {self.start_timeout:.0f}s waiting for {what}; "
                    f"last lines of {child.log}:\n{tail(child.log)}"
                )
            time.sleep(0.2)

    def describe(self) -> dict[str, Any]:
        """The facts of this run as JSON-able data (what ``controlplane.json`` records)."""
        binaries = self.binaries
        return {
            "state_dir": str(self.state_dir),
            "server": self.server,
            "kubeconfig": str(self.state_dir / "admin.kubeconfig"),
            "ca": str(self.pki.ca.cert),
            "ports": {
                "etcd_client": self.ports.etcd_client,
                "etcd_peer": self.ports.etcd_peer,
                "apiserver": self.ports.apiserver,
            },
            "versions": {"kube-apiserver": self._apiserver_version, "etcd": self._etcd_version},
            "kubectl": str(binaries.kubectl) if binaries.kubectl is not None else None,
            "processes": [
                {
                    "name": c.name,
                    "pid": c.process.pid,
                    "start_time": start_time(c.process.pid),
                    "log": str(c.log),
                }
                for c in self._children
            ],
        }

    def _write_record(self) -> Path:
        path = self.state_dir / RECORD_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.describe(), indent=2) + "\n")
        tmp.replace(path)
        return path

    def exited(self) -> list[tuple[str, Path]]:
        """The (name, log) of each child that has exited since it started."""
        return [(c.name, c.log) for c in self._children if not c.alive()]

    def detach(self) -> Path:
        """Leaves the children running after this process exits; returns the record ``down`` reads.

        From then on :meth:`stop` does nothing here; :func:`stop_recorded` on :attr:`state_dir` ends them.
        """
        self._require_started()
        path = self._write_record()
        atexit.unregister(self.stop)
        self._children = []
        self._started = False
        return path

    def stop(self) -> None:
        """Ends every child, newest first (SIGTERM to its group, SIGKILL after the grace period); idempotent.

        Removes the record, and the state folder when it was a temporary one made by :meth:`start`.
        """
        atexit.unregister(self.stop)
        children, self._children = self._children, []
        survivors = end_groups([(c.process.pid, c.alive) for c in reversed(children)], self.stop_grace)
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.process.wait(timeout=0)
        self._started = False
        if self.state_dir != Path():
            with contextlib.suppress(FileNotFoundError):
                (self.state_dir / RECORD_FILE).unlink()
            if self._given_state_dir is None and not survivors:
                shutil.rmtree(self.state_dir, ignore_errors=True)
        if survivors:
            raise ControlPlaneError(f"process groups {survivors} survived SIGKILL")


def _ok(opener: urllib.request.OpenerDirector, url: str) -> bool:
    """Whether a GET of ``url`` answers 200 (unreachable counts as not yet)."""
    try:
        return _get(opener, url, timeout=2.0)[0] == 200
    except OSError:
        return False
