"""A real Kubernetes control plane on loopback: upstream etcd, kube-apiserver and kube-controller-manager.

Used by the real-server test tier (a pytest session fixture) and by ``make kube-up``/``make kube-down``.
It depends on nothing from the ``dgd`` package; keys and certificates come from ``cryptography``.

Guarantees:

* Every listener binds 127.0.0.1 only: etcd's client and peer URLs, the apiserver's secure port; the
  controller manager serves nothing (``--secure-port=0``). Ports are free loopback ports picked at start.
* All traffic is TLS with certificates from a CA made for this run: etcd requires client certificates,
  the apiserver authenticates with client certificates and authorizes with RBAC. The admin kubeconfig
  (``system:masters``) embeds its certificates, so it is valid on its own.
* ``start()`` returns only when the apiserver answers ``/readyz`` and, with the controller manager, when
  the ``default`` ServiceAccount exists in namespace ``default``. If a child exits, or the deadline
  passes, first it stops every child, then raises :class:`ControlPlaneError` with the tail of the logs.
* Each child runs in its own process group (session), its stdout and stderr in ``<state>/logs/``.
  ``stop()`` ends the groups one by one (controller manager, apiserver, then etcd, which the apiserver
  needs to shut down): SIGTERM, then SIGKILL after a grace period. It runs at interpreter
  exit too (``atexit``), unless the run was detached with :meth:`ControlPlane.detach`.
* The state folder records the children (``controlplane.json``), so :func:`stop_recorded` (``down``)
  can end a detached run, and a new start in the same folder first ends a leftover one.

Command line (run from the repository root)::

    python -m tests.real.controlplane up [--state DIR]    # start in the background, print how to use it
    python -m tests.real.controlplane run [--state DIR]   # same, in the foreground until Ctrl-C
    python -m tests.real.controlplane down [--state DIR]  # stop what `up` started
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import datetime
import functools
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Final, Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
SERVICE_CIDR: Final = "10.0.0.0/24"
RECORD_FILE: Final = "controlplane.json"
ETCD: Final = "etcd"
APISERVER: Final = "kube-apiserver"
CONTROLLER_MANAGER: Final = "kube-controller-manager"
KUBECTL: Final = "kubectl"
# Entries of a state folder that a start owns and recreates; nothing else in the folder is touched.
_STATE_ENTRIES: Final = ("pki", "etcd", "logs", "apiserver-certs", "admin.kubeconfig", "kcm.kubeconfig")


class ControlPlaneError(RuntimeError):
    """The control plane could not be started (the message carries the tail of the relevant logs)."""


class BinariesNotFoundError(FileNotFoundError):
    """The kube-apiserver and etcd binaries are neither in ``$KUBEBUILDER_ASSETS`` nor in the build cache."""


# Binaries


@dataclass(frozen=True)
class Binaries:
    """Paths of the control-plane binaries; the optional ones are ``None`` when the folder lacks them."""

    folder: Path
    kube_apiserver: Path
    etcd: Path
    kube_controller_manager: Path | None
    kubectl: Path | None


#: Names the Kubernetes release to run instead of the pinned one (``make test-k8s KUBE_VERSION=...``).
KUBE_VERSION_ENV: Final = "DGD_KUBE_VERSION"


def pinned_kube_version() -> str:
    """The Kubernetes version ``hack/kube/go.mod`` pins (``v1.36.5``), the tier's default."""
    go_mod = REPO_ROOT / "hack" / "kube" / "go.mod"
    match = re.search(r"^\s*k8s\.io/kubernetes (v\S+)\s*$", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise BinariesNotFoundError(f"{go_mod} does not require k8s.io/kubernetes")
    return match.group(1)


def kube_version(env: Mapping[str, str] | None = None) -> str:
    """The Kubernetes version to run: ``$DGD_KUBE_VERSION`` (``v1.34.12`` or ``1.34.12``) if set, else
    :func:`pinned_kube_version`. Raises :class:`ValueError` naming the variable for anything else."""
    env = os.environ if env is None else env
    raw = env.get(KUBE_VERSION_ENV, "").strip()
    if not raw:
        return pinned_kube_version()
    version = "v" + raw.removeprefix("v")
    if re.fullmatch(r"v1\.\d+\.\d+", version) is None:
        raise ValueError(
            f"{KUBE_VERSION_ENV}={raw!r} is not a Kubernetes release: expected v1.<minor>.<patch> "
            "(e.g. v1.34.12), or unset for the pinned version"
        )
    return version


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where ``hack/kube/build.sh`` puts binaries: ``${XDG_CACHE_HOME:-~/.cache}/dgd-operator/kube-<v>``,
    ``<v>`` being :func:`kube_version`."""
    env = os.environ if env is None else env
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "dgd-operator" / f"kube-{kube_version(env)}"


def default_state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The CLI's state folder: ``${XDG_STATE_HOME:-~/.local/state}/dgd-operator/kube``."""
    env = os.environ if env is None else env
    base = Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "dgd-operator" / "kube"


def find_binaries(env: Mapping[str, str] | None = None) -> Binaries:
    """Locates the binaries: ``$KUBEBUILDER_ASSETS`` if set (the envtest convention), else :func:`cache_dir`.

    Raises :class:`BinariesNotFoundError` unless that folder holds executable ``kube-apiserver`` and ``etcd``.
    """
    env = os.environ if env is None else env
    assets = env.get("KUBEBUILDER_ASSETS")
    folder = Path(assets) if assets else cache_dir(env)

    def executable(name: str) -> Path | None:
        path = folder / name
        return path if path.is_file() and os.access(path, os.X_OK) else None

    apiserver, etcd = executable(APISERVER), executable(ETCD)
    if apiserver is None or etcd is None:
        if assets:
            how = "put them there, or unset KUBEBUILDER_ASSETS to use the build cache"
        elif env.get(KUBE_VERSION_ENV, "").strip():
            how = f"build them with `make kube KUBE_VERSION={kube_version(env)}` (hack/kube/build.sh)"
        else:
            how = (
                "build them with `make kube` (hack/kube/build.sh) "
                "or set KUBEBUILDER_ASSETS to a folder with them"
            )
        source = "$KUBEBUILDER_ASSETS" if assets else "the build cache"
        raise BinariesNotFoundError(f"no executable kube-apiserver and etcd in {folder} ({source}); {how}")
    return Binaries(folder, apiserver, etcd, executable(CONTROLLER_MANAGER), executable(KUBECTL))


# Keys and certificates


@dataclass(frozen=True)
class CertPair:
    """A PEM certificate and its PEM private key (mode 0600)."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Everything one run needs, all issued by ``ca`` (the ServiceAccount keys are a bare key pair)."""

    ca: CertPair
    etcd: CertPair
    apiserver: CertPair
    apiserver_etcd_client: CertPair
    admin: CertPair
    controller_manager: CertPair
    service_account_key: Path
    service_account_public_key: Path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    _write_private(
        path,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    """Digital signature for every certificate; certificate and CRL signing for a CA."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


class _Issuer:
    """A self-signed CA that issues certificates valid from an hour ago for ``validity``."""

    def __init__(self, common_name: str, validity: datetime.timedelta) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self._validity = validity
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        self.cert = (
            self._builder(name, self.key.public_key(), name)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_key_usage(ca=True), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    def _builder(
        self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey, issuer: x509.Name
    ) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + self._validity)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        )

    def issue(
        self,
        common_name: str,
        *,
        organization: str | None = None,
        server: bool = False,
        client: bool = False,
        dns: Sequence[str] = (),
        ips: Sequence[str] = (),
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        """A leaf certificate for server and/or client authentication, with the given SANs."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        if organization is not None:
            attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            self._builder(x509.Name(attributes), key.public_key(), self.cert.subject)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
        )
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(self.key, hashes.SHA256()), key


def make_pki(folder: Path, *, service_ip: str, validity_days: int = 365) -> Pki:
    """Creates a CA and every certificate a run needs in ``folder`` (created, mode 0700)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    issuer = _Issuer("dgd-operator-real-ca", datetime.timedelta(days=validity_days))

    def save(name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> CertPair:
        pair = CertPair(folder / f"{name}.crt", folder / f"{name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(pair.key, key)
        return pair

    ca = save("ca", issuer.cert, issuer.key)
    apiserver_dns = [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    etcd = save("etcd", *issuer.issue("etcd", server=True, client=True, dns=["localhost"], ips=["127.0.0.1"]))
    apiserver = save(
        "apiserver",
        *issuer.issue("kube-apiserver", server=True, dns=apiserver_dns, ips=["127.0.0.1", service_ip]),
    )
    etcd_client = save("apiserver-etcd-client", *issuer.issue("kube-apiserver-etcd-client", client=True))
    admin = save("admin", *issuer.issue("admin", organization="system:masters", client=True))
    kcm = save("kube-controller-manager", *issuer.issue("system:kube-controller-manager", client=True))

    sa_key = ec.generate_private_key(ec.SECP256R1())
    sa_private, sa_public = folder / "sa.key", folder / "sa.pub"
    _write_key(sa_private, sa_key)
    sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Pki(ca, etcd, apiserver, etcd_client, admin, kcm, sa_private, sa_public)


def write_kubeconfig(path: Path, *, server: str, ca: Path, client: CertPair, user: str) -> None:
    """Writes a self-contained kubeconfig (certificates embedded) for ``user``, mode 0600."""

    def data(file: Path) -> str:
        return base64.b64encode(file.read_bytes()).decode("ascii")

    _write_private(
        path,
        f"""apiVersion: v1
kind: Config
clusters:
- name: dgd-real
  cluster:
    server: {server}
    certificate-authority-data: {data(ca)}
users:
- name: {user}
  user:
    client-certificate-data: {data(client.cert)}
    client-key-data: {data(client.key)}
contexts:
- name: {user}@dgd-real
  context:
    cluster: dgd-real
    user: {user}
    namespace: default
current-context: {user}@dgd-real
""".encode(),
    )


# Processes


@dataclass(frozen=True)
class Ports:
    """The loopback ports of one run."""

    etcd_client: int
    etcd_peer: int
    apiserver: int


def _free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports free at the time of the call."""
    with contextlib.ExitStack() as stack:
        sockets = [
            stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)
        ]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def _start_time(pid: int) -> int | None:
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


def _end_groups(groups: Sequence[tuple[int, Callable[[], bool]]], grace: float) -> list[int]:
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
class _Child:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        """Whether the process (leader of its group) still runs; reaps it once it has exited."""
        return self.process.poll() is None


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def _recorded_groups(state_dir: Path) -> list[tuple[str, int]]:
    """The (name, process group) pairs recorded in ``state_dir`` that still run and belong to that run."""
    try:
        record = json.loads((state_dir / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return []
    groups = []
    for entry in record.get("processes", []):
        pid, started = int(entry["pid"]), entry.get("start_time")
        current = _start_time(pid)
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
    groups = _recorded_groups(state_dir)
    survivors = _end_groups(
        [(pgid, functools.partial(_group_alive, pgid)) for _, pgid in reversed(groups)], grace
    )
    if survivors:
        raise ControlPlaneError(f"process groups {survivors} survived SIGKILL")
    with contextlib.suppress(FileNotFoundError):
        (state_dir / RECORD_FILE).unlink()
    return [name for name, _ in groups]


# The control plane


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
        self._children: list[_Child] = []
        self._pki: Pki | None = None
        self._ports: Ports | None = None
        self._apiserver_version: str | None = None
        self._etcd_version: str | None = None
        self._started = False

    # Facts about a started run

    def _require_started(self) -> None:
        if not self._started:
            raise ControlPlaneError("the control plane is not started")

    @property
    def pki(self) -> Pki:
        """The certificates and keys of this run."""
        self._require_started()
        assert self._pki is not None
        return self._pki

    @property
    def ports(self) -> Ports:
        """The loopback ports of this run."""
        self._require_started()
        assert self._ports is not None
        return self._ports

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
        self._require_started()
        assert self._apiserver_version is not None
        return self._apiserver_version

    @property
    def etcd_version(self) -> str:
        """The version ``etcd --version`` reports (e.g. ``3.6.8``)."""
        self._require_started()
        assert self._etcd_version is not None
        return self._etcd_version

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
        network = ipaddress.ip_network(SERVICE_CIDR)
        self._ports = Ports(*_free_ports(3))
        self._pki = pki = make_pki(self.state_dir / "pki", service_ip=str(network[1]))
        self._etcd_version = self._read_etcd_version()
        admin = _https_opener(pki.ca.cert, pki.admin)

        etcd = self._spawn(ETCD, self._etcd_args())
        etcd_client = _https_opener(pki.ca.cert, pki.apiserver_etcd_client)
        etcd_url = f"https://127.0.0.1:{self.ports.etcd_client}"
        self._wait_until(
            f"etcd at {etcd_url}/health", lambda: _ok(etcd_client, f"{etcd_url}/health"), deadline, etcd
        )

        apiserver = self._spawn(APISERVER, self._apiserver_args())
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
            kcm = self._spawn(CONTROLLER_MANAGER, self._controller_manager_args())
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

    def _etcd_args(self) -> list[str]:
        pki, ports = self.pki, self.ports
        client_url = f"https://127.0.0.1:{ports.etcd_client}"
        peer_url = f"https://127.0.0.1:{ports.etcd_peer}"
        return [
            str(self.binaries.etcd),
            "--name=default",
            f"--data-dir={self.state_dir / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            "--initial-cluster-state=new",
            f"--cert-file={pki.etcd.cert}",
            f"--key-file={pki.etcd.key}",
            f"--trusted-ca-file={pki.ca.cert}",
            "--client-cert-auth=true",
            f"--peer-cert-file={pki.etcd.cert}",
            f"--peer-key-file={pki.etcd.key}",
            f"--peer-trusted-ca-file={pki.ca.cert}",
            "--peer-client-cert-auth=true",
            # A throwaway store: durability buys nothing and costs seconds of fsync per test run.
            "--unsafe-no-fsync=true",
        ]

    def _apiserver_args(self) -> list[str]:
        pki, ports = self.pki, self.ports
        return [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers=https://127.0.0.1:{ports.etcd_client}",
            f"--etcd-cafile={pki.ca.cert}",
            f"--etcd-certfile={pki.apiserver_etcd_client.cert}",
            f"--etcd-keyfile={pki.apiserver_etcd_client.key}",
            "--bind-address=127.0.0.1",
            f"--secure-port={ports.apiserver}",
            "--advertise-address=127.0.0.1",
            f"--cert-dir={self.state_dir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.apiserver.cert}",
            f"--tls-private-key-file={pki.apiserver.key}",
            f"--client-ca-file={pki.ca.cert}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.service_account_public_key}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true",
            # Endpoints may not hold a loopback address, so the `kubernetes` Service gets no endpoints.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
        ]

    def _controller_manager_args(self) -> list[str]:
        pki = self.pki
        assert self.binaries.kube_controller_manager is not None
        return [
            str(self.binaries.kube_controller_manager),
            f"--kubeconfig={self.state_dir / 'kcm.kubeconfig'}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--leader-elect=false",
            # Every controller but the one that puts kube-root-ca.crt into every namespace: the
            # conformance suite lists the ConfigMaps of its namespaces, and no test uses that one.
            "--controllers=*,-root-ca-cert-publisher",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki.service_account_key}",
            f"--root-ca-file={pki.ca.cert}",
            f"--cluster-signing-cert-file={pki.ca.cert}",
            f"--cluster-signing-key-file={pki.ca.key}",
            "--profiling=false",
        ]

    def _spawn(self, name: str, argv: list[str]) -> _Child:
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
        child = _Child(name, process, log)
        self._children.append(child)
        self._write_record()
        return child

    def _wait_until(self, what: str, ready: Callable[[], bool], deadline: float, child: _Child) -> None:
        """Polls ``ready`` until true; raises if any child exits or the deadline passes first."""
        while True:
            for running in self._children:
                if not running.alive():
                    raise ControlPlaneError(
                        f"{running.name} exited with code {running.process.returncode} "
                        f"while waiting for {what}; "
                        f"last lines of {running.log}:\n{_tail(running.log)}"
                    )
            if ready():
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"timed out after {self.start_timeout:.0f}s waiting for {what}; "
                    f"last lines of {child.log}:\n{_tail(child.log)}"
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
                    "start_time": _start_time(c.process.pid),
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
        survivors = _end_groups([(c.process.pid, c.alive) for c in reversed(children)], self.stop_grace)
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


# Command line


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
    yield f"  .venv/bin/dgd-operator run --kubeconfig {kubeconfig}"
    yield f"  .venv/bin/dgd-operator sim world --kubeconfig {kubeconfig}"
    state = shlex.quote(str(state_dir))
    yield f"stop: make kube-down, or python -m tests.real.controlplane down --state {state}"


def _running_record(state_dir: Path) -> dict[str, Any] | None:
    """The record of a run still alive in ``state_dir``, if every recorded process still runs."""
    try:
        record: dict[str, Any] = json.loads((state_dir / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return None
    processes = record.get("processes", [])
    if processes and len(_recorded_groups(state_dir)) == len(processes):
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
            print(f"error: {name} exited; last lines of {log}:\n{_tail(log)}", file=sys.stderr)
        return 1
    finally:
        plane.stop()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
