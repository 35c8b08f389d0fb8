"""The command line of each child of a run: every flag, and why the unusual ones are set."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.real.controlplane.binaries import Binaries
from tests.real.controlplane.pki import Pki
from tests.real.controlplane.processes import Ports

SERVICE_CIDR: Final = "10.0.0.0/24"


def etcd(binaries: Binaries, state_dir: Path, pki: Pki, ports: Ports) -> list[str]:
    """etcd's command line: client and peer TLS on loopback, data in ``<state>/etcd``."""
    client_url = f"https://127.0.0.1:{ports.etcd_client}"
    peer_url = f"https://127.0.0.1:{ports.etcd_peer}"
    return [
        str(binaries.etcd),
        "--name=default",
        f"--data-dir={state_dir / 'etcd'}",
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


def apiserver(binaries: Binaries, state_dir: Path, pki: Pki, ports: Ports) -> list[str]:
    """kube-apiserver's command line: client-certificate authentication, RBAC, ServiceAccount tokens."""
    return [
        str(binaries.kube_apiserver),
        f"--etcd-servers=https://127.0.0.1:{ports.etcd_client}",
        f"--etcd-cafile={pki.ca.cert}",
        f"--etcd-certfile={pki.apiserver_etcd_client.cert}",
        f"--etcd-keyfile={pki.apiserver_etcd_client.key}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        "--advertise-address=127.0.0.1",
        f"--cert-dir={state_dir / 'apiserver-certs'}",
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


def controller_manager(binaries: Binaries, state_dir: Path, pki: Pki) -> list[str]:
    """kube-controller-manager's command line: serving nothing, every controller it needs."""
    assert binaries.kube_controller_manager is not None
    return [
        str(binaries.kube_controller_manager),
        f"--kubeconfig={state_dir / 'kcm.kubeconfig'}",
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
