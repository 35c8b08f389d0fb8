"""The webhook server's certificates when no one else manages them: a CA of the operator's own and a
serving certificate it signs, made with ``cryptography`` (ECDSA P-256 keys; nothing here is written
by hand).

``issue(names, addresses, now=..., validity=...)`` makes both; ``serving(ca, ...)`` makes a new serving
certificate under an existing CA (a renewal that keeps the CA the API server already trusts). Key
generation takes CPU: the daemon calls these in a worker thread.

``Certificates`` is what the server and the registration need: PEM bytes of the CA, the serving
certificate and its key, when the serving certificate expires, and (during a CA rotation) the CA that
will sign next or the one that signed before, which the registered bundle trusts beside the current.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence

import msgspec
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: How long a CA the operator makes is valid.
CA_VALIDITY = datetime.timedelta(days=3650)
#: How long a serving certificate the operator makes is valid.
SERVING_VALIDITY = datetime.timedelta(days=365)
#: Certificates start this much before they are made, for clocks a little behind ours.
BACKDATE = datetime.timedelta(minutes=5)


class Certificates(msgspec.Struct, frozen=True):
    """PEM bytes of the CA (``ca_key`` empty when someone else holds it), the serving certificate
    and its key; ``not_after``: the serving certificate's expiry (seconds since the epoch).

    During a CA rotation: ``next_ca_cert``/``next_ca_key``, a CA published but not signing yet, and
    ``previous_ca_cert``, the CA that signed before, still trusted while replicas move off it."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes
    not_after: float
    next_ca_cert: bytes = b""
    next_ca_key: bytes = b""
    previous_ca_cert: bytes = b""

    @property
    def bundle(self) -> bytes:
        """The CAs a client must trust: the previous, the current and the next, those there are."""
        return b"".join(_ended(ca) for ca in (self.previous_ca_cert, self.ca_cert, self.next_ca_cert) if ca)


def _ended(pem: bytes) -> bytes:
    return pem if pem.endswith(b"\n") else pem + b"\n"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def authority(now: datetime.datetime, validity: datetime.timedelta = CA_VALIDITY) -> tuple[bytes, bytes]:
    """A new CA: PEM bytes of its certificate and its key."""
    certificate, key = _ca(now, validity)
    return certificate.public_bytes(serialization.Encoding.PEM), _pem(key)


def _ca(
    now: datetime.datetime, validity: datetime.timedelta
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    name = _name("dgd-operator-webhook-ca")
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return certificate, key


def serving(
    ca_cert: bytes,
    ca_key: bytes,
    names: Sequence[str],
    addresses: Sequence[str] = (),
    *,
    now: datetime.datetime,
    validity: datetime.timedelta = SERVING_VALIDITY,
) -> Certificates:
    """A serving certificate for the DNS ``names`` and IP ``addresses``, signed by the given CA."""
    authority = x509.load_pem_x509_certificate(ca_cert)
    signer = serialization.load_pem_private_key(ca_key, password=None)
    assert isinstance(signer, ec.EllipticCurvePrivateKey), "the operator's CA key is an EC key"
    key = _key()
    alternative: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    alternative += [x509.IPAddress(ipaddress.ip_address(address)) for address in addresses]
    not_after = min(now + validity, authority.not_valid_after_utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0] if names else addresses[0]))
        .issuer_name(authority.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(alternative), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False
        )
        .sign(signer, hashes.SHA256())
    )
    return Certificates(
        ca_cert=ca_cert,
        ca_key=ca_key,
        cert=certificate.public_bytes(serialization.Encoding.PEM),
        key=_pem(key),
        not_after=not_after.timestamp(),
    )


def issue(
    names: Sequence[str],
    addresses: Sequence[str] = (),
    *,
    now: datetime.datetime,
    ca_validity: datetime.timedelta = CA_VALIDITY,
    validity: datetime.timedelta = SERVING_VALIDITY,
) -> Certificates:
    """A new CA and a serving certificate it signs (see ``serving``)."""
    if not names and not addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    ca, ca_key = authority(now, ca_validity)
    return serving(
        ca,
        ca_key,
        names,
        addresses,
        now=now,
        validity=validity,
    )


def expiry(cert: bytes) -> float:
    """When the first certificate in ``cert`` (PEM) expires, in seconds since the epoch."""
    return x509.load_pem_x509_certificate(cert).not_valid_after_utc.timestamp()


def issued_at(cert: bytes) -> float:
    """When the first certificate in ``cert`` (PEM) became valid, in seconds since the epoch."""
    return x509.load_pem_x509_certificate(cert).not_valid_before_utc.timestamp()


def names_addresses(cert: bytes, addresses: Sequence[str]) -> bool:
    """Whether the certificate's IP SANs include every one of ``addresses``."""
    loaded = x509.load_pem_x509_certificate(cert)
    try:
        names = loaded.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    held = {str(address) for address in names.get_values_for_type(x509.IPAddress)}
    return {str(ipaddress.ip_address(address)) for address in addresses} <= held
