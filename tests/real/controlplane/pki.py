"""The keys and certificates of one run (a CA made for it), and kubeconfigs that embed them."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


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
